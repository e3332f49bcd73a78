"""The operations of SIR. Composition-level ops take and define SSA `Value`s; a `KernelOp` holds an affine
loop nest (`KStmt`s) over tensors bound by name; an `EinsumOp` is one extended einsum.

Ops are plain mutable objects: passes edit them in place or build new ones through `solar.ir.Builder`. Each
op class owns its behaviour (verification, printing, result-type inference: see `base.Op`), in one module by
family: `structural` (module, function, group, for, if, call, terminators), `kernel`, `einsum`,
`composition` (constant, slice, insert) and `shape` (the ops of the generic syntax). docs/writing-an-op.md
walks through adding one."""

from __future__ import annotations

from .base import (
    OP_CLASSES,
    AttrValue,
    ExprFn,
    Op,
    SymbolRef,
    TypeFn,
    Value,
    Word,
    clone_ops,
    defined_inside,
    result_types_of,
)
from .composition import ConstantOp, InsertOp, Literal, SliceEntry, SliceOp
from .einsum import EinsumOp, EinsumStmt
from .kernel import REDUCTIONS, AffineFor, AffineIf, Assign, Binding, KernelOp, KStmt, LocalDecl, TensorDecl, walk_stmts
from .shape import (
    SCATTER_REDUCTIONS,
    BroadcastOp,
    ConcatOp,
    GatherOp,
    GenericOp,
    PermuteOp,
    ReshapeOp,
    ScatterOp,
)
from .structural import CallOp, ForOp, FuncOp, GroupOp, IfOp, ModuleOp, Param, ReturnOp, TerminatorOp, YieldOp

__all__ = [
    "OP_CLASSES", "REDUCTIONS", "SCATTER_REDUCTIONS", "AffineFor", "AffineIf", "Assign", "AttrValue", "Binding",
    "BroadcastOp", "CallOp", "ConcatOp", "ConstantOp", "EinsumOp", "EinsumStmt", "ExprFn", "ForOp", "FuncOp",
    "GatherOp", "GenericOp", "GroupOp", "IfOp", "InsertOp", "KStmt", "KernelOp", "Literal", "LocalDecl",
    "ModuleOp", "Op", "Param", "PermuteOp", "ReshapeOp", "ReturnOp", "ScatterOp", "SliceEntry", "SliceOp",
    "SymbolRef", "TensorDecl", "TerminatorOp", "TypeFn", "Value", "Word", "YieldOp", "clone_ops",
    "defined_inside", "result_types_of", "walk_stmts",
]
