"""The SIR core: types, expressions, ops, parser, printer, verifier, builder, diagnostics and pass manager.

    from solar.ir import load, print_module
    module = load("examples/mlp.sir")        # parse + verify; raises DiagnosticError with every problem
    print(print_module(module))
"""

from __future__ import annotations

from .builder import ModuleBuilder, tensor
from .diagnostics import Diagnostic, DiagnosticEngine, DiagnosticError, Location
from .dtypes import DType
from .ops import EinsumOp, FuncOp, KernelOp, ModuleOp, Op, Value
from .parser import parse_module
from .printer import print_module
from .source import decode_source
from .types import TensorType
from .verifier import verify


def parse_and_verify(text: str, file: str = "<stdin>") -> ModuleOp:
    """Parses and verifies SIR text; raises DiagnosticError carrying every diagnostic on failure."""
    engine = DiagnosticEngine()
    module = parse_module(text, file, engine)
    if not verify(module, engine) or engine.has_errors:
        raise DiagnosticError(engine.diagnostics, engine.sources)
    return module


def load(path: str) -> ModuleOp:
    """Reads, parses and verifies a .sir file; bytes that are not UTF-8 are a DiagnosticError too."""
    with open(path, "rb") as fh:
        return parse_and_verify(decode_source(fh.read(), path), path)


__all__ = [
    "DType", "Diagnostic", "DiagnosticEngine", "DiagnosticError", "EinsumOp", "FuncOp", "KernelOp", "Location",
    "ModuleBuilder", "ModuleOp", "Op", "TensorType", "Value", "load", "parse_and_verify", "parse_module",
    "print_module", "tensor", "verify",
]
