"""A language model's training step split over chips: `solar-llm --phase train --tensor-parallel N
[--data-parallel M]` (docs/training.md, "Tensor and data parallel").

A replica is N chips, tensor-parallel as Megatron-LM splits a layer (attention heads and the MLP's width
over the chips: a column-parallel projection in, a row-parallel one out); M replicas each run the step on
their own batch. Every figure is a formula in the single-chip step's report (api/training.py) and the
config; nothing is exported again:

- per chip: at least 1/N of the parameters, gradients, optimizer state and saved activations (the norms'
  weights, replicated by Megatron, are a few kilobytes a layer; sequence parallelism splits the activations
  it would replicate), and the peak live bytes from those as for one chip;
- the TP all-reduces of the tokens' hidden states: two per layer in the forward (after the attention's
  and the MLP's row-parallel projections) and two in the backward (the input gradients of their
  column-parallel projections), each at least as serving's (bench/llm_deploy.py: (d − 1)/d of the message
  over NVLink within a domain of d chips, a hierarchical share across domains); the vocabulary-parallel
  embedding's and loss's collectives are not counted, as serving does not count the embedding's;
- the DP all-reduce of each chip's gradients (1/N of them) over the M replicas: a ring within an NVLink
  domain, 2·(M − 1)/M of the gradient bytes each way, and across domains hierarchically: within each domain
  of d ranks a reduce-scatter and an all-gather (2·(d − 1)/d of the bytes over NVLink), between the n
  domains an all-reduce of each rank's 1/d share (2·(n − 1)/n · bytes / d over the internode link);
- the step: each chip does at least 1/N of the step's work (each mode's SOL ÷ N), and the collectives, on
  the chip's links, may overlap it: max(SOL ÷ N, TP + DP all-reduce time); the MFU bound is the replica's
  model FLOPs ÷ (N × step × peak).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from solar.frontends.llm_models import LlmConfig
from solar.targets.loader import Target

from .llm_deploy import Split, check_split, collectives, links_of

MEMORY = ("parameter", "gradient", "optimizer_state", "saved_activation")


@dataclass
class TrainSplit:
    """One replica's step over `tensor` chips, with `data` replicas: per chip, each way."""

    tensor: int
    data: int
    memory: dict[str, int]  # per chip: MEMORY's bytes and peak_live
    tp_allreduce_bytes: float  # forward and backward, per chip, each way
    tp_allreduce_s: float
    dp_allreduce_bytes: float  # the gradients' all-reduce, per chip, each way
    dp_allreduce_s: float
    step_seconds: dict[str, float] = field(default_factory=dict)  # per mode
    mfu_bound: dict[str, float] = field(default_factory=dict)

    @property
    def chips(self) -> int:
        return self.tensor * self.data

    def as_record(self) -> dict[str, Any]:
        return {"tensor_parallel": self.tensor, "data_parallel": self.data, "chips": self.chips,
                "memory_per_chip": self.memory, "tp_allreduce_bytes": self.tp_allreduce_bytes,
                "tp_allreduce_s": self.tp_allreduce_s, "dp_allreduce_bytes": self.dp_allreduce_bytes,
                "dp_allreduce_s": self.dp_allreduce_s, "step_s": self.step_seconds, "mfu_bound": self.mfu_bound}

    def text(self, capacity: float | None) -> list[str]:
        m = self.memory
        fits = "" if capacity is None else (" fits" if m["peak_live"] <= capacity else " does NOT fit") + \
            f" in {capacity / 2**30:,.1f} GiB"
        lines = [f"  tensor parallel x{self.tensor}, data parallel x{self.data} ({self.chips} chips): per chip "
                 f"parameters {m['parameter']:,} B, gradients {m['gradient']:,} B, optimizer state "
                 f"{m['optimizer_state']:,} B, saved activations {m['saved_activation']:,} B; peak live >= "
                 f"{m['peak_live']:,} B{fits}"]
        lines.append(f"  TP all-reduces (2 per layer forward, 2 backward) {self.tp_allreduce_bytes:,.0f} B per chip "
                     f"each way, {self.tp_allreduce_s * 1e6:,.3f} us; DP gradient all-reduce "
                     f"{self.dp_allreduce_bytes:,.0f} B, {self.dp_allreduce_s * 1e6:,.3f} us")
        for mode, sec in self.step_seconds.items():
            lines.append(f"  step SOL per chip {mode:<18} {sec * 1e6:,.3f} us   MFU bound {self.mfu_bound[mode]:.1%}")
        return lines


def dp_allreduce(gradient_bytes: float, split: Split, target: Target) -> tuple[float, float]:
    """(bytes each way per chip, seconds) of the gradients' all-reduce over `split.data` replicas whose ranks
    are `split.tensor` chips apart (TP innermost)."""
    data = split.data
    if data == 1:
        return 0.0, 0.0
    links = links_of(target, Split(tensor=split.tensor * data))  # the replicas' chips together
    if links is None:  # pragma: no cover - more than one chip always has links
        return 0.0, 0.0
    d = links.members_per_domain(data, split.tensor)
    n = data / d
    intra = 2 * (d - 1) / d * gradient_bytes
    inter = 2 * (n - 1) / n * gradient_bytes / d
    return intra + inter, links.seconds(intra, inter, f"--data-parallel {data}", target.name)


def train_split(cfg: LlmConfig, report: Any, target: Target, tokens: int, tensor: int, data: int) -> TrainSplit:
    """The step of `report` (a solar.training.TrainingReport of one chip, `tokens` tokens) over `tensor`
    chips, `data` replicas (LlmError: a split that does not divide the model)."""
    split = Split(tensor=tensor, data=data)
    check_split(cfg, split)
    memory = {k: math.ceil(report.memory[k] / tensor) for k in MEMORY}
    memory["peak_live"] = memory["parameter"] + memory["optimizer_state"] + max(memory["saved_activation"],
                                                                                 memory["gradient"])
    coll = collectives(cfg, split, target, tokens, 0)  # one pass's TP all-reduces (none at tensor 1)
    tp_bytes, tp_s = 2 * coll.allreduce_bytes, 2 * coll.allreduce_s  # the forward's and the backward's
    dp_bytes, dp_s = dp_allreduce(report.memory["gradient"] / tensor, split, target)
    steps = {mode: max(s / tensor, tp_s + dp_s) for mode, s in report.step_seconds.items()}
    mfu = {mode: report.model_flops / (tensor * s * report.peak_flops) if s > 0 else 0.0 for mode, s in steps.items()}
    return TrainSplit(tensor, data, memory, tp_bytes, tp_s, dp_bytes, dp_s, steps, mfu)
