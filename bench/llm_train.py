"""A causal LM's training step priced at full size from twins with fewer layers (`solar-llm --phase train`,
docs/training.md), as serving steps are (bench/llm_serving.py, bench/twins.py): the 2- and 3-layer twins'
steps are exported and counted (frontends/llm_train.py), every count of the full model is the 2-layer
twin's plus (layers − 2) times the difference, exactly, and each roofline is taken at those counts, unit by
unit (unfused), group by group (fused) and for the whole graph.

What a step's report needs (api/training.py) comes out per target: each phase's kernels, FLOPs (contraction
FLOPs apart), bytes and unfused SOL; the step's SOL per mode; the bytes of parameters, gradients, optimizer
state and saved activations; the trained parameters and the tokens.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from solar.backends.cost import CostModel, Peaks, Work
from solar.backends.sweep import work_key
from solar.frontends.llm_models import LlmConfig
from solar.frontends.llm_train import translate_twin
from solar.targets.loader import Target

from .llm_serving import lifted
from .twins import Terms, scaled_seconds

PHASES = ("forward", "backward", "optimizer")
# The module attribute's byte counts and figures, each linear in the layers.
MEMORY_FIELDS = ("parameter_bytes", "gradient_bytes", "optimizer_state_bytes", "saved_activation_bytes",
                 "trained_parameters", "tokens")


@dataclass(frozen=True)
class PhaseCounts:
    """One phase of the step on one target, unfused: its kernels' counts and the Σ of their rooflines."""

    kernels: int
    flops: int
    contraction_flops: int  # FLOPs on tensor units (products), the rest being vector work
    bytes: int
    seconds: float


@dataclass
class TrainCost:
    """The whole step on one target: its phases, each mode's SOL and the whole graph's DRAM bytes, and the
    module attribute's figures (bytes held, trained parameters, tokens, dtype)."""

    target: str
    phases: dict[str, PhaseCounts]
    steps: dict[str, float]  # unfused, fused, whole_graph
    whole_bytes: int
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Twin:
    """One twin's counts on one target: each unit (with its phase) and group as (key, terms, counts)."""

    # phase ("" for a unit the lowering recorded in none), key, terms, flops, contraction flops, bytes
    units: list[tuple[str, Any, Terms, int, int, int]]
    groups: list[tuple[Any, Terms]]
    whole: Terms
    whole_bytes: int
    info: dict[str, Any]


def unit_symbol(name: str) -> str:
    """How the module attribute `train` names a unit (frontends/torch_train.py, PhaseLowering): a kernel's
    symbol (`@mm_3` -> `mm_3`), or a unit without one by its result (`gather %gather_1` -> `%gather_1`)."""
    return name.split()[-1].lstrip("@") if name else name


def _terms(peaks: Peaks, w: Work) -> Terms:
    t = peaks.time(w)
    return (t.tensor_s, t.vector_s, t.memory_s)


def _twin(module: Any, targets: Sequence[Target]) -> dict[str, _Twin]:
    info = dict(module.attrs["train"])
    phase_of = {name: ph for ph in PHASES for name in info.get(ph, [])}
    work, _ = lifted(module)
    model = CostModel(work)
    whole = model.whole_graph()
    out: dict[str, _Twin] = {}
    for target in targets:
        peaks = Peaks(target)
        units = [(phase_of.get(unit_symbol(w.name), ""), work_key(w), _terms(peaks, w), w.flops,
                  round(sum(w.flops_tensor.values()) * w.trips), w.total_bytes) for w in model.units]
        groups = [(work_key(w), _terms(peaks, w)) for w in model.groups]
        out[target.name] = _Twin(units, groups, _terms(peaks, whole), whole.total_bytes, info)
    return out


# Steps translated in this process, by what determines them: a report, its targets and a test module translate
# each twin once.
_STEPS: dict[tuple[Any, ...], Any] = {}
_STEPS_KEPT = 8


def _step(cfg: LlmConfig, layers: int, batch: int, prompt: int, optimizer: str) -> Any:
    key = (json.dumps(cfg.raw, sort_keys=True, default=str), str(cfg.shape.dtype), layers, batch, prompt, optimizer)
    if key not in _STEPS:
        if len(_STEPS) >= _STEPS_KEPT:
            del _STEPS[next(iter(_STEPS))]
        _STEPS[key] = translate_twin(cfg, layers, batch, prompt, optimizer).module
    return _STEPS[key]


def _scale(a: int, b: int, k: Fraction) -> int:
    value = a + (b - a) * k
    assert value.denominator == 1, "a count of the twins that is not linear in the layers"
    return int(value)


def scale_twins(small: _Twin, large: _Twin, k: Fraction, target: str) -> TrainCost:
    """The step with `k` times the layers `large` adds to `small` (module docstring)."""
    phases: dict[str, PhaseCounts] = {}
    for ph in PHASES:
        a = [u for u in small.units if u[0] == ph]
        b = [u for u in large.units if u[0] == ph]
        phases[ph] = PhaseCounts(_scale(len(a), len(b), k),
                                 *(_scale(sum(u[i] for u in a), sum(u[i] for u in b), k) for i in (3, 4, 5)),
                                 scaled_seconds([u[2] for u in a], [u[1] for u in a], [u[2] for u in b],
                                                [u[1] for u in b], k))
    steps = {"unfused": scaled_seconds([u[2] for u in small.units], [u[1] for u in small.units],
                                       [u[2] for u in large.units], [u[1] for u in large.units], k),
             "fused": scaled_seconds([g[1] for g in small.groups], [g[0] for g in small.groups],
                                     [g[1] for g in large.groups], [g[0] for g in large.groups], k),
             "whole_graph": max(max(0.0, float(p + (q - p) * k)) for p, q in zip(small.whole, large.whole,
                                                                                  strict=True))}
    info = dict(small.info)
    for key in MEMORY_FIELDS:
        info[key] = _scale(int(small.info.get(key, 0)), int(large.info.get(key, 0)), k)
    return TrainCost(target, phases, steps, _scale(small.whole_bytes, large.whole_bytes, k), info)


def price_train(cfg: LlmConfig, targets: Sequence[Target], batch: int, prompt: int, optimizer: str,
                twins: bool = True) -> dict[str, TrainCost]:
    """The step of `batch` × `prompt` tokens, per target: from the twins that price the model's inference
    steps (`LlmConfig.twin_layers`: 2 and 3 layers when every layer is alike) when `twins`, else exported
    whole."""
    total = cfg.shape.layers
    counts = (cfg.twin_layers() if twins else None) or (total,)
    exported = {n: _twin(_step(cfg, n, batch, prompt, optimizer), targets) for n in counts}
    out: dict[str, TrainCost] = {}
    for target in targets:
        if len(counts) == 1:
            one = exported[counts[0]][target.name]
            out[target.name] = scale_twins(one, one, Fraction(0), target.name)
        else:
            la, lb = counts
            out[target.name] = scale_twins(exported[la][target.name], exported[lb][target.name],
                                           Fraction(total - la, lb - la), target.name)
    return out


__all__ = ["PHASES", "PhaseCounts", "TrainCost", "price_train", "scale_twins"]
