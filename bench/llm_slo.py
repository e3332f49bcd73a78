"""What `solar-llm --slo` reads before anything heavy is imported: the latency target and the quantization
options searched (bench/llm_search.py). A bad one is one line, before torch loads."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from solar.frontends.llm_config_checks import LlmError

WEIGHT_FORMATS = ("int8", "int4", "fp8", "nvfp4", "mxfp4")
CACHE_FORMATS = ("fp8", "int8", "int4")
_UNITS = {"s": 1.0, "ms": 1e3, "us": 1e6, "µs": 1e6, "ns": 1e9}  # divisors: 800us is 800 / 1e6 s exactly


@dataclass(frozen=True)
class Slo:
    ttft_s: float | None = None
    tpot_s: float | None = None

    def meets(self, ttft_s: float, tpot_s: float) -> bool:
        return (self.ttft_s is None or ttft_s <= self.ttft_s) and (self.tpot_s is None or tpot_s <= self.tpot_s)

    def __str__(self) -> str:
        parts = [f"{k}={v * 1e3:g}ms" for k, v in (("ttft", self.ttft_s), ("tpot", self.tpot_s)) if v is not None]
        return ",".join(parts)


def parse_slo(text: str) -> Slo:
    """`ttft=500ms,tpot=30ms`: each bound a number and a unit (s, ms, us)."""
    found: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",")):
        key, _, value = part.partition("=")
        if key not in ("ttft", "tpot"):
            raise LlmError(f"--slo {text}: '{part}' should be ttft=TIME or tpot=TIME")
        match = re.fullmatch(r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-zµ]*)", value.strip())
        if not match:
            raise LlmError(f"--slo {text}: {key}={value} is not a time (e.g. {key}=30ms)")
        number, unit = match.groups()
        if not unit:
            raise LlmError(f"--slo {text}: {key}={value} has no unit (s, ms, us or ns)")
        if unit not in _UNITS:
            raise LlmError(f"--slo {text}: {key}={value}: unknown unit '{unit}' (s, ms, us or ns)")
        if float(number) <= 0:
            raise LlmError(f"--slo {text}: {key}={value} must be positive")
        found[key] = float(number) / _UNITS[unit]
    return Slo(found.get("ttft"), found.get("tpot"))


@dataclass(frozen=True)
class Quantization:
    """One `--quantize-options` entry: `none`, or a weight format with `+kv=FMT`, `+act=fp8`, `+g=N`."""

    name: str
    weights: str = "none"
    kv_cache: str = "none"
    activations: str = "none"
    group_size: int = 0

    @property
    def active(self) -> bool:
        return self.name != "none"


def parse_quantize_options(text: str) -> list[Quantization]:
    out: list[Quantization] = []
    for name in (n.strip() for n in text.split(",") if n.strip()):
        if name == "none":
            out.append(Quantization("none"))
            continue
        head, *mods = name.split("+")
        if head not in WEIGHT_FORMATS:
            raise LlmError(f"--quantize-options: unknown format '{head}' (expected none, {', '.join(WEIGHT_FORMATS)})")
        fields: dict[str, Any] = {"weights": head}
        for mod in mods:
            key, _, value = mod.partition("=")
            if key == "kv" and value in CACHE_FORMATS:
                fields["kv_cache"] = value
            # fp4 and int8 activations need the same weights (W4A4, W8A8)
            elif key == "act" and (value == "fp8" or value == head in ("nvfp4", "mxfp4", "int8")):
                fields["activations"] = value
            elif key == "g" and value.isdigit() and int(value) > 0:
                fields["group_size"] = int(value)
            else:
                raise LlmError(f"--quantize-options: '{mod}' in '{name}' should be kv={'|'.join(CACHE_FORMATS)}, "
                               "act=fp8 (act=nvfp4, act=mxfp4, act=int8 with those weights) or g=N")
        out.append(Quantization(name, **fields))
    if not out:
        raise LlmError("--quantize-options: no option given")
    return out


def check_search_flags(slo: str | None, throughput: float | None, quantize_options: str, data_parallel: int) -> None:
    """The search's flags, read before anything heavy loads: an SLO without a unit, a throughput without an
    SLO, a quantization option that is not one."""
    if slo is None:
        asked = (("--throughput", throughput is not None), ("--quantize-options", quantize_options != "none"))
        for flag, given in asked:
            if given:
                raise LlmError(f"{flag} is for a search: give --slo too")
        return
    parse_slo(slo)
    parse_quantize_options(quantize_options)
    if throughput is not None and throughput <= 0:
        raise LlmError(f"--throughput {throughput:g}: must be positive")
    if data_parallel != 1:
        raise LlmError("--data-parallel with --slo: the search takes the replicas the throughput needs")


__all__ = ["Quantization", "Slo", "check_search_flags", "parse_quantize_options", "parse_slo"]
