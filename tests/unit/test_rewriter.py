"""IR editing (solar.ir.rewriter): use lists, replacing uses, cloning, fresh names, the rewriter's insertion
point, and rewrite patterns driven to a fixed point."""

from __future__ import annotations

from solar.ir.diagnostics import DiagnosticEngine
from solar.ir.ops import FuncOp, ModuleOp, Op, ReshapeOp, ReturnOp, Value
from solar.ir.parser import parse_module
from solar.ir.printer import print_module
from solar.ir.rewriter import (
    Block,
    NameGenerator,
    RewritePattern,
    Rewriter,
    apply_patterns,
    blocks,
    replace_all_uses_with,
    uses_of,
)
from solar.ir.verifier import verify

CHAIN = """solar.module @m {
  solar.func @f(%x: tensor<8x4xf32>) -> tensor<32xf32> {
    %a = solar.reshape %x : tensor<4x8xf32>
    %b = solar.reshape %a : tensor<2x16xf32>
    %c = solar.reshape %b : tensor<32xf32>
    solar.return %c
  }
}
"""


def parse(text: str) -> tuple[ModuleOp, FuncOp]:
    module = parse_module(text)
    return module, module.funcs[0]


def test_uses_and_replace_all_uses_with() -> None:
    _, f = parse(CHAIN)
    a, b, c, ret = f.body
    assert uses_of(f.body)[a.result] == [(b, 0)]
    assert uses_of(f.body)[f.args[0]] == [(a, 0)]
    assert replace_all_uses_with(a.result, f.args[0], f.body) == 1
    assert b.operands == [f.args[0]] and not uses_of(f.body).get(a.result)
    assert isinstance(ret, ReturnOp) and ret.operands == [c.result]


def test_clone_keeps_outer_operands_and_makes_fresh_results() -> None:
    _, f = parse(CHAIN)
    a, b = f.body[0], f.body[1]
    copy = b.clone()
    assert copy is not b and copy.operands == [a.result]  # the operand, defined outside, is not copied
    assert copy.result is not b.result and copy.result.owner is copy and copy.result.name == "b"
    other = a.clone({f.args[0]: b.result})
    assert other.operands == [b.result]


def test_names_are_fresh_and_numbered() -> None:
    _, f = parse(CHAIN)
    names = NameGenerator.values_of(f)
    assert [names.fresh("a"), names.fresh("a"), names.fresh("d")] == ["a_1", "a_2", "d"]
    symbols = NameGenerator(["group0", "group2"])
    assert [symbols.numbered("group"), symbols.numbered("group"), symbols.numbered("group")] == [
        "group1", "group3", "group4"]


def test_rewriter_replaces_an_op_and_its_later_uses() -> None:
    module, f = parse(CHAIN)
    a, b = f.body[0], f.body[1]
    rewriter = Rewriter(f.body)
    merged = ReshapeOp([f.args[0]], [b.result.type], loc=b.loc)
    merged.results = [Value("b", b.result.type, merged, b.loc)]
    rewriter.replace_op(b, [merged], merged.results)
    assert f.body[1] is merged and rewriter.index == 2
    assert f.body[2].operands == [merged.result]
    rewriter.erase_op(a)  # nothing reads %a any more
    assert verify(module, DiagnosticEngine())
    assert "%a" not in print_module(module)


class FoldReshapes(RewritePattern):
    """reshape(reshape(x)) -> reshape(x); a reshape nothing reads is erased."""

    def match_and_rewrite(self, op: Op, block: Block, rewriter: Rewriter) -> bool:
        if not isinstance(op, ReshapeOp):
            return False
        if not uses_of(block.ops).get(op.result):
            rewriter.erase_op(op)
            return True
        src = op.operands[0]
        if isinstance(src.owner, ReshapeOp):
            op.set_operand(0, src.owner.operands[0])
            return True
        return False


def test_patterns_run_to_a_fixed_point() -> None:
    module, f = parse(CHAIN)
    assert apply_patterns(f, [FoldReshapes()]) == 4  # two folds of %c's source, then %a and %b erased
    assert [type(op).__name__ for op in f.body] == ["ReshapeOp", "ReturnOp"]
    assert f.body[0].operands == [f.args[0]]
    assert verify(module, DiagnosticEngine())
    assert apply_patterns(f, [FoldReshapes()]) == 0


def test_blocks_walk_nested_regions_with_their_parents() -> None:
    text = """solar.module @m {
  solar.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = solar.for %t = 0 to 3 iter_args(%a = %x) -> (tensor<4xf32>) {
      %r = solar.reshape %a : tensor<4xf32>
      solar.yield %r
    }
    solar.return %y
  }
}
"""
    _, f = parse(text)
    found = list(blocks(f))
    assert [len(b.ops) for b in found] == [2, 2]
    assert [b.in_loop for b in found] == [False, True]
