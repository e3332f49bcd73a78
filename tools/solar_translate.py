"""solar-translate: PyTorch or JAX source → validated SIR.

    solar-translate model.py -o model.sir                       # a KernelBench-style file (Model, get_inputs)
    solar-translate --entry pkg.mod:fn --example-inputs in.npz -o fn.sir
    solar-translate --entry model.py:Net --input 8x3x32x32xf32 -o net.sir
    solar-translate --framework jax --entry jax_model.py:forward --input 4x16xf32 -o fwd.sir
    solar-translate model.py --llm openai/gpt-4o -o model.sir   # a model writes the ops the table lacks
    solar-translate model.py --train --optimizer adamw --report h100 -o step.sir   # one training step

Exit status: 0 translated and validated (or --no-validate); 1 unsupported ops, a failed validation or a
usage error (the message says which); 2 an internal error.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from solar.tools._entry import (
    Parser,
    UsageError,
    add_precision_floor,
    add_version,
    check_precision_floor,
    internal_error_line,
    run_main,
)

PROG = "solar-translate"


def build_parser() -> Parser:
    p = Parser(prog=PROG, allow_abbrev=False,
                description="Translate a PyTorch or JAX program into SIR, validated against the original.")
    add_version(p, PROG)
    p.add_argument("source", nargs="?", help="a KernelBench-style .py file (defines Model, get_inputs(), "
                   "get_init_inputs()), or with --framework jax a file defining forward() and get_inputs()")
    p.add_argument("-o", "--output", metavar="FILE.sir", help="where to write the IR (default: stdout)")
    p.add_argument("--framework", choices=["torch", "jax"], default="torch")
    p.add_argument("--from", dest="source_format", choices=["python", "nvsolar-yaml"], default="python",
                   help="what the source is: a Python program (default), or NVIDIA SOLAR's einsum graph YAML "
                   "(docs/exports.md)")
    p.add_argument("--entry", metavar="MODULE:CALLABLE",
                   help="translate this callable (a module path or file, then ':' and the name) instead of Model")
    p.add_argument("--example-inputs", metavar="FILE.npz", help="inputs for --entry, in the order stored")
    p.add_argument("--input", action="append", default=[], metavar="SHAPExDTYPE",
                   help="an input as a shape spec, e.g. 8x3x32x32xf32 or 16xi64 (repeatable; seeded random values)")
    p.add_argument("--name", help="the module's name (default: from the source)")
    p.add_argument("--dynamic", choices=["all", "batch", "none"], default="all",
                   help="which input dims become size parameters, so that validation can shrink them "
                   "(default: every dim the program lets vary; a dim that fails falls back to static)")
    p.add_argument("--amp", choices=["none", "bf16", "fp16"], default="none",
                   help="mixed precision: the forward (with --train also the loss) under torch.autocast with this "
                   "type; f32 weights, with --train f32 master weights and optimizer state (default none)")
    p.add_argument("--no-validate", action="store_true", help="write without running the validation")
    p.add_argument("--seed", type=int, default=0, help="seed for validation inputs and weights (default 0)")
    p.add_argument("--validate-size", type=int, default=4, metavar="N",
                   help="bind every size parameter to at most N for validation (default 4; more where the "
                   "program needs it, e.g. a conv's input covering its kernel)")
    p.add_argument("--full-size-validation", action="store_true",
                   help="validate at the full sizes instead of reduced ones")
    train = p.add_argument_group("training", "one training step: forward, loss, backward, optimizer update "
                                 "(docs/training.md)")
    train.add_argument("--train", action="store_true", help="translate one training step instead of the forward")
    train.add_argument("--optimizer", choices=["adamw", "adam", "sgd", "none"], default="adamw",
                       help="the torch.optim update after the backward (default adamw, its class defaults)")
    train.add_argument("--loss", choices=["sum", "mse", "cross_entropy"], default="sum",
                       help="the loss of the outputs (default their sum; mse and cross_entropy take the "
                       "targets the file's get_targets() returns)")
    train.add_argument("--accumulate", type=int, default=1, metavar="N",
                       help="gradient accumulation: N micro-batches forward and backward, then one update")
    train.add_argument("--report", metavar="TARGET", help="after writing, print the step's report on TARGET: "
                       "forward, backward and optimizer apart, MFU bound, memory")
    add_precision_floor(train, "with --report: ")
    train.add_argument("--data-parallel", type=int, default=1, metavar="N",
                       help="with --report: N data-parallel replicas (the gradient all-reduce)")
    train.add_argument("--zero", type=int, choices=[0, 1, 2], default=0,
                       help="with --data-parallel: ZeRO stage (1 shards the optimizer state, 2 also the gradients)")
    llm = p.add_argument_group("language model", "translate what the lowering table does not cover with a model "
                               "(any litellm model string; keys from the environment, e.g. OPENAI_API_KEY)")
    llm.add_argument("--llm", metavar="MODEL", help="e.g. openai/gpt-4o, anthropic/claude-sonnet-4-5, ollama/llama3; "
                     "the model writes only the unsupported ops (hybrid) unless --llm-only")
    llm.add_argument("--llm-only", action="store_true", help="ask the model for the whole program")
    llm.add_argument("--max-attempts", type=int, default=4, metavar="N",
                     help="requests per translation, each retry carrying the last diagnostic (default 4)")
    llm.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (default 0)")
    llm.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS",
                     help="per request (default 300)")
    llm.add_argument("--llm-base-url", metavar="URL",
                     help="an OpenAI-compatible or other local server, e.g. http://localhost:8000/v1")
    llm.add_argument("--transcript", metavar="DIR", help="save every prompt, response and check in DIR")
    llm.add_argument("--validate-timeout", type=float, default=60.0, metavar="SECONDS",
                     help="wall-clock limit for running one IR the model wrote, at the validation sizes (default 60)")
    return p


_DT = {"f64": "float64", "f32": "float32", "bf16": "bfloat16", "f16": "float16", "i64": "int64", "i32": "int32",
       "i16": "int16", "i8": "int8", "u8": "uint8", "i1": "bool", "bool": "bool"}


def parse_spec(spec: str) -> tuple[list[int], str]:
    *dims, dt = spec.split("x")
    if dt not in _DT:
        raise UsageError(f"bad --input '{spec}': element type '{dt}' is not one of {', '.join(_DT)}")
    try:
        shape = [int(d) for d in dims]
    except ValueError:
        raise UsageError(f"bad --input '{spec}': dimensions must be integers, e.g. 8x3x32x32xf32") from None
    if any(d <= 0 for d in shape):
        raise UsageError(f"bad --input '{spec}': every dimension must be positive (SIR tensors are not empty)")
    return shape, _DT[dt]


def _load_entry(entry: str) -> tuple[Any, str, Any]:
    mod_name, sep, attr = entry.rpartition(":")
    if not sep or not mod_name or not attr:
        raise UsageError(f"bad --entry '{entry}': expected MODULE:CALLABLE, e.g. model.py:forward")
    if mod_name.endswith(".py") or os.sep in mod_name:
        from solar.frontends.torch_export import import_file

        mod = import_file(mod_name)
    else:
        import importlib

        sys.path.insert(0, os.getcwd())
        try:
            mod = importlib.import_module(mod_name)
        except ModuleNotFoundError as err:
            if err.name == mod_name.split(".")[0] or err.name == mod_name:
                raise UsageError(f"bad --entry '{entry}': no module named '{err.name}'") from None
            from solar.frontends.diagnostics import user_code_error

            raise user_code_error(err, f"while importing {mod_name}") from None
        except (Exception, SystemExit) as err:
            from solar.frontends.diagnostics import user_code_error

            raise user_code_error(err, f"while importing {mod_name}") from None
    if not hasattr(mod, attr):
        raise UsageError(f"{mod_name} has no attribute '{attr}'")
    return getattr(mod, attr), attr, mod


def _inputs(args: argparse.Namespace, seed: int, framework: str, mod: Any) -> list[Any]:
    import numpy as np

    if args.example_inputs:
        from solar.backends.errors import InputError
        from solar.backends.inputs import load_npz

        try:
            arrays = list(load_npz(args.example_inputs).values())
        except InputError as err:
            raise UsageError(str(err)) from None
    elif args.input:
        rng = np.random.default_rng(seed)
        arrays = []
        for spec in args.input:
            shape, dt = parse_spec(spec)
            if dt == "bool":
                arrays.append(rng.random(shape) > 0.5)
            elif dt.startswith("int"):
                arrays.append(rng.integers(0, 2, shape).astype(dt))
            else:
                arrays.append(rng.standard_normal(shape).astype(np.float32))
        arrays = [(a, spec) for a, spec in zip(arrays, args.input, strict=True)]  # type: ignore[misc]
    elif mod is not None and hasattr(mod, "get_inputs"):
        return list(mod.get_inputs())
    else:
        raise UsageError("--entry needs inputs: --example-inputs FILE.npz or --input SHAPExDTYPE")
    if framework == "torch":
        import torch

        out = []
        for a in arrays:
            if isinstance(a, tuple):
                arr, spec = a
                dt = parse_spec(spec)[1]
                t = torch.from_numpy(np.ascontiguousarray(arr))
                out.append(t.to(getattr(torch, dt)) if dt == "bfloat16" or dt == "float16" else t)
            else:
                out.append(torch.from_numpy(np.ascontiguousarray(a)))
        return out
    import jax.numpy as jnp

    out = []
    for a in arrays:
        if isinstance(a, tuple):
            arr, spec = a
            out.append(jnp.asarray(arr, dtype=parse_spec(spec)[1]))
        else:
            out.append(jnp.asarray(a))
    return out


def _write(text: str, path: str | None) -> None:
    if path is None or path == "-":
        sys.stdout.write(text)
        return
    from solar.ir.outputs import OutputError, write_text_atomic

    try:
        write_text_atomic(path, text, "the output")
    except OutputError as err:
        raise UsageError(str(err)) from None


def _check_args(args: argparse.Namespace) -> None:
    """What can be checked before importing and running the user's program."""
    if not args.source and not args.entry:
        raise UsageError("give a source file, or --entry MODULE:CALLABLE")
    if args.train and (args.framework != "torch" or args.llm or args.llm_only or args.source_format != "python"):
        raise UsageError("--train translates a PyTorch file's training step (not with --framework jax, --llm or "
                         "--from nvsolar-yaml)")
    if args.amp != "none" and (args.framework != "torch" or args.llm or args.llm_only
                               or args.source_format != "python"):
        raise UsageError("--amp runs a PyTorch program under torch.autocast (not with --framework jax, --llm or "
                         "--from nvsolar-yaml)")
    if args.accumulate < 1:
        raise UsageError(f"--accumulate must be a positive integer, not {args.accumulate}")
    if args.data_parallel < 1:
        raise UsageError(f"--data-parallel must be a positive integer, not {args.data_parallel}")
    if (args.report or args.data_parallel > 1 or args.zero or args.precision_floor) and not args.train:
        raise UsageError("--report, --data-parallel, --zero and --precision-floor describe a training step: "
                         "add --train")
    check_precision_floor(args.precision_floor)
    if args.precision_floor and not args.report:
        raise UsageError("--precision-floor prices the step's report: add --report TARGET")
    if (args.data_parallel > 1 or args.zero) and not args.report:
        raise UsageError("--data-parallel and --zero change the step's report: add --report TARGET")
    if args.report:  # before the translation: a mistyped target costs nothing (was an internal error after it)
        from solar.targets.loader import TargetError, load_target

        try:
            load_target(args.report)
        except TargetError as err:
            raise UsageError(f"--report: {err}") from None
    if args.source and not os.path.isfile(args.source):
        # Checked before torch is imported, so that a mistyped path answers at once.
        kind = "an einsum graph file" if args.source_format == "nvsolar-yaml" else "a Python file"
        raise UsageError(f"{args.source}: is a directory, not {kind}" if os.path.isdir(args.source)
                         else f"{args.source}: no such file")
    if args.validate_size < 1:
        raise UsageError(f"--validate-size must be a positive integer, not {args.validate_size}")
    for spec in args.input:
        parse_spec(spec)
    if args.output and args.output != "-":
        from solar.ir.outputs import OutputError, check_writable

        try:
            check_writable(args.output, "the output")
        except OutputError as err:
            raise UsageError(str(err)) from None


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        _check_args(args)
        from solar.frontends.diagnostics import SourceError, TranslationError, user_code_error
        from solar.frontends.lowering.core import LoweringError

        try:
            try:
                if args.source_format == "nvsolar-yaml":
                    return _nvsolar(args)
                if args.llm or args.llm_only:
                    return _llm(args)
                if args.framework == "jax":
                    return _jax(args)
                if args.train:
                    return _train(args)
                return _torch(args)
            except SystemExit as exit_:
                # The user's program called sys.exit (in a function SOLAR called): report it, never exit silently.
                raise user_code_error(exit_, "while SOLAR ran it") from None
        except (TranslationError, SourceError) as err:
            sys.stderr.write(err.format())
            return 2 if isinstance(err, TranslationError) and err.internal else 1
        except LoweringError as err:
            sys.stderr.write(f"{PROG}: error: {err}\n")
            return 1
    except UsageError as err:
        sys.stderr.write(f"{PROG}: error: {err}\n")
        return 1
    except FileNotFoundError as err:
        sys.stderr.write(f"{PROG}: error: {err.filename}: no such file\n")
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as err:
        if os.environ.get("SOLAR_DEBUG"):
            raise
        sys.stderr.write(internal_error_line(PROG, err))
        return 2


