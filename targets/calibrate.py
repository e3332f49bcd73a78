"""The ``host`` target: this machine's CPU, measured on the spot and cached.

Method (also in targets/README.md, which says why a run cannot beat these figures):

* compute: derived from the CPU where the OS gives its highest clock (CPUs × max clock × SIMD lanes × FMA ×
  FMA units, from the CPU flags); otherwise the best of several kernels (numpy's BLAS and torch's matmul in
  FP32 and FP64, torch's FP32 convolution) times COMPUTE_MARGIN. A CPU runs matmul on its SIMD FMA units,
  hence "vector".
* memory: the best of STREAM-style copy, triad and read-only sum over arrays several times the last-level
  cache, each on one thread and on all CPUs this process may use, times BANDWIDTH_MARGIN; rate = the bytes
  the kernel must move / time (write-allocate traffic is not counted, as in STREAM).
* a loaded machine: repeats whose median is far slower than their best (LOADED_SPREAD) are flagged, in the
  target's notes and in ``calibration.loaded``.
* capacities (DRAM, L2, last-level cache, logical CPUs) come from the OS (runtime queries).

The result is a native target YAML under the cache directory (``$SOLAR_CACHE_DIR``, else
``$XDG_CACHE_HOME/solar``, else ``~/.cache/solar``), reused while the machine's fingerprint (CPU model, CPU
count, numpy version, calibration version) is unchanged, re-measured when ``recalibrate=True``.
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import itertools
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from .target import Target
from .target_file import load_target_file, parse_target
from .vocabulary import TargetError

__all__ = ["CALIBRATION_VERSION", "cache_dir", "cache_path", "fingerprint", "host_target", "measure"]

CALIBRATION_VERSION = 3  # 3: int8_vector
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
        "torch": _version("torch"),
    }


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


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


# Margins over the best measured rate (targets/README.md, "Why a run cannot beat these figures"): a tuned
# library may beat the kernels we time, and a machine may be quieter during a run than during calibration.
COMPUTE_MARGIN = 1.25
BANDWIDTH_MARGIN = 1.25
# Repeats whose median is this much slower than their best mean another process competed for the machine.
LOADED_SPREAD = 1.25
# SIMD lanes of one FP32 register for the widest vector extension the CPU flags name (x86 / Arm).
_LANES_FP32 = (("avx512f", 16), ("avx2", 8), ("avx", 8), ("sse2", 4), ("asimd", 4), ("neon", 4))
_FMA_UNITS = 2  # the most FMA pipes any current x86 or Arm server core has: an upper bound per cycle


@dataclass
class KernelRate:
    """One calibration kernel at one size: its best and median rate over repeats (FLOP/s or B/s)."""

    kernel: str
    best: float
    median: float

    @property
    def spread(self) -> float:
        return self.best / self.median if self.median > 0 else 1.0


def _repeat(run: Callable[[], None], amount: float, deadline: float, kernel: str) -> KernelRate:
    """`amount` (FLOPs or bytes) per run: best and median rate over up to _RUNS runs, after one warm-up."""
    run()
    rates = []
    for _ in range(_RUNS):
        t0 = time.perf_counter()
        run()
        rates.append(amount / max(time.perf_counter() - t0, 1e-9))
        if time.perf_counter() > deadline:
            break
    return KernelRate(kernel, max(rates), statistics.median(rates))


def _matmul_rates(dtype: type[np.floating[Any]], budget_s: float) -> list[KernelRate]:
    """numpy's BLAS: n×n @ n×n for growing n while the budget allows."""
    rng = np.random.default_rng(0)
    deadline = time.perf_counter() + budget_s
    out: list[KernelRate] = []
    for n in _MATMUL_SIZES:
        flop = 2.0 * n**3
        best = max((r.best for r in out), default=0.0)
        # Stop growing when this size's runs would not fit in what is left of the budget.
        if best > 0 and (_RUNS + 1) * flop / best > deadline - time.perf_counter():
            break
        a = rng.standard_normal((n, n), dtype=dtype)
        b = rng.standard_normal((n, n), dtype=dtype)
        c = np.empty((n, n), dtype=dtype)
        out.append(_repeat(lambda a=a, b=b, c=c: np.matmul(a, b, out=c), flop, deadline, f"numpy matmul {n}"))
    return out


