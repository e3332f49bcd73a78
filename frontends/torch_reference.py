"""The reference run of validation: seeded inputs at reduced sizes, the original model run on them (and in
float64), and the arrays the IR's arguments take (ReferenceCase)."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
import torch.fx

from .diagnostics import HarnessError
from .reference_model import build_reference
from .torch_problem import ArgSource, TorchProblem, TorchTranslation
from .wide_grouped_mm import float64_grouped_mm

# ---- validation inputs ------------------------------------------------------------------------------


def to_numpy(t: torch.Tensor) -> np.ndarray:
    t = t.detach().cpu()
    if t.dtype in (torch.bfloat16, torch.float16, torch.float8_e4m3fn, torch.float8_e5m2):
        return t.float().numpy() if t.dtype != torch.float16 else t.numpy()
    return t.numpy()


def shrink_inputs(inputs: Sequence[Any], where: dict[str, list[tuple[int, int]]], small: dict[str, int]) -> list[Any]:
    """The first `small[P]` entries along every input dim sized by parameter P (slicing keeps integer inputs,
    such as class targets or token ids, in their valid ranges)."""
    out = list(inputs)
    for name, places in where.items():
        if name not in small:
            continue
        for i, d in places:
            x = out[i]
            if isinstance(x, torch.Tensor):
                out[i] = x.narrow(d, 0, small[name]).contiguous()
    return out


class ReferenceCase:
    """Seeded inputs at the sizes `small`, the original model run on them: calling it returns (arrays for the
    IR's arguments, golden outputs); `wide()` runs the same model and inputs in float64 (validation's check
    of the framework's own rounding, frontends/validate.py). Failures of the user's code (building the model
    or inputs, running forward) propagate as they are; failures of this harness raise `HarnessError`."""

    def __init__(self, problem: TorchProblem, tr: TorchTranslation, seed: int, small: dict[str, int],
                 max_input_bytes: int = 1 << 26) -> None:
        self.problem, self.tr, self.seed, self.small = problem, tr, seed, small
        self.max_input_bytes = max_input_bytes

    def build(self) -> tuple[torch.nn.Module, list[Any]]:
        problem, tr, seed = self.problem, self.tr, self.seed
        torch.manual_seed(seed)
        np.random.seed(seed)
        model = build_reference(problem.make_model, seed)  # no layer initialisers: seeded normal weights
        torch.manual_seed(seed + 1)
        with torch.device("meta"):
            meta_inputs = list(problem.make_inputs())
        size = sum(x.numel() * x.element_size() for x in meta_inputs if isinstance(x, torch.Tensor))
        if size <= self.max_input_bytes:
            full = list(problem.make_inputs())
            inputs = _harness("shrinking the inputs", lambda: shrink_inputs(full, tr.param_dims, self.small))
        else:
            inputs = _harness("making inputs", lambda: synth_inputs(meta_inputs, tr.param_dims, self.small, seed))
        return model, inputs

    def __call__(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        model, inputs = self.build()
        # Read before forward: buffers updated in place must enter the IR with their old values.
        args = [_harness(f"reading the value of argument {k} ({src.kind} {src.key})",
                         lambda src=src: self.argument(src, model, inputs)) for k, src in enumerate(self.tr.args)]
        return args, self.outputs(model, inputs, to_numpy)

    def outputs(self, model: torch.nn.Module, inputs: list[Any], convert: Callable[[torch.Tensor], np.ndarray]
                ) -> list[np.ndarray]:
        """Runs forward: the user's outputs, then the new values of the state it updates in place."""
        with torch.no_grad():
            # The golden run gets copies: a forward that mutates its inputs in place must not change the
            # arrays the IR then reads.
            golden = model(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])
        golden_list = flat_outputs(golden)
        out = [convert(g) for g in golden_list if isinstance(g, torch.Tensor)]
        for target in self.tr.state:
            out.append(_harness(f"reading the updated state {target}",
                                lambda target=target: convert(operator.attrgetter(target)(model))))
        return out

    def argument(self, src: ArgSource, model: torch.nn.Module, inputs: list[Any]) -> np.ndarray:
        if src.kind == "input":
            x = inputs[int(src.key)]
        elif src.kind == "constant" and str(src.key) in self.tr.constants:
            x = self.tr.constants[str(src.key)]  # made in forward: its value is the exported one
        else:
            x = operator.attrgetter(str(src.key))(model)  # a parameter, buffer or tensor attribute
        return to_numpy(x).copy() if isinstance(x, torch.Tensor) else np.asarray(x)

    def wide(self) -> list[np.ndarray] | None:
        """The golden outputs of the model and inputs in float64, or None without float inputs or weights."""
        model, inputs = self.build()
        model = model.double()
        inputs = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]
        with float64_grouped_mm():  # torch's grouped product (HF's experts kernel) has no float64 of its own
            return self.outputs(model, inputs, lambda g: to_numpy(g.double() if g.is_floating_point() else g))


def _harness(what: str, step: Callable[[], Any]) -> Any:
    try:
        return step()
    except Exception as err:
        raise HarnessError(f"{what}: {type(err).__name__}: {err}") from err


def reference_runner(problem: TorchProblem, tr: TorchTranslation, seed: int, small: dict[str, int],
                     max_input_bytes: int = 1 << 26) -> ReferenceCase:
    """A `ReferenceCase`: seeded inputs at the sizes `small`, the original model run on them, returning
    (arrays for the IR's arguments, golden outputs)."""
    return ReferenceCase(problem, tr, seed, small, max_input_bytes)


def flat_outputs(result: Any) -> list[Any]:
    """A forward's outputs in the order the IR returns them: nested tuples, lists and dicts flattened as
    torch.export flattens them (depth first; a dict in insertion order), docs/frontends.md."""
    from torch.utils._pytree import tree_leaves

    return list(tree_leaves(result))


def synth_inputs(meta_inputs: Sequence[Any], where: dict[str, list[tuple[int, int]]], small: dict[str, int],
                 seed: int) -> list[Any]:
    """Inputs too large to build at full size: seeded normal floats (integers in [0, 2)) at the small sizes."""
    g = torch.Generator().manual_seed(seed)
    out: list[Any] = []
    for i, x in enumerate(meta_inputs):
        if not isinstance(x, torch.Tensor):
            out.append(x)
            continue
        shape = list(x.shape)
        for name, places in where.items():
            for j, d in places:
                if j == i and name in small:
                    shape[d] = small[name]
        if x.dtype.is_floating_point:
            out.append(torch.randn(shape, generator=g).to(x.dtype))
        elif x.dtype == torch.bool:
            out.append(torch.rand(shape, generator=g) > 0.5)
        else:
            out.append(torch.randint(0, 2, shape, generator=g, dtype=x.dtype))
    return out


def callable_problem(fn: Callable[..., Any], inputs: Sequence[Any], name: str) -> TorchProblem:
    """A problem from a plain callable (module or function) and example inputs (`--entry`)."""
    if isinstance(fn, torch.nn.Module):
        return TorchProblem(lambda: fn, lambda: [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs], name)

    class _Wrap(torch.nn.Module):
        def forward(self, *args: Any) -> Any:
            return fn(*args)

    # Export records only the frames of `forward` methods in its nodes' stack traces, which would locate
    # every op at the line above; its frames of `fn` (a function, a lambda) are kept once `fn` is an anchor.
    anchor = getattr(torch.fx.proxy, "_register_stack_trace_anchor", None)
    if anchor is not None and hasattr(fn, "__code__"):
        anchor(fn)

    return TorchProblem(_Wrap, lambda: [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs], name)
