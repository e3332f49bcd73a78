"""--tile-search: the least DRAM traffic of every einsum, kernel and fusion group under an on-chip buffer,
the tiling chosen by scipy.optimize.milp (docs/tiling.md, docs/design/tiling.md); optionally the curve of least
traffic against buffer size (JSON and PNG)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path
from typing import Any

import islpy as isl
from rich.console import Console
from rich.table import Table

from solar.backends.cost import CostModel
from solar.backends.report import TargetReport
from solar.backends.sol_results import CacheAwareSearch
from solar.backends.tiling_cache import CachedChains, SolveCache
from solar.backends.tiling_ir import (
    CURVE_BUFFERS,
    DEFAULT_BUDGET,
    GroupResult,
    IRChains,
    Tilings,
    add_cache_aware,
    curve,
    describe,
    einsum_units,
    group_result,
    resolve_buffer,
)
from solar.backends.tiling_problem import Mapping, SearchStopped, Unfusable
from solar.ir import attr_names
from solar.ir.analysis.units import units_of
from solar.ir.einsum_spec import SpecError
from solar.ir.ops import EinsumOp, FuncOp, GroupOp, ModuleOp, Op
from solar.ir.outputs import OutputError, save_figure, write_text_atomic
from solar.ir.pass_manager import Pass, PassContext
from solar.passes.sol import target_location, unplaced
from solar.targets.loader import TargetError, load_target

CURVE_SCHEMA = "solar.tile-curve"
CURVE_VERSION = 1


@dataclass
class TileSearchResult(CacheAwareSearch):
    """What later passes read (`ctx.results.get(CacheAwareSearch)`): the buffer asked for, resolved, and the
    rows."""

    buffer: str  # as written: l2, smem or a size (--sol resolves it again for each of its targets)
    capacity: float
    target: str
    einsums: list[dict[str, Any]] = field(default_factory=list)
    groups: list[dict[str, Any]] = field(default_factory=list)

    def add_cache_aware(self, ctx: PassContext, report: TargetReport, model: CostModel) -> str | None:
        """--sol's cache-aware mode on one target's report, under the buffer this search was given (resolved
        again for that target), reusing the tilings this search found (the `Tilings` analysis) where the
        buffer is the same size; why the mode is not available there, or None."""
        return add_cache_aware(report, model, self.buffer, ctx.analysis(Tilings, model.module))


@dataclass(frozen=True)
class TileSearch(Pass):
    """For every einsum, every kernel lifted into several einsums and every fusion group: the least DRAM
    traffic any tiling of the documented space achieves with an on-chip buffer of `buffer` bytes (`l2`,
    `smem` = shared memory per SM × SMs, of `target`; or a size such as 4MiB), found with
    scipy.optimize.milp. A group is also tiled as one fused nest whose intermediates stay on chip; its
    saving over the per-einsum bound is reported. The chosen tiling is printed on the IR. `curve=FILE.json`
    writes least traffic against buffer size (64 KiB … 256 MiB) for each einsum and group, and a PNG beside.

    Before:  %c = solar.einsum @mm "ik,kj->ij" (%a as A, %b as B) -> (C: tensor<4096x4096xf32>) { C += A * B }
    After:   %c = solar.einsum @mm ... attributes {tiling = {buffer = 52428800, traffic = 268435456,
             compulsory = 201326592, peak = 52166656, tiles = {i = 2048, k = 1, j = 4096}, order = [i, k],
             loads = {A = 2, B = 2, C = 2}}} { C += A * B }
    """

    name = "tile-search"
    summary = "Least DRAM traffic of each einsum and fusion group under a buffer (buffer=l2|smem|<bytes>), by MILP"
    preserves_analyses = True  # it reports and annotates; the IR the analyses read is unchanged
    primary_option = "buffer"
    buffer: str = "l2"
    target: str = "h100"
    curve: str = ""  # a path for the curve JSON; the PNG goes next to it
    annotate: bool = True
    budget: float = DEFAULT_BUDGET  # seconds per tiling problem; 0: no limit

    def apply(self, ctx: PassContext, module: ModuleOp) -> None:
        try:
            target = load_target(self.target)
            capacity = resolve_buffer(self.buffer, target)
        except TargetError as err:  # located in the target's YAML file, as --sol places it
            loc = target_location(err)
            self.error(ctx, unplaced(err) if loc else str(err), loc or module.loc)
            return
        except ValueError as err:
            self.error(ctx, str(err), module.loc)
            return
        values = self.bound_params(ctx, module)
        if values is None:
            return
        if self.budget < 0:
            self.error(ctx, f"budget must be a number of seconds >= 0 (0: no limit), not {self.budget:g}", module.loc)
            return
        budget = self.budget or None
        tilings = ctx.analysis(Tilings, module)
        tilings.set_budget(budget)
        result = TileSearchResult(self.buffer, capacity, target.name)
        curves: dict[str, list[dict[str, Any]]] = {"einsums": [], "groups": []}
        cache = SolveCache()  # identical einsum shapes (every block of a network) are solved once
        for func in module.funcs:
            chains = CachedChains(func, values, cache, budget)
            for op in func.walk():
                if isinstance(op, EinsumOp):
                    self._einsum(ctx, chains, op, capacity, result, curves)
            for name, kind, anchor, ops in _chains(func.body):
                self._chain(ctx, tilings, func, name, kind, anchor, ops, capacity, result, curves)
        ctx.results.put(result)
        report = _render(result, self.buffer, target.name)
        if cache.hits:
            report += (f"{cache.solves} distinct tiling problems solved; {cache.hits} more answered from them "
                       "(the same einsum shapes)\n")
        ctx.report(report)
        if self.curve:
            try:
                self._write_curve(module, result, curves)
            except OutputError as err:
                ctx.diagnostics.error(f"tile-search: {err}", module.loc)

    # -- one einsum, one chain ------------------------------------------------------------------------
    def _einsum(self, ctx: PassContext, chains: CachedChains, op: EinsumOp, capacity: float,
                result: TileSearchResult, curves: dict[str, list[dict[str, Any]]]) -> None:
        try:
            space, m = chains.solve_space(op.symbol, [op], capacity)
        except (SpecError, Unfusable, ValueError, isl.Error) as err:
            self.remark(ctx, f"@{op.symbol} is not modelled: {err}", op.loc)
            return
        except SearchStopped as err:
            self.remark(ctx, f"@{op.symbol}: {err} (the cache-aware bound does not depend on the search)", op.loc)
            return
        row: dict[str, Any] = {"name": f"@{op.symbol}", "compulsory": space.compulsory,
                               "traffic": None if m is None else m.traffic, "mapping": m, "space": space}
        result.einsums.append(row)
        if m is not None and self.annotate:
            op.attrs[attr_names.TILING] = describe(m, space)
        if self.curve:
            points = curve(lambda c: _traffic(space.solve(c)))
            curves["einsums"].append({"name": f"@{op.symbol}", "compulsory": space.compulsory, "traffic": points})

    def _chain(self, ctx: PassContext, tilings: Tilings, func: FuncOp, name: str, kind: str, anchor: Op,
               ops: list[Op], capacity: float, result: TileSearchResult,
               curves: dict[str, list[dict[str, Any]]]) -> None:
        units = einsum_units(ops)
        if not units:
            self.remark(ctx, f"{kind} {name} is not modelled: it holds ops other than einsums", anchor.loc)
            return
        chains = tilings.chains(func)
        try:
            res = tilings.group(func, name.lstrip("@"), units, capacity)
        except (SpecError, ValueError, isl.Error) as err:
            self.remark(ctx, f"{kind} {name} is not modelled: {err}", anchor.loc)
            return
        if res.stopped is not None:
            self.remark(ctx, f"{kind} {name}: {res.stopped}; "
                        + ("its pieces are tiled apart" if res.cut is not None else "the per-kernel figures stand")
                        + " (the cache-aware bound does not depend on the search)", anchor.loc)
        result.groups.append({"name": name, "kind": kind, "result": res})
        if self.annotate:
            key = attr_names.TILING if kind == "group" else attr_names.KERNEL_TILING
            anchor.attrs[key] = _group_attr(res, chains, name, units)
        if self.curve:
            results = {c: group_result(chains, name.lstrip("@"), units, c) for c in CURVE_BUFFERS}
            entry: dict[str, Any] = {"name": name, "kind": kind,
                                     "traffic": curve(lambda c: results[c].traffic)}
            entry["fused"] = curve(lambda c: _traffic(results[c].fused))
            entry["per_einsum"] = curve(lambda c: results[c].per_einsum)
            if any(results[c].per_unit is not None for c in CURVE_BUFFERS):
                entry["per_unit"] = curve(lambda c: results[c].per_unit)
            curves["groups"].append(entry)

    # -- the curve ------------------------------------------------------------------------------------
    def _write_curve(self, module: ModuleOp, result: TileSearchResult, curves: dict[str, list[dict[str, Any]]]) -> None:
        doc = {"schema": CURVE_SCHEMA, "version": CURVE_VERSION, "module": module.name or "",
               "target": result.target, "buffers": list(CURVE_BUFFERS), **curves}
        path = Path(self.curve)
        write_text_atomic(path, json.dumps(doc, indent=2, allow_nan=False) + "\n", "the tiling curve")
        plot_curve(doc, str(path.with_suffix(".png")))


def _traffic(m: Mapping | None) -> float | None:
    return None if m is None else m.traffic


def _chains(block: list[Op]) -> list[tuple[str, str, Op, list[Op]]]:
    """Fusion groups, and kernels lifted into several einsums outside any group: (name, kind, the op that
    carries the attribute, the ops)."""
    out: list[tuple[str, str, Op, list[Op]]] = []
    for op in block:
        if isinstance(op, GroupOp):
            out.append((f"@{op.symbol}", "group", op, [o for o in op.body if o.opname != "solar.yield"]))
        for region in op.regions:
            if not isinstance(op, GroupOp):
                out.extend(_chains(region))
    for unit in units_of([op for op in block if not isinstance(op, GroupOp)]):
        if unit.kind == "einsum" and len(unit.ops) > 1:
            out.append((f"@{unit.name}", "kernel", unit.ops[0], list(unit.ops)))
    return out


def _group_attr(res: GroupResult, chains: IRChains, name: str, units: list[list[EinsumOp]]) -> dict[str, Any]:
    attr: dict[str, Any] = {"buffer": int(res.capacity)}
    if res.traffic is not None:
        attr["traffic"] = round(res.traffic)
        attr["strategy"] = res.strategy
    attr["fused"] = round(res.fused.traffic) if res.fused is not None else res.fused_why
    if res.per_unit is not None:
        attr["per_unit"] = round(res.per_unit)
    if res.per_einsum is not None:
        attr["per_einsum"] = round(res.per_einsum)
    if res.saving is not None:
        attr["saving"] = round(res.saving)
    if res.fused is not None and res.strategy == "fused":
        space = chains.space(name.lstrip("@"), [op for u in units for op in u])
        d = describe(res.fused, space)
        attr.update({"compulsory": d["compulsory"], "peak": d["peak"], "tiles": d["tiles"], "order": d["order"]})
    return attr


# ---- report -----------------------------------------------------------------------------------------


def _bytes(n: float | None) -> str:
    if n is None:
        return "—"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def _render(result: TileSearchResult, spec: str, target: str) -> str:
    buf = StringIO()
    console = Console(file=buf, width=150, color_system=None)
    title = f"Least DRAM traffic with a {_bytes(result.capacity)} buffer ({spec}" + (
        f" of {target})" if spec.strip().lower() in ("l2", "smem") else ")")
    table = Table(title=title, title_justify="left")
    for col in ("einsum", "compulsory", "least traffic", "× compulsory", "tiles", "loops outside-in"):
        table.add_column(col, justify="left" if col in ("einsum", "tiles", "loops outside-in") else "right")
    for row in result.einsums:
        m = row["mapping"]
        ratio = "—" if m is None or not row["compulsory"] else f"{m.traffic / row['compulsory']:.3g}"
        tiles = "no tiling fits" if m is None else " ".join(f"{u}={m.tiles[u]}" for u in row["space"].indices)
        order = "" if m is None else " ".join(m.order)
        table.add_row(row["name"], _bytes(row["compulsory"]), _bytes(row["traffic"]), ratio, tiles, order)
    console.print(table)
    if result.groups:
        groups = Table(title="Kernels and fusion groups: fused tiling against each einsum alone", title_justify="left")
        for col in ("chain", "kind", "fused", "per kernel", "per einsum", "least", "saving", "strategy"):
            groups.add_column(col, justify="left" if col in ("chain", "kind", "strategy") else "right")
        for g in result.groups:
            res: GroupResult = g["result"]
            fused = _bytes(res.fused.traffic) if res.fused is not None else f"— ({res.fused_why})"
            saving = "—" if res.saving is None or not res.per_einsum else (
                f"{_bytes(res.saving)} ({100 * res.saving / res.per_einsum:.0f}%)")
            groups.add_row(g["name"], g["kind"], fused, _bytes(res.per_unit), _bytes(res.per_einsum),
                           _bytes(res.traffic), saving, res.strategy)
        console.print(groups)
    return buf.getvalue()


def plot_curve(doc: dict[str, Any], path: str) -> None:
    """Least traffic against buffer size, log-log, one line per einsum (thin) and chain (thick)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = doc["buffers"]
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for kind, width in (("einsums", 1.0), ("groups", 2.2)):
        for entry in doc[kind]:
            pts = [(x, y) for x, y in zip(xs, entry["traffic"], strict=True) if y is not None and y > 0]
            if pts:
                ax.step([p[0] for p in pts], [p[1] for p in pts], where="post", linewidth=width,
                        label=entry["name"] + (" (fused or not)" if kind == "groups" else ""))
            if kind == "einsums" and entry.get("compulsory"):
                ax.axhline(entry["compulsory"], linewidth=0.5, linestyle=":", color="grey")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("on-chip buffer (bytes)")
    ax.set_ylabel("least DRAM traffic (bytes)")
    ax.set_title(f"@{doc['module']}: least traffic against buffer size" if doc["module"] else
                 "least traffic against buffer size")
    ax.grid(True, which="both", alpha=0.3)
    if any(doc[k] for k in ("einsums", "groups")):
        ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    try:
        save_figure(fig, path, "the tiling curve plot", dpi=110)
    finally:
        plt.close(fig)


__all__ = ["TileSearch", "TileSearchResult", "plot_curve"]
