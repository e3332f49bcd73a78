"""One training step of a PyTorch model as eager modules: the loss the step minimises, the optimizer's update
written with `torch.optim`'s own functional code, and the whole step as PyTorch runs it (`loss.backward()`
then `optimizer.step()`), which validation runs as the reference.

    step = TrainStep(model, n_inputs=1, options=TrainOptions("adamw", "sum"))
    outputs = step(x)              # the loss (and the gradients with optimizer 'none'); state updated in place

frontends/torch_train.py exports the loss with its backward (torch.export's joint graph) and splices the
optimizer's exported update after it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch.optim.adam import adam as adam_update
from torch.optim.sgd import sgd as sgd_update

from .lowering.core import LoweringError

LOSSES = ("sum", "mse", "cross_entropy")
OPTIMIZERS = ("adamw", "adam", "sgd", "none")
OPTIMIZER_CLASSES: dict[str, type[torch.optim.Optimizer]] = {
    "adamw": torch.optim.AdamW, "adam": torch.optim.Adam, "sgd": torch.optim.SGD}
# The state each optimizer keeps per parameter, in the order its functional code takes it (SGD without
# momentum, torch.optim.SGD's default, keeps none).
STATE_NAMES: dict[str, tuple[str, ...]] = {"adamw": ("exp_avg", "exp_avg_sq", "step"),
                                           "adam": ("exp_avg", "exp_avg_sq", "step"), "sgd": (), "none": ()}
# Validation starts the optimizer part-way through training, so that its state is not all zeros.
VALIDATION_STEP = 3.0


class TrainError(LoweringError):
    """A training step that cannot be built from this program (no parameter to train, a missing target)."""


@dataclass
class TrainOptions:
    optimizer: str = "adamw"
    loss: str = "sum"
    accumulate: int = 1  # micro-batches whose gradients add up before the one update
    amp: str = "none"  # mixed precision: 'bf16' or 'fp16' runs the forward and loss under autocast (train_amp.py)


def trainable(model: torch.nn.Module) -> list[tuple[str, torch.nn.Parameter]]:
    return [(name, p) for name, p in model.named_parameters() if p.requires_grad]


def hyperparameters(optimizer: str, params: Sequence[torch.nn.Parameter]) -> dict[str, Any]:
    """The optimizer class's own defaults (lr, betas, weight decay, ...), read from an instance."""
    return dict(OPTIMIZER_CLASSES[optimizer](list(params)).defaults)


def loss_of(kind: str, outputs: Any, targets: Sequence[torch.Tensor]) -> torch.Tensor:
    """The scalar the step minimises: the sum of every floating-point output ('sum'), or the mean squared
    error or cross entropy of the first output against the first target. Cross entropy over logits of shape
    (B, T, V) with targets (B, T) (a language model) takes the classes from the last dim."""
    from torch.utils._pytree import tree_leaves

    outs = [o for o in tree_leaves(outputs) if isinstance(o, torch.Tensor) and o.is_floating_point()]
    if not outs:
        raise TrainError("the model returns no floating-point tensor to take a loss of")
    if kind == "sum":
        total = outs[0].sum()
        for o in outs[1:]:
            total = total + o.sum()
        return total
    target = targets[0]
    if kind == "mse":
        return F.mse_loss(outs[0], target)
    logits = outs[0]
    if logits.dim() == 3 and target.dim() == 2 and tuple(logits.shape[:2]) == tuple(target.shape):
        logits, target = logits.flatten(0, 1), target.flatten()
    return cross_entropy(logits, target)


IGNORE_INDEX = -100  # F.cross_entropy's default


