"""Recurrent layers (LSTM, GRU, Elman RNN; stacked, bidirectional, batch-first) as `solar.for` over time.

Lowered from the graph before any decomposition: `aten.lstm` would decompose into tens of thousands of
nodes (shared/FACTS.md). Each time step is one cell kernel (the gate matmuls and the pointwise update, as
cuDNN's persistent kernels do per step) that reads the input sequence at `%t` (or `T − 1 − %t` backwards)
and writes the new state; `solar.insert` collects the outputs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from solar.ir.dtypes import DType
from solar.ir.expr import Binary, Expr, IndexRef, IntLit
from solar.ir.ops import SliceEntry, Value
from solar.ir.types import Dim

from .core import Emitter, LoweringError, acc_dtype, access, cast, dexpr, fcall, lit, smax, ttype, vtype
from .registry import TorchNode, torch_op

GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def _act(kind: str, e: Expr, dt: DType) -> Expr:
    return fcall("tanh", e) if kind != "rnn_relu" else smax(e, lit(0, dt))


def cell(em: Emitter, kind: str, x: Value, h: Value, c: Value | None, w_ih: Value, w_hh: Value,
         b_ih: Value | None, b_hh: Value | None, x_index: Callable[[Expr, Expr], list[Expr]], batch: Dim,
         hidden: int, out_dtype: DType) -> list[Value]:
    """One time step: gate pre-activations (input and hidden matmuls, biases) and the state update."""
    ng = GATES[kind]
    acc_t = acc_dtype(out_dtype)
    xt = vtype(x)
    feat = xt.shape[-1]
    bindings = [(x, "X"), (h, "H")] + ([(c, "C")] if c is not None else []) + [(w_ih, "Wih"), (w_hh, "Whh")]
    if b_ih is not None and b_hh is not None:
        bindings += [(b_ih, "Bih"), (b_hh, "Bhh")]
    outs = [("HN", ttype((batch, hidden), out_dtype))] + ([("CN", ttype((batch, hidden), out_dtype))] if c else [])
    kb = em.kernel(bindings, outs, hint=f"{em.hint}_{kind}_cell")
    em.mark_precision(kb, "rnn", vtype(x).dtype)  # its gate products run as cuDNN's f32 RNNs do
    # GRU keeps the input and hidden parts apart: its candidate gate scales only the hidden part by r.
    split = kind == "gru"
    kb.local("gx", ttype((ng, batch, hidden), acc_t))
    if split:
        kb.local("gh", ttype((ng, batch, hidden), acc_t))
        kb.local("z", ttype((batch, hidden), acc_t))  # the update gate, read twice: computed once
    has_bias = b_ih is not None

    def w(name: str, q: Expr, j: Expr, k: Expr, t: Value) -> Expr:
        row = j if ng == 1 else Binary("+", Binary("*", IntLit(hidden), q), j)
        return cast(access(name, [row, k]), vtype(t).dtype, acc_t)

    def bias(name: str, q: Expr, j: Expr, t: Value) -> Expr:
        row = j if ng == 1 else Binary("+", Binary("*", IntLit(hidden), q), j)
        return cast(access(name, [row]), vtype(t).dtype, acc_t)

    with kb.loop("q", 0, ng) as q, kb.loop("b", 0, dexpr(batch)) as b, kb.loop("j", 0, hidden) as j:
        if has_bias:
            assert b_ih is not None and b_hh is not None
            if split:
                kb.assign(access("gx", [q, b, j]), bias("Bih", q, j, b_ih))
                kb.assign(access("gh", [q, b, j]), bias("Bhh", q, j, b_hh))
            else:
                kb.assign(access("gx", [q, b, j]), bias("Bih", q, j, b_ih) + bias("Bhh", q, j, b_hh))
        with kb.loop("k", 0, dexpr(feat)) as k:
            xv = cast(access("X", x_index(b, k)), xt.dtype, acc_t)
            kb.reduce(access("gx", [q, b, j]), "+=", w("Wih", q, j, k, w_ih) * xv)
        with kb.loop("k", 0, hidden) as k:
            hv = cast(access("H", [b, k]), vtype(h).dtype, acc_t)
            kb.reduce(access("gh" if split else "gx", [q, b, j]), "+=", w("Whh", q, j, k, w_hh) * hv)
    with kb.loop("b", 0, dexpr(batch)) as b, kb.loop("j", 0, hidden) as j:
        def g(name: str, k: int) -> Expr:
            return access(name, [IntLit(k), b, j])

        hprev = cast(access("H", [b, j]), vtype(h).dtype, acc_t)
        if kind == "lstm":
            assert c is not None
            cprev = cast(access("C", [b, j]), vtype(c).dtype, acc_t)
            cnew = fcall("sigmoid", g("gx", 1)) * cprev + fcall("sigmoid", g("gx", 0)) * fcall("tanh", g("gx", 2))
            kb.assign(access("CN", [b, j]), cast(cnew, acc_t, out_dtype))
            cn = cast(access("CN", [b, j]), out_dtype, acc_t)
            kb.assign(access("HN", [b, j]), cast(fcall("sigmoid", g("gx", 3)) * fcall("tanh", cn), acc_t, out_dtype))
        elif kind == "gru":
            r = fcall("sigmoid", g("gx", 0) + g("gh", 0))
            kb.assign(access("z", [b, j]), fcall("sigmoid", g("gx", 1) + g("gh", 1)))
            z = access("z", [b, j])
            cand = fcall("tanh", g("gx", 2) + r * g("gh", 2))
            kb.assign(access("HN", [b, j]), cast((lit(1, acc_t) - z) * cand + z * hprev, acc_t, out_dtype))
        else:
            kb.assign(access("HN", [b, j]), cast(_act(kind, g("gx", 0), acc_t), acc_t, out_dtype))
    return list(kb.results)


def _entries(shape: Sequence[Dim], first: Expr | None) -> list[SliceEntry]:
    out = [SliceEntry(start=IntLit(0), stop=dexpr(d)) for d in shape]
    if first is not None:
        out[0] = SliceEntry(index=first)
    return out


def recurrent(n: TorchNode, kind: str) -> list[Value]:
    x = n.tensor("input") if "input" in n.args else n.tensor("data")
    hx = n.args["hx"]
    hx_list = list(hx) if isinstance(hx, list | tuple) else [hx]
    params: list[Value] = list(n["params"])
    has_biases = bool(n["has_biases"])
    layers = int(n["num_layers"])
    bidir = bool(n["bidirectional"])
    batch_first = bool(n.get("batch_first", False))
    if n.get("train", False) and n.get("dropout", 0.0):
        raise n.unsupported("dropout between recurrent layers in training mode")
    dirs = 2 if bidir else 1
    per = (4 if has_biases else 2)
    if len(params) != layers * dirs * per:
        raise n.unsupported("recurrent layers with projections (proj_size) are not supported")
    em = n.em
    xt = vtype(x)
    out_dtype = n.out.dtype
    unbatched = xt.rank == 2
    if unbatched:
        x = em.reshape(x, (xt.shape[0], 1, xt.shape[1]))
        hx_list = [em.reshape(h, (vtype(h).shape[0], 1, vtype(h).shape[1])) for h in hx_list]
        batch_first = False
    xt = vtype(x)
    steps, batch = (xt.shape[1], xt.shape[0]) if batch_first else (xt.shape[0], xt.shape[1])
    hidden = vtype(hx_list[0]).shape[-1]
    if not isinstance(hidden, int):
        raise LoweringError("symbolic hidden size")
    layer_in = x
    in_batch_first = batch_first
    finals_h: list[Value] = []
    finals_c: list[Value] = []
    for layer in range(layers):
        dir_outs = []
        for d in range(dirs):
            k = layer * dirs + d
            w = params[k * per: (k + 1) * per]
            w_ih, w_hh = w[0], w[1]
            b_ih, b_hh = (w[2], w[3]) if has_biases else (None, None)
            h0 = em.slice(hx_list[0], _entries(vtype(hx_list[0]).shape, IntLit(k)), (batch, hidden))
            c0 = em.slice(hx_list[1], _entries(vtype(hx_list[1]).shape, IntLit(k)), (batch, hidden)) \
                if kind == "lstm" else None
            ys0 = em.constant(0, (steps, batch, hidden), out_dtype)
            inits = [h0] + ([c0] if c0 is not None else []) + [ys0]
            var = em.symbol(f"t{layer}{d}").replace(".", "_")
            # The sequence length may be a size parameter: the trip count and the backward index `T − 1 − %t`
            # are affine in it.
            with em.block.for_(var, 0, dexpr(steps), inits, hint="rnn") as region:
                t = IndexRef(var)
                last = IntLit(steps - 1) if isinstance(steps, int) else Binary("-", steps, IntLit(1))
                tt: Expr = t if d == 0 else Binary("-", last, t)
                inner = em.inner(region, [*em.for_vars, var])
                bf = in_batch_first

                def x_index(b: Expr, kk: Expr, tt: Expr = tt, bf: bool = bf) -> list[Expr]:
                    return [b, tt, kk] if bf else [tt, b, kk]

                state_h = region.args[0]
                state_c = region.args[1] if kind == "lstm" else None
                new = cell(inner, kind, layer_in, state_h, state_c, w_ih, w_hh, b_ih, b_hh, x_index, batch, hidden,
                           out_dtype)
                seq = region.args[-1]
                seq2 = inner.insert(new[0], seq, _entries((steps, batch, hidden), tt))
                region.yield_(*new, seq2)
            for op in [em.block.ops[-1]]:
                em.stamp(op)
            res = region.results
            finals_h.append(res[0])
            if kind == "lstm":
                finals_c.append(res[1])
            dir_outs.append(res[-1])
        layer_in = em.concat(dir_outs, 2)
        in_batch_first = False
    out = layer_in
    if batch_first:
        out = em.permute(out, [1, 0, 2])
    if unbatched:
        out = em.reshape(out, n.outs[0].shape)  # type: ignore[union-attr]

    def stack(vals: list[Value]) -> Value:
        parts = [em.reshape(v, (1, batch, hidden)) for v in vals]
        y = em.concat(parts, 0)
        return em.reshape(y, (len(vals), hidden)) if unbatched else y

    results = [out, stack(finals_h)]
    if kind == "lstm":
        results.append(stack(finals_c))
    return results


@torch_op("lstm")
def lower_lstm(n: TorchNode) -> list[Value]:
    if n.overload != "input":
        raise n.unsupported("packed sequences")
    return recurrent(n, "lstm")


@torch_op("gru")
def lower_gru(n: TorchNode) -> list[Value]:
    if n.overload != "input":
        raise n.unsupported("packed sequences")
    return recurrent(n, "gru")


@torch_op("rnn_tanh", "rnn_relu")
def lower_rnn(n: TorchNode) -> list[Value]:
    if n.overload != "input":
        raise n.unsupported("packed sequences")
    return recurrent(n, n.op.split("::")[1])


def _cell_op(n: TorchNode, kind: str) -> list[Value]:
    x = n.tensor("input")
    hx = n.args["hx"]
    hs = list(hx) if isinstance(hx, list | tuple) else [hx]
    xt = vtype(x)
    em = n.em
    unbatched = xt.rank == 1
    if unbatched:
        x = em.reshape(x, (1, xt.shape[0]))
        hs = [em.reshape(h, (1, vtype(h).shape[0])) for h in hs]
    batch = vtype(x).shape[0]
    hidden = vtype(hs[0]).shape[-1]
    if not isinstance(hidden, int):
        raise LoweringError("symbolic hidden size")
    b_ih, b_hh = n.args.get("b_ih"), n.args.get("b_hh")
    out = cell(em, kind, x, hs[0], hs[1] if kind == "lstm" else None, n.tensor("w_ih"), n.tensor("w_hh"),
               b_ih if isinstance(b_ih, Value) else None, b_hh if isinstance(b_hh, Value) else None,
               lambda b, k: [b, k], batch, hidden, n.out.dtype)
    if unbatched:
        out = [em.reshape(v, (hidden,)) for v in out]
    return out


@torch_op("lstm_cell")
def lower_lstm_cell(n: TorchNode) -> list[Value]:
    return _cell_op(n, "lstm")


@torch_op("gru_cell")
def lower_gru_cell(n: TorchNode) -> Value:
    return _cell_op(n, "gru")[0]


@torch_op("rnn_tanh_cell", "rnn_relu_cell")
def lower_rnn_cell(n: TorchNode) -> Value:
    return _cell_op(n, n.op.split("::")[1].removesuffix("_cell"))[0]
