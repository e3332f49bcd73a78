"""What `--help` and `--list-passes` say about each pass, as plain data: reading it imports no pass module
(a pass can pull in scipy, islpy or numba, which costs a second of start-up for a command that never runs
it). tests/unit/test_pass_registry.py keeps this table equal to the pass classes;
`python -m solar.passes.catalog` prints the table the classes give, to paste here after changing a pass."""

from __future__ import annotations

import dataclasses
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
    summary: str
    options: tuple[OptionInfo, ...] = ()
    primary_option: str | None = None
    free_options: bool = False


CATALOG: dict[str, PassInfo] = {
    "bind-params": PassInfo(
        "Bind size parameters to values (M=64 ...), or all to their defaults",
        (), None, True),
    "fuse": PassInfo(
        "Group units of execution into fusion groups (mode=greedy|producer-consumer|none)",
        (OptionInfo("mode", "greedy|producer-consumer|none", "'greedy'"),), "mode"),
    "inline": PassInfo("Inline every solar.call"),
    "lift-affine": PassInfo(
        "ISL model of every kernel: bounds proofs, exact iteration counts, full writes, footprints",
        (OptionInfo("annotate", "bool", "True"),)),
    "lift-einsum": PassInfo(
        "Rewrite liftable kernels into solar.einsum chains, with exact FLOP and byte counts",
        (OptionInfo("counts", "bool", "True"),)),
    "list-params": PassInfo("List the size parameters: default, and the arguments, values and loops they size"),
    "print-counts": PassInfo(
        "Print exact points, MACs, FLOPs and bytes per op and for the module (=symbolic: as formulas)",
        (OptionInfo("form", "exact|symbolic", "'exact'"),), "form"),
    "print-intensity": PassInfo(
        "Print the arithmetic intensity (FLOP/byte) of each einsum unit and fusion group",
        (OptionInfo("min", "float", "0.0"),), "min"),
    "print-op-stats": PassInfo("Print the number of ops of each kind"),
    "reorder-einsum": PassInfo(
        "Re-associate einsum chains to cut FLOPs (objective=flops|bytes|sol, recompute=false)",
        (OptionInfo("objective", "str", "'flops'"), OptionInfo("target", "str", "''"),
         OptionInfo("allow_tf32", "bool", "False"), OptionInfo("recompute", "bool", "False")), "objective"),
    "sol": PassInfo(
        "Speed-of-light report on a target (h100, b200, host, a YAML file; comma-separated for several)",
        (OptionInfo("target", "str", "'h100'"), OptionInfo("fp32_precision", "str", "'framework'"),
         OptionInfo("allow_tf32", "bool", "False"),
         OptionInfo("report", "str", "''"), OptionInfo("plot", "str", "''"), OptionInfo("latency", "str", "''"),
         OptionInfo("annotate", "bool", "True"), OptionInfo("formula", "bool", "False"),
         OptionInfo("sweep", "str", "''"), OptionInfo("sweep_report", "str", "''"),
         OptionInfo("sweep_plot", "str", "''"), OptionInfo("design_space", "str", "''"),
         OptionInfo("design_plot", "str", "''")),
        "target"),
    "strip-debuginfo": PassInfo("Remove source locations (loc(...)) from every op"),
    "symbol-dce": PassInfo(
        "Remove functions unreachable from the entry function",
        (OptionInfo("entry", "str", "''"),), "entry"),
    "tile-search": PassInfo(
        "Least DRAM traffic of each einsum and fusion group under a buffer (buffer=l2|smem|<bytes>), by MILP",
        (OptionInfo("buffer", "str", "'l2'"), OptionInfo("target", "str", "'h100'"),
         OptionInfo("curve", "str", "''"), OptionInfo("annotate", "bool", "True")),
        "buffer"),
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
    return PassInfo(cls.summary, tuple(options), cls.primary_option, cls.free_options)


def _table_from_classes() -> str:  # pragma: no cover - a maintainer's helper
    from solar.passes import registry

    lines = ["CATALOG: dict[str, PassInfo] = {"]
    for name in registry.names():
        lines.append(f"    {name!r}: {info_of_class(registry.load(name))!r},")
    lines.append("}")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    print(_table_from_classes())
