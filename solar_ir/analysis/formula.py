"""Counts as formulas in the size parameters: what a sweep evaluates instead of rerunning the analysis.

A `Formula` is an exact, immutable expression in the size parameters. Its leaves are integers, parameters and
barvinok's piecewise quasi-polynomials (an ISL `PwQPolynomial`, such as the `card()` of an iteration domain);
its nodes are `+`, `*`, `/`, `//`, `%`, `min` and `max`. Arithmetic that ISL can do (sums and products of
quasi-polynomials, scaling) is done by ISL, which keeps the result one simplified quasi-polynomial; only
`min`, `max` and divisions by formulas stay nodes.

The cost model computes with formulas when it is given symbolic size values (`symbols(names)`): the same code
that counts at one point then yields the closed form of every count. Python code that must compare two
formulas (`a < b`) cannot decide symbolically; it raises `NotSymbolic`, and callers fall back to counting at
each point.

    f = Formula.from_isl(isl.Set("[N] -> { E[i, j] : 0 <= j <= i < N }").card())   # N*(N+1)/2
    f.evaluate({"N": 4})                       # 10
    f.evaluate_grid({"N": numpy.array([1, 2, 3], dtype=object)})   # array([1, 3, 6])
    str(f)                                     # "(1/2 * N + 1/2 * N^2)"

Evaluation is exact: integers are Python integers (NumPy object arrays on a grid), so no count overflows.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from fractions import Fraction
from functools import cached_property, reduce
from typing import TYPE_CHECKING, Any, Union

import islpy as isl

from solar.ir.analysis.quasi_polynomials import Env, Piece, fraction, param_names, pieces
from solar.ir.lazy_modules import LazyModule, is_array

if TYPE_CHECKING:
    import numpy as np
else:
    np = LazyModule("numpy")  # grids of sizes only (sweeps): pricing at one point never imports it

Number = Union[int, Fraction, "Formula"]


class NotSymbolic(TypeError):
    """A decision on a formula's value (a comparison) that only a point can make."""


def _in_space(poly: isl.PwQPolynomial, names: tuple[str, ...]) -> isl.PwQPolynomial:
    """`poly` over the parameters `names` (a superset of its own), so that ISL can combine it with another."""
    text = poly.to_str()
    body = text[text.index("{"):]
    return isl.PwQPolynomial(f"[{', '.join(names)}] -> {body}" if names else body)


def _positive(poly: isl.PwQPolynomial) -> isl.PwQPolynomial:
    """`poly` where every parameter is ≥ 1: the conditions that implies are dropped."""
    names = param_names(poly)
    if not names:
        return poly.coalesce()
    context = isl.Set(f"[{', '.join(names)}] -> {{ : {' and '.join(f'{n} >= 1' for n in names)} }}")
    return poly.gist_params(context).coalesce()


def _aligned(a: isl.PwQPolynomial, b: isl.PwQPolynomial) -> tuple[isl.PwQPolynomial, isl.PwQPolynomial]:
    pa, pb = param_names(a), param_names(b)
    if pa == pb:
        return a, b
    names = tuple(sorted(set(pa) | set(pb)))
    return (a if pa == names else _in_space(a, names)), (b if pb == names else _in_space(b, names))


_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: _true_div(a, b),
    "floordiv": lambda a, b: a // b,
    "mod": lambda a, b: a % b,
    "min": lambda a, b: np.minimum(a, b) if is_array(a) or is_array(b) else min(a, b),
    "max": lambda a, b: np.maximum(a, b) if is_array(a) or is_array(b) else max(a, b),
}


def _true_div(a: Any, b: Any) -> Any:
    """Exact division: an integer where it divides, else a Fraction (elementwise on arrays)."""
    if is_array(a) or is_array(b):
        a, b = np.broadcast_arrays(np.asarray(a, dtype=object), np.asarray(b, dtype=object))
        return np.frompyfunc(_true_div, 2, 1)(a, b)
    if b == 0:
        return 0
    q = Fraction(a) / Fraction(b)
    return int(q) if q.denominator == 1 else q


