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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from solar.ir.analysis.counts import Counts
from solar.ir.ops import Op, Value

if TYPE_CHECKING:
    import numpy as np

    from .cost import CostModel
    from .executor import Program

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
            self._resolved[cls] = next((self._hooks[c] for c in cls.__mro__ if c in self._hooks), None)
        return self._resolved[cls]


Env = dict[Value, "np.ndarray"]
# A hook takes the op of the class it is registered for, so its op parameter is typed as that class; the
# tables hold hooks for many classes, hence `Any` in that one position.
ExecuteHook = Callable[["Program", Any, Env, dict[str, int]], list["np.ndarray"]]
CountsHook = Callable[["CostModel", Any, dict], Counts]
ReadBytesHook = Callable[["CostModel", Any, Value, int, dict], int]
WriteBytesHook = Callable[["CostModel", Any, Value, dict], int]

EXECUTE: HookTable[ExecuteHook] = HookTable("execute")
COUNTS: HookTable[CountsHook] = HookTable("counts")
READ_BYTES: HookTable[ReadBytesHook] = HookTable("read-bytes")
WRITE_BYTES: HookTable[WriteBytesHook] = HookTable("write-bytes")
