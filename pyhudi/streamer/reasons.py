"""Why a landing record was malformed, in words a pipeline owner can act on.

Spark's PERMISSIVE readers only say *that* a JSON line or CSV row did not fit the schema (they put the
raw text in the corrupt-record column). These pure functions re-examine that text against the schema
to name the first problem: "malformed JSON: ...", "expected 5 fields, found 4", "field fare: "abc" is
not a double". They run only on records Spark already rejected, so an imperfect guess can never turn a
good record bad; when nothing specific is found the reason says the record does not fit the schema.
No Spark import: the unit tests exercise them directly, and executors call them through a UDF.
"""

from __future__ import annotations

import csv
import datetime
import json
import re
from collections.abc import Sequence
from typing import Any

Field = tuple[str, str]  # (column name, Spark simpleString type)

_INT_BITS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64}
_FLOATS = ("float", "double")
_NON_FINITE = {"nan", "infinity", "-infinity", "+infinity", "inf", "-inf", "+inf"}
_TIMES = ("date", "timestamp", "timestamp_ntz")
_INT_TEXT = re.compile(r"[+-]?\d+")


def truncate(text: str | None, limit: int = 200) -> str:
    """`text` cut to `limit` characters, saying how much was left out."""
    if text is None:
        return ""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} more characters)"


def classify(fmt: str, raw: str | None, fields: Sequence[Field]) -> str | None:
    """The reason a `fmt` ("json"/"csv") record Spark could not read was rejected; None without text."""
    if raw is None:
        return None
    return json_reason(raw, fields) if fmt == "json" else csv_reason(raw, fields)


def json_reason(line: str, fields: Sequence[Field]) -> str:
    try:
        value = json.loads(line)
    except ValueError as exc:
        detail = str(exc)
        if isinstance(exc, json.JSONDecodeError):  # "Unterminated string starting at" + column
            detail = f"{exc.msg}{'' if exc.msg.endswith(' at') else ' at'} column {exc.colno}"
        return f"malformed JSON: {detail}"
    if not isinstance(value, dict):
        return f"not a JSON object but a JSON {_json_kind(value)}"
    problems = [(name, _json_value_problem(value[name], dtype)) for name, dtype in fields
                if value.get(name) is not None]
    return _first_problem(problems, "record")


def csv_reason(line: str, fields: Sequence[Field], sep: str = ",", quote: str = '"') -> str:
    try:
        rows = list(csv.reader([line], delimiter=sep, quotechar=quote, strict=True))
    except csv.Error as exc:
        return f"malformed CSV: {exc}"
    tokens = rows[0] if rows else []
    if len(tokens) != len(fields):
        return f"expected {len(fields)} fields, found {len(tokens)}"
    problems = [(name, _text_problem(token, dtype)) for (name, dtype), token in zip(fields, tokens) if token != ""]
    return _first_problem(problems, "row")


def _first_problem(problems: list[tuple[str, tuple[bool, str] | None]], noun: str) -> str:
    """Definite problems (a string where a number belongs) before doubtful ones (an unusual date format)."""
    found = sorted(((p, name) for name, p in problems if p is not None), key=lambda item: not item[0][0])
    if not found:
        return f"{noun} does not fit the schema"
    (_, text), name = found[0]
    return f"field {name}: {text}"


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    kinds: dict[type, str] = {str: "string", list: "array", dict: "object"}
    return kinds.get(type(value), type(value).__name__)


def _json_value_problem(value: Any, dtype: str) -> tuple[bool, str] | None:
    shown = truncate(json.dumps(value), 60)
    kind = _json_kind(value)
    if dtype in _INT_BITS:
        if kind != "number" or not isinstance(value, int):
            return True, f"{shown} is not an integer ({dtype})"
        return _int_range_problem(value, dtype)
    if dtype in _FLOATS or dtype.startswith("decimal"):
        if kind == "number" or (isinstance(value, str) and value.lower() in _NON_FINITE and dtype in _FLOATS):
            return None
        return True, f"{shown} is not a number ({dtype})"
    if dtype == "boolean":
        return None if kind == "boolean" else (True, f"{shown} is not true or false")
    if dtype.startswith(("struct", "map")):
        return None if kind == "object" else (True, f"{shown} is not a JSON object ({dtype})")
    if dtype.startswith("array"):
        return None if kind == "array" else (True, f"{shown} is not a JSON array ({dtype})")
    if dtype in _TIMES:
        if kind not in ("string", "number"):
            return True, f"{shown} is not a {dtype}"
        return _time_problem(value, dtype) if isinstance(value, str) else None
    return None  # string columns take any JSON value


def _text_problem(token: str, dtype: str) -> tuple[bool, str] | None:
    shown = truncate(repr(token), 60)
    if dtype in _INT_BITS:
        if not _INT_TEXT.fullmatch(token):
            return True, f"cannot read {shown} as {dtype}"
        return _int_range_problem(int(token), dtype)
    if dtype in _FLOATS or dtype.startswith("decimal"):
        try:
            float(token)
        except ValueError:
            return True, f"cannot read {shown} as {dtype}"
        return None
    if dtype == "boolean":
        return None if token.lower() in ("true", "false") else (True, f"cannot read {shown} as boolean")
    if dtype in _TIMES:
        return _time_problem(token, dtype)
    return None


def _int_range_problem(value: int, dtype: str) -> tuple[bool, str] | None:
    bits = _INT_BITS[dtype]
    if -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        return None
    return True, f"{value} does not fit {dtype}"


def _time_problem(text: str, dtype: str) -> tuple[bool, str] | None:
    try:
        (datetime.date if dtype == "date" else datetime.datetime).fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return False, f"cannot read {truncate(repr(text), 60)} as {dtype}"
    return None
