"""One problem end to end: load the program, fix its sizes, translate, bound every mode on every target,
measure every framework mode, judge. `bench_problem` returns one JSON-able record (docs/bench.md, "The
JSONL record") and never raises for a problem's own failure: the record says what failed and where."""

from __future__ import annotations

import operator
import os
import re
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from solar.backends.precision_policy import policy_text

from .bounds import Bounds, BoundsError, compute_bounds
from .conditions import Monitor, Probes, spread_of, system_probes
from .measure import (
    Measurement,
    TimingOptions,
    cpu_count,
    cuda_available,
    cuda_device_info,
    detect_gpu_target,
    measure_jax,
    measure_torch,
    precision_flags,
    tf32_allowed,
)
from .options import RECORD_VERSION, BenchOptions
from .sizes import SizeError, SizeRequest, check_shapes, int_globals, resolve, size_globals
from .verdict import Beat, judge

# Inputs above this many bytes are not built for measurement: shrink the program with --param or --scale.
MAX_MEASURE_BYTES = 2 << 30


@dataclass
class Program:
    """A loaded program at its benchmark sizes: its IR, how to run it, and what sizes it runs at."""

    framework: str  # torch | jax
    module: Any  # ModuleOp
    sizes: dict[str, int]  # the IR's size parameters as bound for the run
    globals_set: dict[str, int]  # module-level integers of the source changed for the run
    translate_s: float
    make_run: Any  # () -> (callable or model, inputs, declared shapes check)


