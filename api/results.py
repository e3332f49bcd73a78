"""`Analysis`: the one model of an analysis's results, and its views (terminal, JSON, HTML, Jupyter, pandas,
the roofline PNG). Every view renders the same numbers: the `--sol-report` document and the reports it is
built from (docs/python-api.md)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from solar.errors import BadInputError, BadOptionError, OutputPathError, SweepSpecError, UnknownTargetError, kind_of

if TYPE_CHECKING:
    from solar.backends.report import TargetReport
    from solar.backends.sol_results import SolResults
    from solar.backends.source_lines import LineCost

MODES = ("unfused", "fused", "whole_graph")


@dataclass(frozen=True)
class Origin:
    """Where the analysed program came from: its frontend, its source file and its size parameters."""

    frontend: str  # torch | jax | sir
    file: str
    params: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ModeTotal:
    """One mode's SOL on one target."""

    target: str
    mode: str  # unfused | fused | whole_graph | cache_aware
    seconds: float
    bound: str  # tensor | vector | memory | none
    flops: int
    bytes: int


@dataclass(frozen=True)
class UnitCost:
    """One unit of execution (a kernel as the framework runs it): counts, and its SOL per target."""

    name: str
    kind: str
    flops: int
    bytes: int
    seconds: dict[str, float]  # per target
    bound: dict[str, str]
    source: str | None  # file:line of the user's code that made it (relative to the working directory if inside)
    module: str | None = None  # the model's module that made it (`attn.qkv`), where the frontend recorded one


@dataclass(frozen=True)
class ModuleCost:
    """One node of the model's module tree (fvcore's table): the sums over the units made inside it."""

    path: str  # "" for the model itself
    depth: int
    flops: int
    bytes: int
    unfused_s: float
    fused_s: float  # its units' parts of the fusion groups' times (split as by_source_line splits them)
    units: int


@dataclass(frozen=True)
class GroupCost:
    """One fusion group: counts, its SOL per target, and the source lines of its units."""

    name: str
    flops: int
    bytes: int
    seconds: dict[str, float]
    bound: dict[str, str]
    lines: list[str]


