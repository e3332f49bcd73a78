"""Fuzzing the Python API's arguments (issue 36, item 6): random values for every keyword of
`solar.analyze` and for the arguments of `Analysis.total`, `by_source_line`, `sweep`, `to_pandas` and the
report writers, on small SIR examples. Each call returns its result or raises a `solar.SolarError`
subclass with a one-line message; never another exception, and a failed write never loses a file."""

from __future__ import annotations

import contextlib
import importlib.util
import math
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))

from surface_fuzz import ODD_VALUES, fuzz_settings, one_line

import solar

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PARAMS_SIR = str(EXAMPLES / "params.sir")
MATMUL_SIR = str(EXAMPLES / "matmul.sir")

ODD = st.sampled_from(ODD_VALUES)
TARGET = st.sampled_from(["h100", "b200", "h100-sxm", "H100", "no_such_chip", "", " h100", "h100,b200", "x.yaml"])
KEYWORDS: dict[str, st.SearchStrategy[Any]] = {
    "targets": st.one_of(TARGET, st.lists(TARGET, max_size=3), st.tuples(TARGET), ODD),
    "fuse": st.one_of(st.booleans(), ODD),
    "tile_search": st.one_of(st.sampled_from([False, True, "l2", "40MiB", "0B", "-1MiB", "1e999KiB", "big",
                                              "l7", "smem"]), ODD),
    "dynamic": st.one_of(st.sampled_from(["batch", "all", "none", "BATCH", "some"]), ODD),
    "fp32_precision": st.one_of(st.sampled_from(["framework", "tf32", "fp32", "ieee", "bf16x3", "fast"]), ODD),
    "name": st.one_of(st.text(max_size=8), ODD),
}
PROGRAM = st.one_of(st.sampled_from([MATMUL_SIR, Path(MATMUL_SIR), str(EXAMPLES), str(EXAMPLES / "none.sir"),
                                     "solar.module @m {", "solar.module @m {}", "", "\x00", b"solar.module"]), ODD)


def _solar_error(err: BaseException) -> None:
    """The API's promise about an error: a SolarError whose message is one line."""
    assert isinstance(err, solar.SolarError), f"{type(err).__name__}: {err}"
    assert one_line(str(err)), repr(str(err))


