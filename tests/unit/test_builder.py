"""The builder API: it makes the IR of docs/ir.md's first example, printing exactly that text, and each
builder method makes what the parser makes from the same text (compared node by node with sirgen.module_diff,
and as printed text)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from sirgen import module_diff

from solar.ir.builder import ModuleBuilder, tensor
from solar.ir.diagnostics import DiagnosticEngine
from solar.ir.dtypes import DType
from solar.ir.expr import Binary, Call, Cast, FloatLit, IndexRef, IntLit, NameRef
from solar.ir.ops import (
    AffineFor,
    AffineIf,
    Assign,
    ConstantOp,
    EinsumOp,
    ForOp,
    GroupOp,
    IfOp,
    KernelOp,
    LocalDecl,
    ModuleOp,
    ReshapeOp,
    SliceEntry,
    Word,
)
from solar.ir.parser import parse_module
from solar.ir.printer import print_module
from solar.ir.types import TensorType
from solar.ir.verifier import verify

REPO_ROOT = Path(__file__).resolve().parents[2]
F32 = tensor("4xf32")


def _parse(text: str) -> ModuleOp:
    engine = DiagnosticEngine()
    module = parse_module(text, "expected.sir", engine)
    assert not engine.diagnostics, engine.format_all()
    return module


def _assert_same(built: ModuleOp, text: str) -> None:
    """The built module prints as `text`, verifies, and equals what the parser makes of `text`."""
    engine = DiagnosticEngine()
    verify(built, engine)
    assert not engine.diagnostics, engine.format_all()
    assert print_module(built) == text
    diff = module_diff(built, _parse(text))
    assert not diff, "\n".join(diff)


# ---- docs/ir.md's first example -------------------------------------------------------------------------


def _first_doc_block() -> str:
    text = (REPO_ROOT / "docs" / "ir.md").read_text(encoding="utf-8")
    block = re.search(r"^```sir[ \t]*\n(.*?)^```", text, re.M | re.S)
    assert block is not None
    # Comments are not part of the IR; the printer does not keep them.
    return "".join(line for line in block.group(1).splitlines(keepends=True) if not line.lstrip().startswith("//"))


def build_docs_mlp() -> ModuleOp:
    mb = ModuleBuilder("mlp")
    f = mb.func("forward", [("x", tensor("64x512xf32")), ("w", tensor("1024x512xf32"))])
    x, w = f.args
    fc = f.kernel("fc", [(x, "X"), (w, "W")], [("H", tensor("64x1024xf32"))])
    with fc.loop("i", 0, 64) as i, fc.loop("j", 0, 1024) as j, fc.loop("k", 0, 512) as k:
        fc.reduce(fc["H"][i, j], "+=", fc["X"][i, k] * fc["W"][j, k])
    (h,) = fc.results
    relu = f.kernel("relu", [(h, "A")], [("B", tensor("64x1024xf32"))], result_names=["y"])
    with relu.loop("i", 0, 64) as i, relu.loop("j", 0, 1024) as j:
        relu.assign(relu["B"][i, j], Call("max", (relu["A"][i, j], FloatLit(0.0))))
    f.ret(relu.results[0])
    return mb.module


def test_builds_the_first_docs_example() -> None:
    _assert_same(build_docs_mlp(), _first_doc_block())


def test_module_docstring_example() -> None:
    """The usage shown at the top of builder.py works as written."""
    import solar.ir.builder as builder

    doc = builder.__doc__
    assert doc is not None
    code = "\n".join(line[4:] for line in doc.splitlines() if line.startswith("    "))
    scope: dict[str, object] = {"ModuleBuilder": ModuleBuilder, "tensor": tensor}
    exec(compile(code, "builder docstring", "exec"), scope)
    module = scope["module"]
    assert isinstance(module, ModuleOp)
    engine = DiagnosticEngine()
    assert verify(module, engine), engine.format_all()


# ---- one case per builder method ------------------------------------------------------------------------


def case_module_params() -> tuple[ModuleOp, str]:
    mb = ModuleBuilder("scaled", {"M": 4096, "N": None})
    f = mb.func("id", [("x", tensor("MxNxf32"))])
    f.ret(f.args[0])
    return mb.module, """solar.module @scaled [M = 4096, N] {
  solar.func @id(%x: tensor<MxNxf32>) -> tensor<MxNxf32> {
    solar.return %x
  }
}
"""


def case_unnamed_module_two_funcs() -> tuple[ModuleOp, str]:
    mb = ModuleBuilder()
    g = mb.func("g", [("a", F32), ("a", F32)])  # a repeated hint gets a fresh name
    g.ret(g.args[1], g.args[0])
    f = mb.func("main", [("x", F32)])
    r = f.call("g", [f.args[0], f.args[0]], [F32, F32])
    f.ret(*r)
    return mb.module, """solar.module {
  solar.func @g(%a: tensor<4xf32>, %a_1: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    solar.return %a_1, %a
  }

  solar.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %r, %r_1 = solar.call @g(%x, %x) : (tensor<4xf32>, tensor<4xf32>)
    solar.return %r, %r_1
  }
}
"""


def case_kernel_locals_loops_guards() -> tuple[ModuleOp, str]:
    mb = ModuleBuilder("k", {"N": 16})
    f = mb.func("softmax", [("x", tensor("Nx8xf32"))])
    k = f.kernel("softmax", [(f.args[0], "X")], [("Y", tensor("Nx8xf32")), ("Z", tensor("Nxi1"))])
    mx = k.local("mx", tensor("Nxf32"))
    with k.loop("i", 0, "N") as i:
        with k.loop("j", 0, 8) as j:
            k.reduce(mx[i], "max=", k["X"][i, j])
        with k.loop("j", 0, i + 1, step=2) as j, k.guard(
                Binary("and", Binary("<", j, IntLit(8)), Binary(">=", i - j, IntLit(0)))):
            k.assign(k["Y"][i, j], Call("exp", (k["X"][i, j] - mx[i],)) * 0.5)
        with k.loop("j", Call("max", (IntLit(0), i - 2)), Call("min", (IntLit(8), i + 3))) as j:
            k.reduce(k["Y"][i, j], "+=", Cast(DType.F32, i) * -1.5e-05)
        k.reduce(k["Z"][i], "min=", Call("isnan", (mx[i],)))
    f.ret(*k.results)
    return mb.module, """solar.module @k [N = 16] {
  solar.func @softmax(%x: tensor<Nx8xf32>) -> (tensor<Nx8xf32>, tensor<Nxi1>) {
    %y, %z = solar.kernel @softmax(%x as X) -> (Y: tensor<Nx8xf32>, Z: tensor<Nxi1>) {
      local mx: tensor<Nxf32>
      affine.for %i = 0 to N {
        affine.for %j = 0 to 8 {
          mx[%i] max= X[%i, %j]
        }
        affine.for %j = 0 to %i + 1 step 2 {
          affine.if %j < 8 and %i - %j >= 0 {
            Y[%i, %j] = exp(X[%i, %j] - mx[%i]) * 0.5
          }
        }
        affine.for %j = max(0, %i - 2) to min(8, %i + 3) {
          Y[%i, %j] += cast<f32>(%i) * -1.5e-05
        }
        Z[%i] min= isnan(mx[%i])
      }
    }
    solar.return %y, %z
  }
}
"""


def case_einsums() -> tuple[ModuleOp, str]:
    mb = ModuleBuilder("e")
    f = mb.func("f", [("q", tensor("16x8xf32")), ("k", tensor("16x8xf32"))])
    q, k = f.args
    s = f.einsum("scores", "id,jd->ij", [(q, "Q"), (k, "K")], ("S", tensor("16x16xf32")),
                 NameRef("Q") * NameRef("K"), reduce="+=", epilogue=NameRef("S") * 0.125, where="j<=i")
    m = f.einsum("rowmax", "ij->i", [(s, "S")], ("M", tensor("16xf32")), NameRef("S"), reduce="max=",
                 result_name="mx")
    e = f.einsum("exp", "ij,i->ij", [(s, "S"), (m, "M")], ("E", tensor("16x16xf32")),
                 Call("exp", (NameRef("S") - NameRef("M"),)))
    f.ret(e)
    return mb.module, """solar.module @e {
  solar.func @f(%q: tensor<16x8xf32>, %k: tensor<16x8xf32>) -> tensor<16x16xf32> {
    %s = solar.einsum @scores "id,jd->ij" where "j<=i" (%q as Q, %k as K) -> (S: tensor<16x16xf32>) {
      S += Q * K
      S = S * 0.125
    }
    %mx = solar.einsum @rowmax "ij->i" (%s as S) -> (M: tensor<16xf32>) {
      M max= S
    }
    %e = solar.einsum @exp "ij,i->ij" (%s as S, %mx as M) -> (E: tensor<16x16xf32>) {
      E = exp(S - M)
    }
    solar.return %e
  }
}
"""


def case_shape_ops() -> tuple[ModuleOp, str]:
    mb = ModuleBuilder("shapes", {"B": 2})
    f = mb.func("f", [("x", tensor("Bx8x16xf32")), ("ids", tensor("Bx4xi64")), ("table", tensor("100x16xf32"))])
    x, ids, table = f.args
    r = f.reshape(x, tensor("Bx128xf32"))
    p = f.permute(x, [0, 2, 1], tensor("Bx16x8xf32"))
    s = f.slice(x, [SliceEntry(start=IntLit(0), stop=NameRef("B")), SliceEntry(start=IntLit(2), stop=IntLit(6)),
                    SliceEntry(start=IntLit(0), stop=IntLit(16), step=IntLit(2))], tensor("Bx4x8xf32"))
    row = f.slice(x, [SliceEntry(index=IntLit(0)), SliceEntry(start=IntLit(0)), SliceEntry()],
                  tensor("8x16xf32"), hint="row")
    c = f.concat([x, x], 1, tensor("Bx16x16xf32"))
    bias = f.constant(0.5, tensor("16xf32"), hint="bias")
    bb = f.broadcast(bias, [2], tensor("Bx8x16xf32"))
    g = f.gather(table, ids, 0, tensor("Bx4x16xf32"))
    z = f.constant(0.0, tensor("100x16xf32"), hint="z")
    acc = f.scatter(z, ids, g, 0, "add", tensor("100x16xf32"))
    k = f.constant([[1, 0], [0, -1]], tensor("2x2xi64"), hint="k")
    u = f.insert(row, x, [SliceEntry(index=IntLit(1)), SliceEntry(start=IntLit(0), stop=IntLit(8)),
                          SliceEntry(start=IntLit(0), stop=IntLit(16))], tensor("Bx8x16xf32"))
    f.ret(r, p, s, c, bb, acc, k, u)
    signature = ("(%x: tensor<Bx8x16xf32>, %ids: tensor<Bx4xi64>, %table: tensor<100x16xf32>) -> (tensor<Bx128xf32>, "
                 "tensor<Bx16x8xf32>, tensor<Bx4x8xf32>, tensor<Bx16x16xf32>, tensor<Bx8x16xf32>, tensor<100x16xf32>, "
                 "tensor<2x2xi64>, tensor<Bx8x16xf32>)")
    return mb.module, f"""solar.module @shapes [B = 2] {{
  solar.func @f{signature} {{
    %r = solar.reshape %x : tensor<Bx128xf32>
    %p = solar.permute %x {{perm = [0, 2, 1]}} : tensor<Bx16x8xf32>
    %s = solar.slice %x[0:B, 2:6, 0:16:2] : tensor<Bx4x8xf32>
    %row = solar.slice %x[0, 0:, :] : tensor<8x16xf32>
    %cat = solar.concat %x, %x {{axis = 1}} : tensor<Bx16x16xf32>
    %bias = solar.constant 0.5 : tensor<16xf32>
    %b = solar.broadcast %bias {{dims = [2]}} : tensor<Bx8x16xf32>
    %g = solar.gather %table, %ids {{axis = 0}} : tensor<Bx4x16xf32>
    %z = solar.constant 0.0 : tensor<100x16xf32>
    %sc = solar.scatter %z, %ids, %g {{axis = 0, reduce = add}} : tensor<100x16xf32>
    %k = solar.constant [[1, 0], [0, -1]] : tensor<2x2xi64>
    %u = solar.insert %row into %x[1, 0:8, 0:16] : tensor<Bx8x16xf32>
    solar.return %r, %p, %s, %cat, %b, %sc, %k, %u
  }}
}}
"""


def case_for_if_group() -> tuple[ModuleOp, str]:
    mb = ModuleBuilder("control", {"T": 4})
    f = mb.func("main", [("xs", tensor("Tx8xf32")), ("h", tensor("8xf32")), ("flag", tensor("i1"))])
    xs, h0, flag = f.args
    with f.for_("t", 0, "T", [h0]) as loop:
        (h,) = loop.args
        assert loop.index is not None
        xt = loop.slice(xs, [SliceEntry(index=loop.index), SliceEntry(start=IntLit(0), stop=IntLit(8))],
                        tensor("8xf32"), hint="xt")
        cell = loop.kernel("cell", [(xt, "X"), (h, "H")], [("N", tensor("8xf32"))])
        with cell.loop("i", 0, 8) as i:
            cell.assign(cell["N"][i], Call("tanh", (cell["X"][i] + cell["H"][i],)))
        loop.yield_(cell.results[0])
    (last,) = loop.results
    with f.if_(flag, [tensor("8xf32")]) as (then, other):
        then.yield_(last)
        other.yield_(h0)
    (chosen,) = then.results
    with f.group("fused", [tensor("8xf32")]) as grp:
        y = grp.einsum("scale", "i->i", [(chosen, "A")], ("Y", tensor("8xf32")), NameRef("A") * 2.0)
        grp.yield_(y)
    f.ret(*grp.results)
    return mb.module, """solar.module @control [T = 4] {
  solar.func @main(%xs: tensor<Tx8xf32>, %h: tensor<8xf32>, %flag: tensor<i1>) -> tensor<8xf32> {
    %loop = solar.for %t = 0 to T iter_args(%h_it = %h) -> tensor<8xf32> {
      %xt = solar.slice %xs[%t, 0:8] : tensor<8xf32>
      %n = solar.kernel @cell(%xt as X, %h_it as H) -> (N: tensor<8xf32>) {
        affine.for %i = 0 to 8 {
          N[%i] = tanh(X[%i] + H[%i])
        }
      }
      solar.yield %n
    }
    %sel = solar.if %flag -> tensor<8xf32> {
      solar.yield %loop
    } else {
      solar.yield %h
    }
    %g = solar.group @fused -> tensor<8xf32> {
      %y = solar.einsum @scale "i->i" (%sel as A) -> (Y: tensor<8xf32>) {
        Y = A * 2.0
      }
      solar.yield %y
    }
    solar.return %g
  }
}
"""


CASES: list[Callable[[], tuple[ModuleOp, str]]] = [
    case_module_params, case_unnamed_module_two_funcs, case_kernel_locals_loops_guards, case_einsums,
    case_shape_ops, case_for_if_group,
]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__.removeprefix("case_") for c in CASES])
def test_builder_matches_parser(case: Callable[[], tuple[ModuleOp, str]]) -> None:
    built, text = case()
    if case is case_module_params:
        # A parameter without a default must be bound before verification; compare structure and text only.
        assert print_module(built) == text
        assert not module_diff(built, _parse(text))
        return
    _assert_same(built, text)


# ---- details of the builder's objects -------------------------------------------------------------------


def test_tensor_helper_accepts_both_spellings() -> None:
    assert tensor("64x512xf32") == tensor("tensor<64x512xf32>")
    t = tensor("Bx(S + 2)xbf16")
    assert isinstance(t, TensorType) and t.dtype is DType.BF16 and t.shape[0] == NameRef("B")


def test_built_ops_have_the_parsers_classes_and_fields() -> None:
    built, _ = case_kernel_locals_loops_guards()
    kernel = built.funcs[0].body[0]
    assert isinstance(kernel, KernelOp)
    assert [type(s) for s in kernel.body] == [LocalDecl, AffineFor]
    outer = kernel.body[1]
    assert isinstance(outer, AffineFor) and outer.upper == NameRef("N")
    tri = outer.body[1]
    assert isinstance(tri, AffineFor) and tri.step == 2 and tri.upper == IndexRef("i") + 1
    assert isinstance(tri.body[0], AffineIf) and isinstance(tri.body[0].body[0], Assign)
    assert [r.name for r in kernel.results] == ["y", "z"]
    assert all(r.owner is kernel for r in kernel.results)

    ops = case_for_if_group()[0].funcs[0].body
    assert [type(o) for o in ops[:3]] == [ForOp, IfOp, GroupOp]
    loop = ops[0]
    assert isinstance(loop, ForOp) and loop.iter_args[0].owner is loop and loop.inits[0].name == "h"
    assert isinstance(ops[2], GroupOp) and isinstance(ops[2].body[0], EinsumOp)

    shapes = case_shape_ops()[0].funcs[0].body
    assert isinstance(shapes[0], ReshapeOp)
    scatter = shapes[9]
    assert scatter.attrs == {"axis": 0, "reduce": Word("add")}
    constant = shapes[10]
    assert isinstance(constant, ConstantOp) and constant.value == [[1, 0], [0, -1]]


def test_reduce_rejects_unknown_operators() -> None:
    mb = ModuleBuilder()
    f = mb.func("f", [("x", F32)])
    k = f.kernel("k", [(f.args[0], "X")], [("Y", F32)])
    with pytest.raises(ValueError, match="unknown reduction"):
        k.reduce(k["Y"][0], "-=", k["X"][0])
