"""The `hudi` data source's batch writes (issue 30, item 4): bulk_insert and the overwrites through
`df.write.format("hudi")` give the rows `pyhudi.write` gives (read by pyhudi and hudi-rs), with sane files,
and take pyhudi's upserts on top; every write the API cannot run with Hudi's semantics is refused before
anything is written, naming the operation and pointing at pyhudi.write."""

from __future__ import annotations

import os

import pytest

import pyhudi
import pyhudi.spark
from pyhudi.storage import Storage
from pyhudi.timeline.timeline import ActiveTimeline
from tests.helpers import hudi_rs, same_rows

pytestmark = pytest.mark.spark
OP = "hoodie.datasource.write.operation"
DATA = ["id", "p", "ts", "v"]


def _opts(name: str, table_type: str = "COPY_ON_WRITE", operation: str = "bulk_insert") -> dict[str, str]:
    return {"hoodie.table.name": name, "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "p", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.table.type": table_type, OP: operation}


@pytest.fixture(scope="module")
def hudi_spark(spark):
    pyhudi.spark.register(spark)
    return spark


def _df(spark, lo: int, hi: int, ts: int = 1, parts: int = 3):
    return spark.range(lo, hi).selectExpr("concat('k', lpad(id, 5, '0')) id", "concat('p', id % 3) p",
                                          f"id + {ts} ts", "cast(id as double) v").repartition(parts)


def _save(df, path: str, options: dict[str, str], mode: str = "append") -> None:
    df.write.format("hudi").options(**options).mode(mode).save(path)


def _same_everywhere(a: str, b: str) -> None:
    ours, theirs = pyhudi.read(a), pyhudi.read(b)
    assert ours.num_rows and same_rows(ours, theirs, DATA + ["_hoodie_record_key", "_hoodie_partition_path"])
    rs = hudi_rs(a)
    assert rs is not None and same_rows(ours, rs, DATA + ["_hoodie_commit_time"])


def _instants(path: str) -> list[str]:
    return [f"{i.timestamp}.{i.action.value}.{i.state.value}" for i in ActiveTimeline.load(Storage(path)).instants]


def pyhudi_filter_v(low: int, high: int) -> object:
    import pyarrow.compute as pc

    return (pc.field("v") >= low) & (pc.field("v") < high)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_bulk_insert_equals_pyhudi_write_then_upserts(hudi_spark, tmp_path, table_type):
    ds, ref = str(tmp_path / "ds"), str(tmp_path / "ref")
    opts = _opts("bulk_" + table_type.lower(), table_type)
    df = _df(hudi_spark, 0, 3000)
    _save(df, ds, opts)
    pyhudi.write(df, ref, opts)
    _same_everywhere(ds, ref)
    timeline = ActiveTimeline.load(Storage(ds))
    (done,) = timeline.completed().instants
    meta = timeline.commit_metadata(done)
    assert meta.operation_type == "BULK_INSERT"
    files = [s for stats in meta.partition_to_write_stats.values() for s in stats]
    assert len(files) == 9  # 3 tasks x 3 table partitions, as Hudi's bulk_insert with sort mode NONE
    for s in files:
        assert 0 < s.file_size_in_bytes < 10 << 20 and s.num_writes > 0
        assert os.path.getsize(os.path.join(ds, s.path)) == s.file_size_in_bytes
    assert not os.listdir(os.path.join(ds, ".hoodie", ".heartbeat"))
    # Spark's own parquet reader, with pushdown, reads the source's base files as pyhudi reads the table
    raw = hudi_spark.read.parquet(*(os.path.join(ds, s.path) for s in files))
    assert raw.count() == 3000 and raw.filter("v >= 100 AND v < 200").count() == 100 == \
        pyhudi.read(ds).filter(pyhudi_filter_v(100, 200)).num_rows
    up = _df(hudi_spark, 0, 3000, ts=100).filter("v % 7 = 0")
    upsert = {**opts, OP: "upsert"}
    pyhudi.write(up, ds, upsert)
    pyhudi.write(up, ref, upsert)
    _same_everywhere(ds, ref)
    _save(_df(hudi_spark, 3000, 3500), ds, opts)  # a second bulk_insert on top
    pyhudi.write(_df(hudi_spark, 3000, 3500), ref, opts)
    _same_everywhere(ds, ref)


def test_bulk_insert_rolls_files_over_at_the_max_size(hudi_spark, tmp_path):
    """One task, one table partition: files roll over at hoodie.parquet.max.file.size as pyhudi.write's do."""
    limit = 1 << 20
    opts = {**_opts("rollover"), "hoodie.parquet.max.file.size": str(limit)}
    df = _df(hudi_spark, 0, 60000, parts=1).selectExpr("id", "'p0' p", "ts", "v", "repeat(id, 12) pad")
    sizes = {}
    for name, write in (("ds", lambda path: _save(df, path, opts)), ("ref", lambda path: pyhudi.write(df, path, opts))):
        path = str(tmp_path / name)
        write(path)
        assert pyhudi.read(path).num_rows == 60000
        sizes[name] = [os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(path) for f in fs
                       if f.endswith(".parquet")]
    assert len(sizes["ds"]) > 2 and max(sizes["ds"]) < 1.25 * limit
    assert abs(len(sizes["ds"]) - len(sizes["ref"])) <= 1, sizes


