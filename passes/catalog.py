"""Every pass, as plain data: where its class is and what `--help` and `--list-passes` say about it. It is
the one list of passes (the registry in `solar.passes` is made from it), and reading it imports no pass
module (a pass can pull in scipy, islpy or numba, which costs a second of start-up for a command that
never runs it). The entries are what the classes give: tests/unit/test_pass_registry.py finds every pass
class in passes/ and prints the entry to add or replace where this table differs;
`python -m solar.passes.catalog` prints the whole table."""

from __future__ import annotations

import dataclasses
import importlib
import json
import typing
from dataclasses import dataclass
from typing import Any

from solar.ir.pass_manager import option_type_name


@dataclass(frozen=True)
class OptionInfo:
    name: str
    type: str  # the type's name as --list-passes prints it ("str", "bool")
    default: str | None  # repr() of the default; None when the option has none


@dataclass(frozen=True)
class PassInfo:
    target: str  # "module:Class", imported only when the pass runs
    summary: str
    options: tuple[OptionInfo, ...] = ()
    primary_option: str | None = None
    free_options: bool = False


CATALOG: dict[str, PassInfo] = {
    "bind-params": PassInfo(
        "solar.passes.bind_params:BindParams",
        "Bind size parameters to values (M=64 ...), or all to their defaults",
        (),
        None, True),
    "fuse": PassInfo(
        "solar.passes.fuse:Fuse",
        "Group units of execution into fusion groups (mode=greedy|producer-consumer|none)",
        (OptionInfo("mode", "greedy|producer-consumer|none", "'greedy'"),),
        "mode", False),
    "inline": PassInfo(
        "solar.passes.inline:Inline",
        "Inline every solar.call",
        (),
        None, False),
    "lift-affine": PassInfo(
        "solar.passes.lift_affine:LiftAffine",
        "ISL model of every kernel: bounds proofs, exact iteration counts, full writes, footprints",
        (OptionInfo("annotate", "bool", "True"),),
        None, False),
    "lift-einsum": PassInfo(
        "solar.passes.lift_einsum:LiftEinsum",
        "Rewrite liftable kernels into solar.einsum chains, with exact FLOP and byte counts",
        (OptionInfo("counts", "bool", "True"),),
        None, False),
    "list-params": PassInfo(
        "solar.passes.list_params:ListParams",
        "List the size parameters: default, and the arguments, values and loops they size",
        (),
        None, False),
    "print-counts": PassInfo(
        "solar.passes.print_counts:PrintCounts",
        "Print exact points, MACs, FLOPs and bytes per op and for the module (=symbolic: as formulas)",
        (OptionInfo("form", "exact|symbolic", "'exact'"),),
        "form", False),
    "print-intensity": PassInfo(
        "solar.passes.print_intensity:PrintIntensity",
        "Print the arithmetic intensity (FLOP/byte) of each einsum unit and fusion group",
        (OptionInfo("min", "float", "0.0"),),
        "min", False),
    "print-op-stats": PassInfo(
        "solar.passes.print_op_stats:PrintOpStats",
        "Print the number of ops of each kind",
        (),
        None, False),
    "quantize": PassInfo(
        "solar.passes.quantize:Quantize",
        "Quantize weights (int8|int4|fp8|nvfp4|mxfp4), the KV cache (fp8|int8|int4), activations (fp8)",
        (OptionInfo("weights", "none|int8|int4|fp8|nvfp4|mxfp4", "'none'"),
         OptionInfo("group_size", "int", "0"),
         OptionInfo("kv_cache", "none|fp8|int8|int4", "'none'"),
         OptionInfo("activations", "none|fp8", "'none'"),
         OptionInfo("zero_point", "bool", "False"),
         OptionInfo("exclude", "str", "''"),
         OptionInfo("block_rows", "int", "0")),
        "weights", False),
    "reorder-einsum": PassInfo(
        "solar.passes.reorder_einsum:ReorderEinsum",
        "Re-associate einsum chains to cut FLOPs (objective=flops|bytes|sol, recompute=false)",
        (OptionInfo("objective", "str", "'flops'"),
         OptionInfo("target", "str", "''"),
         OptionInfo("allow_tf32", "bool", "False"),
         OptionInfo("recompute", "bool", "False")),
        "objective", False),
    "sol": PassInfo(
        "solar.passes.sol:SOL",
        "Speed-of-light report on a target (h100, b200, host, a YAML file; comma-separated for several)",
        (OptionInfo("target", "str", "'h100'"),
         OptionInfo("fp32_precision", "str", "'framework'"),
         OptionInfo("allow_tf32", "bool", "False"),
         OptionInfo("report", "str", "''"),
         OptionInfo("html", "str", "''"),
         OptionInfo("command", "str", "''"),
         OptionInfo("plot", "str", "''"),
         OptionInfo("latency", "str", "''"),
         OptionInfo("annotate", "bool", "True"),
         OptionInfo("formula", "bool", "False"),
         OptionInfo("sweep", "str", "''"),
         OptionInfo("sweep_report", "str", "''"),
         OptionInfo("sweep_plot", "str", "''"),
         OptionInfo("design_space", "str", "''"),
         OptionInfo("design_plot", "str", "''"),
         OptionInfo("max_points", "int", "0")),
        "target", False),
    "strip-debuginfo": PassInfo(
        "solar.passes.strip_debuginfo:StripDebuginfo",
        "Remove source locations (loc(...)) from every op",
        (),
        None, False),
    "symbol-dce": PassInfo(
        "solar.passes.symbol_dce:SymbolDCE",
        "Remove functions unreachable from the entry function",
        (OptionInfo("entry", "str", "''"),),
        "entry", False),
    "tile-search": PassInfo(
        "solar.passes.tile_search:TileSearch",
        "Least DRAM traffic of each einsum and fusion group under a buffer (buffer=l2|smem|<bytes>), by MILP",
        (OptionInfo("buffer", "str", "'l2'"),
         OptionInfo("target", "str", "'h100'"),
         OptionInfo("curve", "str", "''"),
         OptionInfo("annotate", "bool", "True"),
         OptionInfo("budget", "float", "2.0")),
        "buffer", False),
}


