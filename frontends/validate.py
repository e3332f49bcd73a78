"""Validation: run the translated IR through the executor and compare with the original program's outputs.

    report = validate(module, make_case, sizes={"BATCH": 2}, seed=0)
    record(module, report)           # module attributes say what was checked, and how closely

`make_case()` builds seeded inputs at the sizes bound (the IR's size parameters rebound small: the module
keeps its full sizes, the run does not), runs the original program on them and returns the IR's argument
arrays and the golden outputs. Outputs are compared with dtype-aware tolerances:
`|ir − golden| ≤ atol + rtol · max(|golden|, mean |golden|)` elementwise, NaN and ±inf where the golden
has them, integers and booleans exactly. The mean-magnitude floor keeps cancellation in long sums (a value
near zero computed from large terms) from failing a correct translation.

Long reductions: the executor sums f32 in f64 (docs/ir.md), the framework in f32, so the golden carries the
rounding error of its own sums, which grows with their length L. The relative tolerance grows by
`REDUCTION_SLACK · u · √L` (u the f32 unit roundoff), and where elements still differ, a second run of the
original in float64 (`make_wide`) decides: an element is accepted when the IR is within tolerance of that run
and closer to it than the framework's f32 result is (an ill-conditioned statistic, such as a group norm over
values with a large mean and a small variance, where the framework's own mean is off). An output ill-conditioned
as a whole passes when the IR is within CONDITIONING_FACTOR times the f32 original's own largest error of that
run (training batch norm over four elements per channel, layer after layer, at reduced sizes).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from solar.backends.dtypes import default_tolerance
from solar.ir import attr_names
from solar.ir.dtypes import DType
from solar.ir.expr import IndexRef, walk
from solar.ir.expr_values import evaluate_int
from solar.ir.ops import AffineFor, AffineIf, Assign, KernelOp, KStmt, ModuleOp

from .diagnostics import HarnessError, ValidationError

if TYPE_CHECKING:
    from solar.backends.executor import Program

# A sequential f32 sum of L terms drifts by about u·√L relative (a random walk of rounding errors); the
# framework's blocked sums come close to that in the worst layouts (a vector norm over 2^20 values at a large
# mean is off by 3.9·u·√L). Eight covers that with margin and still fails a wrong term in a 1000-term sum.
REDUCTION_SLACK = 8.0
F32_UNIT_ROUNDOFF = 2.0 ** -24
F64_UNIT_ROUNDOFF = 2.0 ** -53
# The IR's largest error against the original's float64 run may be this many times the original's own f32
# error there (an ill-conditioned output, where both f32 runs are about equally far from the float64 one);
# a wrong term or op is off by far more than the rounding of a correct one.
CONDITIONING_FACTOR = 4.0


@dataclass
class OutputCheck:
    index: int
    dtype: str
    shape: tuple[int, ...]
    ok: bool
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    mismatches: int = 0
    why: str = ""
    rtol: float = 0.0  # the relative tolerance used (grown with the reduction length)
    explained: int = 0  # elements off the golden where the framework's own f32 rounding is larger (float64 run)
    conditioning: float = 0.0  # the original's own largest f32 error (float64 run), when it set the tolerance


@dataclass
class ValidationReport:
    ok: bool
    seed: int
    sizes: dict[str, int]  # the size parameters as bound for the run
    full_sizes: dict[str, int]  # their full-size values (the module's defaults)
    outputs: list[OutputCheck] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    error: str = ""  # the IR failed to run (or the reference did): why
    note: str = ""  # how the sizes were chosen, when not as asked
    details: list[str] = field(default_factory=list)  # more header lines: which dims shrank, which could not
    internal: bool = False  # `error` is a failure of validation's own machinery, not of either program
    skipped: str = ""  # not run, and why (too large to run even at the smallest sizes it can take)

    @property
    def reduced(self) -> bool:
        return any(self.sizes.get(k, v) != v for k, v in self.full_sizes.items())

    @property
    def max_abs_error(self) -> float:
        return max((o.max_abs_error for o in self.outputs), default=0.0)

    @property
    def max_rel_error(self) -> float:
        return max((o.max_rel_error for o in self.outputs), default=0.0)

    def summary(self) -> str:
        if self.skipped:
            return f"not run: {self.skipped}"
        if self.error:
            return f"validation failed: {self.error}"
        bad = [o for o in self.outputs if not o.ok]
        if bad:
            o = bad[0]
            return (f"validation failed: output {o.index} ({o.dtype}{list(o.shape)}) {o.why}; max abs error "
                    f"{o.max_abs_error:.3g}, max rel error {o.max_rel_error:.3g}")
        return (f"validated {len(self.outputs)} output(s): max abs error {self.max_abs_error:.3g}, max rel error "
                f"{self.max_rel_error:.3g}")

    def as_attr(self) -> dict[str, Any]:
        attr: dict[str, Any] = {
            "status": "skipped" if self.skipped else "passed" if self.ok else "failed",
            "seed": self.seed,
            "sizes": dict(self.sizes),
            "reduced": self.reduced,
            "max_abs_error": float(f"{self.max_abs_error:.3g}"),
            "max_rel_error": float(f"{self.max_rel_error:.3g}"),
        }
        if self.error:
            attr["error"] = self.error
        return attr

    def header(self) -> list[str]:
        """Comment lines for the top of a written .sir file."""
        sizes = ", ".join(f"{k}={v}" for k, v in self.sizes.items()) or "none (no size parameters)"
        status = "skipped" if self.skipped else "passed" if self.ok else "FAILED"
        lines = [f"Validation: {status}; seed {self.seed}; sizes {sizes}"]
        if self.reduced:
            full = ", ".join(f"{k}={v}" for k, v in self.full_sizes.items())
            lines.append(f"  ran at reduced sizes through the size parameters; the IR keeps the full sizes ({full})")
        if self.note:
            lines.append("  " + self.note)
        lines.extend("  " + line for line in self.details)
        lines.append("  " + self.summary())
        return lines


def reduction_terms(module: ModuleOp, sizes: dict[str, int] | None = None) -> int:
    """The most terms that one element of a kernel's sum or product (`+=`, `*=`) combines, with the size
    parameters at `sizes` (their defaults otherwise): the trip counts of the loops around the reduction that
    its target does not move with. Bounds that depend on outer indices count at their largest."""
    env = {p.name: p.default for p in module.params if p.default is not None}
    env.update(sizes or {})
    best = 1

    def visit(stmts: list[KStmt], loops: list[tuple[str, int]]) -> None:
        nonlocal best
        for st in stmts:
            if isinstance(st, AffineFor):
                visit(st.body, [*loops, (st.var, _trips(st, env, loops))])
            elif isinstance(st, AffineIf):
                visit(st.body, loops)
            elif isinstance(st, Assign) and st.op in ("+=", "*="):
                moves = {n.name for i in st.target.indices for n in walk(i) if isinstance(n, IndexRef)}
                best = max(best, int(np.prod([t for v, t in loops if v not in moves], dtype=np.float64)))

    for op in module.walk():
        if isinstance(op, KernelOp):
            visit(op.body, [])
    return best


def _trips(loop: AffineFor, env: dict[str, int], outer: list[tuple[str, int]]) -> int:
    """A loop's trip count; with bounds in outer indices, its largest over their ranges' ends."""
    names = [v for v, _ in outer]
    best = 1
    for corner in range(1 << min(len(names), 6)):
        point = dict(env)
        for k, (v, trips) in enumerate(outer):
            point["%" + v] = (trips - 1) if (corner >> k) & 1 else 0
        try:
            span = evaluate_int(loop.upper, point) - evaluate_int(loop.lower, point)
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            continue
        best = max(best, -(-span // loop.step))
    return best


def reduction_rtol(dtype: DType, terms: int) -> float:
    """The relative tolerance for outputs fed by reductions of `terms` terms (docs/design/validation.md,
    "Long reductions")."""
    u = F64_UNIT_ROUNDOFF if dtype == DType.F64 else F32_UNIT_ROUNDOFF  # narrow floats accumulate in f32
    return default_tolerance(dtype).rtol + REDUCTION_SLACK * u * float(np.sqrt(max(terms, 1)))


def _shape_check(actual: np.ndarray, golden: np.ndarray, dtype: DType, index: int
                 ) -> tuple[np.ndarray, np.ndarray, OutputCheck]:
    """The two outputs as arrays and a check that fails (with why) when their shapes differ."""
    a = np.asarray(actual)
    g = np.asarray(golden)
    check = OutputCheck(index, dtype.spelling, tuple(g.shape), True)
    if a.shape != g.shape:
        check.ok = False
        check.why = f"has shape {list(a.shape)}, the original gives {list(g.shape)}"
    return a, g, check


def compare(actual: np.ndarray, golden: np.ndarray, dtype: DType, index: int, terms: int = 1,
            wide: np.ndarray | None = None) -> OutputCheck:
    """Compares one output. `terms`: the longest reduction in the IR (grows rtol); `wide`: the original's
    output from a float64 run, which decides elements where the f32 golden is the less accurate side."""
    a, g, check = _shape_check(actual, golden, dtype, index)
    if not check.ok:
        return check
    if not dtype.is_float:
        diff = a.astype(np.int64) != g.astype(np.int64)
        check.mismatches = int(diff.sum())
        if check.mismatches:
            check.ok = False
            check.max_abs_error = float(np.abs(a.astype(np.float64) - g.astype(np.float64)).max())
            check.max_rel_error = 1.0
            check.why = f"differs in {check.mismatches} of {g.size} elements"
        return check
    a64 = a.astype(np.float64)
    g64 = g.astype(np.float64)
    tol = default_tolerance(dtype)
    rtol = check.rtol = reduction_rtol(dtype, terms)
    nan_a, nan_g = np.isnan(a64), np.isnan(g64)
    inf_g = np.isinf(g64)
    special = nan_g | inf_g
    bad_special = (nan_a != nan_g) | (inf_g & (a64 != g64))
    finite = ~special & ~nan_a
    mag = np.abs(g64[finite])
    floor = float(mag.mean()) if mag.size else 0.0
    err = np.abs(a64[finite] - g64[finite])
    scale = np.maximum(mag, floor)
    if err.size:
        check.max_abs_error = float(err.max())
        check.max_rel_error = float((err / np.maximum(scale, np.finfo(np.float64).tiny)).max())
    limit = tol.atol + rtol * scale
    over = err > limit
    if over.any() and wide is not None and np.shape(wide) == g.shape:
        w64 = np.asarray(wide, np.float64)[finite]
        err_wide = np.abs(a64[finite] - w64)
        # The IR agrees with the float64 run of the original, and the f32 original is further from it.
        explained = over & (err_wide <= limit) & (np.abs(g64[finite] - w64) > err_wide)
        over &= ~explained
        # Ill-conditioned as a whole (training batch norm over a few elements per channel at reduced sizes,
        # layer after layer): the f32 original itself is far from its float64 run. The IR passes when it is
        # no further from that run than CONDITIONING_FACTOR times the original's own largest f32 error.
        own = float(np.abs(g64[finite] - w64).max()) if w64.size else 0.0
        if over.any() and own > 0 and float(err_wide.max()) <= CONDITIONING_FACTOR * own:
            explained |= over
            over[:] = False
            check.conditioning = own
        check.explained = int(explained.sum())
    check.mismatches = int(over.sum()) + int(bad_special.sum())
    if check.mismatches:
        check.ok = False
        check.why = (f"differs beyond rtol={rtol:.3g}, atol={tol.atol:g} in {check.mismatches} of {g.size} "
                     "elements")
    return check


# Statistics of two samples of one distribution differ by a few standard errors; six makes a false alarm
# rarer than one in 10^8 for a normal statistic, and still fails a mean off by 0.1σ on 10^4 elements.
STATISTIC_SIGMAS = 6.0


def compare_statistics(actual: np.ndarray, golden: np.ndarray, dtype: DType, index: int) -> OutputCheck:
    """An output of a program that draws random numbers: the shape, then the mean and the standard
    deviation of the finite elements, each within STATISTIC_SIGMAS standard errors of the original's."""
    a, g, check = _shape_check(actual, golden, dtype, index)
    if not check.ok:
        return check
    a64 = a.astype(np.float64).ravel()
    g64 = g.astype(np.float64).ravel()
    a64, g64 = a64[np.isfinite(a64)], g64[np.isfinite(g64)]
    if a64.size == 0 or g64.size == 0:
        check.ok = a64.size == g64.size
        check.why = "" if check.ok else "has no finite elements where the original has some, or the reverse"
        return check
    n = min(a64.size, g64.size)
    sd = float(g64.std())
    tol = default_tolerance(dtype)
    d_mean = abs(float(a64.mean()) - float(g64.mean()))
    d_std = abs(float(a64.std()) - sd)
    mean_limit = STATISTIC_SIGMAS * sd / np.sqrt(n) + tol.atol + tol.rtol * abs(float(g64.mean()))
    std_limit = STATISTIC_SIGMAS * sd / np.sqrt(2 * n) + tol.atol + tol.rtol * sd
    check.max_abs_error = max(d_mean, d_std)
    check.max_rel_error = d_std / sd if sd else 0.0
    if d_mean > mean_limit or d_std > std_limit:
        check.ok = False
        check.mismatches = 1
        check.why = (f"has mean {a64.mean():.4g} and standard deviation {a64.std():.4g}, the original "
                     f"{g64.mean():.4g} and {sd:.4g} (limits {mean_limit:.3g}, {std_limit:.3g})")
    return check


