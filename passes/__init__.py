"""SOLAR passes: one pass per file; the registry maps each flag to its class, imported only when used."""

from solar.ir.pass_manager import NamedPipeline, PassRegistry

from .catalog import CATALOG

# Flag -> "module:Class", from the one list of passes (solar.passes.catalog), which imports no pass.
PASSES: dict[str, str] = {name: info.target for name, info in CATALOG.items()}

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
