"""solar-opt: parse SIR, run a pass pipeline, print the result (as mlir-opt does)."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import difflib
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from typing import Any

from solar.ir.outputs import OutputError, check_writable, staged_outputs, write_text_atomic
from solar.ir.pass_manager import PassOptionError, PassTiming, parse_options
from solar.ir.source import decode_source
from solar.passes import registry
from solar.passes.catalog import CATALOG, PassInfo, info_of_class
from solar.tools._entry import Parser, UsageError, add_precision_floor, add_version, check_precision_floor, run_main

PROG = "solar-opt"
# --emit formats other than SIR: 'module:function' taking the module and returning the text to write.
EMITTERS = {"sir": "", "dot": "solar.backends.export_dot:emit_dot",
            "nvsolar-yaml": "solar.backends.export_nvsolar:emit_nvsolar",
            "timeloop": "solar.backends.export_timeloop:emit_timeloop"}


def extract_pipeline(argv: Sequence[str]) -> tuple[list[tuple[str, str | None]], list[str]]:
    """Takes pass flags (`--name`, `--name=value`) and pipelines (`-p X`, `-pX`, `--pass-pipeline=X`) out of
    argv, keeping their order; like mlir-opt, a pass flag never consumes the next argument."""
    items: list[tuple[str, str | None]] = []
    rest: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest.extend(args[i:])
            break
        if arg in ("-p", "--pass-pipeline"):
            if i + 1 >= len(args):
                raise UsageError(f"{arg} needs a pipeline, e.g. {arg} 'inline,bind-params{{M=64}}'")
            items.append(("-p", args[i + 1]))
            i += 2
            continue
        if arg.startswith("--pass-pipeline="):
            items.append(("-p", arg.split("=", 1)[1]))
        elif arg.startswith("-p") and not arg.startswith("--"):
            items.append(("-p", arg[2:]))
        elif arg.startswith("--") and registry.knows(arg[2:].split("=", 1)[0]):
            name, eq, value = arg[2:].partition("=")
            items.append((name, value if eq else None))
        else:
            rest.append(arg)
        i += 1
    return items, rest


def build_parser(with_passes: bool = True) -> Parser:
    """The command line; `with_passes=False` gives only the tool's own flags."""
    p = Parser(prog=PROG, allow_abbrev=False,
                description="Run SOLAR passes on SIR (the SOLAR IR) and print the result.")
    add_version(p, PROG)
    p.add_argument("input", nargs="?", default="-", help="input .sir file ('-' or nothing: stdin)")
    p.add_argument("-o", dest="output", default="-", help="output file (default: stdout)")
    p.add_argument("-p", "--pass-pipeline", metavar="PIPELINE",
                   help="passes to run, e.g. 'inline,bind-params{M=64}' (repeatable, ordered with pass flags)")
    p.add_argument("--list-passes", action="store_true", help="list the passes and their options")
    p.add_argument("--load-pass-plugin", action="append", default=[], metavar="FILE.py",
                   help="load the passes a Python file defines (repeatable); installed plugins register "
                        "through the entry-point group solar.passes")
    p.add_argument("--print-ir-after-all", action="store_true", help="print the IR after every pass (stderr)")
    p.add_argument("--print-ir-after", action="append", default=[], metavar="PASS",
                   help="print the IR after the named pass (repeatable)")
    p.add_argument("--no-verify", action="store_true", help="do not verify the IR after each pass")
    p.add_argument("--time-passes", action="store_true", help="report the time spent in each pass (stderr)")
    p.add_argument("--emit", choices=sorted(EMITTERS), default="sir",
                   help="what to write after the passes: the IR (sir), the einsum graph as Graphviz (dot), as "
                   "NVIDIA SOLAR's YAML (nvsolar-yaml), or one Timeloop problem per einsum (timeloop; -o names a "
                   "directory) (docs/exports.md)")
    p.add_argument("--split-input-file", action="store_true",
                   help="process each '// -----' separated chunk on its own")
    p.add_argument("--verify-diagnostics", action="store_true",
                   help="check diagnostics against '// expected-error {{...}}' comments")
    sol = p.add_argument_group("speed-of-light report (options of the --sol pass)")
    sol.add_argument("--list-targets", action="store_true", help="list the hardware targets")
    sol.add_argument("--sol-report", metavar="FILE.json", help="write the SOL report as JSON (docs/sol.md)")
    sol.add_argument("--report", metavar="FILE.html",
                     help="write the HTML report: one self-contained page (docs/html-report.md)")
    sol.add_argument("--plot", metavar="FILE.png", help="draw the roofline with every unit and group on it")
    sol.add_argument("--target-latency", metavar="TIME", help="inverse roofline for a latency, e.g. 2ms")
    sol.add_argument("--fp32-precision", choices=("framework", "highest", "tf32"),
                     help="how f32 contractions are priced: as the framework runs each kernel (default; the "
                          "kernels' fp32_precision attribute), all exact FP32, or all on TF32 tensor cores")
    sol.add_argument("--allow-tf32", action="store_true", help="the same as --fp32-precision=tf32")
    add_precision_floor(sol)
    sweeps = p.add_argument_group("sizes as variables (options of the --sol pass; docs/sweeps.md)")
    sweeps.add_argument("--sol-formula", action="store_true",
                        help="print each mode's roofline max(F/Π, B/β) with F and B as formulas in the sizes")
    sweeps.add_argument("--sweep", action="append", default=[], metavar="NAME=VALUES",
                        help="sweep a size: BATCH=1,2,4..1024 (every integer), CTX=512..131072*2 (×2 steps), "
                             "S=128..4096+128 (+128 steps); repeat for a grid")
    sweeps.add_argument("--sweep-report", metavar="FILE.json",
                        help="write one record per point, target and mode (FLOPs, bytes, time, bound) and the "
                             "crossovers")
    sweeps.add_argument("--sweep-plot", metavar="FILE.png", help="plot SOL against the first swept size")
    sweeps.add_argument("--design-space", metavar="AXES",
                        help="scale each target (with --target-latency): bandwidth=0.5..8x,compute=0.5..8x"
                             "[,l2=0.5..4x]; reports the Pareto front of the least scaling that meets the latency")
    sweeps.add_argument("--design-plot", metavar="FILE.png", help="heat maps of the design space")
    sweeps.add_argument("--max-points", type=int, metavar="N",
                        help="the most points a sweep may have (default 1000000, or 1000 in the cache-aware mode, "
                             "which runs a tiling search per point)")
    tiles = p.add_argument_group("tiling search (an option of the --tile-search pass)")
    tiles.add_argument("--tile-curve", metavar="FILE.json",
                       help="write least DRAM traffic against buffer size (64 KiB to 256 MiB) and a PNG beside it")
    if not with_passes:
        return p
    group = p.add_argument_group("passes (--name or --name=OPTIONS; also usable in -p)")
    for name in registry.names():
        # Only for --help; extract_pipeline takes pass flags out of argv before argparse sees it.
        group.add_argument(f"--{name}", action="store_true", help=_pass_help(name))
    for name, pipeline in sorted(registry.pipelines.items()):
        group.add_argument(f"--{name}", action="store_true", help=f"pipeline: {pipeline.summary}")
    return p


