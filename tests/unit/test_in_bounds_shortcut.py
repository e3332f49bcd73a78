"""KernelModel.in_bounds answers plain subscripts (loop indices inside their loop's range, numbers inside
their dimension) without ISL; the answer is ISL's wherever the shortcut answers."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from solar.ir.analysis.isl_model import _within_loops, build_model
from solar.ir.ops import KernelOp
from solar.ir.parser import parse_module

_LOWERS = ["0", "1", "-1", "max(0, N - 9)"]
_UPPERS = ["N", "N + 1", "N - 1", "4", "8", "min(N, 4)", "min(9, N)", "(N + 1) floordiv 2", "N floordiv 2"]
_DIMS = ["N", "4", "8", "5", "(N + 1) floordiv 2", "(N + 2) floordiv 2"]
_SUBSCRIPTS = ["%i", "%j", "0", "3", "7", "%i + 1", "-1"]


def _kernel(lows: list[str], highs: list[str], dims: list[str], subscripts: list[str]) -> KernelOp:
    shape = "x".join(f"({d})" if " " in d else d for d in dims)
    text = (f"solar.module @m [N = 10] {{\nsolar.func @f(%x: tensor<{shape}xf32>) -> (tensor<f32>) {{\n"
            f"  %y = solar.kernel @k(%x as X) -> (Y: tensor<f32>) {{\n"
            f"    affine.for %i = {lows[0]} to {highs[0]} {{\n"
            f"      affine.for %j = {lows[1]} to {highs[1]} {{\n"
            f"        Y[] += X[{', '.join(subscripts)}]\n"
            "      }\n    }\n  }\n  solar.return %y\n}\n}\n")
    module = parse_module(text, "bounds.sir")
    return next(op for op in module.walk() if isinstance(op, KernelOp))


@settings(max_examples=150)
@given(st.lists(st.sampled_from(_LOWERS), min_size=2, max_size=2),
       st.lists(st.sampled_from(_UPPERS), min_size=2, max_size=2),
       st.lists(st.sampled_from(_DIMS), min_size=2, max_size=2),
       st.lists(st.sampled_from(_SUBSCRIPTS), min_size=2, max_size=2))
def test_the_shortcut_agrees_with_isl(lows: list[str], highs: list[str], dims: list[str],
                                      subscripts: list[str]) -> None:
    model = build_model(_kernel(lows, highs, dims, subscripts), ["N"], {})
    statement = model.statements[0]
    access, rel = statement.reads[0]
    isl_answer = model.out_of_bounds(rel, "X").is_empty()
    if _within_loops(access, statement.loops, model.tensors["X"]):
        assert isl_answer
    assert model.in_bounds(statement, 1) == isl_answer


def test_the_shortcut_answers_plain_subscripts_and_leaves_the_rest_to_isl() -> None:
    def shortcut(lows: list[str], highs: list[str], dims: list[str], subscripts: list[str]) -> bool:
        model = build_model(_kernel(lows, highs, dims, subscripts), ["N"], {})
        statement = model.statements[0]
        return _within_loops(statement.reads[0][0], statement.loops, model.tensors["X"])

    assert shortcut(["0", "0"], ["N", "4"], ["N", "8"], ["%i", "%j"])
    assert shortcut(["0", "max(0, N - 9)"], ["min(N, 4)", "(N + 1) floordiv 2"], ["4", "(N + 1) floordiv 2"],
                    ["%i", "%j"])
    assert shortcut(["0", "0"], ["N", "4"], ["N", "5"], ["%i", "3"])
    assert not shortcut(["0", "0"], ["N + 1", "4"], ["N", "8"], ["%i", "%j"])  # ISL says: out of bounds
    assert not shortcut(["-1", "0"], ["N", "4"], ["N", "8"], ["%i", "%j"])
    assert not shortcut(["0", "0"], ["N", "4"], ["N", "8"], ["%i + 1", "%j"])  # in bounds? ISL decides
    assert not shortcut(["0", "0"], ["N", "4"], ["N", "N"], ["%i", "0"])  # N may be 0 for all it knows
