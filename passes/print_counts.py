"""--print-counts: per-op and total iteration points, MACs, FLOPs (tensor/vector) and bytes of a module."""

from __future__ import annotations

from dataclasses import dataclass

from solar.ir import attr_names
from solar.ir.analysis.counts import Counts
from solar.ir.analysis.isl_model import UnsupportedForISL
from solar.ir.analysis.op_counts import func_counts
from solar.ir.ops import EinsumOp, ModuleOp, SymbolRef
from solar.ir.pass_manager import Pass, PassContext
from solar.ir.tables import new_table, render_tables


@dataclass(frozen=True)
class PrintCounts(Pass):
    """Prints a table of every kernel and einsum with its exact counts (see docs/counts.md), then module
    totals and operations by kind. Kernels inside a solar.for are counted once per iteration of the loop
    (the table says how many). Leaves the IR unchanged."""

    name = "print-counts"
    summary = "Print exact points, MACs, FLOPs and bytes per op and for the module"
    preserves_analyses = True  # it reports and annotates; the IR the analyses read is unchanged

    def apply(self, ctx: PassContext, module: ModuleOp) -> None:
        values = module.param_values()
        missing = [p.name for p in module.params if p.default is None]
        if missing:
            ctx.diagnostics.error(f"print-counts needs values for {', '.join(missing)}; bind them with "
                                  f"--bind-params={missing[0]}=...", module.loc)
            return
        rows: list[tuple[str, str, Counts]] = []
        # Each op's counts over all its runs (solar.ir.analysis.op_counts), marked ×runs inside solar.for.
        for func in module.funcs:
            for op, counts in func_counts(module, func, values):
                if isinstance(counts, UnsupportedForISL):
                    ctx.diagnostics.remark(f"kernel @{op.symbol} is not counted: {counts}", op.loc)
                    continue
                suffix = f" ×{counts.runs}" if counts.in_loop else ""
                kind = "kernel"
                if isinstance(op, EinsumOp):
                    origin = op.attrs.get(attr_names.KERNEL)
                    kind = f"einsum ({origin.name})" if isinstance(origin, SymbolRef) else "einsum"
                rows.append((f"@{func.name}/@{op.symbol}", kind + suffix, counts.total))
        ctx.report(counts_table(rows))


def counts_table(rows: list[tuple[str, str, Counts]]) -> str:
    table = new_table("Exact counts", ("op", "kind", "points", "MACs", "FLOPs tensor", "FLOPs vector", "bytes read",
                                       "bytes written"), text_columns=2)
    total = Counts()
    for name, kind, c in rows:
        total += c
        table.add_row(name, kind, f"{c.points:,}", f"{c.macs:,}", f"{c.flops_tensor:,}", f"{c.flops_vector:,}",
                      f"{sum(c.bytes_read.values()):,}", f"{c.bytes_written:,}")
    table.add_row("total", "", f"{total.points:,}", f"{total.macs:,}", f"{total.flops_tensor:,}",
                  f"{total.flops_vector:,}", f"{sum(total.bytes_read.values()):,}", f"{total.bytes_written:,}")
    kinds = ", ".join(f"{k} {v:,}" for k, v in sorted(total.ops.items()))
    return render_tables([table, f"operations by kind: {kinds or 'none'}"])
