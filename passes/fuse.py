"""--fuse: groups units of execution into `solar.group` fusion groups along producer→consumer edges."""

from __future__ import annotations

import typing
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from solar.ir import attr_names
from solar.ir.analysis.units import Unit, units_of
from solar.ir.ops import (
    Assign,
    EinsumOp,
    ForOp,
    GroupOp,
    IfOp,
    KernelOp,
    ModuleOp,
    Op,
    SymbolRef,
    Value,
    YieldOp,
    walk_stmts,
)
from solar.ir.pass_manager import Pass, PassContext
from solar.ir.rewriter import NameGenerator, blocks, replace_all_uses_with

FuseMode = Literal["greedy", "producer-consumer", "none"]
MODES: tuple[str, ...] = typing.get_args(FuseMode)


def is_map(unit: Unit) -> bool:
    """A unit without any reduction: every output element depends on one iteration (an epilogue)."""
    for op in unit.ops:
        if isinstance(op, EinsumOp) and any(s.reduction is not None for s in op.body):
            return False
        if isinstance(op, KernelOp) and any(isinstance(s, Assign) and s.reduction is not None
                                            for s in walk_stmts(op.body)):
            return False
    return unit.kind in ("einsum", "kernel")


@dataclass(frozen=True)
class Fuse(Pass):
    """Forms fusion groups. The legality rules (docs/sol.md, "Fusion"):

    1. Only units of execution (kernels, einsum chains of one kernel, concat/gather/scatter/insert) and the
       free layout ops between them (reshape, permute, broadcast, slice, constant) join groups; solar.for,
       solar.if and calls are group boundaries; groups do not nest.
    2. A unit joins the groups of its producers (the latest in program order first) as far as the rules
       allow.
    3. Groups stay convex: no path leaves a group and comes back to it through an op outside it, so the
       group can run as one step (a cycle through the rest of the graph would make that impossible).
    4. mode=producer-consumer (what fused libraries do): the producer's results feed only the consumer's group,
       and a group holds at most one unit with a reduction: only maps may follow a reduction (epilogues)
       or precede it (prologues). mode=greedy: any producer→consumer edge, intermediates that are also
       read outside the group are written out. mode=none: no groups.
    5. A layout op joins the group that all of its readers belong to.

    Before:
        %h = solar.einsum @fc ... %a = solar.einsum @relu "ij->ij" (%h as H) ...
    After:
        %a = solar.group @group0 -> tensor<64x1024xf32> attributes {mode = "greedy", units = [@fc, @relu]} {
          %h = solar.einsum @fc ... %a_1 = solar.einsum @relu ... solar.yield %a_1 }
    """

    name = "fuse"
    summary = "Group units of execution into fusion groups (mode=greedy|producer-consumer|none)"
    primary_option = "mode"
    mode: FuseMode = "greedy"  # the pass manager checks the value (Literal options)

    def apply(self, ctx: PassContext, module: ModuleOp) -> None:
        if self.mode == "none":
            return
        for func in module.funcs:
            symbols = NameGenerator.symbols_of(func)
            # Blocks of solar.for and solar.if bodies are fused too; groups and kernels are not entered.
            for block in [b for b in blocks(func) if all(isinstance(p, ForOp | IfOp) for p in b.parents[1:])]:
                _FuseBlock(block.ops, self.mode, symbols).run()


