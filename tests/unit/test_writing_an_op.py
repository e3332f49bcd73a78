"""docs/writing-an-op.md stays true: every block marked `<!-- snippet: PATH -->` is a verbatim piece of PATH,
and what the guide promises holds. A newcomer's ops (`solar.reverse` and an op with two results), written
as one module with their classes and their hooks and nothing else, are parsed with no grammar change,
verified, printed, built with inferred types, run by the executor and costed; afterwards no trace of them
is left for another test to see."""

from __future__ import annotations

import importlib
import re
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from solar.backends import op_hooks
from solar.backends.cost import CostModel
from solar.backends.executor import prepare
from solar.ir.builder import ModuleBuilder, tensor
from solar.ir.diagnostics import DiagnosticEngine, DiagnosticError
from solar.ir.grammar_tables import grammar_text
from solar.ir.ops import OP_CLASSES, GenericOp, ModuleOp
from solar.ir.ops.shape import GatherOp
from solar.ir.parser import parse_module
from solar.ir.printer import print_module
from solar.ir.verifier import InferenceError, infer_result_types, verify

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "writing-an-op.md"
SNIPPET = re.compile(r"^<!-- snippet: (\S+) -->\n```[a-z]*\n(.*?)^```$", re.M | re.S)


def snippets() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in SNIPPET.finditer(GUIDE.read_text(encoding="utf-8"))]


def test_the_guide_has_its_snippets() -> None:
    paths = [p for p, _ in snippets()]
    assert {"solar_ir/ops/shape.py", "grammar/sir.lark", "backends/composition_hooks.py", "solar_ir/builder.py",
            "frontends/lowering/core.py", "docs/ir.md", "tests/lit/parser/composition-ops.sir"} <= set(paths)
    # Every snippet marker is followed by a code block (a marker without one would check nothing).
    assert GUIDE.read_text(encoding="utf-8").count("<!-- snippet:") == len(paths)


@pytest.mark.parametrize(("path", "code"), snippets(), ids=lambda v: v if "\n" not in str(v) else "code")
def test_every_snippet_is_in_its_source(path: str, code: str) -> None:
    source = (REPO / path).read_text(encoding="utf-8")
    assert code in source, f"docs/writing-an-op.md has a block of {path} that the file no longer holds"


def test_the_grammar_names_no_op_of_the_generic_form() -> None:
    grammar = grammar_text()
    generic = [name for name, cls in OP_CLASSES.items() if issubclass(cls, GenericOp)]
    assert "solar.gather" in generic and "solar.sort" in generic
    assert [name for name in generic if re.search(rf"\b{name.split('.')[1]}\b", grammar)] == []


# ---- ops added as a newcomer adds them: one module, their classes and their hooks -----------------------

NEWCOMER = textwrap.dedent('''
    from __future__ import annotations

    import numpy as np

    from solar.backends.op_hooks import Env, HookSet, Runner
    from solar.ir.dtypes import DType
    from solar.ir.ops import GenericOp
    from solar.ir.types import TensorType
    from solar.ir.verifier import Verifier

    HOOKS = HookSet("the newcomer's ops")


    class ReverseOp(GenericOp):
        """`solar.reverse %x {axis = k}`: the elements of `%x` in reverse order along `k`."""

        opname = "solar.reverse"
        moves_data = True
        required = ("axis",)
        backend_hooks = "newcomer_ops:HOOKS"
        __slots__ = ()

        def infer(self, v: Verifier, args: list[TensorType], declared: TensorType | None) -> TensorType | None:
            return args[0] if self.axis(v, args[0].rank) is not None else None


    class SortedOp(GenericOp):
        """`%v, %i = solar.sorted_with_indices %x {axis = k}`: the values sorted along `k` and where each
        came from, an op with two results (`result_count`, `infer_all`)."""

        opname = "solar.sorted_with_indices"
        moves_data = True
        required = ("axis",)
        result_count = 2
        backend_hooks = "newcomer_ops:HOOKS"
        __slots__ = ()

        def infer_all(self, v: Verifier, args: list[TensorType],
                      declared: list[TensorType] | None) -> list[TensorType] | None:
            if self.axis(v, args[0].rank) is None:
                return None
            return [args[0], args[0].with_dtype(DType.I64)]


    @HOOKS.execute(ReverseOp)
    def _run_reverse(program: Runner, op: ReverseOp, env: Env, idx: dict[str, int]) -> list[np.ndarray]:
        return [np.ascontiguousarray(np.flip(env[op.args[0]], axis=op.attrs["axis"]))]


    @HOOKS.execute(SortedOp)
    def _run_sorted(program: Runner, op: SortedOp, env: Env, idx: dict[str, int]) -> list[np.ndarray]:
        x, axis = env[op.args[0]], op.attrs["axis"]
        order = np.argsort(x, axis=axis, kind="stable")
        return [np.take_along_axis(x, order, axis=axis), order.astype(np.int64)]
''')


def _registries() -> list[tuple[dict | set, dict | set]]:
    tables = [OP_CLASSES, op_hooks._INSTALLED, op_hooks._LOADED]
    for table in (op_hooks.EXECUTE, op_hooks.COUNTS, op_hooks.READ_BYTES, op_hooks.WRITE_BYTES):
        tables += [table._hooks, table._resolved]
    return [(t, t.copy()) for t in tables]