def _finish(module: Any, report: Any, lines: list[str], output: str | None, fixed: list[str] | None = None) -> int:
    from solar.frontends.validate import record
    from solar.ir import print_module

    if report is not None:
        record(module, report)
        lines += report.header()
        if report.internal:
            sys.stderr.write(f"{PROG}: {report.error}\n")
            return 2
        if not report.ok:
            sys.stderr.write(f"{PROG}: error: {report.summary()}\n")
            return 1
        if report.skipped:
            sys.stderr.write(f"{PROG}: remark: validation skipped: {report.skipped}\n")
    else:
        lines.append("Validation: skipped (--no-validate)")
        # Validation's report says which dims stayed fixed and why; unvalidated, the header still does.
        lines += [f"  fixed (cannot shrink): {line}" for line in fixed or []]
    header = "".join(f"// {line}\n" for line in lines)
    _write(header + print_module(module), output)
    return 0


def _nvsolar(args: argparse.Namespace) -> int:
    from solar.frontends.nvsolar_yaml import GraphImportError, translate_nvsolar
    from solar.ir import print_module
    from solar.ir.diagnostics import DiagnosticError
    from solar.ir.source import decode_source

    if not args.source:
        raise UsageError("--from nvsolar-yaml needs the graph file, e.g. solar-translate --from nvsolar-yaml g.yaml")
    try:
        with open(args.source, "rb") as fh:
            text = decode_source(fh.read(), args.source, "einsum graph files")
    except OSError as err:  # a missing file or a directory was refused by _check_args
        raise UsageError(f"cannot read '{args.source}': {err.strerror or err}") from None
    except DiagnosticError as err:
        sys.stderr.write(err.format())
        return 1
    try:
        module = translate_nvsolar(text, args.source)
    except GraphImportError as err:
        where = f"{args.source}:{err.line}:{err.col}" if err.line else args.source
        lines = text.splitlines()
        context = f"{lines[err.line - 1]}\n{' ' * max(err.col - 1, 0)}^\n" if 0 < err.line <= len(lines) else ""
        sys.stderr.write(f"{where}: error: {err}\n{context}")
        return 1
    except DiagnosticError as err:
        sys.stderr.write(err.format())
        return 1
    header = (f"// Translated by {PROG} from {args.source} (NVIDIA SOLAR einsum graph)\n"
              "// Validation: none (an einsum graph has no program to run against)\n")
    _write(header + print_module(module), args.output)
    return 0


