"""The SOL outputs through `solar-opt` (in process): the JSON report against its documented schema
(docs/sol.md, version 1) and against the terminal table, the roofline plot, the IR attributes, custom and
NVIDIA-format targets, and the errors (unknown target, unbound size parameter)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from test_sol_formulas import matmul_text
from test_sol_support import MODES, close

from solar.ir.ops import EinsumOp, GroupOp, KernelOp
from solar.ir.parser import parse_module
from solar.tools.solar_opt import run

ROOT = Path(__file__).resolve().parents[2]
MLP = ROOT / "examples" / "mlp.sir"
DATA = Path(__file__).parent / "data"
BOUNDS = {"tensor", "vector", "memory", "none"}


def solar_opt(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = run(args)
    out = capsys.readouterr()
    return code, out.out, out.err


# ---- the schema, written by hand from docs/sol.md ------------------------------------------------------


def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _require(obj: Any, fields: dict[str, Any], where: str) -> None:
    """Every documented field is present with its type; fields added later within version 1 are allowed."""
    assert isinstance(obj, dict), f"{where}: not an object"
    for key, check in fields.items():
        assert key in obj, f"{where}: missing '{key}'"
        assert check(obj[key]), f"{where}.{key}: bad value {obj[key]!r}"


def _counts(x: Any) -> bool:
    return isinstance(x, dict) and all(isinstance(k, str) and isinstance(v, int) and v >= 0 for k, v in x.items())


TIMES = {"time_s": _number, "tensor_s": _number, "vector_s": _number, "memory_s": _number,
         "bound": lambda b: b in BOUNDS}
WORK = {"name": lambda s: isinstance(s, str), "kind": lambda s: isinstance(s, str),
        "trips": lambda n: isinstance(n, int) and n >= 1, "flops_tensor": _counts, "flops_vector": _counts,
        "bytes": lambda n: isinstance(n, int) and n >= 0, "intensity": lambda x: x is None or _number(x),
        "peaks": lambda ps: isinstance(ps, list) and all(
            set(p) == {"work", "dtype", "precision", "unit", "flop_per_s", "reason"} and _number(p["flop_per_s"])
            and p["flop_per_s"] > 0 for p in ps), **TIMES}
MODE = {"flops": lambda n: isinstance(n, int) and n >= 0, "bytes": lambda n: isinstance(n, int) and n >= 0, **TIMES}
INVERSE = {k: _number for k in ("latency_s", "compute_factor", "bandwidth_factor", "both_factor", "least_bandwidth")}


def _roofline_consistent(obj: dict[str, Any], where: str) -> None:
    parts = {"tensor": obj["tensor_s"], "vector": obj["vector_s"], "memory": obj["memory_s"]}
    assert min(parts.values()) >= 0
    assert obj["time_s"] == max(parts.values()), where
    if obj["time_s"] > 0:
        assert parts[obj["bound"]] == obj["time_s"], where


def validate(doc: Any) -> None:
    """docs/sol.md, "JSON schema, version 1", and the relations it states between the numbers."""
    _require(doc, {"schema": lambda s: s == "solar.sol-report", "version": lambda v: v == 1,
                   "module": lambda s: isinstance(s, str) and s != "",
                   "params": lambda p: isinstance(p, dict) and all(isinstance(v, int) for v in p.values()),
                   "allow_tf32": lambda b: isinstance(b, bool),
                   "fp32_precision": lambda p: p in ("framework", "highest", "tf32"),
                   "targets": lambda t: isinstance(t, list) and len(t) >= 1}, "report")
    for t in doc["targets"]:
        _require(t, {"name": lambda s: isinstance(s, str), "full_name": lambda s: isinstance(s, str),
                     "dram_bandwidth": lambda x: _number(x) and x > 0, "modes": lambda m: set(m) == set(MODES),
                     "fusion_gain": lambda x: _number(x) and x > 0, "units": lambda u: isinstance(u, list),
                     "groups": lambda g: isinstance(g, list), "inverse": lambda i: i is None or set(i) == set(MODES)},
                 t.get("name", "target"))
        where = t["name"]
        for m, res in t["modes"].items():
            _require(res, MODE, f"{where}.modes.{m}")
            if m == "whole_graph":  # one roofline
                _roofline_consistent(res, f"{where}.modes.{m}")
            else:  # Σ of rooflines: between the largest summed term and the sum of all terms
                parts = (res["tensor_s"], res["vector_s"], res["memory_s"])
                assert max(parts) * (1 - 1e-12) <= res["time_s"] <= sum(parts) * (1 + 1e-12), (where, m)
        for kind in ("units", "groups"):
            for w in t[kind]:
                _require(w, WORK, f"{where}.{kind}.{w.get('name')}")
                _roofline_consistent(w, f"{where}.{kind}.{w['name']}")
                flops = sum(w["flops_tensor"].values()) + sum(w["flops_vector"].values())
                if w["bytes"]:
                    assert math.isclose(w["intensity"], flops / w["bytes"], rel_tol=1e-12)
                else:
                    assert w["intensity"] is None
        if t["inverse"] is not None:
            for m, inv in t["inverse"].items():
                _require(inv, INVERSE, f"{where}.inverse.{m}")
                assert close(inv["both_factor"] * inv["latency_s"], t["modes"][m]["time_s"]), (where, m)
                assert close(inv["least_bandwidth"], t["dram_bandwidth"] * inv["bandwidth_factor"])
        # Counts include trips: a mode's FLOPs and unfused bytes are the sums over its units.
        unit_flops = sum(sum(w["flops_tensor"].values()) + sum(w["flops_vector"].values()) for w in t["units"])
        assert t["modes"]["unfused"]["flops"] == unit_flops == t["modes"]["whole_graph"]["flops"]
        assert t["modes"]["unfused"]["bytes"] == sum(w["bytes"] for w in t["units"])
        assert close(t["modes"]["unfused"]["time_s"], sum(w["time_s"] for w in t["units"]))
        assert close(t["fusion_gain"], t["modes"]["unfused"]["time_s"] / t["modes"]["fused"]["time_s"])


def test_json_report_validates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "r.json"
    code, _, err = solar_opt([str(MLP), "--lift-einsum", "--fuse", "--sol=h100,b200,jetson-thor",
                              f"--sol-report={report}", "--target-latency=20us", "-o", str(tmp_path / "o.sir")], capsys)
    assert code == 0, err
    doc = json.loads(report.read_text())
    validate(doc)
    assert doc["module"] == "mlp" and doc["params"] == {"B": 64} and doc["allow_tf32"] is False
    assert [t["name"] for t in doc["targets"]] == ["h100-sxm", "b200", "jetson-thor"]
    assert [w["name"] for w in doc["targets"][0]["units"]] == ["@fc1", "@relu", "@fc2"]
    assert [w["name"] for w in doc["targets"][0]["groups"]] == ["@group0"]
    assert all(close(t["inverse"][m]["latency_s"], 20e-6) for t in doc["targets"] for m in MODES)


def test_json_report_without_latency_and_with_tf32(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "r.json"
    code, _, err = solar_opt([str(MLP), "--fuse=mode=none", "--sol=a100", "--allow-tf32",
                              f"--sol-report={report}", "-o", str(tmp_path / "o.sir")], capsys)
    assert code == 0, err
    doc = json.loads(report.read_text())
    validate(doc)
    assert doc["allow_tf32"] is True and doc["targets"][0]["inverse"] is None and doc["targets"][0]["groups"] == []
    # With TF32, the matmuls run on tensor cores: fc1's tensor time is 2·64·1024·512 / 156 TFLOP/s.
    fc1 = doc["targets"][0]["units"][0]
    assert close(fc1["tensor_s"], 2 * 64 * 1024 * 512 / 156e12)


# ---- the terminal table holds the JSON's numbers ---------------------------------------------------------

_SECONDS = {"s": 1.0, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9, "ps": 1e-12}
_QUANTITY = {"E": 1e18, "P": 1e15, "T": 1e12, "G": 1e9, "M": 1e6, "k": 1e3, "": 1.0}


def parse_seconds(cell: str) -> float:
    m = re.fullmatch(r"([0-9.e+-]+)(?: (s|ms|µs|ns|ps))?", cell)
    assert m, cell
    return float(m.group(1)) * _SECONDS[m.group(2) or "s"]


def parse_quantity(cell: str) -> float:
    if cell == "∞":
        return math.inf
    m = re.fullmatch(r"([0-9.]+) ?([EPTGMk]?)", cell)
    assert m, cell
    return float(m.group(1)) * _QUANTITY[m.group(2)]


def shown(cell_value: float, exact: float) -> bool:
    """A table cell shows 3 significant digits."""
    return math.isclose(cell_value, exact, rel_tol=5e-3, abs_tol=0.0) or cell_value == exact


def tables(text: str) -> dict[str, list[list[str]]]:
    """The report's tables by title: each row's cells (rich's box drawing)."""
    out: dict[str, list[list[str]]] = {}
    title = ""
    for line in text.splitlines():
        if line.startswith("│"):
            out.setdefault(title, []).append([c.strip() for c in line.strip("│").split("│")])
        elif line.strip() and not line.startswith(("┏", "┃", "┡", "└")):
            title = line.strip()
    return out


def test_table_equals_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "r.json"
    code, _, err = solar_opt([str(MLP), "--lift-einsum", "--fuse", "--sol=h100,b200", f"--sol-report={report}",
                              "--target-latency=2us", "-o", str(tmp_path / "o.sir")], capsys)
    assert code == 0, err
    doc = json.loads(report.read_text())
    t = tables(err)
    peaks_title = "Peaks used (the precision and unit FLOPs are priced at)"
    assert set(t) == {"Speed of light of @mlp: units of execution (unfused)", peaks_title, "Fusion groups",
                      "Totals", "Inverse roofline for a latency of 2 µs"}
    # Every unit names the peak its work is priced at, as the JSON does (f32 without attributes: FP32 vector).
    assert [row[0] for row in t[peaks_title]] == [w["name"] for w in doc["targets"][0]["units"]]
    for row, w in zip(t[peaks_title], doc["targets"][0]["units"], strict=True):
        for j, target in enumerate(doc["targets"]):
            for p in target["units"][[u["name"] for u in target["units"]].index(w["name"])]["peaks"]:
                assert f"{p['dtype']}: {p['precision']} {p['unit']}" in row[1 + j]
                assert parse_quantity(row[1 + j].split(f"{p['precision']} {p['unit']} ")[1].split("FLOP/s")[0]) \
                    == pytest.approx(p["flop_per_s"], rel=5e-3)
    targets = doc["targets"]
    for title, kind, first in (("Speed of light of @mlp: units of execution (unfused)", "units", 2),
                               ("Fusion groups", "groups", 1)):
        rows = t[title]
        assert len(rows) == len(targets[0][kind])
        for k, row in enumerate(rows):
            w = targets[0][kind][k]
            assert row[0] == w["name"]
            flops_t, flops_v, nbytes, ai = (parse_quantity(c) for c in row[first:first + 4])
            assert shown(flops_t, sum(w["flops_tensor"].values()))
            assert shown(flops_v, sum(w["flops_vector"].values()))
            assert shown(nbytes, w["bytes"]) and shown(ai, w["intensity"])
            for j, target in enumerate(targets):
                cell_time, cell_bound = row[first + 4 + 2 * j], row[first + 5 + 2 * j]
                assert shown(parse_seconds(cell_time), target[kind][k]["time_s"]), (row, target["name"])
                assert cell_bound == target[kind][k]["bound"]
    totals = {row[0]: row for row in t["Totals"]}
    for mode, label in zip(MODES, ("unfused (Σ kernels)", "fused (Σ groups)", "whole graph"), strict=True):
        row = totals[label]
        assert shown(parse_quantity(row[1]), targets[0]["modes"][mode]["flops"])
        assert shown(parse_quantity(row[2]), targets[0]["modes"][mode]["bytes"])
        for j, target in enumerate(targets):
            assert shown(parse_seconds(row[3 + 2 * j]), target["modes"][mode]["time_s"])
            assert row[4 + 2 * j] == target["modes"][mode]["bound"]
    gain = totals["fusion gain (unfused ÷ fused)"]
    for j, target in enumerate(targets):
        assert gain[3 + 2 * j] == f"{target['fusion_gain']:.2f}×"
    inverse = t["Inverse roofline for a latency of 2 µs"]
    assert len(inverse) == 3  # no wrapped cells
    for row in inverse:
        mode = {"unfused (Σ kernels)": "unfused", "fused (Σ groups)": "fused", "whole graph": "whole_graph"}[row[0]]
        for j, target in enumerate(targets):
            inv = target["inverse"][mode]
            cells = [float(c) for c in row[1 + 3 * j:4 + 3 * j]]
            assert all(shown(c, e) for c, e in zip(cells, (inv["compute_factor"], inv["bandwidth_factor"],
                                                              inv["both_factor"]), strict=True)), (row, mode)


# ---- the roofline plot -----------------------------------------------------------------------------------


def test_plot_writes_a_png_with_points(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.axes

    points: list[int] = []
    roofs: list[int] = []
    scatter, plot = matplotlib.axes.Axes.scatter, matplotlib.axes.Axes.plot

    def counting_scatter(self: matplotlib.axes.Axes, x: Any, y: Any, *args: Any, **kwargs: Any) -> Any:
        points.append(len(x))
        return scatter(self, x, y, *args, **kwargs)

    def counting_plot(self: matplotlib.axes.Axes, *args: Any, **kwargs: Any) -> Any:
        roofs.append(1)
        return plot(self, *args, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "scatter", counting_scatter)
    monkeypatch.setattr(matplotlib.axes.Axes, "plot", counting_plot)
    png = tmp_path / "roofline.png"
    code, _, err = solar_opt([str(MLP), "--lift-einsum", "--fuse", "--sol=h100,jetson-thor", f"--plot={png}",
                              "-o", str(tmp_path / "o.sir")], capsys)
    assert code == 0, err
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000
    # Three units and one group on each of the two panels; one roof per peak used (f32 vector) per panel.
    assert sum(points) == 2 * (3 + 1)
    assert len(roofs) == 2


# ---- IR attributes ---------------------------------------------------------------------------------------


def test_ir_attributes_on_units_groups_and_module(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, report = tmp_path / "o.sir", tmp_path / "r.json"
    code, _, err = solar_opt([str(MLP), "--lift-einsum", "--fuse", "--sol=h100,b200", f"--sol-report={report}",
                              "-o", str(out)], capsys)
    assert code == 0, err
    doc = json.loads(report.read_text())
    module = parse_module(out.read_text(), "o.sir")
    names = [t["name"] for t in doc["targets"]]
    assert [a["target"] for a in module.attrs["sol"]] == names
    for attr, t in zip(module.attrs["sol"], doc["targets"], strict=True):
        for m in MODES:
            assert attr[f"{m}_s"] == t["modes"][m]["time_s"]
        assert attr["fusion_gain"] == t["fusion_gain"]
    groups = [op for op in module.walk() if isinstance(op, GroupOp)]
    assert len(groups) == 1 and [a["target"] for a in groups[0].attrs["sol"]] == names
    for attr, t in zip(groups[0].attrs["sol"], doc["targets"], strict=True):
        g = t["groups"][0]
        assert (attr["time_s"], attr["bound"], attr["bytes"]) == (g["time_s"], g["bound"], g["bytes"])
    # The first op of every unit carries the unit's numbers; the other einsums of a kernel carry none.
    annotated = [op for op in module.walk() if isinstance(op, EinsumOp | KernelOp) and "sol" in op.attrs]
    assert [op.attrs["kernel"].name for op in annotated] == ["fc1", "relu", "fc2"]
    for k, op in enumerate(annotated):
        for attr, t in zip(op.attrs["sol"], doc["targets"], strict=True):
            u = t["units"][k]
            assert attr["target"] == t["name"]
            assert (attr["time_s"], attr["bound"], attr["bytes"]) == (u["time_s"], u["bound"], u["bytes"])
            assert attr["flops"] == sum(u["flops_tensor"].values()) + sum(u["flops_vector"].values())


def test_annotated_ir_round_trips(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = tmp_path / "a.sir", tmp_path / "b.sir"
    assert solar_opt([str(ROOT / "examples" / "embedding.sir"), "--lift-einsum", "--fuse", "--sol=h100",
                      "-o", str(first)], capsys)[0] == 0
    assert solar_opt([str(first), "-o", str(second)], capsys)[0] == 0
    assert first.read_text() == second.read_text()


# ---- targets: custom files, NVIDIA's format, errors -----------------------------------------------------

CUSTOM = """\
name: round-numbers
full_name: A made-up accelerator with round figures
vendor: test
compute:
  fp64_vector: unknown
  fp64_tensor: unknown
  fp32_vector: {value: 10, unit: TFLOP/s, source: user}
  tf32_tensor: {value: 50, unit: TFLOP/s, source: user}
  bf16_tensor: {value: 100, unit: TFLOP/s, source: user}
  fp16_tensor: {value: 100, unit: TFLOP/s, source: user}
  fp8_tensor: unsupported
  fp4_tensor: unsupported
  int8_tensor: unknown
memory:
  dram_capacity: {value: 16, unit: GB, source: user}
  dram_bandwidth: {value: 1, unit: TB/s, source: user}
  l2: unknown
  smem_per_sm: unknown
chip:
  sm_count: unknown
  tdp: unknown
"""


@pytest.mark.parametrize(("dtype", "tf32", "peak"), [("f32", False, 10e12), ("f32", True, 50e12),
                                                      ("bf16", False, 100e12)])
def test_custom_target_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], dtype: str, tf32: bool,
                            peak: float) -> None:
    target = tmp_path / "mine.yaml"
    target.write_text(CUSTOM)
    src, report = tmp_path / "mm.sir", tmp_path / "r.json"
    src.write_text(matmul_text(512, 512, 512, dtype))
    args = [str(src), f"--sol={target}", f"--sol-report={report}", "-o", str(tmp_path / "o.sir")]
    code, _, err = solar_opt(args + (["--allow-tf32"] if tf32 else []), capsys)
    assert code == 0, err
    t = json.loads(report.read_text())["targets"][0]
    assert t["name"] == "round-numbers" and t["dram_bandwidth"] == 1e12
    itemsize = 4 if dtype == "f32" else 2
    compute, memory = 2 * 512**3 / peak, 3 * 512 * 512 * itemsize / 1e12
    assert close(t["units"][0]["time_s"], max(compute, memory))
    assert t["units"][0]["bound"] == ("vector" if dtype == "f32" and not tf32 else "tensor")
    assert "round-numbers time" in err


def test_nvidia_arch_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """tests/unit/data/nvidia_arch_example.yaml: peaks = 2 × MAC/cycle × 1.6 GHz, β = 1250 B/cycle × 1.6 GHz."""
    src, report = tmp_path / "mm.sir", tmp_path / "r.json"
    src.write_text(matmul_text(256, 256, 2048, "bf16"))
    freq = 1.6e9
    for tf32, dtype, macs in ((False, "bf16", 131072), (False, "f32", 16384), (True, "f32", 65536)):
        src.write_text(matmul_text(256, 256, 2048, dtype))
        args = [str(src), f"--sol={DATA / 'nvidia_arch_example.yaml'}", f"--sol-report={report}", "-o",
                str(tmp_path / "o.sir")]
        code, _, err = solar_opt(args + (["--allow-tf32"] if tf32 else []), capsys)
        assert code == 0, err
        t = json.loads(report.read_text())["targets"][0]
        assert t["name"] == "Example_GPU" and t["dram_bandwidth"] == 1250 * freq
        itemsize = 4 if dtype == "f32" else 2
        compute = 2 * 256 * 256 * 2048 / (2 * macs * freq)
        memory = (256 * 2048 * 2 + 256 * 256) * itemsize / (1250 * freq)
        assert close(t["units"][0]["time_s"], max(compute, memory)), (dtype, tf32)


def test_unknown_target_is_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = solar_opt([str(MLP), "--sol=h10"], capsys)
    assert code == 1 and out == ""
    errors = [line for line in err.splitlines() if "error" in line]
    assert len(errors) == 1, err
    assert "unknown target 'h10': did you mean h100" in errors[0]
    assert "Traceback" not in err


def test_unknown_target_among_several(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = solar_opt([str(MLP), "--sol=h100,b20O"], capsys)
    assert code == 1 and "unknown target 'b20O': did you mean b200" in err and "Traceback" not in err


def test_missing_target_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = solar_opt([str(MLP), f"--sol={tmp_path / 'nope.yaml'}"], capsys)
    assert code == 1 and "nope.yaml" in err and "Traceback" not in err


UNBOUND = """solar.module @scale [M] {
  solar.func @f(%x: tensor<Mx8xf32>) -> tensor<Mx8xf32> {
    %y = solar.kernel @double(%x as X) -> (Y: tensor<Mx8xf32>) {
      affine.for %i = 0 to M { affine.for %j = 0 to 8 { Y[%i, %j] = X[%i, %j] * 2.0 } }
    }
    solar.return %y
  }
}
"""


def test_unbound_size_parameter_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "unbound.sir"
    src.write_text(UNBOUND)
    code, out, err = solar_opt([str(src), "--sol=h100"], capsys)
    assert code == 1 and out == ""
    assert "size parameters M need values: bind them with --bind-params=M=" in err
    assert "Traceback" not in err
    report = tmp_path / "r.json"
    code, _, err = solar_opt([str(src), "--bind-params=M=1000", "--sol=h100", f"--sol-report={report}",
                              "-o", str(tmp_path / "o.sir")], capsys)
    assert code == 0, err
    u = json.loads(report.read_text())["targets"][0]["units"][0]
    assert u["bytes"] == 2 * 1000 * 8 * 4 and sum(u["flops_vector"].values()) == 1000 * 8
    assert close(u["time_s"], 2 * 1000 * 8 * 4 / 3.35e12)


def test_sol_options_need_the_sol_pass(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = solar_opt([str(MLP), "--target-latency=2ms"], capsys)
    assert code == 1 and "--target-latency needs the --sol pass" in err


@pytest.mark.parametrize("latency", ["0ms", "fast", "-2ms", "2 parsecs"])
def test_bad_latency_is_a_clear_error(latency: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = solar_opt([str(MLP), "--sol=h100", f"--target-latency={latency}"], capsys)
    assert code == 1 and "bad latency" in err and "Traceback" not in err


def test_units_with_calls_are_costed_on_an_inlined_copy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A call is inlined on a copy: the numbers equal the inlined program's, the IR keeps its call."""
    src = tmp_path / "call.sir"
    src.write_text("""solar.func @double(%a: tensor<64xf32>) -> tensor<64xf32> {
  %b = solar.kernel @double(%a as A) -> (B: tensor<64xf32>) {
    affine.for %i = 0 to 64 { B[%i] = A[%i] * 2.0 }
  }
  solar.return %b
}

solar.func @main(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = solar.call @double(%x) : tensor<64xf32>
  %z = solar.call @double(%y) : tensor<64xf32>
  solar.return %z
}
""")
    report = tmp_path / "r.json"
    code, out, err = solar_opt([str(src), "--sol=h100", f"--sol-report={report}"], capsys)
    assert code == 0, err
    assert "solar.call @double" in out
    t = json.loads(report.read_text())["targets"][0]
    assert [u["bytes"] for u in t["units"]] == [2 * 64 * 4, 2 * 64 * 4]
