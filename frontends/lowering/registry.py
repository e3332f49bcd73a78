"""The lowering tables: framework op name → lowering function.

PyTorch entries are keyed by the ATen schema name without overload (`aten::conv2d`); overloads of one op
(`add.Tensor`, `add.Scalar`) share an entry, which reads the arguments by their schema names. JAX entries
are keyed by primitive name (`dot_general`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from solar.ir.dtypes import DType
from solar.ir.ops import Value
from solar.ir.types import TensorType

from .core import Emitter, LoweringError, Shape, ttype

TorchLowering = Callable[["TorchNode"], Any]
TORCH_LOWERINGS: dict[str, TorchLowering] = {}


def torch_op(*names: str) -> Callable[[TorchLowering], TorchLowering]:
    """Registers a lowering for ATen ops given as `relu` (meaning `aten::relu`) or a full `ns::name`."""

    def deco(fn: TorchLowering) -> TorchLowering:
        for n in names:
            key = n if "::" in n else f"aten::{n}"
            if key in TORCH_LOWERINGS:
                raise RuntimeError(f"two lowerings for {key}")
            TORCH_LOWERINGS[key] = fn
        return fn

    return deco


def op_key(target: Any) -> str:
    """The table key of an FX node's target: `aten::conv2d` for an OpOverload, the function's name for
    Python callables (`operator.getitem`)."""
    schema = getattr(target, "_schema", None)
    if schema is not None:
        return schema.name
    return f"{getattr(target, '__module__', '?')}.{getattr(target, '__name__', str(target))}"


@dataclass
class OutMeta:
    """Shape and dtype of one output of a framework op, from the exporter's metadata."""

    shape: Shape
    dtype: DType

    @property
    def type(self) -> TensorType:
        return ttype(self.shape, self.dtype)


@dataclass
class TorchNode:
    """What a torch lowering sees: the op's arguments by schema name (tensors as SIR values, symbolic sizes
    as SIR expressions), its outputs' metadata and the emitter."""

    em: Emitter
    op: str  # e.g. 'aten::conv2d'
    overload: str  # e.g. 'default', 'Tensor'
    args: dict[str, Any]
    outs: list[OutMeta | None]
    present: set[str] = field(default_factory=set)  # arguments given explicitly (not defaults)

    def __getitem__(self, key: str) -> Any:
        return self.args[key]

    def get(self, key: str, default: Any = None) -> Any:
        v = self.args.get(key, default)
        return default if v is None else v

    @property
    def out(self) -> OutMeta:
        o = self.outs[0]
        if o is None:
            raise LoweringError(f"{self.op} has no tensor output")
        return o

    def tensor(self, key: str) -> Value:
        v = self.args.get(key)
        if not isinstance(v, Value):
            raise LoweringError(f"{self.op}: argument '{key}' must be a tensor here, not {type(v).__name__}")
        return v

    def unsupported(self, why: str) -> LoweringError:
        return LoweringError(f"{self.op}.{self.overload}: {why}")


@dataclass
class JaxNode:
    """What a JAX lowering sees: inputs (SIR values or Python scalars for literals), params, outputs."""

    em: Emitter
    prim: str
    inputs: list[Any]
    params: dict[str, Any]
    outs: list[OutMeta]

    @property
    def out(self) -> OutMeta:
        return self.outs[0]

    def tensor(self, i: int) -> Value:
        v = self.inputs[i]
        if isinstance(v, Value):
            return v
        # A literal where a tensor is needed: a rank-0 constant.
        dt = DType.F32 if isinstance(v, float) else DType.I1 if isinstance(v, bool) else DType.I32
        return self.em.constant(v, (), dt)

    def unsupported(self, why: str) -> LoweringError:
        return LoweringError(f"{self.prim}: {why}")


JaxLowering = Callable[[JaxNode], Any]
JAX_LOWERINGS: dict[str, JaxLowering] = {}


def jax_prim(*names: str) -> Callable[[JaxLowering], JaxLowering]:
    def deco(fn: JaxLowering) -> JaxLowering:
        for n in names:
            if n in JAX_LOWERINGS:
                raise RuntimeError(f"two lowerings for {n}")
            JAX_LOWERINGS[n] = fn
        return fn

    return deco