def _torch_rates(budget_s: float, threads: int) -> dict[str, list[KernelRate]]:
    """torch's own BLAS (MKL or OpenBLAS) and convolution (oneDNN), which may beat numpy's: FP32 and FP64
    matmul, BF16 and FP16 matmul and an FP32 3×3 convolution, with `threads` intra-op threads. Empty
    without torch."""
    try:
        import torch
    except ImportError:
        return {}
    before = torch.get_num_threads()
    start = time.perf_counter()
    deadline = start + budget_s
    out: dict[str, list[KernelRate]] = {"fp32": [], "fp64": []}

    def mm(dtype: Any, n: int, key: str, stop: float, label: str) -> None:
        a, b, c = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype), torch.empty(n, n, dtype=dtype)
        out.setdefault(key, []).append(_repeat(lambda: torch.mm(a, b, out=c), 2.0 * n**3, stop, label))

    try:
        with torch.no_grad():
            # One thread first: short runs fit in a time slice even on a busy machine, and no thread waits
            # for another that the OS has descheduled. Cores × this rate bounds the all-core rate from above
            # (a core alone runs at least at the all-core clock).
            torch.set_num_threads(1)
            for dtype, key in ((torch.float32, "fp32"), (torch.float64, "fp64")):
                for n in (256, 512):
                    if n == 256 or time.perf_counter() < start + 0.3 * budget_s:
                        mm(dtype, n, f"{key}_1t", deadline, f"torch mm {key} {n} 1-thread")
            torch.set_num_threads(threads)
            for dtype, key, share in ((torch.float32, "fp32", 0.65), (torch.float64, "fp64", 0.8)):
                stop = start + share * budget_s
                for n in _MATMUL_SIZES[:4]:
                    best = max((r.best for r in out[key]), default=0.0)
                    if best > 0 and (_RUNS + 1) * 2.0 * n**3 / best > stop - time.perf_counter():
                        break
                    mm(dtype, n, key, stop, f"torch mm {key} {n}")
            if time.perf_counter() < deadline:
                x, w = torch.randn(8, 64, 56, 56), torch.randn(64, 64, 3, 3)
                flop = 2.0 * 8 * 64 * 64 * 9 * 56 * 56
                out["fp32"].append(_repeat(lambda: torch.nn.functional.conv2d(x, w, padding=1), flop, deadline,
                                           "torch conv2d 8x64x56x56 k3"))
            # 16-bit matmul, small: converted to FP32 where the CPU has no 16-bit arithmetic (slow), native
            # where it has (the figure then also doubles FP32's, see half_figure).
            for dtype, key in ((torch.bfloat16, "bf16"), (torch.float16, "fp16")):
                if time.perf_counter() < deadline:
                    a, b = torch.randn(128, 128, dtype=dtype), torch.randn(128, 128, dtype=dtype)
                    out[key] = [_repeat(lambda a=a, b=b: torch.mm(a, b), 2.0 * 128**3, deadline,
                                        f"torch mm {key} 128")]
    finally:
        torch.set_num_threads(before)
    return out


