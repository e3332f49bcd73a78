"""A deployment of a language model over chips: tensor (TP), pipeline (PP), expert (EP) and data (DP)
parallelism combined, and what each chip holds, does and sends (docs/llm.md, "Deploying").

A replica is TP × PP × EP chips, placed TP innermost, then EP, then PP (a stage is a group of TP · EP chips);
DP replicas serve independent requests. Within a stage the dense parts (attention, dense MLPs, embedding,
head) are tensor-parallel over TP and data-parallel over the EP ranks (each EP rank runs the attention of
its share of the sequences); the routed experts are split over the EP ranks (E / EP each), each expert
tensor-parallel over TP. Every figure here is a formula in the costs the step's surfaces already give
(`StepCost`, whole model on one chip): nothing is exported or run again per deployment.

Time of one micro-batch's pass through the model: each chip does at least 1/(TP · EP) of every stage's
FLOPs and bytes (summed over the stages on the micro-batch's path), and the collectives may overlap that
work, so the pass takes the larger of the two, never their sum. The pipeline's stage-to-stage sends are on
the micro-batch's own path and add. Collectives, per chip and each way:

- TP: two all-reduces per layer (attention and MLP outputs) of the EP rank's tokens × hidden. Within an
  NVLink domain of d chips at least (d − 1)/d · M goes through each chip's links each way; across n
  domains a hierarchical all-reduce sends at least (n − 1)/n · M / d of it over the internode link.
- EP: a dispatch and a combine all-to-all per MoE layer: tokens × hidden × dtype × (N − 1)/N each way per
  EP rank (shared by its TP chips; the dispatch at the dtype the experts' contractions read, codes and
  scales under quantized activations: bench/llm_exchange.py), with routing that spreads each rank's
  tokens evenly over the ranks.
  Of those bytes, (N − d)/N go to ranks in other domains. (A routing that keeps tokens on their own rank
  sends less: this is the one figure that assumes balanced routing, as the expert weights' bound does not.)
- PP: one send of the micro-batch's hidden states per stage boundary, spread over the stage's TP · EP links,
  at NVLink within a domain and at `internode_bandwidth` across.

A link's per-direction bandwidth is half its bidirectional figure (`nvlink_bandwidth`,
`internode_bandwidth`); a target without `nvlink_domain` is taken as one domain of any size (NVLink
everywhere: the faster link, so the bound stays a bound).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from solar.frontends.llm_models import LlmConfig, LlmError
from solar.targets.loader import PeakUnavailable, Target

from .llm_exchange import exchange_of
from .llm_flags import Split, check_split_counts


def check_split(cfg: LlmConfig, split: Split) -> None:
    """A split that does not divide the model: one line naming the flag and what it does not divide."""
    check_split_counts(cfg.shape, split)


def split_problem(cfg: LlmConfig, split: Split) -> str | None:
    """`check_split`'s complaint, or None (the search skips splits that do not divide the model)."""
    try:
        check_split(cfg, split)
    except LlmError as err:
        return str(err)
    return None


