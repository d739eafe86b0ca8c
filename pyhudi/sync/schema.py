"""The table's schema as a catalog sees it, derived the way Hudi derives it.

Hudi's sync reads the table's Avro schema, converts it to Parquet with parquet-avro's AvroSchemaConverter
(`TableSchemaResolver.getTableParquetSchema`, old list structure: `repeated <element> array`), and maps that
Parquet schema to Hive types (`HiveSchemaUtil`) and to Spark's JSON schema (`Parquet2SparkSchemaUtils`). The
two-step path is kept here because its quirks are visible in the catalog: Avro `time-millis` becomes Hive
`int` (Parquet TIME_MILLIS has no Hive mapping), timestamps are `bigint` unless support_timestamp, struct
types have `-` replaced by `_`, nested `$` becomes `_dollar_`, and the whole Hive type string is lower-cased.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyhudi.errors import MetaSyncError
from pyhudi.sync.catalog import Column

REQUIRED, OPTIONAL, REPEATED = "REQUIRED", "OPTIONAL", "REPEATED"
_PRIMITIVE = {"boolean": "boolean", "int": "int32", "long": "int64", "float": "float", "double": "double",
              "bytes": "binary", "string": "binary"}
_LOGICAL = {("int", "date"): "DATE", ("int", "time-millis"): "TIME_MILLIS", ("long", "time-micros"): "TIME_MICROS",
            ("long", "timestamp-millis"): "TIMESTAMP_MILLIS", ("long", "timestamp-micros"): "TIMESTAMP_MICROS",
            ("long", "local-timestamp-millis"): "TIMESTAMP_MILLIS",
            ("long", "local-timestamp-micros"): "TIMESTAMP_MICROS"}


@dataclass(frozen=True)
class PType:
    """One Parquet type as parquet-avro writes it: a primitive (with its original type) or a group."""

    name: str
    kind: str  # boolean, int32, int64, float, double, binary, fixed, group
    repetition: str
    original: str | None = None  # UTF8, ENUM, DATE, DECIMAL, TIMESTAMP_*, TIME_*, LIST, MAP, MAP_KEY_VALUE
    fields: tuple[PType, ...] = ()
    precision: int = 0
    scale: int = 0
    doc: str | None = field(default=None, compare=False)

    @property
    def is_primitive(self) -> bool:
        return self.kind != "group"


# ----------------------------------------------------------------------------- Avro -> Parquet

def parquet_schema(avro: dict[str, Any]) -> list[PType]:
    """The top-level fields of the Parquet schema of `avro` (a record, name references allowed)."""
    names: dict[str, Any] = {}
    return [_field(f, names, avro.get("namespace")) for f in avro["fields"]]


def _field(f: dict[str, Any], names: dict[str, Any], space: str | None) -> PType:
    converted = _convert(f["name"], f["type"], REQUIRED, names, space)
    doc = f.get("doc")
    return PType(converted.name, converted.kind, converted.repetition, converted.original, converted.fields,
                 converted.precision, converted.scale, doc if isinstance(doc, str) and doc else None)


def _resolve(t: Any, names: dict[str, Any], space: str | None) -> Any:
    if isinstance(t, str) and t not in _PRIMITIVE and t != "null":
        found = names.get(t) or names.get(f"{space}.{t}")
        if found is None:
            raise MetaSyncError(f"the table's Avro schema refers to unknown type {t!r}")
        return found
    if isinstance(t, dict) and isinstance(t.get("type"), (dict, list)):
        return _resolve(t["type"], names, space)
    if isinstance(t, dict) and t.get("type") in ("record", "error", "enum", "fixed"):
        ns = t.get("namespace", space)
        full = t["name"] if "." in t["name"] or not ns else f"{ns}.{t['name']}"
        names.setdefault(full, t)
        names.setdefault(t["name"], t)
    return t


def _convert(name: str, t: Any, rep: str, names: dict[str, Any], space: str | None) -> PType:
    t = _resolve(t, names, space)
    if isinstance(t, list):
        return _union(name, t, rep, names, space)
    kind = t if isinstance(t, str) else t["type"]
    if isinstance(kind, str) and kind in _PRIMITIVE:
        return _primitive(name, kind, t, rep)
    if kind in ("record", "error"):
        ns = t.get("namespace", space)
        return PType(name, "group", rep, None, tuple(_field(f, names, ns) for f in t["fields"]))
    if kind == "enum":
        return PType(name, "binary", rep, "ENUM")
    if kind == "fixed":
        if t.get("logicalType") == "decimal":
            return PType(name, "fixed", rep, "DECIMAL", precision=int(t["precision"]), scale=int(t.get("scale", 0)))
        return PType(name, "fixed", rep)
    if kind == "array":
        element = _convert("array", t["items"], REPEATED, names, space)  # parquet-avro's old list structure
        return PType(name, "group", rep, "LIST", (element,))
    if kind == "map":
        key = PType("key", "binary", REQUIRED, "UTF8")
        value = _convert("value", t["values"], REQUIRED, names, space)
        return PType(name, "group", rep, "MAP", (PType("key_value", "group", REPEATED, "MAP_KEY_VALUE", (key, value)),))
    raise MetaSyncError(f"column {name!r}: Avro type {kind!r} has no catalog type")


def _primitive(name: str, kind: str, t: Any, rep: str) -> PType:
    logical = t.get("logicalType") if isinstance(t, dict) else None
    if kind == "string":
        return PType(name, "binary", rep, "UTF8")
    if logical == "decimal" and kind == "bytes":
        return PType(name, "binary", rep, "DECIMAL", precision=int(t["precision"]), scale=int(t.get("scale", 0)))
    return PType(name, _PRIMITIVE[kind], rep, _LOGICAL.get((kind, logical or "")))


def _union(name: str, types: list[Any], rep: str, names: dict[str, Any], space: str | None) -> PType:
    """parquet-avro: a union with null makes the field optional; other unions become a group of
    optional `memberN` fields."""
    rest = [x for x in types if x != "null" and not (isinstance(x, dict) and x.get("type") == "null")]
    if len(rest) < len(types) and rep == REQUIRED:
        rep = OPTIONAL
    if not rest:
        raise MetaSyncError(f"column {name!r} has Avro type null; it has no catalog type")
    if len(rest) == 1:
        return _convert(name, rest[0], rep, names, space)
    members = tuple(_convert(f"member{i}", x, OPTIONAL, names, space) for i, x in enumerate(rest))
    return PType(name, "group", rep, None, members)


# ----------------------------------------------------------------------------- Parquet -> Hive

def hive_type(t: PType, support_timestamp: bool) -> str:
    """HiveSchemaUtil.convertField (HMS form: no spaces), upper case as Hudi builds it."""
    if t.is_primitive:
        return _hive_primitive(t, support_timestamp)
    if t.original == "LIST":
        if len(t.fields) != 1 or t.fields[0].repetition != REPEATED:
            raise MetaSyncError(f"invalid list type {t.name!r}")
        return _hive_array(t.fields[0], t.name, support_timestamp)
    if t.original == "MAP":
        kv = t.fields[0]
        key, value = kv.fields
        if not (key.kind == "binary" and key.original == "UTF8"):
            raise MetaSyncError(f"map {t.name!r}: the key type must be binary (UTF8)")
        return f"MAP<{hive_type(key, support_timestamp)},{hive_type(value, support_timestamp)}>"
    if t.original is not None:
        raise MetaSyncError(f"cannot convert Parquet type {t.original} of {t.name!r}")
    parts = [f"{translate_nested(f.name)}:{hive_type(f, support_timestamp)}" for f in t.fields]
    return ("STRUCT<" + ",".join(parts) + ">").replace("-", "_")


def _hive_primitive(t: PType, support_timestamp: bool) -> str:
    if t.original == "DECIMAL":
        return f"DECIMAL({t.precision},{t.scale})"
    if t.original == "DATE":
        return "DATE"
    if support_timestamp and t.original in ("TIMESTAMP_MICROS", "TIMESTAMP_MILLIS"):
        return "TIMESTAMP"
    if t.kind == "binary":
        return "string" if t.original in ("UTF8", "ENUM") else "binary"
    return {"boolean": "boolean", "int32": "int", "int64": "bigint", "float": "float", "double": "double",
            "fixed": "binary", "int96": "timestamp-millis"}[t.kind]


def _hive_array(element: PType, element_name: str, support_timestamp: bool) -> str:
    if element.is_primitive or len(element.fields) > 1 or element.name in ("array", f"{element_name}_tuple"):
        inner = hive_type(element, support_timestamp)
    else:
        inner = hive_type(element.fields[0], support_timestamp)
    return f"ARRAY<{inner}>"


def translate_nested(name: str) -> str:
    """ColumnNameXLator.translateNestedColumn: `$` cannot appear in a Hive struct field name."""
    return name.replace("$", "_dollar_")


def hive_columns(fields: list[PType], support_timestamp: bool, partition_fields: tuple[str, ...],
                 comments: bool) -> list[Column]:
    """The data columns (HiveSchemaUtil.convertMapSchemaToHiveFieldSchema): every field but the partition
    fields, its Hive type lower-cased; the column comment is the field's Avro doc when sync_comment is on."""
    return [Column(f.name.lower(), hive_type(f, support_timestamp).lower(), f.doc if comments else None)
            for f in fields if f.name not in partition_fields]


