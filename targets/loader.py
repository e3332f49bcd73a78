"""Hardware targets: load, validate and query the figures of a chip.

A target is a YAML file (schema in ``targets/README.md``): dense peak FLOP/s per precision and unit, DRAM
capacity and bandwidth, on-chip memory, SM count and TDP, each figure with its source. Unknown figures are
written ``unknown`` and stay unknown: asking for one raises :class:`PeakUnavailable` instead of guessing,
because a guessed peak could turn the speed-of-light bound into something that is not a lower bound.

NVIDIA's public SOLAR arch YAML (``MAC_per_cycle_*``, ``DRAM_byte_per_cycle``, ``freq_GHz`` …) is accepted as
is and converted on load; the format is detected by its keys.

Every problem with a file is reported as one :class:`TargetError` line naming the file and the field.
"""

from __future__ import annotations

import difflib
import functools
import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, cast

import yaml

__all__ = [
    "COMPUTE_FIELDS",
    "PRECISIONS",
    "SOURCES",
    "TARGETS_DIR",
    "UNITS",
    "Figure",
    "PeakChoice",
    "PeakUnavailable",
    "Target",
    "TargetError",
    "list_targets",
    "load_target",
    "load_target_file",
    "parse_target",
]

TARGETS_DIR = Path(__file__).resolve().parent
SCHEMA_VERSION = 1

# --------------------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------------------


class TargetError(Exception):
    """A target problem, as one line meant for users: ``file: field: message``."""

    def __init__(self, message: str, *, file: str | None = None, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.field = field

    def __str__(self) -> str:
        return self.message


class PeakUnavailable(TargetError):
    """A figure the caller needs is unknown, not given, or the device lacks that unit."""


def _err(file: str, fld: str | None, msg: str) -> TargetError:
    where = f"{file}: {fld}: " if fld else f"{file}: "
    return TargetError(where + msg, file=file, field=fld)


# --------------------------------------------------------------------------------------------------------
# Vocabulary: precisions, units of execution, figure fields, measurement units, sources
# --------------------------------------------------------------------------------------------------------

PRECISIONS: tuple[str, ...] = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp4", "int8")
EXEC_UNITS: tuple[str, ...] = ("vector", "tensor")
INT_PRECISIONS = frozenset({"int8"})

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
}


def _compute_fields() -> dict[str, tuple[Dimension, bool]]:
    out: dict[str, tuple[Dimension, bool]] = {}
    for name in COMPUTE_FIELDS + OPTIONAL_COMPUTE_FIELDS:
        prec = name.split("_", 1)[0]
        out[name] = ("ops" if prec in INT_PRECISIONS else "flops", name in COMPUTE_FIELDS)
    return out


_SECTIONS: dict[str, dict[str, tuple[Dimension, bool]]] = {
    "compute": _compute_fields(),
    "memory": _MEMORY_FIELDS,
    "chip": _CHIP_FIELDS,
}
# Every figure name is unique across sections, so a target can be queried by bare field name.
_FIELD_SECTION: dict[str, str] = {f: s for s, fields in _SECTIONS.items() for f in fields}

