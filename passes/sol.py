"""--sol=TARGET: the speed-of-light report (unfused, fused, whole graph), as a table, JSON, IR attributes
and a roofline plot."""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from solar.backends.cost import FP32_POLICIES, CostError, CostModel, Peaks, Timing, Work
from solar.backends.gather_estimates import data_id_gathers
from solar.backends.precision_policy import PRECISION_FLOORS
from solar.backends.report import TargetReport, analyse, write_json
from solar.backends.sol_results import CacheAwareSearch, SolResults, WrittenOrder
from solar.backends.sweep_spec import SweepError, check_axes, check_design, parse_design_space, parse_sweeps
from solar.ir import attr_names
from solar.ir.analysis.access_checks import refuse_wrong_accesses
from solar.ir.analysis.liveness import drop_dead, has_dead_code
from solar.ir.diagnostics import Location
from solar.ir.ops import EinsumOp, GroupOp, KernelOp, ModuleOp, Op, SymbolRef
from solar.ir.outputs import OutputError, write_text_atomic
from solar.ir.pass_manager import Pass, PassContext
from solar.passes.fuse import Fuse
from solar.passes.inline import Inline
from solar.targets.loader import TargetError, load_target
from solar.targets.target import Target

if TYPE_CHECKING:
    from solar.backends.sweep import CostSurface

# The sweep, design-space and HTML modules (the tiling model and its MILP among their imports) are imported
# where --formula, --sweep, --design-space or --html asks for them: a plain --sol run does not pay for them.

_LATENCY = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(s|ms|us|µs|ns)?\s*\Z")
_SCALE = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def parse_latency(text: str) -> float:
    """A positive, finite time with its unit: `2ms`, `500us`, `0.1s` (a bare number is refused: 2 what?)."""
    m = _LATENCY.match(text)
    if not m or float(m.group(1)) <= 0:
        raise ValueError(f"bad latency '{text}': write a positive number with a unit, such as 2ms, 500us or 0.1s")
    if m.group(2) is None:
        raise ValueError(f"bad latency '{text}': give a unit (s, ms, us or ns), such as {m.group(1)}ms")
    value = float(m.group(1)) * _SCALE[m.group(2)]
    if not math.isfinite(value):
        raise ValueError(f"bad latency '{text}': too large for a float (a latency is a finite time)")
    return value


def target_location(err: TargetError) -> Location | None:
    """Where a target problem is: the YAML file (and line, where known), not the IR."""
    if not err.file or not Path(err.file).is_file():
        return None
    return Location(err.file, getattr(err, "line", None) or 1, getattr(err, "col", None) or 1)


def unplaced(err: TargetError) -> str:
    """The message without its leading `file:` or `file:line:col:`, which the diagnostic's location says."""
    text = str(err)
    m = re.match(re.escape(err.file or "") + r"(?::\d+(?::\d+)?)?: ", text)
    return text[m.end():] if m else text


