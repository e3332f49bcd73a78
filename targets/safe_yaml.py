"""Reading YAML safely: no aliases, bounded nesting, bounded integers, duplicate keys refused, and the line of
every key. Target files and the einsum graphs of `solar-translate --from nvsolar-yaml` are read through it.

PyYAML expands aliases while it builds the document, so nine levels of `&a [*a, *a, ...]` (a "billion laughs"
file) take minutes and gigabytes, and its composer recurses once per level of nesting. Target files need
neither aliases nor depth: the events are scanned first (iteratively, in constant memory), and an alias, a
structure nested deeper than the limit or an integer of more than MAX_INT_DIGITS digits (Python refuses to
convert one of 4,300, and a figure of 400 overflows a float) is refused at its line before anything is built.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

MAX_DEPTH = 16  # a target file nests three levels (section, figure, range); NVIDIA's files one
MAX_INT_DIGITS = 64  # far beyond any figure (at most 1e30 in SI units) or size (64 bits: 19 digits)
_PLAIN_INT = re.compile(r"[-+]?[0-9][0-9_]*")


class YAMLProblem(Exception):
    """A problem at `line` (1-based; None when unknown) of a YAML text."""

    def __init__(self, message: str, line: int | None = None, col: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.col = col


class KeyLines(dict):  # type: ignore[type-arg]
    """A mapping that remembers the line of each of its keys (`lines[key]`, 1-based)."""

    lines: dict[Any, int]


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys (PyYAML silently keeps the last one) and records key lines."""


# libyaml's parser, where PyYAML was built with it: the same documents about ten times faster (reading
# the shipped targets was a third of `solar-opt --sol`'s CPU time). A text it finds fault with is read
# again by the Python parser, so every message stays the one below.
_FAST = getattr(yaml, "CSafeLoader", None) if getattr(yaml, "__with_libyaml__", False) else None
_FastStrictLoader: Any = type("_FastStrictLoader", (_FAST,), {}) if _FAST is not None else None


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> KeyLines:
    lines: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in lines:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        lines[key] = key_node.start_mark.line + 1
    out = KeyLines(yaml.SafeLoader.construct_mapping(loader, node, deep=True))
    out.lines = lines
    return out


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
if _FastStrictLoader is not None:
    _FastStrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _scan(text: str, what: str, max_depth: int, loader: Any = yaml.SafeLoader) -> None:
    depth = 0
    for event in yaml.parse(text, Loader=loader):
        mark = event.start_mark
        if isinstance(event, yaml.AliasEvent):
            raise YAMLProblem(f"YAML aliases (*{event.anchor}) are not allowed in {what}: write the value "
                              "out", mark.line + 1, mark.column + 1)
        if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
            depth += 1
            if depth > max_depth:
                raise YAMLProblem(f"nested more than {max_depth} levels deep (the limit for {what})",
                                  mark.line + 1, mark.column + 1)
        elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            depth -= 1
        elif (isinstance(event, yaml.ScalarEvent) and not event.style and len(event.value) > MAX_INT_DIGITS
              and _PLAIN_INT.fullmatch(event.value)):
            raise YAMLProblem(f"an integer of {len(event.value.lstrip('+-'))} digits is out of range (at most "
                              f"{MAX_INT_DIGITS} digits)", mark.line + 1, mark.column + 1)


def load_yaml(text: str, what: str = "target files", max_depth: int = MAX_DEPTH) -> Any:
    """The document in `text` (mappings are KeyLines); raises YAMLProblem. `what` names the kind of file in
    messages, `max_depth` bounds its nesting."""
    if _FAST is not None:
        try:
            _scan(text, what, max_depth, _FAST)
            return yaml.load(text, Loader=_FastStrictLoader)
        except (YAMLProblem, yaml.YAMLError):
            pass  # the Python parser below says what is wrong, and where
    try:
        _scan(text, what, max_depth)
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        problem = (e.problem or e.context or "").strip()
        raise YAMLProblem(f"invalid YAML: {problem}", mark.line + 1 if mark else None,
                          mark.column + 1 if mark else None) from None
    except yaml.YAMLError as e:
        raise YAMLProblem(f"invalid YAML: {str(e).splitlines()[0]}") from None


def line_of(doc: Any, dotted: str) -> int | None:
    """The line of the deepest key of `dotted` (`compute.fp32_vector.value`) found in `doc`."""
    line = None
    node = doc
    for part in dotted.split("."):
        key = part.split("[", 1)[0]
        if not isinstance(node, KeyLines) or key not in node:
            break
        line = node.lines.get(key, line)
        node = node[key]
    return line
