"""`solar.einsum` through NumPy and BLAS, for the einsums that are contractions: a product of the operands,
reduced with `+=` (or a plain map `=`), in a float type. Everything else runs as a generated Numba loop nest
(`codegen.EinsumGen`), which implements the full semantics.

Affine windows (`nc(2p+r-1)(2q+s-1)`) need no special case: an operand read through affine subscripts is a
strided view of the operand padded with zeros (the halo that docs/ir.md says reads 0), with one axis per
letter. After that every einsum here is a plain einsum over letters: two operands go through one batched
`np.matmul` (BLAS), more through `np.einsum(optimize=True)`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from solar.ir.dtypes import DType
from solar.ir.einsum_spec import EinsumSpec, index_ranges, parse_spec, parse_where
from solar.ir.expr import Binary, Expr, FloatLit, IndexRef, IntLit, NameRef, free_indices, linear_form
from solar.ir.expr_visitor import ExprVisitor
from solar.ir.ops import EinsumOp

from .dtypes import identity

LinearEntry = tuple[dict[str, int], int]  # letter → coefficient, constant


@dataclass
class Geometry:
    """An einsum's iteration space: its subscripts, the extent of each letter and the where-constraints that
    restrict it (those that only restate a letter's range, such as `r<3` giving r its extent, are dropped)."""

    spec: EinsumSpec
    ranges: dict[str, int]
    where: list[Binary]

    def letters_and_terms(self) -> tuple[list[str], list[str], list[list[LinearEntry]]] | None:
        """The result's letters, the reduced ones, and every operand's subscripts as linear forms (letter →
        coefficient, constant): what both array plans (BLAS here, chunked NumPy in backends/vectorized.py)
        start from. None where a result subscript is not a distinct letter or an operand's is not linear."""
        out_letters: list[str] = []
        for entry in self.spec.output:
            if not isinstance(entry, IndexRef) or entry.name in out_letters:
                return None
            out_letters.append(entry.name)
        terms: list[list[LinearEntry]] = []
        for term in self.spec.inputs:
            entries: list[LinearEntry] = []
            for entry in term:
                form = linear_form(entry)
                if form is None:
                    return None
                entries.append(({k[1:]: v for k, v in form[0]}, form[1]))
            terms.append(entries)
        return out_letters, [i for i in self.spec.indices if i not in out_letters], terms


def geometry(op: EinsumOp) -> Geometry:
    spec = parse_spec(op.spec)
    where = parse_where(op.where, spec.indices) if op.where else []
    shapes = [b.value.type.shape for b in op.inputs if b.value.type is not None] + [op.outputs[0].type.shape]
    ranges = {k: int(v) for k, v in index_ranges(spec, shapes, where).items()}  # type: ignore[call-overload]
    return Geometry(spec, ranges, [c for c in where if not _restates_range(c, ranges)])


def _restates_range(c: Binary, ranges: dict[str, int]) -> bool:
    form = linear_form(Binary("-", c.lhs, c.rhs))
    if form is None or len(form[0]) != 1:
        return False
    (name, coeff), const = form[0][0], form[1]
    extent = ranges.get(name[1:])
    if extent is None or abs(coeff) != 1:
        return False
    # c is coeff*x + const OP 0, with x in [0, extent): true for every x?
    lo, hi = (const, coeff * (extent - 1) + const) if coeff > 0 else (-(extent - 1) + const, const)
    return {"<": hi < 0, "<=": hi <= 0, ">": lo > 0, ">=": lo >= 0, "==": lo == hi == 0}.get(c.op, False)


@dataclass
class BlasPlan:
    terms: list[list[LinearEntry]]  # per operand, per dimension
    out_letters: list[str]
    ranges: dict[str, int]
    scale: float
    mask: list[Binary]  # where-constraints over result letters only: applied to the result
    # Constraints that name a reduced letter, each applied to one operand whose letters cover it: the points
    # it excludes then contribute 0 * (the other operands), which equals skipping them when those are finite.
    operand_masks: list[list[Binary]]
    reduction: str | None  # add for contractions; any kind for a single operand reduced as it is
    dtype: DType  # the result's element type (for identities)
    guarded: list[bool]  # per operand: some constraint excludes its points (others must then be finite)

    @property
    def fill(self) -> float | int | bool:
        """What a point or element outside the where-region holds: the identity (0 for a map)."""
        return identity(self.reduction, self.dtype) if self.reduction else 0


def blas_plan(op: EinsumOp) -> BlasPlan | None:
    """A plan when the einsum is a float contraction NumPy can run at library speed, else None."""
    if len(op.outputs) != 1 or not op.body:
        return None
    out = op.outputs[0]
    first = op.body[0]
    if any(b.value.type is None for b in op.inputs):
        return None
    single = len(op.inputs) == 1 and isinstance(first.value, NameRef) and first.value.name == op.inputs[0].name
    if single:
        # One operand reduced as it is (a row max, a sum): a NumPy reduction, any reduction, any type.
        if first.op == "*=" and out.type.dtype.is_bool:
            return None
        names, scale = [op.inputs[0].name], 1.0
    else:
        if first.op not in ("+=", "=") or not out.type.dtype.is_float:
            return None
        if any(b.value.type is None or not b.value.type.dtype.is_float for b in op.inputs):
            return None
        factors = _PRODUCT.visit(first.value)
        if factors is None:
            return None
        names, scale = factors
    if sorted(names) != sorted(b.name for b in op.inputs):
        return None
    geo = geometry(op)
    ranges = geo.ranges
    shaped = geo.letters_and_terms()
    if shaped is None:
        return None
    out_letters, reduced, terms = shaped
    if first.op == "=" and reduced:
        return None
    # Operands in the order of the subscripts, which is the order of `op.inputs`.
    mask: list[Binary] = []
    operand_masks: list[list[Binary]] = [[] for _ in terms]
    halo_guards = [False for _ in terms]
    for c in geo.where:
        letters = {r.name for r in free_indices(c)}
        if letters <= set(out_letters):
            mask.append(c)
            continue
        owner = next((k for k, t in enumerate(terms) if letters <= {x for e in t for x in e[0]}), None)
        if owner is None:
            return None  # no operand spans the constraint: the loop nest handles it
        shape = op.inputs[owner].value.type.concrete_shape()  # type: ignore[union-attr]
        if len(terms) > 1 and _within_halo(c, terms[owner], shape):
            # `2p+r-1>=0`-style padding guards: the excluded points read the zero halo, which adds 0 * b,
            # the same as skipping them when the other operands are finite (checked when it runs).
            halo_guards[owner] = True
            continue
        operand_masks[owner].append(c)
    return BlasPlan(terms, out_letters, ranges, scale, mask, operand_masks, first.reduction, out.type.dtype,
                    [bool(m) or h for m, h in zip(operand_masks, halo_guards, strict=True)])


def _within_halo(c: Binary, entries: list[LinearEntry], shape: tuple[int, ...]) -> bool:
    """True when constraint `c` excludes only points at which some entry of the operand falls outside the
    operand (`2p+r-1 >= 0`, `2p+r-1 < 32` for a dimension of 32)."""
    form = linear_form(Binary("-", c.lhs, c.rhs))
    if form is None:
        return False
    coeffs = {k[1:]: v for k, v in form[0]}
    c0 = form[1]
    for (entry, const), dim in zip(entries, shape, strict=True):
        for sign in (1, -1):
            if coeffs != {k: sign * v for k, v in entry.items()} or not coeffs:
                continue
            # With s the entry's linear part, c is  sign*s + c0 OP 0;  valid reads have s in [-const, dim-1-const].
            lo, hi = -const, dim - 1 - const
            op = c.op if sign == 1 else {">=": "<=", ">": "<", "<=": ">=", "<": ">"}.get(c.op, c.op)
            bound = -c0 if sign == 1 else c0
            implied = {">=": bound <= lo, ">": bound + 1 <= lo, "<=": bound >= hi, "<": bound - 1 >= hi}
            if implied.get(op, False):
                return True
    return False


_Factors = tuple[list[str], float] | None  # the operands read and the constant factor


class _Product(ExprVisitor[_Factors]):
    """`A * B * 0.5` → (['A', 'B'], 0.5); None when the expression is anything else."""

    def visit_name_ref(self, e: NameRef) -> _Factors:
        return [e.name], 1.0

    def visit_int_lit(self, e: IntLit | FloatLit) -> _Factors:
        return [], float(e.value)

    visit_float_lit = visit_int_lit

    def visit_binary(self, e: Binary) -> _Factors:
        if e.op != "*":
            return None
        a, b = self.visit(e.lhs), self.visit(e.rhs)
        if a is None or b is None:
            return None
        return a[0] + b[0], a[1] * b[1]

    def visit_other(self, e: Expr) -> _Factors:
        return None


_PRODUCT = _Product()


def operand_view(array: np.ndarray, entries: list[LinearEntry], ranges: dict[str, int]) -> tuple[np.ndarray, list[str]]:
    """`array` read through affine subscripts, as a strided view with one axis per letter (zero halo)."""
    letters: list[str] = []
    for coeffs, _ in entries:
        for k in coeffs:
            if k not in letters:
                letters.append(k)
    plain = all(len(c) == 1 and next(iter(c.values())) == 1 and k == 0 for c, k in entries)
    if plain and len(letters) == len(entries):
        return array, letters
    pads: list[tuple[int, int]] = []
    for (coeffs, const), dim in zip(entries, array.shape, strict=True):
        lo = const + sum(min(0, v * (ranges[k] - 1)) for k, v in coeffs.items())
        hi = const + sum(max(0, v * (ranges[k] - 1)) for k, v in coeffs.items())
        pads.append((max(0, -lo), max(0, hi - (dim - 1))))
    base = np.ascontiguousarray(np.pad(array, pads) if any(a or b for a, b in pads) else array)
    offset = sum((const + before) * stride
                 for (_, const), (before, _), stride in zip(entries, pads, base.strides, strict=True))
    strides = [sum(coeffs.get(k, 0) * stride for (coeffs, _), stride in zip(entries, base.strides, strict=True))
               for k in letters]
    view = np.ndarray(tuple(ranges[k] for k in letters), dtype=base.dtype, buffer=base, offset=offset,
                      strides=tuple(strides))
    view.flags.writeable = False
    return view, letters


def contract(plan: BlasPlan, operands: list[np.ndarray]) -> np.ndarray | None:
    """The einsum's result before its epilogue, in the operands' (compute) dtype; None when a masked point
    would meet an inf or NaN (0 * inf is NaN, a skipped point is nothing): then the loop nest must run it."""
    masked = [k for k, m in enumerate(plan.operand_masks) if m]
    guarded = [k for k, g in enumerate(plan.guarded) if g]
    if guarded and not all(np.isfinite(a).all() for k, a in enumerate(operands) if k not in guarded):
        return None
    views = [operand_view(a, t, plan.ranges) for a, t in zip(operands, plan.terms, strict=True)]
    # A masked-out point becomes the identity: skipped, for one operand; 0 * the others, for a product.
    fill = plan.fill if len(views) == 1 else 0
    for k in masked:
        view, letters = views[k]
        keep = _letter_mask(plan.operand_masks[k], letters, plan.ranges)
        views[k] = (np.where(keep, view, view.dtype.type(fill)), letters)
    dtype = operands[0].dtype
    out = plan.out_letters
    if len(views) == 1:
        (v, letters), = views
        result = _reduce_single(v, letters, out, plan.reduction)
        result = _broadcast_missing(result, [x for x in out if x in letters], out, plan.ranges)
    elif len(views) == 2:
        result = _pairwise(views[0], views[1], out, plan.ranges)
    else:
        inputs = ",".join("".join(letters) for _, letters in views)
        present = [x for x in out if any(x in letters for _, letters in views)]
        result = np.einsum(f"{inputs}->{''.join(present)}", *[v for v, _ in views], optimize=True)
        result = _broadcast_missing(result, present, out, plan.ranges)
    result = np.asarray(result, dtype=dtype)
    if plan.scale != 1.0:
        result = result * dtype.type(plan.scale)
    if plan.mask:
        result = np.where(_mask(plan), result, dtype.type(plan.fill))
    return np.ascontiguousarray(result)


def _reduce_single(v: np.ndarray, letters: list[str], out: list[str], reduction: str | None) -> np.ndarray:
    axes = tuple(n for n, k in enumerate(letters) if k not in out)
    kept = [k for k in letters if k in out]
    if axes:
        if v.dtype == np.bool_:
            f: Any = np.any if reduction == "max" else np.all
        else:
            f = {"add": np.sum, "mul": np.prod, "max": np.max, "min": np.min}[reduction or "add"]
        # Float sums and products accumulate in f64 (`codegen_expr.wide_accumulator`); NumPy's pairwise sum
        # covers only the innermost contiguous axis, other axes it adds in sequence.
        wide = {"dtype": np.float64} if reduction in (None, "add", "mul") and v.dtype.kind == "f" else {}
        v = np.asarray(f(v, axis=axes, **wide)).astype(v.dtype, copy=False)  # an i32 sum wraps back to i32
    return v.transpose([kept.index(k) for k in out if k in kept])


def _pairwise(a: tuple[np.ndarray, list[str]], b: tuple[np.ndarray, list[str]], out: list[str],
              ranges: dict[str, int]) -> np.ndarray:
    """Two operands as one batched matrix product, (batch, M, K) @ (batch, K, N) or, when the larger operand
    is laid out with its free letters innermost, (batch, N, K) @ (batch, K, M): the copy that a strided view
    (a convolution's windows) needs then walks memory forward, about three times faster."""
    (x, xl), (y, yl) = a, b
    # Letters that only one operand has and the result lacks are summed out first.
    x, xl = _sum_private(x, xl, yl, out)
    y, yl = _sum_private(y, yl, xl, out)
    if y.size > x.size:
        (x, xl), (y, yl) = (y, yl), (x, xl)
    batch = [k for k in out if k in xl and k in yl]
    xf = _memory_order(x, xl, [k for k in xl if k not in yl])
    contracted = _memory_order(x, xl, [k for k in xl if k in yl and k not in out])
    yf = [k for k in yl if k not in xl]
    nb, m, n, kk = (int(np.prod([ranges[k] for k in g], dtype=np.int64)) for g in (batch, xf, yf, contracted))
    if _innermost_is_free(x, xl, xf, contracted):
        xm = x.transpose([xl.index(k) for k in batch + contracted + xf]).reshape(nb, kk, m)
        ym = y.transpose([yl.index(k) for k in batch + yf + contracted]).reshape(nb, n, kk)
        prod = np.matmul(ym, xm)
        letters = batch + yf + xf
    else:
        xm = x.transpose([xl.index(k) for k in batch + xf + contracted]).reshape(nb, m, kk)
        ym = y.transpose([yl.index(k) for k in batch + contracted + yf]).reshape(nb, kk, n)
        prod = np.matmul(xm, ym)
        letters = batch + xf + yf
    prod = prod.reshape([ranges[k] for k in letters])
    present = [k for k in out if k in letters]
    prod = prod.transpose([letters.index(k) for k in present])
    return _broadcast_missing(prod, present, out, ranges)


def _memory_order(x: np.ndarray, xl: list[str], group: list[str]) -> list[str]:
    """`group`'s letters by decreasing stride in `x` (longer extents last among equal strides)."""
    return sorted(group, key=lambda k: (-abs(x.strides[xl.index(k)]), x.shape[xl.index(k)]))


def _innermost_is_free(x: np.ndarray, xl: list[str], free: list[str], contracted: list[str]) -> bool:
    """Whether x's innermost letter in memory (least stride, longest extent) is a free letter."""
    candidates = [k for k in free + contracted if x.shape[xl.index(k)] > 1]
    if not candidates or not free or not contracted:
        return False
    inner = min(candidates, key=lambda k: (abs(x.strides[xl.index(k)]), -x.shape[xl.index(k)]))
    return inner in free


def _sum_private(x: np.ndarray, xl: list[str], other: list[str], out: list[str]) -> tuple[np.ndarray, list[str]]:
    private = [k for k in xl if k not in other and k not in out]
    if not private:
        return x, xl
    x = x.sum(axis=tuple(xl.index(k) for k in private))
    return x, [k for k in xl if k not in private]


def _broadcast_missing(result: np.ndarray, present: list[str], out: list[str], ranges: dict[str, int]) -> np.ndarray:
    """Result letters that no operand has: the value repeats along them."""
    if len(present) == len(out):
        return result
    shape = [ranges[k] if k in present else 1 for k in out]
    return np.broadcast_to(result.reshape(shape), [ranges[k] for k in out])


def _mask(plan: BlasPlan) -> np.ndarray:
    return _letter_mask(plan.mask, plan.out_letters, plan.ranges)


def _letter_mask(constraints: list[Binary], letters: list[str], ranges: dict[str, int]) -> np.ndarray:
    return letter_mask(constraints, letters, ranges)


_COMPARE = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal, "==": np.equal}


def letter_mask(constraints: list[Binary], letters: list[str], ranges: dict[str, int],
                window: tuple[str, int, int] | None = None) -> np.ndarray:
    """Where the constraints hold, over the grid of `letters` (one axis per letter); `window` = (letter, lo,
    hi) takes only lo..hi-1 of that letter (a chunk)."""
    rank = len(letters)
    grids: dict[str, np.ndarray] = {}
    for n, k in enumerate(letters):
        values = np.arange(window[1], window[2]) if window is not None and k == window[0] else np.arange(ranges[k])
        grids[k] = values.reshape([-1 if d == n else 1 for d in range(rank)])
    mask = np.ones([grids[k].size for k in letters], dtype=bool)
    for c in constraints:
        mask &= _COMPARE[c.op](_eval(c.lhs, grids), _eval(c.rhs, grids))
    return mask


def _eval(e: Expr, grids: dict[str, np.ndarray]) -> np.ndarray | int:
    form = linear_form(e)
    assert form is not None
    total: np.ndarray | int = form[1]
    for k, v in form[0]:
        total = total + v * grids[k[1:]]
    return total
