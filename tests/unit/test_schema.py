"""Avro schema derivation, JSON form, read schemas, evolution and Arrow conforming.

The source of truth is the set of real Hudi tables in shared/samples: every commit's
`extraMetadata.schema`, `hoodie.table.create.schema`, every base file's `parquet.avro.schema` and
every Avro log block's schema header were written by Hudi's Spark writer, so we compare byte for byte.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import types as T

from pyhudi.engine.spark.schema import avro_to_spark, spark_to_avro
from pyhudi.errors import InvalidRecordError, SchemaMismatchError
from pyhudi.io.schema import (
    META_FIELDS,
    avro_to_arrow,
    canonicalize,
    conform_table,
    evolve,
    from_json,
    has_column,
    record_name,
    to_json,
    with_meta_fields,
    without_meta_fields,
)
from tests.helpers import samples_root

SAMPLES = samples_root() / "tables"
ZIPS = sorted(SAMPLES.glob("*.zip")) if SAMPLES.is_dir() else []


@dataclass
class Sample:
    name: str
    table: str
    root: Path
    commit_schemas: list[str] = field(default_factory=list)
    create_schema: str = ""
    footer_schemas: list[tuple[Path, str]] = field(default_factory=list)
    spark_row_metadata: list[str] = field(default_factory=list)
    log_schemas: list[str] = field(default_factory=list)
    base_files: list[Path] = field(default_factory=list)


def _unescape_properties(value: str) -> str:
    """Java properties escaping, as far as Hudi's writer uses it (`\\:`, `\\=`, `\\\\`, `\\uXXXX`)."""
    out, i = [], 0
    while i < len(value):
        c = value[i]
        if c == "\\" and i + 1 < len(value):
            nxt = value[i + 1]
            if nxt == "u":
                out.append(chr(int(value[i + 2:i + 6], 16)))
                i += 6
                continue
            out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _log_block_schema(data: bytes) -> str:
    """The writer schema in an Avro data block header: the first balanced `{"type":"record"...}`."""
    start = data.index(b'{"type":"record"')
    depth, in_str, esc = 0, False, False
    for j in range(start, len(data)):
        c = data[j:j + 1]
        if in_str:
            in_str = not (c == b'"' and not esc)
            esc = c == b"\\" and not esc
        elif c == b'"':
            in_str = True
        elif c == b"{":
            depth += 1
        elif c == b"}":
            depth -= 1
            if depth == 0:
                return data[start:j + 1].decode()
    raise AssertionError("unterminated schema")


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Sample]:
    if not ZIPS:
        pytest.skip(f"sample tables not found under {SAMPLES}")
    out: dict[str, Sample] = {}
    for zp in ZIPS:
        dest = tmp_path_factory.mktemp(zp.stem)
        with zipfile.ZipFile(zp) as z:
            keep = [m for m in z.namelist() if not m.startswith("__MACOSX/")]
            z.extractall(dest, keep)
            (top,) = {m.split("/")[0] for m in keep} - {"gold_data", "gold_options"}
        root = dest / top
        s = Sample(zp.stem, top, root)
        for line in (root / ".hoodie" / "hoodie.properties").read_text().splitlines():
            if line.startswith("hoodie.table.create.schema="):
                s.create_schema = _unescape_properties(line.split("=", 1)[1])
        for c in sorted((root / ".hoodie").glob("*commit")):
            s.commit_schemas.append(json.loads(c.read_text())["extraMetadata"]["schema"])
        for p in sorted(root.rglob("*.parquet")):
            s.base_files.append(p)
            md = pq.read_metadata(p).metadata or {}
            if b"parquet.avro.schema" in md:
                s.footer_schemas.append((p, md[b"parquet.avro.schema"].decode()))
            if b"org.apache.spark.sql.parquet.row.metadata" in md:
                s.spark_row_metadata.append(md[b"org.apache.spark.sql.parquet.row.metadata"].decode())
        for p in sorted(root.rglob(".*.log.*")):
            s.log_schemas.append(_log_block_schema(p.read_bytes()))
        out[zp.stem] = s
    return out


# --------------------------------------------------------------------------- Spark -> Avro

