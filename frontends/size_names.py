"""Names of size parameters, from the source: module-level integers (`batch_size` → `BATCH`), else the
first leading dimension (`BATCH`), else an input's argument name and axis (`IDS_1`). Shared by the torch
and JAX frontends (torch_symbols.py, jax_dims.py); imports neither framework."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

# Source names of sizes: (input index, dim) → name, or a size's value → name (see SymbolNames).
SizeNames = dict[int | tuple[int, int], str]
_SIZE_SUFFIX = re.compile(r"_(SIZE|DIM)\Z")


def source_size_names(module_globals: Mapping[str, Any]) -> SizeNames:
    """Size parameter names from a source file's module-level integers (KernelBench: `batch_size = 16`):
    value → name (`batch_size` → `BATCH`, `seq_len` → `SEQ_LEN`), for values above 1 that one global alone
    holds (two globals of one value cannot say which a dimension is)."""
    by_value: dict[int, list[str]] = {}
    for key, value in module_globals.items():
        if key.startswith("_") or type(value) is not int or value <= 1 or not key.isidentifier():
            continue
        by_value.setdefault(value, []).append(key)
    out: SizeNames = {}
    for value, keys in by_value.items():
        if len(keys) == 1:
            name = _SIZE_SUFFIX.sub("", re.sub(r"[^A-Z0-9_]", "_", keys[0].upper())).strip("_")
            # Kernels bind tensors to short capitals (A, B, X): a global that short (`B = 16`) still makes
            # its dims one parameter, under the generated name (SHORT_NAME marks it).
            usable = len(name) > 2 and name[0].isalpha() and not re.fullmatch(r"T\d+", name)
            out[value] = name if usable else SHORT_NAME + keys[0]
    return out


SHORT_NAME = "\0"  # prefix of a source name too short to be a parameter's name (see source_size_names)


def arg_axis_name(input_name: str, axis: int) -> str:
    """The parameter name of an input's axis: `ids`, 1 → `IDS_1` ('' when the name gives none: empty,
    or positional placeholders such as `args_0` of `forward(*args)`)."""
    base = re.sub(r"[^A-Z0-9_]", "_", input_name.upper()).strip("_")
    if not base or not base[0].isalpha() or re.fullmatch(r"(ARGS?|INPUT|ARG)_?\d*", base):
        return ""
    return f"{base}_{axis}"


class SizeNamer:
    """Maps shape symbols (torch's s0, s77; the JAX frontend's size groups) to SIR size parameters. A
    dimension whose size a source name gives (`source`: (input index, dim) → name, as a caller that knows
    its inputs says, else the size's value → name, from `source_size_names`) takes that name, and every
    symbol of that name is one parameter: dimensions the source sizes with one global are one quantity,
    even where export kept them apart (the key and value cache lengths of every layer). Others are named
    after the first input they size (`input_name`, the forward's argument): `BATCH` for the first leading
    dimension, else the argument and axis (`IDS_1`: `ids` axis 1), or `DIM1`, `DIM2`, ... where no
    argument name is known. A shape symbol shared by several inputs (the sequence length of the ids and
    of the mask) is one parameter, named after the first. (Long names: kernels bind tensors to short
    capitals such as `B`, which must not collide with a parameter.)"""

    def __init__(self, source: Mapping[int | tuple[int, int], str] | None = None) -> None:
        self.names: dict[Any, str] = {}
        self.defaults: dict[str, int] = {}
        self.where: dict[str, list[tuple[int, int]]] = {}
        self.source = dict(source or {})
        self._counts = {"DIM": 0}
        self._short: dict[str, str] = {}  # a short global's marked name -> the parameter it became

    def declare(self, sym: Any, dim: int, hint: int, input_index: int, input_name: str = "") -> None:
        if sym not in self.names:
            named = self.source.get((input_index, dim)) or self.source.get(hint)
            if named is not None and named.startswith(SHORT_NAME):
                # One parameter for the global's dims, named as the first of them would be.
                if named not in self._short:
                    self._short[named] = self._generated(dim, input_index, input_name)
                named = self._short[named]
            if named is not None and self.defaults.get(named, hint) == hint:
                self.names[sym] = named
                self.defaults[named] = hint
            else:
                name = self._generated(dim, input_index, input_name)
                self.names[sym] = name
                self.defaults[name] = hint
        self.where.setdefault(self.names[sym], []).append((input_index, dim))

    def _generated(self, dim: int, input_index: int, input_name: str) -> str:
        """A dimension no source global names: `BATCH` for the first leading dim, else after its argument
        and axis (`input_name`), else `DIM1`, `DIM2`, ..."""
        if dim == 0 and self._free("BATCH"):
            return "BATCH"
        base = arg_axis_name(input_name, dim)
        if base:
            name, k = base, 1
            while not self._free(name):
                k += 1
                name = f"{base}_{k}"
            return name
        return self._next("DIM")

    def _free(self, name: str) -> bool:
        return name not in self.defaults and name not in self._short.values()

    def _next(self, prefix: str) -> str:
        while True:
            n = self._counts[prefix] = self._counts[prefix] + 1
            name = f"{prefix}{n}"
            if self._free(name):
                return name

def named_params(err: Exception, names: Iterable[str]) -> list[str]:
    """The size parameters among `names` that an error names, in the order of `names`."""
    return [n for n in names if re.search(rf"\b{re.escape(n)}\b", str(err))]
