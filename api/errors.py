"""The errors of the Python API: each carries the one-line message the command-line tools print for the same
problem (`str(err)`), and, where the tools print more (the source line and a caret), `detail` holds it all."""

from __future__ import annotations


class SolarError(Exception):
    """Every error `solar.analyze` and `Analysis` raise for bad input; `str()` is the tools' one line."""

    def __init__(self, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = detail or message


class BadInputError(SolarError, TypeError):
    """The program or its example inputs are not of a kind SOLAR takes (a module with a tuple of tensors, a
    JAX function with a tuple of arrays, a `.sir` path or text)."""


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
