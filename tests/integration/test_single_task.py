"""The small-batch write (writer/single_task.py) against the distributed path.

The same batches go into two tables, one with the one-task path (the default for small inputs) and one
with it turned off; after every batch both must hold exactly the model's records, through pyhudi and
hudi-rs, and describe the same work in their commits. Refusals (null keys, updates under pending
clustering) must leave the timeline as it was.
"""

from __future__ import annotations

import json
import logging
import os
import random

import pytest

import pyhudi
from pyhudi.config.registry import Options
from pyhudi.errors import ClusteringUpdateConflictError, InvalidRecordError
from pyhudi.model.table_config import load_table_config
from pyhudi.services import clustering as svc
from pyhudi.storage import Storage
from pyhudi.writer.config import ClusteringConfig
from tests.helpers import hudi_rs

pytestmark = [pytest.mark.spark]
SCHEMA = "id long, name string, part string, ts long"
OFF = {"hoodie.pyhudi.write.single.task.max.bytes": "0"}


def _opts(table_type: str, **extra: str) -> dict[str, str]:
    return {
        "hoodie.table.name": "st", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type, "hoodie.parquet.max.file.size": str(96 * 1024),
        "hoodie.parquet.small.file.limit": str(72 * 1024), "hoodie.index.bloom.num_entries": "500",
        "hoodie.record.size.estimation.threshold": "0.1", **extra,
    }


def _rows(table) -> dict[tuple[str, int], tuple[str, int]]:
    out: dict[tuple[str, int], tuple[str, int]] = {}
    for r in ([] if table is None else table.select(["id", "name", "part", "ts"]).to_pylist()):
        key = (r["part"], r["id"])
        assert key not in out, f"duplicate record {key}"
        out[key] = (r["name"], r["ts"])
    return out


def _totals(path: str, instant: str) -> tuple[int, int, int]:
    """(inserts, updates, deletes) the commit's write stats count."""
    hoodie = os.path.join(path, ".hoodie")
    name = next(n for n in os.listdir(hoodie) if n.startswith(instant) and n.split(".")[-1] in
                ("commit", "deltacommit"))
    with open(os.path.join(hoodie, name)) as fh:
        stats = [s for v in json.load(fh)["partitionToWriteStats"].values() for s in v]
    return (sum(s["numInserts"] for s in stats), sum(s["numUpdateWrites"] for s in stats),
            sum(s["numDeletes"] for s in stats))


def _single_task_writes(caplog) -> int:
    return sum("in one task" in r.getMessage() for r in caplog.records)


# Under -m extended (~55 s): small batches take the one-task path in every other write test.
@pytest.mark.extended
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_single_task_matches_distributed_path_and_model(spark, tmp_path, caplog, table_type):
    caplog.set_level(logging.INFO, logger="pyhudi.writer.client")
    rng = random.Random(5)
    fast, slow = str(tmp_path / "fast"), str(tmp_path / "slow")
    o = _opts(table_type)
    model: dict[tuple[str, int], tuple[str, int]] = {}
    next_id = 0
    for step in range(14):
        op = "insert" if step < 2 else rng.choice(["upsert", "upsert", "insert", "delete"])
        ts = 10 * step + 10
        rows: list[tuple[int, str, str, int]] = []
        if op == "delete":
            rows = [(k[1], "", k[0], 0) for k in rng.sample(sorted(model), min(len(model), 40))]
            rows.append((10**9 + step, "", "p0", 0))  # a key the table does not have
        else:
            if op == "upsert":
                rows = [(k[1], f"u{ts}", k[0], ts) for k in rng.sample(sorted(model), min(len(model), 150))]
                rows += [(r[0], "loser", r[2], r[3] - 1) for r in rows[:5]]  # in-batch duplicates lose
            for _ in range(rng.randint(50, 700)):
                rows.append((next_id, f"n{ts}", rng.choice(["p0", "p1"]), ts))
                next_id += 1
        rng.shuffle(rows)
        before = _single_task_writes(caplog)
        i_fast = pyhudi.write(spark.createDataFrame(rows, SCHEMA), fast, {**o, "hoodie.datasource.write.operation": op})
        took_one_task = _single_task_writes(caplog) > before
        assert took_one_task == (step > 0), f"step {step}: only writes into an existing table take one task"
        i_slow = pyhudi.write(spark.createDataFrame(rows, SCHEMA), slow,
                              {**o, **OFF, "hoodie.datasource.write.operation": op})
        assert _single_task_writes(caplog) == before + int(took_one_task), "max.bytes=0 turns the path off"
        if op == "delete":
            for rid, _, part, _ in rows:
                model.pop((part, rid), None)
        else:
            best: dict[tuple[str, int], tuple[str, int]] = {}
            for rid, name, part, t in rows:
                if (part, rid) not in best or t > best[(part, rid)][1]:
                    best[(part, rid)] = (name, t)
            model.update(best)
        for path in (fast, slow):
            assert _rows(pyhudi.read(spark, path).toArrow()) == model, f"step {step} ({op}) {path}"
            assert _rows(hudi_rs(path)) == model, f"step {step} ({op}) {path}: hudi-rs"
        assert _totals(fast, i_fast) == _totals(slow, i_slow), f"step {step} ({op}): commits describe the same work"


