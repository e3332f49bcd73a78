"""Lower bounds on the work of the data-dependent ops (solar.ir.ops): comparisons and DRAM bytes.

Which element goes where depends on the values, so there is no iteration space to count. What any correct
algorithm must do is bounded instead (docs/counts.md, "Data-dependent ops"). Per line of n elements along
the op's axis (L lines in all):

| op | comparisons per line, at least | why |
|---|---|---|
| sort, argsort | ⌈log₂ n!⌉ | a comparison sort tells n! orders apart, one bit per comparison |
| topk (sorted) | (n − k) + ⌈log₂ k!⌉ | each of the n − k others loses once, the k chosen are ordered |
| topk (`sorted = false`) | n − k | each of the n − k others loses once |
| kthvalue (median) | n − 1 + min(k − 1, n − k) | the selection bound of Blum, Floyd, Pratt, Rivest and Tarjan |
| cummax, cummin | n − 1 | every running value after the first compares one element |
| nonzero, masked_select | n (all elements) | every element (mask element) is tested once |

Each figure is at most what the best known algorithm needs (merge insertion for sorting, a tournament for
top-k, Dor–Zwick selection for medians, one pass for the rest), so no run can beat it by doing less.

Bytes: the input is read once, each result used is written once. A result whose size depends on the data
(nonzero, masked_select) has a count known only at run time, at least 0: unless its padding is part of
the result (`pad = true`: every row of the bound is written), the rows it writes, and the rows of a masked
select's `%x` it reads, are bounded below by 0; the count itself (8 bytes) is written.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from solar.ir.dtypes import DType
from solar.ir.ops import (
    ArgsortOp,
    CummaxOp,
    KthvalueOp,
    MaskedSelectOp,
    NonzeroOp,
    SelectionOp,
    SortOp,
    TopkOp,
    Value,
)
from solar.ir.types import TensorType

EXACT_FACTORIAL = 4096  # up to this n, ⌈log₂ n!⌉ from the integer n!; above, from lgamma (error ≪ 1)


@dataclass(frozen=True)
class SelectionCounts:
    comparisons: int  # vector operations, at least
    dtype: DType  # the type compared


def ceil_log2_factorial(n: int) -> int:
    """⌈log₂ n!⌉, exactly."""
    if n <= 1:
        return 0
    if n <= EXACT_FACTORIAL:
        return (math.factorial(n) - 1).bit_length()
    return math.ceil(math.lgamma(n + 1) / math.log(2))


def selection_counts(op: SelectionOp, values: dict[str, int]) -> SelectionCounts:
    """The least comparisons `op` needs, at the parameter values `values`."""
    x = op.args[0].type
    assert x is not None, "verified"
    if isinstance(op, NonzeroOp):
        return SelectionCounts(x.num_elements(values), x.dtype)
    if isinstance(op, MaskedSelectOp):
        mask = op.args[1].type
        assert mask is not None, "verified"
        return SelectionCounts(mask.num_elements(values), mask.dtype)
    shape = x.concrete_shape(values)
    n = shape[op.attrs["axis"]]
    lines = x.num_elements(values) // n if n else 0
    if isinstance(op, SortOp | ArgsortOp):
        per_line = ceil_log2_factorial(n)
    elif isinstance(op, TopkOp):
        k = op.attrs["k"]
        per_line = (n - k) + (ceil_log2_factorial(k) if op.attrs.get("sorted", True) else 0)
    elif isinstance(op, KthvalueOp):
        k = op.attrs["k"]
        per_line = n - 1 + min(k - 1, n - k)
    elif isinstance(op, CummaxOp):  # and CumminOp
        per_line = max(n - 1, 0)
    else:
        raise TypeError(f"no count rule for {op.opname}")
    return SelectionCounts(lines * per_line, x.dtype)


def bounded(op: SelectionOp) -> bool:
    """Whether `op`'s first result has a data-dependent size whose rows past the count cost nothing."""
    return isinstance(op, NonzeroOp | MaskedSelectOp) and not op.attrs.get("pad", False)


def read_bytes(op: SelectionOp, v: Value, values: dict[str, int]) -> int:
    """The least bytes `op` reads of its operand `v`."""
    if isinstance(op, MaskedSelectOp) and v is op.args[0] and v is not op.args[1]:
        return 0  # only the selected rows, at least none: the count is known at run time only
    return _nbytes(v.type, values)


def write_bytes(op: SelectionOp, v: Value, values: dict[str, int]) -> int:
    """The least bytes `op` writes of its result `v`."""
    if bounded(op) and v is op.results[0]:
        return 0
    return _nbytes(v.type, values)


def _nbytes(t: TensorType | None, values: dict[str, int]) -> int:
    assert t is not None, "verified"
    return t.nbytes(values)
