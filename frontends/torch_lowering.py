"""The ATen graph of one exported program → a SIR module, through the lowering table (one kernel per
framework op); ops without a lowering are decomposed, keeping the ops we lower whole, and lowered again.

    from solar.frontends.torch_lowering import lower_exported
    result = lower_exported(torch.export.export(model, inputs), "model")

frontends/torch_export.py drives it (build, export with dims symbolic, retry) and names it in its API.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.fx

from solar.ir import attr_names
from solar.ir.builder import ModuleBuilder
from solar.ir.dtypes import DType
from solar.ir.ops import Value
from solar.ir.types import TensorType, types_equal

from .diagnostics import (
    Problem,
    SourceLine,
    TranslationError,
    lowering_failed,
    mark_library_frame,
    tag_module_path,
    torch_module_path,
    user_frame,
    verify_emitted,
)
from .lowering import TORCH_LOWERINGS
from .lowering.core import Emitter, InternalLoweringError, LoweringError, ttype
from .lowering.random import RANDOM_OPS
from .lowering.registry import OutMeta, TorchNode, op_key
from .torch_bounded import DATA_SIZE, bounded_counts, data_dependent, refuse_reading_bounded
from .torch_complex import rewrite_complex
from .torch_control import WHILE_LOOP, lower_while_loop, subgraphs
from .torch_grouped_experts import rewrite_grouped_experts
from .torch_mutations import Mutation, buffer_order, plan_mutations
from .torch_problem import (
    MODULE_CONSTANT_LIMIT,
    ArgSource,
    TorchTranslation,
    has_values,
    made_in_forward,
    quiet_framework,
)
from .torch_ring import rewrite_ring_appends
from .torch_symbols import SizeNames, SymbolNames

TORCH_DTYPES: dict[torch.dtype, DType] = {
    torch.float64: DType.F64,
    torch.float32: DType.F32,
    torch.bfloat16: DType.BF16,
    torch.float16: DType.F16,
    torch.float8_e4m3fn: DType.F8E4M3,
    torch.float8_e5m2: DType.F8E5M2,
    torch.int64: DType.I64,
    torch.int32: DType.I32,
    torch.int16: DType.I16,
    torch.int8: DType.I8,
    torch.uint8: DType.U8,
    torch.bool: DType.I1,
}
SIR_TO_TORCH: dict[DType, torch.dtype] = {v: k for k, v in TORCH_DTYPES.items()}

# Nodes that check or constrain shapes at run time and compute nothing.
IGNORED_OPS = {
    "aten::_assert_tensor_metadata", "aten::_assert_scalar", "aten::_assert_async", "aten::sym_constrain_range",
    "aten::sym_constrain_range_for_size", "aten::_check_is_size", "aten::_functional_assert_async",
    "aten::_functional_sym_constrain_range", "aten::_functional_sym_constrain_range_for_size",
}


def torch_fp32_precision() -> dict[str, str]:
    """How this PyTorch runs f32 contractions by default on a GPU, per kind of kernel, as values of the IR
    attribute `fp32_precision` (docs/ir.md): convolutions follow cuDNN's `conv.fp32_precision` (TF32 by
    default), matmul / linear / bmm / SDPA follow `cuda.matmul.fp32_precision` and, where that says "none",
    `torch.get_float32_matmul_precision()` ("highest" by default; "high" allows TF32, "medium" BF16),
    recurrent layers cuDNN's `rnn.fp32_precision`."""
    def cudnn(kind: str) -> str:
        flag = getattr(getattr(torch.backends.cudnn, kind, None), "fp32_precision", "none")
        if flag in ("tf32", "ieee"):
            return "tf32" if flag == "tf32" else "highest"
        return "tf32" if torch.backends.cudnn.allow_tf32 else "highest"

    flag = getattr(torch.backends.cuda.matmul, "fp32_precision", "none")
    try:
        legacy = torch.get_float32_matmul_precision()
    except RuntimeError:  # the legacy and the new API were mixed: the new flag decides
        legacy = "highest"
    matmul = {"high": "tf32", "medium": "bf16"}.get(legacy, "tf32" if flag == "tf32" else "highest")
    return {"conv": cudnn("conv"), "matmul": matmul, "rnn": cudnn("rnn")}


