"""Tests for the hardware-targets library (solar.targets.loader / calibrate).

Expected figures are written here from ../shared/TARGETS.md, not read back from the YAML files.
"""

from __future__ import annotations

import dataclasses
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from solar.targets import calibrate
from solar.targets.loader import (
    COMPUTE_FIELDS,
    SOURCES,
    TARGETS_DIR,
    PeakUnavailable,
    Target,
    TargetError,
    list_targets,
    load_target,
    load_target_file,
)

DATA = Path(__file__).parent / "data"

T = 1e12  # TFLOP/s, TOP/s, TB/s
GB = 1e9
MiB = 2.0**20
KiB = 2.0**10
U = "unsupported"  # TARGETS.md "–"
Q = "unknown"  # TARGETS.md "?"

# TARGETS.md, one row per device: FP64 vec, FP64 TC, FP32 vec, TF32 TC, BF16 TC, FP16 TC, FP8 TC, FP4 TC,
# INT8, DRAM bytes, DRAM B/s, L2 bytes, smem bytes/SM, SMs, TDP W.
COLUMNS = ("fp64_vector", "fp64_tensor", "fp32_vector", "tf32_tensor", "bf16_tensor", "fp16_tensor",
           "fp8_tensor", "fp4_tensor", "int8_tensor", "dram_capacity", "dram_bandwidth", "l2", "smem_per_sm",
           "sm_count", "tdp")
EXPECTED: dict[str, tuple[Any, ...]] = {
    "h100-sxm": (33.5 * T, 66.9 * T, 66.9 * T, 494.7 * T, 989.4 * T, 989.4 * T, 1979 * T, U, 1979 * T,
                 80 * GB, 3.35 * T, 50 * MiB, 228 * KiB, 132, 700),
    # Where TARGETS.md rounds below what the hardware reaches, the file takes the higher figure (a bound must
    # not use less): H100 PCIe's HBM2e interface moves 2.04 TB/s, H200's tensor rate is H100 SXM's 989.4,
    # the RTX 4090 runs FP16 and FP8 at full rate when accumulating in FP16.
    "h100-pcie": (25.6 * T, 51.2 * T, 51.2 * T, 378 * T, 756 * T, 756 * T, 1513 * T, U, 1513 * T,
                  80 * GB, 2.04 * T, 50 * MiB, 228 * KiB, 114, 350),
    "h200": (33.5 * T, 66.9 * T, 66.9 * T, 494.7 * T, 989.4 * T, 989.4 * T, 1979 * T, U, 1979 * T,
             141 * GB, 4.8 * T, 50 * MiB, 228 * KiB, 132, 700),
    "b200": (40 * T, 40 * T, 80 * T, 1100 * T, 2250 * T, 2250 * T, 4500 * T, 9000 * T, 4500 * T,
             192 * GB, 8 * T, 126.5 * MiB, Q, 148, 1000),
    "gb200": (45 * T, 45 * T, 90 * T, 1250 * T, 2500 * T, 2500 * T, 5000 * T, 10000 * T, 5000 * T,
              192 * GB, 8 * T, Q, Q, Q, 1200),
    "a100": (9.7 * T, 19.5 * T, 19.5 * T, 156 * T, 312 * T, 312 * T, U, U, 624 * T,
             80 * GB, 2.039 * T, 40 * MiB, 164 * KiB, 108, 400),
    "rtx-a6000": (Q, Q, 38.7 * T, 77.4 * T, 154.8 * T, 154.8 * T, U, U, Q,
                  48 * GB, 0.768 * T, 6 * MiB, 100 * KiB, 84, 300),
    "l40s": (Q, Q, 91.6 * T, 183 * T, 362 * T, 362 * T, 733 * T, U, Q,
             48 * GB, 0.864 * T, 48 * MiB, 100 * KiB, 142, 350),
    "rtx-4090": (Q, Q, 82.6 * T, 82.6 * T, 165.2 * T, 330.3 * T, 660.6 * T, U, 660.6 * T,
                 24 * GB, 1.008 * T, 72 * MiB, 100 * KiB, 128, 450),
    "jetson-thor": (Q, Q, 8.0 * T, Q, 259 * T, 259 * T, 517 * T, 1035 * T, Q,
                    128 * GB, 0.273 * T, 32 * MiB, 228 * KiB, 20, 130),
    "jetson-orin": (Q, Q, 5.3 * T, Q, 42.5 * T, 42.5 * T, U, U, 85 * T,
                    64 * GB, 0.2048 * T, 4 * MiB, 192 * KiB, 16, 60),
    "mi300x": (81.7 * T, 163.4 * T, 163.4 * T, 653.7 * T, 1307.4 * T, 1307.4 * T, 2614.9 * T, U, 2614.9 * T,
               192 * GB, 5.3 * T, 32 * MiB, 64 * KiB, 304, 750),
    # TPUs: Google quotes bf16 only, so fp16 is unknown although TARGETS.md's column reads "BF16/FP16".
    "tpu-v5e": (Q, Q, Q, U, 197 * T, Q, U, U, 393 * T, 16 * GB, 0.819 * T, Q, Q, Q, Q),
    "tpu-v5p": (Q, Q, Q, U, 459 * T, Q, U, U, Q, 95 * GB, 2.765 * T, Q, Q, Q, Q),
}
# Figures TARGETS.md marks as not from a vendor document.
EXPECTED_SOURCES = {
    ("b200", "l2"): "runtime", ("b200", "sm_count"): "runtime",
    ("rtx-a6000", "tf32_tensor"): "derived", ("rtx-a6000", "l2"): "3P", ("rtx-a6000", "smem_per_sm"): "3P",
    ("rtx-a6000", "sm_count"): "3P", ("l40s", "l2"): "3P", ("l40s", "smem_per_sm"): "3P",
    ("l40s", "sm_count"): "3P", ("jetson-thor", "fp32_vector"): "derived",
    ("jetson-thor", "bf16_tensor"): "derived", ("jetson-thor", "fp16_tensor"): "derived",
    ("jetson-thor", "fp8_tensor"): "derived",
    ("jetson-thor", "fp4_tensor"): "derived", ("jetson-thor", "l2"): "runtime",
    ("jetson-thor", "smem_per_sm"): "runtime", ("jetson-thor", "sm_count"): "runtime",
    ("jetson-orin", "bf16_tensor"): "derived", ("jetson-orin", "fp16_tensor"): "derived",
    ("h100-pcie", "dram_bandwidth"): "derived",
}


