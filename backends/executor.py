"""Running a verified SIR module: kernels and einsums compiled with Numba (or BLAS), composition ops with NumPy.

    from solar.backends.executor import run
    outputs = run(module, {"x": x, "w": w}, params={"B": 8})     # a list, in `solar.return` order

`prepare` binds size parameters on a copy of the module, verifies it and returns a `Program` that can be called
many times (kernels compile on first use, or all at once with `Program.compile()`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from solar.ir.diagnostics import DiagnosticEngine
from solar.ir.dtypes import DType
from solar.ir.expr_values import evaluate_int
from solar.ir.ops import CallOp, EinsumOp, ForOp, FuncOp, GroupOp, IfOp, KernelOp, ModuleOp, Op, Value
from solar.ir.rewrite import substitute_params
from solar.ir.types import TensorType
from solar.ir.verifier import suggest, verify

from . import jit, python_kernels
from .codegen import GeneratedKernel, generate_kernel
from .codegen_einsum import GeneratedEinsum, generate_einsum, generate_einsum_epilogue
from .dtypes import FORMATS, STORAGE, compute_dtype, identity, round_tf32, storage_dtype, to_compute, to_storage
from .einsum import BlasPlan, blas_plan, contract
from .errors import (
    EntryError,
    ExecutionError,
    InputError,
    ParamError,
    RuntimeBoundsError,
    UnsupportedError,
    VerificationError,
)
from .op_hooks import EXECUTE, Env, HookSet, install
from .vectorized import VectorPlan, evaluate, prefers_numpy, vector_plan

ArrayMap = Mapping[str, Any]
_MAX_CALL_DEPTH = 200


def bind_values(module: ModuleOp, params: Mapping[str, int] | None) -> dict[str, int]:
    """Every size parameter's value: the given ones over the defaults. Unknown names, values that are not
    positive integers and parameters left without a value are errors."""
    declared = {p.name: p for p in module.params}
    values = module.param_values()
    for name, raw in (params or {}).items():
        if name not in declared:
            known = ", ".join(declared) or "none"
            raise ParamError(f"no size parameter {name}{suggest(name, declared)} (the module declares {known})")
        if isinstance(raw, bool) or not isinstance(raw, int | np.integer) or int(raw) <= 0:
            raise ParamError(f"size parameter {name} must be a positive integer, not {raw!r}")
        values[name] = int(raw)
    missing = [p.name for p in module.params if p.name not in values]
    if missing:
        raise ParamError(f"size parameter{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                         f"{'have' if len(missing) > 1 else 'has'} no default; bind "
                         f"{'them' if len(missing) > 1 else 'it'} with --param {missing[0]}=N "
                         f"(or params={{'{missing[0]}': N}})")
    return values


def prepare(module: ModuleOp, params: Mapping[str, int] | None = None, entry: str | None = None,
            diagnostics: DiagnosticEngine | None = None, interpret_limit: float = 0) -> Program:
    """Binds size parameters on a copy of `module`, verifies it and returns a runnable `Program`.

    `diagnostics` (optional) supplies the source text so verification errors quote the offending line.
    `interpret_limit`: a budget of statements that kernels may run as plain Python (backends/python_kernels.py)
    instead of through Numba: each kernel whose estimate fits what is left runs so (0, the default: every
    kernel through Numba)."""
    values = bind_values(module, params)
    bound = copy.deepcopy(module)
    if values:
        substitute_params(bound, values)
    bound.params = []
    engine = DiagnosticEngine(diagnostics.sources) if diagnostics is not None else DiagnosticEngine()
    if not verify(bound, engine):
        errors = [d for d in engine.diagnostics if d.severity == "error"]
        raise VerificationError(f"the module does not verify: {errors[0].loc}: {errors[0].message}",
                                engine.diagnostics, engine.format_all())
    if entry is not None:
        func = bound.lookup(entry)
        if func is None:
            names = [f.name for f in bound.funcs]
            raise EntryError(f"no function @{entry}{suggest(entry, names)} (the module defines "
                             f"{', '.join('@' + n for n in names) or 'none'})")
    else:
        func = bound.entry
        if func is None:
            raise EntryError("the module has no function to run")
    return Program(bound, func, values, interpret_limit)


def run(module: ModuleOp, inputs: ArrayMap | Sequence[Any], params: Mapping[str, int] | None = None,
        entry: str | None = None, interpret_limit: float = 0) -> list[np.ndarray]:
    """Runs the entry function of `module` on `inputs` (by argument name, or in order) and returns its results.

    Arrays must have the argument's shape and storage dtype (`backends/dtypes.py`: bf16 as
    `ml_dtypes.bfloat16`, i1 as bool, ...); bf16/f8/tf32 arguments also accept float32 arrays, which are rounded."""
    return prepare(module, params, entry, interpret_limit=interpret_limit)(inputs)


def kernel_statements(module: ModuleOp, params: Mapping[str, int] | None = None) -> float:
    """`Program.statements` of the module with `params` bound."""
    return prepare(module, params).statements


@dataclass(frozen=True)
class InputSpec:
    name: str
    type: TensorType

    @property
    def shape(self) -> tuple[int, ...]:
        return self.type.concrete_shape()

    @property
    def dtype(self) -> np.dtype:
        return storage_dtype(self.type.dtype)


class Program:
    """A bound, verified module ready to run; kernels are compiled once and reused across calls."""

    def __init__(self, module: ModuleOp, entry: FuncOp, params: dict[str, int], interpret_limit: float = 0) -> None:
        self.module = module
        self.entry = entry
        self.params = params
        # Statements left to run as plain Python: a kernel whose estimate fits runs so, and spends it.
        self.interpret_budget = interpret_limit
        self._kernels: dict[int, _Kernel] = {}
        self._generated: dict[int, GeneratedKernel] = {}  # each kernel's code, generated once
        self._einsums: dict[int, _Einsum] = {}
        self._depth = 0
        self._statements: float | None = None

    @property
    def statements(self) -> float:
        """An upper estimate of the statements the kernels execute (each kernel once; infinite where a bound
        is unknown): what `interpret_limit` is compared with, and what a caller may check before running.
        Generates every kernel's code, which running then reuses."""
        if self._statements is None:
            self._statements = sum(self._generated_kernel(op).points for func in self.module.funcs
                                   for op in func.walk() if isinstance(op, KernelOp))
        return self._statements

    @property
    def inputs(self) -> list[InputSpec]:
        return [InputSpec(a.name, a.type) for a in self.entry.args if a.type is not None]

    @property
    def result_types(self) -> list[TensorType]:
        return list(self.entry.result_types)

    def compile(self) -> float:
        """Compiles every kernel and einsum of the module now (loading from the disk cache where possible);
        returns the seconds spent."""
        before = jit.STATS.seconds
        for func in self.module.funcs:
            for op in func.walk():
                if isinstance(op, KernelOp):
                    self._kernel(op).compile()
                elif isinstance(op, EinsumOp):
                    self._einsum(op).compile()
        return jit.STATS.seconds - before

    def __call__(self, inputs: ArrayMap | Sequence[Any]) -> list[np.ndarray]:
        args = self.check_inputs(inputs)
        try:
            results = self._call(self.entry, args)
        except MemoryError:
            raise ExecutionError("out of memory: bind smaller size parameters (--param)") from None
        # Results are plain writable arrays that alias neither the caller's inputs nor each other (a result
        # may be an input, a view of one, or returned twice); fresh kernel outputs are not copied again.
        out: list[np.ndarray] = []
        for r in results:
            if (not r.flags.writeable or not r.flags.c_contiguous or any(np.may_share_memory(r, a) for a in args)
                    or any(np.may_share_memory(r, o) for o in out)):
                r = np.array(r, copy=True)
            out.append(r)
        return out

    # ---- inputs ----------------------------------------------------------------------------------
    def check_inputs(self, inputs: ArrayMap | Sequence[Any]) -> list[np.ndarray]:
        specs = self.inputs
        if isinstance(inputs, Mapping):
            names = [s.name for s in specs]
            missing = [n for n in names if n not in inputs]
            extra = [n for n in inputs if n not in names]
            if missing:
                raise InputError(f"missing input{'s' if len(missing) > 1 else ''} "
                                 f"{', '.join('%' + n for n in missing)} for @{self.entry.name}"
                                 f"({', '.join('%' + n for n in names)})")
            if extra:
                hint = suggest(extra[0], names)
                raise InputError(f"unexpected input{'s' if len(extra) > 1 else ''} {', '.join(extra)}{hint}: "
                                 f"@{self.entry.name} takes {', '.join('%' + n for n in names) or 'none'}")
            given = [inputs[n] for n in names]
        else:
            given = list(inputs)
            if len(given) != len(specs):
                raise InputError(f"@{self.entry.name} takes {len(specs)} input(s), {len(given)} given")
        return [coerce_input(s, a) for s, a in zip(specs, given, strict=True)]

    # ---- interpretation --------------------------------------------------------------------------
    def _call(self, func: FuncOp, args: list[np.ndarray]) -> list[np.ndarray]:
        self._depth += 1
        try:
            if self._depth > _MAX_CALL_DEPTH:
                raise ExecutionError(f"calls nest deeper than {_MAX_CALL_DEPTH} (recursion through @{func.name}?)")
            env: dict[Value, np.ndarray] = dict(zip(func.args, args, strict=True))
            return self._block(func.body, env, {})
        finally:
            self._depth -= 1

    def _block(self, ops: list[Op], env: dict[Value, np.ndarray], idx: dict[str, int]) -> list[np.ndarray]:
        for op in ops:
            if op.is_terminator:
                return [env[v] for v in op.operands]
            results = self._op(op, env, idx)
            types = op.declared_types()
            for value, array, t in zip(op.results, results, types, strict=False):
                _check_result(op, array, t)
                env[value] = array
        return []

    def _op(self, op: Op, env: dict[Value, np.ndarray], idx: dict[str, int]) -> list[np.ndarray]:
        hook = EXECUTE.lookup(type(op))
        if hook is None:
            raise UnsupportedError(f"{op.opname} at {op.loc} cannot run")
        return hook(self, op, env, idx)

    def run_block(self, ops: list[Op], env: dict[Value, np.ndarray], idx: dict[str, int]) -> list[np.ndarray]:
        """Runs a region on a copy of `env` (its values stay inside it); the values its terminator gives."""
        return self._block(ops, dict(env), idx)

    def call(self, callee: str, args: list[np.ndarray]) -> list[np.ndarray]:
        func = self.module.lookup(callee)
        assert func is not None, "verified"
        return self._call(func, args)

    def _kernel(self, op: KernelOp) -> _Kernel:
        k = self._kernels.get(id(op))
        if k is None:
            k = self._kernels[id(op)] = _Kernel(op, self._generated_kernel(op), self.interpret_budget)
            if k.interpreted:
                self.interpret_budget -= k.gen.points
        return k

    def _generated_kernel(self, op: KernelOp) -> GeneratedKernel:
        gen = self._generated.get(id(op))
        if gen is None:
            gen = self._generated[id(op)] = generate_kernel(op)
        return gen

    def _einsum(self, op: EinsumOp) -> _Einsum:
        e = self._einsums.get(id(op))
        if e is None:
            e = self._einsums[id(op)] = _Einsum(op)
        return e


