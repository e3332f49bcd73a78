"""Fuzzing `--sweep` and `--design-space` (issue 36, item 6): random strings from the specs' own alphabet
(sizes, ranges, steps, factors, names) and from any text, through their parsers, and a few through
solar-opt on examples/params.sir. A spec is parsed into what the docs promise (positive sizes once each;
positive finite factors; a bounded grid) or refused with a SweepError; solar-opt answers with one line and
exit 1, never a traceback, and never loses an existing report."""

from __future__ import annotations

import contextlib
import io
import math
import random
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))

from surface_fuzz import SEED, examples, fuzz_settings, one_line

from solar.backends.sweep_spec import (
    MAX_POINTS,
    SweepError,
    parse_design_space,
    parse_sweep,
    parse_sweeps,
)
from solar.tools.solar_opt import run as solar_opt

PARAMS_SIR = str(Path(__file__).resolve().parents[2] / "examples" / "params.sir")

# The pieces specs are written from, and pieces that are close to them but wrong.
NUMBERS = ["0", "1", "2", "3", "8", "64", "1024", "4096", "-1", "-0", "007", "1_000", "2.5", "1e3", "0x10",
           "9" * 20, "9" * 400, "nan", "inf", "½", "٣", " 4 ", ""]
FACTORS = ["0.5", "1", "2", "8", "0", "-1", "1e-300", "1e308", "1e999", "nan", "inf", "2x", "0.5x", "x", "1xx",
           ".5", "3.", "1_0"]
SIZE_NAMES = ["S", "D", "FF", "BATCH", "s", "NOPE", "1S", "S D", "", "S=", "_"]
AXES = ["bandwidth", "compute", "l2", "Bandwidth", "memory", "", " compute "]
SEPARATORS = ["..", "...", ".", "*", "+", "**", "..*", ",", ",,", " ", "="]


def _joined(pieces: st.SearchStrategy[str], at_most: int = 8) -> st.SearchStrategy[str]:
    return st.lists(pieces, min_size=1, max_size=at_most).map("".join)


SIZE_TEXT = _joined(st.sampled_from(NUMBERS + SEPARATORS))
FACTOR_TEXT = _joined(st.sampled_from(FACTORS + SEPARATORS))
SWEEP_SPEC = st.one_of(st.tuples(st.sampled_from(SIZE_NAMES), st.just("="), SIZE_TEXT).map("".join),
                       st.text(max_size=30))
AXIS_SPEC = st.tuples(st.sampled_from(AXES), st.sampled_from(["=", "", "=="]), FACTOR_TEXT).map("".join)
DESIGN_SPEC = st.one_of(st.lists(AXIS_SPEC, min_size=1, max_size=4).map(",".join), st.text(max_size=30))


@fuzz_settings(400)
@given(SWEEP_SPEC)
def test_a_sweep_is_positive_sizes_once_each_or_a_sweep_error(spec: str) -> None:
    try:
        name, values = parse_sweep(spec)
    except SweepError as err:
        assert one_line(str(err)) and str(err).strip()
        return
    assert name and "=" not in name
    assert values and all(isinstance(v, int) and 0 < v < 2**63 for v in values)
    assert len(set(values)) == len(values) <= MAX_POINTS


@fuzz_settings(150)
@given(st.lists(SWEEP_SPEC, max_size=3))
def test_sweeps_name_each_size_once_or_a_sweep_error(specs: list[str]) -> None:
    try:
        axes = parse_sweeps(specs)
    except SweepError:
        return
    assert len(axes) == len(specs)


@fuzz_settings(400)
@given(DESIGN_SPEC)
def test_a_design_space_is_positive_finite_factors_or_a_sweep_error(spec: str) -> None:
    try:
        space = parse_design_space(spec)
    except SweepError as err:
        assert one_line(str(err)) and str(err).strip()
        return
    axes = [space.bandwidth, space.compute, *([space.l2] if space.l2 is not None else [])]
    assert all(a and all(isinstance(f, float) and math.isfinite(f) and f > 0 for f in a) for a in axes)
    assert space.scalings <= MAX_POINTS


def _solar_opt(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = solar_opt(argv)
    return code, err.getvalue()


def test_solar_opt_answers_random_specs_in_one_line_and_keeps_its_report(tmp_path: Path) -> None:
    # End to end (a run of the passes each): a few specs, drawn with a fixed seed from the strategies above.
    rng = random.Random(SEED)
    report = tmp_path / "sweep.json"
    outcomes: dict[int, int] = {}
    for i in range(examples(8)):
        report.write_text("kept")
        sweep = _draw(rng, NUMBERS + SEPARATORS, "S=")
        design = _draw(rng, FACTORS + SEPARATORS, rng.choice(["bandwidth=", "compute=", "l2=", "x="]))
        argv = [PARAMS_SIR, "--sol=h100", "-o", str(tmp_path / "out.sir"), "--sweep", sweep,
                "--sweep-report", str(report)]
        if i % 2:
            argv += ["--design-space", design, "--target-latency", rng.choice(["1ms", "0s", "-1ms", "fast"])]
        code, err = _solar_opt(argv)
        outcomes[code] = outcomes.get(code, 0) + 1
        assert code in (0, 1), f"{argv}: exit {code}: {err}"
        if code == 1:
            # A flag's error is `solar-opt: error: ...`; the --sol pass's options (a bad latency) are reported
            # at the module, as `--sol{latency=...}` is (tests/lit/sweep/limits.test).
            assert one_line(err) and err.startswith(("solar-opt: error: ", f"{PARAMS_SIR}:")), f"{argv}: {err}"
            assert report.read_text() == "kept", argv
        else:
            assert report.read_text().startswith("{"), argv
    assert outcomes.get(1), outcomes  # the draw reaches the errors, not only good specs


def _draw(rng: random.Random, pieces: list[str], prefix: str) -> str:
    return prefix + "".join(rng.choice(pieces) for _ in range(rng.randint(1, 5)))


def test_a_spec_with_a_newline_is_quoted_on_one_line() -> None:
    # Found by the fuzzer: the spec was quoted as given, so a newline in it split the error over two lines.
    for parse, spec, shown in [(parse_sweep, "\n", "bad sweep '\\n'"), (parse_sweep, "S=1\n2", "S: '1\\n2'"),
                               (parse_design_space, "x\ny", "bad design space 'x\\ny'"),
                               (parse_design_space, "l\t2=2x", "unknown design-space axis 'l\\t2'")]:
        try:
            parse(spec)
        except SweepError as err:
            assert str(err).startswith(shown) and "\n" not in str(err), str(err)
        else:
            raise AssertionError(f"{spec!r} was accepted")
