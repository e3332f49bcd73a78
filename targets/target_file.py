"""Reading one target file: strict YAML (duplicate keys are errors), validation of the native format, and
`parse_target` / `load_target_file`, which also accept NVIDIA's public SOLAR arch format (`nvidia`)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast

from .nvidia import is_nvidia_format, parse_nvidia
from .safe_yaml import YAMLProblem, line_of, load_yaml
from .target import Figure, Target
from .vocabulary import (
    BASE_UNIT,
    DIM_WORD,
    FIGURE_KEYS,
    KINDS,
    SCHEMA_VERSION,
    SECTIONS,
    SOURCES,
    TOP_KEYS_OPTIONAL,
    TOP_KEYS_REQUIRED,
    UNITS,
    Dimension,
    Status,
    TargetError,
    check_si,
    field_error,
    read_number,
    read_source,
    read_text,
    suggestion,
)

# --------------------------------------------------------------------------------------------------------
# YAML reading
# --------------------------------------------------------------------------------------------------------


def _read_yaml(path: Path) -> Any:
    file = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TargetError(f"{file}: no such target file", file=file) from None
    except UnicodeDecodeError as e:
        raise TargetError(f"{file}: not UTF-8 text (byte offset {e.start})", file=file) from None
    except OSError as e:
        raise TargetError(f"{file}: cannot read: {e.strerror or e}", file=file) from None
    try:
        return load_yaml(text)
    except YAMLProblem as e:
        where = f"{file}:{e.line}:{e.col}" if e.line else file
        raise TargetError(f"{where}: {e.message}", file=file, line=e.line, col=e.col) from None


# --------------------------------------------------------------------------------------------------------
# Validation of the native format
# --------------------------------------------------------------------------------------------------------

def _parse_figure(file: str, fld: str, dim: Dimension, raw: Any) -> Figure:
    if isinstance(raw, str) and raw.strip().lower() in ("unknown", "unsupported"):
        return Figure(field=fld, status=cast(Status, raw.strip().lower()))
    if not isinstance(raw, dict):
        raise field_error(
            file, fld,
            "must be a mapping {value, unit, source} or the word 'unknown' or 'unsupported', "
            f"got {raw!r}",
        )
    for key in raw:
        if key not in FIGURE_KEYS:
            raise field_error(file, f"{fld}.{key}", f"unknown key{suggestion(str(key), FIGURE_KEYS)}")
    ref = read_text(file, f"{fld}.ref", raw["ref"]) if "ref" in raw else None
    note = read_text(file, f"{fld}.note", raw["note"]) if "note" in raw else None
    if "value" not in raw:
        raise field_error(file, f"{fld}.value", "missing")
    value = raw["value"]
    if isinstance(value, str) and value.strip().lower() in ("unknown", "unsupported"):
        # Mapping form of an unknown figure, which lets it carry a note or the source saying so.
        for key in ("unit", "approximate", "range"):
            if key in raw:
                raise field_error(file, f"{fld}.{key}", f"not allowed on an {value.strip().lower()} figure")
        src = read_source(file, f"{fld}.source", raw["source"]) if "source" in raw else None
        return Figure(field=fld, status=cast(Status, value.strip().lower()), source=src, ref=ref, note=note)
    val = read_number(file, f"{fld}.value", value)
    if "unit" not in raw:
        raise field_error(file, f"{fld}.unit", f"missing (expected {DIM_WORD[dim]}: {', '.join(UNITS[dim])})")
    unit = raw["unit"]
    if not isinstance(unit, str) or unit not in UNITS[dim]:
        raise field_error(file, f"{fld}.unit",
                   f"{unit!r} is not {DIM_WORD[dim]} (expected one of {', '.join(UNITS[dim])})")
    if "source" not in raw:
        raise field_error(file, f"{fld}.source", f"missing (every figure names its source: {', '.join(SOURCES)})")
    src = read_source(file, f"{fld}.source", raw["source"])
    approx = raw.get("approximate", False)
    if not isinstance(approx, bool):
        raise field_error(file, f"{fld}.approximate", f"must be true or false, got {approx!r}")
    factor = UNITS[dim][unit]
    rng: tuple[float, float] | None = None
    if "range" in raw:
        r = raw["range"]
        if not isinstance(r, list) or len(r) != 2:
            raise field_error(file, f"{fld}.range", f"must be a list [low, high] in the figure's unit, got {r!r}")
        lo, hi = (read_number(file, f"{fld}.range", x) for x in r)
        if not lo <= val <= hi:
            raise field_error(file, f"{fld}.range", f"value {val:g} lies outside [{lo:g}, {hi:g}]")
        rng = (lo * factor, hi * factor)
    if dim == "count" and val != int(val):
        raise field_error(file, f"{fld}.value", f"must be a whole number, got {val:g}")
    check_si(file, f"{fld}.value", val * factor, BASE_UNIT[dim], f"{val:g} {unit}")
    return Figure(field=fld, status="known", value=val * factor, unit=BASE_UNIT[dim],
                  given=f"{val:g} {unit}", source=src, ref=ref, note=note, approximate=approx, range=rng)


def _check_name(file: str, fld: str, raw: Any) -> str:
    s = read_text(file, fld, raw)
    if any(c.isspace() for c in s):
        raise field_error(file, fld, f"must not contain spaces, got {s!r}")
    return s


def _parse_native(file: str, doc: dict[str, Any]) -> Target:
    for key in doc:
        if key not in TOP_KEYS_REQUIRED + TOP_KEYS_OPTIONAL:
            raise field_error(file, str(key), "unknown key"
                       + suggestion(str(key), TOP_KEYS_REQUIRED + TOP_KEYS_OPTIONAL))
    for key in TOP_KEYS_REQUIRED:
        if key not in doc:
            raise field_error(file, key, "missing")
    if "schema" in doc and doc["schema"] != SCHEMA_VERSION:
        raise field_error(file, "schema", f"unsupported schema version {doc['schema']!r} (this SOLAR reads "
                                   f"{SCHEMA_VERSION})")
    name = _check_name(file, "name", doc["name"])
    aliases_raw = doc.get("aliases", [])
    if not isinstance(aliases_raw, list):
        raise field_error(file, "aliases", f"must be a list of names, got {aliases_raw!r}")
    aliases = tuple(_check_name(file, f"aliases[{i}]", a) for i, a in enumerate(aliases_raw))
    kind = doc.get("kind", "gpu")
    if kind not in KINDS:
        raise field_error(file, "kind", f"unknown kind {kind!r} (expected one of {', '.join(KINDS)})")
    refs_raw = doc.get("references", {})
    if not isinstance(refs_raw, dict):
        raise field_error(file, "references", "must be a mapping from source kind to document title")
    refs = {read_source(file, f"references.{k}", k): read_text(file, f"references.{k}", v)
            for k, v in refs_raw.items()}
    calib = doc.get("calibration")
    if calib is not None and not isinstance(calib, dict):
        raise field_error(file, "calibration", "must be a mapping")

    figures: dict[str, Figure] = {}
    for section, fields in SECTIONS.items():
        body = doc[section]
        if not isinstance(body, dict):
            raise field_error(file, section, f"must be a mapping of figures, got {body!r}")
        for key in body:
            if key not in fields:
                raise field_error(file, f"{section}.{key}", "unknown key" + suggestion(str(key), fields))
        for fld, (dim, required) in fields.items():
            if fld not in body:
                if required:
                    raise field_error(file, f"{section}.{fld}",
                               "missing (write 'unknown' when no source gives it, 'unsupported' when the "
                               "device lacks it)")
                continue
            figures[fld] = _parse_figure(file, f"{section}.{fld}", dim, body[fld])

    return Target(
        name=name,
        full_name=read_text(file, "full_name", doc["full_name"]) if "full_name" in doc else name,
        vendor=read_text(file, "vendor", doc["vendor"]) if "vendor" in doc else "unknown",
        kind=kind,
        aliases=aliases,
        figures=MappingProxyType(figures),
        references=MappingProxyType(refs),
        notes=read_text(file, "notes", doc["notes"]) if "notes" in doc else "",
        origin=file,
        format="solar-target",
        calibration=MappingProxyType(dict(calib)) if calib is not None else None,
    )


# --------------------------------------------------------------------------------------------------------
# Public loading API
# --------------------------------------------------------------------------------------------------------


def parse_target(doc: Any, file: str) -> Target:
    """Validate a parsed YAML document (native or NVIDIA SOLAR arch format) into a :class:`Target`."""
    if not isinstance(doc, dict):
        raise field_error(file, None, "a target file must be a YAML mapping"
                   + ("" if doc is None else f", got {type(doc).__name__}"))
    if is_nvidia_format(doc):
        return parse_nvidia(file, doc)
    return _parse_native(file, doc)


def load_target_file(path: str | os.PathLike[str]) -> Target:
    """Load and validate one target file. Errors name the file and the line of the field (`path:line:`)."""
    p = Path(path).expanduser()
    file = str(p)
    doc = _read_yaml(p)
    try:
        target = parse_target(doc, file)
    except TargetError as err:
        raise _placed(err, doc, file) from None
    figures = {name: fig if fig.line else replace(fig, line=line_of(doc, fig.field))
               for name, fig in target.figures.items()}
    return replace(target, figures=MappingProxyType(figures))


def _placed(err: TargetError, doc: Any, file: str) -> TargetError:
    """`err` with the line of its field: `file:line: field: message`."""
    if err.line is not None or err.file != file or not err.field:
        return err
    line = line_of(doc, err.field)
    if line is None or not err.message.startswith(f"{file}: "):
        return err
    return TargetError(f"{file}:{line}: {err.message[len(file) + 2:]}", file=file, field=err.field, line=line)
