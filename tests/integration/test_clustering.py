"""Clustering: plans, execution, readers' switch, triggers and the update strategies."""

from __future__ import annotations

import json
import os

import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

import pyhudi
from pyhudi.config.registry import Options
from pyhudi.errors import ClusteringUpdateConflictError, CommitConflictError
from pyhudi.model import avro_models as am
from pyhudi.model.table_config import load_table_config
from pyhudi.services import clustering as svc
from pyhudi.storage import Storage
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.builder import build_view
from pyhudi.writer.config import ClusteringConfig
from tests.helpers import hudi_rs

pytestmark = pytest.mark.spark
TARGET = 512 * 1024
ALLOW = "org.apache.hudi.client.clustering.update.strategy.SparkAllowUpdateStrategy"


def _opts(**extra: str) -> dict[str, str]:
    return {"hoodie.table.name": "clu", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
            "hoodie.index.bloom.num_entries": "1000", "hoodie.parquet.small.file.limit": "0",
            "hoodie.clustering.plan.strategy.small.file.limit": str(300 * 1024),
            "hoodie.clustering.plan.strategy.target.file.max.bytes": str(TARGET),
            "hoodie.clustering.plan.strategy.max.bytes.per.group": str(4 * TARGET), **extra}


def _batch(spark, start: int, n: int, ts: int = 1):
    return spark.range(start, start + n).select(
        F.col("id"), (F.col("id") * 7919 % 100003).alias("v"), F.sha2(F.col("id").cast("string"), 256).alias("s"),
        F.lit(ts).cast("long").alias("ts"), (F.col("id") % 2).cast("string").alias("p"))


def _rows(table) -> dict[int, tuple]:
    out: dict[int, tuple] = {}
    for r in table.select(["id", "v", "ts", "p"]).to_pylist():
        assert r["id"] not in out, f"duplicate id {r['id']}"
        out[r["id"]] = (r["v"], r["ts"], r["p"])
    return out


def _latest(path: str):
    storage = Storage(path)
    return build_view(storage, load_table_config(storage), ActiveTimeline.load(storage))


def _many_small_commits(spark, path: str, o: dict[str, str], commits: int = 8, per: int = 1500) -> list[str]:
    return [pyhudi.write(_batch(spark, c * per, per), path, {**o, "hoodie.datasource.write.operation": "insert"})
            for c in range(commits)]


def test_cow_clustering_switches_readers_atomically_and_keeps_history(spark, tmp_path):
    path = str(tmp_path / "cow")
    o = _opts(**{"hoodie.clustering.plan.strategy.sort.columns": "v"})
    instants = _many_small_commits(spark, path, o)
    before = _rows(pyhudi.read(spark, path).toArrow())
    old_groups = {(s.partition, s.file_id) for s in _latest(path).all_latest_file_slices()}
    done = pyhudi.cluster(spark, path, o)
    assert len(done) == 1
    (c,) = done
    with open(os.path.join(path, ".hoodie", f"{c}.replacecommit")) as fh:
        meta = json.load(fh)
    assert meta["operationType"] == "CLUSTER"
    replaced = {(p, f) for p, ids in meta["partitionToReplaceFileIds"].items() for f in ids}
    assert replaced == old_groups, "every small file group is rewritten"
    with open(os.path.join(path, ".hoodie", f"{c}.replacecommit.requested"), "rb") as fh:
        requested = am.read_instant_avro(fh.read())
    assert requested["operationType"] == "CLUSTER" and requested["clusteringPlan"]["inputGroups"]
    # Readers switch to the new groups; the row set is identical, commit times are kept.
    after = pyhudi.read(spark, path).toArrow()
    assert _rows(after) == before and _rows(hudi_rs(path)) == before
    assert set(after.column("_hoodie_commit_time").to_pylist()) <= set(instants)
    view = _latest(path)
    new = view.all_latest_file_slices()
    assert {(s.partition, s.file_id) for s in new}.isdisjoint(old_groups)
    assert all(s.base_size <= TARGET for s in new) and len(new) < len(old_groups)
    # Time travel to before the replacecommit still returns the old state from the old files.
    assert _rows(pyhudi.read(spark, path, {"as.of.instant": instants[-1]}).toArrow()) == before
    assert _rows(hudi_rs(path, as_of=instants[-1])) == before
    old_files = {f for f in os.listdir(os.path.join(path, "0")) if f.endswith(".parquet") and c not in f}
    assert old_files, "replaced files stay on disk until a cleaner removes them"
    # Sorted by v: files of a partition cover disjoint, increasing ranges of the sort column.
    for part in ("0", "1"):
        ranges = []
        for s in view.latest_file_slices(part):
            col = pq.read_table(os.path.join(path, s.base_file.path), columns=["v"]).column("v")
            ranges.append((col.to_numpy().min(), col.to_numpy().max()))
        ranges.sort()
        assert all(a[1] <= b[0] for a, b in zip(ranges, ranges[1:]))


def test_mor_clustering_merges_logs(spark, tmp_path):
    path = str(tmp_path / "mor")
    o = _opts(**{"hoodie.datasource.write.table.type": "MERGE_ON_READ"})
    _many_small_commits(spark, path, o, commits=4, per=1200)
    pyhudi.write(_batch(spark, 0, 4800, ts=2).filter("id % 3 = 0"), path, {**o, "hoodie.datasource.write.operation":
                                                                              "upsert"})
    pyhudi.write(spark.createDataFrame([(6, 0, "", 0, "0")], "id long, v long, s string, ts long, p string"), path,
                 {**o, "hoodie.datasource.write.operation": "delete"})
    assert any(s.log_files for s in _latest(path).all_latest_file_slices())
    expected = _rows(pyhudi.read(spark, path).toArrow())
    assert expected[3][1] == 2 and 6 not in expected
    assert pyhudi.cluster(spark, path, o)
    assert _rows(pyhudi.read(spark, path).toArrow()) == expected
    assert _rows(hudi_rs(path)) == expected
    assert not any(s.log_files for s in _latest(path).all_latest_file_slices())


