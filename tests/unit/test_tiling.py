"""The tiling search (docs/tiling.md): the MILP against brute force over the same mapping space, the matmul
I/O bounds, compulsory traffic when everything fits, the traffic model's halos, and monotone curves."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solar.backends.tiling import Space
from solar.backends.tiling_ir import CURVE_BUFFERS, curve, resolve_buffer
from solar.backends.tiling_problem import AccessDim as Window
from solar.backends.tiling_problem import EinsumDesc, Unfusable, build_problem, candidates, einsum_problem
from solar.backends.tiling_problem import TilingProblem as Problem

F = 4  # f32


DESCS: dict[str, list[EinsumDesc]] = {}  # each case's einsums (the schedule check replays them)


def one(name: str, spec: str, shapes: list[tuple[int, ...]], where: str | None = None,
        itemsize: int = F) -> tuple[str, Callable[[], Problem]]:
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    DESCS[name] = [EinsumDesc(name, spec, tuple((letters[k], letters[k], tuple(s), itemsize)
                                                for k, s in enumerate(shapes[:-1])),
                              ("Out", "Out", tuple(shapes[-1]), itemsize), where)]
    return name, lambda: einsum_problem(spec, shapes, itemsize, where, name)


def chain(name: str, descs: list[EinsumDesc]) -> tuple[str, Callable[[], Problem]]:
    DESCS[name] = descs
    return name, lambda: build_problem(name, descs)


def d(name: str, spec: str, inputs: list[tuple[str, tuple[int, ...]]], output: tuple[str, tuple[int, ...]],
      where: str | None = None) -> EinsumDesc:
    """An einsum of a chain; tensors are matched by name (their binding label is the upper-cased name)."""
    return EinsumDesc(name, spec, tuple((t, t.upper(), s, F) for t, s in inputs),
                      (output[0], output[0].upper(), output[1], F), where)


# Small enough for brute force, big enough that tiling, loop order and residency all matter.
CASES = [
    one("matmul-8x12x6", "ik,kj->ij", [(8, 12), (12, 6), (8, 6)]),
    one("matmul-16x4x8", "ik,kj->ij", [(16, 4), (4, 8), (16, 8)]),
    one("matmul-6x10x15", "ik,kj->ij", [(6, 10), (10, 15), (6, 15)]),
    one("matmul-nt-bf16", "ik,jk->ij", [(12, 8), (16, 8), (12, 16)], itemsize=2),
    one("bmm", "bik,bkj->bij", [(3, 8, 4), (3, 4, 6), (3, 8, 6)]),
    one("matvec", "ik,k->i", [(16, 12), (12,), (16,)]),
    one("outer", "i,j->ij", [(12,), (10,), (12, 10)]),
    one("transpose", "ij->ji", [(8, 12), (12, 8)]),
    one("rowsum", "ij->i", [(16, 12), (16,)]),
    one("add", "ij,ij->ij", [(8, 8), (8, 8), (8, 8)]),
    one("bias-add", "ij,j->ij", [(16, 8), (8,), (16, 8)]),
    one("conv1d", "c(p+r),kcr->kp", [(4, 12), (6, 4, 3), (6, 10)]),
    one("conv1d-stride2", "c(2p+r),kcr->kp", [(4, 13), (6, 4, 3), (6, 6)]),
    one("conv1d-dilated-padded", "c(p+2r-2),kcr->kp", [(3, 10), (4, 3, 3), (4, 10)], where="p+2r-2>=0,p+2r-2<10"),
    one("conv2d", "nc(p+r)(q+s),kcrs->nkpq", [(1, 2, 4, 4), (2, 2, 2, 2), (1, 2, 3, 3)]),
    one("conv2d-stride2-padded", "nc(2p+r-1)(2q+s-1),kcrs->nkpq", [(1, 2, 4, 4), (2, 2, 3, 3), (1, 2, 2, 2)],
        where="2p+r-1>=0,2p+r-1<4,2q+s-1>=0,2q+s-1<4"),
    one("maxpool", "(2p+r)->p", [(12,), (6,)], where="r<2"),
    one("causal-scores", "id,jd->ij", [(8, 4), (8, 4), (8, 8)], where="j<=i"),
    one("causal-pv", "ij,jd->id", [(8, 8), (8, 6), (8, 6)], where="j<=i"),
    one("ttm", "ijk,kl->ijl", [(4, 6, 8), (8, 4), (4, 6, 4)]),
    chain("matmul-matmul", [d("mm1", "ik,kj->ij", [("a", (8, 6)), ("b", (6, 12))], ("c", (8, 12))),
                            d("mm2", "ij,jl->il", [("c", (8, 12)), ("dd", (12, 4))], ("e", (8, 4)))]),
    chain("matmul-relu", [d("mm", "ik,kj->ij", [("a", (8, 6)), ("b", (6, 12))], ("c", (8, 12))),
                          d("relu", "ij->ij", [("c", (8, 12))], ("y", (8, 12)))]),
    chain("matmul-bias-relu", [d("mm", "ik,kj->ij", [("a", (8, 4)), ("b", (4, 6))], ("c", (8, 6))),
                               d("bias", "ij,j->ij", [("c", (8, 6)), ("bb", (6,))], ("dd", (8, 6))),
                               d("relu", "ij->ij", [("dd", (8, 6))], ("y", (8, 6)))]),
    chain("elementwise", [d("mul", "ij,ij->ij", [("x", (8, 12)), ("w", (8, 12))], ("t", (8, 12))),
                          d("exp", "ij->ij", [("t", (8, 12))], ("u", (8, 12))),
                          d("add", "ij,ij->ij", [("u", (8, 12)), ("x", (8, 12))], ("y", (8, 12)))]),
    chain("softmax", [d("max", "ij->i", [("x", (8, 12))], ("m", (8,))),
                      d("sum", "ij,i->i", [("x", (8, 12)), ("m", (8,))], ("s", (8,))),
                      d("norm", "ij,i,i->ij", [("x", (8, 12)), ("m", (8,)), ("s", (8,))], ("y", (8, 12)))]),
    chain("attention", [d("qk", "hid,hjd->hij", [("q", (2, 8, 4)), ("k", (2, 8, 4))], ("s", (2, 8, 8)), "j<=i"),
                        d("mx", "hij->hi", [("s", (2, 8, 8))], ("m", (2, 8)), "j<=i"),
                        d("ex", "hij,hi->hij", [("s", (2, 8, 8)), ("m", (2, 8))], ("e", (2, 8, 8)), "j<=i"),
                        d("pv", "hij,hjd->hid", [("e", (2, 8, 8)), ("v", (2, 8, 4))], ("o", (2, 8, 4)), "j<=i")]),
    chain("conv-bias-relu", [d("conv", "c(p+r),kcr->kp", [("x", (3, 10)), ("w", (4, 3, 3))], ("y", (4, 8))),
                             d("bias", "kp,k->kp", [("y", (4, 8)), ("b", (4,))], ("z", (4, 8))),
                             d("relu", "kp->kp", [("z", (4, 8))], ("o", (4, 8)))]),
    chain("layernorm-like", [d("sum", "ij->i", [("x", (8, 6))], ("s", (8,))),
                             d("mean", "i->i", [("s", (8,))], ("m", (8,))),
                             d("center", "ij,i->ij", [("x", (8, 6)), ("m", (8,))], ("y", (8, 6)))]),
    chain("mlp", [d("fc1", "ik,jk->ij", [("x", (4, 6)), ("w1", (8, 6))], ("h", (4, 8))),
                  d("fc2", "ij,lj->il", [("h", (4, 8)), ("w2", (4, 8))], ("y", (4, 4)))]),
    chain("gelu-matmul", [d("act", "ik->ik", [("x", (8, 6))], ("a", (8, 6))),
                          d("mm", "ik,kj->ij", [("a", (8, 6)), ("w", (6, 8))], ("y", (8, 8)))]),
    # DAG-shaped groups (docs/tiling.md, "Chains"): an input read by several einsums through different
    # subscripts (one DRAM read), a reduction used again at full rank, epilogues after a convolution.
    chain("conv-relu-residual", [
        d("conv", "c(p+r-1),kcr->kp", [("x", (4, 8)), ("w", (4, 4, 3))], ("y", (4, 8)), "p+r-1>=0,p+r-1<8"),
        d("relu", "kp->kp", [("y", (4, 8))], ("z", (4, 8))),
        d("res", "kp,kp->kp", [("z", (4, 8)), ("x", (4, 8))], ("o", (4, 8)))]),
    chain("matmul-residual", [d("mm", "ik,kj->ij", [("x", (8, 8)), ("w", (8, 8))], ("c", (8, 8))),
                              d("res", "ij,ij->ij", [("c", (8, 8)), ("x", (8, 8))], ("y", (8, 8)))]),
    chain("rmsnorm", [d("sq", "ij->ij", [("x", (8, 6))], ("t", (8, 6))),
                      d("ss", "ij->i", [("t", (8, 6))], ("s", (8,))),
                      d("rs", "i->i", [("s", (8,))], ("r", (8,))),
                      d("scale", "ij,i->ij", [("x", (8, 6)), ("r", (8,))], ("y", (8, 6)))]),
    chain("groupnorm-like", [d("sum", "gcp->g", [("x", (2, 3, 4))], ("s", (2,))),
                             d("center", "gcp,g->gcp", [("x", (2, 3, 4)), ("s", (2,))], ("t", (2, 3, 4))),
                             d("var", "gcp->g", [("t", (2, 3, 4))], ("v", (2,))),
                             d("norm", "gcp,g,c->gcp", [("t", (2, 3, 4)), ("v", (2,)), ("gamma", (3,))],
                               ("y", (2, 3, 4)))]),
    chain("two-windows", [EinsumDesc("diff", "i,(i+1)->i", (("x", "A", (13,), F), ("x", "B", (13,), F)),
                                     ("y", "Y", (12,), F))]),
]


def test_at_least_thirty_cases() -> None:
    assert len(CASES) >= 30


@pytest.mark.parametrize(("name", "make"), CASES, ids=[n for n, _ in CASES])
def test_milp_equals_brute_force(name: str, make: Callable[[], Problem]) -> None:
    space = Space(make())
    for fraction in (0.04, 0.2, 0.6):
        capacity = max(16, int(space.compulsory * fraction))
        exhaustive = space.brute_force(capacity)
        found = space.solve(capacity)
        if exhaustive is None:
            assert found is None, (name, capacity)
            continue
        assert found is not None, (name, capacity)
        assert found.peak <= capacity
        assert math.isclose(found.traffic, exhaustive.traffic, rel_tol=1e-6), (
            name, capacity, found.tiles, found.tiled, exhaustive.tiles, exhaustive.tiled)
        # The mapping it reports is consistent: evaluating it again gives the same traffic.
        again = space.evaluate(found.tiles, found.tiled, capacity)
        assert again is not None and math.isclose(again.traffic, found.traffic)


@settings(max_examples=8, deadline=None)
@given(m=st.sampled_from([4, 6, 8, 12]), k=st.sampled_from([3, 4, 8, 10]), n=st.sampled_from([4, 5, 8, 16]),
       fraction=st.sampled_from([0.05, 0.15, 0.4]))
def test_milp_equals_brute_force_on_random_matmuls(m: int, k: int, n: int, fraction: float) -> None:
    space = Space(einsum_problem("ik,kj->ij", [(m, k), (k, n), (m, n)]))
    capacity = max(16, int(space.compulsory * fraction))
    exhaustive, found = space.brute_force(capacity), space.solve(capacity)
    assert (exhaustive is None) == (found is None)
    if found is not None and exhaustive is not None:
        assert math.isclose(found.traffic, exhaustive.traffic, rel_tol=1e-6)


@pytest.mark.parametrize(("name", "make"), CASES, ids=[n for n, _ in CASES])
def test_everything_fits_gives_the_compulsory_traffic(name: str, make: Callable[[], Problem]) -> None:
    space = Space(make())
    m = space.solve(1 << 40)
    assert m is not None and m.traffic == space.compulsory, name


# ---- matmul: the I/O lower bound and how close the search gets to it --------------------------------------

SIZES = [(256, 256, 256), (512, 1024, 256), (1024, 1024, 1024), (384, 768, 1536), (100, 300, 200), (96, 4096, 96),
         (2048, 512, 4096)]
BUFFERS = [256, 1024, 4096, 16384, 65536, 262144, 1 << 20]  # elements


@pytest.mark.parametrize(("m", "k", "n"), SIZES)
def test_matmul_traffic_against_the_io_bounds(m: int, k: int, n: int) -> None:
    """For M×K·K×N and a buffer of S elements: never below the compulsory traffic MK+KN+MN nor below the
    I/O lower bound 2MNK/√S − 2S (Smith, Lowery, Langou, van de Geijn), and within 1.5× of
    max(MK+KN+MN, 2MNK/√S)."""
    space = Space(einsum_problem("ik,kj->ij", [(m, k), (k, n), (m, n)]))
    compulsory = m * k + k * n + m * n
    for s in BUFFERS:
        found = space.solve(s * F)
        assert found is not None
        q = found.traffic / F
        assert q >= compulsory
        assert q >= 2 * m * n * k / math.sqrt(s) - 2 * s
        assert q <= 1.5 * max(compulsory, 2 * m * n * k / math.sqrt(s)) * (1 + 1e-12), (m, k, n, s, found.tiles)
        if s >= compulsory:
            assert q == compulsory


# ---- the traffic model ------------------------------------------------------------------------------------


def test_window_extent_is_the_conv_halo() -> None:
    """A tile of p with a tile of r reads (tp−1)·stride + (tr−1)·dilation + 1 rows."""
    extents = {"p": 100, "r": 5}
    strided = Window((("p", 2), ("r", 1)), size=1000, full=0)  # stride 2, dilation 1
    for tp, tr in ((4, 2), (7, 3), (10, 5)):
        assert strided.extent({"p": tp, "r": tr}, extents) == (tp - 1) * 2 + (tr - 1) * 1 + 1
    # Stride equal to the dilation: the gcd divides the span (every other row).
    same = Window((("p", 2), ("r", 2)), size=1000, full=0)
    assert same.extent({"p": 4, "r": 3}, extents) == 4 + 3 - 1
    # A stride larger than the window leaves holes: at most the product of the ranges.
    assert strided.extent({"p": 6, "r": 1}, extents) == 6
    # Clipped to the dimension; over whole ranges the exact count (from ISL) is used instead.
    assert Window((("p", 1), ("r", 1)), size=8, full=0).extent({"p": 50, "r": 5}, extents) == 8
    assert Window((("p", 1), ("r", 1)), size=200, full=77).extent(extents, extents) == 77


def test_partial_tiles_are_charged_exactly() -> None:
    """Tiling a dimension the operand depends on moves no extra data, also with a partial last tile; a loop
    it does not depend on reloads it once per tile."""
    space = Space(einsum_problem("ik,kj->ij", [(10, 6), (6, 7), (10, 7)]))
    tiles = {"i": 4, "k": 6, "j": 3}  # 3 tiles of i (4, 4, 2), 3 of j (3, 3, 1)
    a = next(u for u in space.uses if u.label == "A")
    traffic, buffer = space.use_cost(a, tiles, frozenset({"i", "j"}))
    assert traffic == 10 * 6 * 3 * F  # A (10×6) once per j tile
    assert buffer == 4 * 6 * F
    out = next(u for u in space.uses if u.label == "Out")
    traffic, _ = space.use_cost(out, {"i": 10, "k": 2, "j": 7}, frozenset({"k"}))
    assert traffic == 10 * 7 * (2 * 3 - 1) * F  # partial sums: written 3 times, read back twice


def test_conv_halo_traffic_and_compulsory() -> None:
    """conv1d x[c, 2p+r-1] with padding: the compulsory footprint excludes the padding; a tile of p holds
    its halo rows, but walking the tiles in order keeps the overlap (a sliding window), so the traffic
    counts each row once per reload, never once per tile (docs/tiling.md, "A use's traffic")."""
    space = Space(einsum_problem("c(2p+r-1),kcr->kp", [(2, 16), (3, 2, 3), (3, 8)], where="2p+r-1>=0,2p+r-1<16"))
    x = next(u for u in space.uses if u.label == "A")
    assert x.exact == 2 * 16  # rows -1 and 16 are padding
    tiled, slab = space.use_cost(x, {"c": 2, "p": 4, "r": 3, "k": 3}, frozenset({"p"}))
    # The slab of a tile of 4 outputs spans 2·3 + 2 + 1 = 9 rows; over both tiles the 16 rows move once.
    assert slab == 2 * 9 * F and tiled == 2 * 16 * F
    # A loop the input does not depend on (k) outside p reloads every row once per tile of k.
    reloaded, _ = space.use_cost(x, {"c": 2, "p": 4, "r": 3, "k": 1}, frozenset({"p", "k"}))
    assert reloaded == 3 * 2 * 16 * F


def test_batch_and_forced_indices() -> None:
    """The head index of attention is a batch index (tiled by 1 for everyone); the key index is forced to
    one tile because the row max reduces it before the exponent reads it."""
    problem = dict(CASES)["attention"]()
    space = Space(problem)
    assert space.batch == {"h"} and space.cands["h"] == (1,)
    assert space.forced == {"j"} and space.cands["j"] == (8,)
    assert {s.tensor for s in space.slabs} == {"s", "m", "e"}


def test_candidates() -> None:
    assert candidates(12) == (1, 2, 3, 4, 6, 8, 12)
    assert candidates(1024)[:6] == (1, 2, 3, 4, 6, 8) and candidates(1024)[-1] == 1024
    assert len(candidates(720720)) <= 48


def test_unfusable_chain_is_reported() -> None:
    descs = [d("conv", "c(p+r),kcr->kp", [("x", (3, 10)), ("w", (4, 3, 3))], ("y", (4, 8))),
             d("conv2", "k(p+r),lkr->lp", [("y", (4, 8)), ("w2", (2, 4, 3))], ("z", (2, 6)))]
    with pytest.raises(Unfusable, match="window"):
        build_problem("convconv", descs)


def test_curve_is_monotone_and_ends_at_the_compulsory_traffic() -> None:
    space = Space(einsum_problem("ik,kj->ij", [(512, 256), (256, 384), (512, 384)]))
    points = curve(lambda c: (lambda m: None if m is None else m.traffic)(space.solve(c)))
    assert len(points) == len(CURVE_BUFFERS) == 20
    assert CURVE_BUFFERS[0] == 64 * 1024 and CURVE_BUFFERS[-1] == 256 * 1024 * 1024
    values = [p for p in points if p is not None]
    assert all(a >= b for a, b in itertools.pairwise(values))
    assert values[-1] == space.compulsory and values[0] > space.compulsory


def test_resolve_buffer() -> None:
    from solar.targets.loader import load_target

    h100 = load_target("h100")
    assert resolve_buffer("l2", h100) == h100.l2_bytes
    assert resolve_buffer("smem", h100) == h100.smem_per_sm * h100.sm_count
    assert resolve_buffer("4MiB", h100) == 4 * 1024 * 1024
    assert resolve_buffer("1.5MB", h100) == 1.5e6
    assert resolve_buffer("65536", h100) == 65536
    with pytest.raises(ValueError, match="bad buffer"):
        resolve_buffer("lots", h100)


def test_a_norms_last_step_reaches_the_compulsory_traffic_without_a_milp() -> None:
    """`Space.seeds`: the layer norm's normalize step (8x4096x512 f32; mean and rstd per row, weight and
    bias per column) streams at the compulsory traffic, found among the seeds: no formulation is built."""
    problem = einsum_problem("ijk,ij,ij,k,k->ijk", [(8, 4096, 512), (8, 4096), (8, 4096), (512,), (512,),
                                                     (8, 4096, 512)], itemsize=4, name="normalize")
    space = Space(problem)
    m = space.solve(50 << 20)
    assert m is not None and m.traffic == space.compulsory and m.peak <= 50 << 20
    assert space._forms == {}
    # A matmul whose operands do not fit still needs the MILP, and the seeds change nothing it finds.
    mm = Space(einsum_problem("ik,kj->ij", [(48, 32), (32, 64), (48, 64)], itemsize=4, name="mm"))
    found = mm.solve(2048)
    assert mm._forms and found is not None and found.traffic > mm.compulsory
    assert found.traffic == Space(mm.problem).brute_force(2048).traffic


def test_candidates_of_huge_extents_come_from_factoring() -> None:
    """Issue 28: the divisors of an extent near 2^63 are found by factoring, not a search up to sqrt(n) (which
    did not finish; benchmarks time the search, tests check its results)."""
    assert candidates(1 << 62) == tuple(sorted({1 << k for k in range(63)} | {3 << k for k in range(61)}))
    prime = (1 << 61) - 1
    assert candidates(prime) == tuple(sorted({1 << k for k in range(61)} | {3 << k for k in range(60)} | {prime}))
    assert candidates(((1 << 31) - 1) ** 2, fine=False)[-2:] == ((1 << 61), ((1 << 31) - 1) ** 2)
