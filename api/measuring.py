"""`Analysis.bench()`: the live program measured as `solar-bench` measures (bench/measure.py: warm-up, cache
flush, timed runs within a budget), judged against the bounds of the measuring machine's target (headroom,
violations), and, for PyTorch eager on the CPU, each source line's measured share (bench/line_profile.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from solar.errors import BadInputError, BadOptionError, ModelError, SolarError


@dataclass(frozen=True)
class Measurable:
    """What bench() needs of an Analysis (plain data, so that this module needs not know the class)."""

    live: tuple[Any, tuple[Any, ...]] | None  # the program and its example inputs
    frontend: str  # torch | jax | sir
    sir: str
    params: dict[str, int]  # the size parameters at the analysed sizes
    document: dict[str, Any]  # the --sol-report document: its source lines get the measured shares


def bench_analysis(analysis: Measurable, frameworks: tuple[str, ...] = ("eager",), device: str = "auto",
                   budget_s: float = 1.0, warmup: int = 2, min_runs: int = 3, lines: bool = True) -> dict[str, Any]:
    """The record (the shape of solar-bench's: measurements, headroom, violations, beats, notes). Longer than
    most: it is one measurement's steps in order (device, bounds, timing, judgement, line shares), each a
    call into bench/, kept together so the order they depend on reads top to bottom."""
    from solar.bench.bounds import BoundsError, compute_bounds
    from solar.bench.conditions import Monitor, spread_of, system_probes
    from solar.bench.html import sol_results
    from solar.bench.line_profile import add_measured, profile_lines
    from solar.bench.measure import (
        TimingOptions,
        cpu_count,
        cuda_available,
        detect_gpu_target,
        measure_jax,
        measure_torch,
        precision_flags,
        tf32_allowed,
    )
    from solar.bench.problem import threads_measured
    from solar.bench.verdict import judge
    from solar.ir.parser import parse_module
    from solar.targets.loader import load_target

    live = analysis.live
    if live is None:
        raise BadInputError("bench() needs a live program: analyse a torch.nn.Module or a JAX function (a .sir has "
                            "nothing to run; solar-bench runs a .sir with --source MODEL.py)")
    frameworks = check_options(analysis.frontend, frameworks, device, budget_s, warmup, min_runs)
    program, inputs = live
    if device == "auto":
        device = "cuda" if analysis.frontend == "torch" and cuda_available() else "cpu"
    if device == "cuda":
        import torch

        if not cuda_available():
            raise BadOptionError("bench: device 'cuda', but torch sees no CUDA device (use device='cpu')")
        machine = detect_gpu_target(torch.cuda.get_device_name())
        if machine is None:
            raise SolarError(f"no target for {torch.cuda.get_device_name()}: bench() cannot judge its times")
    else:
        machine = "host"
    allow_tf32 = device == "cuda" and (analysis.frontend == "jax" or tf32_allowed(precision_flags()))
    module = parse_module(analysis.sir)
    sizes = dict(analysis.params)
    floor = analysis.document.get("precision_floor")  # the headroom is against the SOL the analysis shows
    try:
        bounds = compute_bounds(module, [load_target(machine)], sizes, allow_tf32, floor)
    except BoundsError as err:
        raise SolarError(f"error: {err}") from None
    timing = TimingOptions(budget_s=budget_s, warmup=warmup, min_runs=min_runs)
    llc = bounds.targets[load_target(machine).name].llc_bytes
    # The machine's conditions around the timed runs, as solar-bench records them: a busy machine marks the
    # record noisy (docs/bench.md, "Noise") and every view says so.
    monitor = Monitor(system_probes(), cpu_count(), threads_measured(load_target(machine), device))
    monitor.start()
    try:
        if analysis.frontend == "torch":
            measured = measure_torch(program.eval(), list(inputs), list(frameworks), device, timing, llc, None)
        else:
            measured = [measure_jax(program, list(inputs), timing, llc)]
    except SystemExit as err:  # the program called sys.exit: its doing, never the caller's exit
        raise _exited(err) from None
    conditions = monitor.finish({m.mode: spread_of(m.median_s, m.min_s) for m in measured
                                 if m.median_s is not None and m.min_s is not None})
    name = load_target(machine).name
    headroom, beats = judge(bounds, name, measured)
    rec: dict[str, Any] = {"device": {"kind": device}, "bounds": {name: bounds.targets[name].seconds},
                           "measurements": {m.mode: m.to_json() for m in measured}, "headroom": {name: headroom},
                           "violations": [b.to_json() for b in beats if b.violation],
                           "beats": [b.to_json() for b in beats if not b.violation], "notes": [],
                           "conditions": conditions.to_json(), "noisy": conditions.noisy, "precision_floor": floor}
    eager = rec["measurements"].get("eager", {})
    if lines and analysis.frontend == "torch" and device == "cpu" and eager.get("min_s") is not None:
        try:
            profile = profile_lines(lambda: program(*inputs))
        except SystemExit as err:
            raise _exited(err) from None
        machine_doc = sol_results(module, sizes, [machine], allow_tf32, floor).document
        add_measured(machine_doc, profile, name)
        add_measured(analysis.document, profile, name)
        rec["source_lines"] = machine_doc["targets"][0]["source_lines"]
        rec["notes"].append(f"source lines: measured share from {profile.runs} profiled eager runs (torch.profiler, "
                            "CPU)")
    return rec


def _exited(err: SystemExit) -> ModelError:
    from solar.frontends.diagnostics import user_code_error

    text = user_code_error(err, "while bench() ran it").format()
    return ModelError(text.splitlines()[0], text)


def check_options(frontend: str, frameworks: Any, device: Any, budget_s: Any, warmup: Any, min_runs: Any
                  ) -> tuple[str, ...]:
    """bench()'s options, checked as solar-bench checks its flags; the framework modes to measure (a string
    is one mode; a JAX function is always measured under jax.jit)."""
    import math

    names = (frameworks,) if isinstance(frameworks, str) else frameworks
    if not isinstance(names, tuple | list) or not names or not all(isinstance(f, str) for f in names):
        raise BadOptionError(f"bench: frameworks takes framework modes, e.g. ('eager', 'compile'), not "
                             f"{frameworks!r}")
    bad = [f for f in names if f not in ("eager", "compile", "jit")]
    if bad:
        raise BadOptionError(f"bench: unknown framework mode {bad[0]!r} (choose from eager, compile, jit)")
    kept = tuple(f for f in names if f != "jit") if frontend == "torch" else tuple(names)
    if not kept:
        raise BadOptionError("bench: a PyTorch program is measured in eager or compile mode, not under jax.jit")
    if device not in ("auto", "cpu", "cuda"):
        raise BadOptionError(f"bench: bad device {device!r}: expected auto, cpu or cuda")
    numbers_ok = (isinstance(budget_s, int | float) and not isinstance(budget_s, bool) and math.isfinite(budget_s)
                  and budget_s > 0)
    counts_ok = all(isinstance(n, int) and not isinstance(n, bool) for n in (warmup, min_runs))
    if not numbers_ok or not counts_ok or warmup < 0 or min_runs < 1:
        raise BadOptionError("bench: budget_s must be a positive number of seconds, warmup a whole number at "
                             "least 0, min_runs one at least 1")
    return kept