@dataclass(frozen=True)
class SOL(Pass):
    """Computes the speed of light of the entry function on one or more targets (`target=h100,b200`;
    a name from --list-targets, `host`, or a path to a YAML file) and prints the report (docs/sol.md).
    Annotates every unit's first op, every fusion group and the module with its times.

    Before:  %y = solar.einsum @fc ... (no cost attributes)
    After:   %y = solar.einsum @fc ... attributes {sol = [{target = "h100-sxm", time_s = 1.2e-06,
             bound = memory, flops = ..., bytes = ...}]}
    """

    name = "sol"
    summary = "Speed-of-light report on a target (h100, b200, host, a YAML file; comma-separated for several)"
    preserves_analyses = True  # it reports and annotates; the IR the analyses read is unchanged
    preserves_validity = True  # its `sol` attributes are read by no op's checks
    primary_option = "target"
    target: str = "h100"
    fp32_precision: str = "framework"  # how f32 contractions are priced: framework | highest | tf32
    allow_tf32: bool = False  # the same as fp32_precision=tf32
    precision_floor: str = ""  # the lowest precision a contraction may be priced at: tf32 | bf16 | fp16 | fp8
    report: str = ""  # a path for the JSON report
    html: str = ""  # a path for the HTML report (docs/html-report.md)
    command: str = ""  # the command line, for the HTML report's inputs section
    plot: str = ""  # a path for the roofline PNG
    latency: str = ""  # a latency target for the inverse roofline, e.g. 2ms
    annotate: bool = True
    formula: bool = False  # print each mode's roofline as max(F/Π, B/β) with the count formulas
    sweep: str = ""  # sizes to sweep, `;`-separated: BATCH=1..1024*2;CTX=512..131072*2 (docs/sweeps.md)
    sweep_report: str = ""  # a path for the sweep's JSON (one record per point, target and mode)
    sweep_plot: str = ""  # a path for the sweep's PNG (SOL against the first swept size)
    design_space: str = ""  # scaled targets: bandwidth=0.5..8x,compute=0.5..8x[,l2=..] (needs latency)
    design_plot: str = ""  # a path for the design space's heat maps (PNG)
    max_points: int = 0  # the most points of a sweep (0: 10^6, or 10^3 with the cache-aware mode)

    @property
    def policy(self) -> str:
        return "tf32" if self.allow_tf32 else self.fp32_precision

    def apply(self, ctx: PassContext, module: ModuleOp) -> None:
        """Prices the program once (the results model), then hands the model to the views asked for."""
        checked = self._checked_options(ctx, module)
        if checked is None:
            return
        latency, targets = checked
        priced = self._price(ctx, module, targets, latency)
        if priced is None:
            return
        results, originals, has_calls = priced
        ctx.results.put(results)
        try:
            self._views(ctx, results, module, targets, latency)
        except (OutputError, SweepError) as err:
            ctx.diagnostics.error(f"sol: {err}", module.loc)
            return
        except CostError as err:
            ctx.diagnostics.error(f"sol: {err}", err.loc or (err.op.loc if err.op is not None else module.loc))
            return
        if self.annotate:
            _annotate(module, results.reports, originals, has_calls)

    def _checked_options(self, ctx: PassContext, module: ModuleOp) -> tuple[float | None, list[Target]] | None:
        """The latency and the targets, with every option checked before any work (None: an error said why)."""
        if self.policy not in FP32_POLICIES:
            ctx.diagnostics.error(f"sol: bad fp32-precision '{self.fp32_precision}': expected one of "
                                  f"{', '.join(FP32_POLICIES)}", module.loc)
            return None
        if self.precision_floor and self.precision_floor not in PRECISION_FLOORS:
            ctx.diagnostics.error(f"sol: bad precision floor '{self.precision_floor}': expected one of "
                                  f"{', '.join(PRECISION_FLOORS)}", module.loc)
            return None
        try:
            latency = parse_latency(self.latency) if self.latency else None
            targets = [load_target(name.strip()) for name in self.target.split(",") if name.strip()]
        except ValueError as err:
            ctx.diagnostics.error(f"sol: {err}", module.loc)
            return None
        except TargetError as err:
            loc = target_location(err)
            ctx.diagnostics.error(f"sol: {unplaced(err) if loc else err}", loc or module.loc)
            return None
        if not targets:
            ctx.diagnostics.error("sol: no target given (e.g. --sol=h100)", module.loc)
            return None
        tiling = ctx.results.get(CacheAwareSearch)
        try:  # a bad sweep is reported before any work
            check_axes([p.name for p in module.params], self._axes(), cache_aware=tiling is not None,
                       max_points=self.max_points or None)
            if self.design_space:
                check_design(parse_design_space(self.design_space), cache_aware=tiling is not None,
                             max_points=self.max_points or None)
        except SweepError as err:
            ctx.diagnostics.error(f"sol: {err}", module.loc)
            return None
        return latency, targets

    def _price(self, ctx: PassContext, module: ModuleOp, targets: list[Target], latency: float | None
               ) -> tuple[SolResults, dict[int, Op], bool] | None:
        """The pricing step: the results model (with the written order after --reorder-einsum and the
        cache-aware mode after --tile-search), the original op of each priced copy, and whether calls were
        inlined (None: an error said why)."""
        # Costing works on the whole program: calls are inlined on a copy (the IR itself is unchanged).
        has_calls = any(op.opname == "solar.call" for op in module.walk())
        work = module
        if has_calls:
            work = copy.deepcopy(module)
            Inline().apply(ctx, work)
        if refuse_wrong_accesses(ctx, work, self.name):  # what --lift-affine finds: no bound for a wrong program
            return None
        work, originals = _without_dead_code(ctx, work, module)
        try:
            # The accesses were checked just above (dropping dead code only removes problems): not again.
            model = ctx.analysis(CostModel, work, fp32_precision=self.policy, check_accesses=False)
            reports = [analyse(model, Peaks(t, self.precision_floor), latency) for t in targets]
            for estimate in data_id_gathers(model):  # the least rows are far from a typical input's: say so
                ctx.diagnostics.remark(f"sol: {estimate.sentence()}", originals.get(id(estimate.op), estimate.op).loc)
        except CostError as err:
            loc = err.loc or (err.op.loc if err.op is not None else module.loc)
            ctx.diagnostics.error(f"sol: {err}", loc)
            return None
        reordered = ctx.results.get(WrittenOrder)
        if reordered is not None:  # --reorder-einsum ran: the written order too, for comparison
            try:
                before = CostModel(_as_costed(ctx, reordered.original, module), self.policy)
                for r in reports:
                    r.before_reorder = analyse(before, r.peaks, latency)
            except CostError as err:
                ctx.diagnostics.remark(f"sol: no figures for the order before --reorder-einsum: {err}", module.loc)
        tiling = ctx.results.get(CacheAwareSearch)
        if tiling is not None:  # the cache-aware mode, under the buffer --tile-search was given
            for r in reports:
                why = tiling.add_cache_aware(ctx, r, model)
                if why is not None:
                    ctx.diagnostics.remark(f"sol: no cache-aware mode on {r.name}: {why}", module.loc)
        base_dir = str(Path(module.loc.file).parent) if module.loc is not None else None
        try:
            results = SolResults.build(model, reports, module.name or model.func.name, self.policy, base_dir,
                                       self.precision_floor or None)
        except CostError as err:
            ctx.diagnostics.error(f"sol: {err}", err.loc or (err.op.loc if err.op is not None else module.loc))
            return None
        return results, originals, has_calls

    def _views(self, ctx: PassContext, results: SolResults, module: ModuleOp, targets: list[Target],
               latency: float | None) -> None:
        """The views of the results model the options ask for: terminal, JSON, PNG, formulas, sweeps, HTML."""
        ctx.report(results.terminal())
        surface = None
        if self.formula or self.sweep or self.design_space:
            from solar.backends.sweep import CostSurface

            tiling = ctx.results.get(CacheAwareSearch)
            surface = CostSurface(results.program, targets, fp32_precision=self.policy,
                                  precision_floor=self.precision_floor or None,
                                  buffer=tiling.buffer if tiling is not None else None,
                                  max_points=self.max_points or None, check_accesses=False)
        if self.report:
            doc = results.json()
            if self.formula and surface is not None:  # added within version 1 (docs/sweeps.md)
                from solar.backends.sweep_report import formulas_json

                doc["formulas"] = formulas_json(surface)
            write_json(doc, self.report)
        if self.plot:
            results.plot(self.plot)
        if surface is not None and self.formula:
            from solar.backends.sweep_report import render_formulas

            ctx.report(render_formulas(surface))
        if surface is not None and (self.sweep or self.design_space):
            self._sweep(ctx, surface, results.name, latency)
        if self.html:  # last: it shows the sweep's curves too
            from solar.backends.sweep_report import SweepOutcome, curves

            swept = ctx.results.get(SweepOutcome)
            drawn = curves(swept) if swept is not None and swept.sweep.swept else None
            write_text_atomic(self.html, results.html(self.inputs(module), curves=drawn), "the HTML report")

    def inputs(self, module: ModuleOp) -> dict[str, Any]:
        """What the HTML report says the run was made of."""
        from solar.backends.html_report import module_params, report_inputs

        return report_inputs(module.loc.file if module.loc is not None else "", module_params(module),
                             [t.strip() for t in self.target.split(",") if t.strip()], self.command)

    def _axes(self) -> dict[str, list[int]]:
        return parse_sweeps([s for s in self.sweep.split(";") if s.strip()])

    def _sweep(self, ctx: PassContext, surface: CostSurface, name: str, latency: float | None) -> None:
        """--sweep / --design-space: every mode on every target at every point (backends/sweep_report.py)."""
        from solar.backends.design_space import plot_designs
        from solar.backends.sweep_report import plot_sweep, render_sweep, run_sweep, write_sweep_report

        axes = self._axes()
        design = parse_design_space(self.design_space) if self.design_space else None
        if design is not None and latency is None:
            raise SweepError("--design-space needs --target-latency (the latency the scaled targets must meet)")
        outcome = run_sweep(surface, axes, latency, design)
        ctx.report(render_sweep(outcome))
        ctx.results.put(outcome)
        if self.sweep_report:
            write_sweep_report(outcome, name, self.sweep_report)
        if self.sweep_plot:
            if not outcome.sweep.swept:
                raise SweepError("--sweep-plot needs a --sweep (the size on the plot's x axis)")
            plot_sweep(outcome, self.sweep_plot)
        if self.design_plot:
            if not outcome.designs:
                raise SweepError("--design-plot needs --design-space and --target-latency")
            plot_designs(outcome.designs, self.design_plot)


