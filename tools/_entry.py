"""What every SOLAR command does around its work: exit codes, and one line instead of a traceback."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence


def run_main(prog: str, run: Callable[[Sequence[str]], int]) -> None:
    """Runs `run(argv)` and exits with its code; a bug in SOLAR prints one line (the traceback only with
    SOLAR_DEBUG=1) and exits 2, so user errors (1) and internal errors stay apart."""
    try:
        code = run(sys.argv[1:])
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:
        code = 0
    except Exception as err:
        if os.environ.get("SOLAR_DEBUG"):
            raise
        sys.stderr.write(f"{prog}: internal error: {type(err).__name__}: {err} "
                         "(set SOLAR_DEBUG=1 for the traceback and please report it)\n")
        code = 2
    sys.exit(code)
