"""A language model given as a KernelBench-style file, for `solar-llm FILE.py` (docs/llm.md, "KernelBench-style
files"). The file defines

    class Model(nn.Module): ...      # the model; forward(*get_inputs()) is one prefill step
    batch_size = 8                   # the batch: the sequences of one step
    prompt = 512                     # prefill: the tokens per sequence that get_inputs() sizes
    context = 1024                   # decode: the tokens already in the cache that get_decode_inputs() sizes
    num_layers, hidden_size, num_heads = 32, 4096, 32   # what the report and --tensor-parallel read
    def get_init_inputs(): ...       # Model's constructor arguments
    def get_inputs(): ...            # the prefill step's inputs
    def get_decode_inputs(): ...     # the decode step's: one new token per sequence and the cache

Which input dimension is the batch, the prompt or the context is found by calling the input functions
with each global changed by one: the dimensions that follow a global are that size parameter. The decode
step's cache is every input with a dimension that follows `context`; a `cat` onto it is an in-place append
and an `index_copy_` into it an in-place store, as for the Hugging Face steps.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import torch
from torch.export import Dim

from .diagnostics import SourceError, TranslationError, user_code_error
from .llm_models import (
    DTYPES,
    LlmConfig,
    LlmError,
    LlmShape,
    PhaseExport,
    load_config,
    mark_in_place,
)
from .lowering.core import LoweringError
from .program_files import import_file
from .torch_export import lower_exported
from .torch_problem import quiet_framework

# The size globals, the input function each phase calls, and the parameter names they become.
SIZE_GLOBALS = {"batch": "batch_size", "prompt": "prompt", "context": "context"}
INPUTS = {"prefill": "get_inputs", "decode": "get_decode_inputs"}
PARAMS = {"batch": "BATCH", "prompt": "PROMPT", "context": "CONTEXT"}
SHAPE_GLOBALS = ("num_layers", "hidden_size", "num_heads")


def load_llm(path: str, dtype: str | None = None, cache: str = "dynamic") -> LlmConfig:
    """A `config.json` (Hugging Face) or a KernelBench-style `.py` file."""
    if not path.endswith(".py"):
        return load_config(path, dtype, cache)
    if cache != "dynamic":
        raise LlmError(f"--cache {cache}: a KernelBench-style file's cache is the one its code keeps")
    return load_kernelbench(path, dtype)


@dataclass
class KernelBenchLlm:
    """The file's model and input functions: builds the model on the meta device and exports its steps."""

    path: str
    module: ModuleType
    dtype: torch.dtype | None  # --dtype: the model and its float inputs are converted to it

    def build(self, dtype: torch.dtype, device: str = "meta") -> torch.nn.Module:
        """The file's model on `device` (meta: no weights; the CPU for validation, frontends/llm_validate.py)."""
        with torch.device(device):
            model = self.module.Model(*self.module.get_init_inputs()) if hasattr(self.module, "get_init_inputs") \
                else self.module.Model()
        return model.to(dtype).eval() if self.dtype is not None else model.eval()

    def inputs(self, phase: str, sizes: dict[str, int], device: str = "meta") -> list[Any]:
        """The phase's inputs with the size globals set to `sizes` (the file's own values restored after)."""
        saved = {SIZE_GLOBALS[k]: getattr(self.module, SIZE_GLOBALS[k]) for k in sizes}
        try:
            for key, value in sizes.items():
                setattr(self.module, SIZE_GLOBALS[key], value)
            with torch.device(device):
                made = list(getattr(self.module, INPUTS[phase])())
        except Exception as err:
            raise _user_error(err, f"while calling {INPUTS[phase]}()") from None
        finally:
            for name, value in saved.items():
                setattr(self.module, name, value)
        if self.dtype is not None:
            made = [x.to(self.dtype) if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in made]
        return made

    def export(self, phase: str, batch: int, length: int, all_logits: bool = False) -> PhaseExport:
        length_key = "prompt" if phase == "prefill" else "context"
        sizes = {"batch": batch, length_key: length}
        inputs = self.inputs(phase, sizes)
        dims = self._follow(phase, sizes, inputs)
        names = {(i, d): PARAMS[key] for key, where in dims.items() for i, d in where}
        specs: list[dict[int, Any] | None] = [None] * len(inputs)
        for i, d in names:
            specs[i] = {**(specs[i] or {}), d: Dim.AUTO}
        model = self.build(self.dtype or torch.float32)
        try:
            with quiet_framework():
                ep = torch.export.export(model, tuple(inputs), dynamic_shapes=tuple(specs))
        except Exception as err:
            raise _user_error(err, f"while exporting the {phase} step") from None
        try:
            translation = lower_exported(ep, f"{_stem(self.path)}_{phase}", names)
        except (TranslationError, LoweringError) as err:
            raise LlmError(str(err).rstrip()) from None
        out = {key: PARAMS[key] for key in sizes if PARAMS[key] in translation.param_dims}
        for key in sizes:
            if key not in out:
                raise LlmError(f"{self.path}: the {phase} step's {SIZE_GLOBALS[key]} did not stay a size "
                               "parameter under export (the model specializes on it)")
        cache_inputs = {i for i, _ in dims.get("context", [])}
        func = translation.module.entry
        cache_args = {v for v, src in zip(func.args, translation.args, strict=True)
                      if src.kind == "input" and src.key in cache_inputs} if func is not None else set()
        return PhaseExport(phase, translation.module, self.module.num_layers, out,
                           mark_in_place(translation.module, cache_args))

    def _follow(self, phase: str, sizes: dict[str, int], inputs: Sequence[Any]) -> dict[str, list[tuple[int, int]]]:
        """(input, dim) of every tensor dimension that follows each size global, and equals it."""
        out: dict[str, list[tuple[int, int]]] = {}
        for key, value in sizes.items():
            moved = self.inputs(phase, {**sizes, key: value + 1})
            for i, (a, b) in enumerate(zip(inputs, moved, strict=True)):
                if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
                    continue
                for d, (x, y) in enumerate(zip(a.shape, b.shape, strict=True)):
                    if x == y:
                        continue
                    if (x, y) != (value, value + 1):
                        raise LlmError(f"{self._where(INPUTS[phase])}: error: input {i} dimension {d} of "
                                       f"{INPUTS[phase]}() is {x} where {SIZE_GLOBALS[key]} = {value}: a size "
                                       f"dimension must be the global itself")
                    out.setdefault(key, []).append((i, d))
        if "batch" not in out:
            raise LlmError(f"{self._where(INPUTS[phase])}: error: no input of {INPUTS[phase]}() has a dimension of "
                           "batch_size")
        if phase == "decode" and "context" not in out:
            raise LlmError(f"{self._where(INPUTS[phase])}: error: no input of get_decode_inputs() has a dimension of "
                           "context (the cache of the decode step)")
        return out

    def kv_bytes_per_token(self) -> int:
        """Bytes of the decode inputs that follow `context`, per token of one sequence."""
        batch, context = 2, 3
        inputs = self.inputs("decode", {"batch": batch, "context": context})
        dims = self._follow("decode", {"batch": batch, "context": context}, inputs)
        total = 0
        for i in sorted({i for i, _ in dims["context"]}):
            x = inputs[i]
            total += x.numel() * x.element_size()
        return total // (batch * context)

    def _where(self, name: str) -> str:
        return f"{self.path}:{_line_of(self.path, name)}:1"