def _annotate(module: ModuleOp, reports: list[TargetReport], originals: dict[int, Op], has_calls: bool) -> None:
    """Per-op numbers go on the ops the model saw; with inlined calls those are copies, so then only the module
    gets its totals. Data-moving ops (concat, gather, scatter, insert) have a fixed attribute set, so only
    kernels and einsums carry their unit's numbers (all units are in the report and the JSON)."""
    if not has_calls:
        for k, (w, _) in enumerate(reports[0].units):
            if w.ops and isinstance(w.ops[0], KernelOp | EinsumOp):
                originals.get(id(w.ops[0]), w.ops[0]).attrs[attr_names.SOL] = [
                    _times(r.name, *r.units[k]) for r in reports]
        for k, (w, _) in enumerate(reports[0].groups):
            originals.get(id(w.ops[0]), w.ops[0]).attrs[attr_names.SOL] = [
                _cached(_times(r.name, *r.groups[k]), r, k) for r in reports]
    module.attrs[attr_names.SOL] = [
        {"target": r.name, **{f"{m}_s": res.seconds for m, res in r.modes.items()}, "fusion_gain": r.fusion_gain,
         **({"cache_aware_s": r.cache_aware.mode.seconds} if r.cache_aware is not None else {})}
        for r in reports]


def _without_dead_code(ctx: PassContext, work: ModuleOp, module: ModuleOp) -> tuple[ModuleOp, dict[int, Op]]:
    """`work` without the units whose results reach no output (on a copy, with a remark on each), and the
    op of `module` each op of the copy stands for (by id), for the annotations."""
    if not has_dead_code(work):
        return work, {}
    if work is module:
        work = copy.deepcopy(module)
        originals = {id(c): o for c, o in zip(work.walk(), module.walk(), strict=True)}
    else:
        originals = {}  # an inlined copy already: only the module is annotated
    said: set[str] = set()
    for op in drop_dead(work):
        if not isinstance(op, KernelOp | EinsumOp) and not op.moves_data:
            continue  # views and structure: no work of their own
        kernel = op.attrs.get(attr_names.KERNEL)
        if isinstance(op, KernelOp | EinsumOp):
            # A piece of a lifted kernel is named with the kernel: other pieces of it may well be live.
            name = f"@{op.symbol}" + (f" (of kernel @{kernel.name})" if isinstance(kernel, SymbolRef)
                                      and kernel.name != op.symbol else "")
        else:
            name = f"{op.opname.split('.')[-1]} %{op.results[0].name}"
        if name not in said:
            said.add(name)
            ctx.diagnostics.remark(f"sol: {name} is dead code: its result reaches no output of the function, so "
                                   "it is not priced", originals.get(id(op), op).loc)
    return work, originals


