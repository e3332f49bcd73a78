"""`solar.analyze`: a live program (a torch.nn.Module, a JAX function) or SIR in, an `Analysis` out, through
the same frontends and passes as `solar-translate` and `solar-opt --lift-einsum --fuse --sol`."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from solar.errors import BadInputError, ModelError, SIRError, SolarError, TranslationFailed, UnknownTargetError
from solar.results import Analysis, Origin

_SCALARS = (int, float, bool)


def analyze(program: Any, example_inputs: Sequence[Any] | None = None, targets: Sequence[str] | str = ("h100",),
            fuse: bool = True, tile_search: bool | str = False, dynamic: str = "batch",
            fp32_precision: str = "framework", name: str | None = None) -> Analysis:
    """The speed of light of `program` on each of `targets`.

    `program` is a `torch.nn.Module` (with `example_inputs`, a tuple of its inputs), a JAX function (with a
    tuple of its arguments), a path to a `.sir` file, or SIR text. `fuse` forms fusion groups (the fused
    mode); `tile_search` adds the cache-aware mode (True: the last-level cache of the first target, or a
    buffer such as "l2" or "40MiB"). `dynamic` is torch.export's size policy (`batch`, `all`, `none`)."""
    names = [targets] if isinstance(targets, str) else list(targets)
    _check_targets(names)
    origin, module_text, file = _translate(program, example_inputs, dynamic, name)
    analysis = _run(module_text, file, names, fuse, tile_search, fp32_precision, origin)
    if origin.frontend != "sir":
        analysis.live = (program, tuple(example_inputs or ()))
    return analysis


def _check_targets(names: list[str]) -> None:
    from solar.targets.loader import TargetError, load_target

    if not names:
        raise UnknownTargetError("sol: no target given (e.g. targets=('h100',))")
    for t in names:
        try:
            load_target(t)
        except TargetError as err:
            raise UnknownTargetError(f"sol: {err}") from None