def small_sizes(module: ModuleOp, size: int = 2, full: bool = False,
                minimum: dict[str, int] | None = None) -> dict[str, int]:
    """Each size parameter bound to `size` (or its default when that is smaller, or the least value the
    program allows when that is larger: `minimum`, e.g. a conv's input covering its kernel), or all at full
    size."""
    out: dict[str, int] = {}
    for p in module.params:
        default = p.default if p.default is not None else size
        low = min(default, (minimum or {}).get(p.name, 1))
        out[p.name] = default if full else min(default, max(size, low))
    return out


# Statements the IR may run as plain Python at the validation sizes (about a second's worth): below this,
# Numba's fixed cost per process (about a second to import it and load its type registries, even with the
# machine code cached on disk) is more than interpreting the same generated code. Once this process has
# loaded Numba, only loading or compiling each kernel is left to pay, and the budget is smaller.
INTERPRET_BUDGET = 1e6
INTERPRET_BUDGET_NUMBA_LOADED = 1e5


def interpret_budget() -> float:
    """The statements validation may interpret now (see INTERPRET_BUDGET)."""
    return INTERPRET_BUDGET_NUMBA_LOADED if "numba" in sys.modules else INTERPRET_BUDGET


def executor() -> Callable[..., list[np.ndarray]]:
    """The IR executor (the Numba backend), `run(module, inputs, params=None) -> outputs`; imported on first use,
    because loading Numba costs a second that --no-validate runs should not pay."""
    try:
        from solar.backends.executor import run
    except ImportError as err:  # pragma: no cover - the backend is part of the package
        raise ValidationError(f"the IR executor is not available ({err}); translate with --no-validate") from None
    return run