# ---- kernels and einsums ---------------------------------------------------------------------------


def _numba_sig(arrays: list[tuple[np.dtype, int]], scalars: int) -> tuple[Any, ...]:
    from numba import types
    from numba.np.numpy_support import from_dtype

    sig: list[Any] = [types.Array(from_dtype(dt), max(ndim, 1), "C") for dt, ndim in arrays]
    sig += [types.int64] * scalars
    sig.append(types.Array(types.int64, 1, "C"))
    return tuple(sig)


def _kernel_array(array: np.ndarray, dtype: Any) -> np.ndarray:
    """A C-contiguous, writable array in the compute dtype, rank-0 as shape (1,): one Numba signature per
    kernel (a read-only or strided array would be another type and another compilation)."""
    out = to_compute(array, dtype)
    if not out.flags.writeable or not out.flags.c_contiguous:
        out = np.array(out, order="C", copy=True)
    return out.reshape(out.shape or (1,))


class _Kernel:
    def __init__(self, op: KernelOp, gen: GeneratedKernel, interpret_limit: float = 0) -> None:
        self.op = op
        self.gen = gen
        self.in_types = [b.value.type for b in op.inputs if b.value.type is not None]
        self.out_types = [d.type for d in op.outputs]
        self.out_dtypes = [np.dtype(np.float64) if wide else compute_dtype(t.dtype)
                           for t, wide in zip(self.out_types, self.gen.wide, strict=True)]
        # A tiny iteration space runs the generated source as plain Python (python_kernels.py): no Numba.
        self.interpreted = self.gen.points <= interpret_limit
        if self.interpreted:
            self.fn = python_kernels.python_kernel(self.gen.source)
            return
        self.fn = jit.dispatcher(self.gen.source)
        self.sig = _numba_sig([(compute_dtype(t.dtype), t.rank) for t in self.in_types]
                              + [(dt, t.rank) for dt, t in zip(self.out_dtypes, self.out_types, strict=True)],
                              len(self.gen.outer_indices))

    def compile(self) -> None:
        if not self.interpreted:
            jit.compile_for(self.fn, self.sig, f"kernel @{self.op.symbol} at {self.op.loc}")

    def __call__(self, inputs: list[np.ndarray], idx: dict[str, int]) -> list[np.ndarray]:
        args = [_kernel_array(a, t.dtype) for a, t in zip(inputs, self.in_types, strict=True)]
        outs = []
        for t, init, cdt in zip(self.out_types, self.gen.output_init, self.out_dtypes, strict=True):
            shape = t.concrete_shape() or (1,)
            outs.append(np.zeros(shape, cdt) if init is None else np.full(shape, init, cdt))
        outer = [np.int64(idx[name]) for name in self.gen.outer_indices]
        err = np.zeros(2, np.int64)
        self.compile()
        if self.interpreted:
            python_kernels.call(self.fn, *args, *outs, *outer, err)
        else:
            self.fn(*args, *outs, *outer, err)
        if err[0]:
            check = self.gen.checks[int(err[0]) - 1]
            raise RuntimeBoundsError(
                f"kernel @{check.kernel} at {check.loc}: index {check.dim} of {check.access} is {int(err[1])}, "
                f"outside [0, {check.size})", check.loc)
        return [to_storage(o.reshape(t.concrete_shape()), t.dtype) for o, t in zip(outs, self.out_types, strict=True)]


