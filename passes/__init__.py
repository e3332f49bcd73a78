"""SOLAR passes: one pass per file; the registry maps each flag to its class, imported only when used."""

from solar.ir.pass_manager import PassRegistry

PASSES: dict[str, str] = {
    "bind-params": "solar.passes.bind_params:BindParams",
    "fuse": "solar.passes.fuse:Fuse",
    "inline": "solar.passes.inline:Inline",
    "lift-affine": "solar.passes.lift_affine:LiftAffine",
    "lift-einsum": "solar.passes.lift_einsum:LiftEinsum",
    "print-counts": "solar.passes.print_counts:PrintCounts",
    "print-intensity": "solar.passes.print_intensity:PrintIntensity",
    "print-op-stats": "solar.passes.print_op_stats:PrintOpStats",
    "sol": "solar.passes.sol:SOL",
    "strip-debuginfo": "solar.passes.strip_debuginfo:StripDebuginfo",
    "symbol-dce": "solar.passes.symbol_dce:SymbolDCE",
    "tile-search": "solar.passes.tile_search:TileSearch",
}

registry = PassRegistry(PASSES)
