"""The orderings every SOL report must satisfy (docs/sol.md, "Why these are lower bounds";
docs/design/bound-checks.md), checked on a
module at several buffer sizes: whole graph ≤ fused ≤ unfused and fused ≤ cache-aware in bytes and in time
(the cache-aware bound may pass the unfused figure, which gives every kernel an unbounded buffer), cache-aware
bytes never increasing with the buffer and equal to the fused bytes once the buffer holds
everything, and a JSON document without NaN or Infinity. Used by the example and the corpus tests."""

from __future__ import annotations

import copy
import itertools
import json
import math
from typing import Any

from solar.backends.report import to_json
from solar.backends.sol_results import SolResults
from solar.backends.tiling_ir import KIB
from solar.ir.diagnostics import DiagnosticEngine
from solar.ir.ops import ModuleOp, Value
from solar.ir.pass_manager import PassContext, PassManager
from solar.passes.fuse import Fuse
from solar.passes.inline import Inline
from solar.passes.lift_einsum import LiftEinsum
from solar.passes.sol import SOL
from solar.passes.tile_search import TileSearch

BUFFERS = (16 * KIB, 256 * KIB, 4096 * KIB)
SLACK = 1e-9  # relative: sums of floats in different orders


def _run(module: ModuleOp, passes: list[Any]) -> tuple[ModuleOp, PassContext]:
    engine = DiagnosticEngine()
    ctx = PassContext(engine, lambda _text: None)
    out = PassManager(passes).run(module, ctx)
    assert not engine.has_errors, engine.format_all()
    return out, ctx


def working_set(module: ModuleOp) -> int:
    """Bytes of every tensor of the entry function: a buffer this large holds any group's working set."""
    func = module.entry
    assert func is not None
    values: dict[Value, None] = dict.fromkeys(func.args)
    for op in func.walk():
        values.update(dict.fromkeys(r for r in op.results if r.type is not None))
    params = module.param_values()
    return sum(v.type.nbytes(params) for v in values if hasattr(v.type, "nbytes"))


def _le(a: float, b: float) -> bool:
    return a <= b * (1 + SLACK) + 1e-30


def check_bound_invariants(module: ModuleOp, target: str = "h100") -> list[dict[str, Any]]:
    """Runs lift-einsum, fuse, tile-search at each buffer size and sol on copies of `module`; asserts the
    invariants and returns the JSON documents (ascending buffer)."""
    base, _ = _run(copy.deepcopy(module), [Inline(), LiftEinsum(), Fuse()])
    buffers = sorted({*BUFFERS, max(working_set(base), 1)})
    docs = []
    for buffer in buffers:
        _, ctx = _run(copy.deepcopy(base), [TileSearch(buffer=str(buffer)), SOL(target=target)])
        doc = to_json(ctx.results[SolResults].reports, base.name or "m", base.param_values())
        json.dumps(doc, allow_nan=False)  # no NaN or Infinity anywhere
        docs.append(doc)
        for t in doc["targets"]:
            m, ca = t["modes"], t["cache_aware"]
            assert ca is not None
            for key in ("bytes", "time_s"):
                chain = [m["whole_graph"][key], m["fused"][key], m["unfused"][key]]
                assert all(_le(a, b) for a, b in itertools.pairwise(chain)), (buffer, key, chain)
                assert _le(m["fused"][key], ca[key]), (buffer, key, ca[key])
            for g in ca["groups"]:
                assert g["fused_bytes"] <= g["bytes"], (buffer, g)
                assert all(math.isfinite(x) for x in (g["bytes"], g["fused_bytes"], g["unfused_bytes"]))
    for t in range(len(docs[0]["targets"])):
        rows = [doc["targets"][t]["cache_aware"] for doc in docs]
        totals = [r["bytes"] for r in rows]
        assert all(b <= a for a, b in itertools.pairwise(totals)), (buffers, totals)
        for k in range(len(rows[0]["groups"])):
            per = [r["groups"][k]["bytes"] for r in rows]
            assert all(b <= a for a, b in itertools.pairwise(per)), (rows[0]["groups"][k]["name"], buffers, per)
        # A buffer holding every tensor: each group moves only its fused (boundary) bytes.
        last = docs[-1]["targets"][t]
        assert last["cache_aware"]["bytes"] == last["modes"]["fused"]["bytes"], [
            (g["name"], g["bytes"], g["fused_bytes"], g["strategy"]) for g in last["cache_aware"]["groups"]
            if g["bytes"] != g["fused_bytes"]]
    return docs
