"""`solar-translate --from nvsolar-yaml graph.yaml`: SIR from the einsum graph of NVIDIA's public SOLAR code
(its `einsum_graph.yaml`; docs/exports.md).

`start` layers become the function's arguments; every other layer one op, in the file's order (a layer must
come after the layers it reads): an einsum built from `einsum_equation` (capital ranks, letter+number ranks,
windows `(P+R)` and `(P-R)`), `elementwise_op` and `reduction_op`; `permute` and `view`-like layers become
`solar.permute` and `solar.reshape`. Tensors that no layer makes (weights listed only by name) become
arguments too. Layers written by `solar-opt --emit=nvsolar-yaml` carry a `solar` field with the exact
subscripts, constraints and body, which is used instead: such a graph translates back to the same counts.

The notation has no strides, dilations or padding, so a window `(P+R)` is read with stride 1 and no offset
(an operand read outside its bounds reads 0, as every einsum does). What it cannot express is an error
naming the layer and its line in the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from solar.frontends.nvsolar_schema import DTYPES, SOLAR_KEY, GraphImportError, layer_problem, load_graph
from solar.ir.diagnostics import Diagnostic, DiagnosticEngine, DiagnosticError, Location, SourceManager
from solar.ir.ops import ModuleOp
from solar.ir.parser import parse_module
from solar.ir.verifier import verify

__all__ = ["GraphImportError", "nvsolar_to_sir", "translate_nvsolar"]

_TOKEN = re.compile(r"[A-Z][0-9]*")
_FUNCS = {"exp", "log", "tanh", "sigmoid", "erf", "sqrt", "rsqrt", "abs", "neg", "reciprocal", "sin", "cos",
          "exp2", "log2", "log1p", "expm1", "floor", "ceil", "round", "sign"}
_BINARY = {"add": "+", "sub": "-", "div": "/"}
_REDUCE = {"add": "+=", "sum": "+=", "mean": "+=", "max": "max=", "min": "min=", "mul": "*=", "none": "=",
           None: "="}
_VIEWS = {"view", "reshape", "flatten", "unflatten", "squeeze", "unsqueeze", "contiguous"}
_PERMUTES = {"permute", "transpose", "t"}
_FIRST_BODY_LINE = 3  # the generated SIR: the module's line, the function's line, then one line per layer


@dataclass
class _Tensor:
    ssa: str
    shape: list[int]
    dtype: str


@dataclass
class GraphSIR:
    """The SIR text of a graph, and the layer (with its line in the graph file) each body line came from."""

    text: str
    origins: list[tuple[str, int, int]]

    def location(self, sir_line: int, file: str) -> tuple[str, Location]:
        """The layer and the graph-file location a line of the generated SIR stands for."""
        k = sir_line - _FIRST_BODY_LINE
        if 0 <= k < len(self.origins):
            lid, line, col = self.origins[k]
            return lid, Location(file, line, col)
        return "", Location(file, 1, 1)


def translate_nvsolar(text: str, path: str) -> ModuleOp:
    """The SIR module of an einsum graph; raises GraphImportError or DiagnosticError. The generated IR is
    verified, and its errors are located at the layer's line in the graph file, not in the generated text."""
    graph = graph_to_sir(text)
    engine = DiagnosticEngine()
    module = parse_module(graph.text, f"{path} (as SIR)", engine)
    if engine.has_errors or not verify(module, engine):
        sources = SourceManager()
        sources.add(path, text)
        located = []
        for diag in engine.diagnostics:
            lid, loc = graph.location(diag.loc.line, path)
            where = f"layer '{lid}'" if lid else "the generated function"
            located.append(Diagnostic(diag.severity, f"{where}: {diag.message}", loc))
        raise DiagnosticError(located, sources)
    return module


def nvsolar_to_sir(text: str) -> str:
    """The SIR text of an einsum graph; raises GraphImportError."""
    return graph_to_sir(text).text


def graph_to_sir(text: str) -> GraphSIR:
    doc, lines = load_graph(text)
    return _Importer(doc, lines).run()


