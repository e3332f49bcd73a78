"""Loss scaling with `--amp fp16`: what `torch.amp.GradScaler` adds to a training step.

    scaler.scale(loss).backward()      # the loss times the scale: every gradient comes out scaled
    scaler.step(optimizer)             # unscale every gradient, check them all for inf/nan, then the update
    scaler.update()                    # back off (an inf was found) or grow the scale

As the step: `LossModule` multiplies its loss by the buffer `scaler.scale` (so AOT autograd's backward
produces scaled gradients), and `ScaledUpdate` is the optimizer's update preceded by GradScaler's unscale
and finite check (`_amp_foreach_non_finite_check_and_unscale_`: every gradient read, multiplied by the
inverse scale, checked) and followed by its scale update (`_amp_update_scale_`), written with torch ops so
that they export and lower; the scale and its growth tracker are buffers updated in place. Validation runs
PyTorch's own GradScaler (on the CPU) against the IR.

The bound assumes the step is taken (its gradients finite, the common case): a skipped step updates nothing,
which the IR, one program for every input, does not branch on.
"""

from __future__ import annotations

from typing import Any

import torch

SCALER = "scaler"  # LossModule's submodule holding the scale and its growth tracker
# Validation starts part-way through training, with a scale that keeps the f16 gradients finite at its
# reduced sizes (GradScaler's initial 2^16 overflows f16 at once for a sum loss, and the first steps are
# skipped) and a growth tracker short of the growth interval.
VALIDATION_SCALE = 2.0 ** 10
VALIDATION_TRACKER = 5


def uses_scaler(amp: str, optimizer: str) -> bool:
    """fp16 autocast steps run with a GradScaler (bf16 has f32's range: frameworks do not scale it); without an
    optimizer there is no step for the scaler to guard."""
    return amp == "fp16" and optimizer != "none"


def scaler_defaults() -> dict[str, Any]:
    """GradScaler's own defaults: growth and backoff factors, growth interval (read from an instance)."""
    scaler = torch.amp.GradScaler("cpu")
    return {"growth_factor": scaler.get_growth_factor(), "backoff_factor": scaler.get_backoff_factor(),
            "growth_interval": scaler.get_growth_interval()}


class ScalerState(torch.nn.Module):
    """The scale (f32) and the count of steps since it last changed (int32), as GradScaler keeps them."""

    def __init__(self) -> None:
        super().__init__()
        meta = torch.empty(()).device.type == "meta"
        self.register_buffer("scale", torch.full((), 1.0 if meta else VALIDATION_SCALE, dtype=torch.float32))
        self.register_buffer("growth_tracker", torch.full((), 0 if meta else VALIDATION_TRACKER, dtype=torch.int32))


def unscale_(grads: list[torch.Tensor], scale: torch.Tensor) -> torch.Tensor:
    """GradScaler's unscale: every gradient times the inverse scale (computed in f64, as GradScaler does), in
    place; returns found_inf, 1.0 if any gradient holds an inf or a nan."""
    inv_scale = scale.double().reciprocal().float()
    found_inf = torch.zeros((), dtype=torch.float32, device=scale.device)
    for g in grads:
        found_inf = torch.maximum(found_inf, torch.logical_not(torch.isfinite(g)).any().float())
        g.mul_(inv_scale)
    return found_inf


def update_scale_(scale: torch.Tensor, growth_tracker: torch.Tensor, found_inf: torch.Tensor,
                  hyper: dict[str, Any]) -> None:
    """GradScaler.update (`_amp_update_scale_`), in place: an inf backs the scale off and resets the tracker;
    else the tracker counts one more step, and at the growth interval the scale grows (if still finite) and
    the tracker restarts."""
    found = found_inf > 0
    successful = growth_tracker + 1
    grow = successful == hyper["growth_interval"]
    grown = scale * hyper["growth_factor"]
    grown = torch.where(torch.isfinite(grown), grown, scale)
    new_scale = torch.where(found, scale * hyper["backoff_factor"], torch.where(grow, grown, scale))
    zero = torch.zeros_like(growth_tracker)
    new_tracker = torch.where(found, zero, torch.where(grow, zero, successful))
    scale.copy_(new_scale)
    growth_tracker.copy_(new_tracker)


class ScaledUpdate(torch.nn.Module):
    """forward(*params, *grads, *state, scale, growth_tracker) → (): GradScaler's unscale and check, the
    optimizer's update (`update`, an OptimizerUpdate) of the unscaled gradients, then the scale's update; all
    in place, for torch.export."""

    def __init__(self, update: torch.nn.Module, count: int) -> None:
        super().__init__()
        self.update, self.count, self.hyper = update, count, scaler_defaults()

    def forward(self, *flat: torch.Tensor) -> tuple[()]:
        n = self.count
        scale, tracker = flat[-2], flat[-1]
        found_inf = unscale_(list(flat[n:2 * n]), scale)
        self.update(*flat[:-2])
        update_scale_(scale, tracker, found_inf, self.hyper)
        return ()


def scaler_step(loss: torch.Tensor, optimizer: torch.optim.Optimizer, state: ScalerState) -> torch.Tensor:
    """The step as PyTorch runs it with a GradScaler whose scale and tracker are `state`'s (copied in f32 and
    back, so that validation's float64 run keeps GradScaler's f32 scale): returns the scaled loss."""
    scaler = torch.amp.GradScaler("cpu")
    scaler._scale = state.scale.detach().float().clone()
    scaler._growth_tracker = state.growth_tracker.detach().clone()
    scaled = scaler.scale(loss)
    scaled.backward()
    scaler.step(optimizer)
    scaler.update()
    with torch.no_grad():
        state.scale.copy_(scaler._scale)
        state.growth_tracker.copy_(scaler._growth_tracker)
    return scaled


def scaler_nodes(opt_graph: torch.fx.Graph, outputs: list[torch.fx.Node]) -> set[torch.fx.Node]:
    """The scaler's nodes in the exported ScaledUpdate: those the unscaled gradients, the new scale and the new
    tracker (`outputs`) are computed from, the optimizer's own update excluded (it reads the unscaled
    gradients, it does not make them)."""
    found: set[torch.fx.Node] = set()
    stack = list(outputs)
    while stack:
        node = stack.pop()
        if node in found or node.op != "call_function":
            continue
        found.add(node)
        stack.extend(node.all_input_nodes)
    return found
