"""JAX sizes as size parameters (frontends/jax_dims.py): one parameter per size that must be equal in every
run, named after the source; a dim that cannot be symbolic is fixed alone and the header says why; the
symbolic counts equal those of the program traced at each point."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solar.backends.cost import CostModel, Peaks
from solar.backends.report import analyse
from solar.backends.sweep import CostSurface
from solar.frontends.jax_dims import met_shapes, sir_dim
from solar.frontends.lowering.core import LoweringError
from solar.frontends.torch_export import import_file
from solar.ir.diagnostics import DiagnosticEngine
from solar.ir.ops import ModuleOp
from solar.ir.pass_manager import PassContext
from solar.ir.printer import print_module
from solar.passes.fuse import Fuse
from solar.passes.lift_einsum import LiftEinsum
from solar.targets.loader import load_target

jax = pytest.importorskip("jax")
from solar.frontends.jax_export import JaxTranslation, translate_jax, validate_jax  # noqa: E402

MLP = '''
import jax
import jax.numpy as jnp
import numpy as np

batch_size = 8
in_features = 16
hidden = 32
out_features = 4


def forward(x, w1, b1, w2):
    return jax.nn.relu(x @ w1 + b1) @ w2


def get_inputs():
    r = np.random.default_rng(0)
    shapes = [(batch_size, in_features), (in_features, hidden), (hidden,), (hidden, out_features)]
    return [jnp.asarray(r.standard_normal(s), jnp.float32) for s in shapes]
'''

# Queries, keys and values share the batch and the sequence with a padding mask; the head size differs.
ATTENTION = '''
import jax
import jax.numpy as jnp
import numpy as np

batch_size = 2
seq = 6
head = 8


def forward(q, k, v, mask):
    s = jnp.einsum("bid,bjd->bij", q, k) / np.sqrt(head).astype(np.float32)
    p = jax.nn.softmax(jnp.where(mask, s, -1e9), axis=-1)
    return jnp.einsum("bij,bjd->bid", p, v)


def get_inputs():
    r = np.random.default_rng(1)
    qkv = [jnp.asarray(r.standard_normal((batch_size, seq, head)), jnp.float32) for _ in range(3)]
    return qkv + [jnp.asarray(r.random((batch_size, seq, seq)) > 0.3)]
'''


def _load(tmp_path: Path, name: str, text: str) -> Any:
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return import_file(str(path), f"_jax_dims_{name}")


def _translate(mod: Any, dynamic: str = "all", inputs: list[Any] | None = None) -> JaxTranslation:
    return translate_jax(mod.forward, inputs if inputs is not None else mod.get_inputs(), "f", dynamic)


def test_an_mlp_has_one_parameter_per_global(tmp_path: Path) -> None:
    tr = _translate(_load(tmp_path, "mlp", MLP))
    assert tr.params == {"BATCH": 8, "IN_FEATURES": 16, "HIDDEN": 32, "OUT_FEATURES": 4}
    assert tr.param_dims == {"BATCH": [(0, 0)], "IN_FEATURES": [(0, 1), (1, 0)],
                             "HIDDEN": [(1, 1), (2, 0), (3, 0)], "OUT_FEATURES": [(3, 1)]}
    assert tr.input_names == ["x", "w1", "b1", "w2"] and not tr.fixed_dims
    text = print_module(tr.module)
    assert "[BATCH = 8, IN_FEATURES = 16, HIDDEN = 32, OUT_FEATURES = 4]" in text
    assert "%arg0: tensor<BATCHxIN_FEATURESxf32>" in text


def test_attention_shares_batch_and_sequence_across_inputs(tmp_path: Path) -> None:
    mod = _load(tmp_path, "attention", ATTENTION)
    tr = _translate(mod)
    assert tr.params == {"BATCH": 2, "SEQ": 6, "HEAD": 8}
    assert tr.param_dims["BATCH"] == [(0, 0), (1, 0), (2, 0), (3, 0)]
    assert tr.param_dims["SEQ"] == [(0, 1), (1, 1), (2, 1), (3, 1), (3, 2)]
    report = validate_jax(mod.forward, mod.get_inputs(), tr, size=3)
    assert report.ok, report.summary()
    assert report.sizes == {"BATCH": 2, "SEQ": 3, "HEAD": 3}
    assert report.details[0] == ("reduced dims: SEQ 6 -> 3 (q dim 1, k dim 1, v dim 1, mask dim 1, mask dim 2); "
                                 "HEAD 8 -> 3 (q dim 2, k dim 2, v dim 2)")


SQUARE = '''
import jax
import jax.numpy as jnp
import numpy as np


def forward(x, w1, b1, w2):
    return jax.nn.relu(x @ w1 + b1) @ w2


def get_inputs():
    r = np.random.default_rng(0)
    return [jnp.asarray(r.standard_normal(s), jnp.float32) for s in [(16, 16), (16, 16), (16,), (16, 16)]]
'''

CAUSAL = '''
import jax
import jax.numpy as jnp
import numpy as np

batch_size = 2
seq = 6
head = 8


def forward(q, k, v):
    s = jnp.einsum("bid,bjd->bij", q, k)
    p = jax.nn.softmax(jnp.where(jnp.tril(jnp.ones((seq, seq), bool)), s, -1e9), axis=-1)
    return jnp.einsum("bij,bjd->bid", p, v)


def get_inputs():
    r = np.random.default_rng(2)
    return [jnp.asarray(r.standard_normal((batch_size, seq, head)), jnp.float32) for _ in range(3)]
'''


def test_without_globals_only_the_equalities_the_program_needs_join_dims(tmp_path: Path) -> None:
    """Every dim is 16 and no global names it: each starts as its own symbol, and JAX's refusals join those
    that must be equal. The batch and the output width are free; the contracted widths are one each."""
    mod = _load(tmp_path, "square", SQUARE)
    tr = _translate(mod)
    assert tr.param_dims == {"BATCH": [(0, 0)], "X_1": [(0, 1), (1, 0)], "W1_1": [(1, 1), (2, 0), (3, 0)],
                             "W2_1": [(3, 1)]}
    assert validate_jax(mod.forward, mod.get_inputs(), tr, size=2).ok


def test_a_dim_that_cannot_be_symbolic_is_fixed_alone_and_said(tmp_path: Path) -> None:
    """A causal mask built at the global size: the sequence stays fixed; the batch and head still vary."""
    mod = _load(tmp_path, "causal", CAUSAL)
    tr = _translate(mod)
    assert tr.params == {"BATCH": 2, "HEAD": 8}
    assert [line.split(": ", 1)[0] for line in tr.fixed_dims] == ["q dim 1 (6)", "k dim 1 (6)", "v dim 1 (6)"]
    line = CAUSAL.splitlines().index(next(t for t in CAUSAL.splitlines() if "jnp.where" in t)) + 1
    assert tr.fixed_dims[0] == f"q dim 1 (6): it meets an array of fixed size at causal.py:{line} (one built at a " \
        "constant size)"
    assert validate_jax(mod.forward, mod.get_inputs(), tr, size=2).ok


FIXED_BY_THE_PROGRAM = '''
import numpy as np


def compared(x):
    if x.shape[1] > 4:
        return x * 2
    return x


def host_array(x):
    return x + np.zeros(x.shape, np.float32)
'''


def test_why_a_dim_is_fixed_is_said_in_solars_words_at_the_programs_line(tmp_path: Path) -> None:
    """Never JAX's message (it quotes tracers and abstract values): the kind of failure and the line."""
    mod = _load(tmp_path, "fixed_by", FIXED_BY_THE_PROGRAM)
    x = np.ones((6, 8), np.float32)
    compared = translate_jax(mod.compared, [x], "compared", "all")
    assert compared.params == {"BATCH": 6}
    assert compared.fixed_dims == ["x dim 1 (8): the program needs its size as a constant at fixed_by.py:6 (a shape "
                                   "tested in Python, a reshape to a constant shape, or an array built at a fixed "
                                   "size)"]
    host = translate_jax(mod.host_array, [x], "host_array", "all")
    assert host.params == {}
    assert host.fixed_dims == ["x dim 0 (6): tracing failed with it symbolic at fixed_by.py:12",
                               "x dim 1 (8): tracing failed with it symbolic at fixed_by.py:12"]


