"""Record keys and partition paths computed with Arrow compute, for input read straight from files.

`keygen.KeyGenerator` expresses keys as Spark columns; the direct parquet input
(writer/direct_input.py) never hands rows to Spark, so its executors compute the
same strings with Arrow. The index matches stored `_hoodie_record_key` values
byte for byte, so both must agree exactly, and with Hudi (`java_text`). They do
for strings, integers, booleans (Arrow's cast), timestamps (epoch microseconds),
dates (`yyyy-MM-dd` from Arrow's cast within years 0-9999, Java's
`LocalDate.toString` outside) and decimals (Arrow's decimal-to-string cast
follows the same rule as Java's `BigDecimal.toString`: scientific below an
adjusted exponent of -6, e.g. `1E-18`, `1.00E-8`; tests/unit/test_keys_text.py
checks it against `java_text.java_decimal`). Float/double (whose Java form
depends on the JVM), TIMESTAMP_NTZ, nested field paths and URL-encoded
partition paths are not supported here, nor TIMESTAMP partition fields
(TimestampBased/CustomKeyGenerator): `supports` says no and the write takes
Spark's row path.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import (
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructType,
    TimestampType,
)

from pyhudi.keygen.java_text import java_local_date, plain_date_days
from pyhudi.keygen.keygen import DEFAULT_PARTITION, EMPTY_KEY, NULL_KEY, KeyGenerator

_TEXT_TYPES = (StringType, ByteType, ShortType, IntegerType, LongType, BooleanType, DateType, TimestampType,
               DecimalType)


def supports(keygen: KeyGenerator, schema: StructType) -> bool:
    """Whether every key and partition field is a top-level column whose text form Arrow matches."""
    if keygen.urlencode and keygen.is_partitioned:
        return False
    if keygen.uses_timestamps:
        return False  # Joda-pattern partition paths: computed in Python on the Spark path (timestamp_keygen)
    fields = list(keygen.record_key_fields) + (list(keygen.partition_fields) if keygen.is_partitioned else [])
    names = set(schema.fieldNames())
    return all(name in names and _supported(schema[name].dataType) for name in fields)


def _supported(dtype: DataType) -> bool:
    return isinstance(dtype, _TEXT_TYPES) and not (isinstance(dtype, DecimalType) and dtype.scale < 0)


def _as_text(column: pa.ChunkedArray | pa.Array, dtype: DataType) -> pa.ChunkedArray | pa.Array:
    if isinstance(dtype, TimestampType):
        micros = pc.cast(pc.cast(column, pa.timestamp("us", tz="UTC")), pa.int64())
        return pc.cast(micros, pa.string())
    if isinstance(dtype, DateType):
        return _date_text(column)
    return pc.cast(column, pa.string())


def _date_text(column: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """`LocalDate.toString`: Arrow's `yyyy-MM-dd` within years 0-9999; outside, where Java adds a sign
    (`+10000-01-01`, `-0001-01-01`), day by day in Python (such dates are rare)."""
    days = pc.cast(column, pa.int32())
    lo, hi = plain_date_days()
    bounds = pc.min_max(days).as_py()
    if bounds["min"] is None or (bounds["min"] >= lo and bounds["max"] <= hi):
        return pc.cast(column, pa.string())
    return pa.array([None if d is None else java_local_date(d) for d in days.to_pylist()], pa.string())


def _missing(value: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """True where the text is null or empty (never null itself)."""
    return pc.fill_null(pc.or_kleene(pc.is_null(value), pc.equal(value, "")), True)


class ArrowKeys:
    """The Arrow twin of `KeyGenerator`'s record_key / bad_key / partition_path for one batch schema."""

    def __init__(self, keygen: KeyGenerator, schema: StructType) -> None:
        self.keygen = keygen
        self.types = {f.name: f.dataType for f in schema.fields}

    def _text(self, table: pa.Table, name: str) -> pa.ChunkedArray | pa.Array:
        return _as_text(table.column(name), self.types[name])

    def record_key(self, table: pa.Table) -> pa.ChunkedArray | pa.Array:
        fields = self.keygen.record_key_fields
        if not self.keygen.is_complex and len(fields) == 1:
            return self._text(table, fields[0])
        parts = []
        for name in fields:
            value = self._text(table, name)
            shown = pc.if_else(pc.is_null(value), NULL_KEY, pc.if_else(pc.equal(value, ""), EMPTY_KEY, value))
            parts.append(pc.binary_join_element_wise(f"{name}:", shown, ""))
        return pc.binary_join_element_wise(*parts, ",")

    def bad_key(self, table: pa.Table) -> pa.ChunkedArray | pa.Array:
        missing = [_missing(self._text(table, name)) for name in self.keygen.record_key_fields]
        if not self.keygen.is_complex and len(missing) == 1:
            return missing[0]
        out = missing[0]
        for m in missing[1:]:
            out = pc.and_(out, m)
        return out

    def partition_path(self, table: pa.Table) -> pa.ChunkedArray | pa.Array:
        n = table.num_rows
        if not self.keygen.is_partitioned:
            return pa.repeat(pa.scalar("", pa.string()), n)
        pieces = []
        for name in self.keygen.partition_fields:
            value = self._text(table, name)
            missing = _missing(value)
            if pc.any(missing).as_py():
                value = pc.if_else(missing, DEFAULT_PARTITION, value)
            if self.keygen.hive_style:
                value = pc.binary_join_element_wise(f"{name}=", value, "")
            pieces.append(value)
        return pieces[0] if len(pieces) == 1 else pc.binary_join_element_wise(*pieces, "/")
