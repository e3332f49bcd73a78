"""PyTorch → SIR: `torch.export` on the meta device → ATen graph → SIR through the lowering table.

    from solar.frontends.torch_export import translate_problem
    result = translate_problem("model.py")              # a KernelBench-style file: Model, get_inputs, ...
    print(print_module(result.module))

The stages, in order:
1. *build*: the model and its example inputs are made inside `torch.device("meta")`, so full-size programs
   allocate nothing (shared/FACTS.md: 242 of 250 real problems export this way).
2. *export*: `torch.export.export` with the batch dimension of every input marked `Dim.AUTO`, so that it
   stays symbolic and becomes a size parameter of the module (its real value as the default).
3. *lower*: every ATen node goes through `lowering.TORCH_LOWERINGS` (one kernel per framework op).
   Export's training IR keeps composite ops (linear, conv2d, layer_norm, lstm, sdpa) whole, which is what
   we want: they are one kernel each and recurrent ops must never be decomposed (aten.lstm decomposes into
   ~64,600 nodes). Only when some op has no lowering do we decompose, with every op we lower removed from
   the decomposition table, and try again.
4. *report*: ops left without a lowering are reported together, each with its source line.
"""

from __future__ import annotations

import re
import time

import torch

from .diagnostics import ProgramError, SourceError, TranslationError, user_code_error, user_frames
from .export_dims import ExportDims, explain_fixed
from .lowering import TORCH_LOWERINGS
from .lowering.core import LoweringError
from .lowering.registry import op_key
from .torch_lowering import (
    SIR_TO_TORCH,
    TORCH_DTYPES,
    GraphLowering,
    display_name,
    lower_exported,
    preserved_table,
    sir_dtype,
    torch_fp32_precision,
)
from .torch_problem import (
    MODULE_CONSTANT_LIMIT,
    ArgSource,
    TorchProblem,
    TorchTranslation,
    export_program,
    export_with_dims,
    import_file,
    load_problem,
    quiet_framework,
)
from .torch_reference import (
    ReferenceCase,
    callable_problem,
    flat_outputs,
    reference_runner,
    shrink_inputs,
    synth_inputs,
    to_numpy,
)
from .torch_symbols import named_params

# This module is the PyTorch frontend's API: building, exporting, lowering and the reference run live beside
# it (torch_problem, torch_lowering, torch_reference) and are named here too; the export-and-retry driver
# (translate_problem) lives here.
__all__ = [
    "MODULE_CONSTANT_LIMIT", "SIR_TO_TORCH", "TORCH_DTYPES", "TORCH_LOWERINGS", "ArgSource", "GraphLowering",
    "ReferenceCase", "TorchProblem", "TorchTranslation", "callable_problem", "display_name", "export_program",
    "export_with_dims", "flat_outputs", "import_file", "load_problem", "lower_exported", "op_key",
    "preserved_table", "quiet_framework", "reference_runner", "shrink_inputs", "sir_dtype", "synth_inputs",
    "to_numpy", "torch_fp32_precision", "translate_problem",
]


_DATA_DEPENDENT = ("GuardOnDataDependentSymNode", "DataDependentOutputException")


def _meta_device_refusal(err: Exception) -> bool:
    """Whether the error is the meta device refusing what needs data or a meta kernel."""
    first = str(err).splitlines()[0].lower() if str(err) else ""
    return "meta tensor" in first or "meta device" in first or "'meta'" in first or "meta kernel" in first


def export_error(err: Exception) -> Exception:
    """torch.export's failure as one error: located at the user's line where there is one. Branching on a
    tensor's value gets its own message (it is the common case and the framework's is long)."""
    first = str(err).splitlines()[0] if str(err) else ""
    frames = user_frames(err)
    if type(err).__name__ in _DATA_DEPENDENT or "data-dependent" in first.lower():
        return SourceError("data-dependent control flow: this line depends on a tensor's values, which "
                           "torch.export cannot trace (a SOL bound needs one program for all inputs); use "
                           "torch.where or torch.cond", frames[-1] if frames else None)
    if frames:
        return SourceError(f"torch.export failed: {type(err).__name__}: {first}", frames[-1])
    return LoweringError(f"torch.export failed: {type(err).__name__}: {first}")


