"""JAX → SIR: `jax.make_jaxpr` → jaxpr → SIR through the JAX lowering table.

    from solar.frontends.jax_export import translate_jax
    result = translate_jax(fn, (x, w), name="mlp")

Nested jaxprs (jit, custom_jvp/vjp calls) are inlined; `scan` with a static length becomes `solar.for`;
every other primitive goes through `lowering.JAX_LOWERINGS` (one kernel per primitive, or composition ops
for shape primitives). Closed-over arrays become function arguments. Unsupported primitives are reported
together, each with the user source line JAX recorded for it.
"""

from __future__ import annotations

import inspect
import linecache
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from solar.ir import attr_names
from solar.ir.builder import ModuleBuilder
from solar.ir.dtypes import DType
from solar.ir.expr import Binary, Expr, IndexRef, IntLit
from solar.ir.ops import ModuleOp, SliceEntry, Value
from solar.ir.types import TensorType, types_equal

from .diagnostics import (
    Problem,
    SourceLine,
    TranslationError,
    jax_library_frame,
    jax_module_path,
    lowering_failed,
    raised_in_user_code,
    tag_library_frame,
    tag_module_path,
    user_code_error,
    verify_emitted,
)
from .jax_dims import (
    MAX_RETRIES,
    JaxDims,
    SizeGroups,
    Tracer,
    asked_dims,
    explain_fixed,
    failure_cause,
    shrink,
    sir_dim,
    sir_shape,
    symbols_in,
)
from .lowering import JAX_LOWERINGS
from .lowering.core import Emitter, InternalLoweringError, LoweringError, dexpr, ttype, vtype
from .lowering.jax_ops import jax_precision
from .lowering.registry import JaxNode, OutMeta
from .size_names import SizeNames, named_params, source_size_names

if TYPE_CHECKING:
    from .validate import ValidationReport

_DTYPES = {
    "float64": DType.F64, "float32": DType.F32, "bfloat16": DType.BF16, "float16": DType.F16,
    "float8_e4m3fn": DType.F8E4M3, "float8_e5m2": DType.F8E5M2,
    "int64": DType.I64, "int32": DType.I32, "int16": DType.I16, "int8": DType.I8, "uint8": DType.U8, "bool": DType.I1,
}

# Primitives that only wrap another jaxpr: their body is inlined.
_CALLS = {"pjit": "jaxpr", "jit": "jaxpr", "closed_call": "call_jaxpr", "core_call": "call_jaxpr",
          "custom_jvp_call": "call_jaxpr", "custom_vjp_call": "call_jaxpr", "custom_vjp_call_jaxpr": "fun_jaxpr",
          "remat": "jaxpr", "checkpoint": "jaxpr", "custom_lin": "jaxpr"}


def jax_fp32_precision() -> dict[str, str]:
    """How JAX runs f32 dots and convolutions on a GPU by default, as values of the IR attribute
    `fp32_precision` (docs/ir.md): `jax_default_matmul_precision` when set, else DEFAULT, which allows
    TF32 tensor cores. An equation's own `precision=` overrides this (`jax_precision`)."""
    import jax

    value = jax_precision(jax.config.jax_default_matmul_precision)
    return {"conv": value, "matmul": value}


def sir_dtype(dt: Any) -> DType:
    name = np.dtype(dt).name if not hasattr(dt, "name") else dt.name
    out = _DTYPES.get(str(name))
    if out is None:
        raise LoweringError(f"element type {name} has no SIR equivalent")
    return out


@dataclass
class JaxTranslation:
    module: ModuleOp
    consts: list[np.ndarray]  # values of the trailing function arguments (closed-over arrays)
    n_inputs: int
    timings: dict[str, float] = field(default_factory=dict)
    params: dict[str, int] = field(default_factory=dict)  # size parameters and their full sizes
    param_dims: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # parameter → (input, dim)
    fixed_dims: list[str] = field(default_factory=list)  # dims asked symbolic that stayed fixed, and why
    input_names: list[str] = field(default_factory=list)  # the function's parameter names


def _frame(eqn: Any) -> SourceLine | None:
    try:
        from jax._src import source_info_util

        fr = source_info_util.user_frame(eqn.source_info.traceback)
    except Exception:
        return None
    if fr is None:
        return None
    code = linecache.getline(fr.file_name, fr.start_line).strip()
    return SourceLine(fr.file_name, fr.start_line, max(fr.start_column, 0) + 1, code)