def test_a_failure_is_named_by_its_kind_never_by_its_text() -> None:
    from solar.frontends.diagnostics import Problem, TranslationError
    from solar.frontends.jax_dims import failure_cause

    assert failure_cause(ValueError("Incompatible shapes: (BATCH, 6)")) == "tracing with symbolic sizes failed"
    assert failure_cause(TranslationError([Problem("sort", "sort: x", None), Problem("gather", "gather: y", None)])
                         ) == "gather, sort cannot be translated with symbolic sizes"


def test_dynamic_batch_and_none(tmp_path: Path) -> None:
    mod = _load(tmp_path, "attention_b", ATTENTION)
    assert _translate(mod, "batch").params == {"BATCH": 2}
    tr = _translate(mod, "none")
    assert tr.params == {} and tr.param_dims == {}


def test_the_shapes_an_error_names_say_which_symbols_met() -> None:
    names = {"A", "B", "C", "D", "E"}
    assert met_shapes("Incompatible shapes for broadcasting: shapes=[(A, B), (C,)]", names) == ([("B", "C")], [])
    assert met_shapes("add got incompatible shapes for broadcasting: (A, B), (6, 6).", names) == ([], ["B", "A"])
    assert met_shapes("dot_general requires contracting dimensions to have the same shape, got (B,) and (C,).",
                      names) == ([("B", "C")], [])
    einsum = "Incompatible reduction dimensions: lhs.shape=(A, D, E) lhs_names=bjd rhs.shape=(A, B, C) rhs_names=bij"
    assert met_shapes(einsum, names) == ([("D", "C")], [])
    concat = ("Cannot concatenate arrays with shapes that differ in dimensions other than the one being "
              "concatenated: concatenating along dimension 0 for shapes (A, B), (C, D).")
    assert met_shapes(concat, names) == ([("B", "D")], [])