# Longer than most: one problem's stages in order inside one try, whose handlers record a failure at the stage it
# happened in; split, every part would pass the stage and the record along.
def bench_problem(path: str, opts: BenchOptions, probes: Probes | None = None,
                  keep: list[Program] | None = None,
                  on_stage: Callable[[str], None] = lambda stage: None) -> dict[str, Any]:
    """The record of one problem. Failures are recorded (stage and message), never raised. `probes` read the
    machine's conditions around the measurement (this machine's /proc by default; tests inject them); `keep`
    receives the loaded program (for the HTML report, which needs its IR and its run); `on_stage` hears each
    stage as it begins (a measuring process tells its parent, which names the stage if the process dies)."""
    start = time.perf_counter()
    rec: dict[str, Any] = {"version": RECORD_VERSION, "problem": path, "status": "ok", "errors": [],
                           "violations": [], "beats": [], "notes": []}
    stage = "load"
    try:
        on_stage(stage)
        from solar.targets.loader import load_target

        request = SizeRequest.from_json(opts.sizes)
        device = _device(opts.device)
        rec["device"] = {"kind": device}
        if device == "cpu" and opts.device == "auto":
            rec["notes"].append("GPU: skipped (no CUDA device" + ("; measured on the CPU)" if opts.measure else ")"))
        stage = "translate"
        on_stage(stage)
        prog = load_program(path, request, opts)
        if keep is not None:
            keep.append(prog)
        rec["framework"] = prog.framework
        rec["translate"] = {"ok": True, "seconds": round(prog.translate_s, 3)}
        rec["sizes"] = prog.sizes
        rec["source_sizes"] = prog.globals_set
        stage = "bounds"
        on_stage(stage)
        targets = [load_target(t) for t in opts.targets]
        flags: dict[str, Any] = {}
        if device == "cuda":
            rec["device"] = {"kind": "cuda", **cuda_device_info()}
            flags = rec["device"]["precision"]
            if not any(t.kind == "gpu" for t in targets):
                detected = detect_gpu_target(rec["device"]["name"])
                if detected is None:
                    rec["notes"].append(f"no target for {rec['device']['name']}: give one with --target")
                else:
                    targets.append(load_target(detected))
        allow_tf32 = device == "cuda" and (prog.framework == "jax" or tf32_allowed(flags))
        bounds = compute_bounds(prog.module, targets, prog.sizes, allow_tf32, opts.precision_floor)
        rec["counts"] = {"flops": bounds.flops, "bytes": bounds.bytes, "intermediate_bytes": bounds.intermediate_bytes,
                         "kernels": bounds.kernels, "groups": bounds.groups}
        rec["bounds"] = {name: tb.seconds for name, tb in bounds.targets.items()}
        rec["bound_by"] = {name: tb.bound_by for name, tb in bounds.targets.items()}
        rec["cache_buffer"] = {name: tb.cache_buffer for name, tb in bounds.targets.items()}
        rec["allow_tf32"] = allow_tf32
        rec["precision_floor"] = opts.precision_floor
        rec["precision_policy"] = policy_text("tf32" if allow_tf32 else "framework", opts.precision_floor)
        for tb in bounds.targets.values():
            rec["notes"] += [f"{tb.target}: {n}" for n in tb.notes]
        if not opts.measure:
            rec["measurements"] = {}
            return rec
        stage = "measure"
        on_stage(stage)
        machine = _machine_target(targets, device)
        if machine is None:
            rec["notes"].append("no target of the measuring machine among --target (host on the CPU, the GPU's "
                                "own): times are recorded without headroom")
        monitor = Monitor(probes or system_probes(), cpu_count(), threads_measured(machine, device))
        monitor.wait_for_quiet(opts.quiet_wait_s)
        monitor.start()
        measured = _measure(prog, opts, device, machine, bounds)
        conditions = monitor.finish({m.mode: spread_of(m.median_s, m.min_s) for m in measured
                                     if m.median_s is not None and m.min_s is not None})
        rec["conditions"] = conditions.to_json()
        rec["noisy"] = conditions.noisy
        rec["measurements"] = {m.mode: m.to_json() for m in measured}
        if not measured:  # e.g. --frameworks jit on a PyTorch program: say so, never "skipped (--no-measure)"
            applies = "jit" if prog.framework == "jax" else "eager, compile"
            rec["errors"].append({"stage": "measure", "message": f"no mode of --frameworks {','.join(opts.frameworks)} "
                                  f"applies to a {prog.framework} program ({applies})"})
            rec["status"] = "error"
        for m in measured:
            if m.error:
                rec["errors"].append({"stage": f"measure {m.mode}", "message": m.error})
            if m.skipped:
                rec["notes"].append(f"{m.mode}: skipped ({m.skipped})")
        if machine is not None:
            threads = (machine.calibration or {}).get("threads") if machine.kind == "cpu" else None
            if threads and any(m.threads.get("torch_intra_op") not in (None, threads) for m in measured):
                rec["notes"].append(f"threads differ from the calibration's {threads}")
            headroom, beats = judge(bounds, machine.name, measured)
            rec["headroom"] = {machine.name: headroom}
            rec["violations"] = [b.to_json() for b in beats if b.violation]
            rec["beats"] = [b.to_json() for b in beats if not b.violation]
            if machine.calibration and machine.calibration.get("loaded"):
                rec["notes"].append("the host was calibrated on a loaded machine: recalibrate (--recalibrate)")
        if any(r["stage"].startswith("measure") for r in rec["errors"]) and not any(m.ok for m in measured):
            rec["status"] = "error"
    except KeyboardInterrupt:
        raise  # Ctrl-C in solar-bench itself; a pool worker ignores SIGINT and records one a problem raises
    except BaseException as err:  # the program's sys.exit, or an exception class outside Exception it raised
        rec["status"] = "error"
        if stage == "translate":
            rec["translate"] = {"ok": False, "seconds": round(time.perf_counter() - start, 3)}
        rec["errors"].append({"stage": stage, "message": _message(err)})
        if os.environ.get("SOLAR_DEBUG"):
            rec["errors"][-1]["traceback"] = traceback.format_exc()
    finally:
        rec["elapsed_s"] = round(time.perf_counter() - start, 3)
    return rec


def beats_of(rec: dict[str, Any]) -> list[Beat]:
    return [Beat(b["target"], b["framework_mode"], b["mode"], b["measured_s"], b["bound_s"], True, b["why"])
            for b in rec.get("violations", [])] + [
        Beat(b["target"], b["framework_mode"], b["mode"], b["measured_s"], b["bound_s"], False, b["why"])
        for b in rec.get("beats", [])]


def _message(err: BaseException) -> str:
    if isinstance(err, SystemExit):
        return f"the program called sys.exit({err.code!r}) (a problem must return, not exit)"
    fmt = getattr(err, "format", None)
    if callable(fmt):
        try:
            return str(fmt()).strip()
        except Exception:
            pass
    text = str(err).strip()
    return text if isinstance(err, SizeError | BoundsError) else f"{type(err).__name__}: {text}"


