"""Rollback, savepoint and restore on Hudi 1.x tables (versions 8 and 9, timeline layout 2).

Each test copies a real 1.x sample (tests/fixtures/samples-1x), writes to it with pyhudi and checks the
rows, read by pyhudi and by the independent hudi-rs reader, against a plain-Python model of the table
(key -> value column, ordering column), and the timeline files against what Hudi 1.x writes: a rollback
deletes the rolled-back instant's files, logs included (no command blocks on version 8+), its plan and
metadata decode like the sample's `mor_avro_v9_nonpartitioned_rollback` files, a savepoint completes as
`<ts>_<completion>.savepoint` after an empty inflight, and a restore rolls back by completion time and
leaves no rollback instant after the savepoint.

Writes are killed with fault points in a child process (`crash_write`), outside the table lock so the
rollback need not wait for a lease to expire.
"""

from __future__ import annotations

import collections
import os
import pathlib
import re
import subprocess
import sys
import zipfile
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi import faults
from pyhudi.model import avro_models as am
from pyhudi.model.file_names import parse_base_file, parse_log_file
from tests.helpers import SAMPLES_1X, extract_sample_1x, hudi_rs, row_bag

OPTS = {"hoodie.clean.automatic": "false", "hoodie.write.drop.unrebuildable.metadata.indexes": "true"}
REPO = pathlib.Path(__file__).resolve().parents[2]
# sample -> (record key, ordering field, a string column the writes change)
TABLES: dict[str, tuple[str, str, str]] = {
    "cow_v8_nonpartitioned": ("id", "longField", "name"),
    "qs_mor_avro_v8_trips_8i3u1d": ("uuid", "ts", "rider"),
    "cow_v9_txns_simple_meta": ("txn_id", "txn_ts", "txn_type"),
    "mor_avro_v9_txns_simple_meta": ("txn_id", "txn_ts", "txn_type"),
}
SPECS = {**TABLES, "mor_avro_v9_nonpartitioned_rollback": ("txn_id", "txn_ts", "txn_type")}


