"""Units named by the model's module that made them (torch.export's nn_module_stack, JAX's name stack): the
JSON's `module`, the tables' names, and `Analysis.by_module()` rolling units up the module tree."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import solar

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def gpt() -> solar.Analysis:
    torch = pytest.importorskip("torch")
    sys.path.insert(0, str(DATA))
    try:
        from gpt_block import Block
    finally:
        sys.path.remove(str(DATA))
    return solar.analyze(Block(), (torch.randn(8, 128, 256),))


def test_units_carry_their_module(gpt: solar.Analysis) -> None:
    modules = {u.name: u.module for u in gpt.units}
    assert modules["@layer_norm"] == "ln_1" and modules["@linear"] == "attn.qkv"
    assert modules["@linear_1"] == "attn.proj" and modules["@scaled_dot_product_attention"] == "attn"
    assert modules["@add"] is None  # the residual add is the block's own code
    units = gpt.to_json()["targets"][0]["units"]
    assert [u["module"] for u in units] == [u.module for u in gpt.units]


def test_by_module_rolls_up_the_tree(gpt: solar.Analysis) -> None:
    rows = gpt.by_module()
    by_path = {m.path: m for m in rows}
    assert [m.path for m in rows] == ["", "ln_1", "attn", "attn.qkv", "attn.proj", "ln_2", "fc", "out"]
    root = by_path[""]
    assert root.flops == sum(u.flops for u in gpt.units) and root.units == len(gpt.units)
    assert root.unfused_s == pytest.approx(gpt.total("unfused"))
    assert root.fused_s == pytest.approx(gpt.total("fused"))
    attn = [u for u in gpt.units if (u.module or "").startswith("attn")]
    assert by_path["attn"].bytes == sum(u.bytes for u in attn) and by_path["attn"].units == 3
    assert by_path["attn.qkv"].depth == 2
    # Linear(256 → 768) on 8×128 tokens: 2·1024·256·768 multiply-adds plus the bias.
    assert by_path["attn.qkv"].flops == 2 * 1024 * 256 * 768 + 1024 * 768


def test_by_module_reads_as_fvcore_table(gpt: solar.Analysis) -> None:
    rows = gpt.by_module()
    lines = repr(rows).splitlines()
    assert lines[0].split() == ["module", "FLOPs", "bytes", "unfused", "SOL", "fused", "SOL", "units"]
    qkv = next(line for line in lines if line.strip().startswith("qkv"))
    assert qkv.startswith("    qkv ")  # depth 2: under attn
    # 2·1024·256·768 + 1024·768 = 403,439,616 FLOPs: one formatter, never a raw float of seconds.
    assert "403 MFLOP" in qkv and "e-0" not in repr(rows) and "ModuleCost(" not in repr(rows)
    assert rows[3].path == "attn.qkv" and isinstance(rows, list)
    assert rows._repr_html_().count("<tr>") == len(rows) + 1


def test_tables_name_units_by_module_with_the_source_beside(gpt: solar.Analysis) -> None:
    text = gpt.results.terminal()
    assert "│ attn.qkv " in text and "gpt_block.py:12" in text
    page = gpt.to_html()
    assert ">attn.qkv</td>" in page
    assert "`attn.qkv` (" in " ".join(gpt.verdict) or "`fc` (" in " ".join(gpt.verdict)


def test_jax_name_stack_is_the_module_path() -> None:
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def f(x, w):  # type: ignore[no-untyped-def]
        with jax.named_scope("mlp"):
            with jax.named_scope("fc"):
                h = x @ w
            return jnp.tanh(h)

    analysis = solar.analyze(f, (jnp.ones((4, 8)), jnp.ones((8, 8))))
    assert [u.module for u in analysis.units] == ["mlp.fc", "mlp"]
