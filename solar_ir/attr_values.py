"""The values an op's attributes hold besides numbers, strings, types, lists and dicts: bare words and
symbol references. The printer spells them and the ops hold them, so they sit below both."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Word:
    """A bare word attribute value, such as `add` in `{reduce = add}`."""

    name: str

    def __post_init__(self) -> None:
        # These spell literals, so as words they would read back as a float or a bool.
        if self.name in ("inf", "nan", "true", "false") or not self.name.isidentifier():
            raise ValueError(f"'{self.name}' cannot be a bare-word attribute value; use a string")


@dataclass(frozen=True, slots=True)
class SymbolRef:
    name: str  # without '@'


AttrValue = Any  # int | float | bool | str | Word | SymbolRef | TensorType | list | dict
