"""Record keys and partition paths computed with Arrow compute: the in-process write's key generator, and
the Spark path's for input read straight from parquet files (writer/direct_input.py).

`keygen.KeyGenerator` expresses keys as Spark columns; here the same strings come from Arrow arrays. The
index matches stored `_hoodie_record_key` values byte for byte, so both must agree exactly, and with Hudi
(`java_text`): strings, integers, booleans (Arrow's cast), timestamps (epoch microseconds; a naive one,
Spark's TIMESTAMP_NTZ, as its wall clock read as UTC, the Avro local-timestamp-micros long), dates
(`yyyy-MM-dd` from Arrow's cast within years 0-9999, Java's `LocalDate.toString` outside) and decimals
(Arrow's decimal-to-string cast follows Java's `BigDecimal.toString`: scientific below an adjusted exponent
of -6, e.g. `1E-18`; tests/unit/test_keys_text.py checks it). Float/double keys print as Java's
`Double.toString`/`Float.toString` (shortest round-trip digits, JDK 19+; `java_text.java_double`), nested
fields `a.b` are read through their structs, URL-encoding is Hive's `escapePathName`, and TIMESTAMP
partition fields (TimestampBased/CustomKeyGenerator) format each distinct value once in Python
(`timestamp_keygen`), with UTC as the zone a JVM's default would be.

`supports` keeps the Spark direct-input path to the types whose text Spark's reading gives unchanged.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

from pyhudi.errors import InvalidRecordError
from pyhudi.keygen import timestamp_keygen as TS
from pyhudi.keygen.java_text import java_double, java_local_date, plain_date_days
from pyhudi.keygen.path_escape import ESCAPED
from pyhudi.keygen.spec import DEFAULT_PARTITION, EMPTY_KEY, NULL_KEY, KeySpec

Column: TypeAlias = Any  # pa.ChunkedArray | pa.Array


def supports(keygen: KeySpec, schema: pa.Schema) -> bool:
    """Whether the Spark direct-input path may compute these keys with Arrow: top-level columns whose text
    form Arrow matches without the in-process path's extras (no URL-encoding, timestamp key generators or
    floating-point keys)."""
    if keygen.urlencode and keygen.is_partitioned:
        return False
    if keygen.uses_timestamps:
        return False  # Joda-pattern partition paths: computed in Python on the Spark path (timestamp_keygen)
    names = set(schema.names)
    return all(name in names and _direct_text_type(schema.field(name).type)
               for _, name in keygen.key_and_partition_fields())


def _direct_text_type(dtype: pa.DataType) -> bool:
    t = pa.types
    return (t.is_string(dtype) or t.is_integer(dtype) or t.is_boolean(dtype) or t.is_date32(dtype)
            or (t.is_timestamp(dtype) and dtype.tz is not None) or (t.is_decimal(dtype) and dtype.scale >= 0))


def field_type(schema: pa.Schema, dotted: str) -> pa.DataType | None:
    """The type of a (possibly nested, `a.b`) field, or None when the schema has no such field."""
    current: pa.DataType | pa.Schema = schema
    for part in dotted.split("."):
        if isinstance(current, pa.Schema):
            if part not in current.names:
                return None
            current = current.field(part).type
        elif pa.types.is_struct(current) and current.get_field_index(part) >= 0:
            current = current.field(part).type
        else:
            return None
    return current  # type: ignore[return-value]


def check_fields(keygen: KeySpec, schema: pa.Schema, *, need_partition: bool = True) -> None:
    """`KeyGenerator.check_columns` + `check_types` for an Arrow schema: fail before anything is written
    when a key or partition field is absent or cannot be rendered as text."""
    if not keygen.record_key_fields:
        raise InvalidRecordError(
            "no record key field: set hoodie.datasource.write.recordkey.field to the column(s) that "
            "identify a record")
    timestamp_fields = {f for f, t in zip(keygen.partition_fields, keygen.partition_types) if t == "TIMESTAMP"}
    for role, name in keygen.key_and_partition_fields(need_partition):
        dtype = field_type(schema, name)
        if dtype is None:
            raise InvalidRecordError(
                f"{role} field {name!r} is not a column of the batch (columns: {', '.join(schema.names)}); fix "
                f"hoodie.datasource.write.{'recordkey' if role == 'record key' else 'partitionpath'}.field or "
                "the data")
        if role == "partition path" and name in timestamp_fields and keygen.timestamp is not None:
            TS.check_arrow_field_type(keygen.timestamp, name, dtype)
        else:
            _check_text_type(name, dtype)


def _check_text_type(name: str, dtype: pa.DataType) -> None:
    if pa.types.is_dictionary(dtype):
        dtype = dtype.value_type
    t = pa.types
    if t.is_decimal(dtype) and dtype.scale < 0:
        raise InvalidRecordError(
            f"field {name!r} of type {dtype} (negative scale) cannot be part of a record key or partition path: "
            "Hudi prints it as BigDecimal.toString (e.g. 1E+3), which pyhudi does not reproduce; cast it to a "
            "decimal with a scale >= 0")
    if not (t.is_string(dtype) or t.is_large_string(dtype) or t.is_integer(dtype) or t.is_boolean(dtype)
            or t.is_date(dtype) or t.is_timestamp(dtype) or t.is_decimal(dtype) or t.is_floating(dtype)
            or t.is_null(dtype)) or t.is_float16(dtype):
        raise InvalidRecordError(
            f"field {name!r} of type {dtype} cannot be part of a record key or partition path; use a scalar "
            "column (string, integer, boolean, date, timestamp, decimal, float/double)")


def _as_text(column: Column) -> Column:
    """The value's text as Hudi prints it (nulls stay null)."""
    dtype = column.type
    t = pa.types
    if t.is_dictionary(dtype):
        column = column.cast(dtype.value_type)
        dtype = dtype.value_type
    if t.is_timestamp(dtype):
        micros = pc.cast(column.cast(pa.timestamp("us", tz=dtype.tz), safe=False), pa.int64())
        return pc.cast(micros, pa.string())
    if t.is_date(dtype):
        return _date_text(column.cast(pa.date32()))
    if t.is_floating(dtype):
        return _float_text(column)
    return pc.cast(column, pa.string())


