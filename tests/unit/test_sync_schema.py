"""The catalog types of a table's columns, each expected value worked out by hand from Hudi's code:
parquet-avro's AvroSchemaConverter (old list structure) -> HiveSchemaUtil.convertField / createHiveStruct /
createHiveArray / createHiveMap (HMS form, lower-cased by convertMapSchemaToHiveFieldSchema) and
Parquet2SparkSchemaUtils.convertToSparkSchemaJson (SparkDataSourceTableUtils' table properties)."""

from __future__ import annotations

import json

import pytest

from pyhudi.errors import MetaSyncError
from pyhudi.sync.catalog import Column
from pyhudi.sync.schema import (
    hive_columns,
    parquet_schema,
    partition_columns,
    schema_difference,
    spark_schema_json,
    spark_table_properties,
    type_update_allowed,
)


def _record(*fields: dict) -> dict:
    return {"type": "record", "name": "trips_record", "namespace": "hoodie.trips", "fields": list(fields)}


def _f(name: str, t: object, doc: str | None = None) -> dict:
    out = {"name": name, "type": t}
    if doc is not None:
        out["doc"] = doc
    return out


def _opt(t: object) -> list:
    return ["null", t]


SCHEMA = _record(
    _f("id", "string"),
    _f("amount", _opt({"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2})),
    _f("fixed_dec", {"type": "fixed", "name": "fd", "size": 5, "logicalType": "decimal", "precision": 10, "scale": 3}),
    _f("day", {"type": "int", "logicalType": "date"}),
    _f("ts_ms", _opt({"type": "long", "logicalType": "timestamp-millis"})),
    _f("ts_us", {"type": "long", "logicalType": "timestamp-micros"}),
    _f("flag", "boolean"), _f("f", "float"), _f("d", "double"), _f("n", "int"), _f("l", "long"),
    _f("raw", "bytes"), _f("fx", {"type": "fixed", "name": "fx16", "size": 16}),
    _f("color", {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}),
    _f("tags", {"type": "array", "items": "string"}),
    _f("items", {"type": "array", "items": _record(_f("name", "string"), _f("qty", "int")) | {"name": "item"}}),
    _f("single", {"type": "array", "items": {"type": "record", "name": "one", "fields": [_f("x", "int")]}}),
    _f("props", {"type": "map", "values": "long"}),
    _f("nested", {"type": "record", "name": "nest", "fields": [
        _f("a-b", "int"), _f("c$d", "string"), _f("Inner", {"type": "record", "name": "inner", "fields": [_f("Z", "int")]})]}),
    _f("either", ["null", "int", "string"]),
    _f("UserName", _opt("string"), doc="who"),
    _f("region", "string"),
)

# HiveSchemaUtil's types (HMS form), lower-cased: what a column of each field is registered as.
HIVE = {
    "id": "string", "amount": "decimal(10,2)", "fixed_dec": "decimal(10,3)", "day": "date",
    "ts_ms": "bigint", "ts_us": "bigint", "flag": "boolean", "f": "float", "d": "double", "n": "int",
    "l": "bigint", "raw": "binary", "fx": "binary", "color": "string", "tags": "array<string>",
    "items": "array<struct<name:string,qty:int>>", "single": "array<struct<x:int>>", "props": "map<string,bigint>",
    "nested": "struct<a_b:int,c_dollar_d:string,inner:struct<z:int>>", "either": "struct<member0:int,member1:string>",
    "username": "string",
}


def test_hive_columns_match_hive_schema_util() -> None:
    cols = hive_columns(parquet_schema(SCHEMA), False, ("region",), comments=False)
    assert [c.name for c in cols] == list(HIVE)  # schema order, partition field left out, names lower-cased
    assert {c.name: c.type for c in cols} == HIVE
    assert all(c.comment is None for c in cols)


def test_support_timestamp_maps_timestamps_only() -> None:
    cols = {c.name: c.type for c in hive_columns(parquet_schema(SCHEMA), True, ("region",), comments=False)}
    assert cols["ts_ms"] == cols["ts_us"] == "timestamp"
    assert cols["day"] == "date" and cols["l"] == "bigint"


def test_time_millis_is_int_in_hive_and_refused_by_spark_json() -> None:
    fields = parquet_schema(_record(_f("t", {"type": "int", "logicalType": "time-millis"})))
    assert hive_columns(fields, True, (), False) == [Column("t", "int")]
    with pytest.raises(MetaSyncError, match="no Spark SQL type"):
        spark_schema_json(fields, ())


def test_comments_are_avro_docs_with_sync_comment() -> None:
    cols = {c.name: c.comment for c in hive_columns(parquet_schema(SCHEMA), False, ("region",), comments=True)}
    assert cols["username"] == "who" and cols["id"] is None


def test_partition_keys_take_the_column_type_else_string() -> None:
    """HMSDDLExecutor.createTable: getPartitionKeyType(mapSchema, key) -- the field's type when it is a
    top-level column, string otherwise."""
    schema = _record(_f("v", "string"), _f("year", "int"), _f("region", "string"))
    keys = partition_columns(parquet_schema(schema), False, ("year", "region", "dt"))
    assert keys == [Column("year", "int"), Column("region", "string"), Column("dt", "string")]


def test_spark_schema_json_exact_text() -> None:
    """Parquet2SparkSchemaUtils' spelling, partition columns last (a missing one: required string)."""
    schema = _record(
        _f("region", "string"), _f("id", _opt("string")), _f("amount", _opt({"type": "bytes", "logicalType": "decimal",
                                                                               "precision": 10, "scale": 2})),
        _f("ts", {"type": "long", "logicalType": "timestamp-micros"}), _f("day", {"type": "int", "logicalType": "date"}),
        _f("tags", {"type": "array", "items": "string"}), _f("m", {"type": "map", "values": _opt("int")}),
        _f("s", {"type": "record", "name": "s", "fields": [_f("x", "long")]}))
    text = spark_schema_json(parquet_schema(schema), ("region", "dt"))
    assert text == (
        '{"type":"struct","fields":['
        '{"name":"id","type":"string","nullable":true,"metadata":{}},'
        '{"name":"amount","type":"decimal(10,2)","nullable":true,"metadata":{}},'
        '{"name":"ts","type":"timestamp","nullable":false,"metadata":{}},'
        '{"name":"day","type":"date","nullable":false,"metadata":{}},'
        '{"name":"tags","type":{"type":"array", "elementType":"string","containsNull":false},"nullable":false,"metadata":{}},'
        '{"name":"m","type":{"type":"map", "keyType":"string","valueType":"integer","valueContainsNull":true},'
        '"nullable":false,"metadata":{}},'
        '{"name":"s","type":{"type":"struct","fields":[{"name":"x","type":"long","nullable":false,"metadata":{}}]},'
        '"nullable":false,"metadata":{}},'
        '{"name":"region","type":"string","nullable":false,"metadata":{}},'
        '{"name":"dt","type":"string","nullable":false,"metadata":{}}]}')
    json.loads(text)  # Spark parses it back


def test_spark_table_properties_split_the_schema_as_spark_does() -> None:
    fields = parquet_schema(SCHEMA)
    props = spark_table_properties(fields, ("region",), "3.5.1", 100)
    schema = spark_schema_json(fields, ("region",))
    parts = int(props["spark.sql.sources.schema.numParts"])
    assert parts == (len(schema) + 99) // 100
    assert "".join(props[f"spark.sql.sources.schema.part.{i}"] for i in range(parts)) == schema
    assert all(len(props[f"spark.sql.sources.schema.part.{i}"]) <= 100 for i in range(parts))
    assert props["spark.sql.sources.provider"] == "hudi"
    assert props["spark.sql.create.version"] == "3.5.1"
    assert props["spark.sql.sources.schema.numPartCols"] == "1"
    assert props["spark.sql.sources.schema.partCol.0"] == "region"
    bare = spark_table_properties(fields, (), "", 4000)
    assert "spark.sql.create.version" not in bare and "spark.sql.sources.schema.numPartCols" not in bare
    assert bare["spark.sql.sources.schema.numParts"] == "1"


def test_schema_difference_adds_widens_and_deletes() -> None:
    new = parquet_schema(_record(_f("id", "string"), _f("n", "long"), _f("f", "double"), _f("added", "int"),
                                 _f("region", "string")))
    table = [Column("id", "string"), Column("n", "int"), Column("f", "float"), Column("gone", "string")]
    diff = schema_difference(new, False, table, [Column("region", "string")], ("region",))
    assert diff.added == ["added"] and diff.updated == ["n", "f"] and diff.deleted == ["gone"]
    same = schema_difference(new, False, hive_columns(new, False, ("region",), False), [Column("region", "string")],
                             ("region",))
    assert same.is_empty()


def test_schema_difference_refuses_what_hive_cannot_follow() -> None:
    new = parquet_schema(_record(_f("n", "string")))
    with pytest.raises(MetaSyncError, match="Could not convert field Type from int to string for field n"):
        schema_difference(new, False, [Column("n", "int")], [], ())


def test_type_update_allowed_is_hudis() -> None:
    assert type_update_allowed("int", "bigint") and type_update_allowed("float", "double")
    assert type_update_allowed("struct<a:int>", "struct<a:int,b:int>")
    assert not type_update_allowed("bigint", "int") and not type_update_allowed("int", "double")
    assert not type_update_allowed("", "int")
