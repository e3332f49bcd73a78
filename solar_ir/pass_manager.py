"""Passes, their options, pipelines (`a,b{opt=v}`) and the pass manager that runs them with verification,
IR dumps and timing."""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import time
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from .diagnostics import DiagnosticEngine, DiagnosticError

if TYPE_CHECKING:
    from .ops import ModuleOp


class PassOptionError(ValueError):
    """A bad pipeline, pass name or option; the message is meant for the user."""


@dataclass(slots=True)
class PassContext:
    diagnostics: DiagnosticEngine
    # Passes print reports (tables, summaries) here; solar-opt sends it to stderr.
    report: Callable[[str], None] = print
    # Results that later passes read (e.g. the SOL report), by pass name.
    results: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Pass:
    """Base of every pass: a frozen dataclass whose fields are its options and whose `name` is its flag.

    `primary_option` names the option set by `--name=VALUE` when VALUE has no '=' (as in `--sol=h100`).
    A pass with `free_options` takes any `key=value` (collected into the field named `options`).
    """

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    primary_option: ClassVar[str | None] = None
    free_options: ClassVar[bool] = False

    def apply(self, ctx: PassContext, module: ModuleOp) -> ModuleOp | None:
        """Transforms or analyses `module` in place (or returns a replacement)."""
        raise NotImplementedError

    @classmethod
    def option_names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls) if f.name != "options" or not cls.free_options]

    @classmethod
    def from_options(cls, options: dict[str, str]) -> Pass:
        kwargs: dict[str, Any] = {}
        free: dict[str, str] = {}
        hints = typing.get_type_hints(cls)
        names = cls.option_names()
        for key, raw in options.items():
            if key in names:
                kwargs[key] = _coerce(cls.name, key, raw, hints.get(key, str))
            elif cls.free_options:
                free[key] = raw
            else:
                close = difflib.get_close_matches(key, names, n=1)
                hint = f"; did you mean '{close[0]}'?" if close else (
                    f" (options: {', '.join(names)})" if names else " (it takes no options)")
                raise PassOptionError(f"unknown option '{key}' for pass '{cls.name}'{hint}")
        if cls.free_options:
            kwargs["options"] = free
        return cls(**kwargs)

    def describe(self) -> str:
        """The pass as written in a pipeline, with its non-default options."""
        opts = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "options" and self.free_options:
                opts.extend(f"{k}={v}" for k, v in value.items())
            elif f.default is dataclasses.MISSING or value != f.default:
                opts.append(f"{f.name}={str(value).lower() if isinstance(value, bool) else value}")
        return self.name + ("{" + " ".join(opts) + "}" if opts else "")


def _coerce(pass_name: str, key: str, raw: str, kind: Any) -> Any:
    kind = typing.get_args(kind)[0] if typing.get_origin(kind) is typing.Union else kind
    try:
        if kind is bool:
            if raw.lower() in ("1", "true", "yes", "on", ""):
                return True
            if raw.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if kind is int:
            return int(raw)
        if kind is float:
            return float(raw)
    except ValueError:
        raise PassOptionError(f"option '{key}' of pass '{pass_name}' expects {kind.__name__}, not '{raw}'") from None
    return raw


