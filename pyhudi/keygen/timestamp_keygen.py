"""Partition paths of Hudi's TimestampBasedKeyGenerator (and the TIMESTAMP parts of CustomKeyGenerator).

Hudi 0.14's `TimestampBasedAvroKeyGenerator.getPartitionPath` takes the partition field's Avro value and:

* a number (int/long, float/double truncated, decimal via `BigDecimal.longValue`, a date as its epoch
  day, a timestamp as its Avro long of epoch microseconds) is a count of the configured unit
  (UNIX_TIMESTAMP: seconds, EPOCHMILLISECONDS, EPOCHMICROSECONDS, SCALAR: `timestamp.scalar.time.unit`),
  converted to milliseconds with `TimeUnit.convert` (truncating, saturating);
* a string (DATE_STRING / MIXED) is parsed with the input format list (Joda patterns split by the
  delimiter regex), in the input zone, or else the offset in the text, or else the JVM default zone;
* null becomes 1 of the unit (numbers) or the instant 1 ms after the epoch printed with the first input
  format (strings) - never `__HIVE_DEFAULT_PARTITION__`;

then prints the instant with the output format (Joda) in the output zone (for a parsed string without an
output zone: the zone the parse produced; for a number: the JVM default zone), escapes it with Hive's
`escapePathName` when URL-encoding is on, and prefixes `field=` when hive-style.

pyhudi computes this in Python (`partition_text`) and, on the Spark path, in a pandas UDF over the value's
exact text (`pyhudi.engine.spark.keygen.spark_partition_column`): correctness over speed, and partition
values repeat, so each batch formats each distinct value once. The Arrow direct-input path declines these key generators.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pyhudi.errors import InvalidConfigError, InvalidRecordError
from pyhudi.keygen.java_date_format import (
    UTC,
    DateParseError,
    JavaZone,
    check_printable,
    compile_pattern,
    format_instant,
    java_zone,
    parse_first,
)
from pyhudi.keygen.path_escape import escape_path_name

PREFIX = "hoodie.keygen.timebased."
OLD_PREFIX = "hoodie.deltastreamer.keygen.timebased."
TIMESTAMP_TYPES = ("UNIX_TIMESTAMP", "DATE_STRING", "MIXED", "EPOCHMILLISECONDS", "EPOCHMICROSECONDS", "SCALAR")
_UNIT_MS = {"NANOSECONDS": -1_000_000, "MICROSECONDS": -1000, "MILLISECONDS": 1, "SECONDS": 1000,
            "MINUTES": 60_000, "HOURS": 3_600_000, "DAYS": 86_400_000}  # negative: divide
_LONG_MIN, _LONG_MAX = -(2 ** 63), 2 ** 63 - 1


@dataclass(frozen=True)
class TimestampSettings:
    """The `hoodie.keygen.timebased.*` options of one table, validated."""

    timestamp_type: str
    output_format: str
    input_formats: tuple[str, ...] = ()
    input_format_raw: str = ""
    input_zone: str | None = None
    output_zone: str | None = None
    scalar_unit: str = "SECONDS"
    delimiter: str = ","

    @property
    def unit_ms(self) -> int | None:
        """Milliseconds per unit (negative: units per millisecond); None for string types."""
        unit = {"UNIX_TIMESTAMP": "SECONDS", "EPOCHMILLISECONDS": "MILLISECONDS",
                "EPOCHMICROSECONDS": "MICROSECONDS", "SCALAR": self.scalar_unit}.get(self.timestamp_type)
        return None if unit is None else _UNIT_MS[unit]

    @property
    def parses_strings(self) -> bool:
        return self.timestamp_type in ("DATE_STRING", "MIXED")

    def zones(self) -> tuple[JavaZone | None, JavaZone | None]:
        return (java_zone(self.input_zone) if self.input_zone else None,
                java_zone(self.output_zone) if self.output_zone else None)


def lookup(values: Mapping[str, str], name: str) -> str | None:
    """A timebased option by its current or its old (`hoodie.deltastreamer.keygen.timebased.*`) key."""
    for key in (PREFIX + name, OLD_PREFIX + name):
        if key in values and values[key] is not None:
            return str(values[key])
    return None


def settings_from(values: Mapping[str, str], where: str = "the write options") -> TimestampSettings:
    """Hudi's HoodieDateTimeParser/TimestampBasedAvroKeyGenerator option reading, refusing what it would
    refuse (missing type or output format; DATE_STRING/MIXED without input format; unknown unit)."""
    ts_type = (lookup(values, "timestamp.type") or "").strip()
    if ts_type not in TIMESTAMP_TYPES:
        raise InvalidConfigError(
            f"{PREFIX}timestamp.type={ts_type or '(unset)'} in {where}: TimestampBasedKeyGenerator needs one of "
            f"{', '.join(TIMESTAMP_TYPES)} (Hudi requires it too; a CustomKeyGenerator table does not store it)")
    output = lookup(values, "output.dateformat")
    if output is None:
        raise InvalidConfigError(f"{PREFIX}output.dateformat is required by TimestampBasedKeyGenerator "
                                 f"({where}); set it, e.g. yyyy/MM/dd")
    unit = (lookup(values, "timestamp.scalar.time.unit") or "SECONDS").strip().upper()
    if unit not in _UNIT_MS:
        raise InvalidConfigError(f"{PREFIX}timestamp.scalar.time.unit={unit!r} is not a TimeUnit; use one of "
                                 f"{', '.join(_UNIT_MS)}")
    raw_inputs = lookup(values, "input.dateformat") or ""
    formats: tuple[str, ...] = ()
    if ts_type in ("DATE_STRING", "MIXED"):
        if not raw_inputs:
            raise InvalidConfigError(f"{PREFIX}input.dateformat is required when {PREFIX}timestamp.type={ts_type}; "
                                     "set the Joda pattern(s) of the input strings")
        formats = tuple(f.strip() for f in _java_split(raw_inputs, _delimiter(values)))
        for pattern in formats:
            compile_pattern(pattern, for_parsing=True)
    if "timezone" in {k[len(p):] for p in (PREFIX, OLD_PREFIX) for k in values if k.startswith(p)}:
        both = lookup(values, "timezone") or ""
        in_zone, out_zone = both, both
    else:
        in_zone, out_zone = lookup(values, "input.timezone") or "", lookup(values, "output.timezone") or ""
    settings = TimestampSettings(ts_type, output, formats, raw_inputs, in_zone.strip() or None,
                                 out_zone.strip() or None, unit, _delimiter(values))
    compile_pattern(output)
    check_printable(output, settings.zones()[1])
    return settings


def _delimiter(values: Mapping[str, str]) -> str:
    text = (lookup(values, "input.dateformat.list.delimiter.regex") or "").strip()
    return text or ","


def _java_split(text: str, regex: str) -> list[str]:
    """`String.split(regex)`: trailing empty strings dropped."""
    try:
        parts = re.split(regex, text)
    except re.error as exc:
        raise InvalidConfigError(f"{PREFIX}input.dateformat.list.delimiter.regex={regex!r} is not a valid "
                                 f"regular expression: {exc}") from exc
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def check_arrow_field_type(settings: TimestampSettings, name: str, dtype: pa.DataType) -> None:
    """Refuse an Arrow column type Hudi's generator fails on for every row, before anything is written
    (the Spark engine's `check_field_type` does the same for Spark types)."""
    if pa.types.is_dictionary(dtype):
        dtype = dtype.value_type
    t = pa.types
    is_string = t.is_string(dtype) or t.is_large_string(dtype)
    numeric = t.is_integer(dtype) or t.is_floating(dtype) or t.is_decimal(dtype) or t.is_date(dtype) or \
        t.is_timestamp(dtype)
    check_kind(settings, name, str(dtype), is_string, numeric)


def check_kind(settings: TimestampSettings, name: str, shown: str, is_string: bool, numeric: bool) -> None:
    """The type check shared by the Arrow and Spark callers: `shown` names the type in the error."""
    if is_string:
        if not settings.parses_strings:
            raise InvalidRecordError(
                f"partition field {name!r} is a string but {PREFIX}timestamp.type={settings.timestamp_type} "
                "expects a number; use DATE_STRING (with input.dateformat) or a numeric column")
        return
    if not numeric:
        raise InvalidRecordError(f"partition field {name!r} of type {shown} cannot be used by "
                                 "TimestampBasedKeyGenerator; use a number, date, timestamp or string column")
    if settings.parses_strings:
        raise InvalidRecordError(
            f"partition field {name!r} is {shown} but {PREFIX}timestamp.type="
            f"{settings.timestamp_type} parses strings (Hudi fails: no time unit); use UNIX_TIMESTAMP, "
            "EPOCHMILLISECONDS, EPOCHMICROSECONDS or SCALAR")


# --------------------------------------------------------------------------- values -> partition text

def _to_millis(value: int, unit_ms: int) -> int:
    """`TimeUnit.MILLISECONDS.convert(value, unit)`: truncating division, saturating multiplication."""
    if unit_ms < 0:
        quotient = abs(value) // -unit_ms
        return quotient if value >= 0 else -quotient
    return max(_LONG_MIN, min(_LONG_MAX, value * unit_ms))


def java_long(text: str, kind: str) -> int:
    """The Java `long` Hudi takes from a value given as its exact text: `(long) d` for doubles, wrapping
    `BigDecimal.longValue()` for decimals, the number itself otherwise."""
    if kind == "double":
        d = float(text)
        if d != d:
            return 0
        if d in (float("inf"), float("-inf")):
            return _LONG_MAX if d > 0 else _LONG_MIN
        return max(_LONG_MIN, min(_LONG_MAX, int(d)))
    if kind == "decimal":
        try:
            whole = int(Decimal(text))  # truncates toward zero, like longValue
        except InvalidOperation as exc:
            raise InvalidRecordError(f"partition value {text!r} is not a decimal") from exc
        return (whole + 2 ** 63) % 2 ** 64 - 2 ** 63
    return int(text)


@dataclass(frozen=True)
class PartitionFormatter:
    """One partition field's formatting: the settings plus what the writer adds (zone, encoding, prefix)."""

    settings: TimestampSettings
    field: str
    hive_style: bool = False
    urlencode: bool = False
    default_zone: str = "UTC"

    def text(self, value: str | None, kind: str) -> str:
        """The partition path piece for one value given as its exact text (`kind`: string, long, double,
        decimal); None is a null value."""
        s = self.settings
        in_zone, out_zone = s.zones()
        default = java_zone(self.default_zone)
        if s.parses_strings:
            if value is None:
                value = format_instant(self._first_format(), 1, in_zone or out_zone or UTC)
            try:
                parsed = parse_first(s.input_formats, value, in_zone, default)
            except DateParseError as exc:
                raise InvalidRecordError(
                    f"Unable to parse input partition field {self.field!r}: {value!r} ({exc}); Hudi's "
                    "TimestampBasedKeyGenerator fails the write too. Fix the value or "
                    f"{PREFIX}input.dateformat") from exc
            instant, zone = parsed.instant_ms, out_zone or parsed.zone
        else:
            number = 1 if value is None else java_long(value, kind)
            instant, zone = _to_millis(number, s.unit_ms or 1), out_zone or default
        path = format_instant(s.output_format, instant, zone)
        if self.urlencode:
            path = escape_path_name(path)
        return f"{self.field}={path}" if self.hive_style else path

    def _first_format(self) -> str:
        """Hudi prints the null default with the first input format, split but not trimmed."""
        parts = _java_split(self.settings.input_format_raw, self.settings.delimiter)
        return parts[0] if parts else self.settings.input_formats[0]

    def batch(self) -> Callable[[Any, str], Any]:
        """A function over a pandas Series of texts, formatting each distinct value once."""
        def run(series: Any, kind: str) -> Any:
            cache: dict[Any, str] = {}

            def one(v: Any) -> str:
                key = None if v is None or v != v else str(v)
                if key not in cache:
                    cache[key] = self.text(key, kind)
                return cache[key]
            return series.map(one)
        return run


# --------------------------------------------------------------------------- Arrow

def arrow_value_text(column: pa.Array | pa.ChunkedArray) -> tuple[pa.Array | pa.ChunkedArray, str]:
    """`value_text` for an Arrow column: the value's exact text and its kind."""
    dtype = column.type
    t = pa.types
    if t.is_dictionary(dtype):
        column, dtype = column.cast(dtype.value_type), dtype.value_type
    if t.is_string(dtype) or t.is_large_string(dtype):
        return column, "string"
    if t.is_floating(dtype):
        return pc.cast(pc.cast(column, pa.float64()), pa.string()), "double"
    if t.is_decimal(dtype):
        return pc.cast(column, pa.string()), "decimal"
    if t.is_date(dtype):
        return pc.cast(pc.cast(pc.cast(column, pa.date32()), pa.int32()), pa.string()), "long"
    if t.is_timestamp(dtype):
        micros = pc.cast(column.cast(pa.timestamp("us", tz=dtype.tz), safe=False), pa.int64())
        return pc.cast(micros, pa.string()), "long"  # epoch micros (a naive one: its wall clock as UTC)
    return pc.cast(pc.cast(column, pa.int64()), pa.string()), "long"


def arrow_partition_column(formatter: PartitionFormatter, column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The partition path piece per row, formatting each distinct value once (values repeat)."""
    text, kind = arrow_value_text(column)
    encoded = pc.dictionary_encode(text)
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks() if encoded.num_chunks else pa.array([], pa.string()).dictionary_encode()
    dictionary = encoded.dictionary.to_pylist()
    texts = [formatter.text(v, kind) for v in dictionary]
    indices = encoded.indices
    if indices.null_count:  # a null value formats as Hudi's default (1 of the unit, or instant 1 ms)
        texts.append(formatter.text(None, kind))
        indices = pc.fill_null(indices, len(dictionary))
    return pa.array(texts, pa.string()).take(indices)
