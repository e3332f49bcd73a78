"""The one dispatch over expression classes (solar.ir.expr_visitor): every class has its case, an
interpreter defines only its own, the interpreters built on it (typing, ISL text, operation counts) keep
their answers, and no module outside it tells expression classes apart with isinstance chains."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest

from solar.ir import expr as expr_module
from solar.ir.analysis.counts import expression_ops
from solar.ir.analysis.isl_model import UnsupportedForISL, isl_expr
from solar.ir.dtypes import DType
from solar.ir.expr import Access, Binary, Call, Cast, Expr, FloatLit, IndexRef, IntLit, NameRef
from solar.ir.expr_visitor import KINDS, ExprVisitor


def test_every_expression_class_has_a_case() -> None:
    classes = [c for c in vars(expr_module).values() if isinstance(c, type) and issubclass(c, Expr) and c is not Expr]
    assert sorted(c.kind for c in classes) == sorted(KINDS)  # one case each, and no case without its class


class Depth(ExprVisitor[int]):
    def visit_binary(self, e: Binary) -> int:
        return 1 + max(self.visit(e.lhs), self.visit(e.rhs))

    def visit_int_lit(self, e: IntLit) -> int:
        return 0


def test_an_interpreter_keeps_only_its_cases() -> None:
    e = Binary("+", IntLit(1), Binary("*", IntLit(2), IntLit(3)))
    assert Depth().visit(e) == 2
    with pytest.raises(TypeError, match="Depth has no case for FloatLit"):
        Depth().visit(Binary("+", IntLit(1), FloatLit(2.0)))


def test_a_subclass_of_an_expression_class_takes_its_base_case() -> None:
    class Seven(IntLit):
        pass

    assert Depth().visit(Binary("+", Seven(7), IntLit(1))) == 1


def test_the_interpreters_on_it() -> None:
    x = Access("X", (Binary("+", Binary("*", IntLit(2), IndexRef("p")), IndexRef("r")),))
    value = Call("exp", (Binary("*", Cast(DType.F32, x), NameRef("s")),))
    assert expression_ops(value) == Counter({"exp": 1, "mul": 1, "cast": 1})  # the subscript is free
    names = {"%p": "p", "%r": "r", "N": "n"}
    assert isl_expr(Binary("floordiv", Binary("+", IndexRef("p"), NameRef("N")), IntLit(2)), names) == \
        "floor(((p + n))/2)"
    with pytest.raises(UnsupportedForISL, match="is not affine"):
        isl_expr(value, names)


# ---- no other dispatch on expression classes ------------------------------------------------------

REPO = Path(__file__).resolve().parents[2]
SOURCE_FOLDERS = ("api", "solar_ir", "passes", "frontends", "backends", "targets", "bench", "tools")
EXPR_CLASSES = frozenset(c.__name__ for c in vars(expr_module).values()
                         if isinstance(c, type) and issubclass(c, Expr) and c is not Expr)
# A function that tells this many expression classes apart on one value interprets expressions, which is a
# visitor's job; one or two tests are a predicate (`isinstance(e, Cast)`, "a literal or its negation").
CHAIN = 3
# Modules (relative to the repository) allowed such a chain, each with its reason. None needs one now.
ALLOWED: dict[str, str] = {}


def _expr_names(tree: ast.Module, own: bool) -> tuple[set[str], set[str]]:
    """The names that stand for expression classes in a module, and those that stand for the expr module."""
    classes: set[str] = set(EXPR_CLASSES) if own else set()
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = "." * node.level + (node.module or "")
            for alias in node.names:
                if source in ("solar.ir.expr", ".expr", "..expr") and alias.name in EXPR_CLASSES:
                    classes.add(alias.asname or alias.name)
                elif source in ("solar.ir", ".", "..") and alias.name == "expr":
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            modules.update(a.asname for a in node.names if a.name == "solar.ir.expr" and a.asname)
    return classes, modules


def _class_names(node: ast.AST, classes: set[str], modules: set[str]) -> frozenset[str]:
    """The expression classes that an isinstance's second argument or a class pattern names."""
    found = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id in classes:
            found.add(n.id)
        elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in modules \
                and n.attr in EXPR_CLASSES:
            found.add(n.attr)
    return frozenset(found)


def expression_dispatches(source: str, own: bool = False) -> list[str]:
    """The functions in `source` that test one value against `CHAIN` or more expression classes (isinstance
    calls naming different classes, or class patterns of one `match`), as 'name:line'."""
    tree = ast.parse(source)
    classes, modules = _expr_names(tree, own)
    found = []
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    for fn in functions:
        nested = {id(n) for inner in ast.walk(fn) if inner is not fn
                  and isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) for n in ast.walk(inner)}
        tested: dict[str, set[frozenset[str]]] = {}
        for node in ast.walk(fn):
            if id(node) in nested:
                continue
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance" \
                    and len(node.args) == 2:
                names = _class_names(node.args[1], classes, modules)
                if names:
                    tested.setdefault(ast.dump(node.args[0]), set()).add(names)
            elif isinstance(node, ast.Match):
                patterns = {_class_names(p.cls, classes, modules) for case in node.cases
                            for p in ast.walk(case.pattern) if isinstance(p, ast.MatchClass)}
                tested.setdefault("match " + ast.dump(node.subject), set()).update(patterns - {frozenset()})
        if any(len(sets) >= CHAIN for sets in tested.values()):
            found.append(f"{fn.name}:{fn.lineno}")
    return found


def test_no_module_dispatches_on_expression_classes_itself() -> None:
    """Every interpreter of expressions is an ExprVisitor: a new expression class then needs its case in one
    place per interpreter, and `visit_other` says which interpreter lacks it."""
    offenders = {}
    for folder in SOURCE_FOLDERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            name = path.relative_to(REPO).as_posix()
            if name in ALLOWED:
                continue
            found = expression_dispatches(path.read_text(), own=name == "solar_ir/expr.py")
            if found:
                offenders[name] = found
    assert not offenders, ("these functions dispatch on expression classes with isinstance chains; make each "
                           f"an ExprVisitor (solar.ir.expr_visitor) that defines only its cases: {offenders}")


def test_the_scan_sees_a_chain() -> None:
    chain = """
from solar.ir.expr import Binary, IntLit, NameRef, Unary
def size(e):
    if isinstance(e, IntLit):
        return 1
    if isinstance(e, NameRef):
        return 1
    if isinstance(e, Unary) or isinstance(e, Binary) and e.op == "-":
        return 2
"""
    assert expression_dispatches(chain) == ["size:3"]
    matched = """
from solar.ir import expr as E
def size(e):
    match e:
        case E.IntLit() | E.FloatLit():
            return 1
        case E.Binary(lhs=E.Cast()):
            return 2
"""
    assert expression_dispatches(matched) == ["size:3"]
    predicate = chain.replace("isinstance(e, NameRef)", "isinstance(e, IntLit)").replace("isinstance(e, Unary) or ", "")
    assert expression_dispatches(predicate) == []
