"""What solar-llm reads of its flags before torch and transformers load (seconds): the phases asked, and the
split over chips with the checks that it divides the model's counts (layers, heads, key-value heads, routed
experts). The tool runs those checks first on the counts the config file declares (frontends/
llm_config_checks.py: `declared_counts`), then on the model's config once it is built; a count the file
leaves to its config class's default is unknown in the first run, which stops there."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from solar.frontends.llm_config_checks import LlmError


@dataclass(frozen=True)
class Split:
    """How a model is spread over chips."""

    tensor: int = 1
    pipeline: int = 1
    expert: int = 1
    data: int = 1

    @property
    def replica_chips(self) -> int:
        return self.tensor * self.pipeline * self.expert

    @property
    def chips(self) -> int:
        return self.replica_chips * self.data

    @property
    def stage_chips(self) -> int:
        return self.tensor * self.expert

    def as_record(self) -> dict[str, int]:
        return {"tensor_parallel": self.tensor, "pipeline_parallel": self.pipeline, "expert_parallel": self.expert,
                "data_parallel": self.data}

    def __str__(self) -> str:
        return f"TP{self.tensor}·PP{self.pipeline}·EP{self.expert}·DP{self.data}"


def searched_split(given: tuple[int | None, int | None, int | None]) -> Split:
    """The split a search keeps of its (tensor, pipeline, expert) flags: each given one, 1 where not (None:
    that kind is searched)."""
    return Split(*(1 if value is None else value for value in given))  # a given 0 stays, to be refused


class SplitCounts(Protocol):
    """The counts a split divides (`LlmShape`, or a config file's `DeclaredCounts`: None, not known yet)."""

    @property
    def layers(self) -> int: ...
    @property
    def heads(self) -> int: ...
    @property
    def kv_heads(self) -> int | None: ...
    @property
    def experts(self) -> int | None: ...


def check_split_counts(s: SplitCounts, split: Split) -> None:
    """A split that does not divide the model: one line naming the flag and what it does not divide. The
    checks run in order and stop at the first count not known yet (None)."""
    for flag, n in (("--tensor-parallel", split.tensor), ("--pipeline-parallel", split.pipeline),
                    ("--expert-parallel", split.expert), ("--data-parallel", split.data)):
        if n < 1:
            raise LlmError(f"{flag} {n}: must be a positive integer")
    if s.heads % split.tensor:
        raise LlmError(f"--tensor-parallel {split.tensor} does not divide the {s.heads} attention heads")
    if s.kv_heads is None:
        return
    if s.kv_heads % split.tensor and split.tensor % s.kv_heads:
        raise LlmError(f"--tensor-parallel {split.tensor} neither divides nor is a multiple of the {s.kv_heads} "
                       "key-value heads")
    if s.layers % split.pipeline:
        raise LlmError(f"--pipeline-parallel {split.pipeline} does not divide the {s.layers} layers")
    if s.experts is None:
        return
    if split.expert > 1 and not s.experts:
        raise LlmError(f"--expert-parallel {split.expert}: the model has no routed experts")
    if split.expert > 1 and s.experts % split.expert:
        raise LlmError(f"--expert-parallel {split.expert} does not divide the {s.experts} routed experts")


def phases_of(text: str) -> tuple[str, ...]:
    if text == "both":
        return ("prefill", "decode")
    if text in ("prefill", "decode"):
        return (text,)
    raise LlmError(f"--phase {text}: expected prefill, decode, both or train")


__all__ = ["Split", "SplitCounts", "check_split_counts", "phases_of", "searched_split"]
