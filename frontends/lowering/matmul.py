"""The matmul family (mm, bmm, addmm, matmul, linear, baddbmm, einsum, ...): one contraction kernel each."""

from __future__ import annotations

from collections.abc import Sequence

from solar.backends.contraction_order import Network, best_order
from solar.ir import attr_names
from solar.ir.dtypes import DType
from solar.ir.expr import Expr, IntLit
from solar.ir.expr_values import evaluate_int
from solar.ir.ops import KernelOp, Value
from solar.ir.types import Dim

from .core import (
    Emitter,
    LoweringError,
    acc_dtype,
    access,
    broadcast_shapes,
    cast,
    is_one,
    lit,
    loops,
    ttype,
    vtype,
)
from .registry import TorchNode, torch_op

Operand = tuple[Value, str]  # a tensor and the index letter of each of its dimensions


def contraction(em: Emitter, operands: Sequence[Operand], out: str, out_dtype: DType,
                bias: Operand | None = None, alpha: float = 1, beta: float = 1, hint: str | None = None,
                fp32: str | None = None) -> Value:
    """`Y[out] = beta·Bias + alpha·Σ Π operands` over the letters not in `out`, as one kernel.

    Size-1 operand dims against larger extents broadcast (read index 0). Narrow floats accumulate in f32."""
    sizes: dict[str, Dim] = {}
    for v, letters in [*operands, *([bias] if bias else [])]:
        shape = vtype(v).shape
        if len(shape) != len(letters):
            raise LoweringError(f"operand of rank {len(shape)} given letters '{letters}'")
        for ch, d in zip(letters, shape, strict=True):
            if ch not in sizes or is_one(sizes[ch]):
                sizes[ch] = d
    reduced = [ch for ch in dict.fromkeys("".join(lt for _, lt in operands)) if ch not in out]
    out_shape = tuple(sizes[ch] for ch in out)
    if not reduced and bias is None and len(operands) == 1 and sorted(out) == sorted(operands[0][1]) \
            and vtype(operands[0][0]).dtype == out_dtype:
        # A pure transposition (einsum "ij->ji"): a permute, no kernel.
        v, letters = operands[0]
        return em.permute(v, [letters.index(ch) for ch in out])
    acc_t = acc_dtype(out_dtype)
    direct = acc_t == out_dtype and alpha == 1
    names = ["A", "B", "C", "E", "F", "G", "H", "J"]
    bindings: list[tuple[Value, str]] = []
    for k, (v, _) in enumerate(operands):
        bindings.append((v, names[k]))
    if bias is not None:
        bindings.append((bias[0], "Bias"))
    kb = em.kernel(bindings, [("Y", ttype(out_shape, out_dtype))], hint)
    if reduced:  # a contraction: priced as the framework runs f32 matmuls (`fp32`: the op's own precision)
        em.mark_precision(kb, "matmul", vtype(operands[0][0]).dtype, fp32)
    if not direct:
        kb.local("acc", ttype(out_shape, acc_t))
    with loops(kb, out_shape, "i") as oidx:
        env = dict(zip(out, oidx, strict=True))

        def read(v: Value, letters: str, name: str, want: DType) -> Expr:
            t = vtype(v)
            idx = [IntLit(0) if is_one(d) and not is_one(sizes[ch]) else env[ch]
                   for ch, d in zip(letters, t.shape, strict=True)]
            return cast(access(name, idx), t.dtype, want)

        if direct and bias is not None:
            b = read(bias[0], bias[1], "Bias", acc_t)
            kb.assign(access("Y", oidx), b if beta == 1 else b * lit(beta, acc_t))
        with loops(kb, [sizes[ch] for ch in reduced], "r") as ridx:
            env.update(zip(reduced, ridx, strict=True))
            prod: Expr | None = None
            for (v, letters), name in zip(operands, names, strict=False):
                term = read(v, letters, name, acc_t)
                prod = term if prod is None else prod * term
            assert prod is not None
            target = access("Y" if direct else "acc", oidx)
            if reduced or (direct and bias is not None):
                kb.reduce(target, "+=", prod)
            else:
                kb.assign(target, prod)  # nothing to sum over (an outer product): a store
        if not direct:
            value: Expr = access("acc", oidx)
            if alpha != 1:
                value = value * lit(alpha, acc_t)
            if bias is not None and beta != 0:
                b = read(bias[0], bias[1], "Bias", acc_t)
                value = value + (b if beta == 1 else b * lit(beta, acc_t))
            kb.assign(access("Y", oidx), cast(value, acc_t, out_dtype))
    return kb.results[0]


