"""Every program in examples/ runs through the backend and matches a NumPy reference computed here.

Inputs are the seeded random inputs `solar-run --random-inputs` uses; references are computed in f64 (with the
roundings the IR specifies for bf16), and compared with the output dtype's tolerance
(`solar.backends.dtypes.TOLERANCES`). A new example needs a reference here: the test says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from solar.backends.dtypes import default_tolerance
from solar.backends.executor import prepare
from solar.backends.inputs import compare, random_inputs
from solar.ir import load

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO_ROOT / "examples").glob("*.sir"))

Arrays = dict[str, np.ndarray]
Reference = Callable[[Arrays], list[np.ndarray]]


def f64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).astype(np.float64)


def bf16(a: np.ndarray) -> np.ndarray:
    """Round to bf16 the way a store does (f32 first, then nearest-even), back in f64."""
    return np.asarray(a, dtype=np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def causal(scores: np.ndarray) -> np.ndarray:
    n = scores.shape[-1]
    mask = np.tril(np.ones((n, n), dtype=bool))
    return np.where(mask, scores, -np.inf)


def ref_matmul(a: Arrays) -> list[np.ndarray]:
    return [f64(a["a"]) @ f64(a["b"])]


def ref_mlp(a: Arrays) -> list[np.ndarray]:
    h = np.maximum(f64(a["x"]) @ f64(a["w1"]).T + f64(a["b1"]), 0.0)
    return [h @ f64(a["w2"]).T]


def ref_bmm_bf16(a: Arrays) -> list[np.ndarray]:
    return [bf16(np.matmul(f64(a["a"]), f64(a["b"])))]


def ref_conv2d(a: Arrays) -> list[np.ndarray]:
    # stride 2, padding 1, dilation 2
    x, w, b = f64(a["x"]), f64(a["w"]), f64(a["b"])
    n, _, h, wd = x.shape
    k, _, r, s = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    p = (h + 2 - 2 * (r - 1) - 1) // 2 + 1
    q = (wd + 2 - 2 * (s - 1) - 1) // 2 + 1
    out = np.broadcast_to(b[None, :, None, None], (n, k, p, q)).copy()
    for i in range(r):
        for j in range(s):
            patch = xp[:, :, 2 * i: 2 * i + 2 * p: 2, 2 * j: 2 * j + 2 * q: 2]
            out += np.einsum("nchw,kc->nkhw", patch, w[:, :, i, j])
    return [out]


def ref_softmax(a: Arrays) -> list[np.ndarray]:
    return [softmax(f64(a["x"]))]


def ref_layernorm(a: Arrays) -> list[np.ndarray]:
    x = f64(a["x"])
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return [(x - mean) / np.sqrt(var + 1e-5) * f64(a["gamma"]) + f64(a["beta"])]


def ref_rmsnorm(a: Arrays) -> list[np.ndarray]:
    x = f64(a["x"])
    inv = 1.0 / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6)
    return [bf16(bf16(x * inv) * f64(a["w"]))]


def ref_causal_attention(a: Arrays) -> list[np.ndarray]:
    q, k, v = f64(a["q"]), f64(a["k"]), f64(a["v"])
    p = softmax(causal(q @ np.swapaxes(k, -1, -2) * 0.125))
    return [p @ v]


def ref_lifted_attention(a: Arrays) -> list[np.ndarray]:
    return [ref_causal_attention(a)[0]]


def ref_mlp_heads(a: Arrays) -> list[np.ndarray]:
    x = f64(a["x"])
    h = x @ f64(a["w1"]).T + f64(a["b1"])
    g = 0.5 * h * (1.0 + np.vectorize(math.erf)(h / math.sqrt(2.0)))
    heads = g.reshape(2, 64, 4, 64).transpose(0, 2, 1, 3)
    z = np.einsum("bnsd,ned->bnse", heads, f64(a["wh"]))
    return [x + z.transpose(0, 2, 1, 3).reshape(2, 64, 256)]


def ref_rnn(a: Arrays) -> list[np.ndarray]:
    xs, h = f64(a["xs"]), f64(a["h0"])
    wx, wh, bx, bh = f64(a["wx"]), f64(a["wh"]), f64(a["bx"]), f64(a["bh"])
    ys = []
    for t in range(xs.shape[0]):
        gx = np.einsum("gjk,bk->gbj", wx, xs[t]) + bx[:, None, :]
        gh = np.einsum("gjk,bk->gbj", wh, h) + bh[:, None, :]
        r, z = sigmoid(gx[0] + gh[0]), sigmoid(gx[1] + gh[1])
        n = np.tanh(gx[2] + r * gh[2])
        h = (1 - z) * n + z * h
        ys.append(h)
    return [np.stack(ys), h]


def ref_embedding(a: Arrays) -> list[np.ndarray]:
    e = f64(a["table"])[a["ids"]] + f64(a["pos"])[None]
    return [e.mean(axis=1)]


def ref_params(a: Arrays) -> list[np.ndarray]:
    x, w13, w2 = f64(a["x"]), f64(a["w13"]), f64(a["w2"])
    h = x @ w13.T
    ff = w2.shape[1]
    g, u = h[:, :ff], h[:, ff:]
    act = bf16(g * sigmoid(g) * u)
    return [bf16(act @ w2.T)]


def scaled_rnn_weights(a: Arrays) -> Arrays:
    # Unit-normal recurrent weights make a 64-wide GRU chaotic: rounding differences grow ~1.5x per step and
    # no two summation orders agree after 16 steps. PyTorch's init scale (1/sqrt(fan_in)) keeps it stable.
    out = dict(a)
    for name in ("wx", "wh"):
        out[name] = (a[name] / np.sqrt(a[name].shape[-1])).astype(a[name].dtype)
    return out


# Inputs adjusted before running, for examples whose random inputs need it.
ADJUST: dict[str, Callable[[Arrays], Arrays]] = {"rnn": scaled_rnn_weights}

# example name → (size parameters to bind, reference)
REFERENCES: dict[str, tuple[dict[str, int], Reference]] = {
    "matmul": ({}, ref_matmul),
    "mlp": ({"B": 16}, ref_mlp),
    "bmm_bf16": ({}, ref_bmm_bf16),
    "conv2d": ({}, ref_conv2d),
    "softmax": ({}, ref_softmax),
    "layernorm": ({}, ref_layernorm),
    "rmsnorm": ({}, ref_rmsnorm),
    "causal_attention": ({}, ref_causal_attention),
    "lifted_attention": ({}, ref_lifted_attention),
    "mlp_heads": ({}, ref_mlp_heads),
    "rnn": ({}, ref_rnn),
    "embedding": ({}, ref_embedding),
    # Validated small, as the example's comment says; the defaults are the analysis sizes.
    "params": ({"S": 32, "D": 64, "FF": 48}, ref_params),
}


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_matches_reference(path: Path) -> None:
    if path.stem not in REFERENCES:
        pytest.fail(f"examples/{path.name} has no NumPy reference in {Path(__file__).name}: add one to REFERENCES")
    params, reference = REFERENCES[path.stem]
    program = prepare(load(str(path)), params)
    inputs = random_inputs(program, seed=1)
    inputs = ADJUST.get(path.stem, lambda a: a)(inputs)
    outputs = program(inputs)
    expected = reference(inputs)
    assert len(outputs) == len(expected)
    for k, (out, ref, t) in enumerate(zip(outputs, expected, program.result_types, strict=True)):
        # The absolute tolerance is relative to the output's scale: a sum of K unit-normal products has
        # magnitude ~sqrt(K), and its rounding error grows with it, not with each element.
        tol = default_tolerance(t.dtype)
        scale = max(1.0, float(np.abs(ref).max()))
        result = compare(f"out{k}", out, ref, t.dtype, tol.rtol, tol.atol * scale)
        assert result.ok, (f"{path.name} out{k}: {result.mismatched} of {result.size} elements differ; max abs "
                           f"{result.max_abs:.3g}, max rel {result.max_rel:.3g} (tolerance {result.tolerance})")


# Examples small enough to run as plain Python (backends/python_kernels.py), as validation runs reduced IR.
SMALL = [p for p in EXAMPLES if p.stem in ("embedding", "layernorm", "params", "rnn", "softmax")]


@pytest.mark.parametrize("path", SMALL, ids=[p.stem for p in SMALL])
def test_small_example_matches_reference_run_as_python(path: Path) -> None:
    params, reference = REFERENCES[path.stem]
    program = prepare(load(str(path)), params, interpret_limit=1e6)
    inputs = ADJUST.get(path.stem, lambda a: a)(random_inputs(program, seed=1))
    outputs = program(inputs)
    assert program._kernels and all(k.interpreted for k in program._kernels.values())
    for k, (out, ref, t) in enumerate(zip(outputs, reference(inputs), program.result_types, strict=True)):
        tol = default_tolerance(t.dtype)
        result = compare(f"out{k}", out, ref, t.dtype, tol.rtol, tol.atol * max(1.0, float(np.abs(ref).max())))
        assert result.ok, f"{path.name} out{k}: max abs {result.max_abs:.3g}, max rel {result.max_rel:.3g}"


_SHRINK = {"8x128x256": "2x8x16", "8x256x64": "2x16x4", "8x128x64": "2x8x4", "0 to 8 ": "0 to 2 ",
           "0 to 128": "0 to 8", "0 to 64": "0 to 4", "0 to 256": "0 to 16"}
BF16_SMALL = (REPO_ROOT / "examples" / "bmm_bf16.sir").read_text()
for _big, _small in _SHRINK.items():
    BF16_SMALL = BF16_SMALL.replace(_big, _small)


def test_python_and_numba_round_bf16_alike() -> None:
    """The narrow-format rounding helpers (runtime.py) give the same bits interpreted as compiled."""
    from solar.ir import parse_and_verify

    module = parse_and_verify(BF16_SMALL)
    compiled, interpreted = prepare(module), prepare(module, interpret_limit=1e6)
    inputs = random_inputs(compiled, seed=3)
    want, got = compiled(inputs)[0], interpreted(inputs)[0]
    assert all(k.interpreted for k in interpreted._kernels.values())
    assert got.dtype == want.dtype == ml_dtypes.bfloat16
    # Sums of 16 terms in loop order against Numba's reassociated ones: at most one bf16 ulp apart.
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2 ** -7, atol=1e-6)