class Table:
    """A copied sample, the model of its rows, and helpers to write and check it."""

    def __init__(self, name: str, tmp_path: pathlib.Path) -> None:
        self.name = name
        self.key, self.order, self.value = SPECS[name]
        self.path = str(extract_sample_1x(name, tmp_path))
        gold = pq.read_table(SAMPLES_1X / "gold" / f"{name}.parquet").drop_columns(["_hoodie_record_key"])
        self.schema = gold.schema
        keys = collections.Counter(r[self.key] for r in gold.to_pylist())
        # A sample may hold a key twice (Hudi wrote it to two file groups): such rows are never written to.
        self.fixed = [r for r in gold.to_pylist() if keys[r[self.key]] > 1]
        self.rows = {r[self.key]: r for r in gold.to_pylist() if keys[r[self.key]] == 1}
        self.writes = 0

    @property
    def timeline(self) -> pathlib.Path:
        return pathlib.Path(self.path) / ".hoodie" / "timeline"

    def model(self) -> collections.Counter[tuple[Any, ...]]:
        return self.bag(pa.Table.from_pylist([*self.rows.values(), *self.fixed], self.schema))

    def bag(self, table: pa.Table | None) -> collections.Counter[tuple[Any, ...]]:
        return row_bag(table, [self.key, self.value, self.order]) if table is not None else collections.Counter()

    def batch(self, updates: int = 2, inserts: int = 1) -> tuple[pa.Table, dict[Any, dict[str, Any]]]:
        """Rows updating the first `updates` keys and adding `inserts` new ones (in an existing partition),
        and the model after them."""
        self.writes += 1
        n = self.writes
        out: list[dict[str, Any]] = []
        template = next(iter(self.rows.values()))
        for key in sorted(self.rows)[:updates]:
            out.append({**self.rows[key], self.value: f"w{n}", self.order: self.rows[key][self.order] + 10 ** 9 * n})
        for i in range(inserts):
            out.append({**template, self.key: f"NEW-{n}-{i}" if isinstance(template[self.key], str) else
                        10_000 * n + i, self.value: f"w{n}", self.order: template[self.order] + 10 ** 9 * n})
        return pa.Table.from_pylist(out, self.schema), {**self.rows, **{r[self.key]: r for r in out}}

    def write(self, updates: int = 2, inserts: int = 1) -> str:
        data, after = self.batch(updates, inserts)
        instant = pyhudi.write(data, self.path, OPTS)
        self.rows = after
        return str(instant)

    def crash_write(self, point: str = "write.before_complete") -> str:
        """A write killed (SIGKILL) at `point` in a child process; returns its instant. The model is unchanged."""
        data, _ = self.batch()
        before = set(os.listdir(self.timeline))
        feed = pathlib.Path(self.path).parent / "crash_input.parquet"
        pq.write_table(data, feed)
        code = (f"import pyarrow.parquet as pq, pyhudi\n"
                f"pyhudi.write(pq.read_table({str(feed)!r}), {self.path!r}, {OPTS!r})\n")
        env = {**os.environ, faults.ENV: point, "PYTHONPATH": str(REPO)}
        env.pop(faults.RAISE_ENV, None)
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == -9, f"the write was not killed at {point}: {done.returncode} {done.stderr[-2000:]}"
        (new,) = {n.split(".")[0] for n in set(os.listdir(self.timeline)) - before if n.endswith(".requested")}
        return new

    def check(self, spark: Any = None) -> None:
        """Rows as pyhudi reads them (through Spark with `spark`) and as hudi-rs does, against the model."""
        rows = pyhudi.read(spark, self.path).toArrow() if spark is not None else pyhudi.read(self.path)
        assert self.bag(rows) == self.model(), "pyhudi reads other rows"
        assert self.bag(hudi_rs(self.path)) == self.model(), "hudi-rs reads other rows"

    def names(self, prefix: str = "") -> list[str]:
        return sorted(n for n in os.listdir(self.timeline) if n.startswith(prefix) and n != "history")

    def data_files(self, instant: str) -> list[str]:
        """Data files (relative) whose name carries `instant` (a base file's, or the commit a 1.x log names)."""
        out = []
        for folder, _, files in os.walk(self.path):
            if "/.hoodie" in folder + "/":
                continue
            for f in files:
                parsed = parse_base_file(f) or parse_log_file(f)
                stamp = getattr(parsed, "instant", None) or getattr(parsed, "base_instant", None)
                if stamp == instant:
                    out.append(os.path.relpath(os.path.join(folder, f), self.path))
        return sorted(out)

    def avro(self, name: str) -> dict[str, Any]:
        return am.read_instant_avro((self.timeline / name).read_bytes())


def completed(t: Table, ts: str, action: str) -> str:
    (name,) = [n for n in t.names(ts + "_") if n.endswith("." + action)]
    return name


