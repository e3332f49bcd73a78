"""--inline: replaces every solar.call by a copy of the callee's body."""

from __future__ import annotations

from dataclasses import dataclass

from solar.ir.ops import CallOp, EinsumOp, ForOp, FuncOp, GroupOp, KernelOp, ModuleOp, Op, ReturnOp
from solar.ir.pass_manager import Pass, PassContext
from solar.ir.rewriter import NameGenerator, Rewriter, blocks, clone_ops


@dataclass(frozen=True)
class Inline(Pass):
    """Inlines calls bottom-up so the entry function holds the whole program (what the cost passes count).
    Inlined values and kernels get fresh names where they would clash.

    Before:
        %y = solar.call @add(%x, %x) : tensor<4xf32>
    After:
        %c = solar.kernel @add(%x as A, %x as B) -> (C: tensor<4xf32>) { ... }
    """

    name = "inline"
    summary = "Inline every solar.call"

    def apply(self, ctx: PassContext, module: ModuleOp) -> None:
        try:
            for func in module.funcs:
                self._inline_func(ctx, module, func, [func.name])
        except _Recursion:
            return  # reported once, at the call that closes the cycle

    def _inline_func(self, ctx: PassContext, module: ModuleOp, func: FuncOp, stack: list[str]) -> None:
        for block in list(blocks(func)):
            rewriter = Rewriter(block.ops)
            while rewriter.index < len(block.ops):
                op = block.ops[rewriter.index]
                callee = module.lookup(op.callee) if isinstance(op, CallOp) else None
                if callee is None:
                    rewriter.index += 1
                    continue
                if callee.name in stack:
                    self.error(ctx, f"recursive call to @{callee.name} "
                                    f"({' -> '.join('@' + s for s in [*stack, callee.name])})", op.loc)
                    raise _Recursion
                self._inline_func(ctx, module, callee, [*stack, callee.name])
                body = _clone_body(callee, op, func)
                ret = body.pop()
                assert isinstance(ret, ReturnOp)
                rewriter.replace_op(op, body, ret.values)


class _Recursion(Exception):
    pass


def _clone_body(callee: FuncOp, call: CallOp, caller: FuncOp) -> list[Op]:
    """The callee's body with its arguments replaced by the call's operands, values and symbols renamed
    where they would clash with the caller's."""
    body = clone_ops(callee.body, dict(zip(callee.args, call.args, strict=True)))
    values, symbols = NameGenerator.values_of(caller), NameGenerator.symbols_of(caller)
    for op in body:
        for inner in op.walk():
            for v in [*inner.results, *(inner.iter_args if isinstance(inner, ForOp) else [])]:
                v.name = values.fresh(v.name)
            if isinstance(inner, KernelOp | EinsumOp | GroupOp):
                inner.symbol = symbols.fresh(inner.symbol)
    return body
