"""`--emit=nvsolar-yaml`: the einsum graph in the YAML schema of NVIDIA's public SOLAR code (its
`einsum_graph.yaml`, docs/FORMAT.md there; our docs/exports.md says what maps to what).

Every layer has the fields that schema requires: `type`, `einsum_equation` (capital-letter ranks, sliding
windows as `(P+R)`, transposed convolutions in gather form `(P-R)`), `elementwise_op`, `reduction_op`,
`is_real_einsum`, `is_einsum_supportable`, `tensor_names`, `tensor_types`, `tensor_shapes`, `connections`,
and the optional `tensor_dtypes`. Model inputs are `start` layers. What that notation cannot say (strides,
dilations and padding of a window, `where` constraints, a body with more than one operation) is kept
exactly in an extra `solar` field per layer, which `solar-translate --from nvsolar-yaml` reads back.
"""

from __future__ import annotations

from typing import Any

import yaml

from solar.backends.einsum_graph import Graph, Node, einsum_graph
from solar.ir.analysis.counts import is_contraction
from solar.ir.einsum_spec import bind_where, parse_spec
from solar.ir.expr import Binary, Call, Cast, Expr, FloatLit, IndexRef, IntLit, NameRef, Unary, format_expr, linear_form
from solar.ir.expr_visitor import ExprVisitor
from solar.ir.index_map import IndexMap, NotAffine, Permutation
from solar.ir.ops import EinsumOp, ModuleOp, Op, Value

TORCH_DTYPES = {"f64": "torch.float64", "f32": "torch.float32", "tf32": "torch.float32", "bf16": "torch.bfloat16",
                "f16": "torch.float16", "f8e4m3": "torch.float8_e4m3fn", "f8e5m2": "torch.float8_e5m2",
                "i64": "torch.int64", "i32": "torch.int32", "i16": "torch.int16",
                "i8": "torch.int8", "u8": "torch.uint8", "i1": "torch.bool"}
_UNARY = {"exp", "exp2", "log", "log2", "log1p", "expm1", "sin", "cos", "tanh", "sigmoid", "erf", "sqrt", "rsqrt",
          "reciprocal", "abs", "neg", "sign", "floor", "ceil", "round"}
_BINARY = {"*": "mul", "+": "add", "-": "sub", "/": "div"}


def capital_ranks(letters: list[str]) -> dict[str, str]:
    """SOLAR's rank names for our index letters: the capital letter, or a capital and a number where two of
    our letters share a capital (`i` and `I`)."""
    names: dict[str, str] = {}
    used: set[str] = set()
    for c in letters:
        name = c.upper()
        n = 0
        while name in used:
            name = f"{c.upper()}{n}"
            n += 1
        names[c] = name
        used.add(name)
    return names


def nvsolar_equation(op: EinsumOp) -> str:
    """The subscripts in SOLAR's notation: capitals, windows without coefficients or constants (which that
    notation leaves to module arguments), a window in the result rewritten to the gather form."""
    spec = parse_spec(op.spec)
    ranks = capital_ranks(list(spec.indices))
    inputs = [list(t) for t in spec.inputs]
    output = list(spec.output)
    out_text: list[str] = []
    gathered: dict[str, str] = {}  # input letter -> the window it becomes, (P-R)
    for entry in output:
        letters = _letters(entry)
        if isinstance(entry, IndexRef) or len(letters) != 2:
            out_text.append(_entry(entry, ranks))
            continue
        # Scatter form Y[p+r] += X[p] * W[r] is gather form Y[P] += X[P-R] * W[R] (as SOLAR writes it).
        plain = {e.name for t in inputs for e in t if isinstance(e, IndexRef)}
        lead = next((c for c in letters if c in plain), None)
        if lead is None:
            out_text.append(_entry(entry, ranks))
            continue
        other = next(c for c in letters if c != lead)
        out_text.append(ranks[lead])
        gathered[lead] = f"({ranks[lead]}-{ranks[other]})"
    terms = []
    for term in inputs:
        parts = [gathered.get(e.name, ranks[e.name]) if isinstance(e, IndexRef) else _entry(e, ranks) for e in term]
        terms.append("".join(parts))
    return ",".join(terms) + "->" + "".join(out_text)


