"""The vocabulary of target files: errors, precisions, units of execution, figure fields, measurement units,
sources, and the readers of one field's value (numbers, text, sources)."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable
from typing import Any, Literal

SCHEMA_VERSION = 1

# --------------------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------------------


class TargetError(Exception):
    """A target problem, as one line meant for users: ``file: field: message``."""

    def __init__(self, message: str, *, file: str | None = None, field: str | None = None,
                 line: int | None = None, col: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.field = field
        self.line = line  # of the field in the file, where known (1-based)
        self.col = col

    def __str__(self) -> str:
        return self.message


class PeakUnavailable(TargetError):
    """A figure the caller needs is unknown, not given, or the device lacks that unit."""


def field_error(file: str, fld: str | None, msg: str) -> TargetError:
    where = f"{file}: {fld}: " if fld else f"{file}: "
    return TargetError(where + msg, file=file, field=fld)


# --------------------------------------------------------------------------------------------------------
# Vocabulary: precisions, units of execution, figure fields, measurement units, sources
# --------------------------------------------------------------------------------------------------------

PRECISIONS: tuple[str, ...] = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp4", "int8", "int4")
EXEC_UNITS: tuple[str, ...] = ("vector", "tensor")
INT_PRECISIONS = frozenset({"int8", "int4"})

# Required in every native file: the columns of TARGETS.md. Others of the form <precision>_<unit> are
# optional (e.g. ``fp16_vector`` where a chip quotes a separate packed-half rate).
COMPUTE_FIELDS: tuple[str, ...] = (
    "fp64_vector",
    "fp64_tensor",
    "fp32_vector",
    "tf32_tensor",
    "bf16_tensor",
    "fp16_tensor",
    "fp8_tensor",
    "fp4_tensor",
    "int8_tensor",
)
OPTIONAL_COMPUTE_FIELDS: tuple[str, ...] = tuple(
    f"{p}_{u}" for p in PRECISIONS for u in EXEC_UNITS if f"{p}_{u}" not in COMPUTE_FIELDS
)

Dimension = Literal["flops", "ops", "bytes", "bandwidth", "count", "power"]

# section -> field -> (dimension, required)
_MEMORY_FIELDS: dict[str, tuple[Dimension, bool]] = {
    "dram_capacity": ("bytes", True),
    "dram_bandwidth": ("bandwidth", True),
    "l2": ("bytes", True),
    "smem_per_sm": ("bytes", True),
    "last_level_cache": ("bytes", False),  # memory-side cache beyond L2 (AMD Infinity Cache, CPU L3)
    "l2_bandwidth": ("bandwidth", False),  # NVIDIA SOLAR's SRAM_byte_per_cycle lands here
}
_CHIP_FIELDS: dict[str, tuple[Dimension, bool]] = {
    "sm_count": ("count", True),
    "tdp": ("power", True),
    # Per-chip NVLink bandwidth, both directions together (the datasheet's figure): tensor parallelism's
    # all-reduce moves through it (solar-llm, docs/llm.md).
    "nvlink_bandwidth": ("bandwidth", False),
    # Chips one NVLink domain joins (an HGX board: 8; an NVL72 rack: 72), and each chip's link beyond it
    # (its network adapter's rate, both directions together): collectives that span domains use it.
    "nvlink_domain": ("count", False),
    "internode_bandwidth": ("bandwidth", False),
}


def _compute_fields() -> dict[str, tuple[Dimension, bool]]:
    out: dict[str, tuple[Dimension, bool]] = {}
    for name in COMPUTE_FIELDS + OPTIONAL_COMPUTE_FIELDS:
        prec = name.split("_", 1)[0]
        out[name] = ("ops" if prec in INT_PRECISIONS else "flops", name in COMPUTE_FIELDS)
    return out


SECTIONS: dict[str, dict[str, tuple[Dimension, bool]]] = {
    "compute": _compute_fields(),
    "memory": _MEMORY_FIELDS,
    "chip": _CHIP_FIELDS,
}
# Every figure name is unique across sections, so a target can be queried by bare field name.
FIELD_SECTION: dict[str, str] = {f: s for s, fields in SECTIONS.items() for f in fields}

# Unit spellings accepted per dimension, with their factor to the SI base unit (first of each table).
KILO, MEGA, GIGA, TERA, PETA = 1e3, 1e6, 1e9, 1e12, 1e15
UNITS: dict[Dimension, dict[str, float]] = {
    "flops": {"FLOP/s": 1.0, "GFLOP/s": GIGA, "TFLOP/s": TERA, "PFLOP/s": PETA, "GFLOPS": GIGA, "TFLOPS": TERA,
              "PFLOPS": PETA},
    "ops": {"OP/s": 1.0, "GOP/s": GIGA, "TOP/s": TERA, "POP/s": PETA, "GOPS": GIGA, "TOPS": TERA, "POPS": PETA},
    "bytes": {"B": 1.0, "KB": KILO, "MB": MEGA, "GB": GIGA, "TB": TERA,
              "KiB": 2.0**10, "MiB": 2.0**20, "GiB": 2.0**30, "TiB": 2.0**40},
    "bandwidth": {"B/s": 1.0, "KB/s": KILO, "MB/s": MEGA, "GB/s": GIGA, "TB/s": TERA,
                  "KiB/s": 2.0**10, "MiB/s": 2.0**20, "GiB/s": 2.0**30, "TiB/s": 2.0**40},
    "count": {"count": 1.0},
    "power": {"W": 1.0, "kW": KILO},
}
BASE_UNIT: dict[Dimension, str] = {d: next(iter(u)) for d, u in UNITS.items()}
DIM_WORD: dict[Dimension, str] = {
    "flops": "a FLOP/s unit",
    "ops": "an OP/s unit (integer peaks count operations, not FLOPs)",
    "bytes": "a byte unit",
    "bandwidth": "a bandwidth unit",
    "count": "a count",
    "power": "a power unit",
}

# Where a figure comes from (TARGETS.md's marks): vendor datasheet or whitepaper, (3P) third-party
# database, (R) a runtime device query, (D) derived from clock × units × per-unit rate, measured on the
# spot (calibration), or given by the user without a further source.
SOURCES: tuple[str, ...] = ("datasheet", "whitepaper", "3P", "runtime", "derived", "measured", "user")
_SOURCE_ALIASES = {"(3p)": "3P", "3p": "3P", "(r)": "runtime", "(d)": "derived"}

Status = Literal["known", "unknown", "unsupported"]
FIGURE_KEYS = ("value", "unit", "source", "ref", "note", "approximate", "range")
TOP_KEYS_REQUIRED = ("name", "compute", "memory", "chip")
TOP_KEYS_OPTIONAL = ("schema", "full_name", "vendor", "kind", "aliases", "references", "notes",
                      "calibration")
KINDS = ("gpu", "cpu", "tpu", "soc", "accelerator")


_NUM_RE = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def suggestion(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def read_number(file: str, fld: str, raw: Any) -> float:
    # PyYAML reads 1e12 (no dot) as a string: accept plain numeric strings too.
    if isinstance(raw, bool):
        raise field_error(file, fld, f"must be a number, got {raw!r}")
    if isinstance(raw, str) and _NUM_RE.match(raw.strip()):
        raw = float(raw)
    if not isinstance(raw, int | float):
        raise field_error(file, fld, f"must be a number, got {raw!r}")
    try:
        val = float(raw)
    except OverflowError:  # an integer beyond a float (over 308 digits): out of any figure's range
        raise field_error(file, fld, f"an integer of {len(str(abs(raw)))} digits is out of range") from None
    if not math.isfinite(val) or val <= 0:
        raise field_error(file, fld, f"must be a positive number, got {raw!r}")
    return val


# A figure in its SI unit must lie here: the analysis divides work by peaks and multiplies them back, so a
# value whose reciprocal overflows (1e-320 FLOP/s) or that overflows itself (1e300 TFLOP/s) would turn a time
# into infinity or zero, and the JSON report into NaN. The range is far beyond any device.
SI_MIN, SI_MAX = 1e-6, 1e30


def check_si(file: str, fld: str, value: float, unit: str, given: str) -> None:
    """Checks a figure after its unit is applied: finite, positive, within [SI_MIN, SI_MAX]."""
    if not math.isfinite(value) or not SI_MIN <= value <= SI_MAX:
        shown = "infinite" if math.isinf(value) else f"{value:g} {unit}"
        raise field_error(file, fld, f"{given} is {shown} in SI units, outside the range a target figure may "
                          f"take ({SI_MIN:g} to {SI_MAX:g} {unit})")


def read_text(file: str, fld: str, raw: Any) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise field_error(file, fld, f"must be a non-empty string, got {raw!r}")
    return raw.strip()


def read_source(file: str, fld: str, raw: Any) -> str:
    s = read_text(file, fld, raw)
    s = _SOURCE_ALIASES.get(s.lower(), s)
    if s not in SOURCES:
        raise field_error(file, fld, f"unknown source {s!r} (expected one of {', '.join(SOURCES)})")
    return s
