"""Activation checkpointing in a training step (frontends/train_checkpoint.py): a torch.utils.checkpoint
region's inner values are recomputed in the backward, not saved; counts exact, steps validated against
PyTorch's own checkpointed `loss.backward()` and `optimizer.step()`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from train_programs import GPT, two_layer_mlp, write_program  # noqa: E402

from solar.frontends.torch_train import load_train_problem, model_inputs, translate_train, validate_train  # noqa: E402
from solar.frontends.train_step import TrainOptions  # noqa: E402
from solar.ir import print_module  # noqa: E402
from solar.tools.solar_translate import main  # noqa: E402

B = 24
# The lit test's program (tests/lit/solar-translate/train-checkpoint.test): a 3-layer MLP whose middle block is
# checkpointed, at batch B.
MLP = (Path(__file__).resolve().parents[1] / "lit" / "solar-translate" / "Inputs" / "mlp_checkpoint.py").read_text()
PLAIN = MLP.replace("checkpoint(self.block, self.inp(x), use_reentrant=False)", "self.block(self.inp(x))")


def _step(path: str, optimizer: str = "none", amp: str = "none") -> tuple[Any, Any, dict[str, Any]]:
    options = TrainOptions(optimizer, "sum", amp=amp)
    problem, _ = load_train_problem(path, options)
    tr = translate_train(problem, model_inputs(problem), options, "batch")
    return problem, tr, tr.module.attrs["train"]


def _product_macs(tr: Any, info: dict[str, Any]) -> dict[str, int]:
    """Multiply-adds of the step's products (mm) per phase, and of the recomputed ones."""
    import solar

    flops = {u.name.lstrip("@"): u.flops for u in solar.analyze(print_module(tr.module), fuse=False).units}
    return {phase: sum(flops[k] for k in info.get(phase, []) if k.startswith("mm")) // 2
            for phase in ("forward", "backward", "recomputed")}


def test_checkpointed_block_is_recomputed_in_the_backward(tmp_path: Path) -> None:
    problem, tr, info = _step(write_program(tmp_path, "ckpt", MLP))
    _, plain_tr, plain = _step(write_program(tmp_path, "plain", PLAIN))
    macs = _product_macs(tr, info)
    inp, fc1, fc2, out = B * 32 * 32, B * 32 * 48, B * 48 * 32, B * 32 * 16
    assert macs["forward"] == inp + fc1 + fc2 + out
    # Every product's backward is twice its forward, but for the first layer's input gradient; then fc1's
    # product again, recomputed from the block's saved input (fc2's output is what the block returns: saved).
    assert macs["recomputed"] == fc1
    assert macs["backward"] == 2 * macs["forward"] - inp + fc1
    assert _product_macs(plain_tr, plain)["backward"] == 2 * macs["forward"] - inp
    assert info["checkpoint_regions"] == 1 and "checkpoint_regions" not in plain
    # The ReLU's output (B × 48 in f32) is no longer saved; the block's input is, as it was already (fc1's weight
    # gradient reads it).
    assert plain["saved_activation_bytes"] - info["saved_activation_bytes"] == B * 48 * 4
    report = validate_train(problem, 1, TrainOptions("none", "sum"), tr, 0, 4, False)
    assert report.ok, report.summary()
    assert len(report.outputs) == 1 + 4  # the loss and the four weight gradients


def test_reentrant_and_nested_checkpoints_are_one_region(tmp_path: Path) -> None:
    """A reentrant checkpoint (its function runs under no_grad) is traced as the non-reentrant one; a checkpoint
    inside another belongs to the outer region. Both steps validate against PyTorch's, AdamW included."""
    nested = MLP.replace("use_reentrant=False", "use_reentrant=True").replace(
        "return self.fc2(torch.relu(self.fc1(x)))",
        "return self.fc2(checkpoint(lambda t: torch.relu(self.fc1(t)), x, use_reentrant=False))")
    problem, tr, info = _step(write_program(tmp_path, "nested", nested), "adamw")
    assert info["checkpoint_regions"] == 1
    assert _product_macs(tr, info)["recomputed"] == B * 32 * 48
    report = validate_train(problem, 1, TrainOptions("adamw", "sum"), tr, 0, 4, False)
    assert report.ok, report.summary()


def test_analyze_train_reports_the_recomputation() -> None:
    from torch.utils.checkpoint import checkpoint

    import solar

    plain = two_layer_mlp()

    class Mlp(type(plain)):  # the shared 32 → 64 → 32 MLP, its whole forward checkpointed
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return checkpoint(super().forward, x, use_reentrant=False)

    report = solar.analyze(Mlp(), (torch.randn(16, 32),), train=True, optimizer="sgd").training
    assert report.checkpoint_regions == 1
    # fc1's product and the ReLU, recomputed from the region's input x (fc2's output is the region's).
    assert report.recomputed.flops == 2 * 16 * 32 * 64 + 16 * 64
    assert report.memory["saved_activation"] == 16 * 32 * 4 + 4  # x, and the loss's gradient seed
    assert "activation checkpointing: 1 region(s) recomputed in the backward" in report.text()


def test_attention_region_under_autocast(tmp_path: Path) -> None:
    """The attention and the MLP of a GPT block checkpointed, under autocast bf16 (whose region is a
    higher-order op with its own graph): the fused attention is recomputed for its backward, the weights'
    casts to bf16 are not (no activation: the backward reads the forward's)."""
    source = GPT.replace("import torch, torch.nn",
                         "from torch.utils.checkpoint import checkpoint\nimport torch, torch.nn")
    source = source.replace("""        B, T, C = x.shape
        q, k, v""", """        return self.mlp(x + checkpoint(self.attn, x, use_reentrant=False))
    def mlp(self, x):
        return x + checkpoint(lambda h: self.out(F.gelu(self.fc(h))), x, use_reentrant=False)
    def attn(self, x):
        B, T, C = x.shape
        q, k, v""").replace("""        x = x + self.proj(a)
        return x + self.out(F.gelu(self.fc(x)))""", """        return self.proj(a)""")
    problem, tr, info = _step(write_program(tmp_path, "gpt", source), "sgd", "bf16")
    assert info["checkpoint_regions"] == 2
    assert any(k.startswith("_scaled_dot_product_flash_attention") for k in info["recomputed"])
    # Each product's weight and bias cast once (4 B read, 2 B written): qkv, proj, fc, out.
    assert info["weight_cast_bytes"] == (32 * 96 + 96 + 32 * 32 + 32 + 32 * 128 + 128 + 128 * 32 + 32) * 6
    report = validate_train(problem, 1, TrainOptions("sgd", "sum", amp="bf16"), tr, 0, 4, False)
    assert report.ok, report.summary()


def test_selective_checkpointing_is_refused_at_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    selective = MLP.replace("from torch.utils.checkpoint import checkpoint", """from functools import partial
from torch.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts, CheckpointPolicy
def policy(ctx, op, *args, **kwargs):
    return CheckpointPolicy.MUST_SAVE""").replace(
        "use_reentrant=False)",
        "use_reentrant=False,\n            context_fn=partial(create_selective_checkpoint_contexts, policy))")
    path = write_program(tmp_path, "selective", selective)
    out = tmp_path / "kept.sir"
    out.write_text("old")
    code = main([path, "--train", "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 1 and out.read_text() == "old"
    line = Path(path).read_text().splitlines().index("        h = checkpoint(self.block, self.inp(x), "
                                                     "use_reentrant=False,") + 1
    assert err.startswith(f"{path}:{line}:") and "selective activation checkpointing" in err, err
    assert err.count("error:") == 1
