"""Views declare their index map (solar.ir.index_map): tiling, chain following (--reorder-einsum) and the
nvsolar exporter read the declaration, not the op's class. A view op added here, `solar.swap` (a
transpose declared as a permutation), is seen through by all three; the maps themselves are checked on
their own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import yaml
from test_reorder_einsum import flops, run_pipeline

from solar.backends.export_nvsolar import emit_nvsolar
from solar.backends.tiling_problem import Unfusable
from solar.backends.tiling_views import resolve
from solar.ir.analysis.einsum_chains import relabel_map
from solar.ir.expr import Expr, IndexRef, format_expr
from solar.ir.index_map import Broadcast, Flip, IndexMap, NotAffine, Permutation, Regroup, Window, WindowDim
from solar.ir.ops import OP_CLASSES, GenericOp
from solar.ir.parser import parse_module
from solar.ir.types import TensorType
from solar.ir.verifier import Verifier


@pytest.fixture
def swap_op() -> Iterator[type[GenericOp]]:
    saved = dict(OP_CLASSES)

    class SwapOp(GenericOp):
        """`solar.swap %x`: a matrix transposed, as a view."""

        opname = "solar.swap"
        is_view = True
        forwards_values = True
        __slots__ = ()

        def infer(self, v: Verifier, args: list[TensorType], declared: TensorType | None) -> TensorType | None:
            return TensorType(tuple(reversed(args[0].shape)), args[0].dtype)

        def index_map(self, values: dict[str, int]) -> IndexMap:
            return Permutation((1, 0))

    yield SwapOp
    OP_CLASSES.clear()
    OP_CLASSES.update(saved)


CHAIN = """solar.module @m {
  solar.func @main(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>, %c: tensor<64x4xf32>) -> tensor<64x4xf32> {
    %ab = solar.einsum @ab "ij,jk->ik" (%a as A, %b as B) -> (Y: tensor<64x64xf32>) {
      Y += A * B
    }
    %t = solar.swap %ab : tensor<64x64xf32>
    %y = solar.einsum @y "ki,kl->il" (%t as T, %c as C) -> (Y: tensor<64x4xf32>) {
      Y += T * C
    }
    solar.return %y
  }
}
"""


def _refs(*names: str) -> tuple[Expr, ...]:
    return tuple(IndexRef(n) for n in names)


def test_tiling_reads_through_a_new_view(swap_op: type[GenericOp]) -> None:
    module = parse_module(CHAIN)
    t = module.funcs[0].body[1].result
    read = resolve(t, _refs("k", "i"), {})
    assert read is not None
    root, entries = read
    assert root is module.funcs[0].body[0].result  # %ab, read as ab[i, k]
    assert [format_expr(e) for e in entries] == ["%i", "%k"]


def test_a_chain_is_followed_and_reordered_through_a_new_view(swap_op: type[GenericOp]) -> None:
    module = parse_module(CHAIN)
    assert isinstance(relabel_map(module.funcs[0].body[1]), Permutation)
    after, _ = run_pipeline(module, "reorder-einsum")
    # (A·B)·C costs 2·64³ + 2·64²·4 FLOPs; A·(B·C) 2·(2·64²·4): the chain went through the swap.
    assert flops(module) == 2 * 64**3 + 2 * 64 * 64 * 4
    assert flops(after) == 2 * 2 * 64 * 64 * 4
    assert not any(op.opname == "solar.swap" for op in after.walk())


def test_the_exporter_writes_a_new_permutation_as_a_permute_layer(swap_op: type[GenericOp]) -> None:
    graph = yaml.safe_load(emit_nvsolar(parse_module(CHAIN)))
    layers = graph["layers"] if isinstance(graph, dict) and "layers" in graph else graph
    swaps = [layer for layer in _all_layers(layers) if layer.get("type") == "permute"]
    assert len(swaps) == 1 and swaps[0]["einsum_equation"] == "AB->BA"


def _all_layers(node: object) -> list[dict]:
    if isinstance(node, dict):
        found = [node] if "einsum_equation" in node else []
        return found + [x for v in node.values() for x in _all_layers(v)]
    if isinstance(node, list):
        return [x for v in node for x in _all_layers(v)]
    return []


def test_each_map_gives_the_operand_subscripts() -> None:
    i, j, k = _refs("i", "j", "k")

    def text(m: IndexMap, entries: tuple[Expr, ...], shape: tuple[int, ...], source: tuple[int, ...]) -> list[str]:
        return [format_expr(e) for e in m.source_entries(entries, shape, source)]

    assert text(Permutation((2, 0, 1)), (i, j, k), (4, 2, 3), (2, 3, 4)) == ["%j", "%k", "%i"]
    assert text(Broadcast((1,)), (i, j), (5, 3), (3,)) == ["%j"]
    assert text(Broadcast((1,)), (i, j), (5, 3), (1,)) == ["0"]
    assert text(Window((WindowDim(index=2), WindowDim(start=1, step=2))), (i,), (3,), (4, 8)) == ["2", "2 * %i + 1"]
    assert text(Regroup(), (i, j), (2, 3), (6,)) == ["3 * %i + %j"]
    assert text(Flip((1,)), (i, j), (4, 5), (4, 5)) == ["%i", "4 - %j"]
    with pytest.raises(NotAffine):
        Regroup().source_entries([i], (6,), (2, 3))  # a merge has no affine inverse


def test_a_merge_is_not_tiled() -> None:
    module = parse_module("""solar.module @m {
  solar.func @main(%x: tensor<2x3xf32>) -> tensor<6xf32> {
    %r = solar.reshape %x : tensor<6xf32>
    solar.return %r
  }
}
""")
    with pytest.raises(Unfusable, match="merges dimensions"):
        resolve(module.funcs[0].body[0].result, _refs("i"), {})
