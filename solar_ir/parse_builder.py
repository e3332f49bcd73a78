"""The parser's embedded transformer (`ParseBuilder`): one method per grammar rule, building IR objects while
Lark parses (no parse tree). Operands are built as `UnresolvedUse`s, linked afterwards by `resolve`.
`solar.ir.parser` drives it."""

from __future__ import annotations

import difflib
from typing import Any

import lark
from lark import Token

from .diagnostics import Location
from .dtypes import dtype_from_name
from .expr import (
    Access,
    Binary,
    BoolLit,
    Call,
    Cast,
    Expr,
    FloatLit,
    IndexRef,
    IntLit,
    NameRef,
    Unary,
    negate,
)
from .ops import (
    OP_CLASSES,
    AffineFor,
    AffineIf,
    Assign,
    Binding,
    CallOp,
    ConstantOp,
    EinsumOp,
    EinsumStmt,
    ForOp,
    FuncOp,
    GenericOp,
    GroupOp,
    IfOp,
    InsertOp,
    KernelOp,
    LocalDecl,
    ModuleOp,
    Op,
    Param,
    ReturnOp,
    SliceEntry,
    SliceOp,
    SymbolRef,
    TensorDecl,
    Value,
    Word,
    YieldOp,
)
from .resolve import UnresolvedUse as _Use  # the builder's operands before linking
from .types import MAX_INT_DIGITS, TensorType, TypeSyntaxError, parse_tensor_type

_SIMPLE_ESCAPES = {"\\": "\\", '"': '"', "n": "\n", "r": "\r", "t": "\t"}


def decode_string(literal: str) -> str:
    """The value of a string literal (with its quotes): `\\\\ \\" \\n \\r \\t \\xHH \\uHHHH` escapes."""
    body = literal[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        kind = body[i + 1] if i + 1 < len(body) else ""
        if kind in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[kind])
            i += 2
            continue
        width = {"x": 2, "u": 4}.get(kind)
        digits = body[i + 2:i + 2 + width] if width else ""
        if width is None or len(digits) != width or any(c not in "0123456789abcdefABCDEF" for c in digits):
            raise ValueError(f"bad escape '\\{kind}' in string {literal}: "
                             "use \\\\, \\\", \\n, \\r, \\t, \\xHH or \\uHHHH")
        out.append(chr(int(digits, 16)))
        i += 2 + width
    return "".join(out)


# Operations that are not op classes of their own: the statements of a kernel body.
_KERNEL_STATEMENTS = ("affine.for", "affine.if")


# Names other IRs and frameworks give operations SOLAR spells otherwise: the hint goes by meaning where the
# spellings are far apart (`transpose` is nearest `insert` by letters, and means `permute`).
_ALIASES = {"transpose": "permute", "view": "reshape", "cat": "concat", "concatenate": "concat",
            "matmul": "einsum", "dot": "einsum", "mm": "einsum", "bmm": "einsum", "linear": "einsum",
            "addmm": "einsum", "gather_nd": "gather", "expand": "broadcast", "broadcast_to": "broadcast",
            "narrow": "slice", "call_function": "call"}
# Pointwise arithmetic has no op of its own in SIR: it is a statement of a kernel body.
_POINTWISE = frozenset({"add", "sub", "mul", "div", "neg", "exp", "log", "sqrt", "rsqrt", "tanh", "relu", "gelu",
                        "silu", "sigmoid", "max", "min", "maximum", "minimum", "where", "select", "abs", "pow",
                        "addf", "subf", "mulf", "divf", "addi", "muli"})


