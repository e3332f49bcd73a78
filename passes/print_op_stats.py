"""--print-op-stats: how many ops of each kind a module holds, and how big its kernels are."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from solar.ir.ops import AffineFor, AffineIf, Assign, KernelOp, LocalDecl, ModuleOp, walk_stmts
from solar.ir.pass_manager import Pass, PassContext


@dataclass(frozen=True)
class PrintOpStats(Pass):
    """Reports op counts (as mlir-opt's -print-op-stats does), plus kernel-level statement counts.
    Leaves the IR unchanged."""

    name = "print-op-stats"
    summary = "Print the number of ops of each kind"
    preserves_analyses = True  # it reports and annotates; the IR the analyses read is unchanged

    def apply(self, ctx: PassContext, module: ModuleOp) -> None:
        ops: Counter[str] = Counter()
        stmts: Counter[str] = Counter()
        for op in module.walk():
            ops[op.opname] += 1
            if isinstance(op, KernelOp):
                for s in walk_stmts(op.body):
                    if isinstance(s, AffineFor):
                        stmts["affine.for"] += 1
                    elif isinstance(s, AffineIf):
                        stmts["affine.if"] += 1
                    elif isinstance(s, LocalDecl):
                        stmts["local"] += 1
                    elif isinstance(s, Assign):
                        stmts["store" if s.reduction is None else f"reduce ({s.reduction})"] += 1
        width = max((len(k) for k in [*ops, *stmts]), default=10)
        lines = ["Operations encountered:", "-" * 23]
        lines += [f"{k:<{width}} , {v}" for k, v in sorted(ops.items())]
        if stmts:
            lines += ["", "Kernel statements:", "-" * 18]
            lines += [f"{k:<{width}} , {v}" for k, v in sorted(stmts.items())]
        ctx.report("\n".join(lines))
