"""PyTorch → SIR through a language model: hybrid (the default) or whole-program (`llm_only`).

    from solar.frontends.llm import LLMOptions, translate_torch
    out = translate_torch(problem, source_text, "model.py", LLMOptions("openai/gpt-4o-mini"))
    out.module, out.report, out.header      # validated; out.module.attrs[attr_names.LLM] records model, attempts, cost

The stages:
1. *preflight*: the model string names a provider litellm knows and its key is set (else LLMError, at once).
2. *skeleton*: the deterministic lowering with holes (`hybrid.lower_with_holes`). Hybrid mode with no hole
   is the deterministic translation, and no request is made. When export fails, or with `llm_only`, the
   model writes the whole module, with the entry signature fixed from export (or, when export fails, from
   an eager run: inputs, then parameters and buffers, at static shapes).
3. *golden*: the original runs once on seeded inputs at the validation sizes, before any request.
4. *loop*: generate → parse → verify → interface → run → compare, feeding back the diagnostic.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from typing import Any

import torch

from solar.ir import attr_names
from solar.ir.builder import ModuleBuilder
from solar.ir.ops import ModuleOp
from solar.ir.types import TensorType

from .. import torch_export as te
from ..diagnostics import TranslationError
from ..lowering.core import LoweringError, ttype
from ..torch_lowering import sanitize_symbol
from ..validate import ValidationReport, small_sizes, validate_sized
from . import prompt
from .client import LLMClient, LLMConfig, LLMError, Transcript, Usage
from .hybrid import Skeleton, entry_signature, lower_with_holes, splice
from .loop import (
    CandidateError,
    Golden,
    check_outputs,
    check_params,
    extract_sir,
    make_golden,
    parse_candidate,
    run_loop,
    signature_problems,
    signature_text,
)


@dataclass
class LLMOptions:
    model: str
    llm_only: bool = False
    max_attempts: int = 4
    temperature: float = 0.0
    timeout: float = 300.0
    base_url: str | None = None
    transcript_dir: str | None = None
    seed: int = 0
    validate_size: int = 2
    full_size_validation: bool = False
    dynamic: str = "batch"
    validate_timeout: float = 60.0  # wall-clock seconds for running one candidate IR (0: no limit)


@dataclass
class LLMTranslation:
    module: ModuleOp
    report: ValidationReport
    header: list[str]  # comment lines for the written file (without the "Translated by" line)
    mode: str  # 'hybrid' or 'whole'
    attempts: int
    usage: Usage
    ops: list[str] = field(default_factory=list)  # ops the model wrote (hybrid)
    args: list[te.ArgSource] = field(default_factory=list)


def make_client(opts: LLMOptions) -> LLMClient:
    config = LLMConfig(opts.model, opts.temperature, opts.timeout, opts.base_url)
    transcript = Transcript(opts.transcript_dir) if opts.transcript_dir else None
    return LLMClient(config, transcript=transcript)


# ---- whole-program interface without export ------------------------------------------------------------


def _eager_skeleton(problem: te.TorchProblem) -> Skeleton:
    """The interface from building and running the model (meta device first): static shapes, user inputs
    first, then parameters and buffers. For programs export cannot trace."""
    def build(device: str) -> tuple[torch.nn.Module, list[Any], list[Any]]:
        with torch.device(device):
            model = problem.make_model().eval()
            inputs = list(problem.make_inputs())
            with torch.no_grad():
                out = model(*inputs)
        return model, inputs, list(out) if isinstance(out, list | tuple) else [out]

    try:
        model, inputs, outs = build("meta")
    except Exception:
        try:
            model, inputs, outs = build("cpu")
        except Exception as err:
            raise LLMError(f"the original program failed to run: {type(err).__name__}: {err}") from None
    try:
        names = [n for n in inspect.signature(model.forward).parameters if n != "self"]
    except (TypeError, ValueError):
        names = []
    args: list[tuple[str, TensorType]] = []
    sources: list[te.ArgSource] = []
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor):
            name = names[i] if i < len(names) and names[i].isidentifier() else f"input{i}"
            args.append((name, _static_type(x)))
            sources.append(te.ArgSource("input", i))
    for prefix, kind, items in (("p_", "parameter", model.named_parameters()), ("b_", "buffer", model.named_buffers())):
        for qual, t in items:
            args.append((prefix + re.sub(r"[^A-Za-z0-9_]", "_", qual), _static_type(t)))
            sources.append(te.ArgSource(kind, qual))
    mb = ModuleBuilder(sanitize_symbol(problem.name))
    fb = mb.func("forward", args)
    results = [fb.constant(0.0 if o.dtype.is_floating_point else 0, _static_type(o)) for o in outs
               if isinstance(o, torch.Tensor)]
    if not results:
        raise LLMError("the program returns no tensor")
    fb.ret(*results)
    mb.module.attrs[attr_names.ORIGIN] = "llm"
    return Skeleton(te.TorchTranslation(mb.module, sources, {}, {}), [])


def _static_type(t: torch.Tensor) -> TensorType:
    return ttype([int(d) for d in t.shape], te.sir_dtype(t.dtype))


# ---- the translation --------------------------------------------------------------------------------


def _golden(problem: te.TorchProblem, skel: Skeleton, opts: LLMOptions) -> Golden:
    module = skel.module
    sizes = small_sizes(module, opts.validate_size, opts.full_size_validation)
    full = {p.name: p.default for p in module.params if p.default is not None}
    return make_golden(lambda sz: te.reference_runner(problem, skel.translation, opts.seed, sz), sizes, full,
                       opts.seed)


def _argument_lines(skel: Skeleton) -> list[str]:
    f = skel.module.funcs[0]
    return [f"%{v.name} = {a.kind} {a.key}" for v, a in zip(f.args, skel.translation.args, strict=True)]


def translate_torch(problem: te.TorchProblem, source: str, source_name: str, opts: LLMOptions,
                    client: LLMClient | None = None) -> LLMTranslation:
    """Translates `problem` with the model in `opts` (see the module docstring). Raises LLMError (provider,
    key or original-program problems: one line), LoopFailed (attempts exhausted) or the deterministic
    frontend's errors."""
    client = client or make_client(opts)
    client.preflight()
    notes: list[str] = []
    skel: Skeleton | None = None
    mode = "whole" if opts.llm_only else "hybrid"
    try:
        skel = lower_with_holes(problem, opts.dynamic)
    except (LoweringError, TranslationError) as err:
        first = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
        if mode == "hybrid":
            notes.append(f"the deterministic frontend could not lower the program ({first}): the model wrote "
                         "all of it")
            mode = "whole"
    if skel is None:
        skel = _eager_skeleton(problem)
    if mode == "hybrid" and not skel.holes:
        return _deterministic(problem, skel, opts, client)
    golden = _golden(problem, skel, opts)
    transcript = client.transcript
    if mode == "hybrid":
        params = skel.module.param_values()
        user = prompt.hybrid_request(source, source_name, skel.text(), [h.spec() for h in skel.holes], params)
        what = "the corrected solar.func definitions"

        def check(text: str, attempt: int) -> tuple[ModuleOp, ValidationReport]:
            module = splice(skel, extract_sir(text))
            return module, check_outputs(module, golden, opts.validate_timeout)
    else:
        name, arg_names, arg_types, result_types = entry_signature(skel)
        params = skel.module.param_values()
        iface = prompt.Interface(signature_text(name, arg_names, arg_types, result_types), _argument_lines(skel),
                                 params, golden.sizes)
        user = prompt.whole_request(source, source_name, iface)
        what = "the whole corrected module"

        def check(text: str, attempt: int) -> tuple[ModuleOp, ValidationReport]:
            module = parse_candidate(extract_sir(text))
            entry = module.entry
            if entry is None:  # pragma: no cover - the verifier rejects a module without functions
                raise CandidateError("interface", "error: the module has no function")
            problems = check_params(module, params) + signature_problems(
                f"the entry function @{entry.name}", [a.type for a in entry.args], entry.result_types, arg_types,
                result_types)
            if problems:
                raise CandidateError("interface", "".join(f"{entry.loc}: error: {p}\n" for p in problems))
            return module, check_outputs(module, golden, opts.validate_timeout)

    messages = prompt.first_messages(user)
    outcome = run_loop(client, messages, check, opts.max_attempts, what, transcript)
    module, report = outcome.result
    ops = [h.op for h in skel.holes] if mode == "hybrid" else []
    if mode == "whole":
        # Attributes from the model's module could claim anything (a validation status, say): keep none.
        module.attrs = {"origin": "llm"}
        module.name = skel.module.name
    _record(module, client, opts, mode, outcome.attempts, ops, notes)
    header = [f"Arguments: {', '.join(_argument_lines(skel))}", *_usage_lines(client, opts, mode, outcome.attempts,
                                                                                ops, notes)]
    return LLMTranslation(module, report, header, mode, outcome.attempts, client.usage, ops, skel.translation.args)


