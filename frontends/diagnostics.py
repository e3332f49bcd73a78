"""Frontend diagnostics: unsupported ops named with their source lines, all reported at once."""

from __future__ import annotations

import linecache
import os
import re
from dataclasses import dataclass
from typing import Any

from solar.ir import attr_names
from solar.ir.diagnostics import DiagnosticEngine, Location
from solar.ir.ops import KernelOp, Op
from solar.ir.verifier import Checked, Verifier

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
    # The frontends' own wrappers (callable_problem's `forward`) are never the user's line either.
    dirs.append(os.path.dirname(os.path.abspath(__file__)) + os.sep)
    return tuple(dirs)


_FRAMEWORK_DIRS: tuple[str, ...] | None = None


def is_framework_file(path: str) -> bool:
    global _FRAMEWORK_DIRS
    if _FRAMEWORK_DIRS is None:
        _FRAMEWORK_DIRS = _framework_dirs()
    full = os.path.abspath(path)
    # `<eval_with_key>.N`: code FX generates (a higher-order op's traced condition or body), no user's file.
    return (full.startswith(_FRAMEWORK_DIRS) or "/site-packages/torch/" in full or "<frozen" in path
            or path.startswith("<eval_with_key>"))


def is_library_file(path: str) -> bool:
    """A framework's file, or one of an installed package (transformers, say): not the user's own code."""
    return is_framework_file(path) or "/site-packages/" in path or "/dist-packages/" in path


def library_frame(stack_trace: str | None) -> str | None:
    """The innermost frame of an FX node's `stack_trace` when it is library code (`torch/nn/modules/
    linear.py:125`, the path under its install folder), as profilers show it after the user's line."""
    frames = list(_FRAME.finditer(stack_trace or ""))
    if not frames or not is_library_file(frames[-1].group("file")):
        return None
    if not any(not is_library_file(m.group("file")) for m in frames):
        return None  # no user frame: the location is the library's own line already
    return library_path(frames[-1].group("file"), int(frames[-1].group("line")))


def mark_library_frame(ops: list[Op], stack_trace: str | None) -> None:
    """Kernels made inside library code keep the library frame beside their loc (the user's line)."""
    tag_library_frame(ops, library_frame(stack_trace))


def tag_library_frame(ops: list[Op], frame: str | None) -> None:
    """Sets `frame` on the kernels among `ops` (and inside them) that have none yet."""
    if frame is None:
        return
    for op in (inner for top in ops for inner in top.walk()):
        if isinstance(op, KernelOp):
            op.attrs.setdefault(attr_names.LIBRARY_FRAME, frame)


def torch_module_path(stack: Any) -> str | None:
    """The innermost module of an FX node's `nn_module_stack` (`{key: (path, class)}`, outermost first):
    `attn.qkv`; None for the model itself or no stack."""
    if not isinstance(stack, dict) or not stack:
        return None
    entry = list(stack.values())[-1]
    path = entry[0] if isinstance(entry, tuple | list) and entry else None
    return path if isinstance(path, str) and path else None


def jax_module_path(name_stack: Any) -> str | None:
    """A JAX equation's name stack (`Block_0/Dense_1`, inside any transformation's `jit(f)` or `vmap(…)`) as a
    dotted path; None when empty."""
    parts = [p for p in str(name_stack or "").split("/") if p and "(" not in p]
    return ".".join(parts) or None


def tag_module_path(ops: list[Op], path: str | None) -> None:
    """Sets the module path on the kernels among `ops` (and inside them) that have none yet."""
    if path is None:
        return
    for op in (inner for top in ops for inner in top.walk()):
        if isinstance(op, KernelOp):
            op.attrs.setdefault(attr_names.MODULE_PATH, path)


def library_path(file: str, line: int) -> str:
    """`path:line` with the path under its install folder (`torch/nn/modules/linear.py:134`)."""
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in file:
            file = file.rsplit(marker, 1)[1]
            break
    return f"{file}:{line}"


def jax_library_frame(frames: list[tuple[str, int]], user: SourceLine | None) -> str | None:
    """The library frame a JAX equation's traceback (`(file, line)`, innermost first) shows just inside the
    user's line: the function of the library the user called (`jax/_src/nn/functions.py:…` for gelu)."""
    if user is None:
        return None
    for k, (file, line) in enumerate(frames):
        if file == user.file and line == user.line:
            inner = k - 1
            while inner > 0 and frames[inner][0].endswith(_JAX_WRAPPERS):  # decorators, not the library's code
                inner -= 1
            if inner >= 0 and is_library_file(frames[inner][0]) and not frames[inner][0].endswith(_JAX_WRAPPERS):
                return library_path(*frames[inner])
            return None
    return None


# JAX's decorator machinery (jit, custom_jvp, tracebacks) between a user's call and the function it calls.
_JAX_WRAPPERS = tuple(f"jax/_src/{name}.py" for name in (
    "traceback_util", "pjit", "api", "api_util", "linear_util", "custom_derivatives", "profiler", "core",
    "dispatch", "interpreters/partial_eval", "interpreters/ad", "source_info_util"))


