"""The counting rules of docs/counts.md, one by one: operations per scalar function and operator, what is not
a FLOP, what is a tensor-core contraction, footprints and bytes, and kernels inside solar.for loops."""

from __future__ import annotations

from collections import Counter

import pytest

from solar.ir.analysis.counts import Counts, einsum_counts, expression_ops, flops_of, is_contraction, kernel_counts
from solar.ir.analysis.kernel_models import model_kernels
from solar.ir.diagnostics import DiagnosticEngine
from solar.ir.dtypes import DType
from solar.ir.expr import Access, Binary, Call, Cast, Expr, FloatLit, IndexRef, IntLit, NameRef, Unary
from solar.ir.ops import EinsumOp, KernelOp, ModuleOp
from solar.ir.parser import parse_module
from solar.ir.scalar_funcs import BINARY_FLOP_KIND, FUNCTIONS
from solar.ir.verifier import verify

X, Y = NameRef("X"), NameRef("Y")


def parse(text: str) -> ModuleOp:
    engine = DiagnosticEngine()
    module = parse_module(text, "<test>", engine)
    assert not engine.has_errors and verify(module, engine), engine.format_all()
    return module


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_each_scalar_function_is_one_op_of_its_kind(name: str) -> None:
    fn = FUNCTIONS[name]
    ops = expression_ops(Call(name, (X,) * fn.arity))
    assert ops == Counter({fn.flop_kind: 1})
    assert flops_of(ops) == 1


@pytest.mark.parametrize("op", sorted(BINARY_FLOP_KIND))
def test_each_operator_is_one_op_of_its_kind(op: str) -> None:
    ops = expression_ops(Binary(op, X, Y))
    assert ops == Counter({BINARY_FLOP_KIND[op]: 1})
    assert flops_of(ops) == (0 if op in ("and", "or") else 1)  # logic is not arithmetic


def test_select_negation_and_casts() -> None:
    assert expression_ops(Call("select", (Binary("<", X, Y), X, Y))) == Counter({"select": 1, "cmp": 1})
    assert expression_ops(Unary("-", X)) == Counter({"add": 1})
    cast = expression_ops(Cast(DType.F32, X))
    assert cast == Counter({"cast": 1}) and flops_of(cast) == 0  # counted apart, not a FLOP


def test_subscripts_are_not_operations_but_index_values_are() -> None:
    """`X[2 * %p + %r - 1]` is one read (address arithmetic is free); `%j * 2` used as a value is a mul."""
    read = Access("X", (Binary("-", Binary("+", Binary("*", IntLit(2), IndexRef("p")), IndexRef("r")), IntLit(1)),))
    assert expression_ops(Binary("*", read, FloatLit(0.5))) == Counter({"mul": 1})
    assert expression_ops(Binary("*", IndexRef("j"), IntLit(2))) == Counter({"mul": 1})


def test_contractions() -> None:
    mul = Binary("*", X, Y)
    assert is_contraction(mul, "add", True)
    assert is_contraction(Binary("*", Cast(DType.F32, X), Cast(DType.F32, Y)), "add", True)
    assert not is_contraction(mul, "add", False)  # nothing reduced: a map
    assert not is_contraction(mul, "max", True)  # not an add reduction
    assert not is_contraction(Binary("+", X, Y), "add", True)
    assert not is_contraction(Binary("*", Binary("*", X, Y), Y), "add", True)  # three factors
    assert not is_contraction(Binary("*", X, FloatLit(2.0)), "add", True)  # a scaled sum


def test_counts_add_up() -> None:
    a = Counts(10, 4, 8, 2, Counter({"mul": 4, "add": 6}), {"X": 40}, 16)
    a += Counts(5, 0, 0, 5, Counter({"exp": 5}), {"X": 8, "W": 4}, 20)
    assert (a.points, a.macs, a.flops, a.bytes_read, a.bytes_written) == (15, 4, 15, {"X": 48, "W": 4}, 36)
    assert a.as_attr()["ops"] == {"add": 6, "exp": 5, "mul": 4}


EINSUMS = """solar.func @f(%x: tensor<8x8xbf16>, %w: tensor<8x8xbf16>, %v: tensor<8xf32>)
    -> (tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>) {
  %mm = solar.einsum @mm "ik,kj->ij" (%x as X, %w as W) -> (C: tensor<8x8xf32>) {
    C += cast<f32>(X) * cast<f32>(W)
    C = max(C, 0.0)
  }
  %pad = solar.einsum @pad "(i-1)->i" (%v as V) -> (P: tensor<8xf32>) {
    P = V * 2.0
  }
  %tri = solar.einsum @tri "ij->ij" where "j<=i" (%mm as C) -> (T: tensor<8x8xf32>) {
    T = exp(C)
  }
  solar.return %mm, %pad, %tri
}"""


