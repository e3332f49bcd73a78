"""Hybrid translation: the deterministic frontend lowers what it covers, the model writes only the rest.

Every op the lowering table cannot translate (no lowering, or a lowering that rejects this configuration)
becomes a *hole*: a `solar.call @llm_<op>(...)` at its place in the graph, to a function whose signature is
fixed by the surrounding IR (the op's tensor arguments as they were lowered, the op's used outputs with the
shapes and dtypes export recorded). The model sees the module with those functions' bodies left
`// TO WRITE` and answers with just the functions; they are parsed and verified on their own (diagnostics in
the model's own line numbers), checked against the fixed signatures, spliced into the module, and the whole
module is validated against the original program, as a deterministic translation is.

    skel = lower_with_holes(problem)            # Skeleton: the module with stub functions, and the holes
    module = splice(skel, reply_sir)            # CandidateError on any problem; the model's functions in place

The same lowering gives whole-program mode (`--llm-only`) its fixed interface: the entry function's
signature (user inputs, then parameters and buffers, as export orders them) and the size parameters.
"""

from __future__ import annotations

import copy
import operator
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from solar.ir.diagnostics import DiagnosticEngine
from solar.ir.dtypes import DType
from solar.ir.ops import CallOp, ConstantOp, FuncOp, ModuleOp, Op, ReturnOp, Value
from solar.ir.printer import print_module
from solar.ir.rewriter import NameGenerator
from solar.ir.types import TensorType
from solar.ir.verifier import verify

from .. import torch_export as te
from ..diagnostics import user_frame
from ..lowering.core import Emitter, LoweringError
from ..lowering.registry import OutMeta
from ..torch_lowering import IGNORED_OPS
from .loop import RESPONSE_FILE, CandidateError, parse_candidate, signature_problems, signature_text
from .prompt import HoleSpec

TODO = "// TO WRITE"


@dataclass
class Hole:
    """One op left to the model: its call site in the module and the function it calls."""

    name: str  # the callee's symbol (without '@')
    op: str  # aten.sort.default
    reason: str
    call: str  # the op with its arguments, for the prompt
    where: str  # file:line: code, or ''
    arg_names: list[str]
    arg_types: list[TensorType]
    result_types: list[TensorType]
    returns: str  # which outputs of the op, in words
    args: list[Value] = field(default_factory=list)  # the call's operands in the entry function
    placeholders: list[Op] = field(default_factory=list)  # stand-ins until the call replaces them
    loc: Any = None

    @property
    def signature(self) -> str:
        return signature_text(self.name, self.arg_names, self.arg_types, self.result_types)

    def spec(self) -> HoleSpec:
        return HoleSpec(self.name, self.op, self.call, self.where, self.returns, self.signature, self.reason)


@dataclass
class Skeleton:
    translation: te.TorchTranslation  # its module holds the stub functions
    holes: list[Hole]

    @property
    def module(self) -> ModuleOp:
        return self.translation.module

    def text(self) -> str:
        """The module as the model sees it: the stub functions' bodies replaced by `// TO WRITE`."""
        # Source locations are noise to the model, and absolute paths would tie the prompt (and so the cache
        # key) to where the checkout lives.
        text = re.sub(r' loc\("(?:[^"\\]|\\.)*":\d+:\d+\)', "", print_module(self.module))
        for h in self.holes:
            pattern = re.compile(rf"^(?P<indent>[ \t]*)solar\.func @{re.escape(h.name)}\(.*?\{{\n.*?^(?P=indent)\}}$",
                                 re.M | re.S)
            m = pattern.search(text)
            if m is None:  # pragma: no cover - the printer's form is fixed
                continue
            head = m.group(0).split("\n", 1)[0]
            indent = m.group("indent")
            text = text[: m.start()] + f"{head}\n{indent}  {TODO}\n{indent}}}" + text[m.end():]
        return text


def _zero(dtype: DType) -> Any:
    if dtype == DType.I1:
        return False
    return 0.0 if dtype.is_float else 0


def _display(v: Any) -> str:
    if isinstance(v, Value):
        return f"%{v.name}"
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_display(x) for x in v) + "]"
    if isinstance(v, torch.dtype):
        return str(v)
    return repr(v) if isinstance(v, str) else str(v)


