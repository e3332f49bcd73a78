"""Units of execution and the dataflow between them, shared by --fuse and the SOL backend.

The unit of execution is the kernel (docs: DESIGN.md, cost model): a `solar.kernel`, or the consecutive
einsums lifted from one kernel (they carry `kernel = @name`), or a data-moving composition op (concat,
gather, scatter, insert). Layout ops (reshape, permute, broadcast, slice, constant) are views: they cost
nothing and are never units.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from solar.ir import attr_names
from solar.ir.ops import (
    EinsumOp,
    FuncOp,
    GroupOp,
    KernelOp,
    Op,
    SymbolRef,
    Value,
)


@dataclass(eq=False)
class Unit:
    """One unit of execution: its ops (in program order) and a display name."""

    ops: list[Op]
    name: str
    kind: str  # "kernel", "einsum", "concat", "gather", "scatter", "insert"

    def defined(self) -> set[Value]:
        return {r for op in self.ops for r in op.results}


def origin_kernel(op: Op) -> str | None:
    origin = op.attrs.get(attr_names.KERNEL)
    return origin.name if isinstance(origin, SymbolRef) else None


def units_of(block: list[Op]) -> list[Unit]:
    """The units of one block, in program order (groups are looked into: their members are units)."""
    units: list[Unit] = []
    for op in block:
        if isinstance(op, GroupOp):
            units.extend(units_of(op.body))
        elif isinstance(op, EinsumOp):
            origin = origin_kernel(op)
            last = units[-1] if units else None
            # Steps of a reordered chain (--reorder-einsum) are each their own unit, as a path executor runs them.
            step = op.attrs.get("reorder")
            if (origin is not None and last is not None and last.kind == "einsum" and step is None
                    and origin_kernel(last.ops[-1]) == origin and "reorder" not in last.ops[-1].attrs):
                last.ops.append(op)
            else:
                units.append(Unit([op], op.symbol if step is not None else origin or op.symbol, "einsum"))
        elif isinstance(op, KernelOp):
            units.append(Unit([op], op.symbol, "kernel"))
        elif op.moves_data:
            units.append(Unit([op], f"{op.opname.split('.')[1]} %{op.results[0].name}", op.opname.split(".")[1]))
    return units


@dataclass
class Uses:
    """Who reads each value of a function: ops (the innermost op holding the use) and terminators."""

    readers: dict[Value, list[Op]] = field(default_factory=dict)

    @classmethod
    def of(cls, func: FuncOp) -> Uses:
        uses = cls()
        for op in func.walk():
            if op is func:
                continue
            for v in op.operands:
                uses.readers.setdefault(v, []).append(op)
        return uses

    def of_value(self, v: Value) -> list[Op]:
        return self.readers.get(v, [])


def contained_ops(ops: list[Op]) -> set[Op]:
    """`ops` and everything nested in them."""
    out: set[Op] = set()
    for op in ops:
        out.update(op.walk())
    return out


def boundary(ops: list[Op], uses: Uses) -> tuple[list[Value], list[Value]]:
    """Values a set of ops reads from outside it, and values it defines that are read outside it (or
    returned), each once, in a stable order."""
    inside = contained_ops(ops)
    defined = {r for op in inside for r in op.results}
    inputs: dict[Value, None] = {}
    for op in inside:
        for v in op.operands:
            if v not in defined:
                inputs.setdefault(v)
    outputs: dict[Value, None] = {}
    for v in (r for op in ops for r in op.results):
        if any(reader not in inside for reader in uses.of_value(v)):
            outputs.setdefault(v)
    return list(inputs), list(outputs)


def walk_blocks(func: FuncOp) -> Iterator[list[Op]]:
    """Every block of a function (its body and each region), outermost first."""
    stack = [func.body]
    while stack:
        block = stack.pop(0)
        yield block
        for op in block:
            stack.extend(op.regions)