class Analysis:
    """The speed of light of one program on one or more targets (what `solar.analyze` returns)."""

    def __init__(self, name: str, targets: list[str], totals: dict[str, dict[str, ModeTotal]], units: list[UnitCost],
                 groups: list[GroupCost], sir: str, origin: Origin, results: SolResults) -> None:
        self.name = name
        self.targets = targets  # the targets' catalogue names (h100-sxm for h100)
        self.totals = totals  # target → mode → ModeTotal
        self.units = units
        self.groups = groups
        self.sir = sir  # the analysed module's SIR text (as translated, before the passes)
        self.origin = origin
        self.results = results  # the one model of the results (backends/sol_results.py); the rest are views
        self._document = results.document
        self._reports = results.reports
        self.live: tuple[Any, tuple[Any, ...]] | None = None  # the program and its inputs, for bench()
        self.make_live: Callable[[], tuple[Any, tuple[Any, ...]]] | None = None  # builds `live` when first needed
        self.measured: dict[str, Any] | None = None  # set by bench()
        self.sweeps: list[dict[str, Any]] = []  # the documents of sweep(), in order
        self.training: Any = None  # a training step's report by phase (solar.training.TrainingReport)
        self._surface: Any = None  # the CostSurface, built on the first sweep

    @classmethod
    def from_run(cls, results: SolResults, sir: str, origin: Origin) -> Analysis:
        """The API's view of the results model the --sol pass built."""
        from solar.backends.report import unit_module, unit_place
        from solar.backends.source_lines import group_lines

        reports = results.reports
        totals = {r.name: {m: ModeTotal(r.name, m, res.seconds, res.bound, res.flops, res.bytes)
                           for m, res in r.modes.items()} for r in reports}
        for r in reports:
            if r.cache_aware is not None and r.cache_aware.mode is not None:
                res = r.cache_aware.mode
                totals[r.name]["cache_aware"] = ModeTotal(r.name, "cache_aware", res.seconds, res.bound, res.flops,
                                                          res.bytes)
        first = reports[0]
        units = []
        for k, (w, _) in enumerate(first.units):
            units.append(UnitCost(w.name, w.kind, w.flops, w.total_bytes,
                                  {r.name: r.units[k][1].seconds for r in reports},
                                  {r.name: r.units[k][1].bound for r in reports}, unit_place(w) or None,
                                  unit_module(w)))
        spans = group_lines(first)
        groups = [GroupCost(w.name, w.flops, w.total_bytes, {r.name: r.groups[k][1].seconds for r in reports},
                            {r.name: r.groups[k][1].bound for r in reports}, spans.get(w.name, []))
                  for k, (w, _) in enumerate(first.groups)]
        return cls(results.name, [r.name for r in reports], totals, units, groups, sir, origin, results)

    # ---- figures ----------------------------------------------------------------------------------------
    def total(self, mode: str = "fused", target: str | None = None) -> float:
        """The SOL in seconds of one mode on one target (the first when None; a catalogue alias such as
        `h100` names its target)."""
        modes = self.totals[self._target(target)]
        if not isinstance(mode, str) or mode not in modes:
            raise BadOptionError(f"no mode {mode!r} in this analysis (it has {', '.join(modes)})")
        return modes[mode].seconds

    def _target(self, target: str | None) -> str:
        """The catalogue name of `target` among this analysis's targets (the first when None)."""
        if target is None:
            return self.targets[0]
        if target in self.targets:
            return target
        if isinstance(target, str):
            from solar.targets.loader import TargetError, load_target

            try:
                name = load_target(target).name
            except TargetError:
                name = None
            if name in self.targets:
                return name
        raise UnknownTargetError(f"no target {target!r} in this analysis (it has {', '.join(self.targets)})")

    def by_source_line(self, target: str | None = None) -> list[LineCost]:
        """The program's source lines, costliest (fused SOL) first, on one target (the first when None)."""
        from solar.backends.source_lines import by_source_line

        return by_source_line(self._report(target)).lines

    def by_module(self, target: str | None = None) -> list[ModuleCost]:
        """The units rolled up the model's module tree, as fvcore's table shows it: the model (""), then each
        module path and every prefix of it, in tree order; units with no module count at the model only."""
        from solar.backends.sol_verdict import unit_shares

        report = self._report(target)
        fused = unit_shares(report)
        nodes: dict[str, list[float]] = {"": [0, 0, 0.0, 0.0, 0]}
        for k, (w, t) in enumerate(report.units):
            path = self.units[k].module or ""
            parts = path.split(".") if path else []
            for n in range(len(parts) + 1):
                node = nodes.setdefault(".".join(parts[:n]), [0, 0, 0.0, 0.0, 0])
                node[0] += w.flops
                node[1] += w.total_bytes
                node[2] += t.seconds
                node[3] += fused[k]
                node[4] += 1
        seen = {p: n for n, p in enumerate(nodes)}  # first appearance, in program order

        def tree_order(path: str) -> list[int]:  # each ancestor's appearance, then its own: parents first
            parts = path.split(".") if path else []
            return [seen[".".join(parts[:n])] for n in range(1, len(parts) + 1)]

        from solar.module_table import ModuleTable  # its repr is the table; its rows stay ModuleCost

        return ModuleTable(ModuleCost(p, p.count(".") + 1 if p else 0, int(v[0]), int(v[1]), v[2], v[3], int(v[4]))
                           for p, v in sorted(nodes.items(), key=lambda kv: tree_order(kv[0])))

    def _report(self, target: str | None) -> TargetReport:
        name = self._target(target)
        return next(r for r in self._reports if r.name == name)

    @property
    def document(self) -> dict[str, Any]:
        """The `--sol-report` document itself (to_json() returns a copy with the measurement and sweeps)."""
        return self._document

    # ---- views ------------------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """The `--sol-report` document (docs/sol.md), with the measurement and sweeps when there are any."""
        return self.results.json(self.measured, self.sweeps)

    @property
    def verdict(self) -> list[str]:
        """What bounds the program on each target, the headroom where measured, and the top three places to
        act with their gains (docs/sol.md, "Verdict")."""
        return self.results.verdict(self.measured)

    def save_json(self, path: str) -> None:
        from solar.backends.report import write_json

        with _output_errors():
            write_json(self.to_json(), _path(path))

    def to_html(self, path: str | None = None, fragment: bool = False) -> str:
        """The HTML report (one self-contained page); written atomically to `path` when given. `fragment`:
        the report's one root element with its scoped styles, as a notebook shows it."""
        from solar.backends.html_report import report_inputs
        from solar.backends.html_svg import sweep_curves
        from solar.ir.outputs import write_text_atomic

        inputs = report_inputs(self.origin.file, self.origin.params or self._document["params"], self.targets,
                               f"solar.analyze(<{self.origin.frontend} program>, targets={tuple(self.targets)!r})")
        page = self.results.html(inputs, self.measured, [c for doc in self.sweeps for c in sweep_curves(doc)],
                                 fragment)
        if path is not None:
            with _output_errors():
                write_text_atomic(_path(path), page, "the HTML report")
        return page

    def plot(self, path: str) -> None:
        """The roofline PNG, one panel per target (labels never overlap); after `bench()`, each framework mode's
        achieved point under its roof, joined to the fused SOL's."""
        with _output_errors():
            self.results.plot(_path(path), self.measured)

    def to_pandas(self, table: str = "units") -> Any:
        """A DataFrame of `units`, `groups`, `lines` or `totals` (pandas is optional: installed, it works)."""
        if table not in ("units", "groups", "lines", "totals"):
            raise BadOptionError(f"no table {table!r}: choose units, groups, lines or totals")
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("Analysis.to_pandas needs pandas: pip install pandas") from None
        if table == "units":
            rows = [{"name": u.name, "module": u.module, "kind": u.kind, "flops": u.flops, "bytes": u.bytes,
                     "source": u.source,
                     **{f"{t}_s": s for t, s in u.seconds.items()}} for u in self.units]
        elif table == "groups":
            rows = [{"name": g.name, "flops": g.flops, "bytes": g.bytes, "lines": ", ".join(g.lines),
                     **{f"{t}_s": s for t, s in g.seconds.items()}} for g in self.groups]
        elif table == "lines":
            rows = [{"file": ln.file, "line": ln.line, "code": ln.code, "flops": ln.flops, "bytes": ln.bytes,
                     "unfused_s": ln.unfused_s, "fused_s": ln.fused_s} for ln in self.by_source_line()]
        else:
            rows = [vars(m) for per in self.totals.values() for m in per.values()]
        return pd.DataFrame(rows)

    def __rich__(self) -> Any:
        from rich.console import Group
        from rich.text import Text

        return Group(Text(self.results.terminal(self.measured)))

    def _repr_html_(self) -> str:
        return self.to_html(fragment=True)

    def __repr__(self) -> str:
        from solar.backends.report import seconds

        t = self.targets[0]
        # With several targets the times are the first one's, and say so; with one the header names it.
        which = f" on {t}" if len(self.targets) > 1 else ""
        return (f"<Analysis @{self.name} on {', '.join(self.targets)}: unfused {seconds(self.total('unfused', t))}, "
                f"fused {seconds(self.total('fused', t))}{which}>")

    # ---- more work on the same program ------------------------------------------------------------------
    def bench(self, frameworks: tuple[str, ...] = ("eager",), device: str = "auto", budget_s: float = 1.0,
              warmup: int = 2, min_runs: int = 3, lines: bool = True) -> dict[str, Any]:
        """Measures the live program as `solar-bench` does (docs/bench.md): its times per framework mode, the
        headroom over every SOL mode of the measuring machine's target, the violations, and (PyTorch eager
        on the CPU, `lines`) each source line's measured share. The record is kept in `measured` and shown by
        every view."""
        from solar.measuring import Measurable, bench_analysis, check_options

        if self.live is None and self.make_live is not None:
            check_options(self.origin.frontend, frameworks, device, budget_s, warmup, min_runs)  # before building
            self.live = self.make_live()
        program = Measurable(self.live, self.origin.frontend, self.sir, dict(self.origin.params), self._document)
        self.measured = bench_analysis(program, frameworks, device, budget_s, warmup, min_runs, lines)
        return self.measured


    def sweep(self, axes: Mapping[str, Sequence[int] | str] | None = None, /, latency: str | None = None,
              **sizes: Sequence[int] | str) -> dict[str, Any]:
        """Every mode on every target at every point of a grid of size parameters, from the symbolic counts
        (backends/sweep.py: a point costs a formula's evaluation, not a run of the passes). Each size takes a
        list of values or a range as `--sweep` writes it (`"1..1024*2"`). Returns the `--sweep-report`
        document (records, crossovers); the HTML report draws its curves."""
        from solar.backends.sweep import CostSurface, SweepError
        from solar.backends.sweep_report import run_sweep, sweep_json
        from solar.backends.sweep_spec import parse_sweep
        from solar.ir.outputs import OutputError
        from solar.passes.sol import parse_latency
        from solar.targets.loader import load_target

        if axes is not None and not isinstance(axes, Mapping):
            raise SweepSpecError(f"sweep: give the sizes as keywords, sweep(BATCH='1..64*2'), or as a dict of them, "
                                 f"not {kind_of(axes)}")
        if latency is not None and not isinstance(latency, str):
            raise SweepSpecError(f"sweep: latency takes a time with its unit, such as '2ms', not {latency!r}")
        wanted = {**(axes or {}), **sizes}
        try:
            grid = {name: parse_sweep(f"{name}={values}")[1] if isinstance(values, str) else _points(name, values)
                    for name, values in wanted.items()}
            if not grid:
                raise SweepError("give at least one size to sweep, e.g. sweep(BATCH='1..64*2')")
            latency_s = parse_latency(latency) if latency else None
            if self._surface is None:
                self._surface = CostSurface(self.results.program, [load_target(t) for t in self.targets],
                                            fp32_precision=self._document["fp32_precision"],
                                            precision_floor=self._document.get("precision_floor"))
            doc = sweep_json(run_sweep(self._surface, grid, latency_s), self.name)
        except SweepSpecError:
            raise
        except (SweepError, ValueError, OutputError) as err:
            raise SweepSpecError(f"sweep: {err}") from None
        self.sweeps.append(doc)
        return doc


