"""Reading SIR source bytes: UTF-8 only, a leading byte-order mark accepted, and a bad byte reported as a
located diagnostic with its byte offset (never a UnicodeDecodeError)."""

from __future__ import annotations

from .diagnostics import Diagnostic, DiagnosticError, Location

BOM = "\ufeff"


def decode_source(data: bytes, file: str, kind: str = "SIR files") -> str:
    """The text of `data`; raises DiagnosticError at the first byte that is not UTF-8 (`kind` names the files
    in the message)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        before = data[:err.start]
        line = before.count(b"\n") + 1
        line_start = before.rfind(b"\n") + 1
        # The column counts characters, as every other column does; the prefix of the line is valid UTF-8.
        col = len(before[line_start:].decode("utf-8", errors="replace")) + 1
        message = (f"invalid UTF-8 at byte offset {err.start} (byte 0x{data[err.start]:02x}): "
                   f"{kind} are UTF-8 text")
        raise DiagnosticError([Diagnostic("error", message, Location(file, line, col))]) from None
    return strip_bom(text)


def strip_bom(text: str) -> str:
    return text[1:] if text.startswith(BOM) else text