class _Importer:
    def __init__(self, doc: dict[str, Any], lines: dict[str, tuple[int, int]]) -> None:
        self.doc = doc
        self.lines = lines
        self.model = _symbol(str(doc.get("model_name") or "model"))
        self.tensors: dict[str, _Tensor] = {}
        self.args: list[_Tensor] = []
        self.body: list[str] = []
        self.origins: list[tuple[str, int, int]] = []
        self.read: set[str] = set()
        self.made: list[str] = []
        self.taken: set[str] = set()

    def error(self, layer: str, message: str) -> GraphImportError:
        line, col = self.lines.get(layer, (0, 0))
        return GraphImportError(f"layer '{layer}': {message}", line, col)

    def ordered(self) -> list[tuple[str, dict[str, Any]]]:
        """The layers with each after the layers whose tensors it reads (file order where that holds)."""
        layers = [(str(k), v) for k, v in self.doc["layers"].items()]
        maker: dict[str, str] = {}
        for lid, layer in layers:
            problem = layer_problem(layer)
            if problem:
                raise self.error(lid, problem)
            for name in layer["tensor_names"].get("outputs") or []:
                if name in maker:  # one tensor, two producers: which one the readers mean is unknowable
                    raise self.error(lid, f"makes tensor '{name}', which layer '{maker[name]}' makes too")
                maker[name] = lid
            if set(layer["tensor_names"].get("inputs") or []) & set(layer["tensor_names"].get("outputs") or []):
                raise self.error(lid, "reads a tensor it makes itself")
        done: set[str] = set()
        out: list[tuple[str, dict[str, Any]]] = []
        pending = list(layers)
        while pending:
            ready = [(lid, layer) for lid, layer in pending
                     if all(maker.get(n, lid) in done or maker.get(n) == lid or n not in maker
                            for n in layer["tensor_names"].get("inputs") or [])]
            if not ready:
                raise self.error(pending[0][0], "is part of a cycle: it reads tensors made by layers that read it")
            for item in ready:
                done.add(item[0])
                out.append(item)
            pending = [p for p in pending if p[0] not in done]
        return out

    def run(self) -> GraphSIR:
        for lid, layer in self.ordered():
            before = len(self.body)
            try:
                self._layer(str(lid), layer)
            except GraphImportError:
                raise
            except (KeyError, IndexError, TypeError, ValueError) as err:
                raise self.error(str(lid), f"missing or malformed field ({err})") from None
            self.origins += [(lid, *self.lines.get(lid, (1, 1)))] * (len(self.body) - before)
        outputs = (self.doc.get("solar") or {}).get("outputs") or [n for n in self.made if n not in self.read]
        if not outputs:
            raise GraphImportError("the graph has no layer whose result nobody reads (nothing to return)", 1)
        unknown = [n for n in outputs if n not in self.tensors]
        if unknown:
            raise GraphImportError(f"solar.outputs names tensor '{unknown[0]}', which no layer makes",
                                   *self.lines.get(SOLAR_KEY, (1, 1)))
        results = [self.tensors[n] for n in outputs]
        header = f"solar.module @{self.model}"
        args = ", ".join(f"%{t.ssa}: {_type(t)}" for t in self.args)
        rtypes = ", ".join(_type(t) for t in results)
        ret = ", ".join(f"%{t.ssa}" for t in results)
        body = "".join(f"    {line}\n" for line in self.body)
        return GraphSIR(f"{header} attributes {{origin = \"nvsolar-yaml\"}} {{\n"
                        f"  solar.func @forward({args}) -> ({rtypes}) {{\n{body}    solar.return {ret}\n  }}\n}}\n",
                        self.origins)

    def _fresh(self, hint: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_]", "_", hint).strip("_").lower() or "t"
        if base[0].isdigit():
            base = "t" + base
        name, n = base, 0
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name

    def _layer(self, lid: str, layer: dict[str, Any]) -> None:
        names = layer["tensor_names"]
        shapes = layer["tensor_shapes"]
        dtypes = layer.get("tensor_dtypes") or {}
        if layer.get("type") == "start":
            for k, name in enumerate(names["outputs"]):
                t = _Tensor(self._fresh(name.split(".")[-1]), list(shapes["outputs"][k]),
                            _dtype(dtypes, "outputs", k))
                self.tensors[name] = t
                self.args.append(t)
            return
        inputs: list[_Tensor] = []
        for k, name in enumerate(names["inputs"]):
            if name not in self.tensors:  # a weight listed only by name: an argument of the function
                t = _Tensor(self._fresh(name.split(".")[-1]), list(shapes["inputs"][k]), _dtype(dtypes, "inputs", k))
                self.tensors[name] = t
                self.args.append(t)
            inputs.append(self.tensors[name])
            self.read.add(name)
        if len(names["outputs"]) != 1:
            raise self.error(lid, f"has {len(names['outputs'])} outputs; an einsum has one")
        out_name = names["outputs"][0]
        out = _Tensor(self._fresh(lid), list(shapes["outputs"][0]), _dtype(dtypes, "outputs", 0))
        self.tensors[out_name] = out
        self.made.append(out_name)
        kind = str(layer.get("type", ""))
        extra = layer.get("solar") or {}
        if kind in _PERMUTES or "perm" in extra:
            perm = extra.get("perm") or _perm_of(str(layer["einsum_equation"]))
            if perm is None:
                raise self.error(lid, f"cannot read a permutation from \"{layer['einsum_equation']}\"")
            self.body.append(f"%{out.ssa} = solar.permute %{inputs[0].ssa} {{perm = {list(perm)}}} : {_type(out)}")
            return
        if not layer.get("is_einsum_supportable", True):
            if kind in _VIEWS and len(inputs) == 1 and _count(inputs[0].shape) == _count(out.shape):
                self.body.append(f"%{out.ssa} = solar.reshape %{inputs[0].ssa} : {_type(out)}")
                return
            raise self.error(lid, f"a '{kind}' layer is not an einsum (is_einsum_supportable: false)")
        if "subscripts" in extra:
            self._exact(lid, extra, inputs, out)
        else:
            self._from_notation(lid, layer, inputs, out)

    def _exact(self, lid: str, extra: dict[str, Any], inputs: list[_Tensor], out: _Tensor) -> None:
        binds = extra["bindings"]
        operands = ", ".join(f"%{t.ssa} as {b}" for t, b in zip(inputs, binds, strict=True))
        where = f' where "{extra["where"]}"' if extra.get("where") else ""
        symbol = _symbol(str(extra.get("symbol", lid)))
        attrs = f" attributes {{kernel = @{_symbol(extra['kernel'])}}}" if extra.get("kernel") else ""
        body = " ".join(extra["body"])
        self.body.append(f"%{out.ssa} = solar.einsum @{symbol} \"{extra['subscripts']}\"{where} ({operands}) -> "
                         f"({extra['result']}: {_type(out)}){attrs} {{ {body} }}")

    def _from_notation(self, lid: str, layer: dict[str, Any], inputs: list[_Tensor], out: _Tensor) -> None:
        spec, reduced = _spec(str(layer["einsum_equation"]), len(inputs))
        if spec is None:
            raise self.error(lid, f"cannot read the einsum equation \"{layer['einsum_equation']}\"")
        binds = [chr(ord("A") + k) for k in range(len(inputs))]
        value = _value(str(layer.get("elementwise_op") or "copy"), binds)
        if value is None:
            raise self.error(lid, f"elementwise_op '{layer.get('elementwise_op')}' has no SIR equivalent")
        reduction = layer.get("reduction_op")
        reduction = None if reduction in (None, "null") else str(reduction)
        if reduction not in _REDUCE:
            raise self.error(lid, f"reduction_op '{reduction}' has no SIR equivalent")
        op = _REDUCE[reduction] if reduced else "="
        result = "Y" if "Y" not in binds else "Z"
        stmts = f"{result} {op} {value}"
        if reduction == "mean" and reduced:
            stmts += f" {result} = {result} / {float(_reduced_extent(spec, [t.shape for t in inputs]))}"
        operands = ", ".join(f"%{t.ssa} as {b}" for t, b in zip(inputs, binds, strict=True))
        self.body.append(f"%{out.ssa} = solar.einsum @{_symbol(lid)} \"{spec}\" ({operands}) -> "
                         f"({result}: {_type(out)}) {{ {stmts} }}")


