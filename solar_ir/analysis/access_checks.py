"""What makes a program wrong before any count: an access out of its tensor's bounds, an output written with
`=` on part of its elements only, an einsum writing outside its result. `--lift-affine` reports them, and
pricing refuses a program that has one (a bound of a program that reads garbage or leaves its result
undefined bounds nothing). One analysis, shared by type through the analysis manager
(`ctx.analysis(AccessChecks, module)`), so both see the same verdict and a pipeline that runs both pays once.
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from solar.ir.analysis.counts import einsum_model, mentioned_params
from solar.ir.analysis.isl_model import KernelModel, UnsupportedForISL, isl_name, param_text, point_text
from solar.ir.analysis.kernel_models import model_kernels
from solar.ir.diagnostics import Location
from solar.ir.einsum_spec import SpecError, index_ranges, parse_spec, parse_where
from solar.ir.expr import IndexRef, format_expr
from solar.ir.ops import EinsumOp, KernelOp, ModuleOp
from solar.ir.pass_manager import PassContext
from solar.ir.types import TensorType, dims_equal, format_dim


@dataclass(frozen=True)
class AccessProblem:
    """One wrong access or unwritten output, with one offending point, where it is written."""

    message: str
    loc: Location | None
    # False where the problem needs other sizes than the module's own (a buffer of a fixed size read up to a
    # size parameter, the parameter at its value): that program is right as priced, and only --lift-affine
    # and a remark of the pricing passes say where it would go wrong.
    at_own_sizes: bool = True


class AccessChecks:
    """Every kernel's ISL model (or why it has none), and every access problem of the module, kernels first
    (bounds, then full writes, per kernel) then einsums, in program order."""

    def __init__(self, module: ModuleOp) -> None:
        self.models: list[tuple[KernelOp, KernelModel | UnsupportedForISL]] = list(model_kernels(module))
        self.problems: list[AccessProblem] = []
        own = {isl_name(p.name): p.default for p in module.params if p.default is not None}
        for _, model in self.models:
            if not isinstance(model, UnsupportedForISL):
                self.problems += bounds_problems(model, own) + write_problems(model, own)
        params = [p.name for p in module.params]
        for op in module.walk():
            if isinstance(op, EinsumOp):
                self.problems += einsum_write_problems(op, params, own)


def _first_point(where: isl.Set) -> isl.Point:
    """The lexicographically first point of `where`, or any point where ISL cannot take the minimum (some
    sets with division constraints make lexmin fail): a diagnostic needs one offending point."""
    try:
        return where.lexmin().sample_point()
    except isl.Error:
        return where.sample_point()


def _at_sizes(where: isl.Set | isl.Map, sizes: dict[str, int]) -> bool:
    """Whether `where` (a set of offending points, over size parameters) holds a point with the parameters
    named in `sizes` at those values (the others, solar.for indices among them, free)."""
    params = where.params()
    space = params.get_space()
    conditions = [f"{name} = {sizes[name]}" for k in range(space.dim(isl.dim_type.param))
                  if (name := space.get_dim_name(isl.dim_type.param, k)) in sizes]
    if not conditions:
        return not params.is_empty()
    names = ", ".join(space.get_dim_name(isl.dim_type.param, k) for k in range(space.dim(isl.dim_type.param)))
    fixed = isl.Set(f"[{names}] -> {{ : {' and '.join(conditions)} }}", context=params.get_ctx())
    return not params.intersect(fixed).is_empty()


def unpriceable(problem: AccessProblem) -> str:
    """Why a program with `problem` gets no bound (--lift-affine reports the same problem)."""
    return f"{problem.message} (a wrong program has no bound)"


def refuse_wrong_accesses(ctx: PassContext, module: ModuleOp, pass_name: str) -> bool:
    """For a pass about to price `module` through `ctx`: every access problem (the analysis --lift-affine
    reports, shared by type) as one located error of `pass_name`; True when there were any. (The cost
    model the pass then asks for checks again and finds none: milliseconds, and the pricing passes share one.)"""
    problems = ctx.analysis(AccessChecks, module).problems
    wrong = [p for p in problems if p.at_own_sizes]
    for problem in problems:
        if problem.at_own_sizes:
            ctx.diagnostics.error(f"{pass_name}: {unpriceable(problem)}", problem.loc or module.loc)
        else:
            ctx.diagnostics.remark(f"{pass_name}: {problem.message}: not at the sizes priced, which are right; "
                                   "a size sweep past them prices a wrong program", problem.loc or module.loc)
    return bool(wrong)


def bounds_problems(model: KernelModel, own: dict[str, int] | None = None) -> list[AccessProblem]:
    """Each access of the kernel that can leave its tensor, at the first offending iteration."""
    out = []
    for s in model.statements:
        for position, access in enumerate([s.stmt.target, *s.accesses]):
            if model.in_bounds(s, position):  # answered once per kernel structure (and shared with the lift)
                continue
            rel = s.write if position == 0 else s.isl.reads[position - 1]
            outside = model.out_of_bounds(rel, access.tensor)
            point = _first_point(outside.domain())  # the first offending iteration
            where = point_text(point, s.indices, len(s.indices))
            element = _first_point(outside.intersect_domain(isl.Set.from_point(point)).range())
            coords = ", ".join(str(element.get_coordinate_val(isl.dim_type.set, k).to_python())
                               for k in range(len(access.indices)))
            shape = "x".join(format_dim(d) for d in model.tensors[access.tensor].shape) or "scalar"
            params = param_text(point, model.names)
            at = f"at {where}" + (f" (with {params})" if params else "") if where or params else "always"
            out.append(AccessProblem(f"access `{format_expr(access)}` is out of bounds: {at} it touches "
                                     f"{access.tensor}[{coords}] but {access.tensor} has shape {shape}", access.loc,
                                     _at_sizes(outside, own or {})))
    return out


def write_problems(model: KernelModel, own: dict[str, int] | None = None) -> list[AccessProblem]:
    """Each output written with `=` that keeps a hole, at its first unwritten element."""
    out = []
    reduced = {s.stmt.target.tensor for s in model.statements if s.stmt.reduction is not None}
    for result in model.kernel.outputs:
        if result.name in reduced:
            continue  # a reduction target starts at its identity: unreached elements are defined
        holes = model.remember(("holes", result.name), lambda name=result.name: _holes(model, name))
        if holes is None:
            continue
        point = _first_point(holes)  # the first hole, in row-major order
        coords = ", ".join(str(point.get_coordinate_val(isl.dim_type.set, k).to_python())
                           for k in range(result.type.rank))
        params = param_text(point, model.names)
        out.append(AccessProblem(f"output {result.name} is not fully written: {result.name}[{coords}] is never "
                                 "assigned" + (f" (with {params})" if params else ""), result.loc,
                                 _at_sizes(holes, own or {})))
    return out


def _holes(model: KernelModel, output: str) -> isl.Set | None:
    """The elements of `output` no statement writes, or None when there are none."""
    written = model.footprint(output, written=True)
    box = model.boxes[output]
    holes = box if written is None else box.subtract(written)
    return None if holes.is_empty() else holes


def _writes_inside(op: EinsumOp) -> bool:
    """Whether every output subscript is an index alone whose range is that dimension of the result: then no
    write can leave it, without building the ISL model (a network's thousand einsums are mostly so)."""
    spec = parse_spec(op.spec)
    types = [b.value.type for b in op.inputs]
    out_shape = op.outputs[0].type.shape
    if len(spec.output) != len(out_shape) or not all(isinstance(t, TensorType) for t in types):
        return False
    try:
        ranges = index_ranges(spec, [*(t.shape for t in types if isinstance(t, TensorType)), out_shape],
                              parse_where(op.where, spec.indices) if op.where else [])
    except SpecError:
        return False
    return all(isinstance(e, IndexRef) and dims_equal(ranges[e.name], d)
               for e, d in zip(spec.output, out_shape, strict=True))


def einsum_write_problems(op: EinsumOp, params: list[str], own: dict[str, int] | None = None) -> list[AccessProblem]:
    """An operand read outside its bounds is padding (it reads 0); a result written outside is a problem."""
    if _writes_inside(op):
        return []
    used = mentioned_params(op)
    model = einsum_model(op, [p for p in params if p in used])
    outside = model.write_unclipped.subtract(model.write)
    if outside.is_empty():
        return []
    point = _first_point(outside.domain())
    letters = parse_spec(op.spec).indices
    where = ", ".join(f"{letter} = {point.get_coordinate_val(isl.dim_type.set, k).to_python()}"
                      for k, letter in enumerate(letters))
    element = outside.intersect_domain(isl.Set.from_point(point)).range().sample_point()
    result = op.outputs[0]
    coords = ", ".join(str(element.get_coordinate_val(isl.dim_type.set, k).to_python())
                       for k in range(result.type.rank))
    shape = "x".join(format_dim(d) for d in result.type.shape) or "scalar"
    return [AccessProblem(f"einsum @{op.symbol} writes outside its result: at {where} it writes "
                          f"{result.name}[{coords}] but {result.name} has shape {shape}", op.spec_loc,
                          _at_sizes(outside, own or {}))]