# Module attribute: [[output, count output], ...] for outputs whose size depends on the data.
BOUNDED_OUTPUTS = "bounded_outputs"


def validate(module: ModuleOp, make_case: Callable[[], tuple[Sequence[np.ndarray], Sequence[np.ndarray]]],
             sizes: dict[str, int], seed: int = 0,
             make_wide: Callable[[], Sequence[np.ndarray] | None] | None = None,
             program: Program | None = None) -> ValidationReport:
    """Runs the original (through `make_case`) and the IR at `sizes`; compares every output. `make_wide`
    (optional) runs the original in float64 on the same inputs; it is called only when an output differs.
    `program` (optional): the module already prepared at `sizes` (backends/executor.py), by a caller that
    checked its size; its generated kernels are run, not made again."""
    full = {p.name: p.default for p in module.params if p.default is not None}
    report = ValidationReport(True, seed, dict(sizes), full)
    start = time.perf_counter()
    try:
        args, golden = make_case()
    except HarnessError as err:
        report.ok = False
        report.internal = True
        report.error = f"internal error in validation: {err}"
        return report
    except Exception as err:
        report.ok = False
        report.error = f"the original program failed on the validation inputs: {type(err).__name__}: {err}"
        return report
    if make_wide is None:
        make_wide = getattr(make_case, "wide", None)
    report.seconds["reference"] = time.perf_counter() - start
    run = executor()
    start = time.perf_counter()
    try:
        if program is None:
            outs = run(module, list(args), params=sizes or None, interpret_limit=interpret_budget())
        else:
            program.interpret_budget = interpret_budget()
            outs = program(list(args))
    except Exception as err:
        report.ok = False
        report.error = f"the IR failed to run: {type(err).__name__}: {err}"
        return report
    report.seconds["ir"] = time.perf_counter() - start
    entry = module.entry
    types = list(entry.result_types) if entry is not None else []
    outs, types = trim_bounded(module, list(outs), types)
    if len(outs) != len(golden):
        report.ok = False
        report.error = f"the IR returns {len(outs)} output(s), the original {len(golden)}"
        return report
    random_ops = module.attrs.get("random")
    if random_ops:
        report.note = (f"the program draws random numbers ({', '.join(map(str, random_ops))}): outputs are validated "
                       "by shape, dtype and statistics (mean, standard deviation), never by values")
        for k, (a, g, t) in enumerate(zip(outs, golden, types, strict=False)):
            check = compare_statistics(a, g, t.dtype, k)
            report.outputs.append(check)
            report.ok = report.ok and check.ok
        return report
    terms = reduction_terms(module, sizes)
    checks = [compare(a, g, t.dtype, k, terms) for k, (a, g, t) in enumerate(zip(outs, golden, types, strict=False))]
    if make_wide is not None and any(not c.ok and c.max_rel_error for c in checks):
        wide = _wide_golden(make_wide, len(golden))
        if wide is not None:
            checks = [compare(a, g, t.dtype, k, terms, w) if not c.ok else c
                      for k, (a, g, t, w, c) in enumerate(zip(outs, golden, types, wide, checks, strict=False))]
    explained = sum(c.explained for c in checks)
    conditioned = [c for c in checks if c.conditioning]
    if conditioned:
        c = conditioned[0]
        report.note = (f"output {c.index} is ill-conditioned at these sizes: the original's own f32 result is up to "
                       f"{c.conditioning:.3g} off its float64 run; the IR is within {CONDITIONING_FACTOR:g}x that "
                       f"({c.explained} element(s) beyond rtol={c.rtol:.3g})")
    elif explained:
        report.note = (f"{explained} element(s) differ from the original beyond the tolerance where the original's "
                       "own f32 rounding is larger: the IR is within tolerance of the original run in float64")
    for check in checks:
        report.outputs.append(check)
        report.ok = report.ok and check.ok
    return report


