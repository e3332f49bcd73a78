"""The operations of SIR. Composition-level ops take and define SSA `Value`s; a `KernelOp` holds an affine
loop nest (`KStmt`s) over tensors bound by name; an `EinsumOp` is one extended einsum.

Ops are plain mutable objects: passes edit them in place or build new ones through `solar.ir.Builder`. Each
op class owns its behaviour (verification, printing, result-type inference: see `base.Op`), in one module by
family: `structural` (module, function, group, for, if, call, terminators), `kernel`, `einsum`,
`composition` (constant, slice, insert), `shape` (the ops of the generic syntax) and `select` (the
data-dependent ops: sort, topk, nonzero, ...). docs/writing-an-op.md
walks through adding one."""

from __future__ import annotations

from ..attr_values import AttrValue, SymbolRef, Word
from .base import (
    OP_CLASSES,
    ExprFn,
    Op,
    TypeFn,
    Value,
    clone_ops,
    defined_inside,
    result_types_of,
)
from .composition import ConstantOp, InsertOp, Literal, SliceEntry, SliceOp
from .einsum import EinsumOp, EinsumStmt
from .kernel import REDUCTIONS, AffineFor, AffineIf, Assign, Binding, KernelOp, KStmt, LocalDecl, TensorDecl, walk_stmts
from .select import (
    ArgsortOp,
    CummaxOp,
    CumminOp,
    KthvalueOp,
    MaskedSelectOp,
    NonzeroOp,
    SelectionOp,
    SortOp,
    TopkOp,
)
from .shape import (
    SCATTER_REDUCTIONS,
    BroadcastOp,
    ConcatOp,
    FlipOp,
    GatherOp,
    GenericOp,
    PermuteOp,
    ReshapeOp,
    RollOp,
    ScatterOp,
)
from .structural import CallOp, ForOp, FuncOp, GroupOp, IfOp, ModuleOp, Param, ReturnOp, TerminatorOp, YieldOp

__all__ = [
    "OP_CLASSES",
    "REDUCTIONS",
    "SCATTER_REDUCTIONS",
    "AffineFor",
    "AffineIf",
    "ArgsortOp",
    "Assign",
    "AttrValue",
    "Binding",
    "BroadcastOp",
    "CallOp",
    "ConcatOp",
    "ConstantOp",
    "CummaxOp",
    "CumminOp",
    "EinsumOp",
    "EinsumStmt",
    "ExprFn",
    "FlipOp",
    "ForOp",
    "FuncOp",
    "GatherOp",
    "GenericOp",
    "GroupOp",
    "IfOp",
    "InsertOp",
    "KStmt",
    "KernelOp",
    "KthvalueOp",
    "Literal",
    "LocalDecl",
    "MaskedSelectOp",
    "ModuleOp",
    "NonzeroOp",
    "Op",
    "Param",
    "PermuteOp",
    "ReshapeOp",
    "ReturnOp",
    "RollOp",
    "ScatterOp",
    "SelectionOp",
    "SliceEntry",
    "SliceOp",
    "SortOp",
    "SymbolRef",
    "TensorDecl",
    "TerminatorOp",
    "TopkOp",
    "TypeFn",
    "Value",
    "Word",
    "YieldOp",
    "clone_ops",
    "defined_inside",
    "result_types_of",
    "walk_stmts",
]
