"""--lift-affine: the polyhedral model of every kernel: bounds proofs, exact counts, full writes, footprints."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from solar.ir.analysis.access_checks import AccessChecks
from solar.ir.analysis.isl_model import KernelModel, UnsupportedForISL, evaluate
from solar.ir.ops import ModuleOp
from solar.ir.pass_manager import Pass, PassContext


@dataclass(frozen=True)
class LiftAffine(Pass):
    """Builds each kernel's ISL model (statement domains and access relations) and records it on the IR;
    proves every access in bounds, counts iteration points exactly, checks that outputs written with `=`
    are fully written, and computes each tensor's footprint (elements actually touched).

    Before:
        %h = solar.kernel @k(%x as X) -> (Y: tensor<4xf32>) { affine.for %i = 0 to 4 { Y[%i] = X[%i] } }
    After:
        %h = solar.kernel @k(%x as X) -> (Y: tensor<4xf32>) attributes {isl = {S0 = {domain = "{ S0[i] : 0 <= i <= 3 }",
          write = "{ S0[i] -> Y[i] }", reads = ["{ S0[i] -> X[i] }"], points = 4}}, footprint = {X = 4, Y = 4}} {...}
    """

    name = "lift-affine"
    preserves_analyses = True  # it annotates; --sol then reuses its AccessChecks
    summary = "ISL model of every kernel: bounds proofs, exact iteration counts, full writes, footprints"
    annotate: bool = True

    def apply(self, ctx: PassContext, module: ModuleOp) -> None:
        values = module.param_values()
        checks = ctx.analysis(AccessChecks, module)  # what pricing refuses too (solar/ir/analysis/access_checks.py)
        for kernel, model in checks.models:
            if isinstance(model, UnsupportedForISL):
                loc = model.expr.loc if model.expr is not None else kernel.loc
                ctx.diagnostics.remark(f"kernel @{kernel.symbol} is not modelled: {model}", loc)
            elif self.annotate:
                kernel.attrs.update(annotations(model, values))
        for problem in checks.problems:
            ctx.diagnostics.error(problem.message, problem.loc)


def annotations(model: KernelModel, values: dict[str, int]) -> dict[str, Any]:
    stmts: dict[str, Any] = {}
    for s in model.statements:
        card = s.domain.card()
        points = evaluate(card, values)
        stmts[s.name] = {
            "domain": str(s.domain),
            "write": str(s.write),
            "reads": [str(m) for _, m in s.reads],
            "points": points if points is not None else str(card),
        }
    footprint: dict[str, Any] = {}
    for name in model.tensors:
        fp = model.footprint(name, written=name in {d.name for d in model.kernel.outputs})
        if fp is None:
            continue
        card = fp.card()
        n = evaluate(card, values)
        footprint[name] = n if n is not None else str(card)
    return {"isl": stmts, "footprint": footprint}
