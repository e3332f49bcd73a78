"""Editing IR: a walker over blocks, replacing every use of a value, a `Rewriter` that splices ops at an
insertion point, rewrite patterns with a fixed-point driver (in the spirit of xDSL's `PatternRewriter` and
`PatternRewriteWalker`), and one generator of fresh names for SSA values and symbols.

Every op says which values it reads (`Op.operands`) and how to change one (`Op.set_operand`), so nothing here
knows the op classes: a new op that implements those two works with all of it.

Use lists are computed on demand (`uses_of` here, `solar.ir.analysis.units.Uses` for the analyses), not
maintained on the values. Ops are plain objects that the parser, the builder, the passes and `clone` (a deep
copy) create and edit directly, so a maintained list would stay right only if every one of those edits
went through one API, and a stale list is a wrong analysis. Computing one is a single walk, cheap beside
anything that needs it: the 2,000 ops of benchmarks/parse.py's module take about 5 ms, a seventh of
printing them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from .ops import EinsumOp, ForOp, FuncOp, GroupOp, KernelOp, Op, Value, clone_ops, defined_inside

__all__ = ["NameGenerator", "RewritePattern", "Rewriter", "apply_patterns", "blocks", "clone_ops",
           "defined_inside", "replace_all_uses_with", "uses_of"]


# ---- walking ----------------------------------------------------------------------------------------


@dataclass
class Block:
    """One list of ops (a function body or an op's region) and the ops it sits in, outermost first."""

    ops: list[Op]
    parents: tuple[Op, ...] = ()

    @property
    def in_loop(self) -> bool:
        """Inside a solar.for (its ops run once per iteration)."""
        return any(isinstance(p, ForOp) for p in self.parents)


def blocks(root: Op) -> Iterator[Block]:
    """Every block under `root` (a function: its body first), each before the blocks nested in its ops."""
    def visit(ops: list[Op], parents: tuple[Op, ...]) -> Iterator[Block]:
        yield Block(ops, parents)
        for op in ops:
            for region in op.regions:
                yield from visit(region, (*parents, op))

    for region in root.regions:
        yield from visit(region, (root,))


# ---- uses -------------------------------------------------------------------------------------------


def uses_of(ops: Iterable[Op]) -> dict[Value, list[tuple[Op, int]]]:
    """The use list of every value read in `ops` (nested ops included): (the reading op, operand position)."""
    out: dict[Value, list[tuple[Op, int]]] = {}
    for top in ops:
        for op in top.walk():
            for k, v in enumerate(op.operands):
                out.setdefault(v, []).append((op, k))
    return out


def replace_all_uses_with(old: Value, new: Value, ops: Iterable[Op]) -> int:
    """Makes every use of `old` in `ops` (nested ops included) a use of `new`; how many uses changed."""
    changed = 0
    for top in ops:
        for op in top.walk():
            for k, v in enumerate(op.operands):
                if v is old:
                    op.set_operand(k, new)
                    changed += 1
    return changed


# ---- names ------------------------------------------------------------------------------------------


class NameGenerator:
    """Fresh names that clash with none taken: `fresh("x")` is `x`, then `x_1`, `x_2` ...; `numbered("group")`
    is `group0`, `group1` ... (its counter only moves forward). One generator serves SSA names or symbols."""

    def __init__(self, taken: Iterable[str] = ()) -> None:
        self.taken = set(taken)
        self._counters: dict[str, int] = {}

    @classmethod
    def values_of(cls, func: FuncOp) -> NameGenerator:
        """For SSA names: every value `func` defines is taken."""
        return cls(v.name for v in [*func.args, *defined_inside(func.body)])

    @classmethod
    def symbols_of(cls, root: Op, kinds: tuple[type[Op], ...] = (KernelOp, EinsumOp, GroupOp)) -> NameGenerator:
        """For symbols: the symbol of every kernel, einsum and group under `root` is taken."""
        return cls(op.symbol for op in root.walk() if isinstance(op, kinds))  # type: ignore[attr-defined]

    def fresh(self, base: str) -> str:
        candidate, n = base, 0
        while candidate in self.taken:
            n += 1
            candidate = f"{base}_{n}"
        self.taken.add(candidate)
        return candidate

    def release(self, name: str) -> None:
        """Frees a name whose value or symbol is gone (renamed or erased), for a later `fresh` to take again."""
        self.taken.discard(name)

    def numbered(self, prefix: str) -> str:
        n = self._counters.get(prefix, 0)
        while f"{prefix}{n}" in self.taken:
            n += 1
        self._counters[prefix] = n
        name = f"{prefix}{n}"
        self.taken.add(name)
        return name


# ---- the rewriter -----------------------------------------------------------------------------------


class Rewriter:
    """Edits one block at an insertion point (`index`): ops inserted go there, and a replaced op's results
    are replaced in every op after it in the block (and in their regions), which is where SSA lets them be
    read."""

    def __init__(self, block: list[Op], index: int = 0, track_uses: bool = False) -> None:
        """`track_uses`: keep the block's use lists while rewriting, for a caller that edits the block only
        through this rewriter: a replacement then touches the uses of the replaced results, instead of walking
        every later op (a whole network lifts 650 kernels in one block, which was quadratic)."""
        self.block = block
        self.index = index
        self.changed = False
        self._uses: dict[Value, list[tuple[Op, int]]] | None = uses_of(block) if track_uses else None

    def set_insertion_point(self, op: Op) -> None:
        """Before `op` (which must be in the block)."""
        self.index = self._position(op)

    def _position(self, op: Op) -> int:
        if self.index < len(self.block) and self.block[self.index] is op:
            return self.index  # the op at the insertion point, as a walking pass replaces it
        return next(k for k, o in enumerate(self.block) if o is op)

    def insert(self, ops: Sequence[Op]) -> None:
        self.block[self.index:self.index] = list(ops)
        self.index += len(ops)
        self.changed = True

    def replace_op(self, op: Op, new_ops: Sequence[Op], new_results: Sequence[Value]) -> None:
        """Puts `new_ops` where `op` was and makes every later use of its results a use of `new_results`;
        the insertion point moves after the new ops."""
        k = self._position(op)
        self.block[k:k + 1] = list(new_ops)
        self.index = k + len(new_ops)
        if self._uses is None:
            rest = self.block[self.index:]
            for old, new in zip(op.results, new_results, strict=False):
                replace_all_uses_with(old, new, rest)
        else:
            self._replace_tracked(op, new_ops, new_results)
        self.changed = True

    def _replace_tracked(self, op: Op, new_ops: Sequence[Op], new_results: Sequence[Value]) -> None:
        uses = self._uses
        assert uses is not None
        gone = {id(o) for o in op.walk()}  # the replaced op's own nested reads go with it
        for value, users in uses_of(new_ops).items():
            uses.setdefault(value, []).extend(users)
        for old, new in zip(op.results, new_results, strict=False):
            for user, k in uses.pop(old, []):
                if id(user) not in gone and user.operands[k] is old:  # a stale entry no longer reads it
                    user.set_operand(k, new)
                    uses.setdefault(new, []).append((user, k))

    def erase_op(self, op: Op) -> None:
        """Removes an op whose results nothing reads."""
        k = self._position(op)
        del self.block[k]
        if self.index > k:
            self.index -= 1
        self.changed = True


class RewritePattern:
    """Matches one op and rewrites it through the rewriter (returning True), or leaves it (False)."""

    def match_and_rewrite(self, op: Op, block: Block, rewriter: Rewriter) -> bool:
        raise NotImplementedError


@dataclass
class PatternDriver:
    """Applies patterns to every op of every block under a root, again and again until none applies (a fixed
    point) or `max_rounds` is reached; the new ops a pattern inserts are visited in the same round."""

    patterns: Sequence[RewritePattern]
    max_rounds: int = 16
    rewrites: int = field(default=0, init=False)

    def run(self, root: Op) -> bool:
        changed_any = False
        for _ in range(self.max_rounds):
            changed = False
            for block in list(blocks(root)):
                rewriter = Rewriter(block.ops)
                while rewriter.index < len(block.ops):
                    op = block.ops[rewriter.index]
                    if not any(p.match_and_rewrite(op, block, rewriter) for p in self.patterns):
                        rewriter.index += 1
                    else:
                        self.rewrites += 1
                        changed = True
            changed_any |= changed
            if not changed:
                break
        return changed_any


def apply_patterns(root: Op, patterns: Sequence[RewritePattern], max_rounds: int = 16) -> int:
    """Runs `PatternDriver` to a fixed point; the number of rewrites."""
    driver = PatternDriver(patterns, max_rounds)
    driver.run(root)
    return driver.rewrites


def erase_dead(root: Op, values: Iterable[Value]) -> int:
    """Erases the ops defining `values` once nothing reads their results, and then, transitively, the ops
    that only they read. Ops with regions and terminators stay. Returns how many ops were erased."""
    where: dict[int, list[Op]] = {}
    for block in blocks(root):
        for op in block.ops:
            where[id(op)] = block.ops
    uses = uses_of(root.regions[0]) if root.regions else {}
    work = [v.owner for v in values if v.owner is not None]
    erased = 0
    while work:
        op = work.pop()
        ops = where.get(id(op))
        if ops is None or op.regions or op.is_terminator or any(uses.get(r) for r in op.results):
            continue
        ops.remove(op)
        del where[id(op)]
        erased += 1
        for k, v in enumerate(op.operands):
            users = uses.get(v, [])
            uses[v] = [(o, i) for o, i in users if not (o is op and i == k)]
            if v.owner is not None:
                work.append(v.owner)
    return erased
