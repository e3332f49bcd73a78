"""The grouped matrix product in float64, for the reference run that decides close calls in validation.

Validation runs the original program a second time in float64 where an output differs from the golden one
beyond the tolerance (frontends/validate.py, `make_wide`): that run says which side rounded. torch's
`_grouped_mm` (transformers' default experts kernel, and so Mixtral's, Qwen-MoE's and DeepSeek's as Hugging
Face ships them) takes f32, bf16 and f16 only, so the float64 run of every such model failed, and a bf16 MoE
model whose IR rounds differently from torch's bf16 kernels failed validation with no arbiter (DeepSeek-V2-
Lite's prefill: 4 of 512 logits). Within `float64_grouped_mm()`, a float64 product of a 2-D input by a 3-D
weight stack with group offsets is computed group by group (rows offs[g-1] .. offs[g] by weight g, rows past
the last offset zero); every other call goes to torch's kernel as before.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch


def grouped_mm_float64(mat_a: torch.Tensor, mat_b: torch.Tensor, offs: torch.Tensor,
                       bias: torch.Tensor | None = None) -> torch.Tensor:
    """out[s] = mat_a[s] @ mat_b[g] (+ bias[g]) for the group g whose rows hold s; rows past offs[-1]: 0."""
    out = mat_a.new_zeros(mat_a.shape[0], mat_b.shape[-1])
    start = 0
    for group, end in enumerate(int(e) for e in offs.tolist()):
        if end > start:
            out[start:end] = mat_a[start:end] @ mat_b[group]
            if bias is not None:
                out[start:end] += bias[group]
        start = max(start, end)
    return out


def _wide(kernel: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    def grouped_mm(mat_a: torch.Tensor, mat_b: torch.Tensor, *args: Any, offs: torch.Tensor | None = None,
                   bias: torch.Tensor | None = None, out_dtype: torch.dtype | None = None) -> torch.Tensor:
        if (not args and offs is not None and mat_a.dtype == mat_b.dtype == torch.float64
                and mat_a.dim() == 2 and mat_b.dim() == 3 and out_dtype in (None, torch.float64)):
            return grouped_mm_float64(mat_a, mat_b, offs, bias)
        return kernel(mat_a, mat_b, *args, offs=offs, bias=bias, out_dtype=out_dtype)

    return grouped_mm


@contextlib.contextmanager
def float64_grouped_mm() -> Iterator[None]:
    """torch.nn.functional.grouped_mm and torch._grouped_mm accept float64 (2-D by 3-D with offsets) inside."""
    functional = torch.nn.functional
    saved = {(owner, name): getattr(owner, name) for owner, name in ((functional, "grouped_mm"),
                                                                      (torch, "_grouped_mm"))
             if hasattr(owner, name)}
    try:
        for (owner, name), kernel in saved.items():
            setattr(owner, name, _wide(kernel))
        yield
    finally:
        for (owner, name), kernel in saved.items():
            setattr(owner, name, kernel)
