"""The cost model remembers each type's bytes by identity (backends/cost.py, `CostModel.nbytes`): the same
answer as evaluating the type, and a new type (a value retyped) is evaluated afresh."""

from __future__ import annotations

from dataclasses import replace

from solar.backends.cost import CostModel
from solar.ir.diagnostics import DiagnosticEngine
from solar.ir.ops import ModuleOp
from solar.ir.parser import parse_module

PROGRAM = """\
solar.module @m [N = 37, C = 24] {
  solar.func @main(%x: tensor<Nx(C floordiv 5 + 1)xf32>, %w: tensor<(C floordiv 5 + 1)x8xf16>) -> tensor<Nx8xf32> {
    %y = solar.kernel @mm(%x as X, %w as W) -> (Y: tensor<Nx8xf32>) {
      affine.for %i = 0 to N {
        affine.for %j = 0 to 8 {
          affine.for %k = 0 to C floordiv 5 + 1 {
            Y[%i, %j] += X[%i, %k] * W[%k, %j]
          }
        }
      }
    }
    solar.return %y
  }
}
"""


def _module() -> ModuleOp:
    engine = DiagnosticEngine()
    module = parse_module(PROGRAM, "t.sir", engine)
    assert not engine.has_errors, engine.format_all()
    return module


def test_remembered_bytes_are_the_types_own() -> None:
    module = _module()
    model = CostModel(module)
    func = module.entry
    assert func is not None
    values = [*func.args, *(r for op in func.walk() for r in op.results)]
    expected = {"x": 37 * 5 * 4, "w": 5 * 8 * 2, "y": 37 * 8 * 4}
    for v in values:
        assert v.type is not None
        first, again = model.nbytes(v), model.nbytes(v)
        assert first == again == v.type.nbytes(model.values)
        if v.name in expected:
            assert first == expected[v.name]


def test_a_retyped_value_is_evaluated_afresh() -> None:
    module = _module()
    model = CostModel(module)
    func = module.entry
    assert func is not None
    x = func.args[0]
    assert model.nbytes(x) == 37 * 5 * 4
    assert x.type is not None
    x.type = replace(x.type, shape=(x.type.shape[0], 3))
    assert model.nbytes(x) == 37 * 3 * 4
