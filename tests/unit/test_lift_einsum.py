"""lift-einsum: lifted examples verify and round-trip, einsum counts agree with the loop nests they came
from, and random nests lift to einsums whose point count is the brute-force one (or stay, with a reason)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from test_lift_affine import VARS, Nest, bound_text, brute_force, nests, text

from solar.ir.analysis.counts import Counts, einsum_counts, kernel_counts
from solar.ir.analysis.isl_model import build_model
from solar.ir.diagnostics import DiagnosticEngine
from solar.ir.ops import EinsumOp, KernelOp, ModuleOp, SymbolRef
from solar.ir.parser import parse_module
from solar.ir.pass_manager import PassContext, PassManager
from solar.ir.printer import print_module
from solar.ir.verifier import verify
from solar.passes import registry

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO_ROOT / "examples").glob("*.sir"))
SirCheck = Callable[..., ModuleOp]


def parse(text: str, name: str = "<test>") -> ModuleOp:
    engine = DiagnosticEngine()
    module = parse_module(text, name, engine)
    assert not engine.has_errors and verify(module, engine), engine.format_all()
    return module


def run(module: ModuleOp, pipeline: str) -> tuple[ModuleOp, DiagnosticEngine]:
    engine = DiagnosticEngine()
    module = PassManager(registry.parse_pipeline(pipeline)).run(module, PassContext(engine, report=lambda _: None))
    assert not engine.has_errors, engine.format_all()
    return module, engine


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_lifted_examples_round_trip(path: Path, sir_check: SirCheck) -> None:
    """Printing the einsum form and parsing it back gives the same module (and it verifies)."""
    module, _ = run(parse(path.read_text(encoding="utf-8"), path.name), "lift-affine,lift-einsum")
    sir_check(print_module(module), f"{path.name} (lifted)")


def _is_combine(op: EinsumOp) -> bool:
    """The one einsum lifting adds: `Out = P op R`, an earlier `=` combined with a later reduction."""
    return [b.name for b in op.inputs] in (["P", "R"], ["P_0", "R_0"])


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_einsum_counts_agree_with_kernel_counts(path: Path) -> None:
    """Per kernel, the einsums' MACs, FLOPs and operations by kind are the loop nest's (identity and zero
    fills that lifting drops do no work), apart from the combine einsums lifting adds (one op per element)."""
    module = parse(path.read_text(encoding="utf-8"), path.name)
    params, values = [p.name for p in module.params], module.param_values()
    kernels: dict[str, Counts] = {}
    for func in module.funcs:
        for op in func.walk():
            if isinstance(op, KernelOp):
                kernels[op.symbol] = kernel_counts(build_model(op, params, {}), values)
    lifted, _ = run(module, "lift-einsum")
    chains: dict[str, Counts] = {}
    for func in lifted.funcs:
        for op in func.walk():
            if isinstance(op, EinsumOp) and isinstance(origin := op.attrs.get("kernel"), SymbolRef):
                counts = einsum_counts(op, params, values)
                if _is_combine(op):
                    assert counts.flops_vector == counts.points and counts.macs == 0
                    continue
                chains.setdefault(origin.name, Counts()).__iadd__(counts)
    for name, chain in chains.items():
        kernel = kernels[name]
        assert (chain.macs, chain.flops_tensor, chain.flops_vector) == (
            kernel.macs, kernel.flops_tensor, kernel.flops_vector), name
        assert chain.ops == kernel.ops, name


def test_gram_matrix_reads_its_operand_once() -> None:
    """`X[i, k] * X[j, k]` binds X twice; bytes read count its elements once (the union of footprints)."""
    module = parse("""solar.func @gram(%x: tensor<8x16xf32>) -> tensor<8x8xf32> {
  %y = solar.kernel @gram(%x as X) -> (Y: tensor<8x8xf32>) {
    affine.for %i = 0 to 8 { affine.for %j = 0 to 8 { affine.for %k = 0 to 16 {
      Y[%i, %j] += X[%i, %k] * X[%j, %k] } } }
  }
  solar.return %y
}""")
    lifted, _ = run(module, "lift-einsum")
    op = next(o for o in lifted.funcs[0].walk() if isinstance(o, EinsumOp))
    assert op.spec == "ik,jk->ij" and [b.name for b in op.inputs] == ["X", "X_1"]
    counts = einsum_counts(op, [], {})
    assert counts.bytes_read == {"X": 8 * 16 * 4}  # 8·16 elements of 4 bytes, once
    assert (counts.points, counts.macs) == (8 * 8 * 16, 8 * 8 * 16)


def test_equal_einsums_share_counts_but_keep_their_names() -> None:
    """Counts are cached by structure; bytes are reported under each einsum's own binding names."""
    module = parse("""solar.func @two(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %x = solar.einsum @first "ij->i" (%a as A) -> (X: tensor<4xf32>) {
    X += A
  }
  %y = solar.einsum @second "ij->i" (%b as B) -> (Y: tensor<4xf32>) {
    Y += B
  }
  solar.return %x, %y
}""")
    first, second = [op for op in module.funcs[0].walk() if isinstance(op, EinsumOp)]
    a, b = einsum_counts(first, [], {}), einsum_counts(second, [], {})
    assert a.bytes_read == {"A": 128} and b.bytes_read == {"B": 128}
    a.ops["add"] += 1000  # a caller mutating its copy does not change the next answer
    assert einsum_counts(first, [], {}).ops == Counter({"add": 32})


