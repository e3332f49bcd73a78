"""Element types of SIR tensors."""

from __future__ import annotations

from enum import Enum
from typing import Any


class DType(Enum):
    """An element type: its spelling, its size in bits and its kind ('f' float, 'i' integer, 'b' bool).
    Sub-byte types (4 bits) are stored packed, two to a byte: their bytes are counted from bits."""

    F64 = ("f64", 64, "f")
    F32 = ("f32", 32, "f")
    TF32 = ("tf32", 32, "f")
    BF16 = ("bf16", 16, "f")
    F16 = ("f16", 16, "f")
    F8E4M3 = ("f8e4m3", 8, "f")
    F8E5M2 = ("f8e5m2", 8, "f")
    F8E8M0 = ("f8e8m0", 8, "f")  # a power of two (exponent only): the scales of MX formats (mxfp4)
    F4E2M1 = ("f4e2m1", 4, "f")  # OCP FP4: the elements of nvfp4 and mxfp4
    I64 = ("i64", 64, "i")
    I32 = ("i32", 32, "i")
    I16 = ("i16", 16, "i")
    I8 = ("i8", 8, "i")
    U8 = ("u8", 8, "i")  # unsigned: images, quantized weights (torch.uint8)
    I4 = ("i4", 4, "i")  # int4 weights and caches (GPTQ, AWQ, compressed-tensors), packed two to a byte
    U4 = ("u4", 4, "i")  # unsigned int4: asymmetric quantization's codes and zero points
    I1 = ("i1", 8, "b")  # a boolean takes a byte, as torch.bool does

    def __init__(self, spelling: str, bits: int, kind: str) -> None:
        self.spelling = spelling
        self.bits = bits
        self.kind = kind

    @property
    def itemsize(self) -> int | float:
        """Bytes per element: a whole number, or a fraction (0.5) for a sub-byte type. Exact byte counts of
        many elements go through `bytes_of`, which stays an integer."""
        return self.bits // 8 if self.bits % 8 == 0 else self.bits / 8

    def bytes_of(self, elements: Any) -> Any:
        """The bytes of `elements` elements (a number or a size formula), packed: exact for whole-byte types,
        rounded down for an odd count of a sub-byte type (a lower bound)."""
        if self.bits % 8 == 0:
            return elements * (self.bits // 8)
        return elements * self.bits // 8

    @property
    def eps(self) -> float:
        """Machine epsilon (the gap between 1.0 and the next value) of a float type, as `torch.finfo`
        gives it; raises for integer and bool types, which have none."""
        bits = _MANTISSA_BITS.get(self.spelling)
        if bits is None:
            raise ValueError(f"{self.spelling} is not a float type: it has no machine epsilon")
        return 2.0 ** -bits

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_int(self) -> bool:
        return self.kind == "i"

    @property
    def is_bool(self) -> bool:
        return self.kind == "b"

    def __str__(self) -> str:
        return self.spelling

    def __repr__(self) -> str:
        return f"DType.{self.name}"


# Explicit mantissa bits of each float type (machine epsilon = 2^-bits).
_MANTISSA_BITS = {"f64": 52, "f32": 23, "tf32": 10, "bf16": 7, "f16": 10, "f8e4m3": 3, "f8e5m2": 2,
                  "f8e8m0": 0, "f4e2m1": 1}
DTYPES: dict[str, DType] = {d.spelling: d for d in DType}
# Loop indices, size parameters and index arithmetic have this type when used as values.
INDEX = DType.I64


def dtype_from_name(name: str) -> DType | None:
    return DTYPES.get(name)
