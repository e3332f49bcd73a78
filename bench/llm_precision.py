"""Which tensor peak a quantized model's contractions get on each target, said where it is not their own
(solar-llm's remarks and the search's notes; the choice itself is the peak policy's, targets/peaks.py).

Weight-only formats compute at the activations' precision (the weight is dequantized inside the fused group,
as vector work), so their contractions keep the model's peak. Quantized activations make low-precision
contractions: on a chip without that precision's tensor cores (fp8 on an A100, fp4 before Blackwell) they are
priced at the fastest unit that runs their operands exactly (e4m3 is exact in bf16; e2m1 in e4m3, in int8
doubled and in bf16), never at a figure the chip does not have. The remark says which, so a reader knows the
chip's low-precision path was not assumed.
"""

from __future__ import annotations

from collections.abc import Sequence

from solar.backends.report import quantity
from solar.passes.quantize_formats import QuantizeOptions
from solar.targets.loader import PeakUnavailable, Target

# The element type of the operands a contraction reads under each activation format (passes/quantize.py).
CONTRACTION_DTYPES = {"fp8": ("f8e4m3", "fp8"), "int8": ("i8", "int8"), "nvfp4": ("f4e2m1", "fp4"),
                      "mxfp4": ("f4e2m1", "fp4")}


def peak_remarks(quantize: QuantizeOptions | None, targets: Sequence[Target]) -> list[str]:
    """One line per target whose tensor cores lack the quantized activations' precision."""
    if quantize is None or quantize.activations not in CONTRACTION_DTYPES:
        return []
    dtype, precision = CONTRACTION_DTYPES[quantize.activations]
    remarks = []
    for target in targets:
        try:
            choice = target.select_peak(dtype, contraction=True)
        except PeakUnavailable:  # no bound at all: pricing the step says so itself, as an error
            continue
        if choice.precision != precision:
            rate = quantity(choice.flop_per_s, "OP/s" if choice.precision.startswith("int") else "FLOP/s")
            remarks.append(f"{target.name} has no {precision} tensor cores: the {quantize.activations} "
                           f"activations' contractions are priced at its {choice.precision} {choice.unit} peak "
                           f"({rate}), the fastest unit that runs {dtype} operands exactly")
    return remarks


__all__ = ["CONTRACTION_DTYPES", "peak_remarks"]
