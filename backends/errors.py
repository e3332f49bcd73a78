"""Errors raised while preparing or running IR. Each carries one readable message (no traceback needed)."""

from __future__ import annotations

from solar.ir.diagnostics import Diagnostic, Location


class ExecutionError(Exception):
    """Base class: anything that stops a run for a reason the user can fix."""


class InputError(ExecutionError):
    """Missing, extra or mistyped inputs (names, shapes, dtypes)."""


class ParamError(ExecutionError):
    """A size parameter that is unknown, unbound or not a positive integer."""


class EntryError(ExecutionError):
    """An unknown entry function."""


class VerificationError(ExecutionError):
    """The module does not verify; `diagnostics` are in the `file:line:col: error:` form."""

    def __init__(self, message: str, diagnostics: list[Diagnostic], rendered: str) -> None:
        super().__init__(message)
        self.diagnostics = diagnostics
        self.rendered = rendered  # the formatted diagnostics, with source lines and carets


class RuntimeBoundsError(ExecutionError):
    """An index out of range at run time: a gather/scatter index, a slice, or a kernel access."""

    def __init__(self, message: str, loc: Location | None = None) -> None:
        super().__init__(message)
        self.loc = loc


class UnsupportedError(ExecutionError):
    """A construct this backend cannot run (should not happen for verified IR; reported, not crashed on)."""
