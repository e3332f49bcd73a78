"""Which input dimensions of a JAX program become size parameters, traced with JAX's symbolic shapes.

`solar-translate --framework jax` (`--dynamic all`, the default) traces the function with
`jax.make_jaxpr` on `jax.ShapeDtypeStruct`s whose dimensions are symbols (`jax.export.symbolic_shape`):
one symbol per size parameter, named as the torch frontend names them (`size_names.SizeNamer`: a
module-level global that alone holds the size, `batch_size` → `BATCH`; else `BATCH` for the first leading
dimension, then the argument and axis, `mask` axis 1 → `MASK_1`).

JAX proves no equalities by itself: it refuses to add a `(b, d)` to a `(b2, d)`, and says which shapes
met. So every dimension starts as its own symbol (but those a global sizes: one quantity, one symbol), and
each failed trace is read for the equalities the program needs: the shapes its message names, aligned
(from the right as broadcasting does, by label for an einsum, all but the joined axis for a concatenation);
two symbols of one size that meet become one, and the function is traced again. A symbol that meets a
constant, or one the error names alone (a shape tested in Python, a reshape to a constant, a mask built at
a fixed size), goes back to static: its dimensions are fixed (where no shape says which, the named symbols
of one size are joined first, then the last one named is fixed). Each step joins or fixes a symbol, so the
loop ends; past `MAX_TRACES` traces the dimensions are grouped by size outright. Then only the batch
dimensions stay symbolic (`--dynamic batch`: the leading dimension of every input whose leading size is the
first input's), and finally none. Lowering failures fix a symbol the same way (`translate_jax`). Each fixed
dimension says why in the header of the written IR.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solar.ir.expr import Binary, Expr, IntLit, NameRef, Unary

from .diagnostics import TranslationError, user_frames
from .lowering.core import LoweringError, canon
from .size_names import SizeNamer, SizeNames, named_params

Dim = tuple[int, int]  # (input index, axis)
MAX_RETRIES = 4  # lowerings after a failed one, each with one more symbol fixed
MAX_TRACES = 64  # traces spent on finding the equalities, before grouping by size outright


@dataclass
class SizeGroups:
    """The input dimensions asked symbolic, grouped: one group is one size parameter."""

    groups: list[list[Dim]]
    names: list[str]  # the parameter name of each group
    defaults: dict[str, int]  # parameter → its full (traced) size

    def where(self) -> dict[str, list[Dim]]:
        return {n: sorted(g) for n, g in zip(self.names, self.groups, strict=True)}

    def symbol_of(self) -> dict[Dim, str]:
        return {dim: n for n, g in zip(self.names, self.groups, strict=True) for dim in g}


@dataclass
class JaxDims:
    """What was asked symbolic and what was given up, for the header of the written IR (as
    `export_dims.ExportDims` for torch)."""

    asked: set[Dim] = field(default_factory=set)
    dropped: dict[Dim, str] = field(default_factory=dict)
    mode: str = "all"  # 'all', 'batch' or 'none': the policy that traced
    fallback: str = ""


def shapes_of(args: Sequence[Any]) -> list[tuple[int, ...] | None]:
    """Each argument's shape, None for a non-array (a Python number)."""
    return [tuple(int(d) for d in np.shape(a)) if hasattr(a, "shape") and hasattr(a, "dtype") else None
            for a in args]


def asked_dims(shapes: Sequence[tuple[int, ...] | None], dynamic: str) -> set[Dim]:
    """The dims `dynamic` asks symbolic: every dim above 1 ('all'), the leading dim of every input whose
    leading size is the first input's ('batch'), or none."""
    if dynamic == "all":
        return {(i, d) for i, s in enumerate(shapes) if s for d, n in enumerate(s) if n > 1}
    if dynamic == "batch":
        first = next((s for s in shapes if s), None)
        if not first or first[0] <= 1:
            return set()
        return {(i, 0) for i, s in enumerate(shapes) if s and s[0] == first[0]}
    return set()


