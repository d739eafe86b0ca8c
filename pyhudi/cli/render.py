"""Text rendering for the CLI: sizes, aligned tables, histogram bars.

Kept free of any Hudi knowledge so both commands format numbers the same way
and tests can check the layout without building a table.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def human_bytes(n: int | None) -> str:
    """Binary units (Hudi's size defaults are powers of two: 100 MiB, 120 MiB), one decimal."""
    if n is None:
        return "-"
    value = float(n)
    for unit in _UNITS:
        if abs(value) < 1024 or unit == _UNITS[-1]:
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover - loop always returns


def number(n: int | None) -> str:
    """Thousands separators make record counts readable; None shows as '-'."""
    return "-" if n is None else f"{n:,}"


def plural(n: int, word: str, suffix: str = "s") -> str:
    """`1 file group`, `2 file groups`: counts read better than `1 file groups`."""
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}{suffix}"


def percent(part: float, whole: float) -> str:
    return "-" if whole <= 0 else f"{100.0 * part / whole:.1f}%"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], right: Sequence[int] = (),
          indent: str = "") -> list[str]:
    """Columns padded to their widest cell; columns listed in `right` are right-aligned (numbers)."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    right_set = set(right)
    out = []
    for row in cells:
        parts = [c.rjust(w) if i in right_set else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))]
        out.append((indent + "  ".join(parts)).rstrip())
    return out


def bar(value: int, maximum: int, width: int = 30) -> str:
    """A bar proportional to value/maximum; any non-zero value gets at least one mark so it is visible."""
    if maximum <= 0 or value <= 0:
        return ""
    marks = max(1, round(width * value / maximum))
    return "#" * marks


def emit(lines: Sequence[str], out: TextIO | None = None) -> None:
    stream = out or sys.stdout
    for line in lines:
        stream.write(line + "\n")


def emit_json(data: Any, out: TextIO | None = None) -> None:
    stream = out or sys.stdout
    stream.write(json.dumps(data, indent=2, sort_keys=False) + "\n")