def user_frame(stack_trace: str | None) -> SourceLine | None:
    """The innermost user frame of an FX node's `stack_trace` (frames are printed outermost first): the
    innermost outside every installed package, else (a model that is all library code, such as a
    transformers model) the innermost outside the frameworks."""
    if not stack_trace:
        return None
    frames = list(_FRAME.finditer(stack_trace))
    own = [m for m in frames if not is_library_file(m.group("file"))]
    best: SourceLine | None = None
    for m in own or frames:
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
    internal: bool = False  # a bug in SOLAR met at this op, not a limit of the frontend: exit 2

    def format(self) -> str:
        kind = "internal error" if self.internal else "error"
        head = f"{self.where}: {kind}: " if self.where is not None else f"{kind}: "
        text = head + self.message + "\n"
        if self.where is not None and self.where.code:
            text += f"    {self.where.code}\n"
        return text


def lowering_failed(op: str, err: Exception) -> str:
    """The diagnostic of a lowering that raised something other than LoweringError (a bug in SOLAR's
    lowering, not in the program): it names the op and the exception, so the user can report it."""
    first = (str(err).strip().splitlines() or [""])[0]
    return f"lowering {op} failed: {type(err).__name__}: {first} (a bug in SOLAR: please report it)"


class TranslationError(Exception):
    """Every problem found in one translation; `format()` lists them in `file:line:col: error:` form."""

    def __init__(self, problems: list[Problem], summary: str | None = None) -> None:
        self.problems = problems
        self.summary = summary or f"{len(problems)} op(s) could not be translated"
        super().__init__(self.format())

    @property
    def ops(self) -> list[str]:
        return sorted({p.op for p in self.problems})

    @property
    def internal(self) -> bool:
        """Some problem is a bug in SOLAR (the tools exit 2, docs/errors.md)."""
        return any(p.internal for p in self.problems)

    def format(self) -> str:
        body = "".join(p.format() for p in self.problems)
        names = ", ".join(self.ops)
        return f"{body}{self.summary}: {names}\n" if self.problems else self.summary + "\n"


class ValidationError(Exception):
    """The translated IR ran but its outputs differ from the original program's beyond tolerance."""


class HarnessError(Exception):
    """Validation's own machinery failed (not the user's program): reported as an internal error with its
    cause, never as a failure of the original."""
# ---- errors in the user's own code ------------------------------------------------------------------


def _stdlib_dirs() -> tuple[str, ...]:
    import sysconfig

    paths = sysconfig.get_paths()
    return tuple(os.path.abspath(paths[k]) + os.sep for k in ("stdlib", "platstdlib") if k in paths)


def _is_user_frame(file: str, module: str) -> bool:
    if file.startswith("<") or module == "solar" or module.startswith("solar."):
        return False
    return not is_framework_file(file) and not os.path.abspath(file).startswith(_stdlib_dirs()) \
        and "/site-packages/" not in file


def source_line(file: str, line: int, col: int | None = None) -> SourceLine:
    text = linecache.getline(file, line)
    if col is None:
        col = len(text) - len(text.lstrip()) + 1
    return SourceLine(file, line, max(col, 1), text.rstrip("\n"))


def user_frames(err: BaseException) -> list[SourceLine]:
    """The frames of `err`'s traceback in the user's files (not SOLAR's, the frameworks' or the standard
    library's), outermost first."""
    frames: list[SourceLine] = []
    tb = err.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if _is_user_frame(frame.f_code.co_filename, str(frame.f_globals.get("__name__", ""))):
            frames.append(source_line(frame.f_code.co_filename, tb.tb_lineno))
        tb = tb.tb_next
    return frames


def raised_in_user_code(err: BaseException) -> bool:
    """Whether `err` came from the user's program: its traceback reaches a user frame and no SOLAR frame
    runs after the last one (what the program called in a framework raised it, not SOLAR's own code)."""
    user = solar = -1
    tb, depth = err.__traceback__, 0
    while tb is not None:
        frame = tb.tb_frame
        module = str(frame.f_globals.get("__name__", ""))
        if module == "solar" or module.startswith("solar."):
            solar = depth
        elif _is_user_frame(frame.f_code.co_filename, module):
            user = depth
        tb, depth = tb.tb_next, depth + 1
    return user >= 0 and solar < user


class SourceError(Exception):
    """A problem in the user's program itself, at a line of it: `file:line:col: error: message`, the line
    and a caret, and notes (e.g. the line that imported the module with the problem)."""

    def __init__(self, message: str, where: SourceLine | None, notes: list[tuple[str, SourceLine]] | None = None
                 ) -> None:
        super().__init__(message)
        self.message = message
        self.where = where
        self.notes = notes or []

    @staticmethod
    def _block(kind: str, message: str, where: SourceLine | None) -> str:
        if where is None:
            return f"{kind}: {message}\n"
        text = f"{where}: {kind}: {message}\n"
        code = where.code.rstrip("\n")
        if code.strip():
            caret = "".join("\t" if ch == "\t" else " " for ch in code[:where.col - 1]) + "^"
            text += f"{code}\n{caret}\n"
        return text

    def format(self) -> str:
        return self._block("error", self.message, self.where) + "".join(
            self._block("note", m, w) for m, w in self.notes)