def _torch(args: argparse.Namespace) -> int:
    from solar.ir.startup import bulk_imports

    with bulk_imports():  # torch, the dynamo that torch.export loads on first use, the frontend
        import torch._dynamo

        from solar.frontends import torch_export as te

    if args.entry:
        fn, attr, mod = _load_entry(args.entry)
        inputs = _inputs(args, args.seed, "torch", mod)
        import torch

        target = fn() if isinstance(fn, type) and issubclass(fn, torch.nn.Module) else fn
        problem = te.callable_problem(target, inputs, args.name or attr)
        origin = args.entry
    else:
        problem = te.load_problem(args.source)
        if args.name:
            problem.name = args.name
        origin = args.source
    if args.amp != "none":
        from solar.frontends.train_amp import amp_export, amp_problem

        problem = amp_problem(problem, args.amp)
        with amp_export(args.amp):
            tr = te.translate_problem(problem, args.dynamic)
    else:
        tr = te.translate_problem(problem, args.dynamic)
    import torch

    lines = [f"Translated by {PROG} from {origin} (torch.export, torch {torch.__version__})"]
    if args.amp != "none":
        from solar.frontends.train_amp import amp_line

        lines.append(amp_line(args.amp))
    srcs = ", ".join(f"%{v.name} = {a.kind} {a.key}" for v, a in zip(tr.module.entry.args, tr.args, strict=True))
    lines.append(f"Arguments: {srcs}")
    if tr.scalars:
        lines.append("Python numbers among the inputs, as constants: "
                     + ", ".join(f"input {k} = {v!r}" for k, v in sorted(tr.scalars.items())))
    if tr.state:
        lines.append(f"State updated in place, its new values the last {len(tr.state)} output(s): "
                     + ", ".join(tr.state))
    report = None
    if not args.no_validate:
        from solar.frontends.scaled_reference import validate_torch
        from solar.frontends.train_amp import amp_policy

        with amp_policy(args.amp):
            report = validate_torch(problem, tr, args.seed, args.validate_size, args.full_size_validation,
                                    args.dynamic)
    return _finish(tr.module, report, lines, args.output, tr.fixed_dims)


