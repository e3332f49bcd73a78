"""--bind-params: gives size parameters values, making the module static (e.g. to validate it small)."""

from __future__ import annotations

from dataclasses import dataclass, field

from solar.ir.limits import INT_MAX
from solar.ir.ops import ModuleOp
from solar.ir.pass_manager import Pass, PassContext
from solar.ir.rewrite import substitute_params
from solar.ir.verifier import suggest


@dataclass(frozen=True)
class BindParams(Pass):
    """Substitutes size parameters everywhere (types, loop bounds, indices, slices) and drops them from the
    module's parameter list. With no options every parameter takes its default.

    Before (`bind-params{M=8}`):
        solar.module @m [M = 4096] { solar.func @f(%x: tensor<Mxf32>) ... affine.for %i = 0 to M ...
    After:
        solar.module @m { solar.func @f(%x: tensor<8xf32>) ... affine.for %i = 0 to 8 ...
    """

    name = "bind-params"
    summary = "Bind size parameters to values (M=64 ...), or all to their defaults"
    free_options = True
    options: dict[str, str] = field(default_factory=dict)

    def apply(self, ctx: PassContext, module: ModuleOp) -> None:
        declared = {p.name: p for p in module.params}
        values: dict[str, int] = {}
        for key, raw in self.options.items():
            if key not in declared:
                known = f"{suggest(key, declared)}" or f" (the module declares {', '.join(declared) or 'none'})"
                ctx.diagnostics.error(f"bind-params: no size parameter {key}{known}", module.loc)
                continue
            digits = raw.strip().lstrip("+")
            try:  # more than 19 digits is beyond 64 bits; Python would not even convert 4,301 of them
                value = INT_MAX + 1 if digits.isdigit() and len(digits.lstrip("0")) > 19 else int(raw)
            except ValueError:
                value = 0
            if value <= 0:
                ctx.diagnostics.error(f"bind-params: {key} must be a positive integer, not '{raw}'", module.loc)
                continue
            if value > INT_MAX:  # sizes are int64 in ISL and the executor, as every integer of the IR is
                shown = raw if len(raw) <= 40 else f"{raw[:20]}...({len(raw)} digits)"
                ctx.diagnostics.error(f"bind-params: {key} = {shown} is out of range: a size must fit in 64 bits "
                                      f"(at most 2^63 - 1 = {INT_MAX})", module.loc)
                continue
            values[key] = value
        if ctx.diagnostics.has_errors:
            return
        if not self.options:
            missing = [p.name for p in module.params if p.default is None]
            if missing:
                ctx.diagnostics.error(f"bind-params: {', '.join(missing)} {'has' if len(missing) == 1 else 'have'} "
                                      "no default; give values "
                                      f"such as bind-params{{{missing[0]}=64}}", module.loc)
                return
            values = {p.name: p.default for p in module.params if p.default is not None}
        substitute_params(module, values)
        module.params = [p for p in module.params if p.name not in values]
