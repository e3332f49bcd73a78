"""A PyTorch program to translate: how to build it (TorchProblem, KernelBench-style files), exporting it with
the dims asked symbolic, and what a translation returns (TorchTranslation, ArgSource)."""

from __future__ import annotations

import contextlib
import inspect
import io
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
from torch.overrides import TorchFunctionMode

from solar.ir.ops import ModuleOp

from .export_dims import ExportDims, export_dynamic
from .lowering.core import LoweringError
from .program_files import import_file
from .torch_recurrent import recurrent_ops_whole
from .torch_symbols import SizeNames, source_size_names

# ---- the result -----------------------------------------------------------------------------------


@dataclass
class ArgSource:
    """Where the value of one function argument comes from: a user input (by position), or a parameter,
    buffer or lifted constant of the model (by its qualified name)."""

    kind: str  # 'input', 'parameter', 'buffer', 'constant'
    key: int | str


@dataclass
class TorchTranslation:
    module: ModuleOp
    args: list[ArgSource]
    params: dict[str, int]  # size parameters and their full-size values
    param_dims: dict[str, list[tuple[int, int]]]  # parameter → (user input index, dim) where it sizes an input
    decomposed: bool = False
    timings: dict[str, float] = field(default_factory=dict)
    # The least value export allows each size parameter (a conv's input must cover its kernel, say).
    param_min: dict[str, int] = field(default_factory=dict)
    # Input dims asked symbolic that stayed fixed, each with why (export_dims.explain_fixed).
    fixed_dims: list[str] = field(default_factory=list)
    input_names: list[str] = field(default_factory=list)  # the forward's parameter names
    # Lifted constants (`ep.constants`) with real values that stay function arguments (too large to print
    # as module constants): validation supplies these values, never looking them up on the model.
    constants: dict[str, torch.Tensor] = field(default_factory=dict)
    # Python numbers among the user's inputs (by input position): constants of the IR, with these values.
    scalars: dict[int, int | float | bool] = field(default_factory=dict)
    # Buffers and parameters that `forward` updates in place: their new values are the last outputs.
    state: list[str] = field(default_factory=list)
    decomposed_ops: list[str] = field(default_factory=list)  # ops without a lowering, decomposed instead


# A lifted constant with real values of at most this many elements becomes a `solar.constant` in the IR;
# a larger one stays an argument whose value validation takes from the exported program.
MODULE_CONSTANT_LIMIT = 4096


def made_in_forward(target: str) -> bool:
    """True for a constant that export lifted from a tensor made in `forward`: its lift pass names them
    `lifted_tensor_N`, after the path of the submodule whose `forward` made it (`encoder.lifted_tensor_0`);
    tensor attributes of the model keep their attribute path."""
    return re.fullmatch(r"(?:[\w.]+\.)?lifted_tensor_\d+", target) is not None


def has_values(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.device.type != "meta"


# ---- building and exporting -----------------------------------------------------------------------


@dataclass
class TorchProblem:
    """A KernelBench-style problem: how to build the model and its inputs."""

    make_model: Callable[[], torch.nn.Module]
    make_inputs: Callable[[], Sequence[Any]]
    name: str
    source: str | None = None
    # How `make_model` builds the model (KernelBench: `Model(*get_init_inputs())`), when known: validation
    # may build a smaller twin from scaled constructor arguments (frontends/scaled_reference.py).
    model_class: Callable[..., torch.nn.Module] | None = None
    init_args: Callable[[], Sequence[Any]] | None = None
    # Size parameter names from the source: (input index, dim) → name, or a size → its global's name
    # (torch_symbols.source_size_names); the dims of one name are one parameter.
    size_names: SizeNames = field(default_factory=dict)


def import_problem_file(path: str) -> Any:
    """The module of a KernelBench-style file: it must define `Model` and `get_inputs()`."""
    mod = import_file(path)
    for attr in ("Model", "get_inputs"):
        if not hasattr(mod, attr):
            raise LoweringError(f"{path} does not define {attr} (a KernelBench-style file defines Model, "
                                "get_inputs() and get_init_inputs(); use --entry for other code)")
    return mod


def load_problem(path: str) -> TorchProblem:
    """Imports a file defining `Model`, `get_inputs()` and `get_init_inputs()`."""
    mod = import_problem_file(path)
    init = getattr(mod, "get_init_inputs", lambda: [])
    return TorchProblem(lambda: mod.Model(*init()), lambda: list(mod.get_inputs()),
                        os.path.splitext(os.path.basename(path))[0], path, mod.Model, init,
                        source_size_names(vars(mod)))


def export_program(problem: TorchProblem, dynamic: str = "batch", device: str = "meta"
                   ) -> torch.export.ExportedProgram:
    """Builds the model and inputs on `device` and exports them with the dims `dynamic` asks symbolic."""
    return export_with_dims(problem, dynamic, device)[0]


def export_with_dims(problem: TorchProblem, dynamic: str = "batch", device: str = "meta",
                     dims: set[tuple[int, int]] | None = None
                     ) -> tuple[torch.export.ExportedProgram, ExportDims, list[str]]:
    """`export_program`, with what was asked of export and the forward's parameter names (for the header:
    export_dims.explain_fixed). Falls back dim by dim, then to the batch alone, then to static shapes."""
    with torch.device(device):
        model = problem.make_model()
        inputs = tuple(problem.make_inputs())
    # The module's own mode, as it runs when called (KernelBench runs problems as constructed: a module is
    # in training mode unless it says otherwise): batch norm with batch statistics, dropout drawing masks.
    try:
        params = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):
        params = []
    # `forward(self, *args)` takes one spec for all of its arguments, as a tuple.
    varargs = bool(params) and params[0].kind is inspect.Parameter.VAR_POSITIONAL
    names = [] if varargs else [p.name for p in params]

    def export(spec: Any) -> torch.export.ExportedProgram:
        return torch.export.export(model, inputs, dynamic_shapes=(spec,) if varargs and spec else spec)

    # Recurrent ops get their shapes without torch's per-step decomposition (torch_recurrent.py).
    with quiet_framework(), LiteralsKeepValues(), recurrent_ops_whole():
        ep, info = export_dynamic(export, inputs, dynamic, names, dims)
    return ep, info, names


class LiteralsKeepValues(TorchFunctionMode):
    """On the meta device, `torch.tensor(0.5, device=x.device)` in `forward` would become a constant with no
    values (export lifts it as `lifted_tensor_N`, validation then has nothing to read). Made on the CPU and
    moved, it keeps its values: export lifts the CPU tensor and records the move as a `to` node."""

    def __torch_function__(self, func: Any, types: Any, args: Sequence[Any] = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        device = kwargs.get("device")
        if func in (torch.tensor, torch.as_tensor) and device is not None and torch.device(device).type == "meta":
            return func(*args, **{**kwargs, "device": "cpu"}).to(device)
        return func(*args, **kwargs)


@contextlib.contextmanager
def quiet_framework() -> Iterator[None]:
    """No framework warnings or log records (torch.export logs graph dumps on a failed guard): the failure
    itself is reported once, as a SOLAR diagnostic."""
    import logging
    import warnings

    loggers = [logging.getLogger(n) for n in list(logging.root.manager.loggerDict) if n.split(".")[0] == "torch"]
    loggers.append(logging.getLogger("torch"))
    levels = [lg.level for lg in loggers]
    # torch.export also prints the partial graph of a failed export straight to stderr.
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        for lg in loggers:
            lg.setLevel(logging.CRITICAL + 1)
        try:
            yield
        finally:
            for lg, level in zip(loggers, levels, strict=True):
                lg.setLevel(level)