# -- rollback of a failed write ---------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(TABLES))
def test_failed_write_is_rolled_back_by_deleting_its_files(tmp_path, name):
    t = Table(name, tmp_path)
    t.write()
    t.check()
    failed = t.crash_write()
    written = t.data_files(failed)
    assert written, "the killed write left files behind"
    t.check()  # uncommitted files are invisible to both readers

    result = pyhudi.rollback(None, t.path, failed, OPTS)
    assert result.target == failed
    assert t.data_files(failed) == [], "every file of the failed write is deleted, logs included"
    assert not t.names(failed), "the failed instant leaves the timeline"
    rb = result.rollback_instant
    assert t.names(rb) == [f"{rb}.rollback.inflight", f"{rb}.rollback.requested", completed(t, rb, "rollback")]
    assert (t.timeline / f"{rb}.rollback.inflight").read_bytes() == b""
    plan = t.avro(f"{rb}.rollback.requested")
    assert plan["instantToRollback"] == {"commitTime": failed, "action": "deltacommit" if "mor" in name else "commit"}
    requests = plan["RollbackRequests"]
    # Marker-based, version 8+: one request per file, naming its file group and the instant rolled back.
    assert sorted(os.path.relpath(r["filesToBeDeleted"][0].split("://", 1)[1], t.path) for r in requests) == written
    for r in requests:
        assert r["latestBaseInstant"] == failed and r["logBlocksToBeDeleted"] == {} and len(r["filesToBeDeleted"]) == 1
        assert r["fileId"] and os.path.basename(r["filesToBeDeleted"][0]).lstrip(".").startswith(r["fileId"])
    meta = t.avro(completed(t, rb, "rollback"))
    assert meta["commitsRollback"] == [failed] and meta["totalFilesDeleted"] == len(written)
    for pm in meta["partitionMetadata"].values():
        assert pm["rollbackLogFiles"] == {} and pm["logFilesFromFailedCommit"] == {} and pm["failedDeleteFiles"] == []
    t.check()
    t.write()  # the table goes on
    t.check()


def test_completed_rollback_decodes_like_hudi_1x_sample(tmp_path):
    """The sample holds a Hudi 1.1 rollback of a completed deltacommit: pyhudi's rollback of its own latest
    write to that table must have the same schema, fields and kinds of values."""
    t = Table("mor_avro_v9_nonpartitioned_rollback", tmp_path)
    sample_plan = "20260403184259077.rollback.requested"
    sample_meta = "20260403184259077_20260403184300219.rollback"
    t.write()
    before = dict(t.rows)
    last = t.write(updates=1, inserts=2)
    files = t.data_files(last)
    assert files
    rb = pyhudi.rollback(None, t.path, last, OPTS).rollback_instant
    t.rows = before
    t.check()
    assert t.data_files(last) == [] and not t.names(last)
    mine_plan, mine_meta = f"{rb}.rollback.requested", completed(t, rb, "rollback")
    for mine, theirs in ((mine_plan, sample_plan), (mine_meta, sample_meta)):
        assert am.embedded_schema_json((t.timeline / mine).read_bytes()) == \
            am.embedded_schema_json((t.timeline / theirs).read_bytes()), f"schema differs from {theirs}"
        assert set(t.avro(mine)) == set(t.avro(theirs)), f"fields differ from {theirs}"
    plan, want = t.avro(mine_plan), t.avro(sample_plan)
    assert plan["version"] == want["version"] == 1
    assert plan["instantToRollback"] == {"commitTime": last, "action": "deltacommit"}
    # Listing-based, as Hudi 1.x rolls back a completed instant: one file per request, no file group, no
    # base instant, the path without its scheme.
    (theirs,) = want["RollbackRequests"]
    assert (theirs["partitionPath"], theirs["fileId"], theirs["latestBaseInstant"]) == ("", "", "")
    assert theirs["filesToBeDeleted"][0].startswith("/opt/") and theirs["logBlocksToBeDeleted"] == {}
    deleted = []
    for r in plan["RollbackRequests"]:
        assert set(r) == set(theirs)
        assert (r["partitionPath"], r["fileId"], r["latestBaseInstant"], r["logBlocksToBeDeleted"]) == ("", "", "", {})
        (path,) = r["filesToBeDeleted"]
        assert path.startswith("/") and "file:" not in path
        deleted.append(os.path.relpath(path, t.path))
    assert sorted(deleted) == files
    meta, want = t.avro(mine_meta), t.avro(sample_meta)
    assert set(meta["partitionMetadata"]) == set(want["partitionMetadata"]) == {""}
    pm, wpm = meta["partitionMetadata"][""], want["partitionMetadata"][""]
    assert set(pm) == set(wpm) and (pm["rollbackLogFiles"], pm["logFilesFromFailedCommit"]) == ({}, {})
    assert (wpm["rollbackLogFiles"], wpm["logFilesFromFailedCommit"]) == ({}, {})
    assert sorted(pm["successDeleteFiles"]) == sorted(r["filesToBeDeleted"][0] for r in plan["RollbackRequests"])
    assert meta["totalFilesDeleted"] == len(files) and meta["commitsRollback"] == [last]
    assert meta["instantsRollback"] == [{"commitTime": last, "action": "deltacommit"}]
    assert meta["startRollbackTime"] == rb and meta["version"] == want["version"] == 1