def _pass_info(name: str) -> PassInfo | None:
    """What help says about a pass: from the catalog (no import), else from its class; None when the pass's
    dependencies are missing (it is still listed)."""
    if name in CATALOG:
        return CATALOG[name]
    try:
        return info_of_class(registry.load(name))
    except ImportError:
        return None


def _pass_help(name: str) -> str:
    info = _pass_info(name)
    return info.summary if info else ""


def _known_flags(parser: argparse.ArgumentParser) -> list[str]:
    return [s for a in parser._actions for s in a.option_strings if s.startswith("--")]


def _build_pipeline(items: list[tuple[str, str | None]]) -> list[Any]:
    passes = []
    for name, value in items:
        if name == "-p":
            passes.extend(registry.parse_pipeline(value or ""))
            continue
        if value is None:
            passes.extend(registry.expand(name))
        elif "=" in value:
            passes.extend(registry.expand(name, parse_options(value, name)))
        else:
            passes.extend(registry.expand(name, primary=value))
    return passes


def _list_passes() -> str:
    lines = ["Available passes:"]
    for name in registry.names():
        info = _pass_info(name)
        if info is None:
            lines.append(f"  --{name:<20} (not available: its dependencies are missing)")
            continue
        origin = registry.origins.get(name, "built-in")
        lines.append(f"  --{name:<20} {info.summary}" + ("" if origin == "built-in" else f" [{origin}]"))
        if info.free_options:
            lines.append(f"      {'KEY=VALUE':<18} any key (see the pass's documentation)")
        for opt in info.options:
            default = "" if opt.default is None else f" (default: {opt.default})"
            lines.append(f"      {opt.name + '=':<18} {opt.type}{default}")
    if registry.pipelines:
        lines.append("Pipelines (flags and -p names, like passes):")
    for name, pipeline in sorted(registry.pipelines.items()):
        lines.append(f"  --{name:<20} {pipeline.summary}")
        lines.append(f"      {'= ' + pipeline.text:<18}")
        for key, default in pipeline.options.items():
            lines.append(f"      {key + '=':<18} str (default: {default!r})")
    return "\n".join(lines) + "\n"


