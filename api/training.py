"""The training step's report: forward, backward and optimizer apart, the MFU bound beside the 6·N·tokens
estimate, and the memory the step holds (docs/training.md).

    analysis = solar.analyze(model, (x,), train=True, optimizer="adamw")
    print(analysis.training.text())

Which kernels belong to which phase, and the bytes of parameters, gradients, optimizer state and saved
activations, come from the module attribute `train` that `solar-translate --train` writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PHASES = ("forward", "backward", "optimizer")
MODES = ("unfused", "fused", "whole_graph")


@dataclass(frozen=True)
class PhaseCost:
    """One phase's kernels, unfused: their FLOPs, bytes and SOL (each kernel alone, summed)."""

    phase: str
    kernels: int
    flops: int
    bytes: int
    seconds: float


@dataclass
class TrainingReport:
    """The step on one target."""

    target: str
    phases: dict[str, PhaseCost]
    step_seconds: dict[str, float]  # per mode; whole_graph_saved adds the saved activations' traffic
    model_flops: int  # forward + backward, as counted
    peak_flops: float  # the target's dense tensor peak for the parameters' type (flop/s)
    trained_parameters: int
    tokens: int
    memory: dict[str, int]  # parameter, gradient, optimizer_state, saved_activation bytes; peak_live
    capacity: float | None
    mfu_bound: dict[str, float] = field(default_factory=dict)
    amp: str = "none"  # mixed precision: the autocast type ('bf16', 'fp16'), f32 master weights and state
    cast_bytes: dict[str, int] = field(default_factory=dict)  # weight (forward) and gradient (backward) casts
    precision_floor: str | None = None  # --precision-floor: contractions (and the MFU's peak) at it where faster
    loss_scaling: PhaseCost | None = None  # fp16's GradScaler: unscale, inf/nan check, scale update (optimizer's)
    checkpoint_regions: int = 0  # torch.utils.checkpoint regions, whose inner values the backward recomputes
    recomputed: PhaseCost | None = None  # those recomputed kernels (already counted in the backward)

    @property
    def six_n_tokens(self) -> int:
        """The usual estimate of a step's model FLOPs: 6 · trained parameters · tokens."""
        return 6 * self.trained_parameters * self.tokens

    @property
    def fits(self) -> bool | None:
        return None if self.capacity is None else self.memory["peak_live"] <= self.capacity

    def data_parallel(self, chips: int, zero: int = 0) -> dict[str, float]:
        """`chips` data-parallel replicas, each running this step on its own batch: the gradient all-reduce
        (ring: 2·(N−1)/N · gradient bytes over one direction of the NVLink bandwidth), the step bound with
        communication fully overlapped, and the bytes each chip holds. ZeRO-1 shards the optimizer state,
        ZeRO-2 also the gradients (a reduce-scatter of the gradients and an all-gather of the parameters move
        the same bytes as the all-reduce)."""
        from solar.targets.loader import load_target

        if chips < 1 or zero not in (0, 1, 2):
            raise ValueError(f"data parallel needs chips >= 1 and zero in 0, 1, 2 (got {chips}, {zero})")
        link = load_target(self.target).require("nvlink_bandwidth") / 2  # per direction
        m = self.memory
        seconds = 2 * (chips - 1) / chips * m["gradient"] / link if chips > 1 else 0.0
        state = m["optimizer_state"] / chips if zero >= 1 else m["optimizer_state"]
        grads = m["gradient"] / chips if zero >= 2 else m["gradient"]
        step = min(self.step_seconds.values())
        out = {"allreduce_seconds": seconds, "peak_live": m["parameter"] + state + max(m["saved_activation"], grads)}
        if zero == 0:  # each replica runs the whole update: the step's own bound holds, overlapped with the reduce
            out["step_seconds"] = max(step, seconds)
        return out

    def text(self) -> str:
        from solar.backends.report import quantity, seconds

        lines = [f"Training step on {self.target}"]
        for ph in self.phases.values():
            lines.append(f"  {ph.phase:<9} {ph.kernels:>5} kernels  {ph.flops:>16,} FLOP  {ph.bytes:>14,} B  "
                         f"unfused SOL {seconds(ph.seconds)}")
        for mode, sec in self.step_seconds.items():
            lines.append(f"  step SOL {mode:<18} {seconds(sec):>9}   MFU bound {self.mfu_bound[mode]:.1%}")
        diff = self.model_flops - self.six_n_tokens
        lines.append(f"  model FLOPs (forward + backward) {self.model_flops:,}; 6*N*tokens = "
                     f"6*{self.trained_parameters:,}*{self.tokens:,} = {self.six_n_tokens:,} "
                     f"(counted - estimate = {diff:+,})")
        m = self.memory
        fits = "" if self.fits is None else (" fits" if self.fits else " does NOT fit") + \
            f" in {self.capacity / 2**30:,.1f} GiB"  # type: ignore[operator]
        lines.append(f"  memory: parameters {m['parameter']:,} B, gradients {m['gradient']:,} B, optimizer state "
                     f"{m['optimizer_state']:,} B, saved activations {m['saved_activation']:,} B; peak live >= "
                     f"{m['peak_live']:,} B{fits}")
        if self.amp != "none":
            lines.append(f"  mixed precision {self.amp} (autocast; f32 master weights and optimizer state): casts of "
                         f"the weights to {self.amp} {self.cast_bytes.get('weight', 0):,} B (forward), of the "
                         f"gradients to f32 {self.cast_bytes.get('gradient', 0):,} B (backward)")
        if self.precision_floor:
            lines.append(f"  precision floor {self.precision_floor} in force: contractions priced at "
                         f"{self.precision_floor} where that is faster; MFU bound against "
                         f"{quantity(self.peak_flops, 'FLOP/s')}")
        if self.loss_scaling is not None:
            ls = self.loss_scaling
            lines.append(f"  loss scaling (GradScaler): unscale and inf/nan check of every gradient, scale update: "
                         f"{ls.kernels} kernels, {ls.flops:,} FLOP, {ls.bytes:,} B (counted in the optimizer; the step "
                         "assumed taken); whole_graph_saved adds the gradients' round trip through DRAM "
                         f"({2 * self.memory['gradient']:,} B: the check sees every gradient before any update)")
        if self.checkpoint_regions and self.recomputed is not None:
            r = self.recomputed
            lines.append(f"  activation checkpointing: {self.checkpoint_regions} region(s) recomputed in the backward: "
                         f"{r.kernels} kernels, {r.flops:,} FLOP, {r.bytes:,} B (counted in the backward); of a "
                         "region only its inputs and outputs are saved")
        recompute = ("no group recomputes them" if not self.checkpoint_regions else
                     "only the checkpointed regions' inner values are recomputed instead")
        lines.append("  saved activations are DRAM traffic in the fused and whole-graph modes (written in the forward, "
                     f"read in the backward; {recompute}): whole_graph_saved adds them")
        return "\n".join(lines) + "\n"


