"""Helpers shared by the SOL and fusion tests (test_sol_*.py, test_fuse*.py); this module holds no tests.

- `FIGURES`: the peaks the tests use, written from ../shared/TARGETS.md (never read from targets/*.yaml).
- `roofline(...)`: the roofline of one unit of execution by hand, as docs/sol.md defines it.
- `run_sol(text, ...)`: parse, verify, (lift-einsum), fuse and sol in process; the TargetReports and the IR.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from solar.backends.report import TargetReport
from solar.backends.sol_results import SolResults
from solar.ir.diagnostics import DiagnosticEngine, DiagnosticError
from solar.ir.ops import ModuleOp
from solar.ir.parser import parse_module
from solar.ir.pass_manager import Pass, PassContext, PassManager
from solar.ir.verifier import verify
from solar.passes.fuse import Fuse
from solar.passes.lift_einsum import LiftEinsum
from solar.passes.sol import SOL

T = 1e12  # TFLOP/s, TB/s
REL = 1e-12  # the tool and the test compute the same formula: only rounding may differ
MODES = ("unfused", "fused", "whole_graph")


@dataclass(frozen=True)
class Figures:
    """The TARGETS.md figures the tests need (FLOP/s, B/s); None where TARGETS.md has "?"."""

    fp32_vector: float
    tf32_tensor: float | None
    bf16_tensor: float
    dram_bandwidth: float


FIGURES: dict[str, Figures] = {
    "h100-sxm": Figures(66.9 * T, 494.7 * T, 989.4 * T, 3.35 * T),
    # 7.7–8 TB/s in NVIDIA's documents: a range uses its high end, so the time stays a lower bound.
    "b200": Figures(80 * T, 1100 * T, 2250 * T, 8 * T),
    "a100": Figures(19.5 * T, 156 * T, 312 * T, 2.039 * T),
    # Thor: derived (D) figures; TF32 is "?" in TARGETS.md.
    "jetson-thor": Figures(8.0 * T, None, 259 * T, 0.273 * T),
}


@dataclass(frozen=True)
class Roof:
    """One roofline by hand: seconds on tensor cores, on vector units and on DRAM."""

    tensor_s: float
    vector_s: float
    memory_s: float

    @property
    def seconds(self) -> float:
        return max(self.tensor_s, self.vector_s, self.memory_s)

    @property
    def bound(self) -> str:
        parts = {"tensor": self.tensor_s, "vector": self.vector_s, "memory": self.memory_s}
        return max(parts, key=lambda k: parts[k])

    def __add__(self, other: Roof) -> Roof:
        """Component sums (the totals of a mode); `seconds` of a sum is not the sum of `seconds`."""
        return Roof(self.tensor_s + other.tensor_s, self.vector_s + other.vector_s, self.memory_s + other.memory_s)


def roofline(fig: Figures, *, f32_contraction: float = 0, bf16_contraction: float = 0, vector: float = 0,
             nbytes: float = 0, allow_tf32: bool = False) -> Roof:
    """docs/sol.md: bf16 contractions on BF16 tensor cores; f32 contractions on the FP32 vector units (their
    time adds to the vector work's) unless TF32 is allowed; other (f32) work on FP32 vector units."""
    tensor = bf16_contraction / fig.bf16_tensor
    vector_s = vector / fig.fp32_vector
    if allow_tf32:
        assert fig.tf32_tensor is not None
        tensor += f32_contraction / fig.tf32_tensor
    else:
        vector_s += f32_contraction / fig.fp32_vector
    return Roof(tensor, vector_s, nbytes / fig.dram_bandwidth)


def close(actual: float, expected: float, rel: float = REL) -> bool:
    return math.isclose(actual, expected, rel_tol=rel, abs_tol=0.0)


@dataclass
class SolRun:
    module: ModuleOp
    reports: list[TargetReport]
    report_text: str

    def target(self, name: str) -> TargetReport:
        return next(r for r in self.reports if r.name == name)


def pipeline(targets: list[str], *, lift: bool = True, mode: str = "greedy", allow_tf32: bool = False,
             latency: str = "", fp32_precision: str = "framework") -> list[Pass]:
    passes: list[Pass] = [LiftEinsum()] if lift else []
    return [*passes, Fuse(mode=mode), SOL(target=",".join(targets), allow_tf32=allow_tf32, latency=latency,
                                          fp32_precision=fp32_precision)]


@dataclass(frozen=True)
class ReportText:
    """What the passes printed, kept with their results."""

    text: str


def run_passes(text: str, passes: list[Pass], name: str = "test.sir") -> tuple[ModuleOp, PassContext]:
    """Parses, verifies and runs `passes`; any error diagnostic fails with its formatted text."""
    engine = DiagnosticEngine()
    reports: list[str] = []
    try:
        module = parse_module(text, name, engine)
        assert verify(module, engine), engine.format_all()
        ctx = PassContext(engine, reports.append)
        module = PassManager(passes).run(module, ctx)
    except DiagnosticError:
        raise AssertionError(f"diagnostics for {name}:\n{engine.format_all()}") from None
    ctx.results.put(ReportText("".join(reports)))
    return module, ctx


def run_sol(text: str, targets: list[str], *, lift: bool = True, mode: str = "greedy", allow_tf32: bool = False,
            latency: str = "", name: str = "test.sir", fp32_precision: str = "framework") -> SolRun:
    module, ctx = run_passes(text, pipeline(targets, lift=lift, mode=mode, allow_tf32=allow_tf32,
                                            latency=latency, fp32_precision=fp32_precision), name)
    return SolRun(module, ctx.results[SolResults].reports, ctx.results[ReportText].text)
