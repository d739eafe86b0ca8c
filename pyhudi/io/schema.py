"""Avro table schemas the way Hudi 0.14/0.15's Spark writer derives, stores and evolves them.

Hudi keeps a table's schema as Avro JSON in `extraMetadata.schema` of every commit, in
`hoodie.table.create.schema` of `hoodie.properties`, and (with the five `_hoodie_*` meta fields in
front) in every base file's `parquet.avro.schema` footer and every Avro log block header. Java
readers compare and parse these strings, so we reproduce them byte for byte.

How Hudi gets there (read in apache/hudi):

* Hudi's copy of spark-avro's `SchemaConverters.toAvroType` names the top record `<table>_record`
  in namespace `hoodie.<table>` (`AvroSchemaUtils.getAvroRecordQualifiedName`), nested records
  after their field with the parent's full name as namespace, and decimals as a `fixed` named
  `<parent full name>.<field>.fixed`; optional types are `[T, "null"]` without defaults. Spark SQL's
  `HoodieCatalogTable` stores exactly that as `hoodie.table.create.schema`.
* The writer's `AvroConversionUtils.convertStructTypeToAvroSchema` adds `getAvroSchemaWithDefaults`
  (optional fields `["null", T]` with `"default": null`; a Spark column comment becomes the `doc`),
  then `HoodieSchemaUtils.deduceWriterSchema` passes the schema through
  `AvroInternalSchemaConverter.fixNullOrdering` (Avro -> InternalSchema -> Avro, HUDI-6872), which
  also puts `null` first in array items / map values, drops defaults of required fields and names
  every fixed by its field path. `canonicalize` reproduces that; it is the commit-metadata form.
* `HoodieAvroUtils.addMetadataFields` prepends the meta fields (`["null","string"]`, `"doc": ""`).
"""

from __future__ import annotations

import copy
import json
from json.encoder import encode_basestring as _encode_string  # type: ignore[attr-defined]
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from pyhudi.errors import InvalidRecordError, SchemaMismatchError

AvroType = Any  # str (primitive or name reference) | list (union) | dict (complex or annotated)

META_FIELDS: list[str] = ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
                          "_hoodie_partition_path", "_hoodie_file_name"]


def has_column(table: pa.Table | pa.RecordBatch, name: str) -> bool:
    """Whether `table` has a column `name`. `name in table.column_names` builds a Python string for every
    column (13-18 us on a 23-column table, about three times that beside a thread encoding files, with the
    GIL held), and a merge or create handle asks it five times a file; the schema's own lookup takes under
    1 us."""
    return bool(table.schema.get_all_field_indices(name))


_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
_NAMED = ("record", "error", "enum", "fixed")
_DATE_TIME = {  # logical types InternalSchema keeps, with their Avro base type
    "date": "int", "time-millis": "int", "time-micros": "long", "timestamp-millis": "long",
    "timestamp-micros": "long", "local-timestamp-millis": "long", "local-timestamp-micros": "long",
}
# Avro's reader/writer promotions between plain numbers (what Hudi's compatibility check accepts).
_PROMOTIONS = {"int": ("long", "float", "double"), "long": ("float", "double"), "float": ("double",)}


# ----------------------------------------------------------------------------- names

def _sanitize(name: str) -> str:
    """`HoodieAvroUtils.sanitizeName`: a bad first char, then every char outside [A-Za-z0-9_], -> `__`."""
    if name and not (name[0].isascii() and (name[0].isalpha() or name[0] == "_")):
        name = "__" + name[1:]
    return "".join(c if c.isascii() and (c.isalnum() or c == "_") else "__" for c in name)


def record_name(table_name: str) -> tuple[str, str]:
    """(name, namespace) of a table's top-level Avro record."""
    t = _sanitize(table_name)
    return f"{t}_record", f"hoodie.{t}"


def _check_field_name(name: str, column: str) -> None:
    # Java Avro 1.11 validates with Character.isLetter / isLetterOrDigit: Unicode letters pass.
    if not (name[:1].isalpha() or name[:1] == "_") or not all(c.isalnum() or c == "_" for c in name):
        raise SchemaMismatchError(
            f"Column '{column}' is not a valid Avro name, so Hudi cannot store it: names must start with a "
            "letter or '_' and contain only letters, digits and '_'. Rename the column before writing.")


def _split_name(name: str, namespace: str | None) -> tuple[str, str | None]:
    if "." in name:
        space, _, short = name.rpartition(".")
        return short, space or None
    return name, namespace or None


def _full(name: str, namespace: str | None) -> str:
    return f"{namespace}.{name}" if namespace else name