# ---- random nests, lifted --------------------------------------------------------------------------------


def nest_kernel(nest: Nest, shape: list[int]) -> str:
    """The nest with `Y[i, j, ...] += X[i, j, ...]` innermost, on tensors of `shape` (every index in bounds).
    The size parameter N is written as its value: with N free, fixed shapes would not bound the indices."""
    lines, closers, indent = [], [], "      "
    for d, loop in enumerate(nest.loops):
        highs = bound_text(loop.highs, "min").replace("N", str(nest.n))
        lines.append(f"{indent}affine.for %{VARS[d]} = {bound_text(loop.lows, 'max')} to {highs} {{")
        closers.append(indent + "}")
        indent += "  "
        if loop.guards:
            lines.append(f"{indent}affine.if {' and '.join(f'{text(e)} {op} 0' for e, op in loop.guards)} {{")
            closers.append(indent + "}")
            indent += "  "
    idx = ", ".join(f"%{v}" for v in VARS[:len(nest.loops)])
    lines.append(f"{indent}Y[{idx}] += X[{idx}]")
    t = f"tensor<{'x'.join(map(str, shape))}xf32>"
    body = "\n".join([*lines, *reversed(closers)])
    return f"""solar.func @f(%x: {t}) -> {t} {{
  %y = solar.kernel @nest(%x as X) -> (Y: {t}) {{
{body}
  }}
  solar.return %y
}}"""


def iterations(nest: Nest) -> list[list[int]]:
    """The innermost iterations of a step-1 nest, by running it."""
    out: list[list[int]] = []

    def go(d: int, env: list[int]) -> None:
        loop = nest.loops[d]
        lo = max(_value(p, env, nest) for p in loop.lows)
        hi = min(_value(p, env, nest) for p in loop.highs)
        for v in range(lo, hi):
            inner = [*env, v]
            if all(_holds(e, op, inner) for e, op in loop.guards):
                if d + 1 < len(nest.loops):
                    go(d + 1, inner)
                else:
                    out.append(inner)

    go(0, [])
    return out


def _value(p: tuple, env: list[int], nest: Nest) -> int:
    from test_lift_affine import N_MARK, value

    return nest.n if p == N_MARK else value(p, env)


def _holds(e: tuple, op: str, env: list[int]) -> bool:
    from test_lift_affine import _holds as holds
    from test_lift_affine import value

    return holds(value(e, env), op)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(nests())
def test_random_nests_lift_with_exact_points(nest: Nest) -> None:
    for loop in nest.loops:
        loop.step, loop.stmt_before = 1, False
    points = iterations(nest)
    assert len(points) == brute_force(nest)[-1]
    assume(points)  # empty nests are test_lift_affine's
    shape = [max([p[d] for p in points], default=0) + 1 for d in range(len(nest.loops))]
    module = parse(nest_kernel(nest, [max(s, 1) for s in shape]))
    lifted, engine = run(module, "lift-einsum")
    ops = list(lifted.funcs[0].walk())
    einsums = [op for op in ops if isinstance(op, EinsumOp)]
    if any(min(p) < 0 for p in points):
        kernel = next(op for op in ops if isinstance(op, KernelOp))  # X[-1] is out of bounds
        assert "out of bounds" in str(kernel.attrs["not_lifted"])
        return
    assert len(einsums) == 1, engine.format_all()
    counts = einsum_counts(einsums[0], [], {})
    assert counts.points == len(points), einsums[0].where
    assert counts.bytes_read["X"] == 4 * len({tuple(p) for p in points})