class HybridLowering(te.GraphLowering):
    """The torch graph lowering, with holes where it would report an op as untranslatable."""

    def __init__(self, ep: torch.export.ExportedProgram, name: str) -> None:
        super().__init__(ep, name)
        self.holes: list[Hole] = []

    def lower_node(self, node: torch.fx.Node, env: dict[torch.fx.Node, Any], em: Emitter) -> None:
        val = node.meta.get("val")
        if isinstance(val, torch.SymInt | torch.SymFloat | torch.SymBool) or node.target is operator.getitem:
            super().lower_node(node, env, em)
            return
        key = te.op_key(node.target)
        if key in IGNORED_OPS:
            return
        if key not in te.TORCH_LOWERINGS:
            self._hole(node, env, em, f"no lowering for {key}")
            return
        ops_before, problems_before = len(em.block.ops), len(self.problems)
        super().lower_node(node, env, em)
        if len(self.problems) > problems_before:
            # The lowering rejected this configuration: drop what it emitted before giving up, and let the
            # model write the op instead.
            reason = self.problems[problems_before].message
            del self.problems[problems_before:]
            del em.block.ops[ops_before:]
            self._hole(node, env, em, reason)

    def _hole(self, node: torch.fx.Node, env: dict[torch.fx.Node, Any], em: Emitter, reason: str) -> None:
        if not hasattr(node.target, "_schema"):
            self.problem(node, f"unsupported call {te.display_name(node.target)}")
            return
        try:
            args, _present = self.bind(node, env)
        except LoweringError as err:
            self.problem(node, str(err))
            return
        arg_names: list[str] = []
        arg_values: list[Value] = []
        for name, v in args.items():
            items = v if isinstance(v, list | tuple) else [v]
            tensors = [x for x in items if isinstance(x, Value)]
            for k, x in enumerate(tensors):
                arg_names.append(name if not isinstance(v, list | tuple) else f"{name}_{k}")
                arg_values.append(x)
        if any(v.type is None for v in arg_values):
            return  # an input failed to translate: that failure is reported already
        val = node.meta.get("val")
        metas = self.out_meta(val)
        if isinstance(val, list | tuple):
            used = sorted({u.args[1] for u in node.users if u.target is operator.getitem})  # type: ignore[misc]
            if any(u.target is not operator.getitem for u in node.users):
                used = list(range(len(metas)))
        else:
            used = [0]
        chosen: list[tuple[int, OutMeta]] = []
        for k in used:
            m = metas[k] if k < len(metas) else None
            if m is None:
                self.problem(node, f"{te.display_name(node.target)}: output {k} is not a tensor")
                return
            chosen.append((k, m))
        if not chosen:
            return  # nothing reads the op: no hole needed
        display = te.display_name(node.target)
        base = "llm_" + re.sub(r"[^A-Za-z0-9_]", "_", display.split(".")[1])
        name = NameGenerator([h.name for h in self.holes] + ["forward"]).fresh(base)
        frame = user_frame(node.meta.get("stack_trace"))
        where = f"{os.path.basename(frame.file)}:{frame.line}: {frame.code}" if frame is not None else ""
        call = f"{display}(" + ", ".join(f"{k}={_display(v)}" for k, v in args.items()) + ")"
        returns = ", ".join(f"output {k} ({m.type})" for k, m in chosen)
        if isinstance(val, list | tuple):
            returns += f" of the op's {len(metas)} outputs"
        hole = Hole(name, display, reason, call, where, _unique(arg_names), [v.type for v in arg_values],  # type: ignore[misc]
                    [m.type for _, m in chosen], returns, arg_values, loc=frame.location if frame else None)
        # Stand-ins with the right types keep the module verifiable while lowering continues; `_place_calls`
        # swaps them for the call once the entry function is complete.
        results: list[Value | None] = [None] * max(len(metas), 1)
        for k, m in chosen:
            v = em.block.constant(_zero(m.dtype), m.type, hint=name)
            hole.placeholders.append(v.owner)  # type: ignore[arg-type]
            results[k] = v
        env[node] = results if isinstance(val, list | tuple) else results[0]
        self.holes.append(hole)


def _unique(names: list[str]) -> list[str]:
    fresh = NameGenerator()
    return [fresh.fresh(n) for n in names]


def _place_calls(module: ModuleOp, holes: Sequence[Hole]) -> None:
    """Replaces each hole's stand-in constants by one `solar.call`, and adds a stub callee (a body of zeros)
    so that the skeleton module verifies and prints."""
    entry = module.funcs[0]
    for h in holes:
        body = _block_of(entry, h.placeholders[0])
        first = next(i for i, op in enumerate(body) if op is h.placeholders[0])
        call = CallOp(h.name, list(h.args), list(h.result_types))
        call.results = [op.results[0] for op in h.placeholders]
        for v in call.results:
            v.owner = call
        if h.loc is not None:
            call.src_loc = h.loc
        ids = {id(op) for op in h.placeholders}
        body[:] = [op for op in body[:first] if id(op) not in ids] + [call] + \
                  [op for op in body[first:] if id(op) not in ids]
        args = [Value(n, t) for n, t in zip(h.arg_names, h.arg_types, strict=True)]
        stub_body: list[Op] = []
        outs = []
        for k, t in enumerate(h.result_types):
            c = ConstantOp(_zero(t.dtype), t)
            c.results = [Value(f"zero{k}", t, c)]
            stub_body.append(c)
            outs.append(c.results[0])
        stub_body.append(ReturnOp(outs))
        module.funcs.append(FuncOp(h.name, args, list(h.result_types), stub_body))


