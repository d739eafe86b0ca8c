"""Copy-on-write writes: semantics against a plain-Python model, read through pyhudi and hudi-rs."""

from __future__ import annotations

import json
import os
import zlib

import pytest

import pyhudi
from pyhudi.model.properties import parse_properties
from tests.helpers import hudi_rs, rows_by_key

pytestmark = pytest.mark.spark
COLS = ["name", "city", "ts"]


def opts(name: str, **extra: str) -> dict[str, str]:
    base = {"hoodie.table.name": name, "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "city", "hoodie.datasource.write.precombine.field": "ts"}
    base.update({k.replace("__", "."): v for k, v in extra.items()})
    return base


def _read_json(path):
    with open(path) as fh:
        return json.load(fh)


def frame(spark, rows):
    return spark.createDataFrame(rows, "id long, name string, city string, ts long")


def assert_table(spark, path, model, as_of=None):
    """pyhudi and hudi-rs both return exactly the model's rows."""
    options = {"as.of.instant": as_of} if as_of else None
    ours = rows_by_key(pyhudi.read(spark, path, options).toArrow(), "id", COLS)
    theirs = rows_by_key(hudi_rs(path, as_of=as_of), "id", COLS)
    expected = {k: tuple(v) for k, v in model.items()}
    assert ours == expected
    assert theirs == expected


def test_upsert_delete_time_travel_incremental(spark, tmp_path):
    path = str(tmp_path / "t")
    model: dict[int, tuple] = {}
    history = []
    r1 = [(i, f"a{i}", ["sf", "ny", "la"][i % 3], 1) for i in range(30)]
    i1 = pyhudi.write(frame(spark, r1), path, opts("t"))
    model.update({r[0]: r[1:] for r in r1})
    history.append((i1, dict(model)))
    # Upsert: updates across partitions plus new keys, with in-batch duplicates resolved by precombine.
    r2 = [(i, f"b{i}", ["sf", "ny", "la"][i % 3], 2) for i in range(20, 40)]
    r2 += [(25, "stale", "ny", 1), (26, "newest", "la", 9)]
    i2 = pyhudi.write(frame(spark, r2), path, opts("t"))
    for i in range(20, 40):
        model[i] = (f"b{i}", ["sf", "ny", "la"][i % 3], 2)
    model[26] = ("newest", "la", 9)
    history.append((i2, dict(model)))
    i3 = pyhudi.write(frame(spark, [(i, "", ["sf", "ny", "la"][i % 3], 0) for i in (1, 2, 3, 99)]), path,
                      opts("t", hoodie__datasource__write__operation="delete"))
    for i in (1, 2, 3):
        del model[i]
    history.append((i3, dict(model)))
    assert i1 < i2 < i3 and all(len(i) == 17 for i in (i1, i2, i3))
    assert_table(spark, path, model)
    for instant, state in history:
        assert_table(spark, path, state, as_of=instant)
    incr = pyhudi.read(spark, path, {"hoodie.datasource.query.type": "incremental",
                                     "hoodie.datasource.read.begin.instanttime": i1,
                                     "hoodie.datasource.read.end.instanttime": i2}).toArrow()
    assert sorted(incr.column("id").to_pylist()) == list(range(20, 40))
    theirs = hudi_rs(path, start=i1, end=i2)
    assert sorted(theirs.column("id").to_pylist()) == list(range(20, 40))


def test_table_format_matches_hudi_v6(spark, tmp_path):
    path = tmp_path / "fmt"
    i1 = pyhudi.write(frame(spark, [(i, f"n{i}", "sf", 1) for i in range(5)]), str(path),
                      opts("fmt", hoodie__datasource__write__hive_style_partitioning="true"))
    i2 = pyhudi.write(frame(spark, [(1, "u", "sf", 2), (7, "new", "sf", 2)]), str(path), opts("fmt"))
    props = parse_properties((path / ".hoodie/hoodie.properties").read_text())
    assert props["hoodie.table.version"] == "6" and props["hoodie.timeline.layout.version"] == "1"
    # No hoodie.database.name given: Hudi's datasource writer stores it empty, and checksums ".<table>".
    assert props["hoodie.database.name"] == "" and props["hoodie.table.checksum"] == str(zlib.crc32(b".fmt"))
    assert props["hoodie.table.recordkey.fields"] == "id" and props["hoodie.table.partition.fields"] == "city"
    assert props["hoodie.table.keygenerator.class"] == "org.apache.hudi.keygen.SimpleKeyGenerator"
    names = sorted(os.listdir(path / ".hoodie"))
    for inst in (i1, i2):
        assert f"{inst}.commit.requested" in names and f"{inst}.inflight" in names and f"{inst}.commit" in names
        assert (path / ".hoodie" / f"{inst}.commit.requested").stat().st_size == 0
    meta = json.loads((path / ".hoodie" / f"{i2}.commit").read_text())
    assert meta["operationType"] == "UPSERT" and meta["compacted"] is False
    assert json.loads(meta["extraMetadata"]["schema"])["name"] == "fmt_record"
    (stat,) = meta["partitionToWriteStats"]["city=sf"]
    assert (stat["numWrites"], stat["numInserts"], stat["numUpdateWrites"], stat["prevCommit"]) == (6, 1, 1, i1)
    data_file = path / stat["path"]
    assert stat["fileSizeInBytes"] == stat["totalWriteBytes"] == data_file.stat().st_size
    assert data_file.name.startswith(stat["fileId"] + "_") and data_file.name.endswith(f"_{i2}.parquet")
    pm = (path / "city=sf/.hoodie_partition_metadata").read_text()
    assert f"commitTime={i1}" in pm and "partitionDepth=1" in pm
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(data_file)
    footer = pf.metadata.metadata
    for key in (b"parquet.avro.schema", b"org.apache.hudi.bloomfilter", b"hoodie_min_record_key",
                b"hoodie_max_record_key", b"hoodie_bloom_filter_type_code"):
        assert key in footer
    assert pf.schema_arrow.names[:5] == ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
                                         "_hoodie_partition_path", "_hoodie_file_name"]
    rows = {r["id"]: r for r in pf.read().to_pylist()}
    assert rows[0]["_hoodie_commit_time"] == i1 and rows[1]["_hoodie_commit_time"] == i2
    assert rows[0]["_hoodie_file_name"] == data_file.name
    assert not os.listdir(path / ".hoodie/.temp")