def outcome(call: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return call(*args, **kwargs)
    except Exception as err:
        _solar_error(err)
        return err


@fuzz_settings(120)
@given(st.fixed_dictionaries({}, optional=KEYWORDS))
def test_analyze_keywords_give_an_analysis_or_a_solar_error(keywords: dict[str, Any]) -> None:
    result = outcome(solar.analyze, MATMUL_SIR, **keywords)
    if isinstance(result, solar.Analysis):
        seconds = result.total("unfused")
        assert math.isfinite(seconds) and seconds > 0


@fuzz_settings(100)
@given(PROGRAM, st.one_of(st.none(), st.tuples(), ODD))
def test_analyze_programs_give_an_analysis_or_a_solar_error(program: Any, inputs: Any) -> None:
    outcome(solar.analyze, program, inputs)


@pytest.fixture(scope="module")
def analysis() -> solar.Analysis:
    return solar.analyze(PARAMS_SIR, targets=("h100", "b200"))


MODE = st.one_of(st.sampled_from(["unfused", "fused", "whole_graph", "cache_aware", "FUSED", "", "sol"]), ODD)
TARGET_NAME = st.one_of(st.none(), TARGET)


@fuzz_settings(150)
@given(MODE, TARGET_NAME)
def test_totals_are_seconds_or_a_solar_error(analysis: solar.Analysis, mode: Any, target: Any) -> None:
    result = outcome(analysis.total, mode, target)
    if not isinstance(result, Exception):
        assert isinstance(result, float) and math.isfinite(result) and result > 0


@fuzz_settings(60)
@given(TARGET_NAME, st.one_of(st.sampled_from(["units", "groups", "lines", "totals", "Units", ""]), ODD))
def test_views_are_tables_or_a_solar_error(analysis: solar.Analysis, target: Any, table: Any) -> None:
    outcome(analysis.by_source_line, target)
    if importlib.util.find_spec("pandas") is not None:  # optional: without it, to_pandas says to install it
        outcome(analysis.to_pandas, table)


SIZE_VALUES = st.one_of(st.sampled_from(["1..64*2", "4096", "1,2,3", "0", "1..0", "x", "", "1..10**9"]),
                        st.lists(st.one_of(st.integers(-3, 10**20), ODD), max_size=4), ODD)
SIZE_NAMES = st.sampled_from(["S", "D", "FF", "NOPE", "s", "latency_", "_"])


@fuzz_settings(150)
@given(st.dictionaries(SIZE_NAMES, SIZE_VALUES, max_size=3),
       st.one_of(st.none(), st.sampled_from(["1ms", "0s", "-1ms", "fast", "1e999s", ""]), ODD))
def test_sweeps_are_documents_or_a_solar_error(analysis: solar.Analysis, sizes: dict[str, Any],
                                               latency: Any) -> None:
    before = len(analysis.sweeps)
    result = outcome(analysis.sweep, latency=latency, **sizes)
    if isinstance(result, dict):
        assert result["records"] and len(analysis.sweeps) == before + 1
    else:
        assert len(analysis.sweeps) == before
    del analysis.sweeps[before:]  # every example starts from the same analysis


PATHS = ["{tmp}/report", "{tmp}/no/dir/report", "{tmp}", "", "{tmp}/kept"]


@fuzz_settings(25)
@given(st.sampled_from(["save_json", "to_html", "plot"]), st.one_of(st.sampled_from(PATHS), ODD))
def test_report_writers_write_or_raise_and_keep_files(analysis: solar.Analysis, tmp_path_factory: Any,
                                                      writer: str, path: Any) -> None:
    tmp = tmp_path_factory.mktemp("reports")
    kept = tmp / "kept"
    kept.write_text("kept")
    with contextlib.chdir(tmp):  # a relative path (an odd value such as "7") is written there, not in the repo
        result = outcome(getattr(analysis, writer), path.format(tmp=tmp) if isinstance(path, str) else path)
    if isinstance(result, Exception):
        assert kept.read_text() == "kept"


def _torch_inputs() -> st.SearchStrategy[Any]:
    torch = pytest.importorskip("torch")
    tensors = st.sampled_from([torch.ones(2, 4), torch.ones(3), torch.ones(2, 5), torch.ones(0, 4),
                               torch.ones(2, 4, dtype=torch.int64), torch.ones(2, 4, dtype=torch.complex64)])
    return st.one_of(st.tuples(tensors), st.tuples(tensors, tensors), st.lists(tensors, max_size=2), tensors,
                     st.none(), ODD)


def test_analyze_of_a_module_with_odd_inputs_gives_an_analysis_or_a_solar_error() -> None:
    torch = pytest.importorskip("torch")
    model = torch.nn.Linear(4, 3)

    @fuzz_settings(12)
    @given(_torch_inputs(), st.sampled_from(["batch", "all", "none", "some", 3]))
    def check(inputs: Any, dynamic: Any) -> None:
        outcome(solar.analyze, model, inputs, dynamic=dynamic)

    check()


# Found by this fuzzer (a PNG an odd path had left behind): a path to a file that is not UTF-8 is a
# UnicodeDecodeError from analyze() (apierr merged); solar-opt says "invalid UTF-8 at byte offset 0".
def test_analyze_of_a_file_that_is_not_text_is_a_solar_error(tmp_path: Path) -> None:
    png = tmp_path / "roofline.sir"
    png.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    with pytest.raises(solar.SolarError, match="UTF-8"):
        solar.analyze(str(png))