# Unit spellings accepted per dimension, with their factor to the SI base unit (first of each table).
_K, _M, _G, _T, _P = 1e3, 1e6, 1e9, 1e12, 1e15
UNITS: dict[Dimension, dict[str, float]] = {
    "flops": {"FLOP/s": 1.0, "GFLOP/s": _G, "TFLOP/s": _T, "PFLOP/s": _P, "GFLOPS": _G, "TFLOPS": _T,
              "PFLOPS": _P},
    "ops": {"OP/s": 1.0, "GOP/s": _G, "TOP/s": _T, "POP/s": _P, "GOPS": _G, "TOPS": _T, "POPS": _P},
    "bytes": {"B": 1.0, "KB": _K, "MB": _M, "GB": _G, "TB": _T,
              "KiB": 2.0**10, "MiB": 2.0**20, "GiB": 2.0**30, "TiB": 2.0**40},
    "bandwidth": {"B/s": 1.0, "KB/s": _K, "MB/s": _M, "GB/s": _G, "TB/s": _T,
                  "KiB/s": 2.0**10, "MiB/s": 2.0**20, "GiB/s": 2.0**30, "TiB/s": 2.0**40},
    "count": {"count": 1.0},
    "power": {"W": 1.0, "kW": _K},
}
_BASE_UNIT: dict[Dimension, str] = {d: next(iter(u)) for d, u in UNITS.items()}
_DIM_WORD: dict[Dimension, str] = {
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
_FIGURE_KEYS = ("value", "unit", "source", "ref", "note", "approximate", "range")
_TOP_KEYS_REQUIRED = ("name", "compute", "memory", "chip")
_TOP_KEYS_OPTIONAL = ("schema", "full_name", "vendor", "kind", "aliases", "references", "notes",
                      "calibration")
KINDS = ("gpu", "cpu", "tpu", "soc", "accelerator")

# --------------------------------------------------------------------------------------------------------
# Data model
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Figure:
    """One figure of a target. ``value`` is in the SI base unit (FLOP/s, OP/s, B, B/s, count, W)."""

    field: str  # "compute.bf16_tensor"
    status: Status
    value: float | None = None
    unit: str | None = None  # SI base unit of ``value``
    given: str | None = None  # as written in the file, e.g. "989.4 TFLOP/s"
    source: str | None = None
    ref: str | None = None
    note: str | None = None
    approximate: bool = False
    range: tuple[float, float] | None = None  # SI; the file's range when sources disagree

    @property
    def known(self) -> bool:
        return self.status == "known"

    def __str__(self) -> str:
        if not self.known:
            return self.status
        approx = "≈" if self.approximate else ""
        src = f" ({self.source})" if self.source else ""
        return f"{approx}{self.given}{src}"


@dataclass(frozen=True)
class PeakChoice:
    """The compute peak chosen for an operand dtype, and why (for reports)."""

    precision: str
    unit: str  # "vector" | "tensor"
    flop_per_s: float
    figure: Figure
    reason: str

    @property
    def field(self) -> str:
        return f"{self.precision}_{self.unit}"


@dataclass(frozen=True)
class Target:
    """A hardware target. Figures are looked up by bare field name (``fp32_vector``, ``dram_bandwidth``)."""

    name: str
    full_name: str
    vendor: str
    kind: str
    aliases: tuple[str, ...]
    figures: Mapping[str, Figure] = field(hash=False, repr=False)
    references: Mapping[str, str] = field(hash=False, repr=False, default_factory=dict)
    notes: str = ""
    origin: str = ""  # the file it came from
    format: Literal["solar-target", "nvidia-solar-arch"] = "solar-target"
    calibration: Mapping[str, Any] | None = field(hash=False, repr=False, default=None)

    # -- raw figures ---------------------------------------------------------------------------------------
    def figure(self, name: str) -> Figure:
        """The figure ``name`` (present, unknown or unsupported); a field never given is ``unknown``."""
        if name not in _FIELD_SECTION:
            raise TargetError(f"{self.name}: no figure named {name!r}{_suggest(name, _FIELD_SECTION)}")
        fig = self.figures.get(name)
        if fig is None:
            return Figure(field=f"{_FIELD_SECTION[name]}.{name}", status="unknown", note="not given")
        return fig

    def require(self, name: str) -> float:
        """The value of figure ``name`` in SI units, or :class:`PeakUnavailable` saying why not."""
        fig = self.figure(name)
        if fig.known:
            assert fig.value is not None
            return fig.value
        raise PeakUnavailable(f"{self.name}: {fig.field} is {self._why(fig)}")

    def _why(self, fig: Figure) -> str:
        if fig.status == "unsupported":
            return "not supported by this device (it has no such unit)"
        if fig.note == "not given":
            return f"not given in {self.origin or 'the target'}"
        why = fig.note or "no source found"
        return f"unknown ({why}); to use it, give the figure in a custom target file (targets/README.md)"

    # -- convenience accessors (SI units; raise PeakUnavailable when unknown) -------------------------------
    @property
    def dram_bandwidth(self) -> float:
        return self.require("dram_bandwidth")

    @property
    def dram_capacity(self) -> float:
        return self.require("dram_capacity")

    @property
    def l2_bytes(self) -> float:
        return self.require("l2")

    @property
    def smem_per_sm(self) -> float:
        return self.require("smem_per_sm")

    @property
    def sm_count(self) -> int:
        return int(self.require("sm_count"))

    @property
    def tdp(self) -> float:
        return self.require("tdp")

    @property
    def shared_memory_total(self) -> float:
        """Shared memory over all SMs (H100 SXM: 132 × 228 KiB ≈ 29.4 MiB)."""
        return self.smem_per_sm * self.sm_count

    # -- compute peaks --------------------------------------------------------------------------------------
    def peak(self, precision: str, unit: str) -> float:
        """Dense peak FLOP/s (OP/s for int8) of ``precision`` on ``unit`` ("vector" or "tensor")."""
        return self.require(f"{_norm_precision(precision)}_{_norm_unit(unit)}")

    def select_peak(self, dtype: str, *, contraction: bool, allow_tf32: bool = False) -> PeakChoice:
        """Choose the compute peak for work whose operands have ``dtype`` (IR names: f32, bf16, i8 …).

        ``contraction``: tensor-core-eligible work (a multiply combine with an add reduction); everything
        else is vector work. The rules (targets/README.md, "Choosing a peak"):

        * contractions: bf16 → bf16 tensor; f16 → fp16 tensor; f32 → FP32 vector (TF32 tensor when
          ``allow_tf32``; an FP32 *tensor* figure wins when the file gives one, as it is exact FP32);
          tf32 → TF32 tensor; f64 → FP64 tensor; f8 → FP8 tensor; fp4 → FP4 tensor; i8 → INT8 tensor;
          wider integers → FP32 vector (as a proxy).
        * vector work: the ``<precision>_vector`` figure if the file gives one, else FP32 vector (f64 needs
          FP64 vector).
        * a unit the device lacks (``unsupported``) falls through to the next in the chain (narrow floats
          widen: fp4 → fp8 → bf16 tensor → vector); an ``unknown`` figure stops the search with
          :class:`PeakUnavailable`, since using a slower unit could make the bound exceed the true time.
        """
        prec = _dtype_precision(dtype)
        chain = _peak_chain(prec, contraction=contraction, allow_tf32=allow_tf32)
        kind = "contraction" if contraction else "vector work"
        skipped: list[str] = []  # why earlier candidates did not apply, for the reason / error
        for fld, optional in chain:
            fig = self.figures.get(fld)
            if fig is None:
                if not optional:
                    raise PeakUnavailable(f"{self.name}: compute.{fld} is not given in {self.origin}")
                skipped.append(f"no {fld} figure")
                continue
            if fig.status == "unsupported":
                skipped.append(f"{fld} unsupported")
                continue
            if fig.status == "unknown":
                raise PeakUnavailable(
                    f"{self.name}: no peak for {dtype} {kind}: {fig.field} is {self._why(fig)}"
                )
            assert fig.value is not None
            p, u = fld.rsplit("_", 1)
            reason = f"{dtype} {kind} → {p} {u}"
            if skipped:
                reason += f" ({'; '.join(skipped)} on {self.name})"
            return PeakChoice(precision=p, unit=u, flop_per_s=fig.value, figure=fig, reason=reason)
        raise PeakUnavailable(  # unreachable with the shipped chains (FP32/FP64 vector end them)
            f"{self.name}: no peak for {dtype} {kind}: {'; '.join(skipped)}"
        )

    # -- export ---------------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain data (SI values, sources) for JSON reports."""
        figs: dict[str, Any] = {}
        for name, fig in self.figures.items():
            figs[name] = {"status": fig.status, "value": fig.value, "unit": fig.unit, "source": fig.source}
        return {"name": self.name, "full_name": self.full_name, "vendor": self.vendor, "kind": self.kind,
                "origin": self.origin, "format": self.format, "figures": figs}


# Precision and unit spellings accepted by Target.peak / select_peak.
_PRECISION_ALIASES: dict[str, str] = {
    "f64": "fp64", "float64": "fp64", "double": "fp64",
    "f32": "fp32", "float32": "fp32", "float": "fp32",
    "tf32": "tf32",
    "bf16": "bf16", "bfloat16": "bf16",
    "f16": "fp16", "float16": "fp16", "half": "fp16",
    "f8": "fp8", "f8e4m3": "fp8", "f8e5m2": "fp8", "e4m3": "fp8", "e5m2": "fp8", "float8": "fp8",
    "f4": "fp4", "nvfp4": "fp4", "mxfp4": "fp4", "f4e2m1": "fp4",
    "i8": "int8", "int8": "int8",
    **{p: p for p in PRECISIONS},
}
_WIDE_INTS = frozenset({"i1", "i16", "i32", "i64", "int16", "int32", "int64", "bool"})
_UNIT_ALIASES = {"vector": "vector", "vec": "vector", "simd": "vector", "sm": "vector", "cuda": "vector",
                 "tensor": "tensor", "tc": "tensor", "matrix": "tensor", "mxu": "tensor"}


def _norm_precision(precision: str) -> str:
    p = _PRECISION_ALIASES.get(precision.strip().lower())
    if p is None:
        raise TargetError(f"unknown precision {precision!r} (expected one of {', '.join(PRECISIONS)})")
    return p


def _norm_unit(unit: str) -> str:
    u = _UNIT_ALIASES.get(unit.strip().lower())
    if u is None:
        raise TargetError(f"unknown unit of execution {unit!r} (expected 'vector' or 'tensor')")
    return u


def _dtype_precision(dtype: str) -> str:
    d = dtype.strip().lower()
    if d in _WIDE_INTS:
        return "wideint"
    if d in _PRECISION_ALIASES:
        return _PRECISION_ALIASES[d]
    raise TargetError(f"unknown dtype {dtype!r} (expected an IR dtype such as f32, bf16, f8e4m3, i8)")


def _peak_chain(prec: str, *, contraction: bool, allow_tf32: bool) -> list[tuple[str, bool]]:
    """Candidate figures in order, each with whether it is optional (may be absent from the file)."""
    fp32_vec = ("fp32_vector", False)
    if not contraction:
        if prec == "fp64":
            return [("fp64_vector", False)]
        if prec in ("fp32", "tf32", "wideint"):
            return [fp32_vec]
        # 16/8/4-bit vector work: its own vector figure when given, else FP32 vector (documented choice).
        return [(f"{prec}_vector", True), fp32_vec]
    match prec:
        case "fp64":
            return [("fp64_tensor", False), ("fp64_vector", False)]
        case "fp32":
            chain = [("fp32_tensor", True)]
            if allow_tf32:
                chain.append(("tf32_tensor", False))
            return [*chain, fp32_vec]
        case "tf32":
            return [("tf32_tensor", False), fp32_vec]
        case "bf16" | "fp16":
            return [(f"{prec}_tensor", False), (f"{prec}_vector", True), fp32_vec]
        case "fp8":
            return [("fp8_tensor", False), ("bf16_tensor", False), fp32_vec]
        case "fp4":
            return [("fp4_tensor", False), ("fp8_tensor", False), ("bf16_tensor", False), fp32_vec]
        case "int8":
            return [("int8_tensor", False), ("int8_vector", True), fp32_vec]
        case _:  # wider integers: no tensor path
            return [fp32_vec]


# --------------------------------------------------------------------------------------------------------
# YAML reading
# --------------------------------------------------------------------------------------------------------


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys (PyYAML silently keeps the last one)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _read_yaml(path: Path) -> Any:
    file = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TargetError(f"{file}: no such target file", file=file) from None
    except OSError as e:
        raise TargetError(f"{file}: cannot read: {e.strerror or e}", file=file) from None
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"{file}:{mark.line + 1}:{mark.column + 1}" if mark else file
        problem = (e.problem or e.context or "").strip()
        raise TargetError(f"{where}: invalid YAML: {problem}", file=file) from None
    except yaml.YAMLError as e:
        raise TargetError(f"{file}: invalid YAML: {str(e).splitlines()[0]}", file=file) from None


# --------------------------------------------------------------------------------------------------------
# Validation of the native format
# --------------------------------------------------------------------------------------------------------

_NUM_RE = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def _suggest(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _number(file: str, fld: str, raw: Any) -> float:
    # PyYAML reads 1e12 (no dot) as a string: accept plain numeric strings too.
    if isinstance(raw, bool):
        raise _err(file, fld, f"must be a number, got {raw!r}")
    if isinstance(raw, str) and _NUM_RE.match(raw.strip()):
        raw = float(raw)
    if not isinstance(raw, int | float):
        raise _err(file, fld, f"must be a number, got {raw!r}")
    val = float(raw)
    if not math.isfinite(val) or val <= 0:
        raise _err(file, fld, f"must be a positive number, got {raw!r}")
    return val


def _text(file: str, fld: str, raw: Any) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise _err(file, fld, f"must be a non-empty string, got {raw!r}")
    return raw.strip()


def _source(file: str, fld: str, raw: Any) -> str:
    s = _text(file, fld, raw)
    s = _SOURCE_ALIASES.get(s.lower(), s)
    if s not in SOURCES:
        raise _err(file, fld, f"unknown source {s!r} (expected one of {', '.join(SOURCES)})")
    return s


def _parse_figure(file: str, fld: str, dim: Dimension, raw: Any) -> Figure:
    if isinstance(raw, str) and raw.strip().lower() in ("unknown", "unsupported"):
        return Figure(field=fld, status=cast(Status, raw.strip().lower()))
    if not isinstance(raw, dict):
        raise _err(
            file, fld,
            "must be a mapping {value, unit, source} or the word 'unknown' or 'unsupported', "
            f"got {raw!r}",
        )
    for key in raw:
        if key not in _FIGURE_KEYS:
            raise _err(file, f"{fld}.{key}", f"unknown key{_suggest(str(key), _FIGURE_KEYS)}")
    ref = _text(file, f"{fld}.ref", raw["ref"]) if "ref" in raw else None
    note = _text(file, f"{fld}.note", raw["note"]) if "note" in raw else None
    if "value" not in raw:
        raise _err(file, f"{fld}.value", "missing")
    value = raw["value"]
    if isinstance(value, str) and value.strip().lower() in ("unknown", "unsupported"):
        # Mapping form of an unknown figure, which lets it carry a note or the source saying so.
        for key in ("unit", "approximate", "range"):
            if key in raw:
                raise _err(file, f"{fld}.{key}", f"not allowed on an {value.strip().lower()} figure")
        src = _source(file, f"{fld}.source", raw["source"]) if "source" in raw else None
        return Figure(field=fld, status=cast(Status, value.strip().lower()), source=src, ref=ref, note=note)
    val = _number(file, f"{fld}.value", value)
    if "unit" not in raw:
        raise _err(file, f"{fld}.unit", f"missing (expected {_DIM_WORD[dim]}: {', '.join(UNITS[dim])})")
    unit = raw["unit"]
    if not isinstance(unit, str) or unit not in UNITS[dim]:
        raise _err(file, f"{fld}.unit",
                   f"{unit!r} is not {_DIM_WORD[dim]} (expected one of {', '.join(UNITS[dim])})")
    if "source" not in raw:
        raise _err(file, f"{fld}.source", f"missing (every figure names its source: {', '.join(SOURCES)})")
    src = _source(file, f"{fld}.source", raw["source"])
    approx = raw.get("approximate", False)
    if not isinstance(approx, bool):
        raise _err(file, f"{fld}.approximate", f"must be true or false, got {approx!r}")
    factor = UNITS[dim][unit]
    rng: tuple[float, float] | None = None
    if "range" in raw:
        r = raw["range"]
        if not isinstance(r, list) or len(r) != 2:
            raise _err(file, f"{fld}.range", f"must be a list [low, high] in the figure's unit, got {r!r}")
        lo, hi = (_number(file, f"{fld}.range", x) for x in r)
        if not lo <= val <= hi:
            raise _err(file, f"{fld}.range", f"value {val:g} lies outside [{lo:g}, {hi:g}]")
        rng = (lo * factor, hi * factor)
    if dim == "count" and val != int(val):
        raise _err(file, f"{fld}.value", f"must be a whole number, got {val:g}")
    return Figure(field=fld, status="known", value=val * factor, unit=_BASE_UNIT[dim],
                  given=f"{val:g} {unit}", source=src, ref=ref, note=note, approximate=approx, range=rng)


def _check_name(file: str, fld: str, raw: Any) -> str:
    s = _text(file, fld, raw)
    if any(c.isspace() for c in s):
        raise _err(file, fld, f"must not contain spaces, got {s!r}")
    return s


def _parse_native(file: str, doc: dict[str, Any]) -> Target:
    for key in doc:
        if key not in _TOP_KEYS_REQUIRED + _TOP_KEYS_OPTIONAL:
            raise _err(file, str(key), "unknown key"
                       + _suggest(str(key), _TOP_KEYS_REQUIRED + _TOP_KEYS_OPTIONAL))
    for key in _TOP_KEYS_REQUIRED:
        if key not in doc:
            raise _err(file, key, "missing")
    if "schema" in doc and doc["schema"] != SCHEMA_VERSION:
        raise _err(file, "schema", f"unsupported schema version {doc['schema']!r} (this SOLAR reads "
                                   f"{SCHEMA_VERSION})")
    name = _check_name(file, "name", doc["name"])
    aliases_raw = doc.get("aliases", [])
    if not isinstance(aliases_raw, list):
        raise _err(file, "aliases", f"must be a list of names, got {aliases_raw!r}")
    aliases = tuple(_check_name(file, f"aliases[{i}]", a) for i, a in enumerate(aliases_raw))
    kind = doc.get("kind", "gpu")
    if kind not in KINDS:
        raise _err(file, "kind", f"unknown kind {kind!r} (expected one of {', '.join(KINDS)})")
    refs_raw = doc.get("references", {})
    if not isinstance(refs_raw, dict):
        raise _err(file, "references", "must be a mapping from source kind to document title")
    refs = {_source(file, f"references.{k}", k): _text(file, f"references.{k}", v)
            for k, v in refs_raw.items()}
    calib = doc.get("calibration")
    if calib is not None and not isinstance(calib, dict):
        raise _err(file, "calibration", "must be a mapping")

    figures: dict[str, Figure] = {}
    for section, fields in _SECTIONS.items():
        body = doc[section]
        if not isinstance(body, dict):
            raise _err(file, section, f"must be a mapping of figures, got {body!r}")
        for key in body:
            if key not in fields:
                raise _err(file, f"{section}.{key}", "unknown key" + _suggest(str(key), fields))
        for fld, (dim, required) in fields.items():
            if fld not in body:
                if required:
                    raise _err(file, f"{section}.{fld}",
                               "missing (write 'unknown' when no source gives it, 'unsupported' when the "
                               "device lacks it)")
                continue
            figures[fld] = _parse_figure(file, f"{section}.{fld}", dim, body[fld])

    return Target(
        name=name,
        full_name=_text(file, "full_name", doc["full_name"]) if "full_name" in doc else name,
        vendor=_text(file, "vendor", doc["vendor"]) if "vendor" in doc else "unknown",
        kind=kind,
        aliases=aliases,
        figures=MappingProxyType(figures),
        references=MappingProxyType(refs),
        notes=_text(file, "notes", doc["notes"]) if "notes" in doc else "",
        origin=file,
        format="solar-target",
        calibration=MappingProxyType(dict(calib)) if calib is not None else None,
    )


# --------------------------------------------------------------------------------------------------------
# NVIDIA's public SOLAR arch format
# --------------------------------------------------------------------------------------------------------

# MAC_per_cycle_<key> -> our compute field. Peak = 2 × MAC/cycle × freq (one MAC = two FLOPs).
_NV_MAC_FIELDS: dict[str, str] = {
    "MAC_per_cycle_fp32_sm": "fp32_vector",
    "MAC_per_cycle_tf32_tc": "tf32_tensor",
    "MAC_per_cycle_fp16_tc": "fp16_tensor",
    "MAC_per_cycle_bf16_tc": "bf16_tensor",
    "MAC_per_cycle_fp8_tc": "fp8_tensor",
    "MAC_per_cycle_nvfp4_tc": "fp4_tensor",
    "MAC_per_cycle_int8_tc": "int8_tensor",
}
_NV_KEYS = ("SRAM_capacity", "SRAM_byte_per_cycle", "DRAM_capacity", "DRAM_byte_per_cycle", "freq_GHz",
            *_NV_MAC_FIELDS)


def _human(value: float, unit: str) -> str:
    """989.4e12 FLOP/s -> '989.4 TFLOP/s' (bytes in binary prefixes, as on-chip sizes are quoted)."""
    if unit == "B":
        for prefix, f in (("TiB", 2.0**40), ("GiB", 2.0**30), ("MiB", 2.0**20), ("KiB", 2.0**10)):
            if value >= f:
                return f"{value / f:.4g} {prefix}"
        return f"{value:.4g} B"
    for prefix, f in (("P", _P), ("T", _T), ("G", _G)):
        if value >= f:
            return f"{value / f:.4g} {prefix}{unit}"
    return f"{value:.4g} {unit}"


def _is_nvidia_format(doc: dict[str, Any]) -> bool:
    return any(k in doc for k in _NV_KEYS) and not any(k in doc for k in ("compute", "memory", "chip"))


def _parse_nvidia(file: str, doc: dict[str, Any]) -> Target:
    # Other keys (comments-as-keys, fork extensions) are metadata and ignored, but a MAC_per_cycle_* we do
    # not map would silently lose a peak, so it is an error.
    for key in doc:
        if isinstance(key, str) and key.startswith("MAC_per_cycle_") and key not in _NV_MAC_FIELDS:
            raise _err(file, key, "unknown MAC_per_cycle key" + _suggest(key, _NV_MAC_FIELDS))
    if "freq_GHz" not in doc:
        raise _err(file, "freq_GHz", "missing (NVIDIA SOLAR arch files give rates per cycle)")
    freq_ghz = _number(file, "freq_GHz", doc["freq_GHz"])
    hz = freq_ghz * 1e9
    path = Path(file)
    # Their names may hold spaces ("H100 PCIe"); ours may not, so spaces become hyphens.
    name = re.sub(r"\s+", "-", _text(file, "name", str(doc["name"]))) if "name" in doc else path.stem
    figures: dict[str, Figure] = {}

    def derived(fld: str, key: str, value: float, unit: str, how: str) -> Figure:
        return Figure(field=fld, status="known", value=value, unit=unit, given=_human(value, unit),
                      source="derived", note=how)

    for key, fld in _NV_MAC_FIELDS.items():
        if key in doc:
            mac = _number(file, key, doc[key])
            unit = "OP/s" if fld.startswith("int") else "FLOP/s"
            figures[fld] = derived(f"compute.{fld}", key, 2.0 * mac * hz, unit,
                                   f"2 × {key} × freq_GHz ({freq_ghz:g})")
    for key, fld in (("DRAM_capacity", "dram_capacity"), ("SRAM_capacity", "l2")):
        if key in doc:
            nbytes = _number(file, key, doc[key])
            figures[fld] = Figure(field=f"memory.{fld}", status="known", value=nbytes, unit="B",
                                  given=_human(nbytes, "B"), source="user", note=key)
    for key, fld in (("DRAM_byte_per_cycle", "dram_bandwidth"), ("SRAM_byte_per_cycle", "l2_bandwidth")):
        if key in doc:
            figures[fld] = derived(f"memory.{fld}", key, _number(file, key, doc[key]) * hz, "B/s",
                                   f"{key} × freq_GHz ({freq_ghz:g})")
    # The format has no FP64, per-SM shared memory, SM count or TDP: those are unknown, not guessed.
    for section, fields in _SECTIONS.items():
        for fld, (_, required) in fields.items():
            if required and fld not in figures:
                figures[fld] = Figure(field=f"{section}.{fld}", status="unknown",
                                      note="not in NVIDIA SOLAR arch format")
    return Target(
        name=name,
        full_name=str(doc.get("name", name)),
        vendor="nvidia",
        kind="gpu",
        aliases=(),
        figures=MappingProxyType(figures),
        origin=file,
        format="nvidia-solar-arch",
    )


# --------------------------------------------------------------------------------------------------------
# Public loading API
# --------------------------------------------------------------------------------------------------------


def parse_target(doc: Any, file: str) -> Target:
    """Validate a parsed YAML document (native or NVIDIA SOLAR arch format) into a :class:`Target`."""
    if not isinstance(doc, dict):
        raise _err(file, None, "a target file must be a YAML mapping"
                   + ("" if doc is None else f", got {type(doc).__name__}"))
    if _is_nvidia_format(doc):
        return _parse_nvidia(file, doc)
    return _parse_native(file, doc)


def load_target_file(path: str | os.PathLike[str]) -> Target:
    """Load and validate one target file."""
    p = Path(path).expanduser()
    return parse_target(_read_yaml(p), str(p))


def _norm_name(name: str) -> str:
    # Case, hyphens, underscores and spaces do not matter: "H100_SXM" == "h100-sxm" == "h100sxm".
    return re.sub(r"[-_\s]+", "", name.strip().lower())


@functools.lru_cache(maxsize=1)
def _builtin_index() -> tuple[dict[str, Path], dict[str, str], dict[str, Target]]:
    """(normalized name or alias -> file, normalized -> canonical name, canonical -> Target)."""
    index: dict[str, Path] = {}
    canonical: dict[str, str] = {}
    targets: dict[str, Target] = {}
    for path in sorted(TARGETS_DIR.glob("*.yaml")):
        t = load_target_file(path)
        if t.name in targets:
            raise TargetError(f"{path}: name: {t.name!r} is also defined by {targets[t.name].origin}")
        targets[t.name] = t
        for n in (t.name, *t.aliases):
            key = _norm_name(n)
            if key == "host":
                raise TargetError(f"{path}: name: 'host' is reserved for the calibrated host target")
            if key in index and index[key] != path:
                raise TargetError(f"{path}: aliases: {n!r} is also a name of {index[key]}")
            index[key] = path
            canonical[key] = t.name
    return index, canonical, targets


def list_targets(*, include_host: bool = True) -> list[str]:
    """Canonical names of the shipped targets (and ``host``), sorted."""
    names = sorted(_builtin_index()[2])
    if include_host:
        names.append("host")
    return sorted(names)


def _looks_like_path(s: str) -> bool:
    return s.endswith((".yaml", ".yml")) or "/" in s or os.sep in s


def load_target(name_or_path: str | os.PathLike[str], *, recalibrate: bool = False) -> Target:
    """A target by name (case-insensitive, aliases allowed), ``host``, or a path to a YAML file.

    ``recalibrate`` only applies to ``host``: it re-measures instead of reading the cache.
    """
    if isinstance(name_or_path, os.PathLike):
        return load_target_file(name_or_path)
    if not isinstance(name_or_path, str) or not name_or_path.strip():
        raise TargetError(f"target must be a name or a path, got {name_or_path!r}")
    s = name_or_path.strip()
    if _looks_like_path(s):
        return load_target_file(s)
    key = _norm_name(s)
    if key == "host":
        from .calibrate import host_target  # lazy: calibration imports numpy

        return host_target(recalibrate=recalibrate)
    _, canonical, targets = _builtin_index()
    if key in canonical:
        return targets[canonical[key]]
    if Path(s).is_file():  # a file in the working directory named without an extension or slash
        return load_target_file(s)
    spellings = {n: n for n in list_targets()}
    for t in targets.values():
        for a in t.aliases:
            spellings.setdefault(a, t.name)
    close = difflib.get_close_matches(s.lower(), list(spellings), n=3, cutoff=0.5)
    if not close:  # compare hyphen-free spellings too ("h10" vs "h100sxm")
        norm = {_norm_name(k): k for k in spellings}
        close = [norm[c] for c in difflib.get_close_matches(key, list(norm), n=3, cutoff=0.5)]
    hint = f"did you mean {', '.join(close)}?" if close else f"known targets: {', '.join(list_targets())}"
    raise TargetError(f"unknown target {s!r}: {hint} (or give a path to a target YAML file)")
