"""Dead code: the ops of a function whose results reach none of its outputs.

An op is live when the function returns (through any chain of readers) one of its results, or when it
updates an argument in place: a `solar.insert`, an in-place `solar.scatter` or an appending `solar.concat`
whose destination is a function argument (a state buffer, a KV cache), seen through views. A `solar.group`
is transparent (its live members are those its yield needs); a `solar.for` or `solar.if` is kept whole when
any of its results is live or it holds a live op, since its body's values feed its iterations.

`--sol` prices the function without its dead ops (passes/sol.py): work whose result nobody reads is not
work that a correct run must do.
"""

from __future__ import annotations

from solar.ir.ops import ConcatOp, FuncOp, GroupOp, InsertOp, ModuleOp, Op, ScatterOp, TerminatorOp, Value
from solar.ir.rewriter import blocks


def _truthy(op: Op, name: str) -> bool:
    flag = op.attrs.get(name)
    return flag is True or getattr(flag, "name", None) == "true"


def _destination(op: Op) -> Value | None:
    """The tensor that `op` updates in place, or None for an op that makes a new one."""
    if isinstance(op, InsertOp):
        return op.dest
    if (isinstance(op, ScatterOp) and _truthy(op, "in_place")) or (isinstance(op, ConcatOp) and _truthy(op, "append")):
        return op.operands[0]
    return None


def _argument_root(v: Value) -> bool:
    """Whether `v` is a function argument, looking through views and in-place updates of one."""
    seen: set[int] = set()
    while id(v) not in seen:
        seen.add(id(v))
        owner = v.owner
        if isinstance(owner, FuncOp):
            return True
        if owner is None:
            return False
        dest = _destination(owner)
        if dest is not None:
            v = dest
        elif owner.is_view and owner.operands:
            v = owner.operands[0]
        else:
            return False
    return False


def mutates_argument(op: Op) -> bool:
    dest = _destination(op)
    return dest is not None and _argument_root(dest)


def _nested(op: Op) -> list[Op]:
    out: list[Op] = []
    for region in op.regions:
        for inner in region:
            out.append(inner)
            out.extend(_nested(inner))
    return out


def live_ops(func: FuncOp) -> tuple[set[int], set[int]]:
    """The ids of the live ops of `func` (nested ones included), and of the values live ops need."""
    live: set[int] = set()
    needed: set[int] = set()  # ids of values some live op reads
    every = _nested(func)
    opaque = {id(op): _nested(op) for op in every if op.regions and not isinstance(op, GroupOp)}
    parent: dict[int, Op] = {id(op): func for op in func.body}
    for op in every:
        for region in op.regions:
            parent.update((id(inner), op) for inner in region)

    def mark(op: Op) -> bool:
        if id(op) in live:
            return False
        live.add(id(op))
        if op.is_terminator and isinstance(parent[id(op)], GroupOp):
            return True  # a group's yield: only the values of its needed results (below)
        needed.update(id(v) for v in op.operands)
        for inner in opaque.get(id(op), []):  # a loop or branch kept whole
            live.add(id(inner))
            needed.update(id(v) for v in inner.operands)
        return True

    changed = True
    while changed:
        changed = False
        for op in every:
            if id(op) in live:
                continue
            around = parent[id(op)]
            # the function's return, or the yield of a live group (a loop's or branch's goes with it)
            if (op.is_terminator and (around is func or (isinstance(around, GroupOp) and id(around) in live))) \
                    or mutates_argument(op) \
                    or any(id(r) in needed for r in op.results) \
                    or any(id(inner) in live for inner in opaque.get(id(op), [])):
                changed |= mark(op)
        for op in every:  # a group holding a live op (one updating an argument) is live
            if isinstance(op, GroupOp) and id(op) not in live and any(id(i) in live for i in op.body):
                changed |= mark(op)
        for op in every:  # what a live group yields for a needed result is needed
            if isinstance(op, GroupOp) and id(op) in live and op.body:
                for r, v in zip(op.results, op.body[-1].operands, strict=False):
                    if id(r) in needed and id(v) not in needed:
                        needed.add(id(v))
                        changed = True
    return live, needed


def dead_ops(module: ModuleOp) -> list[Op]:
    """The dead ops of the entry function, outermost first and in program order (a dead group before its
    members)."""
    func = module.entry
    if func is None:
        return []
    live, _ = live_ops(func)
    out: list[Op] = []
    for block in blocks(func):
        out.extend(op for op in block.ops if id(op) not in live)
    return out


def has_dead_code(module: ModuleOp) -> bool:
    """Whether `drop_dead` would change the module: a dead op, or a group result nothing needs."""
    func = module.entry
    if func is None:
        return False
    live, needed = live_ops(func)
    return any(id(op) not in live or (isinstance(op, GroupOp) and not all(id(r) in needed for r in op.results))
               for op in _nested(func))


def drop_dead(module: ModuleOp) -> list[Op]:
    """Removes the dead ops of the entry function, and from a live group the results nothing needs (with
    what its yield gives for them); returns the ops removed (outermost first)."""
    func = module.entry
    if func is None:
        return []
    live, needed = live_ops(func)
    dead = [op for block in blocks(func) for op in block.ops if id(op) not in live]
    changed = bool(dead)
    for block in blocks(func):
        block.ops[:] = [op for op in block.ops if id(op) in live]
        for op in block.ops:
            if isinstance(op, GroupOp) and op.body and not all(id(r) in needed for r in op.results):
                keep = [k for k, r in enumerate(op.results) if id(r) in needed]
                yielded = op.body[-1]
                assert isinstance(yielded, TerminatorOp)
                yielded.values = [yielded.values[k] for k in keep]
                op.results = [op.results[k] for k in keep]
                op.result_types = [op.result_types[k] for k in keep]
                changed = True
    return dead if changed else []