def _block_of(func: FuncOp, target: Op) -> list[Op]:
    for op in func.walk():
        for region in op.regions:
            if any(x is target for x in region):
                return region
    raise LoweringError("internal error: a hole's stand-in is not in the entry function")


def _lower(ep: torch.export.ExportedProgram, name: str) -> tuple[te.TorchTranslation, list[Hole]]:
    lowering = HybridLowering(ep, name)
    tr = lowering.lower()  # TranslationError for what cannot even be a hole (non-tensor outputs, ...)
    _place_calls(tr.module, lowering.holes)
    engine = DiagnosticEngine()
    if not verify(tr.module, engine):  # pragma: no cover - a bug in the hole placement
        raise LoweringError("internal error: the skeleton does not verify:\n" + engine.format_all())
    return tr, lowering.holes


def lower_with_holes(problem: te.TorchProblem, dynamic: str = "batch") -> Skeleton:
    """Exports `problem` and lowers it with holes. As the deterministic frontend does, ops without a
    lowering first get a chance to decompose into ops with one (logaddexp → exp, log); only what is left
    goes to the model. Raises LoweringError when export itself fails."""
    try:
        ep = te.export_program(problem, dynamic)
    except Exception as err:
        try:
            ep = te.export_program(problem, dynamic, device="cpu")
        except Exception:
            first = str(err).splitlines()[0] if str(err) else ""
            raise LoweringError(f"torch.export failed: {type(err).__name__}: {first}") from None
    probe = te.GraphLowering(ep, problem.name)
    if probe.unsupported_nodes():
        try:
            with te.quiet_framework():
                ep = ep.run_decompositions(te.preserved_table())
        except Exception:
            pass  # decomposing failed: the model gets the original ops
    tr, holes = _lower(ep, problem.name)
    return Skeleton(tr, holes)


def splice(skel: Skeleton, sir: str, file: str = RESPONSE_FILE) -> ModuleOp:
    """The skeleton with the model's functions (`sir`: bare `solar.func`s) in place of the stubs.
    Raises CandidateError('parse' | 'verify' | 'interface') with a diagnostic for the model."""
    params = {p.name: p.default for p in skel.module.params}
    if re.search(r"^\s*solar\.module\b", sir, re.M):
        raise CandidateError("interface", "error: answer with the solar.func definitions only, without a "
                             "solar.module around them (the module is given)")
    fragment = parse_candidate(sir, file, params)
    given = {f.name: f for f in fragment.funcs}
    problems: list[str] = []
    for h in skel.holes:
        f = given.get(h.name)
        if f is None:
            problems.append(f"error: the answer does not define @{h.name} (expected: {h.signature})")
            continue
        problems += [f"{f.loc}: error: {p}" for p in signature_problems(
            f"@{h.name}", [a.type for a in f.args], f.result_types, h.arg_types, h.result_types)]
    holes = {h.name for h in skel.holes}
    taken = {f.name for f in skel.module.funcs} - holes
    for name, f in given.items():
        if name in taken:
            problems.append(f"{f.loc}: error: @{name} is a function of the module already; name helpers "
                            "differently")
    if problems:
        raise CandidateError("interface", "\n".join(problems))
    module = copy.deepcopy(skel.module)
    written = [given[h.name] for h in skel.holes]
    helpers = [f for n, f in given.items() if n not in holes]
    ops = {h.name: h.op for h in skel.holes}
    for f in written:
        f.attrs = {"origin": "llm", "op": ops[f.name], **{k: v for k, v in f.attrs.items()
                                                        if k not in ("origin", "op")}}
    module.funcs = [f for f in module.funcs if f.name not in holes] + written + helpers
    engine = DiagnosticEngine()
    engine.sources.add(file, sir)
    if not verify(module, engine):
        raise CandidateError("verify", "".join(engine.format(d) for d in engine.diagnostics
                                               if d.severity == "error"))
    return module


def entry_signature(skel: Skeleton) -> tuple[str, list[str], list[TensorType], list[TensorType]]:
    """The entry function's name, argument names and types, and result types (whole-program mode)."""
    f = skel.module.funcs[0]
    return f.name, [a.name for a in f.args], [a.type for a in f.args if a.type is not None], list(f.result_types)
