"""What the backends do with each op class, looked up by class instead of dispatched by isinstance: how the
executor runs it and how the cost model counts it. The IR core knows nothing of the backends, so an op
declares its backend behaviour by registering hooks here (`@EXECUTE.register(SortOp)`), from a backend
module; a subclass inherits its base's hooks. docs/writing-an-op.md shows one.

    EXECUTE      (program, op, env, idx) -> result arrays        every op that can run
    COUNTS       (model, op, loops) -> Counts                     ops that do arithmetic (default: none)
    READ_BYTES   (model, op, value, full, loops) -> bytes         DRAM bytes the op reads of one operand
                                                                  (default: `full`, the whole tensor)
    WRITE_BYTES  (model, op, value, loops) -> bytes               bytes it writes of one result (default:
                                                                  the whole tensor)

A backend module declares its hooks in a `HookSet` (`@HOOKS.execute(SortOp)`), which registers nothing by
being imported. An op class names the set that holds its hooks (`Op.backend_hooks`, "module:name"), which
a table installs the first time it looks the class up; the executor and the cost model `install` their own
sets (kernels, einsums, structural ops) when they load. The
hooks see the executor and the cost model through the protocols `Runner` and `CostQueries`, so a hook module
imports neither.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from solar.ir.analysis.counts import Counts
from solar.ir.ops import Op, Value

if TYPE_CHECKING:
    import numpy as np

H = TypeVar("H", bound=Callable[..., Any])


class HookTable(Generic[H]):
    """One hook per op class; `lookup` walks the class's bases, so a subclass inherits a hook."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._hooks: dict[type[Op], H] = {}
        self._resolved: dict[type[Op], H | None] = {}

    def register(self, *classes: type[Op]) -> Callable[[H], H]:
        def add(hook: H) -> H:
            for cls in classes:
                if cls in self._hooks:
                    raise ValueError(f"{cls.__name__} already has a {self.name} hook")
                self._hooks[cls] = hook
            self._resolved.clear()
            return hook

        return add

    def lookup(self, cls: type[Op]) -> H | None:
        if cls not in self._resolved:
            install_declared(cls)
            self._resolved[cls] = next((self._hooks[c] for c in cls.__mro__ if c in self._hooks), None)
        return self._resolved[cls]


Env = dict[Value, "np.ndarray"]


class Runner(Protocol):
    """What an EXECUTE hook may ask the executor (`solar.backends.executor.Program` is one)."""

    def run_block(self, ops: list[Op], env: Env, idx: dict[str, int]) -> list[np.ndarray]: ...


class CostQueries(Protocol):
    """What a COUNTS, READ_BYTES or WRITE_BYTES hook may ask the cost model (`solar.backends.cost.CostModel`
    is one): the size parameters with their values, a tensor's bytes, and another op's counts."""

    params: list[str]
    values: dict[str, int]

    def nbytes(self, v: Value) -> int: ...

    def counts(self, op: Op, loops: dict) -> Counts: ...


# A hook takes the op of the class it is registered for, so its op parameter is typed as that class; the
# tables hold hooks for many classes, hence `Any` in that one position.
ExecuteHook = Callable[[Runner, Any, Env, dict[str, int]], list["np.ndarray"]]
CountsHook = Callable[[CostQueries, Any, dict], Counts]
ReadBytesHook = Callable[[CostQueries, Any, Value, int, dict], int]
WriteBytesHook = Callable[[CostQueries, Any, Value, dict], int]

EXECUTE: HookTable[ExecuteHook] = HookTable("execute")
COUNTS: HookTable[CountsHook] = HookTable("counts")
READ_BYTES: HookTable[ReadBytesHook] = HookTable("read-bytes")
WRITE_BYTES: HookTable[WriteBytesHook] = HookTable("write-bytes")


class HookSet:
    """The hooks one backend module declares, per op class. Declaring registers nothing; `install` puts a
    set into the tables, once however often it is called."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.entries: list[tuple[HookTable[Any], tuple[type[Op], ...], Callable[..., Any]]] = []

    def _declare(self, table: HookTable[H], classes: tuple[type[Op], ...]) -> Callable[[H], H]:
        def add(hook: H) -> H:
            self.entries.append((table, classes, hook))
            return hook

        return add

    def execute(self, *classes: type[Op]) -> Callable[[ExecuteHook], ExecuteHook]:
        return self._declare(EXECUTE, classes)

    def counts(self, *classes: type[Op]) -> Callable[[CountsHook], CountsHook]:
        return self._declare(COUNTS, classes)

    def read_bytes(self, *classes: type[Op]) -> Callable[[ReadBytesHook], ReadBytesHook]:
        return self._declare(READ_BYTES, classes)

    def write_bytes(self, *classes: type[Op]) -> Callable[[WriteBytesHook], WriteBytesHook]:
        return self._declare(WRITE_BYTES, classes)


_INSTALLED: set[HookSet] = set()


def install(*sets: HookSet) -> None:
    """Registers every hook of `sets` in its table; a set already installed is skipped."""
    for hook_set in sets:
        if hook_set in _INSTALLED:
            continue
        for table, classes, hook in hook_set.entries:
            table.register(*classes)(hook)
        _INSTALLED.add(hook_set)


def install_declared(cls: type[Op]) -> None:
    """Installs the hook sets that `cls` and its bases declare (`Op.backend_hooks`, "module:name")."""
    for base in cls.__mro__:
        ref = base.__dict__.get("backend_hooks")
        if ref and ref not in _LOADED:
            module, _, name = ref.partition(":")
            hook_set = getattr(importlib.import_module(module), name)
            if not isinstance(hook_set, HookSet):
                raise TypeError(f"{base.__name__}.backend_hooks names {ref}, which is not a HookSet")
            _LOADED.add(ref)
            install(hook_set)


_LOADED: set[str] = set()