def _train(args: argparse.Namespace) -> int:
    if not args.source or args.entry:
        raise UsageError("--train takes a KernelBench-style file (Model, get_inputs(), get_targets() for a loss "
                         "with targets), not --entry")
    from solar.ir.startup import bulk_imports

    with bulk_imports():
        import torch._dynamo

        from solar.frontends import torch_train as tt
    options = tt.TrainOptions(args.optimizer, args.loss, args.accumulate, args.amp)
    base, targets = tt.load_train_problem(args.source, options)
    n_inputs = tt.model_inputs(base)
    problem = tt.with_targets(base, targets, options)
    if args.name:
        problem.name = args.name
    tr = tt.translate_train(problem, n_inputs, options, args.dynamic)
    lines = [f"Translated by {PROG} from {args.source} (training step: torch.export joint graph, torch "
             f"{torch.__version__})", *tt.header_lines(tr, options)]
    report = None if args.no_validate else tt.validate_train(problem, n_inputs, options, tr, args.seed,
                                                            args.validate_size, args.full_size_validation)
    code = _finish(tr.module, report, lines, args.output)
    if code == 0 and args.report:
        from solar.ir import print_module

        sys.stderr.write(report_text(print_module(tr.module), args.report, args.data_parallel, args.zero,
                                     args.precision_floor))
    return code