_NESTED = {
    "arrayField": T.ArrayType(T.StructType([T.StructField("arr_struct_f1", T.StringType()),
                                            T.StructField("arr_struct_f2", T.IntegerType())])),
    "mapField": T.MapType(T.StringType(), T.StructType([
        T.StructField("map_field_value_struct_f1", T.DoubleType()),
        T.StructField("map_field_value_struct_f2", T.BooleanType())])),
    "structField": T.StructType([
        T.StructField("field1", T.StringType()), T.StructField("field2", T.IntegerType()),
        T.StructField("child_struct", T.StructType([T.StructField("child_field1", T.DoubleType()),
                                                    T.StructField("child_field2", T.BooleanType())]))]),
}
_RICH_TYPES: dict[str, T.DataType] = {
    "id": T.IntegerType(), "name": T.StringType(), "isActive": T.BooleanType(), "byteField": T.ByteType(),
    "shortField": T.ShortType(), "intField": T.IntegerType(), "longField": T.LongType(),
    "floatField": T.FloatType(), "doubleField": T.DoubleType(), "decimalField": T.DecimalType(10, 5),
    "dateField": T.DateType(), "timestampField": T.TimestampType(), "binaryField": T.BinaryType(), **_NESTED,
}
_BASE = ["id", "name", "isActive", "intField", "longField", "floatField", "doubleField", "decimalField",
         "dateField", "timestampField", "binaryField", "arrayField", "mapField", "structField"]
# Column order of each sample's CREATE TABLE (Spark SQL puts partition columns last).
_LAYOUTS = {
    "v6_complexkeygen_hivestyle": _BASE + ["byteField", "shortField"],
    "v6_nonpartitioned": _BASE[:3] + ["byteField", "shortField"] + _BASE[3:],
    "v6_simplekeygen_hivestyle_no_metafields": _BASE[:3] + ["shortField"] + _BASE[3:] + ["byteField"],
    "v6_simplekeygen_nonhivestyle": _BASE[:3] + ["shortField"] + _BASE[3:] + ["byteField"],
    "v6_simplekeygen_nonhivestyle_overwritetable": _BASE[:3] + ["shortField"] + _BASE[3:] + ["byteField"],
    "v6_trips_8i1u": ["ts", "uuid", "rider", "driver", "fare", "city"],
    "v6_empty": ["id", "name", "isActive"],
}
_TRIPS = {"ts": T.LongType(), "uuid": T.StringType(), "rider": T.StringType(), "driver": T.StringType(),
          "fare": T.DoubleType(), "city": T.StringType()}


def _s(*fields: T.StructField) -> T.StructType:
    return T.StructType(list(fields))


def _f(name: str, dtype: T.DataType, nullable: bool = True) -> T.StructField:
    return T.StructField(name, dtype, nullable)


def _ddl_struct(table: str) -> T.StructType:
    types = {**_RICH_TYPES, **_TRIPS}
    return T.StructType([T.StructField(c, types[c], True) for c in _LAYOUTS[table]])


def test_spark_to_avro_equals_every_sample_commit_schema(samples: dict[str, Sample]) -> None:
    seen = set()
    for s in samples.values():
        for text in s.commit_schemas:
            got = spark_to_avro(_ddl_struct(s.table), s.table)
            assert got == json.loads(text), s.name
            assert to_json(got) == text, s.name
            seen.add(s.table)
    assert seen == set(_LAYOUTS) - {"v6_empty"}  # every distinct non-empty layout was checked


def test_spark_to_avro_from_spark_written_row_metadata(samples: dict[str, Sample]) -> None:
    """The MOR parquet files carry the exact Spark StructType Hudi wrote (byte/short already int)."""
    checked = 0
    for s in samples.values():
        for rm in s.spark_row_metadata:
            st = T.StructType.fromJson(json.loads(rm))
            data = T.StructType([f for f in st.fields if f.name not in META_FIELDS])
            assert to_json(spark_to_avro(data, s.table)) == s.commit_schemas[0], s.name
            checked += 1
    assert checked >= 10


def test_record_naming_and_sanitizing() -> None:
    assert record_name("trips") == ("trips_record", "hoodie.trips")
    assert record_name("my-table.v2") == ("my__table__v2_record", "hoodie.my__table__v2")
    assert record_name("1st") == ("__st_record", "hoodie.__st")