def load_kernelbench(path: str, dtype: str | None = None) -> LlmConfig:
    """Imports the file and checks the convention (docs/llm.md); errors are one located line."""
    if dtype is not None and dtype not in DTYPES:
        raise LlmError(f"--dtype {dtype}: expected one of {', '.join(DTYPES)}")
    if not os.path.isfile(path):
        raise LlmError(f"{path}: cannot read: no such file")
    try:
        module = import_file(path)
    except SourceError as err:
        raise LlmError(err.format().rstrip()) from None
    for name in ("Model", "get_inputs"):
        if not hasattr(module, name):
            raise LlmError(f"{path}:1:1: error: a KernelBench-style file defines {name} (docs/llm.md)")
    for name in ("batch_size", *SHAPE_GLOBALS):
        _positive_global(path, module, name)
    source = KernelBenchLlm(path, module, DTYPES[dtype] if dtype else None)
    model = source.build(DTYPES[dtype] if dtype else torch.float32)
    floats = [p.dtype for p in model.parameters() if p.is_floating_point()]
    kind = DTYPES[dtype] if dtype else (floats[0] if floats else torch.float32)
    decodes = hasattr(module, "get_decode_inputs")
    if decodes:
        _positive_global(path, module, "context")
    if hasattr(module, "prompt"):
        _positive_global(path, module, "prompt")
    heads = module.num_heads
    kv_heads = _optional(path, module, "num_kv_heads", heads)
    shape = LlmShape(_stem(path), module.num_layers, module.hidden_size, heads, kv_heads,
                     _optional(path, module, "head_dim", module.hidden_size // heads),
                     _optional(path, module, "vocab_size", 0), kind,
                     kv_token_bytes=source.kv_bytes_per_token() if decodes else 0)
    return LlmConfig(path, {}, source, shape, source=source)


def check_phases(cfg: LlmConfig, phases: Sequence[str]) -> None:
    """A file without `get_decode_inputs` (or `prompt`) has no decode (prefill) step."""
    source = cfg.source
    if not isinstance(source, KernelBenchLlm):
        return
    if "decode" in phases and not hasattr(source.module, "get_decode_inputs"):
        raise LlmError(f"{cfg.path}:1:1: error: the decode step needs get_decode_inputs() (docs/llm.md); "
                       "use --phase prefill")
    if "prefill" in phases and not hasattr(source.module, "prompt"):
        raise LlmError(f"{cfg.path}:1:1: error: the prefill step needs a global `prompt` (the tokens "
                       "get_inputs() sizes); use --phase decode")


def _positive_global(path: str, module: ModuleType, name: str) -> int:
    value = getattr(module, name, None)
    if value is None:
        raise LlmError(f"{path}:1:1: error: missing global '{name}' (docs/llm.md, KernelBench-style files)")
    if type(value) is not int or value <= 0:
        raise LlmError(f"{path}:{_line_of(path, name)}:1: error: global '{name}' must be a positive integer, "
                       f"not {value!r}")
    return value


def _optional(path: str, module: ModuleType, name: str, default: int) -> int:
    return _positive_global(path, module, name) if hasattr(module, name) else default


def _line_of(path: str, name: str) -> int:
    """The line that assigns or defines `name` at module level (1 when none does)."""
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return 1
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name == name:
            return node.lineno
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return node.lineno
    return 1


def _stem(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0].replace("-", "_")


def _user_error(err: BaseException, doing: str) -> LlmError:
    return LlmError(user_code_error(err, doing).format().rstrip())


__all__ = ["KernelBenchLlm", "check_phases", "load_kernelbench", "load_llm"]
