"""Typed partition values and Spark's comparison semantics, for pruning that never drops a match.

A partition directory holds the *text* the key generator rendered for a value (engine/spark/keygen.py:
the value's Spark string cast, timestamps as epoch microseconds, `__HIVE_DEFAULT_PARTITION__` for
null and, for strings, the empty string). Pruning must decide what the row filter applied later
would decide for the rows inside, so the text is mapped back to the values that could have
produced it (`candidates`), and a filter value is compared with them as Spark compares the column
with `F.lit(value)` (`compare`). Whenever that mapping or Spark's coercion is not reproduced
exactly here, the answer is UNKNOWN and the directory is kept: the row filter decides.
"""

from __future__ import annotations

import calendar
import datetime as dt
import math
import re
import struct
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa

DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"


class _Unknown:
    """Marker: pyhudi cannot tell what Spark would answer, so pruning must keep the partition."""

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()

_INTEGER = re.compile(r"-?[0-9]+")
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_SPECIAL_FLOATS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_MIN_LITERAL_YEAR = 1900  # older datetimes: Spark rebases java.sql literals (Julian calendar); not modelled
_INTEGRAL_RANGE = {p: (-(2 ** (b - 1)), 2 ** (b - 1) - 1) for p, b in ((3, 8), (5, 16), (10, 32), (20, 64))}
_CANONICAL_INT = re.compile(r"-?(0|[1-9][0-9]*)")


@dataclass(frozen=True)
class Kind:
    """What pruning needs of a partition column's type (the Spark type its Avro type reads as)."""

    name: str  # string, integral, float, double, decimal, boolean, date, timestamp
    precision: int = 0
    scale: int = 0


def kind_of(dtype: pa.DataType | None) -> Kind | None:
    """The kind of a column of Arrow type `dtype` as Spark reads the same Avro type (io/schema.py maps
    Avro to both), or None (then pruning prunes nothing on that column). Avro's time-millis/micros
    are Spark ints/longs; timestamps without a time zone (Spark's TIMESTAMP_NTZ) are not modelled."""
    if dtype is None:
        return None
    if pa.types.is_integer(dtype) and pa.types.is_signed_integer(dtype):
        return Kind("integral", _ARROW_INTEGRAL[dtype.bit_width])
    if pa.types.is_time32(dtype) or pa.types.is_time64(dtype):
        return Kind("integral", _ARROW_INTEGRAL[dtype.bit_width])
    if pa.types.is_decimal(dtype):
        return Kind("decimal", dtype.precision, dtype.scale)
    if pa.types.is_timestamp(dtype):
        return Kind("timestamp") if dtype.tz is not None else None
    for test, name in ((pa.types.is_string, "string"), (pa.types.is_large_string, "string"),
                       (pa.types.is_float32, "float"), (pa.types.is_float64, "double"),
                       (pa.types.is_boolean, "boolean"), (pa.types.is_date32, "date")):
        if test(dtype):
            return Kind(name)
    return None


def kind_of_spark(dtype: Any) -> Kind | None:
    """`kind_of` for a Spark DataType, read by its type name so this module needs no pyspark (exact
    types only: TimestampNTZ, Char and Varchar are not modelled)."""
    if dtype is None or not hasattr(dtype, "typeName"):
        return None
    name = dtype.typeName()
    if name in _SPARK_INTEGRAL:
        return Kind("integral", _SPARK_INTEGRAL[name])
    if name == "decimal":
        return Kind("decimal", dtype.precision, dtype.scale)
    simple = {"string": "string", "float": "float", "double": "double", "boolean": "boolean", "date": "date",
              "timestamp": "timestamp"}
    return Kind(simple[name]) if name in simple else None


_ARROW_INTEGRAL = {8: 3, 16: 5, 32: 10, 64: 20}
_SPARK_INTEGRAL = {"byte": 3, "short": 5, "integer": 10, "long": 20}


# -- directory text -> the values that could have produced it ------------------------------------

def candidates(kind: Kind, text: str | None) -> list[Any] | None:
    """Every value of the column whose rendered partition text is `text` (None: the default
    partition); None when the text cannot be mapped back exactly."""
    if text is None:
        return [None, "", DEFAULT_PARTITION] if kind.name == "string" else [None]
    if kind.name == "string":
        return [text]
    parsed = _parse(kind, text)
    if parsed is UNKNOWN:
        return None
    return parsed if isinstance(parsed, list) else [parsed]


def _parse(kind: Kind, text: str) -> Any:
    if kind.name in ("integral", "timestamp"):
        return int(text) if _INTEGER.fullmatch(text) else UNKNOWN
    if kind.name == "boolean":
        return {"true": True, "false": False}.get(text, UNKNOWN)
    if kind.name == "date":
        return _parse_date(text)
    if kind.name == "decimal":
        return Decimal(text) if _NUMBER.fullmatch(text) else UNKNOWN
    if kind.name == "float":
        return _float32(text)
    if kind.name == "double":
        # Written when the column was a double, or a float/int/long before it was widened.
        narrow = _float32(text)
        return UNKNOWN if narrow is UNKNOWN else sorted({_double(text), narrow}, key=repr)
    return UNKNOWN


def _parse_date(text: str) -> Any:
    if not _DATE.fullmatch(text):
        return UNKNOWN
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        return UNKNOWN


def _double(text: str) -> float:
    return _SPECIAL_FLOATS[text] if text in _SPECIAL_FLOATS else float(text)