def translate_problem(problem: TorchProblem | str, dynamic: str = "batch") -> TorchTranslation:
    """Exports and lowers a problem (or a KernelBench-style file). With `dynamic='all'`, sizes the IR cannot
    express (a product of two symbolic dims, say) send the dims they name back to static, at most
    `RELOWER_RETRIES` times, and then the translation runs with the batch dims alone."""
    if isinstance(problem, str):
        problem = load_problem(problem)
    start = time.perf_counter()
    ep, info, names = _export(problem, dynamic)
    exported = time.perf_counter()
    asked, dropped = set(info.asked), dict(info.dropped)
    for attempt in range(RELOWER_RETRIES + 2):
        try:
            result = lower_exported(ep, problem.name, problem.size_names)
            break
        except (TranslationError, LoweringError) as err:
            if info.mode == "none" or attempt > RELOWER_RETRIES:
                raise
            if info.mode != "all":
                if not named_params(err, GraphLowering(ep, problem.name, problem.size_names).declare_sizes()):
                    raise
                # The batch dims alone are still more than the IR can take (a top-k along the batch): static.
                ep, info, names = _export(problem, "none")
                info.fallback = f"with the batch dims symbolic, the translation failed ({_first_error_line(err)})"
                info.asked = asked
                continue
            where = GraphLowering(ep, problem.name, problem.size_names).declare_sizes()
            # One parameter at a time (the last declared of those the error names): a product of two
            # symbolic sizes becomes affine when either one is fixed.
            params = named_params(err, where)
            named = set(where[params[-1]]) if params else set()
            keep = asked - named - set(dropped)
            reason = f"its size enters an expression the IR cannot express ({_first_error_line(err, params[-1:])})"
            if not named or not keep or attempt == RELOWER_RETRIES:
                ep, info, names = _export(problem, "batch")  # the last resort: only the batch shrinks
                info.fallback = f"with more dims symbolic, the translation failed ({_first_error_line(err)})"
                info.asked = asked
                continue
            dropped.update(dict.fromkeys(named, reason))
            ep, info, names = _export(problem, "all", keep)
            dropped.update(info.dropped)
            info.asked, info.dropped = asked, dropped
    result.fixed_dims = explain_fixed(ep, info, names)
    result.input_names = names
    result.timings["export"] = exported - start
    result.timings["lower"] = time.perf_counter() - exported - result.timings.get("decompose", 0.0)
    return result


RELOWER_RETRIES = 2
_PARAM_NAME = re.compile(r"\b(BATCH\d*|DIM\d+|[A-Z][A-Z0-9_]*_\d+)\b")


def _first_error_line(err: Exception, params: list[str] | None = None) -> str:
    """The first error line that names one of `params` (default: any size parameter), else the first line."""
    lines = [ln.split("error: ", 1)[-1] for ln in str(err).splitlines() if "error: " in ln]
    named = [ln for ln in lines if (set(_PARAM_NAME.findall(ln)) & set(params) if params else _PARAM_NAME.search(ln))]
    text = named[0] if named else lines[0] if lines else (str(err).strip().splitlines() or [""])[0]
    text = text.split(": `", 1)[0]
    return text if len(text) <= 120 else text[:119] + "…"


def _export(problem: TorchProblem, dynamic: str, dims: set[tuple[int, int]] | None = None
            ) -> tuple[torch.export.ExportedProgram, ExportDims, list[str]]:
    """Export on the meta device, else on the CPU (some programs need real data to trace)."""
    try:
        return export_with_dims(problem, dynamic, dims=dims)
    except ProgramError as err:  # what the program asks cannot be had (hub_configs.py): the same on the CPU
        raise user_code_error(err, "while building the model") from None
    except Exception as err:
        try:
            return export_with_dims(problem, dynamic, device="cpu", dims=dims)
        except Exception as cpu_err:
            # The meta device's own refusal (`.item()` on a meta tensor, an op with no meta kernel) says
            # nothing about the program: the CPU's error is the real one. Otherwise the meta error stands (the
            # CPU may fail only for want of memory at full size).
            raise export_error(cpu_err if _meta_device_refusal(err) else err) from None