class _Einsum:
    def __init__(self, op: EinsumOp) -> None:
        self.op = op
        self.out_type = op.outputs[0].type
        self.in_types = [b.value.type for b in op.inputs if b.value.type is not None]
        self.plan: BlasPlan | None = blas_plan(op)
        self.vector: VectorPlan | None = None
        if self.plan is None and prefers_numpy(op):
            self.vector = vector_plan(op)
        self.gen: GeneratedEinsum | None = None
        self.epilogue: GeneratedEinsum | None = None
        if self.vector is not None:
            pass  # NumPy ufuncs on a thread pool, no compilation
        elif self.plan is None:
            self.gen = generate_einsum(op)
            if self.gen.scatter and len(op.body) > 1:
                self.epilogue = generate_einsum_epilogue(op)
        elif len(op.body) > 1:
            self.gen = generate_einsum(op, precomputed=True)  # the epilogue, on the contracted result
        self.fn = jit.dispatcher(self.gen.source) if self.gen is not None else None
        self.epilogue_fn = jit.dispatcher(self.epilogue.source) if self.epilogue is not None else None
        arrays = [(compute_dtype(t.dtype), t.rank) for t in self.in_types] + [
            (compute_dtype(self.out_type.dtype), self.out_type.rank)]
        self.sig = _numba_sig(arrays, 0)
        self.pre_sig = _numba_sig([(compute_dtype(self.out_type.dtype), self.out_type.rank), *arrays], 0)
        self._loops: Any = None  # the full loop nest, when a masked contraction meets inf/NaN

    @property
    def uses_blas(self) -> bool:
        return self.plan is not None

    def compile(self) -> None:
        what = f"einsum @{self.op.symbol} at {self.op.loc}"
        if self.fn is not None:
            jit.compile_for(self.fn, self.pre_sig if self.plan is not None else self.sig, what)
        if self.epilogue_fn is not None:
            jit.compile_for(self.epilogue_fn, self.pre_sig, what)

    def __call__(self, inputs: list[np.ndarray]) -> np.ndarray:
        t = self.out_type
        shape = t.concrete_shape()
        operands = [_kernel_array(a, it.dtype) for a, it in zip(inputs, self.in_types, strict=True)]
        if self.vector is not None:
            views = [a.reshape(it.concrete_shape()) for a, it in zip(operands, self.in_types, strict=True)]
            return to_storage(evaluate(self.vector, views, _threads()).reshape(shape), t.dtype)
        fn, pre = self.fn, []
        if self.plan is not None:
            views = [a.reshape(it.concrete_shape()) for a, it in zip(operands, self.in_types, strict=True)]
            result = contract(self.plan, views)
            if result is None:
                if self._loops is None:
                    self._loops = jit.dispatcher(generate_einsum(self.op).source)
                fn = jit.compile_for(self._loops, self.sig, f"einsum @{self.op.symbol} at {self.op.loc}")
            elif self.fn is None:
                return to_storage(result.astype(compute_dtype(t.dtype), copy=False).reshape(shape), t.dtype)
            else:
                pre = [_kernel_array(result, t.dtype)]
        assert fn is not None
        err = np.zeros(2, np.int64)
        if fn is self.fn:
            self.compile()
        if self.gen is not None and self.gen.scatter:
            red = self.op.body[0].reduction
            out = np.full(shape or (1,), identity(red, t.dtype) if red else 0, compute_dtype(t.dtype))
            fn(*operands, out, err)
            if self.epilogue_fn is not None:
                final = np.empty_like(out)
                self.epilogue_fn(out, *operands, final, err)
                out = final
            return to_storage(out.reshape(shape), t.dtype)
        out = np.empty(shape or (1,), compute_dtype(t.dtype))
        fn(*pre, *operands, out, err)
        return to_storage(out.reshape(shape), t.dtype)