def test_spark_to_avro_non_nullable_comments_and_logical_types() -> None:
    st = T.StructType([
        T.StructField("k", T.LongType(), False, {"comment": "the key"}),
        T.StructField("ntz", T.TimestampNTZType(), True),
        T.StructField("d1", T.DecimalType(1, 0), False),
        T.StructField("d38", T.DecimalType(38, 10), True),
        T.StructField("tags", T.ArrayType(T.StringType(), containsNull=False), False),
        T.StructField("m", T.MapType(T.StringType(), T.DecimalType(18, 2), valueContainsNull=False), True),
        T.StructField("s", T.StructType([T.StructField("dec", T.DecimalType(9, 3), False),
                                         T.StructField("aa", T.ArrayType(T.ArrayType(T.ShortType())))]),
                      False),
        T.StructField("c", T.VarcharType(5), True),
    ])
    got = spark_to_avro(st, "t")
    assert to_json(got) == (
        '{"type":"record","name":"t_record","namespace":"hoodie.t","fields":['
        '{"name":"k","type":"long","doc":"the key"},'
        '{"name":"ntz","type":["null",{"type":"long","logicalType":"local-timestamp-micros"}],'
        '"default":null},'
        '{"name":"d1","type":{"type":"fixed","name":"fixed","namespace":"hoodie.t.t_record.d1","size":1,'
        '"logicalType":"decimal","precision":1,"scale":0}},'
        '{"name":"d38","type":["null",{"type":"fixed","name":"fixed","namespace":"hoodie.t.t_record.d38",'
        '"size":16,"logicalType":"decimal","precision":38,"scale":10}],"default":null},'
        '{"name":"tags","type":{"type":"array","items":"string"}},'
        '{"name":"m","type":["null",{"type":"map","values":{"type":"fixed","name":"fixed",'
        '"namespace":"hoodie.t.t_record.m","size":8,"logicalType":"decimal","precision":18,"scale":2}}],'
        '"default":null},'
        '{"name":"s","type":{"type":"record","name":"s","namespace":"hoodie.t.t_record","fields":['
        '{"name":"dec","type":{"type":"fixed","name":"fixed","namespace":"hoodie.t.t_record.s.dec","size":4,'
        '"logicalType":"decimal","precision":9,"scale":3}},'
        '{"name":"aa","type":["null",{"type":"array","items":["null",{"type":"array",'
        '"items":["null","int"]}]}],'
        '"default":null}]}},'
        '{"name":"c","type":["null","string"],"default":null}]}')
    assert canonicalize(got) == got  # already in the form Hudi's writer leaves schemas in


@pytest.mark.parametrize(("dtype", "words"), [
    (T.MapType(T.IntegerType(), T.StringType()), ["'bad'", "string keys"]),
    (T.NullType(), ["'bad'", "only nulls"]),
    (T.DayTimeIntervalType(), ["'bad'", "interval"]),
    (T.StructType([T.StructField("x", T.MapType(T.LongType(), T.LongType()))]), ["'bad.x'"]),
])
def test_spark_to_avro_rejects_unstorable_types(dtype: T.DataType, words: list[str]) -> None:
    with pytest.raises(SchemaMismatchError) as e:
        spark_to_avro(T.StructType([T.StructField("bad", dtype)]), "t")
    for w in words:
        assert w in str(e.value)


def test_spark_to_avro_rejects_invalid_avro_names() -> None:
    with pytest.raises(SchemaMismatchError, match="'my col'"):
        spark_to_avro(T.StructType([T.StructField("my col", T.IntegerType())]), "t")
    # Java Avro accepts Unicode letters, so must we.
    got = spark_to_avro(T.StructType([T.StructField("größe", T.IntegerType())]), "t")
    assert got["fields"][0]["name"] == "größe"
    with pytest.raises(SchemaMismatchError, match="'s.x' appears twice"):
        spark_to_avro(_s(_f("s", _s(_f("x", T.IntegerType()), _f("x", T.LongType())))), "t")


# --------------------------------------------------------------------------- JSON, meta fields, create.schema

def test_to_json_reproduces_every_stored_schema_string(samples: dict[str, Sample]) -> None:
    texts = [t for s in samples.values() for t in s.commit_schemas + [s.create_schema] + s.log_schemas]
    texts += [t for s in samples.values() for _, t in s.footer_schemas]
    assert len(texts) > 40
    for text in texts:
        assert to_json(from_json(text)) == text


def test_with_meta_fields_matches_base_file_footers_and_log_blocks(samples: dict[str, Sample]) -> None:
    checked = 0
    for s in samples.values():
        stored = [t for _, t in s.footer_schemas] + s.log_schemas
        for text in stored:
            assert to_json(with_meta_fields(json.loads(s.commit_schemas[0]))) == text, s.name
            checked += 1
    assert checked >= 20
    meta = with_meta_fields({"type": "record", "name": "r", "namespace": "n", "fields": []})["fields"]
    assert [f["name"] for f in meta] == META_FIELDS
    # Idempotent: meta fields already present are replaced, not doubled (HoodieAvroUtils.addMetadataFields).
    once = with_meta_fields(json.loads(samples["cow__v6_nonpartitioned"].commit_schemas[0]))
    assert with_meta_fields(once) == once
    assert without_meta_fields(once) == json.loads(samples["cow__v6_nonpartitioned"].commit_schemas[0])


