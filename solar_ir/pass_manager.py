"""Passes, their options, pipelines (`a,b{opt=v}`) and the pass manager that runs them with verification,
IR dumps and timing; the analysis manager that caches what passes compute about a module; and the kit every
pass uses (diagnostics prefixed with the pass's name, the bound-parameter check). docs/writing-a-pass.md
shows all of it on a real pass."""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import importlib.metadata
import importlib.util
import inspect
import os
import re
import string
import sys
import time
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from .diagnostics import DiagnosticEngine, DiagnosticError

if TYPE_CHECKING:
    from .diagnostics import Location
    from .ops import ModuleOp


_PASS_NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")  # a pass's name is its flag


class PassOptionError(ValueError):
    """A bad pipeline, pass name or option; the message is meant for the user."""


A = TypeVar("A")


class AnalysisManager:
    """Analyses of a module, computed once and shared by the passes that ask for them, by type and options.

    An analysis is any class built from the module and keyword options (`Kind(module, **options)`, e.g.
    `CostModel(module, fp32_precision="tf32")`, `KernelModels`, `Tilings`). Two requests share one analysis
    when they name the same class and the same options, an option left out counting as its default (so
    `CostModel` and `CostModel` with `fp32_precision="framework"` are one). The pass manager forgets every
    analysis after a pass that may change the IR (one whose `preserves_analyses` is false), so a pass never
    sees an analysis of an IR that is gone."""

    def __init__(self) -> None:
        self._cache: dict[tuple[type, tuple[tuple[str, Any], ...]], tuple[ModuleOp, Any]] = {}
        self.computed: list[type] = []  # every analysis built, in order (what a cache miss cost)

    def get(self, kind: type[A], module: ModuleOp, **options: Any) -> A:
        key = (kind, _option_key(kind, options))
        hit = self._cache.get(key)
        if hit is not None and hit[0] is module:
            return hit[1]
        value = kind(module, **options)  # type: ignore[call-arg]
        self._cache[key] = (module, value)
        self.computed.append(kind)
        return value

    def cached(self, kind: type[A], **options: Any) -> A | None:
        hit = self._cache.get((kind, _option_key(kind, options)))
        return None if hit is None else hit[1]

    def invalidate(self) -> None:
        self._cache.clear()


@cache
def _option_defaults(kind: type) -> tuple[tuple[str, Any], ...]:
    """The keyword options an analysis class takes after the module, with their defaults."""
    params = list(inspect.signature(kind).parameters.values())[1:]
    return tuple((p.name, p.default) for p in params if p.default is not inspect.Parameter.empty)


