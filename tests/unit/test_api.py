"""The Python API: `solar.analyze` on a live torch module, a JAX function, a .sir path and SIR text; its
`Analysis` agrees with `solar-opt --sol-report`; bad input raises a `solar.SolarError` with the tools' one
line and loses no file."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import solar
from solar.tools import solar_opt

ROOT = Path(__file__).resolve().parents[2]
HERE = str(Path(__file__).resolve())


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.Linear(32, 64)
        self.down = torch.nn.Linear(64, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.up(x))
        return self.down(h) + x


FORWARD_LINE = Block.forward.__code__.co_firstlineno  # `def forward`: the body's lines follow


@pytest.fixture(scope="module")
def block() -> solar.Analysis:
    return solar.analyze(Block(), (torch.randn(4, 32),), targets=("h100", "b200"))


def test_import_solar_is_light() -> None:
    code = "import json, sys, solar; print(json.dumps(sorted(sys.modules)))"
    mods = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                     cwd=ROOT).stdout)
    heavy = [m for m in mods if m.split(".")[0] in ("torch", "jax", "numba", "islpy", "scipy", "matplotlib", "rich")]
    assert heavy == []
    assert [m for m in mods if m.startswith("solar.")] == []


def test_a_torch_module_analysed(block: solar.Analysis) -> None:
    assert block.targets == ["h100-sxm", "b200"]
    doc = block.to_json()
    for t in doc["targets"]:
        for mode, res in t["modes"].items():
            total = block.totals[t["name"]][mode]
            assert (total.seconds, total.flops, total.bytes) == (res["time_s"], res["flops"], res["bytes"])
    # Two linears (2·4·32·64 MACs each, so 2·16384 FLOPs plus their bias adds), a relu and an add.
    assert block.totals["b200"]["unfused"].flops == sum(u.flops for u in block.units)
    assert [u.name for u in block.units] == ["@linear", "@relu", "@linear_1", "@add"]
    assert block.units[0].flops == 2 * 4 * 32 * 64 + 4 * 64
    assert block.total("fused") < block.total("unfused")
    assert "solar.kernel @linear" in block.sir


def test_repr_names_the_target_once(block: solar.Analysis) -> None:
    from solar.backends.report import seconds

    u, f = seconds(block.total("unfused", "h100-sxm")), seconds(block.total("fused", "h100-sxm"))
    assert repr(block) == f"<Analysis @{block.name} on h100-sxm, b200: unfused {u}, fused {f} on h100-sxm>"
    one = solar.analyze(Block(), (torch.randn(4, 32),), targets=("h100",))
    u, f = seconds(one.total("unfused")), seconds(one.total("fused"))
    assert repr(one) == f"<Analysis @{one.name} on h100-sxm: unfused {u}, fused {f}>"


def test_source_lines_rank_the_users_lines(block: solar.Analysis) -> None:
    lines = block.by_source_line()
    assert {(ln.file, ln.line) for ln in lines} == {(HERE, FORWARD_LINE + 1), (HERE, FORWARD_LINE + 2)}
    first = lines[0]
    assert first.code == "h = torch.relu(self.up(x))"
    assert first.units == ["@linear", "@relu"]
    assert [f.rsplit(":", 1)[0] for f in first.library_frames] == ["torch/nn/modules/linear.py"]
    assert sum(ln.flops for ln in lines) == block.totals["h100-sxm"]["unfused"].flops
    assert math.isclose(sum(ln.unfused_s for ln in lines), block.total("unfused"), rel_tol=1e-12)
    assert math.isclose(sum(ln.fused_s for ln in lines), block.total("fused"), rel_tol=1e-12)
    assert lines == sorted(lines, key=lambda ln: -ln.fused_s)
    # One fusion group spans both lines, and lists them.
    assert [g.lines for g in block.groups] == [[f"{HERE}:{FORWARD_LINE + 1}", f"{HERE}:{FORWARD_LINE + 2}"]]


def test_views(block: solar.Analysis) -> None:
    from rich.console import Console

    console = Console(width=300, record=True, color_system=None)
    console.print(block)
    text = console.export_text()
    assert "By source line" in text and "h = torch.relu(self.up(x))" in text
    page = block._repr_html_()
    # The notebook view is the report's one root element with its scoped styles, not a whole page.
    assert page.startswith('<div class="solar-report"><style>') and "<body" not in page  # one scoped root
    assert f'data-value="{block.total("fused")!r}"' in page
    assert block.to_html().startswith("<!DOCTYPE html>")
    # Nothing fetched: no src= or href= to load, and the only URLs are the SVG namespaces' names.
    assert " src=" not in page and " href=" not in page
    assert set(re.findall(r"https?://[\w./-]+", page)) <= {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}
    assert "Analysis @block" in repr(block)


def test_to_pandas(block: solar.Analysis) -> None:
    pd = pytest.importorskip("pandas")
    frame = block.to_pandas("units")
    assert isinstance(frame, pd.DataFrame) and list(frame["name"]) == [u.name for u in block.units]
    assert list(frame["b200_s"]) == [u.seconds["b200"] for u in block.units]
    assert len(block.to_pandas("groups")) == len(block.groups)
    assert block.to_pandas("lines")["flops"].sum() == block.totals["b200"]["unfused"].flops
    totals = block.to_pandas("totals")
    assert len(totals) == 6 and set(totals["target"]) == {"h100-sxm", "b200"}
    with pytest.raises(ValueError, match="no table 'kernels'"):
        block.to_pandas("kernels")


def test_sir_path_and_text_agree_with_solar_opt(tmp_path: Path) -> None:
    path = ROOT / "examples" / "mlp.sir"
    report = tmp_path / "r.json"
    assert solar_opt.run([str(path), "--lift-einsum", "--fuse", "--sol=h100", "--sol-report", str(report),
                          "-o", os.devnull]) == 0
    tool = json.loads(report.read_text())
    for program in (str(path), path, path.read_text()):
        doc = solar.analyze(program, targets="h100").to_json()
        assert doc["targets"][0]["modes"] == tool["targets"][0]["modes"]
        assert doc["targets"][0]["units"] == tool["targets"][0]["units"]


def test_a_jax_function() -> None:
    import jax.numpy as jnp

    def mlp(x, w):  # type: ignore[no-untyped-def]
        return jnp.tanh(x @ w)

    a = solar.analyze(mlp, (jnp.ones((8, 16)), jnp.ones((16, 4))), targets=("h100",))
    assert a.units[0].flops == 2 * 8 * 16 * 4
    [line] = a.by_source_line()
    assert line.line == mlp.__code__.co_firstlineno + 1 and line.code == "return jnp.tanh(x @ w)"
    assert [f.rsplit(":", 1)[0] for f in line.library_frames] == ["jax/_src/numpy/array_methods.py"]


def test_the_html_report_is_written_atomically(block: solar.Analysis, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    page = block.to_html(str(out))
    assert out.read_text() == page
    assert 'id="lines-h100-sxm"' in page and "torch/nn/modules/linear.py" in page


class Broken(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ torch.ones(3, 3)


def test_a_forward_that_fails_names_the_users_line() -> None:
    with pytest.raises(solar.ModelError) as err:
        solar.analyze(Broken(), (torch.ones(2, 5),))
    line = Broken.forward.__code__.co_firstlineno + 1
    assert str(err.value).startswith(f"{HERE}:{line}:9: error: torch.export failed: RuntimeError: ")
    assert "return x @ torch.ones(3, 3)" in err.value.detail  # the line itself, as solar-translate prints it


@pytest.mark.parametrize(("inputs", "message"), [
    (torch.ones(4, 32), "example_inputs must be a tuple of the program's inputs, not a Tensor (write (x,) for one "
                        "input)"),
    (("x",), "example input 0 is a str: a torch.nn.Module takes tensors and Python numbers"),
    (None, "example_inputs is missing: give a tuple of the program's inputs, e.g. (x,)"),
])
def test_inputs_of_the_wrong_types(inputs: object, message: str) -> None:
    with pytest.raises(solar.BadInputError) as err:
        solar.analyze(Block(), inputs)  # type: ignore[arg-type]
    assert str(err.value) == message
    assert isinstance(err.value, solar.SolarError) and isinstance(err.value, TypeError)


def test_an_unknown_target_has_the_tools_message(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(solar.UnknownTargetError) as err:
        solar.analyze(str(ROOT / "examples" / "mlp.sir"), targets=("h999",))
    assert solar_opt.run([str(ROOT / "examples" / "mlp.sir"), "--sol=h999", "-o", os.devnull]) == 1
    tool = capsys.readouterr().err.splitlines()[0]
    assert tool.endswith(f"error: {err.value}")


def test_a_report_in_a_missing_directory_loses_no_file(block: solar.Analysis, tmp_path: Path) -> None:
    with pytest.raises(solar.OutputPathError) as err:
        block.to_html(str(tmp_path / "missing" / "r.html"))
    assert str(err.value) == f"cannot write the HTML report '{tmp_path}/missing/r.html': no such directory " \
                             f"'{tmp_path}/missing'"
    keep = tmp_path / "r.png"
    keep.write_bytes(b"old")
    with pytest.raises(solar.OutputPathError):
        block.plot(str(tmp_path / "missing" / "r.png"))
    assert keep.read_bytes() == b"old"


def test_bad_sir_text() -> None:
    with pytest.raises(solar.SIRError) as err:
        solar.analyze("solar.module @m { solar.func @f( }")
    assert str(err.value).startswith("<string>:1:")
    assert "error:" in str(err.value)
