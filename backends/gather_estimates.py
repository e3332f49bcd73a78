"""What a gather whose ids are data would read under uniformly random ids: an estimate beside the bound.

The bound reads one row of such a gather's table (every id may be the same: padding tokens, an embedding
bag), which is the least any input allows but far from what a typical input reads. Where the two differ,
the report shows the expected number of distinct rows that uniformly random ids name, labelled as an
estimate; it never enters a bound (docs/sol.md, "Why these are lower bounds")."""

from __future__ import annotations

import math
from dataclasses import dataclass

from solar.ir.ops import GatherOp

from .composition_hooks import known_distinct_ids
from .cost import CostModel
from .report import quantity


@dataclass(frozen=True)
class GatherEstimate:
    """One gather with data ids: its table's rows, how many ids it reads, and one row's bytes."""

    op: GatherOp
    rows: int
    ids: int
    row_bytes: int

    @property
    def uniform_rows(self) -> float:
        """The expected distinct rows that `ids` ids drawn uniformly from `rows` rows name:
        rows · (1 − (1 − 1/rows)^ids)."""
        if self.rows <= 1:
            return float(self.rows)
        return -self.rows * math.expm1(self.ids * math.log1p(-1.0 / self.rows))

    @property
    def uniform_bytes(self) -> float:
        return self.uniform_rows * self.row_bytes

    def sentence(self) -> str:
        name = f"%{self.op.results[0].name}"
        return (f"gather {name} is priced at 1 row of its {self.rows:,}-row table, since its ids are data and may "
                f"all repeat; {self.ids:,} ids drawn uniformly would name about {self.uniform_rows:,.0f} rows "
                f"({quantity(self.uniform_bytes, 'B')}): an estimate, not part of the bound")


def data_id_gathers(model: CostModel) -> list[GatherEstimate]:
    """The gathers of the priced function whose ids are data, where uniform ids would read more than one row
    (at the model's sizes; none where a size is a symbol)."""
    found = []
    for op in model.func.walk():
        if not isinstance(op, GatherOp) or known_distinct_ids(model, op.args[1]) is not None:
            continue
        table, ids = op.args[0].type, op.args[1].type
        if table is None or ids is None or not all(isinstance(v, int) for v in model.values.values()):
            continue
        axis = op.attrs["axis"]
        rows = table.with_shape((table.shape[axis],)).num_elements(model.values)
        row = table.with_shape(tuple(1 if k == axis else d for k, d in enumerate(table.shape)))
        estimate = GatherEstimate(op, int(rows), int(ids.num_elements(model.values)), int(row.nbytes(model.values)))
        if estimate.rows > 1 and estimate.ids > 1:
            found.append(estimate)
    return found
