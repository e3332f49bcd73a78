"""solar-run: execute a SIR module on given or random inputs, save or compare its outputs.

    solar-run model.sir --random-inputs --seed 0 --outputs out.npz
    solar-run model.sir --inputs in.npz --compare ref.npz --rtol 1e-4 --atol 1e-5 --param B=8

Inputs are named after the entry function's arguments (without '%'); outputs are `out0`, `out1`, ...
Exit status: 0 on success, 1 on a user error or an output mismatch, 2 on an internal error.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from solar.tools._entry import Parser, UsageError, add_version, run_main

if TYPE_CHECKING:
    import numpy as np

PROG = "solar-run"


def build_parser() -> Parser:
    p = Parser(prog=PROG, allow_abbrev=False,
                description="Run a SIR module (kernels through Numba, einsums through BLAS) on inputs.")
    add_version(p, PROG)
    p.add_argument("input", help="the .sir file to run")
    p.add_argument("--entry", metavar="NAME", help="the function to run (default: @main, else the first)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="bind a size parameter (repeatable), e.g. --param M=64")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--inputs", metavar="FILE.npz", help="input arrays named after the entry's arguments")
    src.add_argument("--random-inputs", action="store_true",
                     help="seeded random inputs (normal floats; integers in a valid index range)")
    p.add_argument("--seed", type=int, default=0, help="seed for --random-inputs (default 0)")
    p.add_argument("--save-inputs", metavar="FILE.npz", help="also write the inputs used (e.g. random ones)")
    p.add_argument("--outputs", metavar="FILE.npz", help="write the outputs (out0, out1, ...)")
    p.add_argument("--compare", metavar="FILE.npz", help="compare the outputs with a reference (out0, ...)")
    p.add_argument("--rtol", type=float, help="relative tolerance for --compare (default: by dtype)")
    p.add_argument("--atol", type=float, help="absolute tolerance for --compare (default: by dtype)")
    p.add_argument("--print", dest="print_values", action="store_true", help="print the output values")
    p.add_argument("--stats", action="store_true", help="print compile and run times (stderr)")
    return p


def _params(items: list[str]) -> dict[str, int]:
    values: dict[str, int] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"bad --param '{item}': expected NAME=VALUE, e.g. --param M=64")
        try:
            value = int(raw)
        except ValueError:
            raise UsageError(f"bad --param '{item}': {raw!r} is not an integer") from None
        key = name.strip()
        if key in values:
            raise UsageError(f"--param {key} is given twice ({values[key]} and {value})")
        values[key] = value
    return values


def _summary(name: str, array: np.ndarray, type_text: str) -> str:
    """`out0: tensor<...> min A max B mean C`, over the values that are not NaN (counted apart)."""
    import numpy as np

    if array.size == 0:
        return f"{name}: {type_text} (empty)"
    wide = array.astype(np.float64).reshape(-1)
    nans = int(np.isnan(wide).sum())
    values = wide[~np.isnan(wide)]
    if values.size == 0:
        return f"{name}: {type_text} all {nans} values NaN"
    with np.errstate(all="ignore"):  # inf - inf in the mean is fine: it prints nan
        stats = f"min {_num(values.min())} max {_num(values.max())} mean {_num(values.mean())}"
    return f"{name}: {type_text} {stats}" + (f" ({nans} NaN)" if nans else "")


def _num(x: float) -> str:
    return f"{x:.6g}"


def run(argv: Sequence[str]) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        params = _params(args.param)
        if not 0 <= args.seed < 2**63:
            raise UsageError(f"--seed must be a non-negative integer below 2^63, not {args.seed}")
        from solar.ir.outputs import OutputError, check_writable

        try:
            for path, what in ((args.save_inputs, "the inputs"), (args.outputs, "the outputs")):
                if path:
                    check_writable(path, what)
        except OutputError as err:
            raise UsageError(str(err)) from None
    except UsageError as err:
        sys.stderr.write(f"{PROG}: error: {err}\n")
        return 1

    # Imported here so that `--help` and usage errors answer without loading NumPy or Numba.
    import numpy as np

    from solar.backends import executor, jit
    from solar.backends.errors import ExecutionError, VerificationError
    from solar.backends.inputs import (
        check_memory,
        check_work,
        compare_outputs,
        load_npz,
        output_names,
        random_inputs,
        save_npz,
    )
    from solar.ir.diagnostics import DiagnosticEngine, DiagnosticError
    from solar.ir.parser import parse_module
    from solar.ir.source import decode_source

    def fail(message: str) -> int:
        sys.stderr.write(f"{PROG}: error: {message}\n")
        return 1

    try:
        with open(args.input, "rb") as fh:
            text = decode_source(fh.read(), args.input)
    except OSError as err:
        return fail(f"cannot read '{args.input}': {err.strerror}")
    except DiagnosticError as err:
        sys.stderr.write(err.format())
        return 1
    engine = DiagnosticEngine()
    module = None
    with contextlib.suppress(DiagnosticError):  # the engine holds the syntax errors
        module = parse_module(text, args.input, engine)
    if module is None or engine.has_errors:
        sys.stderr.write(engine.format_all())
        return 1

    try:
        program = executor.prepare(module, params, args.entry, engine)
        check_memory(program)
        check_work(program)
        if args.inputs:
            arrays: Any = load_npz(args.inputs)
            try:
                args_in = program.check_inputs(arrays)
            except ExecutionError as err:
                return fail(f"{args.inputs}: {err}")
        elif args.random_inputs or not program.inputs:
            args_in = program.check_inputs(random_inputs(program, args.seed))
        else:
            return fail(f"@{program.entry.name} takes inputs: give --inputs FILE.npz or --random-inputs")
        if args.save_inputs:
            save_npz(args.save_inputs, {s.name: a for s, a in zip(program.inputs, args_in, strict=True)})
        start = time.perf_counter()
        compile_s = program.compile()
        compiled = time.perf_counter()
        outputs = program(args_in)
        ran = time.perf_counter()
        if args.stats:
            s = jit.STATS
            sys.stderr.write(f"compile: {compile_s:.3f} s ({s.compiled} compiled, {s.disk_hits} from the disk cache, "
                             f"{s.unique_sources} distinct kernels for {s.requests} uses); "
                             f"run: {ran - compiled:.4f} s; prepare: {compiled - start - compile_s:.3f} s\n")
        names = output_names(len(outputs))
        for name, out, t in zip(names, outputs, program.result_types, strict=True):
            print(_summary(name, out, str(t)))
            if args.print_values:
                print(np.array2string(out.astype(np.float64) if out.dtype.kind == "V" or out.dtype.name in (
                    "bfloat16", "float8_e4m3fn", "float8_e5m2") else out, precision=6, threshold=1 << 20))
        if args.outputs:
            save_npz(args.outputs, outputs)
        if args.compare:
            reference = load_npz(args.compare)
            try:
                results = compare_outputs(outputs, reference, program.result_types, args.rtol, args.atol)
            except ExecutionError as err:
                return fail(f"{args.compare}: {err}")
            ok = True
            for c in results:
                verdict = "ok" if c.ok else f"MISMATCH ({c.mismatched} of {c.size} elements)"
                print(f"{c.name}: max abs err {c.max_abs:.3g}, max rel err {c.max_rel:.3g} "
                      f"(rtol {c.tolerance.rtol:g}, atol {c.tolerance.atol:g}): {verdict}")
                ok &= c.ok
            if not ok:
                return fail(f"outputs differ from {args.compare}")
    except VerificationError as err:
        sys.stderr.write(err.rendered)
        return 1
    except ExecutionError as err:
        return fail(str(err))
    return 0


def main() -> None:
    run_main(PROG, run)


if __name__ == "__main__":
    main()
