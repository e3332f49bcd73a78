"""Compiling generated source with Numba, cached twice:

- per process: a dict from the source text to its Numba dispatcher, so structurally identical kernels (the
  same canonical source) compile once however many times a model repeats them;
- on disk: each source is written to `<cache dir>/k_<sha>.py` and compiled with `@njit(cache=True)`, so
  Numba stores the machine code next to it and a second process loads it instead of compiling.

The cache directory is `$SOLAR_CACHE_DIR/numba`, else `$XDG_CACHE_HOME/solar/numba`, else
`~/.cache/solar/numba`; if none is writable, a temporary directory (then only the per-process cache helps).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from .codegen_expr import HEADER
from .errors import UnsupportedError

# Numba is imported on first compilation, not with this module: `solar-run` reports bad inputs, parameters
# and diagnostics without paying for it.
_RUNTIME_FILE = Path(__file__).with_name("runtime.py")


@dataclass
class CompileStats:
    """What compilation cost in this process (for tests, `solar-run --stats` and the benchmark)."""

    requests: int = 0  # kernels/einsums asked for
    unique_sources: int = 0  # distinct generated sources (dispatchers created)
    compiled: int = 0  # signatures compiled by Numba in this process
    disk_hits: int = 0  # signatures loaded from Numba's disk cache
    seconds: float = 0.0  # time spent compiling or loading machine code
    per_source: dict[str, float] = field(default_factory=dict)

    def snapshot(self) -> CompileStats:
        return CompileStats(self.requests, self.unique_sources, self.compiled, self.disk_hits, self.seconds,
                            dict(self.per_source))


STATS = CompileStats()
_DISPATCHERS: dict[str, Any] = {}
_LOCK = threading.Lock()


@cache
def runtime_hash() -> str:
    """Changes whenever the runtime helpers or the header change, so old generated files are not reused."""
    with open(_RUNTIME_FILE, "rb") as fh:
        data = fh.read()
    return hashlib.sha256(data + HEADER.encode()).hexdigest()[:16]


@cache
def cache_dir() -> Path:
    candidates = []
    if os.environ.get("SOLAR_CACHE_DIR"):
        candidates.append(Path(os.environ["SOLAR_CACHE_DIR"]) / "numba")
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    candidates.append(Path(xdg) / "solar" / "numba")
    for path in candidates:
        try:
            path.mkdir(parents=True, exist_ok=True)
            probe = path / f".probe-{os.getpid()}"
            probe.write_text("")
            probe.unlink()
            return path
        except OSError:
            continue
    return Path(tempfile.mkdtemp(prefix="solar-numba-"))


def module_source(function_source: str) -> str:
    return HEADER.format(runtime=runtime_hash()) + "\n\n" + function_source


def dispatcher(function_source: str) -> Any:
    """The Numba dispatcher for a generated function (created once per process per source)."""
    with _LOCK:
        STATS.requests += 1
        found = _DISPATCHERS.get(function_source)
        if found is not None:
            return found
        text = module_source(function_source)
        digest = hashlib.sha256(text.encode()).hexdigest()[:24]
        path = cache_dir() / f"k_{digest}.py"
        _write_once(path, text)
        name = f"_solar_generated_k_{digest}"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        fn = module.kernel
        _DISPATCHERS[function_source] = fn
        STATS.unique_sources += 1
        return fn


def _write_once(path: Path, text: str) -> None:
    """Creates `path` unless it exists. Never rewrites it: Numba's disk cache is keyed on the file's time
    stamp, and another process may be using it. A hard link publishes the file atomically."""
    if path.exists():
        return
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".py")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        with contextlib.suppress(FileExistsError):  # another process published it first
            os.link(tmp, path)
    finally:
        os.unlink(tmp)


def compile_for(fn: Any, sig: tuple[Any, ...], what: str = "generated code") -> Callable[..., Any]:
    """Compiles (or loads from disk) `fn` for the Numba argument types `sig` before it runs, so compile time
    is measured apart from run time. A Numba failure (a bug in the code generator, not in the user's IR)
    becomes an UnsupportedError naming `what` and the generated file."""
    with _LOCK:
        if sig in fn.overloads:
            return fn
        start = time.perf_counter()
        hits_before = sum(fn.stats.cache_hits.values())
        from numba.core.errors import NumbaWarning

        with warnings.catch_warnings():
            # Numba's performance hints (e.g. a prange it could not parallelise) are not the user's concern.
            warnings.simplefilter("ignore", NumbaWarning)
            try:
                fn.compile(sig)
            except Exception as err:
                summary = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
                raise UnsupportedError(f"{what}: Numba could not compile {fn.py_func.__code__.co_filename}: "
                                       f"{summary}") from err
        elapsed = time.perf_counter() - start
        STATS.seconds += elapsed
        if sum(fn.stats.cache_hits.values()) > hits_before:
            STATS.disk_hits += 1
        else:
            STATS.compiled += 1
        key = fn.py_func.__module__
        STATS.per_source[key] = STATS.per_source.get(key, 0.0) + elapsed
    return fn


def reset_process_cache() -> None:
    """Forgets the per-process cache (tests use it to exercise the disk cache)."""
    with _LOCK:
        _DISPATCHERS.clear()
