"""What solar-opt does with its input, as a library: split, parse, verify, run a pipeline, print, and the
`--verify-diagnostics` check (MLIR's `// expected-error {{...}}` comments)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .diagnostics import Diagnostic, DiagnosticEngine, DiagnosticError, Location, SourceManager
from .ops import ModuleOp
from .outputs import OutputError
from .parser import parse_module
from .pass_manager import Pass, PassContext, PassManager, PassTiming
from .printer import print_module
from .startup import bulk_objects, fewer_collections, heap_frozen, unfreeze_heap
from .verifier import verify

SPLIT_MARKER = re.compile(r"^// -----\s*$", re.M)
EXPECTED = re.compile(r"//\s*expected-(error|warning|remark|note)(@[-+]?\d+|@above|@below)?\s*\{\{(.*?)\}\}")


class EmitError(ValueError):
    """An output format (`solar-opt --emit=...`) cannot express the module; the message is for the user."""


@dataclass
class OptOptions:
    verify_each: bool = True
    print_after_all: bool = False
    print_after: set[str] = field(default_factory=set)
    verify_diagnostics: bool = False
    # Renders the module after the pipeline instead of printing it as SIR (solar-opt --emit=dot, ...).
    emit: Callable[[ModuleOp], str] | None = None


@dataclass
class ChunkResult:
    output: str | None  # the printed module, None when processing stopped at an error
    diagnostics: DiagnosticEngine
    timings: list[PassTiming]
    ok: bool


def split_input(text: str) -> list[tuple[str, int]]:
    """Splits at `// -----` lines; each chunk keeps the line number where it starts."""
    chunks: list[tuple[str, int]] = []
    start, line = 0, 1
    for m in SPLIT_MARKER.finditer(text):
        chunks.append((text[start:m.start()], line))
        line += text.count("\n", start, m.end()) + 1
        start = m.end() + 1
    chunks.append((text[start:], line))
    return chunks


def process(text: str, file: str, first_line: int, passes: list[Pass], options: OptOptions,
            sources: SourceManager, dump: Callable[[str], None], report: Callable[[str], None]) -> ChunkResult:
    # The parsed module lives through the whole pipeline: it is built without the cyclic collector and kept
    # out of its collections (frozen) until the chunk is done, when whatever of it is garbage may go. Only
    # where nothing else froze objects (a translation in this process), so that unfreezing is ours to do.
    own = not heap_frozen()
    try:
        with fewer_collections():
            return _process(text, file, first_line, passes, options, sources, dump, report, own)
    finally:
        if own:
            unfreeze_heap()


def _process(text: str, file: str, first_line: int, passes: list[Pass], options: OptOptions,
             sources: SourceManager, dump: Callable[[str], None], report: Callable[[str], None],
             freeze: bool) -> ChunkResult:
    engine = DiagnosticEngine(sources)
    timings: list[PassTiming] = []
    try:
        start = time.perf_counter()
        with bulk_objects(freeze):
            module = parse_module(text, file, engine, first_line)
        timings.append(PassTiming("(parse)", time.perf_counter() - start))
        if engine.has_errors:
            # Undefined values: verify anyway so that every error of the input is reported at once.
            verify(module, engine)
            return ChunkResult(None, engine, timings, False)
        start = time.perf_counter()
        ok = verify(module, engine)
        timings.append(PassTiming("(verify)", time.perf_counter() - start))
        if not ok:
            return ChunkResult(None, engine, timings, False)
        manager = PassManager(passes, options.verify_each, options.print_after_all, options.print_after, dump)
        ctx = PassContext(engine, report)
        try:
            module = manager.run(module, ctx)
        finally:
            timings.extend(manager.timings)
        start = time.perf_counter()
        if options.emit is not None:
            try:
                output = options.emit(module)
            except (EmitError, OutputError) as err:
                engine.error(str(err), module.loc)
                return ChunkResult(None, engine, timings, False)
        else:
            output = print_module(module)
        timings.append(PassTiming("(print)", time.perf_counter() - start))
        return ChunkResult(output, engine, timings, True)
    except DiagnosticError:
        return ChunkResult(None, engine, timings, False)


@dataclass
class Expected:
    severity: str
    message: str
    line: int
    loc: Location
    matched: bool = False


def expected_diagnostics(text: str, file: str, first_line: int) -> list[Expected]:
    found: list[Expected] = []
    lines = text.split("\n")
    for i, line_text in enumerate(lines):
        line = first_line + i
        for m in EXPECTED.finditer(line_text):
            offset = m.group(2)
            target = line
            if offset == "@above":
                target = line - 1
            elif offset == "@below":
                target = line + 1
            elif offset is not None:
                spec = offset[1:]
                target = line + int(spec) if spec[0] in "+-" else int(spec)
            found.append(Expected(m.group(1), m.group(3), target, Location(file, line, m.start() + 1)))
    return found


def check_expected(produced: list[Diagnostic], expected: list[Expected]) -> list[Diagnostic]:
    """Pairs produced diagnostics with expectations (same severity and line, message contains the text)."""
    problems: list[Diagnostic] = []
    for diag in _flatten(produced):
        match = next((e for e in expected if not e.matched and e.severity == diag.severity
                      and e.line == diag.loc.line and e.message in diag.message), None)
        if match is None:
            if diag.severity != "note":
                problems.append(Diagnostic("error", f"unexpected {diag.severity}: {diag.message}", diag.loc))
        else:
            match.matched = True
    for e in expected:
        if not e.matched:
            problems.append(Diagnostic("error", f"expected {e.severity} \"{e.message}\" was not produced on "
                                       f"line {e.line}", e.loc))
    return problems


def _flatten(diags: list[Diagnostic]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for d in diags:
        out.append(d)
        out.extend(_flatten(d.notes))
    return out
