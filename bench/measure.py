"""Timing the original program: PyTorch eager, torch.compile (inductor) and jax.jit, on the CPU or a GPU.

Each measurement: `warmup` untimed runs (torch.compile and jax.jit compile in the first), then timed runs
until `budget_s` is spent (at least `min_runs`, at most `max_runs`), each after flushing the last-level
cache, so that every run reads its inputs from DRAM as the bounds assume:

* CPU: a float64 buffer twice the last-level cache is read and written (`buf += 1`; a plain fill may use
  non-temporal stores that bypass the cache); time by `time.perf_counter` around the call (PyTorch and
  numpy return when done; JAX results are waited for with `block_until_ready`).
* GPU: a buffer twice the L2 is zeroed on the device; the run is timed with CUDA events recorded on the
  stream around it, so host overhead between runs is not counted.

The median and the minimum are kept; a violation is judged on the minimum (the fastest run the machine
gave), headroom is reported on both (docs/bench.md).
"""

from __future__ import annotations

import os
import shutil
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

FRAMEWORK_MODES = ("eager", "compile", "jit")


@dataclass
class TimingOptions:
    budget_s: float = 1.0  # timed runs stop once this is spent (per framework mode)
    warmup: int = 2
    min_runs: int = 3
    max_runs: int = 200


@dataclass
class Measurement:
    """One framework mode's timing of a program, or why it was skipped or failed."""

    mode: str  # eager | compile | jit
    device: str  # cpu | cuda
    median_s: float | None = None
    min_s: float | None = None
    runs: int = 0
    warmup: int = 0
    setup_s: float = 0.0  # first call (compilation for compile/jit) and warm-up
    flush_bytes: int = 0
    threads: dict[str, Any] = field(default_factory=dict)
    skipped: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.min_s is not None

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "device": self.device, "median_s": self.median_s, "min_s": self.min_s,
                "runs": self.runs, "warmup": self.warmup, "setup_s": round(self.setup_s, 4),
                "flush_bytes": self.flush_bytes, "threads": self.threads, "skipped": self.skipped,
                "error": self.error}


# ---- flushing and timing ------------------------------------------------------------------------------


class CpuFlush:
    """Evicts the last-level cache by reading and writing a buffer twice its size."""

    def __init__(self, llc_bytes: int | None) -> None:
        self.nbytes = 2 * (llc_bytes or 32 << 20)
        self.buf = np.zeros(self.nbytes // 8)

    def __call__(self) -> None:
        np.add(self.buf, 1.0, out=self.buf)


def time_cpu(run: Callable[[], Any], flush: Callable[[], None], opts: TimingOptions,
             wait: Callable[[Any], Any] = lambda out: out) -> tuple[list[float], float]:
    """(timed seconds per run, set-up seconds) of `run` on the CPU; `wait` blocks until a result exists."""
    t0 = time.perf_counter()
    for _ in range(max(1, opts.warmup)):
        wait(run())
    setup = time.perf_counter() - t0
    times: list[float] = []
    deadline = time.perf_counter() + opts.budget_s
    while len(times) < opts.max_runs and (len(times) < opts.min_runs or time.perf_counter() < deadline):
        flush()
        start = time.perf_counter()
        wait(run())
        times.append(time.perf_counter() - start)
    return times, setup


def time_cuda(run: Callable[[], Any], opts: TimingOptions, l2_bytes: int) -> tuple[list[float], float, int]:
    """(timed seconds per run, set-up seconds, flush bytes) of `run` on the current CUDA device: CUDA events
    around each run on the current stream, the L2 flushed (a buffer twice its size zeroed) before each."""
    import torch

    flush_bytes = 2 * max(l2_bytes, 1 << 20)
    buf = device_buffer(flush_bytes, "cuda")
    t0 = time.perf_counter()
    for _ in range(max(1, opts.warmup)):
        run()
    torch.cuda.synchronize()
    setup = time.perf_counter() - t0
    times: list[float] = []
    deadline = time.perf_counter() + opts.budget_s
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    while len(times) < opts.max_runs and (len(times) < opts.min_runs or time.perf_counter() < deadline):
        buf.zero_()
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)  # elapsed_time is in milliseconds
    return times, setup, flush_bytes


