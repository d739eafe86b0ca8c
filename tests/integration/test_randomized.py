"""Randomized mixed workloads against a plain-Python model, checked after every step.

The model holds, per (partition, key), the row and the instant that last wrote
it. After each commit the table must equal the model through pyhudi and
through hudi-rs; periodically, time travel to an earlier instant and an
incremental window are checked against remembered model states; and the
commit's write stats must describe the files on disk exactly.
"""

from __future__ import annotations

import json
import logging
import os
import random
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi.errors import InstantNotFoundError
from tests.helpers import hudi_rs, state_at, time_travel

pytestmark = [pytest.mark.spark, pytest.mark.slow]
PARTS = ["p0", "p1", "p2"]
SCHEMA = "id long, name string, part string, ts long"


@dataclass
class Model:
    rows: dict[tuple[str, int], tuple[str, int, str]] = field(default_factory=dict)  # (part,id) -> (name, ts, instant)
    history: list[tuple[str, dict[tuple[str, int], tuple[str, int, str]]]] = field(default_factory=list)

    def snapshot(self) -> dict[tuple[str, int], tuple[str, int]]:
        return {k: (v[0], v[1]) for k, v in self.rows.items()}


def _table_rows(table) -> dict[tuple[str, int], tuple[str, int]]:
    out: dict[tuple[str, int], tuple[str, int]] = {}
    if table is None:
        return out
    for r in table.select(["id", "name", "part", "ts"]).to_pylist():
        key = (r["part"], r["id"])
        assert key not in out, f"duplicate record {key}"
        out[key] = (r["name"], r["ts"])
    return out


def _commit_times(table) -> dict[tuple[str, int], str]:
    return {(r["part"], r["id"]): r["_hoodie_commit_time"]
            for r in table.select(["id", "part", "_hoodie_commit_time"]).to_pylist()}


def _check_write_stats(path: str, instant: str) -> None:
    """Write stats name real files whose sizes and record counts they state exactly."""
    hoodie = os.path.join(path, ".hoodie")
    action = next(a for a in ("commit", "deltacommit", "replacecommit")
                  if os.path.exists(os.path.join(hoodie, f"{instant}.{a}")))
    with open(os.path.join(hoodie, f"{instant}.{action}")) as fh:
        meta = json.loads(fh.read())
    for part, stats in meta["partitionToWriteStats"].items():
        for s in stats:
            f = os.path.join(path, s["path"])
            assert os.path.getsize(f) == s["fileSizeInBytes"] == s["totalWriteBytes"]
            assert pq.ParquetFile(f).metadata.num_rows == s["numWrites"]
            assert s["partitionPath"] == part and s["path"].endswith(f"_{instant}.parquet")
    files = [os.path.join(dp, n) for dp, _, ns in os.walk(path) if ".hoodie" not in dp for n in ns
             if n.endswith(".parquet")]
    seen: set[tuple[str, str]] = set()
    for f in files:
        name = os.path.basename(f)
        fid, _, inst = name[:-len(".parquet")].split("_")
        assert (fid, inst) not in seen, f"two base files for {fid} at {inst}"
        seen.add((fid, inst))


def _frame(spark, rows: list[tuple[int, str, str, int]], staging: Path | None):
    """The batch as local rows, or (with `staging`) as a parquet file read back with spark.read.parquet,
    which bulk_insert and one-task writes read directly with pyarrow."""
    if staging is None:
        return spark.createDataFrame(rows, SCHEMA)
    batch = staging / f"batch-{len(list(staging.iterdir())):04d}"
    batch.mkdir()
    cols = list(zip(*rows)) if rows else [[], [], [], []]
    pq.write_table(pa.table({"id": pa.array(cols[0], pa.int64()), "name": pa.array(cols[1], pa.string()),
                             "part": pa.array(cols[2], pa.string()), "ts": pa.array(cols[3], pa.int64())}),
                   str(batch / "part-0.parquet"))
    return spark.read.parquet(str(batch))


def _apply(rng: random.Random, spark, path: str, options: dict[str, str], model: Model, next_id: list[int],
           staging: Path | None = None) -> str:
    existing = sorted(model.rows)
    op = rng.choices(["upsert", "insert", "delete", "bulk_insert", "insert_overwrite"],
                     weights=[50, 20, 15, 10, 5])[0]
    if not existing and op in ("delete", "insert_overwrite"):
        op = "upsert"
    ts = len(model.history) * 10 + 10
    rows: list[tuple[int, str, str, int]] = []
    if op in ("upsert",):
        for key in rng.sample(existing, min(len(existing), rng.randint(0, 120))):
            rows.append((key[1], f"u{ts}", key[0], ts + rng.randint(0, 5)))
        for _ in range(rng.randint(1, 200)):
            rows.append((next_id[0], f"n{ts}", rng.choice(PARTS), ts))
            next_id[0] += 1
        for r in rng.sample(rows, min(len(rows), 10)):  # in-batch duplicates with a lower precombine value
            rows.append((r[0], "dup-loser", r[2], r[3] - 100))
    elif op in ("insert", "bulk_insert"):
        for _ in range(rng.randint(1, 300)):
            rows.append((next_id[0], f"i{ts}", rng.choice(PARTS), ts))
            next_id[0] += 1
    elif op == "delete":
        for key in rng.sample(existing, min(len(existing), rng.randint(1, 60))):
            rows.append((key[1], "", key[0], 0))
        rows.append((10**9 + ts, "", "p0", 0))  # a key the table does not have
    else:
        part = rng.choice(PARTS)
        for _ in range(rng.randint(1, 50)):
            rows.append((next_id[0], f"o{ts}", part, ts))
            next_id[0] += 1
    rng.shuffle(rows)
    instant = pyhudi.write(_frame(spark, rows, staging), path, {**options, "hoodie.datasource.write.operation": op})
    _model_apply(model, op, rows, instant)
    return op