def _device(choice: str) -> str:
    if choice == "cuda" and not cuda_available():
        raise RuntimeError("--device cuda: no CUDA device (torch.cuda.is_available() is False)")
    if choice == "auto":
        return "cuda" if cuda_available() else "cpu"
    return choice


def threads_measured(machine: Any, device: str) -> int:
    """The CPU threads the measurement runs on: the host calibration's (torch is set to it), every CPU this
    process may use without one, one host thread that drives a GPU."""
    if device != "cpu":
        return 1
    calibrated = (machine.calibration or {}).get("threads") if machine is not None and machine.kind == "cpu" else None
    return int(calibrated or cpu_count())


def _machine_target(targets: list[Any], device: str) -> Any:
    """The target of the machine that measures: on the CPU `host` (or another CPU target given, such as a
    datasheet file of this CPU), on a GPU the first GPU target."""
    if device == "cpu":
        return next((t for t in targets if t.name == "host"), None) or next(
            (t for t in targets if t.kind == "cpu"), None)
    return next((t for t in targets if t.kind == "gpu"), None)


# ---- loading a program at its sizes -----------------------------------------------------------------------


def load_program(path: str, request: SizeRequest, opts: BenchOptions) -> Program:
    if path.endswith(".sir"):
        return _load_sir(path, request, opts)
    from solar.frontends.torch_export import import_file

    mod = import_file(path, "_solar_bench_" + re.sub(r"\W", "_", os.path.abspath(path)))
    if hasattr(mod, "Model") and hasattr(mod, "get_inputs"):
        return _load_torch(path, mod, request, opts)
    if hasattr(mod, "forward") and hasattr(mod, "get_inputs"):
        return _load_jax(path, mod, request)
    raise SizeError(f"{path}: not a problem file (defines neither Model and get_inputs() for PyTorch nor "
                    "forward and get_inputs() for JAX)")


def _input_dims(inputs: Any) -> set[int]:
    """The dimensions of the inputs; a zero-size input is an error here, before translation would fail on it."""
    inputs = list(inputs)
    for k, x in enumerate(inputs):
        shape = tuple(int(d) for d in getattr(x, "shape", ()))
        if 0 in shape:
            raise SizeError(f"get_inputs() gives input {k} a zero-size dimension (shape {shape}): an empty tensor "
                            "has no work to bound; give every dimension a positive size")
    return {int(d) for x in inputs for d in getattr(x, "shape", ())}


def _set_globals(mod: Any, request: SizeRequest, dims: set[int], ir_params: dict[str, int]) -> dict[str, int]:
    """Applies the request's source-global part; names left for the IR are checked after translation."""
    source = int_globals(mod)
    globals_new, _ = resolve(SizeRequest({k: v for k, v in request.params.items() if k in source}, request.scale),
                             source, size_globals(mod, dims), ir_params)
    for name, value in globals_new.items():
        setattr(mod, name, value)
    return globals_new


def _ir_params(request: SizeRequest, module: Any, source: dict[str, int], scaled_source: bool) -> dict[str, int]:
    declared = {p.name: p.default for p in module.params if p.default is not None}
    unknown = [k for k in request.params if k not in source and k not in declared]
    if unknown:
        known = ", ".join(sorted(set(source) | set(declared))) or "none"
        raise SizeError(f"--param {unknown[0]}: neither a size parameter of the IR nor a module-level integer of "
                        f"the source (known: {known})")
    rest = SizeRequest({k: v for k, v in request.params.items() if k not in source},
                       None if scaled_source else request.scale)
    _, params = resolve(rest, {}, {}, declared)
    return {**declared, **params}


