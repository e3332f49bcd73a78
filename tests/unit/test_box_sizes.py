"""An einsum's sizes in closed form (solar.ir.analysis.counts.box_sizes) equal those of its ISL model
(`isl_sizes`) wherever the closed form applies, at random sizes, zero and negative extents included."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from solar.ir.analysis.counts import box_sizes, einsum_counts, isl_sizes
from solar.ir.dtypes import DType
from solar.ir.expr import Binary, Expr, IntLit, NameRef
from solar.ir.ops import Binding, EinsumOp, EinsumStmt, TensorDecl, Value
from solar.ir.types import Dim, TensorType, canonical_dim

LETTERS = "ijk"
PARAMS = ("N", "M")

# An extent: a number or a size expression that may be 0 or negative at small sizes (`N - 2`).
EXTENTS: list[Dim] = [1, 3, canonical_dim(NameRef("N")), canonical_dim(Binary("-", NameRef("N"), IntLit(2))),
                      canonical_dim(Binary("floordiv", Binary("+", NameRef("M"), IntLit(1)), IntLit(2)))]


@st.composite
def box_einsums(draw: st.DrawFn) -> tuple[EinsumOp, tuple[str, ...]]:
    """An einsum over up to three indices whose operands each read some of them (in any order, each once)
    or a constant, each operand its own value."""
    letters = LETTERS[:draw(st.integers(1, 3))]
    extent = {c: draw(st.sampled_from(EXTENTS)) for c in letters}

    def term(letters_in: str) -> tuple[str, list[Dim]]:
        parts, dims = [], []
        for c in letters_in:
            parts.append(c)
            dims.append(extent[c])
        if draw(st.booleans()):  # a constant subscript, inside its dimension or not
            at = draw(st.integers(0, len(parts)))
            parts.insert(at, f"({draw(st.integers(-1, 2))})")
            dims.insert(at, draw(st.sampled_from([1, 2, canonical_dim(NameRef("M"))])))
        return "".join(parts), dims

    operands = []
    for _ in range(draw(st.integers(1, 2))):
        chosen = draw(st.permutations(letters).map(lambda p: "".join(p[:draw(st.integers(0, len(p)))])))
        operands.append(term(chosen))
    covered = {c for text, _ in operands for c in text if c.isalpha()}
    output = "".join(draw(st.permutations(sorted(covered))) if covered else [])
    output = output[:draw(st.integers(0, len(output)))]
    out_text, out_dims = term(output)
    spec = ",".join(t for t, _ in operands) + "->" + out_text
    f32 = _f32()
    inputs = [Binding(Value(f"v{k}", TensorType(tuple(dims), f32)), f"A{k}") for k, (_, dims) in enumerate(operands)]
    value: Expr = NameRef("A0")
    for b in inputs[1:]:
        value = Binary("*", value, NameRef(b.name))
    out = TensorDecl("Y", TensorType(tuple(out_dims), f32))
    reduces = any(c not in out_text for c in covered)
    op = EinsumOp("e", spec, inputs, [out], [EinsumStmt("Y", "+=" if reduces else "=", value)])
    used = tuple(p for p in PARAMS if any(p in str(d) for t in [*(b.value.type for b in inputs), out.type]
                                          for d in t.shape))  # type: ignore[union-attr]
    return op, used


def _f32() -> DType:
    return DType.F32


@given(box_einsums(), st.integers(-1, 5), st.integers(-1, 5))
def test_closed_form_equals_the_isl_model(case: tuple[EinsumOp, tuple[str, ...]], n: int, m: int) -> None:
    op, used = case
    values = {"N": n, "M": m}
    closed = box_sizes(op, used, values)
    assert closed is not None, op.spec
    assert closed == isl_sizes(op, used, values), op.spec


def test_where_clauses_and_shared_operands_go_to_isl() -> None:
    f32 = _f32()
    x = Value("x", TensorType((4, 4), f32))
    shared = EinsumOp("e", "ij,ji->ij", [Binding(x, "A"), Binding(x, "B")], [TensorDecl("Y", TensorType((4, 4), f32))],
                      [EinsumStmt("Y", "=", Binary("*", NameRef("A"), NameRef("B")))])
    assert box_sizes(shared, (), {}) is None
    assert isl_sizes(shared, (), {}).elements_read == {0: 16}
    masked = EinsumOp("e", "ij->ij", [Binding(x, "A")], [TensorDecl("Y", TensorType((4, 4), f32))],
                      [EinsumStmt("Y", "=", NameRef("A"))], where="j<=i")
    assert box_sizes(masked, (), {}) is None
    assert einsum_counts(masked, [], {}).points == 10
