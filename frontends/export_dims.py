"""Which input dimensions `torch.export` keeps symbolic, and why the others stay fixed.

Validation runs the IR with its size parameters bound small, so every input dimension that stays symbolic
is one that shrinks. `--dynamic all` (solar-translate's default) asks for every dimension of every input
(`Dim.AUTO`: export keeps a dimension symbolic where the program allows it and quietly fixes the others,
such as one that meets a weight). When export fails even so, dimensions go back to static one at a time
(the one its error names, else the last still asked for), and only then does export fall back to the batch
dimension alone, and finally to static shapes. An export whose sizes come to divide by the block count of
a padded length is stopped at once (quotient_sizes.py), and the last dim behind it goes back to static.

`explain_fixed` says for each dimension that stayed fixed why: the program tied it to a weight or buffer of
the same size, it fixed it otherwise (a reshape or view to a constant), or export failed with it symbolic.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from .diagnostics import user_frames
from .quotient_sizes import QuotientDivisor, refuse_quotient_divisors

Spec = tuple[Any, ...]
# How export names an input dimension in its errors: `L['x'].size()[1]`, `x.size()[1]`, `x.shape[1]`.
_NAMED_DIM = re.compile(r"(?:L\['|\b)(\w+)(?:'\])?\.(?:size\(\)|shape)\[(\d+)\]")
# Why a dim was set static when a size of the export divided by a padded length's block count (quotient_sizes.py).
QUOTIENT_REASON = ("a size divides by its block count once padded to a multiple, which the IR cannot express; "
                   "export was stopped there (simplifying such sizes can take it an hour)")
# Retries after the first failure with every dimension asked for (each retry is a full export).
MAX_RETRIES = 4


@dataclass
class ExportDims:
    """What was asked of export and what it gave up, for the header of the written IR."""

    asked: set[tuple[int, int]] = field(default_factory=set)  # (input index, dim) asked symbolic
    dropped: dict[tuple[int, int], str] = field(default_factory=dict)  # dims set static after a failed export
    mode: str = "all"  # the spec that exported: 'all', 'batch' or 'none'
    fallback: str = ""  # why the translation fell back from 'all' (when it did)


def _tensors(inputs: Sequence[Any]) -> list[tuple[int, torch.Tensor]]:
    return [(i, x) for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.dim() >= 1]


def all_dims(inputs: Sequence[Any]) -> set[tuple[int, int]]:
    """Every dimension that can shrink (a size of 1 cannot, and export would fix it anyway)."""
    return {(i, d) for i, x in _tensors(inputs) for d in range(x.dim()) if x.shape[d] > 1}


def spec_for(inputs: Sequence[Any], dims: set[tuple[int, int]]) -> Spec:
    out: list[Any] = []
    for i, x in enumerate(inputs):
        wanted = {d: torch.export.Dim.AUTO for d in range(x.dim()) if (i, d) in dims} if isinstance(
            x, torch.Tensor) else {}
        out.append(wanted or None)
    return tuple(out)


def batch_specs(inputs: Sequence[Any]) -> list[Spec]:
    """The leading dim of every input whose leading size equals the first input's (the batch), first as one
    shared named Dim (one size parameter), then as Dim.AUTO each. Inputs with another leading size (index
    lists, masks, tables) stay static: marking them too would give unrelated parameters for sizes the
    program assumes equal, and non-affine sizes such as min(5, s)."""
    tensors = _tensors(inputs)
    if not tensors or tensors[0][1].shape[0] <= 1:
        return []
    batch = tensors[0][1].shape[0]
    shared = torch.export.Dim("batch", min=2)

    def spec(dim: Any) -> Spec:
        return tuple({0: dim} if isinstance(x, torch.Tensor) and x.dim() >= 1 and x.shape[0] == batch else None
                     for x in inputs)

    return [spec(shared), spec(torch.export.Dim.AUTO)]


# What torch.export marks on an input tensor for the dims it was asked to keep symbolic. It clears them once
# an export succeeds, not when one fails: left there, they make the next export (fewer dims, or static
# shapes) keep the failed dims symbolic all the same.
_DIM_MARKERS = ("_dynamo_weak_dynamic_indices", "_dynamo_dynamic_indices", "_dynamo_dynamic_range",
                "_dynamo_static_indices", "_dynamo_unbacked_indices", "_dynamo_propagated_dynamic_indices",
                "_has_dynamo_dim_marking")


def _clear_dim_markers(inputs: Sequence[Any]) -> None:
    for leaf in torch.utils._pytree.tree_leaves(list(inputs)):
        if isinstance(leaf, torch.Tensor):
            for attr in _DIM_MARKERS:
                if hasattr(leaf, attr):
                    delattr(leaf, attr)


def _export_failure(err: Exception) -> str:
    """Why export failed with a dim symbolic, in SOLAR's words: the program's line where the traceback shows
    one, and the kind of error (export's messages quote guards and internal symbols, never the program)."""
    frames = user_frames(err)
    at = f" at {os.path.basename(frames[-1].file)}:{frames[-1].line}" if frames else ""
    return f"export failed with it symbolic{at} ({type(err).__name__})"


def _named_dim(err: Exception, names: Sequence[str], dims: set[tuple[int, int]]) -> tuple[int, int] | None:
    for m in _NAMED_DIM.finditer(str(err)):
        if m.group(1) in names:
            key = (names.index(m.group(1)), int(m.group(2)))
            if key in dims:
                return key
    return None


def export_dynamic(export: Callable[[Spec | None], torch.export.ExportedProgram], inputs: Sequence[Any],
                   dynamic: str, names: Sequence[str] = (), dims: set[tuple[int, int]] | None = None
                   ) -> tuple[torch.export.ExportedProgram, ExportDims]:
    """Exports through `export(spec)` with the dims `dynamic` asks for ('all', 'batch', 'none'; `dims`, when
    given, instead of all), falling back as the module docstring says. `names` are the forward's parameter
    names (to read export's errors)."""
    info = ExportDims(mode=dynamic)

    def fresh(spec: Spec | None) -> torch.export.ExportedProgram:
        _clear_dim_markers(inputs)  # what a failed attempt marked (_DIM_MARKERS)
        return export(spec)

    if dynamic == "all":
        dims = set(all_dims(inputs) if dims is None else dims)
        info.asked = set(dims)
        for _ in range(MAX_RETRIES + 1):
            if not dims:
                break
            try:
                with refuse_quotient_divisors():
                    return fresh(spec_for(inputs, dims)), info
            except QuotientDivisor as err:  # the last dim inside the quotient (quotient_sizes.py)
                named = [key for key in (_named_dim(Exception(s), names, dims) for s in err.sources) if key]
                drop = max(named or dims)
                dims.discard(drop)
                info.dropped[drop] = QUOTIENT_REASON
            except Exception as err:
                drop = _named_dim(err, names, dims) or max(dims)
                dims.discard(drop)
                info.dropped[drop] = _export_failure(err)
    if dynamic in ("all", "batch"):
        for spec in batch_specs(inputs):
            try:
                with refuse_quotient_divisors():
                    ep = fresh(spec)
            except Exception:
                continue
            info.mode = "batch"
            return ep, info
    info.mode = "none"
    return fresh(None), info


def _input_shapes(ep: torch.export.ExportedProgram) -> list[tuple[Any, ...]]:
    kinds = torch.export.graph_signature.InputKind
    users = [s.arg.name for s in ep.graph_signature.input_specs if s.kind == kinds.USER_INPUT]
    vals = {n.name: n.meta.get("val") for n in ep.graph.nodes if n.op == "placeholder"}
    return [tuple(vals[u].shape) if isinstance(vals.get(u), torch.Tensor) else () for u in users]


def _state_shapes(ep: torch.export.ExportedProgram) -> list[tuple[str, str, tuple[int, ...]]]:
    """(kind, qualified name, shape) of every parameter, buffer and constant the program reads."""
    kinds = torch.export.graph_signature.InputKind
    vals = {n.name: n.meta.get("val") for n in ep.graph.nodes if n.op == "placeholder"}
    out = []
    for s in ep.graph_signature.input_specs:
        if s.kind in (kinds.PARAMETER, kinds.BUFFER, kinds.CONSTANT_TENSOR) and isinstance(
                vals.get(s.arg.name), torch.Tensor):
            dims = tuple(_static_size(d) for d in vals[s.arg.name].shape)
            kind = {kinds.PARAMETER: "weight", kinds.BUFFER: "buffer"}.get(s.kind, "constant")
            out.append((kind, str(s.target), tuple(d for d in dims if d is not None)))
    return out


def _static_size(size: Any) -> int | None:
    """The size when it is a constant (a plain int, or a SymInt export specialised), else None."""
    if isinstance(size, torch.SymInt):
        try:
            return int(size.node.expr)
        except (TypeError, ValueError):
            return None
    return int(size)


def explain_fixed(ep: torch.export.ExportedProgram, info: ExportDims, names: Sequence[str]) -> list[str]:
    """One line per dimension asked symbolic that export left at a fixed size, saying why."""
    shapes = _input_shapes(ep)
    state = _state_shapes(ep)
    lines: list[str] = []
    for i, d in sorted(info.asked):
        size = _static_size(shapes[i][d]) if i < len(shapes) and d < len(shapes[i]) else None
        if size is None:
            continue
        what = f"{names[i] if i < len(names) else f'input {i}'} dim {d} ({size})"
        if (i, d) in info.dropped:
            why = info.dropped[(i, d)]
        elif info.mode != "all":
            why = f"only {info.mode} dims stay symbolic: {info.fallback or 'export failed with more'}"
        else:
            owner = next((f"{k} {n} {list(s)}" for k, n, s in state if size in s), None)
            why = (f"tied to the fixed-size {owner}" if owner else
                   "the program fixes it (a reshape, view or expand to a constant size, or a size it tests)")
        lines.append(f"{what}: {why}")
    return lines


def size_lines(full: dict[str, int], where: dict[str, list[tuple[int, int]]], names: Sequence[str],
               sizes: dict[str, int], fixed: Sequence[str]) -> list[str]:
    """Header lines: each size parameter as run against its full size and the input dims it sizes, then the
    dims that could not shrink and why."""

    def dims(param: str) -> str:
        return ", ".join(f"{names[i] if i < len(names) else f'input {i}'} dim {d}" for i, d in where.get(param, []))

    reduced = [f"{p} {full[p]} -> {sizes[p]} ({dims(p)})" for p in full if p in sizes and sizes[p] < full[p]]
    kept = [f"{p} {full[p]} ({dims(p)})" for p in full if p in sizes and sizes[p] >= full[p]]
    lines = []
    if reduced:
        lines.append("reduced dims: " + "; ".join(reduced))
    if kept:
        lines.append("size parameters run at full size: " + "; ".join(kept))
    lines.extend(f"fixed (cannot shrink): {line}" for line in fixed)
    return lines
