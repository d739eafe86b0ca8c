"""Merge-on-read: randomized workloads with compactions, sizing rules per index, log-file behaviour, faults."""

from __future__ import annotations

import json
import os
import random

import pytest

import pyhudi
from pyhudi.io.log_format import BlockType, LogBlock, read_blocks
from pyhudi.model.table_config import load_table_config
from pyhudi.services import compaction
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action, Instant, State
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.builder import build_view
from pyhudi.writer.config import CompactionConfig
from tests.helpers import hudi_rs, state_at, time_travel

pytestmark = pytest.mark.spark
PARTS = ["p0", "p1"]
SCHEMA = "id long, name string, part string, ts long"
MAX, LIMIT = 16 * 1024, 12 * 1024


def _options(index: str, **extra: str) -> dict[str, str]:
    return {"hoodie.table.name": "mor", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.table.type": "MERGE_ON_READ", "hoodie.index.type": index,
            "hoodie.parquet.max.file.size": str(MAX), "hoodie.parquet.small.file.limit": str(LIMIT),
            "hoodie.index.bloom.num_entries": "500", "hoodie.bucket.index.num.buckets": "3",
            "hoodie.record.size.estimation.threshold": "0.05", **extra}


def _rows(table) -> dict[tuple[str, int], tuple[str, int]]:
    out: dict[tuple[str, int], tuple[str, int]] = {}
    if table is None:
        return out
    for r in table.select(["id", "name", "part", "ts"]).to_pylist():
        key = (r["part"], r["id"])
        assert key not in out, f"duplicate record {key}"
        out[key] = (r["name"], r["ts"])
    return out


def _slice_state(path: str) -> dict[tuple[str, str], tuple[bool, bool, int]]:
    """(partition, fileId) -> (has logs, pending compaction, estimated size) before a write."""
    storage = Storage(path)
    view = build_view(storage, load_table_config(storage), ActiveTimeline.load(storage))
    pending = view.pending_compaction_file_ids()
    out = {}
    for p in view.partition_paths:
        for s in view.latest_file_slices(p):
            out[(p, s.file_id)] = (bool(s.log_files), (p, s.file_id) in pending,
                                   s.estimated_parquet_size(0.35))
    for (p, fid) in pending:
        out.setdefault((p, fid), (True, True, 0))
        out[(p, fid)] = (out[(p, fid)][0], True, out[(p, fid)][2])
    return out


def _check_sizing_rules(path: str, instant: str, before: dict, log_aware: bool) -> None:
    meta_file = os.path.join(path, ".hoodie", f"{instant}.deltacommit")
    if not os.path.exists(meta_file):
        return
    with open(meta_file) as fh:
        meta = json.load(fh)
    for part, stats in meta["partitionToWriteStats"].items():
        for s in stats:
            if s["numInserts"] <= 0:
                continue
            state = before.get((part, s["fileId"]))
            if log_aware:
                assert ".log." in s["path"], f"log-aware index: inserts must go to logs, got {s['path']}"
                if state is not None:
                    assert not state[1], f"inserts into {s['fileId']} under pending compaction"
                    assert state[2] < MAX, f"inserts into {s['fileId']} whose estimated size {state[2]} >= max"
            else:
                assert s["path"].endswith(".parquet"), f"non-log-aware index: inserts must go to parquet ({s})"
                if state is not None:
                    assert not state[0], f"inserts into {s['fileId']} which has log files"
                    assert not state[1], f"inserts into {s['fileId']} under pending compaction"


