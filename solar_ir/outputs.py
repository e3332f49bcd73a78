"""Writing output files atomically: into a temporary file beside the target, then one rename.

A run that fails, or is interrupted, leaves the file it would have written as it was (the input included,
when `-o` names the input). Paths that are not regular files (`/dev/null`, a FIFO, a terminal) are written in
place, since renaming over them would replace a device node with a file.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any


class OutputError(Exception):
    """An output file cannot be written: one line for users, naming the path and why."""


def _is_special(path: Path) -> bool:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def check_writable(path: str | os.PathLike[str], what: str = "output") -> None:
    """Raises OutputError when `path` cannot be written: it is a directory, or its directory is missing.

    Tools call this before doing any work, so a typo in an output path costs no analysis time."""
    target = Path(path)
    try:
        is_dir = target.is_dir()
    except OSError as err:  # a name too long for the file system (ENAMETOOLONG), a loop of links
        raise OutputError(f"cannot write {what} '{path}': {err.strerror or err}") from None
    if is_dir:
        raise OutputError(f"cannot write {what} '{path}': it is a directory")
    if _is_special(target):
        return
    parent = target.parent
    if not parent.is_dir():
        raise OutputError(f"cannot write {what} '{path}': no such directory '{parent}'")
    if not os.access(parent, os.W_OK):
        raise OutputError(f"cannot write {what} '{path}': the directory '{parent}' is not writable")


def _final_mode(path: Path) -> int:
    """The mode the new file gets: the replaced file's, else what `open` would give under the umask."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


class _Stage:
    """The files a run has written, not yet renamed over their targets: (temporary, target, what)."""

    def __init__(self) -> None:
        self.files: list[tuple[str, Path, str]] = []
        self.targets: set[Path] = set()


_STAGES: list[_Stage] = []


def _discard(files: list[tuple[str, Path, str]]) -> None:
    for tmp, _, _ in files:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


@contextlib.contextmanager
def staged_outputs() -> Iterator[Callable[[], None]]:
    """Within the block, files written with `atomic_path` (and the helpers over it) are kept beside their
    targets and renamed over them only when the yielded `commit()` is called; whatever was not committed
    when the block ends is removed, so a run that fails replaces none of its output files."""
    stage = _Stage()
    _STAGES.append(stage)

    def commit() -> None:
        files, stage.files = stage.files, []
        stage.targets.clear()
        for i, (tmp, target, what) in enumerate(files):
            try:
                os.replace(tmp, target)
            except OSError as err:
                _discard(files[i:])
                raise OutputError(f"cannot write {what} '{target}': {err.strerror or err}") from None

    try:
        yield commit
    finally:
        _STAGES.remove(stage)
        _discard(stage.files)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], what: str = "output") -> Iterator[str]:
    """Yields a temporary path beside `path` (same extension, so writers that infer a format from it
    still do); when the block ends without an exception it is renamed to `path`, else removed. Inside
    `staged_outputs()` the rename waits for its commit (a target written twice gets the last content)."""
    target = Path(path)
    check_writable(target, what)
    stage = _STAGES[-1] if _STAGES else None
    if stage is not None:
        key = Path(os.path.abspath(target))
        if key in stage.targets:  # written again (by a later --split-input-file chunk): the last one wins
            _discard([f for f in stage.files if Path(os.path.abspath(f[1])) == key])
            stage.files = [f for f in stage.files if Path(os.path.abspath(f[1])) != key]
        stage.targets.add(key)
    if _is_special(target):
        try:
            yield str(target)
        except OSError as err:
            raise OutputError(f"cannot write {what} '{path}': {err.strerror or err}") from None
        return
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.stem[:40]}.",
                                   suffix=f".tmp{target.suffix[:16]}")
    except OSError as err:
        raise OutputError(f"cannot write {what} '{path}': {err.strerror or err}") from None
    os.close(fd)
    try:
        yield tmp
        os.chmod(tmp, _final_mode(target))
        if stage is not None:
            stage.files.append((tmp, target, what))
            return
        os.replace(tmp, target)
    except OSError as err:
        raise OutputError(f"cannot write {what} '{path}': {err.strerror or err}") from None
    finally:
        if stage is None or not any(f[0] == tmp for f in stage.files):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w", what: str = "output") -> Iterator[IO]:
    """`open(path, mode)` (text as UTF-8) whose content only replaces `path` once the block succeeds."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open writes whole files: mode 'w' or 'wb', not {mode!r}")
    with atomic_path(path, what) as tmp:
        try:
            fh = open(tmp, mode, encoding=None if "b" in mode else "utf-8")  # noqa: SIM115
        except OSError as err:
            raise OutputError(f"cannot write {what} '{path}': {err.strerror or err}") from None
        with fh:
            yield fh


def write_text_atomic(path: str | os.PathLike[str], text: str, what: str = "output") -> None:
    with atomic_open(path, "w", what) as fh:
        fh.write(text)


def save_figure(fig: Any, path: str | os.PathLike[str], what: str, **kwargs: Any) -> None:
    """`fig.savefig(path)` (matplotlib) atomically; the format comes from the extension (PNG without one)."""
    fmt = Path(path).suffix[1:].lower() or "png"
    if fmt not in fig.canvas.get_supported_filetypes():
        raise OutputError(f"cannot write {what} '{path}': unknown image format '.{fmt}' "
                          f"(use {', '.join('.' + f for f in sorted(fig.canvas.get_supported_filetypes()))})")
    with atomic_path(path, what) as tmp:
        fig.savefig(tmp, format=fmt, **kwargs)