def _option_key(kind: type, options: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The options of one request with the defaults filled in, in a fixed order (the cache key)."""
    defaults = _option_defaults(kind)
    unknown = set(options) - {name for name, _ in defaults}
    if unknown:
        raise TypeError(f"{kind.__name__} takes no option {', '.join(sorted(unknown))}")
    return tuple((name, options.get(name, default)) for name, default in defaults)


R = TypeVar("R")


class PassResults:
    """What passes leave for later passes and callers (the SOL results model, a tiling, a reordering), one
    value per type, found by its type as analyses are: `ctx.results.put(value)`, `ctx.results.get(Kind)`.
    `Kind` may be a base class that a later pass knows without importing the pass that leaves the value
    (--sol reads `CacheAwareSearch`, which --tile-search's result is)."""

    __slots__ = ("_by_type",)

    def __init__(self) -> None:
        self._by_type: dict[type, object] = {}

    def put(self, value: object) -> None:
        self._by_type[type(value)] = value

    def get(self, kind: type[R]) -> R | None:
        value = self._by_type.get(kind)
        if isinstance(value, kind):
            return value
        return next((v for v in self._by_type.values() if isinstance(v, kind)), None)

    def __getitem__(self, kind: type[R]) -> R:
        value = self.get(kind)
        if value is None:
            raise KeyError(f"no pass left a {kind.__name__}")
        return value

    def __contains__(self, kind: type) -> bool:
        return self.get(kind) is not None


@dataclass(slots=True)
class PassContext:
    diagnostics: DiagnosticEngine
    # Passes print reports (tables, summaries) here; solar-opt sends it to stderr.
    report: Callable[[str], None] = print
    # Results that later passes and callers read (e.g. the SOL results model), by type.
    results: PassResults = field(default_factory=PassResults)
    analyses: AnalysisManager = field(default_factory=AnalysisManager)

    def analysis(self, kind: type[A], module: ModuleOp, **options: Any) -> A:
        """The analysis `kind` of `module` with `options`, computed on first use and kept until a pass changes
        the IR."""
        return self.analyses.get(kind, module, **options)


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
    # Passes whose work this one reads. The pass manager stops with a clear error, before any pass runs, when
    # one is neither earlier in the pipeline nor already done on the input (`prerequisite_met`); it does not
    # schedule missing passes itself, so a pipeline always runs exactly the passes it names.
    requires: ClassVar[tuple[str, ...]] = ()
    # True for a pass that changes no IR the analyses read (it only reports, or adds attributes): the
    # analyses computed before it stay valid after it.
    preserves_analyses: ClassVar[bool] = False
    # True for a pass that leaves a valid module valid: it changes nothing the verifier reads (it only
    # reports, or adds attributes that no op checks). The pass manager does not verify again after it.
    preserves_validity: ClassVar[bool] = False

    def apply(self, ctx: PassContext, module: ModuleOp) -> ModuleOp | None:
        """Transforms or analyses `module` in place (or returns a replacement)."""
        raise NotImplementedError

    def prerequisite_met(self, name: str, module: ModuleOp) -> bool:
        """Whether the input already shows the work of the prerequisite `name` (for instance einsums for
        lift-einsum), when that pass is not earlier in the pipeline. By default it does not."""
        return False

    # ---- the kit: what every pass repeats ------------------------------------------------------------
    def error(self, ctx: PassContext, message: str, loc: Location) -> None:
        """An error in this pass's name (`tile-search: ...`); the pass manager stops after the pass."""
        ctx.diagnostics.error(f"{self.name}: {message}", loc)

    def warning(self, ctx: PassContext, message: str, loc: Location) -> None:
        ctx.diagnostics.warning(f"{self.name}: {message}", loc)

    def remark(self, ctx: PassContext, message: str, loc: Location) -> None:
        ctx.diagnostics.remark(f"{self.name}: {message}", loc)

    def bound_params(self, ctx: PassContext, module: ModuleOp) -> dict[str, int] | None:
        """The value of every size parameter, or None after reporting the unbound ones: a pass that counts
        or prices needs every size, and --bind-params gives those without a default."""
        missing = [p.name for p in module.params if p.default is None]
        if missing:
            self.error(ctx, f"size parameters {', '.join(missing)} need values: bind them with "
                            f"--bind-params={missing[0]}=...", module.loc)
            return None
        return module.param_values()

    def option_errors(self) -> list[str]:
        """Options outside their choices: an option typed `Literal["a", "b"]` takes one of those values."""
        problems = []
        hints = typing.get_type_hints(type(self))
        for f in dataclasses.fields(self):
            choices = literal_choices(hints.get(f.name))
            value = getattr(self, f.name)
            if choices is not None and value not in choices:
                problems.append(f"{self.name}: {f.name} must be one of {', '.join(map(str, choices))}, not '{value}'")
        return problems

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


def literal_choices(kind: Any) -> tuple[Any, ...] | None:
    """The values of a `Literal[...]` option type (None for any other type)."""
    return typing.get_args(kind) if typing.get_origin(kind) is Literal else None


def option_type_name(kind: Any) -> str:
    """How --list-passes shows an option's type: `greedy|producer-consumer|none` for a Literal."""
    choices = literal_choices(kind)
    if choices is not None:
        return "|".join(map(str, choices))
    return getattr(kind, "__name__", str(kind))


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


@dataclass(frozen=True)
class NamedPipeline:
    """A pipeline with a name, usable like a pass (`--sol-pipeline=b200`, `-p 'sol-pipeline{target=b200}'`):
    `text` is a pipeline in which `$option` stands for an option's value (`options` holds the defaults)."""

    text: str
    summary: str
    options: dict[str, str] = field(default_factory=dict)
    primary_option: str | None = None

    def expand(self, given: dict[str, str], primary: str | None = None, name: str = "") -> str:
        values = dict(self.options)
        if primary is not None:
            if self.primary_option is None:
                raise PassOptionError(f"pipeline '{name}' takes no value; write options as --{name}=key=value")
            given = {**given, self.primary_option: primary}
        for key, value in given.items():
            if key not in values:
                raise PassOptionError(f"unknown option '{key}' for pipeline '{name}'"
                                      + (f" (options: {', '.join(values)})" if values else " (it takes no options)"))
            values[key] = value
        return string.Template(self.text).substitute(values)


class PassRegistry:
    """Maps pass names to 'module:Class' paths, imported only when the pass is used, and names pipelines.

    Out-of-tree passes come from plugins: installed distributions that declare an entry point in the group
    `entry_point_group` (name = the pass's flag, value = 'module:Class'), found the first time a name is
    looked up that is not built in, and single files given to `load_plugin_file`. A plugin pass whose name
    is already taken is an error naming both sides."""

    def __init__(self, table: dict[str, str], pipelines: dict[str, NamedPipeline] | None = None,
                 entry_point_group: str | None = None) -> None:
        self.table = dict(table)
        self.pipelines = dict(pipelines or {})
        self.origins: dict[str, str] = dict.fromkeys(self.table, "built-in")  # where each pass comes from
        self.entry_point_group = entry_point_group
        self._discovered = entry_point_group is None

    def names(self) -> list[str]:
        self.discover_plugins()
        return sorted(self.table)

    def knows(self, name: str) -> bool:
        """A pass or a named pipeline (both are flags of solar-opt and names in -p)."""
        if name in self.table or name in self.pipelines:
            return True
        self.discover_plugins()
        return name in self.table

    def _register(self, name: str, path: str, origin: str) -> None:
        if name in self.table or name in self.pipelines:
            where = self.origins.get(name, "a named pipeline")
            raise PassOptionError(f"pass '{name}' of {origin} clashes with the pass of that name from {where}")
        self.table[name] = path
        self.origins[name] = origin

    def discover_plugins(self) -> None:
        """Registers the passes of installed plugin distributions (once; reading their metadata imports none)."""
        if self._discovered:
            return
        self._discovered = True
        for ep in importlib.metadata.entry_points(group=self.entry_point_group or ""):
            dist = ep.dist.name if ep.dist is not None else "an unknown distribution"
            self._register(ep.name, ep.value, f"plugin {dist}")

    def load_plugin_file(self, path: str) -> list[str]:
        """Imports one Python file and registers every pass class it defines; their names, sorted."""
        self.discover_plugins()  # a file's pass may clash with an installed one: say so either way
        module_name = "solar_plugin_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None or not os.path.isfile(path):
            raise PassOptionError(f"cannot load pass plugin '{path}': no such Python file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except (Exception, SystemExit) as err:  # the plugin's own error (or exit), reported as one line
            del sys.modules[module_name]
            what = (f"it called sys.exit({err.code!r})" if isinstance(err, SystemExit)
                    else f"{type(err).__name__}: {err}")
            raise PassOptionError(f"cannot load pass plugin '{path}': {what}") from None
        classes = [cls for cls in vars(module).values()
                   if isinstance(cls, type) and issubclass(cls, Pass) and cls.__module__ == module_name and cls.name]
        for cls in classes:
            if not isinstance(cls.name, str) or not _PASS_NAME.fullmatch(cls.name):
                raise PassOptionError(f"pass plugin '{path}': class {cls.__name__} has the name {cls.name!r}; a "
                                      "pass's name is its flag: lowercase words joined by '-', e.g. 'my-pass'")
            try:
                typing.get_type_hints(cls)  # what from_options reads
            except Exception as err:  # e.g. an annotation that names no type
                raise PassOptionError(f"pass plugin '{path}': the options of {cls.__name__} cannot be read: "
                                      f"{type(err).__name__}: {err}") from None
        found = sorted((cls.name, cls.__name__) for cls in classes)
        if not found:
            raise PassOptionError(f"pass plugin '{path}' defines no pass (a Pass subclass with a name)")
        for name, cls_name in found:
            self._register(name, f"{module_name}:{cls_name}", f"plugin file {path}")
        return [name for name, _ in found]

    def expand(self, name: str, options: dict[str, str] | None = None, primary: str | None = None) -> list[Pass]:
        """The passes a pass or named pipeline flag stands for."""
        pipeline = self.pipelines.get(name)
        if pipeline is None:
            return [self.create(name, options, primary)]
        return self.parse_pipeline(pipeline.expand(options or {}, primary, name))

    def load(self, name: str) -> type[Pass]:
        path = self.table.get(name)
        if path is None and name not in self.pipelines:
            self.discover_plugins()
            path = self.table.get(name)
        if path is None:
            close = difflib.get_close_matches(name, [*self.table, *self.pipelines], n=1)
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
        return [p for name, options in split_pipeline(text) for p in self.expand(name, options)]


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

    def check_requirements(self, module: ModuleOp, ctx: PassContext) -> None:
        """Reports every prerequisite missing from the pipeline (see `Pass.requires`) and stops."""
        for k, p in enumerate(self.passes):
            earlier = {q.name for q in self.passes[:k]}
            for need in p.requires:
                if need not in earlier and not p.prerequisite_met(need, module):
                    ctx.diagnostics.error(f"{p.name} needs {need} earlier in the pipeline: write --{need} before "
                                          f"--{p.name} (or -p '{need},{p.name}')", module.loc)
        if ctx.diagnostics.has_errors:
            raise DiagnosticError(ctx.diagnostics.diagnostics, ctx.diagnostics.sources)

    @staticmethod
    def _apply(p: Pass, ctx: PassContext, module: ModuleOp) -> ModuleOp | None:
        """`p.apply`; a plugin pass's own failure (an exception, sys.exit, a result that is no module) is
        one error naming the plugin: it is the plugin's bug, not SOLAR's."""
        origin = type(p).__module__
        if origin.split(".")[0] == "solar":
            return p.apply(ctx, module)
        origin = getattr(sys.modules.get(origin), "__file__", None) or origin  # the plugin's file, where known
        try:
            result = p.apply(ctx, module)
        except (Exception, SystemExit) as err:
            what = (f"called sys.exit({err.code!r})" if isinstance(err, SystemExit)
                    else f"{type(err).__name__}: {err}")
            ctx.diagnostics.error(f"pass '{p.name}' of plugin {origin} failed: {what}", module.loc)
            raise DiagnosticError(ctx.diagnostics.diagnostics, ctx.diagnostics.sources) from None
        from .ops import ModuleOp as Module  # here, as in run: reading the registry (--help) loads no IR code

        if result is not None and not isinstance(result, Module):
            ctx.diagnostics.error(f"pass '{p.name}' of plugin {origin} returned {type(result).__name__}: apply "
                                  "must return None or a ModuleOp", module.loc)
            raise DiagnosticError(ctx.diagnostics.diagnostics, ctx.diagnostics.sources)
        return result

    def run(self, module: ModuleOp, ctx: PassContext) -> ModuleOp:
        """Runs the pipeline; stops with DiagnosticError at the first pass that reports an error or leaves
        the module invalid."""
        self.check_requirements(module, ctx)
        from .printer import print_module  # here, so that reading the registry (--help) loads no IR code
        from .verifier import verify

        for p in self.passes:
            for problem in p.option_errors():
                ctx.diagnostics.error(problem, module.loc)
            if ctx.diagnostics.has_errors:
                raise DiagnosticError(ctx.diagnostics.diagnostics, ctx.diagnostics.sources)
            start = time.perf_counter()
            result = self._apply(p, ctx, module)
            if result is not None:
                module = result
            if result is not None or not p.preserves_analyses:
                ctx.analyses.invalidate()
            self.timings.append(PassTiming(p.name, time.perf_counter() - start))
            if ctx.diagnostics.has_errors:
                raise DiagnosticError(ctx.diagnostics.diagnostics, ctx.diagnostics.sources)
            if self.verify_each and not (result is None and p.preserves_validity):
                start = time.perf_counter()
                ok = verify(module, ctx.diagnostics)
                self.timings.append(PassTiming(f"(verify after {p.name})", time.perf_counter() - start))
                if not ok:
                    ctx.diagnostics.error(f"the IR is invalid after pass '{p.name}' (errors above)", module.loc)
                    raise DiagnosticError(ctx.diagnostics.diagnostics, ctx.diagnostics.sources)
            if self.print_after_all or p.name in self.print_after:
                self.dump(f"// -----// IR Dump After {p.describe()} //----- //\n{print_module(module)}")
        return module
