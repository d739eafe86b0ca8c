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
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F
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

from pyhudi.errors import InvalidConfigError, InvalidRecordError
from pyhudi.keygen import timestamp_keygen as TS
from pyhudi.keygen.path_escape import escape_path_name_column
from pyhudi.model.table_config import (
    COMPLEX_KEYGEN,
    CUSTOM_KEYGENS,
    NONPARTITIONED_KEYGEN,
    TIMESTAMP_KEYGENS,
    TableConfig,
)

NULL_KEY = "__null__"
EMPTY_KEY = "__empty__"
DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
RECORD_KEY_COL = "_hoodie_record_key"
PARTITION_COL = "_hoodie_partition_path"


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
        return _ntz_micros(col).cast("string")
    _check_text_type(name, dtype)
    if isinstance(dtype, DecimalType):
        return _java_decimal(col, dtype.scale)
    return col.cast("string")


def _ntz_micros(col: Column) -> Column:
    """Microseconds of a TIMESTAMP_NTZ since 1970-01-01 00:00 (the Avro local-timestamp-micros long Hudi
    prints), from its wall-clock fields: `cast(... as timestamp)` would shift it by the session time zone."""
    days = F.unix_date(col.cast("date")).cast("long")
    clock = F.hour(col).cast("long") * 3600 + F.minute(col).cast("long") * 60
    micros = (F.date_part(F.lit("SECOND"), col) * 1000000).cast("long")
    return (days * 86400 + clock) * 1000000 + micros


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


@dataclass(frozen=True)
class KeyGenerator:
    record_key_fields: tuple[str, ...]
    partition_fields: tuple[str, ...]
    keygen_class: str
    hive_style: bool
    urlencode: bool
    # Per partition field: SIMPLE or TIMESTAMP (only TIMESTAMP keygens and CustomKeyGenerator have any).
    partition_types: tuple[str, ...] = ()
    timestamp: TS.TimestampSettings | None = None

    @classmethod
    def for_table(cls, config: TableConfig) -> KeyGenerator:
        types, settings = _partition_types(config)
        return cls(config.record_key_fields, config.partition_fields, config.keygen_class,
                   config.hive_style_partitioning, config.urlencode_partitions, types, settings)

    @property
    def uses_timestamps(self) -> bool:
        return "TIMESTAMP" in self.partition_types

    @property
    def is_partitioned(self) -> bool:
        return bool(self.partition_fields) and self.keygen_class != NONPARTITIONED_KEYGEN

    @property
    def is_complex(self) -> bool:
        return self.keygen_class == COMPLEX_KEYGEN or (
            len(self.record_key_fields) > 1 and self.keygen_class != NONPARTITIONED_KEYGEN)

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
                TS.check_field_type(self.timestamp, name, dtype)
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
        default_zone = TS.jvm_default_zone() if self.uses_timestamps else "UTC"
        pieces = []
        for name, kind in zip(self.partition_fields, types):
            dtype = field_type(schema, name)
            if kind == "TIMESTAMP" and self.timestamp is not None:
                fmt = TS.PartitionFormatter(self.timestamp, name, self.hive_style, self.urlencode, default_zone)
                pieces.append(TS.spark_partition_column(fmt, dtype))  # type: ignore[arg-type]
                continue
            value = _as_text(name, dtype)  # type: ignore[arg-type]
            value = F.when(value.isNull() | (value == ""), F.lit(DEFAULT_PARTITION)).otherwise(value)
            if self.urlencode:
                value = escape_path_name_column(value)
            if self.hive_style:
                value = F.concat(F.lit(f"{name}="), value)
            pieces.append(value)
        return pieces[0] if len(pieces) == 1 else F.concat_ws("/", *pieces)


PARTITION_SPEC_KEY = "hoodie.datasource.write.partitionpath.field"


def _partition_types(config: TableConfig) -> tuple[tuple[str, ...], TS.TimestampSettings | None]:
    """The partition field kinds and timestamp settings of a TimestampBased or Custom key generator,
    refusing what Hudi's constructors refuse (several fields for TimestampBased, untyped Custom fields)."""
    if config.keygen_class in TIMESTAMP_KEYGENS:
        if len(config.record_key_fields) > 1 or len(config.partition_fields) != 1:
            raise InvalidConfigError(
                f"{config.keygen_class} takes exactly one record key field and one partition field (got "
                f"{','.join(config.record_key_fields)!r} / {','.join(config.partition_fields)!r}); use "
                "CustomKeyGenerator (field:TIMESTAMP) for more")
        return ("TIMESTAMP",), TS.settings_from(config.keygen_options)
    if config.keygen_class not in CUSTOM_KEYGENS or not config.partition_fields:
        return (), None
    types = custom_partition_types(config.keygen_options.get(PARTITION_SPEC_KEY), config.partition_fields)
    settings = TS.settings_from(config.keygen_options) if "TIMESTAMP" in types else None
    return types, settings


def custom_partition_types(spec: str | None, names: tuple[str, ...]) -> tuple[str, ...]:
    """`f1:simple,f2:TIMESTAMP` -> ("SIMPLE", "TIMESTAMP") for the fields `names`."""
    if not spec:
        raise InvalidConfigError(
            f"CustomKeyGenerator needs {PARTITION_SPEC_KEY} with a type per field, e.g. "
            f"{','.join(n + ':SIMPLE' for n in names)} (Hudi does not store the types in table version 6); "
            "pass it on every write")
    types = []
    for part in (p.strip() for p in spec.split(",")):
        pieces = part.split(":")
        if len(pieces) != 2 or pieces[1].strip().upper() not in ("SIMPLE", "TIMESTAMP"):
            raise InvalidConfigError(
                f"{PARTITION_SPEC_KEY}={spec!r}: {part!r} is not field:SIMPLE or field:TIMESTAMP, which "
                "CustomKeyGenerator needs for every field (e.g. city:simple,ts:timestamp)")
        types.append(pieces[1].strip().upper())
    if len(types) != len(names):
        raise InvalidConfigError(f"{PARTITION_SPEC_KEY}={spec!r} does not name the table's partition fields "
                                 f"{','.join(names)}")
    return tuple(types)
