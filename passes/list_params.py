"""--list-params: each size parameter, its default, and where it appears (arguments, results, loop bounds)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from solar.ir.expr import Expr, NameRef, walk
from solar.ir.ops import AffineFor, ForOp, KernelOp, ModuleOp, walk_stmts
from solar.ir.pass_manager import Pass, PassContext
from solar.ir.types import TensorType


def _names(dim: object) -> set[str]:
    return {n.name for n in walk(dim) if isinstance(n, NameRef)} if isinstance(dim, Expr) else set()


def _axes(t: TensorType | None) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for axis, d in enumerate(t.shape if t is not None else ()):
        for name in _names(d):
            out.setdefault(name, []).append(axis)
    return out


@dataclass(frozen=True)
class ListParams(Pass):
    """Prints a table of the module's size parameters: default, the function arguments and axes each
    sizes, and how many other values and loop bounds use it. A parameter that appears nowhere is marked:
    binding or sweeping it changes nothing. Leaves the IR unchanged.

        BATCH  16  %x dim 0, %mask dim 0  (12 values, 3 loop bounds)
    """

    name = "list-params"
    summary = "List the size parameters: default, and the arguments, values and loops they size"
    preserves_analyses = True  # it only reports

    def apply(self, ctx: PassContext, module: ModuleOp) -> None:
        args: dict[str, list[str]] = {p.name: [] for p in module.params}
        values: Counter[str] = Counter()
        loops: Counter[str] = Counter()
        for func in module.funcs:
            for arg in func.args:
                for name, axes in _axes(arg.type).items():
                    args.setdefault(name, []).append(f"@{func.name} %{arg.name} dim {', '.join(map(str, axes))}")
            for op in func.walk():
                for r in op.results:
                    for name in _axes(r.type):
                        values[name] += 1
                if isinstance(op, ForOp):
                    for name in _names(op.lower) | _names(op.upper):
                        loops[name] += 1
                if isinstance(op, KernelOp):
                    for s in walk_stmts(op.body):
                        if isinstance(s, AffineFor):
                            for name in _names(s.lower) | _names(s.upper):
                                loops[name] += 1
        if not module.params:
            ctx.report("No size parameters: every size is fixed (a frontend's --dynamic, or [N = 64] after "
                       "the module name, makes sizes parameters).\n")
            return
        width = max(len(p.name) for p in module.params)
        lines = ["Size parameters (name, default, where it appears):"]
        for p in module.params:
            default = str(p.default) if p.default is not None else "(none)"
            where = "; ".join(args.get(p.name, [])) or "no argument"
            uses = f"{values[p.name]} values, {loops[p.name]} loop bounds"
            unused = "" if args.get(p.name) or values[p.name] or loops[p.name] else "  (unused: it sizes nothing)"
            lines.append(f"  {p.name:<{width}}  {default:>10}  {where}  ({uses}){unused}")
        ctx.report("\n".join(lines) + "\n")