def _load_torch(path: str, mod: Any, request: SizeRequest, opts: BenchOptions) -> Program:
    import torch

    from solar.frontends.torch_export import TorchProblem, shrink_inputs, translate_problem

    with torch.device("meta"):
        dims = _input_dims(mod.get_inputs())
    source = int_globals(mod)
    globals_set = _set_globals(mod, request, dims, {})
    init = getattr(mod, "get_init_inputs", lambda: [])
    name = os.path.splitext(os.path.basename(path))[0]
    problem = TorchProblem(lambda: mod.Model(*init()), lambda: list(mod.get_inputs()), name, path)
    t0 = time.perf_counter()
    tr = translate_problem(problem)
    translate_s = time.perf_counter() - t0
    sizes = _ir_params(request, tr.module, source, request.scale is not None and bool(size_globals(mod, dims)))

    def make_run() -> tuple[Any, list[Any]]:
        torch.manual_seed(opts.seed)
        with torch.device("meta"):
            meta = list(problem.make_inputs())
        nbytes = sum(x.numel() * x.element_size() for x in meta if isinstance(x, torch.Tensor))
        if nbytes > MAX_MEASURE_BYTES:
            raise SizeError(f"the inputs take {nbytes / 2**30:.1f} GiB: shrink them with --param or --scale")
        model = problem.make_model().eval()
        inputs = shrink_inputs(list(problem.make_inputs()), tr.param_dims, sizes)
        values = []
        for src in tr.args:
            x = inputs[int(src.key)] if src.kind == "input" else operator.attrgetter(str(src.key))(model)
            values.append(x)
        _check(tr.module, sizes, values)
        return model, inputs

    return Program("torch", tr.module, sizes, globals_set, translate_s, make_run)


def _load_jax(path: str, mod: Any, request: SizeRequest) -> Program:
    from solar.frontends.jax_export import translate_jax

    dims = _input_dims(mod.get_inputs())
    source = int_globals(mod)
    globals_set = _set_globals(mod, request, dims, {})
    args = list(mod.get_inputs())
    t0 = time.perf_counter()
    tr = translate_jax(mod.forward, args, os.path.splitext(os.path.basename(path))[0])
    translate_s = time.perf_counter() - t0
    sizes = _ir_params(request, tr.module, source, request.scale is not None and bool(size_globals(mod, dims)))

    def make_run() -> tuple[Any, list[Any]]:
        _check(tr.module, sizes, [*args, *tr.consts])
        return mod.forward, args

    return Program("jax", tr.module, sizes, globals_set, translate_s, make_run)


_ARGS_HEADER = re.compile(r"^// Arguments: (.*)$", re.M)
_ARG = re.compile(r"%([^,\s]+) = (input|parameter|buffer|constant) ([^,\s]+)")


def _load_sir(path: str, request: SizeRequest, opts: BenchOptions) -> Program:
    """A .sir with its original program (--source): the IR gives the bounds, the source runs. The IR's
    header line `// Arguments: %x = input 0, %p_w = parameter fc.weight` (solar-translate writes it) says
    where each argument comes from; only the IR's size parameters can change (the source's globals are
    what the IR was translated at)."""
    import torch

    from solar.frontends.torch_export import ArgSource, import_file, load_problem, shrink_inputs
    from solar.ir import parse_and_verify
    from solar.ir.expr import NameRef

    if not opts.source:
        raise SizeError(f"{path}: a .sir needs its original program: --source model.py")
    text = Path(path).read_text(encoding="utf-8")
    t0 = time.perf_counter()
    module = parse_and_verify(text, path)
    header = _ARGS_HEADER.search(text)
    if header is None:
        raise SizeError(f"{path}: no '// Arguments:' header saying where each argument comes from (solar-translate "
                        "writes one): translate the source again")
    sources = {m.group(1): ArgSource(m.group(2), int(m.group(3)) if m.group(2) == "input" else m.group(3))
               for m in _ARG.finditer(header.group(1))}
    entry = module.entry
    assert entry is not None
    missing = [a.name for a in entry.args if a.name not in sources]
    if missing:
        raise SizeError(f"{path}: the header names no source for %{', %'.join(missing)}")
    args = [sources[a.name] for a in entry.args]
    stray = [k for k in request.params if k not in {p.name for p in module.params}]
    if stray:
        raise SizeError(f"--param {stray[0]}: not a size parameter of {path} (its other sizes are fixed by the IR)")
    sizes = _ir_params(request, module, {}, False)
    where: dict[str, list[tuple[int, int]]] = {}
    for a, src in zip(entry.args, args, strict=True):
        if src.kind == "input" and a.type is not None:
            for d, dim in enumerate(a.type.shape):
                if isinstance(dim, NameRef):
                    where.setdefault(dim.name, []).append((int(src.key), d))
    source_mod = import_file(opts.source, "_solar_bench_source_" + re.sub(r"\W", "_", os.path.abspath(opts.source)))
    if not hasattr(source_mod, "Model") and hasattr(source_mod, "forward") and hasattr(source_mod, "get_inputs"):
        return _sir_of_jax(module, source_mod, args, sizes, where, time.perf_counter() - t0)
    problem = load_problem(opts.source)
    translate_s = time.perf_counter() - t0

    def make_run() -> tuple[Any, list[Any]]:
        torch.manual_seed(opts.seed)
        model = problem.make_model().eval()
        inputs = shrink_inputs(list(problem.make_inputs()), where, sizes)
        values = [inputs[int(s.key)] if s.kind == "input" else operator.attrgetter(str(s.key))(model) for s in args]
        _check(module, sizes, values)
        return model, inputs

    return Program("torch", module, sizes, {}, translate_s, make_run)