def sir_dtype(dt: torch.dtype) -> DType:
    out = TORCH_DTYPES.get(dt)
    if out is None:
        raise LoweringError(f"element type {dt} has no SIR equivalent (SIR has {', '.join(d.spelling for d in DType)})")
    return out


# ---- lowering the graph ---------------------------------------------------------------------------


def display_name(target: Any) -> str:
    schema = getattr(target, "_schema", None)
    if schema is not None:
        ns, name = schema.name.split("::")
        return f"{ns}.{name}.{schema.overload_name or 'default'}"
    return getattr(target, "__name__", str(target))


class GraphLowering:
    """Lowers one exported program's graph into a SIR module."""

    def __init__(self, ep: torch.export.ExportedProgram, name: str, size_names: SizeNames | None = None) -> None:
        self.ep = ep
        self.name = name
        self.syms = SymbolNames(size_names)  # sizes the source names (KernelBench globals) take those names
        self.syms.ranges = dict(ep.range_constraints)
        self.problems: list[Problem] = []
        self.state: list[str] = []  # buffers/parameters updated in place: their new values end the outputs
        self.mutations = plan_mutations(ep)  # in-place nodes lowered as their functional forms
        self.new_buffers: dict[str, Value] = {}  # buffer placeholder → its value after those nodes
        self.origin: dict[int, tuple[str, SourceLine | None]] = {}  # id of an emitted op → its node's op, line

    def user_input_index(self) -> dict[str, int]:
        idx = 0
        out: dict[str, int] = {}
        for spec in self.ep.graph_signature.input_specs:
            if spec.kind == torch.export.graph_signature.InputKind.USER_INPUT:
                out[spec.arg.name] = idx
                idx += 1
        return out

    def arg_sources(self) -> dict[str, ArgSource]:
        kinds = torch.export.graph_signature.InputKind
        users = self.user_input_index()
        out: dict[str, ArgSource] = {}
        for spec in self.ep.graph_signature.input_specs:
            name = spec.arg.name
            if spec.kind == kinds.USER_INPUT:
                out[name] = ArgSource("input", users[name])
            elif spec.kind == kinds.PARAMETER:
                out[name] = ArgSource("parameter", spec.target)
            elif spec.kind == kinds.BUFFER:
                out[name] = ArgSource("buffer", spec.target)
            elif spec.kind in (kinds.CONSTANT_TENSOR, kinds.CUSTOM_OBJ):
                out[name] = ArgSource("constant", spec.target)
            else:
                out[name] = ArgSource(str(spec.kind).lower(), spec.target or name)
        return out

    def declare_sizes(self) -> dict[str, list[tuple[int, int]]]:
        """Size parameters first: the symbolic dims of user inputs, in input order; returns where each sizes
        an input."""
        users = self.user_input_index()
        for node in self.ep.graph.nodes:
            val = node.meta.get("val")
            if node.op == "placeholder" and node.name in users and isinstance(val, torch.Tensor):
                for d, size in enumerate(val.shape):
                    if isinstance(size, torch.SymInt):
                        try:
                            int(size.node.expr)
                        except (TypeError, ValueError):
                            hint = size.node.hint
                            self.syms.declare(size.node.expr, d, int(hint) if hint is not None else 1,
                                              users[node.name], node.name)
        return self.syms.where

    def unsupported_nodes(self, graph: torch.fx.Graph | None = None) -> list[torch.fx.Node]:
        out = []
        for node in (graph or self.ep.graph).nodes:
            scalar = torch.SymInt | torch.SymFloat | torch.SymBool | int | float | bool
            if node.op != "call_function" or isinstance(node.meta.get("val"), scalar):
                continue
            if node.target is WHILE_LOOP:  # what matters is what its condition and body use
                for sub in subgraphs(node, self.ep.graph_module):
                    out.extend(self.unsupported_nodes(sub.graph))
                continue
            key = functional_key(node)
            if (key not in TORCH_LOWERINGS and key not in IGNORED_OPS and node.target is not operator.getitem
                    and node not in self.mutations):
                out.append(node)
        return out

    def lower(self) -> TorchTranslation:
        graph = self.ep.graph
        sources = self.arg_sources()
        users = self.user_input_index()
        placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        self.declare_sizes()
        mb = ModuleBuilder(sanitize_symbol(self.name), dict(self.syms.defaults))
        arg_types: list[tuple[str, TensorType]] = []
        arg_list: list[ArgSource] = []
        inlined = self.module_constants(placeholders, sources)
        placeholders = [n for n in placeholders if n not in inlined]
        scalars: dict[torch.fx.Node, int | float | bool] = {}
        for node in placeholders:
            val = node.meta.get("val")
            if isinstance(val, int | float | bool) and node.name in users:
                scalars[node] = val  # a Python number among the inputs: a constant of the program
                continue
            if not isinstance(val, torch.Tensor):
                self.problems.append(Problem("input", f"input '{node.name}' is a {type(val).__name__}, not a "
                                             "tensor or a Python number: it is not supported", None))
                continue
            if val.numel() == 0 and not data_dependent(val.shape):  # an empty cache: no argument (Emitter.constant)
                inlined[node] = val
                continue
            arg_types.append((_sanitize_value(node.name), self.tensor_type(val)))
            arg_list.append(sources.get(node.name, ArgSource("input", node.name)))
        fb = mb.func("forward", arg_types)
        env: dict[torch.fx.Node, Any] = {}
        tensor_nodes = [n for n in placeholders if isinstance(n.meta.get("val"), torch.Tensor) and n not in inlined]
        for node, value in zip(tensor_nodes, fb.args, strict=True):
            env[node] = value
        env.update(scalars)
        em = Emitter(fb, fp32=torch_fp32_precision(), sizes=dict(self.syms.defaults))
        for node, value in inlined.items():
            dtype = sir_dtype(value.dtype)
            data = value.detach().cpu() if has_values(value) else torch.zeros(0, dtype=value.dtype)
            data = data.float() if data.dtype in (torch.bfloat16, torch.float16) else data
            if value.numel() == 0:  # an empty cache: a splat of its type (its other dims may be sizes)
                env[node] = em.constant(0, [self.syms.dim(d) for d in value.shape], dtype)
                continue
            env[node] = em.constant(data.tolist(), list(value.shape), dtype)
        outputs: list[Value] = []
        for node in graph.nodes:
            if node.op == "placeholder":
                continue
            if node.op == "output":
                outputs = self.collect_outputs(node, env)
                outputs += bounded_counts(outputs, em, mb.module)
                continue
            if node.op == "get_attr" and isinstance(getattr(self.ep.graph_module, str(node.target), None),
                                                    torch.fx.GraphModule):
                continue  # a while_loop's condition or body: read by the loop's node
            if node.op != "call_function":
                self.problem(node, f"graph node '{node.op}' ({node.target}) is not supported")
                continue
            self.lower_node(node, env, em)
        if self.problems:
            raise TranslationError(self.problems, f"{len(self.problems)} problem(s) translating {self.name}")
        if not outputs:
            raise LoweringError("the program returns no tensor: a speed of light bounds the work of "
                                "computing its results, so return at least one")
        fb.ret(*outputs)
        module = mb.module
        module.attrs[attr_names.ORIGIN] = "torch.export"
        drawn = sorted({display_name(n.target) for n in graph.nodes if n.op == "call_function" and _draws_random(n)})
        if drawn:
            module.attrs["random"] = drawn  # validated by statistics (frontends/validate.py)
        broken = verify_emitted(module, self.origin)
        if broken:
            raise TranslationError(broken, f"{len(broken)} internal error(s) translating {self.name}")
        kept = {str(a.key): self.ep.constants[str(a.key)] for a in arg_list
                if a.kind == "constant" and made_in_forward(str(a.key))
                and has_values(self.ep.constants.get(str(a.key)))}
        return TorchTranslation(module, arg_list, dict(self.syms.defaults), self.syms.where,
                                param_min=self.param_minimums(), constants=kept,
                                scalars={users[n.name]: v for n, v in scalars.items()}, state=list(self.state))

    def param_minimums(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for sym, name in self.syms.names.items():
            vr = self.ep.range_constraints.get(sym)
            try:
                least = max(1, int(vr.lower)) if vr is not None else 1
            except (TypeError, ValueError, OverflowError):
                least = 1
            out[name] = max(out.get(name, 1), least)  # symbols one parameter names: the tightest guard
        return out

    def module_constants(self, placeholders: list[torch.fx.Node], sources: dict[str, ArgSource]
                         ) -> dict[torch.fx.Node, torch.Tensor]:
        """Constants made in `forward` (such as `torch.tensor(self.c)`) small enough to print: they become
        `solar.constant`s instead of arguments. Tensor attributes of the model (made in `__init__`) stay
        arguments, read from the seeded model at validation: their values may be random."""
        out: dict[torch.fx.Node, torch.Tensor] = {}
        for node in placeholders:
            src = sources.get(node.name)
            if src is None or src.kind != "constant" or not made_in_forward(str(src.key)):
                continue
            value = self.ep.constants.get(str(src.key))
            if has_values(value) and value.numel() <= MODULE_CONSTANT_LIMIT and value.dtype in TORCH_DTYPES:
                out[node] = value
        return out

    def tensor_type(self, val: torch.Tensor) -> TensorType:
        return ttype([self.syms.dim(d) for d in val.shape], sir_dtype(val.dtype))

    def out_meta(self, val: Any) -> list[OutMeta | None]:
        if isinstance(val, torch.Tensor):
            if data_dependent(val.shape):
                return [None]  # a data-dependent size: the lowering states the static bound
            return [OutMeta(tuple(self.syms.dim(d) for d in val.shape), sir_dtype(val.dtype))]
        if isinstance(val, list | tuple):
            out: list[OutMeta | None] = []
            for v in val:
                out.extend(self.out_meta(v) if isinstance(v, torch.Tensor) else [None])
            return out
        return [None]

    def problem(self, node: torch.fx.Node, message: str, internal: bool = False) -> None:
        self.problems.append(Problem(display_name(node.target), message, user_frame(node.meta.get("stack_trace")),
                                     internal))

    def convert(self, a: Any, env: dict[torch.fx.Node, Any]) -> Any:
        if isinstance(a, torch.fx.Node):
            return env.get(a)
        if isinstance(a, list | tuple):
            return type(a)(self.convert(x, env) for x in a)
        if isinstance(a, torch.SymInt):
            return self.syms.dim(a)
        return a

    def lower_node(self, node: torch.fx.Node, env: dict[torch.fx.Node, Any], em: Emitter) -> None:
        val = node.meta.get("val")
        if isinstance(val, torch.SymInt | torch.SymFloat | torch.SymBool) and data_dependent(val):
            env[node] = DATA_SIZE  # an error only where something computes with it (checked below)
            return
        if isinstance(val, torch.SymInt | torch.SymFloat | torch.SymBool) or node.target is operator.getitem:
            def scalar() -> Any:
                if node.target is not operator.getitem:
                    return self.syms.dim(val)
                src = env.get(node.args[0])  # type: ignore[arg-type]
                return None if src is None else src[node.args[1]]  # type: ignore[index]
            self.attempt(node, env, scalar, "")
            return
        if node.target is WHILE_LOOP:
            where = user_frame(node.meta.get("stack_trace"))
            em.loc = where.location if where is not None else None
            self.attempt(node, env, lambda: lower_while_loop(self, node, env, em), "", keep=True)
            return
        key = functional_key(node)
        if key in IGNORED_OPS:
            return
        mutation = self.mutations.get(node)
        key = mutation.key if mutation is not None else key
        fn = TORCH_LOWERINGS.get(key)
        if fn is None:
            self.problem(node, f"unsupported op {display_name(node.target)}: no lowering for {key}")
            env[node] = None
            return
        # An input of this node failed to translate: its own failure is already reported, and this node's
        # result is marked failed too, so that its users are skipped in turn (a failure poisons its users).
        if any(isinstance(a, torch.fx.Node) and a in env and env[a] is None and _is_tensor(a)
               for a in node.all_input_nodes):
            env[node] = None
            return
        refused = refuse_reading_bounded(node, env, em, display_name(node.target))
        if refused:
            self.problem(node, refused)
            env[node] = None
            return
        where = user_frame(node.meta.get("stack_trace"))
        em.loc = where.location if where is not None else None
        em.hint = node.name

        def lowered() -> Any:
            args, present = self.bind(node, env)
            tn = TorchNode(em, key, node.target._schema.overload_name or "default", args, self.out_meta(val),
                           present)
            first_new = len(em.block.ops)
            result = fn(tn)
            for op in em.block.ops[first_new:]:
                self.origin[id(op)] = (display_name(node.target), where)
            self.check(node, tn, result)
            mark_library_frame(em.block.ops[first_new:], node.meta.get("stack_trace"))
            tag_module_path(em.block.ops[first_new:], torch_module_path(node.meta.get("nn_module_stack")))
            return result if mutation is None else self.mutated(mutation, result, env)
        self.attempt(node, env, lowered, f"{display_name(node.target)}: ")

    def mutated(self, mutation: Mutation, result: Any, env: dict[torch.fx.Node, Any]) -> Any:
        """After an in-place node, each tensor it mutated stands for its new value (a buffer's is also an
        output); returns the node's own value."""
        for target, k in mutation.mutated:
            new = result if k is None else result[k]
            env[target] = new
            if target.op == "placeholder":
                self.new_buffers[target.name] = new
        return result[0] if isinstance(result, list | tuple) else result

    def attempt(self, node: torch.fx.Node, env: dict[torch.fx.Node, Any], step: Callable[[], Any], prefix: str,
                keep: bool = False) -> None:
        """Runs one node's lowering `step` into `env[node]` (`keep`: the step writes env itself). Any failure
        becomes this node's located diagnostic, and its result is marked failed (None) so that its users
        are skipped: translation goes on and reports every other node's problems too."""
        try:
            result = step()
            if not keep:
                env[node] = result
        except InternalLoweringError as err:
            self.problem(node, f"{prefix}{err} (a bug in SOLAR: please report it)", internal=True)
            env[node] = None
        except LoweringError as err:
            self.problem(node, prefix + str(err))
            env[node] = None
        except Exception as err:  # a bug in a lowering, not in the program: still located, never a traceback
            self.problem(node, lowering_failed(display_name(node.target), err), internal=True)
            env[node] = None

    def bind(self, node: torch.fx.Node, env: dict[torch.fx.Node, Any]) -> tuple[dict[str, Any], set[str]]:
        schema = node.target._schema  # type: ignore[union-attr]
        args: dict[str, Any] = {}
        present: set[str] = set()
        positional = [a for a in schema.arguments if not a.kwarg_only]
        for a, v in zip(positional, node.args, strict=False):
            args[a.name] = self.convert(v, env)
            present.add(a.name)
        for k, v in node.kwargs.items():
            args[k] = self.convert(v, env)
            present.add(k)
        for a in schema.arguments:
            if a.name not in args:
                args[a.name] = a.default_value if a.has_default_value() else None
        return args, present

    def check(self, node: torch.fx.Node, tn: TorchNode, result: Any) -> None:
        """A lowering's results must have the types export recorded (a cheap guard against template bugs)."""
        values = result if isinstance(result, list | tuple) else [result]
        for v, meta in zip(values, tn.outs, strict=False):
            if isinstance(v, Value) and meta is not None and v.type is not None and not types_equal(v.type, meta.type):
                raise InternalLoweringError(f"lowering produced {v.type}, export says {meta.type}")

    def collect_outputs(self, node: torch.fx.Node, env: dict[torch.fx.Node, Any]) -> list[Value]:
        """The user's outputs, then the new value of every buffer or parameter that `forward` updates in
        place (`copy_`, `add_`, `index_put_`: export's functional graph returns them), in the graph's order;
        `self.state` lists their targets."""
        kinds = torch.export.graph_signature.OutputKind
        outs: list[Value] = []
        state: list[Value] = []
        specs = self.ep.graph_signature.output_specs
        for spec, arg in zip(specs, node.args[0], strict=True):  # type: ignore[arg-type]
            mutation = spec.kind in (kinds.BUFFER_MUTATION, kinds.PARAMETER_MUTATION)
            if spec.kind != kinds.USER_OUTPUT and not mutation:
                continue
            v = env.get(arg) if isinstance(arg, torch.fx.Node) else None
            if isinstance(v, Value):
                if mutation:
                    state.append(v)
                    self.state.append(str(spec.target))
                else:
                    outs.append(v)
            elif not self.problems:
                self.problems.append(Problem("output", f"output {arg} is not a tensor", None))
        order = buffer_order(self.ep)
        for name in sorted(self.new_buffers, key=lambda b: order[b][0]):  # as export's functional graph orders them
            state.append(self.new_buffers[name])
            self.state.append(order[name][1])
        return outs + state


def _draws_random(node: torch.fx.Node) -> bool:
    key = op_key(node.target)
    if key in RANDOM_OPS:
        return True
    if key in ("aten::dropout", "aten::native_dropout"):
        args = list(node.args)
        return bool(args[1] if len(args) > 1 else 0.0) and bool(args[2] if len(args) > 2 else node.kwargs.get("train"))
    return False


def _is_tensor(node: torch.fx.Node) -> bool:
    val = node.meta.get("val")
    if isinstance(val, list | tuple):
        return any(isinstance(v, torch.Tensor) for v in val)
    return isinstance(val, torch.Tensor)


def sanitize_symbol(name: str) -> str:
    out = "".join(ch if ch.isalnum() or ch in "_." else "_" for ch in name)
    return out if out and not out[0].isdigit() else "m" + out


def _sanitize_value(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "_." else "_" for ch in name)


def preserved_table() -> Any:
    """The default decomposition table without the ops we lower, so that those stay whole."""
    table = torch.export.default_decompositions()
    for op in list(table.keys()):
        if op_key(op) in TORCH_LOWERINGS:
            del table[op]
    return table


# In-place binary ops that export leaves unfunctionalized (`router_weights /= router_weights.sum(...)`).
_IN_PLACE_BINARY = frozenset({"add", "sub", "mul", "div"})


_ALIASES_OF_FRESH = (torch.ops.aten.detach_.default, torch.ops.aten.detach.default, torch.ops.aten.to.device,
                     torch.ops.aten.to.dtype, torch.ops.aten.to.dtype_layout)


# `y[..., :n].copy_(a)`: a write through a view into the tensor viewed, which the `copy_` lowering (its
# result is `a`) would drop. No lowering has this key, so the graph is decomposed: functionalization makes
# it a `slice_scatter` into the viewed tensor, which lowers.
COPY_INTO_VIEW = "aten::copy_ (into a view)"


def _writes_into_view(node: torch.fx.Node) -> bool:
    dest = node.args[0] if node.args else None
    return isinstance(dest, torch.fx.Node) and dest.op == "call_function" and bool(getattr(dest.target, "is_view",
                                                                                          False))


def functional_key(node: torch.fx.Node) -> str:
    """The lowering key of `node`: its op's, or for an in-place binary op (`aten::div_`) the functional op's
    where that is what it computes: it overwrites a fresh tensor (no view of another, no input) of which no
    view was taken and that nothing reads after it, so every later reader reads its result. Other in-place
    ops are left to decomposition (functionalization)."""
    key = op_key(node.target)
    if key == "aten::copy_" and _writes_into_view(node):
        return COPY_INTO_VIEW
    name = key.removeprefix("aten::")
    if key == name or not name.endswith("_") or name[:-1] not in _IN_PLACE_BINARY or not node.args:
        return key
    dest = node.args[0]
    if not isinstance(dest, torch.fx.Node) or dest.op != "call_function":
        return key
    # Through aliases (`detach_`, `to`) of a fresh tensor: export's `torch.tensor(n)` is
    # `detach_(to(scalar_tensor(n)))`, a static cache's token counter. The checks below then hold for
    # every tensor of the chain.
    chain = [dest]
    while (dest.target in _ALIASES_OF_FRESH and dest.args and isinstance(dest.args[0], torch.fx.Node)
           and dest.args[0].op == "call_function"):
        dest = dest.args[0]
        chain.append(dest)
    producer = dest.args[0] if dest.target is operator.getitem and dest.args else dest  # one of topk's results
    schema = getattr(getattr(producer, "target", None), "_schema", None)
    if schema is None or any(r.alias_info is not None for r in schema.returns):
        return key  # a view, or another in-place result: what it aliases would change too
    others = {u for link in chain for u in link.users} - {node, *chain}
    for user in others:
        returns = getattr(getattr(user.target, "_schema", None), "returns", None)
        if returns is None or any(r.alias_info is not None for r in returns):
            return key  # a view of it made before would see the update
    later = node.next
    while others and later.op != "root":
        if later in others:
            return key
        later = later.next
    return f"aten::{name[:-1]}"


def lower_exported(ep: torch.export.ExportedProgram, name: str, size_names: SizeNames | None = None
                   ) -> TorchTranslation:
    """Lowers `ep`; where ops lack a lowering, decomposes them (keeping the ops we lower whole) and retries.
    Raises TranslationError listing every op left unsupported, each with its source line."""
    rewrite_ring_appends(ep)  # a ring buffer's shift as the append it computes (frontends/torch_ring.py)
    rewrite_grouped_experts(ep)  # grouped experts products as per-row ones (frontends/torch_grouped_experts.py)
    rewrite_complex(ep)  # complex rotary embeddings in real arithmetic (frontends/torch_complex.py)
    first = GraphLowering(ep, name, size_names)
    missing = first.unsupported_nodes()
    if not missing:
        return first.lower()
    start = time.perf_counter()
    try:
        with quiet_framework():
            dep = ep.run_decompositions(preserved_table())
    except Exception as err:
        for node in missing:
            first.problem(node, f"unsupported op {display_name(node.target)} (and decomposing it failed: "
                          f"{type(err).__name__})")
        raise TranslationError(first.problems, f"{len(first.problems)} unsupported op(s) in {name}") from None
    second = GraphLowering(dep, name, size_names)
    still = second.unsupported_nodes()
    if still:
        originals = {user_frame(n.meta.get("stack_trace")): display_name(n.target) for n in missing}
        for node in still:
            where = user_frame(node.meta.get("stack_trace"))
            origin = originals.get(where)
            extra = f" (from decomposing {origin})" if origin and origin != display_name(node.target) else ""
            second.problems.append(Problem(display_name(node.target),
                                           f"unsupported op {display_name(node.target)}{extra}", where))
        raise TranslationError(second.problems, f"{len(second.problems)} unsupported op(s) in {name}")
    out = second.lower()
    out.decomposed = True
    out.decomposed_ops = sorted({display_name(n.target) for n in missing})
    out.timings["decompose"] = time.perf_counter() - start
    return out
