"""NVIDIA's public SOLAR arch format (`MAC_per_cycle_*`, `DRAM_byte_per_cycle`, `freq_GHz` ...), converted to a
`Target` on load: peaks are derived as 2 × MAC/cycle × frequency, figures the format lacks stay unknown."""

from __future__ import annotations

import re
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .target import Figure, Target
from .vocabulary import GIGA, PETA, SECTIONS, TERA, check_si, field_error, read_number, read_text, suggestion

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
    for prefix, f in (("P", PETA), ("T", TERA), ("G", GIGA)):
        if value >= f:
            return f"{value / f:.4g} {prefix}{unit}"
    return f"{value:.4g} {unit}"


def is_nvidia_format(doc: dict[str, Any]) -> bool:
    return any(k in doc for k in _NV_KEYS) and not any(k in doc for k in ("compute", "memory", "chip"))


def parse_nvidia(file: str, doc: dict[str, Any]) -> Target:
    # Other keys (comments-as-keys, fork extensions) are metadata and ignored, but a MAC_per_cycle_* we do
    # not map would silently lose a peak, so it is an error.
    for key in doc:
        if isinstance(key, str) and key.startswith("MAC_per_cycle_") and key not in _NV_MAC_FIELDS:
            raise field_error(file, key, "unknown MAC_per_cycle key" + suggestion(key, _NV_MAC_FIELDS))
    if "freq_GHz" not in doc:
        raise field_error(file, "freq_GHz", "missing (NVIDIA SOLAR arch files give rates per cycle)")
    freq_ghz = read_number(file, "freq_GHz", doc["freq_GHz"])
    hz = freq_ghz * 1e9
    path = Path(file)
    # Their names may hold spaces ("H100 PCIe"); ours may not, so spaces become hyphens.
    name = re.sub(r"\s+", "-", read_text(file, "name", str(doc["name"]))) if "name" in doc else path.stem
    figures: dict[str, Figure] = {}

    lines: dict[Any, int] = getattr(doc, "lines", {})  # where each key is (safe_yaml.KeyLines)

    def derived(fld: str, key: str, value: float, unit: str, how: str) -> Figure:
        check_si(file, key, value, unit, f"{how} = {value:g} {unit}")
        return Figure(field=fld, status="known", value=value, unit=unit, given=_human(value, unit),
                      source="derived", note=how, line=lines.get(key))

    for key, fld in _NV_MAC_FIELDS.items():
        if key in doc:
            mac = read_number(file, key, doc[key])
            unit = "OP/s" if fld.startswith("int") else "FLOP/s"
            figures[fld] = derived(f"compute.{fld}", key, 2.0 * mac * hz, unit,
                                   f"2 × {key} × freq_GHz ({freq_ghz:g})")
    for key, fld in (("DRAM_capacity", "dram_capacity"), ("SRAM_capacity", "l2")):
        if key in doc:
            nbytes = read_number(file, key, doc[key])
            check_si(file, key, nbytes, "B", f"{nbytes:g} B")
            figures[fld] = Figure(field=f"memory.{fld}", status="known", value=nbytes, unit="B",
                                  given=_human(nbytes, "B"), source="user", note=key, line=lines.get(key))
    for key, fld in (("DRAM_byte_per_cycle", "dram_bandwidth"), ("SRAM_byte_per_cycle", "l2_bandwidth")):
        if key in doc:
            figures[fld] = derived(f"memory.{fld}", key, read_number(file, key, doc[key]) * hz, "B/s",
                                   f"{key} × freq_GHz ({freq_ghz:g})")
    # The format has no FP64, per-SM shared memory, SM count or TDP: those are unknown, not guessed.
    for section, fields in SECTIONS.items():
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