def info_of_class(cls: Any) -> PassInfo:
    """The catalog entry a pass class gives (what the table above must equal)."""
    options = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if cls.free_options and f.name == "options":
            continue
        default = None if f.default is dataclasses.MISSING else repr(f.default)
        options.append(OptionInfo(f.name, option_type_name(hints.get(f.name, f.type)), default))
    return PassInfo(f"{cls.__module__}:{cls.__qualname__}", cls.summary, tuple(options), cls.primary_option,
                    cls.free_options)


def _quoted(value: str | None) -> str:
    return "None" if value is None else json.dumps(value, ensure_ascii=False)


def catalog_entry(name: str, info: PassInfo) -> str:
    """`info` as the lines of its entry in CATALOG, ready to paste."""
    lines = [f"    {_quoted(name)}: PassInfo(", f"        {_quoted(info.target)},", f"        {_quoted(info.summary)},"]
    options = [f"OptionInfo({_quoted(o.name)}, {_quoted(o.type)}, {_quoted(o.default)})" for o in info.options]
    if len(options) == 1:
        lines.append(f"        ({options[0]},),")
    elif options:
        lines += [f"        ({options[0]},", *(f"         {o}," for o in options[1:-1]), f"         {options[-1]}),"]
    else:
        lines.append("        (),")
    lines.append(f"        {_quoted(info.primary_option)}, {info.free_options}),")
    return "\n".join(lines)


def _table_from_classes() -> str:  # pragma: no cover - a maintainer's helper
    lines = ["CATALOG: dict[str, PassInfo] = {"]
    for name, info in sorted(CATALOG.items()):
        module, _, cls = info.target.partition(":")
        lines.append(catalog_entry(name, info_of_class(getattr(importlib.import_module(module), cls))))
    lines.append("}")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    print(_table_from_classes())