class Formula:
    """An exact expression in the size parameters (see the module docstring). Immutable and hashable."""

    __slots__ = ("__dict__", "args", "kind", "poly")

    def __init__(self, kind: str, args: tuple[Any, ...] = (), poly: isl.PwQPolynomial | None = None) -> None:
        self.kind = kind  # "isl" (a quasi-polynomial: integers and parameters too), or a key of _OPS
        self.args = args
        self.poly = poly

    # -- construction -----------------------------------------------------------------------------------
    @staticmethod
    def from_isl(poly: isl.PwQPolynomial) -> Formula:
        """A count's quasi-polynomial, simplified for sizes ≥ 1 (the only values a size takes)."""
        return Formula("isl", poly=_positive(poly))

    @staticmethod
    def param(name: str) -> Formula:
        return Formula("isl", poly=isl.PwQPolynomial(f"[{name}] -> {{ {name} }}"))

    @staticmethod
    def const(value: int | Fraction) -> Formula:
        return Formula("isl", poly=isl.PwQPolynomial(f"{{ {value} }}"))

    @staticmethod
    def of(value: Number) -> Formula:
        return value if isinstance(value, Formula) else Formula.const(value)

    # -- what it is ----------------------------------------------------------------------------------
    @cached_property
    def constant(self) -> int | Fraction | None:
        """The value when it does not depend on any parameter (and is defined everywhere)."""
        if self.kind != "isl" or self.poly is None:
            return None
        poly = self.poly.drop_unused_params()
        if param_names(poly):
            return None
        pieces = poly.get_pieces()
        if not pieces:
            return 0
        if len(pieces) != 1 or not pieces[0][0].plain_is_universe():
            return None
        terms = pieces[0][1].get_terms()
        if not terms:
            return 0
        if len(terms) != 1:
            return None
        value = fraction(terms[0].get_coefficient_val())
        return int(value) if value.denominator == 1 else value

    @cached_property
    def params(self) -> frozenset[str]:
        # Children first (post-order), each caching its own set: no recursion however deep the formula.
        for node in _postorder(self):
            if "params" in node.__dict__ or node is self:
                continue
            node.__dict__["params"] = node._own_params()
        return self._own_params()

    def _own_params(self) -> frozenset[str]:
        """The parameters of this node, its arguments' sets already cached."""
        if self.kind == "isl":
            assert self.poly is not None
            return frozenset(param_names(self.poly.drop_unused_params()))
        return frozenset().union(*(a.__dict__["params"] for a in self.args))

    def is_zero(self) -> bool:
        return self.kind == "isl" and self.poly is not None and self.poly.is_zero()

    # -- arithmetic -----------------------------------------------------------------------------------
    def _binary(self, kind: str, other: Number, reflected: bool = False) -> Formula:
        a, b = (Formula.of(other), self) if reflected else (self, Formula.of(other))
        if a.kind == "isl" and b.kind == "isl" and kind in ("add", "mul"):
            pa, pb = _aligned(a.poly, b.poly)
            return Formula("isl", poly=_positive(pa.add(pb) if kind == "add" else pa.mul(pb)))
        ca, cb = a.constant, b.constant
        if kind == "mul" and (ca == 1 or cb == 1):
            return b if ca == 1 else a
        if kind == "add" and (ca == 0 or cb == 0):
            return b if ca == 0 else a
        if ca is not None and cb is not None:
            return Formula.const(_OPS[kind](ca, cb))
        if kind == "div" and cb not in (None, 0):
            return Formula("isl", poly=a.poly.scale_val(isl.Val(str(Fraction(1) / Fraction(cb))))) \
                if a.kind == "isl" else Formula(kind, (a, b))
        if kind in ("floordiv", "div") and cb == 1:
            return a
        return Formula(kind, (a, b))

    def __add__(self, other: Number) -> Formula:
        return self if _is_zero(other) else self._binary("add", other)

    def __radd__(self, other: Number) -> Formula:
        return self if _is_zero(other) else self._binary("add", other, reflected=True)

    def __sub__(self, other: Number) -> Formula:
        return self + (-1) * Formula.of(other)

    def __rsub__(self, other: Number) -> Formula:
        return Formula.of(other) + (-1) * self

    def __neg__(self) -> Formula:
        return (-1) * self

    def __mul__(self, other: Number) -> Formula:
        return self._binary("mul", other)

    def __rmul__(self, other: Number) -> Formula:
        return self._binary("mul", other, reflected=True)

    def __truediv__(self, other: Number) -> Formula:
        return self._binary("div", other)

    def __rtruediv__(self, other: Number) -> Formula:
        return self._binary("div", other, reflected=True)

    def __floordiv__(self, other: Number) -> Formula:
        return self._binary("floordiv", other)

    def __rfloordiv__(self, other: Number) -> Formula:
        return self._binary("floordiv", other, reflected=True)

    def __mod__(self, other: Number) -> Formula:
        return self._binary("mod", other)

    def __rmod__(self, other: Number) -> Formula:
        return self._binary("mod", other, reflected=True)

    def __round__(self, ndigits: None = None) -> Formula:
        return self  # counts are whole numbers; a mean over runs stays exact (a Fraction at a point)

    def __bool__(self) -> bool:
        """False only for the formula that is zero everywhere: adding a zero term can be skipped."""
        return not self.is_zero()

    def _undecidable(self, other: object) -> bool:
        raise NotSymbolic(f"comparing the formula {self} with {other} needs a point")

    __lt__ = __le__ = __gt__ = __ge__ = _undecidable

    def __eq__(self, other: object) -> bool:
        if isinstance(other, int | Fraction):
            return self.constant == other
        if not isinstance(other, Formula):
            return False
        pairs = [(self, other)]  # compared node by node with a stack: formulas can be thousands deep
        while pairs:
            a, b = pairs.pop()
            if a is b:
                continue
            if a.kind != b.kind:
                return False
            if a.kind == "isl":
                pa, pb = _aligned(a.poly, b.poly)
                if not pa.sub(pb).is_zero():
                    return False
            elif len(a.args) != len(b.args) or hash(a) != hash(b):
                return False
            else:
                pairs.extend(zip(a.args, b.args, strict=True))
        return True

    def __hash__(self) -> int:
        cached = self.__dict__.get("_hash")
        if cached is None:
            for node in _postorder(self):  # children first, each caching its own: no recursion
                if "_hash" not in node.__dict__:
                    node.__dict__["_hash"] = hash((node.kind, node.params)) if node.kind == "isl" else \
                        hash((node.kind, *(a.__dict__["_hash"] for a in node.args)))
            cached = self.__dict__["_hash"]
        return cached

    # -- evaluation -----------------------------------------------------------------------------------
    @cached_property
    def _compiled(self) -> tuple[tuple[str, ...], list[Piece]]:
        assert self.poly is not None
        return pieces(self.poly)

    def evaluate(self, values: Mapping[str, int]) -> int | Fraction:
        """The exact value at one point (every parameter the formula uses needs a value)."""
        return _scalar(self._eval(values, (), {}))

    def evaluate_grid(self, values: Env) -> np.ndarray:
        """The exact values at many points: `values` maps each parameter to an array (all of one shape)."""
        arrays = {k: np.asarray(v, dtype=object) for k, v in values.items()}
        shape = next((a.shape for a in arrays.values()), ())
        out = self._eval(arrays, shape, {})
        return np.broadcast_to(np.asarray(out, dtype=object), shape)

    def _eval(self, env: Env, shape: tuple[int, ...], memo: dict[int, Any]) -> Any:
        """The value of every node, children first (`memo`: id -> value, shared between the formulas of one
        evaluation). Iterative: a program of hundreds of layers sums into formulas hundreds of nodes deep.
        A node's value is dropped from `memo` once every node above it has used it (only the values of the
        roots stay), so a grid of a million points holds a few arrays at a time, not one per node."""
        order = _postorder(self, memo)
        uses: dict[int, int] = {}
        for node in order:
            for a in node.args:
                uses[id(a)] = uses.get(id(a), 0) + 1
        fresh = {id(node) for node in order}
        for node in order:
            if node.kind == "isl":
                memo[id(node)] = node._eval_leaf(env, shape)
                continue
            memo[id(node)] = reduce(_OPS[node.kind], [memo[id(a)] for a in node.args])
            for a in node.args:
                uses[id(a)] -= 1
                if not uses[id(a)] and id(a) in fresh and a is not self:
                    del memo[id(a)]
        return memo[id(self)]

    def _eval_leaf(self, env: Env, shape: tuple[int, ...]) -> Any:
        names, pieces = self._compiled
        missing = [n for n in names if n not in env]
        if missing:
            raise KeyError(f"the formula {self} needs a value for {', '.join(missing)}")
        result: Any = np.zeros(shape, dtype=object) if shape else 0
        for piece in reversed(pieces):  # pieces are disjoint: the order does not matter
            inside = piece.contains(env, shape)
            value = piece.value(env)
            result = np.where(inside, value, result) if shape else (value if inside else result)
        return result

    # -- printing -------------------------------------------------------------------------------------
    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return f"Formula({self.text()})"

    def text(self, context: isl.Set | None = None, names: Mapping[str, str] | None = None) -> str:
        """Readable text; `context` (a parameter set such as all sizes ≥ 1) drops the conditions it implies,
        `names` renames ISL parameter names back to the IR's."""
        # Written piece by piece from a stack (no recursion, and no text held per node: output-sized work).
        out: list[str] = []
        stack: list[Formula | str] = [self]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                out.append(item)
            elif item.kind == "isl":
                assert item.poly is not None
                poly = item.poly if context is None else _gisted(item.poly, context)
                out.append(_poly_text(poly, names or {}))
            else:
                kind = item.kind
                separator = ", " if kind in ("min", "max") else \
                    {"add": " + ", "mul": " * ", "div": " / ", "floordiv": " // ", "mod": " % "}[kind]
                pieces: list[Formula | str] = [f"{kind}(" if kind in ("min", "max") else "("]
                for k, a in enumerate(item.args):
                    pieces += [separator, a] if k else [a]
                pieces.append(")")
                stack.extend(reversed(pieces))
        return "".join(out)


