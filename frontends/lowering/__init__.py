"""Lowering tables from framework ops to SIR kernel templates, one module per op family.

`TORCH_LOWERINGS` maps ATen op names (`aten::conv2d`) and `JAX_LOWERINGS` JAX primitive names
(`dot_general`) to functions that emit SIR through the builder.
"""

from . import (  # noqa: F401  (importing a family registers its entries)
    attention,
    backward,
    conv,
    creation,
    indexing,
    jax_ops,
    loss,
    matmul,
    norm,
    pointwise,
    pooling,
    random,
    recurrent,
    reduction,
    selection,
    shape,
    softmax,
    upsample,
)
from .core import Emitter, LoweringError
from .registry import JAX_LOWERINGS, TORCH_LOWERINGS, TorchNode, jax_prim, torch_op

__all__ = ["JAX_LOWERINGS", "TORCH_LOWERINGS", "Emitter", "LoweringError", "TorchNode", "jax_prim", "torch_op"]
