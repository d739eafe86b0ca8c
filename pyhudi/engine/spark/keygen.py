"""Record keys and partition paths, as Spark column expressions.

Keys are computed inside the JVM (no Python round-trip per row) and must be
byte-identical to Hudi's key generators, because the index matches stored
`_hoodie_record_key` values against them:

* Simple: the field's value; null or empty is an error.
* Complex: `f1:v1,f2:v2`, with `__null__` / `__empty__` for missing parts; all
  parts missing is an error.
* Partition path: value(s) joined by `/`, `field=value` when hive-style,
  URL-encoded when asked, `__HIVE_DEFAULT_PARTITION__` for null or empty.
* TimestampBasedKeyGenerator: the simple record key; the one partition field
  interpreted as a time and printed with a Joda pattern (`timestamp_keygen`).
* CustomKeyGenerator (`f1:SIMPLE,f2:TIMESTAMP`): simple or complex record key by
  the number of key fields; each partition field SIMPLE or TIMESTAMP, joined by `/`.

Values are rendered as Hudi 0.14's Avro key path prints them (the choice and
every type's form are in `java_text`): decimals as Java's `BigDecimal.toString`
(`1E-18`), dates as `LocalDate.toString`, timestamps (with or without time zone)
as epoch microseconds (Hudi's default without `consistent.logical.timestamp`),
float/double and other scalars via Spark's string cast, which calls Java's
`toString` for them; binary and nested values are refused.

The Spark column forms of the engine-neutral key helpers live here too (TimestampBasedKeyGenerator's pandas
UDF, Hive's path escaping, Java's key order), so that `pyhudi.keygen` and `pyhudi.index` never import pyspark.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.functions import pandas_udf
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    DecimalType,
    MapType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from pyhudi.engine.spark.runtime import active_session, session_time_zone
from pyhudi.errors import InvalidRecordError
from pyhudi.keygen import timestamp_keygen as TS
from pyhudi.keygen.path_escape import ESCAPED
from pyhudi.keygen.spec import (
    DEFAULT_PARTITION,
    EMPTY_KEY,
    NULL_KEY,
    PARTITION_COL,
    PARTITION_SPEC_KEY,
    RECORD_KEY_COL,
    KeySpec,
    custom_partition_types,
)

__all__ = ["DEFAULT_PARTITION", "EMPTY_KEY", "NULL_KEY", "PARTITION_COL", "PARTITION_SPEC_KEY", "RECORD_KEY_COL",
           "KeyGenerator", "check_field_type", "custom_partition_types", "escape_path_name_column", "field_type",
           "jvm_default_zone", "ntz_micros", "spark_partition_column", "spark_sort_key", "value_text"]


def field_type(schema: StructType, dotted: str) -> DataType | None:
    current: DataType = schema
    for part in dotted.split("."):
        if not isinstance(current, StructType) or part not in current.fieldNames():
            return None
        current = current[part].dataType
    return current


def _check_text_type(name: str, dtype: DataType) -> None:
    if isinstance(dtype, (BinaryType, ArrayType, MapType, StructType)):
        raise InvalidRecordError(
            f"field {name!r} of type {dtype.simpleString()} cannot be part of a record key or partition path; "
            "use a scalar column"
        )
    if isinstance(dtype, DecimalType) and dtype.scale < 0:
        raise InvalidRecordError(
            f"field {name!r} of type {dtype.simpleString()} (negative scale) cannot be part of a record key or "
            "partition path: Hudi prints it as BigDecimal.toString (e.g. 1E+3), which pyhudi does not "
            "reproduce; cast it to a decimal with a scale >= 0")


def _as_text(name: str, dtype: DataType) -> Column:
    col = F.col(name)
    if isinstance(dtype, TimestampType):
        return F.unix_micros(col).cast("string")
    if isinstance(dtype, TimestampNTZType):
        return ntz_micros(col).cast("string")
    _check_text_type(name, dtype)
    if isinstance(dtype, DecimalType):
        return _java_decimal(col, dtype.scale)
    return col.cast("string")


def _java_decimal(col: Column, scale: int) -> Column:
    """Java's `BigDecimal.toString` at the column's scale (java_text.java_decimal). Spark's cast prints the
    plain form with exactly `scale` fraction digits, which is Java's form unless the adjusted exponent
    (digits of the unscaled value - 1 - scale) is below -6; then Java switches to `d.dddE-n`."""
    plain = col.cast("string")
    if scale <= 6:  # adjusted >= -scale >= -6: always plain
        return plain
    stripped = F.regexp_replace(F.regexp_replace(plain, r"[-.]", ""), r"^0+", "")
    digits = F.when(stripped == "", F.lit("0")).otherwise(stripped)
    adjusted = F.length(digits) - 1 - scale
    sign = F.when(plain.startswith("-"), F.lit("-")).otherwise(F.lit(""))
    mantissa = F.when(F.length(digits) > 1, F.concat(digits.substr(1, 1), F.lit("."), digits.substr(2, 64))) \
        .otherwise(digits)
    scientific = F.concat(sign, mantissa, F.lit("E"), adjusted.cast("string"))
    return F.when(adjusted >= -6, plain).otherwise(scientific)


class KeyGenerator(KeySpec):
    """The spec's keys as Spark column expressions (the Spark path's prepare)."""

    def check_columns(self, schema: StructType, *, need_partition: bool = True) -> None:
        """Fail before anything is written when a key or partition column is absent."""
        if not self.record_key_fields:
            raise InvalidRecordError(
                "no record key field: set hoodie.datasource.write.recordkey.field to the column(s) that "
                "identify a record")
        wanted = [("record key", f) for f in self.record_key_fields]
        if need_partition and self.is_partitioned:
            wanted += [("partition path", f) for f in self.partition_fields]
        for role, name in wanted:
            if field_type(schema, name) is None:
                raise InvalidRecordError(
                    f"{role} field {name!r} is not a column of the batch (columns: "
                    f"{', '.join(schema.fieldNames())}); fix hoodie.datasource.write."
                    f"{'recordkey' if role == 'record key' else 'partitionpath'}.field or the DataFrame")

    def check_types(self, schema: StructType, *, need_partition: bool = True) -> None:
        """Fail before anything is written when a key or partition column cannot be rendered as text."""
        names = list(self.record_key_fields) + (list(self.partition_fields) if need_partition and
                                                  self.is_partitioned else [])
        timestamp_fields = {f for f, t in zip(self.partition_fields, self.partition_types) if t == "TIMESTAMP"}
        for i, name in enumerate(names):
            dtype = field_type(schema, name)
            if dtype is None:
                continue
            if i >= len(self.record_key_fields) and name in timestamp_fields and self.timestamp is not None:
                check_field_type(self.timestamp, name, dtype)
            else:
                _check_text_type(name, dtype)

    def record_key(self, schema: StructType) -> Column:
        parts = [(name, _as_text(name, field_type(schema, name))) for name in self.record_key_fields]  # type: ignore[arg-type]
        if not self.is_complex and len(parts) == 1:
            return parts[0][1]
        rendered = [
            F.concat(F.lit(f"{name}:"),
                     F.when(value.isNull(), F.lit(NULL_KEY)).when(value == "", F.lit(EMPTY_KEY)).otherwise(value))
            for name, value in parts
        ]
        return F.concat_ws(",", *rendered)

    def bad_key(self, schema: StructType) -> Column:
        """True where the record key is null/empty (simple) or entirely null/empty (complex)."""
        values = [_as_text(name, field_type(schema, name)) for name in self.record_key_fields]  # type: ignore[arg-type]
        missing = [v.isNull() | (v == "") for v in values]
        if not self.is_complex and len(values) == 1:
            return missing[0]
        out = missing[0]
        for m in missing[1:]:
            out = out & m
        return out

    def partition_path(self, schema: StructType) -> Column:
        if not self.is_partitioned:
            return F.lit("")
        types = self.partition_types or ("SIMPLE",) * len(self.partition_fields)
        default_zone = jvm_default_zone() if self.uses_timestamps else "UTC"
        pieces = []
        for name, kind in zip(self.partition_fields, types):
            dtype = field_type(schema, name)
            if kind == "TIMESTAMP" and self.timestamp is not None:
                fmt = TS.PartitionFormatter(self.timestamp, name, self.hive_style, self.urlencode, default_zone)
                pieces.append(spark_partition_column(fmt, dtype))  # type: ignore[arg-type]
                continue
            value = _as_text(name, dtype)  # type: ignore[arg-type]
            value = F.when(value.isNull() | (value == ""), F.lit(DEFAULT_PARTITION)).otherwise(value)
            if self.urlencode:
                value = escape_path_name_column(value)
            if self.hive_style:
                value = F.concat(F.lit(f"{name}="), value)
            pieces.append(value)
        return pieces[0] if len(pieces) == 1 else F.concat_ws("/", *pieces)


# --------------------------------------------------------------------------- TimestampBasedKeyGenerator

def check_field_type(settings: TS.TimestampSettings, name: str, dtype: DataType) -> None:
    """Refuse a Spark column type Hudi's generator fails on for every row, before anything is written."""
    numeric = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType, T.DecimalType,
               T.DateType, T.TimestampType, T.TimestampNTZType)
    TS.check_kind(settings, name, dtype.simpleString(), isinstance(dtype, T.StringType),
                  isinstance(dtype, numeric) and not isinstance(dtype, T.BooleanType))


