"""CUDA's autocast policy on CPU tensors: what `--amp` traces, since a GPU step runs CUDA's autocast.

    with cuda_policy():                        # AutocastCPU dispatches as AutocastCUDA would
        ep = torch.export.export(model_under_cpu_autocast, inputs)

A CPU-only torch cannot run CUDA's autocast (torch.autocast("cuda") disables itself), and CPU's autocast has
its own op lists: it leaves softmax, the norms, sums, exp, log and pow in the input's type, where CUDA's runs
them in f32. CUDA's autocast kernels are compiled into every build, though, and run on *fake* CUDA tensors
with autograd off. `probe_policy` calls each op that has an AutocastCUDA kernel once on fake CUDA tensors
and watches what the kernel does before it redispatches (a TorchDispatchMode stops it there): which inputs
it casts and to what, or which `dtype` it passes. That gives each op's policy from torch's own kernels:

- `low`: floating inputs cast to the autocast type (the contractions);
- `f32`: floating inputs cast to f32 (norms, losses, exp, log, pow, ...);
- `f32_dtype`: run with `dtype=float32` unless a dtype is given (softmax, log_softmax, sum, prod, cumsum);
- `promote`: floating inputs cast to the widest of their types (addcmul, addcdiv, index_put, ...).

`cuda_policy` registers a Python kernel per op at the AutocastCPU key that applies that policy (and, for
ops only CPU's autocast lists, none), for as long as the context lasts; the registrations are removed on
exit, so the user's own CPU autocast is left as it was.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

POLICIES = ("low", "f32", "f32_dtype", "promote")
_AUTOCAST_CPU = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU)
_depth = 0  # how many cuda_policy contexts are open (kernels registered once, by the outermost)


class _Stop(Exception):
    """Raised by the probe at the op's first redispatch: what the autocast kernel did is known by then."""