def _postorder(root: Formula, done: Mapping[int, Any] | None = None) -> list[Formula]:
    """The nodes of `root` (each once, by identity), every node after its arguments; nodes whose id is in
    `done` are skipped with their arguments. An explicit stack: depth is bounded by memory, not recursion."""
    done = done or {}
    seen: set[int] = set()
    order: list[Formula] = []
    stack: list[tuple[Formula, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen or id(node) in done:
            continue
        seen.add(id(node))
        stack.append((node, True))
        stack.extend((a, False) for a in reversed(node.args))
    return order


def _gisted(poly: isl.PwQPolynomial, context: isl.Set) -> isl.PwQPolynomial:
    names = tuple(sorted(set(param_names(poly)) | {context.get_dim_name(isl.dim_type.param, k)
                                                for k in range(context.dim(isl.dim_type.param))}))
    ctx_text = context.to_str()
    aligned_ctx = isl.Set(f"[{', '.join(names)}] -> {ctx_text[ctx_text.index('{'):]}")
    return _in_space(poly, names).gist_params(aligned_ctx).coalesce()


_PREFIX = re.compile(r"^\s*(\[[^\]]*\]\s*->\s*)?\{\s*")


def _poly_text(poly: isl.PwQPolynomial, names: Mapping[str, str]) -> str:
    """`2 * B * S` for one piece without condition; `a if cond; b if cond; 0 elsewhere` otherwise."""
    text = _PREFIX.sub("", poly.to_str()).rstrip()
    text = text[:-1].rstrip() if text.endswith("}") else text
    if not text:
        return "0"
    for isl_name, ir_name in names.items():
        if isl_name != ir_name:
            text = re.sub(rf"\b{re.escape(isl_name)}\b", ir_name, text)
    pieces = [p.strip() for p in text.split(";")]
    out = []
    for piece in pieces:
        value, _, condition = piece.partition(" : ")
        out.append(f"{_unwrap(value)} if {condition}" if condition else _unwrap(value))
    if len(out) == 1 and " if " not in out[0]:
        return out[0]
    return "; ".join(out) + "; 0 elsewhere"


def _unwrap(text: str) -> str:
    text = text.strip()
    if text.startswith("(") and text.endswith(")"):
        depth = 0
        for k, ch in enumerate(text):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0 and k < len(text) - 1:
                return text
        return text[1:-1]
    return text


def _is_zero(value: Number) -> bool:
    return isinstance(value, int | Fraction) and value == 0


def _scalar(value: Any) -> int | Fraction:
    if is_array(value):
        value = value.item()
    if isinstance(value, Fraction) and value.denominator == 1:
        return int(value)
    return value


# ---- min and max over numbers and formulas -------------------------------------------------------------


def fmin(*values: Number) -> Number:
    """`min` that also takes formulas (then a formula; equal arguments collapse)."""
    return _extreme("min", values)


def fmax(*values: Number) -> Number:
    """`max` that also takes formulas (then a formula; equal arguments collapse)."""
    return _extreme("max", values)


def fmax_of(values: Iterable[Number], default: Number = 0) -> Number:
    """`max(values, default=...)` for numbers and formulas."""
    items = list(values)
    return fmax(*items) if items else default


def provably_at_most(a: Formula, b: Formula) -> bool:
    """a ≤ b for every size ≥ 1, shown cheaply: b - a is one polynomial (no pieces, no floors) whose
    coefficients are all ≥ 0. False means "not shown", not "a > b"."""
    if a.kind != "isl" or b.kind != "isl":
        return False
    pa, pb = _aligned(a.poly, b.poly)
    diff = _positive(pb.sub(pa))
    if diff.is_zero():
        return True
    pieces = diff.get_pieces()
    if len(pieces) != 1 or not pieces[0][0].plain_is_universe():
        return False
    terms = pieces[0][1].get_terms()
    return all(fraction(t.get_coefficient_val()) >= 0 and t.dim(isl.dim_type.div) == 0 for t in terms)


def _extreme(kind: str, values: tuple[Number, ...]) -> Number:
    plain = [v for v in values if not isinstance(v, Formula)]
    formulas: list[Formula] = []
    flat = [a for v in values for a in (v.args if isinstance(v, Formula) and v.kind == kind else (v,))]
    for v in flat:
        if isinstance(v, Formula):
            c = v.constant
            if c is not None:
                plain.append(c)
                continue
            # Keep only the arguments that may decide: min drops one provably above another (max: below).
            if any((provably_at_most(f, v) if kind == "min" else provably_at_most(v, f)) for f in formulas):
                continue
            formulas = [f for f in formulas
                        if not (provably_at_most(v, f) if kind == "min" else provably_at_most(f, v))]
            formulas.append(v)
    if not formulas:
        return (min if kind == "min" else max)(plain)
    args: list[Formula] = list(formulas)
    if plain:
        args.append(Formula.const((min if kind == "min" else max)(plain)))
    return reduce(lambda a, b: Formula(kind, (a, b)), args) if len(args) > 1 else args[0]


def symbols(names: Iterable[str], isl_names: Callable[[str], str] = lambda n: n) -> dict[str, Formula]:
    """Symbolic values for the size parameters: pass them where a point's values go."""
    return {n: Formula.param(isl_names(n)) for n in names}


def is_symbolic(values: Mapping[str, Any]) -> bool:
    return any(isinstance(v, Formula) for v in values.values())
