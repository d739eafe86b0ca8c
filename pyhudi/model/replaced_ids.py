"""A replacecommit's replaced file ids (`partitionToReplaceFileIds`), looked up one partition at a time.

Why: a clustering of the whole table names every partition, and views, cleans and conflict checks of one
partition ask only for that partition's ids. Decoding the section costs about 0.2 us per partition it
names; a lookup costs a byte search.

How the lookup is exact: it is used only on a section without any backslash, so no string in it holds an
escaped character and every quote opens or closes a string (quotes alternate). Then the section ends at
the first `}` preceded by an even number of quotes, a partition's key is the partition's UTF-8 bytes in
quotes at an opening quote followed by `:`, and its value is a list of plain strings or null. Anything
else (a backslash, a nested object, a value of another shape) decodes the section with `json`, which
also reports what is not JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import numpy as np

from pyhudi.errors import CorruptFileError

KEY = "partitionToReplaceFileIds"
_NEEDLE = b'"' + KEY.encode() + b'"'
_SECTION = re.compile(rb'"' + KEY.encode() + rb'"\s*:\s*\{')
_PLAIN_STRING = rb'"[^"\\]*"'
_LIST = re.compile(rb'\s*:\s*(\[\s*(?:' + _PLAIN_STRING + rb'\s*(?:,\s*' + _PLAIN_STRING + rb'\s*)*)?\]|null)')
_QUOTE, _OPEN, _CLOSE = 0x22, 0x7B, 0x7D


class ReplacedIds:
    """partition -> replaced file ids of one replacecommit: decoded (`raw`), or looked up in place."""

    def __init__(self, raw: dict[str, Any] | None = None, data: bytes = b"", start: int = 0, end: int = 0,
                 quotes: Any = None) -> None:
        self._raw = raw
        self._data, self._start, self._end, self._quotes = data, start, end, quotes

    @classmethod
    def locate(cls, data: bytes, tail: bool = False) -> ReplacedIds | None:
        """The top-level section in `data` (a whole commit file, or with `tail` its last bytes), or None
        when it is not there or not readable (callers then parse the whole commit). Searched from the
        end, as `commit_metadata.top_level_value`: only the top-level key has an object value."""
        pos = data.rfind(_NEEDLE)
        while pos >= 0:
            if (pos > 0 and data[pos - 1] != 0x5C) or (pos == 0 and not tail):
                m = _SECTION.match(data, pos)
                if m is not None:
                    found = cls._in_place(data, m.end() - 1) or cls._decoded(data, m.end() - 1)
                    if found is not None:
                        return found
            pos = data.rfind(_NEEDLE, 0, pos)
        return None

    @classmethod
    def _in_place(cls, data: bytes, start: int) -> ReplacedIds | None:
        seg = np.frombuffer(data, dtype=np.uint8, offset=start)
        quotes = np.flatnonzero(seg == _QUOTE)
        closes = np.flatnonzero(seg == _CLOSE)
        outside = closes[np.searchsorted(quotes, closes) % 2 == 0]
        if not len(outside):
            return None
        end = int(outside[0])
        opens = np.flatnonzero(seg[:end] == _OPEN)
        if int((np.searchsorted(quotes, opens) % 2 == 0).sum()) != 1 or b"\\" in data[start:start + end]:
            return None  # a nested object or an escape: decode instead
        return cls(None, data, start, start + end, quotes[quotes < end])

    @classmethod
    def _decoded(cls, data: bytes, start: int) -> ReplacedIds | None:
        try:
            value = json.JSONDecoder().raw_decode(data[start:].decode("utf-8"))[0]
        except (UnicodeDecodeError, ValueError):
            return None
        return cls(value) if isinstance(value, dict) else None

    def get(self, partition: str) -> list[str]:
        if self._raw is None:
            found = self._lookup(partition)
            if found is not None:
                return [str(f) for f in found]
            self._raw = self._decode_all()
        return [str(f) for f in self._raw.get(partition) or []]

    def _lookup(self, partition: str) -> list[Any] | None:
        """The partition's ids found in place ([] when it is not named), None when only a decode can say."""
        try:
            name = partition.encode("utf-8")
        except UnicodeEncodeError:
            return None
        if b'"' in name or b"\\" in name or any(c < 0x20 for c in name):
            return []  # JSON escapes these, and this section holds no escape: not named here
        key = b'"' + name + b'"'
        value: list[Any] = []
        at = self._data.find(key, self._start, self._end)
        while at >= 0:
            k = int(np.searchsorted(self._quotes, at - self._start))
            if k < len(self._quotes) and self._quotes[k] == at - self._start and k % 2 == 0:
                m = _LIST.match(self._data, at + len(key), self._end)
                if m is None:
                    if self._data[at + len(key):self._end].lstrip()[:1] == b":":
                        return None  # a key whose value has another shape
                else:
                    value = json.loads(m.group(1)) or []  # the last of duplicate keys wins, as in a decode
            at = self._data.find(key, at + 1, self._end)
        return value

    def _decode_all(self) -> dict[str, Any]:
        if self._raw is None:
            try:
                value = json.loads(self._data[self._start:self._end + 1])
            except ValueError as exc:
                raise CorruptFileError(f"a replacecommit's {KEY} is not valid JSON ({exc}); restore the file "
                                       "from a backup, or roll back the instant") from exc
            self._raw = value if isinstance(value, dict) else {}
        return self._raw

    def items(self) -> Iterator[tuple[str, list[str]]]:
        return ((str(p), [str(f) for f in fids or []]) for p, fids in self._decode_all().items())