def _frames(eqn: Any) -> list[tuple[str, int]]:
    """The equation's traceback as (file, line), innermost first."""
    try:
        return [(fr.file_name, fr.line_num) for fr in eqn.source_info.traceback.frames]
    except Exception:  # no traceback kept (jax's config can drop them)
        return []


def _aval_meta(aval: Any) -> OutMeta:
    return OutMeta(sir_shape(aval.shape), sir_dtype(aval.dtype))


def _symbolic(x: Any) -> bool:
    return type(x).__name__ == "_DimExpr"


def _sir_param(value: Any) -> Any:
    """An equation's parameter with JAX's symbolic sizes (`slice_sizes=(BATCH, 1)`) as SIR sizes."""
    if _symbolic(value):
        return sir_dim(value)
    if isinstance(value, tuple | list) and any(_symbolic(x) for x in value):
        return type(value)(sir_dim(x) if _symbolic(x) else x for x in value)
    return value


def _literal(v: Any) -> Any:
    val = getattr(v, "val", v)
    arr = np.asarray(val)
    if arr.shape == ():
        item = arr.item()
        return bool(item) if arr.dtype == np.bool_ else item
    return arr


class JaxprLowering:
    def __init__(self, name: str, params: Sequence[str] = ()) -> None:
        self.name = name
        self.problems: list[Problem] = []
        self.origin: dict[int, tuple[str, SourceLine | None]] = {}  # id of an emitted op → its primitive, line
        # Per problem, the size parameters its message names, else those its equation's shapes use: the
        # candidates to fix when a lowering cannot take a symbolic size (translate_jax).
        self.params = list(params)
        self.blamed: list[tuple[list[str], str]] = []
        # Equations inlined from a jit or custom_jvp call may carry no user frame of their own: they are
        # reported at the line of the call that contains them.
        self.outer: list[SourceLine | None] = []

    def read(self, env: dict[Any, Any], v: Any, em: Emitter) -> Any:
        if type(v).__name__ == "Literal":
            lit_value = _literal(v)
            if isinstance(lit_value, np.ndarray):
                return em.constant(lit_value.tolist(), lit_value.shape, sir_dtype(lit_value.dtype))
            return lit_value
        return env.get(v)

    def lower_jaxpr(self, jaxpr: Any, args: Sequence[Any], em: Emitter) -> list[Any]:
        """Lowers `jaxpr` (open) with `args` bound to its invars; returns the values of its outvars."""
        env: dict[Any, Any] = dict(zip(jaxpr.invars, args, strict=True))
        for eqn in jaxpr.eqns:
            self.lower_eqn(eqn, env, em)
        return [self.read(env, v, em) for v in jaxpr.outvars]

    def lower_eqn(self, eqn: Any, env: dict[Any, Any], em: Emitter) -> None:
        prim = eqn.primitive.name
        where = _frame(eqn) or next((w for w in reversed(self.outer) if w is not None), None)
        inputs = [self.read(env, v, em) for v in eqn.invars]
        if any(x is None for x in inputs):
            for v in eqn.outvars:
                env[v] = None
            return  # an input failed to translate; that failure is already reported
        em.loc = where.location if where is not None else None
        em.hint = prim
        try:
            if prim in _CALLS:
                closed = eqn.params[_CALLS[prim]]
                inner = getattr(closed, "jaxpr", closed)
                consts = [em.constant(np.asarray(c).tolist(), np.asarray(c).shape, sir_dtype(np.asarray(c).dtype))
                          for c in getattr(closed, "consts", [])]
                self.outer.append(where)
                try:
                    outs = self.lower_jaxpr(inner, [*consts, *inputs], em)
                finally:
                    self.outer.pop()
            elif prim == "dim_as_value":  # a symbolic size used as a number (jnp.mean's count)
                outs = [sir_dim(eqn.params["dim"])]
            elif prim == "convert_element_type" and isinstance(inputs[0], Expr):
                outs = [inputs[0]]  # a size stays a number: pointwise math casts it where it is used
            elif prim == "scan":
                self.outer.append(where)
                try:
                    outs = self.lower_scan(eqn, inputs, em)
                finally:
                    self.outer.pop()
            else:
                fn = JAX_LOWERINGS.get(prim)
                if fn is None:
                    raise LoweringError(f"unsupported primitive '{prim}': no lowering")
                params = {k: _sir_param(v) for k, v in eqn.params.items()}
                node = JaxNode(em, prim, inputs, params, [_aval_meta(v.aval) for v in eqn.outvars])
                first_new = len(em.block.ops)
                res = fn(node)
                for op in em.block.ops[first_new:]:
                    self.origin[id(op)] = (prim, where)
                tag_library_frame(em.block.ops[first_new:], jax_library_frame(_frames(eqn), where))
                tag_module_path(em.block.ops[first_new:], jax_module_path(eqn.source_info.name_stack))
                outs = list(res) if isinstance(res, list | tuple) else [res]
                for v, meta in zip(outs, node.outs, strict=False):
                    if isinstance(v, Value) and v.type is not None and not types_equal(v.type, meta.type):
                        raise InternalLoweringError(f"lowering of {prim} produced {v.type}, jaxpr says {meta.type}")
        except InternalLoweringError as err:
            self.problems.append(Problem(prim, f"{err} (a bug in SOLAR: please report it)", where, internal=True))
            self.blame(eqn, err)
            outs = [None] * len(eqn.outvars)
        except LoweringError as err:
            msg = str(err)
            self.problems.append(Problem(prim, msg if msg.startswith(prim) or "primitive" in msg else f"{prim}: {msg}",
                                         where))
            self.blame(eqn, err)
            outs = [None] * len(eqn.outvars)
        except Exception as err:  # a bug in a lowering, not in the program: still located, never a traceback
            self.problems.append(Problem(prim, lowering_failed(prim, err), where, internal=True))
            self.blame(eqn, err)
            outs = [None] * len(eqn.outvars)
        for v, value in zip(eqn.outvars, outs, strict=True):
            env[v] = value

    def blame(self, eqn: Any, err: Exception) -> None:
        if not self.params:
            return
        named = named_params(err, self.params)
        shapes = [getattr(getattr(v, "aval", None), "shape", ()) for v in [*eqn.invars, *eqn.outvars]]
        # A LoweringError's text is SOLAR's own; any other exception's is not, and only its kind is named.
        prim = eqn.primitive.name
        text = str(err).strip().splitlines()[0] if isinstance(err, LoweringError) and str(err).strip() else \
            f"its lowering fails on a symbolic size (an internal error, {type(err).__name__})"
        why = text if text.startswith(f"{prim}: ") else f"{prim}: {text}"
        self.blamed.append((named or symbols_in(shapes, self.params), why))

    def lower_scan(self, eqn: Any, inputs: list[Any], em: Emitter) -> list[Any]:
        p = eqn.params
        if not isinstance(p["length"], int | np.integer):
            raise LoweringError(f"a scan of symbolic length {p['length']}: solar.for needs a static trip count")
        length, reverse = int(p["length"]), bool(p["reverse"])
        n_consts, n_carry = int(p["num_consts"]), int(p["num_carry"])
        body = p["jaxpr"]
        consts = [em.constant(np.asarray(c).tolist(), np.asarray(c).shape, sir_dtype(np.asarray(c).dtype))
                  for c in getattr(body, "consts", [])]
        inner_jaxpr = getattr(body, "jaxpr", body)
        xs_consts = [self._as_value(x, em) for x in inputs[:n_consts]]
        carries = [self._as_value(x, em) for x in inputs[n_consts: n_consts + n_carry]]
        xs = [self._as_value(x, em) for x in inputs[n_consts + n_carry:]]
        y_avals = [v.aval for v in inner_jaxpr.outvars[n_carry:]]
        ys0 = [em.constant(0, (length, *sir_shape(a.shape)), sir_dtype(a.dtype)) for a in y_avals]
        var = em.symbol("t").replace(".", "_")
        with em.block.for_(var, 0, length, [*carries, *ys0], hint="scan") as region:
            t = IndexRef(var)
            tt = t if not reverse else Binary("-", IntLit(length - 1), t)
            inner = em.inner(region, [*em.for_vars, var])
            x_slices = []
            for x in xs:
                shape = vtype(x).shape
                entries = [SliceEntry(index=tt)] + [SliceEntry(start=IntLit(0), stop=dexpr(d)) for d in shape[1:]]
                x_slices.append(inner.slice(x, entries, shape[1:]))
            state = region.args[:n_carry]
            outs = self.lower_jaxpr(inner_jaxpr, [*consts, *xs_consts, *state, *x_slices], inner)
            if any(o is None for o in outs):
                raise LoweringError("the scan body could not be translated")
            outs = [self._as_value(o, inner) for o in outs]
            new_carry, ys_t = outs[:n_carry], outs[n_carry:]
            new_ys = []
            for buf, y in zip(region.args[n_carry:], ys_t, strict=True):
                shape = vtype(buf).shape
                entries = [SliceEntry(index=tt)] + [SliceEntry(start=IntLit(0), stop=dexpr(d)) for d in shape[1:]]
                new_ys.append(inner.insert(y, buf, entries))
            region.yield_(*new_carry, *new_ys)
        em.stamp(em.block.ops[-1])
        return list(region.results)

    def _as_value(self, x: Any, em: Emitter) -> Value:
        if isinstance(x, Value):
            return x
        dt = DType.F32 if isinstance(x, float) else DType.I1 if isinstance(x, bool) else DType.I32
        return em.constant(x, (), dt)


