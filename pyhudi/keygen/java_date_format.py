"""Joda-Time date patterns and zones, as Hudi 0.14's TimestampBasedAvroKeyGenerator uses them.

The timestamp key generator formats partition paths with Joda's `DateTimeFormat.forPattern` (not
`java.text.SimpleDateFormat`, not `java.time.DateTimeFormatter`) and parses DATE_STRING input with a
Joda formatter built from a list of such patterns. Its zones come from
`DateTimeZone.forTimeZone(TimeZone.getTimeZone(id))`. This module reproduces those semantics for the
pattern letters Hudi's tests use:

* printing: y (signed year, padded; `yy` = two digits), M (number; MMM/MMMM English text), d, H,
  h (1-12), m, s, S (fraction digits, truncated), a (AM/PM), E (English day name), z (zone short name:
  `UTC` or a fixed offset's id), Z (`+0800`), ZZ (`+08:00`), ZZZ (zone id), quoted literal text
  (`'T'`, `''` for a quote) and any other non-letter character as itself;
* parsing: the same letters except E and z (Joda needs locale name tables for them); numbers take up to
  their maximum width greedily (a year followed by another number takes exactly its width), literals
  and text match case-insensitively, and the pattern must consume the whole text. Joda does not
  backtrack, and neither does this parser.

Any other letter is refused with an InvalidConfigError naming the pattern. The JVM's locale is assumed
to be English (Joda prints month/day names in the JVM default locale).
"""

from __future__ import annotations

import functools
import re
import warnings
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from pyhudi.errors import InvalidConfigError
from pyhudi.keygen.java_text import civil_from_days

DAY_MS = 86_400_000
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_PRINT_LETTERS = frozenset("yMdHhmsSaEzZ")
_PARSE_LETTERS = frozenset("yMdHhmsSaZ")
# Joda's DateTimeZone.forTimeZone maps these old three-letter Java ids to regions (getConvertedId).
_JODA_CONVERTED = {
    "GMT": "UTC", "WET": "WET", "CET": "CET", "MET": "CET", "ECT": "CET", "EET": "EET",
    "MIT": "Pacific/Apia", "HST": "Pacific/Honolulu", "AST": "America/Anchorage",
    "PST": "America/Los_Angeles", "MST": "America/Denver", "PNT": "America/Phoenix",
    "CST": "America/Chicago", "EST": "America/New_York", "IET": "America/Indiana/Indianapolis",
    "PRT": "America/Puerto_Rico", "CNT": "America/St_Johns", "AGT": "America/Argentina/Buenos_Aires",
    "BET": "America/Sao_Paulo", "ART": "Africa/Cairo", "CAT": "Africa/Harare", "EAT": "Africa/Addis_Ababa",
    "NET": "Asia/Yerevan", "PLT": "Asia/Karachi", "IST": "Asia/Kolkata", "BST": "Asia/Dhaka",
    "VST": "Asia/Ho_Chi_Minh", "CTT": "Asia/Shanghai", "JST": "Asia/Tokyo", "ACT": "Australia/Darwin",
    "AET": "Australia/Sydney", "SST": "Pacific/Guadalcanal", "NST": "Pacific/Auckland",
}
_CUSTOM_ID = re.compile(r"GMT([+-])(\d{1,2})(?::?(\d{2}))?")
_MIN_S, _MAX_S = -62135596800 + DAY_MS // 1000, 253402300799 - DAY_MS // 1000  # zoneinfo's usable range


class DateParseError(ValueError):
    """The text matches none of the input patterns (Hudi: HoodieKeyGeneratorException)."""