def training_report(analysis: Any, target: str | None = None) -> TrainingReport | None:
    """The report of an Analysis of a training step (None for a program that is not one)."""
    from solar.bench.llm_train import unit_symbol

    info = analysis.results.program.attrs.get("train")
    if not isinstance(info, dict):
        return None
    name = target or analysis.targets[0]
    by_name = {unit_symbol(u.name): u for u in analysis.units}
    phases: dict[str, PhaseCost] = {}
    for ph in (*PHASES, "recomputed", "loss_scaling"):
        units = [by_name[k] for k in info.get(ph, []) if k in by_name]
        phases[ph] = PhaseCost(ph, len(units), sum(u.flops for u in units), sum(u.bytes for u in units),
                               sum(u.seconds[name] for u in units))
    recomputed, loss_scaling = phases.pop("recomputed"), phases.pop("loss_scaling")
    totals = analysis.totals[name]
    steps = {m: totals[m].seconds for m in MODES if m in totals}
    whole = totals["whole_graph"].bytes if "whole_graph" in totals else None
    report = build_report(name, phases, steps, whole, info, analysis.results.document.get("precision_floor"))
    report.checkpoint_regions = int(info.get("checkpoint_regions", 0))
    report.recomputed = recomputed if report.checkpoint_regions else None
    report.loss_scaling = loss_scaling if info.get("loss_scaling") else None
    return report


