"""The sizes a benchmark runs at, the same on both sides (docs/bench.md, "Sizes").

A program runs at its own sizes, or at sizes given by `--param NAME=V` (repeatable) and at most one
`--scale RULE`:

* NAME is a module-level integer of the source file (KernelBench files keep `batch_size`, `dim`, ... there;
  `get_inputs()` and `Model` read them when called, so overriding the module's global changes the program),
  or a size parameter of the IR (`BATCH`, from the batch dimension `torch.export` kept symbolic).
* `--scale 0.25` multiplies every size constant (a module-level integer above 4 that sizes some input
  tensor, or a size parameter of a `.sir`) by the factor, rounding, at least 1; `--scale max=64` caps them
  at 64. Values of 4 or less are left alone: they are kernel sizes, strides and paddings more often than
  sizes, and shrinking them would change what the program does.

The program is translated after its globals change, so the IR and the run share every size; the bound is
computed with the IR's size parameters bound to the values the inputs were shrunk to, and `check_shapes`
confirms that every array the program receives has the shape the IR declares at those sizes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

_PARAM = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*([0-9]+)\s*\Z")
_SCALE_FACTOR = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*\Z")
_SCALE_CAP = re.compile(r"\s*max\s*=\s*([0-9]+)\s*\Z")
SMALLEST_SCALED = 5  # values below this are left alone by --scale


class SizeError(ValueError):
    """A bad --param or --scale, or sizes that do not agree between the program and its IR."""


@dataclass(frozen=True)
class ScaleRule:
    factor: float | None = None
    cap: int | None = None

    def apply(self, value: int) -> int:
        if value < SMALLEST_SCALED:
            return value
        if self.cap is not None:
            return min(value, self.cap)
        assert self.factor is not None
        return max(1, round(value * self.factor))

    def __str__(self) -> str:
        return f"max={self.cap}" if self.cap is not None else f"{self.factor:g}"


@dataclass
class SizeRequest:
    """What the user asked for: explicit values and at most one scale rule."""

    params: dict[str, int] = field(default_factory=dict)
    scale: ScaleRule | None = None

    @property
    def empty(self) -> bool:
        return not self.params and self.scale is None

    def to_json(self) -> dict[str, Any]:
        return {"params": dict(self.params), "scale": None if self.scale is None else str(self.scale)}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> SizeRequest:
        scale = doc.get("scale")
        return cls(dict(doc.get("params", {})), parse_scale(scale) if scale else None)


def parse_params(items: Iterable[str]) -> dict[str, int]:
    """`NAME=V` strings (also comma-separated in one) as a dict; V a positive integer."""
    out: dict[str, int] = {}
    for item in items:
        for part in (p for p in item.split(",") if p.strip()):
            m = _PARAM.match(part)
            if not m or len(m.group(2)) > 19 or not 0 < int(m.group(2)) < 2**63:
                raise SizeError(f"bad --param '{part}': write NAME=V with a positive integer V below 2^63, e.g. "
                                "batch_size=4")
            if m.group(1) in out:  # the last would silently win: say which value is meant
                raise SizeError(f"--param {m.group(1)} is given twice ({out[m.group(1)]} and {m.group(2)})")
            out[m.group(1)] = int(m.group(2))
    return out


def parse_scale(text: str) -> ScaleRule:
    if m := _SCALE_CAP.match(text):
        if int(m.group(1)) <= 0:
            raise SizeError(f"bad --scale '{text}': the cap must be positive")
        return ScaleRule(cap=int(m.group(1)))
    if (m := _SCALE_FACTOR.match(text)) and 0 < float(m.group(1)) <= 1:
        return ScaleRule(factor=float(m.group(1)))
    raise SizeError(f"bad --scale '{text}': write a factor in (0, 1] such as 0.25, or a cap such as max=64")


def size_globals(mod: ModuleType, input_dims: set[int]) -> dict[str, int]:
    """The module-level integers of a source file that size its inputs (their value is a dimension of an
    input tensor), by name."""
    out = {}
    for name, value in vars(mod).items():
        if name.startswith("_") or isinstance(value, bool) or not isinstance(value, int):
            continue
        if value in input_dims:
            out[name] = value
    return out


def int_globals(mod: ModuleType) -> dict[str, int]:
    return {k: v for k, v in vars(mod).items()
            if not k.startswith("_") and isinstance(v, int) and not isinstance(v, bool)}


def resolve(request: SizeRequest, source_globals: dict[str, int], sized_globals: dict[str, int],
            ir_params: dict[str, int]) -> tuple[dict[str, int], dict[str, int]]:
    """Splits the request into (new values of source globals, values of IR size parameters).

    A name that is both a global and an IR parameter is taken as the global (the IR is translated again
    from it). With a scale rule, the sized globals are scaled, or, when there are none (a `.sir` whose
    source is fixed), the IR's parameters."""
    globals_out: dict[str, int] = {}
    params_out: dict[str, int] = {}
    if request.scale is not None:
        if sized_globals:
            globals_out = {k: request.scale.apply(v) for k, v in sized_globals.items()}
        else:
            params_out = {k: request.scale.apply(v) for k, v in ir_params.items()}
    for name, value in request.params.items():
        if name in source_globals:
            globals_out[name] = value
        elif name in ir_params:
            params_out[name] = value
        else:
            known = sorted(set(source_globals) | set(ir_params))
            raise SizeError(f"--param {name}: neither a size parameter of the IR nor a module-level integer of "
                            f"the source (known: {', '.join(known) or 'none'})")
    return globals_out, params_out


def check_shapes(declared: Sequence[tuple[str, tuple[int, ...]]], actual: Sequence[tuple[int, ...]]) -> None:
    """The arrays the program receives must have the shapes its IR declares at the bound sizes."""
    if len(declared) != len(actual):
        raise SizeError(f"the IR takes {len(declared)} argument(s), the program {len(actual)}")
    for (name, want), got in zip(declared, actual, strict=True):
        if tuple(want) != tuple(got):
            raise SizeError(f"argument %{name}: the IR declares {list(want)} at these sizes, the program runs "
                            f"with {list(got)}: the bound would be for other sizes than the run")
