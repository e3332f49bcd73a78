"""--print-counts: per-op and total iteration points, MACs, FLOPs (tensor/vector) and bytes of a module."""

from __future__ import annotations

from dataclasses import dataclass
from io import StringIO

from rich.console import Console
from rich.table import Table

from solar.ir.analysis.counts import Counts, einsum_counts, kernel_counts
from solar.ir.analysis.isl_model import UnsupportedForISL, evaluate, loop_iterations
from solar.ir.analysis.kernel_models import model_kernels, ops_with_loops
from solar.ir.ops import EinsumOp, KernelOp, ModuleOp, SymbolRef
from solar.ir.pass_manager import Pass, PassContext


@dataclass(frozen=True)
class PrintCounts(Pass):
    """Prints a table of every kernel and einsum with its exact counts (see docs/counts.md), then module
    totals and operations by kind. Kernels inside a solar.for are counted once per iteration of the loop
    (the table says how many). Leaves the IR unchanged."""

    name = "print-counts"
    summary = "Print exact points, MACs, FLOPs and bytes per op and for the module"

    def apply(self, ctx: PassContext, module: ModuleOp) -> None:
        values = module.param_values()
        missing = [p.name for p in module.params if p.default is None]
        if missing:
            ctx.diagnostics.error(f"print-counts needs values for {', '.join(missing)}; bind them with "
                                  f"--bind-params={missing[0]}=...", module.loc)
            return
        rows: list[tuple[str, str, Counts]] = []
        params = [p.name for p in module.params]
        # Kernels are modelled with every enclosing solar.for index as a parameter and counted summed over
        # all iterations (a kernel may depend on %t); einsums cannot, so theirs are multiplied.
        models = dict(model_kernels(module, all_loops=True))
        for func in module.funcs:
            for op, loops in ops_with_loops(func):
                if not isinstance(op, EinsumOp | KernelOp):
                    continue
                n = evaluate(loop_iterations(loops, params).card(), values) if loops else 1
                assert n is not None
                suffix = "" if not loops else f" ×{n}"
                if isinstance(op, EinsumOp):
                    origin = op.attrs.get("kernel")
                    kind = f"einsum ({origin.name})" if isinstance(origin, SymbolRef) else "einsum"
                    rows.append((f"@{func.name}/@{op.symbol}", kind + suffix,
                                 _scaled(einsum_counts(op, params, values), n)))
                    continue
                model = models[op]
                if isinstance(model, UnsupportedForISL):
                    ctx.diagnostics.remark(f"kernel @{op.symbol} is not counted: {model}", op.loc)
                    continue
                rows.append((f"@{func.name}/@{op.symbol}", "kernel" + suffix, kernel_counts(model, values)))
        ctx.report(counts_table(rows))


def _scaled(c: Counts, n: int) -> Counts:
    if n == 1:
        return c
    out = Counts(c.points * n, c.macs * n, c.flops_tensor * n, c.flops_vector * n)
    out.ops.update({k: v * n for k, v in c.ops.items()})
    out.bytes_read = {k: v * n for k, v in c.bytes_read.items()}
    out.bytes_written = c.bytes_written * n
    return out


def counts_table(rows: list[tuple[str, str, Counts]]) -> str:
    table = Table(title="Exact counts", title_justify="left")
    for col in ("op", "kind", "points", "MACs", "FLOPs tensor", "FLOPs vector", "bytes read", "bytes written"):
        table.add_column(col, justify="left" if col in ("op", "kind") else "right")
    total = Counts()
    for name, kind, c in rows:
        total += c
        table.add_row(name, kind, f"{c.points:,}", f"{c.macs:,}", f"{c.flops_tensor:,}", f"{c.flops_vector:,}",
                      f"{sum(c.bytes_read.values()):,}", f"{c.bytes_written:,}")
    table.add_row("total", "", f"{total.points:,}", f"{total.macs:,}", f"{total.flops_tensor:,}",
                  f"{total.flops_vector:,}", f"{sum(total.bytes_read.values()):,}", f"{total.bytes_written:,}")
    buf = StringIO()
    console = Console(file=buf, width=160, color_system=None)
    console.print(table)
    kinds = ", ".join(f"{k} {v:,}" for k, v in sorted(total.ops.items()))
    console.print(f"operations by kind: {kinds or 'none'}")
    return buf.getvalue()
