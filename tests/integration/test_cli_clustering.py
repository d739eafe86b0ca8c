"""`pyhudi clustering ... run` on tables written by pyhudi: many small bulk_insert files become few files
within the target size, the data reads the same (meta columns included), and a write that slips into a
scheduled clustering makes `run` roll it back and exit 3."""

from __future__ import annotations

import json
import os
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

import pyhudi
from pyhudi.cli.main import main
from pyhudi.model.table_config import load_table_config
from pyhudi.storage import Storage
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.builder import build_view
from tests.helpers import hudi_rs, rows_by_key

pytestmark = pytest.mark.spark
KB = 1024
TARGET = 160 * KB
COLS = ["v", "s", "ts", "p", "_hoodie_commit_time", "_hoodie_record_key", "_hoodie_partition_path"]
BLOOM = "hoodie.index.bloom.num_entries"  # a 1000-entry bloom filter in each footer, not 60000 (~430 KiB)
CLUSTER_OPTS = ["-o", f"{BLOOM}=1000", "-o", f"hoodie.clustering.plan.strategy.target.file.max.bytes={TARGET}",
                "-o", f"hoodie.clustering.plan.strategy.small.file.limit={TARGET // 2}",
                "-o", f"hoodie.clustering.plan.strategy.max.bytes.per.group={8 * TARGET}",
                "-o", "hoodie.clustering.plan.strategy.sort.columns=v"]


def opts(table_type: str = "COPY_ON_WRITE", **extra: str) -> dict[str, str]:
    return {"hoodie.table.name": "clc", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.table.type": table_type, "hoodie.datasource.write.partitionpath.field": "p",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.bulkinsert.shuffle.parallelism": "2",
            "hoodie.upsert.shuffle.parallelism": "2", "hoodie.insert.shuffle.parallelism": "2", BLOOM: "1000",
            **extra}


def batch(spark: Any, start: int, n: int, ts: int = 1) -> Any:
    return spark.range(start, start + n).select(
        F.col("id"), (F.col("id") * 7919 % 100003).alias("v"), F.sha2(F.col("id").cast("string"), 256).alias("s"),
        F.lit(ts).cast("long").alias("ts"), (F.col("id") % 2).cast("string").alias("p"))


def bulk_batches(spark: Any, path: str, batches: int, per: int, table_type: str = "COPY_ON_WRITE") -> None:
    for b in range(batches):
        pyhudi.write(batch(spark, b * per, per), path,
                     opts(table_type, **{"hoodie.datasource.write.operation": "bulk_insert"}))


def snapshot(spark: Any, path: str) -> dict[Any, tuple[Any, ...]]:
    return rows_by_key(pyhudi.read(spark, path).toArrow(), "id", COLS)


def latest(path: str) -> dict[tuple[str, str], Any]:
    storage = Storage(path)
    view = build_view(storage, load_table_config(storage), ActiveTimeline.load(storage))
    return {(s.partition, s.file_id): s for s in view.all_latest_file_slices()}


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    cap = capsys.readouterr()
    return code, cap.out, cap.err


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_cli_run_clusters_small_bulk_insert_files(spark: Any, tmp_path: Any, capsys: pytest.CaptureFixture[str],
                                                  table_type: str) -> None:
    path = str(tmp_path / "t")
    bulk_batches(spark, path, batches=8, per=600, table_type=table_type)
    before = snapshot(spark, path)
    assert len(before) == 4800
    old = latest(path)
    assert len(old) >= 16 and all(s.base_size < TARGET // 2 for s in old.values()), "many small files"

    code, out, err = cli(capsys, "clustering", path, "show", "--explain", *CLUSTER_OPTS)
    assert code == 0 and err == "" and "next clustering would choose" in out

    code, out, err = cli(capsys, "clustering", path, "run", *CLUSTER_OPTS, "--json")
    assert code == 0, err
    data = json.loads(out)
    (done,) = data["completed"]
    assert data["scheduled"] == [done["instant"]] and data["conflict"] is None
    assert done["file_groups_replaced"] == len(old) and done["sort_columns"] == ["v"]
    assert done["records"] == 4800 and done["files_written"] < len(old)

    new = latest(path)
    assert not set(new) & set(old), "every small file group was replaced"
    assert len(new) == done["files_written"]
    for s in new.values():
        assert s.base_instant == done["instant"] and not s.log_files
        assert 0 < s.base_size <= TARGET, f"{s.base_file.name}: {s.base_size} B over the target {TARGET} B"
        vs = pq.read_table(os.path.join(path, s.base_file.path), columns=["v"]).column("v").to_pylist()
        assert vs == sorted(vs), "each output file holds a run of the sort column"
    # The same rows, commit times and keys (clustering preserves the meta columns); hudi-rs agrees.
    assert snapshot(spark, path) == before
    assert rows_by_key(hudi_rs(path), "id", COLS) == before

    code, out, _ = cli(capsys, "clustering", path, "show", *CLUSTER_OPTS)
    assert code == 0 and "completed clusterings: 1" in out and f"{done['instant']}: replaced {len(old)}" in out
    assert spark.sparkContext._jsc is not None  # the CLI kept the session it did not create


def test_cli_run_exits_3_when_a_write_slips_into_a_scheduled_clustering(spark: Any, tmp_path: Any,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "c")
    bulk_batches(spark, path, batches=4, per=400)
    code, out, err = cli(capsys, "clustering", path, "schedule", *CLUSTER_OPTS, "--json")
    assert code == 0, err
    instant = json.loads(out)["scheduled"]
    assert instant
    # Allowed by the update strategy, an upsert lands in a file group of the pending plan.
    allow = {"hoodie.clustering.updates.strategy": "SparkAllowUpdateStrategy",
             "hoodie.datasource.write.operation": "upsert"}
    pyhudi.write(batch(spark, 0, 1, ts=2).withColumn("v", F.lit(-1).cast("long")), path, opts(**allow))
    expected = snapshot(spark, path)
    assert expected[0][0] == -1 and len(expected) == 1600

    code, out, err = cli(capsys, "clustering", path, "run", "--instant", instant, *CLUSTER_OPTS)
    assert code == 3
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"pyhudi clustering: error: clustering {instant}:") and "rolled back" in last
    assert "no clustering completed" in out
    hoodie = os.listdir(os.path.join(path, ".hoodie"))
    assert not [n for n in hoodie if n.startswith(instant)], "the conflicting plan was rolled back"
    assert snapshot(spark, path) == expected

    # A fresh plan includes the new data; the update survives.
    code, out, err = cli(capsys, "clustering", path, "run", *CLUSTER_OPTS)
    assert code == 0, err
    assert "completed 1 clustering" in out
    assert snapshot(spark, path) == expected