def test_create_schema_from_properties(samples: dict[str, Sample]) -> None:
    for s in samples.values():
        create = from_json(s.create_schema)
        assert create["fields"][0]["type"][-1] == "null"  # `["int","null"]`, type first, no default
        assert to_json(create) == s.create_schema
        assert avro_to_spark(create).names == _LAYOUTS[s.table]
        assert all(f.nullable for f in avro_to_spark(create).fields)
        for commit in s.commit_schemas:
            # fixNullOrdering turns the create.schema into the commit-metadata form, byte for byte.
            assert to_json(canonicalize(create)) == commit
            assert avro_to_spark(create) == avro_to_spark(json.loads(commit))
            assert avro_to_arrow(create) == avro_to_arrow(json.loads(commit))


def test_to_json_names_references_and_empty_namespace() -> None:
    fixed = {"type": "fixed", "name": "f", "namespace": "a.b", "size": 2}
    schema = {"type": "record", "name": "r", "namespace": "a", "doc": "d", "fields": [
        {"name": "x", "type": fixed},
        {"name": "y", "type": fixed},  # a second definition is printed as a name reference
        {"name": "z", "type": {"type": "record", "name": "in", "namespace": "a", "fields": []}},
        {"name": "w", "type": {"type": "record", "name": "top", "fields": [], "namespace": ""}},
        {"name": "o", "type": "int", "order": "descending", "aliases": ["p"], "default": 1, "doc": "é\n"},
    ]}
    assert to_json(schema) == (
        '{"type":"record","name":"r","namespace":"a","doc":"d","fields":['
        '{"name":"x","type":{"type":"fixed","name":"f","namespace":"a.b","size":2}},'
        '{"name":"y","type":"a.b.f"},'
        '{"name":"z","type":{"type":"record","name":"in","fields":[]}},'
        '{"name":"w","type":{"type":"record","name":"top","namespace":"","fields":[]}},'
        '{"name":"o","type":"int","doc":"é\\n","default":1,"order":"descending","aliases":["p"]}]}')
    # References resolve when reading.
    assert avro_to_spark(schema)["y"].dataType == T.BinaryType()


# --------------------------------------------------------------------------- read schemas

def test_avro_to_spark_types_and_round_trip(samples: dict[str, Sample]) -> None:
    commit = json.loads(samples["cow__v6_complexkeygen_hivestyle"].commit_schemas[0])
    st = avro_to_spark(commit)
    assert st["timestampField"].dataType == T.TimestampType()
    assert st["decimalField"].dataType == T.DecimalType(10, 5)
    assert st["dateField"].dataType == T.DateType()
    assert st["byteField"].dataType == T.IntegerType()  # byte/short come back as int
    map_type = st["mapField"].dataType
    assert isinstance(map_type, T.MapType) and map_type.valueContainsNull
    assert all(f.nullable for f in st.fields)
    for s in samples.values():
        for text in s.commit_schemas:
            assert to_json(spark_to_avro(avro_to_spark(json.loads(text)), s.table)) == text

    st2 = T.StructType([
        T.StructField("k", T.LongType(), False), T.StructField("ntz", T.TimestampNTZType()),
        T.StructField("a", T.ArrayType(T.IntegerType(), False), False),
        T.StructField("m", T.MapType(T.StringType(), T.DecimalType(5, 1), False)),
        T.StructField("s", T.StructType([T.StructField("b", T.BinaryType(), False)])),
    ])
    assert avro_to_spark(spark_to_avro(st2, "x")) == st2


