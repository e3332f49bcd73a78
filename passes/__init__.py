"""SOLAR passes: one pass per file; the registry maps each flag to its class, imported only when used."""

from solar.ir.pass_manager import NamedPipeline, PassRegistry

PASSES: dict[str, str] = {
    "bind-params": "solar.passes.bind_params:BindParams",
    "fuse": "solar.passes.fuse:Fuse",
    "inline": "solar.passes.inline:Inline",
    "lift-affine": "solar.passes.lift_affine:LiftAffine",
    "lift-einsum": "solar.passes.lift_einsum:LiftEinsum",
    "list-params": "solar.passes.list_params:ListParams",
    "print-counts": "solar.passes.print_counts:PrintCounts",
    "print-intensity": "solar.passes.print_intensity:PrintIntensity",
    "print-op-stats": "solar.passes.print_op_stats:PrintOpStats",
    "reorder-einsum": "solar.passes.reorder_einsum:ReorderEinsum",
    "sol": "solar.passes.sol:SOL",
    "strip-debuginfo": "solar.passes.strip_debuginfo:StripDebuginfo",
    "symbol-dce": "solar.passes.symbol_dce:SymbolDCE",
    "tile-search": "solar.passes.tile_search:TileSearch",
}

# Named pipelines: flags and -p names like passes, listed by --list-passes.
PIPELINES: dict[str, NamedPipeline] = {
    "sol-pipeline": NamedPipeline(
        "lift-einsum,fuse,tile-search{target=$target},sol{target=$target}",
        "lift-einsum, fuse, tile-search and sol on one target (--sol-pipeline=h100)",
        {"target": "h100"}, primary_option="target"),
}

# Out-of-tree passes: `[project.entry-points."solar.passes"] my-pass = "my_pkg.my_pass:MyPass"`.
ENTRY_POINT_GROUP = "solar.passes"

registry = PassRegistry(PASSES, PIPELINES, ENTRY_POINT_GROUP)