def _physical_cores() -> int:
    """Cores among the CPUs this process may use (SMT siblings counted once), from sysfs; else CPUs."""
    try:
        allowed = os.sched_getaffinity(0)
    except (AttributeError, OSError):
        return _cpu_count()
    groups = set()
    for cpu in allowed:
        try:
            groups.add(Path(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list").read_text().strip())
        except OSError:
            return len(allowed)
    return max(1, len(groups))


def _load_average() -> float | None:
    """The 1-minute load average (runnable processes), or None where the OS does not say."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def _max_freq_hz() -> float | None:
    """The highest clock the OS says any CPU may run at (cpufreq's cpuinfo_max_freq, boost included). None
    where it does not say (many virtual machines): `cpu MHz` is the current or nominal clock, not a bound."""
    best = 0
    for f in Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/cpuinfo_max_freq"):
        try:
            best = max(best, int(f.read_text().strip()))
        except (OSError, ValueError):
            continue
    return best * 1e3 if best else None


def cpu_flags(info: dict[str, str] | None = None) -> set[str]:
    """The CPU's feature flags (x86 `flags`, Arm `Features` in /proc/cpuinfo)."""
    info = _cpuinfo() if info is None else info
    return set(info.get("flags", info.get("Features", "")).split())


def derived_peak(flags: set[str], cpus: int, freq_hz: float | None) -> dict[str, float] | None:
    """FP32 and FP64 FLOP/s from the CPU itself: CPUs × max clock × SIMD lanes × 2 (FMA) × FMA units. None
    when the clock or the vector width is unknown."""
    lanes = next((n for flag, n in _LANES_FP32 if flag in flags), None)
    if lanes is None or not freq_hz:
        return None
    fma = 2 if ("fma" in flags or "asimd" in flags or "avx512f" in flags) else 1  # no FMA: mul and add apart
    per_cycle = lanes * fma * _FMA_UNITS
    return {"fp32": cpus * freq_hz * per_cycle, "fp64": cpus * freq_hz * per_cycle / 2}


def _split(n: int, threads: int) -> list[tuple[int, int]]:
    edges = np.linspace(0, n, threads + 1).astype(np.int64)
    return [(int(lo), int(hi)) for lo, hi in itertools.pairwise(edges) if hi > lo]


def _bandwidth_rates(budget_s: float, llc_bytes: int | None, threads: int) -> tuple[list[KernelRate], int]:
    """STREAM-style kernels on float64 arrays several times the last-level cache, each on one thread and on
    all: copy (read + write), triad a = b + 3c (two reads + one write; torch, which does it in one pass,
    else numpy's add with the same traffic) and a read-only sum. Rate = bytes the kernel must move / time
    (write-allocate traffic is not counted, as in STREAM and as the cost model counts bytes)."""
    phys = _phys_mem() or (8 << 30)
    # Several times the last-level cache so the kernels stream from DRAM; bounded to stay cheap and safe.
    nbytes = max(64 * _MiB, 4 * (llc_bytes or 32 * _MiB))
    nbytes = min(nbytes, 512 * _MiB, max(64 * _MiB, phys // 16))
    n = nbytes // 8
    a, b, c = np.ones(n), np.ones(n), np.zeros(n)  # all written once so page faults are not timed
    parts = _split(n, threads)
    deadline = time.perf_counter() + budget_s
    try:
        import torch

        ta, tb, tc = (torch.from_numpy(x) for x in (a, b, c))

        def triad(lo: int, hi: int) -> None:
            torch.add(tb[lo:hi], tc[lo:hi], alpha=3.0, out=ta[lo:hi])
    except ImportError:
        def triad(lo: int, hi: int) -> None:
            np.add(b[lo:hi], c[lo:hi], out=a[lo:hi])

    kernels: dict[str, tuple[Callable[[int, int], Any], int]] = {
        "copy": (lambda lo, hi: np.copyto(c[lo:hi], b[lo:hi]), 2 * nbytes),
        "triad": (triad, 3 * nbytes),
        "read-sum": (lambda lo, hi: np.add.reduce(b[lo:hi]), nbytes),
    }
    out: list[KernelRate] = []
    torch_threads = _set_torch_threads(1)  # one thread per chunk: the pool supplies the parallelism
    try:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            for name, (kernel, moved) in kernels.items():
                out.append(_repeat(lambda k=kernel: k(0, n), moved, deadline, f"{name} 1-thread"))
                if threads > 1:
                    out.append(_repeat(lambda k=kernel: list(pool.map(lambda p: k(*p), parts)), moved, deadline,
                                       f"{name} {threads}-threads"))
    finally:
        _set_torch_threads(torch_threads)
    return out, int(nbytes)


def _set_torch_threads(n: int | None) -> int | None:
    """Sets torch's intra-op threads when torch is loaded; returns the previous count."""
    torch = sys.modules.get("torch")
    if torch is None or n is None:
        return None
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    return before


def measure(budget_s: float = DEFAULT_BUDGET_S) -> dict[str, Any]:
    """Run the calibration and return the host target as a native-format YAML document."""
    t_start = time.perf_counter()
    load_before = _load_average()
    info = _cpuinfo()
    caches = _cache_totals()
    llc_level = max(caches) if caches else None
    cpus = _cpu_count()
    fp32_np = _matmul_rates(np.float32, 0.25 * budget_s)
    fp64_np = _matmul_rates(np.float64, 0.15 * budget_s)
    torch_rates = _torch_rates(0.25 * budget_s, cpus)
    bw_rates, bw_bytes = _bandwidth_rates(0.3 * budget_s, caches.get(llc_level) if llc_level else None, cpus)
    elapsed = time.perf_counter() - t_start
    flags = cpu_flags(info)
    freq = _max_freq_hz()
    derived = derived_peak(flags, cpus, freq)
    kernels = {"fp32": fp32_np + torch_rates.get("fp32", []), "fp64": fp64_np + torch_rates.get("fp64", [])}
    cores = _physical_cores()
    for key in ("fp32", "fp64"):
        single = torch_rates.get(f"{key}_1t", [])
        if single and cores > 1:
            one = max(single, key=lambda r: r.best)
            kernels[key].append(KernelRate(f"{one.kernel} × {cores} cores", one.best * cores, one.median * cores))

    def peak_figure(key: str) -> dict[str, Any]:
        best = max(kernels[key], key=lambda r: r.best)
        if derived is not None and derived[key] >= best.best:
            note = (f"derived: {cpus} CPUs × {freq / 1e9:.3g} GHz (cpufreq max) × SIMD lanes × FMA × "
                    f"{_FMA_UNITS} FMA units; best kernel {best.best / 1e9:.4g} GFLOP/s ({best.kernel})")
            return {"value": round(derived[key] / 1e9, 3), "unit": "GFLOP/s", "source": "derived", "note": note}
        why = "no max clock from the OS" if derived is None else "the derived figure is below a measured rate"
        note = (f"best of {len(kernels[key])} kernels ({best.kernel}: {best.best / 1e9:.4g} GFLOP/s) × "
                f"{COMPUTE_MARGIN} margin ({why})")
        return {"value": round(best.best * COMPUTE_MARGIN / 1e9, 3), "unit": "GFLOP/s", "source": "measured",
                "note": note}

    best_bw = max(bw_rates, key=lambda r: r.best)
    spreads = {r.kernel: round(r.spread, 3) for r in (*kernels["fp32"], *bw_rates)}
    # The spread of the kernels that set the figures tells whether something else ran meanwhile.
    top = [max(kernels["fp32"], key=lambda r: r.best), best_bw]
    # Steady contention slows every repeat alike (no spread): a run queue as long as the CPU count before
    # we started says so too.
    busy = load_before is not None and load_before >= cpus
    loaded = busy or any(r.spread > LOADED_SPREAD for r in top)

    def runtime_bytes(value: int | None, note: str) -> dict[str, Any] | str:
        return {"value": value, "unit": "B", "source": "runtime", "note": note} if value else "unknown"

    # A matrix unit we did not measure (Intel AMX, Arm SME) may be much faster than the vector rate: its
    # figures are unknown rather than unsupported, so the bound never silently uses the slower unit.
    def matrix(flag_any: tuple[str, ...]) -> str:
        return "unknown" if flags & set(flag_any) else "unsupported"

    fp32_figure = peak_figure("fp32")

    def half_figure(key: str, native_flags: tuple[str, ...]) -> dict[str, Any]:
        """16-bit vector work: FP32's figure, doubled where the CPU has 16-bit dot-product instructions
        (two 16-bit products per FP32 lane), and never below the best 16-bit kernel × the margin."""
        native = sorted(flags & set(native_flags))
        base = fp32_figure["value"] * (2 if native else 1)
        best = max((r.best for r in torch_rates.get(key, [])), default=0.0)
        how = (f"2 × FP32's figure ({', '.join(native)})" if native else "FP32's figure (no 16-bit arithmetic: "
               "converted to FP32)")
        if best * COMPUTE_MARGIN / 1e9 > base:
            return {"value": round(best * COMPUTE_MARGIN / 1e9, 3), "unit": "GFLOP/s", "source": "measured",
                    "note": f"torch mm {key} {best / 1e9:.4g} GFLOP/s × {COMPUTE_MARGIN} margin (above {how})"}
        return {"value": round(base, 3), "unit": "GFLOP/s", "source": fp32_figure["source"],
                "note": f"{how}; best {key} kernel {best / 1e9:.4g} GFLOP/s"}

    def int8_figure() -> dict[str, Any]:
        """8-bit integer vector work: SIMD dot products (x86 pmaddubsw and VNNI vpdpbusd, Arm SDOT) do at most
        four 8-bit multiply-adds per 32-bit lane per instruction where an FMA does one, Arm's I8MM (SMMLA) eight:
        so 4 (or 8) × FP32's figure bounds any int8 kernel on the vector units."""
        ratio, how = (8, "Arm I8MM: 8") if "i8mm" in flags else (4, "4")
        return {"value": round(fp32_figure["value"] * ratio, 3), "unit": "GOP/s", "source": fp32_figure["source"],
                "note": f"{ratio} × FP32's figure ({how} 8-bit multiply-adds per 32-bit lane per instruction)"}

    compute = {
        "fp64_vector": peak_figure("fp64"),
        "fp64_tensor": "unsupported",
        "fp32_vector": fp32_figure,
        "bf16_vector": half_figure("bf16", ("avx512_bf16", "amx_bf16", "bf16")),
        "fp16_vector": half_figure("fp16", ("avx512_fp16", "amx_fp16", "fphp", "asimdhp")),
        "tf32_tensor": "unsupported",
        "bf16_tensor": matrix(("amx_bf16", "sme")),
        "fp16_tensor": matrix(("amx_fp16", "sme")),
        "fp8_tensor": "unsupported",
        "fp4_tensor": "unsupported",
        "int8_tensor": matrix(("amx_int8", "sme")),
        "int8_vector": int8_figure(),
    }
    memory: dict[str, Any] = {
        "dram_capacity": runtime_bytes(_phys_mem(), "os.sysconf physical pages × page size"),
        "dram_bandwidth": {
            "value": round(best_bw.best * BANDWIDTH_MARGIN / 1e9, 3), "unit": "GB/s", "source": "measured",
            "note": f"best of copy, triad and read-sum on 1 and {cpus} threads ({best_bw.kernel}: "
                    f"{best_bw.best / 1e9:.4g} GB/s) × {BANDWIDTH_MARGIN} margin"},
        "l2": runtime_bytes(caches.get(2), "sum of L2 caches (sysfs)"),
        "smem_per_sm": "unsupported",  # CPUs have no software-managed shared memory
    }
    if llc_level and llc_level > 2:
        memory["last_level_cache"] = runtime_bytes(caches[llc_level], f"sum of L{llc_level} caches (sysfs)")
    notes = ("Measured on this machine by solar.targets.calibrate: upper bounds of what its libraries reach "
             "(derived from the CPU, or the best kernel with a margin; targets/README.md).")
    if loaded:
        notes += (f" The machine was loaded during calibration (load average {load_before}, repeats spread up "
                  f"to {max(r.spread for r in top):.2f}x): recalibrate on a quiet machine.")
    return {
        "schema": 1,
        "name": "host",
        "full_name": f"{_cpu_model(info)} ({cpus} CPUs), calibrated",
        "vendor": {"GenuineIntel": "intel", "AuthenticAMD": "amd"}.get(info.get("vendor_id", ""),
                                                                       platform.machine() or "unknown"),
        "kind": "cpu",
        "aliases": [],
        "notes": notes,
        "compute": compute,
        "memory": memory,
        "chip": {
            "sm_count": {"value": cpus, "unit": "count", "source": "runtime",
                         "note": "logical CPUs this process may use"},
            "tdp": "unknown",
        },
        "calibration": {
            "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "fingerprint": fingerprint(),
            "seconds": round(elapsed, 3),
            "budget_s": budget_s,
            "threads": cpus,
            "max_freq_hz": freq,
            "derived_flop_per_s": derived,
            "margins": {"compute": COMPUTE_MARGIN, "bandwidth": BANDWIDTH_MARGIN},
            "loaded": loaded,
            "load_average_before": load_before,
            "spread": spreads,
            "kernels_flop_per_s": {key: {r.kernel: float(r.best) for r in rates}
                                   for key, rates in {**kernels, "bf16": torch_rates.get("bf16", []),
                                                      "fp16": torch_rates.get("fp16", [])}.items()},
            "bandwidth": {"array_bytes": bw_bytes, "best_B_per_s": {r.kernel: float(r.best) for r in bw_rates}},
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


_UPPER_BOUNDS = (("compute", "fp32_vector"), ("compute", "fp64_vector"), ("compute", "bf16_vector"),
                 ("compute", "fp16_vector"), ("compute", "int8_vector"), ("memory", "dram_bandwidth"))


def keep_higher(doc: dict[str, Any], previous: Target) -> None:
    """Recalibrating the same machine keeps, per peak, the higher of the new and the cached figure: both are
    rates this machine reached, so the higher is the truer upper bound (a busier moment gives a lower one)."""
    for section, name in _UPPER_BOUNDS:
        new = doc[section].get(name)
        old = previous.figures.get(name)
        if not isinstance(new, dict) or old is None or old.status != "known" or old.value is None:
            continue
        scale = {"GFLOP/s": 1e9, "GOP/s": 1e9, "GB/s": 1e9}[new["unit"]]
        if old.value > new["value"] * scale:
            date = (previous.calibration or {}).get("date", "an earlier calibration")
            how = (old.note or "").split("now); ", 1)[-1]  # the method, without an earlier "kept from"
            doc[section][name] = {"value": round(old.value / scale, 3), "unit": new["unit"], "source": old.source,
                                  "note": f"kept from the calibration of {date} (higher than {new['value']} now); "
                                          f"{how}".strip("; ")}


def host_target(*, recalibrate: bool = False, budget_s: float = DEFAULT_BUDGET_S) -> Target:
    """The calibrated host target: from the cache, or measured now (and cached) when absent or stale."""
    path = cache_path()
    previous = _cached(path)
    if not recalibrate and previous is not None:
        return previous
    doc = measure(budget_s)
    if doc["calibration"]["loaded"]:
        # Something else competed for the machine: a second pass gives the quiet moments another chance.
        keep_higher(doc, parse_target(measure(budget_s), "(second calibration pass)"))
        doc["calibration"]["passes"] = 2
    if previous is not None:
        keep_higher(doc, previous)
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