def test_avro_to_spark_spark_union_rules() -> None:
    schema = {"type": "record", "name": "r", "fields": [
        {"name": "il", "type": ["int", "long"]},
        {"name": "fd", "type": ["null", "float", "double"]},
        {"name": "u", "type": ["string", "int"]},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A"]}},
        {"name": "ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    ]}
    st = avro_to_spark(schema)
    assert st["il"] == T.StructField("il", T.LongType(), False)
    assert st["fd"] == T.StructField("fd", T.DoubleType(), True)
    assert st["u"].dataType == T.StructType([T.StructField("member0", T.StringType()),
                                             T.StructField("member1", T.IntegerType())])
    assert st["e"].dataType == T.StringType()
    assert st["ms"].dataType == T.TimestampType()


def _normalize_arrow(t: pa.DataType) -> pa.DataType:
    """Ignore list element names and list element nullability.

    parquet-avro writes old two-level lists (`repeated group array`), which can hold no null element,
    although the Avro schema says the items are nullable.
    """
    if pa.types.is_list(t):
        return pa.list_(pa.field("element", _normalize_arrow(t.value_type)))
    if pa.types.is_map(t):
        return pa.map_(t.key_type, pa.field("value", _normalize_arrow(t.item_type), t.item_field.nullable))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _normalize_arrow(f.type), f.nullable) for f in t])
    return t


def test_avro_to_arrow_matches_sample_parquet_files(samples: dict[str, Sample]) -> None:
    checked = 0
    for s in samples.values():
        if not s.commit_schemas:
            continue
        expected = avro_to_arrow(with_meta_fields(json.loads(s.commit_schemas[0])))
        for p in s.base_files:
            actual = pq.read_schema(p)
            assert actual.names == expected.names, p
            for a, e in zip(actual, expected, strict=True):
                assert _normalize_arrow(a.type) == _normalize_arrow(e.type), (p, a, e)
                assert a.nullable == e.nullable
            checked += 1
    assert checked >= 25
    one = avro_to_arrow(json.loads(samples["cow__v6_nonpartitioned"].commit_schemas[0]))
    assert one.field("timestampField").type == pa.timestamp("us", tz="UTC")
    assert one.field("decimalField").type == pa.decimal128(10, 5)
    assert one.field("dateField").type == pa.date32()
    assert one.field("byteField").type == pa.int32()
    assert pa.types.is_map(one.field("mapField").type)


def test_avro_to_arrow_non_nullable_and_ntz() -> None:
    st = T.StructType([T.StructField("k", T.LongType(), False), T.StructField("ntz", T.TimestampNTZType()),
                       T.StructField("a", T.ArrayType(T.IntegerType(), False), True)])
    sch = avro_to_arrow(spark_to_avro(st, "t"))
    assert sch.field("k") == pa.field("k", pa.int64(), nullable=False)
    assert sch.field("ntz").type == pa.timestamp("us")
    assert not sch.field("a").type.value_field.nullable


# --------------------------------------------------------------------------- evolve

TABLE = spark_to_avro(_s(_f("id", T.IntegerType(), False), _f("v", T.IntegerType()),
                         _f("name", T.StringType()),
                         _f("s", _s(_f("a", T.IntegerType()), _f("b", T.StringType())))), "t")


def test_evolve_new_table_and_identical_batch() -> None:
    assert evolve(None, TABLE) == TABLE
    assert evolve(TABLE, TABLE) == TABLE
    # A create.schema-style table schema is canonicalized on the way.
    create = from_json(to_json(TABLE).replace('["null","int"],"default":null', '["int","null"]'))
    assert evolve(create, TABLE) == TABLE


def test_evolve_appends_new_nullable_columns_at_the_end() -> None:
    batch = spark_to_avro(_s(_f("new", T.DoubleType()), _f("name", T.StringType()), _f("v", T.IntegerType()),
                             _f("id", T.IntegerType(), False),
                             _f("s", _s(_f("c", T.DecimalType(4, 2)), _f("a", T.IntegerType()),
                                        _f("b", T.StringType())))), "t")
    got = evolve(TABLE, batch)
    assert [f["name"] for f in got["fields"]] == ["id", "v", "name", "s", "new"]
    s_rec = got["fields"][3]["type"][1]
    assert [f["name"] for f in s_rec["fields"]] == ["a", "b", "c"]
    assert s_rec["fields"][2]["type"][1]["namespace"] == "hoodie.t.t_record.s.c"
    assert got["fields"][4] == {"name": "new", "type": ["null", "double"], "default": None}


def test_evolve_new_column_must_be_nullable() -> None:
    batch = spark_to_avro(_s(*avro_to_spark(TABLE).fields, _f("req", T.LongType(), False)), "t")
    with pytest.raises(SchemaMismatchError, match=r"New column 'req' \(bigint\) is non-nullable"):
        evolve(TABLE, batch)


