"""The SIR core: types, expressions, ops, parser, printer, verifier, builder, diagnostics and pass manager.

    from solar.ir import load, print_module
    module = load("examples/mlp.sir")        # parse + verify; raises DiagnosticError with every problem
    print(print_module(module))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .builder import ModuleBuilder, tensor
    from .diagnostics import Diagnostic, DiagnosticEngine, DiagnosticError, Location
    from .dtypes import DType
    from .ops import EinsumOp, FuncOp, KernelOp, ModuleOp, Op, Value
    from .parser import parse_module
    from .printer import print_module
    from .types import TensorType
    from .verifier import verify

# Names are imported on first use (PEP 562): importing one submodule, such as solar.ir.diagnostics, must
# not load the parser and Lark with it (a command's start-up pays for every module it touches).
_LAZY = {
    "ModuleBuilder": "builder", "tensor": "builder",
    "Diagnostic": "diagnostics", "DiagnosticEngine": "diagnostics", "DiagnosticError": "diagnostics",
    "Location": "diagnostics", "DType": "dtypes",
    "EinsumOp": "ops", "FuncOp": "ops", "KernelOp": "ops", "ModuleOp": "ops", "Op": "ops", "Value": "ops",
    "parse_module": "parser", "print_module": "printer", "TensorType": "types", "verify": "verifier",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def parse_and_verify(text: str, file: str = "<stdin>") -> ModuleOp:
    """Parses and verifies SIR text; raises DiagnosticError carrying every diagnostic on failure."""
    from .diagnostics import DiagnosticEngine, DiagnosticError
    from .parser import parse_module
    from .verifier import verify

    engine = DiagnosticEngine()
    module = parse_module(text, file, engine)
    if not verify(module, engine) or engine.has_errors:
        raise DiagnosticError(engine.diagnostics, engine.sources)
    return module


def load(path: str) -> ModuleOp:
    """Reads, parses and verifies a .sir file; bytes that are not UTF-8 are a DiagnosticError too."""
    from .source import decode_source

    with open(path, "rb") as fh:
        return parse_and_verify(decode_source(fh.read(), path), path)


__all__ = [
    "DType", "Diagnostic", "DiagnosticEngine", "DiagnosticError", "EinsumOp", "FuncOp", "KernelOp", "Location",
    "ModuleBuilder", "ModuleOp", "Op", "TensorType", "Value", "load", "parse_and_verify", "parse_module",
    "print_module", "tensor", "verify",
]
