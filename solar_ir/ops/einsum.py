"""`solar.einsum`: one extended einsum, its subscripts in `spec` (see `solar.ir.einsum_spec`), and its
printing and verification."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..diagnostics import UNKNOWN, Location
from ..dtypes import DType
from ..einsum_spec import EinsumSpec, SpecError, format_where, index_ranges, parse_spec, parse_where
from ..expr import Binary, Expr, IndexRef, format_expr
from ..printer import Printer, format_string
from ..types import dims_equal, format_dim
from ..verify_base import RESERVED_WORDS, KernelScope
from .base import ExprFn, TypeFn
from .kernel import REDUCTIONS, Binding, BoundOp, TensorDecl, check_store, format_bindings, format_decls

if TYPE_CHECKING:
    from ..verifier import Verifier


class EinsumStmt:
    __slots__ = ("loc", "op", "target", "value")

    def __init__(self, target: str, op: str, value: Expr, loc: Location = UNKNOWN) -> None:
        self.target = target
        self.op = op
        self.value = value
        self.loc = loc

    @property
    def reduction(self) -> str | None:
        return REDUCTIONS.get(self.op)


def _string_offset(loc: Location, offset: int) -> Location:
    # +1 skips the opening quote of the string literal.
    return Location(loc.file, loc.line, loc.col + 1 + offset)


class EinsumOp(BoundOp):
    """One extended einsum; `spec` holds the subscripts (see `solar.ir.einsum_spec`)."""

    opname = "solar.einsum"
    __slots__ = ("body", "inputs", "outputs", "spec", "spec_loc", "symbol", "where", "where_loc")

    def __init__(self, symbol: str, spec: str, inputs: list[Binding], outputs: list[TensorDecl],
                 body: list[EinsumStmt], where: str | None = None, loc: Location = UNKNOWN) -> None:
        super().__init__(loc)
        self.symbol = symbol
        self.spec = spec
        self.where = where
        self.inputs = inputs
        self.outputs = outputs
        self.body = body
        # Positions of the subscript strings, so a mistake inside one is reported at its column.
        self.spec_loc: Location = loc
        self.where_loc: Location | None = None

    def map_types(self, fn: TypeFn) -> None:
        for d in self.outputs:
            d.type = fn(d.type)

    def map_exprs(self, fn: ExprFn) -> None:
        for s in self.body:
            s.value = fn(s.value)
        if self.where is not None:  # the size parameters it names (`j<=CONTEXT`) follow a substitution
            try:
                constraints = parse_where(self.where, parse_spec(self.spec).indices)
                self.where = format_where([Binary(c.op, fn(c.lhs), fn(c.rhs)) for c in constraints])
            except (SpecError, ValueError):
                pass  # a clause that does not parse or stays non-affine is left for the verifier to report

    def print(self, p: Printer, indent: int) -> None:
        pad = "  " * indent
        where = f" where {format_string(self.where)}" if self.where is not None else ""
        out = p.out
        out.append(f"{pad}{p.lhs(self)}solar.einsum @{self.symbol} {format_string(self.spec)}{where} "
                   f"({format_bindings(self.inputs)}) -> ({format_decls(self.outputs)}){p.attrs_clause(self)} {{\n")
        for s in self.body:
            out.append(f"{pad}  {s.target} {s.op} {format_expr(s.value)}\n")
        out.append(f"{pad}}}{p.src_loc(self)}\n")

    # ---- verification ----------------------------------------------------------------------------
    def verify(self, v: Verifier, for_vars: set[str]) -> None:
        v.declare_symbol(self.symbol, self.loc, "einsum")
        spec = self._spec(v)
        if len(self.outputs) != 1:
            v.error(f"solar.einsum has exactly one result, not {len(self.outputs)}", self.loc)
            return
        out = self.outputs[0]
        elements: dict[str, DType] = {}
        names: dict[str, Location] = {}
        for b in self.inputs:
            if b.name in names or b.name == out.name:
                v.error(f"tensor name {b.name} is used twice in einsum @{self.symbol}", b.loc)
            if b.name in RESERVED_WORDS:
                v.error(f"'{b.name}' is a keyword of SIR and cannot name a tensor", b.loc)
            names[b.name] = b.loc
            if b.value.type is not None:
                elements[b.name] = b.value.type.dtype
        if spec is not None:
            self._shapes(v, spec, out)
        if not self.body or len(self.body) > 2:
            v.error("an einsum body is one statement, optionally followed by an epilogue", self.loc)
            return
        first = self.body[0]
        # The body may read the iteration indices as values: `select(%j <= %i, S, -inf)`.
        letters = set(spec.indices) if spec is not None else set()
        scope = KernelScope({}, letters, elements)
        for i, s in enumerate(self.body):
            if s.target != out.name:
                v.error(f"einsum statement must assign the result {out.name}, not {s.target}", s.loc)
            if i == 1 and s.op != "=":
                v.error("the epilogue is a plain assignment `Out = f(Out)`", s.loc)
            if i == 1:
                scope = KernelScope({}, set(), {**elements, out.name: out.type.dtype})
            check_store(v, v.etype(s.value, scope), out.type.dtype, s.value)
        if spec is not None and spec.reduced and first.op == "=":
            v.error(f"indices {', '.join(spec.reduced)} are not in the result, so the statement must reduce "
                    "(+=, *=, max= or min=)", first.loc)

    def _spec(self, v: Verifier) -> EinsumSpec | None:
        try:
            spec = parse_spec(self.spec)
        except SpecError as err:
            v.error(str(err), _string_offset(self.spec_loc, err.offset))
            return None
        if self.where is not None:
            # A name that is not an index must be a size parameter of the module (`j<=CONTEXT`).
            try:
                parse_where(self.where, spec.indices, v.params)
            except SpecError as err:
                v.error(str(err), _string_offset(self.where_loc or self.loc, err.offset))
        return spec

    def _shapes(self, v: Verifier, spec: EinsumSpec, out: TensorDecl) -> None:
        if len(spec.inputs) != len(self.inputs):
            v.error(f"the subscripts name {len(spec.inputs)} operand(s) but the einsum takes {len(self.inputs)}",
                    self.spec_loc)
            return
        if any(b.value.type is None for b in self.inputs):
            return
        shapes = [b.value.type.shape for b in self.inputs if b.value.type is not None] + [out.type.shape]
        terms = [*spec.inputs, spec.output]
        names = [b.name for b in self.inputs] + [out.name]
        ok = True
        for term, shape, name in zip(terms, shapes, names, strict=True):
            if len(term) != len(shape):
                v.error(f"subscripts give {name} {len(term)} dimension(s) but it has rank {len(shape)}",
                        self.spec_loc)
                ok = False
        if not ok:
            return
        try:
            where = parse_where(self.where, spec.indices) if self.where is not None else []
            ranges = index_ranges(spec, shapes, where)
        except SpecError as err:
            v.error(str(err), self.spec_loc)
            return
        for term, shape, name in zip(terms, shapes, names, strict=True):
            for entry, dim in zip(term, shape, strict=True):
                if isinstance(entry, IndexRef) and not dims_equal(ranges[entry.name], dim):
                    v.error(f"index '{entry.name}' has extent {format_dim(ranges[entry.name])} elsewhere but "
                            f"dimension {format_dim(dim)} in {name}", self.spec_loc)