@pytest.mark.parametrize("point", ["rollback.after_plan", "timeline.before_inflight", "rollback.mid_delete",
                                   "rollback.before_complete"])
def test_rollback_interrupted_at_each_step_reads_right_and_a_rerun_finishes(tmp_path, monkeypatch, point):
    t = Table("mor_avro_v9_txns_simple_meta", tmp_path)
    t.write()
    failed = t.crash_write()
    monkeypatch.setenv(faults.RAISE_ENV, point)
    faults.reset()
    with pytest.raises(faults.InjectedFault):
        pyhudi.rollback(None, t.path, failed, OPTS)
    monkeypatch.delenv(faults.RAISE_ENV)
    t.check()
    assert [n for n in t.names() if ".rollback." in n], "the interrupted rollback is pending"
    result = pyhudi.rollback(None, t.path, failed, OPTS)  # the same command again finishes it
    assert result.target == failed and t.data_files(failed) == [] and not t.names(failed)
    assert not [n for n in t.names() if n.endswith((".rollback.requested",)) and
                not t.names(n.split(".")[0] + "_")], "no rollback is left pending"
    t.check()
    t.write()
    t.check()


def test_writer_rolls_back_a_crashed_write_before_its_own(tmp_path):
    t = Table("cow_v9_txns_simple_meta", tmp_path)
    t.write()
    failed = t.crash_write()
    t.write()  # EAGER failed-write handling: the next writer rolls the crashed one back first
    assert t.data_files(failed) == [] and not t.names(failed)
    (rb,) = [n for n in t.names() if n.endswith(".rollback") and "_" in n]
    assert t.avro(rb)["commitsRollback"] == [failed]
    t.check()


def test_pending_clustering_is_rolled_back_under_its_own_action(tmp_path, monkeypatch):
    t = Table("cow_v9_txns_simple_meta", tmp_path)
    t.write()
    monkeypatch.setenv(faults.RAISE_ENV, "clustering.mid_execute")
    faults.reset()
    with pytest.raises(faults.InjectedFault):
        pyhudi.cluster(None, t.path, {**OPTS, "hoodie.clustering.plan.strategy.small.file.limit": str(1 << 30)})
    monkeypatch.delenv(faults.RAISE_ENV)
    (clustering,) = {n.split(".")[0] for n in t.names() if ".clustering." in n} - \
        {n.split("_")[0] for n in t.names() if "_" in n}
    t.check()
    result = pyhudi.rollback(None, t.path, clustering, OPTS)
    plan = t.avro(f"{result.rollback_instant}.rollback.requested")
    assert plan["instantToRollback"] == {"commitTime": clustering, "action": "clustering"}
    assert not t.names(clustering) and t.data_files(clustering) == []
    t.check()


def test_pending_compaction_is_rolled_back_with_its_plan(tmp_path, monkeypatch):
    t = Table("mor_avro_v9_txns_simple_meta", tmp_path)
    t.write(updates=3, inserts=0)
    monkeypatch.setenv(faults.RAISE_ENV, "compaction.mid_execute")
    faults.reset()
    with pytest.raises(faults.InjectedFault):
        pyhudi.compact(None, t.path, {**OPTS, "hoodie.compact.inline.max.delta.commits": "1"})
    monkeypatch.delenv(faults.RAISE_ENV)
    (compaction,) = {n.split(".")[0] for n in t.names() if ".compaction." in n} - \
        {n.split("_")[0] for n in t.names() if "_" in n}
    t.check()
    result = pyhudi.rollback(None, t.path, compaction, OPTS)
    plan = t.avro(f"{result.rollback_instant}.rollback.requested")
    assert plan["instantToRollback"] == {"commitTime": compaction, "action": "compaction"}
    assert all(r["latestBaseInstant"] == compaction and r["logBlocksToBeDeleted"] == {} for r in plan["RollbackRequests"])
    assert not t.names(compaction) and t.data_files(compaction) == []
    t.check()