def one_line(e: pytest.ExceptionInfo[TargetError]) -> str:
    msg = str(e.value)
    assert "\n" not in msg and "Traceback" not in msg
    return msg


# ----------------------------------------------------------------------------------------------------------
# Shipped files
# ----------------------------------------------------------------------------------------------------------


def test_list_targets_has_every_device_and_host() -> None:
    assert list_targets() == sorted([*EXPECTED, "host"])
    assert "host" not in list_targets(include_host=False)
    stems = sorted(p.stem for p in TARGETS_DIR.glob("*.yaml"))
    assert stems == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_shipped_file_loads_with_sources(name: str) -> None:
    t = load_target(name)
    assert isinstance(t, Target)
    assert t.name == name
    assert t.format == "solar-target"
    assert Path(t.origin).name == f"{name}.yaml"
    for fld in COMPUTE_FIELDS:
        assert fld in t.figures
    for fig in t.figures.values():
        if fig.known:
            assert fig.source in SOURCES and fig.value is not None and fig.value > 0
        else:
            assert fig.value is None


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_figures_equal_targets_md(name: str) -> None:
    t = load_target(name)
    for fld, want in zip(COLUMNS, EXPECTED[name], strict=True):
        fig = t.figure(fld)
        if want in (U, Q):
            assert fig.status == want, f"{name}.{fld}"
            with pytest.raises(PeakUnavailable, match=fld):
                t.require(fld)
        else:
            assert fig.status == "known", f"{name}.{fld}"
            assert fig.value == pytest.approx(want, rel=1e-12), f"{name}.{fld}"
        expected_source = EXPECTED_SOURCES.get((name, fld))
        if expected_source is not None:
            assert fig.source == expected_source, f"{name}.{fld}"
        elif fig.known:
            assert fig.source in ("datasheet", "whitepaper"), f"{name}.{fld}"


def test_h100_headline_figures() -> None:
    h = load_target("h100-sxm")
    assert h.peak("bf16", "tensor") == pytest.approx(989.4e12)
    assert h.dram_bandwidth == pytest.approx(3.35e12)
    assert h.l2_bytes == 50 * 2**20
    assert h.sm_count == 132
    assert h.shared_memory_total == pytest.approx(132 * 228 * 1024)  # ≈ 29.4 MiB, TARGETS.md notes
    assert h.tdp == 700


def test_ranges_and_approximations_are_kept() -> None:
    b = load_target("b200")
    assert b.figure("dram_capacity").range == (180e9, 192e9)
    assert b.figure("dram_bandwidth").range == (7.7e12, 8e12)
    assert b.figure("l2").approximate
    thor = load_target("jetson-thor")
    assert thor.figure("tdp").range == (40.0, 130.0)
    assert thor.figure("fp4_tensor").approximate
    assert load_target("mi300x").require("last_level_cache") == 256 * 2**20