class ProgramError(Exception):
    """A problem with what the user's program asks for, raised from inside it by a SOLAR hook (a model named
    whose config cannot be found, frontends/hub_configs.py): its message is the whole diagnostic, located at
    the program's line that asked."""


# Modules whose distribution on PyPI has another name.
_DISTRIBUTIONS = {"yaml": "pyyaml", "cv2": "opencv-python", "PIL": "pillow", "sklearn": "scikit-learn",
                  "skimage": "scikit-image", "bs4": "beautifulsoup4", "attr": "attrs", "google.protobuf": "protobuf"}


def install_hint(err: ImportError, folder: str | None = None) -> str:
    """How to install the module a program failed to import (`einops` for the KernelBench Mamba2 problems):
    its distribution's name where the module is missing altogether, nothing where the package is there and
    only a part of it is not (an old version), or where the import failed for another reason. A module that
    is a file in `folder` (the importing file's) is not on the import path: that is said instead."""
    if not isinstance(err, ModuleNotFoundError) or not err.name:
        return ""
    import importlib.util

    top = err.name.split(".")[0]
    if folder is not None and (os.path.isfile(os.path.join(folder, top + ".py"))
                               or os.path.isdir(os.path.join(folder, top))):
        return f" (it is in {folder}, which is not on the import path: add that folder to PYTHONPATH)"
    try:
        installed = importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        installed = False
    if installed:
        return ""
    dist = _DISTRIBUTIONS.get(err.name, _DISTRIBUTIONS.get(top, top))
    return f" (it is not installed: `pip install {dist}`)"


def user_code_error(err: BaseException, doing: str) -> SourceError:
    """What to report when the user's program raised `err` (or exited) while SOLAR was `doing` something
    with it (importing it, building its model or inputs): located at the user's innermost line."""
    frames = user_frames(err)
    where = frames[-1] if frames else None
    notes: list[tuple[str, SourceLine]] = []
    if isinstance(err, SyntaxError) and err.filename and err.lineno:
        col = err.offset or 1
        syntax_at = SourceLine(err.filename, err.lineno, col, (err.text or "").rstrip("\n")
                               or linecache.getline(err.filename, err.lineno).rstrip("\n"))
        if where is not None and where.file != err.filename:
            notes.append((f"imported here, {doing}", where))
        return SourceError(f"syntax error: {err.msg}", syntax_at, notes)
    if isinstance(err, ProgramError):
        return SourceError(str(err), where)
    if isinstance(err, SystemExit):
        return SourceError(f"the program called sys.exit({err.code!r}) {doing}: a program to translate must "
                           "return, not exit", where)
    if isinstance(err, ImportError):
        name = f"'{err.name}'" if err.name else "a module"
        folder = os.path.dirname(os.path.abspath(where.file)) if where is not None else None
        return SourceError(f"cannot import {name} {doing}: {err}{install_hint(err, folder)}", where)
    return SourceError(f"the program raised {type(err).__name__} {doing}: {err}", where)


# ---- IR a frontend emitted that does not verify: a bug in SOLAR, at the op that emitted it ------------


class _Attributing(Verifier):
    """The verifier, remembering for each error the innermost op being checked that a framework op emitted."""

    def __init__(self, diagnostics: DiagnosticEngine, origin: dict[int, tuple[str, SourceLine | None]]) -> None:
        super().__init__(diagnostics)
        self.origin = origin
        self.at: Checked | None = None
        self.found: list[tuple[Checked | None, str]] = []

    def op(self, op: Checked, for_vars: set[str]) -> None:
        outer = self.at
        if id(op) in self.origin or outer is None:
            self.at = op
        try:
            super().op(op, for_vars)
        finally:
            self.at = outer

    def error(self, message: str, loc: Location, notes: list[Any] | None = None) -> None:
        self.found.append((self.at, message))
        super().error(message, loc, notes)


def verify_emitted(module: Op, origin: dict[int, tuple[str, SourceLine | None]]) -> list[Problem]:
    """Verifies the IR a frontend emitted; each error becomes an internal problem at the user's line of the
    framework op that emitted the failing op (`origin`: id of a top-level op → the op's name and line),
    naming both ops. Empty when the module verifies."""
    checker = _Attributing(DiagnosticEngine(), origin)
    checker.module(module)
    problems: list[Problem] = []
    for op, message in checker.found:
        name, where = origin.get(id(op), (None, None))
        src = op.src_loc if op is not None else None
        if where is None and src is not None:
            where = source_line(src.file, src.line, src.col)
        what = f"{op.opname} emitted by {name}" if name else (op.opname if op is not None else "the module")
        problems.append(Problem(name or "verifier", f"the emitted IR does not verify: {what}: {message} "
                                "(a bug in SOLAR: please report it)", where, internal=True))
    return problems