def translate_jax(fn: Callable[..., Any], args: Sequence[Any], name: str = "jax_fn", dynamic: str = "none",
                  input_names: Sequence[str] | None = None, size_names: SizeNames | None = None) -> JaxTranslation:
    """Traces and lowers `fn` on `args`. `dynamic` ('all', 'batch', 'none') says which input dims become size
    parameters (frontends/jax_dims.py), named after `size_names` (default: the module-level integers of
    `fn`'s module) and `input_names` (default: `fn`'s parameter names); a dim that tracing or lowering
    cannot take symbolic goes back to static, and `fixed_dims` says why."""
    import jax  # on first use: importing the frontend must not load JAX (start-up time)

    from .jax_intercept import intercepted  # imports JAX

    names = list(input_names) if input_names is not None else _parameter_names(fn)
    source = size_names if size_names is not None else _module_sizes(fn)

    def make_jaxpr(f: Callable[..., Any]) -> Callable[..., Any]:
        def trace(*xs: Any) -> Any:
            with intercepted():
                return jax.make_jaxpr(f)(*xs)
        return trace

    start = time.perf_counter()
    tracer = Tracer(fn, args, names, source, make_jaxpr)
    info = JaxDims(mode=dynamic, asked=asked_dims(tracer.shapes, dynamic))
    policies = {"all": ["all", "batch", "none"], "batch": ["batch", "none"]}.get(dynamic, ["none"])
    failure: Exception | None = None
    for policy in policies:
        dims = asked_dims(tracer.shapes, policy) - set(info.dropped)
        try:
            closed, sizes = tracer.solve(tracer.initial(dims), info)
        except Exception as err:
            if policy == "none":
                # At its own shapes the program fails under tracing: its error, at its line, not ours.
                if raised_in_user_code(err):
                    raise user_code_error(err, "while tracing it with jax.make_jaxpr") from None
                raise
            failure = failure or err
            continue
        traced = time.perf_counter()
        try:
            result = _lower_fixing(closed, name, sizes, tracer, info, policy == "none")
        except Exception as err:  # a failure with symbols: the next policy fixes more dims
            if policy == "none":
                raise
            failure = failure or err
            continue
        break
    if info.mode != policy:
        info.mode = policy
        info.fallback = f"with more dims symbolic, {failure_cause(failure)}" if failure else ""
    kept = {dim for places in result.param_dims.values() for dim in places}
    result.fixed_dims = explain_fixed(info, tracer.shapes, names, kept)
    result.input_names = names
    result.timings["trace"] = traced - start
    result.timings["lower"] = time.perf_counter() - traced
    return result


