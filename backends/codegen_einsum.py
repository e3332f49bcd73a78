"""SIR einsums → Python source compiled by Numba (canonical like kernels, see `codegen`): the einsum's loop
nest over its index ranges and where-clause, its combine and reduce, and its pointwise epilogue."""

from __future__ import annotations

import math
from dataclasses import dataclass

from solar.ir.dtypes import DType
from solar.ir.einsum_spec import EinsumSpec
from solar.ir.expr import (
    Access,
    Binary,
    Expr,
    IndexRef,
    NameRef,
    free_indices,
    linear_form,
    walk,
)
from solar.ir.ops import EinsumOp

from . import loop_analysis as analysis
from .codegen_expr import JIT_OPTIONS, MIN_PARALLEL_POINTS, ROUNDERS, SourceEmitter, compute_class, literal
from .dtypes import identity, is_rounded
from .einsum import geometry
from .errors import UnsupportedError
from .loop_analysis import IntervalEnv

# ---- einsums ---------------------------------------------------------------------------------------


@dataclass
class GeneratedEinsum:
    source: str
    parallel: bool
    precomputed: bool  # the first argument is the already reduced result; only the epilogue runs
    scatter: bool = False  # points combine into `out` as their result subscripts say; out starts filled


class EinsumGen(SourceEmitter):
    """An einsum as a loop nest: result indices outside (the first one `prange`), reduced indices inside.

    Where-clause constraints become loop bounds when they bound a reduced index with coefficient ±1, else
    guards; operand reads through windows outside their tensor read 0, as docs/ir.md says."""

    def __init__(self, op: EinsumOp, precomputed: bool = False) -> None:
        super().__init__()
        self.op = op
        geo = geometry(op)
        self.spec: EinsumSpec = geo.spec
        self.out = op.outputs[0]
        self.precomputed = precomputed
        self.ranges = geo.ranges
        self.operands = {b.name: (f"x{k}", b.value.type, term)
                         for k, (b, term) in enumerate(zip(op.inputs, self.spec.inputs, strict=True))}
        out_letters: list[str] = []
        self.scatter = False  # result subscripts with windows or constants (a transposed convolution)
        for entry in self.spec.output:
            if not isinstance(entry, IndexRef) or entry.name in out_letters:
                self.scatter = True
            else:
                out_letters.append(entry.name)
        if self.scatter:
            out_letters = []
        self.out_letters = out_letters
        self.red_letters = [i for i in self.spec.indices if i not in out_letters]
        self.where = geo.where
        self.acc = "acc"

    def element_type(self, node: Expr) -> DType:
        assert isinstance(node, NameRef)
        if node.name == self.out.name:
            return self.out.type.dtype
        t = self.operands[node.name][1]
        assert t is not None
        return t.dtype

    def read(self, e: NameRef | Access) -> str:
        assert isinstance(e, NameRef)
        if e.name == self.out.name:
            return self.acc
        canon, t, term = self.operands[e.name]
        assert t is not None
        shape = t.concrete_shape()
        idx = [self.index(x) for x in term]
        guards = []
        env = IntervalEnv(vars={"%" + k: self.bound_range(k) for k in self.ranges})
        for x, code, size in zip(term, idx, shape, strict=True):
            rng = analysis.interval(x, env)
            if rng is None or rng[0] < 0 or rng[1] >= size:
                guards.append(f"({code} >= 0 and {code} < {size})")
        elem = f"{canon}[{', '.join(idx)}]" if idx else f"{canon}[0]"
        if not guards:
            return elem
        zero = literal(0, compute_class(t.dtype))
        return f"({elem} if {' and '.join(guards)} else {zero})"

    def bound_range(self, letter: str) -> tuple[int, int]:
        return 0, self.ranges[letter] - 1

    def generate(self) -> GeneratedEinsum:
        if self.scatter:
            return self.generate_scatter()
        first = self.op.body[0]
        epilogue = self.op.body[1] if len(self.op.body) > 1 else None
        out_t = self.out.type.dtype
        ctx = compute_class(out_t)
        args = (["r"] if self.precomputed else []) + [c for c, _, _ in self.operands.values()] + ["out", "err"]
        order = [*self.out_letters, *self.red_letters]
        level = {k: n for n, k in enumerate(order)}
        # Each constraint is checked once all its letters are bound: on the result element when it names
        # only result letters, else at the loop of its innermost reduced letter.
        on_element: list[Binary] = []
        placed: dict[str, list[Binary]] = {}
        for c in self.where:
            letters = [r.name for r in free_indices(c)]
            inner = max(letters, key=lambda x: level[x]) if letters else None
            if inner is None or inner in self.out_letters:
                on_element.append(c)
            else:
                placed.setdefault(inner, []).append(c)
        for letter in order:
            self.loop_names[letter] = self.fresh("i")
        parallel = bool(self.out_letters) and math.prod(self.ranges.values()) >= MIN_PARALLEL_POINTS
        for n, letter in enumerate(self.out_letters):
            kind = "prange" if n == 0 and parallel else "range"
            self.line(f"for {self.loop_names[letter]} in {kind}({self.ranges[letter]}):")
            self.indent += 1
        out_idx = ", ".join(self.loop_names[k] for k in self.out_letters) or "0"
        body_indent = self.indent
        if self.precomputed:
            self.line(f"{self.acc} = r[{out_idx}]")
        else:
            red = first.reduction
            self.line(f"{self.acc} = {literal(identity(red, out_t) if red else 0, ctx)}")
            if on_element:
                self.line(f"if {' and '.join(self.constraint(c) for c in on_element)}:")
                self.indent += 1
            for letter in self.red_letters:
                lo, hi, rest = self.bounds_for(letter, placed.get(letter, []))
                self.line(f"for {self.loop_names[letter]} in range({lo}, {hi}):")
                self.indent += 1
                if rest:
                    self.line(f"if {' and '.join(self.constraint(c) for c in rest)}:")
                    self.indent += 1
            self.combine_line(self.acc, red, self.value(first.value, ctx), out_t, ctx.is_float)
            self.indent = body_indent
        if epilogue is not None:
            self.line(f"{self.acc} = {self.value(epilogue.value, ctx)}")
        store = f"{ROUNDERS[out_t]}({self.acc})" if is_rounded(out_t) else self.acc
        self.line(f"out[{out_idx}] = {store}")
        self.indent = 1
        self.line("return 0")
        head = f"@njit({JIT_OPTIONS.format(parallel=parallel)})\ndef kernel({', '.join(args)}):\n"
        return GeneratedEinsum(head + "\n".join(self.lines) + "\n", parallel, self.precomputed)

    def generate_scatter(self) -> GeneratedEinsum:
        """Result subscripts that are windows (`"ncp,ckr->nk(2p+r-1)"`): every iteration point combines into
        the result element its subscripts name, skipping positions outside the result. Several points reach
        one element, so the loops run sequentially, into `out` already filled with the identity (0 for a
        map) by the caller; the epilogue and rounding run afterwards (`generate_einsum_epilogue`)."""
        if self.precomputed:
            raise UnsupportedError("internal: the epilogue of a windowed result uses generate_einsum_epilogue")
        first = self.op.body[0]
        out_t = self.out.type.dtype
        ctx = compute_class(out_t)
        args = [c for c, _, _ in self.operands.values()] + ["out", "err"]
        placed: dict[str, list[Binary]] = {}
        order = list(self.spec.indices)
        level = {k: n for n, k in enumerate(order)}
        on_entry: list[Binary] = []
        for c in self.where:
            letters = [r.name for r in free_indices(c)]
            if letters:
                placed.setdefault(max(letters, key=lambda x: level[x]), []).append(c)
            else:
                on_entry.append(c)
        for letter in order:
            self.loop_names[letter] = self.fresh("i")
        if on_entry:
            self.line(f"if not ({' and '.join(self.constraint(c) for c in on_entry)}):")
            self.line("    return 0")
        for letter in order:
            lo, hi, rest = self.bounds_for(letter, placed.get(letter, []))
            self.line(f"for {self.loop_names[letter]} in range({lo}, {hi}):")
            self.indent += 1
            if rest:
                self.line(f"if {' and '.join(self.constraint(c) for c in rest)}:")
                self.indent += 1
        shape = self.out.type.concrete_shape()
        env = IntervalEnv(vars={"%" + k: self.bound_range(k) for k in self.ranges})
        idx, guards = [], []
        for n, (entry, size) in enumerate(zip(self.spec.output, shape, strict=True)):
            code = self.index(entry)
            rng = analysis.interval(entry, env)
            if rng is not None and rng[0] >= 0 and rng[1] < size:
                idx.append(code)
                continue
            temp = f"o{n}"
            self.line(f"{temp} = {code}")
            guards.append(f"{temp} >= 0 and {temp} < {size}")
            idx.append(temp)
        if guards:
            self.line(f"if {' and '.join(guards)}:")
            self.indent += 1
        target = f"out[{', '.join(idx) or '0'}]"
        self.combine_line(target, first.reduction, self.value(first.value, ctx), out_t, ctx.is_float)
        self.indent = 1
        self.line("return 0")
        head = f"@njit({JIT_OPTIONS.format(parallel=False)})\ndef kernel({', '.join(args)}):\n"
        return GeneratedEinsum(head + "\n".join(self.lines) + "\n", False, False, scatter=True)

    def constraint(self, c: Binary) -> str:
        return f"({self.index(c.lhs)} {c.op} {self.index(c.rhs)})"

    def bounds_for(self, letter: str, cons: list[Binary]) -> tuple[str, str, list[Binary]]:
        """Loop bounds of a reduced index, tightened by the constraints placed at its level."""
        lows, highs, rest = ["0"], [str(self.ranges[letter])], []
        key = "%" + letter
        for c in cons:
            form = linear_form(Binary("-", c.lhs, c.rhs))
            coeff = dict(form[0]).get(key, 0) if form is not None else 0
            if form is None or abs(coeff) != 1 or c.op not in (">=", ">", "<=", "<", "=="):
                rest.append(c)
                continue
            # Solve `coeff*letter + rest OP 0` for the letter: letter OP' -rest/coeff.
            sign = -coeff
            rest_terms = [(n, v * sign) for n, v in form[0] if n != key]
            bound = _linear_code([(self.loop_names[n[1:]], v) for n, v in rest_terms], form[1] * sign)
            op = c.op if coeff == 1 else {">=": "<=", ">": "<", "<=": ">=", "<": ">", "==": "=="}[c.op]
            if op in (">=", "=="):
                lows.append(bound)
            if op == ">":
                lows.append(f"{bound} + 1")
            if op in ("<=", "=="):
                highs.append(f"{bound} + 1")
            if op == "<":
                highs.append(bound)
        lo = lows[0] if len(lows) == 1 else f"max({', '.join(lows)})"
        hi = highs[0] if len(highs) == 1 else f"min({', '.join(highs)})"
        return lo, hi, rest