def _float32(text: str) -> Any:
    """The float32 nearest to the decimal `text` (what Spark reads back), or UNKNOWN when the
    double rounding of float() then float32 could differ from rounding the text directly."""
    if text in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[text]
    if not _NUMBER.fullmatch(text):
        return UNKNOWN
    d = float(text)
    try:
        f = _to_f32(d)
    except OverflowError:
        return UNKNOWN
    if f == d or Decimal(text) == Decimal(d):
        return f  # d is exact: one rounding only
    other = _f32_neighbour(f, d)
    if math.isinf(other):  # past the largest float32, rounding treats 2**128 as the next value
        other = math.copysign(2.0**128, other)
    if abs(Decimal(d) - Decimal(f)) == abs(Decimal(other) - Decimal(d)):
        return UNKNOWN  # d sits on a float32 tie (or at the range edge): the text may round elsewhere
    return f


def _to_f32(d: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", d))[0])


def _f32_neighbour(f: float, toward: float) -> float:
    """The float32 next to `f` on the side of `toward` (f is the nearest float32 to toward)."""
    bits = struct.unpack("<I", struct.pack("<f", f))[0]
    if f == 0:
        bits = (0x80000000 if toward < 0 else 0) | 1
    else:
        bits += 1 if abs(toward) > abs(f) else -1
    return float(struct.unpack("<f", struct.pack("<I", bits))[0])


# -- filter literals as Spark types them ---------------------------------------------------------

def literal(value: Any) -> tuple[str, Any]:
    """(kind name, comparable value) of `F.lit(value)`; ("null", None) for None; UNKNOWN kinds
    for anything whose Spark literal pyhudi does not model exactly."""
    if value is None:
        return "null", None
    if isinstance(value, bool):
        return "boolean", value
    if isinstance(value, int):
        return ("integral", value) if -(2**63) <= value < 2**63 else ("unknown", None)
    if isinstance(value, float):
        return "double", value
    if isinstance(value, Decimal):
        return ("decimal", value) if _decimal_shape(value) is not None else ("unknown", None)
    if isinstance(value, str):
        return "string", value
    if isinstance(value, dt.datetime):
        return _timestamp_literal(value)
    if isinstance(value, dt.date):
        return ("date", value) if value.year >= _MIN_LITERAL_YEAR else ("unknown", None)
    return "unknown", None


def equality_literal(kind: Kind, value: Any) -> tuple[str, Any]:
    """`literal(value)` for `=`, `!=`, `in`, `not in`: a string that is the canonical text of an
    integer in an integral column's range equals the same values whichever way Spark coerces the
    pair (string to number, or number to string), so it compares as that integer."""
    lit_kind, lit = literal(value)
    if kind.name == "integral" and lit_kind == "string" and _CANONICAL_INT.fullmatch(lit):
        low, high = _INTEGRAL_RANGE[kind.precision]
        if low <= int(lit) <= high:
            return "integral", int(lit)
    return lit_kind, lit


def _timestamp_literal(value: dt.datetime) -> tuple[str, Any]:
    """Epoch microseconds as PySpark converts a datetime literal (naive: the local time zone)."""
    if value.year < _MIN_LITERAL_YEAR:
        return "unknown", None
    seconds = calendar.timegm(value.utctimetuple()) if value.tzinfo else time.mktime(value.timetuple())
    return "timestamp", int(seconds) * 1_000_000 + value.microsecond


def _decimal_shape(value: Decimal) -> tuple[int, int] | None:
    """(precision, scale) of the BigDecimal Spark makes of `value`, None when unsupported."""
    if not value.is_finite():
        return None
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int)
    if exponent > 0:
        return None
    scale = -exponent
    precision = max(len(value.as_tuple().digits), scale)
    return (precision, scale) if precision <= 38 else None


# -- comparisons -----------------------------------------------------------------------------------

_NUMERIC = ("integral", "float", "double", "decimal")


def compare(kind: Kind, value: Any, lit_kind: str, lit: Any) -> Any:
    """Spark's `column <=> literal` ordering: -1, 0, 1; None when either side is null; UNKNOWN
    when Spark's coercion of this pair is not modelled."""
    if lit_kind == "unknown":
        return UNKNOWN
    if value is None or lit_kind == "null":
        return None
    if kind.name in _NUMERIC and lit_kind in ("integral", "double", "decimal"):
        return _compare_numbers(kind, value, lit_kind, lit)
    if kind.name != lit_kind or kind.name not in ("string", "boolean", "date", "timestamp"):
        return UNKNOWN
    return (value > lit) - (value < lit)


def _compare_numbers(kind: Kind, value: Any, lit_kind: str, lit: Any) -> Any:
    floating = kind.name in ("float", "double") or lit_kind == "double"
    decimal = kind.name == "decimal" or lit_kind == "decimal"
    if floating and decimal:
        return UNKNOWN  # Spark's decimal -> double conversion is not always correctly rounded
    if floating:
        return _order_doubles(float(value), float(lit))
    if decimal and not _fits_common_decimal(kind, lit_kind, lit):
        return UNKNOWN
    return (value > lit) - (value < lit)


def _order_doubles(a: float, b: float) -> int:
    """Spark orders NaN above every number and equal to itself; -0.0 equals 0.0."""
    a_nan, b_nan = math.isnan(a), math.isnan(b)
    if a_nan or b_nan:
        return int(a_nan) - int(b_nan)
    return (a > b) - (a < b)


def _fits_common_decimal(kind: Kind, lit_kind: str, lit: Any) -> bool:
    """Whether Spark's wider decimal type of the pair keeps every digit (no precision loss)."""
    p1, s1 = (kind.precision, kind.scale) if kind.name == "decimal" else (20, 0)
    shape = _decimal_shape(lit) if lit_kind == "decimal" else (20, 0)
    if shape is None:
        return False
    p2, s2 = shape
    return max(p1 - s1, p2 - s2) + max(s1, s2) <= 38