def report_text(sir: str, target: str, chips: int = 1, zero: int = 0, precision_floor: str | None = None) -> str:
    """solar-translate --train --report: the step analysed on `target` (fused, under `precision_floor`), its
    report as text."""
    from solar import analyze
    from solar.backends.report import seconds
    from solar.training import training_report

    report = training_report(analyze(sir, targets=(target,), precision_floor=precision_floor))
    if report is None:  # pragma: no cover - the text is a training step's
        return ""
    text = report.text()
    if chips > 1 or zero:
        dp = report.data_parallel(chips, zero)
        text += (f"  data parallel x{chips} (ZeRO-{zero}): gradient all-reduce {seconds(dp['allreduce_seconds'])}"
                 f"; peak live per chip >= {int(dp['peak_live']):,} B")
        text += (f"; step SOL with the reduce overlapped {seconds(dp['step_seconds'])}\n" if "step_seconds" in dp
                 else " (the sharded update's time is not bounded here)\n")
    return text


def _jax(args: argparse.Namespace) -> int:
    from solar.frontends import jax_export as je

    if args.entry:
        fn, attr, mod = _load_entry(args.entry)
    else:
        from solar.frontends.torch_export import import_file

        mod = import_file(args.source)
        if not hasattr(mod, "forward"):
            raise UsageError(f"{args.source} defines no forward(); name the function with --entry FILE:NAME")
        fn, attr = mod.forward, os.path.splitext(os.path.basename(args.source))[0]
    inputs = _inputs(args, args.seed, "jax", mod)
    tr = je.translate_jax(fn, inputs, args.name or attr, args.dynamic)
    import jax

    lines = [f"Translated by {PROG} from {args.entry or args.source} (jax.make_jaxpr, jax {jax.__version__})"]
    entry_args = tr.module.entry.args
    srcs = [f"%{a.name} = input {k}" for k, a in enumerate(entry_args[:tr.n_inputs])]
    srcs += [f"%{a.name} = constant {k}" for k, a in enumerate(entry_args[tr.n_inputs:])]
    lines.append(f"Arguments: {', '.join(srcs)}")  # solar-bench runs a .sir's source by this line
    report = None
    if not args.no_validate:
        report = je.validate_jax(fn, inputs, tr, args.seed, args.validate_size, args.full_size_validation)
    return _finish(tr.module, report, lines, args.output)