def _lower_fixing(closed: Any, name: str, sizes: SizeGroups, tracer: Tracer, info: JaxDims,
                  last: bool) -> JaxTranslation:
    """Lowers; where a lowering cannot take a symbolic size, fixes that parameter (the last its message
    names, else the last its equation's shapes use), traces again and retries, at most MAX_RETRIES times."""
    for attempt in range(MAX_RETRIES + 1):
        low = JaxprLowering(name, sizes.names)
        try:
            return _lower(closed, name, sizes, low)
        except TranslationError:
            culprit = next((b for b in low.blamed if b[0]), None)
            if last or culprit is None or attempt == MAX_RETRIES:
                raise
            param, why = culprit[0][-1], culprit[1]
            k = sizes.names.index(param)
            for dim in sizes.groups[k]:
                info.dropped[dim] = f"a lowering cannot take its size symbolic ({why})"
            closed, sizes = tracer.solve([g for j, g in enumerate(sizes.groups) if j != k], info)
    raise AssertionError("unreachable")


def _lower(closed: Any, name: str, sizes: SizeGroups, low: JaxprLowering) -> JaxTranslation:
    jaxpr = closed.jaxpr
    consts = [np.asarray(c) for c in closed.consts]
    arg_types: list[tuple[str, TensorType]] = []
    for k, v in enumerate(jaxpr.invars):
        arg_types.append((f"arg{k}", _aval_meta(v.aval).type))
    for k, c in enumerate(consts):
        arg_types.append((f"const{k}", ttype(c.shape, sir_dtype(c.dtype))))
    mb = ModuleBuilder(_sanitize(name), dict(sizes.defaults))
    fb = mb.func("forward", arg_types)
    em = Emitter(fb, fp32=jax_fp32_precision())
    n_in = len(jaxpr.invars)
    env_args = list(fb.args[:n_in])
    const_args = list(fb.args[n_in:])
    outs = _lower_with_consts(low, jaxpr, env_args, const_args, em)
    if low.problems:
        raise TranslationError(low.problems, f"{len(low.problems)} problem(s) translating {name}")
    values = [low._as_value(o, em) for o in outs]
    if not values:
        raise LoweringError("the program returns no tensor: a speed of light bounds the work of "
                            "computing its results, so return at least one")
    fb.ret(*values)
    module = mb.module
    module.attrs[attr_names.ORIGIN] = "jax.make_jaxpr"
    broken = verify_emitted(module, low.origin)
    if broken:
        raise TranslationError(broken, f"{len(broken)} internal error(s) translating {name}")
    return JaxTranslation(module, consts, n_in, params=dict(sizes.defaults), param_dims=sizes.where())