def _float_text(column: Column) -> Column:
    """Java's Float/Double.toString per distinct value (keys of this type are rare)."""
    encoded = pc.dictionary_encode(column)
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks() if encoded.num_chunks else pa.array([], pa.string()).dictionary_encode()
    single = pa.types.is_float32(column.type)
    texts = pa.array([java_double(v, single) for v in encoded.dictionary.to_pylist()], pa.string())
    return texts.take(encoded.indices)


def _date_text(column: Column) -> Column:
    """`LocalDate.toString`: Arrow's `yyyy-MM-dd` within years 0-9999; outside, where Java adds a sign
    (`+10000-01-01`, `-0001-01-01`), day by day in Python (such dates are rare)."""
    days = pc.cast(column, pa.int32())
    lo, hi = plain_date_days()
    bounds = pc.min_max(days).as_py()
    if bounds["min"] is None or (bounds["min"] >= lo and bounds["max"] <= hi):
        return pc.cast(column, pa.string())
    return pa.array([None if d is None else java_local_date(d) for d in days.to_pylist()], pa.string())


def _missing(value: Column) -> Column:
    """True where the text is null or empty (never null itself)."""
    return pc.fill_null(pc.or_kleene(pc.is_null(value), pc.equal(value, "")), True)


def escape_path(value: Column) -> Column:
    """Hive's escapePathName (path_escape.escape_path_name) over an Arrow string column; `%` goes first
    so no escape is escaped twice."""
    out = pc.replace_substring(value, "%", "%25")
    for ch in ESCAPED:
        if ch != "%":
            out = pc.replace_substring(out, ch, f"%{ord(ch):02X}")
    return out


def column_at(table: pa.Table, dotted: str) -> Column:
    """A (possibly nested) field's values; a null parent struct makes the child null."""
    parts = dotted.split(".")
    values = table.column(parts[0])
    for part in parts[1:]:
        values = pc.struct_field(values, part)
    return values


class ArrowKeys:
    """The Arrow twin of `KeyGenerator`'s record_key / bad_key / partition_path for one batch schema."""

    def __init__(self, keygen: KeySpec, schema: pa.Schema) -> None:
        self.keygen = keygen
        self.schema = schema
        self._texts: tuple[pa.Table, dict[str, Column]] | None = None

    def _text(self, table: pa.Table, name: str) -> Column:
        """A field's text, rendered once per table (the key, the bad-key flag and the partition path all
        read it; casting numbers to text is most of the keys' cost)."""
        if self._texts is None or self._texts[0] is not table:
            self._texts = (table, {})
        cache = self._texts[1]
        if name not in cache:
            cache[name] = _as_text(column_at(table, name))
        return cache[name]

    def record_key(self, table: pa.Table) -> Column:
        fields = self.keygen.record_key_fields
        if not self.keygen.is_complex and len(fields) == 1:
            return self._text(table, fields[0])
        parts = []
        for name in fields:
            value = self._text(table, name)
            shown = pc.if_else(pc.is_null(value), NULL_KEY, pc.if_else(pc.equal(value, ""), EMPTY_KEY, value))
            parts.append(pc.binary_join_element_wise(f"{name}:", shown, ""))
        return pc.binary_join_element_wise(*parts, ",")

    def bad_key(self, table: pa.Table) -> Column:
        missing = [_missing(self._text(table, name)) for name in self.keygen.record_key_fields]
        if not self.keygen.is_complex and len(missing) == 1:
            return missing[0]
        out = missing[0]
        for m in missing[1:]:
            out = pc.and_(out, m)
        return out

    def partition_path(self, table: pa.Table) -> Column:
        n = table.num_rows
        kg = self.keygen
        if not kg.is_partitioned:
            return pa.repeat(pa.scalar("", pa.string()), n)
        types = kg.partition_types or ("SIMPLE",) * len(kg.partition_fields)
        pieces = []
        for name, kind in zip(kg.partition_fields, types):
            if kind == "TIMESTAMP" and kg.timestamp is not None:
                fmt = TS.PartitionFormatter(kg.timestamp, name, kg.hive_style, kg.urlencode, "UTC")
                pieces.append(TS.arrow_partition_column(fmt, column_at(table, name)))
                continue
            value = self._text(table, name)
            missing = _missing(value)
            if pc.any(missing).as_py():
                value = pc.if_else(missing, DEFAULT_PARTITION, value)
            if kg.urlencode:
                value = escape_path(value)
            if kg.hive_style:
                value = pc.binary_join_element_wise(f"{name}=", value, "")
            pieces.append(value)
        return pieces[0] if len(pieces) == 1 else pc.binary_join_element_wise(*pieces, "/")