def test_a_mean_over_a_symbolic_size_divides_by_its_parameter() -> None:
    def forward(x: Any) -> Any:
        return x.mean(axis=-1)

    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    tr = translate_jax(forward, [x], "mean", "all")
    assert tr.params == {"BATCH": 4, "X_1": 6} and not tr.fixed_dims
    assert "X_1" in print_module(tr.module).split("@reduce_sum", 1)[1]  # the count is the parameter
    report = validate_jax(forward, [x], tr, size=3)
    assert report.ok and report.sizes == {"BATCH": 3, "X_1": 3}


def test_jax_sizes_as_sir_expressions() -> None:
    _, s = jax.export.symbolic_shape("BATCH, SEQ")
    assert str(sir_dim(2 * s - 1)) == "2 * SEQ - 1" and str(sir_dim(s // 2)) == "SEQ floordiv 2"
    assert sir_dim(7) == 7
    with pytest.raises(LoweringError, match="not affine"):
        sir_dim(jax.export.symbolic_shape("max(BATCH, SEQ)")[0])


# ---- the symbolic counts equal the program's at each point ------------------------------------------


TARGETS = [load_target("h100")]


def _prepared(module: ModuleOp) -> ModuleOp:
    module = copy.deepcopy(module)
    ctx = PassContext(DiagnosticEngine(), report=lambda _: None)
    LiftEinsum().apply(ctx, module)
    Fuse().apply(ctx, module)
    return module


def _static_costs(module: ModuleOp) -> dict[str, tuple[int, int]]:
    model = CostModel(module)
    return {mode: (r.flops, r.bytes) for mode, r in analyse(model, Peaks(TARGETS[0]), None).modes.items()}


@pytest.fixture(scope="module")
def attention(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, CostSurface]:
    mod = _load(tmp_path_factory.mktemp("att"), "attention_counts", ATTENTION)
    return mod, CostSurface(_prepared(_translate(mod).module), TARGETS)


@settings(max_examples=6, deadline=None)
@given(batch=st.integers(1, 5), seq=st.integers(1, 9), head=st.integers(1, 7))
def test_symbolic_counts_equal_the_program_traced_at_the_point(attention: tuple[Any, CostSurface], batch: int,
                                                                seq: int, head: int) -> None:
    mod, surface = attention
    r = np.random.default_rng(0)
    inputs = [np.asarray(r.standard_normal((batch, seq, head)), np.float32) for _ in range(3)]
    inputs.append(r.random((batch, seq, seq)) > 0.5)
    static = _static_costs(_prepared(_translate(mod, "none", inputs).module))
    swept = {c.mode: (c.flops, c.bytes) for c in surface.at({"BATCH": batch, "SEQ": seq, "HEAD": head})}
    assert swept == static


# ---- the command line ----------------------------------------------------------------------------------


def test_solar_translate_writes_the_parameters_and_list_params_shows_them(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    from solar.tools import solar_opt, solar_translate

    src = tmp_path / "att_cli.py"
    src.write_text(ATTENTION)
    out = tmp_path / "att.sir"
    assert solar_translate.main(["--framework", "jax", str(src), "-o", str(out)]) == 0
    text = out.read_text()
    assert "// Validation: passed; seed 0; sizes BATCH=2, SEQ=4, HEAD=4" in text
    assert "reduced dims: SEQ 6 -> 4 (q dim 1, k dim 1, v dim 1, mask dim 1, mask dim 2)" in text
    capsys.readouterr()
    assert solar_opt.run([str(out), "--list-params", "-o", "/dev/null"]) == 0
    captured = capsys.readouterr()
    listing = (captured.out + captured.err).splitlines()
    start = listing.index("Size parameters (name, default, where it appears):")
    assert [line.split()[:2] for line in listing[start + 1:start + 4]] == [["BATCH", "2"], ["SEQ", "6"], ["HEAD", "8"]]
    assert "@forward %arg3 dim 1, 2" in listing[start + 2]  # the mask's sequence axes are the same SEQ
    sys.modules.pop("_solar_src_att_cli", None)