def _parameter_names(fn: Callable[..., Any]) -> list[str]:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return []
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return []
    return [p.name for p in params]


def _module_sizes(fn: Callable[..., Any]) -> SizeNames:
    """Size names from the module-level integers of the module that defines `fn` (torch_symbols)."""
    return source_size_names(getattr(inspect.unwrap(fn), "__globals__", {}))


def _lower_with_consts(low: JaxprLowering, jaxpr: Any, args: list[Value], consts: list[Value],
                       em: Emitter) -> list[Any]:
    env_args = dict(zip(jaxpr.constvars, consts, strict=True))
    env: dict[Any, Any] = {**env_args, **dict(zip(jaxpr.invars, args, strict=True))}
    for eqn in jaxpr.eqns:
        low.lower_eqn(eqn, env, em)
    return [low.read(env, v, em) for v in jaxpr.outvars]


def _sanitize(name: str) -> str:
    out = "".join(ch if ch.isalnum() or ch in "_." else "_" for ch in name)
    return out if out and not out[0].isdigit() else "m" + out


def jax_reference(fn: Callable[..., Any], args: Sequence[Any], tr: JaxTranslation,
                  sizes: dict[str, int] | None = None) -> Callable[[], tuple[list[np.ndarray], list[np.ndarray]]]:
    """The validation case: the JAX function's outputs on `args` (its own example inputs), cut to `sizes`
    along every dim a size parameter sizes (full size without `sizes`)."""

    def run() -> tuple[list[np.ndarray], list[np.ndarray]]:
        import jax

        small = shrink(args, tr.param_dims, sizes) if sizes else list(args)
        out = fn(*small)
        leaves = jax.tree_util.tree_leaves(out)
        arrays = [_np(a) for a in small] + list(tr.consts)
        return arrays, [_np(o) for o in leaves]

    return run


def validate_jax(fn: Callable[..., Any], args: Sequence[Any], tr: JaxTranslation, seed: int = 0, size: int = 4,
                 full: bool = False) -> ValidationReport:
    """Validates as solar-translate does: every size parameter bound to at most `size` (or all at full size
    with `full`), the function run on its inputs cut to those sizes; the report's details say which dims
    were reduced and which could not shrink and why."""
    from .export_dims import size_lines
    from .validate import small_sizes, validate_sized

    sizes = small_sizes(tr.module, size, full)
    report = validate_sized(tr.module, lambda sz: jax_reference(fn, args, tr, sz), sizes, seed)
    report.details = size_lines(tr.params, tr.param_dims, tr.input_names, report.sizes, tr.fixed_dims)
    return report


def _np(a: Any) -> np.ndarray:
    arr = np.asarray(a)
    if arr.dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        return arr.astype(np.float32)
    return arr