@dataclass(frozen=True)
class JavaZone:
    """A Joda DateTimeZone: a fixed offset (id `UTC` or `+08:00`) or a tz-database region."""

    id: str
    fixed_ms: int | None = None

    def offset_ms(self, instant_ms: int) -> int:
        if self.fixed_ms is not None:
            return self.fixed_ms
        seconds = min(max(instant_ms // 1000, _MIN_S), _MAX_S)
        when = datetime.fromtimestamp(seconds, _zoneinfo(self.id))
        return int((when.utcoffset() or timedelta(0)).total_seconds() * 1000)

    def offset_from_local(self, local_ms: int) -> int:
        """Joda's getOffsetFromLocal plus its gap check: the earlier offset in an overlap, an error in a gap."""
        if self.fixed_ms is not None:
            return self.fixed_ms
        seconds = min(max(local_ms // 1000, _MIN_S), _MAX_S)
        naive = datetime(1970, 1, 1) + timedelta(seconds=seconds)
        aware = naive.replace(tzinfo=_zoneinfo(self.id), fold=0)  # fold=0: the earlier instant of an overlap
        offset = int((aware.utcoffset() or timedelta(0)).total_seconds() * 1000)
        if self.offset_ms(local_ms - offset) != offset:
            raise DateParseError(f"the local time {naive} does not exist in {self.id} (daylight-saving gap)")
        return offset


UTC = JavaZone("UTC", 0)


@functools.cache
def _zoneinfo(name: str) -> ZoneInfo:
    return ZoneInfo(name)


@functools.lru_cache(maxsize=1)
def _regions() -> frozenset[str]:
    return frozenset(available_timezones())


def _fixed(offset_ms: int) -> JavaZone:
    """DateTimeZone.forOffsetMillis: UTC for 0, else a zone whose id is the printed offset."""
    if offset_ms == 0:
        return UTC
    sign = "-" if offset_ms < 0 else "+"
    rest = abs(offset_ms)
    text = f"{sign}{rest // 3_600_000:02d}:{rest // 60_000 % 60:02d}"
    if rest % 60_000:
        text += f":{rest // 1000 % 60:02d}"
    return JavaZone(text, offset_ms)


@functools.cache
def java_zone(name: str) -> JavaZone:
    """`DateTimeZone.forTimeZone(TimeZone.getTimeZone(name))`. Java maps an id it does not know to GMT
    silently; so does this (Hudi would write UTC partition paths for such a zone)."""
    text = name.strip()
    if text in ("UTC", "GMT") or text in _JODA_CONVERTED:
        target = _JODA_CONVERTED.get(text, "UTC")
        return UTC if target == "UTC" else JavaZone(target)
    custom = _CUSTOM_ID.fullmatch(text)
    if custom and int(custom.group(2)) <= 23 and int(custom.group(3) or 0) <= 59:
        ms = (int(custom.group(2)) * 60 + int(custom.group(3) or 0)) * 60_000
        return _fixed(-ms if custom.group(1) == "-" else ms)
    if text in _regions():
        try:
            _zoneinfo(text)
            return JavaZone(text)
        except ZoneInfoNotFoundError:  # pragma: no cover - listed but unreadable
            pass
    if text:
        warnings.warn(f"time zone {name!r} is not a Java time-zone id: Hudi's TimeZone.getTimeZone silently "
                      "uses GMT for it, and so does pyhudi; use a region (Europe/Paris) or GMT+hh:mm",
                      UserWarning, stacklevel=2)
    return UTC


# --------------------------------------------------------------------------- patterns

@dataclass(frozen=True)
class Token:
    letter: str  # "" for literal text
    count: int = 0
    text: str = ""

    @property
    def numeric(self) -> bool:
        """Joda's isNumericToken: whether the token parses digits (decides a year's maximum width)."""
        return self.letter in "yYdhHmsS" and self.letter != "" or (self.letter == "M" and self.count <= 2)


@functools.lru_cache(maxsize=256)
def compile_pattern(pattern: str, *, for_parsing: bool = False) -> tuple[Token, ...]:
    """The pattern's tokens; a letter this module does not implement is an InvalidConfigError."""
    tokens: list[Token] = []
    i, n = 0, len(pattern)
    allowed = _PARSE_LETTERS if for_parsing else _PRINT_LETTERS
    while i < n:
        c = pattern[i]
        if ("a" <= c <= "z") or ("A" <= c <= "Z"):
            j = i
            while j < n and pattern[j] == c:
                j += 1
            if c not in allowed or (for_parsing and c == "Z" and j - i > 2):
                use = "parsing input dates" if for_parsing else "formatting partition paths"
                raise InvalidConfigError(
                    f"date pattern {pattern!r}: letter {c!r} ({c * (j - i)}) is not supported by pyhudi for {use}; "
                    f"supported: {' '.join(sorted(allowed))}, quoted text ('T') and punctuation")
            tokens.append(Token(c, j - i))
            i = j
            continue
        literal, i = _literal(pattern, i)
        if tokens and tokens[-1].letter == "":
            tokens[-1] = Token("", 0, tokens[-1].text + literal)
        else:
            tokens.append(Token("", 0, literal))
    return tuple(tokens)


def _literal(pattern: str, i: int) -> tuple[str, int]:
    """One run of literal text: quoted (with '' for a quote) or a single non-letter character."""
    if pattern[i] != "'":
        return pattern[i], i + 1
    if pattern.startswith("''", i):
        return "'", i + 2
    out, j = [], i + 1
    while j < len(pattern):
        if pattern[j] == "'":
            if pattern.startswith("''", j):
                out.append("'")
                j += 2
                continue
            return "".join(out), j + 1
        out.append(pattern[j])
        j += 1
    return "".join(out), j  # Joda accepts an unterminated quote as text to the end


# --------------------------------------------------------------------------- printing

def format_instant(pattern: str, instant_ms: int, zone: JavaZone) -> str:
    """`new DateTime(instant_ms, zone).toString(DateTimeFormat.forPattern(pattern))` (ISO chronology)."""
    offset = zone.offset_ms(instant_ms)
    local = instant_ms + offset
    days, ms_of_day = divmod(local, DAY_MS)
    year, month, day = civil_from_days(days)
    values = {"y": year, "M": month, "d": day, "H": ms_of_day // 3_600_000,
              "m": ms_of_day // 60_000 % 60, "s": ms_of_day // 1000 % 60}
    out = []
    for tok in compile_pattern(pattern):
        c, n = tok.letter, tok.count
        if c == "":
            out.append(tok.text)
        elif c == "y":
            out.append(f"{year % 100 if year >= 0 else -year % 100:02d}" if n == 2 else _signed(year, n))
        elif c == "M" and n >= 3:
            out.append(_MONTHS[month - 1] if n >= 4 else _MONTHS[month - 1][:3])
        elif c in values:
            out.append(f"{values[c]:0{n}d}")
        elif c == "h":
            out.append(f"{(values['H'] % 12) or 12:0{n}d}")
        elif c == "S":
            out.append(str(ms_of_day % 1000 * 10 ** n // 1000).zfill(n))
        elif c == "a":
            out.append("AM" if values["H"] < 12 else "PM")
        elif c == "E":
            name = _DAYS[(days + 3) % 7]  # 1970-01-01 was a Thursday
            out.append(name if n >= 4 else name[:3])
        else:
            out.append(_zone_text(c, n, zone, offset, pattern))
    return "".join(out)


def _signed(value: int, width: int) -> str:
    return ("-" if value < 0 else "") + f"{abs(value):0{width}d}"


def _zone_text(c: str, n: int, zone: JavaZone, offset: int, pattern: str) -> str:
    if c == "Z" and n >= 3:
        return zone.id
    if c == "Z":
        sign = "-" if offset < 0 else "+"
        hours, minutes = abs(offset) // 3_600_000, abs(offset) // 60_000 % 60
        return f"{sign}{hours:02d}{':' if n == 2 else ''}{minutes:02d}"
    if zone.fixed_ms is None:
        raise InvalidConfigError(
            f"date pattern {pattern!r}: 'z' (zone name) in zone {zone.id} needs Java's locale name tables, "
            "which pyhudi does not reproduce; use Z/ZZ (offset) or ZZZ (zone id), or a UTC/GMT+hh:mm zone")
    if zone.id == "UTC":
        return "Coordinated Universal Time" if n >= 4 else "UTC"
    return zone.id


def check_printable(pattern: str, zone: JavaZone | None) -> None:
    """Refuse, before any row is written, a pattern this module cannot print in `zone`."""
    tokens = compile_pattern(pattern)
    if zone is not None and zone.fixed_ms is None and any(t.letter == "z" for t in tokens):
        _zone_text("z", 1, zone, 0, pattern)


# --------------------------------------------------------------------------- parsing

@dataclass(frozen=True)
class Parsed:
    instant_ms: int
    zone: JavaZone


def parse_first(patterns: tuple[str, ...], text: str, zone: JavaZone | None, default_zone: JavaZone) -> Parsed:
    """Joda's formatter built from several parsers (DateTimeFormatterBuilder.append(null, parsers)):
    the first pattern that consumes the whole text wins. `zone` is the formatter's zone (input time
    zone); without one the offset in the text (withOffsetParsed) or else the JVM default zone applies."""
    for pattern in patterns:
        fields = _parse_fields(compile_pattern(pattern, for_parsing=True), text)
        if fields is not None:
            return _resolve(fields, zone, default_zone, text)
    raise DateParseError(f"{text!r} matches none of the input date formats {', '.join(patterns)}")


def _parse_fields(tokens: tuple[Token, ...], text: str) -> dict[str, int] | None:
    pos, fields = 0, {}
    for k, tok in enumerate(tokens):
        following = tokens[k + 1] if k + 1 < len(tokens) else None
        got = _parse_token(tok, following, text, pos)
        if got is None:
            return None
        pos, name, value = got
        if name:
            fields[name] = value
    return fields if pos == len(text) else None


def _parse_token(tok: Token, following: Token | None, text: str, pos: int) -> tuple[int, str, int] | None:
    c, n = tok.letter, tok.count
    if c == "":
        end = pos + len(tok.text)
        return (end, "", 0) if text[pos:end].lower() == tok.text.lower() else None
    if c == "y" and n == 2:
        return _two_digit_year(text, pos, following is None or not following.numeric)
    if c == "y":
        width = n if following is not None and following.numeric else 9
        return _number(text, pos, width, "y", signed=True)
    if c == "M" and n >= 3:
        return _text(text, pos, [(m, i + 1) for i, m in enumerate(_MONTHS)], "M")
    if c == "a":
        return _text(text, pos, [("AM", 0), ("PM", 1)], "a")
    if c == "Z":
        return _offset(text, pos)
    if c == "S":
        got = _number(text, pos, n, "S", signed=False)
        if got is None:
            return None
        digits = got[0] - pos
        return got[0], "S", got[2] * 1000 // 10 ** digits  # Joda keeps millisecond precision
    return _number(text, pos, max(n, 2), c, signed=False)


def _number(text: str, pos: int, width: int, name: str, *, signed: bool) -> tuple[int, str, int] | None:
    sign, start = 1, pos
    if signed and pos < len(text) and text[pos] in "+-" and pos + 1 < len(text) and text[pos + 1].isdigit():
        sign, start = (-1 if text[pos] == "-" else 1), pos + 1
    end = start
    while end < len(text) and end - start < width and "0" <= text[end] <= "9":
        end += 1
    if end == start:
        return None
    return end, name, sign * int(text[start:end])


def _two_digit_year(text: str, pos: int, lenient: bool) -> tuple[int, str, int] | None:
    """Joda's TwoDigitYear with pivot (this year - 30); lenient (not followed by a number) takes a
    longer or signed number as a full year."""
    if lenient:
        full = _number(text, pos, 9, "y", signed=True)
        if full is not None and (full[0] - pos != 2 or text[pos] in "+-"):
            return full
    if len(text) - pos < 2 or not text[pos:pos + 2].isdigit():
        return None
    year = int(text[pos:pos + 2])
    low = datetime.now(timezone.utc).year - 30 - 50
    t = low % 100 if low >= 0 else 99 + ((low + 1) % 100)
    return pos + 2, "y", year + low + (100 if year < t else 0) - t


def _text(text: str, pos: int, names: list[tuple[str, int]], field: str) -> tuple[int, str, int] | None:
    options = [(full, v) for full, v in names] + [(full[:3], v) for full, v in names if len(full) > 3]
    for word, value in sorted(options, key=lambda o: -len(o[0])):
        if text[pos:pos + len(word)].lower() == word.lower():
            return pos + len(word), field, value
    return None


def _offset(text: str, pos: int) -> tuple[int, str, int] | None:
    """Joda's TimeZoneOffset parser: `Z`, or a sign, two-digit hours and optional [:]minutes."""
    if text[pos:pos + 1] in ("Z", "z"):
        return pos + 1, "Z", 0
    if text[pos:pos + 1] not in ("+", "-") or not text[pos + 1:pos + 3].isdigit() or len(text) < pos + 3:
        return None
    sign = -1 if text[pos] == "-" else 1
    hours, pos = int(text[pos + 1:pos + 3]), pos + 3
    if hours > 23:
        return None
    minutes = 0
    sep = text[pos:pos + 1] == ":"
    digits = text[pos + (1 if sep else 0):pos + (3 if sep else 2)]
    if len(digits) == 2 and digits.isdigit():
        minutes, pos = int(digits), pos + (3 if sep else 2)
        if minutes > 59:
            return None
    elif sep or (digits[:1].isdigit()):
        return None
    return pos, "Z", sign * (hours * 60 + minutes) * 60_000


def _resolve(fields: dict[str, int], zone: JavaZone | None, default_zone: JavaZone, text: str) -> Parsed:
    """Fields onto 1970-01-01T00:00 (largest first, strictly checked, as Joda's bucket sets them)."""
    year, month, day = fields.get("y", 1970), fields.get("M", 1), fields.get("d", 1)
    if not 1 <= month <= 12 or not 1 <= day <= _month_length(year, month):
        raise DateParseError(f"{text!r}: month {month} / day {day} out of range")
    if "H" in fields:
        hour = fields["H"]
        if hour > 23:
            raise DateParseError(f"{text!r}: hour {hour} out of range")
    else:
        clock = fields.get("h")
        if clock is not None and not 1 <= clock <= 12:
            raise DateParseError(f"{text!r}: clock hour {clock} out of range 1-12")
        hour = (clock or 12) % 12 + 12 * fields.get("a", 0)
    minute, second = fields.get("m", 0), fields.get("s", 0)
    if minute > 59 or second > 59:
        raise DateParseError(f"{text!r}: minute/second out of range")
    local = (_days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second) * 1000 + \
        fields.get("S", 0)
    if "Z" in fields:
        instant = local - fields["Z"]
        return Parsed(instant, zone or _fixed(fields["Z"]))
    effective = zone or default_zone
    return Parsed(local - effective.offset_from_local(local), effective)


def _month_length(year: int, month: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _days_from_civil(year: int, month: int, day: int) -> int:
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468