def _threads() -> int:
    """Numba's thread count, so NumPy chunks and parallel loops use the same cores."""
    import numba

    return int(numba.get_num_threads())


# ---- composition ops -------------------------------------------------------------------------------


def coerce_input(spec: InputSpec, given: Any) -> np.ndarray:
    """Checks one input against its argument type; returns it in the storage dtype."""
    array = np.asarray(given)
    want_shape, want = spec.shape, spec.dtype
    dt = spec.type.dtype
    if array.shape != want_shape:
        raise InputError(f"input %{spec.name}: expected shape {list(want_shape)} ({spec.type}), got "
                         f"{list(array.shape)}")
    if dt == DType.TF32 and array.dtype == np.float32:
        return round_tf32(array)  # tf32 is stored in float32: keep only what tf32 holds
    if array.dtype == want:
        return array
    if dt in FORMATS:
        if array.dtype == np.float32:
            # Narrow floats may come as f32 (NumPy and PyTorch exports lack bf16/f8): rounded to the type.
            return to_storage(array, dt)
        if array.dtype.kind == "V" and array.dtype.itemsize == want.itemsize:
            return array.view(want)  # ml_dtypes arrays saved with np.savez load back as raw bytes
    raise InputError(f"input %{spec.name}: expected {_dtype_name(want)} ({dt.spelling}) but got "
                     f"{_dtype_name(array.dtype)}")