def test_unknown_and_unsupported_peaks_raise_clearly() -> None:
    with pytest.raises(PeakUnavailable) as e:
        load_target("rtx-a6000").peak("fp64", "vector")
    assert "unknown" in one_line(e) and "fp64_vector" in str(e.value)
    with pytest.raises(PeakUnavailable) as e:
        load_target("a100").peak("fp8", "tensor")
    assert "not supported" in one_line(e)
    with pytest.raises(PeakUnavailable):
        load_target("h100").peak("fp16", "vector")  # optional figure, not given
    with pytest.raises(TargetError, match="unknown precision"):
        load_target("h100").peak("fp12", "tensor")
    with pytest.raises(TargetError, match="unit of execution"):
        load_target("h100").peak("bf16", "warp")


def test_peak_accepts_spellings() -> None:
    h = load_target("h100")
    assert h.peak("f32", "vec") == h.peak("float32", "vector") == pytest.approx(66.9e12)
    assert h.peak("BF16", "tc") == pytest.approx(989.4e12)
    assert h.peak("i8", "tensor") == pytest.approx(1979e12)


def test_target_is_frozen() -> None:
    t = load_target("h100")
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.name = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        t.figures["fp32_vector"] = t.figures["fp64_vector"]  # type: ignore[index]


# ----------------------------------------------------------------------------------------------------------
# Names, aliases, paths
# ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [("h100", "h100-sxm"), ("H100", "h100-sxm"), ("H100_SXM", "h100-sxm"), ("h100sxm", "h100-sxm"),
     ("H100-PCIe", "h100-pcie"), ("4090", "rtx-4090"), ("Thor", "jetson-thor"), ("orin", "jetson-orin"),
     ("a6000", "rtx-a6000"), ("v5e", "tpu-v5e"), ("MI300X", "mi300x"), (" a100 ", "a100")],
)
def test_aliases_and_case(spelling: str, canonical: str) -> None:
    assert load_target(spelling).name == canonical


def test_unknown_name_suggests_close_names() -> None:
    with pytest.raises(TargetError) as e:
        load_target("h10")
    msg = one_line(e)
    assert "unknown target 'h10'" in msg and "did you mean" in msg and "h100" in msg
    with pytest.raises(TargetError) as e:
        load_target("mi300")
    assert "mi300x" in one_line(e)
    with pytest.raises(TargetError) as e:
        load_target("zzzz")
    assert "known targets:" in one_line(e) and "h100-sxm" in str(e.value)


def test_load_by_path(tmp_path: Path) -> None:
    src = TARGETS_DIR / "a100.yaml"
    dst = tmp_path / "mine.yaml"
    dst.write_text(src.read_text().replace("name: a100", "name: my-a100"))
    assert load_target(dst).name == "my-a100"
    assert load_target(str(dst)).name == "my-a100"
    with pytest.raises(TargetError) as e:
        load_target(str(tmp_path / "absent.yaml"))
    assert "no such target file" in one_line(e)


# ----------------------------------------------------------------------------------------------------------
# Bad files give one clear line naming the file and the field
# ----------------------------------------------------------------------------------------------------------

GOOD = textwrap.dedent("""\
    schema: 1
    name: mine
    compute:
      fp64_vector: unknown
      fp64_tensor: unknown
      fp32_vector: {value: 10, unit: TFLOP/s, source: user}
      tf32_tensor: unsupported
      bf16_tensor: {value: 100, unit: TFLOP/s, source: datasheet}
      fp16_tensor: {value: 100, unit: TFLOP/s, source: datasheet}
      fp8_tensor: unsupported
      fp4_tensor: unsupported
      int8_tensor: {value: 200, unit: TOP/s, source: datasheet}
    memory:
      dram_capacity: {value: 16, unit: GiB, source: datasheet}
      dram_bandwidth: {value: 1, unit: TB/s, source: datasheet}
      l2: {value: 8, unit: MiB, source: runtime}
      smem_per_sm: {value: 96, unit: KiB, source: whitepaper}
    chip:
      sm_count: {value: 40, unit: count, source: runtime}
      tdp: {value: 250, unit: W, source: datasheet}
    """)