def name_groups(groups: list[list[Dim]], shapes: Sequence[tuple[int, ...] | None], input_names: Sequence[str],
                source: SizeNames) -> SizeGroups:
    """Names each group as the torch frontend names a shape symbol (SizeNamer), in input order."""
    syms = SizeNamer(source)
    group_of = {dim: k for k, g in enumerate(groups) for dim in g}
    for dim in sorted(group_of):
        i, d = dim
        shape = shapes[i]
        assert shape is not None
        syms.declare(group_of[dim], d, shape[d], i, input_names[i] if i < len(input_names) else "")
    names = [syms.names[k] for k in range(len(groups))]
    return SizeGroups(groups, names, dict(syms.defaults))


def by_size(dims: set[Dim], shapes: Sequence[tuple[int, ...] | None]) -> list[list[Dim]]:
    """One group per size, in input order."""
    out: dict[int, list[Dim]] = {}
    for i, d in sorted(dims):
        shape = shapes[i]
        assert shape is not None
        out.setdefault(shape[d], []).append((i, d))
    return list(out.values())


def symbolic_args(args: Sequence[Any], sizes: SizeGroups) -> list[Any]:
    """The arguments with every grouped dim a JAX symbol of its parameter's name (ShapeDtypeStructs)."""
    import jax

    symbol_of = sizes.symbol_of()
    if not symbol_of:
        return list(args)
    names = list(dict.fromkeys(sizes.names))
    symbols = dict(zip(names, jax.export.symbolic_shape(", ".join(names)), strict=True))
    out: list[Any] = []
    for i, a in enumerate(args):
        shape = np.shape(a) if hasattr(a, "dtype") else ()
        if not any((i, d) in symbol_of for d in range(len(shape))):
            out.append(a)
            continue
        dims = tuple(symbols[symbol_of[(i, d)]] if (i, d) in symbol_of else int(n) for d, n in enumerate(shape))
        out.append(jax.ShapeDtypeStruct(dims, a.dtype))
    return out


def where_in_program(err: BaseException) -> str:
    """` at model.py:12`: the innermost line of the user's program in `err`'s traceback, else nothing."""
    frames = user_frames(err)
    return f" at {os.path.basename(frames[-1].file)}:{frames[-1].line}" if frames else ""


def failure_cause(err: BaseException) -> str:
    """Why a trace or translation with symbolic sizes failed, in SOLAR's own words: JAX's and Python's
    messages quote internals (tracers, abstract values) that say nothing about the program, so the header
    names the kind of failure and the program's line instead."""
    if isinstance(err, TranslationError):
        return f"{', '.join(err.ops)} cannot be translated with symbolic sizes"
    if isinstance(err, LoweringError):
        return f"a lowering cannot take symbolic sizes{where_in_program(err)}"
    return f"tracing with symbolic sizes failed{where_in_program(err)}"