def _llm(args: argparse.Namespace) -> int:
    if not args.llm:
        raise UsageError("--llm-only needs --llm MODEL")
    if args.framework != "torch":
        raise UsageError("--llm translates PyTorch programs only")
    if args.no_validate:
        raise UsageError("--llm always validates: the model's IR is trusted only once it matches the original")
    if args.max_attempts < 1:
        raise UsageError("--max-attempts must be at least 1")
    if not args.validate_timeout > 0:
        raise UsageError(f"--validate-timeout must be a positive number of seconds, not {args.validate_timeout:g}")
    from solar.frontends import torch_export as te
    from solar.frontends.llm import LLMError, LLMOptions, LoopFailed, source_of, translate_torch

    if args.entry:
        fn, attr, mod = _load_entry(args.entry)
        inputs = _inputs(args, args.seed, "torch", mod)
        import torch

        target = fn() if isinstance(fn, type) and issubclass(fn, torch.nn.Module) else fn
        problem = te.callable_problem(target, inputs, args.name or attr)
        path, origin = None, args.entry
    else:
        problem, mod = te.load_problem(args.source), None
        if args.name:
            problem.name = args.name
        path = origin = args.source
    opts = LLMOptions(args.llm, args.llm_only, args.max_attempts, args.temperature, args.timeout, args.llm_base_url,
                      args.transcript, args.seed, args.validate_size, args.full_size_validation, args.dynamic,
                      args.validate_timeout)
    try:
        source, source_path = source_of(path, mod)
        out = translate_torch(problem, source, os.path.basename(source_path), opts)
    except LLMError as err:
        sys.stderr.write(f"{PROG}: error: {err}\n")
        return 1
    except LoopFailed as err:
        sys.stderr.write(f"{PROG}: error: {err}")
        return 1
    import torch

    how = "hybrid: torch.export and" if out.mode == "hybrid" else "whole program by"
    lines = [f"Translated by {PROG} from {origin} ({how} {args.llm}, torch {torch.__version__})", *out.header]
    return _finish(out.module, out.report, lines, args.output)


def cli() -> None:
    """The console script: `main` on the command line, ending as every SOLAR command does (tools/_entry.py)."""
    run_main(PROG, main)


if __name__ == "__main__":
    cli()
