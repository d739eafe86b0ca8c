"""The `hudi` data source as a streaming source (issue 30, item 4): `readStream.format("hudi")` returns each
commit's rows once, as the incremental query over the same range does, on version-6 and Hudi 1.x (version 8,
completion-time offsets) tables; `writeStream.format("hudi")` is refused before anything is written."""

from __future__ import annotations

import glob

import pyarrow as pa
import pytest

import pyhudi
import pyhudi.spark
from tests.helpers import same_rows

pytestmark = pytest.mark.spark


def _opts(version: str, table_type: str) -> dict[str, str]:
    return {"hoodie.table.name": "stream_src", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "p", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.table.type": table_type, "hoodie.write.table.version": version}


def _rows(lo: int, hi: int, ts: int) -> pa.Table:
    ids = range(lo, hi)
    return pa.table({"id": [f"k{i:04d}" for i in ids], "p": [f"p{i % 2}" for i in ids], "ts": [ts] * len(ids),
                     "v": [float(i + ts) for i in ids]})


def _drain(spark, path: str, out: str, checkpoint: str, options: dict[str, str] | None = None) -> pa.Table:
    """One availableNow run of the stream into a parquet sink; returns everything the sink holds."""
    query = (spark.readStream.format("hudi").options(**(options or {})).load(path)
             .writeStream.format("parquet").option("path", out).option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    query.awaitTermination(300)
    assert query.exception() is None
    if not glob.glob(f"{out}/*.parquet"):
        return pa.table({})
    return spark.read.parquet(out).toArrow()


@pytest.mark.parametrize(("version", "table_type"), [("6", "COPY_ON_WRITE"), ("8", "MERGE_ON_READ")])
def test_stream_reads_each_commit_once(spark, tmp_path, version, table_type):
    pyhudi.spark.register(spark)
    path, out, checkpoint = str(tmp_path / "t"), str(tmp_path / "out"), str(tmp_path / "cp")
    opts = _opts(version, table_type)
    first = pyhudi.write(_rows(0, 60, 1), path, opts)
    second = pyhudi.write(_rows(30, 90, 2), path, {**opts, "hoodie.datasource.write.operation": "upsert"})
    got = _drain(spark, path, out, checkpoint)
    everything = pyhudi.read(spark, path, {"hoodie.datasource.query.type": "incremental",
                                           "hoodie.datasource.read.begin.instanttime": "000"}).toArrow()
    assert got.num_rows == 90 and same_rows(got, everything, ["id", "p", "ts", "v", "_hoodie_commit_time"])
    assert set(got.column("_hoodie_commit_time").to_pylist()) == {first, second}
    third = pyhudi.write(_rows(80, 100, 3), path, {**opts, "hoodie.datasource.write.operation": "upsert"})
    again = _drain(spark, path, out, checkpoint)  # the restarted query continues after its offset
    new = again.filter(pa.compute.equal(again.column("_hoodie_commit_time"), third))
    assert again.num_rows == 110 and new.num_rows == 20
    assert sorted(new.column("id").to_pylist()) == [f"k{i:04d}" for i in range(80, 100)]


def test_stream_starts_at_latest(spark, tmp_path):
    pyhudi.spark.register(spark)
    path, out, checkpoint = str(tmp_path / "t"), str(tmp_path / "out"), str(tmp_path / "cp")
    opts = _opts("6", "COPY_ON_WRITE")
    pyhudi.write(_rows(0, 10, 1), path, opts)
    start = {"hoodie.datasource.streaming.startOffset": "latest"}
    _drain(spark, path, out, checkpoint, start)
    later = pyhudi.write(_rows(10, 15, 2), path, opts)
    got = _drain(spark, path, out, checkpoint, start)
    assert got.num_rows == 5 and set(got.column("_hoodie_commit_time").to_pylist()) == {later}


def test_write_stream_is_refused(spark, tmp_path):
    pyhudi.spark.register(spark)
    source = spark.readStream.format("rate").option("rowsPerSecond", 1).load()
    with pytest.raises(Exception, match="pyhudi.write_stream"):
        query = (source.writeStream.format("hudi").option("checkpointLocation", str(tmp_path / "cp"))
                 .options(**_opts("6", "COPY_ON_WRITE")).start(str(tmp_path / "t")))
        query.awaitTermination(60)
        raise AssertionError(str(query.exception()))
