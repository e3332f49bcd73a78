"""PyTorch's while_loop: a static bound becomes solar.for; without one, a located error naming the bound."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from torch._higher_order_ops.while_loop import while_loop  # noqa: E402

from solar.frontends.diagnostics import TranslationError  # noqa: E402
from solar.frontends.torch_export import reference_runner, translate_problem  # noqa: E402
from solar.frontends.torch_problem import TorchProblem  # noqa: E402
from solar.frontends.validate import small_sizes, validate_sized  # noqa: E402
from solar.ir.ops import ForOp  # noqa: E402
from solar.ir.printer import print_module  # noqa: E402


class Recurrence(torch.nn.Module):
    """h ← tanh(h·W + i) for i = start, start + step, ... while `i op stop`."""

    def __init__(self, start: int = 0, stop: int = 5, step: int = 1, op: str = "lt") -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, 4) * 0.3)
        self.start, self.stop, self.step, self.op = start, stop, step, op

    def forward(self, x):  # type: ignore[no-untyped-def]
        compare = getattr(torch, self.op)

        def cond(i, h):  # type: ignore[no-untyped-def]
            return compare(i, self.stop)

        def body(i, h):  # type: ignore[no-untyped-def]
            return i + self.step, torch.tanh(h @ self.w + i)

        return while_loop(cond, body, (torch.tensor(self.start), x))


def _translate(model: torch.nn.Module) -> TorchProblem:
    return TorchProblem(lambda: model, lambda: [torch.randn(3, 4)], "loop")


@pytest.mark.parametrize(("start", "stop", "step", "op", "trips"), [
    (0, 5, 1, "lt", 5), (1, 9, 3, "le", 3), (10, 0, -4, "gt", 3), (7, 7, 1, "lt", 0)])
def test_static_bound_is_a_solar_for_and_validates(start: int, stop: int, step: int, op: str, trips: int) -> None:
    problem = _translate(Recurrence(start, stop, step, op))
    tr = translate_problem(problem)
    loops = [o for o in tr.module.entry.body if isinstance(o, ForOp)]
    assert len(loops) == 1 and print_module(tr.module).count(f"solar.for %t = 0 to {trips} ") == 1
    report = validate_sized(tr.module, lambda sz: reference_runner(problem, tr, 0, sz), small_sizes(tr.module))
    assert report.ok, report.summary()


class DataDependent(torch.nn.Module):
    def forward(self, x):  # type: ignore[no-untyped-def]
        return while_loop(lambda h: h.sum() < 10.0, lambda h: (h * 2.0,), (x,))


class CounterFromInput(torch.nn.Module):
    def forward(self, n, x):  # type: ignore[no-untyped-def]
        return while_loop(lambda i, h: i < 4, lambda i, h: (i + 1, h * 2.0), (n, x))[1]


def test_data_dependent_condition_is_a_located_error_with_the_bound_to_give() -> None:
    problem = TorchProblem(DataDependent, lambda: [torch.rand(3, 4) + 1.0], "dd")
    with pytest.raises(TranslationError) as info:
        translate_problem(problem)
    text = info.value.format()
    assert "test_frontend_while.py:" in text
    assert "error: while_loop: the condition does not compare a carried counter with a Python number" in text
    assert "start a counter at a constant (`i = torch.tensor(0)`)" in text and "for _ in range(N)" in text


def test_counter_from_an_input_is_not_static() -> None:
    problem = TorchProblem(CounterFromInput, lambda: [torch.tensor(0), torch.randn(3, 4)], "ci")
    with pytest.raises(TranslationError, match=r"the counter \(carried value 0\) does not start at a constant"):
        translate_problem(problem)
