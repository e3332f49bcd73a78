"""lift-affine: ISL point counts of random affine loop nests equal brute-force enumeration of the loops.

Hypothesis draws nests of 2 to 4 loops whose bounds are constants, affine in enclosing indices (triangular:
`0 to %i + c`), `max(...)` lower and `min(...)` upper bounds, or a size parameter; loops may step; statements
may sit under `affine.if` guards and at several depths (an imperfect nest). The count lift-affine records on
each statement (`isl.S<k>.points`, from barvinok's symbolic card at the parameter's value) must equal the
number of times Python's own loops would run that statement.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solar.ir.diagnostics import DiagnosticEngine
from solar.ir.ops import KernelOp, ModuleOp
from solar.ir.parser import parse_module
from solar.ir.pass_manager import PassContext, PassManager
from solar.ir.verifier import verify
from solar.passes import registry

VARS = ("i", "j", "k", "l")

# An affine term over enclosing indices: ((coefficient, index position), ...), constant.
Affine = tuple[tuple[tuple[int, int], ...], int]


def text(expr: Affine) -> str:
    terms, const = expr
    out = " + ".join((f"{c} * %{VARS[v]}" if c != 1 else f"%{VARS[v]}") for c, v in terms)
    if not out:
        return str(const)
    return out + (f" + {const}" if const > 0 else f" - {-const}" if const < 0 else "")


def value(expr: Affine, env: list[int]) -> int:
    terms, const = expr
    return const + sum(c * env[v] for c, v in terms)


@dataclass
class Loop:
    lows: list[Affine]  # lower bound: the max of these
    highs: list[Affine]  # upper bound (exclusive): the min of these; ((), -1) stands for the parameter N
    step: int
    guards: list[tuple[Affine, str]]  # `expr OP 0` around the loop's body
    stmt_before: bool  # a statement in this loop's body before the next loop (an imperfect nest)


@dataclass
class Nest:
    loops: list[Loop]
    n: int  # the value of the size parameter N
    uses_n: bool = field(default=False)


N_MARK: Affine = ((), -1_000_000)  # a high bound that is the parameter N


def bound_text(parts: list[Affine], combiner: str) -> str:
    texts = ["N" if p == N_MARK else text(p) for p in parts]
    return texts[0] if len(texts) == 1 else f"{combiner}({', '.join(texts)})"


@st.composite
def affine(draw: st.DrawFn, depth: int, const: tuple[int, int], coeffs: tuple[int, ...] = (1, 1, 2, -1),
           indexed: bool = False) -> Affine:
    terms = []
    if depth and (indexed or draw(st.booleans())):
        for v in sorted(draw(st.sets(st.integers(0, depth - 1), min_size=1, max_size=min(2, depth)))):
            terms.append((draw(st.sampled_from(coeffs)), v))
    return tuple(terms), draw(st.integers(*const))


@st.composite
def nests(draw: st.DrawFn) -> Nest:
    depth = draw(st.integers(2, 4))
    loops = []
    for d in range(depth):
        # Rarer features are drawn as the largest value of a range: Hypothesis favours the smallest.
        lows = [draw(affine(d, (0, 2)))]
        if d and draw(st.integers(0, 3)) == 3:
            lows.append(draw(affine(d, (-2, 2))))
        highs = [draw(affine(d, (2, 7), (1, 1, 2)))]  # mostly non-empty, often triangular (`%i + c`)
        if draw(st.integers(0, 4)) == 4:
            highs.append(N_MARK)
        elif d and draw(st.integers(0, 3)) == 3:
            highs.append(draw(affine(d, (1, 6), (1, 2, -1))))
        step = 1 if len(lows) > 1 else draw(st.sampled_from((1, 1, 1, 2, 3)))
        guards = []
        if draw(st.integers(0, 3)) == 3:
            for _ in range(draw(st.integers(1, 2))):
                expr = draw(affine(d + 1, (-3, 3), (1, -1, 2), indexed=True))
                guards.append((expr, draw(st.sampled_from((">=", "<=", ">", "<", "==")))))
        loops.append(Loop(lows, highs, step, guards, draw(st.booleans()) and d < depth - 1))
    return Nest(loops, draw(st.integers(1, 6)))


def sir(nest: Nest) -> str:
    """The nest as a module: `S[] += X[]` in the innermost loop and after each `stmt_before` point."""
    lines: list[str] = []
    indent = "      "
    closers: list[str] = []
    for d, loop in enumerate(nest.loops):
        step = f" step {loop.step}" if loop.step != 1 else ""
        lines.append(f"{indent}affine.for %{VARS[d]} = {bound_text(loop.lows, 'max')} to "
                     f"{bound_text(loop.highs, 'min')}{step} {{")
        closers.append(indent + "}")
        indent += "  "
        if loop.guards:
            cond = " and ".join(f"{text(e)} {op} 0" for e, op in loop.guards)
            lines.append(f"{indent}affine.if {cond} {{")
            closers.append(indent + "}")
            indent += "  "
        if loop.stmt_before:
            lines.append(f"{indent}S[] += X[]")
    lines.append(f"{indent}S[] += X[]")
    lines += reversed(closers)
    body = "\n".join(lines)
    return f"""solar.module @nest [N = {nest.n}] {{
  solar.func @f(%x: tensor<f32>) -> tensor<f32> {{
    %s = solar.kernel @nest(%x as X) -> (S: tensor<f32>) {{
{body}
    }}
    solar.return %s
  }}
}}"""


def brute_force(nest: Nest) -> list[int]:
    """How many times each statement runs, in program order, by running the loops."""
    counts: dict[int, int] = {}
    order = [d for d, loop in enumerate(nest.loops) if loop.stmt_before] + [len(nest.loops) - 1]

    def high(p: Affine, env: list[int]) -> int:
        return nest.n if p == N_MARK else value(p, env)

    def run(d: int, env: list[int]) -> None:
        loop = nest.loops[d]
        lo = max(value(p, env) for p in loop.lows)
        hi = min(high(p, env) for p in loop.highs)
        for v in range(lo, hi, loop.step):
            inner = [*env, v]
            if not all(_holds(value(e, inner), op) for e, op in loop.guards):
                continue
            if loop.stmt_before:
                counts[d] = counts.get(d, 0) + 1
            if d + 1 < len(nest.loops):
                run(d + 1, inner)
            else:
                counts[d] = counts.get(d, 0) + 1

    run(0, [])
    return [counts.get(d, 0) for d in order]


_OPS: dict[str, Callable[[int], bool]] = {
    ">=": lambda x: x >= 0, ">": lambda x: x > 0, "<=": lambda x: x <= 0, "<": lambda x: x < 0, "==": lambda x: x == 0}


def _holds(x: int, op: str) -> bool:
    return _OPS[op](x)


def lift_affine(text: str) -> ModuleOp:
    engine = DiagnosticEngine()
    module = parse_module(text, "<nest>", engine)
    assert not engine.has_errors and verify(module, engine), engine.format_all() + "\n" + text
    module = PassManager(registry.parse_pipeline("lift-affine")).run(module, PassContext(engine, report=lambda _: None))
    assert not engine.has_errors, engine.format_all()
    return module


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nests())
def test_isl_counts_equal_brute_force(nest: Nest) -> None:
    text = sir(nest)
    module = lift_affine(text)
    kernel = next(op for op in module.funcs[0].walk() if isinstance(op, KernelOp))
    stmts = kernel.attrs["isl"]
    assert isinstance(stmts, dict)
    isl_counts = [stmts[f"S{k}"]["points"] for k in range(len(stmts))]  # type: ignore[index]
    assert isl_counts == brute_force(nest), text


def test_brute_force_reference() -> None:
    """The reference enumerator itself, on a nest counted by hand: i in [0, 4), j in [i, min(6, i + 3)) step 2,
    under `j - 1 >= 0`: i = 0: j ∈ {0, 2}, guarded {2}; i = 1: {1, 3}; i = 2: {2, 4}; i = 3: {3, 5}; 7 in all."""
    nest = Nest([Loop([((), 0)], [((), 4)], 1, [], False),
                 Loop([(((1, 0),), 0)], [((), 6), (((1, 0),), 3)], 2, [((((1, 1),), -1), ">=")], False)], n=1)
    assert brute_force(nest) == [7]
    module = lift_affine(sir(nest))
    kernel = next(op for op in module.funcs[0].walk() if isinstance(op, KernelOp))
    assert kernel.attrs["isl"]["S0"]["points"] == 7  # type: ignore[index]
