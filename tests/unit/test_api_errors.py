"""Bad input of every kind to the Python API raises a `solar.SolarError` subclass with one line (the tools'
message where they have one), never a bare TypeError, KeyError or SystemExit; a `.py` program imports its
sibling modules as `python model.py` would, and leaves sys.path and sys.modules as they were."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

import solar

HERE = str(Path(__file__).resolve())
MLP_SIR = str(Path(__file__).resolve().parents[2] / "examples" / "mlp.sir")


class Square(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(8, 8, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x)


class ReturnsNothing(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[()]:
        return ()


class Exits(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        sys.exit(3)


EXIT_LINE = Exits.forward.__code__.co_firstlineno + 1
X = torch.randn(4, 8)


@pytest.fixture(scope="module")
def square() -> solar.Analysis:
    return solar.analyze(Square(), (X,))


def _raises(kind: type[solar.SolarError], call: Callable[[], Any]) -> str:
    with pytest.raises(kind) as info:
        call()
    message = str(info.value)
    assert "\n" not in message and message
    return message


@pytest.mark.parametrize(("program", "options", "kind", "start"), [
    (ReturnsNothing(), {}, solar.TranslationFailed, "the program returns no tensor"),
    (Square(), {"targets": None}, solar.BadInputError, "targets must be a target name or a tuple of them"),
    (Square(), {"targets": 5}, solar.BadInputError, "targets must be a target name or a tuple of them"),
    (Square(), {"targets": ["h100", None]}, solar.BadInputError, "targets must be a target name or a tuple"),
    (Square(), {"dynamic": "bogus"}, solar.BadOptionError, "bad dynamic 'bogus': expected one of batch, all, none"),
    (Square(), {"fp32_precision": "tf31"}, solar.BadOptionError, "sol: bad fp32-precision 'tf31'"),
    (Square(), {"tile_search": "lots"}, solar.BadOptionError, "tile-search: bad buffer 'lots'"),
    (Square(), {"tile_search": 3}, solar.BadInputError, "tile_search must be True, False or a buffer"),
    (Square(), {"name": 5}, solar.BadInputError, "name must be a string, not an int"),
    (Square, {}, solar.BadInputError, "Square is a torch.nn.Module class, not a program: give an instance"),
    (Exits(), {}, solar.ModelError, f"{HERE}:{EXIT_LINE}:9: error: the program called sys.exit(3)"),
    (lambda x: x, {}, solar.BadInputError, "example input 0 is a torch.Tensor, and a function is analysed as JAX"),
    (None, {}, solar.BadInputError, "cannot analyse None: give a torch.nn.Module"),
    (MLP_SIR.encode(), {}, solar.BadInputError, "cannot analyse a bytes: give a torch.nn.Module"),
    (MLP_SIR, {}, solar.BadInputError, "SIR takes no example_inputs"),
])
def test_bad_input_to_analyze(program: Any, options: dict[str, Any], kind: type[solar.SolarError],
                              start: str) -> None:
    assert _raises(kind, lambda: solar.analyze(program, (X,), **options)).startswith(start)


def test_a_jax_function_that_exits_or_returns_nothing() -> None:
    jnp = pytest.importorskip("jax.numpy")

    def exits(x: Any) -> Any:
        sys.exit(1)

    line = exits.__code__.co_firstlineno + 1
    assert _raises(solar.ModelError, lambda: solar.analyze(exits, (jnp.ones((4, 8)),))).startswith(
        f"{HERE}:{line}:9: error: the program called sys.exit(1)")
    assert _raises(solar.TranslationFailed, lambda: solar.analyze(lambda x: (), (jnp.ones((4, 8)),))).startswith(
        "the program returns no tensor")


@pytest.mark.parametrize(("call", "kind", "message"), [
    (lambda a: a.total("bogus"), solar.BadOptionError,
     "no mode 'bogus' in this analysis (it has unfused, fused, whole_graph)"),
    (lambda a: a.total("fused", "b999"), solar.UnknownTargetError,
     "no target 'b999' in this analysis (it has h100-sxm)"),
    (lambda a: a.total("fused", "b200"), solar.UnknownTargetError,
     "no target 'b200' in this analysis (it has h100-sxm)"),
    (lambda a: a.by_source_line("b999"), solar.UnknownTargetError,
     "no target 'b999' in this analysis (it has h100-sxm)"),
    (lambda a: a.to_pandas("rows"), solar.BadOptionError, "no table 'rows': choose units, groups, lines or totals"),
    (lambda a: a.to_html(5), solar.BadInputError, "a report path must be a string or a path, not an int"),
    (lambda a: a.save_json(None), solar.BadInputError, "a report path must be a string or a path, not None"),
    (lambda a: a.sweep(BATCH=4), solar.SweepSpecError,
     "sweep: BATCH=4 is one size, not a sweep: give a list such as [4] or a range such as '1..64*2'"),
    (lambda a: a.sweep(BATCH=[1, 2.5]), solar.SweepSpecError, "sweep: BATCH takes whole numbers, not 2.5"),
    (lambda a: a.sweep(BATCH=[2.0]), solar.SweepSpecError, "sweep: BATCH takes whole numbers, not 2.0"),
    (lambda a: a.sweep(BATCH=[True]), solar.SweepSpecError, "sweep: BATCH takes whole numbers, not True"),
    (lambda a: a.sweep(BATCH=None), solar.SweepSpecError,
     "sweep: BATCH takes a list of sizes or a range such as '1..64*2', not None"),
    (lambda a: a.sweep(["BATCH"]), solar.SweepSpecError,
     "sweep: give the sizes as keywords, sweep(BATCH='1..64*2'), or as a dict of them, not a list"),
    (lambda a: a.sweep(BATCH=[2], latency=5), solar.SweepSpecError,
     "sweep: latency takes a time with its unit, such as '2ms', not 5"),
    (lambda a: a.bench(device="tpu"), solar.BadOptionError, "bench: bad device 'tpu': expected auto, cpu or cuda"),
    (lambda a: a.bench(frameworks=("eagre",)), solar.BadOptionError,
     "bench: unknown framework mode 'eagre' (choose from eager, compile, jit)"),
    (lambda a: a.bench(frameworks=("jit",)), solar.BadOptionError,
     "bench: a PyTorch program is measured in eager or compile mode, not under jax.jit"),
    (lambda a: a.bench(budget_s=0), solar.BadOptionError, "bench: budget_s must be a positive number of seconds"),
    (lambda a: a.bench(min_runs=0), solar.BadOptionError, "bench: budget_s must be a positive number of seconds"),
])
def test_bad_input_to_an_analysis(square: solar.Analysis, call: Callable[[solar.Analysis], Any],
                                  kind: type[solar.SolarError], message: str) -> None:
    if "sweep" in message:
        assert _raises(kind, lambda: call(square)) == message
    else:
        assert _raises(kind, lambda: call(square)).startswith(message)
    assert square.sweeps == [] and square.measured is None  # a failed call leaves nothing behind


def test_a_target_alias_names_its_target(square: solar.Analysis) -> None:
    assert square.total("fused", "h100") == square.total("fused", "h100-sxm") == square.total()
    assert square.total() > 0


def test_a_sweep_takes_whole_numbers_of_any_integer_kind(square: solar.Analysis) -> None:
    import numpy as np

    doc = square.sweep(BATCH=range(1, 4))
    assert doc["swept"] == {"BATCH": [1, 2, 3]}
    assert square.sweep(BATCH=np.array([2, 4]).tolist())["swept"] == {"BATCH": [2, 4]}
    square.sweeps.clear()


@pytest.mark.skipif(torch.cuda.is_available(), reason="the machine has a CUDA device")
def test_bench_on_cuda_without_a_device(square: solar.Analysis) -> None:
    assert _raises(solar.BadOptionError, lambda: square.bench(device="cuda")).startswith(
        "bench: device 'cuda', but torch sees no CUDA device")


PROGRAM = '''import torch
from {sibling} import WIDTH


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(WIDTH, WIDTH, bias=False)

    def forward(self, x):
        return self.proj(x)


def get_inputs():
    return [torch.randn(4, WIDTH)]
'''


def _program(folder: Path, width: int, sibling: str = "_api_test_sizes") -> Path:
    folder.mkdir()
    (folder / f"{sibling}.py").write_text(f"WIDTH = {width}\n")
    (folder / "model.py").write_text(PROGRAM.format(sibling=sibling))
    return folder / "model.py"


def test_a_py_file_imports_its_own_siblings_and_leaves_the_process_as_it_was(tmp_path: Path) -> None:
    path_before = list(sys.path)
    narrow = solar.analyze(str(_program(tmp_path / "narrow", 8)))
    wide = solar.analyze(_program(tmp_path / "wide", 16))  # a Path, and a sibling of the same name
    # One matmul of a 4-row batch: 2·4·W·W FLOPs, each program with its own W.
    assert narrow.totals["h100-sxm"]["unfused"].flops == 2 * 4 * 8 * 8
    assert wide.totals["h100-sxm"]["unfused"].flops == 2 * 4 * 16 * 16
    assert narrow.origin.params == wide.origin.params == {"BATCH": 4}
    assert sys.path == path_before
    assert "_api_test_sizes" not in sys.modules


def test_a_py_file_takes_example_inputs_instead_of_its_own(tmp_path: Path) -> None:
    analysis = solar.analyze(_program(tmp_path / "p", 8), (torch.randn(32, 8),))
    assert analysis.origin.params == {"BATCH": 32}
    assert analysis.totals["h100-sxm"]["unfused"].flops == 2 * 32 * 8 * 8


def test_a_py_files_model_is_built_for_bench_only_when_measured(tmp_path: Path) -> None:
    path = _program(tmp_path / "m", 8)
    analysis = solar.analyze(path)
    assert analysis.live is None and analysis.make_live is not None  # nothing allocated at full size yet
    _raises(solar.BadOptionError, lambda: analysis.bench(device="tpu"))
    assert analysis.live is None  # bad options are refused before the model is built
    record = analysis.bench(budget_s=0.05, warmup=0, min_runs=1, lines=False)
    assert record["measurements"]["eager"]["min_s"] > 0
    assert type(analysis.live[0]).__name__ == "Model" and analysis.live[1][0].device.type == "cpu"


def test_a_py_file_that_exits_when_built_for_bench(tmp_path: Path) -> None:
    path = _program(tmp_path / "e", 8)
    path.write_text(path.read_text().replace("    return [torch.randn(4, WIDTH)]",
                                             "    if torch.empty(0).device.type != 'meta':\n"
                                             "        raise SystemExit(5)\n"
                                             "    return [torch.randn(4, WIDTH)]"))
    analysis = solar.analyze(path)  # translated on the meta device: the inputs build
    assert _raises(solar.ModelError, lambda: analysis.bench(budget_s=0.01)) == (
        f"{path}:16:9: error: the program called sys.exit(5) while building the model and its inputs: a program "
        "to translate must return, not exit")


def test_bad_py_files(tmp_path: Path) -> None:
    exits = tmp_path / "exits.py"
    exits.write_text("import sys\nsys.exit(2)\n")
    assert _raises(solar.ModelError, lambda: solar.analyze(str(exits))).startswith(
        f"{exits}:2:1: error: the program called sys.exit(2) while importing {exits}")
    lonely = tmp_path / "lonely.py"
    lonely.write_text("from _api_test_nowhere import WIDTH\n")
    assert _raises(solar.ModelError, lambda: solar.analyze(str(lonely))).startswith(
        f"{lonely}:1:1: error: cannot import '_api_test_nowhere'")
    no_model = tmp_path / "no_model.py"
    no_model.write_text("WIDTH = 3\n")
    assert _raises(solar.BadInputError, lambda: solar.analyze(str(no_model))) == (
        f"{no_model} does not define Model (a KernelBench-style file defines Model, get_inputs() and "
        "get_init_inputs(); pass other code itself)")
