"""The SOL side of a benchmark: the module at exactly the sizes that ran, through the pipeline
(bind-params ▶ inline ▶ lift-einsum ▶ fuse), then the cost model on every target in every mode: unfused,
fused, cache-aware (least traffic under the target's last on-chip buffer) and whole graph."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from solar.backends.cost import CostError, CostModel, Peaks
from solar.backends.report import TargetReport, analyse
from solar.backends.tiling_ir import add_cache_aware
from solar.ir.analysis.units import boundary
from solar.ir.diagnostics import DiagnosticEngine
from solar.ir.ops import ModuleOp, Value
from solar.ir.pass_manager import PassContext, PassManager
from solar.passes.bind_params import BindParams
from solar.passes.fuse import Fuse
from solar.passes.inline import Inline
from solar.passes.lift_einsum import LiftEinsum
from solar.targets.loader import Target, TargetError

# The modes in report order; the last three are lower bounds by construction (docs/bench.md).
MODES = ("unfused", "fused", "cache_aware", "whole_graph")
LOWER_BOUND_MODES = ("fused", "cache_aware", "whole_graph")
MODE_LABELS = {"unfused": "unfused", "fused": "fused", "cache_aware": "cache-aware", "whole_graph": "whole graph"}


class BoundsError(ValueError):
    """The SOL pipeline failed on the module (the message says where)."""


@dataclass
class TargetBounds:
    """One target's bounds (seconds per mode), the buffer of its cache-aware mode and its last-level cache."""

    target: str
    seconds: dict[str, float]
    bound_by: dict[str, str]
    cache_buffer: str
    llc_bytes: int | None
    notes: list[str] = field(default_factory=list)
    report: TargetReport | None = field(default=None, repr=False, compare=False)  # per unit and group (--measured)

    def to_json(self) -> dict[str, Any]:
        return {"seconds": self.seconds, "bound_by": self.bound_by, "cache_buffer": self.cache_buffer,
                "llc_bytes": self.llc_bytes, "notes": self.notes}


@dataclass
class Bounds:
    """What the SOL pipeline says about one program at one set of sizes."""

    sizes: dict[str, int]
    flops: int
    bytes: dict[str, int]  # per mode, on the first target
    intermediate_bytes: int  # tensors one unit writes and another reads (unfused mode's DRAM round trips)
    kernels: int
    groups: int
    targets: dict[str, TargetBounds]
    model: CostModel | None = field(default=None, repr=False, compare=False)  # its units (--measured's trace join)

    def to_json(self) -> dict[str, Any]:
        return {"sizes": self.sizes, "flops": self.flops, "bytes": self.bytes,
                "intermediate_bytes": self.intermediate_bytes, "kernels": self.kernels, "groups": self.groups,
                "targets": {k: v.to_json() for k, v in self.targets.items()}}


def last_level_cache(target: Target) -> int | None:
    """The largest on-chip cache: a CPU's L3 (memory.last_level_cache), else the L2."""
    for name in ("last_level_cache", "l2"):
        fig = target.figures.get(name)
        if fig is not None and fig.status == "known" and fig.value:
            return int(fig.value)
    return None


def cache_buffer(target: Target) -> str:
    """The buffer of the cache-aware mode: a CPU's last-level cache (the most any schedule can keep on
    chip), a GPU's L2 (`--tile-search=l2`)."""
    if target.kind == "cpu":
        llc = last_level_cache(target)
        if llc:
            return str(llc)
    return "l2"


def prepare(module: ModuleOp, sizes: dict[str, int]) -> ModuleOp:
    """A copy of `module` with its size parameters bound to `sizes` (the rest to their defaults), calls
    inlined, kernels lifted to einsums and fused."""
    work = copy.deepcopy(module)
    declared = {p.name for p in work.params}
    options = {k: str(v) for k, v in sizes.items() if k in declared}
    engine = DiagnosticEngine()
    passes = [BindParams(options=options), BindParams(), Inline(), LiftEinsum(), Fuse()]
    ctx = PassContext(engine, report=lambda _text: None)
    try:
        work = PassManager(passes, verify_each=True).run(work, ctx)
    except Exception as err:
        raise BoundsError(engine.format_all() or f"{type(err).__name__}: {err}") from None
    if engine.has_errors:
        raise BoundsError(engine.format_all())
    return work


def intermediate_bytes(model: CostModel) -> int:
    """Bytes of the tensors one unit of execution writes and another reads: what the unfused mode sends
    through DRAM and back, and what a last-level cache could keep instead (each tensor once)."""
    produced: dict[Value, int] = {}
    consumed: set[Value] = set()
    for w in model.units:
        inputs, outputs = boundary(w.ops, model.uses)
        for v in outputs:
            if v.type is not None and not (v.owner is not None and v.owner.is_view):
                produced[v] = v.type.nbytes(model.values)
        consumed.update(_through_views(v) for v in inputs)
    return sum(n for v, n in produced.items() if v in consumed)


def _through_views(v: Value) -> Value:
    while v.owner is not None and v.owner.is_view and v.owner.operands:
        v = v.owner.operands[0]
    return v


def compute_bounds(module: ModuleOp, targets: list[Target], sizes: dict[str, int],
                   allow_tf32: bool = False, precision_floor: str | None = None) -> Bounds:
    """Every mode's SOL on every target at `sizes`. `allow_tf32` prices f32 contractions on TF32 tensor
    cores (what the framework's flags allow on a GPU; docs/sol.md); `precision_floor` prices each float
    contraction at that precision where it is faster (backends/precision_policy.py)."""
    work = prepare(module, sizes)
    try:
        model = CostModel(work, "tf32" if allow_tf32 else "framework")
    except CostError as err:  # located: a wrong access points into the program's source
        raise BoundsError(f"{err.loc}: {err}" if err.loc is not None else str(err)) from None
    out: dict[str, TargetBounds] = {}
    first_bytes: dict[str, int] = {}
    for t in targets:
        try:
            report = analyse(model, Peaks(t, precision_floor), None)
        except (CostError, TargetError) as err:
            raise BoundsError(f"{t.name}: {err}") from None
        buffer = cache_buffer(t)
        why = add_cache_aware(report, model, buffer)
        seconds = {m: r.seconds for m, r in report.modes.items()}
        bound_by = {m: r.bound for m, r in report.modes.items()}
        notes = []
        ca = report.cache_aware
        if ca is not None:
            seconds["cache_aware"] = ca.mode.seconds
            bound_by["cache_aware"] = ca.mode.bound
            notes += [f"cache-aware: {row['name']} keeps its fused bytes ({row['reason']})"
                      for row in ca.rows if str(row["reason"] or "").startswith("not modelled")]
        else:
            notes.append(f"no cache-aware mode: {why}")
        if not first_bytes:
            first_bytes = {m: r.bytes for m, r in report.modes.items()}
            if ca is not None:
                first_bytes["cache_aware"] = ca.mode.bytes
        out[t.name] = TargetBounds(t.name, {m: seconds[m] for m in MODES if m in seconds},
                                   {m: bound_by[m] for m in MODES if m in bound_by}, buffer, last_level_cache(t),
                                   notes, report)
    kernels = len(model.units)
    groups = len(model.groups)
    flops = sum(w.flops for w in model.units)
    used = {p.name: sizes.get(p.name, p.default) for p in module.params}
    return Bounds({k: v for k, v in used.items() if v is not None}, flops,
                  {m: first_bytes[m] for m in MODES if m in first_bytes}, intermediate_bytes(model), kernels, groups,
                  out, model)
