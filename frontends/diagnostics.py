"""Frontend diagnostics: unsupported ops named with their source lines, all reported at once."""

from __future__ import annotations

import linecache
import os
import re
from dataclasses import dataclass

from solar.ir.diagnostics import Location

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)\n(?P<code>[^\n]*)')


@dataclass(frozen=True)
class SourceLine:
    """A user source position: the innermost frame of a stack trace that is not inside a framework."""

    file: str
    line: int
    col: int
    code: str

    @property
    def location(self) -> Location:
        return Location(self.file, self.line, self.col)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


def _framework_dirs() -> tuple[str, ...]:
    """The install folders of the frameworks, found without importing them (importing jax to locate it
    costs seconds in a torch translation)."""
    import importlib.util

    dirs: list[str] = []
    for mod in ("torch", "jax", "jaxlib", "flax", "numpy"):
        try:
            spec = importlib.util.find_spec(mod)
        except (ImportError, ValueError):
            continue
        for where in (spec.submodule_search_locations or []) if spec is not None else []:
            dirs.append(os.path.abspath(where) + os.sep)
    return tuple(dirs)


_FRAMEWORK_DIRS: tuple[str, ...] | None = None


def is_framework_file(path: str) -> bool:
    global _FRAMEWORK_DIRS
    if _FRAMEWORK_DIRS is None:
        _FRAMEWORK_DIRS = _framework_dirs()
    full = os.path.abspath(path)
    return full.startswith(_FRAMEWORK_DIRS) or "/site-packages/torch/" in full or "<frozen" in path


def user_frame(stack_trace: str | None) -> SourceLine | None:
    """The innermost user frame of an FX node's `stack_trace` (frames are printed outermost first)."""
    if not stack_trace:
        return None
    best: SourceLine | None = None
    for m in _FRAME.finditer(stack_trace):
        file = m.group("file")
        if is_framework_file(file):
            continue
        line = int(m.group("line"))
        # A stack trace names lines, not columns (and re-indents the code): the column is where the
        # statement starts in the file itself.
        text = linecache.getline(file, line) or m.group("code")
        col = len(text) - len(text.lstrip()) + 1
        best = SourceLine(file, line, col, text.strip())
    return best


@dataclass
class Problem:
    """One op the frontend could not translate."""

    op: str
    message: str
    where: SourceLine | None

    def format(self) -> str:
        head = f"{self.where}: error: " if self.where is not None else "error: "
        text = head + self.message + "\n"
        if self.where is not None and self.where.code:
            text += f"    {self.where.code}\n"
        return text


class TranslationError(Exception):
    """Every problem found in one translation; `format()` lists them in `file:line:col: error:` form."""

    def __init__(self, problems: list[Problem], summary: str | None = None) -> None:
        self.problems = problems
        self.summary = summary or f"{len(problems)} op(s) could not be translated"
        super().__init__(self.format())

    @property
    def ops(self) -> list[str]:
        return sorted({p.op for p in self.problems})

    def format(self) -> str:
        body = "".join(p.format() for p in self.problems)
        names = ", ".join(self.ops)
        return f"{body}{self.summary}: {names}\n" if self.problems else self.summary + "\n"


class ValidationError(Exception):
    """The translated IR ran but its outputs differ from the original program's beyond tolerance."""
