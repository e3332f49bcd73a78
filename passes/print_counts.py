"""--print-counts: per-op and total iteration points, MACs, FLOPs (tensor/vector) and bytes of a module."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from solar.backends.cost import CostError, CostModel, Work
from solar.ir import attr_names
from solar.ir.analysis.counts import Counts
from solar.ir.analysis.formula import Formula, NotSymbolic, Number, symbols
from solar.ir.analysis.isl_model import UnsupportedForISL, isl_name
from solar.ir.analysis.op_counts import func_counts
from solar.ir.ops import EinsumOp, ModuleOp, SymbolRef
from solar.ir.pass_manager import Pass, PassContext
from solar.ir.tables import new_table, render_tables


@dataclass(frozen=True)
class PrintCounts(Pass):
    """Prints a table of every kernel and einsum with its exact counts (see docs/counts.md), then module
    totals and operations by kind. Kernels inside a solar.for are counted once per iteration of the loop
    (the table says how many). Leaves the IR unchanged.

    `--print-counts=symbolic` prints the same counts as formulas in the size parameters (barvinok's
    piecewise quasi-polynomials, for sizes ≥ 1), then each unit of execution and fusion group as the SOL
    backend counts them (FLOPs on tensor and vector units, DRAM bytes) and the totals:

        @ffn/@up  kernel  points = 2 * D * FF * S  ...  FLOPs tensor = 4 * D * FF * S ...
    """

    name = "print-counts"
    summary = "Print exact points, MACs, FLOPs and bytes per op and for the module (=symbolic: as formulas)"
    preserves_analyses = True  # it reports and annotates; the IR the analyses read is unchanged
    primary_option = "form"
    form: Literal["exact", "symbolic"] = "exact"

    def apply(self, ctx: PassContext, module: ModuleOp) -> None:
        if self.form == "symbolic":
            self._symbolic(ctx, module)
            return
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

    def _symbolic(self, ctx: PassContext, module: ModuleOp) -> None:
        params = [p.name for p in module.params]
        values = symbols(params, isl_name)
        names = {isl_name(p): p for p in params}
        rows: list[tuple[str, str, Counts]] = []
        try:
            for func in module.funcs:
                for op, counts in func_counts(module, func, values):
                    if isinstance(counts, UnsupportedForISL):
                        ctx.diagnostics.remark(f"kernel @{op.symbol} is not counted: {counts}", op.loc)
                        continue
                    suffix = f" ×{_text(counts.runs, names)}" if counts.in_loop else ""
                    kind = "einsum" if isinstance(op, EinsumOp) else "kernel"
                    rows.append((f"@{func.name}/@{op.symbol}", kind + suffix, counts.total))
            cost = CostModel(module, values=values) if module.entry is not None else None
        except (NotSymbolic, TypeError) as err:
            ctx.diagnostics.error(f"print-counts: no closed form: {err}; bind the sizes (--bind-params) for "
                                  "exact numbers", module.loc)
            return
        except CostError as err:
            ctx.diagnostics.error(f"print-counts: {err}", err.loc or (err.op.loc if err.op is not None else module.loc))
            return
        lines = ["Symbolic counts (sizes ≥ 1):"]
        total = Counts()
        for name, kind, c in rows:
            total += c
            lines.append(f"  {name} ({kind}): " + _counts_text(c, names))
        lines.append("  total: " + _counts_text(total, names))
        if cost is not None:
            lines.append("Units of execution and fusion groups, as --sol counts them (bytes: DRAM traffic):")
            for w in [*cost.units, *(g for g in cost.groups if g.kind == "group")]:
                lines.append(f"  {w.name} ({w.kind}): " + _work_text(w, names))
            whole = cost.whole_graph()
            lines.append("  whole graph: " + _work_text(whole, names))
        ctx.report("\n".join(lines) + "\n")


def _text(value: Number, names: dict[str, str]) -> str:
    return value.text(names=names) if isinstance(value, Formula) else f"{value:,}" if isinstance(value, int) \
        else str(value)


def _counts_text(c: Counts, names: dict[str, str]) -> str:
    return (f"points = {_text(c.points, names)}; MACs = {_text(c.macs, names)}; "
            f"FLOPs tensor = {_text(c.flops_tensor, names)}; FLOPs vector = {_text(c.flops_vector, names)}; "
            f"bytes read = {_text(sum(c.bytes_read.values(), 0), names)}; "
            f"bytes written = {_text(c.bytes_written, names)}")


def _work_text(w: Work, names: dict[str, str]) -> str:
    tensor = sum((n * w.trips for n in w.flops_tensor.values()), 0)
    vector = sum((n * w.trips for n in w.flops_vector.values()), 0)
    return (f"FLOPs tensor = {_text(tensor, names)}; FLOPs vector = {_text(vector, names)}; "
            f"bytes = {_text(w.bytes * w.trips, names)}")


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