def _letters(entry: Expr) -> list[str]:
    form = linear_form(entry)
    return [name[1:] for name, _ in form[0]] if form else []


def _entry(entry: Expr, ranks: dict[str, str]) -> str:
    if isinstance(entry, IndexRef):
        return ranks[entry.name]
    form = linear_form(entry)
    if form is None or not form[0]:
        return "(" + format_expr(entry) + ")"
    text = ""
    for name, coeff in sorted(form[0], key=lambda nc: nc[1] < 0):
        text += ("-" if coeff < 0 else ("+" if text else "")) + ranks[name[1:]]
    return f"({text})" if len(form[0]) > 1 else text


def elementwise_op(value: Expr) -> str:
    """SOLAR's name for what a body computes per point: one operation (`mul`, `add`, `exp`, `relu`, `copy`),
    or for a body of several the outermost one (the exact body is in the `solar` field)."""
    return _ELEMENTWISE_OP.visit(value)


class _ElementwiseOp(ExprVisitor[str]):

    def visit_cast(self, e: Cast) -> str:
        return "cast"

    def visit_binary(self, e: Binary) -> str:
        if e.op in ("*",) and _is_product(e):
            return "mul"
        return _BINARY.get(e.op, e.op)

    def visit_call(self, e: Call) -> str:
        if e.func == "max" and any(isinstance(a, IntLit | FloatLit) and a.value == 0 for a in e.args):
            return "relu"
        return e.func

    def visit_unary(self, e: Unary) -> str:
        return "neg" if e.op == "-" else e.op

    def visit_other(self, e: Expr) -> str:
        return "copy"  # an operand read as it is (or a literal)


_ELEMENTWISE_OP = _ElementwiseOp()


def _is_product(e: Expr) -> bool:
    if isinstance(e, Binary) and e.op == "*":
        return _is_product(e.lhs) and _is_product(e.rhs)
    return isinstance(e, NameRef | Cast | IntLit | FloatLit)


def _layer_type(op: EinsumOp, real: bool) -> str:
    spec = parse_spec(op.spec)
    windows = sum(1 for t in spec.inputs for e in t if not isinstance(e, IndexRef))
    out_windows = sum(1 for e in spec.output if not isinstance(e, IndexRef))
    reduction = op.body[0].reduction
    if real:
        if out_windows:
            return f"convtranspose{out_windows}d"
        return f"conv{windows}d" if windows else "matmul"
    if reduction == "max":
        return "reduce_max"
    if reduction == "min":
        return "reduce_min"
    if reduction == "add" and spec.reduced:
        return "reduce_sum"
    return elementwise_op(op.body[0].value)


def emit_nvsolar(module: ModuleOp) -> str:
    graph = einsum_graph(module)
    model = module.name or graph.func.name
    names = _TensorNames(graph, model)
    layers: dict[str, Any] = {}
    for arg in graph.func.args:
        layers[names.start(arg)] = {
            "type": "start", "einsum_equation": _identity(len(graph.shape(arg))), "elementwise_op": "copy",
            "reduction_op": "none", "is_real_einsum": False, "is_einsum_supportable": True,
            "tensor_names": {"inputs": [], "outputs": [names.of(arg)]},
            "tensor_types": {"inputs": [], "outputs": [names.role(arg)]},
            "tensor_shapes": {"inputs": [], "outputs": [graph.shape(arg)]},
            "connections": {"inputs": [], "outputs": sorted({n.id for n in graph.readers(arg)})},
            "tensor_dtypes": {"inputs": [], "outputs": [_dtype(arg)]},
        }
    for node in graph.nodes:
        layers[node.id] = _layer(node, graph, names)
    doc = {"model_name": model, "layers": layers,
           "solar": {"outputs": [names.of(graph.source(v)) for v in graph.returned]}}
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=120)


def _view_map(op: Op) -> IndexMap | None:
    """A view's index map where it has one at any sizes (a permutation of dimensions exports as a permute
    layer whatever op declares it)."""
    if not op.is_view or not op.operands:
        return None
    try:
        return op.index_map({})
    except NotAffine:
        return None


