"""Reading an einsum graph file of NVIDIA's SOLAR safely, and checking its fields before anything is built.

The file is read through `solar.targets.safe_yaml`: aliases are refused (a "billion laughs" file would expand
without bound), nesting and integers are bounded, and a key given twice (two layers with one name) is an error
at its line. Then every field the importer reads is checked for its type, so a hostile or damaged file is one
error at the layer's line, never a Python exception: names are strings, shapes lists of positive 64-bit
integers with one shape per name, dtypes known ones, the `solar` extras of the right kinds.
"""

from __future__ import annotations

from typing import Any

import yaml

from solar.ir.limits import INT_MAX
from solar.targets.safe_yaml import YAMLProblem, load_yaml

MAX_GRAPH_DEPTH = 32  # a graph nests six levels (layers, layer, field, side, shape, dimension); `solar` extras one more

DTYPES = {"torch.float64": "f64", "torch.float32": "f32", "torch.bfloat16": "bf16", "torch.float16": "f16",
          "torch.float8_e4m3fn": "f8e4m3", "torch.float8_e5m2": "f8e5m2", "torch.int64": "i64",
          "torch.int32": "i32", "torch.int16": "i16", "torch.int8": "i8", "torch.uint8": "u8", "torch.bool": "i1",
          "float64": "f64", "float32": "f32",
          "fp32": "f32", "float16": "f16", "fp16": "f16", "bfloat16": "bf16", "bf16": "bf16", "int64": "i64",
          "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "i1"}

# The `solar` extras `solar-opt --emit=nvsolar-yaml` writes, and the type each must have.
_EXTRA_STRINGS = ("subscripts", "where", "symbol", "kernel", "result")
_EXTRA_STRING_LISTS = ("bindings", "body")


class GraphImportError(ValueError):
    """A graph this importer cannot translate; `line` is where the layer starts in the file."""

    def __init__(self, message: str, line: int = 0, col: int = 0) -> None:
        super().__init__(message)
        self.line = line
        self.col = col or (1 if line else 0)


def load_graph(text: str) -> tuple[dict[str, Any], dict[str, tuple[int, int]]]:
    """The document and the (line, column) of each layer's key; raises GraphImportError."""
    try:
        doc = load_yaml(text, "einsum graph files", MAX_GRAPH_DEPTH)
    except YAMLProblem as err:
        message = err.message.replace("invalid YAML", "not valid YAML", 1)
        raise GraphImportError(message, err.line or 0, err.col or 0) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("layers"), dict):
        raise GraphImportError("expected a mapping with 'model_name' and 'layers' (NVIDIA SOLAR's "
                               "einsum_graph.yaml)", 1)
    if not isinstance(doc.get("model_name", ""), str | None):
        raise GraphImportError(f"model_name must be a string, got {doc['model_name']!r}", 1)
    lines = _key_lines(text)
    extra = doc.get("solar")
    if extra is not None and not (isinstance(extra, dict) and _strings(extra.get("outputs") or [])):
        raise GraphImportError("the top-level 'solar' field must be a mapping whose 'outputs' is a list of "
                               "tensor names", *lines.get(SOLAR_KEY, (1, 1)))
    return doc, lines


SOLAR_KEY = ".solar"  # the entry for the top-level `solar` key among the layers' lines (no layer id has a dot first)


def _key_lines(text: str) -> dict[str, tuple[int, int]]:
    """The (line, column) of each layer's key, and of the top-level `solar` key as SOLAR_KEY."""
    root = yaml.compose(text)  # safe now: the scan refused aliases and bounded the nesting
    found: dict[str, tuple[int, int]] = {}
    if isinstance(root, yaml.MappingNode):
        for key, value in root.value:
            if key.value == "solar":
                found[SOLAR_KEY] = (key.start_mark.line + 1, key.start_mark.column + 1)
            if key.value == "layers" and isinstance(value, yaml.MappingNode):
                for k, _ in value.value:
                    found[str(k.value)] = (k.start_mark.line + 1, k.start_mark.column + 1)
    return found


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _side(layer: dict[str, Any], fld: str, side: str) -> Any:
    section = layer.get(fld)
    return (section.get(side) if isinstance(section, dict) else None) or []


def layer_problem(layer: Any) -> str | None:
    """What is wrong with the fields of one layer, or None; the importer reads only fields checked here."""
    if not isinstance(layer, dict) or not isinstance(layer.get("tensor_names"), dict):
        return "is not a mapping with tensor_names"
    for fld in ("tensor_names", "tensor_shapes", "tensor_dtypes"):
        if fld in layer and not isinstance(layer[fld], dict | None):
            return f"{fld} must be a mapping with 'inputs' and 'outputs', got {layer[fld]!r}"
    for side in ("inputs", "outputs"):
        names = _side(layer, "tensor_names", side)
        if not _strings(names):
            return f"tensor_names.{side} must be a list of tensor names (strings), got {names!r}"
        shapes = _side(layer, "tensor_shapes", side)
        if not isinstance(shapes, list) or len(shapes) != len(names):
            return (f"tensor_shapes.{side} must be a list of one shape per name ({len(names)}), got "
                    f"{shapes!r}")
        for name, shape in zip(names, shapes, strict=True):
            if not isinstance(shape, list) or not all(type(d) is int and 1 <= d <= INT_MAX for d in shape):
                return (f"the shape of '{name}' must be a list of positive integers below 2^63, got "
                        f"{_short(shape)}")
        dtypes = _side(layer, "tensor_dtypes", side)
        if not _strings(dtypes) or len(dtypes) > len(names):
            return f"tensor_dtypes.{side} must be a list of at most one dtype per name, got {dtypes!r}"
        unknown = [d for d in dtypes if d not in DTYPES]
        if unknown:
            return f"unknown dtype '{unknown[0]}' (known: {', '.join(sorted(set(DTYPES)))})"
    for fld in ("type", "einsum_equation", "elementwise_op", "reduction_op"):
        if not isinstance(layer.get(fld), str | None):
            return f"{fld} must be a string, got {layer[fld]!r}"
    if not isinstance(layer.get("is_einsum_supportable", True), bool):
        return f"is_einsum_supportable must be true or false, got {layer['is_einsum_supportable']!r}"
    return _extra_problem(layer.get("solar"), len(_side(layer, "tensor_names", "inputs")))


def _extra_problem(extra: Any, n_inputs: int) -> str | None:
    if extra is None:
        return None
    if not isinstance(extra, dict):
        return f"the 'solar' field must be a mapping, got {_short(extra)}"
    for key in _EXTRA_STRINGS:
        if key in extra and not isinstance(extra[key], str):
            return f"solar.{key} must be a string, got {_short(extra[key])}"
    for key in _EXTRA_STRING_LISTS:
        if key in extra and not _strings(extra[key]):
            return f"solar.{key} must be a list of strings, got {_short(extra[key])}"
    if "perm" in extra:
        perm = extra["perm"]
        if not isinstance(perm, list) or sorted(perm) != list(range(len(perm))):
            return f"solar.perm must be a permutation of 0..rank-1, got {_short(perm)}"
    if "subscripts" in extra:
        missing = [k for k in ("bindings", "result", "body") if k not in extra]
        if missing:
            return f"the 'solar' field has subscripts but no {missing[0]}"
        if len(extra["bindings"]) != n_inputs:
            return f"solar.bindings names {len(extra['bindings'])} operands; the layer has {n_inputs} inputs"
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
