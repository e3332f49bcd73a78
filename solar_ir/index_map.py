"""What a layout op is, as data: how each index of its result maps to an index of its operand. A view op
returns one from `Op.index_map`, and tiling, chain following (--reorder-einsum) and the exporters read that
declaration instead of a list of op classes, so a new view op (a flip, a diagonal) needs only its class.

    Permutation(perm)    result dim d is source dim perm[d]                       solar.permute
    Broadcast(dims)      source dim i is result dim dims[i]; a size-1 one is 0    solar.broadcast
    Window(dims)         source dim i is a fixed index, or start + step · a dim   solar.slice
    Regroup()            row-major split or merge of dimensions                   solar.reshape
    Flip(axes)           along each axis, index i reads n - 1 - i                 solar.flip
    Roll(axes, shifts)   along each axis, index i reads (i - shift) mod n          solar.roll

`source_entries` turns the subscripts of a read of the result into those of the operand. A merge of
dimensions has no affine inverse: it raises NotAffine. `one_to_one`: every result element is a distinct
source element (a bijection); `repeats`: a source element shows several times (the cost model divides the
reads of such a view by its copies)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from .expr import Binary, Expr, IntLit
from .types import Dim


class NotAffine(ValueError):
    """The map has no affine form for this read (a reshape that merges dimensions)."""


def _plus(a: Expr, b: Expr) -> Expr:
    return Binary("+", a, b)


def _times(k: int, e: Expr) -> Expr:
    return e if k == 1 else Binary("*", IntLit(k), e)


@dataclass(frozen=True)
class Permutation:
    one_to_one: ClassVar[bool] = True
    repeats: ClassVar[bool] = False
    perm: tuple[int, ...]

    def source_entries(self, entries: Sequence[Expr], shape: Sequence[int], source: Sequence[int]) -> list[Expr]:
        moved: list[Expr] = [IntLit(0)] * len(source)
        for d, p in enumerate(self.perm):
            moved[p] = entries[d]
        return moved


@dataclass(frozen=True)
class Broadcast:
    one_to_one: ClassVar[bool] = False
    repeats: ClassVar[bool] = True
    dims: tuple[int, ...]

    def source_entries(self, entries: Sequence[Expr], shape: Sequence[int], source: Sequence[int]) -> list[Expr]:
        return [entries[d] if source[i] == shape[d] else IntLit(0) for i, d in enumerate(self.dims)]


@dataclass(frozen=True)
class WindowDim:
    """One source dimension of a window: a fixed `index`, or `start + step ·` the next result dimension."""

    index: int | None = None
    start: int = 0
    step: int = 1


@dataclass(frozen=True)
class Window:
    one_to_one: ClassVar[bool] = False
    repeats: ClassVar[bool] = False
    dims: tuple[WindowDim, ...]

    def source_entries(self, entries: Sequence[Expr], shape: Sequence[int], source: Sequence[int]) -> list[Expr]:
        out: list[Expr] = []
        k = 0
        for w in self.dims:
            if w.index is not None:
                out.append(IntLit(w.index))
                continue
            scaled = _times(w.step, entries[k])
            out.append(_plus(scaled, IntLit(w.start)) if w.start else scaled)
            k += 1
        return out


@dataclass(frozen=True)
class Regroup:
    one_to_one: ClassVar[bool] = True
    repeats: ClassVar[bool] = False
    def source_entries(self, entries: Sequence[Expr], shape: Sequence[int], source: Sequence[int]) -> list[Expr]:
        """Each source dimension is a run of result dimensions whose sizes multiply to its size (a split;
        row-major, so the entry is Σ stride·entry), size-1 dimensions on either side taking no part."""
        merge = NotAffine("a reshape that merges dimensions is read: not modelled (not affine)")
        out: list[Expr] = []
        r = 0
        for size in source:
            if size == 1:
                out.append(IntLit(0))
                continue
            entry: Expr | None = None
            covered = 1
            while covered < size:
                if r >= len(shape):
                    raise merge
                n = shape[r]
                if n > 1:
                    if size % (covered * n):
                        raise merge
                    entry = entries[r] if entry is None else _plus(_times(n, entry), entries[r])
                    covered *= n
                r += 1
            assert entry is not None
            out.append(entry)
        if any(n != 1 for n in shape[r:]):
            raise merge
        return out


@dataclass(frozen=True)
class Flip:
    one_to_one: ClassVar[bool] = True
    repeats: ClassVar[bool] = False
    axes: tuple[int, ...]

    def source_entries(self, entries: Sequence[Expr], shape: Sequence[Dim], source: Sequence[Dim]) -> list[Expr]:
        """Also for symbolic sizes (an index-value analysis reads it over size parameters)."""
        def last(n: Dim) -> Expr:
            return IntLit(n - 1) if isinstance(n, int) else Binary("-", n, IntLit(1))
        return [Binary("-", last(shape[d]), e) if d in self.axes else e for d, e in enumerate(entries)]


@dataclass(frozen=True)
class Roll:
    """Along each axis, index i reads (i - shift) mod n: the elements rotated by `shift` (sizes known)."""

    one_to_one: ClassVar[bool] = True
    repeats: ClassVar[bool] = False
    axes: tuple[int, ...]
    shifts: tuple[int, ...]

    def source_entries(self, entries: Sequence[Expr], shape: Sequence[Dim], source: Sequence[Dim]) -> list[Expr]:
        out = list(entries)
        for d, s in zip(self.axes, self.shifts, strict=True):
            n = shape[d]
            if not isinstance(n, int):
                raise NotAffine("a roll along a symbolic dimension")
            out[d] = Binary("mod", _plus(entries[d], IntLit((n - s % n) % n)), IntLit(n)) if n and s % n else entries[d]
        return out


IndexMap = Permutation | Broadcast | Window | Regroup | Flip | Roll
