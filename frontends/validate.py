"""Validation: run the translated IR through the executor and compare with the original program's outputs.

    report = validate(module, make_case, sizes={"BATCH": 2}, seed=0)
    record(module, report)           # module attributes say what was checked, and how closely

`make_case()` builds seeded inputs at the sizes bound (the IR's size parameters rebound small: the module
keeps its full sizes, the run does not), runs the original program on them and returns the IR's argument
arrays and the golden outputs. Outputs are compared with dtype-aware tolerances:
`|ir − golden| ≤ atol + rtol · max(|golden|, mean |golden|)` elementwise, NaN and ±inf where the golden
has them, integers and booleans exactly. The mean-magnitude floor keeps cancellation in long sums (a value
near zero computed from large terms) from failing a correct translation.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solar.backends.dtypes import default_tolerance
from solar.ir.dtypes import DType
from solar.ir.ops import ModuleOp

from .diagnostics import ValidationError


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
            "status": "passed" if self.ok else "failed",
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
        lines = [f"Validation: {'passed' if self.ok else 'FAILED'}; seed {self.seed}; sizes {sizes}"]
        if self.reduced:
            full = ", ".join(f"{k}={v}" for k, v in self.full_sizes.items())
            lines.append(f"  ran at reduced sizes through the size parameters; the IR keeps the full sizes ({full})")
        if self.note:
            lines.append("  " + self.note)
        lines.extend("  " + line for line in self.details)
        lines.append("  " + self.summary())
        return lines


def compare(actual: np.ndarray, golden: np.ndarray, dtype: DType, index: int) -> OutputCheck:
    a = np.asarray(actual)
    g = np.asarray(golden)
    check = OutputCheck(index, dtype.spelling, tuple(g.shape), True)
    if a.shape != g.shape:
        check.ok = False
        check.why = f"has shape {list(a.shape)}, the original gives {list(g.shape)}"
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
    over = err > tol.atol + tol.rtol * scale
    check.mismatches = int(over.sum()) + int(bad_special.sum())
    if check.mismatches:
        check.ok = False
        check.why = (f"differs beyond rtol={tol.rtol:g}, atol={tol.atol:g} in {check.mismatches} of {g.size} "
                     "elements")
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


def executor() -> Callable[..., list[np.ndarray]]:
    """The IR executor (the Numba backend), `run(module, inputs, params=None) -> outputs`; imported on first use,
    because loading Numba costs a second that --no-validate runs should not pay."""
    try:
        from solar.backends.executor import run
    except ImportError as err:  # pragma: no cover - the backend is part of the package
        raise ValidationError(f"the IR executor is not available ({err}); translate with --no-validate") from None
    return run


def validate(module: ModuleOp, make_case: Callable[[], tuple[Sequence[np.ndarray], Sequence[np.ndarray]]],
             sizes: dict[str, int], seed: int = 0) -> ValidationReport:
    """Runs the original (through `make_case`) and the IR at `sizes`; compares every output."""
    full = {p.name: p.default for p in module.params if p.default is not None}
    report = ValidationReport(True, seed, dict(sizes), full)
    start = time.perf_counter()
    try:
        args, golden = make_case()
    except Exception as err:
        report.ok = False
        report.error = f"the original program failed on the validation inputs: {type(err).__name__}: {err}"
        return report
    report.seconds["reference"] = time.perf_counter() - start
    run = executor()
    start = time.perf_counter()
    try:
        outs = run(module, list(args), params=sizes or None)
    except Exception as err:
        report.ok = False
        report.error = f"the IR failed to run: {type(err).__name__}: {err}"
        return report
    report.seconds["ir"] = time.perf_counter() - start
    entry = module.entry
    types = entry.result_types if entry is not None else []
    if len(outs) != len(golden):
        report.ok = False
        report.error = f"the IR returns {len(outs)} output(s), the original {len(golden)}"
        return report
    for k, (a, g, t) in enumerate(zip(outs, golden, types, strict=False)):
        check = compare(a, g, t.dtype, k)
        report.outputs.append(check)
        report.ok = report.ok and check.ok
    return report


Case = Callable[[], tuple[Sequence[np.ndarray], Sequence[np.ndarray]]]


def validate_sized(module: ModuleOp, case_for: Callable[[dict[str, int]], Case], sizes: dict[str, int],
                   seed: int = 0) -> ValidationReport:
    """`validate` at `sizes`; when the original program itself fails there (indices in the data that point
    past a shrunk dimension, say), once more at the full sizes, which the report then records."""
    report = validate(module, case_for(sizes), sizes, seed)
    full = {p.name: p.default for p in module.params if p.default is not None}
    if not report.error.startswith("the original program failed") or sizes == full:
        return report
    first = report.error.split(": ", 1)[-1]
    # Next: only the batch dims reduced (the program may need its other dims as large as written).
    batch_only = {k: v if k.startswith("BATCH") else full.get(k, v) for k, v in sizes.items()}
    if batch_only not in (sizes, full):
        report = validate(module, case_for(batch_only), batch_only, seed)
        if not report.error.startswith("the original program failed"):
            report.note = (f"every dim reduced was tried first, and the original failed there ({first}); "
                           "only the batch dims are reduced")
            return report
    report = validate(module, case_for(full), full, seed)
    report.note = f"reduced sizes were tried first, and the original failed there ({first})"
    return report


def record(module: ModuleOp, report: ValidationReport) -> None:
    """Records the validation result in the module's attributes (kept by printing and parsing)."""
    module.attrs["validation"] = report.as_attr()