def _linear_code(terms: list[tuple[str, int]], const: int) -> str:
    parts = []
    for name, v in terms:
        parts.append(name if v == 1 else f"-{name}" if v == -1 else f"{v} * {name}")
    if const or not parts:
        parts.append(str(const))
    return "(" + " + ".join(parts) + ")"


def generate_einsum(op: EinsumOp, precomputed: bool = False) -> GeneratedEinsum:
    return EinsumGen(op, precomputed).generate()


class _ResultEmitter(SourceEmitter):
    """Emits an epilogue whose only tensor is the result, held in `acc`."""

    def __init__(self, dtype: DType) -> None:
        super().__init__()
        self.dtype = dtype

    def element_type(self, node: Expr) -> DType:
        return self.dtype

    def read(self, e: NameRef | Access) -> str:
        return "acc"


def generate_einsum_epilogue(op: EinsumOp) -> GeneratedEinsum:
    """The epilogue (and rounding) of an einsum, once per result element of an already combined result `r`:
    for results written through windows, whose elements no result letter enumerates. The epilogue may read
    only the result there."""
    out = op.outputs[0]
    gen = _ResultEmitter(out.type.dtype)
    if len(op.body) < 2:
        raise UnsupportedError("internal: no epilogue")
    if any(isinstance(n, NameRef) and n.name != out.name for n in walk(op.body[1].value)):
        raise UnsupportedError(f"einsum @{op.symbol}: an epilogue over a windowed result may read only {out.name}")
    out_t = out.type.dtype
    ctx = compute_class(out_t)
    shape = out.type.concrete_shape()
    names = [f"i{n}" for n in range(len(shape))]
    parallel = bool(shape) and math.prod(shape) >= MIN_PARALLEL_POINTS
    for n, (name, size) in enumerate(zip(names, shape, strict=True)):
        gen.line(f"for {name} in {'prange' if n == 0 and parallel else 'range'}({size}):")
        gen.indent += 1
    idx = ", ".join(names) or "0"
    gen.line(f"acc = r[{idx}]")
    gen.line(f"acc = {gen.value(op.body[1].value, ctx)}")
    gen.line(f"out[{idx}] = {f'{ROUNDERS[out_t]}(acc)' if is_rounded(out_t) else 'acc'}")
    gen.indent = 1
    gen.line("return 0")
    args = ["r"] + [f"x{k}" for k in range(len(op.inputs))] + ["out", "err"]
    head = f"@njit({JIT_OPTIONS.format(parallel=parallel)})\ndef kernel({', '.join(args)}):\n"
    return GeneratedEinsum(head + "\n".join(gen.lines) + "\n", parallel, True)

