"""Linking uses to definitions: the parser builds operands as `UnresolvedUse`s (names as written); the
`Resolver` replaces each by the `Value` it names, in lexical scope, reporting every undefined or misplaced use
at once."""

from __future__ import annotations

from .diagnostics import DiagnosticEngine, note
from .ops import (
    CallOp,
    EinsumOp,
    ForOp,
    GenericOp,
    GroupOp,
    IfOp,
    InsertOp,
    KernelOp,
    ModuleOp,
    Op,
    ReturnOp,
    SliceOp,
    Value,
    YieldOp,
)


class UnresolvedUse(Value):
    """An operand as written, before it is linked to its definition."""

    __slots__ = ()


class Resolver:
    """Replaces every `UnresolvedUse` by the `Value` it names, in lexical scope; reports undefined values, uses
    before definition, values used outside their region, and redefinitions."""

    def __init__(self, engine: DiagnosticEngine) -> None:
        self.engine = engine

    def resolve_module(self, module: ModuleOp) -> None:
        for func in module.funcs:
            self.defined: dict[str, Value] = {}
            self.all_defs: dict[str, Value] = {}
            self._collect_defs(func)
            scope: dict[str, Value] = {}
            for arg in func.args:
                self._define(arg, scope)
            self._resolve_block(func.body, scope)

    def _collect_defs(self, op: Op) -> None:
        for o in op.walk():
            for v in [*o.results, *(o.iter_args if isinstance(o, ForOp) else [])]:
                self.all_defs.setdefault(v.name, v)

    def _define(self, value: Value, scope: dict[str, Value]) -> None:
        prior = self.defined.get(value.name)
        if prior is not None:
            self.engine.error(f"value %{value.name} is defined twice", value.loc,
                              [note("first definition here", prior.loc)])
        self.defined[value.name] = value
        scope[value.name] = value

    def _use(self, use: Value, scope: dict[str, Value]) -> Value:
        if not isinstance(use, UnresolvedUse):
            return use
        found = scope.get(use.name)
        if found is not None:
            return found
        later = self.all_defs.get(use.name)
        if later is None:
            self.engine.error(f"use of undefined value %{use.name}", use.loc)
        elif use.name in self.defined:
            self.engine.error(f"value %{use.name} is not visible here: it is defined inside a region",
                              use.loc, [note("defined here", later.loc)])
        else:
            self.engine.error(f"use of value %{use.name} before its definition", use.loc,
                              [note("defined here", later.loc)])
        # A stand-in with no type lets verification continue without cascading errors.
        return Value(use.name, None, None, use.loc)

    def _resolve_block(self, ops: list[Op], outer: dict[str, Value]) -> None:
        scope = dict(outer)
        for op in ops:
            self._resolve_op(op, scope)
            for r in op.results:
                self._define(r, scope)

    def _resolve_op(self, op: Op, scope: dict[str, Value]) -> None:
        def u(use: Value, scope: dict[str, Value]) -> Value:
            value = self._use(use, scope)
            op.use_locs.setdefault(id(value), use.loc)
            return value

        if isinstance(op, KernelOp | EinsumOp):
            for b in op.inputs:
                b.value = u(b.value, scope)
        elif isinstance(op, GenericOp | CallOp):
            op.args = [u(a, scope) for a in op.args]
        elif isinstance(op, ReturnOp | YieldOp):
            op.values = [u(a, scope) for a in op.values]
        elif isinstance(op, SliceOp):
            op.source = u(op.source, scope)
        elif isinstance(op, InsertOp):
            op.value = u(op.value, scope)
            op.dest = u(op.dest, scope)
        elif isinstance(op, GroupOp):
            self._resolve_block(op.body, scope)
        elif isinstance(op, ForOp):
            op.inits = [u(a, scope) for a in op.inits]
            inner = dict(scope)
            for arg, init in zip(op.iter_args, op.inits, strict=True):
                # An iteration argument has the type of its initial value.
                arg.type = init.type
                arg.owner = op
                self._define(arg, inner)
            self._resolve_block(op.body, inner)
        elif isinstance(op, IfOp):
            op.cond = u(op.cond, scope)
            self._resolve_block(op.then_body, scope)
            self._resolve_block(op.else_body, scope)
