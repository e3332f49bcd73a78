"""A training step → SIR: the forward, the loss, the backward and the optimizer's update as one program.

    from solar.frontends.torch_train import translate_train
    result = translate_train(problem, TrainOptions("adamw", "sum"), targets)

The stages:
1. *export the loss*: `LossModule(model)` (forward, then the loss of its outputs against the targets) is
   exported on the meta device as any program is (frontends/torch_problem.py, dims symbolic where they can be).
2. *joint graph*: torch.export's forward-backward decomposition (`_decompose_exported_program` with a
   joint loss, as `torch.export.experimental._export_forward_backward` does) turns it into ATen forward and
   backward: AOT autograd's joint graph, with a gradient output per parameter that requires grad. The ops
   we lower whole are kept out of the decomposition table, as for forward programs.
3. *the optimizer*: `OptimizerUpdate` (torch.optim's functional adam / adamw / sgd, capturable, one tensor
   at a time) is exported with every parameter, gradient and state tensor an input it mutates, then
   functionalized; its nodes are spliced after the joint graph, the gradients feeding it, its state tensors
   new buffer arguments (`optim.exp_avg__model__fc__weight`, ...).
4. *lower*: the spliced program goes through the lowering table as a forward program does; the updated
   parameters and state are its last outputs (state updated in place, as for buffers).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.fx
from torch.export.graph_signature import (
    ExportGraphSignature,
    InputKind,
    InputSpec,
    OutputKind,
    OutputSpec,
    TensorArgument,
)
from torch.overrides import TorchFunctionMode

from .diagnostics import SourceError, TranslationError
from .lowering.core import LoweringError
from .torch_lowering import GraphLowering, preserved_table, sir_dtype
from .torch_problem import TorchProblem, TorchTranslation, export_with_dims, quiet_framework
from .train_amp import amp_export, amp_policy, amp_summary, autocast_dtype
from .train_checkpoint import RECOMPUTE_KEY, checkpoint_regions, mark_regions, recompute_regions, recompute_summary
from .train_scaler import SCALER, ScaledUpdate, scaler_nodes, uses_scaler
from .train_step import (
    STATE_NAMES,
    LossModule,
    OptimizerUpdate,
    TrainError,
    TrainOptions,
    TrainStep,
    hyperparameters,
    state_key,
    trainable,
)


def model_inputs(problem: TorchProblem) -> int:
    """How many inputs the model itself takes (before any targets)."""
    with torch.device("meta"):
        return len(list(problem.make_inputs()))


def check_options(options: TrainOptions, has_targets: bool, source: str) -> None:
    if options.loss in ("mse", "cross_entropy") and not has_targets:
        raise TrainError(f"--loss {options.loss} needs targets: {source} defines no get_targets() (it returns the "
                         "targets, as get_inputs() returns the inputs)")


def export_loss(problem: TorchProblem, n_inputs: int, options: TrainOptions, dynamic: str
                ) -> tuple[torch.export.ExportedProgram, list[str]]:
    """The loss module exported (its inputs: the model's `n_inputs`, then the targets), then decomposed into
    its joint forward-backward graph."""
    loss_problem = TorchProblem(lambda: LossModule(problem.make_model(), n_inputs, options.loss, options.accumulate,
                                                   options.amp, uses_scaler(options.amp, options.optimizer)),
                                problem.make_inputs, problem.name, problem.source, size_names=problem.size_names)
    with torch.device("meta"):
        model = problem.make_model()
    if not trainable(model):
        raise TrainError("the model has no parameter that requires grad: a training step updates none")
    try:
        with FusedAttention(), amp_export(options.amp) as device, checkpoint_regions():
            ep, _, names = export_with_dims(loss_problem, dynamic, device)
        mark_regions(ep)
    except (TrainError, SourceError):
        raise
    except Exception as err:
        from .torch_export import export_error

        raise export_error(err) from None
    try:
        with quiet_framework(), amp_policy(options.amp):
            joint = joint_program(ep)
            joint.solar_regions = recompute_regions(joint)  # type: ignore[attr-defined]
    except Exception as err:
        from .diagnostics import user_frames

        frames = user_frames(err)
        message = f"the backward failed: {type(err).__name__}: {(str(err).splitlines() or [''])[0]}"
        if frames:
            raise SourceError(message, frames[-1]) from None
        raise TrainError(message) from None
    return joint, names


def joint_table() -> Any:
    """The decomposition table of the joint graph: `preserved_table` (ops we lower stay whole), except that
    composite ops without a derivative of their own (CompositeImplicitAutograd: cross_entropy_loss, linear,
    scaled_dot_product_attention) decompose, since autograd differentiates them only through what they
    decompose into."""
    from torch._decomp import decomposition_table

    from .lowering import TORCH_LOWERINGS
    from .lowering.registry import op_key

    table = preserved_table()
    for op, fn in torch.export.default_decompositions().items():
        if op not in table and torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "CompositeImplicitAutograd"):
            table[op] = fn
    # The fused attention's forward stays whole (lowered with its log-sum-exp, frontends/lowering/backward.py),
    # so that its backward is the fused one and not the math path's S×S products.
    for op in list(table):
        if op_key(op) in TORCH_LOWERINGS and not torch._C._dispatch_has_kernel_for_dispatch_key(
                op.name(), "CompositeImplicitAutograd"):
            del table[op]
    # Backward ops without a lowering of their own decompose where torch has a decomposition (max pooling's
    # backward into a scatter-add, the norms' backward into reductions and pointwise ops).
    for op, fn in decomposition_table.items():
        if isinstance(op, torch._ops.OpOverload) and op_key(op).endswith("_backward") \
                and op_key(op) not in TORCH_LOWERINGS and op not in table:
            table[op] = fn  # the table is torch.export's CustomDecompTable: no setdefault
    return table


class FusedAttention(TorchFunctionMode):
    """While exporting the loss, `F.scaled_dot_product_attention` runs as the fused kernel a training step
    runs (`_scaled_dot_product_flash_attention_for_cpu`: its forward saves the log-sum-exp, its backward
    recomputes the probabilities), whatever backend torch would pick on the meta device (for small heads its
    math path: full S×S products, the causal mask a `where`). Grouped key-value heads are read as they
    are (the kernel indexes each query head's group). With a mask or dropout, as written."""

    def __torch_function__(self, func: Any, types: Any, args: Sequence[Any] = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if func is torch.nn.functional.scaled_dot_product_attention:
            bound = dict(zip(("query", "key", "value", "attn_mask", "dropout_p", "is_causal"), args, strict=False))
            bound.update(kwargs)
            q, k, v = bound["query"], bound["key"], bound["value"]
            low = autocast_dtype()
            if low is not None:  # autocast casts SDPA's inputs to its low type (the fused op is on no list)
                q, k, v = (t.to(low) if t.is_floating_point() and t.dtype != torch.float64 else t for t in (q, k, v))
            # Grouped heads (SDPA's enable_gqa): key-value head h serves query heads h·g .. h·g + g − 1; the fused
            # kernel reads the shared heads (the CPU kernel and its backward take them as they are), no copy.
            grouped = bool(bound.get("enable_gqa")) and q.dim() == k.dim() == v.dim() == 4 \
                and q.shape[0] == k.shape[0] == v.shape[0] and k.shape[1] == v.shape[1] \
                and q.shape[1] % k.shape[1] == 0
            if bound.get("attn_mask") is None and not bound.get("dropout_p") and q.dim() == 4 \
                    and (grouped or (not bound.get("enable_gqa") and q.shape[:2] == k.shape[:2] == v.shape[:2])):
                return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
                    q, k, v, 0.0, bool(bound.get("is_causal", False)), scale=bound.get("scale"))[0]
        return func(*args, **kwargs)


def joint_program(ep: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    from torch.export.experimental import (
        _copy_graph_module_and_signature,
        _decompose_exported_program,
        _remove_detach_pass,
    )

    joint = _decompose_exported_program(ep, cia_to_decomp={}, python_decomp_table=joint_table(),
                                        joint_loss_index=0, decompose_custom_triton_ops=False)
    gm, sig = _copy_graph_module_and_signature(joint)
    _remove_detach_pass(gm, sig)
    return joint._update(gm, sig)


def optimizer_graph(optimizer: str, params: Sequence[torch.Tensor], scaled: bool = False
                    ) -> torch.export.ExportedProgram:
    """torch.optim's functional update exported over meta tensors of the parameters' shapes, functionalized:
    its outputs are the new values of the inputs it mutates. `scaled`: inside GradScaler's unscale and scale
    update (train_scaler.py), the scale and growth tracker its last two inputs."""
    with torch.device("meta"):
        metas = [torch.empty(p.shape, dtype=p.dtype) for p in params]
        hyper = hyperparameters(optimizer, [torch.nn.Parameter(m) for m in metas])
        grads = [torch.empty_like(m) for m in metas]
        state = [torch.empty((), dtype=torch.float32) if kind == "step" else torch.empty_like(m)
                 for kind in STATE_NAMES[optimizer] for m in metas]
        scaler = [torch.empty((), dtype=torch.float32), torch.empty((), dtype=torch.int32)] if scaled else []
    update: torch.nn.Module = OptimizerUpdate(optimizer, hyper, len(metas))
    if scaled:
        update = ScaledUpdate(update, len(metas))
    with quiet_framework():
        ep = torch.export.export(update, (*metas, *grads, *state, *scaler))
        return ep.run_decompositions(preserved_table())


def splice_optimizer(joint: torch.export.ExportedProgram, optimizer: str, scaled: bool = False
                     ) -> torch.export.ExportedProgram:
    """One program: the joint graph, then the optimizer's update of every parameter that has a gradient.
    Outputs: the loss, (without an optimizer) the gradients, the model's updated buffers, then the updated
    parameters and optimizer state (mutations, so that the IR lists them as state updated in place)."""
    from torch.export.experimental import _copy_graph_module_and_signature

    gm, sig = _copy_graph_module_and_signature(joint)
    graph = gm.graph
    out_node = graph.output_node()
    outs = list(out_node.args[0])  # type: ignore[arg-type]
    nodes = {n.name: n for n in graph.nodes}
    grads = [(str(s.target), node) for s, node in zip(sig.output_specs, outs, strict=True)
             if s.kind == OutputKind.GRADIENT_TO_PARAMETER]
    loss = [node for s, node in zip(sig.output_specs, outs, strict=True) if s.kind == OutputKind.LOSS_OUTPUT]
    mutations = [(s, node) for s, node in zip(sig.output_specs, outs, strict=True)
                 if s.kind in (OutputKind.BUFFER_MUTATION, OutputKind.PARAMETER_MUTATION)]
    param_nodes = {str(s.target): nodes[s.arg.name] for s in sig.input_specs if s.kind == InputKind.PARAMETER}
    new_outs: list[tuple[OutputSpec, torch.fx.Node]] = [
        (OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(loss[0].name), None), loss[0])]
    input_specs = list(sig.input_specs)
    if optimizer == "none":
        new_outs += [(OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(g.name), None), g) for _, g in grads]
    new_outs += [(OutputSpec(s.kind, TensorArgument(node.name), s.target), node) for s, node in mutations]
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    if optimizer != "none":
        names = [name for name, _ in grads]
        params = [param_nodes[name] for name in names]
        opt = optimizer_graph(optimizer, [p.meta["val"] for p in params], scaled)
        first_user = next((n for n in graph.nodes if n.op == "placeholder"
                           and any(s.arg.name == n.name and s.kind == InputKind.USER_INPUT for s in sig.input_specs)),
                          None)
        state_nodes: list[torch.fx.Node] = []
        state_targets: list[str] = []
        spec_at = next((k for k, s in enumerate(input_specs) if s.kind == InputKind.USER_INPUT), len(input_specs))
        for kind in STATE_NAMES[optimizer]:
            for name, p in zip(names, params, strict=True):
                target = f"optim.{state_key(kind, name)}"
                if first_user is not None:
                    with graph.inserting_before(first_user):
                        ph = graph.placeholder(f"b_optim_{state_key(kind, name)}")
                else:
                    with graph.inserting_before(out_node):
                        ph = graph.placeholder(f"b_optim_{state_key(kind, name)}")
                val = p.meta["val"]
                ph.meta["val"] = (torch.empty((), dtype=torch.float32, device="meta") if kind == "step"
                                  else torch.empty(val.shape, dtype=val.dtype, device="meta"))
                state_nodes.append(ph)
                state_targets.append(target)
                input_specs.insert(spec_at, InputSpec(InputKind.BUFFER, TensorArgument(ph.name), target, True))
                spec_at += 1
        flat = params + [g for _, g in grads] + state_nodes
        targets = names + [""] * len(grads) + state_targets
        if scaled:  # the loss module's GradScaler state (LossModule.scaler)
            buffers = {str(s.target): nodes[s.arg.name] for s in sig.input_specs if s.kind == InputKind.BUFFER}
            flat += [buffers[f"{SCALER}.scale"], buffers[f"{SCALER}.growth_tracker"]]
            targets += [f"{SCALER}.scale", f"{SCALER}.growth_tracker"]
        opt_placeholders = [n for n in opt.graph.nodes if n.op == "placeholder"]
        by_name: dict[str, tuple[torch.fx.Node, str]] = {}
        for ph, node, target in zip(opt_placeholders, flat, targets, strict=True):
            env[ph] = node
            by_name[ph.name] = (node, target)
        opt_out: list[Any] = []
        with graph.inserting_before(out_node):
            for node in opt.graph.nodes:
                if node.op == "call_function":
                    env[node] = graph.node_copy(node, lambda n: env[n])
                elif node.op == "output":
                    opt_out = list(node.args[0])  # type: ignore[arg-type]
        updated: dict[str, torch.fx.Node] = {}
        for s, node in zip(opt.graph_signature.output_specs, opt_out, strict=True):
            if s.kind == OutputKind.USER_INPUT_MUTATION:
                updated[str(s.target)] = env[node]
        if scaled:  # the unscaled gradients, the new scale and tracker: what GradScaler computes
            made = [node for s, node in zip(opt.graph_signature.output_specs, opt_out, strict=True)
                    if s.kind == OutputKind.USER_INPUT_MUTATION and not by_name[str(s.target)][1].startswith(
                        ("model.", "optim."))]
            loss_scaling = [env[n] for n in scaler_nodes(opt.graph, made)]
        for ph in opt_placeholders:
            if ph.name in updated and by_name[ph.name][1]:
                target = by_name[ph.name][1]
                kind = OutputKind.PARAMETER_MUTATION if target in param_nodes else OutputKind.BUFFER_MUTATION
                new = updated[ph.name]
                new_outs.append((OutputSpec(kind, TensorArgument(new.name), target), new))
    out_node.args = (tuple(node for _, node in new_outs),)
    graph.eliminate_dead_code()
    gm.recompile()
    new_sig = ExportGraphSignature(input_specs, [s for s, _ in new_outs])
    program = _SplicedProgram(joint, gm, new_sig)
    # The update's own nodes (env also maps its placeholders to the joint graph's gradients: not the update's).
    program.optimizer_nodes = [env[n] for n in env if n.op == "call_function"] if optimizer != "none" else []
    program.gradient_nodes = [g for _, g in grads]
    program.loss_scaling_nodes = loss_scaling if optimizer != "none" and scaled else []
    return program


TRAIN_ATTR = "train"  # the module attribute: each phase's kernels and the step's memory (docs/training.md)


def node_bytes(node: torch.fx.Node) -> int:
    """Bytes of a node's tensor value at its full size (a symbolic dim at the size it was exported with)."""
    val = node.meta.get("val")
    values = val if isinstance(val, list | tuple) else [val]
    total = 0
    for v in values:
        if isinstance(v, torch.Tensor):
            n = 1
            for d in v.shape:
                n *= int(d.node.hint) if isinstance(d, torch.SymInt) and d.node.hint is not None else int(d)
            total += n * v.element_size()
    return total


def phases(program: Any) -> dict[torch.fx.Node, str]:
    """Each node's phase: `forward` for what the loss depends on, `optimizer` for the spliced update, and
    `backward` for the rest (the gradients)."""
    graph = program.graph
    out = graph.output_node()
    loss = out.args[0][0]  # type: ignore[index]
    forward: set[torch.fx.Node] = set()
    stack = [loss]
    while stack:
        node = stack.pop()
        if node in forward:
            continue
        forward.add(node)
        stack.extend(node.all_input_nodes)
    optimizer = set(getattr(program, "optimizer_nodes", ()))
    return {n: "forward" if n in forward else "optimizer" if n in optimizer else "backward"
            for n in graph.nodes if n.op == "call_function"}


_VIEWS = frozenset({"aten::permute", "aten::t", "aten::view", "aten::reshape", "aten::expand", "aten::transpose",
                    "aten::alias", "aten::unsqueeze", "aten::squeeze", "aten::_unsafe_view", "aten::slice",
                    "aten::select", "aten::detach"})


def _views_of(node: torch.fx.Node, bases: set[torch.fx.Node]) -> bool:
    """True when `node` is a view (a chain of views) of one of `bases`: a transposed weight is no activation."""
    from .lowering.registry import op_key

    while node.op == "call_function" and op_key(node.target) in _VIEWS and node.args \
            and isinstance(node.args[0], torch.fx.Node):
        node = node.args[0]
    return node in bases


def tokens_of(problem: TorchProblem, micro: int = 1) -> int:
    """Tokens of one step, for the 6·N·tokens estimate: batch × sequence for token ids (B, T) or activations
    (B, T, C), else the batch (the first input's leading dim); times the micro-batches accumulated."""
    with torch.device("meta"):
        inputs = [x for x in problem.make_inputs() if isinstance(x, torch.Tensor)]
    if not inputs or inputs[0].dim() == 0:
        return micro
    x = inputs[0]
    if (x.dim() == 2 and not x.is_floating_point()) or x.dim() == 3:
        return micro * int(x.shape[0]) * int(x.shape[1])
    return micro * int(x.shape[0])


class PhaseLowering(GraphLowering):
    """The lowering, recording which phase emitted each kernel (by its symbol)."""

    def __init__(self, program: Any, name: str, size_names: Any) -> None:
        super().__init__(program, name, size_names)
        self.phase_of = phases(program)
        self.kernels: dict[str, list[str]] = {"forward": [], "backward": [], "optimizer": []}
        self.loss_scaling = set(getattr(program, "loss_scaling_nodes", ()))

    def lower_node(self, node: torch.fx.Node, env: dict[torch.fx.Node, Any], em: Any) -> None:
        first = len(em.block.ops)
        super().lower_node(node, env, em)
        phase = self.phase_of.get(node, "forward")
        # A checkpointed region's recomputed copy is the backward's, and also listed apart (train_checkpoint.py);
        # so is GradScaler's work (train_scaler.py), the optimizer's.
        lists = [phase, "recomputed"] if node.meta.get(RECOMPUTE_KEY) is not None else \
            [phase, "loss_scaling"] if node in self.loss_scaling else [phase]
        for op in em.block.ops[first:]:
            symbol = getattr(op, "symbol", None)
            # A unit without a symbol (a gather, scatter, concat or insert) is named by its result.
            name = symbol if isinstance(symbol, str) else \
                f"%{op.results[0].name}" if not op.is_view and op.results else None
            for key in lists if name else ():
                self.kernels.setdefault(key, []).append(name)  # type: ignore[arg-type]

    def summary(self, options: TrainOptions) -> dict[str, Any]:
        """The module attribute TRAIN_ATTR: kernels per phase, and the bytes the step holds at full size:
        parameters (those trained), gradients, optimizer state, and the activations saved for the backward
        (forward values a backward node reads)."""
        sig = self.ep.graph_signature
        nodes = {n.name: n for n in self.ep.graph.nodes}
        trained = {str(s.target) for s in sig.output_specs if s.kind == OutputKind.PARAMETER_MUTATION}
        params = [nodes[s.arg.name] for s in sig.input_specs if s.kind == InputKind.PARAMETER]
        state = [nodes[s.arg.name] for s in sig.input_specs
                 if s.kind == InputKind.BUFFER and str(s.target).startswith("optim.")]
        saved = {n for n, ph in self.phase_of.items() if ph == "forward" and not _views_of(n, set(params))
                 and any(self.phase_of.get(u) == "backward" for u in n.users)}
        saved |= {n for n in self.ep.graph.nodes if n.op == "placeholder" and n not in state
                  and any(self.phase_of.get(u) == "backward" for u in n.users) and n not in params}
        grads = getattr(self.ep, "gradient_nodes", [])
        elements = sum(node_bytes(p) // max(p.meta["val"].element_size(), 1) for p in params
                       if not trained or any(s.arg.name == p.name and str(s.target) in trained
                                             for s in sig.input_specs))
        dtypes = {str(sir_dtype(p.meta["val"].dtype).spelling) for p in params}
        return {"loss": options.loss, "optimizer": options.optimizer, **self.kernels,
                "dtype": dtypes.pop() if len(dtypes) == 1 else "f32",
                "trained_parameters": elements,
                "parameter_bytes": sum(node_bytes(p) for p in params),
                "gradient_bytes": sum(node_bytes(g) for g in grads),
                "optimizer_state_bytes": sum(node_bytes(s) for s in state),
                "saved_activation_bytes": sum(node_bytes(n) for n in saved)}


class _SplicedProgram:
    """The parts of an ExportedProgram the lowering reads (graph, signature, size ranges, constants), for the
    spliced step: its parameter mutations and new state buffers are not a program torch.export would make, so
    no ExportedProgram is built (its verifier would look for the new buffers in the model's state dict)."""

    def __init__(self, base: torch.export.ExportedProgram, gm: torch.fx.GraphModule,
                 sig: ExportGraphSignature) -> None:
        self.graph_module = gm
        self.graph = gm.graph
        self.graph_signature = sig
        self.range_constraints = base.range_constraints
        self.constants = base.constants
        self.state_dict = base.state_dict
        self.optimizer_nodes: list[torch.fx.Node] = []  # the update's nodes, after the joint graph's
        self.gradient_nodes: list[torch.fx.Node] = []
        self.loss_scaling_nodes: list[torch.fx.Node] = []  # GradScaler's unscale, check and scale update

    def run_decompositions(self, table: Any) -> Any:
        raise LoweringError("the training step has ops without a lowering even after the joint decomposition")


def optimizer_program(optimizer: str, params: Sequence[torch.Tensor]) -> _SplicedProgram:
    """The optimizer's update alone, its parameters, gradients and state all buffers updated in place (what
    the AdamW traffic check of tests/unit/test_torch_train.py analyses)."""
    ep = optimizer_graph(optimizer, params)
    sig = ep.graph_signature
    names = [s.arg.name for s in sig.input_specs]
    inputs = [InputSpec(InputKind.BUFFER, s.arg, f"state_{k}", True) for k, s in enumerate(sig.input_specs)]
    outputs = [OutputSpec(OutputKind.BUFFER_MUTATION, s.arg, f"state_{names.index(str(s.target))}")
               for s in sig.output_specs if s.kind == OutputKind.USER_INPUT_MUTATION]
    return _SplicedProgram(ep, ep.graph_module, ExportGraphSignature(inputs, outputs))


def translate_train(problem: TorchProblem, n_inputs: int, options: TrainOptions, dynamic: str = "all"
                    ) -> TorchTranslation:
    """The step's SIR. Raises TrainError (no parameter to train, a missing target), SourceError (the export or
    the backward failed at the user's line) or TranslationError (ops without a lowering)."""
    import time

    modes = [m for m in ("all", "batch", "none") if m == dynamic or _after(m, dynamic)]
    for k, mode in enumerate(modes):
        start = time.perf_counter()
        joint, names = export_loss(problem, n_inputs, options, mode)
        exported = time.perf_counter()
        program = splice_optimizer(joint, options.optimizer, uses_scaler(options.amp, options.optimizer))
        try:
            lowering = PhaseLowering(program, problem.name, problem.size_names)  # type: ignore[arg-type]
            result = lowering.lower()
            tokens = tokens_of(problem, options.accumulate)
            result.module.attrs[TRAIN_ATTR] = {**lowering.summary(options), "tokens": tokens,
                                               "accumulate": options.accumulate,
                                               **amp_summary(options.amp, program, node_bytes),
                                               **recompute_summary(getattr(joint, "solar_regions", []))}
            break
        except (TranslationError, LoweringError) as err:
            # The backward flattens batch dims together (a linear layer's weight gradient sums over B·T):
            # a product of two size parameters the IR cannot express. Fewer symbolic dims, as for forwards.
            if k == len(modes) - 1 or isinstance(err, TrainError):
                raise
            fallback = (f"with --dynamic {mode} the translation failed ({str(err).splitlines()[0][:100]}); "
                        f"exported with --dynamic {modes[k + 1]}")
    else:  # pragma: no cover - the loop breaks or raises
        raise AssertionError("unreachable")
    if mode != dynamic:
        result.fixed_dims.append(fallback)
    result.input_names = names
    result.timings["export"] = exported - start
    result.timings["lower"] = time.perf_counter() - exported
    return result


def _after(mode: str, asked: str) -> bool:
    order = ("all", "batch", "none")
    return order.index(mode) > order.index(asked)


def load_train_problem(path: str, options: TrainOptions) -> tuple[TorchProblem, Any]:
    """A KernelBench-style file and its `get_targets` (None when it defines none); refuses a loss that needs
    targets the file does not give."""
    import os

    from .torch_problem import import_problem_file
    from .torch_symbols import source_size_names

    mod = import_problem_file(path)
    init = getattr(mod, "get_init_inputs", lambda: [])
    targets = getattr(mod, "get_targets", None)
    check_options(options, targets is not None, path)
    problem = TorchProblem(lambda: mod.Model(*init()), lambda: list(mod.get_inputs()),
                           os.path.splitext(os.path.basename(path))[0], path, mod.Model, init,
                           source_size_names(vars(mod)))
    return problem, targets


def with_targets(problem: TorchProblem, targets: Any, options: TrainOptions) -> TorchProblem:
    """The problem whose inputs are the model's followed by the targets (only for a loss that takes them),
    `options.accumulate` times over (each micro-batch drawn anew)."""
    if (targets is None or options.loss == "sum") and options.accumulate == 1:
        return problem
    take = targets if targets is not None and options.loss != "sum" else (lambda: [])

    def make_inputs() -> list[Any]:
        out: list[Any] = []
        for _ in range(options.accumulate):
            out += list(problem.make_inputs()) + list(take())
        return out

    return TorchProblem(problem.make_model, make_inputs, problem.name, problem.source, problem.model_class,
                        problem.init_args, problem.size_names)


def validate_train(problem: TorchProblem, n_inputs: int, options: TrainOptions, tr: TorchTranslation, seed: int,
                   size: int, full: bool) -> Any:
    """The step's IR against PyTorch's own step (`loss.backward()`, then the torch.optim optimizer's `step()`)
    on the same seeded weights, inputs and optimizer state, at reduced sizes: the loss, then every updated
    parameter and state tensor (every gradient with optimizer 'none')."""
    from .export_dims import size_lines
    from .torch_reference import reference_runner
    from .validate import small_sizes, validate_sized

    step = TorchProblem(lambda: TrainStep(problem.make_model(), n_inputs, options), problem.make_inputs,
                        problem.name, problem.source, size_names=problem.size_names)
    sizes = small_sizes(tr.module, size, full, tr.param_min)
    with amp_policy(options.amp):
        report = validate_sized(tr.module, lambda sz: reference_runner(step, tr, seed, sz), sizes, seed)
    report.details = size_lines(tr.params, tr.param_dims, tr.input_names, report.sizes, tr.fixed_dims)
    return report


def header_lines(tr: TorchTranslation, options: TrainOptions) -> list[str]:
    srcs = ", ".join(f"%{v.name} = {a.kind} {a.key}" for v, a in zip(tr.module.entry.args, tr.args, strict=True))
    what = ("the loss and the gradient of every trainable parameter" if options.optimizer == "none" else
            f"the loss; torch.optim {options.optimizer} (its class defaults) updates every trainable parameter")
    lines = [f"Training step: loss {options.loss}; outputs {what}", f"Arguments: {srcs}"]
    if options.amp != "none":
        from .train_amp import amp_line

        lines.insert(1, amp_line(options.amp).replace("the forward", "the forward and the loss")
                     + "; f32 master weights and optimizer state")
    if uses_scaler(options.amp, options.optimizer):
        lines.insert(2, "Loss scaling: torch.amp.GradScaler (its defaults): the loss times the scale, every gradient "
                        "unscaled and checked for inf/nan before the update (assumed taken), then the scale updated")
    regions = int(tr.module.attrs.get(TRAIN_ATTR, {}).get("checkpoint_regions", 0))
    if regions:
        lines.append(f"Activation checkpointing: {regions} torch.utils.checkpoint region(s); the backward recomputes "
                     "the inner values it reads from each region's saved inputs")
    if tr.state:
        lines.append(f"State updated in place, its new values the last {len(tr.state)} output(s): "
                     + ", ".join(tr.state))
    return lines
