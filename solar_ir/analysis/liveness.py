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

from solar.ir.ops import ConcatOp, FuncOp, GroupOp, InsertOp, ModuleOp, Op, ScatterOp, Value
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


def live_ops(func: FuncOp) -> set[int]:
    """The ids of the live ops of `func` (nested ones included)."""
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
    return live


def dead_ops(module: ModuleOp) -> list[Op]:
    """The dead ops of the entry function, outermost first and in program order (a dead group before its
    members)."""
    func = module.entry
    if func is None:
        return []
    live = live_ops(func)
    out: list[Op] = []
    for block in blocks(func):
        out.extend(op for op in block.ops if id(op) not in live)
    return out


def drop_dead(module: ModuleOp) -> list[Op]:
    """Removes the dead ops of the entry function; returns them (outermost first)."""
    dead = dead_ops(module)
    if not dead:
        return []
    gone = {id(op) for op in dead}
    assert module.entry is not None
    for block in blocks(module.entry):
        block.ops[:] = [op for op in block.ops if id(op) not in gone]
    return dead
