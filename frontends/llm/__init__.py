"""The LLM frontend: PyTorch → SIR through any litellm model, trusted only once it parses, verifies, runs and
matches the original's outputs. `solar-translate model.py --llm MODEL` is the command line;
`translate_torch` the library entry. See README.md ("Translating with a language model")."""

from __future__ import annotations

from .client import LLMClient, LLMConfig, LLMError, ReplayProvider, Transcript, Usage
from .loop import CandidateError, LoopFailed
from .translate import LLMOptions, LLMTranslation, make_client, source_of, translate_torch

__all__ = [
    "CandidateError", "LLMClient", "LLMConfig", "LLMError", "LLMOptions", "LLMTranslation", "LoopFailed",
    "ReplayProvider", "Transcript", "Usage", "make_client", "source_of", "translate_torch",
]