def _sir_of_jax(module: Any, mod: Any, args: list[Any], sizes: dict[str, int],
                where: dict[str, list[tuple[int, int]]], load_s: float) -> Program:
    """A .sir translated from JAX: its inputs are the source's get_inputs(), cut to the sizes asked along every
    dimension a size parameter names, its constants the arrays the function closes over (in jax.make_jaxpr's
    order), as the `// Arguments:` header numbers them."""
    bad = [s for s in args if s.kind not in ("input", "constant")]
    if bad:
        raise SizeError(f"the header names a {bad[0].kind} argument, which a JAX program has none of: is --source "
                        "the program this .sir was translated from?")

    def make_run() -> tuple[Any, list[Any]]:
        import jax

        inputs = _cut_arrays(list(mod.get_inputs()), where, sizes)
        consts = list(jax.make_jaxpr(mod.forward)(*inputs).consts)
        pools = {"input": inputs, "constant": consts}
        try:
            values = [pools[s.kind][int(s.key)] for s in args]
        except IndexError:
            raise SizeError("the header numbers more inputs or constants than the source has: is --source the "
                            "program this .sir was translated from?") from None
        _check(module, sizes, values)
        return mod.forward, inputs

    return Program("jax", module, sizes, {}, load_s, make_run)


def _cut_arrays(inputs: list[Any], where: dict[str, list[tuple[int, int]]], sizes: dict[str, int]) -> list[Any]:
    """The first `sizes[P]` entries along every input dimension that parameter P sizes (NumPy or JAX arrays)."""
    out = list(inputs)
    for name, places in where.items():
        for i, d in places:
            if name not in sizes or i >= len(out) or d >= len(getattr(out[i], "shape", ())):
                continue
            have = int(out[i].shape[d])
            if sizes[name] > have:
                raise SizeError(f"{name} = {sizes[name]}: input {i} of the source has {have} along dimension {d}; "
                                "a size can shrink below the source's, not grow")
            out[i] = out[i][(slice(None),) * d + (slice(0, sizes[name]),)]
    return out


def _check(module: Any, sizes: dict[str, int], values: list[Any]) -> None:
    entry = module.entry
    declared = [(a.name, a.type.concrete_shape(sizes)) for a in entry.args]
    check_shapes(declared, [tuple(int(d) for d in getattr(v, "shape", ())) for v in values])


def _measure(prog: Program, opts: BenchOptions, device: str, machine: Any, bounds: Bounds) -> list[Measurement]:
    timing = TimingOptions(**opts.timing)
    llc = None
    threads = None
    if machine is not None:
        llc = bounds.targets[machine.name].llc_bytes
        threads = (machine.calibration or {}).get("threads") if machine.kind == "cpu" else None
    fn, inputs = prog.make_run()
    if prog.framework == "jax":
        if "jit" not in opts.frameworks:
            return []
        return [measure_jax(fn, inputs, timing, llc)]
    modes = [m for m in opts.frameworks if m in ("eager", "compile")]
    out = measure_torch(fn, inputs, modes, device, timing, llc, threads)
    if device == "cuda":
        for m in out:
            m.threads["precision"] = precision_flags()
    return out