def cross_entropy(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """F.cross_entropy with class indices along dim 1 (mean over the targets that are not IGNORE_INDEX),
    written as log_softmax, gather and a masked mean: what its decomposition computes. On the meta device
    torch.export's joint graph gets no gradient through aten.nll_loss (torch 2.13), so the loss is spelled out."""
    keep = target != IGNORE_INDEX
    picked = F.log_softmax(logits, 1).gather(1, torch.where(keep, target, 0).unsqueeze(1)).squeeze(1)
    return -(picked * keep).sum() / keep.sum()


class LossModule(torch.nn.Module):
    """forward(*inputs, *targets) → (loss,): what torch.export's joint graph differentiates. The model is the
    submodule `model`, so its parameters keep their names under `model.`. With `micro` > 1 (gradient
    accumulation) the arguments are `micro` groups of (inputs, targets), and the loss is the sum of theirs:
    its gradient is the sum of the micro-batches' gradients, which is what accumulation computes. With `amp`
    the forward and the loss run under autocast, as a mixed-precision training loop runs them. With `scaled`
    (fp16 loss scaling, train_scaler.py) the loss is multiplied by the buffer `scaler.scale`."""

    def __init__(self, model: torch.nn.Module, n_inputs: int, loss: str, micro: int = 1, amp: str = "none",
                 scaled: bool = False) -> None:
        super().__init__()
        self.model, self.n_inputs, self.loss, self.micro, self.amp = model, n_inputs, loss, micro, amp
        self.scale_loss = scaled
        if scaled:
            from .train_scaler import ScalerState

            self.scaler = ScalerState()

    def forward(self, *args: Any) -> tuple[torch.Tensor]:
        from .train_amp import autocast

        per = len(args) // self.micro
        total: torch.Tensor | None = None
        for k in range(self.micro):
            group = args[k * per:(k + 1) * per]
            with autocast(self.amp):
                loss = loss_of(self.loss, self.model(*group[:self.n_inputs]), group[self.n_inputs:])
            total = loss if total is None else total + loss
        assert total is not None
        return (total * self.scaler.scale,) if self.scale_loss else (total,)


def functional_update(optimizer: str, hyper: dict[str, Any], params: list[torch.Tensor], grads: list[torch.Tensor],
                      state: dict[str, list[torch.Tensor]]) -> None:
    """The optimizer's update through torch.optim's functional code, one tensor at a time (foreach=False),
    with the step count a tensor (capturable): every parameter and state tensor is updated in place."""
    if optimizer in ("adam", "adamw"):
        beta1, beta2 = hyper["betas"]
        adam_update(params, grads, state["exp_avg"], state["exp_avg_sq"], [], state["step"],
                              foreach=False, capturable=True, differentiable=False, fused=None,
                              decoupled_weight_decay=optimizer == "adamw", amsgrad=hyper["amsgrad"],
                              beta1=beta1, beta2=beta2, lr=hyper["lr"], weight_decay=hyper["weight_decay"],
                              eps=hyper["eps"], maximize=hyper["maximize"])
    elif optimizer == "sgd":
        sgd_update(params, grads, [None] * len(params), foreach=False, fused=None,
                            weight_decay=hyper["weight_decay"], momentum=hyper["momentum"], lr=hyper["lr"],
                            dampening=hyper["dampening"], nesterov=hyper["nesterov"], maximize=hyper["maximize"])


class OptimizerUpdate(torch.nn.Module):
    """forward(*params, *grads, *state) → (): the update, in place, for torch.export (which records the
    mutated inputs as outputs once functionalized)."""

    def __init__(self, optimizer: str, hyper: dict[str, Any], count: int) -> None:
        super().__init__()
        self.optimizer, self.hyper, self.count = optimizer, hyper, count

    def forward(self, *flat: torch.Tensor) -> tuple[()]:
        n = self.count
        names = STATE_NAMES[self.optimizer]
        state = {name: list(flat[(2 + k) * n:(3 + k) * n]) for k, name in enumerate(names)}
        functional_update(self.optimizer, self.hyper, list(flat[:n]), list(flat[n:2 * n]), state)
        return ()


def state_key(kind: str, param: str) -> str:
    """The buffer name of one state tensor (`exp_avg__model__fc1__weight`) under the step's `optim`."""
    return f"{kind}__{param.replace('.', '__')}"


class TrainStep(torch.nn.Module):
    """The step as PyTorch runs it: forward(*inputs, *targets) computes the loss, `loss.backward()`, then
    the real `torch.optim` optimizer's `step()`; returns the loss (and, without an optimizer, every gradient).
    The optimizer's state lives in buffers of the submodule `optim` (seeded, part-way through training), so
    that validation reads and compares it as it does any buffer."""

    def __init__(self, model: torch.nn.Module, n_inputs: int, options: TrainOptions) -> None:
        super().__init__()
        from .train_scaler import uses_scaler

        self.loss_module = LossModule(model, n_inputs, options.loss, options.accumulate, options.amp,
                                      uses_scaler(options.amp, options.optimizer))
        self.loss_module.scale_loss = False  # GradScaler scales it (train_scaler.scaler_step)
        self.options = options
        self.optim = torch.nn.Module()
        if not trainable(model):
            raise TrainError("the model has no parameter that requires grad: a training step updates none")
        gen = torch.Generator().manual_seed(1234)
        for name, p in trainable(self.loss_module):  # named as the exported program names them: `model.fc.weight`
            for kind in STATE_NAMES[options.optimizer]:
                self.optim.register_buffer(state_key(kind, name), _initial_state(kind, p, gen))

    @property
    def model(self) -> torch.nn.Module:
        return self.loss_module.model

    @property
    def scaler(self) -> torch.nn.Module | None:
        """The GradScaler's state (fp16 loss scaling), named `scaler.` as the exported loss names it."""
        return getattr(self.loss_module, "scaler", None)

    def forward(self, *args: Any) -> tuple[torch.Tensor, ...]:
        params = [p for _, p in trainable(self.model)]
        for p in params:
            p.grad = None
        with torch.enable_grad():
            loss = self.loss_module(*args)[0]
            if self.scaler is None:
                loss.backward()
        if self.options.optimizer == "none":
            return (loss.detach(), *[_grad(p) for p in params])
        opt = OPTIMIZER_CLASSES[self.options.optimizer](params, foreach=False)
        kinds = STATE_NAMES[self.options.optimizer]
        for name, p in trainable(self.loss_module):
            # Bound at each call: `.double()` (validation's float64 run) replaces the buffers.
            opt.state[p] = {kind: getattr(self.optim, state_key(kind, name)) for kind in kinds}
        if self.scaler is not None:
            from .train_scaler import ScalerState, scaler_step

            assert isinstance(self.scaler, ScalerState)
            with torch.enable_grad():
                return (scaler_step(loss, opt, self.scaler).detach(),)
        opt.step()
        return (loss.detach(),)


def _grad(p: torch.Tensor) -> torch.Tensor:
    return p.grad if p.grad is not None else torch.zeros_like(p)


def _initial_state(kind: str, p: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """A state tensor as after a few steps: the step count, a small first moment, a positive second one."""
    if kind == "step":
        return torch.tensor(0.0 if p.device.type == "meta" else VALIDATION_STEP, device=p.device)
    if p.device.type == "meta":
        return torch.zeros_like(p)
    draw = torch.randn(p.shape, generator=gen, dtype=torch.float32)
    value = draw * 0.01 if kind == "exp_avg" else draw.abs() * 1e-3 + 1e-4
    return value.to(p.dtype)


def state_bytes(optimizer: str, params: Sequence[torch.Tensor]) -> int:
    """Bytes of the optimizer's state for these parameters (the step counts are f32 scalars)."""
    total = 0
    for p in params:
        for kind in STATE_NAMES[optimizer]:
            total += 4 if kind == "step" else math.prod(p.shape) * p.element_size()
    return total
