"""Stops a dynamic export the moment one of its sizes divides by the block count of a padded length.

Such a size is beyond SIR, whose sizes are quasi-affine (`floordiv` and `mod` by positive constants only:
solar_ir/expr.py `affine_violation`), so the dimension behind it ends up static whatever export does. And
export can take very long to get there: BigBird's block-sparse attention pads the sequence to its block size
(`s + (64 - s % 64) % 64`) and then views it per block with `-1` sizes, so every shape divides by a quotient
of the padded length; torch's guard simplification runs sympy's `simplify` over these nested quotients,
and at sequence 4,095 the export had not finished after 40 minutes. Refused at the first such size, the
export fails within seconds, naming the input dimensions whose symbols the size holds, and
export_dims.export_dynamic sets the last of them static and exports again.

Only a division whose divisor holds such a block count (a quotient of a sum holding a remainder of sizes)
is refused, and only while torch cannot simplify it: not `x // s`, nor `h // (h // 4)`, which export meets
in the guards of ordinary reshapes (patches of an image) and gets past in no time; such programs translate
as before.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


class QuotientDivisor(Exception):
    """Export made a size that divides by the block count of a padded length (not quasi-affine)."""

    def __init__(self, expr: Any, sources: list[str]) -> None:
        text = str(expr)
        self.sources = sources
        named = ", ".join(sources) or "no input named"
        super().__init__(f"a size divides by the block count of a padded length ({named}): "
                         f"{text if len(text) <= 160 else text[:159] + '…'}")


def _parts(expr: Any, kinds: tuple[type, ...]) -> list[Any]:
    """The subexpressions of `expr` of `kinds` that hold sizes (symbols)."""
    import sympy

    return [e for e in sympy.preorder_traversal(expr) if isinstance(e, kinds) and e.free_symbols]


def _padded_block_counts(expr: Any) -> list[Any]:
    """The quotients within `expr` whose dividend holds a remainder of sizes: the block count of a length
    padded to a multiple, `(s + (64 - s % 64) % 64) // 64`."""
    from torch.utils._sympy.functions import FloorDiv, Mod, ModularIndexing, PythonMod

    return [q for q in _parts(expr, (FloorDiv,)) if _parts(q.args[0], (Mod, PythonMod, ModularIndexing))]


def _sources(terms: list[Any]) -> list[str]:
    """The input dimensions (export's source names, `L['x'].size()[1]`) behind the symbols of `terms`."""
    from torch._guards import detect_fake_mode

    env = getattr(detect_fake_mode(), "shape_env", None)
    known = getattr(env, "var_to_sources", {}) if env is not None else {}
    symbols = set().union(*(term.free_symbols for term in terms))
    return sorted({source.name for symbol in symbols for source in known.get(symbol, [])})


@contextlib.contextmanager
def refuse_quotient_divisors() -> Iterator[None]:
    """Within: torch's FloorDiv, Mod and PythonMod raise QuotientDivisor for an unsimplified division by a
    divisor that holds the block count of a padded length, and keep raising once one did (torch swallows
    some errors while it simplifies guards; the export must stop all the same)."""
    from sympy.core.cache import clear_cache
    from torch.utils._sympy import functions

    classes = (functions.FloorDiv, functions.Mod, functions.PythonMod)
    originals = {cls: cls.__dict__["eval"] for cls in classes}
    refused: list[QuotientDivisor] = []

    def guarded(original: Any) -> Any:
        def evaluate(cls: Any, base: Any, divisor: Any) -> Any:
            if refused:
                raise refused[0]
            result = original.__func__(cls, base, divisor)
            symbolic = result is None and getattr(divisor, "free_symbols", None)
            quotients = _padded_block_counts(divisor) if symbolic else []
            if quotients:
                # The dims to set static: those inside the divisor's quotients (a batch that only scales
                # the divisor is no cause).
                refused.append(QuotientDivisor(cls(base, divisor, evaluate=False), _sources(quotients)))
                raise refused[0]
            return result

        return classmethod(evaluate)

    # sympy caches what these classes built: an expression made before, unchecked, would not be checked now.
    clear_cache()
    for cls, original in originals.items():
        cls.eval = guarded(original)
    try:
        yield
    finally:
        for cls, original in originals.items():
            cls.eval = original
        clear_cache()
