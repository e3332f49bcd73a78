"""--lift-affine: the polyhedral model of every kernel: bounds proofs, exact counts, full writes, footprints."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import islpy as isl

from solar.ir.analysis.counts import einsum_model, mentioned_params
from solar.ir.analysis.isl_model import (
    KernelModel,
    UnsupportedForISL,
    evaluate,
    param_text,
    point_text,
)
from solar.ir.analysis.kernel_models import model_kernels
from solar.ir.diagnostics import DiagnosticEngine
from solar.ir.einsum_spec import parse_spec
from solar.ir.expr import format_expr
from solar.ir.ops import EinsumOp, ModuleOp
from solar.ir.pass_manager import Pass, PassContext
from solar.ir.types import format_dim


@dataclass(frozen=True)
class LiftAffine(Pass):
    """Builds each kernel's ISL model (statement domains and access relations) and records it on the IR;
    proves every access in bounds, counts iteration points exactly, checks that outputs written with `=`
    are fully written, and computes each tensor's footprint (elements actually touched).

    Before:
        %h = solar.kernel @k(%x as X) -> (Y: tensor<4xf32>) { affine.for %i = 0 to 4 { Y[%i] = X[%i] } }
    After:
        %h = solar.kernel @k(%x as X) -> (Y: tensor<4xf32>) attributes {isl = {S0 = {domain = "{ S0[i] : 0 <= i <= 3 }",
          write = "{ S0[i] -> Y[i] }", reads = ["{ S0[i] -> X[i] }"], points = 4}}, footprint = {X = 4, Y = 4}} {...}
    """

    name = "lift-affine"
    summary = "ISL model of every kernel: bounds proofs, exact iteration counts, full writes, footprints"
    annotate: bool = True

    def apply(self, ctx: PassContext, module: ModuleOp) -> None:
        values = module.param_values()
        for kernel, model in model_kernels(module):
            if isinstance(model, UnsupportedForISL):
                loc = model.expr.loc if model.expr is not None else kernel.loc
                ctx.diagnostics.remark(f"kernel @{kernel.symbol} is not modelled: {model}", loc)
                continue
            check_bounds(model, ctx.diagnostics)
            check_full_writes(model, ctx.diagnostics)
            if self.annotate:
                kernel.attrs.update(annotations(model, values))
        params = [p.name for p in module.params]
        for op in module.walk():
            if isinstance(op, EinsumOp):
                check_einsum_writes(op, params, ctx.diagnostics)


def check_einsum_writes(op: EinsumOp, params: list[str], diagnostics: DiagnosticEngine) -> None:
    """An operand read outside its bounds is padding (it reads 0); a result written outside is an error."""
    used = mentioned_params(op)
    model = einsum_model(op, [p for p in params if p in used])
    outside = model.write_unclipped.subtract(model.write)
    if outside.is_empty():
        return
    point = outside.domain().lexmin().sample_point()
    letters = parse_spec(op.spec).indices
    where = ", ".join(f"{letter} = {point.get_coordinate_val(isl.dim_type.set, k).to_python()}"
                      for k, letter in enumerate(letters))
    element = outside.intersect_domain(isl.Set.from_point(point)).range().sample_point()
    out = op.outputs[0]
    coords = ", ".join(str(element.get_coordinate_val(isl.dim_type.set, k).to_python()) for k in range(out.type.rank))
    shape = "x".join(format_dim(d) for d in out.type.shape) or "scalar"
    diagnostics.error(f"einsum @{op.symbol} writes outside its result: at {where} it writes {out.name}[{coords}] "
                      f"but {out.name} has shape {shape}", op.spec_loc)


def annotations(model: KernelModel, values: dict[str, int]) -> dict[str, Any]:
    stmts: dict[str, Any] = {}
    for s in model.statements:
        card = s.domain.card()
        points = evaluate(card, values)
        stmts[s.name] = {
            "domain": str(s.domain),
            "write": str(s.write),
            "reads": [str(m) for _, m in s.reads],
            "points": points if points is not None else str(card),
        }
    footprint: dict[str, Any] = {}
    for name in model.tensors:
        fp = model.footprint(name, written=name in {d.name for d in model.kernel.outputs})
        if fp is None:
            continue
        card = fp.card()
        n = evaluate(card, values)
        footprint[name] = n if n is not None else str(card)
    return {"isl": stmts, "footprint": footprint}


def check_bounds(model: KernelModel, diagnostics: DiagnosticEngine) -> None:
    for s in model.statements:
        for access, rel in [(s.stmt.target, s.write), *s.reads]:
            outside = model.out_of_bounds(rel, access.tensor)
            if outside.is_empty():
                continue
            point = outside.domain().lexmin().sample_point()  # the first offending iteration
            where = point_text(point, s.indices, len(s.indices))
            element = outside.intersect_domain(isl.Set.from_point(point)).range().lexmin().sample_point()
            coords = ", ".join(str(element.get_coordinate_val(isl.dim_type.set, k).to_python())
                               for k in range(len(access.indices)))
            shape = "x".join(format_dim(d) for d in model.tensors[access.tensor].shape) or "scalar"
            params = param_text(point, model.names)
            at = f"at {where}" + (f" (with {params})" if params else "") if where or params else "always"
            diagnostics.error(f"access `{format_expr(access)}` is out of bounds: {at} it touches "
                              f"{access.tensor}[{coords}] but {access.tensor} has shape {shape}", access.loc)


def check_full_writes(model: KernelModel, diagnostics: DiagnosticEngine) -> None:
    reduced = {s.stmt.target.tensor for s in model.statements if s.stmt.reduction is not None}
    for out in model.kernel.outputs:
        if out.name in reduced:
            continue  # a reduction target starts at its identity: unreached elements are defined
        written = model.footprint(out.name, written=True)
        box = model.boxes[out.name]
        holes = box if written is None else box.subtract(written)
        if holes.is_empty():
            continue
        point = holes.lexmin().sample_point()  # the first hole, in row-major order
        coords = ", ".join(str(point.get_coordinate_val(isl.dim_type.set, k).to_python())
                           for k in range(out.type.rank))
        params = param_text(point, model.names)
        diagnostics.error(f"output {out.name} is not fully written: {out.name}[{coords}] is never assigned"
                          + (f" (with {params})" if params else ""), out.loc)