def test_evolve_widens_in_both_directions() -> None:
    fields = list(avro_to_spark(TABLE).fields)
    fields[1] = _f("v", T.LongType())
    wider_batch = spark_to_avro(_s(*fields), "t")
    got = evolve(TABLE, wider_batch)
    assert got["fields"][1]["type"] == ["null", "long"]
    # Table already long, batch int: the table keeps long.
    assert evolve(got, TABLE)["fields"][1]["type"] == ["null", "long"]
    fields[1] = _f("v", T.FloatType())
    assert evolve(got, spark_to_avro(_s(*fields), "t"))["fields"][1]["type"] == ["null", "float"]


def test_evolve_widens_inside_arrays_and_maps_of_structs() -> None:
    def table(inner: T.DataType) -> dict:
        return spark_to_avro(_s(_f("arr", T.ArrayType(_s(_f("x", inner)))),
                                _f("m", T.MapType(T.StringType(), inner, False))), "t")
    got = evolve(table(T.IntegerType()), table(T.DoubleType()))
    assert got == table(T.DoubleType())


def test_evolve_nullability_only_loosens() -> None:
    batch = json.loads(to_json(TABLE).replace('{"name":"id","type":"int"}',
                                               '{"name":"id","type":["null","int"],"default":null}'))
    assert evolve(TABLE, batch)["fields"][0] == {"name": "id", "type": ["null", "int"], "default": None}
    assert evolve(batch, TABLE)["fields"][0]["type"] == ["null", "int"]


@pytest.mark.parametrize(("col", "new_type", "table_t", "batch_t"), [
    ("name", T.IntegerType(), "string", "int"),
    ("v", T.StringType(), "int", "string"),
    ("v", T.TimestampType(), "int", "timestamp"),
    ("v", T.DecimalType(10, 2), "int", "decimal(10,2)"),
])
def test_evolve_rejects_incompatible_types(col: str, new_type: T.DataType, table_t: str,
                                           batch_t: str) -> None:
    fields = [(_f(col, new_type) if f.name == col else f) for f in avro_to_spark(TABLE).fields]
    with pytest.raises(SchemaMismatchError) as e:
        evolve(TABLE, spark_to_avro(_s(*fields), "t"))
    msg = str(e.value)
    assert f"Column '{col}' is {table_t} in the table but {batch_t} in the incoming batch" in msg
    assert f"Cast the column to {table_t}" in msg


def test_evolve_rejects_nested_type_change() -> None:
    fields = list(avro_to_spark(TABLE).fields)
    fields[3] = _f("s", _s(_f("a", T.BooleanType()), _f("b", T.StringType())))
    with pytest.raises(SchemaMismatchError, match="Column 's.a' is int in the table but boolean"):
        evolve(TABLE, spark_to_avro(_s(*fields), "t"))
    fields[3] = _f("s", T.StringType())
    with pytest.raises(SchemaMismatchError, match="Column 's' is struct<a:int,b:string> in the table"):
        evolve(TABLE, spark_to_avro(_s(*fields), "t"))


def test_evolve_missing_columns_need_reconcile() -> None:
    batch = spark_to_avro(_s(_f("id", T.IntegerType(), False), _f("name", T.StringType()),
                             _f("s", _s(_f("b", T.StringType())))), "t")
    with pytest.raises(SchemaMismatchError) as e:
        evolve(TABLE, batch)
    assert "'v', 's.a'" in str(e.value)
    assert "hoodie.datasource.write.reconcile.schema=true" in str(e.value)
    got = evolve(TABLE, batch, reconcile=True)
    assert got == TABLE
    # A required table column missing from the batch must become nullable to be padded with nulls.
    got = evolve(TABLE, spark_to_avro(_s(_f("v", T.IntegerType())), "t"), reconcile=True)
    assert got["fields"][0] == {"name": "id", "type": ["null", "int"], "default": None}


def test_evolve_keeps_table_names_and_ignores_meta_fields() -> None:
    new = _f("n", _s(_f("d", T.DecimalType(3, 1))))
    batch = spark_to_avro(_s(*avro_to_spark(TABLE).fields, new), "other")
    got = evolve(with_meta_fields(TABLE), with_meta_fields(batch))
    assert (got["name"], got["namespace"]) == ("t_record", "hoodie.t")
    assert got["fields"][-1]["type"][1]["namespace"] == "hoodie.t.t_record"
    assert got["fields"][-1]["type"][1]["fields"][0]["type"][1]["namespace"] == "hoodie.t.t_record.n.d"
    assert not any(f["name"] in META_FIELDS for f in got["fields"])


