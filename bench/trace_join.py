"""A PyTorch profiler trace (Chrome JSON) joined to SOLAR's units: each GPU kernel gets the unit its launch
came from, by source line and op, so each unit gets its measured time and headroom.

* A kernel's op is the outermost ATen call that launched it (`args["External id"]` links the kernel to the
  `cpu_op` event of the same id; `aten::linear` is outside the `aten::addmm` it calls). The op's name without
  namespace and leading underscores (`aten::_softmax` → `softmax`) is compared with the unit's kernel name
  (`@softmax`, `@linear_1` → `linear`).
* A kernel's line is that of a `solar-line:FILE:LINE` range around its call (bench/line_profile.py names the
  calling line so), else the innermost `python_function` frame in the problem's file. The profiler names
  such a frame by its function's first line, not the calling line, so a unit is then joined through the
  function its line lies in.
* Several units at one place with one op (two `linear`s called on one line, a loop) take the kernels in
  turn: the k-th call at that place in a run goes to the k-th such unit in program order.
* The time of a unit is its kernels' durations per run (runs: the `ProfilerStep#N` ranges, else one).

A kernel's inputs may sit in the L2 when it starts (the previous kernel wrote them), so a unit is judged by its
roofline with 2 × L2 bytes taken off its traffic (bench/measured.py), never by the cold DRAM roofline.
"""

from __future__ import annotations

import ast
import json
import os
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from .bounds import Bounds
from .measure import detect_gpu_target
from .measured import MeasuredError, MeasuredTime

GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
_PY_FRAME = re.compile(r"^(?P<file>.*)\((?P<line>\d+)\): (?P<func>.*)$")
_LINE_RANGE = re.compile(r"^solar-line:(?P<file>.*):(?P<line>\d+)$")
_STEP = re.compile(r"^ProfilerStep#(\d+)$")


@dataclass
class TraceKernel:
    """One GPU kernel of the trace, with where it was launched from."""

    name: str
    seconds: float
    op: str | None  # the outermost ATen op that launched it, normalised (None: no cpu_op found)
    line: int | None  # the calling line (a solar-line range) or the function's first line (a Python frame)
    line_kind: str  # "call" | "function" | "none"
    step: int  # the profiler step it ran in (0 without steps)
    call: int  # the id of its launching top-level cpu_op (kernels of one call share it)


@dataclass
class Trace:
    """The kernels of a profiler trace of one problem."""

    path: str
    device: str | None  # the GPU's name from the trace's deviceProperties
    kernels: list[TraceKernel]
    runs: int


def normalise_op(name: str) -> str:
    base = name.split("::")[-1]
    return base.lstrip("_").removesuffix("_")


def read_trace(path: str, problem_file: str) -> Trace:
    """The kernels of a Chrome trace, each with its op and its line in `problem_file` (matched by file name)."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, json.JSONDecodeError) as err:
        raise MeasuredError(f"--measured {path}: cannot read the trace ({err})") from None
    events = [e for e in doc.get("traceEvents", []) if isinstance(e, dict) and e.get("ph") == "X"]
    device = next((p.get("name") for p in doc.get("deviceProperties", []) if isinstance(p, dict)), None)
    cpu = [e for e in events if e.get("cat") in ("cpu_op", "python_function", "user_annotation")]
    parent = _parents(cpu)
    by_external = {}
    for e in cpu:
        ext = (e.get("args") or {}).get("External id")
        if e.get("cat") == "cpu_op" and ext is not None:
            by_external.setdefault(ext, e)
    base = os.path.basename(problem_file)
    kernels = []
    steps: set[int] = set()
    for k in events:
        if k.get("cat") not in GPU_CATEGORIES:
            continue
        launch = by_external.get((k.get("args") or {}).get("External id"))
        chain = _chain(launch, parent) if launch is not None else []
        top = next((e for e in reversed(chain) if e.get("cat") == "cpu_op"), None)
        line, kind = _line_of(chain, base)
        step = next((int(m.group(1)) for e in chain if (m := _STEP.match(str(e.get("name", ""))))), 0)
        steps.add(step)
        kernels.append(TraceKernel(str(k.get("name")), float(k.get("dur", 0)) * 1e-6,
                                   normalise_op(str(top["name"])) if top else None, line, kind, step,
                                   id(top) if top is not None else id(k)))
    if not kernels:
        raise MeasuredError(f"--measured {path}: the trace has no GPU kernels (export it from a CUDA run with "
                            "ProfilerActivity.CUDA)")
    return Trace(path, device, kernels, max(1, len(steps)))


def _parents(events: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Each CPU event's innermost enclosing event on the same thread (by time)."""
    parent: dict[int, dict[str, Any]] = {}
    lanes: dict[tuple[Any, Any], list[dict[str, Any]]] = defaultdict(list)
    for e in events:
        lanes[(e.get("pid"), e.get("tid"))].append(e)
    for lane in lanes.values():
        lane.sort(key=lambda e: (float(e.get("ts", 0)), -float(e.get("dur", 0))))
        stack: list[dict[str, Any]] = []
        for e in lane:
            start = float(e.get("ts", 0))
            while stack and float(stack[-1].get("ts", 0)) + float(stack[-1].get("dur", 0)) < start + float(
                    e.get("dur", 0)):
                stack.pop()
            if stack:
                parent[id(e)] = stack[-1]
            stack.append(e)
    return parent