def device_buffer(nbytes: int, device: str) -> Any:
    """A byte buffer on `device` (the cache flush's)."""
    import torch

    return torch.empty(nbytes, dtype=torch.uint8, device=device)


def place(model: Any, inputs: list[Any], device: str) -> tuple[Any, list[Any]]:
    """The model and its tensor inputs moved to `device` (other inputs, such as Python numbers, stay)."""
    import torch

    return model.to(device), [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]


def _summarise(m: Measurement, times: list[float], setup: float, warmup: int) -> Measurement:
    m.median_s = statistics.median(times)
    m.min_s = min(times)
    m.runs = len(times)
    m.warmup = warmup
    m.setup_s = setup
    return m


# ---- the machine ---------------------------------------------------------------------------------------


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def cxx_compiler() -> str | None:
    """The C++ compiler inductor would use on the CPU (its config, $CXX, then g++, c++, clang++), or None."""
    try:
        from torch._inductor import config

        configured = config.cpp.cxx
        names = list(configured) if isinstance(configured, tuple | list) else [configured]
    except Exception:
        names = []
    names += [os.environ.get("CXX"), "g++", "c++", "clang++"]
    for name in names:
        if name and (path := shutil.which(name)):
            return path
    return None


def torch_threads(want: int | None) -> dict[str, Any]:
    """Sets torch's intra-op threads to `want` (the target calibration's), and says what torch now uses."""
    import torch

    if want:
        torch.set_num_threads(want)
    return {"torch_intra_op": torch.get_num_threads(), "torch_inter_op": torch.get_num_interop_threads(),
            "cpus": cpu_count(), "calibration": want}


def cuda_device_info() -> dict[str, Any]:
    """Name, clocks, memory and the framework's precision flags of the current CUDA device (for the JSON)."""
    import torch

    index = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    info: dict[str, Any] = {
        "name": props.name,
        "index": index,
        "capability": f"{props.major}.{props.minor}",
        "sm_count": props.multi_processor_count,
        "total_memory": props.total_memory,
        "l2_bytes": getattr(props, "L2_cache_size", None),
        "max_sm_clock_mhz": _khz_to_mhz(getattr(props, "clock_rate", None)),
        "max_memory_clock_mhz": _khz_to_mhz(getattr(props, "memory_clock_rate", None)),
        "memory_bus_width": getattr(props, "memory_bus_width", None),
        "torch_cuda": torch.version.cuda,
    }
    try:  # the clock over the last sample period, through NVML (pynvml may be absent)
        info["sm_clock_mhz_now"] = torch.cuda.clock_rate(index)
    except Exception:
        info["sm_clock_mhz_now"] = None
    info["precision"] = precision_flags()
    return info


def precision_flags() -> dict[str, Any]:
    """What PyTorch's flags let float32 contractions run on (docs/sol.md, "Precision")."""
    import torch

    flags: dict[str, Any] = {
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "cuda_matmul_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        "cudnn_allow_tf32": bool(torch.backends.cudnn.allow_tf32),
        "cuda_matmul_allow_fp16_reduced_precision": bool(
            torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction),
        "cuda_matmul_allow_bf16_reduced_precision": bool(
            torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction),
    }
    conv = getattr(getattr(torch.backends.cudnn, "conv", None), "fp32_precision", None)
    if conv is not None:
        flags["cudnn_conv_fp32_precision"] = conv
    return flags


def tf32_allowed(flags: dict[str, Any]) -> bool:
    """Whether some float32 contraction may run on TF32 tensor cores: then every f32 contraction is priced
    at the TF32 peak, which keeps the bound below the run whichever of them does."""
    return bool(flags.get("cuda_matmul_allow_tf32") or flags.get("cudnn_allow_tf32")
                or flags.get("float32_matmul_precision") in ("high", "medium")
                or flags.get("cudnn_conv_fp32_precision") == "tf32")