def test_overwrite_modes_equal_pyhudi_write(hudi_spark, tmp_path):
    ds, ref = str(tmp_path / "ds"), str(tmp_path / "ref")
    opts = _opts("ow")
    first = _df(hudi_spark, 0, 900)
    for path in (ds, ref):
        pyhudi.write(first, path, opts)
    # insert_overwrite: the written partitions' file groups are replaced, the others kept
    part = _df(hudi_spark, 5000, 5300, ts=9).filter("p = 'p1'")
    _save(part, ds, {**opts, OP: "insert_overwrite"})
    pyhudi.write(part, ref, {**opts, OP: "insert_overwrite"})
    _same_everywhere(ds, ref)
    assert pyhudi.read(ds).num_rows == 600 + 100
    # save mode Overwrite: one insert_overwrite_table replacecommit, as pyhudi.write(mode="overwrite")
    again = _df(hudi_spark, 7000, 7100)
    _save(again, ds, opts, "overwrite")
    pyhudi.write(again, ref, opts, mode="overwrite")
    _same_everywhere(ds, ref)
    timeline = ActiveTimeline.load(Storage(ds))
    last = timeline.completed().last()
    assert last is not None and last.action.value == "replacecommit"
    assert timeline.commit_metadata(last).operation_type == "INSERT_OVERWRITE_TABLE"
    # insert_overwrite_table in append mode
    _save(_df(hudi_spark, 8000, 8030), ds, {**opts, OP: "insert_overwrite_table"})
    assert sorted(pyhudi.read(ds).column("ts").to_pylist()) == [i + 1 for i in range(8000, 8030)]


def test_overwrite_creates_a_missing_table_and_replaces_another_identity(hudi_spark, tmp_path):
    path = str(tmp_path / "t")
    _save(_df(hudi_spark, 0, 50), path, _opts("fresh"), "overwrite")
    assert pyhudi.read(path).num_rows == 50
    other = {**_opts("fresh", "MERGE_ON_READ")}
    _save(_df(hudi_spark, 0, 20), path, other, "overwrite")  # another table type: the old table goes
    assert pyhudi.read(path).num_rows == 20
    assert "MERGE_ON_READ" in (tmp_path / "t" / ".hoodie" / "hoodie.properties").read_text()


@pytest.mark.parametrize(("extra", "mode", "named"), [
    ({OP: "upsert"}, "append", "hoodie.datasource.write.operation=upsert"),
    ({}, "append", "hoodie.datasource.write.operation=upsert"),  # Hudi's default operation
    ({OP: "insert"}, "append", "hoodie.datasource.write.operation=insert"),
    ({OP: "delete"}, "append", "hoodie.datasource.write.operation=delete"),
    ({OP: "delete_partition"}, "append", "delete_partition"),
    ({OP: "upsert"}, "overwrite", "mode('overwrite') with hoodie.datasource.write.operation=upsert"),
    ({"hoodie.combine.before.insert": "true"}, "append", "hoodie.combine.before.insert"),
    ({"hoodie.bulkinsert.sort.mode": "GLOBAL_SORT"}, "append", "hoodie.bulkinsert.sort.mode=GLOBAL_SORT"),
    ({"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "4"}, "append", "BUCKET"),
])
def test_refusals_write_nothing(hudi_spark, tmp_path, extra, mode, named):
    path = str(tmp_path / "t")
    opts = _opts("refused")
    pyhudi.write(_df(hudi_spark, 0, 30), path, opts)
    before = _instants(path)
    options = {**opts, **extra}
    if not extra:
        options.pop(OP)
    with pytest.raises(Exception) as info:
        _save(_df(hudi_spark, 100, 130), path, options, mode)
    text = str(info.value)
    assert "UnsupportedWriteError" in text and named in text and "pyhudi.write(df, path, options" in text
    assert _instants(path) == before and pyhudi.read(path).num_rows == 30


def test_timestamp_partitions_need_a_zone(hudi_spark, tmp_path):
    """The session time zone Hudi formats timestamp partition paths in is out of the source's sight."""
    ts_opts = {**_opts("tskg"), "hoodie.datasource.write.partitionpath.field": "ts",
               "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
               "hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
               "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd"}
    df = _df(hudi_spark, 0, 40).selectExpr("id", "p", "ts * 3600000 ts", "v")
    with pytest.raises(Exception, match="hoodie.keygen.timebased.timezone"):
        _save(df, str(tmp_path / "refused"), ts_opts)
    assert not (tmp_path / "refused" / ".hoodie").exists()
    zoned = {**ts_opts, "hoodie.keygen.timebased.timezone": "UTC"}
    _save(df, str(tmp_path / "ds"), zoned)
    pyhudi.write(df, str(tmp_path / "ref"), zoned)
    _same_everywhere(str(tmp_path / "ds"), str(tmp_path / "ref"))


def test_spark_refuses_error_and_ignore_modes(hudi_spark, tmp_path):
    with pytest.raises(Exception, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
        _df(hudi_spark, 0, 5).write.format("hudi").options(**_opts("m")).save(str(tmp_path / "t"))


def test_null_key_fails_the_job_and_rolls_back(hudi_spark, tmp_path):
    path = str(tmp_path / "t")
    opts = _opts("nullkey")
    pyhudi.write(_df(hudi_spark, 0, 30), path, opts)
    bad = _df(hudi_spark, 100, 400).selectExpr("if(v = 250, null, id) id", "p", "ts", "v")
    with pytest.raises(Exception, match="null or empty record key"):
        _save(bad, path, opts)
    timeline = ActiveTimeline.load(Storage(path))
    assert [i for i in timeline.pending().instants if i.action.value != "rollback"] == []
    rows = pyhudi.read(path)
    assert rows.num_rows == 30
    parquet = [f for _, _, fs in os.walk(path) for f in fs if f.endswith(".parquet")]
    assert sorted(parquet) == sorted(set(rows.column("_hoodie_file_name").to_pylist()))
