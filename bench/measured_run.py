"""`solar-bench PATH --measured FILE`: bound every problem under PATH at its own sizes on the targets the
measured times name, and judge each time (bench/measured.py); a profiler trace is joined unit by unit
(bench/trace_join.py). Nothing runs here but the translation (on the meta device) and the cost model."""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable

from .bounds import Bounds, compute_bounds
from .measured import MeasuredError, MeasuredRun, MeasuredTime, is_trace, judge_times, match, read_measured


def bound_problem(path: str, targets: list[str], precision_floor: str | None = None) -> Bounds:
    """The bounds of a problem file at the sizes it is written with, on `targets`. f32 contractions are priced
    as PyTorch's default flags run them (the frontend records that per kernel): the flags published timings
    of KernelBench were taken with; under `precision_floor` at the floor where that is faster."""
    from solar.targets.loader import load_target

    from .options import BenchOptions
    from .problem import load_program
    from .sizes import SizeRequest

    prog = load_program(path, SizeRequest(), BenchOptions(targets=targets, measure=False))
    return compute_bounds(prog.module, [load_target(t) for t in targets], prog.sizes,
                          precision_floor=precision_floor)


def problems_under(path: str, match: list[str] | None = None) -> tuple[list[str], str | None]:
    """The problem files under `path` (a file: itself), narrowed by `match` as a batch narrows them."""
    if os.path.isdir(path):
        from .batch import tasks_for

        return [t.path for t in tasks_for(path, {}, match)], path
    return [path], None


def run_measured(path: str, measured: list[str], l2: str, fallback_target: str | None = None,
                 bound: Callable[[str, list[str]], Bounds] | None = None,
                 on_problem: Callable[[str], None] = lambda p: None, only: list[str] | None = None,
                 precision_floor: str | None = None) -> MeasuredRun:
    """Judge every measured time of the problems under `path`. `bound` computes a problem's bounds (tests pass
    a cached one; by default `bound_problem` under `precision_floor`); `only` narrows a directory as `--match`
    does; a problem whose bound fails is recorded, not raised."""
    from .trace_join import join_trace, read_trace, trace_target, trace_time

    problems, root = problems_under(path, only)
    traces = [m for m in measured if is_trace(m)]
    if traces and (root is not None or len(traces) > 1):
        raise MeasuredError("a profiler trace joins to one problem: give one problem file and one trace")
    times: list[MeasuredTime] = [t for m in measured if m not in traces for t in read_measured(m)]
    times = _check_targets(times)
    if bound is None:
        bound = functools.partial(bound_problem, precision_floor=precision_floor)
    run = MeasuredRun(precision_floor=precision_floor)
    for problem in problems:
        mine = match(times, problem, root)
        trace = read_trace(traces[0], problem) if traces else None
        if trace is not None:
            target = trace_target(trace, fallback_target)
            mine.append(trace_time(trace, os.path.basename(problem), target))
        if not mine:
            run.unmatched.append(os.path.relpath(problem, root) if root else problem)
            continue
        on_problem(problem)
        targets = sorted({t.target for t in mine})
        try:
            bounds = bound(problem, targets)
        except Exception as err:  # a problem that cannot be translated or bounded is a finding, not a crash
            run.failed.append((problem, _first_line(err)))
            continue
        run.verdicts += judge_times(bounds, problem, mine, l2)
        for name in {t.target for t in mine}:
            report = bounds.targets[name].report
            if report is not None:
                beta, peaks = run.roofs.get(name, (report.peaks.bandwidth, {}))
                peaks.update({(c.precision, c.unit): c.flop_per_s for c in report.peaks.used()})
                run.roofs[name] = (beta, peaks)
        if trace is not None:
            run.units = join_trace(trace, bounds, mine[-1].target, problem)
    return run


def _check_targets(times: list[MeasuredTime]) -> list[MeasuredTime]:
    """The times with each target by its own name (`h100` is `h100-sxm`: the bounds are keyed so)."""
    from solar.targets.loader import TargetError, load_target

    names: dict[str, str] = {}
    for name in sorted({t.target for t in times}):
        try:
            names[name] = load_target(name).name
        except TargetError as err:
            origin = next(t.origin for t in times if t.target == name)
            raise MeasuredError(f"--measured {origin}: target '{name}': {str(err).splitlines()[0]}") from None
    return [dataclasses.replace(t, target=names[t.target]) for t in times]


def _first_line(err: BaseException) -> str:
    fmt = getattr(err, "format", None)
    text = str(fmt()) if callable(fmt) else str(err)
    return (text.strip().splitlines() or [type(err).__name__])[0]