LETTERS = "abcdefghijklmnopqrstuvwxyz"


def matmul_letters(a_rank: int, b_rank: int, a_shape: Sequence[Dim], b_shape: Sequence[Dim]
                   ) -> tuple[str, str, str]:
    """torch.matmul's broadcasting as einsum letters: (a's, b's, result's)."""
    if a_rank == 1 and b_rank == 1:
        return "k", "k", ""
    if b_rank == 1:
        batch = LETTERS[: a_rank - 2]
        return batch + "mk", "k", batch + "m"
    if a_rank == 1:
        batch = LETTERS[: b_rank - 2]
        return "k", batch + "kn", batch + "n"
    nb = max(a_rank, b_rank) - 2
    batch = LETTERS[:nb]
    return batch[nb - (a_rank - 2):] + "mk", batch[nb - (b_rank - 2):] + "kn", batch + "mn"


@torch_op("matmul")
def lower_matmul(n: TorchNode) -> Value:
    a, b = n.tensor("self"), n.tensor("other")
    at, bt = vtype(a), vtype(b)
    la, lb, lo = matmul_letters(at.rank, bt.rank, at.shape, bt.shape)
    if at.rank >= 2 and bt.rank >= 2:
        broadcast_shapes(at.shape[:-2], bt.shape[:-2])  # raises if the batch dims disagree
    return contraction(n.em, [(a, la), (b, lb)], lo, n.out.dtype)


@torch_op("mm")
def lower_mm(n: TorchNode) -> Value:
    return contraction(n.em, [(n.tensor("self"), "mk"), (n.tensor("mat2"), "kn")], "mn", n.out.dtype)


@torch_op("bmm")
def lower_bmm(n: TorchNode) -> Value:
    return contraction(n.em, [(n.tensor("self"), "bmk"), (n.tensor("mat2"), "bkn")], "bmn", n.out.dtype)


def _bias_letters(bias: Value, out: str) -> str:
    return out[len(out) - vtype(bias).rank:]


def _contraction_plus_bias(n: TorchNode, operands: list[tuple[str, str]], out: str) -> Value:
    """`beta * self + alpha * (contraction)`: the addmm family, the bias broadcast over the result's last letters."""
    bias = n.tensor("self")
    return contraction(n.em, [(n.tensor(name), letters) for name, letters in operands], out, n.out.dtype,
                       bias=(bias, _bias_letters(bias, out)), alpha=n.get("alpha", 1), beta=n.get("beta", 1))


@torch_op("addmm")
def lower_addmm(n: TorchNode) -> Value:
    return _contraction_plus_bias(n, [("mat1", "mk"), ("mat2", "kn")], "mn")


@torch_op("baddbmm")
def lower_baddbmm(n: TorchNode) -> Value:
    return _contraction_plus_bias(n, [("batch1", "bmk"), ("batch2", "bkn")], "bmn")


@torch_op("addbmm")
def lower_addbmm(n: TorchNode) -> Value:
    return _contraction_plus_bias(n, [("batch1", "bmk"), ("batch2", "bkn")], "mn")


@torch_op("addmv")
def lower_addmv(n: TorchNode) -> Value:
    return _contraction_plus_bias(n, [("mat", "mk"), ("vec", "k")], "m")


@torch_op("mv")
def lower_mv(n: TorchNode) -> Value:
    return contraction(n.em, [(n.tensor("self"), "mk"), (n.tensor("vec"), "k")], "m", n.out.dtype)


@torch_op("dot", "inner", "vdot")
def lower_dot(n: TorchNode) -> Value:
    a, b = n.tensor("self"), n.tensor("other" if "other" in n.args else "tensor")
    if vtype(a).rank != 1 or vtype(b).rank != 1:
        raise n.unsupported("inner products of tensors above rank 1")
    return contraction(n.em, [(a, "k"), (b, "k")], "", n.out.dtype)


@torch_op("outer", "ger")
def lower_outer(n: TorchNode) -> Value:
    return contraction(n.em, [(n.tensor("self"), "m"), (n.tensor("vec2"), "n")], "mn", n.out.dtype)


@torch_op("linear")
def lower_linear(n: TorchNode) -> Value:
    x, w, b = n.tensor("input"), n.tensor("weight"), n.args.get("bias")
    rank = vtype(x).rank
    batch = LETTERS[: rank - 1]
    return contraction(n.em, [(x, batch + "k"), (w, "nk")], batch + "n", n.out.dtype,
                       bias=(b, _bias_letters(b, batch + "n")) if isinstance(b, Value) else None)


