"""What every SOLAR command does around its work: exit codes, and one line instead of a traceback."""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

DISTRIBUTION = "solar-sol"


def package_version() -> str:
    """The installed package's version (read only when asked: importlib.metadata costs start-up time)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown (not installed)"


class UsageError(Exception):
    """A bad command line: the tool prints `PROG: error: message` and exits 1 (argparse would exit 2)."""


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors raise UsageError instead of printing usage and exiting 2."""

    def error(self, message: str) -> Any:
        raise UsageError(message)


class _VersionAction(argparse.Action):
    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        sys.stdout.write(f"{parser.prog} {package_version()}\n")
        parser.exit(0)


def add_version(parser: argparse.ArgumentParser, prog: str) -> None:
    """`--version`: the tool's name and the package version, printed before any other work."""
    parser.add_argument("--version", action=_VersionAction, help=f"print {prog}'s version and exit")


PRECISION_FLOOR_HELP = ("price each float contraction at this precision (bf16, fp16, tf32, fp8) where it is faster "
                        "than its own: the bound for a kernel that may compute at it within a tolerance")


def add_precision_floor(group: Any, when: str = "") -> None:
    """`--precision-floor PRECISION`, one flag and one help text for every tool that prices bounds (`when`: the
    flag it goes with, e.g. "with --report: ")."""
    group.add_argument("--precision-floor", metavar="PRECISION", help=when + PRECISION_FLOOR_HELP)


def check_precision_floor(floor: str | None) -> None:
    """A --precision-floor the cost model knows (backends/precision_policy.py), else a UsageError."""
    if floor is None:
        return
    from solar.backends.precision_policy import PRECISION_FLOORS

    if floor not in PRECISION_FLOORS:
        raise UsageError(f"--precision-floor: bad precision '{floor}': expected one of {', '.join(PRECISION_FLOORS)}")


def internal_error_line(prog: str, err: BaseException) -> str:
    """The one line of a bug in SOLAR: the exception, where in SOLAR it was raised (the innermost frame of a
    SOLAR module), and how to get the traceback."""
    where = ""
    tb = err.__traceback__
    while tb is not None:
        module = str(tb.tb_frame.f_globals.get("__name__", ""))
        if module == "solar" or module.startswith("solar."):
            where = f" at {module}:{tb.tb_lineno}"
        tb = tb.tb_next
    first = (str(err).strip().splitlines() or [""])[0]
    return (f"{prog}: internal error: {type(err).__name__}: {first}{where} "
            "(set SOLAR_DEBUG=1 for the traceback and please report it)\n")


def run_main(prog: str, run: Callable[[Sequence[str]], int]) -> None:
    """Runs `run(argv)` and exits with its code; a bug in SOLAR prints one line (the traceback only with
    SOLAR_DEBUG=1) and exits 2, so user errors (1) and internal errors stay apart. The process ends without
    the interpreter's teardown (solar.ir.startup.exit_now), once its output is flushed."""
    try:
        code = run(sys.argv[1:])
        sys.stdout.flush()
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:
        code = 0
    except Exception as err:
        if isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT):
            # A full disk under a redirected stdout (`> /dev/full`) is the user's, not a bug.
            sys.stderr.write(f"{prog}: error: cannot write the output: {err.strerror}\n")
            with contextlib.suppress(OSError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush at exit
            sys.exit(1)
        if os.environ.get("SOLAR_DEBUG"):
            raise
        sys.stderr.write(internal_error_line(prog, err))
        code = 2
    from solar.ir.startup import exit_now

    exit_now(code)