# -- savepoint and restore ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["cow_v9_txns_simple_meta", "mor_avro_v9_txns_simple_meta",
                                  "qs_mor_avro_v8_trips_8i3u1d"])
def test_savepoint_then_writes_then_restore_brings_the_savepoint_back(tmp_path, name):
    t = Table(name, tmp_path)
    t.write()
    sp = pyhudi.savepoint(None, t.path, user="tester", options=OPTS)
    saved = dict(t.rows)
    names = t.names(sp)
    assert f"{sp}.savepoint.inflight" in names and completed(t, sp, "savepoint") in names
    assert f"{sp}.savepoint.requested" not in names and (t.timeline / f"{sp}.savepoint.inflight").read_bytes() == b""
    meta = t.avro(completed(t, sp, "savepoint"))
    listed = {f for pm in meta["partitionMetadata"].values() for f in pm["savepointDataFile"]}
    assert {os.path.basename(f) for f in t.data_files(sp)} <= listed
    t.write()
    t.write(updates=3, inserts=0)  # updates only: logs on MERGE_ON_READ, for the compaction to compact
    if "mor" in name:
        assert pyhudi.compact(None, t.path, {**OPTS, "hoodie.compact.inline.max.delta.commits": "1"})
    t.write()
    t.check()
    later = {n.split("_")[0].split(".")[0] for n in t.names() if n > sp and not n.startswith(sp)}

    restore = pyhudi.restore(None, t.path, sp, OPTS)
    t.rows = saved
    t.check()
    assert t.names(restore) == [f"{restore}.restore.inflight", f"{restore}.restore.requested",
                                completed(t, restore, "restore")]
    plan = t.avro(f"{restore}.restore.requested")
    assert plan["version"] == 2 and plan["savepointToRestoreTimestamp"] == sp
    rolled = [i["commitTime"] for i in plan["instantsToRollback"]]
    assert set(rolled) == later - {restore}
    assert not [n for n in t.names() if ".rollback" in n and n > sp], "a restore leaves no rollback after the savepoint"
    assert all(not t.names(ts) and not t.data_files(ts) for ts in rolled)
    meta = t.avro(completed(t, restore, "restore"))
    assert meta["instantsToRollback"] == rolled and set(meta["hoodieRestoreMetadata"]) == set(rolled)
    assert completed(t, sp, "savepoint") in t.names(sp), "the savepoint stays"
    t.write()
    t.check()


@pytest.mark.parametrize("point", ["restore.after_plan", "restore.mid_rollback", "restore.before_complete"])
def test_restore_interrupted_reads_a_committed_state_and_a_rerun_finishes(tmp_path, monkeypatch, point):
    t = Table("cow_v9_txns_simple_meta", tmp_path)
    t.write()
    sp = pyhudi.savepoint(None, t.path, options=OPTS)
    states = [t.model()]
    for _ in range(2):
        t.write()
        states.append(t.model())
    monkeypatch.setenv(faults.RAISE_ENV, point)
    faults.reset()
    with pytest.raises(faults.InjectedFault):
        pyhudi.restore(None, t.path, sp, OPTS)
    monkeypatch.delenv(faults.RAISE_ENV)
    # Newest writes go first: the table reads as it was after some earlier commit, through both readers.
    rows, rs_rows = t.bag(pyhudi.read(t.path)), t.bag(hudi_rs(t.path))
    assert rows == rs_rows and rows in states
    (pending,) = {n.split(".")[0] for n in t.names() if ".restore." in n}
    assert pyhudi.restore(None, t.path, sp, OPTS) == pending, "the re-run finishes the interrupted restore"
    assert completed(t, pending, "restore") in t.names(pending)
    assert not [n for n in t.names() if ".rollback" in n and n > sp]
    assert t.bag(pyhudi.read(t.path)) == states[0] == t.bag(hudi_rs(t.path))