def _as_costed(ctx: PassContext, original: ModuleOp, current: ModuleOp) -> ModuleOp:
    """The module as it was before --reorder-einsum, inlined and fused as the current one is, so that both
    orders are priced alike."""
    work = copy.deepcopy(original)
    if any(op.opname == "solar.call" for op in work.walk()):
        Inline().apply(ctx, work)
    drop_dead(work)
    groups = [op for op in current.walk() if isinstance(op, GroupOp)]
    if groups and not any(isinstance(op, GroupOp) for op in work.walk()):
        mode = groups[0].attrs.get("mode", "greedy")
        Fuse(mode=str(mode)).apply(ctx, work)
    return work


def _cached(entry: dict[str, Any], report: TargetReport, k: int) -> dict[str, Any]:
    """A group's entry with its cache-aware bytes, when that mode was computed (after --tile-search)."""
    ca = report.cache_aware
    if ca is not None:
        work = report.groups[k][0]
        row = next((row for w, row in zip(ca.originals, ca.rows, strict=True) if w is work), None)
        if row is not None:
            entry["cache_aware_bytes"] = row["bytes"]
    return entry


def _times(target: str, work: Work, timing: Timing) -> dict[str, Any]:
    return {"target": target, "time_s": timing.seconds, "bound": timing.bound, "flops": work.flops,
            "bytes": work.total_bytes}