class PassRegistry:
    """Maps pass names to 'module:Class' paths, imported only when the pass is used."""

    def __init__(self, table: dict[str, str]) -> None:
        self.table = dict(table)

    def names(self) -> list[str]:
        return sorted(self.table)

    def load(self, name: str) -> type[Pass]:
        path = self.table.get(name)
        if path is None:
            close = difflib.get_close_matches(name, self.table, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else " (see --list-passes)"
            raise PassOptionError(f"unknown pass '{name}'{hint}")
        module_name, cls_name = path.split(":")
        cls = getattr(importlib.import_module(module_name), cls_name)
        return cls

    def create(self, name: str, options: dict[str, str] | None = None, primary: str | None = None) -> Pass:
        cls = self.load(name)
        opts = dict(options or {})
        if primary is not None:
            if cls.primary_option is None:
                raise PassOptionError(f"pass '{name}' takes no value; write options as --{name}=key=value")
            opts[cls.primary_option] = primary
        return cls.from_options(opts)

    def parse_pipeline(self, text: str) -> list[Pass]:
        return [self.create(name, options) for name, options in split_pipeline(text)]


def split_pipeline(text: str) -> list[tuple[str, dict[str, str]]]:
    """`a,b{x=1 y=2},c{z=3,w=4}` → [('a', {}), ('b', {'x': '1', 'y': '2'}), ('c', {...})]."""
    items: list[tuple[str, dict[str, str]]] = []
    depth, start = 0, 0
    pieces: list[str] = []
    for pos, ch in enumerate(text):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth < 0:
                raise PassOptionError(f"unbalanced '}}' in pipeline '{text}'")
        elif ch == "," and depth == 0:
            pieces.append(text[start:pos])
            start = pos + 1
    if depth != 0:
        raise PassOptionError(f"unbalanced '{{' in pipeline '{text}'")
    pieces.append(text[start:])
    for piece in pieces:
        piece = piece.strip()
        if not piece:
            continue
        name, _, rest = piece.partition("{")
        options: dict[str, str] = {}
        if rest:
            if not rest.endswith("}"):
                raise PassOptionError(f"expected '}}' at the end of '{piece}'")
            options = parse_options(rest[:-1], name.strip())
        items.append((name.strip(), options))
    return items


def parse_options(text: str, pass_name: str) -> dict[str, str]:
    """`a=1 b=2`, `a=1,b=2`, a bare flag `c` (true), and list values `target=h100,b200` (a comma-separated
    piece without '=' continues the previous value)."""
    options: dict[str, str] = {}
    for chunk in text.split():
        last: str | None = None
        for piece in chunk.split(","):
            key, eq, value = piece.partition("=")
            if eq:
                options[key.strip()] = value.strip()
                last = key.strip()
            elif last is not None:
                options[last] += "," + piece.strip()
            elif piece.strip():
                options[piece.strip()] = "true"  # a bare flag, as mlir-opt accepts
    return options


@dataclass
class PassTiming:
    name: str
    seconds: float


class PassManager:
    def __init__(self, passes: list[Pass], verify_each: bool = True, print_after_all: bool = False,
                 print_after: set[str] | None = None, dump: Callable[[str], None] = print) -> None:
        self.passes = passes
        self.verify_each = verify_each
        self.print_after_all = print_after_all
        self.print_after = print_after or set()
        self.dump = dump
        self.timings: list[PassTiming] = []

    def run(self, module: ModuleOp, ctx: PassContext) -> ModuleOp:
        """Runs the pipeline; stops with DiagnosticError at the first pass that reports an error or leaves
        the module invalid."""
        from .printer import print_module  # here, so that reading the registry (--help) loads no IR code
        from .verifier import verify

        for p in self.passes:
            start = time.perf_counter()
            result = p.apply(ctx, module)
            if result is not None:
                module = result
            self.timings.append(PassTiming(p.name, time.perf_counter() - start))
            if ctx.diagnostics.has_errors:
                raise DiagnosticError(ctx.diagnostics.diagnostics, ctx.diagnostics.sources)
            if self.verify_each:
                start = time.perf_counter()
                ok = verify(module, ctx.diagnostics)
                self.timings.append(PassTiming(f"(verify after {p.name})", time.perf_counter() - start))
                if not ok:
                    ctx.diagnostics.error(f"the IR is invalid after pass '{p.name}' (errors above)", module.loc)
                    raise DiagnosticError(ctx.diagnostics.diagnostics, ctx.diagnostics.sources)
            if self.print_after_all or p.name in self.print_after:
                self.dump(f"// -----// IR Dump After {p.describe()} //----- //\n{print_module(module)}")
        return module