def _min_bytes(precision: int) -> int:
    """Smallest two's-complement size for `precision` digits (Spark's minBytesForPrecision)."""
    n = 1
    while 2 ** (8 * n - 1) < 10 ** precision:
        n += 1
    return n


def _decimal(precision: int, scale: int, path: str) -> dict:
    return {"type": "fixed", "name": "fixed", "namespace": path, "size": _min_bytes(precision),
            "logicalType": "decimal", "precision": precision, "scale": scale}


def _wrap(base: AvroType, nullable: bool) -> AvroType:
    return ["null", base] if nullable else base


def _field(name: str, base: AvroType, nullable: bool, doc: str | None = None) -> dict:
    f: dict = {"name": name, "type": _wrap(base, nullable)}
    if doc is not None:
        f["doc"] = doc
    if nullable:
        f["default"] = None
    return f


# ----------------------------------------------------------------------------- Arrow -> Avro

def arrow_to_avro(schema: pa.Schema, table_name: str) -> dict:
    """What `spark_to_avro` gives for the Spark type Spark reads each Arrow type as, so a table written
    in-process and continued by Spark (or the other way round) sees one schema: int8/int16 -> int
    (ByteType/ShortType), unsigned integers widened as Spark's parquet reader does (uint8/16 -> int,
    uint32 -> long, uint64 -> decimal(20,0)), large/view strings and binaries as string/bytes,
    dictionaries as their value type, timestamps of any unit with a zone -> timestamp-micros and without
    -> local-timestamp-micros (TIMESTAMP_NTZ), date64 -> date. A field comment in the Arrow field
    metadata (`comment`) becomes the Avro doc, as Spark's column comment does."""
    name, namespace = record_name(table_name)
    return _arrow_struct_to_avro(list(schema), name, namespace, "")


def _arrow_struct_to_avro(fields: list[pa.Field], name: str, namespace: str, prefix: str) -> dict:
    full = _full(name, namespace)
    out: list[dict] = []
    for f in fields:
        column = prefix + f.name
        _check_field_name(f.name, column)
        if any(g["name"] == f.name for g in out):
            raise SchemaMismatchError(f"Column '{column}' appears twice; Avro records need unique names.")
        comment = (f.metadata or {}).get(b"comment")
        doc = comment.decode("utf-8", "replace") if comment is not None else None
        out.append(_field(f.name, _arrow_type_to_avro(f.type, full, f.name, column), f.nullable, doc))
    return {"type": "record", "name": name, "namespace": namespace, "fields": out}


def _arrow_simple(dt: pa.DataType) -> AvroType | None:
    t = pa.types
    if t.is_boolean(dt):
        return "boolean"
    if t.is_int8(dt) or t.is_int16(dt) or t.is_int32(dt) or t.is_uint8(dt) or t.is_uint16(dt):
        return "int"
    if t.is_int64(dt) or t.is_uint32(dt):
        return "long"
    if t.is_float32(dt):
        return "float"
    if t.is_float64(dt):
        return "double"
    if t.is_string(dt) or t.is_large_string(dt) or getattr(t, "is_string_view", lambda _: False)(dt):
        return "string"
    if t.is_binary(dt) or t.is_large_binary(dt) or t.is_fixed_size_binary(dt) or \
            getattr(t, "is_binary_view", lambda _: False)(dt):
        return "bytes"
    if t.is_date(dt):
        return {"type": "int", "logicalType": "date"}
    if t.is_timestamp(dt):
        logical = "timestamp-micros" if dt.tz is not None else "local-timestamp-micros"
        return {"type": "long", "logicalType": logical}
    return None


def _arrow_type_to_avro(dt: pa.DataType, parent_full: str, fname: str, column: str) -> AvroType:
    t = pa.types
    if t.is_dictionary(dt):
        return _arrow_type_to_avro(dt.value_type, parent_full, fname, column)
    simple = _arrow_simple(dt)
    if simple is not None:
        return simple
    if t.is_uint64(dt):
        return _decimal(20, 0, f"{parent_full}.{fname}")
    if t.is_decimal(dt) and dt.precision <= 38 and dt.scale >= 0:
        return _decimal(dt.precision, dt.scale, f"{parent_full}.{fname}")
    if t.is_list(dt) or t.is_large_list(dt) or t.is_fixed_size_list(dt) or \
            getattr(t, "is_list_view", lambda _: False)(dt):
        items = _arrow_type_to_avro(dt.value_type, parent_full, fname, column + ".element")
        return {"type": "array", "items": _wrap(items, dt.value_field.nullable)}
    if t.is_map(dt):
        if _arrow_simple(dt.key_type) != "string" or t.is_dictionary(dt.key_type):
            raise SchemaMismatchError(
                f"Column '{column}' is {dt}, but Avro (and so Hudi) maps only allow string keys. Convert the "
                "keys to strings or store the map as a list of key/value structs.")
        values = _arrow_type_to_avro(dt.item_type, parent_full, fname, column + ".value")
        return {"type": "map", "values": _wrap(values, dt.item_field.nullable)}
    if t.is_struct(dt):
        return _arrow_struct_to_avro(list(dt), fname, parent_full, column + ".")
    raise SchemaMismatchError(
        f"Column '{column}' has Arrow type {dt}, which Spark and Hudi cannot store"
        + (" (a column of only nulls has no type)" if t.is_null(dt) else "")
        + ". Cast it to a supported type (string, integer, floating point, boolean, binary, date, timestamp, "
          "decimal with precision <= 38, list, map with string keys, struct) before writing.")


