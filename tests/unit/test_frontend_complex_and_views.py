"""Complex rotary embeddings (`polar`, `view_as_complex`, `view_as_real`: frontends/torch_complex.py, in real
arithmetic) and writes into slices of a fresh tensor (`y = x.new_empty(...); y[..., :n].copy_(a)`,
DeepSeek's `expand_kv`): both lower, run against the model, and every write is kept."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from solar.backends.executor import run
from solar.frontends.scaled_reference import validate_torch
from solar.frontends.torch_export import translate_problem
from solar.frontends.torch_problem import TorchProblem, load_problem

DATA = Path(__file__).parent / "data"


def test_fresh_slice_writes_are_kept() -> None:
    tr = translate_problem(str(DATA / "fresh_slice_writes_model.py"), "none")
    ops = [op.opname for op in tr.module.entry.walk()]
    assert ops.count("solar.insert") == 2  # both writes, into the fresh tensor
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 3, 5, 8)), rng.standard_normal((2, 3, 5, 4))
    got = run(tr.module, [x.astype(np.float32), y.astype(np.float32)])[0]
    np.testing.assert_array_equal(np.asarray(got), np.concatenate([x, y], -1).astype(np.float32))


class _Rotate(torch.nn.Module):
    def forward(self, x: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
        z = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(z * torch.polar(torch.ones_like(f), f)).flatten(-2)


def test_complex_rotation_in_real_arithmetic() -> None:
    """A pair (a, b) rotated by angle t is (a cos t − b sin t, a sin t + b cos t): 4 products per pair."""
    x, f = torch.randn(3, 8), torch.randn(3, 4)
    problem = TorchProblem(_Rotate, lambda: [x.clone(), f.clone()], "rotate")
    tr = translate_problem(problem, "none")
    ops = {op.opname for op in tr.module.entry.walk()}
    assert not any("complex" in name for name in ops)
    got = np.asarray(run(tr.module, [x.numpy(), f.numpy()])[0])
    a, b = x[:, 0::2], x[:, 1::2]
    want = torch.stack([a * f.cos() - b * f.sin(), a * f.sin() + b * f.cos()], -1).flatten(-2)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-6)


def test_deepseek_style_rotary_with_fresh_writes_validates() -> None:
    problem = str(DATA / "complex_rotary_model.py")
    tr = translate_problem(problem, "batch")
    report = validate_torch(load_problem(problem), tr)
    assert report.ok, report.summary()
