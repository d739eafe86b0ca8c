"""The Spark engine on a bucket of the local S3 server, with no S3 connector in Spark: executors write and
read the table's files through pyhudi's Storage (settings from the driver's AWS_* variables, which the
shared session's workers never saw: they travel in the pickled Storage). Writes (upsert, delete,
insert_overwrite; insert is in test_s3_services.py), snapshot reads of COW and MOR (with logs), compaction
and clustering on Spark, the Structured Streaming sink and the Spark streamer. Every table is read
in-process, by Spark and by hudi-rs after each step and compared with a model."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import pytest

import pyhudi
from tests.integration import s3_model as m

if TYPE_CHECKING:
    from tests.support.s3_fixtures import S3Bucket

pytest_plugins = ["tests.support.s3_fixtures"]  # the s3 and s3_session fixtures
pytestmark = pytest.mark.spark

SPARK_SCHEMA = "k string, d decimal(20,4), part string, name string, ts long"


def _df(spark: Any, rows: list[dict[str, Any]]) -> Any:
    return spark.createDataFrame([(r["k"], r["d"], r["part"], r["name"], r["ts"]) for r in rows], SPARK_SCHEMA)


def _spark_model(spark: Any, uri: str) -> m.Model:
    rows = pyhudi.read(spark, uri).select("_hoodie_record_key", "_hoodie_partition_path", "name", "ts").collect()
    out = {(r[0], r[1]): (r[2], r[3]) for r in rows}
    assert len(out) == len(rows), "duplicate records in Spark's read"
    return out


def _check(spark: Any, s3: S3Bucket, model: m.Model, step: str) -> None:
    m.check(s3, model, step)
    assert _spark_model(spark, s3.uri) == model, f"{step}: pyhudi.read(spark) differs from the model"


def _write(spark: Any, s3: S3Bucket, model: m.Model, opts: dict[str, str], rows: list, op: str, step: str) -> None:
    pyhudi.write(_df(spark, rows), s3.uri, {**opts, "hoodie.datasource.write.operation": op})
    m.apply(model, rows, op)
    _check(spark, s3, model, step)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_spark_writes_reads_and_services(spark: Any, s3: S3Bucket, tmp_path: Any, table_type: str) -> None:
    opts = m.options(table_type, **{"hoodie.clean.automatic": "false", "hoodie.archive.automatic": "false",
                                    "hoodie.clustering.plan.strategy.small.file.limit": str(1 << 20)})
    model: m.Model = {}
    keys = m.all_keys()
    first = m.rows_for(keys[:12], 1)  # bulk_insert of a parquet scan: tasks read the files with pyarrow
    pq.write_table(m.arrow(first), str(tmp_path / "first.parquet"))
    first_instant = pyhudi.write(spark.read.parquet(str(tmp_path / "first.parquet")), s3.uri,
                                 {**opts, "hoodie.datasource.write.operation": "bulk_insert"})
    m.apply(model, first, "bulk_insert")
    _check(spark, s3, model, "bulk_insert of a parquet scan")
    at_first = dict(model)
    _write(spark, s3, model, opts, m.rows_for(keys[6:18], 2, "u"), "upsert", "upsert 2 (MOR: logs)")
    cols = ["_hoodie_record_key", "_hoodie_partition_path", "name", "ts"]
    travel = pyhudi.read(spark, s3.uri, {"as.of.instant": first_instant}).select(*cols).collect()
    assert {(r[0], r[1]): (r[2], r[3]) for r in travel} == at_first, "time travel on Spark"
    changed = pyhudi.read(spark, s3.uri, {"hoodie.datasource.query.type": "incremental",
                                          "hoodie.datasource.read.begin.instanttime": first_instant})
    assert {(r[0], r[1]): (r[2], r[3]) for r in changed.select(*cols).collect()} == \
        {k: v for k, v in model.items() if v[1] == 2}, "incremental read on Spark"
    assert bool(m.log_files(s3.uri)) == (table_type == "MERGE_ON_READ")
    _write(spark, s3, model, opts, m.rows_for(keys[::5], 4), "delete", "delete")
    overwrite = [r for r in m.rows_for(keys[1:24:3], 5, "o") if r["part"] == "007"]
    _write(spark, s3, model, opts, overwrite, "insert_overwrite", "insert_overwrite 007")
    if table_type == "MERGE_ON_READ":
        assert len(pyhudi.compact(spark, s3.uri, opts)) == 1
        _check(spark, s3, model, "compaction on Spark")
    assert len(pyhudi.cluster(spark, s3.uri, opts)) == 1
    _check(spark, s3, model, "clustering on Spark")


def _land(landing: Any, index: int, rows: list[dict[str, Any]]) -> None:
    import pyarrow.parquet as pq

    landing.mkdir(exist_ok=True)
    pq.write_table(m.arrow(rows), str(landing / f"batch-{index:03d}.parquet"))


def _stream(spark: Any, landing: Any, uri: str, opts: dict[str, str], checkpoint: str) -> None:
    df = spark.readStream.schema(SPARK_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(landing))
    query = pyhudi.write_stream(df, uri, opts, checkpoint, trigger={"availableNow": True})
    query.awaitTermination()
    assert query.exception() is None


@pytest.mark.parametrize("table_type", [pytest.param("COPY_ON_WRITE", marks=pytest.mark.extended), "MERGE_ON_READ"])
def test_streaming_sink_into_a_bucket(spark: Any, s3: S3Bucket, tmp_path: Any, table_type: str) -> None:
    """Three micro-batches (one landing file each) with a local checkpoint, then a restart from the
    checkpoint with one more file: one commit per micro-batch, none replayed. MOR: asynchronous compaction
    (the streaming default) every 2 delta commits, run in the background on the bucket."""
    opts = m.options(table_type, **{"hoodie.compact.inline.max.delta.commits": "2"})
    landing, checkpoint, model, keys = tmp_path / "landing", str(tmp_path / "ckpt"), {}, m.all_keys()
    for i in range(3):
        rows = m.rows_for(keys[i * 5:i * 5 + 9], i + 1, f"b{i}")
        _land(landing, i, rows)
        m.apply(model, rows, "upsert")
    _stream(spark, landing, s3.uri, opts, checkpoint)
    _check(spark, s3, model, "3 micro-batches")
    rows = m.rows_for(keys[2:20:2], 9, "r")
    _land(landing, 3, rows)
    m.apply(model, rows, "upsert")
    _stream(spark, landing, s3.uri, opts, checkpoint)
    assert pyhudi.wait_for_table_services(s3.uri, timeout=120) == []
    _check(spark, s3, model, "restart from the checkpoint")
    from pyhudi.storage import Storage
    from pyhudi.timeline.timeline import ActiveTimeline

    actions = [i.action.value for i in ActiveTimeline.load(Storage(s3.uri)).completed().instants]
    if table_type == "COPY_ON_WRITE":
        assert actions.count("commit") == 4, actions
    else:
        assert actions.count("deltacommit") == 4 and actions.count("commit") >= 1, actions


def test_streaming_checkpoint_on_a_bucket_without_connector(spark: Any, s3: S3Bucket, tmp_path: Any) -> None:
    """Spark writes the streaming checkpoint with its own (Hadoop) file system; without an S3 connector it
    cannot, and pyhudi says so before the query starts, naming the location and the fix."""
    from pyhudi.errors import HudiError

    _land(tmp_path / "landing", 0, m.rows_for(m.all_keys()[:3], 1))
    df = spark.readStream.schema(SPARK_SCHEMA).parquet(str(tmp_path / "landing"))
    checkpoint = f"s3://{s3.bucket}/checkpoints/q1"
    with pytest.raises(HudiError, match="checkpoint") as info:
        pyhudi.write_stream(df, s3.uri, m.options("COPY_ON_WRITE"), checkpoint, trigger={"availableNow": True})
    assert checkpoint in str(info.value) and "connector" in str(info.value)
    from pyhudi.storage import Storage

    assert not Storage(s3.uri).exists(".hoodie/hoodie.properties"), "nothing may be written"


def test_spark_streamer_into_a_bucket(spark: Any, s3: S3Bucket, tmp_path: Any) -> None:
    """`pyhudi streamer --master`: the default checkpoint under the table cannot be written by Spark without
    an S3 connector (refused, naming --checkpoint-dir); with a local checkpoint each round is one commit."""
    from pyhudi.cli.streamer_cmd import Streamer
    from pyhudi.errors import HudiError

    landing, model, keys = tmp_path / "landing", {}, m.all_keys()
    props = m.options("MERGE_ON_READ", **{"hoodie.datasource.compaction.async.enable": "false"})
    rows = m.rows_for(keys[:7], 1, "a")
    _land(landing, 0, rows)
    with pytest.raises(HudiError, match="--checkpoint-dir"):
        Streamer(spark, str(landing), "parquet", s3.uri, props).run_round()
    checkpoint = str(tmp_path / "ckpt")
    Streamer(spark, str(landing), "parquet", s3.uri, props, checkpoint).run_round()
    m.apply(model, rows, "upsert")
    _check(spark, s3, model, "spark streamer round 1")
    rows = m.rows_for(keys[4:12], 2, "b")
    _land(landing, 1, rows)
    Streamer(spark, str(landing), "parquet", s3.uri, props, checkpoint).run_round()
    m.apply(model, rows, "upsert")
    _check(spark, s3, model, "spark streamer round 2")