@torch_op("bilinear")
def lower_bilinear(n: TorchNode) -> Value:
    x1, x2, w, b = n.tensor("input1"), n.tensor("input2"), n.tensor("weight"), n.args.get("bias")
    batch = LETTERS[: vtype(x1).rank - 1]
    return contraction(n.em, [(x1, batch + "p"), (w, "opq"), (x2, batch + "q")], batch + "o", n.out.dtype,
                       bias=(b, "o") if isinstance(b, Value) else None)


def parse_einsum(equation: str, ranks: Sequence[int]) -> tuple[list[str], str]:
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise LoweringError(f"einsum '{equation}' names {len(terms)} operands, {len(ranks)} given")
    used = set(ch for ch in eq if ch.isalpha())
    spare = [ch for ch in LETTERS + LETTERS.upper() if ch not in used]
    ell_rank = max((r - len(t.replace("...", "")) for t, r in zip(terms, ranks, strict=True) if "..." in t),
                   default=0)
    ell = "".join(spare[:ell_rank])
    out_terms = []
    for t, r in zip(terms, ranks, strict=True):
        if "..." in t:
            k = r - len(t.replace("...", ""))
            t = t.replace("...", ell[ell_rank - k:])
        out_terms.append(t)
    if arrow:
        out = rhs.replace("...", ell)
    else:
        counts: dict[str, int] = {}
        for t in out_terms:
            for ch in t:
                counts[ch] = counts.get(ch, 0) + 1
        out = ell + "".join(sorted(ch for ch, c in counts.items() if c == 1 and ch not in ell))
    return out_terms, out


@torch_op("einsum")
def lower_einsum(n: TorchNode) -> Value:
    xs = list(n["tensors"])
    terms, out = parse_einsum(n["equation"], [vtype(x).rank for x in xs])
    for t in terms:
        if len(set(t)) != len(t):
            raise n.unsupported("einsum with a repeated index in one operand (a diagonal)")
    operands = list(zip(xs, terms, strict=True))
    if len(operands) > 2:
        pairwise = _pairwise(n.em, operands, out, n.out.dtype, n["equation"])
        if pairwise is not None:
            return pairwise
    return contraction(n.em, operands, out, n.out.dtype)


def _pairwise(em: Emitter, operands: list[Operand], out: str, out_dtype: DType, equation: str) -> Value | None:
    """An einsum of three or more tensors as a chain of contractions of two, in the order of least FLOPs at the
    export's sizes (opt_einsum's search, backends/contraction_order.py), as torch.einsum runs it: one loop nest
    over every index would price the product of all the sizes (25× the work of Mamba2's four-tensor einsum).
    Each step is its own kernel, its `einsum_order` attribute naming the order; None where a size is unknown."""
    sizes: dict[str, int] = {}
    try:
        for v, letters in operands:
            for ch, d in zip(letters, vtype(v).shape, strict=True):
                sizes[ch] = max(sizes.get(ch, 1), d if isinstance(d, int) else evaluate_int(d, em.sizes))
    except (KeyError, ValueError, TypeError):
        return None
    net = Network(tuple(t for _, t in operands), out, sizes)
    order, _ = best_order(net, "flops", out_dtype, None, False)
    current = list(operands)
    result: Value | None = None
    for k, (positions, step) in enumerate(zip(order.positions, order.steps, strict=True)):
        picked = [current.pop(i) for i in sorted(positions, reverse=True)][::-1]
        step_out = step.split("->")[1]
        result = contraction(em, picked, step_out, out_dtype)
        if result.owner is not None and isinstance(result.owner, KernelOp):
            result.owner.attrs[attr_names.EINSUM_ORDER] = {
                "einsum": equation.replace(" ", ""), "step": k, "of": len(order.steps),
                "path": " ; ".join(order.steps), "method": order.method}
        current.append((result, step_out))
    assert result is not None and len(current) == 1
    return result


@torch_op("tensordot")
def lower_tensordot(n: TorchNode) -> Value:
    a, b = n.tensor("self"), n.tensor("other")
    ra, rb = vtype(a).rank, vtype(b).rank
    da = [d % ra for d in n["dims_self"]]
    db = [d % rb for d in n["dims_other"]]
    la = list(LETTERS[:ra])
    lb = list(LETTERS[ra: ra + rb])
    for x, y in zip(da, db, strict=True):
        lb[y] = la[x]
    out = "".join(ch for k, ch in enumerate(la) if k not in da) + "".join(ch for k, ch in enumerate(lb) if k not in db)
    return contraction(n.em, [(a, "".join(la)), (b, "".join(lb))], out, n.out.dtype)
