"""torch.einsum of three or more tensors: lowered as contractions of two in the order of least FLOPs
(opt_einsum's search at the export's sizes), never as one loop nest over every index; the bound then prices
the order's FLOPs, computed here independently with opt_einsum.contract_path."""

from __future__ import annotations

from typing import Any

import opt_einsum
import pytest

torch = pytest.importorskip("torch")

from solar.backends.cost import CostModel  # noqa: E402
from solar.frontends.torch_export import translate_problem  # noqa: E402
from solar.frontends.torch_problem import TorchProblem  # noqa: E402
from solar.ir import attr_names  # noqa: E402
from solar.ir.diagnostics import DiagnosticEngine  # noqa: E402
from solar.ir.ops import EinsumOp, KernelOp, ModuleOp  # noqa: E402
from solar.ir.pass_manager import PassContext, PassManager  # noqa: E402
from solar.passes import registry  # noqa: E402

# The chunked state-space scan's diagonal blocks (Mamba2, KernelBench level 3 problems 48 and 49): batch 2048,
# 2 chunks of 64 steps, 8 heads, state 16, head dim 64.
SSD_DIAG = "bclhn,bcshn,bhcls,bcshp->bclhp"
B, K, T, H, N, P = 2048, 2, 64, 8, 16, 64
SSD_SHAPES = [(B, K, T, H, N), (B, K, T, H, N), (B, H, K, T, T), (B, K, T, H, P)]


class _Einsum(torch.nn.Module):
    def __init__(self, equation: str) -> None:
        super().__init__()
        self.equation = equation

    def forward(self, *xs: Any) -> Any:
        return torch.einsum(self.equation, *xs)


def translate(equation: str, shapes: list[tuple[int, ...]]) -> ModuleOp:
    """The einsum at full size: meta tensors (no memory), static sizes, no validation run."""
    problem = TorchProblem(lambda: _Einsum(equation), lambda: [torch.empty(s, device="meta") for s in shapes],
                           "einsum_order")
    return translate_problem(problem, dynamic="none").module


def priced(module: ModuleOp, pipeline: str = "lift-einsum,fuse") -> CostModel:
    engine = DiagnosticEngine()
    module = PassManager(registry.parse_pipeline(pipeline)).run(module, PassContext(engine, report=lambda _: None))
    assert not engine.has_errors, engine.format_all()
    return CostModel(module)


def flops(model: CostModel, mode: str = "units") -> int:
    works = model.units if mode == "units" else model.groups
    return sum(sum(w.flops_tensor.values()) + sum(w.flops_vector.values()) for w in works)


def test_mamba2_diagonal_einsum_is_priced_at_the_optimal_order() -> None:
    _, info = opt_einsum.contract_path(SSD_DIAG, *SSD_SHAPES, shapes=True, optimize="optimal")
    module = translate(SSD_DIAG, SSD_SHAPES)
    kernels = [op for op in module.walk() if isinstance(op, KernelOp)]
    assert len(kernels) == 3  # three contractions of two, no loop nest over all seven indices
    orders = [k.attrs[attr_names.EINSUM_ORDER] for k in kernels]
    assert [o["step"] for o in orders] == [0, 1, 2] and {o["einsum"] for o in orders} == {SSD_DIAG}
    assert orders[0]["path"].count(";") == 2 and orders[0]["method"]
    model = priced(module)
    assert flops(model) == flops(model, "groups") == info.opt_cost == 21_609_054_208
    assert info.naive_cost == 549_755_813_888  # what one loop nest over the seven indices would price: 25×


def test_three_operand_chain_matches_opt_einsum_and_the_written_result() -> None:
    equation, shapes = "ij,jk,kl->il", [(64, 2), (2, 64), (64, 48)]
    _, info = opt_einsum.contract_path(equation, *shapes, shapes=True, optimize="optimal")
    module = translate(equation, shapes)
    lifted = PassManager(registry.parse_pipeline("lift-einsum")).run(
        module, PassContext(DiagnosticEngine(), report=lambda _: None))
    einsums = [op for op in lifted.walk() if isinstance(op, EinsumOp)]
    assert [e.spec.count(",") for e in einsums] == [1, 1]
    # (A·B)·C costs 2·64·2·64 + 2·64·64·48; A·(B·C) costs 2·2·64·48 + 2·64·2·48: opt_einsum's choice
    assert flops(CostModel(lifted)) == info.opt_cost == 2 * 2 * 64 * 48 + 2 * 64 * 2 * 48


def test_two_operand_einsum_stays_one_kernel() -> None:
    module = translate("bij,bjk->bik", [(2, 8, 4), (2, 4, 8)])
    kernels = [op for op in module.walk() if isinstance(op, KernelOp)]
    assert len(kernels) == 1 and attr_names.EINSUM_ORDER not in kernels[0].attrs