def write(tmp_path: Path, text: str, name: str = "mine.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_good_custom_file(tmp_path: Path) -> None:
    t = load_target(write(tmp_path, GOOD))
    assert t.peak("fp32", "vector") == 10e12
    assert t.dram_capacity == 16 * 2**30
    assert t.kind == "gpu" and t.full_name == "mine"


@pytest.mark.parametrize(
    ("old", "new", "field", "words"),
    [
        ("  fp8_tensor: unsupported\n", "", "compute.fp8_tensor", "missing"),
        ("chip:\n  sm_count: {value: 40, unit: count, source: runtime}\n  tdp: {value: 250, unit: W, "
         "source: datasheet}\n", "", "chip", "missing"),
        ("{value: 1, unit: TB/s", "{value: -1, unit: TB/s", "memory.dram_bandwidth.value", "positive"),
        ("{value: 10, unit: TFLOP/s", "{value: 0, unit: TFLOP/s", "compute.fp32_vector.value", "positive"),
        ("{value: 10, unit: TFLOP/s", "{value: ten, unit: TFLOP/s", "compute.fp32_vector.value", "number"),
        ("unit: TB/s", "unit: TFLOP/s", "memory.dram_bandwidth.unit", "not a bandwidth unit"),
        ("{value: 200, unit: TOP/s", "{value: 200, unit: TFLOP/s", "compute.int8_tensor.unit", "OP/s"),
        ("{value: 16, unit: GiB", "{value: 16, unit: gigabytes", "memory.dram_capacity.unit", "byte unit"),
        ("  bf16_tensor:", "  bf16_tensr:", "compute.bf16_tensr", "did you mean bf16_tensor"),
        ("schema: 1\n", "schema: 1\nvendr: x\n", "vendr", "did you mean vendor"),
        ("source: user}", "source: blog}", "compute.fp32_vector.source", "unknown source"),
        (", source: user}", "}", "compute.fp32_vector.source", "missing"),
        ("{value: 10, unit: TFLOP/s, source: user}", "{value: 10, unit: TFLOP/s, source: user, colour: red}",
         "compute.fp32_vector.colour", "unknown key"),
        ("{value: 40, unit: count", "{value: 40.5, unit: count", "chip.sm_count.value", "whole number"),
        ("  tf32_tensor: unsupported", "  tf32_tensor: maybe", "compute.tf32_tensor", "unknown"),
        ("schema: 1", "schema: 2", "schema", "unsupported schema version"),
        ("{value: 1, unit: TB/s, source: datasheet}", "{value: 1, unit: TB/s, source: datasheet, "
         "range: [2, 3]}", "memory.dram_bandwidth.range", "outside"),
        ("name: mine", "name: my target", "name", "spaces"),
    ],
)
def test_bad_files_give_one_clear_line(tmp_path: Path, old: str, new: str, field: str, words: str) -> None:
    assert old in GOOD
    path = write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(TargetError) as e:
        load_target(path)
    msg = one_line(e)
    # The message points at the file and the line of the field (or of its section when it is missing; no line
    # when the section itself is).
    line = e.value.line
    where = f"{path}:{line}" if line is not None else f"{path}"
    assert msg.startswith(f"{where}: {field}: "), msg
    if line is not None:
        text = GOOD.replace(old, new, 1).splitlines()[line - 1]
        assert any(part.split("[")[0] in text for part in field.split(".")), (text, field)
    assert words in msg
    assert e.value.file == str(path) and e.value.field == field


def test_invalid_yaml_duplicate_keys_and_non_mapping(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD + "name: other\n")
    with pytest.raises(TargetError) as e:
        load_target(path)
    assert "duplicate key 'name'" in one_line(e) and str(path) in str(e.value)
    path = write(tmp_path, "name: x\nkind: : gpu\n")
    with pytest.raises(TargetError) as e:
        load_target(path)
    assert one_line(e).startswith(f"{path}:2:") and "invalid YAML" in str(e.value)
    path = write(tmp_path, "- just\n- a list\n")
    with pytest.raises(TargetError) as e:
        load_target(path)
    assert "must be a YAML mapping" in one_line(e)


def test_numeric_strings_from_yaml_are_numbers(tmp_path: Path) -> None:
    # PyYAML reads 1e13 (no dot) as a string; it is still a number to a reader of the file.
    t = load_target(write(tmp_path, GOOD.replace("{value: 10, unit: TFLOP/s", "{value: 1e13, unit: FLOP/s")))
    assert t.peak("fp32", "vector") == 1e13


# ----------------------------------------------------------------------------------------------------------
# NVIDIA SOLAR arch format
# ----------------------------------------------------------------------------------------------------------


def test_nvidia_format_is_converted() -> None:
    t = load_target(DATA / "nvidia_arch_example.yaml")
    raw = yaml.safe_load((DATA / "nvidia_arch_example.yaml").read_text())
    f = raw["freq_GHz"] * 1e9
    assert t.format == "nvidia-solar-arch" and t.name == "Example_GPU"
    assert t.peak("bf16", "tensor") == pytest.approx(2 * 131072 * 1.6e9)
    assert t.peak("fp32", "vector") == pytest.approx(2 * 16384 * f)
    assert t.peak("tf32", "tensor") == pytest.approx(2 * 65536 * f)
    assert t.peak("fp16", "tensor") == pytest.approx(2 * 131072 * f)
    assert t.peak("fp8", "tensor") == pytest.approx(2 * 262144 * f)
    assert t.peak("int8", "tensor") == pytest.approx(2 * 262144 * f)
    assert t.dram_bandwidth == pytest.approx(1250 * 1.6e9)  # 2 TB/s
    assert t.require("l2_bandwidth") == pytest.approx(5000 * 1.6e9)
    assert t.dram_capacity == 64 * 2**30
    assert t.l2_bytes == 40 * 2**20
    for missing in ("fp4_tensor", "fp64_vector", "fp64_tensor", "smem_per_sm", "sm_count", "tdp"):
        assert t.figure(missing).status == "unknown"
    assert t.figure("bf16_tensor").source == "derived"
    # Loaded by name of a file in another form too.
    assert load_target(str(DATA / "nvidia_arch_example.yaml")).name == "Example_GPU"


def test_nvidia_format_errors_and_name_default(tmp_path: Path) -> None:
    p = write(tmp_path, "freq_GHz: 2\nDRAM_byte_per_cycle: 1000\nMAC_per_cycle_bf16_tc: 1024\n", "chip7.yaml")
    t = load_target(p)
    assert t.name == "chip7"  # no name key: the file name
    assert t.peak("bf16", "tensor") == pytest.approx(2 * 1024 * 2e9)
    p = write(tmp_path, "DRAM_byte_per_cycle: 1000\n", "nofreq.yaml")
    with pytest.raises(TargetError) as e:
        load_target(p)
    assert one_line(e).startswith(f"{p}: freq_GHz: missing")
    p = write(tmp_path, "freq_GHz: 2\nMAC_per_cycle_bf16_TC: 4\n", "typo.yaml")
    with pytest.raises(TargetError) as e:
        load_target(p)
    assert "MAC_per_cycle_bf16_TC" in one_line(e) and "did you mean MAC_per_cycle_bf16_tc" in str(e.value)
    p = write(tmp_path, "freq_GHz: 2\nDRAM_byte_per_cycle: -5\n", "neg.yaml")
    with pytest.raises(TargetError) as e:
        load_target(p)
    assert one_line(e).startswith(f"{p}:2: DRAM_byte_per_cycle: must be a positive number")


# ----------------------------------------------------------------------------------------------------------
# dtype -> peak
# ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "dtype", "contraction", "tf32", "field", "value"),
    [
        ("h100", "bf16", True, False, "bf16_tensor", 989.4e12),
        ("h100", "f16", True, False, "fp16_tensor", 989.4e12),
        ("h100", "f32", True, False, "fp32_vector", 66.9e12),
        ("h100", "f32", True, True, "tf32_tensor", 494.7e12),
        ("h100", "tf32", True, False, "tf32_tensor", 494.7e12),
        ("h100", "f64", True, False, "fp64_tensor", 66.9e12),
        ("h100", "f64", False, False, "fp64_vector", 33.5e12),
        ("h100", "f8e4m3", True, False, "fp8_tensor", 1979e12),
        ("h100", "f8e5m2", True, False, "fp8_tensor", 1979e12),
        ("h100", "i8", True, False, "int8_tensor", 1979e12),
        ("h100", "i32", True, False, "fp32_vector", 66.9e12),
        ("b200", "nvfp4", True, False, "fp4_tensor", 9000e12),
        # vector work: the dtype's vector figure, FP32 vector when the file gives none for 16-bit types
        ("h100", "bf16", False, False, "fp32_vector", 66.9e12),
        ("h100", "f16", False, False, "fp32_vector", 66.9e12),
        ("h100", "f32", False, True, "fp32_vector", 66.9e12),
        ("h100", "i1", False, False, "fp32_vector", 66.9e12),
        # units the device lacks fall through to what it has
        ("a100", "f8e4m3", True, False, "bf16_tensor", 312e12),
        ("h100", "f4", True, False, "fp8_tensor", 1979e12),
        ("rtx-4090", "f16", True, False, "fp16_tensor", 330.3e12),
        # a TPU runs f32 dots as bf16 MXU passes, so bf16 tensor bounds them at any precision setting
        ("tpu-v5e", "f32", True, True, "bf16_tensor", 197e12),
        ("tpu-v5p", "f32", True, False, "bf16_tensor", 459e12),
        ("tpu-v5e", "f32", False, False, "fp32_vector", None),  # VPU rate unknown: raises
    ],
)
def test_select_peak(target: str, dtype: str, contraction: bool, tf32: bool, field: str,
                     value: float | None) -> None:
    t = load_target(target)
    if value is None:
        with pytest.raises(PeakUnavailable) as e:
            t.select_peak(dtype, contraction=contraction, allow_tf32=tf32)
        assert field in one_line(e)
        return
    choice = t.select_peak(dtype, contraction=contraction, allow_tf32=tf32)
    assert choice.field == field
    assert choice.flop_per_s == pytest.approx(value)
    assert dtype in choice.reason


