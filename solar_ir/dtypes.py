"""Element types of SIR tensors."""

from __future__ import annotations

from enum import Enum


class DType(Enum):
    """An element type: its spelling, its size in bytes and its kind ('f' float, 'i' integer, 'b' bool)."""

    F64 = ("f64", 8, "f")
    F32 = ("f32", 4, "f")
    TF32 = ("tf32", 4, "f")
    BF16 = ("bf16", 2, "f")
    F16 = ("f16", 2, "f")
    F8E4M3 = ("f8e4m3", 1, "f")
    F8E5M2 = ("f8e5m2", 1, "f")
    I64 = ("i64", 8, "i")
    I32 = ("i32", 4, "i")
    I16 = ("i16", 2, "i")
    I8 = ("i8", 1, "i")
    U8 = ("u8", 1, "i")  # unsigned: images, quantized weights (torch.uint8)
    I1 = ("i1", 1, "b")

    def __init__(self, spelling: str, itemsize: int, kind: str) -> None:
        self.spelling = spelling
        self.itemsize = itemsize
        self.kind = kind

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
_MANTISSA_BITS = {"f64": 52, "f32": 23, "tf32": 10, "bf16": 7, "f16": 10, "f8e4m3": 3, "f8e5m2": 2}
DTYPES: dict[str, DType] = {d.spelling: d for d in DType}
# Loop indices, size parameters and index arithmetic have this type when used as values.
INDEX = DType.I64


def dtype_from_name(name: str) -> DType | None:
    return DTYPES.get(name)