def test_restore_order_follows_completion_time_except_compactions_on_mor(tmp_path):
    """RestorePlanActionExecutor + RestoreInstantComparatorFactory, on timelines of instant files only."""
    from pyhudi.services.restore import _restore_targets_v2
    from pyhudi.storage import Storage
    from pyhudi.timeline.timeline import ActiveTimeline

    with zipfile.ZipFile(SAMPLES_1X / "tables" / "cow_v9_txns_simple_meta.zip") as z:
        props = z.read("cow_v9_txns_simple_meta/.hoodie/hoodie.properties").decode()

    def ts(n: int) -> str:
        return f"20260101000000{n:03d}"

    def plan(table_type: str, files: list[str], savepoint: int) -> list[tuple[int, str]]:
        root = tmp_path / table_type
        (root / ".hoodie" / "timeline").mkdir(parents=True)
        (root / ".hoodie" / "hoodie.properties").write_text(props.replace("COPY_ON_WRITE", table_type))
        for f in files:
            (root / ".hoodie" / "timeline" / re.sub(r"\{(\d+)\}", lambda m: ts(int(m.group(1))), f)).write_bytes(b"")
        storage = Storage(str(root))
        return [(int(i.timestamp[-3:]), i.action.value) for i in
                _restore_targets_v2(storage, ActiveTimeline.load(storage), ts(savepoint))]

    mor = ["{100}_{150}.deltacommit",      # the savepointed commit, completed at 150
           "{110}_{300}.deltacommit",      # requested after it, completed after it: rolled back
           "{120}_{130}.deltacommit",      # requested after it, completed before it: kept (1.x completion order)
           "{140}.compaction.requested", "{140}_{400}.commit",  # compaction requested after: rolled back
           "{95}.compaction.requested", "{95}_{600}.commit",    # compaction requested before: kept on MOR
           "{105}.compaction.requested", "{105}_{500}.commit",  # requested after (105 > 100): rolled back
           "{160}_{170}.deltacommit", "{180}.deltacommit.requested", "{190}.clustering.requested"]
    # Pending clustering first; then newest completion first, pending writes before completed ones.
    assert plan("MERGE_ON_READ", mor, 100) == [(190, "clustering"), (180, "deltacommit"), (105, "commit"),
                                                (140, "commit"), (110, "deltacommit"), (160, "deltacommit")]
    cow = ["{100}_{150}.commit", "{110}_{300}.commit", "{120}_{130}.commit", "{105}_{90}.commit",
           "{160}_{170}.commit", "{180}.commit.requested", "{190}.clustering.requested"]
    # Completion order alone: 105 (done at 90) and 120 (done at 130) completed before the savepoint did.
    assert plan("COPY_ON_WRITE", cow, 100) == [(190, "clustering"), (180, "commit"), (110, "commit"),
                                                (160, "commit")]


# -- the same through a Spark session ---------------------------------------------------------------
@pytest.mark.spark
def test_rollback_and_restore_on_spark(spark, tmp_path):
    t = Table("mor_avro_v9_txns_simple_meta", tmp_path)
    t.write()
    failed = t.crash_write()
    assert pyhudi.rollback(spark, t.path, failed, OPTS).target == failed
    assert t.data_files(failed) == [] and not t.names(failed)
    t.check(spark)
    sp = pyhudi.savepoint(spark, t.path, options=OPTS)
    saved = dict(t.rows)
    t.write()
    t.write(updates=3, inserts=0)
    restore = pyhudi.restore(spark, t.path, sp, OPTS)
    t.rows = saved
    t.check(spark)
    assert completed(t, restore, "restore") in t.names(restore)
