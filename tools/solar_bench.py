"""solar-bench: measure the real program against its speed of light (docs/bench.md).

    solar-bench model.py --target host                       # every SOL mode, eager / torch.compile / jax.jit
    solar-bench model.py --target host,h100 --param batch_size=8
    solar-bench model.sir --source model.py --scale 0.25     # bounds from the IR, the original runs
    solar-bench suite/ --out runs.jsonl --resume --jobs 2 --plot headroom.png
    solar-bench suite/ --dask local --no-measure --out bounds.jsonl
    solar-bench kernelbench/ --measured timings.json          # times measured elsewhere against the bounds

Exit status: 0 no violation; 3 some run was faster than a fused, cache-aware or whole-graph bound (or than
the unfused one with intermediates larger than the last-level cache; with --measured, a time measured
elsewhere below its bound); 1 a usage error, or the one problem
given could not be translated, bounded or measured; 2 an internal error.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import signal
import sys
from collections.abc import Sequence
from typing import Any

from solar.ir.outputs import OutputError, check_writable, write_text_atomic
from solar.tools._entry import Parser, UsageError, add_precision_floor, add_version, check_precision_floor, run_main

PROG = "solar-bench"
EXIT_VIOLATION = 3
DEFAULT_BATCH_TIMEOUT_S = 600.0


def build_parser() -> Parser:
    p = Parser(prog=PROG, allow_abbrev=False,
                description="Measure a PyTorch or JAX program (or a directory of them) against its speed of light.")
    add_version(p, PROG)
    p.add_argument("path", help="a problem file (KernelBench-style .py, a JAX file with forward() and get_inputs(), "
                   "or a .sir with --source), or a directory of problem files (batch mode)")
    p.add_argument("--target", default="host", help="targets, comma-separated (default host; the measuring "
                   "machine's target gives the headroom: host on the CPU, the GPU's own on a GPU)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=V",
                   help="a size: a module-level integer of the source or a size parameter of the IR (repeatable)")
    p.add_argument("--scale", action="append", metavar="RULE",
                   help="shrink every size: a factor such as 0.25, or a cap such as max=64 (once)")
    p.add_argument("--source", metavar="MODEL.py", help="the original program of a .sir")
    p.add_argument("--frameworks", default="eager,compile,jit",
                   help="framework modes to measure: eager, compile (torch.compile), jit (jax.jit); default all")
    p.add_argument("--no-measure", action="store_true", help="bounds only: translate and analyse, run nothing")
    p.add_argument("--budget", type=float, default=1.0, metavar="SECONDS",
                   help="timed runs per framework mode stop once this is spent (default 1)")
    p.add_argument("--warmup", type=int, default=2, metavar="N", help="untimed runs first (default 2)")
    p.add_argument("--min-runs", type=int, default=3, metavar="N", help="at least this many timed runs (default 3)")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                   help="where to measure (default: a CUDA GPU when there is one, else the CPU)")
    p.add_argument("--recalibrate", action="store_true", help="measure the host target again first")
    p.add_argument("--json", metavar="FILE", help="one problem: write its record as JSON")
    p.add_argument("--report", metavar="FILE.html", help="one problem: write the HTML report, with headroom, "
                   "violations and each source line's measured share (docs/html-report.md)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-isolate", action="store_true", help="one problem: run it in this process, not in a "
                   "measuring process of its own (for a profiler; a crash then ends solar-bench without a record)")
    p.add_argument("--quiet-wait", type=float, default=0.0, metavar="SECONDS",
                   help="before measuring, wait up to this long for other processes to leave the CPUs free "
                   "(default 0: measure at once; a busy run is marked noisy either way)")
    p.add_argument("--measured", action="append", metavar="FILE", help="judge times measured elsewhere instead "
                   "of measuring: KernelBench's timing JSON, a CSV (problem,target,framework,min_s) or a PyTorch "
                   "profiler trace (Chrome JSON) of the one problem given (repeatable; docs/bench.md)")
    add_precision_floor(p)
    p.add_argument("--measured-l2", choices=["warm", "flushed"], default="warm",
                   help="whether the L2 kept data between the measured trials (warm, the default: judged by bounds "
                   "that let the L2 hold inputs and outputs) or was flushed")
    batch = p.add_argument_group("batch mode (PATH is a directory)")
    batch.add_argument("--out", metavar="FILE.jsonl", help="one JSON line per problem")
    batch.add_argument("--resume", action="store_true", help="skip the problems already in --out")
    batch.add_argument("--overwrite", action="store_true", help="replace an existing --out instead of refusing")
    batch.add_argument("--jobs", type=int, default=1, metavar="N", help="worker processes (default 1)")
    p.add_argument("--timeout", type=float, metavar="SECONDS",
                   help="per problem: a problem still running this long after it started (hung, or stopped) is "
                   "killed with the processes it started, and recorded (batch default 600; one problem: none)")
    batch.add_argument("--plot", metavar="FILE.png", help="the headroom plot (with --measured: each time on the "
                       "roofline, under its fused SOL)")
    batch.add_argument("--keep-noisy", action="store_true",
                       help="plot the records measured on a busy machine too, marked (left out by default)")
    batch.add_argument("--dask", metavar="ADDRESS", help="run on a dask.distributed scheduler, or 'local' for a "
                       "LocalCluster of --jobs workers")
    batch.add_argument("--match", action="append", metavar="GLOB",
                       help="only problems whose path (relative to PATH) or file name matches (repeatable)")
    batch.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def _options(args: argparse.Namespace) -> Any:
    from solar.bench.measure import FRAMEWORK_MODES
    from solar.bench.options import BenchOptions
    from solar.bench.sizes import SizeError, SizeRequest, parse_params, parse_scale

    if args.scale and len(args.scale) > 1:
        raise UsageError(f"--scale is given {len(args.scale)} times ({', '.join(args.scale)}): give one rule")
    try:
        request = SizeRequest(parse_params(args.param), parse_scale(args.scale[0]) if args.scale else None)
    except SizeError as err:
        raise UsageError(str(err)) from None
    frameworks = [f.strip() for f in args.frameworks.split(",") if f.strip()]
    bad = [f for f in frameworks if f not in FRAMEWORK_MODES]
    if bad:
        raise UsageError(f"--frameworks: unknown mode '{bad[0]}' (choose from {', '.join(FRAMEWORK_MODES)})")
    if not frameworks:
        raise UsageError(f"--frameworks: give at least one mode ({', '.join(FRAMEWORK_MODES)})")
    # nan compares false with everything, so `nan <= 0` would let it through and turn the limit off
    timeout = [] if args.timeout is None else [args.timeout]  # none given: the batch's default, or none
    if not all(math.isfinite(x) for x in (args.budget, args.quiet_wait, *timeout)):
        raise UsageError("--budget, --timeout and --quiet-wait must be finite numbers of seconds")
    if (args.budget <= 0 or args.warmup < 0 or args.min_runs < 1 or args.jobs < 1 or any(t <= 0 for t in timeout)
            or args.quiet_wait < 0):
        raise UsageError("--budget and --timeout must be positive, --quiet-wait and --warmup at least 0, "
                         "--min-runs and --jobs at least 1")
    targets = [t.strip() for t in args.target.split(",") if t.strip()]
    if not targets:
        raise UsageError("--target: give at least one target, e.g. host")
    from solar.targets.loader import TargetError, load_target

    try:
        for t in targets:
            load_target(t, recalibrate=args.recalibrate and t == "host")
    except TargetError as err:
        raise UsageError(str(err)) from None
    return BenchOptions(targets=targets, sizes=request.to_json(), frameworks=frameworks, measure=not args.no_measure,
                        device=args.device, timing={"budget_s": args.budget, "warmup": args.warmup,
                                                    "min_runs": args.min_runs},
                        source=os.path.abspath(args.source) if args.source else None, seed=args.seed,
                        quiet_wait_s=args.quiet_wait, precision_floor=args.precision_floor)


def run(argv: Sequence[str]) -> int:
    try:
        args = build_parser().parse_args(argv)
        if not os.path.exists(args.path):
            raise UsageError(f"{args.path}: no such file or directory")
        if args.source and not os.path.isfile(args.source):
            raise UsageError(f"--source {args.source}: no such file")
        for path, what in ((args.json, "the JSON report"), (args.out, "the results"), (args.plot, "the plot"),
                           (args.report, "the HTML report")):
            if path:
                check_writable(path, what)  # before any work: a typo in an output path costs nothing
        if args.plot:
            _check_plot_format(args.plot)
        check_precision_floor(args.precision_floor)
        if args.keep_noisy and not args.plot:
            raise UsageError("--keep-noisy is for the headroom plot: give --plot FILE.png with a directory")
        if args.measured:
            return _measured(args)
        opts = _options(args)
        if os.path.isdir(args.path):
            return _batch(args, opts)
        if args.out or args.resume or args.plot or args.dask or args.match:
            raise UsageError("--out, --resume, --plot, --match and --dask are for a directory of problems")
        return _single(args, opts, " ".join([PROG, *(shlex.quote(a) for a in argv)]))
    except (UsageError, OutputError) as err:
        sys.stderr.write(f"{PROG}: error: {err}\n")
        return 1


def _single(args: argparse.Namespace, opts: Any, command: str) -> int:
    from solar.bench.single import bench_isolated, bench_one

    if args.no_isolate and args.timeout is not None:
        raise UsageError("--timeout needs the measuring process, which --no-isolate leaves out: give one of them")
    if args.no_isolate:
        outcome = bench_one(args.path, opts, args.report, command)
    else:
        outcome = bench_isolated(args.path, opts, args.report, command, args.timeout)
    rec = outcome.record
    if outcome.report_note:
        sys.stderr.write(f"{PROG}: {outcome.report_note}\n")
    if outcome.report_error:
        sys.stderr.write(f"{PROG}: error: {outcome.report_error}\n")
        return 1
    sys.stdout.write(outcome.text)
    if args.json:
        write_text_atomic(args.json, json.dumps(rec, indent=2) + "\n", "JSON report")
    if rec.get("violations"):
        return EXIT_VIOLATION
    if rec["status"] != "ok":
        for e in rec["errors"]:
            sys.stderr.write(f"{PROG}: error: {e['stage']}: {e['message']}\n")
        return 1
    return 0


def _measured(args: argparse.Namespace) -> int:
    from solar.bench.measured import MeasuredError
    from solar.bench.measured_run import run_measured

    for path in args.measured:
        if not os.path.isfile(path):
            raise UsageError(f"--measured {path}: no such file")
    if args.out or args.resume or args.dask or args.report or args.keep_noisy:
        raise UsageError("--measured judges times measured elsewhere: it takes --json and --plot, not --out, "
                         "--resume, --dask, --report or --keep-noisy")
    gpus = [t.strip() for t in args.target.split(",") if t.strip() and t.strip() != "host"]
    try:
        run = run_measured(args.path, args.measured, args.measured_l2, gpus[0] if gpus else None, only=args.match,
                           precision_floor=args.precision_floor)
    except MeasuredError as err:
        raise UsageError(str(err)) from None
    sys.stdout.write(run.render())
    if args.json:
        write_text_atomic(args.json, json.dumps(run.to_json(), indent=2) + "\n", "JSON report")
    if args.plot:
        from solar.bench.measured_plot import plot_measured

        empty = plot_measured(run, args.plot)  # each time under its SOL on the roofline
        if empty is not None:
            sys.stderr.write(f"{PROG}: note: the plot is empty: {empty}\n")
    return EXIT_VIOLATION if run.any_violation else 0


_DASK_ADDRESS = re.compile(r"(tcp|tls|ucx|inproc|ws|wss)://[^\s/]+(:\d+)?/?\Z|local\Z")


def _terminate(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)  # unwinds like Ctrl-C: the results file is closed, workers are stopped


def _batch(args: argparse.Namespace, opts: Any) -> int:
    from solar.bench.batch import BatchError, BatchOptions, ResultsFile, run_batch
    from solar.bench.progress import BatchProgress
    from solar.bench.summary import plot_headroom, render_summary

    if args.json:
        raise UsageError("--json is for one problem; a directory writes --out FILE.jsonl")
    if args.no_isolate:
        raise UsageError("--no-isolate is for one problem; a batch runs its problems in worker processes")
    if args.resume and not args.out:
        raise UsageError("--resume needs --out FILE.jsonl")
    if args.out and os.path.exists(args.out) and os.path.getsize(args.out) and not (args.resume or args.overwrite):
        raise UsageError(f"{args.out} exists: --resume continues it, --overwrite replaces it")
    if args.dask and not _DASK_ADDRESS.match(args.dask):
        raise UsageError(f"--dask '{args.dask}': give a scheduler address such as tcp://host:8786, or 'local'")
    if args.dask:
        try:
            import distributed  # noqa: F401
        except ImportError:
            raise UsageError("--dask needs dask.distributed (pip install distributed)") from None
    progress = None if args.no_progress else BatchProgress()
    signal.signal(signal.SIGTERM, _terminate)
    try:
        timeout = DEFAULT_BATCH_TIMEOUT_S if args.timeout is None else args.timeout
        records = run_batch(args.path, opts.to_json(), BatchOptions(args.jobs, timeout, args.dask),
                            ResultsFile(args.out), args.resume, progress, args.match)
    except BatchError as err:
        raise UsageError(str(err)) from None
    sys.stdout.write(render_summary(records))
    if args.plot:
        empty = plot_headroom(records, args.plot, keep_noisy=args.keep_noisy)
        if empty is not None:  # the PNG says why in its place; the terminal too
            sys.stderr.write(f"{PROG}: note: the plot is empty: {empty}\n")
    return EXIT_VIOLATION if any(r.get("violations") for r in records) else 0


def _check_plot_format(path: str) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    kinds = FigureCanvasAgg.get_supported_filetypes()
    suffix = os.path.splitext(path)[1][1:].lower() or "png"
    if suffix not in kinds:
        raise UsageError(f"--plot {path}: unknown image format '.{suffix}' (use "
                         + ", ".join("." + k for k in sorted(kinds)) + ")")


def main() -> None:
    run_main(PROG, run)


if __name__ == "__main__":
    main()
