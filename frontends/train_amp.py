"""Mixed precision as frameworks run it (`--amp bf16|fp16`): the model's forward, and the loss, under
`torch.autocast`, with f32 master weights and f32 optimizer state.

    with amp_export("bf16") as device:       # "cpu": fake CPU tensors, autocast applies; "meta" without amp
        ep = export_with_dims(problem, dynamic, device)

Autocast does nothing on the meta device (it has no autocast dispatch key), so a step with `--amp` is
exported over *fake* CPU tensors (FakeTensorMode: shapes only, no storage, as cheap as meta) under
`torch.autocast("cpu", ...)`, which applies its op policy while torch.export traces. The policy is CUDA's,
as a GPU step runs it (autocast_policy.py reads it from torch's own AutocastCUDA kernels and installs it
for CPU autocast while the step is exported, decomposed and validated): the contractions (mm, addmm, bmm,
baddbmm, linear, matmul, conv, SDPA) take their floating inputs cast to the low type; norms, softmax,
losses, exp, log and pow run in f32; sums in f32 (`dtype=float32`); the rest in the type of their inputs.
The casts are `_to_copy` nodes of the graph, so each cast of an f32 weight to bf16 is a kernel of the step
(read 4 B, write 2 B per element) and its backward, the cast of the gradient back to f32, another; AOT
autograd's joint graph differentiates through them as PyTorch's autograd does.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

AMP_TYPES: dict[str, torch.dtype] = {"bf16": torch.bfloat16, "fp16": torch.float16}
AMP_CHOICES = ("none", *AMP_TYPES)
# The device type whose autocast runs while exporting (a CPU-only torch runs no other), with CUDA's policy.
AUTOCAST_DEVICE = "cpu"


@contextlib.contextmanager
def autocast(amp: str) -> Iterator[None]:
    """torch.autocast with the type `amp` names, dispatching with CUDA's op policy (nothing for 'none')."""
    if amp == "none":
        yield
        return
    from .autocast_policy import cuda_policy

    with cuda_policy(), torch.autocast(AUTOCAST_DEVICE, dtype=AMP_TYPES[amp]):
        yield


def amp_policy(amp: str) -> contextlib.AbstractContextManager[Any]:
    """CUDA's autocast policy for CPU autocast, where a graph with autocast regions is traced again (the
    joint decomposition, run_decompositions) or run (validation); nothing for 'none'."""
    from .autocast_policy import cuda_policy

    return cuda_policy(amp != "none")


@contextlib.contextmanager
def amp_export(amp: str) -> Iterator[str]:
    """The device to build the model and inputs on for export: 'meta' without amp; with amp, 'cpu' inside a
    FakeTensorMode (with a shape environment, so that dims stay symbolic), where autocast applies, with
    CUDA's policy."""
    if amp == "none":
        yield "meta"
        return
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    with amp_policy(amp), FakeTensorMode(shape_env=ShapeEnv(), allow_non_fake_inputs=True):
        yield AUTOCAST_DEVICE


def autocast_dtype() -> torch.dtype | None:
    """The low type of the autocast region being traced (None outside one)."""
    if torch.is_autocast_enabled(AUTOCAST_DEVICE):
        return torch.get_autocast_dtype(AUTOCAST_DEVICE)
    return None


def amp_problem(problem: Any, amp: str) -> Any:
    """A forward program under autocast (inference `solar-translate --amp`): its model wrapped in
    AutocastModel, model and inputs built on the CPU device (fake tensors while exporting inside
    `amp_export`, real ones for validation). No scaled twin: the twin would build the bare model."""
    from .torch_problem import TorchProblem

    def make_model() -> torch.nn.Module:
        with torch.device(AUTOCAST_DEVICE):
            return AutocastModel(problem.make_model(), amp)

    def make_inputs() -> list[Any]:
        with torch.device(AUTOCAST_DEVICE):
            return list(problem.make_inputs())

    return TorchProblem(make_model, make_inputs, problem.name, problem.source, size_names=problem.size_names)


class AutocastModel(torch.nn.Module):
    """A forward program under autocast (inference `solar-translate --amp`): the model is the submodule
    `model`, so its parameters keep their names under `model.`."""

    def __init__(self, model: torch.nn.Module, amp: str) -> None:
        super().__init__()
        self.model, self.amp = model, amp

    def forward(self, *args: Any) -> Any:
        with autocast(self.amp):
            return self.model(*args)


def amp_line(amp: str) -> str:
    """The header line of a program translated under autocast."""
    return (f"Mixed precision: torch.autocast(dtype={AMP_TYPES[amp]}) with CUDA's op policy around the forward; "
            "its casts are kernels of the program")


# Ops a gradient passes through on its way out of the backward: views, and the sum of the micro-batches'
# gradients under --accumulate.
_GRADIENT_PATH = frozenset({"add", "view", "t", "permute", "reshape", "_unsafe_view", "squeeze", "unsqueeze"})


def gradient_casts(gradients: Any) -> set[Any]:
    """The casts whose outputs make up the parameters' gradients: the backward of autocast's weight casts
    (one per micro-batch with --accumulate, their f32 results summed)."""
    found: set[Any] = set()
    stack = list(gradients)
    seen: set[Any] = set()
    while stack:
        node = stack.pop()
        if node in seen or getattr(node, "op", "") != "call_function":
            continue
        seen.add(node)
        if node.target is torch.ops.aten._to_copy.default:
            found.add(node)
        elif getattr(node.target, "__name__", "").split(".")[0] in _GRADIENT_PATH:
            stack.extend(node.all_input_nodes)
    return found


def amp_summary(amp: str, program: Any, node_bytes: Any) -> dict[str, Any]:
    """The training attribute's entries for mixed precision: the contractions' type (the report's peak is
    that type's dense tensor peak), the policy, and the bytes of the casts between the f32 master weights
    and their low copies: `weight_cast_bytes` (the forward's casts of parameters, f32 read and low type
    written) and `gradient_cast_bytes` (the backward's casts of the gradients back to f32). `node_bytes`
    gives a graph node's bytes at full size."""
    if amp == "none":
        return {}
    from torch.export.graph_signature import InputKind

    from .torch_lowering import sir_dtype

    sig = program.graph_signature
    params = {s.arg.name for s in sig.input_specs if s.kind == InputKind.PARAMETER}
    grads = gradient_casts(getattr(program, "gradient_nodes", []))
    weight = gradient = 0
    for node in program.graph.nodes:
        if node.op != "call_function" or node.target is not torch.ops.aten._to_copy.default:
            continue
        source = node.args[0]
        moved = node_bytes(source) + node_bytes(node)
        if getattr(source, "op", "") == "placeholder" and source.name in params:
            weight += moved
        elif node in grads:
            gradient += moved
    return {"dtype": sir_dtype(AMP_TYPES[amp]).spelling, "amp": amp, "weight_cast_bytes": weight,
            "gradient_cast_bytes": gradient}
