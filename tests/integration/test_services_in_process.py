"""Compaction and clustering with no SparkSession: the same plans, executed by the in-process engine.

The table is written through Spark; the services then run with `spark=None`, and the result is read by
Spark's path and by hudi-rs and compared with a model, so the two engines' tasks are interchangeable.
"""

from __future__ import annotations

import pytest

import pyhudi
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action
from pyhudi.timeline.timeline import ActiveTimeline
from tests.helpers import hudi_rs

pytestmark = pytest.mark.spark
SCHEMA = "id long, name string, part string, ts long"


def _opts(table_type: str, **extra: str) -> dict[str, str]:
    return {"hoodie.table.name": "svc", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.table.type": table_type, "hoodie.datasource.write.operation": "upsert",
            "hoodie.parquet.small.file.limit": "0", **extra}


def _model_rows(spark, path: str) -> dict[int, tuple[str, str, int]]:
    rows = pyhudi.read(spark, path).select("id", "name", "part", "ts").collect()
    out = {r["id"]: (r["name"], r["part"], r["ts"]) for r in rows}
    assert len(out) == len(rows), "duplicate keys"
    return out


def _rs_rows(path: str) -> dict[int, tuple[str, str, int]]:
    t = hudi_rs(path)
    return {r["id"]: (r["name"], r["part"], r["ts"]) for r in t.select(["id", "name", "part", "ts"]).to_pylist()}


def test_compaction_without_spark_session(spark, tmp_path):
    path = str(tmp_path / "mor")
    opts = _opts("MERGE_ON_READ", **{"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "2"})
    model: dict[int, tuple[str, str, int]] = {}
    for step in range(3):
        rows = [(i, f"n{step}-{i}", f"p{i % 3}", step) for i in range(step * 7, step * 7 + 30)]
        spark_df = spark.createDataFrame(rows, SCHEMA)
        pyhudi.write(spark_df, path, opts)
        model.update({i: (n, p, ts) for i, n, p, ts in rows})
    deletes = spark.createDataFrame([(1, "x", "p1", 9)], SCHEMA)
    pyhudi.write(deletes, path, {**opts, "hoodie.datasource.write.operation": "delete"})
    del model[1]
    done = pyhudi.compact(None, path)
    assert len(done) == 1
    timeline = ActiveTimeline.load(Storage(path))
    compacted = [i for i in timeline.completed().instants if i.action is Action.COMMIT]
    assert [i.timestamp for i in compacted] == done
    assert _model_rows(spark, path) == model
    assert _rs_rows(path) == model
    ro = pyhudi.read(spark, path, {"hoodie.datasource.query.type": "read_optimized"})
    assert ro.count() == len(model)  # everything is in base files after compaction


def test_clustering_without_spark_session(spark, tmp_path):
    path = str(tmp_path / "cow")
    opts = _opts("COPY_ON_WRITE")
    model: dict[int, tuple[str, str, int]] = {}
    for step in range(4):
        rows = [(step * 100 + i, f"n{step}", f"p{i % 2}", step) for i in range(20)]
        pyhudi.write(spark.createDataFrame(rows, SCHEMA), path, opts)
        model.update({i: (n, p, ts) for i, n, p, ts in rows})
    before = {p: len(list((tmp_path / "cow" / p).glob("*.parquet"))) for p in ("p0", "p1")}
    assert before == {"p0": 4, "p1": 4}
    done = pyhudi.cluster(None, path, {"hoodie.clustering.plan.strategy.small.file.limit": str(1 << 20),
                                       "hoodie.clustering.plan.strategy.target.file.max.bytes": str(4 << 20)})
    assert len(done) == 1
    meta = ActiveTimeline.load(Storage(path)).commit_metadata(
        next(i for i in ActiveTimeline.load(Storage(path)).completed().instants if i.timestamp == done[0]))
    assert {p: len(ids) for p, ids in (meta.partition_to_replace_file_ids or {}).items()} == {"p0": 4, "p1": 4}
    assert sorted(s.partition_path for s in meta.all_stats()) == ["p0", "p1"]
    assert _model_rows(spark, path) == model
    assert _rs_rows(path) == model
