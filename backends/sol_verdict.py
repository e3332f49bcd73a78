"""The verdict of a SOL report: per target, what bounds the program and the places to act first, each with its
gain if fixed (docs/sol.md, "Verdict"). Rules over the priced model, not prose generation:

- **bound**: the fused mode's largest term; for compute, the precision and unit that take the most time.
- **precision policy**: f32 contractions priced on vector units (no FP32 tensor figure) would run on tensor
  cores under TF32: the fused SOL with them re-timed at the TF32 peak (the counts are the same).
- **fusion**: for two consecutive units of one block where the second reads the first, the bytes the cost
  model charges the two apart less what it charges them as one (unfused − fused across that boundary).
- **cache-aware gap**: after --tile-search, per group, the best tiling's bytes less the cache-aware bound.
- **einsum order**: after --reorder-einsum, the written order's fused SOL less the chosen one's.
- **launch-bound units**: on a GPU, units whose SOL is below one kernel launch.

`facts` are computed once, where the model is at hand, and kept in the JSON document; `sentences` renders
them (and a measurement, when there is one) from the document alone, so every view says the same words.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

from solar.backends.cost import CostError, CostModel, Peaks, Work
from solar.backends.mode_results import mode_result
from solar.backends.precision_policy import floor_sentence
from solar.backends.report import TargetReport, quantity, seconds, short_path
from solar.backends.report import ratio as ratio_text
from solar.ir.dtypes import DType
from solar.ir.ops import Op

# The host-side cost of one CUDA kernel launch is 2–5 µs on current drivers (NVIDIA's CUDA graphs docs); a
# unit whose SOL is below the low end of it is bound by its launch when run as its own kernel.
LAUNCH_S = 2e-6
TOP_ACTIONS = 3


def fusion_pairs(model: CostModel) -> list[tuple[int, int, Work]]:
    """(i, j, work of units i and j as one) for each unit j that reads the unit i just before it in the same
    block: the boundaries where fusing saves traffic. Target-independent, so computed once."""
    units = model.units
    block = _blocks(model.func.body, {})
    pairs = []
    for i in range(len(units) - 1):
        a, b = units[i], units[i + 1]
        if not a.ops or not b.ops or a.trips != 1 or b.trips != 1 or a.kind == "if" or b.kind == "if":
            continue
        if block.get(id(a.ops[0])) != block.get(id(b.ops[0])) or block.get(id(a.ops[0])) is None:
            continue
        made = {r for op in a.ops for inner in op.walk() for r in inner.results}
        if not any(v in made for op in b.ops for inner in op.walk() for v in inner.operands):
            continue
        try:
            merged = model.work(f"{a.name}+{b.name}", "pair", [*a.ops, *b.ops], 1, {})
        except CostError:
            continue
        if merged.total_bytes < a.total_bytes + b.total_bytes:
            pairs.append((i, i + 1, merged))
    return pairs


def _blocks(block: list[Op], out: dict[int, int]) -> dict[int, int]:
    """The block (by id) each op of the function lies in directly, loop bodies excluded (their units run
    many times: a pair there is not priced once)."""
    for op in block:
        out[id(op)] = id(block)
        if op.opname != "solar.for":
            for region in op.regions:
                _blocks(region, out)
    return out


def facts(model: CostModel, report: TargetReport, pairs: list[tuple[int, int, Work]],
          units_json: list[dict[str, Any]], fp32_precision: str) -> dict[str, Any]:
    """The verdict's figures for one target: what bounds the fused SOL, the actions ranked by the time they
    save, and the launch-bound units (kept as `verdict` in the target's JSON entry)."""
    peaks = report.peaks
    fused = report.modes["fused"]
    actions = [a for a in (_precision(model, report, units_json, fp32_precision), *_fusions(report, pairs,
                                                                                              units_json),
                           *_cache_aware(report), _reorder(report)) if a is not None and a["gain_s"] > 0]
    actions.sort(key=lambda a: -a["gain_s"])
    short = [t.seconds for _, t in report.units if 0 < t.seconds < LAUNCH_S]
    return {"bound": _bound(model.groups, peaks, fused.bound), "fused_s": fused.seconds,
            "unfused_s": report.modes["unfused"].seconds, "bytes": fused.bytes, "actions": actions[:TOP_ACTIONS],
            "top_unit": _top_unit(report, units_json),
            "launch_bound": {"units": len(short), "of": len(report.units), "launch_s": LAUNCH_S}
            if peaks.target.kind == "gpu" and short else None}


def _bound(works: list[Work], peaks: Peaks, bound: str) -> dict[str, Any]:
    """Σ time per compute peak (precision, unit) over the fused works, and the memory term."""
    per_peak: Counter[tuple[str, str, str]] = Counter()
    for w in works:
        for flops, contraction in ((w.flops_tensor, True), (w.flops_vector, False)):
            for d, n in flops.items():
                if n:
                    c = peaks.choice(d, contraction)
                    per_peak[(d.spelling, c.precision, c.unit)] += n * w.trips / c.flop_per_s
    memory_s = sum(w.total_bytes for w in works) / peaks.bandwidth
    top = max(per_peak.items(), key=lambda kv: kv[1], default=None)
    return {"by": bound, "memory_s": memory_s, "bandwidth": peaks.bandwidth,
            "compute": None if top is None else {"dtype": top[0][0], "precision": top[0][1], "unit": top[0][2],
                                                 "seconds": top[1]}}


def _name(unit: dict[str, Any]) -> str:
    """A unit as the verdict names it: its module path when known, with its source line beside it."""
    shown = unit.get("module") or unit["name"]
    loc = unit.get("loc")
    return f"`{shown}` ({short_path(loc['file'])}:{loc['line']})" if loc else f"`{shown}`"


def unit_shares(report: TargetReport) -> list[float]:
    """Each unit's part of the fused SOL: a group's time split among its units by their unfused times."""
    shares = [t.seconds for _, t in report.units]
    for group, timing in report.groups:
        members = {id(o) for top in group.ops for o in top.walk()}
        inside = [k for k, (w, _) in enumerate(report.units) if w.ops and id(w.ops[0]) in members]
        total = sum(report.units[k][1].seconds for k in inside)
        for k in inside:
            shares[k] = timing.seconds * (report.units[k][1].seconds / total if total > 0 else 1 / len(inside))
    return shares


def _top_unit(report: TargetReport, units_json: list[dict[str, Any]]) -> dict[str, Any] | None:
    shares = unit_shares(report)
    fused = report.modes["fused"].seconds
    if not shares or fused <= 0:
        return None
    k = max(range(len(shares)), key=lambda i: shares[i])
    return {"unit": units_json[k]["name"], "shown": _name(units_json[k]), "share": shares[k] / fused}


def _precision(model: CostModel, report: TargetReport, units_json: list[dict[str, Any]], policy: str
               ) -> dict[str, Any] | None:
    """f32 contractions on vector units: the fused SOL were they priced at TF32 (tensor cores)."""
    # The what-if asks its own Peaks: the report's remembers the peaks the program uses (its plots' roofs).
    peaks = Peaks(report.peaks.target, report.peaks.precision_floor)
    if policy == "tf32" or not any(w.flops_tensor.get(DType.F32) for w in model.groups):
        return None
    try:
        if peaks.choice(DType.F32, True).unit != "vector" or peaks.choice(DType.TF32, True).unit != "tensor":
            return None
    except CostError:
        return None
    retimed = mode_result("fused", [_as_tf32(w) for w in model.groups], peaks).seconds
    fused = report.modes["fused"].seconds
    on_vector = [k for k, (w, _) in enumerate(report.units) if w.flops_tensor.get(DType.F32)]
    shares = unit_shares(report)
    k = max(on_vector, key=lambda i: shares[i]) if on_vector else None
    costliest = "" if k is None or fused <= 0 else \
        f"; the costliest, {_name(units_json[k])}, is {100 * shares[k] / fused:.0f} % of the fused SOL"
    text = (f"f32 contractions run on {peaks.choice(DType.F32, True).precision} vector units (no FP32 tensor-core "
            f"figure on {peaks.target.name}) under the framework's default, exact FP32{costliest}: allowing TF32 "
            f"(`torch.backends.cuda.matmul.allow_tf32 = True`; `--allow-tf32` here) would cut the fused SOL by "
            f"{ratio_text(fused / retimed)} ({seconds(fused)} → {seconds(retimed)})")
    return {"kind": "precision", "where": [units_json[i]["name"] for i in on_vector], "gain_s": fused - retimed,
            "factor": fused / retimed if retimed > 0 else None, "text": text}


def _as_tf32(w: Work) -> Work:
    tensor = Counter(w.flops_tensor)
    f32 = tensor.pop(DType.F32, 0)
    if f32:
        tensor[DType.TF32] += f32
    return dataclasses.replace(w, flops_tensor=tensor)


def _fusions(report: TargetReport, pairs: list[tuple[int, int, Work]], units_json: list[dict[str, Any]]
             ) -> list[dict[str, Any]]:
    """Each boundary where fusing saves traffic, with the time it saves on this target."""
    out = []
    unfused_bytes = report.modes["unfused"].bytes
    group_of = _group_index(report)
    for i, j, merged in pairs:
        a, b = report.units[i], report.units[j]
        saved = a[0].total_bytes + b[0].total_bytes - merged.total_bytes
        gain = a[1].seconds + b[1].seconds - report.peaks.time(merged).seconds
        joined = group_of.get(i) is not None and group_of.get(i) == group_of.get(j)
        text = (f"fusing {_name(units_json[i])} into {_name(units_json[j])} saves {quantity(saved, 'B')} of DRAM "
                f"traffic ({100 * saved / unfused_bytes:.0f} % of the unfused bytes) and {seconds(gain)} of SOL"
                + (" (the fused SOL counts on it: a framework that runs them apart pays it)" if joined else
                   " (not in the fused SOL: --fuse did not join them)"))
        out.append({"kind": "fusion", "where": [units_json[i]["name"], units_json[j]["name"]], "gain_s": gain,
                    "saves_bytes": saved, "in_fused": joined, "text": text})
    return out


def _group_index(report: TargetReport) -> dict[int, int]:
    out: dict[int, int] = {}
    for g, (group, _) in enumerate(report.groups):
        members = {id(o) for top in group.ops for o in top.walk()}
        for k, (w, _) in enumerate(report.units):
            if w.ops and id(w.ops[0]) in members:
                out[k] = g
    return out


def _cache_aware(report: TargetReport) -> list[dict[str, Any]]:
    """Groups whose best tiling found moves more than the cache-aware bound: what a better schedule saves."""
    ca = report.cache_aware
    if ca is None:
        return []
    out = []
    for row in ca.rows:
        if row.get("estimate_bytes") is None or row["estimate_bytes"] <= row["bytes"]:
            continue
        extra = row["estimate_bytes"] - row["bytes"]
        gain = extra / report.peaks.bandwidth
        out.append({"kind": "cache_aware", "where": [row["name"]], "gain_s": gain, "saves_bytes": extra,
                    "text": f"`{row['name']}`: the best tiling found moves {ratio_text(row['gap'])} the bytes of the "
                            f"cache-aware bound under {quantity(ca.buffer, 'B')} ({ca.label}); a schedule at the bound "
                            f"saves up to {quantity(extra, 'B')}, {seconds(gain)}"})
    return out


def _reorder(report: TargetReport) -> dict[str, Any] | None:
    before = report.before_reorder
    if before is None:
        return None
    was, now = before.modes["fused"].seconds, report.modes["fused"].seconds
    return {"kind": "einsum_order", "where": [], "gain_s": was - now, "factor": was / now if now > 0 else None,
            "text": f"the einsum order --reorder-einsum chose cuts the fused SOL by {ratio_text(was / now)} from the "
                    f"written order ({seconds(was)} → {seconds(now)}): write the contractions in that order"
            if now > 0 else ""}


# ---- sentences, from the document alone ------------------------------------------------------------


_UNIT_WORDS = {"tensor": "tensor cores", "vector": "vector units"}


def sentences(doc: dict[str, Any], measured: dict[str, Any] | None = None) -> list[str]:
    """One or two sentences per target (what bounds it, the headroom where measured), then its top actions."""
    out = []
    if doc.get("precision_floor"):  # the figures are not the framework's: say so before any of them
        out.append(floor_sentence(doc["precision_floor"]))
    several = len(doc["targets"]) > 1
    for t in doc["targets"]:
        v = t.get("verdict")
        if not v:
            continue
        lead = f"On {t['name']}" if several else f"On {t['name']} ({t['full_name']})"
        out.append(f"{lead}, the fused SOL is {seconds(v['fused_s'])}, {_bound_words(v)}.")
        out += _headroom(t["name"], v, measured)
        if v.get("top_unit") and not any(a["kind"] == "precision" for a in v["actions"]):
            top = v["top_unit"]
            out.append(f"The costliest unit, {top['shown']}, is {100 * top['share']:.0f} % of the fused SOL.")
        for k, a in enumerate(v["actions"], 1):
            out.append(f"{k}. {a['text']}.")
        lb = v.get("launch_bound")
        if lb:
            out.append(f"{lb['units']} of {lb['of']} units have an SOL under {seconds(lb['launch_s'])}, one kernel "
                       "launch: run as separate kernels they are bound by their launches (fuse them, or use CUDA "
                       "graphs).")
    return out


def _bound_words(v: dict[str, Any]) -> str:
    b = v["bound"]
    memory = (f"{quantity(v['bytes'], 'B')} of DRAM traffic at {quantity(b['bandwidth'], 'B/s')} take "
              f"{seconds(b['memory_s'])}")
    c = b.get("compute")
    if b["by"] == "memory" or c is None:
        tail = f"; compute takes {seconds(c['seconds'])}" if c else ""
        return f"bound by bandwidth: {memory}{tail}"
    return (f"bound by compute: {c['dtype']} work on {c['precision']} {_UNIT_WORDS.get(c['unit'], c['unit'])} takes "
            f"{seconds(c['seconds'])} ({memory})")


def _headroom(target: str, v: dict[str, Any], measured: dict[str, Any] | None) -> list[str]:
    """Measured ÷ fused SOL per framework mode, where this target is the measuring machine's."""
    if not measured:
        return []
    out = []
    for framework, per_mode in (measured.get("headroom", {}).get(target) or {}).items():
        ratio = per_mode.get("fused")
        m = measured.get("measurements", {}).get(framework, {})
        if ratio and m.get("median_s"):
            noisy = " (measured on a busy machine: noisy)" if measured.get("noisy") else ""
            out.append(f"Measured {framework}: {seconds(m['median_s'])} (median), {ratio_text(ratio['median'])} the "
                       f"fused SOL: that is the headroom{noisy}.")
    return out