# ---- links ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Links:
    """A target's links, bytes/s each way per chip."""

    nvlink: float
    internode: float | None  # None: the target gives none
    domain: int | None  # chips per NVLink domain; None: unbounded

    def members_per_domain(self, size: int, stride: int) -> int:
        """Of a group of `size` ranks `stride` chips apart, how many share one NVLink domain."""
        if self.domain is None:
            return size
        return max(1, min(size, self.domain // stride))

    def seconds(self, intra: float, inter: float, what: str, target: str) -> float:
        """The least time to move `intra` bytes over NVLink and `inter` over the internode link at once."""
        if inter > 0 and self.internode is None:
            raise LlmError(f"{what} spans more than one NVLink domain of {self.domain} chips, and target {target} "
                           "has no internode_bandwidth")
        return max(intra / self.nvlink, inter / self.internode if inter > 0 and self.internode else 0.0)


def links_of(target: Target, split: Split) -> Links | None:
    """The target's links (None for a single chip); a split over chips needs `nvlink_bandwidth`."""
    if split.replica_chips == 1:
        return None
    try:
        nvlink = target.require("nvlink_bandwidth") / 2
    except PeakUnavailable as err:
        raise LlmError(f"{split}: target {target.name} has no nvlink_bandwidth ({err})") from None
    internode = target.require("internode_bandwidth") / 2 if target.figure("internode_bandwidth").known else None
    domain = int(target.require("nvlink_domain")) if target.figure("nvlink_domain").known else None
    return Links(nvlink, internode, domain)


@dataclass(frozen=True)
class Collectives:
    """What one micro-batch's pass through the model sends, per chip and each way, and how long it takes."""

    allreduce_bytes: float = 0.0
    alltoall_bytes: float = 0.0
    p2p_bytes: float = 0.0
    allreduce_s: float = 0.0
    alltoall_s: float = 0.0
    p2p_s: float = 0.0

    @property
    def overlappable_s(self) -> float:
        """The collectives that can run under the work (they share the chip's links, so they add)."""
        return self.allreduce_s + self.alltoall_s

    def as_record(self) -> dict[str, float]:
        return {"allreduce_bytes": self.allreduce_bytes, "alltoall_bytes": self.alltoall_bytes,
                "p2p_bytes": self.p2p_bytes, "allreduce_s": self.allreduce_s, "alltoall_s": self.alltoall_s,
                "p2p_s": self.p2p_s}


def collectives(cfg: LlmConfig, split: Split, target: Target, tokens: int, moe_layers: int,
                activations: str = "none") -> Collectives:
    """The collectives of one pass of `tokens` tokens (a micro-batch: B·S in prefill, B in decode), each at
    the dtype its kernels exchange under `--quantize activations=...` (bench/llm_exchange.py)."""
    links = links_of(target, split)
    if links is None:
        return Collectives()
    s = cfg.shape
    exchange = exchange_of(s.hidden, s.dtype_bytes, activations)
    message = tokens * exchange.hidden  # the micro-batch's hidden states
    rank_message = message / split.expert  # an EP rank's share of the tokens
    tp, ep = split.tensor, split.expert
    allreduce_bytes = allreduce_s = 0.0
    if tp > 1:
        d = links.members_per_domain(tp, 1)
        n = tp / d
        intra = (d - 1) / d * rank_message
        inter = (n - 1) / n * rank_message / d
        allreduce_bytes = 2 * s.layers * (intra + inter)
        allreduce_s = 2 * s.layers * links.seconds(intra, inter, f"--tensor-parallel {tp}", target.name)
    alltoall_bytes = alltoall_s = 0.0
    if ep > 1:
        d = links.members_per_domain(ep, tp)
        # The dispatch sends the experts' input as they read it (quantized), the combine their outputs.
        for width in (exchange.dispatch, exchange.hidden):
            per_chip = tokens * width / ep / tp
            intra, inter = (d - 1) / ep * per_chip, (ep - d) / ep * per_chip
            alltoall_bytes += moe_layers * (intra + inter)
            alltoall_s += moe_layers * links.seconds(intra, inter, f"--expert-parallel {ep}", target.name)
    p2p_bytes = p2p_s = 0.0
    stage = split.stage_chips
    for boundary in range(1, split.pipeline):
        per_chip = message / stage
        p2p_bytes += per_chip
        if _crosses_domain(links, boundary, stage):
            p2p_s += links.seconds(0.0, per_chip, f"--pipeline-parallel {split.pipeline}", target.name)
        else:
            p2p_s += links.seconds(per_chip, 0.0, f"--pipeline-parallel {split.pipeline}", target.name)
    return Collectives(allreduce_bytes, alltoall_bytes, p2p_bytes, allreduce_s, alltoall_s, p2p_s)


def _crosses_domain(links: Links, boundary: int, stage: int) -> bool:
    """Whether some chip of stage `boundary` − 1 sends to a chip of another NVLink domain (chip i of a stage
    sends to chip i of the next, `stage` chips on): some multiple of the domain lies in
    ((k − 1)·G, k·G + G − 1]."""
    if links.domain is None:
        return False
    return (boundary * stage + stage - 1) // links.domain > ((boundary - 1) * stage) // links.domain


# ---- time ----------------------------------------------------------------------------------------


def micro_batches(batch: int, split: Split) -> int:
    """The pipeline's micro-batches: the most, up to one per stage, that split the batch evenly."""
    return max(m for m in range(1, min(batch, split.pipeline) + 1) if batch % m == 0)


def pass_seconds(whole_model_s: float, split: Split, coll: Collectives) -> float:
    """One micro-batch through every stage, the stage-to-stage sends left out: the chips' share of the
    work, or the collectives that overlap it, whichever is longer."""
    return max(whole_model_s / split.stage_chips, coll.overlappable_s)


def decode_step_seconds(whole_model_s: float, split: Split, coll: Collectives, m: int) -> float:
    """The time between a sequence's tokens (TPOT) with the batch in `m` micro-batches: a micro-batch's
    round trip (every stage and the sends between them), or each stage's turn at all m micro-batches."""
    step = pass_seconds(whole_model_s, split, coll)
    return max(step + coll.p2p_s, m * step / split.pipeline)


def prefill_seconds(whole_model_s: float, split: Split, coll: Collectives, m: int) -> float:
    """The time to the first token of the batch's last micro-batch: the pipeline's fill (the first
    micro-batch through every stage, P − 1 sends) and one stage time per micro-batch after it."""
    step = pass_seconds(whole_model_s, split, coll)
    return (split.pipeline + m - 1) / split.pipeline * step + coll.p2p_s


# ---- memory --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChipMemory:
    """What the busiest chip holds (bytes): weights, KV cache, the step's activations."""

    weight_bytes: int
    kv_cache_bytes: int
    activation_bytes: int

    @property
    def total(self) -> int:
        return self.weight_bytes + self.kv_cache_bytes + self.activation_bytes

    def as_record(self) -> dict[str, int]:
        return {"weight_bytes_per_chip": self.weight_bytes, "kv_cache_bytes_per_chip": self.kv_cache_bytes,
                "activation_bytes_per_chip": self.activation_bytes, "memory_per_chip": self.total}


def stage_layers(layers: int, split: Split) -> list[range]:
    per = layers // split.pipeline
    return [range(k * per, (k + 1) * per) for k in range(split.pipeline)]


def chip_weight_bytes(memory: Any, split: Split) -> int:
    """The weights of the stage whose chips hold the most: its layers' dense weights over TP, its routed
    experts over TP · EP, and the embedding (first stage) or the final norm and head (last stage) over TP.
    A tied head is a copy of the embedding on the last stage when they are on different chips."""
    tp, ep = split.tensor, split.expert
    if not memory.layer_bytes:  # a model given as code: its layers are not known apart
        return math.ceil(memory.weight_bytes / (tp * split.pipeline))
    layer_share = [math.ceil((w - e) / tp) + math.ceil(e / (tp * ep))
                   for w, e in zip(memory.layer_bytes, memory.layer_expert_bytes, strict=True)]
    extra = memory.weight_bytes - sum(memory.layer_bytes)  # embedding, final norm, untied head
    if split.pipeline == 1:
        firsts, lasts = extra, 0
    else:
        firsts = memory.embedding_bytes
        lasts = extra - memory.embedding_bytes + (memory.embedding_bytes if memory.tied_head else 0)
    stages = stage_layers(len(layer_share), split)
    held = [sum(layer_share[i] for i in r) for r in stages]
    held[0] += math.ceil(firsts / tp)
    held[-1] += math.ceil(lasts / tp)
    return max(held)


def chip_cache_bytes(per_layer_token_bytes: int, resident: list[int], batch: int, kv_heads: int,
                     split: Split) -> int:
    """The busiest chip's cache: its stage's layers, its EP rank's sequences, its heads' share (a chip of a
    TP group wider than the key-value heads holds one head, a copy)."""
    sequences = math.ceil(batch / split.expert)
    shards = min(split.tensor, kv_heads)
    per_stage = [sum(resident[i] for i in r) for r in stage_layers(len(resident), split)]
    return math.ceil(per_layer_token_bytes * sequences * max(per_stage) / shards)


def chip_activation_bytes(cfg: LlmConfig, split: Split, tokens: int, logit_tokens: int) -> int:
    """The least a step's activations occupy on a chip: the hidden states of its micro-batch's tokens on its
    EP rank (the residual stream, at the model's dtype however the contractions read them), and on the last
    stage the logits it writes (vocabulary-parallel over TP)."""
    s = cfg.shape
    hidden = math.ceil(tokens / split.expert) * s.hidden * s.dtype_bytes
    return hidden + math.ceil(logit_tokens * s.vocab / split.tensor) * s.dtype_bytes
