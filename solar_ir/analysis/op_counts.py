"""The counts of one kernel or einsum where it stands, from one call with no side effects: over every run
(each iteration of the solar.for loops around it), with the number of runs and the counts of one run.
`--print-counts` shows the totals and the cost model prices one run times its trips, so the two mean the
same by construction (docs/counts.md, "Kernels and einsums inside solar.for")."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from solar.ir.analysis.counts import Counts, einsum_counts, kernel_counts
from solar.ir.analysis.isl_model import UnsupportedForISL, build_model, evaluate, loop_iterations
from solar.ir.analysis.kernel_models import ops_with_loops
from solar.ir.expr import Expr
from solar.ir.ops import EinsumOp, FuncOp, KernelOp, ModuleOp

Loops = dict[str, tuple[Expr, Expr]]  # the solar.for loops around an op, outermost first: var -> [lo, hi)


@dataclass(frozen=True)
class OpCounts:
    """A kernel's or einsum's counts summed over its runs (`total`), how many runs that is, and whether
    it stands inside solar.for loops at all."""

    total: Counts
    runs: int
    in_loop: bool = False

    def per_run(self) -> Counts:
        """The counts of one run: exact when every run counts the same, else the mean."""
        return self.total.per_run(self.runs)


def op_counts(op: EinsumOp | KernelOp, params: list[str], values: dict[str, int], loops: Loops) -> OpCounts:
    """The counts of `op` inside `loops`, at the size parameters' `values`. A kernel is modelled with every
    loop index as a parameter and counted exactly over all iterations (each run reads its own footprint,
    which may depend on the index); an einsum cannot depend on one, so its counts are multiplied. Raises
    UnsupportedForISL for a kernel the ISL model cannot express."""
    runs = 1
    if loops:
        n = evaluate(loop_iterations(loops, params).card(), values)
        if n is None:
            raise ValueError("the trip count of the solar.for loops needs values for their size parameters")
        runs = n
    if isinstance(op, EinsumOp):
        return OpCounts(einsum_counts(op, params, values).scaled(runs), runs, bool(loops))
    return OpCounts(kernel_counts(build_model(op, params, loops, all_loops=True), values), runs, bool(loops))


def func_counts(module: ModuleOp, func: FuncOp, values: dict[str, int]
                ) -> Iterator[tuple[EinsumOp | KernelOp, OpCounts | UnsupportedForISL]]:
    """Every kernel and einsum of `func`, nested ones included, in program order, with its counts or why a
    kernel has none."""
    params = [p.name for p in module.params]
    for op, loops in ops_with_loops(func):
        if isinstance(op, EinsumOp | KernelOp):
            try:
                yield op, op_counts(op, params, values, loops)
            except UnsupportedForISL as err:
                yield op, err