# The flags that set options of the --sol pass: (option, argparse destination, flag), written once.
_SOL_FLAGS = (("report", "sol_report", "--sol-report"), ("html", "report", "--report"), ("plot", "plot", "--plot"),
              ("latency", "target_latency", "--target-latency"), ("allow_tf32", "allow_tf32", "--allow-tf32"),
              ("fp32_precision", "fp32_precision", "--fp32-precision"), ("formula", "sol_formula", "--sol-formula"),
              ("precision_floor", "precision_floor", "--precision-floor"),
              ("sweep", "sweep", "--sweep"), ("sweep_report", "sweep_report", "--sweep-report"),
              ("sweep_plot", "sweep_plot", "--sweep-plot"), ("design_space", "design_space", "--design-space"),
              ("design_plot", "design_plot", "--design-plot"), ("max_points", "max_points", "--max-points"))


def _sol_flag_value(args: argparse.Namespace, dest: str) -> Any:
    """A --sol flag's option value, None when not given (a switch given is True; --sweep's are `;`-joined)."""
    value = getattr(args, dest)
    if isinstance(value, bool):
        return True if value else None
    if isinstance(value, list):
        return ";".join(value) or None
    return value


def _forward_sol_options(passes: list[Any], args: argparse.Namespace, command: str = "") -> list[Any]:
    """The --sol flags (`_SOL_FLAGS`) set the options of the --sol pass (and the HTML report gets the
    command line)."""
    _check_sweep_syntax(args)
    check_precision_floor(args.precision_floor)
    given = [(option, flag, _sol_flag_value(args, dest)) for option, dest, flag in _SOL_FLAGS]
    extra = {option: value for option, _, value in given if value is not None}
    if not extra:
        return passes
    if args.report:
        extra["command"] = command
    sol = [p for p in passes if p.name == "sol"]
    if not sol:
        flag = next(flag for _, flag, value in given if value is not None)
        raise UsageError(f"{flag} needs the --sol pass, e.g. --sol=h100")
    if (args.sweep_report or args.sweep_plot) and not args.sweep:
        raise UsageError(f"{'--sweep-report' if args.sweep_report else '--sweep-plot'} needs a --sweep, "
                         "e.g. --sweep 'BATCH=1..1024*2'")
    if args.design_plot and not args.design_space:
        raise UsageError("--design-plot needs --design-space, e.g. --design-space 'bandwidth=0.5..8x,compute=0.5..8x'")
    if args.design_space and not args.target_latency:
        raise UsageError("--design-space needs --target-latency (the latency the scaled targets must meet)")
    return [dataclasses.replace(p, **extra) if p.name == "sol" else p for p in passes]


