"""Linking uses to definitions: the parser builds operands as `UnresolvedUse`s (names as written); the
`Resolver` replaces each by the `Value` it names, in lexical scope, reporting every undefined or misplaced use
at once."""

from __future__ import annotations

from .diagnostics import DiagnosticEngine, note
from .ops import ModuleOp, Op, Value


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
            for v in [*o.results, *(o.block_args if o is not op else [])]:
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

        for k, use in enumerate(op.operands):
            op.set_operand(k, u(use, scope))
        if op.regions:
            inner = dict(scope)
            op.resolve_block_args()
            for arg in op.block_args:
                self._define(arg, inner)
            for region in op.regions:
                self._resolve_block(region, inner)
