"""--print-counts: per-op and total iteration points, MACs, FLOPs (tensor/vector) and bytes of a module."""

from __future__ import annotations

from dataclasses import dataclass
from io import StringIO

from rich.console import Console
from rich.table import Table

from solar.ir.expr import evaluate_int
from solar.ir.ops import EinsumOp, KernelOp, ModuleOp, SymbolRef
from solar.ir.pass_manager import Pass, PassContext
from solar.passes.analysis.counts import Counts, einsum_counts, kernel_counts
from solar.passes.analysis.isl_model import UnsupportedForISL
from solar.passes.lift_affine import kernels_with_loops, model_kernels


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
        models = dict(model_kernels(module))
        for func in module.funcs:
            trips = {k.symbol: _trips(loops, values) for k, loops in kernels_with_loops(func)}
            for op in func.walk():
                if isinstance(op, EinsumOp):
                    origin = op.attrs.get("kernel")
                    kind = f"einsum ({origin.name})" if isinstance(origin, SymbolRef) else "einsum"
                    rows.append((f"@{func.name}/@{op.symbol}", kind, einsum_counts(op, params, values)))
                elif isinstance(op, KernelOp):
                    model = models[op]
                    if isinstance(model, UnsupportedForISL):
                        ctx.diagnostics.remark(f"kernel @{op.symbol} is not counted: {model}", op.loc)
                        continue
                    c = kernel_counts(model, values)
                    n = trips.get(op.symbol, 1)
                    kind = "kernel" if n == 1 else f"kernel ×{n}"
                    rows.append((f"@{func.name}/@{op.symbol}", kind, _scaled(c, n)))
        ctx.report(render(rows))


def _trips(loops: dict, values: dict[str, int]) -> int:
    n = 1
    for lo, hi in loops.values():
        n *= max(0, evaluate_int(hi, values) - evaluate_int(lo, values))
    return n


def _scaled(c: Counts, n: int) -> Counts:
    if n == 1:
        return c
    out = Counts(c.points * n, c.macs * n, c.flops_tensor * n, c.flops_vector * n)
    out.ops.update({k: v * n for k, v in c.ops.items()})
    out.bytes_read = {k: v * n for k, v in c.bytes_read.items()}
    out.bytes_written = c.bytes_written * n
    return out


def render(rows: list[tuple[str, str, Counts]]) -> str:
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