def test_einsum_counts_by_hand() -> None:
    mm, pad, tri = [op for op in parse(EINSUMS).funcs[0].walk() if isinstance(op, EinsumOp)]
    c = einsum_counts(mm, [], {})
    # 8·8·8 = 512 MACs on tensor cores, 2 casts a point, then the epilogue: one max per result element (64).
    assert (c.points, c.macs, c.flops_tensor, c.flops_vector) == (512, 512, 1024, 64)
    assert c.ops == Counter({"mul": 512, "add": 512, "cast": 1024, "max": 64})
    assert c.bytes_read == {"X": 8 * 8 * 2, "W": 8 * 8 * 2} and c.bytes_written == 8 * 8 * 4
    c = einsum_counts(pad, [], {})
    # V[i - 1] for i = 0 is a padding halo (reads 0): 8 points, but only V[0..6] are read (7·4 bytes).
    assert (c.points, c.flops_vector, c.bytes_read, c.bytes_written) == (8, 8, {"V": 28}, 32)
    c = einsum_counts(tri, [], {})
    # The lower triangle with its diagonal: 8·9/2 = 36 points, 36 exps; only those elements move.
    assert (c.points, c.flops_vector, c.bytes_read, c.bytes_written) == (36, 36, {"C": 144}, 144)


LOOPED = """solar.module @m [T = 6] {
  solar.func @f(%xs: tensor<Tx4xf32>, %h0: tensor<4xf32>) -> tensor<4xf32> {
    %h = solar.for %t = 0 to T iter_args(%s = %h0) -> tensor<4xf32> {
      %n = solar.kernel @prefix(%xs as X, %s as S) -> (N: tensor<4xf32>) {
        affine.for %i = 0 to 4 {
          N[%i] = S[%i]
          affine.for %u = 0 to %t + 1 {
            N[%i] += X[%u, %i]
          }
        }
      }
      solar.yield %n
    }
    solar.return %h
  }
}"""


def test_kernel_in_a_loop_is_counted_over_its_iterations() -> None:
    """At step t the kernel sums rows 0..t: Σ_{t<6} 4·(t + 1) = 4·21 = 84 adds, plus 6·4 = 24 copies; it reads
    S (16 B) and rows 0..t of X (16·(t + 1) B) each step: 6·16 + 21·16 = 432 B; writes 6·16 = 96 B."""
    module = parse(LOOPED)
    (kernel, model), = [(k, m) for k, m in model_kernels(module, all_loops=True)]
    assert isinstance(kernel, KernelOp) and not isinstance(model, Exception)
    c = kernel_counts(model, module.param_values())
    assert (c.points, c.flops_vector, sum(c.bytes_read.values()), c.bytes_written) == (108, 84, 432, 96)
    assert c.bytes_read == {"X": 21 * 16, "S": 6 * 16}


def test_kernel_counts_keep_locals_on_chip() -> None:
    module = parse("""solar.func @f(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %y = solar.kernel @mean(%x as X) -> (Y: tensor<4xf32>) {
    local s: tensor<4xf32>
    affine.for %i = 0 to 4 {
      affine.for %j = 0 to 8 {
        s[%i] += X[%i, %j]
      }
      Y[%i] = s[%i] / 8.0
    }
  }
  solar.return %y
}""")
    (_, model), = list(model_kernels(module))
    assert not isinstance(model, Exception)
    c = kernel_counts(model, {})
    assert (c.points, c.flops_vector, c.bytes_read, c.bytes_written) == (36, 36, {"X": 128}, 16)


def test_expression_ops_ignores_nothing_else() -> None:
    expr: Expr = Binary("/", Call("exp", (Binary("-", X, Y),)), Call("sqrt", (Binary("+", X, FloatLit(1e-5)),)))
    assert expression_ops(expr) == Counter({"div": 1, "exp": 1, "add": 2, "sqrt": 1})


def test_a_part_made_of_size_parameters_alone_is_a_constant() -> None:
    """`S * rsqrt(cast<f32>(D))` (attention's scale for a symbolic head size D) is one multiply per point,
    as `S * 0.125` is; a name that is not a size parameter (an einsum operand) is still work."""
    scale = Call("rsqrt", (Cast(DType.F32, NameRef("D")),))
    s = Access("S", (IndexRef("i"),))
    assert expression_ops(Binary("*", s, scale), {"D"}) == Counter({BINARY_FLOP_KIND["*"]: 1})
    assert expression_ops(Binary("*", s, FloatLit(0.125))) == Counter({BINARY_FLOP_KIND["*"]: 1})
    assert expression_ops(Binary("*", s, scale)) == Counter({BINARY_FLOP_KIND["*"]: 1, "rsqrt": 1, "cast": 1})
    assert flops_of(expression_ops(Binary("*", X, scale), {"D"})) == 1
