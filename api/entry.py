"""`solar.analyze`: a live program (a torch.nn.Module, a JAX function) or SIR in, an `Analysis` out, through
the same frontends and passes as `solar-translate` and `solar-opt --lift-einsum --fuse --sol`."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from solar.errors import (
    BadInputError,
    BadOptionError,
    ModelError,
    SIRError,
    SolarError,
    TranslationFailed,
    UnknownTargetError,
    kind_of,
)
from solar.results import Analysis, Origin

_SCALARS = (int, float, bool)
_DYNAMIC = ("batch", "all", "none")


def analyze(program: Any, example_inputs: Sequence[Any] | None = None, targets: Sequence[str] | str = ("h100",),
            fuse: bool = True, tile_search: bool | str = False, dynamic: str = "batch",
            fp32_precision: str = "framework", name: str | None = None, quantize: Any = None,
            train: bool = False, optimizer: str = "adamw", loss: str = "sum", amp: str = "none",
            precision_floor: str | None = None) -> Analysis:
    """The speed of light of `program` on each of `targets`.

    `program` is a `torch.nn.Module` (with `example_inputs`, a tuple of its inputs), a JAX function (with a
    tuple of its arguments), a path to a KernelBench-style `.py` file (its `Model`, `get_inputs()` and
    `get_init_inputs()`), a path to a `.sir` file, or SIR text. `fuse` forms fusion groups (the fused
    mode); `tile_search` adds the cache-aware mode (True: the last-level cache of the first target, or a
    buffer such as "l2" or "40MiB"). `dynamic` is torch.export's size policy (`batch`, `all`, `none`).
    `quantize` stores weights, KV cache and activations in low precision (--quantize's options, as
    `"weights=int4,group_size=128"` or a `solar.passes.quantize.QuantizeOptions`; docs/quantization.md).
    `train=True` analyses one training step of a torch.nn.Module (forward, `loss` of its outputs, backward,
    the torch.optim `optimizer`'s update; docs/training.md): `Analysis.training` then splits it by phase.
    `precision_floor` ("bf16", "fp16", "tf32", "fp8") prices each float contraction at that precision where it
    is faster than its own, for a kernel writer who may compute at it within a tolerance (docs/sol.md).
    `amp="bf16"` (or "fp16") runs its forward and loss under torch.autocast (mixed precision)."""
    names = _target_names(targets)
    _check_options(dynamic, fp32_precision, tile_search, name)
    _check_floor(precision_floor)
    quantizer = _quantizer(quantize)
    _check_targets(names)
    if train:
        origin, module_text, file, live = _translate_step(program, example_inputs, dynamic, name, optimizer, loss,
                                                          amp)
    else:
        origin, module_text, file, live = _translate(program, example_inputs, dynamic, name)
    analysis = _run(module_text, file, names, fuse, tile_search, fp32_precision, origin, quantizer,
                    precision_floor or "")
    if train:
        from solar.training import training_report

        analysis.training = training_report(analysis)
    if callable(live):
        analysis.make_live = live
    else:
        analysis.live = live
    return analysis


def _quantizer(quantize: Any) -> Any:
    """The --quantize pass that `quantize` asks for (None: none), its options checked before anything runs."""
    from solar.ir.pass_manager import PassOptionError, parse_options
    from solar.passes.quantize import Quantize, QuantizeError, QuantizeOptions, check_options

    if quantize is None:
        return None
    try:
        if isinstance(quantize, QuantizeOptions):
            check_options(quantize)
            return Quantize(**quantize.pass_fields())
        if isinstance(quantize, str):
            quantizer = Quantize.from_options(parse_options(quantize, "quantize"))
            problems = quantizer.option_errors()
            if problems:
                raise BadOptionError(problems[0])
            check_options(quantizer.options)  # type: ignore[attr-defined]
            return quantizer
    except (QuantizeError, PassOptionError) as err:
        raise BadOptionError(f"quantize: {err}") from None
    raise BadInputError(f"quantize must be options such as 'weights=int4,group_size=128' or a QuantizeOptions, "
                        f"not {kind_of(quantize)}")


def _target_names(targets: Any) -> list[str]:
    if isinstance(targets, str | os.PathLike):
        return [os.fspath(targets)]
    if not isinstance(targets, Sequence) or not all(isinstance(t, str | os.PathLike) for t in targets):
        raise BadInputError(f"targets must be a target name or a tuple of them, e.g. ('h100', 'b200'), not "
                            f"{_shown(targets)}")
    return [os.fspath(t) for t in targets]


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def _check_targets(names: list[str]) -> None:
    from solar.targets.loader import TargetError, load_target

    if not names:
        raise UnknownTargetError("sol: no target given (e.g. targets=('h100',))")
    for t in names:
        try:
            load_target(t)
        except TargetError as err:
            raise UnknownTargetError(f"sol: {err}") from None


def _check_floor(floor: Any) -> None:
    """A precision floor, as --precision-floor says it (None: no floor)."""
    from solar.backends.precision_policy import PRECISION_FLOORS

    if floor is not None and floor not in PRECISION_FLOORS:
        raise BadOptionError(f"sol: bad precision floor {_shown(floor)}: expected one of "
                             f"{', '.join(PRECISION_FLOORS)}")


def _check_options(dynamic: Any, fp32_precision: Any, tile_search: Any, name: Any) -> None:
    """The options' values, checked before anything runs (each as solar-translate and solar-opt say it)."""
    from solar.backends.cost import FP32_POLICIES
    from solar.backends.tiling_ir import resolve_buffer

    if dynamic not in _DYNAMIC:
        raise BadOptionError(f"bad dynamic {_shown(dynamic)}: expected one of {', '.join(_DYNAMIC)}")
    if fp32_precision not in FP32_POLICIES:
        raise BadOptionError(f"sol: bad fp32-precision {_shown(fp32_precision)}: expected one of "
                             f"{', '.join(FP32_POLICIES)}")
    if not isinstance(tile_search, bool | str):
        raise BadInputError(f"tile_search must be True, False or a buffer such as 'l2' or '40MiB', not "
                            f"{kind_of(tile_search)}")
    if isinstance(tile_search, str) and tile_search.strip().lower() not in ("l2", "smem"):
        try:
            resolve_buffer(tile_search, None)  # type: ignore[arg-type]  (a size needs no target)
        except ValueError as err:
            raise BadOptionError(f"tile-search: {err}") from None
    if name is not None and not isinstance(name, str):
        raise BadInputError(f"name must be a string, not {kind_of(name)}")


def _is_torch_module(program: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(program, torch.nn.Module)


# The program and its example inputs, for bench(), or how to build them (a .py file's model, when measured).
Live = tuple[Any, tuple[Any, ...]] | Callable[[], tuple[Any, tuple[Any, ...]]] | None


def _translate(program: Any, inputs: Sequence[Any] | None, dynamic: str, name: str | None
               ) -> tuple[Origin, str, str, Live]:
    """(origin, SIR text, the file name its diagnostics name, the live program) of any kind of program."""
    from solar.ir.ops import ModuleOp  # noqa: F401  (the ops before the printer: they import each other)
    from solar.ir.printer import print_module

    if isinstance(program, os.PathLike) or (isinstance(program, str) and "solar.module" not in program):
        path = os.fspath(program)
        if not os.path.isfile(path):
            raise BadInputError(f"no such file '{path}' (give a torch.nn.Module, a JAX function, a .py or .sir path "
                                "or SIR text)")
        if path.endswith(".py"):
            return _translate_file(path, inputs, dynamic, name)
        _no_inputs(inputs)
        return Origin("sir", path, {}), _read_sir(path), path, None
    if isinstance(program, str):
        _no_inputs(inputs)
        return Origin("sir", "<string>", {}), program, "<string>", None
    if isinstance(program, type):
        kind = "torch.nn.Module class" if _is_torch_module_class(program) else "class"
        raise BadInputError(f"{program.__name__} is a {kind}, not a program: give an instance, e.g. "
                            f"solar.analyze({program.__name__}(), (x,))")
    if not callable(program):
        raise BadInputError(f"cannot analyse {kind_of(program)}: give a torch.nn.Module, a JAX function, a .py "
                            "or .sir path or SIR text")
    args = _as_tuple(inputs)
    if _is_torch_module(program):
        problem = _torch_problem(lambda: program, lambda: list(args), name or type(program).__name__.lower(),
                                 _source_file(type(program)) or None, args)
        tr = _translate_torch(problem, dynamic)
        return (Origin("torch", _source_file(type(program)), tr.params), print_module(tr.module), "<torch.export>",
                (program, args))
    module = _translate_jax(program, args, name)
    return Origin("jax", _source_file(program), {}), print_module(module), "<jax>", (program, args)


def _translate_step(program: Any, inputs: Sequence[Any] | None, dynamic: str, name: str | None, optimizer: str,
                    loss: str, amp: str = "none") -> tuple[Origin, str, str, Live]:
    """One training step of a torch.nn.Module (the loss `sum` of its outputs: targets are not taken here)."""
    from solar.ir.ops import ModuleOp  # noqa: F401  (the ops before the printer: they import each other)
    from solar.ir.printer import print_module
    from solar.training import translate_step

    if not _is_torch_module(program):
        raise BadInputError(f"train=True analyses a torch.nn.Module, not {kind_of(program)}")
    if loss != "sum":
        raise BadOptionError("solar.analyze(train=True) takes loss='sum' (a loss with targets: solar-translate "
                             "--train on a file with get_targets())")
    args = _as_tuple(inputs)
    problem = _torch_problem(lambda: program, lambda: list(args), name or type(program).__name__.lower(),
                             _source_file(type(program)) or None, args)
    tr = translate_step(problem, len(args), optimizer, loss, dynamic, amp)
    return Origin("torch", _source_file(type(program)), tr.params), print_module(tr.module), "<torch.export>", None


def _read_sir(path: str) -> str:
    """The text of a SIR file, read as solar-opt reads it: a byte that is not UTF-8 is a SIRError naming its
    offset, an unreadable file a BadInputError."""
    from solar.ir.diagnostics import DiagnosticError
    from solar.ir.source import decode_source

    try:
        with open(path, "rb") as f:
            return decode_source(f.read(), path)
    except OSError as err:
        raise BadInputError(f"cannot read '{path}': {err.strerror}") from None
    except DiagnosticError as err:
        text = err.format()
        raise SIRError(text.strip().splitlines()[0], text) from None


def _no_inputs(inputs: Sequence[Any] | None) -> None:
    if inputs is not None:
        raise BadInputError("SIR takes no example_inputs: its sizes are its size parameters' values (sweep() "
                            "evaluates others)")


def _translate_file(path: str, inputs: Sequence[Any] | None, dynamic: str, name: str | None
                    ) -> tuple[Origin, str, str, Live]:
    """A KernelBench-style file, imported as `python path` would (its folder first on sys.path; sys.path and
    sys.modules as they were afterwards), exported as solar-translate exports it; `inputs`, when given,
    instead of its get_inputs()."""
    from solar.frontends.diagnostics import SourceError
    from solar.frontends.lowering.core import LoweringError
    from solar.frontends.program_files import program_folder
    from solar.frontends.torch_export import load_problem
    from solar.ir.ops import ModuleOp  # noqa: F401  (the ops before the printer: they import each other)
    from solar.ir.printer import print_module

    with program_folder(path):
        try:
            problem = load_problem(path)
        except SourceError as err:
            raise ModelError(err.format().splitlines()[0], err.format()) from None
        except LoweringError as err:  # no Model or get_inputs
            raise BadInputError(str(err).replace("use --entry for other code", "pass other code itself")) from None
        if inputs is not None:
            args = _as_tuple(inputs)
            problem.make_inputs = lambda: list(args)
        if name is not None:
            problem.name = name
        tr = _translate_torch(problem, dynamic)

    def build() -> tuple[Any, tuple[Any, ...]]:
        """The live program for bench(), built on its first call: the model and inputs on the CPU (the
        translation built them on the meta device; a full-size model allocates only when measured)."""
        with program_folder(path):
            try:
                return problem.make_model(), tuple(problem.make_inputs())
            except (Exception, SystemExit) as err:
                raise _model_error(err, "while building the model and its inputs") from None

    return Origin("torch", path, tr.params), print_module(tr.module), "<torch.export>", build


def _model_error(err: BaseException, doing: str) -> ModelError:
    """The user's program raised (or exited) while SOLAR ran it: at the user's innermost line."""
    from solar.frontends.diagnostics import user_code_error

    text = user_code_error(err, doing).format()
    return ModelError(text.splitlines()[0], text)


def _as_tuple(inputs: Sequence[Any] | None) -> tuple[Any, ...]:
    if inputs is None:
        raise BadInputError("example_inputs is missing: give a tuple of the program's inputs, e.g. (x,)")
    if not isinstance(inputs, tuple | list):
        raise BadInputError(f"example_inputs must be a tuple of the program's inputs, not {kind_of(inputs)}"
                            " (write (x,) for one input)")
    return tuple(inputs)


def _source_file(obj: Any) -> str:
    import inspect

    try:
        return inspect.getsourcefile(obj) or ""
    except TypeError:
        return ""


def _is_torch_module_class(cls: type) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and issubclass(cls, torch.nn.Module)


def _torch_problem(make_model: Callable[[], Any], make_inputs: Callable[[], list[Any]], name: str,
                   source: str | None, args: tuple[Any, ...]) -> Any:
    import torch

    from solar.frontends.torch_export import TorchProblem

    for k, a in enumerate(args):
        if not isinstance(a, (torch.Tensor, *_SCALARS)):
            raise BadInputError(f"example input {k} is {kind_of(a)}: a torch.nn.Module takes tensors and "
                                "Python numbers")
    return TorchProblem(make_model, make_inputs, name, source)


def _translate_torch(problem: Any, dynamic: str) -> Any:
    from solar.frontends.diagnostics import SourceError, TranslationError
    from solar.frontends.lowering.core import LoweringError
    from solar.frontends.torch_export import translate_problem

    try:
        return translate_problem(problem, dynamic)
    except (SourceError, TranslationError, LoweringError) as err:
        text = err.format() if hasattr(err, "format") else str(err)
        first = text.strip().splitlines()[0]
        # Export runs the forward (on the meta device, else the CPU): its failure is the model's, at its line.
        failed = ModelError if "torch.export failed" in first or isinstance(err, SourceError) else TranslationFailed
        raise failed(first, text) from None
    except SystemExit as err:  # the forward called sys.exit: the program's doing, never the caller's exit
        raise _model_error(err, "while SOLAR ran it") from None


def _located(err: BaseException, message: str) -> str:
    """`file:line:col: error: message` at the user's innermost frame of the traceback, as the tools print."""
    from solar.frontends.diagnostics import user_frames

    frames = user_frames(err)
    return f"{frames[-1]}: error: {message}" if frames else f"error: {message}"


def _first_line(err: BaseException) -> str:
    return (str(err).strip().splitlines() or [""])[0]


def _translate_jax(fn: Callable[..., Any], args: tuple[Any, ...], name: str | None) -> Any:
    from solar.frontends.diagnostics import SourceError, TranslationError
    from solar.frontends.jax_export import translate_jax
    from solar.frontends.lowering.core import LoweringError

    torch = sys.modules.get("torch")
    for k, a in enumerate(args):
        if torch is not None and isinstance(a, torch.Tensor):
            raise BadInputError(f"example input {k} is a torch.Tensor, and a function is analysed as JAX: give JAX "
                                "arrays, or a torch.nn.Module for PyTorch code")
        if not (hasattr(a, "shape") and hasattr(a, "dtype")) and not isinstance(a, _SCALARS):
            raise BadInputError(f"example input {k} is {kind_of(a)}: a JAX function takes arrays and "
                                "Python numbers")
    try:
        return translate_jax(fn, args, name or getattr(fn, "__name__", "jax_fn")).module
    except (TranslationError, LoweringError, SourceError) as err:
        text = err.format() if hasattr(err, "format") else str(err)
        failed = ModelError if isinstance(err, SourceError) else TranslationFailed
        raise failed(text.strip().splitlines()[0], text) from None
    except SystemExit as err:
        raise _model_error(err, "while SOLAR ran it") from None
    except Exception as err:
        raise ModelError(_located(err, f"the function fails on the example arguments: {type(err).__name__}: "
                                       f"{_first_line(err)}")) from None


def _run(text: str, file: str, targets: list[str], fuse: bool, tile_search: bool | str, fp32_precision: str,
         origin: Origin, quantizer: Any = None, precision_floor: str = "") -> Analysis:
    """Parses, verifies and runs the passes; the first error becomes a SIRError with the tools' message."""
    from solar.backends.sol_results import SolResults
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
    passes: list[Any] = [Inline(), LiftEinsum()] + ([quantizer] if quantizer is not None else []) + \
        ([Fuse()] if fuse else [])
    if tile_search:
        passes.append(TileSearch(target=targets[0], **({} if tile_search is True else {"buffer": str(tile_search)})))
    passes.append(SOL(target=",".join(targets), fp32_precision=fp32_precision, precision_floor=precision_floor,
                      annotate=False))
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
    return Analysis.from_run(ctx.results[SolResults], text, origin)


def _raise(engine: Any) -> None:
    text = engine.format_all()
    raise SIRError(text.strip().splitlines()[0] if text.strip() else "error: the SIR does not verify", text)