@pytest.fixture
def newcomer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The newcomer's module, imported; every registry is as it was once the test is done."""
    saved = _registries()
    (tmp_path / "newcomer_ops.py").write_text(NEWCOMER, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        yield importlib.import_module("newcomer_ops")
    finally:
        sys.modules.pop("newcomer_ops", None)
        for table, before in saved:
            table.clear()
            table.update(before)  # type: ignore[arg-type]


REVERSE = """solar.module @rev {
  solar.func @main(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
    %r = solar.reverse %x {axis = 1} : tensor<4x3xf32>
    solar.return %r
  }
}
"""


def _module(cls: type[GenericOp], axis: int) -> ModuleOp:
    mb = ModuleBuilder("rev")
    fb = mb.func("main", [("x", tensor("4x3xf32"))])
    fb.ret(fb.generic(cls, [fb.args[0]], {"axis": axis}, hint="r"))
    return mb.module


def test_a_new_op_is_parsed_built_printed_verified_run_and_costed(newcomer: ModuleType) -> None:
    module = parse_module(REVERSE, "rev.sir")  # the grammar and its tables are those of every other test
    assert OP_CLASSES["solar.reverse"] is newcomer.ReverseOp
    assert print_module(module) == REVERSE
    assert print_module(_module(newcomer.ReverseOp, 1)) == REVERSE  # built, with the type inferred
    engine = DiagnosticEngine()
    assert verify(module, engine), engine.format_all()
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    [out] = prepare(module)({"x": x})
    np.testing.assert_array_equal(out, x[:, ::-1])
    # No cost hooks: a data-movement unit with no arithmetic that reads and writes its whole tensor.
    [unit] = CostModel(module).units
    assert (unit.name, unit.kind, unit.flops, unit.bytes) == ("reverse %r", "reverse", 0, 2 * 4 * 3 * 4)


def test_a_misspelt_op_is_one_located_error_naming_the_new_one(newcomer: ModuleType) -> None:
    with pytest.raises(DiagnosticError) as err:
        parse_module(REVERSE.replace("solar.reverse", "solar.revers"), "rev.sir")
    [diagnostic] = err.value.diagnostics
    assert (diagnostic.loc.line, diagnostic.loc.col) == (3, 10)
    assert diagnostic.message == "unknown operation 'solar.revers'; did you mean 'solar.reverse'?"


def test_the_new_op_is_gone_afterwards() -> None:
    assert "solar.reverse" not in OP_CLASSES
    with pytest.raises(DiagnosticError, match=r"unknown operation 'solar\.reverse'"):
        parse_module(REVERSE, "rev.sir")


def test_a_new_op_reports_through_its_own_checks(newcomer: ModuleType) -> None:
    with pytest.raises(InferenceError, match=r"solar.reverse axis must be an integer in \[0, 2\), not 2"):
        _module(newcomer.ReverseOp, 2)  # the builder infers the type, so a bad axis is found while building
    module = parse_module(REVERSE, "rev.sir")
    op = module.funcs[0].body[0]
    for attrs, message in (({"axis": 5}, "solar.reverse axis must be an integer in [0, 2), not 5"),
                           ({"axis": 0, "axes": 1}, "solar.reverse has no attribute 'axes'; did you mean 'axis'?"),
                           ({}, "solar.reverse needs the attribute 'axis'")):
        op.attrs = attrs
        engine = DiagnosticEngine()
        assert not verify(module, engine)
        assert [d.message for d in engine.diagnostics] == [message]


def test_inference_is_what_verification_checks() -> None:
    mb = ModuleBuilder("g")
    fb = mb.func("main", [("table", tensor("10x8xf32")), ("ids", tensor("3x2xi64"))])
    fb.ret(fb.gather(fb.args[0], fb.args[1], 0))  # no type: GatherOp.infer gives it
    assert fb.ops[0].declared_types() == [tensor("3x2x8xf32")]
    engine = DiagnosticEngine()
    assert verify(mb.module, engine), engine.format_all()
    wrong = GatherOp([fb.args[0], fb.args[0]], [], {"axis": 0})
    with pytest.raises(InferenceError, match=r"solar\.gather indices must be integers, not f32"):
        infer_result_types(wrong)
    assert op_hooks.READ_BYTES.lookup(GatherOp) is not None and op_hooks.WRITE_BYTES.lookup(GatherOp) is None


def test_an_op_with_two_results(newcomer: ModuleType) -> None:
    mb = ModuleBuilder("s")
    fb = mb.func("main", [("x", tensor("2x3xf32"))])
    values, indices = fb.generic_results(newcomer.SortedOp, [fb.args[0]], {"axis": 1}, hint=["v", "i"])
    fb.ret(values, indices)
    assert print_module(mb.module).splitlines()[2] == (
        "    %v, %i = solar.sorted_with_indices %x {axis = 1} : (tensor<2x3xf32>, tensor<2x3xi64>)")
    engine = DiagnosticEngine()
    assert verify(mb.module, engine), engine.format_all()
    x = np.array([[3, 1, 2], [0, 5, 4]], dtype=np.float32)
    out_values, out_indices = prepare(mb.module)({"x": x})
    np.testing.assert_array_equal(out_values, [[1, 2, 3], [0, 4, 5]])
    np.testing.assert_array_equal(out_indices, [[1, 2, 0], [0, 2, 1]])
    op = fb.ops[0]
    op.result_types = [op.result_types[0], op.result_types[0]]  # the indices declared as f32
    engine = DiagnosticEngine()
    assert not verify(mb.module, engine)
    messages = [d.message for d in engine.diagnostics]
    assert messages[0] == ("solar.sorted_with_indices result type tensor<2x3xf32> does not match the operands: "
                           "expected tensor<2x3xi64>")
    op.result_types = op.result_types[:1]
    engine = DiagnosticEngine()
    assert not verify(mb.module, engine)
    assert "solar.sorted_with_indices has exactly 2 result types" in [d.message for d in engine.diagnostics]