def _run(spark, tmp_path, index: str, steps: int, seed: int) -> None:
    rng = random.Random(seed)
    path = str(tmp_path / f"mor_{index}")
    options = _options(index)
    model: dict[tuple[str, int], tuple[str, int, str]] = {}
    history: list[tuple[str, dict]] = []
    next_id = 0
    log_aware = index in ("INMEMORY", "BUCKET")
    for step in range(steps):
        op = rng.choices(["upsert", "insert", "delete", "schedule", "compact"], weights=[45, 20, 15, 10, 10])[0]
        # Always exercise writes against a pending compaction: schedule, write twice, then compact.
        third = steps // 3
        op = {third - 1: "upsert", third: "schedule", third + 1: "upsert", third + 2: "insert",
              third + 3: "compact"}.get(step, op)
        if not model and op != "insert":
            op = "upsert"
        storage = Storage(path)
        if op in ("schedule", "compact"):
            table = load_table_config(storage)
            if op == "schedule":
                compaction.schedule(storage, table, CompactionConfig(), force=True)
            else:
                pyhudi.compact(spark, path, options)
        else:
            ts = step * 10 + 10
            rows: list[tuple[int, str, str, int]] = []
            if op == "delete":
                rows = [(k[1], "", k[0], 0) for k in rng.sample(sorted(model), min(len(model), rng.randint(1, 25)))]
            else:
                if op == "upsert":
                    picked = rng.sample(sorted(model), min(len(model), rng.randint(20, 80)))
                    rows += [(k[1], f"u{ts}", k[0], ts) for k in picked]
                for _ in range(rng.randint(1, 150)):
                    rows.append((next_id, f"n{ts}", rng.choice(PARTS), ts))
                    next_id += 1
            before = _slice_state(path) if os.path.exists(path) else {}
            instant = pyhudi.write(spark.createDataFrame(rows, SCHEMA), path,
                                   {**options, "hoodie.datasource.write.operation": op})
            _check_sizing_rules(path, instant, before, log_aware)
            for rid, name, part, rts in rows:
                if op == "delete":
                    model.pop((part, rid), None)
                else:
                    model[(part, rid)] = (name, rts, instant)
            history.append((instant, dict(model)))
        expected = {k: (v[0], v[1]) for k, v in model.items()}
        ours = pyhudi.read(spark, path).toArrow()
        assert _rows(ours) == expected, f"step {step} ({op}): pyhudi differs from the model"
        commit_times = {(r["part"], r["id"]): r["_hoodie_commit_time"]
                        for r in ours.select(["id", "part", "_hoodie_commit_time"]).to_pylist()}
        assert commit_times == {k: v[2] for k, v in model.items()}, f"step {step}: commit times"
        if not compaction.pending_compactions(Storage(path)):
            # hudi-rs 0.5.0 drops logs written against a pending compaction, so compare only without one.
            assert _rows(hudi_rs(path)) == expected, f"step {step} ({op}): hudi-rs differs from the model"
        if step % 3 == 2 and history:
            past_instant, _ = history[rng.randrange(len(history))]
            table, earliest = time_travel(spark, path, past_instant)
            if table is None:
                assert earliest is not None and earliest > past_instant
                past_instant = earliest
                table = pyhudi.read(spark, path, {"as.of.instant": earliest}).toArrow()
            want = {k: (v[0], v[1]) for k, v in state_at(history, past_instant).items()}
            assert _rows(table) == want, f"step {step}: time travel to {past_instant}"
            lo = history[rng.randrange(len(history))][0]
            got = pyhudi.read(spark, path, {"hoodie.datasource.query.type": "incremental",
                                            "hoodie.datasource.read.begin.instanttime": lo}).toArrow()
            assert _rows(got) == {k: (v[0], v[1]) for k, v in model.items() if v[2] > lo}
    pyhudi.compact(spark, path, options)
    assert _rows(pyhudi.read(spark, path).toArrow()) == {k: (v[0], v[1]) for k, v in model.items()}
    assert _rows(hudi_rs(path)) == {k: (v[0], v[1]) for k, v in model.items()}


@pytest.mark.slow
@pytest.mark.parametrize("index,steps,seed", [("SIMPLE", 18, 3), ("BLOOM", 10, 5),
                                              pytest.param("INMEMORY", 16, 9, marks=pytest.mark.extended),
                                              ("BUCKET", 12, 13), ("GLOBAL_SIMPLE", 8, 17)])
def test_randomized_mor(spark, tmp_path, index, steps, seed):
    _run(spark, tmp_path, index, steps, seed)


def _log_files(path: str) -> list[str]:
    return sorted(os.path.join(dp, n) for dp, _, ns in os.walk(path) for n in ns if ".log." in n)


def test_log_files_never_appended_and_roll_over(spark, tmp_path):
    path = str(tmp_path / "logs")
    o = _options("SIMPLE", **{"hoodie.logfile.data.block.format": "avro", "hoodie.logfile.data.block.max.size": "2000",
                             "hoodie.logfile.max.size": "6000"})
    rows = [(i, f"a{i}", "p0", 1) for i in range(300)]
    pyhudi.write(spark.createDataFrame(rows, SCHEMA), path, o)
    pyhudi.write(spark.createDataFrame([(i, f"b{i}", "p0", 2) for i in range(300)], SCHEMA), path, o)
    first = {f: os.path.getsize(f) for f in _log_files(path)}
    assert len(first) >= 2, "a write over hoodie.logfile.max.size rolls to the next log version"
    kinds = set()
    for f in first:
        with open(f, "rb") as fh:
            blocks = [b for b in read_blocks(fh.read()) if isinstance(b, LogBlock)]
        assert len(blocks) >= 1
        kinds.update(b.block_type for b in blocks)
    assert kinds == {BlockType.AVRO_DATA_BLOCK}
    pyhudi.write(spark.createDataFrame([(i, f"c{i}", "p0", 3) for i in range(0, 300, 7)], SCHEMA), path, o)
    after = {f: os.path.getsize(f) for f in _log_files(path)}
    assert all(after[f] == size for f, size in first.items()), "closed log files must never be appended to"
    assert len(after) > len(first)
    got = {r["id"]: r["name"] for r in pyhudi.read(spark, path).collect()}
    assert got == {i: (f"c{i}" if i % 7 == 0 else f"b{i}") for i in range(300)}
    assert _rows(hudi_rs(path)) == _rows(pyhudi.read(spark, path).toArrow())