def test_evolve_case_only_difference_is_explained() -> None:
    fields = [(_f("Name", T.StringType()) if f.name == "name" else f) for f in avro_to_spark(TABLE).fields]
    with pytest.raises(SchemaMismatchError, match="differs only in letter case"):
        evolve(TABLE, spark_to_avro(_s(*fields), "t"), reconcile=True)


# --------------------------------------------------------------------------- conform_table

def test_conform_reorders_casts_and_pads() -> None:
    target = avro_to_arrow(spark_to_avro(_s(_f("id", T.IntegerType(), False), _f("b", T.IntegerType()),
                                            _f("s", T.ShortType()), _f("pad", T.StringType()),
                                            _f("ts", T.TimestampType()), _f("f", T.DoubleType())), "t"))
    batch = pa.table({
        "f": pa.array([1, 2**60], pa.int64()),
        "ts": pa.array([dt.datetime(2024, 1, 1, 12)] * 2, pa.timestamp("us", tz="America/Chicago")),
        "s": pa.array([1, None], pa.int16()),
        "b": pa.array([7, 8], pa.int8()),
        "id": pa.array([1, 2], pa.int32()),
    })
    got = conform_table(batch, target)
    assert got.schema == target
    assert got.column("b").to_pylist() == [7, 8]
    assert got.column("s").to_pylist() == [1, None]
    assert got.column("pad").null_count == 2
    assert got.column("f").to_pylist() == [1.0, float(2**60)]
    assert got.column("ts").to_pylist()[0] == dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone.utc)


def test_conform_nested_structs_lists_and_maps() -> None:
    inner_t = _s(_f("x", T.IntegerType()), _f("y", T.StringType()), _f("z", T.DecimalType(6, 2)))
    target = avro_to_arrow(spark_to_avro(_s(
        _f("st", _s(_f("a", T.LongType()), _f("new", T.StringType()))),
        _f("lst", T.ArrayType(inner_t)),
        _f("m", T.MapType(T.StringType(), T.LongType()))), "t"))
    src_inner = pa.struct([("y", pa.string()), ("x", pa.int8())])
    full = pa.table({
        "st": pa.array([{"a": 1}, None, {"a": 3}], pa.struct([("a", pa.int16())])),
        "lst": pa.array([[{"x": 1, "y": "p"}], None, [{"x": 2, "y": "q"}, None]], pa.list_(src_inner)),
        "m": pa.array([[("k", 1)], None, [("j", 2), ("l", None)]], pa.map_(pa.string(), pa.int32())),
    })
    batch = pa.concat_tables([full.slice(0, 1), full.slice(1)])  # two chunks, the second one sliced
    got = conform_table(batch, target)
    assert got.schema == target
    assert got.column("st").to_pylist() == [{"a": 1, "new": None}, None, {"a": 3, "new": None}]
    assert got.column("lst").to_pylist() == [
        [{"x": 1, "y": "p", "z": None}], None, [{"x": 2, "y": "q", "z": None}, None]]
    assert got.column("m").to_pylist() == [[("k", 1)], None, [("j", 2), ("l", None)]]


def test_conform_rejects_bad_batches() -> None:
    target = avro_to_arrow(spark_to_avro(_s(_f("id", T.IntegerType(), False),
                                            _f("s", _s(_f("r", T.IntegerType(), False)))), "t"))
    s_type = pa.struct([("r", pa.int32())])
    with pytest.raises(SchemaMismatchError, match="'extra'"):
        conform_table(pa.table({"id": pa.array([1], pa.int32()), "extra": [1]}), target)
    with pytest.raises(SchemaMismatchError, match="'id' is required"):
        conform_table(pa.table({"s": pa.array([None], s_type)}), target)
    with pytest.raises(InvalidRecordError, match="'id' is non-nullable"):
        conform_table(pa.table({"id": pa.array([1, None], pa.int64())}), target)
    with pytest.raises(InvalidRecordError, match="'s.r' is non-nullable"):
        conform_table(pa.table({"id": pa.array([1, 2], pa.int8()),
                                "s": pa.array([{"r": None}, None], pa.struct([("r", pa.int16())]))}), target)
    # A null inside a null parent struct is fine.
    ok = conform_table(pa.table({"id": pa.array([1], pa.int8()),
                                 "s": pa.array([None], pa.struct([("r", pa.int16())]))}), target)
    assert ok.column("s").to_pylist() == [None]
    with pytest.raises(SchemaMismatchError, match="'id'"):
        conform_table(pa.table({"id": pa.array([2**40], pa.int64())}), target)  # narrowing overflow
    with pytest.raises(SchemaMismatchError, match="'id'"):
        conform_table(pa.table({"id": pa.array([[1]], pa.list_(pa.int32()))}), target)


