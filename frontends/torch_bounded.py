"""Results whose size depends on the data (`nonzero`, `masked_select`, `x[mask]`): export gives them an
unbacked size (`u0`); SIR holds them padded to a static bound with the true count beside them
(frontends/lowering/selection.py, `Emitter.bounded`). They may be returned, the count becoming an extra last
output that validation reads (the module's `bounded_outputs`); an op that computes on one, or on its size,
is refused: its work would be priced at the bound, above what the program does.
"""

from __future__ import annotations

from typing import Any

import torch.fx
from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

from solar.ir.ops import ModuleOp, Value

from .diagnostics import library_frame
from .lowering.core import Emitter
from .validate import BOUNDED_OUTPUTS

DATA_SIZE = object()  # env's value for a size (or a test on one) that only the data fixes (nonzero's count)


def data_dependent(val: Any) -> bool:
    """A size, or a value computed from one, that export left unbacked (known only at run time)."""
    try:
        return bool(free_unbacked_symbols(val))
    except Exception:  # a value sympy cannot walk has no such size
        return False


def refuse_reading_bounded(node: torch.fx.Node, env: dict[torch.fx.Node, Any], em: Emitter, name: str) -> str | None:
    """Why `node` cannot be lowered when it reads a result of data-dependent size (or that size), else None."""
    reads = [a for a in node.all_input_nodes if env.get(a) is DATA_SIZE or env.get(a) in em.bounded]
    if not reads:
        return None
    # Inside a library's model (Reformer's LSH buckets, say), its own line says which computation it is.
    frame = library_frame(node.meta.get("stack_trace"))
    at = f" (at {frame})" if frame else ""
    return (f"{name}{at} reads {reads[0].name}, whose size depends on the data: SIR holds it padded to a "
            "static bound, and work on the padding would be priced above what the program does; return it as "
            "an output instead")


def bounded_counts(outputs: list[Value], em: Emitter, module: ModuleOp) -> list[Value]:
    """The counts of the returned results whose size depends on the data, as extra last outputs; the module's
    `bounded_outputs` pairs each such output with its count's (validation compares that many rows)."""
    pairs: list[list[int]] = []
    counts: list[Value] = []
    for k, v in enumerate(outputs):
        if v in em.bounded:
            pairs.append([k, len(outputs) + len(counts)])
            counts.append(em.bounded[v])
    if pairs:
        module.attrs[BOUNDED_OUTPUTS] = pairs
    return counts