def _deterministic(problem: te.TorchProblem, skel: Skeleton, opts: LLMOptions, client: LLMClient) -> LLMTranslation:
    """Hybrid mode where the lowering table covered every op: the deterministic translation, no request."""
    module = skel.module
    sizes = small_sizes(module, opts.validate_size, opts.full_size_validation)
    report = validate_sized(module, lambda sz: te.reference_runner(problem, skel.translation, opts.seed, sz), sizes,
                            opts.seed)
    notes = ["the deterministic frontend covered every op: no request was made"]
    _record(module, client, opts, "hybrid", 0, [], notes)
    header = [f"Arguments: {', '.join(_argument_lines(skel))}", *_usage_lines(client, opts, "hybrid", 0, [], notes)]
    return LLMTranslation(module, report, header, "hybrid", 0, client.usage, [], skel.translation.args)


def _record(module: ModuleOp, client: LLMClient, opts: LLMOptions, mode: str, attempts: int, ops: list[str],
            notes: list[str]) -> None:
    u = client.usage
    attr: dict[str, Any] = {
        "model": opts.model,
        "mode": mode,
        "attempts": attempts,
        "max_attempts": opts.max_attempts,
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "cost_usd": float(f"{u.cost:.6g}") if u.cost_known else "unknown",
        "cached_responses": u.cached,
    }
    if ops:
        attr["ops"] = list(ops)
    if notes:
        attr["note"] = "; ".join(notes)
    module.attrs[attr_names.LLM] = attr


