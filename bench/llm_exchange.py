"""What a deployment's collectives carry per token, as the quantized step's kernels exchange it
(passes/quantize.py says each tensor's dtype; bench/llm_deploy.py prices the collectives).

Quantized activations are made only where a contraction reads them, so most of what chips exchange stays at
the model's dtype:

- TP all-reduce: the partial sums of the row-parallel projections. An fp8 or fp4 contraction's result is
  rescaled back to the model's dtype in its epilogue (`@rescale`), and partial sums in fp8 would not add up
  to the program's result. (Sequence parallelism could all-gather the next layer's fp8 input instead of the
  sums, but the reduce-scatter's partial sums still leave each chip at the model's dtype, so each way's
  bytes and the time stay the same.)
- PP send: the residual stream between layers, at the model's dtype.
- EP dispatch: the experts' input, which their contractions read quantized: fp8 or int8 codes (one byte; the
  per-tensor scale is a static argument every chip holds), or fp4 e2m1 codes and a scale per block (nvfp4:
  an e4m3 scale per 16, mxfp4 an e8m0 scale per 32; a block's scale comes from its own token, so a token's
  codes and scales travel together). Without quantized activations, the model's dtype.
- EP combine: the experts' outputs (rescaled results), at the model's dtype.
- The step's live hidden states (activation memory): the residual stream, at the model's dtype.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from solar.passes.quantize_formats import ACTIVATION_CODES, ACTIVATION_FORMATS, FORMATS


@dataclass(frozen=True)
class Exchange:
    """Bytes per token of each collective's message (one token's hidden vector as it is sent)."""

    hidden: int  # at the model's dtype: TP all-reduce, PP send, EP combine, the live hidden states
    dispatch: int  # the experts' input as their contractions read it: EP dispatch

    def as_record(self) -> dict[str, int]:
        return {"hidden_bytes_per_token": self.hidden, "dispatch_bytes_per_token": self.dispatch}


def activation_bytes_per_token(hidden: int, activations: str, dtype_bytes: int) -> int:
    """One token's `hidden` elements as a contraction reads them under `--quantize activations=...`."""
    if activations not in ACTIVATION_FORMATS:
        raise ValueError(f"unknown activation format '{activations}'")
    if activations == "none":
        return hidden * dtype_bytes
    if activations in ACTIVATION_CODES:  # fp8 or int8 codes; the per-tensor scale is a static argument
        return math.ceil(hidden * ACTIVATION_CODES[activations].bits / 8)
    fmt = FORMATS[activations]  # W4A4: e2m1 codes and a scale per block of the format's size
    return math.ceil(hidden * fmt.codes.bits / 8) + math.ceil(hidden / fmt.group) * math.ceil(fmt.scale.bits / 8)


def exchange_of(hidden: int, dtype_bytes: int, activations: str = "none") -> Exchange:
    return Exchange(hidden * dtype_bytes, activation_bytes_per_token(hidden, activations, dtype_bytes))


__all__ = ["Exchange", "activation_bytes_per_token", "exchange_of"]