def _check_sol_targets(passes: list[Any]) -> None:
    """A target named on the command line that the catalogue lacks is the command line's error (one
    `solar-opt: error:` line), not one at the module's first line; files and `host` are the pass's to read."""
    names = [n.strip() for p in passes if p.name == "sol" for n in str(p.target).split(",") if n.strip()]
    if not names:
        return
    from solar.targets.loader import TargetError, load_target  # the catalogue: only when --sol is asked for

    for name in names:
        if name.lower() == "host" or name.endswith((".yaml", ".yml")) or "/" in name or os.path.isfile(name):
            continue
        try:
            load_target(name)
        except TargetError as err:
            raise UsageError(f"sol: {err}") from None


def _check_sweep_syntax(args: argparse.Namespace) -> None:
    """A bad --sweep or --design-space is a usage error before any work (the sizes' names are checked
    against the module by the --sol pass)."""
    if args.max_points is not None and not args.sweep and args.design_space is None:
        raise UsageError("--max-points needs a --sweep or --design-space")
    if not args.sweep and args.design_space is None:
        return
    # Imported only when sweeping, to keep start-up cheap.
    from solar.backends.sweep import SweepError
    from solar.backends.sweep_spec import parse_design_space, parse_sweeps, point_limit

    try:
        parse_sweeps(args.sweep)
        if args.design_space is not None:
            parse_design_space(args.design_space)
        if args.max_points is not None:
            point_limit(False, args.max_points)
    except SweepError as err:
        raise UsageError(str(err)) from None


def _forward_reorder_target(passes: list[Any]) -> list[Any]:
    """reorder-einsum{objective=sol} without a target prices orders on the target of the --sol pass."""
    sol = next((p for p in passes if p.name == "sol"), None)
    if sol is None:
        return passes
    return [dataclasses.replace(p, target=sol.target, allow_tf32=sol.allow_tf32)
            if p.name == "reorder-einsum" and p.objective == "sol" and not p.target else p for p in passes]


def _forward_tile_options(passes: list[Any], args: argparse.Namespace) -> list[Any]:
    """--tile-curve sets the `curve` option of the --tile-search pass."""
    if not args.tile_curve:
        return passes
    if not any(p.name == "tile-search" for p in passes):
        raise UsageError("--tile-curve needs the --tile-search pass, e.g. --tile-search=l2")
    return [dataclasses.replace(p, curve=args.tile_curve) if p.name == "tile-search" else p for p in passes]


def _emitter(name: str, output: str) -> Any:
    if name == "sir":
        return None
    import importlib

    module_name, func = EMITTERS[name].split(":")
    emit = getattr(importlib.import_module(module_name), func)
    if name == "timeloop" and output != "-":
        return lambda module: emit(module, directory=output)
    return emit
def _check_outputs(passes: list[Any], args: argparse.Namespace) -> None:
    """Every file the run will write can be written (its directory exists, it is not a directory): checked
    before any work, so a typo costs nothing and never ends in an internal error."""
    if args.output != "-" and args.emit == "timeloop":
        _check_output_directory(args.output)
    elif args.output != "-":
        check_writable(args.output, "the output")
    for p in passes:
        if p.name == "sol":
            for path, what in ((p.report, "the SOL report"), (p.html, "the HTML report"),
                               (p.plot, "the roofline plot"), (p.sweep_report, "the sweep report"),
                               (p.sweep_plot, "the sweep plot"), (p.design_plot, "the design-space plot")):
                if path:
                    check_writable(path, what)
        elif p.name == "tile-search" and p.curve:
            check_writable(p.curve, "the tiling curve")
            check_writable(_png_beside(p.curve), "the tiling curve plot")


