"""Pieces of the kernels --quantize builds (passes/quantize.py, quantize_fp4.py, quantize_kv.py): loop nests,
and a contraction of more than two operands split into the two a low-precision MMA reads."""

from __future__ import annotations

import typing

from solar.ir import attr_names
from solar.ir.builder import cast
from solar.ir.dtypes import DType
from solar.ir.expr import Access, Binary, Cast, Expr, IndexRef, NameRef
from solar.ir.expr_visitor import ExprVisitor
from solar.ir.ops import Binding, EinsumOp
from solar.ir.rewriter import uses_of


class affine_loops:
    """`with affine_loops(kernel, shape) as idx:` nests one affine loop per dimension of `shape`."""

    def __init__(self, kernel: typing.Any, shape: tuple[typing.Any, ...]) -> None:
        self.kernel = kernel
        self.shape = shape
        self.managers: list[typing.Any] = []

    def __enter__(self) -> list[IndexRef]:
        idx = []
        for a, d in enumerate(self.shape):
            m = self.kernel.loop(f"i{a}", 0, d)
            idx.append(m.__enter__())
            self.managers.append(m)
        return idx

    def __exit__(self, *exc: object) -> None:
        for m in reversed(self.managers):
            m.__exit__(*exc)


class _ProductNames(ExprVisitor[list[str] | None]):
    """The operands an einsum body multiplies (`X * W * G`, through casts), or None if it does more."""

    def visit_cast(self, e: Cast) -> list[str] | None:
        return self.visit(e.operand)

    def visit_name_ref(self, e: NameRef) -> list[str] | None:
        return [e.name]

    def visit_binary(self, e: Binary) -> list[str] | None:
        if e.op != "*":
            return None
        lhs, rhs = self.visit(e.lhs), self.visit(e.rhs)
        return None if lhs is None or rhs is None else lhs + rhs

    def visit_other(self, e: Expr) -> list[str] | None:
        return None


def product_names(e: Expr) -> list[str] | None:
    """The operands an einsum body multiplies (`X * W * G`, through casts), or None if it does more."""
    return _ProductNames().visit(e)


def split_operands(rw: typing.Any, op: EinsumOp, at: int) -> bool:
    """A contraction of an activation, the weight `at` and other factors as one of the activation and the
    weight alone, where that is the same product: a factor that runs along the reduction and reads only the
    activation's indices multiplies the activation first (a map before it); a factor that reads only the
    result's indices multiplies the result after it (a gate or a scale per row). False, nothing changed:
    the body is not a product of its operands each read once, or a factor fits neither."""
    letters, out = op.spec.split("->")
    terms = letters.split(",")
    reduced = [c for c in terms[at] if c not in out]
    if len(op.body) != 1 or op.body[0].op != "+=" or len(reduced) != 1 \
            or any(len(set(t)) != len(t) for t in [*terms, out]):
        return False
    names = [b.name for b in op.inputs]
    if sorted(product_names(op.body[0].value) or []) != sorted(names):
        return False
    along = [k for k in range(len(terms)) if k != at and reduced[0] in terms[k]]
    if not along:
        return False
    x, before = along[0], along[1:]
    after = [k for k in range(len(terms)) if k not in (at, x, *before)]
    if any(not set(terms[k]) <= set(terms[x]) for k in before) or any(not set(terms[k]) <= set(out) for k in after):
        return False
    result = op.results[0]
    rt = result.type
    assert rt is not None
    activation = op.inputs[x].value
    if before:
        xt = activation.type
        assert xt is not None
        inputs = [(activation, "X")] + [(op.inputs[k].value, f"F{n}") for n, k in enumerate(before)]

        def premultiplied(idx: list[IndexRef]) -> Expr:
            v: Expr = Access("X", tuple(idx))
            for n, k in enumerate(before):
                v = v * cast(xt.dtype, Access(f"F{n}", tuple(idx[terms[x].index(c)] for c in terms[k])))
            return v

        activation = rw._insert_before(op, lambda b: rw._map_kernel(b, "premultiply", inputs, xt, premultiplied))
    factors = [op.inputs[k].value for k in after]
    op.inputs = [Binding(activation, names[x]), op.inputs[at]]
    op.spec = f"{terms[x]},{terms[at]}->{out}"
    op.body[0].value = Binary("*", NameRef(names[x]), NameRef(names[at]))
    op.attrs.pop(attr_names.COUNTS, None)
    if factors:
        uses = list(uses_of(rw.func.body).get(result, []))
        inputs = [(result, "A")] + [(f, f"F{n}") for n, f in enumerate(factors)]

        def scaled(idx: list[IndexRef]) -> Expr:
            v: Expr = cast(DType.F32, Access("A", tuple(idx)))
            for n, k in enumerate(after):
                v = v * cast(DType.F32, Access(f"F{n}", tuple(idx[out.index(c)] for c in terms[k])))
            return cast(rt.dtype, v)

        block = rw._block_of(op)
        at_op = next(k for k, o in enumerate(block) if o is op) + 1
        product = rw._insert_at(block, at_op, lambda b: rw._map_kernel(b, "postmultiply", inputs, rt, scaled))
        for user, k in uses:
            user.set_operand(k, product)
    return True
