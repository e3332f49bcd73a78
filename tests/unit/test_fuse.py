"""--fuse (docs/sol.md, "Fusion"): invariants on every example and on random graphs, checked on the fused IR
itself. The verifier runs after the pass, so every group's operands are defined before it: a non-convex group
(an outside op both depending on it and feeding it) could not be placed and would fail verification.

- the units of execution are the same before and after (fusion only groups them);
- groups do not nest; every group holds at least two units; a group yields exactly the values read after it
  or returned;
- producer-consumer: at most one unit with a reduction per group, and no value made inside a group and read
  inside it is read outside it (a producer feeds only its consumer);
- mode=none leaves the IR as it was; fusing twice gives what fusing once gives.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_sol_properties import graphs, skip_reason
from test_sol_support import run_passes

from solar.ir.analysis.units import Uses, units_of, walk_blocks
from solar.ir.ops import GroupOp, ModuleOp, SymbolRef, Value
from solar.ir.printer import print_module
from solar.passes.fuse import Fuse, is_map
from solar.passes.lift_einsum import LiftEinsum

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.sir"))
MODES = ("greedy", "producer-consumer", "none")


def unit_names(module: ModuleOp) -> list[str]:
    """Every unit of the entry function, block by block, in program order (`units_of` looks into groups
    itself, so group bodies are not blocks of their own here)."""
    func = module.entry
    assert func is not None
    blocks = [b for b in walk_blocks(func) if not any(b is g.body for g in groups_of(module))]
    # Data-moving units are named after their result, which a group renames (`%next` → `%next_0`).
    return [f"{u.kind}:{u.name}" if u.kind in ("kernel", "einsum") else u.kind for block in blocks
            for u in units_of(block)]


def groups_of(module: ModuleOp) -> list[GroupOp]:
    return [op for op in module.walk() if isinstance(op, GroupOp)]


def check_fused(before: ModuleOp, after: ModuleOp, mode: str) -> None:
    # The same units; independent ones may change places (ops not depending on a group move before it).
    assert sorted(unit_names(after)) == sorted(unit_names(before))
    func = after.entry
    assert func is not None
    uses = Uses.of(func)
    given = {g.symbol for g in groups_of(before)}
    for group in groups_of(after):
        assert not any(isinstance(op, GroupOp) for op in group.body[:-1] for op in op.walk()), "nested group"
        members = units_of(group.body)
        assert len(members) >= 2, group.symbol
        made = {r for op in group.body for r in op.results}
        yielded = list(group.body[-1].operands)
        assert len(yielded) == len(group.results) and set(yielded) <= made
        # A group yields what is read after it (or returned), and nothing else; that it yields all of it
        # the verifier checks (an inner value read outside the group would be undefined there).
        used_later = [res for res in group.results if uses.of_value(res)]
        assert used_later == list(group.results), f"{group.symbol} yields a value nobody reads"
        if group.symbol in given:
            continue  # written in the input (examples/lifted_attention.sir): not the pass's
        assert group.attrs["mode"] == mode
        if mode == "producer-consumer":
            assert sum(not is_map(u) for u in members) <= 1, f"{group.symbol}: two reductions"
            # Inner values read by a member unit are not yielded: a producer feeds only its consumer.
            unit_ops = {o for u in members for op in u.ops for o in op.walk()}
            readers_inside: set[Value] = {v for op in unit_ops for v in op.operands if v in made}
            assert not readers_inside & set(yielded), f"{group.symbol}: an intermediate also leaves the group"


def fuse(text: str, mode: str, lift: bool, name: str) -> tuple[ModuleOp, ModuleOp]:
    before, _ = run_passes(text, [LiftEinsum()] if lift else [], name)
    after, _ = run_passes(text, [*([LiftEinsum()] if lift else []), Fuse(mode=mode)], name)
    return before, after


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_examples(path: Path, mode: str) -> None:
    text = path.read_text(encoding="utf-8")
    if skip_reason(text):
        pytest.skip(skip_reason(text))
    for lift in (False, True):
        before, after = fuse(text, mode, lift, path.name)
        check_fused(before, after, mode)
        if mode == "none":
            assert print_module(after) == print_module(before)
        again, _ = run_passes(print_module(after), [Fuse(mode=mode)], path.name)
        assert print_module(again) == print_module(after), "fusing twice changed the IR"


def test_expected_groups_on_examples() -> None:
    """Group membership on two examples, by the rules: greedy fuses the whole MLP; producer-consumer only
    fc1 with its ReLU epilogue; causal attention has a softmax with reductions between two matmuls."""
    mlp = (EXAMPLES[0].parent / "mlp.sir").read_text()
    attention = (EXAMPLES[0].parent / "causal_attention.sir").read_text()

    def units(text: str, mode: str) -> list[list[str]]:
        _, after = fuse(text, mode, True, "x.sir")
        return [[f"@{u.name}" if isinstance(u, SymbolRef) else u for u in g.attrs["units"]] for g in groups_of(after)]

    assert units(mlp, "greedy") == [["@fc1", "@relu", "@fc2"]]
    assert units(mlp, "producer-consumer") == [["@fc1", "@relu"]]
    assert units(mlp, "none") == []
    assert units(attention, "greedy") == [["@scores", "@causal_softmax", "@pv"]]
    assert units(attention, "producer-consumer") == []


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=graphs(), lift=st.booleans(), mode=st.sampled_from(MODES))
def test_random_graphs(graph: tuple[str, int], lift: bool, mode: str) -> None:
    text, _ = graph
    before, after = fuse(text, mode, lift, "random.sir")
    check_fused(before, after, mode)