def unknown_operation(name: str) -> str:
    """The message for an operation name no op class has, with the one it most likely means: a known alias
    (`solar.transpose` → `solar.permute`, a misspelt one too: `solar.tranpose`), pointwise arithmetic sent to
    the kernel body it belongs in, else the closest spelling."""
    known = [*OP_CLASSES, *_KERNEL_STATEMENTS]
    dialect, _, bare = name.rpartition(".")
    dialect = dialect or "solar"
    if bare in _POINTWISE:
        return (f"unknown operation '{name}'; pointwise arithmetic is a statement of a solar.kernel body, e.g. "
                "`Y[%i] = X[%i] + Z[%i]` (docs/ir.md)")
    # Each spelling a user may mean, SOLAR's own and the aliases, to the op it names.
    meanings = {op.rpartition(".")[2]: op for op in known if op.startswith(dialect + ".")}
    meanings.update({a: f"{dialect}.{op}" for a, op in _ALIASES.items() if f"{dialect}.{op}" in known})
    close = difflib.get_close_matches(bare, list(meanings), n=1)
    return f"unknown operation '{name}'" + (f"; did you mean '{meanings[close[0]]}'?" if close else "")


class SyntaxIssue(Exception):
    """A mistake the grammar lets through (a bad escape, an unknown element type), found while building."""

    def __init__(self, message: str, loc: Location) -> None:
        super().__init__(message)
        self.loc = loc


_NEG = object()  # marks a leading minus in literal rules