# ----------------------------------------------------------------------------- parsing helpers

def _expand(t: AvroType, space: str | None, names: dict[str, Any]) -> AvroType:
    """Deep copy of `t` with name references inlined and every named type's namespace explicit.

    Avro lets a nested named type inherit the enclosing namespace and later uses refer to it by name;
    resolving both up front keeps every other function a plain tree walk.
    """
    if isinstance(t, str):
        if t in _PRIMITIVES:
            return t
        for key in (t, _full(t, space)):
            if key in names:
                return copy.deepcopy(names[key])
        raise SchemaMismatchError(f"Avro schema refers to unknown type '{t}'.")
    if isinstance(t, list):
        return [_expand(x, space, names) for x in t]
    if not isinstance(t, dict) or "type" not in t:
        raise SchemaMismatchError(f"Not an Avro schema: {t!r}")
    kind = t["type"]
    if not isinstance(kind, str) or kind not in _PRIMITIVES.union(_NAMED, ("array", "map")):
        return _expand(kind, space, names)
    out = dict(t)
    if kind in _NAMED:
        name, ns = _split_name(t["name"], t.get("namespace", space))
        out["name"], out["namespace"] = name, ns
        if kind in ("record", "error"):
            out["fields"] = [dict(f, type=_expand(f["type"], ns, names)) for f in t.get("fields", [])]
        names[_full(name, ns)] = out
    for key in ("items", "values"):
        if key in t:
            out[key] = _expand(t[key], space, names)
    return out


def _kind(t: AvroType) -> str:
    return t if isinstance(t, str) else str(t["type"])


def _logical(t: AvroType) -> str | None:
    return t.get("logicalType") if isinstance(t, dict) else None


def _unwrap(t: AvroType, column: str) -> tuple[AvroType, bool]:
    """(non-null type, nullable) of an optional type; other unions cannot come from Spark."""
    if not isinstance(t, list):
        if _kind(t) == "null":
            raise SchemaMismatchError(f"Column '{column}' has Avro type null; give it a real type.")
        return t, False
    rest = [x for x in t if _kind(x) != "null"]
    if len(rest) != 1:
        raise SchemaMismatchError(
            f"Column '{column}' is the Avro union {json.dumps(t)}; only [\"null\", T] unions are supported.")
    return rest[0], len(rest) < len(t)


# ----------------------------------------------------------------------------- canonical form

def canonicalize(avro: dict) -> dict:
    """Hudi's `fixNullOrdering`: the form every schema takes once Hudi's writer has seen it.

    Turns a `hoodie.table.create.schema` (`["int","null"]`, no defaults) into the commit-metadata
    form. Record names are kept, decimals/fixed are renamed `<field path>.fixed`, enums become
    strings, record docs and custom properties are dropped, field docs survive.
    """
    top = _expand(avro, None, {})
    if _kind(top) not in ("record", "error"):
        raise SchemaMismatchError("A Hudi table schema must be an Avro record.")
    return _canon(top, _full(top["name"], top["namespace"]), "")


def _canon(t: AvroType, path: str, column: str) -> AvroType:
    kind, logical = _kind(t), _logical(t)
    if kind in ("record", "error"):
        fields = []
        for f in t["fields"]:
            base, nullable = _unwrap(f["type"], column + f["name"])
            sub = _canon(base, f"{path}.{f['name']}", f"{column}{f['name']}.")
            fields.append(_field(f["name"], sub, nullable, f.get("doc")))
        return {"type": "record", "name": t["name"], "namespace": t["namespace"], "fields": fields}
    if kind in ("array", "map"):
        key, label = ("items", "element") if kind == "array" else ("values", "value")
        sub, nullable = _unwrap(t[key], column + label)
        return {"type": kind, key: _wrap(_canon(sub, path, column), nullable)}
    if logical == "decimal" and kind in ("fixed", "bytes"):
        return _decimal(int(t["precision"]), int(t.get("scale", 0)), path)
    if kind == "fixed":
        return {"type": "fixed", "name": "fixed", "namespace": path, "size": t["size"]}
    if kind == "enum":
        return "string"
    if logical is not None and _DATE_TIME.get(logical) == kind:
        return {"type": kind, "logicalType": logical}
    return kind


