"""Barvinok's piecewise quasi-polynomials compiled for evaluation at a point or over a grid: each piece's
domain constraints and polynomial terms as integer affine forms over the parameters and the piece's local
divisions (floors), evaluated exactly with Python integers (NumPy object arrays on a grid). `Formula`'s
leaves (formula.py) evaluate through these.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import reduce
from math import lcm
from typing import TYPE_CHECKING, Any

import islpy as isl

from solar.ir.lazy_modules import LazyModule

if TYPE_CHECKING:
    import numpy as np
else:
    np = LazyModule("numpy")  # grids of sizes only (sweeps)

Env = Mapping[str, Any]  # parameter name -> an int, or a NumPy object array (all of one shape)


def param_names(poly: isl.PwQPolynomial) -> tuple[str, ...]:
    space = poly.get_domain_space()
    return tuple(space.get_dim_name(isl.dim_type.param, k) for k in range(space.dim(isl.dim_type.param)))


def fraction(val: isl.Val) -> Fraction:
    return Fraction(str(val))



@dataclass(frozen=True)
class _Affine:
    """floor((Σ coeff·param + Σ coeff·div + constant) / denominator) with integer numerator coefficients."""

    params: tuple[tuple[str, int], ...]
    divs: tuple[tuple[int, int], ...]  # (index of a div of the same local space, coefficient)
    constant: int
    denominator: int
    nested: tuple[_Affine, ...] = ()  # the divs of its own local space (a floor inside a term's floor)

    def value(self, env: Env, divs: list[Any]) -> Any:
        if self.nested and not divs:
            for d in self.nested:
                divs.append(d.value(env, divs))
        total: Any = self.constant
        for name, c in self.params:
            total = total + c * env[name]
        for k, c in self.divs:
            total = total + c * divs[k]
        return total // self.denominator if self.denominator != 1 else total


def _affine(aff: isl.Aff, names: tuple[str, ...], own_divs: bool = True) -> _Affine:
    """An ISL affine expression (whose value a div floors) as integer coefficients over one denominator."""
    den = fraction(aff.get_denominator_val())
    scale = int(den)

    def num(val: isl.Val) -> int:
        return int(fraction(val) * scale)

    params = tuple((n, num(aff.get_coefficient_val(isl.dim_type.param, k))) for k, n in enumerate(names))
    divs = tuple((k, num(aff.get_coefficient_val(isl.dim_type.div, k))) for k in range(aff.dim(isl.dim_type.div)))
    # A term's floor carries its own divs; a basic set's divs index the set's list (own_divs=False).
    nested = tuple(_local_divs(aff.get_local_space(), names)) if divs and own_divs else ()
    return _Affine(tuple(p for p in params if p[1]), tuple(d for d in divs if d[1]),
                   num(aff.get_constant_val()), scale, nested)


def _local_divs(space: isl.LocalSpace, names: tuple[str, ...]) -> list[_Affine]:
    return [_affine(space.get_div(k), names, own_divs=False) for k in range(space.dim(isl.dim_type.div))]


@dataclass(frozen=True)
class Piece:
    """One piece: a union of basic sets (each a conjunction of affine constraints, with local divs) and a
    quasi-polynomial as integer terms over a common denominator."""

    domains: tuple[tuple[list[_Affine], list[tuple[bool, _Affine]]], ...]  # (divs, (is_equality, lhs ≥/= 0))
    terms: tuple[tuple[int, tuple[tuple[str, int], ...], tuple[tuple[_Affine, int], ...]], ...]
    denominator: int

    def contains(self, env: Env, shape: tuple[int, ...]) -> Any:
        inside: Any = np.zeros(shape, dtype=bool) if shape else False
        for divs, constraints in self.domains:
            values: list[Any] = []
            for d in divs:
                values.append(d.value(env, values))
            ok: Any = np.ones(shape, dtype=bool) if shape else True
            for equality, lhs in constraints:
                v = lhs.value(env, values)
                ok = ok & ((v == 0) if equality else (v >= 0))
            inside = inside | ok
        return inside

    def value(self, env: Env) -> Any:
        total: Any = 0
        for coeff, powers, floors in self.terms:
            term: Any = coeff
            for name, e in powers:
                term = term * env[name] ** e
            for aff, e in floors:
                term = term * aff.value(env, []) ** e
            total = total + term
        return total // self.denominator if self.denominator != 1 else total


def _constraint(con: isl.Constraint, names: tuple[str, ...], ndivs: int) -> tuple[bool, _Affine]:
    params = tuple((n, int(fraction(con.get_coefficient_val(isl.dim_type.param, k)))) for k, n in enumerate(names))
    divs = tuple((k, int(fraction(con.get_coefficient_val(isl.dim_type.div, k)))) for k in range(ndivs))
    return con.is_equality(), _Affine(tuple(p for p in params if p[1]), tuple(d for d in divs if d[1]),
                                      int(fraction(con.get_constant_val())), 1)


def pieces(poly: isl.PwQPolynomial) -> tuple[tuple[str, ...], list[Piece]]:
    names = param_names(poly)
    compiled: list[Piece] = []
    for domain, qp in poly.get_pieces():
        domains = []
        for bs in domain.compute_divs().get_basic_sets():
            ndivs = bs.dim(isl.dim_type.div)
            divs = _local_divs(bs.get_local_space(), names)
            domains.append((divs, [_constraint(c, names, ndivs) for c in bs.get_constraints()]))
        raw = []
        for term in qp.get_terms():
            coeff = fraction(term.get_coefficient_val())
            powers = tuple((n, e) for k, n in enumerate(names) if (e := term.get_exp(isl.dim_type.param, k)))
            floors = tuple((_affine(term.get_div(k), names), e) for k in range(term.dim(isl.dim_type.div))
                           if (e := term.get_exp(isl.dim_type.div, k)))
            raw.append((coeff, powers, floors))
        den = reduce(lcm, (c.denominator for c, _, _ in raw), 1)
        terms = tuple((int(c * den), p, f) for c, p, f in raw)
        compiled.append(Piece(tuple(domains), terms, den))
    return names, compiled

