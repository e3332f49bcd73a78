"""Zero-size tensors are values (issue 36): a dimension of size 0 parses, prints and verifies; an empty
slice, an empty `concat` operand and an empty output run, and price as the empty tensors they are (no bytes,
no FLOPs). The frontend translates what makes them (an empty slice, `tensor_split` at the end, a partial
rotary of factor 1.0) and the integer `arange` of every width SIR has; a bug met while lowering is an internal
error at the user's line, exit 2."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from solar.backends.executor import run as execute
from solar.ir import parse_and_verify, print_module
from solar.ir.diagnostics import DiagnosticEngine
from solar.ir.parser import parse_module
from solar.ir.verifier import verify
from solar.tools.solar_opt import run as solar_opt

# Every value is empty but the concat's result, which is %x whole: a slice of 0 columns, a kernel over it
# (zero trips), a concat with it, a permute and a reshape of it.
EMPTY = """solar.module @empty [B = 4] {
  solar.func @main(%x: tensor<Bx8xf32>, %z: tensor<Bx0xf32>) -> (tensor<Bx8xf32>, tensor<Bx0xf32>, tensor<0xBxf32>) {
    %e = solar.slice %x[0:B, 8:8] : tensor<Bx0xf32>
    %r = solar.kernel @relu(%e as E, %z as Z) -> (Y: tensor<Bx0xf32>) {
      affine.for %i = 0 to B {
        affine.for %j = 0 to 0 {
          Y[%i, %j] = max(E[%i, %j], 0.0) + Z[%i, %j]
        }
      }
    }
    %c = solar.concat %r, %x, %e {axis = 1} : tensor<Bx8xf32>
    %p = solar.permute %r {perm = [1, 0]} : tensor<0xBxf32>
    %q = solar.reshape %p : tensor<Bx0xf32>
    solar.return %c, %q, %p
  }
}
"""


def test_zero_size_types_round_trip_and_verify() -> None:
    module = parse_and_verify(EMPTY, "<empty>")
    text = print_module(module)
    assert "tensor<Bx0xf32>" in text and "%x[0:B, 8:8]" in text
    assert print_module(parse_and_verify(text, "<printed>")) == text


def test_negative_sizes_and_reversed_slices_are_still_errors() -> None:
    bad = EMPTY.replace("[B = 4]", "[B = 4, N = 2]").replace("%z: tensor<Bx0xf32>", "%z: tensor<(N - 3)xf32>")
    engine = DiagnosticEngine()
    assert not verify(parse_module(bad, "<bad>"), engine)
    assert "dimension (N - 3) of tensor<(N - 3)xf32> is -1: sizes cannot be negative" in engine.format_all()
    engine = DiagnosticEngine()
    assert not verify(parse_module(EMPTY.replace("8:8] : tensor<Bx0xf32>", "8:7] : tensor<Bx0xf32>"), "<rev>"),
                      engine)
    assert "slice range 8:7 is not a range within a dimension of size 8" in engine.format_all()


def test_empty_values_run() -> None:
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    c, q, p = execute(parse_and_verify(EMPTY, "<empty>"), {"x": x, "z": np.zeros((4, 0), np.float32)})
    assert np.array_equal(c, x)
    assert q.shape == (4, 0) and p.shape == (0, 4)


def test_an_empty_program_prices_at_zero(tmp_path: Path) -> None:
    """Only empty values (without the concat, whose result is %x whole): nothing is read or written."""
    src = tmp_path / "empty.sir"
    src.write_text(EMPTY.replace("(tensor<Bx8xf32>, tensor<Bx0xf32>, tensor<0xBxf32>)", "(tensor<Bx0xf32>, "
                                 "tensor<0xBxf32>)").replace("solar.return %c, %q, %p", "solar.return %q, %p")
                   .replace("    %c = solar.concat %r, %x, %e {axis = 1} : tensor<Bx8xf32>\n", ""))
    report = tmp_path / "r.json"
    code = solar_opt([str(src), "--lift-einsum", "--fuse", "--sol=h100", f"--sol-report={report}", "-o",
                      str(tmp_path / "out.sir")])
    assert code == 0
    target = json.loads(report.read_text())["targets"][0]
    for mode in ("unfused", "fused", "whole_graph"):
        assert (target["modes"][mode]["flops"], target["modes"][mode]["bytes"]) == (0, 0), mode
    assert [(u["name"], u["bytes"], u["time_s"]) for u in target["units"]] == [("@relu", 0, 0.0)]


def test_an_empty_concat_operand_moves_nothing(tmp_path: Path) -> None:
    """The concat copies %x (4·8 f32 read, written): 256 B, the empty operands add nothing."""
    src = tmp_path / "cat.sir"
    src.write_text(EMPTY)
    report = tmp_path / "r.json"
    assert solar_opt([str(src), "--lift-einsum", "--sol=h100", f"--sol-report={report}", "-o",
                      str(tmp_path / "out.sir")]) == 0
    units = {u["name"]: u["bytes"] for u in json.loads(report.read_text())["targets"][0]["units"]}
    assert units == {"@relu": 0, "concat %c": 256}


def test_tile_search_of_an_empty_einsum(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "empty.sir"
    src.write_text(EMPTY)
    assert solar_opt([str(src), "--lift-einsum", "--tile-search=smem", "-o", str(tmp_path / "o.sir")]) == 0
    row = next(line for line in capsys.readouterr().err.splitlines() if "@relu" in line)
    assert [cell.strip() for cell in row.split("│")[2:4]] == ["0 B", "0 B"]  # compulsory, least traffic


# ---- the torch frontend -----------------------------------------------------------------------------------

torch = pytest.importorskip("torch")

from solar.frontends.lowering import TORCH_LOWERINGS  # noqa: E402
from solar.frontends.lowering.core import access, loops, ttype  # noqa: E402
from solar.frontends.lowering.registry import TorchNode  # noqa: E402
from solar.frontends.torch_export import load_problem, reference_runner, translate_problem  # noqa: E402
from solar.frontends.validate import validate_sized  # noqa: E402
from solar.ir.ops import Value  # noqa: E402
from solar.tools.solar_translate import main as solar_translate  # noqa: E402


def _program(tmp_path: Path, forward: str, inputs: str = "[torch.randn(2, 4, 32)]") -> str:
    path = tmp_path / "prog.py"
    path.write_text("import torch\n\n\nclass Model(torch.nn.Module):\n    def forward(self, q):\n"
                    + textwrap.indent(textwrap.dedent(forward).strip(), " " * 8)
                    + f"\n\n\ndef get_inputs():\n    return {inputs}\n\n\ndef get_init_inputs():\n    return []\n")
    return str(path)


def _translate(path: str) -> str:
    problem = load_problem(path)
    tr = translate_problem(problem)
    report = validate_sized(tr.module, lambda sz: reference_runner(problem, tr, 0, sz), {})
    assert report.ok, report.summary()
    return print_module(tr.module)


def test_empty_slice_and_cat(tmp_path: Path) -> None:
    text = _translate(_program(tmp_path, """
        rot, rest = q[..., :32], q[..., 32:]
        return torch.cat([rot * 2.0, rest], dim=-1)
        """))
    assert "%q[0:BATCH, 0:4, 32:32] : tensor<BATCHx4x0xf32>" in text
    assert "solar.concat" not in text and "solar.return %mul" in text  # the empty half adds nothing


def test_an_empty_cache(tmp_path: Path) -> None:
    """A cache of length 0 is a splat of its (partly symbolic) type; the append is the new entries."""
    text = _translate(_program(tmp_path, """
        kv = torch.cat([torch.zeros(q.shape[0], 0, 32), q], dim=1)
        return kv.sum(1), kv[:, :0]
        """))
    assert "solar.constant 0.0 : tensor<BATCHx0x32xf32>" in text
    assert "-> (tensor<BATCHx32xf32>, tensor<BATCHx0x32xf32>)" in text and "solar.concat" not in text


def test_a_cat_of_empty_tensors_is_empty(tmp_path: Path) -> None:
    text = _translate(_program(tmp_path, "return torch.cat([q[:, :0, :3], q[:, 2:2, :5]], dim=2) + 1.0"))
    assert "solar.concat %slice_1, %slice_3 {axis = 2} : tensor<BATCHx0x8xf32>" in text
    assert "-> tensor<BATCHx0x8xf32>" in text and "affine.for %i1 = 0 to 0 {" in text


def test_an_empty_output(tmp_path: Path) -> None:
    text = _translate(_program(tmp_path, """
        head, tail = torch.tensor_split(q, [4], dim=1)
        return head + 1.0, tail
        """))
    assert "-> (tensor<BATCHx4x32xf32>, tensor<BATCHx0x32xf32>)" in text


@pytest.mark.parametrize(("dtype", "sir"), [("int8", "i8"), ("int16", "i16"), ("int32", "i32"), ("int64", "i64"),
                                           ("uint8", "u8")])
def test_integer_arange(tmp_path: Path, dtype: str, sir: str) -> None:
    text = _translate(_program(tmp_path, f"""
        slopes = torch.arange(1, 9, 2, dtype=torch.{dtype}) + torch.arange(4, dtype=torch.{dtype})
        return q * (slopes + torch.arange(8, 0, -2, dtype=torch.{dtype}))
        """, "[torch.randn(3, 4)]"))
    assert f"-> (Y: tensor<4x{sir}>)" in text


def _buggy_arange(n: TorchNode) -> Value:
    """The arange of before issue 36: the i64 loop index stored into an i32 tensor without a cast."""
    kb = n.em.kernel([], [("Y", ttype(n.out.shape, n.out.dtype))])
    with loops(kb, n.out.shape) as (i,):
        kb.assign(access("Y", [i]), i)
    return kb.results[0]


def _crashing(n: TorchNode) -> Value:
    raise ZeroDivisionError("a bug")


@pytest.mark.parametrize(("lowering", "message"), [
    (_buggy_arange, "internal error: the emitted IR does not verify: solar.kernel emitted by aten.arange.start: "
                    "value of type i64 stored in a tensor of i32; convert with cast<i32>(...) (a bug in SOLAR: "
                    "please report it)"),
    (_crashing, "internal error: lowering aten.arange.start failed: ZeroDivisionError: a bug (a bug in SOLAR: "
                "please report it)"),
])
def test_a_bug_in_a_lowering_is_a_located_internal_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str], lowering: object,
                                                         message: str) -> None:
    monkeypatch.setitem(TORCH_LOWERINGS, "aten::arange", lowering)
    path = _program(tmp_path, "return q * torch.arange(1, 5, dtype=torch.int32)", "[torch.randn(3, 4)]")
    assert solar_translate([path, "--no-validate", "-o", str(tmp_path / "o.sir")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"{path}:6:9: {message}"
    assert err[1] == "    return q * torch.arange(1, 5, dtype=torch.int32)"
    assert not (tmp_path / "o.sir").exists()


def test_an_internal_error_names_where_in_solar() -> None:
    from solar.ir.dtypes import DType
    from solar.tools._entry import internal_error_line

    with pytest.raises(ValueError) as info:
        _ = DType.I32.eps
    line = internal_error_line("solar-opt", info.value)
    assert line.startswith("solar-opt: internal error: ValueError: i32 is not a float type: it has no machine "
                           "epsilon at solar.ir.dtypes:")
    assert line.endswith(" (set SOLAR_DEBUG=1 for the traceback and please report it)\n") and line.count("\n") == 1
