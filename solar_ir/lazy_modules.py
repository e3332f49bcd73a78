"""Modules imported when first used, for modules on every command's path that need them only on rare ones.

numpy is a tenth of `solar-opt --sol`'s start on a network (0.1 to 0.2 s), and pricing never needs it: only
sweeps over grids of sizes and running programs do. A module writes

    if TYPE_CHECKING:
        import numpy as np
    else:
        np = LazyModule("numpy")

and uses `np.zeros(...)` as before; `is_array(x)` asks whether x is a numpy array without importing numpy
(when numpy was never imported, nothing is one).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any


class LazyModule:
    """A module's stand-in: its first attribute read imports it."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)


def is_array(value: object) -> bool:
    """Whether `value` is a numpy array, without importing numpy."""
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, numpy.ndarray)
