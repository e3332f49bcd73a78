"""Issue 28: the failures KernelBench and the model zoo found, each as a minimal program with the same pattern
(lifted constants in submodules, a failed lowering poisoning its users, symbolic pad amounts, sizes equal only
when divisible, `copy_` into a tensor attribute, the location of an error in a lambda), and any exception in a
lowering as a located diagnostic."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from solar.frontends.diagnostics import SourceError, TranslationError  # noqa: E402
from solar.frontends.lowering import TORCH_LOWERINGS  # noqa: E402
from solar.frontends.torch_export import (  # noqa: E402
    TorchProblem,
    callable_problem,
    reference_runner,
    translate_problem,
)
from solar.frontends.validate import small_sizes, validate_sized  # noqa: E402
from solar.ir import print_module  # noqa: E402
from solar.ir.expr import Binary, Call, Expr, IntLit, NameRef, Unary  # noqa: E402
from solar.ir.expr_values import evaluate_int, int_range  # noqa: E402


def _validate(problem: TorchProblem, tr, sizes: dict[str, int] | None = None):  # type: ignore[no-untyped-def]
    return validate_sized(tr.module, lambda sz: reference_runner(problem, tr, 0, sz),
                          sizes if sizes is not None else small_sizes(tr.module))


def _line_of(fragment: str, fn: object) -> int:
    lines, start = inspect.getsourcelines(fn)  # type: ignore[arg-type]
    return start + next(k for k, text in enumerate(lines) if fragment in text)


# ---- 1. constants made in forward: at the top level and in submodules, on the meta device --------------


class _Floor(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.max(x, torch.tensor(-0.25, device=x.device))  # lifted as floor.lifted_tensor_0


class _LiftedEverywhere(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
        self.floor = _Floor()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.min(self.floor(self.lin(x)), torch.tensor(0.5, device=x.device))  # KernelBench L2 83
        return y * torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], device=x.device)


def test_constants_made_in_forward_keep_their_values_in_submodules_too() -> None:
    problem = TorchProblem(_LiftedEverywhere, lambda: [torch.randn(4, 8)], "lifted")
    tr = translate_problem(problem)
    text = print_module(tr.module)
    assert "solar.constant -0.25 : tensor<f32>" in text and "solar.constant 0.5 : tensor<f32>" in text
    assert "solar.constant [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0] : tensor<8xf32>" in text
    assert [a.kind for a in tr.args] == ["parameter", "parameter", "input"]
    report = _validate(problem, tr)
    assert report.ok, report.summary()


def test_made_in_forward_knows_path_prefixed_names() -> None:
    from solar.frontends.torch_problem import made_in_forward

    assert made_in_forward("lifted_tensor_0")
    assert made_in_forward("layers.0.blocks.0.attn.lifted_tensor_12")
    assert not made_in_forward("encoder.lifted_tensor_x") and not made_in_forward("encoder.weight")


# ---- 2. a failed lowering poisons its users; every located error is reported together ----------------


def _two_failures(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    y = torch.relu(x)  # its lowering is made to crash below
    z = (y * 2.0 + 1.0).sum(dim=1)  # users of a failed result: skipped, not reported
    w = torch.einsum("ii->i", x[:, :3])  # a second, independent error (a diagonal)
    return z, w


def test_a_crashing_lowering_is_a_located_diagnostic_and_poisons_its_users(monkeypatch: pytest.MonkeyPatch
                                                                            ) -> None:
    def crash(_n: object) -> None:
        raise ZeroDivisionError("boom")

    monkeypatch.setitem(TORCH_LOWERINGS, "aten::relu", crash)
    with pytest.raises(TranslationError) as info:
        translate_problem(callable_problem(_two_failures, [torch.randn(3, 8)], "two"), dynamic="none")
    problems = info.value.problems
    assert [p.op for p in problems] == ["aten.relu.default", "aten.einsum.default"]
    assert problems[0].message.startswith("lowering aten.relu.default failed: ZeroDivisionError: boom")
    assert problems[0].internal and ": internal error: lowering aten.relu.default failed" in problems[0].format()
    assert [p.where.line for p in problems if p.where] == [_line_of("torch.relu", _two_failures),
                                                          _line_of("torch.einsum", _two_failures)]
    assert all(p.where is not None and p.where.file == __file__ for p in problems)


class _VitLike(torch.nn.Module):
    """KernelBench L3 28's pattern: patches by `unfold` (its symbolic sizes fail to lower), a class token, an
    encoder. The failed unfold used to leave its users to crash with `float(None)`."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Linear(3 * 4 * 4, 16)
        self.cls = torch.nn.Parameter(torch.randn(1, 1, 16))
        self.block = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)

    def forward(self, img: torch.Tensor) -> torch.Tensor:
        x = img.unfold(2, 4, 4).unfold(3, 4, 4).reshape(img.shape[0], -1, 4 * 4 * img.shape[1])
        x = torch.cat((self.cls.expand(img.shape[0], -1, -1), self.embed(x)), dim=1)
        return self.block(x)[:, 0]


