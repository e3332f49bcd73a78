"""Dependences between statement instances of a kernel, from its ISL model and 2d+1 schedules."""

from __future__ import annotations

import islpy as isl

from solar.passes.analysis.isl_model import StatementModel


def touching(rel_a: isl.Map, rel_b: isl.Map) -> isl.Map:
    """Pairs (a -> b) of instances whose accesses `rel_a` and `rel_b` touch the same element."""
    return rel_a.apply_range(rel_b.reverse())


def always_before(pairs: isl.Map, a: StatementModel, b: StatementModel) -> bool:
    """Whether every pair (a -> b) in `pairs` has a executing strictly before b."""
    return pairs.subtract(a.schedule.lex_lt_map(b.schedule)).is_empty()


def never_before(pairs: isl.Map, a: StatementModel, b: StatementModel) -> bool:
    """Whether no pair (a -> b) in `pairs` has b executing strictly before a."""
    return pairs.intersect(b.schedule.lex_lt_map(a.schedule).reverse()).is_empty()