def _check_output_directory(path: str) -> None:
    """--emit=timeloop -o DIR writes one file per einsum into DIR: an existing directory, or a new one whose
    parent exists (running again into the same directory replaces its files)."""
    if os.path.isdir(path):
        if not os.access(path, os.W_OK):
            raise OutputError(f"cannot write the output directory '{path}': it is not writable")
        return
    if os.path.exists(path):
        raise OutputError(f"cannot write the output directory '{path}': it is a file (--emit=timeloop -o names a "
                          "directory, one problem file per einsum)")
    check_writable(path, "the output directory")


def _png_beside(path: str) -> str:
    from pathlib import Path

    return str(Path(path).with_suffix(".png"))


def _list_targets() -> str:
    from solar.targets.loader import list_targets, load_target

    lines = ["Available targets (--sol=NAME, or --sol=path/to/target.yaml):"]
    for name in list_targets(include_host=False):
        t = load_target(name)
        aliases = f" (also {', '.join(t.aliases)})" if t.aliases else ""
        lines.append(f"  {name:<14} {t.full_name}{aliases}")
    lines.append(f"  {'host':<14} this machine, calibrated on first use (targets/README.md)")
    return "\n".join(lines) + "\n"


def _timing_report(timings: list[PassTiming]) -> str:
    from io import StringIO

    from rich.console import Console
    from rich.table import Table

    total = sum(t.seconds for t in timings) or 1e-12
    table = Table(title="Pass execution timing report", title_justify="left")
    table.add_column("wall time (ms)", justify="right")
    table.add_column("%", justify="right")
    table.add_column("pass")
    for t in timings:
        table.add_row(f"{t.seconds * 1e3:.3f}", f"{100 * t.seconds / total:.1f}", t.name)
    table.add_row(f"{total * 1e3:.3f}", "100.0", "total")
    buf = StringIO()
    Console(file=buf, width=100, color_system=None).print(table)
    return buf.getvalue()


def load_plugins(argv: Sequence[str]) -> None:
    """Registers the passes of every `--load-pass-plugin=FILE.py` (before the pass flags are read)."""
    args = list(argv)
    for k, arg in enumerate(args):
        if arg == "--":
            break
        if arg == "--load-pass-plugin":
            if k + 1 >= len(args):
                raise UsageError("--load-pass-plugin needs a Python file, e.g. --load-pass-plugin=my_pass.py")
            _check_plugin_names(args[k + 1], registry.load_plugin_file(args[k + 1]))
        elif arg.startswith("--load-pass-plugin="):
            path = arg.split("=", 1)[1]
            _check_plugin_names(path, registry.load_plugin_file(path))


def _check_plugin_names(path: str, names: list[str]) -> None:
    """A plugin pass may not take the name of one of solar-opt's own flags (`--emit`), nor of what a flag
    stores (`-o` stores `output`): its flag would clash with, or silently replace, the tool's."""
    own: set[str] = set()
    for action in build_parser(with_passes=False)._actions:
        own.add(action.dest.replace("_", "-"))
        own.update(s.lstrip("-") for s in action.option_strings)
    for name in names:
        if name in own:
            raise UsageError(f"pass '{name}' of plugin file {path} has the name of {PROG}'s own flag or option "
                             f"'{name}': rename the pass")


