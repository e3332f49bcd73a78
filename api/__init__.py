"""SOLAR from Python: `solar.analyze(model, example_inputs)` returns an `Analysis` (docs/python-api.md).

Importing `solar` loads nothing heavy: the names below are imported on first use, so `import solar` costs
what this file costs, and a notebook pays for torch, JAX or the cost model only when it calls them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from solar.entry import analyze
    from solar.errors import (
        BadInputError,
        BadOptionError,
        ModelError,
        OutputPathError,
        SIRError,
        SolarError,
        SweepSpecError,
        TranslationFailed,
        UnknownTargetError,
    )
    from solar.results import Analysis, GroupCost, ModeTotal, ModuleCost, UnitCost

# Public name → the module of this package that defines it.
_LAZY = {
    "analyze": "solar.entry",
    "Analysis": "solar.results", "ModeTotal": "solar.results", "UnitCost": "solar.results",
    "GroupCost": "solar.results", "ModuleCost": "solar.results",
    "SolarError": "solar.errors", "BadInputError": "solar.errors", "BadOptionError": "solar.errors",
    "ModelError": "solar.errors",
    "TranslationFailed": "solar.errors", "UnknownTargetError": "solar.errors", "OutputPathError": "solar.errors",
    "SIRError": "solar.errors", "SweepSpecError": "solar.errors",
}

__all__ = ["Analysis", "BadInputError", "BadOptionError", "GroupCost", "ModeTotal", "ModelError", "ModuleCost",
           "OutputPathError", "SIRError", "SolarError", "SweepSpecError", "TranslationFailed", "UnitCost",
           "UnknownTargetError", "analyze"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'solar' has no attribute '{name}'")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once imported, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