def _layer(node: Node, graph: Graph, names: _TensorNames) -> dict[str, Any]:
    op = node.op
    inputs = [graph.source(v) for v in node.inputs]
    layer: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    if isinstance(op, EinsumOp):
        first = op.body[0]
        real = is_contraction(first.value, first.reduction, bool(parse_spec(op.spec).reduced))
        layer.update(type=_layer_type(op, real), einsum_equation=nvsolar_equation(op),
                     elementwise_op=elementwise_op(first.value), reduction_op=first.reduction or "none",
                     is_real_einsum=real, is_einsum_supportable=True)
        extra = {"symbol": op.symbol, "subscripts": op.spec, "bindings": [b.name for b in op.inputs],
                 "result": op.outputs[0].name,
                 "body": [f"{s.target} {s.op} {format_expr(s.value)}" for s in op.body]}
        if op.where:  # at the export's sizes: `j<=CONTEXT` is written `j<=4095`
            extra["where"] = bind_where(op.where, parse_spec(op.spec).indices, graph.values)
        kernel = op.attrs.get("kernel")
        if kernel is not None:
            extra["kernel"] = kernel.name
    elif isinstance(permutation := _view_map(op), Permutation):
        rank = len(graph.shape(node.outputs[0]))
        src = _identity(rank).split("->")[0]
        perm = list(permutation.perm)
        layer.update(type="permute", einsum_equation=src + "->" + "".join(src[p] for p in perm),
                     elementwise_op="copy", reduction_op="none", is_real_einsum=False, is_einsum_supportable=True)
        extra = {"perm": perm}
    else:
        kind = node.kind
        in_rank = len(graph.shape(inputs[0])) if inputs else 0
        out_rank = len(graph.shape(node.outputs[0])) if node.outputs else 0
        layer.update(type="view" if kind == "reshape" else kind, einsum_equation=_fresh(in_rank, out_rank),
                     elementwise_op="copy", reduction_op="none", is_real_einsum=False, is_einsum_supportable=False)
    if node.group is not None:
        extra["group"] = node.group.symbol
    layer["tensor_names"] = {"inputs": [names.of(v) for v in inputs], "outputs": [names.of(v) for v in node.outputs]}
    layer["tensor_types"] = {"inputs": [names.role(v) for v in inputs], "outputs": ["output" for _ in node.outputs]}
    layer["tensor_shapes"] = {"inputs": [graph.shape(v) for v in inputs],
                              "outputs": [graph.shape(v) for v in node.outputs]}
    producers = []
    for v in inputs:
        p = graph.producer.get(v)
        producers.append(p.id if p is not None else names.start(v))
    readers = sorted({r.id for v in node.outputs for r in graph.readers(v)})
    layer["connections"] = {"inputs": producers, "outputs": readers}
    layer["tensor_dtypes"] = {"inputs": [_dtype(v) for v in inputs], "outputs": [_dtype(v) for v in node.outputs]}
    if extra:
        layer["solar"] = extra
    return layer


class _TensorNames:
    """One name per tensor: `Model.x` for an input, `Model.layer.Output` for a layer's result."""

    def __init__(self, graph: Graph, model: str) -> None:
        self.graph = graph
        self.model = model
        self.args = set(graph.func.args)

    def start(self, v: Value) -> str:
        return f"start.{v.name}"

    def of(self, v: Value) -> str:
        if v in self.args:
            return f"{self.model}.{v.name}"
        node = self.graph.producer[v]
        suffix = "Output" if len(node.outputs) == 1 else f"Output{node.outputs.index(v)}"
        return f"{self.model}.{node.id}.{suffix}"

    def role(self, v: Value) -> str:
        if v in self.args:
            # torch.export names parameters p_..., buffers b_... (frontends/torch_export.py)
            return "weight" if v.name.startswith("p_") else "input"
        return "input"


def _dtype(v: Value) -> str:
    assert v.type is not None
    return TORCH_DTYPES[v.type.dtype.spelling]


_RANKS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _rank_names(n: int, start: int = 0) -> list[str]:
    return [(_RANKS[k % 26] + (str(k // 26 - 1) if k >= 26 else "")) for k in range(start, start + n)]


def _identity(rank: int) -> str:
    text = "".join(_rank_names(rank))
    return f"{text}->{text}"


def _fresh(in_rank: int, out_rank: int) -> str:
    return "".join(_rank_names(in_rank)) + "->" + "".join(_rank_names(out_rank, in_rank))
