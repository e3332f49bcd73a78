"""--symbol-dce: removes functions that the entry function cannot reach through solar.call."""

from __future__ import annotations

from dataclasses import dataclass

from solar.ir.ops import CallOp, ModuleOp
from solar.ir.pass_manager import Pass, PassContext
from solar.ir.verifier import suggest


@dataclass(frozen=True)
class SymbolDCE(Pass):
    """Keeps the entry function (`entry`, else @main, else the first) and what it calls.

    Before: `solar.func @main(...) { ... }` and an uncalled `solar.func @helper(...)`
    After:  only `@main`
    """

    name = "symbol-dce"
    summary = "Remove functions unreachable from the entry function"
    primary_option = "entry"
    entry: str = ""

    def apply(self, ctx: PassContext, module: ModuleOp) -> None:
        root = module.lookup(self.entry) if self.entry else module.entry
        if root is None:
            if self.entry:
                hint = suggest(self.entry, [f.name for f in module.funcs])
                ctx.diagnostics.error(f"symbol-dce: no function @{self.entry}{hint}", module.loc)
            return
        live: set[str] = set()
        work = [root.name]
        while work:
            name = work.pop()
            if name in live:
                continue
            live.add(name)
            func = module.lookup(name)
            if func is not None:
                work.extend(op.callee for op in func.walk() if isinstance(op, CallOp))
        module.funcs = [f for f in module.funcs if f.name in live]