def _is_torch_module(program: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(program, torch.nn.Module)


def _translate(program: Any, inputs: Sequence[Any] | None, dynamic: str, name: str | None
               ) -> tuple[Origin, str, str]:
    """(origin, SIR text, the file name its diagnostics name) of any kind of program."""
    from solar.ir.ops import ModuleOp  # noqa: F401  (the ops before the printer: they import each other)
    from solar.ir.printer import print_module

    if isinstance(program, os.PathLike) or (isinstance(program, str) and "solar.module" not in program):
        path = os.fspath(program)
        if not os.path.isfile(path):
            raise BadInputError(f"no such .sir file '{path}' (give a torch.nn.Module, a JAX function, a .sir path "
                                "or SIR text)")
        with open(path, encoding="utf-8") as f:
            return Origin("sir", path, {}), f.read(), path
    if isinstance(program, str):
        return Origin("sir", "<string>", {}), program, "<string>"
    args = _as_tuple(inputs)
    if _is_torch_module(program):
        tr = _translate_torch(program, args, dynamic, name)
        return Origin("torch", _source_file(type(program)), tr.params), print_module(tr.module), "<torch.export>"
    if callable(program):
        module = _translate_jax(program, args, name)
        return Origin("jax", _source_file(program), {}), print_module(module), "<jax>"
    raise BadInputError(f"cannot analyse a {type(program).__name__}: give a torch.nn.Module, a JAX function, a .sir "
                        "path or SIR text")


def _as_tuple(inputs: Sequence[Any] | None) -> tuple[Any, ...]:
    if inputs is None:
        raise BadInputError("example_inputs is missing: give a tuple of the program's inputs, e.g. (x,)")
    if not isinstance(inputs, tuple | list):
        raise BadInputError(f"example_inputs must be a tuple of the program's inputs, not a {type(inputs).__name__}"
                            " (write (x,) for one input)")
    return tuple(inputs)


def _source_file(obj: Any) -> str:
    import inspect

    try:
        return inspect.getsourcefile(obj) or ""
    except TypeError:
        return ""


def _translate_torch(model: Any, args: tuple[Any, ...], dynamic: str, name: str | None) -> Any:
    import torch

    from solar.frontends.diagnostics import SourceError, TranslationError
    from solar.frontends.lowering.core import LoweringError
    from solar.frontends.torch_export import TorchProblem, translate_problem

    for k, a in enumerate(args):
        if not isinstance(a, (torch.Tensor, *_SCALARS)):
            raise BadInputError(f"example input {k} is a {type(a).__name__}: a torch.nn.Module takes tensors and "
                                "Python numbers")
    problem = TorchProblem(lambda: model, lambda: list(args), name or type(model).__name__.lower(),
                           _source_file(type(model)) or None)
    try:
        return translate_problem(problem, dynamic)
    except (SourceError, TranslationError, LoweringError) as err:
        text = err.format() if hasattr(err, "format") else str(err)
        first = text.strip().splitlines()[0]
        # Export runs the forward (on the meta device, else the CPU): its failure is the model's, at its line.
        failed = ModelError if "torch.export failed" in first else TranslationFailed
        raise failed(first, text) from None


def _located(err: BaseException, message: str) -> str:
    """`file:line:col: error: message` at the user's innermost frame of the traceback, as the tools print."""
    from solar.frontends.diagnostics import user_frames

    frames = user_frames(err)
    return f"{frames[-1]}: error: {message}" if frames else f"error: {message}"


def _first_line(err: BaseException) -> str:
    return (str(err).strip().splitlines() or [""])[0]


def _translate_jax(fn: Callable[..., Any], args: tuple[Any, ...], name: str | None) -> Any:
    from solar.frontends.diagnostics import TranslationError
    from solar.frontends.jax_export import translate_jax
    from solar.frontends.lowering.core import LoweringError

    for k, a in enumerate(args):
        if not (hasattr(a, "shape") and hasattr(a, "dtype")) and not isinstance(a, _SCALARS):
            raise BadInputError(f"example input {k} is a {type(a).__name__}: a JAX function takes arrays and "
                                "Python numbers")
    try:
        return translate_jax(fn, args, name or getattr(fn, "__name__", "jax_fn")).module
    except (TranslationError, LoweringError) as err:
        text = err.format() if hasattr(err, "format") else str(err)
        raise TranslationFailed(text.strip().splitlines()[0], text) from None
    except Exception as err:
        raise ModelError(_located(err, f"the function fails on the example arguments: {type(err).__name__}: "
                                       f"{_first_line(err)}")) from None


def _run(text: str, file: str, targets: list[str], fuse: bool, tile_search: bool | str, fp32_precision: str,
         origin: Origin) -> Analysis:
    """Parses, verifies and runs the passes; the first error becomes a SIRError with the tools' message."""
    from solar.ir.diagnostics import DiagnosticEngine, DiagnosticError, SourceManager
    from solar.ir.parser import parse_module
    from solar.ir.pass_manager import PassContext, PassManager
    from solar.ir.verifier import verify
    from solar.passes.fuse import Fuse
    from solar.passes.inline import Inline
    from solar.passes.lift_einsum import LiftEinsum
    from solar.passes.sol import SOL
    from solar.passes.tile_search import TileSearch

    sources = SourceManager()
    sources.add(file, text)
    engine = DiagnosticEngine(sources)
    try:
        module = parse_module(text, file, engine)
    except DiagnosticError as err:
        if err.sources is None:
            err.sources = sources
        text = err.format()
        raise SIRError(text.strip().splitlines()[0], text) from None
    if engine.has_errors or not verify(module, engine):
        _raise(engine)
    passes: list[Any] = [Inline(), LiftEinsum()] + ([Fuse()] if fuse else [])
    if tile_search:
        passes.append(TileSearch(target=targets[0], **({} if tile_search is True else {"buffer": str(tile_search)})))
    passes.append(SOL(target=",".join(targets), fp32_precision=fp32_precision, annotate=False))
    reports: list[str] = []
    ctx = PassContext(engine, reports.append)
    try:
        module = PassManager(passes, verify_each=True).run(module, ctx)
    except SolarError:
        raise
    except Exception as err:
        if not engine.has_errors:
            raise SIRError(f"error: {type(err).__name__}: {err}") from None
    if engine.has_errors:
        _raise(engine)
    return Analysis.from_run(module, ctx.results["sol"], text, targets, origin, fp32_precision)


def _raise(engine: Any) -> None:
    text = engine.format_all()
    raise SIRError(text.strip().splitlines()[0] if text.strip() else "error: the SIR does not verify", text)
