"""Instant times: 17-digit millisecond timestamps that never repeat.

Two writes in the same millisecond (common in tests and fast streams) must
still get ordered, distinct instants, so the generator hands out
max(now, last + 1 ms, after + 1 ms) under a process-wide lock.
"""

from __future__ import annotations

import re
import threading
from datetime import datetime, timedelta, timezone, tzinfo

from pyhudi.errors import InvalidConfigError

_DIGITS = re.compile(r"^\d{14}(\d{3})?$")
# Hudi's "before everything" sentinel, used as the start of incremental reads.
INIT_INSTANT = "00000000000000"
MAX_INSTANT = "99999999999999999"

_lock = threading.Lock()
_last_ms = 0


def zone(local: bool) -> tzinfo:
    """The zone instants are written in: UTC, or this machine's local zone (Hudi's LOCAL)."""
    if not local:
        return timezone.utc
    return datetime.now().astimezone().tzinfo or timezone.utc


def instant_to_ms(instant: str, tz: tzinfo = timezone.utc) -> int:
    padded = instant if len(instant) == 17 else instant + "000"
    moment = datetime.strptime(padded[:14], "%Y%m%d%H%M%S").replace(tzinfo=tz)
    return int(moment.timestamp()) * 1000 + int(padded[14:17])


def ms_to_instant(ms: int, tz: tzinfo = timezone.utc) -> str:
    moment = datetime.fromtimestamp(ms // 1000, tz=tz)
    return moment.strftime("%Y%m%d%H%M%S") + f"{ms % 1000:03d}"


def new_instant_time(after: str | None = None, local: bool = False) -> str:
    """A fresh instant strictly greater than every one this process issued and than `after`."""
    global _last_ms
    tz = zone(local)
    with _lock:
        now_ms = int(datetime.now(timezone.utc).timestamp() * 1000)
        floor = _last_ms + 1
        if after is not None and is_valid_instant(after):
            floor = max(floor, instant_to_ms(after, tz) + 1)
        _last_ms = max(now_ms, floor)
        return ms_to_instant(_last_ms, tz)


def is_valid_instant(text: str) -> bool:
    return bool(_DIGITS.match(text))


def normalize_instant(text: str) -> str:
    """Accept what users type for `as.of.instant` and return a comparable 17-digit instant.

    Hudi accepts yyyyMMddHHmmss[SSS] and date-times such as `2024-04-18 17:32:13.674`;
    a 14-digit instant means the start of that second, a bare date its first millisecond.
    """
    raw = str(text).strip()
    digits = re.sub(r"[-: T.]", "", raw)
    if re.fullmatch(r"\d{8}", digits):
        digits += "000000000"
    if _DIGITS.match(digits):
        padded = digits if len(digits) == 17 else digits + "000"
        if set(padded) == {"0"} or set(padded[:14]) == {"9"}:
            return padded  # Hudi's "before everything" / "after everything" sentinels
        try:
            datetime.strptime(padded[:14], "%Y%m%d%H%M%S")
        except ValueError:
            pass
        else:
            return padded
    raise InvalidConfigError(
        f"instant {text!r} is not a valid instant time; use yyyyMMddHHmmssSSS (e.g. 20240418173213674) "
        "or 'yyyy-MM-dd HH:mm:ss[.SSS]'"
    )


def instant_to_datetime(instant: str, local: bool = False) -> datetime:
    tz = zone(local)
    return datetime.fromtimestamp(instant_to_ms(instant, tz) / 1000.0, tz=tz)


def instant_minus(instant: str, delta: timedelta, local: bool = False) -> str:
    tz = zone(local)
    return ms_to_instant(instant_to_ms(instant, tz) - int(delta.total_seconds() * 1000), tz)


def now_instant(local: bool = False) -> str:
    return ms_to_instant(int(datetime.now(timezone.utc).timestamp() * 1000), zone(local))