def value_text(col: Column, dtype: DataType) -> tuple[Column, str]:
    """The value's exact text for the Python formatter, and its kind (string, long, double, decimal)."""
    if isinstance(dtype, T.StringType):
        return col, "string"
    if isinstance(dtype, (T.FloatType, T.DoubleType)):
        return col.cast("double").cast("string"), "double"  # float widened first: exact
    if isinstance(dtype, DecimalType):
        return col.cast("string"), "decimal"
    if isinstance(dtype, T.DateType):
        return F.unix_date(col).cast("string"), "long"
    if isinstance(dtype, TimestampType):
        return F.unix_micros(col).cast("string"), "long"
    if isinstance(dtype, TimestampNTZType):
        return ntz_micros(col).cast("string"), "long"  # the Avro local-timestamp-micros long
    return col.cast("long").cast("string"), "long"


def spark_partition_column(formatter: TS.PartitionFormatter, dtype: DataType) -> Column:
    """The partition path piece as a Spark column: a pandas UDF over the value's exact text."""
    import pandas as pd

    text, kind = value_text(F.col(formatter.field), dtype)
    run = formatter.batch()

    def timestamp_partition(values: Any) -> Any:
        return run(values, kind)

    # Series -> Series: a scalar pandas UDF (the hints are set here, where pandas is imported).
    timestamp_partition.__annotations__ = {"values": pd.Series, "return": pd.Series}
    return pandas_udf(timestamp_partition, "string")(text)  # type: ignore[call-overload,no-any-return]