def _khz_to_mhz(value: Any) -> float | None:
    return None if not value else value / 1e3


# Device names (as the driver reports them) → shipped targets; the first pattern found in the name wins.
_GPU_TARGETS = (("gb200", "gb200"), ("b200", "b200"), ("h200", "h200"), ("h100 pcie", "h100-pcie"),
                ("h100", "h100-sxm"), ("a100", "a100"), ("rtx a6000", "rtx-a6000"), ("l40s", "l40s"),
                ("rtx 4090", "rtx-4090"), ("thor", "jetson-thor"), ("orin", "jetson-orin"), ("mi300x", "mi300x"))


def detect_gpu_target(device_name: str) -> str | None:
    """The shipped target of a device name (`NVIDIA H100 80GB HBM3` → h100-sxm), or None."""
    name = device_name.lower()
    return next((target for pattern, target in _GPU_TARGETS if pattern in name), None)


# ---- the frameworks -------------------------------------------------------------------------------------


def measure_torch(model: Any, inputs: list[Any], modes: list[str], device: str, opts: TimingOptions,
                  llc_bytes: int | None, threads: int | None) -> list[Measurement]:
    """PyTorch eager and torch.compile (inductor) timings of `model(*inputs)` on `device`."""
    import torch

    out: list[Measurement] = []
    info = torch_threads(threads)
    if device == "cuda":
        model, inputs = place(model, inputs, "cuda")
    flush = CpuFlush(llc_bytes) if device == "cpu" else None
    for mode in modes:
        m = Measurement(mode, device, threads=info)
        if mode == "compile" and device == "cpu" and cxx_compiler() is None:
            m.skipped = "no C++ compiler found (inductor needs one on the CPU: install g++ or set $CXX)"
            out.append(m)
            continue
        try:
            fn = model if mode == "eager" else torch.compile(model, backend="inductor")
            with torch.inference_mode():
                def run(fn: Any = fn) -> Any:
                    return fn(*inputs)

                if device == "cuda":
                    l2 = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0)
                    times, setup, m.flush_bytes = time_cuda(run, opts, int(l2 or 0))
                else:
                    assert flush is not None
                    m.flush_bytes = flush.nbytes
                    times, setup = time_cpu(run, flush, opts)
            _summarise(m, times, setup, max(1, opts.warmup))
        except Exception as err:
            m.error = _error(err)
        out.append(m)
    return out


def measure_jax(fn: Callable[..., Any], args: list[Any], opts: TimingOptions, llc_bytes: int | None) -> Measurement:
    """jax.jit timing of `fn(*args)` on JAX's default device. On a GPU the L2 is flushed by a device
    computation reading and writing a buffer twice `llc_bytes` (the machine target's L2); JAX has no
    event timers, so the time is the host's around a call that is waited for."""
    import jax
    import jax.numpy as jnp

    platform = jax.devices()[0].platform
    m = Measurement("jit", "cuda" if platform == "gpu" else platform,
                    threads={"xla_cpus": cpu_count(), "xla_flags": os.environ.get("XLA_FLAGS", "")})
    try:
        jitted = jax.jit(fn)
        placed = [jax.device_put(a) for a in args]
        if platform == "cpu":
            flush: Callable[[], None] = CpuFlush(llc_bytes)
            m.flush_bytes = flush.nbytes  # type: ignore[attr-defined]
        else:
            buf = jnp.zeros(2 * (llc_bytes or 64 << 20) // 4, jnp.float32)
            bump = jax.jit(lambda b: b + 1.0)
            m.flush_bytes = int(buf.nbytes)

            def flush() -> None:
                nonlocal buf
                buf = bump(buf).block_until_ready()
        times, setup = time_cpu(lambda: jitted(*placed), flush, opts, wait=jax.block_until_ready)
        _summarise(m, times, setup, max(1, opts.warmup))
    except Exception as err:
        m.error = _error(err)
    return m


def _error(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}"[:500]
