"""Tensor types and symbolic dimensions."""

from __future__ import annotations

import pytest

from solar.ir.dtypes import DType
from solar.ir.expr import NameRef
from solar.ir.types import TypeSyntaxError, dims_equal, parse_tensor_type


def test_static_and_symbolic_shapes() -> None:
    t = parse_tensor_type("tensor<64x512xbf16>")
    assert t.shape == (64, 512) and t.dtype is DType.BF16 and t.nbytes() == 64 * 512 * 2
    s = parse_tensor_type("tensor<Bx(S+2)xD_MODELxf32>")
    assert s.rank == 3 and s.shape[0] == NameRef("B")
    assert s.concrete_shape({"B": 2, "S": 6, "D_MODEL": 16}) == (2, 8, 16)
    assert str(s) == "tensor<Bx(S + 2)xD_MODELxf32>"
    assert parse_tensor_type("tensor<f32>").rank == 0


def test_constant_dim_expressions_fold() -> None:
    assert parse_tensor_type("tensor<(2*32)xf32>").shape == (64,)


def test_symbolic_dims_compare_by_linear_form() -> None:
    a = parse_tensor_type("tensor<(M+M)xf32>").shape[0]
    b = parse_tensor_type("tensor<(2*M)xf32>").shape[0]
    assert dims_equal(a, b)
    assert not dims_equal(a, parse_tensor_type("tensor<Mxf32>").shape[0])


@pytest.mark.parametrize(("text", "message"), [
    ("tensor<4xf33>", "unknown element type 'f33'"),
    ("tensor<-1xf32>", "bad dimension '-1'"),
    ("tensor<mx4xf32>", "bad dimension 'm'"),
    ("tensor<(M+)xf32>", "bad dimension expression"),
])
def test_bad_types(text: str, message: str) -> None:
    with pytest.raises(TypeSyntaxError, match=message):
        parse_tensor_type(text)