def test_conform_decimal_and_strings() -> None:
    target = avro_to_arrow(spark_to_avro(_s(_f("d", T.DecimalType(10, 5)), _f("s", T.StringType()),
                                            _f("b", T.BinaryType())), "t"))
    batch = pa.table({"d": pa.array([decimal.Decimal("1.5")], pa.decimal128(10, 5)),
                      "s": pa.array(["x"], pa.large_string()), "b": pa.array([b"1"], pa.large_binary())})
    got = conform_table(batch, target)
    assert got.schema == target
    assert got.to_pylist() == [{"d": decimal.Decimal("1.50000"), "s": "x", "b": b"1"}]


def test_namespace_inheritance_when_reading() -> None:
    """Avro names without a namespace inherit the enclosing one; references may use the short name."""
    schema = from_json('{"type":"record","name":"r","namespace":"ns","fields":['
                       '{"name":"a","type":{"type":"record","name":"inner","fields":['
                       '{"name":"x","type":["null","int"],"default":null}]}},'
                       '{"name":"b","type":["null","inner"],"default":null}]}')
    canon = canonicalize(schema)
    assert canon["fields"][0]["type"]["namespace"] == "ns"
    assert to_json(canon).count('"name":"inner"') == 1  # the second use prints as a reference
    assert '"type":["null","inner"]' in to_json(canon)
    assert avro_to_spark(schema)["b"] == T.StructField("b", _s(_f("x", T.IntegerType())), True)


def test_conform_empty_table_keeps_target_schema() -> None:
    target = avro_to_arrow(TABLE)
    empty = pa.table({"id": pa.array([], pa.int64()), "v": pa.array([], pa.int8())})
    got = conform_table(empty, target)
    assert got.schema == target and got.num_rows == 0
    with pytest.raises(SchemaMismatchError, match="'zzz'"):
        conform_table(pa.table({"zzz": pa.array([], pa.int8())}), target)


def test_conform_reads_back_real_base_files(samples: dict[str, Sample]) -> None:
    """parquet-avro's two-level lists (`array`, non-null items) conform to the read schema unchanged."""
    checked = 0
    for s in samples.values():
        if not s.commit_schemas:
            continue
        target = avro_to_arrow(with_meta_fields(json.loads(s.commit_schemas[-1])))
        for p in s.base_files:
            raw = pq.read_table(p)
            got = conform_table(raw, target)
            assert got.schema == target
            assert got.to_pylist() == raw.to_pylist(), p
            checked += 1
    assert checked >= 30


@pytest.mark.parametrize("text", ["", "name", 'a"b', "back\\slash", "tab\tnl\ncr\r\b\f", "\x00\x1f\x7f",
                                  "é 日本 😀", "\u2028\u2029", "</script>"])
def test_schema_strings_print_as_json_dumps_does(text: str) -> None:
    """to_json prints a schema's strings with json's string encoder (no per-call set-up): the same text as
    `json.dumps(ensure_ascii=False)`, which matches Java Avro's escapes (docs and defaults may hold any)."""
    from pyhudi.io.schema import _js

    assert _js(text) == json.dumps(text, ensure_ascii=False, separators=(",", ":"))
    schema = {"type": "record", "name": "r", "doc": text,
              "fields": [{"name": "f", "type": "string", "doc": text, "default": text}]}
    assert json.loads(to_json(schema))["fields"][0]["default"] == text


def test_has_column_answers_as_column_names_does() -> None:
    """`has_column` replaced `name in table.column_names` on the write path; it must agree with it for
    tables and record batches, duplicate names (where `get_field_index` answers -1), nested fields (only
    top-level names count), empty and non-ASCII names."""
    dup = pa.Table.from_arrays([pa.array([1]), pa.array([2]), pa.array([3])], names=["a", "a", "é"])
    nested = pa.table({"s": pa.array([{"inner": 1}]), "": pa.array([0])})
    for t in (dup, dup.to_batches()[0], nested, pa.table({})):
        for name in ("a", "é", "s", "inner", "", "A", "missing"):
            assert has_column(t, name) == (name in t.column_names), (t.schema, name)
