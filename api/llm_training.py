"""`solar-llm CONFIG --phase train`: one causal-LM training step (cross entropy over the sequence, the torch.optim
update) priced at full size from twins (bench/llm_train.py) and reported as `solar-translate --train --report`
reports a step (solar.training.TrainingReport: phases, step SOL per mode, MFU bound beside 6·N·tokens,
memory), per target, batch and prompt (docs/training.md).

    result = llm_training(LlmTrainingRequest("config.json", [load_target("h100")], [8], [2048]))
    print(render_training(result))
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from solar.training import PhaseCost, TrainingReport, build_report

DEFAULT_DTYPE = "float32"  # the parameters' and optimizer state's type without --dtype (torch.optim's master copy)


@dataclass
class LlmTrainingRequest:
    config: str
    targets: list[Any]  # solar.targets.loader.Target
    batches: list[int] = field(default_factory=lambda: [1])
    prompts: list[int] = field(default_factory=lambda: [512])
    optimizer: str = "adamw"
    dtype: str | None = None
    validate: bool = True
    data_parallel: int = 1
    verbose: bool = False
    tensor_parallel: int = 1  # chips a replica's layers are split over (bench/llm_train_parallel.py)


@dataclass
class TrainingPoint:
    batch: int
    prompt: int
    report: TrainingReport
    contraction_flops: int  # forward + backward FLOPs on tensor units
    data_parallel: dict[str, float] = field(default_factory=dict)
    split: Any = None  # bench.llm_train_parallel.TrainSplit, with --tensor-parallel


@dataclass
class LlmTraining:
    request: LlmTrainingRequest
    config: Any  # solar.frontends.llm_models.LlmConfig
    points: list[TrainingPoint]
    notes: list[str]
    validation: str | None = None


def llm_training(request: LlmTrainingRequest) -> LlmTraining:
    """Every target, batch and prompt of `request` (LlmError: a config, size or option it cannot price)."""
    from solar.bench.llm_train import price_train
    from solar.frontends.llm_kernelbench import load_llm
    from solar.frontends.llm_models import LlmError, check_sizes
    from solar.frontends.llm_train import check_trainable, validate_train_step
    from solar.frontends.train_step import OPTIMIZERS

    if request.optimizer not in OPTIMIZERS:
        raise LlmError(f"--optimizer {request.optimizer}: expected one of {', '.join(OPTIMIZERS)}")
    check_sizes({"batch": request.batches, "prompt": request.prompts, "data-parallel": [request.data_parallel]})
    cfg = load_llm(request.config, request.dtype or DEFAULT_DTYPE, "dynamic")
    if request.tensor_parallel > 1:
        from solar.bench.llm_deploy import Split, check_split

        check_split(cfg, Split(tensor=request.tensor_parallel, data=request.data_parallel))
    for prompt in request.prompts:
        check_trainable(cfg, prompt)
    points: list[TrainingPoint] = []
    for batch in request.batches:
        for prompt in request.prompts:
            costs = price_train(cfg, request.targets, batch, prompt, request.optimizer)
            for target in request.targets:
                cost = costs[target.name]
                phases = {ph: PhaseCost(ph, c.kernels, c.flops, c.bytes, c.seconds) for ph, c in cost.phases.items()}
                report = build_report(target.name, phases, cost.steps, cost.whole_bytes, cost.info)
                contraction = cost.phases["forward"].contraction_flops + cost.phases["backward"].contraction_flops
                point = TrainingPoint(batch, prompt, report, contraction)
                if request.tensor_parallel > 1:
                    from solar.bench.llm_train_parallel import train_split

                    point.split = train_split(cfg, report, target, batch * prompt, request.tensor_parallel,
                                              request.data_parallel)
                elif request.data_parallel > 1:
                    point.data_parallel = report.data_parallel(request.data_parallel)
                points.append(point)
    s = cfg.shape
    twins = "2- and 3-layer twins, scaled" if cfg.layers_alike and s.layers > 3 else "the whole model"
    notes = [f"each point exported from {twins} to {s.layers} layers (counts exact, then each roofline); the "
             f"batch and prompt are numbers in each export",
             "attention: SDPA with is_causal (the fused kernel and its fused backward, live pairs j ≤ i); the loss: "
             "cross entropy of every position's logits against the next tokens (mean over batch × prompt)"]
    validation = None
    if request.validate:
        validation = validate_train_step(cfg, request.optimizer)
    return LlmTraining(request, cfg, points, notes, validation)


def render_training(result: LlmTraining) -> str:
    from solar.backends.report import seconds

    s = result.config.shape
    lines = [f"{result.config.path}: {s.model_type}, {s.layers} layers, hidden {s.hidden}, {s.heads} heads "
             f"({s.kv_heads} key-value), vocabulary {s.vocab}, {str(s.dtype).replace('torch.', '')} parameters; "
             f"training step: cross entropy, torch.optim {result.request.optimizer}"]
    for p in result.points:
        r = p.report
        lines.append("")
        lines.append(f"batch {p.batch} x prompt {p.prompt} ({r.tokens:,} tokens) on {r.target}")
        lines += r.text().rstrip("\n").splitlines()[1:]
        lines.append(f"  contraction FLOPs (forward + backward) {p.contraction_flops:,}; vector FLOPs "
                     f"{r.model_flops - p.contraction_flops:,}")
        if p.split is not None:
            lines += p.split.text(r.capacity)
        if p.data_parallel:
            dp = p.data_parallel
            lines.append(f"  data parallel x{result.request.data_parallel}: gradient all-reduce "
                         f"{seconds(dp['allreduce_seconds'])}; step SOL with the reduce overlapped "
                         f"{seconds(dp['step_seconds'])}")
    lines.append("")
    lines += [f"note: {n}" for n in result.notes]
    if result.validation:
        lines.append(f"validation: {result.validation}")
    return "\n".join(lines) + "\n"


def training_json(result: LlmTraining) -> dict[str, Any]:
    points = []
    for p in result.points:
        r = p.report
        points.append({"target": r.target, "batch": p.batch, "prompt": p.prompt, "tokens": r.tokens,
                       "phases": {ph: {"kernels": c.kernels, "flops": c.flops, "bytes": c.bytes,
                                       "unfused_s": c.seconds} for ph, c in r.phases.items()},
                       "step_s": r.step_seconds, "mfu_bound": r.mfu_bound, "model_flops": r.model_flops,
                       "contraction_flops": p.contraction_flops, "six_n_tokens": r.six_n_tokens,
                       "trained_parameters": r.trained_parameters, "memory": r.memory, "fits": r.fits,
                       "data_parallel": p.data_parallel or None,
                       "split": p.split.as_record() if p.split is not None else None})
    return {"version": 1, "config": result.config.path, "phase": "train", "optimizer": result.request.optimizer,
            "points": points, "notes": result.notes, "validation": result.validation}


def write_training_json(result: LlmTraining, path: str) -> None:
    from solar.backends.report import strict_json
    from solar.ir.outputs import write_text_atomic

    text = json.dumps(strict_json(training_json(result)), indent=1, allow_nan=False) + "\n"
    write_text_atomic(path, text, "the solar-llm report")


__all__ = ["LlmTraining", "LlmTrainingRequest", "TrainingPoint", "llm_training", "render_training",
           "training_json", "write_training_json"]