def test_vit_with_unfold_patches_falls_back_instead_of_crashing() -> None:
    problem = TorchProblem(_VitLike, lambda: [torch.randn(2, 3, 8, 8)], "vit")
    tr = translate_problem(problem, dynamic="all")  # the unfold's failure sends its dims back to static
    assert any("unfold along a symbolic dimension" in str(f) for f in tr.fixed_dims)
    assert _validate(problem, tr).ok


# ---- 3. symbolic pad amounts (Swin's window padding) ----------------------------------------------------


class _WindowPad(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _, h, w, _ = x.shape
        return F.pad(x, (0, 0, 0, (4 - w % 4) % 4, 0, (4 - h % 4) % 4)) * 2


def test_a_symbolic_pad_amount_stays_symbolic_and_validates_at_other_sizes() -> None:
    problem = TorchProblem(_WindowPad, lambda: [torch.randn(2, 6, 7, 3)], "swin_pad")
    tr = translate_problem(problem, dynamic="all")
    text = print_module(tr.module)
    assert "affine.for %i1 = 0 to X_1 + (4 + -1 * (X_1 mod 4)) mod 4" in text, text
    assert "affine.for %j1 = 0 to X_1 {" in text and not tr.fixed_dims
    for sizes in ({"BATCH": 1, "X_1": 5, "X_2": 4, "X_3": 2}, {"BATCH": 2, "X_1": 3, "X_2": 6, "X_3": 1}):
        report = _validate(problem, tr, sizes)
        assert report.ok, report.summary()


class _SizeDependentSign(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.pad(x, (0, 9 - x.shape[1]))  # pads below 9 columns, crops above


def test_a_pad_amount_of_either_sign_fixes_that_size() -> None:
    problem = TorchProblem(_SizeDependentSign, lambda: [torch.randn(2, 6)], "sign")
    tr = translate_problem(problem, dynamic="all")
    assert any("pads for some sizes and crops for others" in str(f) for f in tr.fixed_dims), tr.fixed_dims
    assert _validate(problem, tr).ok


_SIZES = st.sampled_from(["A", "B"]).map(NameRef)
_EXPRS = st.recursive(
    st.one_of(st.integers(-6, 6).map(IntLit), _SIZES),
    lambda sub: st.one_of(
        st.tuples(st.sampled_from(["+", "-", "*"]), sub, sub).map(lambda t: Binary(t[0], t[1], t[2])),
        st.tuples(st.sampled_from(["floordiv", "ceildiv", "mod"]), sub, st.integers(1, 5)).map(
            lambda t: Binary(t[0], t[1], IntLit(t[2]))),
        sub.map(lambda e: Unary("-", e)),
        st.tuples(st.sampled_from(["max", "min"]), sub, sub).map(lambda t: Call(t[0], (t[1], t[2])))),
    max_leaves=6)


@settings(max_examples=300, deadline=None)
@given(_EXPRS, st.integers(0, 40), st.integers(0, 40))
def test_int_range_bounds_every_value(expr: Expr, a: int, b: int) -> None:
    lo, hi = int_range(expr)
    assert lo <= evaluate_int(expr, {"A": a, "B": b}) <= hi


# ---- 5. sizes equal only when divisible (a UNet skip connection meeting an upsampled tensor) -------------


class _UNetSkip(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.ConvTranspose2d(4, 4, kernel_size=2, stride=2)
        self.conv = torch.nn.Conv2d(8, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skip = F.max_pool2d(x, 2)
        return self.conv(torch.cat((self.up(F.max_pool2d(skip, 2)), skip), dim=1))


def test_sizes_equal_only_when_divisible_are_fixed_and_reexported() -> None:
    problem = TorchProblem(_UNetSkip, lambda: [torch.randn(2, 4, 16, 8)], "unet")
    tr = translate_problem(problem, dynamic="all")
    reasons = [str(f) for f in tr.fixed_dims]
    assert sum("the operands of a concatenation have sizes" in r for r in reasons) == 2, reasons
    assert not any("internal error" in r or "InferenceError" in r for r in reasons)
    assert _validate(problem, tr).ok


# ---- 6. copy_ into a tensor attribute (KernelBench L3 33, VanillaRNN) -----------------------------------


class _VanillaRNN(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.hidden = torch.randn(4, 16)  # a plain tensor attribute: export leaves copy_ into it in the graph
        self.i2h = torch.nn.Linear(8 + 16, 16)
        self.h2o = torch.nn.Linear(16, 4)

    def forward(self, x: torch.Tensor, h0: torch.Tensor) -> torch.Tensor:
        self.hidden.copy_(h0)
        self.hidden = torch.tanh(self.i2h(torch.cat((x, self.hidden.to(x.dtype)), dim=1)))
        return self.h2o(self.hidden)


def test_copy_into_a_tensor_attribute_validates() -> None:
    problem = TorchProblem(_VanillaRNN, lambda: [torch.randn(4, 8), torch.randn(4, 16)], "rnn")
    tr = translate_problem(problem, dynamic="none")
    assert _validate(problem, tr).ok


class _CopyConverts(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.state = torch.zeros(3, 8, dtype=torch.float64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.state.copy_(x)  # a row broadcast to three, f32 to f64
        return self.state * 2


def test_copy_with_a_broadcast_and_a_conversion_is_one_kernel() -> None:
    problem = TorchProblem(_CopyConverts, lambda: [torch.randn(8)], "copy")
    tr = translate_problem(problem, dynamic="none")
    text = print_module(tr.module)
    assert "solar.kernel @copy_" in text and "tensor<3x8xf64>" in text
    assert _validate(problem, tr).ok


# ---- 7. an error in a callable_problem lambda is located at the lambda ----------------------------------


def test_an_error_in_a_lambda_is_located_at_the_lambda() -> None:
    fn = lambda v: torch.histc(v, 4)  # noqa: E731
    with pytest.raises(TranslationError) as info:
        translate_problem(callable_problem(fn, [torch.randn(2, 16)], "lam"))
    where = info.value.problems[0].where
    assert where is not None and where.file == __file__ and where.line == fn.__code__.co_firstlineno
    assert "torch_reference.py" not in info.value.format()


# ---- found by tests/unit/test_frontend_fuzz.py ---------------------------------------------------------


@pytest.mark.parametrize("fn", [lambda v: torch.softmax(v.sum(), 0) * v, lambda v: torch.log_softmax(v.sum(), -1) + v,
                                lambda v: v.sum().transpose(0, -1) * v], ids=["softmax", "log_softmax", "transpose"])
def test_ops_on_a_scalar_that_torch_allows(fn: object) -> None:
    problem = callable_problem(fn, [torch.randn(3)], "scalar")  # type: ignore[arg-type]
    tr = translate_problem(problem, dynamic="none")
    assert _validate(problem, tr).ok


_META_ONLY = '''import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.n = int(torch.tensor(3.0).item())  # fine on the CPU; the meta device cannot read a value
        self.w = torch.nn.Parameter(torch.ones(4, self.n))
    def forward(self, x):
        return x @ self.w @ self.w
def get_inputs():
    return [torch.ones(2, 4)]
def get_init_inputs():
    return []
'''


def test_when_meta_and_cpu_both_fail_the_cpu_error_is_shown_over_a_meta_device_refusal(tmp_path: Path) -> None:
    """The meta build stops at `.item()`, which says nothing about the program; the CPU retry finds the real
    bug, a shape mismatch in forward, and that is the error shown, at its line."""
    path = tmp_path / "meta_only.py"
    path.write_text(_META_ONLY)
    with pytest.raises(SourceError) as err:
        translate_problem(str(path))
    assert err.value.message.startswith("torch.export failed: RuntimeError: a and b must have same reduction "
                                        "dim, but got [2, 3] X [4, 3]")
    assert str(err.value.where).startswith(f"{path}:8:")