# ----------------------------------------------------------------------------- meta fields, JSON

def with_meta_fields(avro: dict) -> dict:
    """Schema of base files and log blocks: the five `_hoodie_*` fields first, replacing any present."""
    meta = [{"name": m, "type": ["null", "string"], "doc": "", "default": None} for m in META_FIELDS]
    return dict(avro, fields=meta + copy.deepcopy(without_meta_fields(avro)["fields"]))


def without_meta_fields(avro: dict) -> dict:
    return dict(avro, fields=[f for f in avro["fields"] if f["name"] not in META_FIELDS])


def from_json(text: str) -> dict:
    schema = json.loads(text)
    if not isinstance(schema, dict):
        raise SchemaMismatchError(f"Expected an Avro record schema, got {text[:80]!r}")
    return schema


def to_json(avro: AvroType) -> str:
    """Compact JSON exactly as Java Avro 1.11 `Schema.toString()` prints it (key order included)."""
    return _json(avro, None, {})


def _js(value: Any) -> str:
    # Jackson escapes like Python's json with ensure_ascii=False (short forms for \b\t\n\f\r). A schema's
    # names and types are strings: json's own string encoder prints them as `json.dumps` does, without
    # its per-call set-up (~2 us, a schema of 23 columns holds ~150 strings).
    if type(value) is str:
        return _encode_string(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _obj(pairs: list[tuple[str, str]], props: dict, known: set[str], tail: list[tuple[str, str]]) -> str:
    """`{...}` from rendered values, then the remaining custom properties in order, then `tail`."""
    pairs = pairs + [(k, _js(v)) for k, v in props.items() if k not in known] + tail
    return "{" + ",".join(f"{_js(k)}:{v}" for k, v in pairs) + "}"


_SCHEMA_KEYS = {"type", "name", "namespace", "doc", "fields", "symbols", "size", "items", "values",
                "aliases", "default"}
_FIELD_KEYS = {"name", "type", "doc", "default", "order", "aliases"}


def _json(t: AvroType, space: str | None, defined: dict[str, Any]) -> str:
    """One schema node; `space` is the enclosing namespace, `defined` the named types printed so far."""
    if isinstance(t, str):
        return _js(t)
    if isinstance(t, list):
        return "[" + ",".join(_json(x, space, defined) for x in t) + "]"
    kind = t["type"]
    if not isinstance(kind, str):
        return _json(kind, space, defined)
    if kind in _PRIMITIVES and len(t) == 1:
        return _js(kind)
    pairs, tail = [("type", _js(kind))], []
    if kind in _NAMED:
        name, ns = _split_name(t["name"], t.get("namespace", space))
        if _full(name, ns) in defined:  # Avro prints a later occurrence as a name reference
            return _js(name if ns == space else _full(name, ns))
        defined[_full(name, ns)] = t
        pairs.append(("name", _js(name)))
        if (ns or "") != (space or ""):  # namespace only where it differs from the enclosing one
            pairs.append(("namespace", _js(ns or "")))
        if t.get("doc") is not None:
            pairs.append(("doc", _js(t["doc"])))
        space = ns
        tail = [(k, _js(t[k])) for k in ("aliases", "default") if t.get(k) is not None]
    if kind in ("record", "error"):
        pairs.append(("fields", "[" + ",".join(_field_json(f, space, defined) for f in t["fields"]) + "]"))
    pairs += [(k, _js(t[k])) for k in ("symbols", "size") if k in t]
    pairs += [(k, _json(t[k], space, defined)) for k in ("items", "values") if k in t]
    return _obj(pairs, t, _SCHEMA_KEYS, tail)


def _field_json(f: dict, space: str | None, defined: dict[str, Any]) -> str:
    shown = {"doc": f.get("doc") is not None, "default": "default" in f,
             "order": f.get("order", "ascending") != "ascending", "aliases": bool(f.get("aliases"))}
    pairs = [("name", _js(f["name"])), ("type", _json(f["type"], space, defined))]
    return _obj(pairs + [(k, _js(f[k])) for k, show in shown.items() if show], f, _FIELD_KEYS, [])


# ----------------------------------------------------------------------------- Avro -> read schemas

_ARROW_READ_TYPES: dict[tuple[str, str | None], pa.DataType] = {
    # (Avro type, logicalType) -> Arrow type
    ("boolean", None): pa.bool_(), ("int", None): pa.int32(), ("long", None): pa.int64(),
    ("float", None): pa.float32(), ("double", None): pa.float64(), ("string", None): pa.string(),
    ("enum", None): pa.string(), ("bytes", None): pa.binary(), ("null", None): pa.null(),
    ("int", "date"): pa.date32(), ("int", "time-millis"): pa.time32("ms"), ("long", "time-micros"): pa.time64("us"),
    ("long", "timestamp-millis"): pa.timestamp("ms", tz="UTC"),
    ("long", "timestamp-micros"): pa.timestamp("us", tz="UTC"),
    ("long", "local-timestamp-millis"): pa.timestamp("ms"), ("long", "local-timestamp-micros"): pa.timestamp("us"),
}


class TypeBuilder(Protocol):
    """Builds one engine's column types while `convert` walks an Avro schema (spark-avro's toSqlType rules
    are the walk; Arrow, Spark SQL and Spark's type names are the builders)."""

    def primitive(self, key: tuple[str, str | None]) -> Any: ...
    def struct(self, fields: list[tuple[str, Any, bool]]) -> Any: ...
    def array(self, element: Any, nullable: bool) -> Any: ...
    def map(self, value: Any, nullable: bool) -> Any: ...
    def decimal(self, precision: int, scale: int) -> Any: ...
    def fixed(self, size: int) -> Any: ...


class _ArrowTypes:
    def primitive(self, key: tuple[str, str | None]) -> Any:
        return _ARROW_READ_TYPES[key]

    def struct(self, fields: list[tuple[str, Any, bool]]) -> Any:
        return pa.struct([pa.field(n, t, nl) for n, t, nl in fields])

    def array(self, element: Any, nullable: bool) -> Any:
        return pa.list_(pa.field("element", element, nullable))

    def map(self, value: Any, nullable: bool) -> Any:
        return pa.map_(pa.string(), pa.field("value", value, nullable))

    def decimal(self, precision: int, scale: int) -> Any:
        return (pa.decimal128 if precision <= 38 else pa.decimal256)(precision, scale)

    def fixed(self, size: int) -> Any:
        return pa.binary(size)


_SQL_NAMES = {  # Spark's simpleString of each read type (spark-avro's toSqlType), for error messages
    ("boolean", None): "boolean", ("int", None): "int", ("long", None): "bigint", ("float", None): "float",
    ("double", None): "double", ("string", None): "string", ("enum", None): "string", ("bytes", None): "binary",
    ("null", None): "void", ("int", "date"): "date", ("int", "time-millis"): "int", ("long", "time-micros"): "bigint",
    ("long", "timestamp-millis"): "timestamp", ("long", "timestamp-micros"): "timestamp",
    ("long", "local-timestamp-millis"): "timestamp_ntz", ("long", "local-timestamp-micros"): "timestamp_ntz",
}


class _SqlNames:
    """Spark SQL type names (`DataType.simpleString`) without pyspark: users of either engine read
    schema errors in the names Hudi's Spark writer would print."""

    def primitive(self, key: tuple[str, str | None]) -> Any:
        return _SQL_NAMES[key]

    def struct(self, fields: list[tuple[str, Any, bool]]) -> Any:
        return "struct<" + ",".join(f"{n}:{t}" for n, t, _ in fields) + ">"

    def array(self, element: Any, nullable: bool) -> Any:
        return f"array<{element}>"

    def map(self, value: Any, nullable: bool) -> Any:
        return f"map<string,{value}>"

    def decimal(self, precision: int, scale: int) -> Any:
        return f"decimal({precision},{scale})"

    def fixed(self, size: int) -> Any:
        return "binary"


def convert(avro: dict, types: TypeBuilder) -> Any:
    """The read type of an Avro record schema, built by `types`."""
    return _convert(_expand(avro, None, {}), types)[0]


def avro_to_arrow(avro: dict) -> pa.Schema:
    """Arrow read schema, as pyarrow reads Hudi's parquet (timestamp-micros -> `timestamp[us, tz=UTC]`,
    local-timestamp-micros -> `timestamp[us]`); also `conform_table`'s target. List elements are
    named `element` like Spark's Arrow export (pyarrow ignores child names in type equality)."""
    dt = convert(avro, _ArrowTypes())
    if not pa.types.is_struct(dt):
        raise SchemaMismatchError("A Hudi table schema must be an Avro record.")
    return pa.schema(list(dt))


def _convert(t: AvroType, types: TypeBuilder) -> tuple[Any, bool]:
    """(type, nullable); nullability comes from the union, as in spark-avro."""
    if isinstance(t, list):
        rest = [x for x in t if _kind(x) != "null"]
        nullable = len(rest) < len(t)
        kinds = tuple(sorted(_kind(x) for x in rest))
        if len(rest) == 1:
            return _convert(rest[0], types)[0], nullable
        if kinds in (("int", "long"), ("double", "float")):  # Spark widens these two unions
            return types.primitive(("long" if kinds[0] == "int" else "double", None)), nullable
        # Other unions become a struct of member0, member1, ... (all nullable), like spark-avro.
        members = [(f"member{i}", _convert(x, types)[0], True) for i, x in enumerate(rest)]
        return types.struct(members), nullable
    kind, logical = _kind(t), _logical(t)
    if kind in ("record", "error"):
        return types.struct([(f["name"], *_convert(f["type"], types)) for f in t["fields"]]), False
    if kind == "array":
        return types.array(*_convert(t["items"], types)), False
    if kind == "map":
        return types.map(*_convert(t["values"], types)), False
    if kind in ("fixed", "bytes") and logical == "decimal":
        return types.decimal(int(t["precision"]), int(t.get("scale", 0))), False
    # Unknown logical types are ignored, as Avro does.
    key = (kind, logical) if (kind, logical) in _ARROW_READ_TYPES else (kind, None)
    if key in _ARROW_READ_TYPES:
        return types.primitive(key), kind == "null"
    if kind == "fixed":
        return types.fixed(int(t["size"])), False
    raise SchemaMismatchError(f"Unsupported Avro type {kind!r}.")


# ----------------------------------------------------------------------------- evolution

def evolve(table: dict | None, incoming: dict, *, reconcile: bool = False, set_null_for_missing: bool = False,
           allow_column_drop: bool = False) -> dict:
    """The schema a batch is written with, given the table's latest schema (None for a new table).

    Follows Hudi 0.14's `HoodieSchemaUtils.deduceWriterSchema`: the batch's schema is first canonicalized
    against the table (`reconcileSchemaRequirements`: nullability loosened, a narrower batch type promoted
    to the table's), then checked (`checkValidEvolution`). Columns keep the table's order. A column in both
    gets the wider type (int -> long -> float -> double; a decimal accepts a batch decimal with no more
    integer or fraction digits); anything else is an error. New columns must be nullable and are appended
    (also inside structs). A table column missing from the batch (also a nested field):

    * default: an error (Hudi's `MissingSchemaFieldException`);
    * `reconcile` (`hoodie.datasource.write.reconcile.schema`) or `set_null_for_missing`
      (`hoodie.write.set.null.for.missing.columns`): kept, made nullable, and the writer pads nulls;
    * `allow_column_drop` (`hoodie.datasource.write.schema.allow.auto.evolution.column.drop`, without
      `reconcile`): dropped from the writer schema, as Hudi takes the batch's schema then (it wins over
      `set_null_for_missing`, as in Hudi, where that option only applies on the default path).

    Meta fields are ignored. The result is canonical and keeps the table's record names.
    """
    inc = canonicalize(without_meta_fields(incoming))
    if table is None:
        return inc
    tab = canonicalize(without_meta_fields(table))
    if reconcile or (set_null_for_missing and not allow_column_drop):
        on_missing = "keep"
    else:
        on_missing = "drop" if allow_column_drop else "error"
    missing: list[str] = []
    merged = _merge_record(tab, inc, "", on_missing, missing)
    if missing and on_missing == "error":
        raise SchemaMismatchError(
            f"Column(s) {', '.join(repr(c) for c in missing)} exist in the table schema but are missing "
            "from the incoming batch. Add them to the DataFrame (e.g. F.lit(None).cast(<type>)), or set "
            "hoodie.write.set.null.for.missing.columns=true (or hoodie.datasource.write.reconcile.schema=true) "
            "to keep them and write nulls, or hoodie.datasource.write.schema.allow.auto.evolution.column.drop="
            "true to drop them from the table schema.")
    return canonicalize(merged)


def _spark_name(t: AvroType) -> str:
    return str(_convert(t, _SqlNames())[0])


def _merge_record(tab: dict, inc: dict, prefix: str, on_missing: str, missing: list[str]) -> dict:
    inc_fields = {f["name"]: f for f in inc["fields"]}
    by_lower = {f["name"].lower(): f["name"] for f in tab["fields"]}
    fields = []
    for tf in tab["fields"]:
        column = prefix + tf["name"]
        tbase, tnull = _unwrap(tf["type"], column)
        f_in = inc_fields.pop(tf["name"], None)
        if f_in is None:
            missing.append(column)
            if on_missing != "drop":
                fields.append(_field(tf["name"], tbase, True, tf.get("doc")))
            continue
        ibase, inull = _unwrap(f_in["type"], column)
        base = _merge_type(tbase, ibase, column, on_missing, missing)
        fields.append(_field(tf["name"], base, tnull or inull, f_in.get("doc", tf.get("doc"))))
    for name, f in inc_fields.items():  # new columns, in batch order
        column = prefix + name
        base, nullable = _unwrap(f["type"], column)
        if name.lower() in by_lower:
            raise SchemaMismatchError(
                f"Column '{column}' differs only in letter case from table column "
                f"'{prefix}{by_lower[name.lower()]}'. Hudi field names are case-sensitive; rename it.")
        if not nullable:
            raise SchemaMismatchError(
                f"New column '{column}' ({_spark_name(base)}) is non-nullable, but rows already in the table "
                "have no value for it. Make it nullable (new columns must be nullable) before writing.")
        base = _rebase(base, _full(tab["name"], tab["namespace"]), name)
        fields.append(_field(name, base, True, f.get("doc")))
    return {"type": "record", "name": tab["name"], "namespace": tab["namespace"], "fields": fields}


def _merge_type(tb: AvroType, ib: AvroType, column: str, on_missing: str, missing: list[str]) -> AvroType:
    tk, ik = _kind(tb), _kind(ib)
    if tk == ik == "record":
        return _merge_record(tb, ib, column + ".", on_missing, missing)
    if tk == ik and tk in ("array", "map"):
        key, label = ("items", "element") if tk == "array" else ("values", "value")
        sub = f"{column}.{label}"
        (tsub, tn), (isub, inn) = _unwrap(tb[key], sub), _unwrap(ib[key], sub)
        return {"type": tk, key: _wrap(_merge_type(tsub, isub, sub, on_missing, missing), tn or inn)}
    tkey, ikey = _type_key(tb), _type_key(ib)
    if tkey == ikey:
        return tb
    if tkey[1:] == ikey[1:] == (None,):  # plain numbers only: no logical type, not nested
        if tkey[0] in _PROMOTIONS.get(ikey[0], ()):
            return tb
        if ikey[0] in _PROMOTIONS.get(tkey[0], ()):
            return ib
    if tkey[0] == ikey[0] == "decimal" and _decimal_holds(tkey[1:], ikey[1:]):
        return tb
    tname, iname = _spark_name(tb), _spark_name(ib)
    raise SchemaMismatchError(
        f"Column '{column}' is {tname} in the table but {iname} in the incoming batch, and neither type "
        f"can be widened to the other (allowed: int -> bigint -> float -> double, and a batch decimal with no "
        f"more integer or fraction digits than the table's). Cast the column to {tname} before writing, or "
        f"overwrite the table to change the column's type.")


def _decimal_holds(table: tuple, batch: tuple) -> bool:
    """Hudi's `isTypeUpdateAllow(batch decimal, table decimal)`: every batch value fits the table's type
    (no fewer integer digits, no fewer fraction digits), so canonicalization promotes the batch's type.

    A batch decimal wider than the table's is refused: Hudi 0.14 only accepts it when both happen to need
    the same fixed size (Avro compares fixed sizes, not precisions) and then changes the table's type, which
    pyhudi does not do."""
    (tp, ts), (ip, is_) = table, batch
    return tp - ts >= ip - is_ and ts >= is_


def _type_key(t: AvroType) -> tuple:
    kind, logical = _kind(t), _logical(t)
    if logical == "decimal":
        return ("decimal", int(t["precision"]), int(t.get("scale", 0)))
    if kind == "fixed":
        return ("fixed", int(t["size"]))
    return (kind, logical if logical in _DATE_TIME else None)


def _rebase(t: AvroType, parent_full: str, fname: str) -> AvroType:
    """Rename the records of a new column so they sit under the table's parent record name."""
    if isinstance(t, list):
        return [_rebase(x, parent_full, fname) for x in t]
    if _kind(t) == "record":
        full = f"{parent_full}.{fname}"
        fields = [dict(f, type=_rebase(f["type"], full, f["name"])) for f in t["fields"]]
        return dict(t, name=fname, namespace=parent_full, fields=fields)
    if _kind(t) in ("array", "map"):
        key = "items" if _kind(t) == "array" else "values"
        return dict(t, **{key: _rebase(t[key], parent_full, fname)})
    return t


# ----------------------------------------------------------------------------- Arrow conforming

def conform_table(table: pa.Table, target: pa.Schema) -> pa.Table:
    """Reorder, widen-cast and null-pad `table` to `target` (e.g. `avro_to_arrow(writer schema)`).

    Runs in executors on every written file, so everything is column-at-a-time Arrow compute: each
    record batch is treated as one struct, and nested structs/lists/maps are rebuilt from their cast
    children, never row by row. Extra columns are an error (evolve the schema first); nulls in a
    required field raise InvalidRecordError, as Avro serialization does in Hudi.
    """
    struct_type = pa.struct(list(target))
    out = []
    for batch in table.to_batches() or [pa.RecordBatch.from_pylist([], schema=table.schema)]:
        arr = pa.StructArray.from_arrays(batch.columns, fields=list(batch.schema))
        out.append(pa.RecordBatch.from_struct_array(_conform_struct(arr, struct_type, "")))
    return pa.Table.from_batches(out, schema=target)


def _conform_array(arr: pa.Array, field: pa.Field, column: str) -> pa.Array:
    target, src = field.type, arr.type
    if src == target:
        return arr
    if pa.types.is_struct(target) and pa.types.is_struct(src):
        return _conform_struct(arr, target, column)
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_list(target) and (pa.types.is_list(src) or pa.types.is_large_list(src)):
        offsets, start, length = _offsets(arr)
        values = _conform_array(arr.values.slice(start, length), target.value_field, column + ".element")
        _check_nulls(values, None, target.value_field, column + ".element")
        return pa.ListArray.from_arrays(offsets, values, type=target, mask=mask)
    if pa.types.is_map(target) and pa.types.is_map(src):
        offsets, start, length = _offsets(arr)
        keys = _conform_array(arr.keys.slice(start, length), target.key_field, column + ".key")
        items = _conform_array(arr.items.slice(start, length), target.item_field, column + ".value")
        _check_nulls(items, None, target.item_field, column + ".value")
        # Built as list<struct<key, value>> (same layout) and viewed as the map, because
        # MapArray.from_arrays only accepts a null mask since pyarrow 17.
        entries = pa.StructArray.from_arrays([keys, items], fields=[target.key_field, target.item_field])
        entries_type = pa.list_(pa.field("entries", entries.type, False))
        return pa.ListArray.from_arrays(offsets, entries, type=entries_type, mask=mask).view(target)
    if pa.types.is_nested(target) or pa.types.is_nested(src):
        raise SchemaMismatchError(f"Column '{column}' is {src} in the batch but {target} in the table.")
    # Integer -> floating widening may round (as Java's does); every other cast must be exact.
    try:
        return arr.cast(target, safe=not (pa.types.is_integer(src) and pa.types.is_floating(target)))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise SchemaMismatchError(f"Column '{column}' ({src}) cannot be converted to {target}: {e}") from e


def _offsets(arr: pa.Array) -> tuple[pa.Array, int, int]:
    """Zero-based int32 offsets plus the (start, length) window of child values they cover.

    Arrow refuses a null mask together with the offsets of a sliced array, so rebase them to 0.
    """
    offsets = arr.offsets
    start, end = offsets[0].as_py(), offsets[-1].as_py()
    if start:
        offsets = pc.subtract(offsets, pa.scalar(start, offsets.type))
    return offsets.cast(pa.int32()), start, end - start


def _conform_struct(arr: pa.StructArray, target: pa.StructType, column: str) -> pa.StructArray:
    prefix = column + "." if column else ""
    source = {arr.type.field(i).name: i for i in range(arr.type.num_fields)}
    extra = [repr(prefix + n) for n in source if target.get_field_index(n) < 0]
    if extra:
        raise SchemaMismatchError(
            f"Column(s) {', '.join(extra)} are not in the writer schema; evolve the schema first "
            "(pyhudi.io.schema.evolve) so new columns are added to the table.")
    parent_valid = arr.is_valid() if arr.null_count else None
    children = []
    for f in target:
        path = prefix + f.name
        if f.name not in source:
            if not f.nullable:
                raise SchemaMismatchError(f"Column '{path}' is required by the table schema but missing.")
            children.append(pa.nulls(len(arr), f.type))
            continue
        child = _conform_array(arr.field(source[f.name]), f, path)
        _check_nulls(child, parent_valid, f, path)
        children.append(child)
    mask = arr.is_null() if arr.null_count else None
    return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)


def _check_nulls(child: pa.Array, parent_valid: pa.Array | None, field: pa.Field, path: str) -> None:
    """Nulls in a required field are an error, except under a null parent (they are unset there)."""
    if field.nullable or not child.null_count:
        return
    bad = child.null_count if parent_valid is None else pc.sum(pc.and_(child.is_null(), parent_valid)).as_py()
    if bad:
        raise InvalidRecordError(
            f"Column '{path}' is non-nullable in the table schema but the batch has {bad} null value(s). "
            "Fill or filter them before writing.")
