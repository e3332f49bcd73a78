"""The errors of the Python API: each carries the one-line message the command-line tools print for the same
problem (`str(err)`), and, where the tools print more (the source line and a caret), `detail` holds it all."""

from __future__ import annotations

from typing import Any


def kind_of(value: Any) -> str:
    """What a value is, for a message: `None`, `an int`, `a list`."""
    if value is None:
        return "None"
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


class SolarError(Exception):
    """Every error `solar.analyze` and `Analysis` raise for bad input; `str()` is the tools' one line."""

    def __init__(self, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = detail or message


class BadInputError(SolarError, TypeError):
    """The program, its example inputs or another argument are not of a kind SOLAR takes (a module with a
    tuple of tensors, a JAX function with a tuple of arrays, a `.py`, a `.sir` path or text; a class where
    an instance belongs; a target list that is not names)."""


class BadOptionError(SolarError, ValueError):
    """An option with a value it does not take: `dynamic="bogus"`, an unknown mode in `total()`, a table
    `to_pandas` does not have, a device or framework mode `bench()` does not know."""


class ModelError(SolarError):
    """The program fails on its example inputs (its forward raises, or tracing it does)."""


class TranslationFailed(SolarError):
    """The frontend could not translate the program (unsupported ops, each at its source line)."""


class SIRError(SolarError):
    """SIR text or a `.sir` file that does not parse or verify, or a pass that reported an error."""


class UnknownTargetError(SolarError, ValueError):
    """A target that is not in the catalogue (`solar-opt --list-targets`) and no readable YAML file."""


class OutputPathError(SolarError, OSError):
    """A report that cannot be written (its directory is missing, say); no existing file was touched."""


class SweepSpecError(SolarError, ValueError):
    """A sweep the symbolic counts cannot evaluate: an unknown size, an empty or bad range, too many points."""