def _chain(e: dict[str, Any], parent: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    """`e` and its enclosing events, innermost first."""
    out = [e]
    while id(out[-1]) in parent:
        out.append(parent[id(out[-1])])
    return out


def _line_of(chain: list[dict[str, Any]], base: str) -> tuple[int | None, str]:
    for e in chain:
        m = _LINE_RANGE.match(str(e.get("name", "")))
        if m and os.path.basename(m.group("file")) == base:
            return int(m.group("line")), "call"
    for e in chain:
        if e.get("cat") != "python_function":
            continue
        m = _PY_FRAME.match(str(e.get("name", "")))
        if m and os.path.basename(m.group("file")) == base:
            return int(m.group("line")), "function"
    return None, "none"


def function_lines(path: str) -> dict[int, int]:
    """For each line of a Python file, the first line of the innermost function it lies in (as the profiler
    names a frame: the first decorator's line, else the `def`)."""
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError):
        return {}
    out: dict[int, int] = {}
    funcs = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    for fn in sorted(funcs, key=lambda n: n.lineno):  # inner functions come later and overwrite
        first = min([fn.lineno, *(d.lineno for d in fn.decorator_list)])
        for line in range(first, (fn.end_lineno or fn.lineno) + 1):
            out[line] = first
    return out


def unit_name(work_name: str) -> str:
    return re.sub(r"_\d+$", "", work_name.lstrip("@"))


def join_trace(trace: Trace, bounds: Bounds, target: str, problem_file: str) -> list[dict[str, Any]]:
    """Per unit: its kernels' measured time per run, its bound (2 × L2 off its traffic), the ratio; kernels no
    unit takes are one row of their own (`unit: null`)."""
    from solar.backends.source_lines import unit_location

    tb = bounds.targets[target]
    report = tb.report
    assert report is not None and bounds.model is not None
    functions = function_lines(problem_file)
    base = os.path.basename(problem_file)
    units = []
    for work, timing in report.units:
        loc = unit_location(work)
        line = loc.line if loc is not None and os.path.basename(str(loc.file)) == base else None
        units.append((work, timing, line, functions.get(line) if line is not None else None))
    seconds: dict[int, float] = defaultdict(float)
    counts: dict[int, int] = defaultdict(int)
    unjoined = [0.0, 0]
    seen: dict[tuple[Any, ...], list[int]] = defaultdict(list)  # place → calls in order, per step
    for k in trace.kernels:
        at = [i for i, (_w, _t, line, fn) in enumerate(units)
              if k.line is not None and (line if k.line_kind == "call" else fn) == k.line]
        same_op = [i for i in at if unit_name(units[i][0].name) == k.op]
        candidates = same_op or (at if len(at) == 1 else [])
        if not candidates:
            unjoined[0] += k.seconds
            unjoined[1] += 1
            continue
        place = (k.step, k.line_kind, k.line, k.op)
        if k.call not in seen[place]:
            seen[place].append(k.call)
        i = candidates[seen[place].index(k.call) % len(candidates)]
        seconds[i] += k.seconds
        counts[i] += 1
    credit = 2 * (tb.llc_bytes or 0)
    beta = report.peaks.bandwidth
    rows = []
    for i, (work, timing, line, _fn) in enumerate(units):
        if i not in counts:
            continue
        measured = seconds[i] / trace.runs
        bound = max(timing.tensor_s, timing.vector_s, max(0, work.total_bytes - credit) / beta)
        rows.append({"unit": work.name, "where": f"{base}:{line}" if line else "<no line>", "kernels": counts[i],
                     "measured_s": measured, "bound_s": bound, "sol_s": timing.seconds,
                     "ratio": measured / bound if bound > 0 else None,
                     "headroom": measured / timing.seconds if timing.seconds > 0 else None,
                     "violation": bound > 0 and measured < bound})
    if unjoined[1]:
        rows.append({"unit": None, "where": "<not joined>", "kernels": unjoined[1],
                     "measured_s": unjoined[0] / trace.runs, "bound_s": 0.0, "sol_s": 0.0, "ratio": None,
                     "headroom": None, "violation": False})
    return rows


def trace_time(trace: Trace, problem: str, target: str) -> MeasuredTime:
    """The whole trace as one measured time: its kernels' durations per run (a sum, so overlapping streams
    can only make it larger: never a false violation)."""
    return MeasuredTime(problem, target, "eager", sum(k.seconds for k in trace.kernels) / trace.runs, trace.path)


def trace_target(trace: Trace, fallback: str | None) -> str:
    detected = detect_gpu_target(trace.device) if trace.device else None
    target = detected or fallback
    if target is None:
        raise MeasuredError(f"--measured {trace.path}: the trace names no known GPU "
                            f"({trace.device or 'no deviceProperties'}): give its target with --target")
    return target
