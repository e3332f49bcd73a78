"""The ``host`` target: this machine's CPU, measured on the spot and cached.

Method (also in targets/README.md):

* compute: FP32 and FP64 matrix multiply through numpy (its BLAS, all threads it uses), square sizes from 256
  up to 4096 while the time budget allows, best of up to 5 runs per size; rate = 2·n³ / time; the best rate
  over sizes is the vector peak (a CPU runs matmul on its SIMD FMA units).
* memory: STREAM-style copy of a float64 array several times larger than the last-level cache, both on one
  thread and split across all CPUs this process may use (numpy releases the GIL while copying); bandwidth =
  (bytes read + bytes written) / time, best over runs and both modes. Write-allocate traffic is not
  counted, as in STREAM.
* capacities (DRAM, L2, last-level cache, logical CPUs) come from the OS (runtime queries).

The result is a native target YAML under the cache directory (``$SOLAR_CACHE_DIR``, else
``$XDG_CACHE_HOME/solar``, else ``~/.cache/solar``), reused while the machine's fingerprint (CPU model, CPU
count, numpy version, calibration version) is unchanged, re-measured when ``recalibrate=True``.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import os
import platform
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from .loader import Target, TargetError, load_target_file, parse_target

__all__ = ["CALIBRATION_VERSION", "cache_dir", "cache_path", "fingerprint", "host_target", "measure"]

CALIBRATION_VERSION = 1
DEFAULT_BUDGET_S = 4.0  # whole calibration, all three measurements
_RUNS = 5  # best of this many runs per size / mode
_MATMUL_SIZES = (256, 512, 1024, 2048, 4096)
_MiB = 1 << 20


def cache_dir() -> Path:
    """Where SOLAR caches things: $SOLAR_CACHE_DIR, else $XDG_CACHE_HOME/solar, else ~/.cache/solar."""
    if env := os.environ.get("SOLAR_CACHE_DIR"):
        return Path(env).expanduser()
    if xdg := os.environ.get("XDG_CACHE_HOME"):
        return Path(xdg).expanduser() / "solar"
    return Path.home() / ".cache" / "solar"


def cache_path() -> Path:
    """The cached host target file."""
    return cache_dir() / "host.yaml"


# --------------------------------------------------------------------------------------------------------
# What the OS says about this machine
# --------------------------------------------------------------------------------------------------------


def _cpuinfo() -> dict[str, str]:
    info: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.strip():
                    break  # the first processor's block is enough
                key, _, val = line.partition(":")
                info.setdefault(key.strip(), val.strip())
    except OSError:
        pass
    return info


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _cpu_model(info: dict[str, str]) -> str:
    return info.get("model name") or platform.processor() or platform.machine() or "unknown CPU"


def fingerprint() -> dict[str, Any]:
    """What must match for a cached calibration to be reused."""
    return {
        "calibration_version": CALIBRATION_VERSION,
        "machine": platform.machine(),
        "cpu_model": _cpu_model(_cpuinfo()),
        "cpus": _cpu_count(),
        "numpy": np.__version__,
    }


def _size_bytes(text: str) -> int:
    text = text.strip().upper()
    for suffix, mult in (("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30)):
        if text.endswith(suffix):
            return int(text[:-1]) * mult
    return int(text)


def _cache_totals() -> dict[int, int]:
    """Total bytes per cache level over all instances (sysfs), e.g. {2: L2 total, 3: L3 total}."""
    totals: dict[int, int] = {}
    seen: set[tuple[str, str]] = set()
    for d in Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cache/index[0-9]*"):
        try:
            if (d / "type").read_text().strip() == "Instruction":
                continue
            level = (d / "level").read_text().strip()
            shared = (d / "shared_cpu_list").read_text().strip()
            if (level, shared) in seen:  # one entry per physical cache, not per CPU sharing it
                continue
            seen.add((level, shared))
            totals[int(level)] = totals.get(int(level), 0) + _size_bytes((d / "size").read_text())
        except (OSError, ValueError):
            continue
    return totals


def _phys_mem() -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


# --------------------------------------------------------------------------------------------------------
# Measurements
# --------------------------------------------------------------------------------------------------------


def _matmul_rate(dtype: type[np.floating[Any]], budget_s: float) -> tuple[float, dict[int, float]]:
    """Best FLOP/s of n×n @ n×n over growing n while the budget allows."""
    rng = np.random.default_rng(0)
    deadline = time.perf_counter() + budget_s
    best = 0.0
    per_size: dict[int, float] = {}
    for n in _MATMUL_SIZES:
        flop = 2.0 * n**3
        # Stop growing when this size's runs would not fit in what is left of the budget.
        if best > 0 and _RUNS * flop / best > deadline - time.perf_counter():
            break
        a = rng.standard_normal((n, n), dtype=dtype)
        b = rng.standard_normal((n, n), dtype=dtype)
        out = np.empty((n, n), dtype=dtype)
        size_best = 0.0
        for _ in range(_RUNS):
            t0 = time.perf_counter()
            np.matmul(a, b, out=out)
            dt = time.perf_counter() - t0
            size_best = max(size_best, flop / dt)
            if time.perf_counter() > deadline:
                break
        per_size[n] = size_best
        best = max(best, size_best)
    return best, per_size


def _copy_bandwidth(budget_s: float, llc_bytes: int | None) -> tuple[float, dict[str, Any]]:
    """Best (read + write) bytes/s of a large array copy, one thread and all threads."""
    phys = _phys_mem() or (8 << 30)
    # Several times the last-level cache so the copy streams from DRAM; bounded to stay cheap and safe.
    nbytes = max(64 * _MiB, 4 * (llc_bytes or 32 * _MiB))
    nbytes = min(nbytes, 1024 * _MiB, max(64 * _MiB, phys // 8))
    n = nbytes // 8
    src = np.ones(n)
    dst = np.zeros(n)  # written once so page faults are not timed
    threads = _cpu_count()
    edges = np.linspace(0, n, threads + 1).astype(np.int64)
    parts = [(int(lo), int(hi)) for lo, hi in itertools.pairwise(edges) if hi > lo]

    def copy_part(lohi: tuple[int, int]) -> None:
        lo, hi = lohi
        np.copyto(dst[lo:hi], src[lo:hi])

    def copy_one() -> None:
        np.copyto(dst, src)

    deadline = time.perf_counter() + budget_s
    best: dict[str, float] = {}
    with ThreadPoolExecutor(max_workers=threads) as pool:

        def copy_all() -> None:
            list(pool.map(copy_part, parts))

        modes: dict[str, Callable[[], None]] = {"1-thread": copy_one}
        if threads > 1:
            modes[f"{threads}-threads"] = copy_all
        for _ in range(_RUNS):
            for mode, run in modes.items():
                t0 = time.perf_counter()
                run()
                dt = time.perf_counter() - t0
                best[mode] = max(best.get(mode, 0.0), 2.0 * nbytes / dt)
            if time.perf_counter() > deadline:
                break
    return max(best.values()), {"array_bytes": int(nbytes), "best_B_per_s": best}


def measure(budget_s: float = DEFAULT_BUDGET_S) -> dict[str, Any]:
    """Run the calibration and return the host target as a native-format YAML document."""
    t_start = time.perf_counter()
    info = _cpuinfo()
    caches = _cache_totals()
    llc_level = max(caches) if caches else None
    fp32, fp32_sizes = _matmul_rate(np.float32, 0.4 * budget_s)
    fp64, fp64_sizes = _matmul_rate(np.float64, 0.25 * budget_s)
    bw, bw_detail = _copy_bandwidth(0.3 * budget_s, caches.get(llc_level) if llc_level else None)
    elapsed = time.perf_counter() - t_start

    def measured(value: float, unit: str, scale: float, note: str) -> dict[str, Any]:
        return {"value": round(value / scale, 3), "unit": unit, "source": "measured", "note": note}

    def runtime_bytes(value: int | None, note: str) -> dict[str, Any] | str:
        return {"value": value, "unit": "B", "source": "runtime", "note": note} if value else "unknown"

    flags = set(info.get("flags", info.get("Features", "")).split())
    # A matrix unit we did not measure (Intel AMX, Arm SME) may be much faster than the vector rate: its
    # figures are unknown rather than unsupported, so the bound never silently uses the slower unit.
    def matrix(flag_any: tuple[str, ...]) -> str:
        return "unknown" if flags & set(flag_any) else "unsupported"

    compute = {
        "fp64_vector": measured(fp64, "GFLOP/s", 1e9, "numpy float64 matmul, best over sizes and runs"),
        "fp64_tensor": "unsupported",
        "fp32_vector": measured(fp32, "GFLOP/s", 1e9, "numpy float32 matmul, best over sizes and runs"),
        "tf32_tensor": "unsupported",
        "bf16_tensor": matrix(("amx_bf16", "sme")),
        "fp16_tensor": matrix(("amx_fp16", "sme")),
        "fp8_tensor": "unsupported",
        "fp4_tensor": "unsupported",
        "int8_tensor": matrix(("amx_int8", "sme")),
    }
    memory: dict[str, Any] = {
        "dram_capacity": runtime_bytes(_phys_mem(), "os.sysconf physical pages × page size"),
        "dram_bandwidth": measured(bw, "GB/s", 1e9, "STREAM-style numpy copy, (read + write) bytes / time"),
        "l2": runtime_bytes(caches.get(2), "sum of L2 caches (sysfs)"),
        "smem_per_sm": "unsupported",  # CPUs have no software-managed shared memory
    }
    if llc_level and llc_level > 2:
        memory["last_level_cache"] = runtime_bytes(caches[llc_level], f"sum of L{llc_level} caches (sysfs)")
    cpus = _cpu_count()
    fp = fingerprint()
    return {
        "schema": 1,
        "name": "host",
        "full_name": f"{_cpu_model(info)} ({cpus} CPUs), calibrated",
        "vendor": {"GenuineIntel": "intel", "AuthenticAMD": "amd"}.get(info.get("vendor_id", ""),
                                                                       platform.machine() or "unknown"),
        "kind": "cpu",
        "aliases": [],
        "notes": "Measured on this machine by solar.targets.calibrate; achieved rates, not datasheet peaks.",
        "compute": compute,
        "memory": memory,
        "chip": {
            "sm_count": {"value": cpus, "unit": "count", "source": "runtime",
                         "note": "logical CPUs this process may use"},
            "tdp": "unknown",
        },
        "calibration": {
            "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "fingerprint": fp,
            "seconds": round(elapsed, 3),
            "budget_s": budget_s,
            "matmul_fp32_flop_per_s": {int(k): float(v) for k, v in fp32_sizes.items()},
            "matmul_fp64_flop_per_s": {int(k): float(v) for k, v in fp64_sizes.items()},
            "copy": {"array_bytes": bw_detail["array_bytes"],
                     "best_B_per_s": {k: float(v) for k, v in bw_detail["best_B_per_s"].items()}},
        },
    }


# --------------------------------------------------------------------------------------------------------
# The cached target
# --------------------------------------------------------------------------------------------------------


def _cached(path: Path) -> Target | None:
    if not path.is_file():
        return None
    try:
        t = load_target_file(path)
    except TargetError:
        return None  # our own cache, damaged or from another version: measure again rather than fail
    if t.calibration is None or t.calibration.get("fingerprint") != fingerprint():
        return None  # another machine or numpy shares this cache directory
    return t


def host_target(*, recalibrate: bool = False, budget_s: float = DEFAULT_BUDGET_S) -> Target:
    """The calibrated host target: from the cache, or measured now (and cached) when absent or stale."""
    path = cache_path()
    if not recalibrate and (t := _cached(path)) is not None:
        return t
    doc = measure(budget_s)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(
            "# SOLAR host target, measured by solar.targets.calibrate (method: targets/README.md).\n"
            + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True),
            encoding="utf-8",
        )
        os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the new one
    except OSError:
        return parse_target(doc, f"{path} (not cached: directory not writable)")
    return load_target_file(path)
