"""--reorder-einsum (docs/reorder.md): reordering changes results only by floating-point reassociation, never
adds FLOPs under objective=flops, and refuses the links its rules forbid.

Exactness runs the original and the reordered IR through the Numba backend on the same seeded inputs, on
every example chain (examples/reorder/, the MLA block at reduced sizes) and on generated chains.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_sol_support import run_passes

from solar.backends.executor import prepare
from solar.backends.inputs import random_inputs
from solar.ir import DiagnosticEngine, EinsumOp, ModuleOp, load, parse_module, verify
from solar.ir.analysis.counts import einsum_counts
from solar.ir.analysis.einsum_chains import NotLinear, linear_einsum, reshape_groups
from solar.ir.pass_manager import PassContext, PassManager
from solar.ir.printer import print_module
from solar.passes import registry
from solar.passes.reorder_einsum import ReorderEinsum, ReorderResult

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO_ROOT / "examples" / "reorder").glob("*.sir"))
# The MLA block is translated at full size; validate small (its weights stay full size, 2048 wide).
PARAMS = {"mla_attention": {"DIM1": 2, "DIM2": 8}}


def run_pipeline(module: ModuleOp, pipeline: str) -> tuple[ModuleOp, PassContext]:
    work = copy.deepcopy(module)
    engine = DiagnosticEngine()
    ctx = PassContext(engine, report=lambda _: None)
    work = PassManager(registry.parse_pipeline(pipeline)).run(work, ctx)
    assert verify(work, engine), engine.format_all()
    return work, ctx


def flops(module: ModuleOp) -> int:
    params = [p.name for p in module.params]
    values = module.param_values()
    return sum(einsum_counts(op, params, values).flops for op in module.walk() if isinstance(op, EinsumOp))


def assert_same_results(before: ModuleOp, after: ModuleOp, params: dict[str, int], seed: int = 0) -> None:
    for func in before.funcs:
        run_before, run_after = prepare(before, params, func.name), prepare(after, params, func.name)
        inputs = random_inputs(run_before, seed=seed)
        for want, got in zip(run_before(inputs), run_after(inputs), strict=True):
            want64 = np.asarray(want, dtype=np.float64)
            scale = max(1.0, float(np.abs(want64).max()))
            np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want64, rtol=1e-4, atol=1e-5 * scale)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_chain_runs_the_same_reordered(path: Path) -> None:
    params = PARAMS.get(path.stem, {})
    module = load(str(path))
    pre = "bind-params{" + " ".join(f"{k}={v}" for k, v in params.items()) + "},lift-einsum" if params else ""
    if pre:
        module, _ = run_pipeline(module, pre)
    reordered, ctx = run_pipeline(module, "reorder-einsum")
    result = ctx.results.get(ReorderResult)
    if path.stem == "best_order":
        assert result is None and print_module(reordered) == print_module(module)
        return
    assert result is not None and any(c.rewritten for c in result.chains)
    assert flops(reordered) < flops(module)
    assert any("reorder" in op.attrs for op in reordered.walk())
    assert_same_results(module, reordered, {})


def test_remark_figures_are_the_counts_of_the_rewritten_ir() -> None:
    module = load(str(REPO_ROOT / "examples" / "reorder" / "low_rank_scores.sir"))
    reordered, ctx = run_pipeline(module, "reorder-einsum")
    (chain,) = ctx.results[ReorderResult].chains
    assert chain.before.flops == flops(module) == 11_538_432
    assert chain.after.flops == flops(reordered) == 593_920
    assert chain.method == "optimal (exhaustive)"


MATMULS = """
solar.func @f(%a: tensor<{m}x{k}xf32>, %b: tensor<{k}x{n}xf32>, %c: tensor<{n}x{p}xf32>) -> tensor<{m}x{p}xf32> {{
  %t = solar.einsum @ab "ij,jk->ik" (%a as A, %b as B) -> (T: tensor<{m}x{n}x{dt}>) {{
    T += {lhs}
  }}
  %y = solar.einsum @tc "ik,kl->il" (%t as T, %c as C) -> (Y: tensor<{m}x{p}xf32>) {{
    Y += T * C
  }}
  solar.return %y
}}
"""


@pytest.mark.parametrize(("lhs", "why"), [
    ("exp(A) * B", "@ab applies exp (not linear)"),
    ("A * B + 1.0", "a sum of terms rather than one product"),
    ("A * B * B", "@ab reads an operand twice (not linear)"),
])
def test_links_that_are_not_linear_are_refused(lhs: str, why: str) -> None:
    text = MATMULS.format(m=64, k=64, n=64, p=2, lhs=lhs, dt="f32")
    _, ctx = run_passes(text, [ReorderEinsum()])
    assert ReorderResult not in ctx.results
    messages = [d.message for d in ctx.diagnostics.diagnostics]
    assert any("the chain through @tc stops at %t" in m and why in m for m in messages), messages


def test_non_sum_reductions_windows_and_masks_are_not_tensor_networks() -> None:
    text = """
    solar.func @f(%x: tensor<1x3x10xf32>, %w: tensor<8x3x3xf32>, %q: tensor<16x8xf32>, %k: tensor<16x8xf32>)
        -> (tensor<1x8x8xf32>, tensor<16x16xf32>, tensor<16x16xf32>) {
      %y = solar.einsum @conv "nc(p+r),kcr->nkp" (%x as X, %w as W) -> (Y: tensor<1x8x8xf32>) {
        Y += X * W
      }
      %s = solar.einsum @masked "id,jd->ij" where "j<=i" (%q as Q, %k as K) -> (S: tensor<16x16xf32>) {
        S += Q * K
      }
      %m = solar.einsum @maxplus "id,jd->ij" (%q as Q, %k as K) -> (S: tensor<16x16xf32>) {
        S max= Q * K
      }
      solar.return %y, %s, %m
    }
    """
    module = parse_module(text, "t.sir", DiagnosticEngine())
    ops = {op.symbol: op for op in module.walk() if isinstance(op, EinsumOp)}
    for name, why in (("conv", "affine window"), ("masked", "restricts its iteration space"),
                      ("maxplus", "reduces with max, not a sum")):
        with pytest.raises(NotLinear, match=why):
            linear_einsum(ops[name], {})


def test_reshape_groups_accept_only_splits_and_merges() -> None:
    assert reshape_groups((2, 3, 4), (6, 4)) == [([0, 1], [0]), ([2], [1])]
    assert reshape_groups((6, 4), (2, 3, 4)) == [([0], [0, 1]), ([1], [2])]
    assert reshape_groups((1, 8, 1), (8,)) == [([1], [0])]
    assert reshape_groups((6, 4), (4, 6)) is None  # mixes dimensions
    assert reshape_groups((2, 3, 4), (3, 8)) is None


def test_objective_sol_needs_a_target_and_uses_it() -> None:
    text = (REPO_ROOT / "examples" / "reorder" / "matrix_chain.sir").read_text()
    engine = DiagnosticEngine()
    module = parse_module(text, "m.sir", engine)
    ReorderEinsum(objective="sol").apply(PassContext(engine, report=lambda _: None), module)
    assert engine.has_errors and "needs a target" in engine.diagnostics[0].message
    _, ctx = run_passes(text, [ReorderEinsum(objective="sol", target="h100")])
    chain = ctx.results[ReorderResult].chains[0]
    assert 0 < chain.after.seconds < chain.before.seconds


# ---- generated chains ----------------------------------------------------------------------------------------


@st.composite
def chains(draw: st.DrawFn) -> tuple[str, list[int]]:
    """A chain of 3 to 5 matrices with random sizes in a random association, some intermediates read through a
    transpose (a relabeling); returns the module text and the matrices' dims."""
    n = draw(st.integers(3, 5))
    dims = draw(st.lists(st.integers(1, 9), min_size=n + 1, max_size=n + 1))
    args = [f"%m{i}: tensor<{dims[i]}x{dims[i + 1]}xf32>" for i in range(n)]
    lines: list[str] = []
    counter = [0]

    def build(lo: int, hi: int) -> tuple[str, int, int]:
        """Emits the product of matrices lo..hi-1; returns its value and its row and column dims."""
        if hi - lo == 1:
            return f"%m{lo}", dims[lo], dims[lo + 1]
        cut = draw(st.integers(lo + 1, hi - 1))
        (a, r, _), (b, _, c) = build(lo, cut), build(cut, hi)
        k = counter[0]
        counter[0] += 1
        if draw(st.booleans()):  # read the right factor through a transpose
            lines.append(f"%t{k} = solar.permute {b} {{perm = [1, 0]}} : tensor<{c}x{dims[cut]}xf32>")
            lines.append(f'%p{k} = solar.einsum @e{k} "ij,kj->ik" ({a} as A, %t{k} as B) -> (P: tensor<{r}x{c}xf32>) '
                         "{\n  P += A * B\n}")
        else:
            lines.append(f'%p{k} = solar.einsum @e{k} "ij,jk->ik" ({a} as A, {b} as B) -> (P: tensor<{r}x{c}xf32>) '
                         "{\n  P += A * B\n}")
        return f"%p{k}", r, c

    top, r, c = build(0, n)
    body = "\n".join(lines)
    return (f"solar.func @chain({', '.join(args)}) -> tensor<{r}x{c}xf32> {{\n{body}\nsolar.return {top}\n}}\n", dims)


