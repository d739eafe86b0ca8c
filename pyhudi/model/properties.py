"""Java `.properties` text, as Hudi reads and writes `hoodie.properties`.

Hudi stores JSON schemas in properties, so `:`/`=` escaping is not cosmetic:
a writer that skips it produces files Java's `Properties.load` misreads.
"""

from __future__ import annotations

from datetime import datetime, timezone

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 >= len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u" and i + 6 <= len(text):
            out.append(chr(int(text[i + 2 : i + 6], 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def _logical_lines(text: str) -> list[str]:
    """Join continuation lines (a line ending in an odd number of backslashes)."""
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip() if pending else raw
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending += line[:-1]
            continue
        lines.append(pending + line)
        pending = ""
    if pending:
        lines.append(pending)
    return lines


def parse_properties(text: str) -> dict[str, str]:
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        stripped = line.lstrip()
        if not stripped or stripped[0] in "#!":
            continue
        key_chars: list[str] = []
        i = 0
        while i < len(stripped):
            ch = stripped[i]
            if ch == "\\" and i + 1 < len(stripped):
                key_chars.append(stripped[i : i + 2])
                i += 2
                continue
            if ch in "=: \t":
                break
            key_chars.append(ch)
            i += 1
        rest = stripped[i:].lstrip(" \t")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t")
        props[_join_surrogates(_unescape("".join(key_chars)))] = _join_surrogates(_unescape(rest))
    return props


def _join_surrogates(text: str) -> str:
    """Java escapes characters beyond the BMP as UTF-16 surrogate pairs (\\uD83D\\uDE80); rejoin them."""
    if not any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")


def _escape(text: str, is_key: bool) -> str:
    out: list[str] = []
    for idx, ch in enumerate(text):
        if ch == "\\":
            out.append("\\\\")
        elif ch in "=:#!":
            out.append("\\" + ch)
        elif ch == " " and (is_key or idx == 0):
            out.append("\\ ")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\f":
            out.append("\\f")
        elif ord(ch) > 0xFFFF:  # Java writes one escape per UTF-16 code unit
            units = ch.encode("utf-16-be")
            out.append("".join(f"\\u{int.from_bytes(units[j:j + 2], 'big'):04X}" for j in (0, 2)))
        elif ord(ch) < 0x20 or ord(ch) > 0x7E:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return "".join(out)


_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def java_date_comment(now: datetime | None = None) -> str:
    """The `#Thu Apr 18 17:32:14 UTC 2024` line `Properties.store` writes. Java's `Date.toString` names
    days and months in English whatever the locale; `strftime`'s %a and %b follow the process's LC_TIME,
    which an application may have set (`locale.setlocale(locale.LC_ALL, "")`)."""
    m = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    return f"{_DAYS[m.weekday()]} {_MONTHS[m.month - 1]} {m.day:02d} {m.hour:02d}:{m.minute:02d}:{m.second:02d} UTC {m.year}"


def format_properties(props: dict[str, str], comments: list[str] | None = None) -> str:
    lines = [f"#{c}" for c in (comments or [])]
    lines.append("#" + java_date_comment())
    for key, value in props.items():
        lines.append(f"{_escape(key, True)}={_escape(value, False)}")
    return "\n".join(lines) + "\n"