def test_select_peak_fallback_is_explained() -> None:
    choice = load_target("a100").select_peak("f8e4m3", contraction=True)
    assert choice.reason == "f8e4m3 contraction → bf16 tensor (fp8_tensor unsupported on a100)"
    choice = load_target("h100").select_peak("bf16", contraction=False)
    assert choice.reason == "bf16 vector work → fp32 vector (no bf16_vector figure on h100-sxm)"


def test_select_peak_unknown_stops_the_search() -> None:
    # Thor's TF32 rate is unknown: pricing on FP32 vector instead could exceed the true time.
    with pytest.raises(PeakUnavailable, match="tf32_tensor"):
        load_target("thor").select_peak("f32", contraction=True, allow_tf32=True)
    with pytest.raises(PeakUnavailable, match="fp64_tensor"):
        load_target("rtx-a6000").select_peak("f64", contraction=True)
    with pytest.raises(PeakUnavailable, match="fp16_tensor"):
        load_target("tpu-v5e").select_peak("f16", contraction=True)
    with pytest.raises(TargetError, match="unknown dtype"):
        load_target("h100").select_peak("complex64", contraction=True)


def test_select_peak_uses_optional_figures(tmp_path: Path) -> None:
    text = GOOD.replace("  fp8_tensor: unsupported\n",
                        "  fp8_tensor: unsupported\n  bf16_vector: {value: 20, unit: TFLOP/s, source: user}\n"
                        "  fp32_tensor: {value: 40, unit: TFLOP/s, source: user}\n")
    t = load_target(write(tmp_path, text))
    assert t.select_peak("bf16", contraction=False).flop_per_s == 20e12
    assert t.select_peak("f16", contraction=False).flop_per_s == 10e12  # no fp16_vector: FP32 vector
    assert t.select_peak("f32", contraction=True).field == "fp32_tensor"