def test_torn_log_tail_loses_only_the_torn_block(spark, tmp_path):
    path = str(tmp_path / "torn")
    o = _options("SIMPLE")
    pyhudi.write(spark.createDataFrame([(i, "a", "p0", 1) for i in range(20)], SCHEMA), path, o)
    pyhudi.write(spark.createDataFrame([(i, "b", "p0", 2) for i in range(5)], SCHEMA), path, o)
    (log_file,) = _log_files(path)
    # A crashed writer's partial block: magic plus a few header bytes appended to a committed log.
    with open(log_file, "ab") as fh:
        fh.write(b"#HUDI#\x00\x00\x00\x00\x00\x00\x10\x00\x00\x00")
    got = {r["id"]: r["name"] for r in pyhudi.read(spark, path).collect()}
    assert got == {i: ("b" if i < 5 else "a") for i in range(20)}
    assert pyhudi.compact(spark, path, o)
    assert {r["id"]: r["name"] for r in pyhudi.read(spark, path).collect()} == got


def test_interrupted_compaction_is_resumed_from_its_plan(spark, tmp_path):
    path = str(tmp_path / "resume")
    o = _options("SIMPLE")
    pyhudi.write(spark.createDataFrame([(i, "a", "p0", 1) for i in range(50)], SCHEMA), path, o)
    pyhudi.write(spark.createDataFrame([(i, "b", "p0", 2) for i in range(0, 50, 2)], SCHEMA), path, o)
    storage = Storage(path)
    instant = compaction.schedule(storage, load_table_config(storage), CompactionConfig(), force=True)
    assert instant
    # Simulate a crash mid-execution: inflight, a marked half-written base file, no commit.
    timeline = ActiveTimeline.load(storage)
    timeline.transition_to_inflight(Instant(instant, Action.COMPACTION, State.REQUESTED), b"")
    ghost = f"p0/deadbeef-0000-0000-0000-000000000000-0_9-9-9_{instant}.parquet"
    storage.write_bytes(ghost, b"PAR1 partial")
    storage.write_bytes(f".hoodie/.temp/{instant}/{ghost}.marker.CREATE", b"")
    assert pyhudi.read(spark, path).count() == 50
    assert pyhudi.compact(spark, path, o) == [instant]
    assert not storage.exists(ghost)
    assert os.path.exists(os.path.join(path, ".hoodie", f"{instant}.commit"))
    got = {r["id"]: r["name"] for r in pyhudi.read(spark, path).collect()}
    assert got == {i: ("b" if i % 2 == 0 else "a") for i in range(50)}
    view = build_view(storage, load_table_config(storage), ActiveTimeline.load(storage))
    assert all(not s.log_files for s in view.latest_file_slices("p0"))
    assert _rows(hudi_rs(path)) == _rows(pyhudi.read(spark, path).toArrow())


def test_inline_compaction_trigger(spark, tmp_path):
    path = str(tmp_path / "inline")
    o = _options("SIMPLE", **{"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "3"})
    for k in range(4):
        pyhudi.write(spark.createDataFrame([(i, f"v{k}", "p0", k) for i in range(0, 30, k + 1)], SCHEMA), path, o)
    timeline = ActiveTimeline.load(Storage(path))
    compactions = [i for i in timeline.completed().actions(Action.COMMIT) if timeline.is_compaction_commit(i)]
    assert len(compactions) == 1, "3 delta commits trigger exactly one inline compaction"
    with open(os.path.join(path, ".hoodie", f"{compactions[0].timestamp}.commit")) as fh:
        meta = json.load(fh)
    assert meta["compacted"] is True and meta["operationType"] == "COMPACT"
    assert _rows(hudi_rs(path)) == _rows(pyhudi.read(spark, path).toArrow())
