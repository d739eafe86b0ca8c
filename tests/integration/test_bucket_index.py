"""BUCKET index: bulk_insert writes bucket file groups; tables that cannot serve the index are refused."""

from __future__ import annotations

import os

import pytest

import pyhudi
from pyhudi.errors import InvalidConfigError, UnsupportedTableError
from pyhudi.index.bucket import bucket_id, bucket_of_file_id
from tests.helpers import hudi_rs, rows_by_key

pytestmark = pytest.mark.spark
COLS = ["name", "part", "ts"]


def _opts(table_type: str = "COPY_ON_WRITE", index: str = "BUCKET", buckets: int = 4, **extra: str) -> dict[str, str]:
    return {"hoodie.table.name": "b", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.table.type": table_type, "hoodie.index.type": index,
            "hoodie.bucket.index.num.buckets": str(buckets), **extra}


def _frame(spark, tag: str, ts: int, keys=range(40)):
    rows = [(i, f"{tag}{i}", f"p{i % 2}", ts) for i in keys]
    return spark.createDataFrame(rows, "id long, name string, part string, ts long")


def _file_id(name: str) -> str:
    return name.lstrip(".").split("_")[0]


def _timeline(path: str) -> list[str]:
    return sorted(os.listdir(os.path.join(path, ".hoodie")))


def _data_files(path: str) -> list[str]:
    return sorted(f for p in ("p0", "p1") if os.path.isdir(os.path.join(path, p))
                  for f in os.listdir(os.path.join(path, p)) if not f.startswith("."))


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_bulk_insert_then_upsert_same_keys(spark, tmp_path, table_type):
    path = str(tmp_path / "t")
    pyhudi.write(_frame(spark, "a", 1), path, _opts(table_type, **{"hoodie.datasource.write.operation": "bulk_insert"}))
    # Every file group is a bucket, and holds exactly the keys Hudi's BucketIdentifier puts there.
    got = pyhudi.read(spark, path).select("id", "_hoodie_file_name").toArrow().to_pylist()
    for r in got:
        assert bucket_of_file_id(r["_hoodie_file_name"]) == bucket_id(str(r["id"]), ("id",), 4)
    pyhudi.write(_frame(spark, "b", 2), path, _opts(table_type))
    expected = {i: (f"b{i}", f"p{i % 2}", 2) for i in range(40)}
    ours = pyhudi.read(spark, path).toArrow()
    assert ours.num_rows == 40
    assert rows_by_key(ours, "id", COLS) == expected
    theirs = hudi_rs(path)
    assert theirs.num_rows == 40
    assert rows_by_key(theirs, "id", COLS) == expected
    # One file group per bucket per partition: the upsert reused the bulk_insert's groups.
    for part in ("p0", "p1"):
        fids = {_file_id(f) for f in os.listdir(os.path.join(path, part)) if f.endswith(".parquet") or ".log." in f}
        buckets = {bucket_id(str(i), ("id",), 4) for i in range(part == "p1", 40, 2)}
        assert sorted(bucket_of_file_id(f) for f in fids) == sorted(buckets)

def test_table_written_with_simple_index_is_refused(spark, tmp_path):
    path = str(tmp_path / "t")
    pyhudi.write(_frame(spark, "a", 1), path, _opts(index="SIMPLE"))
    before = (_timeline(path), _data_files(path))
    for op in ("upsert", "bulk_insert"):
        with pytest.raises(UnsupportedTableError, match="not a bucket file group"):
            pyhudi.write(_frame(spark, "b", 2), path, _opts(**{"hoodie.datasource.write.operation": op}))
        assert (_timeline(path), _data_files(path)) == before  # nothing written
    assert pyhudi.read(spark, path).count() == 40


def test_num_buckets_mismatch_is_refused(spark, tmp_path):
    path = str(tmp_path / "t")
    pyhudi.write(_frame(spark, "a", 1), path, _opts(buckets=8, **{"hoodie.datasource.write.operation": "bulk_insert"}))
    before = (_timeline(path), _data_files(path))
    with pytest.raises(InvalidConfigError, match="hoodie.bucket.index.num.buckets=4"):
        pyhudi.write(_frame(spark, "b", 2), path, _opts(buckets=4))
    assert (_timeline(path), _data_files(path)) == before


