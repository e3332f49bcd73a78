"""By source line: the lines' FLOPs, bytes and times add up to the report's totals, whatever the units'
locations; a group spanning several lines lists them; the library frame stays beside the user's line."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solar.backends.cost import CostModel, Peaks
from solar.backends.report import analyse
from solar.backends.source_lines import by_source_line, group_lines
from solar.ir.diagnostics import DiagnosticEngine, Location
from solar.ir.parser import parse_module
from solar.ir.pass_manager import PassContext, PassManager
from solar.passes.fuse import Fuse
from solar.passes.inline import Inline
from solar.passes.lift_einsum import LiftEinsum
from solar.targets.loader import load_target

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ("mlp.sir", "mlp_heads.sir", "causal_attention.sir", "layernorm.sir")


def _model(example: str) -> CostModel:
    module = parse_module((ROOT / "examples" / example).read_text(), example)
    engine = DiagnosticEngine()
    module = PassManager([Inline(), LiftEinsum(), Fuse()]).run(module, PassContext(engine, lambda _t: None))
    assert not engine.has_errors
    return CostModel(module, "framework")


MODELS = {name: _model(name) for name in EXAMPLES}


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(EXAMPLES), st.lists(st.integers(1, 3), min_size=1, max_size=12),
       st.sampled_from(["h100", "b200"]))
def test_lines_add_up_to_the_totals(example: str, lines: list[int], target: str) -> None:
    model = MODELS[example]
    for k, unit in enumerate(model.units):  # the property holds for any assignment of units to lines
        for op in unit.ops:
            op.src_loc = Location("model.py", lines[k % len(lines)], 5)
    report = analyse(model, Peaks(load_target(target)), None)
    table = by_source_line(report)
    assert sum(ln.flops for ln in table.lines) == report.modes["unfused"].flops
    assert sum(ln.bytes for ln in table.lines) == report.modes["unfused"].bytes
    assert math.isclose(sum(ln.unfused_s for ln in table.lines), report.modes["unfused"].seconds, rel_tol=1e-9)
    assert math.isclose(sum(ln.fused_s for ln in table.lines), report.modes["fused"].seconds, rel_tol=1e-9)
    assert math.isclose(sum(table.fused_share(ln) for ln in table.lines), 1.0, rel_tol=1e-9)
    assert [ln.fused_s for ln in table.lines] == sorted((ln.fused_s for ln in table.lines), reverse=True)
    assert sorted(u for ln in table.lines for u in ln.units) == sorted(w.name for w, _ in report.units)


def test_a_group_lists_the_lines_it_spans() -> None:
    model = MODELS["mlp.sir"]
    for k, unit in enumerate(model.units):
        for op in unit.ops:
            op.src_loc = Location("model.py", 10 + k, 5)
    report = analyse(model, Peaks(load_target("h100")), None)
    spans = group_lines(report)
    # The example fuses all its kernels into one group, which spans every kernel's line, in program order.
    assert list(spans.values()) == [[f"model.py:{10 + k}" for k in range(len(model.units))]]


@pytest.mark.parametrize("example", ["mlp.sir"])
def test_without_locations_there_is_one_unplaced_line(example: str) -> None:
    model = _model(example)
    table = by_source_line(analyse(model, Peaks(load_target("h100")), None))
    assert not table.located
    assert [ln.where for ln in table.lines] == ["<no source line>"]


def test_a_library_call_is_the_users_line_with_the_library_frame_after_it() -> None:
    from solar.frontends.diagnostics import library_frame, user_frame

    trace = ('File "/home/me/model.py", line 12, in forward\n    y = self.block(x)\n'
             '  File "/venv/lib/python3.12/site-packages/transformers/models/llama/modeling_llama.py", line 80, in '
             'forward\n    return self.mlp(x)\n'
             '  File "/venv/lib/python3.12/site-packages/torch/nn/modules/linear.py", line 134, in forward\n'
             "    return F.linear(input, self.weight, self.bias)\n")
    frame = user_frame(trace)
    assert frame is not None and (frame.file, frame.line) == ("/home/me/model.py", 12)
    assert library_frame(trace) == "torch/nn/modules/linear.py:134"
    # All library code (a transformers model exported whole): its own innermost non-framework line, no frame.
    inside = (
        'File "/venv/lib/python3.12/site-packages/transformers/models/llama/modeling_llama.py", line 80, in '
        'forward\n    return self.mlp(x)\n')
    frame = user_frame(inside)
    assert frame is not None and frame.line == 80 and library_frame(inside) is None
    assert library_frame('File "/home/me/model.py", line 3, in f\n    return x + 1\n') is None


def test_a_jax_call_keeps_the_library_function_it_called() -> None:
    from solar.frontends.diagnostics import SourceLine, jax_library_frame

    user = SourceLine("/home/me/f.py", 4, 5, "h = jax.nn.gelu(x)")
    site = "/venv/lib/python3.12/site-packages/"
    frames = [(site + "jax/_src/core.py", 705), (site + "jax/_src/nn/functions.py", 463),
              (site + "jax/_src/traceback_util.py", 195), ("/home/me/f.py", 4), ("/home/me/run.py", 9)]
    assert jax_library_frame(frames, user) == "jax/_src/nn/functions.py:463"
    only_machinery = [(site + "jax/_src/core.py", 705), (site + "jax/_src/traceback_util.py", 195),
                      ("/home/me/f.py", 4)]
    assert jax_library_frame(only_machinery, user) is None
    assert jax_library_frame([("/home/me/f.py", 4)], user) is None
    assert jax_library_frame(frames, None) is None