class Tracer:
    """Traces `fn` with dimensions grouped into symbols, joining and fixing groups as the module docstring
    says. `trace(sizes)` returns the closed jaxpr or raises what JAX raised."""

    def __init__(self, fn: Callable[..., Any], args: Sequence[Any], input_names: Sequence[str],
                 source: SizeNames, make_jaxpr: Callable[..., Any]) -> None:
        self.fn, self.args, self.input_names, self.source = fn, list(args), list(input_names), source
        self.shapes = shapes_of(args)
        self.make_jaxpr = make_jaxpr
        self.traces = 0

    def named(self, groups: list[list[Dim]]) -> SizeGroups:
        return name_groups(groups, self.shapes, self.input_names, self.source)

    def trace(self, sizes: SizeGroups) -> Any:
        self.traces += 1
        return self.make_jaxpr(self.fn)(*symbolic_args(self.args, sizes))

    def size(self, dim: Dim) -> int:
        shape = self.shapes[dim[0]]
        assert shape is not None
        return shape[dim[1]]

    def initial(self, dims: set[Dim]) -> list[list[Dim]]:
        """Every dim its own group, but the dims one global sizes: one group per global."""
        sourced: dict[int, list[Dim]] = {}
        groups: list[list[Dim]] = []
        for dim in sorted(dims):
            if dim in self.source or self.size(dim) in self.source:
                if self.size(dim) not in sourced:
                    sourced[self.size(dim)] = []
                    groups.append(sourced[self.size(dim)])
                sourced[self.size(dim)].append(dim)
            else:
                groups.append([dim])
        return groups

    def solve(self, groups: list[list[Dim]], info: JaxDims) -> tuple[Any, SizeGroups]:
        """Traces with `groups`, joining and fixing groups after each failure (module docstring); raises
        the last failure when nothing is left to fix."""
        groups = [list(g) for g in groups if g]
        coarse = False
        while True:
            sizes = self.named(groups)
            try:
                return self.trace(sizes), sizes
            except Exception as err:
                if not groups:
                    raise
                if self.traces >= MAX_TRACES and not coarse:
                    coarse = True  # too many steps: every dim of one size one parameter, then fix only
                    groups = by_size({d for g in groups for d in g}, self.shapes)
                    continue
                groups = self._step(groups, sizes, err, info, join=not coarse)

    def _step(self, groups: list[list[Dim]], sizes: SizeGroups, err: Exception, info: JaxDims,
              join: bool) -> list[list[Dim]]:
        index = {n: k for k, n in enumerate(sizes.names)}
        value = {n: sizes.defaults[n] for n in sizes.names}
        pairs, constants = met_shapes(str(err), set(sizes.names))
        joins = [(a, b) for a, b in pairs if value[a] == value[b]] if join else []
        if not joins and join:
            # No shapes to read: join the symbols of one size the error names (it may be their equality).
            named = named_params(err, sizes.names)
            by_value: dict[int, list[str]] = {}
            for n in named:
                by_value.setdefault(value[n], []).append(n)
            joins = [(ns[0], n) for ns in by_value.values() for n in ns[1:]]
        if joins:
            return _joined(groups, [(index[a], index[b]) for a, b in joins])
        named = named_params(err, sizes.names)
        fixed = constants or named[-1:] or [sizes.names[-1]]
        at = where_in_program(err)
        if constants:
            why = f"it meets an array of fixed size{at} (one built at a constant size)"
        elif named:
            why = (f"the program needs its size as a constant{at} (a shape tested in Python, a reshape to a "
                   "constant shape, or an array built at a fixed size)")
        else:
            why = f"tracing failed with it symbolic{at}"
        drop = {index[n] for n in fixed}
        for k in drop:
            for dim in groups[k]:
                info.dropped[dim] = why
        return [g for k, g in enumerate(groups) if k not in drop]


def _joined(groups: list[list[Dim]], joins: list[tuple[int, int]]) -> list[list[Dim]]:
    """The groups with each pair of `joins` (group indices) made one (union-find), in first-dim order."""
    parent = list(range(len(groups)))

    def root(k: int) -> int:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for a, b in joins:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    merged: dict[int, list[Dim]] = {}
    for k, g in enumerate(groups):
        merged.setdefault(root(k), []).extend(g)
    return sorted((sorted(g) for g in merged.values()), key=lambda g: g[0])


_TUPLE = re.compile(r"\(([^()]*)\)")
_EINSUM = re.compile(r"(\w+)\.shape=\(([^()]*)\)\s*\1_names=(\w+)")
_CONCAT = re.compile(r"concatenating along dimension (\d+)")


