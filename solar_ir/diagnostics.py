"""Source locations and diagnostics in the `file:line:col: error: message` form, with the source line."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["error", "warning", "remark", "note"]


@dataclass(frozen=True, slots=True)
class Location:
    """A position in a source file; lines and columns start at 1."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


UNKNOWN = Location("<unknown>", 0, 0)


@dataclass(slots=True)
class Diagnostic:
    severity: Severity
    message: str
    loc: Location
    notes: list[Diagnostic] = field(default_factory=list)


class SourceManager:
    """Remembers the text of every parsed buffer so diagnostics can quote the offending line."""

    def __init__(self) -> None:
        self._lines: dict[str, list[str]] = {}

    def add(self, name: str, text: str, first_line: int = 1) -> None:
        # Split-input chunks keep their line numbers by padding with empty lines before them.
        self._lines[name] = [""] * (first_line - 1) + text.split("\n")

    def line(self, loc: Location) -> str | None:
        lines = self._lines.get(loc.file)
        if lines is None or not 1 <= loc.line <= len(lines):
            return None
        return lines[loc.line - 1]


class DiagnosticError(Exception):
    """Raised to stop at the first fatal problem (a syntax error); carries the diagnostics so far."""

    def __init__(self, diagnostics: list[Diagnostic], sources: SourceManager | None = None) -> None:
        super().__init__("; ".join(d.message for d in diagnostics))
        self.diagnostics = diagnostics
        self.sources = sources

    def format(self) -> str:
        """Every diagnostic in the `file:line:col: error: ...` form, with source lines where known."""
        sources = self.sources or SourceManager()
        return "".join(format_diagnostic(d, sources) for d in self.diagnostics)


class DiagnosticEngine:
    """Collects diagnostics so that several errors can be reported in one run."""

    def __init__(self, sources: SourceManager | None = None) -> None:
        self.sources = sources or SourceManager()
        self.diagnostics: list[Diagnostic] = []

    def emit(self, severity: Severity, message: str, loc: Location,
             notes: list[Diagnostic] | None = None) -> Diagnostic:
        diag = Diagnostic(severity, message, loc, notes or [])
        self.diagnostics.append(diag)
        return diag

    def error(self, message: str, loc: Location, notes: list[Diagnostic] | None = None) -> Diagnostic:
        return self.emit("error", message, loc, notes)

    def warning(self, message: str, loc: Location) -> Diagnostic:
        return self.emit("warning", message, loc)

    def remark(self, message: str, loc: Location) -> Diagnostic:
        return self.emit("remark", message, loc)

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.diagnostics)

    def format(self, diag: Diagnostic) -> str:
        return format_diagnostic(diag, self.sources)

    def format_all(self) -> str:
        return "".join(self.format(d) for d in self.diagnostics)


def note(message: str, loc: Location) -> Diagnostic:
    return Diagnostic("note", message, loc)


def format_diagnostic(diag: Diagnostic, sources: SourceManager) -> str:
    out = [f"{diag.loc}: {diag.severity}: {diag.message}\n"]
    text = sources.line(diag.loc)
    if text is not None:
        # Tabs are kept so the caret lines up under the same column in a terminal.
        caret = "".join("\t" if ch == "\t" else " " for ch in text[: max(diag.loc.col - 1, 0)]) + "^"
        out.append(f"{text}\n{caret}\n")
    for child in diag.notes:
        out.append(format_diagnostic(child, sources))
    return "".join(out)