# ----------------------------------------------------------------------------------------------------------
# host calibration
# ----------------------------------------------------------------------------------------------------------


def test_cache_dir_resolution(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("SOLAR_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert calibrate.cache_dir() == tmp_path / "xdg" / "solar"
    monkeypatch.setenv("SOLAR_CACHE_DIR", str(tmp_path / "mine"))
    assert calibrate.cache_path() == tmp_path / "mine" / "host.yaml"
    monkeypatch.delenv("SOLAR_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert calibrate.cache_dir() == tmp_path / "home" / ".cache" / "solar"


def test_host_calibration_is_measured_and_cached(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SOLAR_CACHE_DIR", str(tmp_path))
    calls: list[float] = []
    real_measure = calibrate.measure

    def counting_measure(budget_s: float = calibrate.DEFAULT_BUDGET_S) -> dict[str, Any]:
        calls.append(budget_s)
        doc = real_measure(1.0)  # a short budget keeps the test quick
        doc["calibration"]["loaded"] = False  # a loaded pass is measured twice: test_loaded_... covers that
        return doc

    monkeypatch.setattr(calibrate, "measure", counting_measure)
    host = load_target("host")
    assert calls == [calibrate.DEFAULT_BUDGET_S]
    assert host.name == "host" and host.kind == "cpu"
    assert host.peak("fp32", "vector") > 1e8  # any CPU does more than 0.1 GFLOP/s
    assert host.peak("fp64", "vector") > 1e8
    assert host.dram_bandwidth > 1e8
    assert host.sm_count == len(os.sched_getaffinity(0))
    assert host.figure("fp32_vector").source in ("measured", "derived")
    assert host.figure("dram_bandwidth").source == "measured"
    assert host.calibration is not None and host.calibration["threads"] == host.sm_count
    # The figures are upper bounds: at least every kernel the calibration timed.
    best = max(host.calibration["kernels_flop_per_s"]["fp32"].values())
    assert host.peak("fp32", "vector") >= best * 0.999
    assert host.dram_bandwidth >= max(host.calibration["bandwidth"]["best_B_per_s"].values()) * 0.999
    assert host.select_peak("f32", contraction=True).field == "fp32_vector"
    # int8 on the vector units: at most 4 (Arm I8MM: 8) 8-bit multiply-adds per 32-bit lane per instruction.
    ratio = 8 if "i8mm" in calibrate.cpu_flags() else 4
    assert host.peak("int8", "vector") == pytest.approx(ratio * host.peak("fp32", "vector"), rel=1e-5)
    if host.figure("int8_tensor").status == "unsupported":
        assert host.select_peak("i8", contraction=True).field == "int8_vector"

    cached = tmp_path / "host.yaml"
    assert cached.is_file() and host.origin == str(cached)
    doc = yaml.safe_load(cached.read_text())
    assert doc["calibration"]["fingerprint"] == calibrate.fingerprint()
    assert doc["compute"]["fp32_vector"]["source"] in ("measured", "derived")
    mtime = cached.stat().st_mtime_ns

    # Second call: read from the cache, nothing measured, file untouched.
    again = load_target("HOST")
    assert calls == [calibrate.DEFAULT_BUDGET_S]
    assert cached.stat().st_mtime_ns == mtime
    assert again.peak("fp32", "vector") == host.peak("fp32", "vector")
    assert again.calibration is not None and host.calibration is not None
    assert again.calibration["date"] == host.calibration["date"]

    # recalibrate=True measures again and rewrites the file.
    load_target("host", recalibrate=True)
    assert len(calls) == 2

    # A cache from another machine (fingerprint differs) or a damaged one is re-measured.
    doc["calibration"]["fingerprint"]["cpu_model"] = "some other CPU"
    cached.write_text(yaml.safe_dump(doc))
    calibrate.host_target()
    assert len(calls) == 3
    cached.write_text("name: [broken\n")
    calibrate.host_target()
    assert len(calls) == 4
    assert load_target_file(cached).calibration is not None


def test_calibration_budget_is_respected(monkeypatch: pytest.MonkeyPatch) -> None:
    # The kernels' shares of the budget add up to no more than it (each stops at its own deadline); checked
    # on the shares handed out rather than on a clock, which a loaded machine would make flaky.
    import inspect

    given: list[float] = []

    def spy(real: Any) -> Any:
        signature = inspect.signature(real)

        def measured(*args: Any, **kwargs: Any) -> Any:
            given.append(signature.bind(*args, **kwargs).arguments["budget_s"])
            return real(*args, **kwargs)

        return measured

    for name in ("_matmul_rates", "_torch_rates", "_bandwidth_rates"):
        monkeypatch.setattr(calibrate, name, spy(getattr(calibrate, name)))
    doc = calibrate.measure(1.0)
    assert len(given) == 4 and 0 < sum(given) <= 1.0
    assert doc["compute"]["fp32_vector"]["value"] > 0
    assert doc["memory"]["dram_bandwidth"]["value"] > 0


def test_derived_peak_from_flags_and_clock() -> None:
    # AVX2 + FMA: 8 FP32 lanes × 2 (FMA) × 2 FMA units = 32 FLOP/cycle/CPU; FP64 half of it.
    peak = calibrate.derived_peak({"avx", "avx2", "fma"}, 4, 3.0e9)
    assert peak == {"fp32": 4 * 3.0e9 * 32, "fp64": 4 * 3.0e9 * 16}
    assert calibrate.derived_peak({"avx512f", "fma"}, 1, 2.0e9) == {"fp32": 2.0e9 * 64, "fp64": 2.0e9 * 32}
    assert calibrate.derived_peak({"avx2", "fma"}, 4, None) is None  # no max clock: not derivable
    assert calibrate.derived_peak(set(), 4, 3.0e9) is None  # no known vector extension


def test_loaded_machine_is_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    # Repeats whose median is far from their best (another process competed) mark the calibration loaded.
    real = calibrate._repeat

    def noisy(run: Any, amount: float, deadline: float, kernel: str) -> calibrate.KernelRate:
        r = real(run, amount, deadline, kernel)
        return calibrate.KernelRate(r.kernel, r.best, r.best / 2)

    monkeypatch.setattr(calibrate, "_repeat", noisy)
    doc = calibrate.measure(0.5)
    assert doc["calibration"]["loaded"] is True
    assert "loaded" in doc["notes"]


def test_recalibration_keeps_the_higher_peak() -> None:
    import copy

    from solar.targets.loader import parse_target

    doc = calibrate.measure(0.5)
    earlier = copy.deepcopy(doc)
    earlier["compute"]["fp32_vector"]["value"] *= 10  # a quieter moment reached more
    earlier["memory"]["dram_bandwidth"]["value"] /= 10  # and a busier one less
    bw = doc["memory"]["dram_bandwidth"]["value"]
    calibrate.keep_higher(doc, parse_target(earlier, "earlier.yaml"))
    assert doc["compute"]["fp32_vector"]["value"] == pytest.approx(earlier["compute"]["fp32_vector"]["value"])
    assert doc["compute"]["fp32_vector"]["note"].startswith("kept from the calibration of")
    assert doc["memory"]["dram_bandwidth"]["value"] == bw


def test_a_loaded_calibration_is_measured_twice(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SOLAR_CACHE_DIR", str(tmp_path))
    real_measure = calibrate.measure
    passes: list[dict[str, Any]] = []

    def loaded_measure(budget_s: float = calibrate.DEFAULT_BUDGET_S) -> dict[str, Any]:
        doc = real_measure(0.5)
        doc["calibration"]["loaded"] = True
        if passes:  # the second pass had a quieter moment
            doc["memory"]["dram_bandwidth"]["value"] = 10 * passes[0]["memory"]["dram_bandwidth"]["value"]
        passes.append(doc)
        return doc

    monkeypatch.setattr(calibrate, "measure", loaded_measure)
    host = calibrate.host_target()
    assert len(passes) == 2 and host.calibration is not None and host.calibration["passes"] == 2
    assert host.dram_bandwidth == pytest.approx(passes[1]["memory"]["dram_bandwidth"]["value"] * 1e9)


def test_a_figure_beyond_a_float_is_out_of_range_not_an_overflow() -> None:
    from solar.targets.vocabulary import read_number

    with pytest.raises(TargetError, match="an integer of 401 digits is out of range"):
        read_number("t.yaml", "compute.fp32_vector.value", 10**400)
    assert read_number("t.yaml", "compute.fp32_vector.value", 10**20) == 1e20


def test_yaml_integers_are_bounded_before_python_converts_them() -> None:
    from solar.targets.safe_yaml import YAMLProblem, load_yaml

    with pytest.raises(YAMLProblem) as info:
        load_yaml("a: 1\nb: " + "7" * 5000 + "\n")
    assert (info.value.line, info.value.col) == (2, 4)
    assert "5000 digits" in info.value.message
    assert load_yaml("b: " + "7" * 64 + "\n") == {"b": int("7" * 64)}


def test_libyaml_and_the_python_parser_read_every_shipped_target_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """Targets are read through libyaml when PyYAML has it; the Python parser is the reference: the same
    documents, the same key lines, and its messages for a text either one refuses."""
    from solar.targets import safe_yaml

    if safe_yaml._FAST is None:
        pytest.skip("PyYAML without libyaml")

    def lines(doc: object) -> object:
        if isinstance(doc, safe_yaml.KeyLines):
            return {k: (doc.lines[k], lines(v)) for k, v in doc.items()}
        return [lines(x) for x in doc] if isinstance(doc, list) else doc

    texts = [p.read_text() for p in sorted(Path(TARGETS_DIR).glob("*.yaml"))]
    fast = [lines(safe_yaml.load_yaml(t)) for t in texts]
    bad = "a: &x [1, 2]\nb: *x\n"
    with pytest.raises(safe_yaml.YAMLProblem) as fast_err:
        safe_yaml.load_yaml(bad)
    monkeypatch.setattr(safe_yaml, "_FAST", None)
    assert fast == [lines(safe_yaml.load_yaml(t)) for t in texts]
    with pytest.raises(safe_yaml.YAMLProblem) as slow_err:
        safe_yaml.load_yaml(bad)
    assert (fast_err.value.message, fast_err.value.line) == (slow_err.value.message, slow_err.value.line) == (
        "YAML aliases (*x) are not allowed in target files: write the value out", 2)


@pytest.mark.parametrize("target, figure", [("a100", 1248e12), ("rtx-4090", 1321.2e12), ("h100", 1979e12)])
def test_int4_contractions_take_the_int4_tensor_figure_where_the_chip_has_one(target: str, figure: float) -> None:
    """Ampere and Ada run 4-bit integer MMAs at twice int8's rate; Hopper has none (its int8 figure)."""
    from solar.backends.cost import Peaks
    from solar.ir.dtypes import DType

    assert Peaks(load_target(target)).compute(DType.I4, True) == pytest.approx(figure)