class ParseBuilder(lark.Transformer):
    """The embedded transformer: one method per grammar rule or alias."""

    def __init__(self) -> None:
        super().__init__()
        self.filename = "<stdin>"

    def __default__(self, data: Any, children: list[Any], meta: Any) -> Any:
        # Lark's own helper rules (`__func_star_4`, ...) are spliced into their parent; a grammar rule without
        # a builder method would instead silently become a Lark tree inside the IR.
        if str(data).startswith("_"):
            return super().__default__(data, children, meta)
        raise NotImplementedError(f"the SIR builder has no method for grammar rule '{data}'")

    def _string(self, tok: Token) -> str:
        try:
            return decode_string(str(tok))
        except ValueError as err:
            raise SyntaxIssue(str(err), self._loc(tok)) from None

    def _loc(self, tok: Token) -> Location:
        return Location(self.filename, tok.line, tok.column)  # type: ignore[arg-type]

    def _int(self, tok: Token) -> int:
        """An integer literal; one of more digits than 64 bits hold is an error at it (Python would not even
        convert one of 4,301 digits, and the 64-bit check after parsing needs the value)."""
        digits = str(tok).lstrip("+-").lstrip("0")
        if len(digits) > MAX_INT_DIGITS:
            raise SyntaxIssue(f"integer literal of {len(digits)} digits is out of range: integers must fit in 64 "
                              "bits (-2^63 to 2^63 - 1)", self._loc(tok))
        return int(tok)

    def OP_NAME(self, tok: Token) -> Token:
        """The name of an op of the generic form, looked up as it is read: an unknown one is the error, at
        the name, whatever follows it."""
        if not isinstance(OP_CLASSES.get(str(tok)), type) or not issubclass(OP_CLASSES[str(tok)], GenericOp):
            raise SyntaxIssue(unknown_operation(str(tok)), self._loc(tok))
        return tok

    # ---- files, modules, attributes --------------------------------------------------------------
    def file(self, children: list[Any]) -> ModuleOp:
        if len(children) == 1 and isinstance(children[0], ModuleOp):
            return children[0]
        return ModuleOp(None, [], list(children), Location(self.filename, 1, 1))

    def module_decl(self, c: list[Any]) -> ModuleOp:
        it = iter(c)
        kw = next(it)
        module = ModuleOp(loc=self._loc(kw))
        for item in it:
            if isinstance(item, Token) and item.type == "SYMBOL":
                module.name = item[1:]
            elif isinstance(item, _Params):
                module.params = item.params
            elif isinstance(item, _Attrs):
                module.attrs = item.attrs
            elif isinstance(item, FuncOp):
                module.funcs.append(item)
            elif isinstance(item, Location):
                module.src_loc = item
        return module

    def params(self, c: list[Param]) -> _Params:
        return _Params(c)

    def param(self, c: list[Any]) -> Param:
        name, default = c[0], c[1] if len(c) > 1 else None
        return Param(str(name), self._int(default) if default is not None else None, self._loc(name))

    def attr_clause(self, c: list[Any]) -> _Attrs:
        return c[0]

    def attr_dict(self, c: list[Any]) -> _Attrs:
        attrs: dict[str, Any] = {}
        for item in c:
            if item is None:
                continue
            key, value = item
            if key in attrs:
                raise SyntaxIssue(f"attribute '{key}' is given twice", self._loc(key))
            attrs[str(key)] = value
        return _Attrs(attrs)

    def attr(self, c: list[Any]) -> tuple[Token, Any]:
        return c[0], _attr_value(c[1])

    def attr_string(self, c: list[Token]) -> str:
        return self._string(c[0])

    def attr_word(self, c: list[Token]) -> Word:
        return Word(str(c[0]))

    def attr_type(self, c: list[Token]) -> TensorType:
        return self._type(c[0])

    def attr_symbol(self, c: list[Token]) -> SymbolRef:
        return SymbolRef(c[0][1:])

    def attr_list(self, c: list[Any]) -> list[Any]:
        return [_attr_value(v) for v in c if v is not None]

    def bool_lit(self, c: list[Token]) -> BoolLit:
        return BoolLit(c[0] == "true", self._loc(c[0]))

    def int_lit(self, c: list[Token]) -> IntLit:
        return IntLit(self._int(c[0]), self._loc(c[0]))

    def float_lit(self, c: list[Token]) -> FloatLit:
        return FloatLit(float(c[0]), self._loc(c[0]))

    def neg_int_lit(self, c: list[Token]) -> IntLit:
        return IntLit(-self._int(c[1]), self._loc(c[0]))

    def neg_float_lit(self, c: list[Token]) -> FloatLit:
        return FloatLit(-float(c[1]), self._loc(c[0]))

    def loc(self, c: list[Token]) -> Location:
        return Location(self._string(c[0]), int(c[1]), int(c[2]))

    # ---- functions and composition ops -----------------------------------------------------------
    def _type(self, tok: Token) -> TensorType:
        try:
            return parse_tensor_type(str(tok))
        except TypeSyntaxError as err:
            loc = self._loc(tok)
            raise SyntaxIssue(str(err), Location(loc.file, loc.line, loc.col + err.offset)) from None

    def func(self, c: list[Any]) -> FuncOp:
        kw, sym, *rest = c
        args: list[Value] = []
        results: list[TensorType] = []
        body: list[Op] = []
        attrs: dict[str, Any] = {}
        src_loc = None
        for item in rest:
            if isinstance(item, Value):
                args.append(item)
            elif isinstance(item, _Types):
                results = item.types
            elif isinstance(item, _Attrs):
                attrs = item.attrs
            elif isinstance(item, Op):
                body.append(item)
            elif isinstance(item, Location):
                src_loc = item
        func = FuncOp(sym[1:], args, results, body, self._loc(kw))
        func.attrs = attrs
        func.src_loc = src_loc
        return func

    def func_arg(self, c: list[Token]) -> Value:
        return Value(c[0][1:], self._type(c[1]), None, self._loc(c[0]))

    def single_type(self, c: list[Token]) -> _Types:
        return _Types([self._type(c[0])])

    def type_tuple(self, c: list[Token | None]) -> _Types:
        return _Types([self._type(t) for t in c if t is not None])

    def values(self, c: list[Token]) -> list[_Use]:
        return [_Use(t[1:], None, None, self._loc(t)) for t in c]

    def return_op(self, c: list[Any]) -> ReturnOp:
        op = ReturnOp(c[1], self._loc(c[0]))
        op.src_loc = c[2] if len(c) > 2 else None
        return op

    def yield_op(self, c: list[Any]) -> YieldOp:
        op = YieldOp(c[1], self._loc(c[0]))
        op.src_loc = c[2] if len(c) > 2 else None
        return op

    def call_op_noresult(self, c: list[Any]) -> Op:
        op: Op = c[0]
        op.src_loc = c[1] if len(c) > 1 else None
        return op

    def defining_op(self, c: list[Any]) -> Op:
        uses: list[_Use] = c[0]
        op: Op = c[1]
        op.src_loc = c[2] if len(c) > 2 else None
        op.loc = uses[0].loc
        types = op.declared_types()
        op.results = [
            Value(u.name, types[i] if i < len(types) else None, op, u.loc) for i, u in enumerate(uses)
        ]
        return op

    def kernel(self, c: list[Any]) -> KernelOp:
        kw, sym, *rest = c
        inputs = [x for x in rest if isinstance(x, Binding)]
        outputs = [x for x in rest if isinstance(x, TensorDecl)]
        body = [x for x in rest if isinstance(x, _KSTMT_TYPES)]
        op = KernelOp(sym[1:], inputs, outputs, body, self._loc(kw))
        op.attrs = next((x.attrs for x in rest if isinstance(x, _Attrs)), {})
        return op

    def binding(self, c: list[Token]) -> Binding:
        return Binding(_Use(c[0][1:], None, None, self._loc(c[0])), str(c[1]), self._loc(c[1]))

    def out_decl(self, c: list[Token]) -> TensorDecl:
        return TensorDecl(str(c[0]), self._type(c[1]), self._loc(c[0]))

    def einsum(self, c: list[Any]) -> EinsumOp:
        kw, sym, spec, where, *rest = c
        op = EinsumOp(
            sym[1:],
            self._string(spec),
            [x for x in rest if isinstance(x, Binding)],
            [x for x in rest if isinstance(x, TensorDecl)],
            [x for x in rest if isinstance(x, EinsumStmt)],
            self._string(where) if where is not None else None,
            self._loc(kw),
        )
        op.attrs = next((x.attrs for x in rest if isinstance(x, _Attrs)), {})
        # Where the subscripts are, so that a mistake inside the string is reported at its column.
        op.spec_loc = self._loc(spec)
        op.where_loc = self._loc(where) if where is not None else None
        return op

    def estmt(self, c: list[Any]) -> EinsumStmt:
        return EinsumStmt(str(c[0]), str(c[1]), c[2], self._loc(c[0]))

    def group(self, c: list[Any]) -> GroupOp:
        kw, sym, types, *rest = c
        op = GroupOp(sym[1:], types.types if types is not None else [], [x for x in rest if isinstance(x, Op)],
                     self._loc(kw))
        op.attrs = next((x.attrs for x in rest if isinstance(x, _Attrs)), {})
        return op

    def for_op(self, c: list[Any]) -> ForOp:
        kw, var, lower, upper, *rest = c
        pairs = [x for x in rest if isinstance(x, tuple)]
        types = next((x.types for x in rest if isinstance(x, _Types)), [])
        op = ForOp(var[1:], lower, upper, [p[0] for p in pairs], [p[1] for p in pairs], types,
                   [x for x in rest if isinstance(x, Op)], self._loc(kw))
        op.attrs = next((x.attrs for x in rest if isinstance(x, _Attrs)), {})
        return op

    def iter_arg(self, c: list[Token]) -> tuple[Value, _Use]:
        return Value(c[0][1:], None, None, self._loc(c[0])), _Use(c[1][1:], None, None, self._loc(c[1]))

    def if_op(self, c: list[Any]) -> IfOp:
        kw, cond, types, *rest = c
        then_body: list[Op] = []
        else_body: list[Op] = []
        attrs: dict[str, Any] = {}
        for item in rest:
            if isinstance(item, _Attrs):
                attrs = item.attrs
            elif isinstance(item, Op):
                then_body.append(item)
            elif isinstance(item, _Else):
                else_body = item.ops
        op = IfOp(_Use(cond[1:], None, None, self._loc(cond)), types.types if types is not None else [],
                  then_body, else_body, self._loc(kw))
        op.attrs = attrs
        return op

    def else_region(self, c: list[Op]) -> _Else:
        return _Else(c)

    def call_body(self, c: list[Any]) -> CallOp:
        kw, sym, args, types = c
        return CallOp(sym[1:], args or [], types.types if types is not None else [], self._loc(kw))

    def constant(self, c: list[Any]) -> ConstantOp:
        return ConstantOp(_literal(c[1]), self._type(c[2]), self._loc(c[0]))

    def const_list(self, c: list[Any]) -> list[Any]:
        return [_literal(v) for v in c if v is not None]

    def slice_op(self, c: list[Any]) -> SliceOp:
        kw, src, *entries, ty = c
        return SliceOp(_Use(src[1:], None, None, self._loc(src)), [e for e in entries if e is not None],
                       self._type(ty), self._loc(kw))

    def insert_op(self, c: list[Any]) -> InsertOp:
        kw, value, dest, *entries, ty = c
        return InsertOp(_Use(value[1:], None, None, self._loc(value)), _Use(dest[1:], None, None, self._loc(dest)),
                        [e for e in entries if e is not None], self._type(ty), self._loc(kw))

    def slice_index(self, c: list[Expr]) -> SliceEntry:
        return SliceEntry(index=c[0], loc=c[0].loc)

    def slice_range(self, c: list[Any]) -> SliceEntry:
        start, colon, stop, step = c
        return SliceEntry(start=start, stop=stop, step=step, loc=start.loc if start is not None else self._loc(colon))

    def generic_op(self, c: list[Any]) -> GenericOp:
        name, args, attrs, types = c
        cls = OP_CLASSES[str(name)]
        assert issubclass(cls, GenericOp)  # OP_NAME let no other name through
        op = cls(args or [], types.types, attrs.attrs if attrs is not None else None, self._loc(name))
        return op

    # ---- kernel level ----------------------------------------------------------------------------
    def local_decl(self, c: list[Token]) -> LocalDecl:
        loc = self._loc(c[0])
        return LocalDecl(TensorDecl(str(c[0]), self._type(c[1]), loc), loc)

    def for_stmt(self, c: list[Any]) -> AffineFor:
        kw, var, lower, upper, step, *body = c
        step_value = 1
        if step is not None:
            if not isinstance(step, IntLit) or step.value <= 0:
                raise SyntaxIssue(f"loop step must be a positive integer constant, not `{step}`", step.loc)
            step_value = step.value
        return AffineFor(var[1:], lower, upper, step_value, body, self._loc(kw))

    def if_stmt(self, c: list[Any]) -> AffineIf:
        return AffineIf(c[1], c[2:], self._loc(c[0]))

    def assign(self, c: list[Any]) -> Assign:
        return Assign(c[0], str(c[1]), c[2])

    def access(self, c: list[Any]) -> Access:
        return Access(str(c[0]), tuple(e for e in c[1:] if e is not None), self._loc(c[0]))

    # ---- expressions -----------------------------------------------------------------------------
    def binop(self, c: list[Any]) -> Binary:
        return Binary(str(c[1]), c[0], c[2])

    def unop(self, c: list[Any]) -> Expr:
        loc = self._loc(c[0])
        return negate(c[1], loc) if c[0] == "-" else Unary("not", c[1], loc)

    def index_ref(self, c: list[Token]) -> IndexRef:
        return IndexRef(c[0][1:], self._loc(c[0]))

    def name_ref(self, c: list[Token]) -> NameRef:
        return NameRef(str(c[0]), self._loc(c[0]))

    def call_expr(self, c: list[Any]) -> Call:
        return Call(str(c[0]), tuple(a for a in c[1:] if a is not None), self._loc(c[0]))

    def cast_expr(self, c: list[Any]) -> Cast:
        name = c[0][5:-1]
        dtype = dtype_from_name(name)
        if dtype is None:
            raise SyntaxIssue(f"unknown element type '{name}' in cast", self._loc(c[0]))
        return Cast(dtype, c[1], self._loc(c[0]))


class _Params:
    __slots__ = ("params",)

    def __init__(self, params: list[Param]) -> None:
        self.params = params


class _Attrs:
    __slots__ = ("attrs",)

    def __init__(self, attrs: dict[str, Any]) -> None:
        self.attrs = attrs


class _Else:
    __slots__ = ("ops",)

    def __init__(self, ops: list[Op]) -> None:
        self.ops = ops


class _Types:
    __slots__ = ("types",)

    def __init__(self, types: list[TensorType]) -> None:
        self.types = types


_KSTMT_TYPES = (LocalDecl, AffineFor, AffineIf, Assign)


def _literal(value: Any) -> Any:
    if isinstance(value, IntLit | FloatLit | BoolLit):
        return value.value
    return value


def _attr_value(value: Any) -> Any:
    if isinstance(value, _Attrs):
        return value.attrs
    return _literal(value)