def trim_bounded(module: ModuleOp, outs: list[np.ndarray], types: list[Any]) -> tuple[list[np.ndarray], list[Any]]:
    """The IR's outputs as the original returns them: an output whose size depends on the data (nonzero,
    masked select) is held padded to a static bound, its count an extra output (`bounded_outputs` pairs
    them); keep the first `count` rows of each and drop the counts."""
    pairs = module.attrs.get(BOUNDED_OUTPUTS) or []
    if not pairs:
        return outs, types
    counts = {int(c) for _, c in pairs}
    for k, c in pairs:
        outs[int(k)] = outs[int(k)][: int(np.asarray(outs[int(c)]).reshape(()))]
    keep = [k for k in range(len(outs)) if k not in counts]
    return [outs[k] for k in keep], [types[k] for k in keep if k < len(types)]


def _wide_golden(make_wide: Callable[[], Sequence[np.ndarray] | None], count: int) -> list[np.ndarray] | None:
    """The float64 run's outputs, or None when the program does not run in float64 (mixed-dtype ops)."""
    try:
        wide = make_wide()
    except Exception:
        return None
    return list(wide) if wide is not None and len(wide) == count else None


Case = Callable[[], tuple[Sequence[np.ndarray], Sequence[np.ndarray]]]


def validate_sized(module: ModuleOp, case_for: Callable[[dict[str, int]], Case], sizes: dict[str, int],
                   seed: int = 0, wide_for: Callable[[dict[str, int]], Callable[[], Sequence[np.ndarray] | None]]
                   | None = None, program: Program | None = None) -> ValidationReport:
    """`validate` at `sizes`; when the original program itself fails there (indices in the data that point
    past a shrunk dimension, say), once more at the full sizes, which the report then records. `wide_for`:
    the original run in float64 at given sizes (see `validate`); `program`: the module prepared at `sizes`."""
    report = validate(module, case_for(sizes), sizes, seed, wide_for(sizes) if wide_for else None, program)
    full = {p.name: p.default for p in module.params if p.default is not None}
    if not report.error.startswith("the original program failed") or sizes == full:
        return report
    first = report.error.split(": ", 1)[-1]
    # Next: only the batch dims reduced (the program may need its other dims as large as written).
    batch_only = {k: v if k.startswith("BATCH") else full.get(k, v) for k, v in sizes.items()}
    if batch_only not in (sizes, full):
        report = validate(module, case_for(batch_only), batch_only, seed,
                          wide_for(batch_only) if wide_for else None)
        if not report.error.startswith("the original program failed"):
            report.note = (f"every dim reduced was tried first, and the original failed there ({first}); "
                           "only the batch dims are reduced")
            return report
    report = validate(module, case_for(full), full, seed, wide_for(full) if wide_for else None)
    report.note = f"reduced sizes were tried first, and the original failed there ({first})"
    return report


def record(module: ModuleOp, report: ValidationReport) -> None:
    """Records the validation result in the module's attributes (kept by printing and parsing)."""
    module.attrs[attr_names.VALIDATION] = report.as_attr()