def partition_columns(fields: list[PType], support_timestamp: bool, partition_fields: tuple[str, ...]) -> list[Column]:
    """HMSDDLExecutor.createTable: a partition key has its column's Hive type when the field is a top-level
    column (HiveSchemaUtil.getPartitionKeyType), else string."""
    by_name = {f.name: f for f in fields}
    return [Column(p.lower(), hive_type(by_name[p], support_timestamp).lower() if p in by_name else "string")
            for p in partition_fields]


# ----------------------------------------------------------------------------- Parquet -> Spark JSON

def spark_schema_json(fields: list[PType], partition_fields: tuple[str, ...]) -> str:
    """SparkDataSourceTableUtils.getSparkTableProperties' schema string: data columns, then the partition
    columns (a partition field missing from the schema is a required string), in Parquet2SparkSchemaUtils'
    exact JSON spelling."""
    by_name = {f.name: f for f in fields}
    data = [f for f in fields if f.name not in partition_fields]
    parts = [by_name.get(p, PType(p, "binary", REQUIRED, "UTF8")) for p in partition_fields]
    return _struct_json([*data, *parts])


def _struct_json(fields: list[PType]) -> str:
    return '{"type":"struct","fields":[' + ",".join(_field_json(f) for f in fields) + "]}"


def _field_json(f: PType) -> str:
    if f.repetition == REPEATED:
        kind, nullable = _array_json(f, False), "false"
    else:
        kind, nullable = _type_json(f), "true" if f.repetition == OPTIONAL else "false"
    return f'{{"name":"{f.name}","type":{kind},"nullable":{nullable},"metadata":{{}}}}'