@pytest.mark.parametrize("index", ["SIMPLE", "BLOOM", "GLOBAL_SIMPLE"])
def test_index_types_upsert_correctly(spark, tmp_path, index):
    path = str(tmp_path / index)
    o = opts("ix", hoodie__index__type=index)
    rows = [(i, f"a{i}", ["sf", "ny"][i % 2], 1) for i in range(200)]
    pyhudi.write(frame(spark, rows), path, o)
    model = {r[0]: r[1:] for r in rows}
    upd = [(i, f"b{i}", ["sf", "ny"][i % 2], 2) for i in range(0, 260, 3)]
    pyhudi.write(frame(spark, upd), path, o)
    model.update({r[0]: r[1:] for r in upd})
    assert_table(spark, path, model)


def test_global_index_moves_key_to_new_partition(spark, tmp_path):
    path = str(tmp_path / "g")
    o = opts("g", hoodie__index__type="GLOBAL_SIMPLE")
    pyhudi.write(frame(spark, [(1, "a", "sf", 1), (2, "b", "sf", 1)]), path, o)
    pyhudi.write(frame(spark, [(1, "moved", "ny", 2)]), path, o)
    assert_table(spark, path, {1: ("moved", "ny", 2), 2: ("b", "sf", 1)})
    path2 = str(tmp_path / "g2")
    o2 = {**o, "hoodie.simple.index.update.partition.path": "false"}
    pyhudi.write(frame(spark, [(1, "a", "sf", 1)]), path2, o2)
    pyhudi.write(frame(spark, [(1, "stays", "ny", 2)]), path2, o2)
    got = pyhudi.read(spark, path2).toArrow().to_pylist()
    assert [(r["id"], r["name"], r["_hoodie_partition_path"]) for r in got] == [(1, "stays", "sf")]