def _symbol(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.$]", "_", name)


def _dtype(dtypes: dict[str, Any], side: str, k: int) -> str:
    """The SIR dtype of a tensor; f32 where the graph names none (NVIDIA's files often omit tensor_dtypes)."""
    values = dtypes.get(side) or []
    return DTYPES[values[k]] if k < len(values) else "f32"


def _type(t: _Tensor) -> str:
    return "tensor<" + "".join(f"{d}x" for d in t.shape) + t.dtype + ">"


def _count(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _tokens(term: str) -> list[str] | None:
    """A term's entries: rank tokens (`B0`, `K`) and windows (`(P+R)`), each as a list of signed tokens."""
    out: list[str] = []
    pos = 0
    while pos < len(term):
        if term[pos] == "(":
            end = term.find(")", pos)
            if end < 0:
                return None
            out.append(term[pos:end + 1])
            pos = end + 1
            continue
        m = _TOKEN.match(term, pos)
        if m is None:
            return None
        out.append(m.group())
        pos = m.end()
    return out


def _spec(equation: str, n_inputs: int) -> tuple[str | None, bool]:
    """The equation in SIR subscripts (one lowercase letter per rank), and whether it reduces."""
    if equation.count("->") != 1:
        return None, False
    lhs, rhs = equation.replace(" ", "").split("->")
    terms = lhs.split(",") if lhs else []
    if len(terms) != n_inputs:
        return None, False
    parsed = [_tokens(t) for t in [*terms, rhs]]
    if any(p is None for p in parsed):
        return None, False
    letters: dict[str, str] = {}
    free = iter("ijklmnopqrstuvwxyzabcdefghIJKLMNOPQRSTUVWXYZABCDEFGH")

    def letter(rank: str) -> str:
        if rank not in letters:
            want = rank[0].lower()
            letters[rank] = want if len(rank) == 1 and want not in letters.values() else next(
                c for c in free if c not in letters.values())
        return letters[rank]

    out_terms = []
    for entries in parsed:
        text = ""
        for e in entries or []:
            if e.startswith("("):
                inner = re.sub(r"[A-Z][0-9]*", lambda m: letter(m.group()), e[1:-1])
                text += f"({inner})"
            else:
                text += letter(e)
        out_terms.append(text)
    out_ranks = {t for e in parsed[-1] or [] for t in _TOKEN.findall(e)}
    in_ranks = {t for p in parsed[:-1] for e in p or [] for t in _TOKEN.findall(e)}
    return ",".join(out_terms[:-1]) + "->" + out_terms[-1], bool(in_ranks - out_ranks)


def _reduced_extent(spec: str, shapes: list[list[int]]) -> int:
    lhs, rhs = spec.split("->")
    extent = 1
    seen: set[str] = set()
    for term, shape in zip(lhs.split(","), shapes, strict=True):
        entries = re.findall(r"\([^)]*\)|[A-Za-z]", term)
        for entry, size in zip(entries, shape, strict=False):
            if len(entry) == 1 and entry not in rhs and entry not in seen:
                seen.add(entry)
                extent *= size
    return extent


def _value(op: str, binds: list[str]) -> str | None:
    if op in ("mul", "copy", "null", "none"):
        return " * ".join(binds) if op == "mul" else binds[0]
    if op == "relu":
        return f"max({binds[0]}, 0.0)"
    if op in _BINARY and len(binds) == 2:
        return f"{binds[0]} {_BINARY[op]} {binds[1]}"
    if op in ("max", "min") and len(binds) == 2:
        return f"{op}({binds[0]}, {binds[1]})"
    if op in _FUNCS and len(binds) == 1:
        return f"{op}({binds[0]})"
    return None


def _perm_of(equation: str) -> list[int] | None:
    lhs, _, rhs = equation.partition("->")
    src, dst = _tokens(lhs), _tokens(rhs)
    if src is None or dst is None or sorted(src) != sorted(dst):
        return None
    return [src.index(t) for t in dst]