class _FuseBlock:
    def __init__(self, block: list[Op], mode: str, symbols: NameGenerator) -> None:
        self.block = block
        self.mode = mode
        self.symbols = symbols
        self._index()

    def _index(self) -> None:
        """Positions, producers, successors and reachability of the block's ops (again after each group)."""
        block = self.block
        self.position = {op: i for i, op in enumerate(block)}
        # The top-level op of this block that holds each (possibly nested) op.
        self.top: dict[Op, Op] = {}
        for op in block:
            for inner in op.walk():
                self.top[inner] = op
        self.defined_by = {r: op for op in block for r in op.results}
        self.succ: dict[Op, set[Op]] = {op: set() for op in block}
        # Every read of each value (nested readers included) and the names taken: asked per candidate
        # group and per output, which walked the whole block each time (quadratic on a whole network).
        self.readers_of: dict[Value, list[Op]] = {}
        taken: list[str] = []
        for op in block:
            for inner in op.walk():
                taken += [r.name for r in inner.results]
                for v in inner.operands:
                    self.readers_of.setdefault(v, []).append(inner)
                    producer = self.defined_by.get(v)
                    if producer is not None and producer is not op:
                        self.succ[producer].add(op)
        self.names = NameGenerator(taken)
        self.reach = self._reachability()

    def _reachability(self) -> dict[Op, int]:
        """Bit sets of the ops reachable from each op (bit i = the op at position i)."""
        reach: dict[Op, int] = {}
        for op in reversed(self.block):
            bits = 0
            for s in self.succ[op]:
                bits |= (1 << self.position[s]) | reach[s]
            reach[op] = bits
        return reach

    def run(self) -> None:
        units = [u for u in units_of([op for op in self.block if not isinstance(op, GroupOp)])
                 if all(op in self.position for op in u.ops)]
        group_of: dict[Unit, list[Unit]] = {u: [u] for u in units}
        unit_of_op = {op: u for u in units for op in u.ops}
        spans: dict[int, _Span] = {}  # by id of a group's list, while groups form (the block does not change)
        for u in units:
            # Latest producer first; once joined, the group takes the other producers' groups too where the
            # rules allow (stopping at the first join would leave cheaper fusions undone).
            for p in self._producers(u, unit_of_op):
                group = group_of[p]
                if group is group_of[u]:
                    continue
                joined = self._span(group, spans).union(self._span(group_of[u], spans))
                if self._can_join(group, u, group_of, unit_of_op, joined):
                    old = group_of[u]
                    group.extend(x for x in old if x not in group)
                    for x in old:
                        group_of[x] = group
                    spans[id(group)] = joined
                    del spans[id(old)]  # (its list is dropped: its id may come back for another)
        seen: list[list[Unit]] = []
        for g in group_of.values():
            if len(g) > 1 and not any(g is s for s in seen):
                seen.append(g)
        for g in seen:
            self._materialize(g)

    def _producers(self, u: Unit, unit_of_op: dict[Op, Unit]) -> list[Unit]:
        """Units whose results `u` reads, directly or through layout ops; latest first."""
        found: dict[Unit, None] = {}
        stack = [v for op in u.ops for inner in op.walk() for v in inner.operands]
        while stack:
            v = stack.pop()
            producer = self.defined_by.get(v)
            if producer is None:
                continue
            if producer.is_view:
                stack.extend(producer.operands)
            elif producer in unit_of_op and unit_of_op[producer] is not u:
                found.setdefault(unit_of_op[producer])
        return sorted(found, key=lambda x: -self.position[x.ops[-1]])

    def _span(self, group: list[Unit], spans: dict[int, _Span]) -> _Span:
        span = spans.get(id(group))
        if span is None:
            positions = [self.position[op] for x in group for op in x.ops]
            mask = below = 0
            for x in group:
                for op in x.ops:
                    mask |= 1 << self.position[op]
                    below |= self.reach[op]
            span = spans[id(group)] = _Span(mask, below, min(positions), max(positions))
        return span

    def _can_join(self, group: list[Unit], u: Unit, group_of: dict[Unit, list[Unit]],
                  unit_of_op: dict[Op, Unit], joined: _Span) -> bool:
        # Convexity: nothing outside the merged set both depends on it and feeds it (a layout op on such a
        # path is fine: it joins the group). Only an op between the first and last member can (block order
        # is a topological order), and only one that some member reaches: those are the bits looked at (a
        # walk over every op between them made a whole network's fusion quadratic).
        window = joined.below & ~joined.mask & ((1 << (joined.last + 1)) - (1 << joined.first))
        for position in _set_bits(window):
            op = self.block[position]
            if not op.is_view and self.reach[op] & joined.mask:
                return False
        if self.mode == "producer-consumer":
            for x in group:
                for op in x.ops:
                    for r in op.results:
                        readers = self._readers(r, unit_of_op)
                        if any(reader not in group and reader not in group_of[u] for reader in readers):
                            return False
            cores = [x for x in [*group, *group_of[u]] if not is_map(x)]
            if len(cores) > 1:
                return False
        return True

    def _readers(self, v: Value, unit_of_op: dict[Op, Unit]) -> list[Unit | Op]:
        """The units (or other ops) that read `v`, looking through layout ops."""
        out: list[Unit | Op] = []
        for inner in dict.fromkeys(self.readers_of.get(v, [])):
            if inner.is_view:
                out.extend(self._readers(inner.results[0], unit_of_op))
            else:
                out.append(unit_of_op.get(self.top[inner], self.top[inner]))
        return out

    def _top_readers(self, v: Value) -> list[Op]:
        """The ops of the block that read `v` (themselves or in their regions), once per reading op."""
        return [self.top[inner] for inner in dict.fromkeys(self.readers_of.get(v, []))]

    def _materialize(self, group: list[Unit]) -> None:
        members = {op for u in group for op in u.ops}
        mask = 0
        for op in members:
            mask |= 1 << self.position[op]
        # Layout ops on a path between members, or whose readers are all members, come along (free there).
        below = 0  # every op some member reaches
        for op in members:
            below |= self.reach[op]
        path_views = {op for op in self.block
                      if op.is_view and below & (1 << self.position[op]) and self.reach[op] & mask}
        members |= path_views
        changed = True
        while changed:
            changed = False
            for op in self.block:
                if op in members or not op.is_view:
                    continue
                readers = self._top_readers(op.results[0])
                # A view nobody reads (a dead one) joins the group that makes its operand (else that value
                # would be written out of the group for nothing).
                dead_view_of_member = self._dead(op) and any(self.defined_by.get(v) in members for v in op.operands)
                if (readers and all(r in members for r in readers)) or dead_view_of_member:
                    members.add(op)
                    changed = True
        ordered = sorted(members, key=lambda o: self.position[o])
        first, last = self.position[ordered[0]], self.position[ordered[-1]]
        between = [op for op in self.block[first:last + 1] if op not in members]
        before = [op for op in between if not any(self.reach[m] & (1 << self.position[op]) for m in ordered)]
        after = [op for op in between if op not in before]
        outputs: list[Value] = []
        for op in ordered:
            for r in op.results:
                used_outside = any(x not in members for x in self._top_readers(r))
                if used_outside:
                    outputs.append(r)
        symbol = self._symbol()
        group_op = GroupOp(symbol, [r.type for r in outputs if r.type is not None], [*ordered, YieldOp(list(outputs))],
                           ordered[0].loc)
        # A string: a bare word cannot hold the hyphen of producer-consumer (it would not parse back).
        group_op.attrs[attr_names.GROUP_MODE] = self.mode
        in_order = sorted(group, key=lambda u: self.position[u.ops[0]])
        group_op.attrs[attr_names.GROUP_UNITS] = [SymbolRef(u.name) if u.kind in ("kernel", "einsum") else u.name
                                                  for u in in_order]
        group_op.results = [Value(r.name, r.type, group_op, r.loc) for r in outputs]
        for r in outputs:
            r.name = self._inner_name(r.name)
        new_block = self.block[:first] + before + [group_op] + after + self.block[last + 1:]
        self.block[:] = new_block
        for old, new in zip(outputs, group_op.results, strict=True):
            for inner in dict.fromkeys(self.readers_of.get(old, [])):
                if self.top[inner] not in members:  # later in the block (SSA): the group's result now
                    replace_all_uses_with(old, new, [inner])
        # Positions changed: recompute the block's bookkeeping for the next group.
        self._index()

    def _dead(self, view: Op) -> bool:
        """Whether nothing reads the view's result but other dead views."""
        readers = self._top_readers(view.results[0])
        return all(r.is_view and self._dead(r) for r in readers)

    def _symbol(self) -> str:
        return self.symbols.numbered("group")

    def _inner_name(self, name: str) -> str:
        return self.names.numbered(f"{name}_")


@dataclass(frozen=True)
class _Span:
    """A forming group as bit sets over the block's positions: its ops, every op they reach, and its first
    and last positions."""

    mask: int
    below: int
    first: int
    last: int

    def union(self, other: _Span) -> _Span:
        return _Span(self.mask | other.mask, self.below | other.below, min(self.first, other.first),
                     max(self.last, other.last))


def _set_bits(bits: int) -> Iterator[int]:
    """The positions of the 1 bits of `bits`, lowest first."""
    text = bin(bits)[:1:-1]  # least significant bit first
    k = text.find("1")
    while k >= 0:
        yield k
        k = text.find("1", k + 1)