def test_key_generators_and_partition_layouts(spark, tmp_path):
    df = spark.createDataFrame([(1, "x", "a b", 2024, 1), (2, "y", None, 2025, 1), (3, "z", "x:z é+%#", 2026, 1)],
                               "id long, name string, region string, year int, ts long")
    cases = {
        "complex": ({"hoodie.datasource.write.recordkey.field": "id,name",
                     "hoodie.datasource.write.partitionpath.field": "region,year",
                     "hoodie.datasource.write.hive_style_partitioning": "true"},
                    {"id:1,name:x": "region=a b/year=2024", "id:2,name:y": "region=__HIVE_DEFAULT_PARTITION__/year=2025",
                     "id:3,name:z": "region=x:z é+%#/year=2026"}),
        "nonpart": ({"hoodie.datasource.write.recordkey.field": "id"}, {"1": "", "2": "", "3": ""}),
        "urlenc": ({"hoodie.datasource.write.recordkey.field": "id",
                    "hoodie.datasource.write.partitionpath.field": "region",
                    "hoodie.datasource.write.partitionpath.urlencode": "true"},
                   # Hudi's PartitionPathEncodeUtils.escapePathName, not URLEncoder: space, '+' and 'é' stay
                   {"1": "a b", "2": "__HIVE_DEFAULT_PARTITION__", "3": "x%3Az é+%25%23"}),
    }
    for name, (o, expected) in cases.items():
        path = str(tmp_path / name)
        pyhudi.write(df, path, {"hoodie.table.name": name, "hoodie.datasource.write.precombine.field": "ts", **o})
        got = {r["_hoodie_record_key"]: r["_hoodie_partition_path"] for r in pyhudi.read(spark, path).collect()}
        assert got == expected, name
        rs = hudi_rs(path)
        assert sorted(rs.column("_hoodie_record_key").to_pylist()) == sorted(expected)
        for part in set(expected.values()):
            assert os.path.exists(os.path.join(path, part, ".hoodie_partition_metadata"))


def test_insert_overwrite_and_mode_overwrite(spark, tmp_path):
    path = str(tmp_path / "ow")
    o = opts("ow")
    pyhudi.write(frame(spark, [(1, "a", "sf", 1), (2, "b", "ny", 1), (3, "c", "la", 1)]), path, o)
    i2 = pyhudi.write(frame(spark, [(9, "z", "sf", 2)]), path, {**o, "hoodie.datasource.write.operation":
                                                                    "insert_overwrite"})
    assert_table(spark, path, {9: ("z", "sf", 2), 2: ("b", "ny", 1), 3: ("c", "la", 1)})
    meta = _read_json(os.path.join(path, ".hoodie", f"{i2}.replacecommit"))
    assert meta["operationType"] == "INSERT_OVERWRITE" and list(meta["partitionToReplaceFileIds"]) == ["sf"]
    with open(os.path.join(path, ".hoodie", f"{i2}.replacecommit.requested"), "rb") as fh:
        assert fh.read(4) == b"Obj\x01"
    i3 = pyhudi.write(frame(spark, [(5, "only", "ny", 3)]), path, o, mode="overwrite")
    assert_table(spark, path, {5: ("only", "ny", 3)})
    meta3 = _read_json(os.path.join(path, ".hoodie", f"{i3}.replacecommit"))
    assert meta3["operationType"] == "INSERT_OVERWRITE_TABLE"
    assert_table(spark, path, {9: ("z", "sf", 2), 2: ("b", "ny", 1), 3: ("c", "la", 1)}, as_of=i2)


def test_schema_evolution_new_column_and_widening(spark, tmp_path):
    path = str(tmp_path / "evo")
    o = {"hoodie.table.name": "evo", "hoodie.datasource.write.recordkey.field": "id",
         "hoodie.datasource.write.precombine.field": "ts"}
    pyhudi.write(spark.createDataFrame([(1, 10, 1)], "id long, amount int, ts long"), path, o)
    pyhudi.write(spark.createDataFrame([(2, 20, "x", 2)], "id long, amount long, note string, ts long"), path, o)
    got = {r["id"]: (r["amount"], r["note"]) for r in pyhudi.read(spark, path).collect()}
    assert got == {1: (10, None), 2: (20, "x")}
    rs = hudi_rs(path)
    assert sorted(zip(rs.column("id").to_pylist(), rs.column("amount").to_pylist())) == [(1, 10), (2, 20)]
