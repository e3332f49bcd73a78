"""HF models with eager attention and no cache (transformers >= 5.24): the mask goes through the
packed-sequence remap (positions flattened to BATCH·S and gathered back), and Q·Kᵀ and P·V are separate
kernels around it. Both count only the live pairs, enumerated here from the mask's definition."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from solar.frontends.torch_export import TorchProblem, translate_problem  # noqa: E402
from solar.ir.diagnostics import DiagnosticEngine  # noqa: E402
from solar.ir.ops import EinsumOp  # noqa: E402
from solar.ir.pass_manager import PassContext, PassManager  # noqa: E402
from solar.passes.inline import Inline  # noqa: E402
from solar.passes.lift_einsum import LiftEinsum  # noqa: E402

BATCH = 2  # above 1, so that export keeps the batch symbolic and HF flattens positions to BATCH·S


class _Hidden(torch.nn.Module):
    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=ids, use_cache=False).last_hidden_state


def _einsum_macs(model: torch.nn.Module, seq: int) -> dict[str, int]:
    torch.manual_seed(0)
    ids = torch.randint(0, model.config.vocab_size, (BATCH, seq))
    translation = translate_problem(TorchProblem(lambda: _Hidden(model.eval()), lambda: [ids], "hf", None), "batch")
    engine = DiagnosticEngine()
    module = PassManager([Inline(), LiftEinsum()]).run(translation.module, PassContext(engine, lambda _: None))
    assert not engine.has_errors, engine.format_all()
    return {op.symbol: op.attrs["counts"]["macs"] for op in module.entry.walk() if isinstance(op, EinsumOp)}


def test_mistral_eager_sliding_window_counts_live_pairs() -> None:
    """Window 16 over 64 tokens: 904 of the 4,096 pairs are live; dense, the model counted 41,943,040 MACs."""
    layers, hidden, heads, kv_heads, inter, window, seq = 2, 128, 4, 2, 256, 16, 64
    config = transformers.MistralConfig(vocab_size=128, hidden_size=hidden, intermediate_size=inter,
                                        num_hidden_layers=layers, num_attention_heads=heads,
                                        num_key_value_heads=kv_heads, max_position_embeddings=256,
                                        sliding_window=window, attn_implementation="eager")
    macs = _einsum_macs(transformers.MistralModel(config), seq)
    head_dim = hidden // heads
    live = sum(1 for i in range(seq) for j in range(seq) if j <= i and i - j < window)
    assert live == 904
    per_token = layers * (2 * hidden * hidden + 2 * hidden * kv_heads * head_dim + 3 * hidden * inter)
    attention = {k: v for k, v in macs.items() if k.startswith("matmul")}
    assert sorted(attention.values()) == [BATCH * heads * live * head_dim] * (2 * layers)  # Q·Kᵀ and P·V
    assert sum(macs.values()) == BATCH * seq * per_token + 2 * layers * BATCH * heads * live * head_dim \
        == 38_674_432


def test_gpt_neox_eager_causal_counts_live_pairs() -> None:
    heads, hidden, seq = 4, 64, 32
    config = transformers.GPTNeoXConfig(vocab_size=128, hidden_size=hidden, intermediate_size=128,
                                        num_hidden_layers=1, num_attention_heads=heads,
                                        max_position_embeddings=256, attn_implementation="eager")
    macs = _einsum_macs(transformers.GPTNeoXModel(config), seq)
    live = seq * (seq + 1) // 2
    assert {k: v for k, v in macs.items() if k.startswith("matmul")} == \
        {"matmul": BATCH * heads * live * (hidden // heads), "matmul_1": BATCH * heads * live * (hidden // heads)}
