"""Spark schemas <-> the Avro table schemas of `pyhudi.io.schema`.

`pyhudi.io.schema` holds the engine-neutral rules (Avro naming, canonical form, evolution, Arrow read
types); this module adds the Spark side of them: Hudi's copy of spark-avro's `SchemaConverters.toAvroType`
(`spark_to_avro`, for a DataFrame's schema) and `toSqlType` (`avro_to_spark`, the schema Spark reads with).
It lives in the Spark engine so that the schema rules never import pyspark.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from pyspark.sql import types as T

from pyhudi.errors import SchemaMismatchError
from pyhudi.io.schema import (
    AvroType,
    _check_field_name,
    _decimal,
    _field,
    _full,
    _wrap,
    convert,
    record_name,
)

# ----------------------------------------------------------------------------- Spark -> Avro


def spark_to_avro(schema: T.StructType, table_name: str) -> dict:
    """The Avro schema Hudi's Spark writer stores in `extraMetadata.schema` for a DataFrame schema."""
    name, namespace = record_name(table_name)
    return _struct_to_avro(schema, name, namespace, "")


def _struct_to_avro(st: T.StructType, name: str, namespace: str, prefix: str) -> dict:
    full = _full(name, namespace)
    fields: list[dict] = []
    for f in st.fields:
        column = prefix + f.name
        _check_field_name(f.name, column)
        if any(g["name"] == f.name for g in fields):
            raise SchemaMismatchError(f"Column '{column}' appears twice; Avro records need unique names.")
        doc = (f.metadata or {}).get("comment")
        fields.append(_field(f.name, _spark_type_to_avro(f.dataType, full, f.name, column), f.nullable,
                             doc if isinstance(doc, str) else None))
    return {"type": "record", "name": name, "namespace": namespace, "fields": fields}


_SPARK_SIMPLE: dict[type, AvroType] = {
    T.BooleanType: "boolean", T.ByteType: "int", T.ShortType: "int", T.IntegerType: "int",
    T.LongType: "long", T.FloatType: "float", T.DoubleType: "double", T.StringType: "string",
    T.CharType: "string", T.VarcharType: "string", T.BinaryType: "bytes",
    T.DateType: {"type": "int", "logicalType": "date"},
    T.TimestampType: {"type": "long", "logicalType": "timestamp-micros"},
    T.TimestampNTZType: {"type": "long", "logicalType": "local-timestamp-micros"},
}


def _spark_type_to_avro(dt: T.DataType, parent_full: str, fname: str, column: str) -> AvroType:
    if type(dt) in _SPARK_SIMPLE:
        return copy.deepcopy(_SPARK_SIMPLE[type(dt)])
    if isinstance(dt, T.DecimalType):
        return _decimal(dt.precision, dt.scale, f"{parent_full}.{fname}")
    if isinstance(dt, T.ArrayType):
        items = _spark_type_to_avro(dt.elementType, parent_full, fname, column + ".element")
        return {"type": "array", "items": _wrap(items, dt.containsNull)}
    if isinstance(dt, T.MapType):
        if not isinstance(dt.keyType, T.StringType):
            raise SchemaMismatchError(
                f"Column '{column}' is {dt.simpleString()}, but Avro (and so Hudi) maps only allow string "
                "keys. Convert the keys to strings or store the map as an array of key/value structs.")
        values = _spark_type_to_avro(dt.valueType, parent_full, fname, column + ".value")
        return {"type": "map", "values": _wrap(values, dt.valueContainsNull)}
    if isinstance(dt, T.StructType):
        return _struct_to_avro(dt, fname, parent_full, column + ".")
    raise SchemaMismatchError(
        f"Column '{column}' has Spark type {dt.simpleString()}, which Hudi cannot store in Avro"
        + (" (a column of only nulls has no type)" if isinstance(dt, T.NullType) else "")
        + ". Cast it to a supported type (string, numeric, boolean, binary, date, timestamp, decimal, "
          "array, map, struct) before writing.")


# ----------------------------------------------------------------------------- Avro -> Spark

_SPARK_READ_TYPES: dict[tuple[str, str | None], T.DataType] = {  # spark-avro's toSqlType
    ("boolean", None): T.BooleanType(), ("int", None): T.IntegerType(), ("long", None): T.LongType(),
    ("float", None): T.FloatType(), ("double", None): T.DoubleType(), ("string", None): T.StringType(),
    ("enum", None): T.StringType(), ("bytes", None): T.BinaryType(), ("null", None): T.NullType(),
    ("int", "date"): T.DateType(), ("int", "time-millis"): T.IntegerType(), ("long", "time-micros"): T.LongType(),
    ("long", "timestamp-millis"): T.TimestampType(), ("long", "timestamp-micros"): T.TimestampType(),
    ("long", "local-timestamp-millis"): T.TimestampNTZType(),
    ("long", "local-timestamp-micros"): T.TimestampNTZType(),
}


class _SparkTypes:
    """`io.schema.TypeBuilder` for Spark SQL types."""

    def primitive(self, key: tuple[str, str | None]) -> Any:
        return _SPARK_READ_TYPES[key]

    def struct(self, fields: list[tuple[str, Any, bool]]) -> Any:
        return T.StructType([T.StructField(n, t, nl) for n, t, nl in fields])

    def array(self, element: Any, nullable: bool) -> Any:
        return T.ArrayType(element, nullable)

    def map(self, value: Any, nullable: bool) -> Any:
        return T.MapType(T.StringType(), value, nullable)

    def decimal(self, precision: int, scale: int) -> Any:
        return T.DecimalType(precision, scale)

    def fixed(self, size: int) -> Any:
        return T.BinaryType()


@functools.cache
def _types() -> _SparkTypes:
    return _SparkTypes()


def avro_to_spark(avro: dict) -> T.StructType:
    """Spark read schema, following spark-avro's `SchemaConverters.toSqlType` (as Hudi's reader does)."""
    dt = convert(avro, _types())
    if not isinstance(dt, T.StructType):
        raise SchemaMismatchError("A Hudi table schema must be an Avro record.")
    return dt
