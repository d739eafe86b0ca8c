"""JSON printed the way Jackson's default pretty printer prints it.

Hudi's commit files are Jackson output; matching the layout byte-for-byte
keeps `diff` against Spark-written tables meaningful and costs nothing.
"""

from __future__ import annotations

import re
from typing import Any


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, int):
        return str(value)
    return _string(str(value))


_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]')


def _string(text: str) -> str:
    """A JSON string as Jackson writes it: short escapes, other control characters as upper-case \\u00XX.
    Most strings (paths, ids, numbers as text) need no escape: one regex search instead of a loop per
    character (a commit of a spread write holds tens of thousands of strings)."""
    if _NEEDS_ESCAPE.search(text) is None:
        return f'"{text}"'
    return escaped(text)


def escaped(text: str) -> str:
    """`text` as Jackson writes a string, every character looked at (the path `_string` skips when no
    character needs an escape)."""
    out = ['"']
    for ch in text:
        if ch in _SHORT:
            out.append(_SHORT[ch])
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _dump(value: Any, indent: int, out: list[str]) -> None:
    pad = "  " * indent
    if isinstance(value, dict):
        if not value:
            out.append("{ }")
            return
        out.append("{\n")
        items = list(value.items())
        for i, (key, item) in enumerate(items):
            out.append(f"{pad}  {_string(str(key))} : ")
            _dump(item, indent + 1, out)
            out.append(",\n" if i < len(items) - 1 else "\n")
        out.append(f"{pad}}}")
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[ ]")
            return
        out.append("[ ")
        for i, item in enumerate(value):
            _dump(item, indent, out)
            if i < len(value) - 1:
                out.append(", ")
        out.append(" ]")
    else:
        out.append(_scalar(value))


def dumps(value: Any) -> str:
    out: list[str] = []
    _dump(value, 0, out)
    return "".join(out)