def test_nothing_to_cluster_and_single_unchanged_group_is_skipped(spark, tmp_path):
    path = str(tmp_path / "single")
    o = _opts(**{"hoodie.datasource.write.partitionpath.field": ""})
    o.pop("hoodie.datasource.write.partitionpath.field")
    pyhudi.write(_batch(spark, 0, 1000), path, o)
    storage = Storage(path)
    draft = svc.explain(storage, load_table_config(storage), ClusteringConfig.from_options(
        Options.parse(o)), 125829120)
    assert draft.empty and "unchanged" in draft.decisions[0].reason
    assert pyhudi.cluster(spark, path, o) == []


def test_inline_and_schedule_only_triggers(spark, tmp_path):
    path = str(tmp_path / "inline")
    o = _opts(**{"hoodie.clustering.inline": "true", "hoodie.clustering.inline.max.commits": "3"})
    _many_small_commits(spark, path, o, commits=3, per=800)
    timeline = ActiveTimeline.load(Storage(path))
    done = [i for i in timeline.completed() if i.action.value == "replacecommit"]
    assert len(done) == 1, "the third commit runs one inline clustering"
    path2 = str(tmp_path / "schedule_only")
    o2 = _opts(**{"hoodie.clustering.schedule.inline": "true", "hoodie.clustering.inline.max.commits": "2"})
    _many_small_commits(spark, path2, o2, commits=2, per=800)
    pending = svc.pending_clusterings(Storage(path2))
    assert len(pending) == 1, "schedule-only writes a plan and does not execute it"
    assert pyhudi.cluster(spark, path2, o2) == pending
    assert not svc.pending_clusterings(Storage(path2))


def test_async_clustering_runs_while_ingestion_continues(spark, tmp_path):
    path = str(tmp_path / "async")
    o = _opts(**{"hoodie.clustering.async.enabled": "true", "hoodie.clustering.async.max.commits": "2"})
    expected: dict[int, tuple] = {}
    for c in range(6):
        df = _batch(spark, c * 700, 700)
        pyhudi.write(df, path, {**o, "hoodie.datasource.write.operation": "insert"})
        expected.update(_rows(df.toArrow()))
    assert pyhudi.wait_for_table_services(path, timeout=300) == []
    timeline = ActiveTimeline.load(Storage(path))
    assert any(i.action.value == "replacecommit" for i in timeline.completed())
    assert _rows(pyhudi.read(spark, path).toArrow()) == expected
    assert _rows(hudi_rs(path)) == expected


def test_reject_strategy_fails_updates_to_clustered_groups_and_writes_nothing(spark, tmp_path):
    path = str(tmp_path / "reject")
    o = _opts()
    _many_small_commits(spark, path, o, commits=3, per=1000)
    storage = Storage(path)
    c = svc.schedule(storage, load_table_config(storage), ClusteringConfig.from_options(
        Options.parse(o)), 125829120)
    assert c
    before = sorted(os.listdir(os.path.join(path, ".hoodie")))
    with pytest.raises(ClusteringUpdateConflictError, match="pending clustering"):
        pyhudi.write(_batch(spark, 0, 10, ts=5), path, {**o, "hoodie.datasource.write.operation": "upsert"})
    assert sorted(os.listdir(os.path.join(path, ".hoodie"))) == before, "nothing was written"
    # Inserts still go ahead, into new file groups, never into groups under clustering.
    i = pyhudi.write(_batch(spark, 90000, 50), path, {**o, "hoodie.datasource.write.operation": "insert"})
    with open(os.path.join(path, ".hoodie", f"{i}.commit")) as fh:
        stats = [s for v in json.load(fh)["partitionToWriteStats"].values() for s in v]
    planned = {sl["fileId"] for g in svc.read_plan(ActiveTimeline.load(storage), c)["inputGroups"] for sl in g["slices"]}
    assert stats and all(s["fileId"] not in planned for s in stats)
    assert pyhudi.cluster(spark, path, o) == [c]


def test_allow_strategy_keeps_the_update_and_rolls_back_the_clustering(spark, tmp_path):
    path = str(tmp_path / "allow")
    o = _opts(**{"hoodie.clustering.updates.strategy": ALLOW})
    _many_small_commits(spark, path, o, commits=3, per=1000)
    storage = Storage(path)
    c = svc.schedule(storage, load_table_config(storage), ClusteringConfig.from_options(
        Options.parse(o)), 125829120)
    assert c
    pyhudi.write(_batch(spark, 0, 10, ts=7), path, {**o, "hoodie.datasource.write.operation": "upsert"})
    expected = _rows(pyhudi.read(spark, path).toArrow())
    assert all(expected[i][1] == 7 for i in range(10))
    with pytest.raises(CommitConflictError, match="written after the clustering was scheduled"):
        pyhudi.cluster(spark, path, o, instant=c)
    assert c not in svc.pending_clusterings(storage)
    assert not any(n.startswith(c) for n in os.listdir(os.path.join(path, ".hoodie")))
    assert _rows(pyhudi.read(spark, path).toArrow()) == expected and _rows(hudi_rs(path)) == expected
    assert pyhudi.cluster(spark, path, o), "a fresh plan picks up the new data and commits"
    assert _rows(pyhudi.read(spark, path).toArrow()) == expected
