"""Fuzzing the frontends with random small graphs (issue 28, item 3): chains of framework ops over random
shapes, exported and lowered with every choice of symbolic dims. A translation may succeed or refuse with a
located diagnostic; it must never end in an internal error (a lowering's crash, IR that does not verify)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))

from surface_fuzz import examples

torch = pytest.importorskip("torch")
F = torch.nn.functional

from solar.frontends.diagnostics import SourceError, TranslationError  # noqa: E402
from solar.frontends.lowering.core import LoweringError  # noqa: E402
from solar.frontends.torch_export import callable_problem, translate_problem  # noqa: E402

Step = tuple[str, int, int, int]  # (op, first operand, second operand, an integer parameter)


def _dim(x: Any, k: int) -> int:
    return k % max(x.dim(), 1)


# Each op takes two earlier values and a parameter; unary ones ignore the second value.
TORCH_OPS: dict[str, Callable[[Any, Any, int], Any]] = {
    "relu": lambda a, b, k: torch.relu(a),
    "exp": lambda a, b, k: torch.exp(a),
    "tanh": lambda a, b, k: torch.tanh(a),
    "sigmoid": lambda a, b, k: torch.sigmoid(a),
    "abs_sqrt": lambda a, b, k: torch.sqrt(a.abs()),
    "neg": lambda a, b, k: -a,
    "add": lambda a, b, k: a + b,
    "mul": lambda a, b, k: a * b,
    "maximum": lambda a, b, k: torch.maximum(a, b),
    "where": lambda a, b, k: torch.where(a > 0, a, b),
    "div": lambda a, b, k: a / (b.abs() + 1),
    "scale": lambda a, b, k: a * (k + 0.5),
    "sum": lambda a, b, k: a.sum(dim=_dim(a, k)),
    "mean_keep": lambda a, b, k: a.mean(dim=_dim(a, k), keepdim=True),
    "amax": lambda a, b, k: a.amax(dim=_dim(a, k)),
    "sum_all": lambda a, b, k: a.sum(),
    "softmax": lambda a, b, k: torch.softmax(a, dim=_dim(a, k)),
    "cumsum": lambda a, b, k: torch.cumsum(a, dim=_dim(a, k)),
    "flip": lambda a, b, k: torch.flip(a, dims=[_dim(a, k)]),
    "transpose": lambda a, b, k: a.transpose(0, -1),
    "flatten": lambda a, b, k: a.flatten(),
    "unsqueeze": lambda a, b, k: a.unsqueeze(_dim(a, k)),
    "pad": lambda a, b, k: F.pad(a, (k % 2, 1)),
    "cat": lambda a, b, k: torch.cat([a, a], dim=_dim(a, k)),
    "narrow": lambda a, b, k: a.narrow(_dim(a, k), 0, 1),
    "gram": lambda a, b, k: a @ a.transpose(-1, -2),
    "linear": lambda a, b, k: F.linear(a, torch.ones(k % 3 + 1, a.shape[-1])),
    "max_pool": lambda a, b, k: F.max_pool1d(a, 2) if a.dim() in (2, 3) else F.max_pool2d(a, 2),
}

_SHAPES = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)
_STEPS = st.lists(st.tuples(st.sampled_from(sorted(TORCH_OPS)), st.integers(0, 7), st.integers(0, 7),
                            st.integers(0, 5)), min_size=1, max_size=4)


def resolve(steps: list[Step], inputs: list[Any]) -> list[Step]:
    """The steps that run eagerly at these shapes (a second operand that does not broadcast is replaced by
    the first; an op that fails is dropped), so the exported program is always a valid one."""
    values = list(inputs)
    kept: list[Step] = []
    for op, i, j, k in steps:
        a = values[i % len(values)]
        for second in (j, i):
            try:
                out = TORCH_OPS[op](a, values[second % len(values)], k)
            except (RuntimeError, IndexError, ValueError):
                continue
            if out.numel() == 0:  # SIR sizes are positive
                break
            values.append(out)
            kept.append((op, i, second, k))
            break
    return kept


def replay(steps: list[Step]) -> Callable[..., Any]:
    def program(*xs: Any) -> Any:
        values = list(xs)
        for op, i, j, k in steps:
            values.append(TORCH_OPS[op](values[i % len(values)], values[j % len(values)], k))
        return values[-1]

    return program


def assert_no_internal_error(run: Callable[[], Any]) -> None:
    try:
        run()
    except (TranslationError, SourceError, LoweringError) as err:
        assert "internal error" not in str(err), str(err)


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_SHAPES, min_size=1, max_size=2), _STEPS, st.sampled_from(["none", "batch", "all"]))
def test_torch_frontend_never_fails_internally(shapes: list[tuple[int, ...]], steps: list[Step], dynamic: str
                                               ) -> None:
    torch.manual_seed(0)
    inputs = [torch.randn(*s) for s in shapes]
    program = replay(resolve(steps, inputs))
    assert_no_internal_error(lambda: translate_problem(callable_problem(program, inputs, "fuzz"), dynamic))


JAX_OPS: dict[str, Callable[[Any, Any, int], Any]] = {}


def _jax_ops() -> dict[str, Callable[[Any, Any, int], Any]]:
    import jax
    import jax.numpy as jnp

    def axis(x: Any, k: int) -> int:
        return k % max(x.ndim, 1)

    return {
        "relu": lambda a, b, k: jax.nn.relu(a),
        "exp": lambda a, b, k: jnp.exp(a),
        "tanh": lambda a, b, k: jnp.tanh(a),
        "add": lambda a, b, k: a + b,
        "mul": lambda a, b, k: a * b,
        "where": lambda a, b, k: jnp.where(a > 0, a, b),
        "sum": lambda a, b, k: a.sum(axis=axis(a, k)),
        "max": lambda a, b, k: a.max(axis=axis(a, k)),
        "softmax": lambda a, b, k: jax.nn.softmax(a, axis=axis(a, k)),
        "cumsum": lambda a, b, k: jnp.cumsum(a, axis=axis(a, k)),
        "transpose": lambda a, b, k: a.T,
        "reshape": lambda a, b, k: a.reshape(-1),
        "pad": lambda a, b, k: jnp.pad(a, [(k % 2, 1)] * a.ndim),
        "concat": lambda a, b, k: jnp.concatenate([a, a], axis=axis(a, k)),
        "gram": lambda a, b, k: a @ a.T if a.ndim == 2 else a * a,
        "scale": lambda a, b, k: a * (k + 0.5),
    }


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_SHAPES, min_size=1, max_size=2), st.lists(st.tuples(st.integers(0, 15), st.integers(0, 7),
                                                                     st.integers(0, 7), st.integers(0, 5)),
                                                           min_size=1, max_size=4))
def test_jax_frontend_never_fails_internally(shapes: list[tuple[int, ...]], picks: list[tuple[int, int, int, int]]
                                             ) -> None:
    np = pytest.importorskip("numpy")
    pytest.importorskip("jax")
    from solar.frontends.jax_export import translate_jax

    if not JAX_OPS:
        JAX_OPS.update(_jax_ops())
    names = sorted(JAX_OPS)
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    values: list[Any] = list(inputs)
    steps: list[tuple[str, int, int, int]] = []
    for p, i, j, k in picks:  # keep the steps that run at these shapes, as `resolve` does
        op = names[p % len(names)]
        for second in (j, i):
            try:
                out = np.asarray(JAX_OPS[op](values[i % len(values)], values[second % len(values)], k))
            except (TypeError, ValueError):
                continue
            if out.size:
                values.append(out)
                steps.append((op, i, second, k))
            break

    def program(*xs: Any) -> Any:
        vals = list(xs)
        for op, i, j, k in steps:
            vals.append(JAX_OPS[op](vals[i % len(vals)], vals[j % len(vals)], k))
        return vals[-1]

    assert_no_internal_error(lambda: translate_jax(program, inputs, "fuzz"))