def run(argv: Sequence[str]) -> int:
    command = " ".join([PROG, *(shlex.quote(a) for a in argv)])  # the HTML report's inputs name it
    try:
        load_plugins(argv)
        parser = build_parser()
        items, argv = extract_pipeline(argv)
        args, unknown = parser.parse_known_args(argv)
        if unknown:
            flag = unknown[0]
            if not flag.startswith("-"):
                raise UsageError(f"unexpected argument '{flag}' (one input file at most)")
            key = flag.split("=", 1)[0]
            close = difflib.get_close_matches(key, _known_flags(parser), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else f" (see {PROG} --help)"
            raise UsageError(f"unknown argument '{flag}'{hint}")
        if args.list_passes:
            sys.stdout.write(_list_passes())
            return 0
        if args.list_targets:
            sys.stdout.write(_list_targets())
            return 0
        passes = _forward_sol_options(_build_pipeline(items), args, command)
        _check_sol_targets(passes)
        passes = _forward_tile_options(passes, args)
        passes = _forward_reorder_target(passes)
        for name in args.print_ir_after:
            if name not in registry.table:  # an unknown name is an error, not a silent no-op
                registry.load(name)
        _check_outputs(passes, args)
    except (UsageError, PassOptionError, OutputError) as err:
        sys.stderr.write(f"{PROG}: error: {err}\n")
        return 1

    # Imported once the arguments are read, so that --help, --version and usage errors answer at once.
    from solar.ir.diagnostics import DiagnosticError, SourceManager
    from solar.ir.opt_driver import OptOptions, split_input

    file = "<stdin>" if args.input == "-" else args.input
    try:
        if args.input == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(args.input, "rb") as fh:
                data = fh.read()
        text = decode_source(data, file)
    except OSError as err:
        sys.stderr.write(f"{PROG}: error: cannot read '{args.input}': {err.strerror}\n")
        return 1
    except DiagnosticError as err:
        sys.stderr.write(err.format())
        return 1

    options = OptOptions(not args.no_verify, args.print_ir_after_all, set(args.print_ir_after),
                         args.verify_diagnostics, _emitter(args.emit, args.output))
    # --emit=timeloop -o DIR: the emitter writes one file per einsum into DIR, and the output is their list,
    # printed once they are committed (a failed run writes none of them, so it lists none).
    problem_dir = args.output if args.emit == "timeloop" and args.output != "-" else None
    new_problem_dir = problem_dir is not None and not os.path.isdir(problem_dir)
    chunks = split_input(text) if args.split_input_file else [(text, 1)]
    sources = SourceManager()
    outputs: list[str] = []
    timings: list[PassTiming] = []

    def to_stderr(message: str) -> None:
        sys.stderr.write(message if message.endswith("\n") else message + "\n")

    # Every file of the run (reports, plots, Timeloop problems, -o) is staged, and replaces its target only
    # once every chunk has succeeded: a failing run leaves all of them as they were (docs/errors.md).
    with staged_outputs() as commit:
        failed = _run_chunks(chunks, file, passes, options, sources, outputs, timings, to_stderr)
        rendered = "// -----\n".join(outputs)
        if args.output == "-":
            sys.stdout.write(rendered)
        try:
            if not failed:
                if args.output != "-" and problem_dir is None:
                    write_text_atomic(args.output, rendered)
                commit()
        except OutputError as err:
            sys.stderr.write(f"{PROG}: error: {err}\n")
            failed = True
    if problem_dir is not None:
        if not failed:
            sys.stdout.write(rendered)
        elif new_problem_dir:  # the emitter made it for files that were never committed
            with contextlib.suppress(OSError):
                os.rmdir(problem_dir)
    if args.time_passes:
        sys.stderr.write(_timing_report(timings))
    return 1 if failed else 0


def _run_chunks(chunks: list[tuple[str, int]], file: str, passes: list[Any], options: Any, sources: Any,
                outputs: list[str], timings: list[PassTiming], to_stderr: Callable[[str], None]) -> bool:
    """Runs the pipeline on each chunk, reporting its diagnostics; True when any chunk failed."""
    from solar.ir.diagnostics import Diagnostic, format_diagnostic
    from solar.ir.opt_driver import check_expected, expected_diagnostics, process

    failed = False
    for chunk, first_line in chunks:
        result = process(chunk, file, first_line, passes, options, sources, to_stderr, to_stderr)
        timings.extend(result.timings)
        diags: list[Diagnostic] = result.diagnostics.diagnostics
        if options.verify_diagnostics:
            problems = check_expected(diags, expected_diagnostics(chunk, file, first_line))
            for d in problems:
                sys.stderr.write(format_diagnostic(d, sources))
            failed |= bool(problems)
        else:
            for d in diags:
                sys.stderr.write(format_diagnostic(d, sources))
            failed |= not result.ok
        if result.output is not None:
            outputs.append(result.output)
    return failed


def main() -> None:
    run_main(PROG, run)


if __name__ == "__main__":
    main()