def _model_apply(model: Model, op: str, rows: list[tuple[int, str, str, int]], instant: str) -> None:
    if op == "delete":
        for rid, _, part, _ in rows:
            model.rows.pop((part, rid), None)
    elif op == "insert_overwrite":
        parts = {r[2] for r in rows}
        model.rows = {k: v for k, v in model.rows.items() if k[0] not in parts}
        for rid, name, part, ts in rows:
            model.rows[(part, rid)] = (name, ts, instant)
    else:
        best: dict[tuple[str, int], tuple[str, int]] = {}
        for rid, name, part, ts in rows:
            cur = best.get((part, rid))
            if cur is None or ts > cur[1]:
                best[(part, rid)] = (name, ts)
        for key, (name, ts) in best.items():
            model.rows[key] = (name, ts, instant)
    model.history.append((instant, dict(model.rows)))


def _incremental(spark, path: str, begin: str, end: str):
    return pyhudi.read(spark, path, {"hoodie.datasource.query.type": "incremental",
                                     "hoodie.datasource.read.begin.instanttime": begin,
                                     "hoodie.datasource.read.end.instanttime": end}).toArrow()


def _run(spark, tmp_path, index: str, steps: int, seed: int, extra: dict[str, str] | None = None,
         parquet_input: bool = False) -> None:
    rng = random.Random(seed)
    path = str(tmp_path / f"rand_{index}")
    options = {
        "hoodie.table.name": "rand", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.index.type": index, "hoodie.parquet.max.file.size": str(160 * 1024),
        "hoodie.parquet.small.file.limit": str(120 * 1024), "hoodie.index.bloom.num_entries": "1000",
        "hoodie.record.size.estimation.threshold": "0.1", **(extra or {}),
    }
    model = Model()
    next_id = [0]
    staging = tmp_path / "staging" if parquet_input else None
    if staging is not None:
        staging.mkdir()
    for step in range(steps):
        op = _apply(rng, spark, path, options, model, next_id, staging)
        instant = model.history[-1][0]
        expected = model.snapshot()
        ours = pyhudi.read(spark, path).toArrow()
        assert _table_rows(ours) == expected, f"step {step} ({op}): pyhudi differs from the model"
        assert _table_rows(hudi_rs(path)) == expected, f"step {step} ({op}): hudi-rs differs from the model"
        assert _commit_times(ours) == {k: v[2] for k, v in model.rows.items()}, f"step {step}: commit times"
        _check_write_stats(path, instant)
        if step % 4 == 3:
            past_instant, _ = model.history[rng.randrange(len(model.history))]
            table, earliest = time_travel(spark, path, past_instant)
            if table is None:
                # Cleaned (automatic cleaning keeps 10 commits): the named instant must be later and exact.
                assert earliest is not None and earliest > past_instant
                past_instant = earliest
                table = pyhudi.read(spark, path, {"as.of.instant": earliest}).toArrow()
            past = {k: (v[0], v[1]) for k, v in state_at(model.history, past_instant).items()}
            assert _table_rows(table) == past, f"step {step}: time travel to {past_instant}"
            assert _table_rows(hudi_rs(path, as_of=past_instant)) == past
            lo, hi = sorted(rng.sample(range(len(model.history)), 2)) if len(model.history) > 1 else (0, 0)
            begin, end = model.history[lo][0], model.history[hi][0]
            if time_travel(spark, path, end)[0] is None:
                # The window ends at a cleaned instant: the incremental query must refuse it too...
                with pytest.raises(InstantNotFoundError):
                    _incremental(spark, path, begin, end)
                end, hi = model.history[-1][0], len(model.history) - 1  # ...and an open-ended window works
            want = {k: (v[0], v[1]) for k, v in model.history[hi][1].items() if begin < v[2] <= end}
            got = _incremental(spark, path, begin, end)
            assert _table_rows(got) == want, f"step {step}: incremental ({begin}, {end}]"


def test_randomized_simple_index(spark, tmp_path):
    _run(spark, tmp_path, "SIMPLE", steps=30, seed=7)


@pytest.mark.extended  # the distributed path also runs in test_engines_randomized's Spark steps
def test_randomized_simple_index_distributed_path(spark, tmp_path):
    """The same workload with the one-task path for small batches turned off (every write distributed)."""
    _run(spark, tmp_path, "SIMPLE", steps=16, seed=7, extra={"hoodie.pyhudi.write.single.task.max.bytes": "0"})


def test_randomized_parquet_file_input(spark, tmp_path, caplog):
    """The same workload fed as parquet files (spark.read.parquet): bulk_insert and one-task writes
    read them directly with pyarrow (writer/direct_input.py), the others through Spark's rows."""
    caplog.set_level(logging.INFO, logger="pyhudi.writer.client")
    _run(spark, tmp_path, "SIMPLE", steps=20, seed=7, parquet_input=True)
    direct = sum("input file(s) directly" in r.getMessage() for r in caplog.records)
    assert direct >= 10, f"only {direct} of 20 writes read their input directly"


def test_randomized_bloom_index(spark, tmp_path):
    _run(spark, tmp_path, "BLOOM", steps=16, seed=11)
