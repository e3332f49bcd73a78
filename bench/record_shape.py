"""The shape of a JSONL record as the batch summary and the headroom plot read it back (`--resume`): a record
written by an older or broken run, or edited by hand, is named with what is wrong in it, instead of failing
somewhere in the summary (docs/bench.md, "The JSONL record")."""

from __future__ import annotations

from typing import Any

# The top-level fields the summary reads, and the type each must have when present.
_FIELDS: dict[str, type | tuple[type, ...]] = {
    "status": str, "errors": list, "violations": list, "beats": list, "notes": list, "headroom": dict,
    "measurements": dict, "translate": dict, "bounds": dict, "conditions": dict, "noisy": bool}
_BEAT_TEXT = ("target", "framework_mode", "mode", "why")
_BEAT_SECONDS = ("measured_s", "bound_s")


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def shape_error(rec: dict[str, Any]) -> str | None:
    """What is wrong with the record `rec` (a JSON object with a `problem` string), or None when the summary
    can read every field it has."""
    for key, kind in _FIELDS.items():
        if key in rec and not isinstance(rec[key], kind):
            return f"'{key}' is {type(rec[key]).__name__}, not {kind.__name__}"  # type: ignore[union-attr]
    for key in ("errors", "violations", "beats"):
        for k, entry in enumerate(rec.get(key, [])):
            if not isinstance(entry, dict):
                return f"'{key}[{k}]' is {type(entry).__name__}, not an object"
            if key == "errors":
                continue
            missing = [f for f in _BEAT_TEXT if not isinstance(entry.get(f), str)]
            missing += [f for f in _BEAT_SECONDS if not _is_number(entry.get(f))]
            if missing:
                return f"'{key}[{k}]' has no {missing[0]} ({'a string' if missing[0] in _BEAT_TEXT else 'seconds'})"
    for name, per_fw in rec.get("headroom", {}).items():
        for fw, per_mode in per_fw.items() if isinstance(per_fw, dict) else [(None, per_fw)]:
            for mode, ratios in per_mode.items() if isinstance(per_mode, dict) else [(None, per_mode)]:
                if not (isinstance(ratios, dict) and _is_number(ratios.get("median"))):
                    where = ".".join(str(p) for p in (name, fw, mode) if p is not None)
                    return f"'headroom.{where}' is not a {{median, min}} pair of ratios"
    for fw, m in rec.get("measurements", {}).items():
        if not isinstance(m, dict):
            return f"'measurements.{fw}' is {type(m).__name__}, not an object"
        for key in ("min_s", "median_s"):
            if m.get(key) is not None and not _is_number(m[key]):
                return f"'measurements.{fw}.{key}' is {type(m[key]).__name__}, not seconds"
    return None