def test_bulk_insert_into_existing_bucket_is_refused(spark, tmp_path):
    path = str(tmp_path / "t")
    pyhudi.write(_frame(spark, "a", 1), path, _opts(**{"hoodie.datasource.write.operation": "bulk_insert"}))
    before = (_timeline(path), _data_files(path))
    with pytest.raises(UnsupportedTableError, match="second file group for bucket"):
        pyhudi.write(_frame(spark, "b", 2, range(40, 60)), path,
                     _opts(**{"hoodie.datasource.write.operation": "bulk_insert"}))
    assert (_timeline(path), _data_files(path)) == before


def test_bulk_insert_from_parquet_files_writes_buckets(spark, tmp_path):
    """A parquet scan would take the direct (Arrow) bulk_insert path, which does not shuffle rows into
    buckets: with the BUCKET index it takes Spark's path, one file group per bucket."""
    src = tmp_path / "src"
    _frame(spark, "a", 1).write.parquet(str(src))
    path = str(tmp_path / "t")
    pyhudi.write(spark.read.parquet(str(src)), path, _opts(**{"hoodie.datasource.write.operation": "bulk_insert",
                                                                "hoodie.bulkinsert.shuffle.parallelism": "3"}))
    got = hudi_rs(path).select(["id", "_hoodie_file_name"]).to_pylist()
    assert len(got) == 40
    for r in got:
        assert bucket_of_file_id(r["_hoodie_file_name"]) == bucket_id(str(r["id"]), ("id",), 4)
    for part in ("p0", "p1"):
        fids = [_file_id(f) for f in os.listdir(os.path.join(path, part)) if f.endswith(".parquet")]
        assert len(fids) == len({bucket_of_file_id(f) for f in fids})  # one file group per bucket


@pytest.mark.parametrize("engine", ["spark", "local"])
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_insert_overwrite_writes_new_bucket_groups(spark, tmp_path, table_type, engine):
    """insert_overwrite with the BUCKET index must not tag its records to the partition's existing bucket
    groups: those groups are replaced by the same commit, so records merged into them vanished (COW lost
    every overwritten row, MOR failed on a log-only group). As Hudi's bucket partitioner does for an
    overwrite, every record goes to a new bucket file group of its bucket."""
    path = str(tmp_path / "t")

    def write(keys, tag, ts, op):
        frame = _frame(spark, tag, ts, keys)
        data = frame if engine == "spark" else frame.toArrow()
        pyhudi.write(data, path, _opts(table_type, **{"hoodie.datasource.write.operation": op}))

    write(range(40), "a", 1, "upsert")
    write(range(40), "b", 2, "upsert")  # MOR: every group now has a log file
    write([0, 2, 4, 6], "c", 3, "insert_overwrite")  # replaces p0 only
    model = {i: (f"c{i}" if i in (0, 2, 4, 6) else f"b{i}", f"p{i % 2}", 3 if i in (0, 2, 4, 6) else 2)
             for i in range(40) if i % 2 == 1 or i in (0, 2, 4, 6)}
    assert rows_by_key(pyhudi.read(spark, path).toArrow(), "id", COLS) == model
    assert rows_by_key(hudi_rs(path), "id", COLS) == model
    got = pyhudi.read(spark, path).select("id", "_hoodie_file_name").toArrow().to_pylist()
    for r in got:  # still a bucket table: the next upsert finds the keys in their buckets
        assert bucket_of_file_id(r["_hoodie_file_name"]) == bucket_id(str(r["id"]), ("id",), 4)
    write([0, 8], "d", 4, "upsert")
    model.update({0: ("d0", "p0", 4), 8: ("d8", "p0", 4)})
    assert rows_by_key(pyhudi.read(spark, path).toArrow(), "id", COLS) == model
    assert rows_by_key(hudi_rs(path), "id", COLS) == model