def best_chain_flops(dims: list[int]) -> int:
    """The classic matrix-chain dynamic programme, under SOLAR's counts (2 FLOPs per multiply-add; a product
    over a dimension of 1 is an outer product, one multiply per element): an independent optimum over the
    contiguous associations, which the tensor-network search (over all pairings) must match or beat."""
    n = len(dims) - 1
    best = {(i, i + 1): 0 for i in range(n)}
    for length in range(2, n + 1):
        for lo in range(n - length + 1):
            hi = lo + length
            best[lo, hi] = min(best[lo, m] + best[m, hi] + dims[lo] * dims[m] * dims[hi] * (2 if dims[m] > 1 else 1)
                               for m in range(lo + 1, hi))
    return best[0, n]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chains(), st.integers(0, 3))
def test_generated_chains_keep_their_results_and_never_add_flops(case: tuple[str, list[int]], seed: int) -> None:
    text, dims = case
    module = parse_module(text, "gen.sir", DiagnosticEngine())
    reordered, _ = run_pipeline(module, "reorder-einsum")
    assert flops(reordered) <= flops(module)
    assert flops(reordered) <= best_chain_flops(dims)
    assert_same_results(module, reordered, {}, seed)


SPLIT_AND_MERGE = """
solar.func @heads(%x: tensor<8x4x16xf32>, %w: tensor<64x32xf32>, %v: tensor<32x2xf32>, %a: tensor<8x24xf32>,
                  %b: tensor<24x64xf32>, %c: tensor<4x16x3xf32>) -> (tensor<8x2xf32>, tensor<8x3xf32>) {
  %m = solar.reshape %x : tensor<8x64xf32>
  %y = solar.einsum @proj "mj,jn->mn" (%m as X, %w as W) -> (Y: tensor<8x32xf32>) {
    Y += X * W
  }
  %z = solar.einsum @out "mn,no->mo" (%y as Y, %v as V) -> (Z: tensor<8x2xf32>) {
    Z += Y * V
  }
  %t = solar.einsum @ab "ik,kj->ij" (%a as A, %b as B) -> (T: tensor<8x64xf32>) {
    T += A * B
  }
  %s = solar.reshape %t : tensor<8x4x16xf32>
  %u = solar.einsum @hc "ihd,hdn->in" (%s as S, %c as C) -> (U: tensor<8x3xf32>) {
    U += S * C
  }
  solar.return %z, %u
}
"""


def test_chains_through_merging_and_splitting_reshapes() -> None:
    """A merge (8x4x16 → 8x64) read by a contraction over the merged index, and a split (8x64 → 8x4x16) of an
    intermediate contracted over both halves: the network refines the merged index into its parts."""
    module = parse_module(SPLIT_AND_MERGE, "heads.sir", DiagnosticEngine())
    reordered, ctx = run_pipeline(module, "reorder-einsum")
    chains = {c.root: c for c in ctx.results[ReorderResult].chains}
    assert chains["out"].tensors == 3 and chains["hc"].tensors == 3
    assert any(s.count(",") == 1 for s in chains["hc"].order)
    assert flops(reordered) < flops(module)
    assert_same_results(module, reordered, {})