def ntz_micros(col: Column) -> Column:
    """Microseconds of a TIMESTAMP_NTZ since 1970-01-01 00:00 (the Avro local-timestamp-micros long Hudi
    prints), from its wall-clock fields: `cast(... as timestamp)` would shift it by the session time zone."""
    days = F.unix_date(col.cast("date")).cast("long")
    clock = F.hour(col).cast("long") * 3600 + F.minute(col).cast("long") * 60
    micros = (F.date_part(F.lit("SECOND"), col) * 1000000).cast("long")
    return (days * 86400 + clock) * 1000000 + micros


def jvm_default_zone() -> str:
    """The zone Hudi prints numeric timestamps in without an output zone (the driver JVM's default zone):
    the active session's `spark.sql.session.timeZone`, whose default is that JVM zone and which Spark
    itself uses for timestamp-to-string (read through `spark.conf`, so also under Spark Connect); UTC
    without a session."""
    return session_time_zone(active_session())


# --------------------------------------------------------------------------- paths and key order

def escape_path_name_column(value: Column) -> Column:
    """`path_escape.escape_path_name` as a Spark expression; `%` goes first so no escape is escaped twice."""
    out = F.replace(value, F.lit("%"), F.lit("%25"))
    for ch in ESCAPED:
        if ch != "%":
            out = F.replace(out, F.lit(ch), F.lit(f"%{ord(ch):02X}"))
    return out


def spark_sort_key(key: Column) -> Column:
    """A Spark binary column that compares as Java compares the string column `key` (big-endian UTF-16
    bytes compare as Java's `String.compareTo` compares code units; see `pyhudi.index.key_order`)."""
    return F.encode(key, "UTF-16BE")