def _type_json(t: PType) -> str:
    if t.is_primitive:
        return f'"{_spark_primitive(t)}"'
    if t.original is None:
        return _struct_json(list(t.fields))
    if t.original == "LIST":
        repeated = t.fields[0]
        if repeated.is_primitive or len(repeated.fields) > 1 or repeated.name in ("array", f"{t.name}_tuple"):
            return _array_json(repeated, False)
        element = repeated.fields[0]
        return _array_json(element, element.repetition == OPTIONAL)
    if t.original in ("MAP", "MAP_KEY_VALUE"):
        key, value = t.fields[0].fields
        contains_null = "true" if value.repetition == OPTIONAL else "false"
        return (f'{{"type":"map", "keyType":{_type_json(key)},"valueType":{_type_json(value)},'
                f'"valueContainsNull":{contains_null}}}')
    raise MetaSyncError(f"cannot convert {t.name!r} ({t.original}) to a Spark SQL type")


def _array_json(element: PType, contains_null: bool) -> str:
    return f'{{"type":"array", "elementType":{_type_json(element)},"containsNull":{"true" if contains_null else "false"}}}'


def _spark_primitive(t: PType) -> str:
    decimal = f"decimal({t.precision},{t.scale})"
    if t.kind in ("boolean", "float", "double"):
        return t.kind
    if t.kind == "int32":
        names = {None: "integer", "DATE": "date", "DECIMAL": decimal}
    elif t.kind == "int64":
        names = {None: "long", "DECIMAL": decimal, "TIMESTAMP_MICROS": "timestamp", "TIMESTAMP_MILLIS": "timestamp"}
    elif t.kind == "binary":
        names = {None: "binary", "UTF8": "string", "ENUM": "string", "DECIMAL": decimal}
    else:  # fixed: Hudi only handles DECIMAL (anything else fails there with a NullPointerException)
        names = {None: "binary", "DECIMAL": decimal}
    if t.original not in names:
        raise MetaSyncError(f"column {t.name!r}: Parquet {t.kind} ({t.original}) has no Spark SQL type (Hudi's "
                            "Parquet2SparkSchemaUtils refuses it too); set "
                            "hoodie.datasource.hive_sync.sync_as_datasource=false to sync without Spark's schema")
    return names[t.original]