def _points(name: str, values: Any) -> list[int]:
    """The sizes of one swept parameter given as a sequence: whole numbers only (a float is never rounded)."""
    import numbers

    if isinstance(values, numbers.Integral) and not isinstance(values, bool):
        raise SweepSpecError(f"sweep: {name}={values} is one size, not a sweep: give a list such as [{values}] or "
                             "a range such as '1..64*2'")
    if not isinstance(values, Sequence) or isinstance(values, bytes):
        raise SweepSpecError(f"sweep: {name} takes a list of sizes or a range such as '1..64*2', not "
                             f"{kind_of(values)}")
    for v in values:
        if not isinstance(v, numbers.Integral) or isinstance(v, bool):
            raise SweepSpecError(f"sweep: {name} takes whole numbers, not {v!r}")
    return [int(v) for v in values]


def _path(path: Any) -> str:
    import os

    if not isinstance(path, str | os.PathLike):
        raise BadInputError(f"a report path must be a string or a path, not {kind_of(path)}")
    return os.fspath(path)


class _output_errors:
    """An OutputError of a lower floor as the API's OutputPathError (the same one-line message)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, err: BaseException | None, tb: Any) -> bool:
        from solar.ir.outputs import OutputError

        if isinstance(err, OutputError):
            raise OutputPathError(str(err)) from None
        return False
