"""--inline: replaces every solar.call by a copy of the callee's body."""

from __future__ import annotations

import copy
from dataclasses import dataclass

from solar.ir.ops import CallOp, EinsumOp, ForOp, FuncOp, GroupOp, KernelOp, ModuleOp, Op, ReturnOp
from solar.ir.pass_manager import Pass, PassContext
from solar.ir.rewrite import defined_values, replace_uses


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
        for block in _blocks(func):
            i = 0
            while i < len(block):
                op = block[i]
                if not isinstance(op, CallOp):
                    i += 1
                    continue
                callee = module.lookup(op.callee)
                if callee is None:
                    i += 1
                    continue
                if callee.name in stack:
                    ctx.diagnostics.error(f"inline: recursive call to @{callee.name} "
                                          f"({' -> '.join('@' + s for s in [*stack, callee.name])})", op.loc)
                    raise _Recursion
                self._inline_func(ctx, module, callee, [*stack, callee.name])
                body = _clone_body(callee, op, func)
                ret = body.pop()
                assert isinstance(ret, ReturnOp)
                block[i:i + 1] = body
                rest = block[i + len(body):]
                for old, new in zip(op.results, ret.values, strict=False):
                    replace_uses(rest, old, new)
                i += len(body)


class _Recursion(Exception):
    pass


def _blocks(func: FuncOp) -> list[list[Op]]:
    blocks = [func.body]
    for op in func.walk():
        if op is not func:
            blocks.extend(op.regions)
    return blocks


def _clone_body(callee: FuncOp, call: CallOp, caller: FuncOp) -> list[Op]:
    # Arguments map to the call's operands; everything else is copied.
    memo = {id(arg): actual for arg, actual in zip(callee.args, call.args, strict=True)}
    memo[id(callee)] = caller
    body: list[Op] = copy.deepcopy(callee.body, memo)
    taken = {v.name for v in defined_values(caller)}
    symbols = {op.symbol for op in caller.walk() if isinstance(op, KernelOp | EinsumOp | GroupOp)}
    for op in body:
        for inner in op.walk():
            for v in [*inner.results, *(inner.iter_args if isinstance(inner, ForOp) else [])]:
                v.name = _fresh(v.name, taken)
            if isinstance(inner, KernelOp | EinsumOp | GroupOp):
                inner.symbol = _fresh(inner.symbol, symbols)
    return body


def _fresh(name: str, taken: set[str]) -> str:
    candidate, n = name, 0
    while candidate in taken:
        n += 1
        candidate = f"{name}_{n}"
    taken.add(candidate)
    return candidate