def spark_table_properties(fields: list[PType], partition_fields: tuple[str, ...], spark_version: str,
                           threshold: int) -> dict[str, str]:
    """SparkDataSourceTableUtils.getSparkTableProperties: provider, version, the schema split into parts of at
    most `threshold` characters, and the partition columns."""
    props = {"spark.sql.sources.provider": "hudi"}
    if spark_version:
        props["spark.sql.create.version"] = spark_version
    schema = spark_schema_json(fields, partition_fields)
    parts = (len(schema) + threshold - 1) // threshold
    props["spark.sql.sources.schema.numParts"] = str(parts)
    for i in range(parts):
        props[f"spark.sql.sources.schema.part.{i}"] = schema[i * threshold:(i + 1) * threshold]
    if partition_fields:
        props["spark.sql.sources.schema.numPartCols"] = str(len(partition_fields))
        for i, name in enumerate(partition_fields):
            props[f"spark.sql.sources.schema.partCol.{i}"] = name
    return props


# ----------------------------------------------------------------------------- schema difference

@dataclass
class SchemaDifference:
    """HiveSchemaUtil.getSchemaDifference: columns to add, update (allowed widenings) and delete."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)

    def is_empty(self) -> bool:
        return not (self.added or self.updated or self.deleted)


def schema_difference(fields: list[PType], support_timestamp: bool, table_columns: list[Column],
                      partition_keys: list[Column], partition_fields: tuple[str, ...]) -> SchemaDifference:
    """Compare the storage schema with the catalog's columns and partition keys; a type change Hive cannot
    follow raises MetaSyncError, as Hudi's HoodieHiveSyncException "Could not convert field Type"."""
    new = {f.name.lower(): hive_type(f, support_timestamp) for f in fields}
    keys = [p.lower() for p in partition_fields]
    diff = SchemaDifference()
    seen: set[str] = set()
    for col in [*table_columns, *partition_keys]:
        name = col.name.lower()
        seen.add(name)
        if name not in new:
            if name not in keys:
                diff.deleted.append(name)
            continue
        current, expected = _norm(col.type), _norm(new[name])
        if current != expected:
            if not type_update_allowed(current, expected):
                raise MetaSyncError(f"Could not convert field Type from {current} to {expected} for field {name}")
            diff.updated.append(name)
    diff.added = [n for n in new if n not in seen]
    return diff


def _norm(hive: str) -> str:
    return "".join(hive.split()).replace("`", "").lower()


def type_update_allowed(previous: str, new: str) -> bool:
    """HiveSchemaUtil.isSchemaTypeUpdateAllowed: int -> bigint, float -> double, any struct -> struct."""
    if not previous.strip() or not new.strip():
        return False
    previous, new = previous.lower(), new.lower()
    return (previous == new or (previous, new) in (("int", "bigint"), ("float", "double"))
            or ("struct" in previous and "struct" in new))
