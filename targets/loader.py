"""Hardware targets: load, validate and query the figures of a chip.

A target is a YAML file (schema in ``targets/README.md``): dense peak FLOP/s per precision and unit, DRAM
capacity and bandwidth, on-chip memory, SM count and TDP, each figure with its source. Unknown figures are
written ``unknown`` and stay unknown: asking for one raises :class:`PeakUnavailable` instead of guessing,
because a guessed peak could turn the speed-of-light bound into something that is not a lower bound.

NVIDIA's public SOLAR arch YAML (``MAC_per_cycle_*``, ``DRAM_byte_per_cycle``, ``freq_GHz`` …) is accepted as
is and converted on load; the format is detected by its keys.

Every problem with a file is reported as one :class:`TargetError` line naming the file and the field.

This module is the catalogue (shipped targets by name or alias, ``host``, paths) and the public face of the
package; the parts live beside it: ``vocabulary`` (errors, fields, units), ``target`` (the data model),
``peaks`` (the peak policy), ``target_file`` (reading and validating a file) and ``nvidia`` (NVIDIA's format).
"""

from __future__ import annotations

import difflib
import functools
import os
import re
from pathlib import Path

from .target import Figure, PeakChoice, Target
from .target_file import load_target_file, parse_target
from .vocabulary import COMPUTE_FIELDS, PRECISIONS, SOURCES, UNITS, PeakUnavailable, TargetError

__all__ = [
    "COMPUTE_FIELDS",
    "PRECISIONS",
    "SOURCES",
    "TARGETS_DIR",
    "UNITS",
    "Figure",
    "PeakChoice",
    "PeakUnavailable",
    "Target",
    "TargetError",
    "list_targets",
    "load_target",
    "load_target_file",
    "parse_target",
]

TARGETS_DIR = Path(__file__).resolve().parent

def _norm_name(name: str) -> str:
    # Case, hyphens, underscores and spaces do not matter: "H100_SXM" == "h100-sxm" == "h100sxm".
    return re.sub(r"[-_\s]+", "", name.strip().lower())


@functools.lru_cache(maxsize=1)
def _builtin_index() -> tuple[dict[str, Path], dict[str, str], dict[str, Target]]:
    """(normalized name or alias -> file, normalized -> canonical name, canonical -> Target)."""
    index: dict[str, Path] = {}
    canonical: dict[str, str] = {}
    targets: dict[str, Target] = {}
    for path in sorted(TARGETS_DIR.glob("*.yaml")):
        t = load_target_file(path)
        if t.name in targets:
            raise TargetError(f"{path}: name: {t.name!r} is also defined by {targets[t.name].origin}")
        targets[t.name] = t
        for n in (t.name, *t.aliases):
            key = _norm_name(n)
            if key == "host":
                raise TargetError(f"{path}: name: 'host' is reserved for the calibrated host target")
            if key in index and index[key] != path:
                raise TargetError(f"{path}: aliases: {n!r} is also a name of {index[key]}")
            index[key] = path
            canonical[key] = t.name
    return index, canonical, targets


def list_targets(*, include_host: bool = True) -> list[str]:
    """Canonical names of the shipped targets (and ``host``), sorted."""
    names = sorted(_builtin_index()[2])
    if include_host:
        names.append("host")
    return sorted(names)


def _looks_like_path(s: str) -> bool:
    return s.endswith((".yaml", ".yml")) or "/" in s or os.sep in s


def load_target(name_or_path: str | os.PathLike[str], *, recalibrate: bool = False) -> Target:
    """A target by name (case-insensitive, aliases allowed), ``host``, or a path to a YAML file.

    ``recalibrate`` only applies to ``host``: it re-measures instead of reading the cache.
    """
    if isinstance(name_or_path, os.PathLike):
        return load_target_file(name_or_path)
    if not isinstance(name_or_path, str) or not name_or_path.strip():
        raise TargetError(f"target must be a name or a path, got {name_or_path!r}")
    s = name_or_path.strip()
    if _looks_like_path(s):
        return load_target_file(s)
    key = _norm_name(s)
    if key == "host":
        from .calibrate import host_target  # lazy, not a cycle: calibration imports numpy and measures

        return host_target(recalibrate=recalibrate)
    _, canonical, targets = _builtin_index()
    if key in canonical:
        return targets[canonical[key]]
    if Path(s).is_file():  # a file in the working directory named without an extension or slash
        return load_target_file(s)
    spellings = {n: n for n in list_targets()}
    for t in targets.values():
        for a in t.aliases:
            spellings.setdefault(a, t.name)
    close = difflib.get_close_matches(s.lower(), list(spellings), n=3, cutoff=0.5)
    if not close:  # compare hyphen-free spellings too ("h10" vs "h100sxm")
        norm = {_norm_name(k): k for k in spellings}
        close = [norm[c] for c in difflib.get_close_matches(key, list(norm), n=3, cutoff=0.5)]
    hint = f"did you mean {', '.join(close)}?" if close else f"known targets: {', '.join(list_targets())}"
    raise TargetError(f"unknown target {s!r}: {hint} (or give a path to a target YAML file)")