def _usage_lines(client: LLMClient, opts: LLMOptions, mode: str, attempts: int, ops: list[str],
                 notes: list[str]) -> list[str]:
    u = client.usage
    what = (f"hybrid: the model wrote {', '.join(ops)}" if ops else "hybrid: the model wrote nothing") \
        if mode == "hybrid" else "whole program: the model wrote all of it"
    if not u.cost_known:
        cost = "cost unknown (litellm has no price for this model)"
    else:
        cost = f"${u.cost:.4f}" if u.cost >= 0.01 or u.cost == 0 else f"${u.cost:.2g}"
    lines = [f"Model: {opts.model} ({what}); attempts {attempts} of {opts.max_attempts}",
             f"  tokens {u.prompt_tokens} prompt + {u.completion_tokens} completion; {cost}; "
             f"{u.cached} cached response(s)"]
    lines += [f"  {n}" for n in notes]
    return lines


def source_of(path: str | None, obj: Any = None) -> tuple[str, str]:
    """The text and display name of the program's source: a file, or the file defining `obj`."""
    if path is None and obj is not None:
        try:
            path = inspect.getsourcefile(obj)
        except TypeError:
            path = None
    if path is None:
        raise LLMError("cannot find the program's source to show the model")
    with open(path, encoding="utf-8") as fh:
        return fh.read(), path


__all__ = ["LLMOptions", "LLMTranslation", "make_client", "source_of", "translate_torch"]