def _dtype_name(dt: np.dtype) -> str:
    return "bool" if dt == np.bool_ else str(dt)


def _check_result(op: Op, array: np.ndarray, t: TensorType) -> None:
    shape = t.concrete_shape()
    if array.shape != shape or array.dtype != STORAGE[t.dtype]:
        raise ExecutionError(f"internal error: {op.opname} at {op.loc} produced {array.dtype}{list(array.shape)} "
                             f"but its type is {t}")


# ---- how each op runs (composition ops: backends/composition_hooks.py) -----------------------------

PROGRAM_HOOKS = HookSet("the executor's kernels, einsums and structural ops")



@PROGRAM_HOOKS.execute(KernelOp)
def _run_kernel(program: Program, op: KernelOp, env: Env, idx: dict[str, int]) -> list[np.ndarray]:
    return program._kernel(op)([env[b.value] for b in op.inputs], idx)


@PROGRAM_HOOKS.execute(EinsumOp)
def _run_einsum(program: Program, op: EinsumOp, env: Env, idx: dict[str, int]) -> list[np.ndarray]:
    return [program._einsum(op)([env[b.value] for b in op.inputs])]


@PROGRAM_HOOKS.execute(GroupOp)
def _run_group(program: Program, op: GroupOp, env: Env, idx: dict[str, int]) -> list[np.ndarray]:
    return program.run_block(op.body, env, idx)


@PROGRAM_HOOKS.execute(ForOp)
def _run_for(program: Program, op: ForOp, env: Env, idx: dict[str, int]) -> list[np.ndarray]:
    scope = {"%" + k: v for k, v in idx.items()}
    lower, upper = evaluate_int(op.lower, scope), evaluate_int(op.upper, scope)
    carried = [env[v] for v in op.inits]
    for t in range(lower, upper):
        inner = dict(env)
        inner.update(zip(op.iter_args, carried, strict=True))
        carried = program._block(op.body, inner, {**idx, op.var: t})
    return carried


@PROGRAM_HOOKS.execute(IfOp)
def _run_if(program: Program, op: IfOp, env: Env, idx: dict[str, int]) -> list[np.ndarray]:
    taken = bool(np.asarray(env[op.cond]).reshape(()))
    return program.run_block(op.then_body if taken else op.else_body, env, idx)


@PROGRAM_HOOKS.execute(CallOp)
def _run_call(program: Program, op: CallOp, env: Env, idx: dict[str, int]) -> list[np.ndarray]:
    return program.call(op.callee, [env[a] for a in op.args])


# The executor's own hooks (kernels, einsums, structural ops); every other op names the set holding its
# (Op.backend_hooks).
install(PROGRAM_HOOKS)


__all__ = ["InputSpec", "Program", "bind_values", "coerce_input", "prepare", "run"]