def met_shapes(message: str, names: set[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """The symbols a shape error says met: pairs of symbols at one position of the shapes it names, and
    symbols that met a constant. Shapes align from the right (broadcasting), by label (an einsum's
    `lhs.shape=(...) lhs_names=bij`), or but for the joined axis (a concatenation)."""
    first = message.split("\n", 1)[0]

    def parse(text: str) -> list[str | int | None]:
        out: list[str | int | None] = []
        for part in (p.strip() for p in text.split(",") if p.strip()):
            out.append(part if part in names else int(part) if re.fullmatch(r"-?\d+", part) else None)
        return out

    columns: list[list[str | int | None]] = []
    labelled = _EINSUM.findall(first)
    if len(labelled) >= 2:
        by_label: dict[str, list[str | int | None]] = {}
        for _, shape, labels in labelled:
            for label, d in zip(labels, parse(shape), strict=False):
                by_label.setdefault(label, []).append(d)
        columns = list(by_label.values())
    else:
        shapes = [parse(t) for t in _TUPLE.findall(first)]
        shapes = [sh for sh in shapes if sh]
        skip = _CONCAT.search(first)
        width = max((len(sh) for sh in shapes), default=0)
        for k in range(1, width + 1):
            if skip is not None and width - k == int(skip.group(1)):
                continue
            columns.append([sh[-k] for sh in shapes if len(sh) >= k])
    pairs: list[tuple[str, str]] = []
    constants: list[str] = []
    for col in columns:
        syms = [d for d in col if isinstance(d, str)]
        consts = {d for d in col if isinstance(d, int) and d != 1}
        pairs += [(syms[0], s) for s in syms[1:] if s != syms[0]]
        if consts:
            constants += [s for s in syms if s not in constants]
    return pairs, constants


# ---- JAX's symbolic sizes as SIR expressions --------------------------------------------------------

_CALLS = {"floordiv": "floordiv", "mod": "mod"}


def sir_dim(d: Any) -> int | Expr:
    """A JAX dimension (an int, or a symbolic `_DimExpr` such as `2*SEQ - 1`, `floordiv(D, 2)`) as a SIR
    size: an int, or a canonical expression of the size parameters."""
    if isinstance(d, int | np.integer):
        return int(d)
    text = str(d)
    try:
        tree = ast.parse(text.replace("^", "**"), mode="eval")
        return canon(_expr(tree.body, text))
    except SyntaxError:
        raise LoweringError(f"the size {text} is not affine") from None


def _expr(node: ast.AST, text: str) -> Expr:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return IntLit(node.value)
    if isinstance(node, ast.Name):
        return NameRef(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return Unary("-", _expr(node.operand, text))
    if isinstance(node, ast.BinOp):
        lhs, rhs = _expr(node.left, text), _expr(node.right, text)
        if isinstance(node.op, ast.Pow) and isinstance(rhs, IntLit) and rhs.value >= 1:
            out = lhs
            for _ in range(rhs.value - 1):
                out = Binary("*", out, lhs)
            return out
        ops = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*"}
        if type(node.op) in ops:
            return Binary(ops[type(node.op)], lhs, rhs)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CALLS
            and len(node.args) == 2):
        return Binary(_CALLS[node.func.id], _expr(node.args[0], text), _expr(node.args[1], text))
    raise LoweringError(f"the size {text} is not affine")


def sir_shape(shape: Sequence[Any]) -> tuple[int | Expr, ...]:
    return tuple(sir_dim(d) for d in shape)


_WORD = re.compile(r"[A-Za-z_]\w*")


def symbols_in(shapes: Sequence[Sequence[Any]], params: Sequence[str]) -> list[str]:
    """The size parameters among `params` that the symbolic dims of `shapes` use, in the order of `params`."""
    used = {w for s in shapes for d in s if not isinstance(d, int | np.integer) for w in _WORD.findall(str(d))}
    return [p for p in params if p in used]


def explain_fixed(info: JaxDims, shapes: Sequence[tuple[int, ...] | None], input_names: Sequence[str],
                  kept: set[Dim]) -> list[str]:
    """One line per dimension asked symbolic that stayed fixed, saying why."""
    lines = []
    for i, d in sorted(info.asked - kept):
        shape = shapes[i]
        assert shape is not None
        what = f"{input_names[i] if i < len(input_names) else f'input {i}'} dim {d} ({shape[d]})"
        if (i, d) in info.dropped:
            why = info.dropped[(i, d)]
        else:
            why = f"only {info.mode} dims stay symbolic: {info.fallback or 'tracing failed with more'}"
        lines.append(f"{what}: {why}")
    return lines


def shrink(args: Sequence[Any], where: Mapping[str, Sequence[Dim]], sizes: Mapping[str, int]) -> list[Any]:
    """The first `sizes[P]` entries along every input dim that parameter P sizes (arrays keep their kind:
    a JAX array stays one, so the function runs as it would)."""
    out = list(args)
    for name, places in where.items():
        if name not in sizes:
            continue
        for i, d in places:
            index: list[slice] = [slice(None)] * len(np.shape(out[i]))
            index[d] = slice(0, sizes[name])
            out[i] = out[i][tuple(index)]
    return out
