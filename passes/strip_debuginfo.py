"""--strip-debuginfo: drops the `loc(...)` source locations of translated ops."""

from __future__ import annotations

from dataclasses import dataclass

from solar.ir.ops import ModuleOp
from solar.ir.pass_manager import Pass, PassContext


@dataclass(frozen=True)
class StripDebuginfo(Pass):
    """Removes every explicit `loc("file":line:col)`.

    Before: `%y = solar.reshape %x : tensor<4xf32> loc("model.py":12:5)`
    After:  `%y = solar.reshape %x : tensor<4xf32>`
    """

    name = "strip-debuginfo"
    summary = "Remove source locations (loc(...)) from every op"

    def apply(self, ctx: PassContext, module: ModuleOp) -> None:
        for op in module.walk():
            op.src_loc = None