def test_null_keys_are_refused_and_leave_no_trace(spark, tmp_path):
    path = str(tmp_path / "t")
    o = _opts("COPY_ON_WRITE")
    pyhudi.write(spark.createDataFrame([(1, "a", "p0", 1)], SCHEMA), path, o)
    before = sorted(os.listdir(os.path.join(path, ".hoodie")))
    bad = spark.createDataFrame([(2, "b", "p0", 2), (None, "c", "p0", 2)], SCHEMA)
    with pytest.raises(InvalidRecordError, match="1 record.*null or empty record key"):
        pyhudi.write(bad, path, {**o, "hoodie.datasource.write.operation": "upsert"})
    assert sorted(os.listdir(os.path.join(path, ".hoodie"))) == before, "the refused write left no instant"
    assert _rows(hudi_rs(path)) == {("p0", 1): ("a", 1)}


def test_updates_under_pending_clustering_are_refused_by_the_task(spark, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="pyhudi.writer.client")
    path = str(tmp_path / "t")
    o = _opts("COPY_ON_WRITE")
    for c in range(3):
        pyhudi.write(spark.createDataFrame([(c * 100 + i, "a", "p0", 1) for i in range(100)], SCHEMA), path,
                     {**o, "hoodie.datasource.write.operation": "bulk_insert"})
    storage = Storage(path)
    assert svc.schedule(storage, load_table_config(storage), ClusteringConfig.from_options(Options.parse(o)), 1 << 27)
    before = sorted(os.listdir(os.path.join(path, ".hoodie")))
    with pytest.raises(ClusteringUpdateConflictError, match="pending clustering"):
        pyhudi.write(spark.createDataFrame([(5, "u", "p0", 2)], SCHEMA), path,
                     {**o, "hoodie.datasource.write.operation": "upsert"})
    assert _single_task_writes(caplog) == 1, "the refusal came from the one-task path"
    assert sorted(os.listdir(os.path.join(path, ".hoodie"))) == before, "nothing was written"


def test_large_inputs_and_global_indexes_take_the_distributed_path(spark, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="pyhudi.writer.client")
    path = str(tmp_path / "t")
    o = _opts("COPY_ON_WRITE")
    df = spark.createDataFrame([(i, "a", "p0", 1) for i in range(300)], SCHEMA)
    pyhudi.write(df, path, o)
    pyhudi.write(df, path, {**o, "hoodie.pyhudi.write.single.task.max.bytes": "100"})
    pyhudi.write(df, path, {**o, "hoodie.index.type": "GLOBAL_SIMPLE"})
    assert _single_task_writes(caplog) == 0
    pyhudi.write(df, path, o)
    assert _single_task_writes(caplog) == 1
    assert len(_rows(hudi_rs(path))) == 300
