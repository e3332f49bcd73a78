"""--print-intensity: the arithmetic intensity (FLOPs per DRAM byte) of every einsum unit and fusion group."""

from __future__ import annotations

import math
from dataclasses import dataclass

from solar.backends.cost import CostError, CostModel, Work
from solar.ir.analysis.access_checks import refuse_wrong_accesses
from solar.ir.ops import EinsumOp, ModuleOp
from solar.ir.pass_manager import Pass, PassContext
from solar.ir.tables import new_table, render_tables


@dataclass(frozen=True)
class PrintIntensity(Pass):
    """Prints a table of the arithmetic intensity (FLOPs per DRAM byte, `Work.intensity`, docs/sol.md) of
    every unit of einsums (the einsums lifted from one kernel, which run as one) and, after --fuse, of
    every fusion group, with the FLOPs and bytes it comes from. A group's bytes are those of its fused
    execution (intermediates stay on chip), so fusing raises intensity. `min=X` lists only rows of at
    least X FLOP/byte. Leaves the IR unchanged.

    Before:  %h = solar.einsum @fc1 ... (examples/mlp.sir after --lift-einsum)
    After:   the IR unchanged; the report's row  @fc1 │ einsum │ 67,174,400 │ 2,494,464 │ 26.9
    """

    name = "print-intensity"
    summary = "Print the arithmetic intensity (FLOP/byte) of each einsum unit and fusion group"
    primary_option = "min"
    requires = ("lift-einsum",)
    preserves_analyses = True
    min: float = 0.0

    def prerequisite_met(self, name: str, module: ModuleOp) -> bool:
        # Input that already holds einsums (lifted by an earlier run) needs no --lift-einsum.
        return name == "lift-einsum" and any(isinstance(op, EinsumOp) for op in module.walk())

    def apply(self, ctx: PassContext, module: ModuleOp) -> None:
        if self.bound_params(ctx, module) is None:
            return
        if any(op.opname == "solar.call" for op in module.walk()):
            self.error(ctx, "the module has calls: run --inline before it", module.loc)
            return
        if refuse_wrong_accesses(ctx, module, self.name):  # checked once, shared with --sol by type
            return
        try:
            model = ctx.analysis(CostModel, module, check_accesses=False)
        except CostError as err:
            self.error(ctx, str(err), err.loc or (err.op.loc if err.op is not None else module.loc))
            return
        rows = [w for w in model.units if w.kind == "einsum"] + [w for w in model.groups if w.kind == "group"]
        ctx.report(intensity_table([w for w in rows if w.intensity >= self.min]))


def intensity_table(works: list[Work]) -> str:
    table = new_table("Arithmetic intensity", ("name", "kind", "FLOPs", "bytes", "FLOP/byte"), text_columns=2)
    for w in works:
        ai = "inf" if math.isinf(w.intensity) else f"{w.intensity:.3g}"
        table.add_row(w.name, w.kind, f"{w.flops:,}", f"{w.total_bytes:,}", ai)
    return render_tables([table])
