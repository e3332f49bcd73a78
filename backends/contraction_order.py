"""Contraction orders of a tensor network: opt_einsum's path search, and what each order costs.

A network is its input terms and output term over one-letter indices with sizes. An order is a list of
steps, each an einsum over some of the current tensors (opt_einsum's contraction list: the operands are
removed and the result appended). Each step is priced as its own unit of execution, as an einsum-path
executor runs it (one library call per step), under SOLAR's counting rules (docs/counts.md):

- a step of two operands that sums over an index is a contraction: 2 FLOPs per point, tensor-core
  eligible; any other step costs one multiply per point and operand beyond the first, plus one add per
  point when it sums;
- its DRAM bytes are its operands read and its result written, whole (a linear einsum reads every element).

Search (docs/reorder.md): `optimal` (exhaustive) up to 6 tensors for FLOPs, dynamic programming over subsets
(exact) up to 16, greedy beyond (by FLOPs, or for bytes opt_einsum's greedy by size). The candidates of
every objective are priced exactly and the best for the asked objective kept, so the chosen order is never
worse than any candidate on that objective.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import opt_einsum
from opt_einsum.paths import DynamicProgramming

from solar.backends.cost import Peaks, Work
from solar.ir.dtypes import DType

OBJECTIVES = ("flops", "bytes", "sol")


@dataclass(frozen=True)
class Network:
    inputs: tuple[str, ...]
    output: str
    sizes: dict[str, int]

    @property
    def equation(self) -> str:
        return ",".join(self.inputs) + "->" + self.output


@dataclass
class Cost:
    flops_tensor: int = 0
    flops_vector: int = 0
    bytes: int = 0
    seconds: float = 0.0  # the roofline time on the target, when one is given
    works: list[Work] = field(default_factory=list)

    @property
    def flops(self) -> int:
        return self.flops_tensor + self.flops_vector

    def key(self, objective: str) -> tuple[float, float]:
        if objective == "flops":
            return (self.flops, self.bytes)
        if objective == "bytes":
            return (self.bytes, self.flops)
        return (self.seconds, self.flops)


@dataclass(frozen=True)
class Order:
    steps: tuple[str, ...]  # one einsum equation per step, over the network's letters
    positions: tuple[tuple[int, ...], ...]  # the operands of each step, as opt_einsum pops them
    method: str


def _size(term: str, sizes: dict[str, int]) -> int:
    n = 1
    for c in term:
        n *= sizes[c]
    return n


def step_work(equation: str, sizes: dict[str, int], dtype: DType, scale: bool = False) -> Work:
    """The work of one step, `scale` adding a multiply per result element (a constant factor epilogue)."""
    lhs, out = equation.split("->")
    terms = lhs.split(",")
    letters = set("".join(terms))
    points = _size("".join(sorted(letters)), sizes)
    sums = bool(letters - set(out))
    work = Work(equation, "einsum")
    if len(terms) == 2 and sums:
        work.flops_tensor[dtype] = 2 * points
    else:
        vector = (len(terms) - 1) * points + (points if sums else 0)
        if vector:
            work.flops_vector[dtype] = vector
    if scale:
        work.flops_vector[dtype] += _size(out, sizes)
    work.bytes = (sum(_size(t, sizes) for t in terms) + _size(out, sizes)) * dtype.itemsize
    return work


def order_cost(order: Order, net: Network, dtype: DType, peaks: Peaks | None, scale: bool) -> Cost:
    cost = Cost()
    for k, eq in enumerate(order.steps):
        w = step_work(eq, net.sizes, dtype, scale and k == len(order.steps) - 1)
        add_work(cost, w, peaks)
    return cost


def add_work(cost: Cost, work: Work, peaks: Peaks | None) -> None:
    cost.flops_tensor += sum(work.flops_tensor.values())
    cost.flops_vector += sum(work.flops_vector.values())
    cost.bytes += work.bytes
    if peaks is not None:
        cost.seconds += peaks.time(work).seconds
    cost.works.append(work)


def _path(net: Network, optimize: object, method: str) -> Order:
    shapes = [tuple(net.sizes[c] for c in t) for t in net.inputs]
    _, info = opt_einsum.contract_path(net.equation, *shapes, shapes=True, optimize=optimize)
    steps = tuple(c[2] for c in info.contraction_list)
    positions = tuple(tuple(c[0]) for c in info.contraction_list)
    return Order(steps, positions, method)


def candidates(net: Network, alpha: float | None = None) -> list[Order]:
    """Orders from opt_einsum's searches: the FLOP-optimal and the write-optimal (least intermediate
    elements, hence least bytes), and with `alpha` (FLOPs per element moved at the ridge point) the
    roofline-like dynamic programme that minimises Σ max(FLOPs, alpha · elements written)."""
    n = len(net.inputs)
    found: list[Order] = []
    outer = n <= 8
    if n <= 6:
        found.append(_path(net, "optimal", "optimal (exhaustive)"))
    elif n <= 16:
        found.append(_path(net, DynamicProgramming(minimize="flops", search_outer=outer), "dynamic programming"))
    else:
        found.append(_path(net, "greedy", "greedy"))
    if n <= 16:
        found.append(_path(net, DynamicProgramming(minimize="write", search_outer=outer),
                           "dynamic programming (bytes)"))
        if alpha is not None:
            found.append(_path(net, DynamicProgramming(minimize=f"limit-{max(1, round(alpha))}", search_outer=outer),
                               "dynamic programming (roofline)"))
    else:
        found.append(_path(net, "greedy", "greedy by size"))
    return found


def best_order(net: Network, objective: str, dtype: DType, peaks: Peaks | None, scale: bool) -> tuple[Order, Cost]:
    """The cheapest candidate order for `objective` ('flops', 'bytes' or 'sol', which needs `peaks`)."""
    alpha = None
    if peaks is not None:
        alpha = peaks.compute(dtype, True) / peaks.bandwidth * dtype.itemsize
    best: tuple[Order, Cost] | None = None
    for order in candidates(net, alpha):
        cost = order_cost(order, net, dtype, peaks, scale)
        if best is None or cost.key(objective) < best[1].key(objective):
            best = (order, cost)
    assert best is not None
    return best

