"""Dependences between statement instances of a kernel, from its ISL model and 2d+1 schedules.

Order tests map each pair of instances to its pair of times (schedules are injective) and compare the times
lexicographically in the plain time space, which ISL does much faster than building `lex_lt_map` between two
statements' schedules.
"""

from __future__ import annotations

import islpy as isl

from solar.ir.analysis.isl_model import StatementModel
from solar.ir.expr import Access, IndexRef


def touching(rel_a: isl.Map, rel_b: isl.Map) -> isl.Map:
    """Pairs (a -> b) of instances whose accesses `rel_a` and `rel_b` touch the same element."""
    return rel_a.apply_range(rel_b.reverse())


def _times(pairs: isl.Map, a: StatementModel, b: StatementModel) -> isl.Map:
    """The pairs (a -> b) as pairs of execution times (time of a -> time of b)."""
    return pairs.apply_domain(a.schedule).apply_range(b.schedule)


def always_before(pairs: isl.Map, a: StatementModel, b: StatementModel) -> bool:
    """Whether every pair (a -> b) in `pairs` has a executing strictly before b."""
    times = _times(pairs, a, b)
    return times.intersect(isl.Map.lex_ge(times.get_space().domain())).is_empty()


def ever_before(pairs: isl.Map, a: StatementModel, b: StatementModel) -> bool:
    """Whether some pair (a -> b) in `pairs` has a executing strictly before b."""
    times = _times(pairs, a, b)
    return not times.intersect(isl.Map.lex_lt(times.get_space().domain())).is_empty()


def never_before(pairs: isl.Map, a: StatementModel, b: StatementModel) -> bool:
    """Whether no pair (a -> b) in `pairs` has b executing strictly before a."""
    times = _times(pairs, a, b)
    return times.intersect(isl.Map.lex_gt(times.get_space().domain())).is_empty()


def same_iteration(a: StatementModel, access_a: Access, b: StatementModel, access_b: Access) -> bool:
    """Whether instances of `a` and `b` whose accesses touch the same element always run in the same iteration
    of every loop around both: each such loop's index stands alone in one dimension of both accesses
    (`s[%i]` written and read under `affine.for %i`). Then within that iteration the statements run in program
    order, so the one earlier in the kernel runs first at every touching pair, which ISL need not be asked
    (a DenseNet's batch norms ask it hundreds of times)."""
    common = 0
    while common < min(len(a.loops), len(b.loops)) and a.loops[common] is b.loops[common]:
        common += 1
    for k in range(common):
        var = a.loops[k].var
        if any(lp.var == var for lp in a.loops[k + 1:]) or any(lp.var == var for lp in b.loops[k + 1:]):
            return False  # an inner loop of the same name is the one the subscripts mean
        if not any(isinstance(x, IndexRef) and x.name == var and isinstance(y, IndexRef) and y.name == var
                   for x, y in zip(access_a.indices, access_b.indices, strict=True)):
            return False
    return True