def build_report(target: str, phases: dict[str, PhaseCost], steps: dict[str, float], whole_bytes: int | None,
                 info: dict[str, Any], precision_floor: str | None = None) -> TrainingReport:
    """The report from each phase's costs, each mode's SOL and the whole graph's DRAM bytes (None: no
    whole-graph mode) on `target`, and the module attribute `train` (or its figures scaled to the full
    model: solar-llm --phase train). Under `precision_floor` the steps were priced at the floor, so the MFU
    bound is against the floor's peak where that is faster (never above 100 % by the floor alone)."""
    from solar.targets.loader import load_target

    tgt = load_target(target)
    steps = dict(steps)
    saved = int(info.get("saved_activation_bytes", 0))
    # GradScaler's inf/nan check sees every gradient before any parameter changes: the gradients go through
    # DRAM (written by the backward, read back by the update) instead of feeding a fused update.
    barrier = 2 * int(info.get("gradient_bytes", 0)) if info.get("loss_scaling") else 0
    if whole_bytes is not None and "whole_graph" in steps:
        steps["whole_graph_saved"] = max(steps["whole_graph"],
                                         (whole_bytes + 2 * saved + barrier) / tgt.dram_bandwidth)
    dtype = str(info.get("dtype", "f32"))
    peak = tgt.select_peak(dtype, contraction=True).flop_per_s
    if precision_floor:
        peak = max(peak, floored_peak(tgt, dtype, precision_floor))
    model = phases["forward"].flops + phases["backward"].flops
    memory = {"parameter": int(info.get("parameter_bytes", 0)), "gradient": int(info.get("gradient_bytes", 0)),
              "optimizer_state": int(info.get("optimizer_state_bytes", 0)), "saved_activation": saved}
    # At the end of the forward every saved activation is live; at the end of the backward every gradient:
    # parameters and optimizer state are live throughout.
    memory["peak_live"] = memory["parameter"] + memory["optimizer_state"] + max(saved, memory["gradient"])
    try:
        capacity: float | None = tgt.dram_capacity
    except Exception:
        capacity = None
    report = TrainingReport(tgt.name, phases, steps, model, peak, int(info.get("trained_parameters", 0)),
                            int(info.get("tokens", 0)), memory, capacity)
    report.amp = str(info.get("amp", "none"))
    report.precision_floor = precision_floor or None
    report.cast_bytes = {"weight": int(info.get("weight_cast_bytes", 0)),
                         "gradient": int(info.get("gradient_cast_bytes", 0))}
    report.mfu_bound = {m: (model / (s * peak) if s > 0 else 0.0) for m, s in steps.items()}
    return report


def floored_peak(target: Any, dtype: str, floor: str) -> float:
    """The contraction peak of `dtype` under the floor, as the cost model prices it (backends/cost.py)."""
    from solar.backends.cost import Peaks
    from solar.ir.dtypes import dtype_from_name

    parsed = dtype_from_name(dtype)
    return 0.0 if parsed is None else Peaks(target, floor).choice(parsed, True).flop_per_s


def translate_step(problem: Any, n_inputs: int, optimizer: str, loss: str, dynamic: str, amp: str = "none") -> Any:
    """The training step's translation for `solar.analyze(train=True)`, its failures as the API's errors."""
    from solar.errors import BadOptionError, ModelError, TranslationFailed
    from solar.frontends.diagnostics import SourceError, TranslationError
    from solar.frontends.lowering.core import LoweringError
    from solar.frontends.torch_train import translate_train
    from solar.frontends.train_amp import AMP_CHOICES
    from solar.frontends.train_step import LOSSES, OPTIMIZERS, TrainError, TrainOptions

    if optimizer not in OPTIMIZERS:
        raise BadOptionError(f"bad optimizer {optimizer!r}: expected one of {', '.join(OPTIMIZERS)}")
    if loss not in LOSSES:
        raise BadOptionError(f"bad loss {loss!r}: expected one of {', '.join(LOSSES)}")
    if amp not in AMP_CHOICES:
        raise BadOptionError(f"bad amp {amp!r}: expected one of {', '.join(AMP_CHOICES)}")
    try:
        return translate_train(problem, n_inputs, TrainOptions(optimizer, loss, amp=amp), dynamic)
    except TrainError as err:
        raise ModelError(f"error: {err}") from None
    except (SourceError, TranslationError, LoweringError) as err:
        text = err.format() if hasattr(err, "format") else str(err)
        first = text.strip().splitlines()[0]
        raise (ModelError if isinstance(err, SourceError) else TranslationFailed)(first, text) from None

