"""The JAX frontend: primitives through the table, closed-over constants, scan, unsupported primitives."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from solar.frontends.diagnostics import SourceError, TranslationError  # noqa: E402
from solar.frontends.jax_export import jax_reference, translate_jax  # noqa: E402
from solar.frontends.lowering import JAX_LOWERINGS  # noqa: E402
from solar.frontends.validate import validate  # noqa: E402
from solar.ir.ops import ForOp  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "frontend_corpus"))
import harness  # noqa: E402

CASES = os.path.join(os.path.dirname(__file__), "..", "frontend_corpus", "cases")


def test_table_has_the_issue_primitives() -> None:
    for prim in ("dot_general", "conv_general_dilated", "reduce_sum", "reduce_max", "argmax", "add", "exp",
                 "broadcast_in_dim", "reshape", "transpose", "select_n", "cumsum", "gather"):
        assert prim in JAX_LOWERINGS, prim


def test_unsupported_primitives_reported_together() -> None:
    mod = harness.load_module(os.path.join(CASES, "jax_unsupported.py"))
    with pytest.raises(TranslationError) as info:
        translate_jax(mod.forward, mod.get_inputs(), "bad")
    assert info.value.ops == ["erf_inv", "while"]
    text = info.value.format()
    assert "jax_unsupported.py:8:" in text and "jax_unsupported.py:9:" in text
    assert "give it a static bound, e.g. jax.lax.fori_loop(0, N, body, init) with a Python int N" in text


def test_a_loop_with_a_static_bound_is_lowered() -> None:
    import jax

    def f(x):  # type: ignore[no-untyped-def]
        return jax.lax.fori_loop(0, 3, lambda i, acc: acc * 2.0 + 1.0, x)

    x = np.ones((2, 3), np.float32)
    tr = translate_jax(f, [x], "loop")
    assert validate(tr.module, jax_reference(f, [x], tr), {}).ok


def test_closed_over_constants_become_arguments() -> None:
    table = np.arange(12, dtype=np.float32).reshape(3, 4)

    def fn(x):
        return x @ jnp.asarray(table).T + 1.0

    x = jnp.ones((2, 4), jnp.float32)
    tr = translate_jax(fn, [x], "closure")
    assert len(tr.module.entry.args) == 1 + len(tr.consts)
    report = validate(tr.module, jax_reference(fn, [x], tr), {})
    assert report.ok, report.summary()


def test_reverse_scan_becomes_solar_for() -> None:
    def fn(xs):
        return jax.lax.scan(lambda c, x: (c * 0.5 + x, c), jnp.zeros(3), xs, reverse=True)

    xs = jnp.asarray(np.random.default_rng(0).standard_normal((6, 3)), jnp.float32)
    tr = translate_jax(fn, [xs], "rev")
    assert any(isinstance(op, ForOp) for op in tr.module.funcs[0].walk())
    report = validate(tr.module, jax_reference(fn, [xs], tr), {})
    assert report.ok, report.summary()


def test_a_program_that_fails_under_tracing_is_the_programs_error() -> None:
    # numpy allows axis 0 of a 0-d array, JAX does not: the program fails at its own shapes (found by
    # tests/unit/test_frontend_fuzz.py), which is its error at its line, not an internal one.
    def forward(x):
        return jnp.sum(x, axis=0).sum(axis=0)

    with pytest.raises(SourceError) as err:
        translate_jax(forward, [np.ones((1,), np.float32)], "fails", dynamic="all")
    assert "the program raised ValueError while tracing it with jax.make_jaxpr: axis 0 is out of bounds" \
        in err.value.message
    assert err.value.where is not None and err.value.where.code.strip() == "return jnp.sum(x, axis=0).sum(axis=0)"
