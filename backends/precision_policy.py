"""The precision policy a SOL report prices contractions under (docs/sol.md, "Precision"): how f32 contractions
run (`fp32_precision`: the framework's default, exact FP32, or TF32) and, for people who write their own kernels,
a precision floor: the lowest precision the user allows a contraction to be computed at (`--precision-floor
bf16`, as SOL-ExecBench prices fp32 problems). Under a floor each float contraction at or above the floor's
width is priced at the faster of its own peak and the floor's; one already cheaper (fp8 under a bf16 floor,
an integer contraction) keeps its own. Only compute is repriced: the operands stay in memory as the program
stores them, so the bytes are the program's."""

from __future__ import annotations

import dataclasses

from solar.ir.dtypes import DType
from solar.targets.loader import PeakChoice

# The floors a user may give, by the names the CLI and the API accept.
PRECISION_FLOORS: dict[str, DType] = {"tf32": DType.TF32, "bf16": DType.BF16, "fp16": DType.F16,
                                      "f16": DType.F16, "fp8": DType.F8E4M3}
# The policy of `fp32_precision` in words.
_FP32_WORDS = {"framework": "f32 contractions as the framework runs each kernel (exact FP32 unless it says TF32)",
               "highest": "f32 contractions as exact FP32", "tf32": "f32 contractions on TF32 tensor cores"}


class PrecisionFloorError(ValueError):
    """A floor that is not one of PRECISION_FLOORS."""


def floor_dtype(floor: str | None) -> DType | None:
    """The dtype of a floor's name (None: no floor); a name not in PRECISION_FLOORS is a PrecisionFloorError."""
    if floor is None or floor == "":
        return None
    if floor not in PRECISION_FLOORS:
        raise PrecisionFloorError(f"bad precision floor '{floor}': expected one of {', '.join(PRECISION_FLOORS)}")
    return PRECISION_FLOORS[floor]


def floor_applies(dtype: DType, floor: DType) -> bool:
    """Whether a contraction of `dtype` may be priced at `floor`: a float type at least as wide (f16 and bf16
    are one width: a bf16 floor allows f16 work at bf16 and the other way round)."""
    return dtype is not floor and dtype.kind == "f" and floor.kind == "f" and dtype.bits >= floor.bits


def floored(dtype: DType, own: PeakChoice, at_floor: PeakChoice | None, floor: str) -> PeakChoice:
    """The choice for a contraction of `dtype` under the floor: the floor's peak where it is faster than the
    contraction's own (`at_floor` None: the target has no figure for the floor's precision), else its own."""
    if at_floor is None or at_floor.flop_per_s <= own.flop_per_s:
        return own
    return dataclasses.replace(at_floor, reason=f"{dtype.spelling} contraction → {at_floor.precision} "
                                                f"{at_floor.unit} (precision floor {floor}; its own precision "
                                                f"runs on {own.precision} {own.unit})")


def policy_text(fp32_precision: str, floor: str | None) -> str:
    """The policy in force, in words, for every report."""
    text = _FP32_WORDS.get(fp32_precision, fp32_precision)
    if not floor:
        return f"{text}; no precision floor"
    return f"{text}; precision floor {floor} (float contractions at {floor} where that is faster)"


def floor_sentence(floor: str) -> str:
    """The verdict's warning that the figures are not the framework's."""
    return (f"Precision floor {floor} in force: contractions are priced at {floor} where that is faster than their "
            f"own precision, so this SOL is for a kernel allowed to compute at {floor} within a tolerance, not for "
            "the program as the framework runs it.")