class _Watch(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.casts: list[torch.dtype] = []
        self.dtype: Any = None

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if func.namespace == "prim":  # device and layout queries of the kernel itself
            return func(*args, **kwargs)
        if func is torch.ops.aten._to_copy.default:
            self.casts.append(kwargs.get("dtype"))
            return func(*args, **kwargs)
        self.dtype = kwargs.get("dtype")
        raise _Stop


def _sample(arg: Any, dtype: torch.dtype, fake: Any) -> Any:
    """A value for one required argument of a schema (values never matter: the probe stops before use)."""
    kind = str(arg.type)
    if kind.startswith(("Tensor[]", "List[Tensor]", "Tensor?[]", "List[Optional[Tensor]]")):
        return [fake(dtype), fake(dtype)]
    if kind.startswith("Tensor"):
        return fake(dtype)
    if "[]" in kind or kind.startswith("List"):
        return [1]
    if kind in ("int", "SymInt"):
        return 0 if arg.name != "dim" else -1
    if kind in ("float", "Scalar", "number"):
        return 2.0
    if kind == "bool":
        return False
    if kind == "str":
        return "fro"
    return None


def _probe_one(op: Any, first: torch.dtype, rest: torch.dtype, fake: Any) -> _Watch:
    schema = op._schema
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    tensors = 0
    for arg in schema.arguments:
        if arg.has_default_value() or str(arg.type).endswith("?"):
            continue
        value = _sample(arg, first if tensors == 0 else rest, fake)
        tensors += str(arg.type).startswith("Tensor")
        if arg.kwarg_only:
            kwargs[arg.name] = value
        else:
            args.append(value)
    watch = _Watch()
    try:
        with torch.no_grad(), watch:
            op(*args, **kwargs)
    except _Stop:
        pass
    except Exception:  # a composite op's own checks, after the autocast kernel cast its inputs
        pass
    return watch


@functools.cache
def probe_policy(low: torch.dtype = torch.bfloat16) -> dict[str, str]:
    """Each op with an AutocastCUDA kernel (`aten::name.overload`) and its policy, read from the kernel."""
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

    mode = FakeTensorMode()

    def fake(dtype: torch.dtype) -> torch.Tensor:
        return FakeTensor(mode, torch.empty((2, 2), dtype=dtype, device="meta"), torch.device("cuda"))

    policy: dict[str, str] = {}
    enabled, dtype = torch.is_autocast_enabled("cuda"), torch.get_autocast_dtype("cuda")
    torch.set_autocast_enabled("cuda", True)
    torch.set_autocast_dtype("cuda", low)
    with _silent_stderr():
        try:
            for name in torch._C._dispatch_get_all_op_names():
                if not name.startswith("aten::") or \
                        not torch._C._dispatch_has_kernel_for_dispatch_key(name, "AutocastCUDA"):
                    continue
                op = _overload(name)
                if op is None:
                    continue
                kind = _classify(op, low, fake)
                if kind:
                    policy[name] = kind
        finally:
            torch.set_autocast_enabled("cuda", enabled)
            torch.set_autocast_dtype("cuda", dtype)
    return policy


def _classify(op: Any, low: torch.dtype, fake: Any) -> str:
    wide = _probe_one(op, torch.float32, torch.float32, fake)
    if low in wide.casts:
        return "low"
    narrow = _probe_one(op, low, low, fake)
    if torch.float32 in narrow.casts:
        return "f32"
    if narrow.dtype == torch.float32:
        return "f32_dtype"
    mixed = _probe_one(op, torch.float32, low, fake)
    if torch.float32 in mixed.casts:
        return "promote"
    return ""


def _overload(name: str) -> Any:
    base, _, overload = name[len("aten::"):].partition(".")
    packet = getattr(torch.ops.aten, base, None)
    return getattr(packet, overload or "default", None) if packet is not None else None


def _eligible(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.is_floating_point() and x.dtype != torch.float64


def _cast(x: Any, dtype: torch.dtype) -> Any:
    if isinstance(x, list | tuple):
        return type(x)(_cast(v, dtype) for v in x)
    return x.to(dtype) if _eligible(x) and x.dtype != dtype else x


def _flat(values: Any) -> list[Any]:
    out: list[Any] = []
    for v in values:
        out.extend(_flat(v) if isinstance(v, list | tuple) else [v])
    return out


def _kernel(op: Any, kind: str) -> Any:
    dtype_at = next((k for k, a in enumerate(op._schema.arguments) if a.name == "dtype"), None)

    def kernel(*args: Any, **kwargs: Any) -> Any:
        with torch._C._ExcludeDispatchKeyGuard(_AUTOCAST_CPU):
            if kind in ("low", "f32"):
                to = torch.get_autocast_dtype("cpu") if kind == "low" else torch.float32
                args, kwargs = _cast(args, to), {k: _cast(v, to) for k, v in kwargs.items()}
            elif kind == "promote":
                floats = [t.dtype for t in _flat([*args, *kwargs.values()]) if _eligible(t)]
                if floats:
                    to = functools.reduce(torch.promote_types, floats)
                    args, kwargs = _cast(args, to), {k: _cast(v, to) for k, v in kwargs.items()}
            elif kind == "f32_dtype" and args and _eligible(args[0]):
                given = args[dtype_at] if dtype_at is not None and len(args) > dtype_at else kwargs.get("dtype")
                if given is None:
                    if dtype_at is not None and len(args) > dtype_at:
                        args = (*args[:dtype_at], torch.float32, *args[dtype_at + 1:])
                    else:
                        kwargs = {**kwargs, "dtype": torch.float32}
            return op(*args, **kwargs)

    return kernel


@contextlib.contextmanager
def cuda_policy(enabled: bool = True) -> Iterator[dict[str, str]]:
    """CPU autocast dispatching with CUDA's policy while the context lasts (nothing when not `enabled`)."""
    global _depth
    if not enabled or _depth:  # nested: the outermost context's kernels are in place
        yield probe_policy() if enabled else {}
        return
    policy = probe_policy()
    _depth += 1
    lib = torch.library.Library("aten", "IMPL")
    try:
        with _quiet_overrides():
            for name in torch._C._dispatch_get_all_op_names():
                if not name.startswith("aten::"):
                    continue
                kind = policy.get(name)
                if kind is None and not torch._C._dispatch_has_kernel_for_dispatch_key(name, "AutocastCPU"):
                    continue
                op = _overload(name)
                if op is not None:
                    # An op only CPU's autocast lists runs as CUDA's would: uncast.
                    lib.impl(name[len("aten::"):], _kernel(op, kind or "keep"), "AutocastCPU")
        yield policy
    finally:
        _depth -= 1
        lib._destroy()


@contextlib.contextmanager
def _silent_stderr() -> Iterator[None]:
    """The probe calls deprecated ops (torch.cross, chain_matmul), whose C++ warnings go to the process's
    stderr: silenced while it runs."""
    import os
    import sys
    import warnings

    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


@contextlib.contextmanager
def _quiet_overrides() -> Iterator[None]:
    """Registering over CPU autocast's own kernels warns once per op: expected here."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
