"""The SOL cost model: rooflines per unit of execution, the unfused / fused / whole-graph modes, and the
inverse roofline. What every number means is in docs/sol.md.

    t(unit) = max(Σ FLOPs_tensor,d / Π_tensor(d), Σ FLOPs_vector,d / Π_vector(d), bytes / β)

Unfused: Σ over units, each reading its inputs from and writing its outputs to DRAM. Fused: Σ over fusion
groups (`solar.group`, formed by --fuse; a unit outside every group is its own group), only group-boundary
tensors moving. Whole graph: the same roofline on the totals, with only the compulsory traffic (the entry
function's arguments read once, its results written once).
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from solar.ir.analysis.access_checks import AccessChecks, unpriceable
from solar.ir.analysis.counts import Counts, einsum_counts
from solar.ir.analysis.formula import Number, fmax, fmax_of, fmin
from solar.ir.analysis.op_counts import run_counts
from solar.ir.analysis.units import Unit, Uses, boundary, units_of
from solar.ir.diagnostics import Location
from solar.ir.dtypes import DType
from solar.ir.expr import Expr
from solar.ir.expr_values import evaluate_int
from solar.ir.index_map import NotAffine
from solar.ir.ops import (
    ConstantOp,
    EinsumOp,
    ForOp,
    FuncOp,
    GroupOp,
    IfOp,
    KernelOp,
    ModuleOp,
    Op,
    SliceOp,
    Value,
)
from solar.ir.types import TensorType
from solar.targets.loader import PeakChoice, PeakUnavailable, Target

from .composition_hooks import is_in_place_scatter, updates_in_place
from .loop_reads import kernel_union_bytes, slice_disjoint_over, slice_mentions
from .modes import Inverse as Inverse  # re-exported: the pricing API stays where it was
from .modes import inverse_roofline as inverse_roofline
from .op_hooks import COUNTS, READ_BYTES, WRITE_BYTES, HookSet, install
from .precision_policy import PrecisionFloorError, floor_applies, floor_dtype, floored
from .view_union import shared_reads


class CostError(ValueError):
    """A problem the user must fix (a parameter without a value, a call not inlined, a missing peak)."""

    def __init__(self, message: str, op: Op | None = None, loc: Location | None = None) -> None:
        super().__init__(message)
        self.op = op
        self.loc = loc  # where to point instead of the op: a target file's figure


def _target_error(err: PeakUnavailable, prefix: str = "") -> CostError:
    """A figure the analysis needs is unknown: the error points at the target file (and the figure's line)."""
    loc = Location(err.file, getattr(err, "line", None) or 1, 1) if err.file else None
    return CostError(prefix + str(err), loc=loc)


@dataclass
class Work:
    """What one unit, group or the whole graph does: FLOPs by unit and dtype, and DRAM bytes."""

    name: str
    kind: str
    flops_tensor: Counter[DType] = field(default_factory=Counter)
    flops_vector: Counter[DType] = field(default_factory=Counter)
    bytes: int = 0
    trips: int = 1  # how many times it runs (inside solar.for)
    ops: list[Op] = field(default_factory=list)  # the IR ops it covers (the group op for a group)

    @property
    def flops(self) -> int:
        # Counts over all trips are whole numbers, also where one run's count is a mean (see Counts.per_run).
        return round((sum(self.flops_tensor.values()) + sum(self.flops_vector.values())) * self.trips)

    @property
    def total_bytes(self) -> int:
        return round(self.bytes * self.trips)

    @property
    def intensity(self) -> float:
        return self.flops / self.total_bytes if self.total_bytes else math.inf

    def add(self, other: Work) -> None:
        for d, n in other.flops_tensor.items():
            self.flops_tensor[d] += n * other.trips
        for d, n in other.flops_vector.items():
            self.flops_vector[d] += n * other.trips


@dataclass(frozen=True)
class Timing:
    seconds: float
    tensor_s: float
    vector_s: float
    memory_s: float

    @property
    def bound(self) -> str:
        parts = {"tensor": self.tensor_s, "vector": self.vector_s, "memory": self.memory_s}
        return max(parts, key=lambda k: parts[k]) if self.seconds > 0 else "none"


# How f32 contractions are priced (docs/sol.md, "Precision"): `framework` follows each kernel's
# `fp32_precision` attribute (what the framework runs by default; no attribute: FP32), `highest` prices every
# f32 contraction as exact FP32, `tf32` every one on TF32 tensor cores (the old --allow-tf32).
FP32_POLICIES = ("framework", "highest", "tf32")
# Values of the IR attribute `fp32_precision` on a contraction kernel, and the precision each is priced at.
FP32_ATTRIBUTE = {"highest": DType.F32, "tf32": DType.TF32, "bf16": DType.BF16}


def priced_dtype(op: Op, dtype: DType, policy: str) -> DType:
    """The precision an f32 contraction is priced at under `policy`: the kernel's `fp32_precision`
    attribute (`framework`), or the policy itself. Other dtypes are priced as they are."""
    if dtype is not DType.F32 or policy == "highest":
        return dtype
    if policy == "tf32":
        return DType.TF32
    attr = op.attrs.get("fp32_precision")
    return FP32_ATTRIBUTE.get(attr, dtype) if isinstance(attr, str) else dtype


class Peaks:
    """The peaks of one target for each dtype, chosen by the operands' precision (targets/README.md).
    f32 contractions arrive already keyed by the precision they are priced at (`priced_dtype`); under a
    `precision_floor` (backends/precision_policy.py) a contraction takes the floor's peak where it is faster."""

    def __init__(self, target: Target, precision_floor: str | None = None) -> None:
        self.target = target
        try:
            self._floor = floor_dtype(precision_floor)
        except PrecisionFloorError as err:
            raise CostError(str(err)) from None
        self.precision_floor = precision_floor or None
        try:
            self.bandwidth = target.dram_bandwidth
        except PeakUnavailable as err:
            raise _target_error(err, "memory-bound time needs the DRAM bandwidth: ") from None
        self._cache: dict[tuple[DType, bool], PeakChoice] = {}

    def choice(self, dtype: DType, contraction: bool) -> PeakChoice:
        key = (dtype, contraction)
        if key not in self._cache:
            own = self._own(dtype, contraction)
            if contraction and self._floor is not None and floor_applies(dtype, self._floor):
                assert self.precision_floor is not None
                try:  # a floor the target has no figure for leaves the contraction at its own peak
                    at_floor: PeakChoice | None = self._own(self._floor, True)
                except CostError:
                    at_floor = None
                own = floored(dtype, own, at_floor, self.precision_floor)
            self._cache[key] = own
        return self._cache[key]

    def _own(self, dtype: DType, contraction: bool) -> PeakChoice:
        """The peak of `dtype`'s own precision (no floor)."""
        try:
            return self.target.select_peak(dtype.spelling, contraction=contraction)
        except PeakUnavailable as err:
            if dtype is not DType.TF32 or not contraction:
                raise _target_error(err) from None
            return self._tf32_unknown(err)

    def _tf32_unknown(self, err: PeakUnavailable) -> PeakChoice:
        """A target whose TF32 peak is unknown: TF32 runs at no more than the BF16 tensor rate on any device
        we know of (half of it on NVIDIA's), so the BF16 tensor peak keeps the time a lower bound, where
        the FP32 vector peak could exceed the true time."""
        try:
            bf16 = self.target.select_peak("bf16", contraction=True)
        except PeakUnavailable:
            raise CostError(str(err)) from None
        return dataclasses.replace(bf16, reason=f"tf32 contraction → bf16 tensor (the TF32 peak is unknown on "
                                                f"{self.target.name}; no TF32 run is faster than BF16)")

    def used(self) -> list[PeakChoice]:
        """The peaks chosen so far (those the analysed program needs)."""
        return list(self._cache.values())

    def compute(self, dtype: DType, contraction: bool) -> float:
        return self.choice(dtype, contraction).flop_per_s

    def time(self, work: Work) -> Timing:
        # Work is timed on the unit that runs it: an f32 contraction without TF32 runs on the vector units,
        # so its time adds to the vector work's rather than overlapping it.
        on_unit = {"tensor": 0.0, "vector": 0.0}
        for flops, contraction in ((work.flops_tensor, True), (work.flops_vector, False)):
            for d, n in flops.items():
                c = self.choice(d, contraction)
                on_unit[c.unit] += n * work.trips / c.flop_per_s
        mem = work.total_bytes / self.bandwidth
        return Timing(max(on_unit["tensor"], on_unit["vector"], mem), on_unit["tensor"], on_unit["vector"], mem)


# ---- from IR to work --------------------------------------------------------------------------------


def _repeats(view: Op) -> bool:
    """Whether the view's declared index map shows a source element several times (a broadcast)."""
    try:
        imap = view.index_map({})
    except (KeyError, NotAffine, TypeError, ValueError):  # a window over symbolic starts: repeats nothing
        return False
    return imap is not None and imap.repeats


class CostModel:
    """Counts every unit and group of a module's entry function (calls must be inlined first)."""

    def __init__(self, module: ModuleOp, fp32_precision: str = "framework",
                 values: Mapping[str, Number] | None = None, check_accesses: bool = True) -> None:
        """`values` gives the size parameters' values instead of their defaults; symbolic ones
        (`formula.symbols`) make every count a formula (backends/sweep.py evaluates them at points).
        A program with an access out of bounds or an output not fully written has no bound: the first such
        problem is a CostError at its place (`check_accesses=False` where the caller has checked already)."""
        if fp32_precision not in FP32_POLICIES:
            raise CostError(f"bad fp32 precision '{fp32_precision}': expected one of {', '.join(FP32_POLICIES)}")
        if check_accesses:
            problems = [p for p in AccessChecks(module).problems if p.at_own_sizes]
            if problems:
                raise CostError(unpriceable(problems[0]), loc=problems[0].loc)
        self.module = module
        self.fp32_precision = fp32_precision
        given = dict(values or {})
        missing = [p.name for p in module.params if p.default is None and p.name not in given]
        if missing:
            raise CostError(f"size parameters {', '.join(missing)} need values: bind them with "
                            f"--bind-params={missing[0]}=...")
        self.values: dict[str, Number] = {**module.param_values(), **given}
        self.params = [p.name for p in module.params]
        func = module.entry
        if func is None:
            raise CostError("the module has no function")
        self.func: FuncOp = func
        self.uses = Uses.of(func)
        self._counts: dict[Op, Counts] = {}
        # Bytes of each type asked for, by identity (the type kept alive beside its size): a network's pricing
        # asks about each value several times, and evaluating shapes of floor divisions was a tenth of it.
        self._type_bytes: dict[int, tuple[TensorType | None, int]] = {}
        self.units: list[Work] = []  # unfused
        self.groups: list[Work] = []  # fused
        self._trips: dict[Op, int] = {}  # how many times each op runs (solar.for bodies)
        self._loops: dict[Op, tuple[ForOp, ...]] = {}  # the solar.for loops around each op, outermost first
        self._record_trips(func.body, 1, ())
        self._collect(func.body, 1, {})

    def _record_trips(self, block: list[Op], trips: int, loops: tuple[ForOp, ...]) -> None:
        for op in block:
            for inner in op.walk():
                self._trips[inner] = trips
                self._loops[inner] = loops
            if isinstance(op, ForOp):
                self._record_trips(op.body, trips * self._trip_count(op), (*loops, op))
            elif isinstance(op, IfOp):
                for region in op.regions:
                    self._record_trips(region, trips, loops)

    def _trip_count(self, loop: ForOp) -> Number:
        return fmax(0, _first(loop.upper, self.values) - _first(loop.lower, self.values))

    # -- counting single ops --------------------------------------------------------------------------
    def counts(self, op: Op, loops: dict) -> Counts:
        """The FLOPs and bytes of one run of `op` (its COUNTS hook; an op without one does no arithmetic)."""
        if op not in self._counts:
            hook = COUNTS.lookup(type(op))
            self._counts[op] = hook(self, op, loops) if hook is not None else Counts()
        return self._counts[op]

    def nbytes(self, v: Value) -> int:
        """The size of `v` in bytes, with the size parameters' values."""
        t = v.type
        known = self._type_bytes.get(id(t))
        if known is None or known[0] is not t:
            known = self._type_bytes[id(t)] = (t, _nbytes(v, self.values))
        return known[1]

    def _read_bytes(self, op: Op, v: Value, loops: dict, inside: set[Op] | None = None,
                    in_view: bool = False) -> int:
        """DRAM bytes `op` reads of `v`: its footprint where counted, else the whole tensor. A layout op moves
        nothing: `v` is read as far as the view's readers (those in `inside`, when given) read the view.
        `in_view`: `v` is a view being priced back to its source, so the figure is capped by `v`'s own size
        only (its source's cap applies once, after a broadcast's repeats are divided out)."""
        if op.is_terminator:
            return 0  # returning or yielding a value moves nothing
        if not in_view:
            # The footprint in `v`'s coordinates, through the broadcasts `v` views, capped by what it views.
            read = self._read_bytes(op, v, loops, inside, in_view=True)
            return fmin(self._source_bytes(v), self._to_source(v, read))
        full = self.nbytes(v)
        # A buffer updated in place is read as a view is: as far as the readers of the result read it.
        if op.is_view or (updates_in_place(op) and v is op.operands[0]):
            # A reader in a solar.for inside the view's block reads at every iteration, maybe the same again.
            view = op.results[0]
            readers = [o for o in self.uses.of_value(view) if inside is None or o in inside]
            read = self._readers_read({o: self._over_runs(o, view, op, loops, inside) for o in readers}, loops)
            read = self._through_repeats(op, read)
            if is_in_place_scatter(op):
                # What the scatter stored comes from its source, not from the buffer: at least the rest.
                read = fmax(read - self.nbytes(op.operands[2]), 0)
            return fmin(full, read)
        hook = READ_BYTES.lookup(type(op))
        return hook(self, op, v, full, loops) if hook is not None else full

    def _readers_read(self, figures: dict[Op, Number], loops: dict) -> Number:
        """The bytes of one tensor that its readers (each with its figure) read together, at least: the
        largest figure, or where several of them slice it (at a fixed offset; one moving with a solar.for
        is no box), the union of their boxes less what each reader misses of its slice (view_union). Also
        for the readers of a view of the tensor: a reshaped weight sliced in two (MLA's W_UK and W_UV) is
        read whole, not as its larger half."""
        read = fmax_of(figures.values())
        views: dict[Value, Number] = {o.results[0]: r for o, r in figures.items() if isinstance(o, SliceOp)}
        return fmax(read, shared_reads(views, self.params, self.values, loops)) if len(views) > 1 else read

    def _through_repeats(self, op: Op, read: Number) -> Number:
        """Source bytes of `read` bytes of the view `op` makes, at least: a broadcast shows each source
        element as view size / source size elements, so a footprint of E view elements touches at least
        E / that many distinct source elements (exact where the reader takes every copy, as grouped-query
        attention does). Rounded down, so the figure stays a lower bound; a view whose index map does not
        repeat (its declared `repeats`) reads what it shows."""
        if not read or not op.is_view or not op.operands or not _repeats(op):
            return read
        view_bytes = self.nbytes(op.results[0])
        # read ≤ view bytes, so an empty view reads nothing; max(·, 1) keeps the division defined there.
        return (read * self.nbytes(op.operands[0])) // fmax(view_bytes, 1)

    def _to_source(self, v: Value, read: Number) -> Number:
        """`read` bytes of `v` as bytes of the tensor it views, at least (through each broadcast of the chain)."""
        owner = v.owner
        while owner is not None and owner.is_view and owner.operands:
            read = self._through_repeats(owner, read)
            owner = owner.operands[0].owner
        return read

    def _over_runs(self, op: Op, v: Value, outer: Op | None, loops: dict, inside: set[Op] | None = None,
                   in_view: bool = True) -> Number:
        """Bytes of `v` that `op` reads over all its runs per run of `outer` (of the function when None), at
        least: one run's figure times the trips of the loops (between the two) over which its reads are
        disjoint, or a kernel's union over the loops it uses. Another loop may read the same elements again,
        which DRAM need not serve twice (docs/sol.md, "Units of execution")."""
        read = self._read_bytes(op, v, loops, inside, in_view=in_view)
        around = self._loops.get(outer, ()) if outer is not None else ()
        crossed = [f for f in self._loops.get(op, ()) if f not in around]
        if not crossed:
            return read
        if isinstance(op, KernelOp):
            union = kernel_union_bytes(op, v, self.params, self.values,
                                       {f.var: (f.lower, f.upper) for f in self._loops[op]})
            if union is not None and union[1] <= {f.var for f in crossed}:
                return fmin(self.nbytes(v), union[0])
        disjoint = self._disjoint_over(op, v, inside)
        for f in crossed:
            if f in disjoint:
                read = read * self._trip_count(f)
        return read

    def _disjoint_over(self, op: Op, v: Value, inside: set[Op] | None) -> set[ForOp]:
        """The solar.for loops around `op` at whose iterations it reads elements of `v` no other iteration
        reads: a slice whose entry moves past its span, or a view that does not change with the loop whose
        every reader is disjoint over it. An einsum or kernel proves nothing here (the same footprint)."""
        if not (op.is_view or (updates_in_place(op) and v is op.operands[0])):
            return set()
        around = set(self._loops.get(op, ()))
        readers = [o for o in self.uses.of_value(op.results[0]) if inside is None or o in inside]
        common = set.intersection(*(self._disjoint_over(o, op.results[0], inside) for o in readers)) if readers \
            else set()
        own: set[ForOp] = set()
        if isinstance(op, SliceOp):
            names = [f.var for f in self._loops.get(op, ())]
            own = {f for f in around if slice_disjoint_over(op, f, self.values, names)}
            # A slice that moves with a loop maps its readers' elements elsewhere at each iteration.
            common = {f for f in common if not slice_mentions(op, f.var)}
        return (common & around) | own

    def _source_bytes(self, v: Value) -> int:
        """The most bytes reading `v` can move: its size, or less when it is a view of a smaller tensor (a
        broadcast repeats its source's elements, which are read once)."""
        full = self.nbytes(v)
        owner = v.owner
        if owner is not None and owner.is_view and owner.operands:
            full = fmin(full, sum(self._source_bytes(s) for s in owner.operands))
        return full

    def _write_bytes(self, op: Op, v: Value, loops: dict) -> int:
        hook = WRITE_BYTES.lookup(type(op))
        return hook(self, op, v, loops) if hook is not None else self.nbytes(v)

    def work(self, name: str, kind: str, ops: list[Op], trips: int, loops: dict) -> Work:
        w = Work(name, kind, trips=trips, ops=list(ops))
        for op in (o for top in ops for o in top.walk()):
            c = self.counts(op, loops)
            if c.flops_tensor or c.flops_vector:
                tc_dtype, vec_dtype = _dtypes(op)
                tc_dtype = priced_dtype(op, tc_dtype, self.fp32_precision)
                if c.flops_tensor:
                    w.flops_tensor[tc_dtype] += c.flops_tensor
                if c.flops_vector:
                    w.flops_vector[vec_dtype] += c.flops_vector
        inputs, outputs = boundary(ops, self.uses)
        inside = {o for top in ops for o in top.walk()}
        # Each reader's figure is already the tensor's own bytes (`_read_bytes` divides out the broadcasts).
        # Inputs that view one tensor may share elements, read once: their figures are combined, not summed.
        by_base: dict[Value, dict[Value, Number]] = {}
        for v in inputs:
            figures = {o: self._read_bytes(o, v, loops, inside) for o in self.uses.of_value(v) if o in inside}
            # Several slices of it inside the unit (a group holds the views between its kernels): the union
            # of their boxes, as the whole graph takes it, not the largest slice alone.
            read = self._readers_read(figures, loops)
            if _slices_of(figures) > 1:
                read = fmin(self._source_bytes(v), read)
            by_base.setdefault(_base(v), {})[v] = read
        for figures in by_base.values():
            w.bytes += next(iter(figures.values())) if len(figures) == 1 else \
                shared_reads(figures, self.params, self.values, loops)
        # Each tensor is written once, also when several views of it leave (a view moves nothing itself).
        written: dict[Value, int] = {}
        for v in outputs:
            if v.owner is not None:
                n = self._source_bytes(v) if v.owner.is_view else self._write_bytes(v.owner, v, loops)
                base = _base(v)
                written[base] = fmax(written[base], n) if base in written else n
        w.bytes += sum(written.values())
        return w

    # -- walking the function -------------------------------------------------------------------------
    def _collect(self, block: list[Op], trips: int, loops: dict) -> None:
        """Units and groups of `block` and of the blocks nested in it, in program order."""
        first_op = {unit.ops[0]: unit for unit in units_of(block)}
        for op in block:
            if isinstance(op, GroupOp):
                members = [o for o in op.body if o.opname != "solar.yield"]
                group = self.work(f"@{op.symbol}", "group", members, trips, loops)
                group.ops = [op]
                self.groups.append(group)
                self.units.extend(self._unit_work(first_op[o], trips, loops) for o in members if o in first_op)
            elif isinstance(op, ForOp):
                n = fmax(0, _first(op.upper, self.values) - _first(op.lower, self.values))
                self._collect(op.body, trips * n, {**loops, op.var: (op.lower, op.upper)})
            elif isinstance(op, IfOp):
                self._collect_if(op, trips, loops)
            elif op.opname == "solar.call":
                raise CostError("the SOL backend needs calls inlined: run --inline first", op)
            elif op in first_op:  # a unit outside every group is its own group
                w = self._unit_work(first_op[op], trips, loops)
                self.units.append(w)
                self.groups.append(w)

    def _collect_if(self, op: IfOp, trips: int, loops: dict) -> None:
        """A data-dependent branch: the element-wise minimum of the two branches' work (FLOPs per unit and
        dtype, bytes) is a lower bound whichever branch runs, on any target."""
        branches = []
        for body in (op.then_body, op.else_body):
            units, groups = self.units, self.groups
            self.units, self.groups = [], []
            self._collect(body, 1, loops)
            branches.append((self.units, self.groups))
            self.units, self.groups = units, groups
        for index, target in ((0, self.units), (1, self.groups)):
            a, b = (_merged(branch[index]) for branch in branches)
            least = Work(f"solar.if %{op.cond.name}", "if", trips=trips, bytes=fmin(a.bytes, b.bytes))
            for dt in set(a.flops_tensor) | set(b.flops_tensor):
                least.flops_tensor[dt] = fmin(a.flops_tensor[dt], b.flops_tensor[dt])
            for dt in set(a.flops_vector) | set(b.flops_vector):
                least.flops_vector[dt] = fmin(a.flops_vector[dt], b.flops_vector[dt])
            target.append(least)

    def _unit_work(self, unit: Unit, trips: int, loops: dict) -> Work:
        return self.work(f"@{unit.name}" if unit.kind in ("kernel", "einsum") else unit.name, unit.kind,
                         unit.ops, trips, loops)

    def whole_graph(self) -> Work:
        w = Work("whole graph", "graph")
        for u in self.units:
            w.add(u)
        # Each argument is read once: the most any reader reads of it, over all its runs.
        for v in self.func.args:
            figures = {o: self._over_runs(o, v, None, {}, in_view=False) for o in self.uses.of_value(v)}
            w.bytes += fmin(self.nbytes(v), self._readers_read(figures, {}))
        returned: dict[Value, None] = {}
        for op in self.func.body:
            if op.opname == "solar.return":
                returned.update(dict.fromkeys(op.operands))
        # Results are written once per tensor they view: a returned input (or a view of one) is not written
        # at all, since no unit makes it in any mode; several views of one result are one tensor.
        written: dict[Value, int] = {}
        for v in returned:
            base = _base(v)
            if base.owner is not self.func and not isinstance(base.owner, ConstantOp):
                n = self._source_bytes(v)
                written[base] = fmax(written[base], n) if base in written else n
        w.bytes += sum(written.values())
        return w


def _slices_of(figures: dict[Op, Number]) -> int:
    return sum(isinstance(o, SliceOp) for o in figures)


def _base(v: Value) -> Value:
    """The tensor `v` is: through views, and through fusion groups to the value they yield."""
    while True:
        owner = v.owner
        if owner is not None and owner.is_view and owner.operands:
            v = owner.operands[0]
        elif isinstance(owner, GroupOp):
            v = owner.body[-1].operands[owner.results.index(v)]
        else:
            return v


def _merged(works: list[Work]) -> Work:
    total = Work("", "")
    for w in works:
        total.add(w)
        total.bytes += w.total_bytes
    return total


def _dtypes(op: Op) -> tuple[DType, DType]:
    """The precision of tensor-core work and of vector work (the result's). A contraction runs at its
    operands' precision; float operands of different widths are priced at the narrowest, as a fast kernel
    converts the wider one down before the tensor cores (FlashAttention's P·V: docs/sol.md, "Precision
    per op family"), which keeps the time a lower bound. Otherwise the first operand's precision."""
    result = op.declared_types()[0].dtype
    types = [v.type.dtype for v in op.operands if v.type is not None]
    floats = [d for d in types if d.is_float]
    if floats and len(floats) == len(types):
        return min(floats, key=lambda d: d.itemsize), result
    return (types[0] if types else result), result


def _nbytes(v: Value, values: dict[str, int]) -> int:
    assert v.type is not None
    return v.type.nbytes(values)


def _first(expr: Expr, values: dict[str, int]) -> int:
    return evaluate_int(expr, values)


# ---- modes and the inverse roofline (backends/modes.py) ---------------------------------------------


# ---- how kernels and einsums count (composition ops: backends/composition_hooks.py) -----------------

UNIT_HOOKS = HookSet("the cost model's kernels and einsums")



@UNIT_HOOKS.counts(EinsumOp)
def _einsum_counts(model: CostModel, op: EinsumOp, loops: dict) -> Counts:
    return einsum_counts(op, model.params, model.values)


@UNIT_HOOKS.counts(KernelOp)
def _kernel_counts(model: CostModel, op: KernelOp, loops: dict) -> Counts:
    # Counted over every run of the solar.for loops around it; the cost model prices one run (Work.trips
    # multiplies): docs/counts.md, "Kernels and einsums inside solar.for".
    return run_counts(op, model.params, model.values, loops)


@UNIT_HOOKS.read_bytes(EinsumOp, KernelOp)
def _unit_reads(model: CostModel, op: EinsumOp | KernelOp, v: Value, full: int, loops: dict) -> int:
    c = model.counts(op, loops)
    names = [b.name for b in op.inputs if b.value is v]
    return fmin(full, fmax_of(c.bytes_read.get(n, 0) for n in names))


@UNIT_HOOKS.write_bytes(EinsumOp)
def _einsum_writes(model: CostModel, op: EinsumOp, v: Value, loops: dict) -> int:
    return model.counts(op, loops).bytes_written


@UNIT_HOOKS.write_bytes(KernelOp)
def _kernel_writes(model: CostModel, op: KernelOp, v: Value, loops: dict) -> int:
    return model.counts(op, loops).output_bytes[op.outputs[op.results.index(v)].name]


# The cost model's own hooks (kernels, einsums); every other op names the set holding its (Op.backend_hooks).
install(UNIT_HOOKS)
