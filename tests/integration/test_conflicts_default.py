"""No acknowledged write is lost, in the default single-writer mode too (findings 9-11 of issue 15).

Each test runs the other party in a process (and JVM) of its own (concurrency_worker.py / crash_worker.py)
and coordinates only through marker files and user-side components (input gates, a gating lock provider),
never through timing:

* two default-mode writers rewrite the same file group: A's instant is inflight (held in its one-task
  write) while B runs its failed-write recovery and commits; A must then fail with CommitConflictError
  (before: B's eager rollback deleted A's live instant, or A committed over B's update), and the table
  holds exactly round 0 plus B's write (COW and MOR);
* a clustering planned while a MOR write is in flight: the plan's timeline snapshot predates the write,
  its file listing already shows the write's log file (the scheduler's load-then-list window, made
  deterministic), the clustering executes before the write commits and commits after it. Every
  acknowledged write must be in the table (before: the write's updates were gone);
* a clustering SIGKILLed mid-execution with async clustering on: the next upserts succeed and the plan
  is completed or rolled back (before: every upsert failed with ClusteringUpdateConflictError for good).
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

import pyhudi
from pyhudi.api import _service_config
from pyhudi.engine import engine_for
from pyhudi.model import avro_models as am
from pyhudi.services import clustering
from pyhudi.services.clustering_plan import draft_plan, to_avro_plan
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.transaction.lock import LockSettings
from pyhudi.view.builder import build_view
from pyhudi.writer.config import parquet_settings
from tests.integration.concurrency_worker import INGEST_SCHEMA, ingest_rows
from tests.integration.crash_worker import SCHEMA
from tests.integration.table_checks import all_data_files, opts, split_name
from tests.integration.test_concurrency import Proc, assert_equals_model, pending_instants, stop_all

pytestmark = [pytest.mark.spark]
REPO = pathlib.Path(__file__).resolve().parents[2]
CRASH_WORKER = pathlib.Path(__file__).with_name("crash_worker.py")
CONF = {"spark.sql.shuffle.partitions": "1", "spark.default.parallelism": "1",
        "spark.driver.extraJavaOptions": "-Duser.timezone=UTC -XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}
COLS = ["name", "city", "ts", "payload"]
# Round 0: 40 keys in one partition (one file group); round 1 updates all of them and inserts 4.
ROWS = {"initial": 40, "new": 4, "uniform": 40, "recent": 0, "partitions": 1, "seed": 5}
LIMIT = 600.0


def _model(*batches: list[tuple[Any, ...]]) -> dict[int, tuple[Any, ...]]:
    model: dict[int, tuple[Any, ...]] = {}
    for rows in batches:
        model.update({r[0]: tuple(r[1:]) for r in rows})
    return model


def _wait(proc: Proc, path: pathlib.Path, what: str) -> None:
    try:
        proc.wait_until(path.exists, what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\nevents: {proc.events()}") from None


def _finished(proc: Proc) -> dict[int, dict[str, Any]]:
    proc.proc.wait(timeout=LIMIT)
    assert proc.proc.returncode == 0, proc.stderr_tail()
    return proc.of("round", "round")


def _traces(path: str, instant: str) -> list[str]:
    meta = [n for n in os.listdir(os.path.join(path, ".hoodie")) if n.startswith(f"{instant}.")]
    return meta + [f for f in all_data_files(path) if split_name(f)[2] == instant]


# --------------------------------------------------------------------------- finding 9
# Both under -m extended: the interleaving matrix's SINGLE_WRITER cells race two writers at every pause point.
@pytest.mark.extended
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_default_mode_later_writer_gets_commit_conflict(spark, tmp_path, table_type):
    path, coord = str(tmp_path / "table"), tmp_path / "coord"
    coord.mkdir()
    options = {**opts("c2_default"), "hoodie.datasource.write.table.type": table_type}
    # A's round 1 is a local batch: the one-task path, whose gate runs inside the task, with A's instant inflight.
    spec = {"role": "ingest", "master": "local[1]", "conf": CONF, "path": path, "options": options, "rows": ROWS,
            "coord": str(coord), "local_input": True,
            "rounds": [{}, {"gate": {"signal": str(coord / "a_inflight"), "wait_for": [str(coord / "b_done")]}}]}
    a = Proc(tmp_path / "procs", "a", spec)
    try:
        _wait(a, coord / "a_inflight", "A's round 1 holding with its instant inflight")
        a_pending = [n for n in pending_instants(path) if n.endswith(".inflight")]
        assert len(a_pending) == 1, f"A's round 1 is not inflight while held: {pending_instants(path)}"
        b_rows = [(i, f"B-{i}", "p0", 100, "b") for i in range(ROWS["initial"])]
        b_instant = pyhudi.write(spark.createDataFrame(b_rows, INGEST_SCHEMA), path, options)
        (coord / "b_done").touch()
        rounds = _finished(a)
    finally:
        stop_all([a])
    assert rounds[0]["ok"], rounds[0]
    a1 = rounds[1]
    assert not a1["ok"], f"A committed over B's acknowledged write {b_instant}: {a1}"
    assert a1["error"]["type"] == "CommitConflictError" and a1["error"]["hudi"], a1["error"]
    assert f"conflicts with {'commit' if table_type == 'COPY_ON_WRITE' else 'deltacommit'} {b_instant}" \
        in a1["error"]["message"], a1["error"]["message"]
    a_instant = a_pending[0].split(".")[0]
    assert a_instant < b_instant, "A's instant started first and was live during B's recovery"
    assert not _traces(path, a_instant), f"A's conflicting write left traces: {_traces(path, a_instant)}"
    assert not pending_instants(path)
    assert_equals_model(spark, path, _model(ingest_rows(ROWS, 0), b_rows), COLS, f"{table_type} after the conflict")


# --------------------------------------------------------------------------- finding 10
def test_clustering_planned_while_mor_write_in_flight_keeps_every_acknowledged_write(spark, tmp_path):
    path, coord = str(tmp_path / "table"), tmp_path / "coord"
    coord.mkdir()
    # No small-file rewrites: round 1's updates go to log files of round 0's file group, its inserts to new groups.
    options = {**opts("c2_plan"), "hoodie.datasource.write.table.type": "MERGE_ON_READ",
               "hoodie.parquet.small.file.limit": "0",
               "hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
               "hoodie.write.lock.provider": "concurrency_worker.GateLock",
               "hoodie.clustering.plan.strategy.small.file.limit": str(64 * 1024 * 1024),
               "hoodie.clustering.plan.strategy.sort.columns": "payload"}
    spec = {"role": "ingest", "master": "local[1]", "conf": CONF, "path": path, "options": options, "rows": ROWS,
            "coord": str(coord), "rounds": [{}, {"wait_for": [str(coord / "gates_set")]}]}
    w = Proc(tmp_path / "procs", "w", spec)
    c = str(coord / "c_at_commit")
    errors: list[BaseException] = []
    runner = None
    try:
        _wait(w, coord / "a_done_0", "W's round 0")
        storage = Storage(path)
        snapshot = ActiveTimeline.load(storage)  # the scheduler's timeline, loaded before W's round 1 starts
        gates = [{"pid": w.proc.pid, "signal": str(coord / "w_at_commit"), "wait_for": [c]},
                 {"pid": os.getpid(), "signal": c, "wait_for": [str(coord / "a_done_1")]}]
        (tmp_path / "gate_lock.json").write_text(json.dumps(gates))
        (coord / "gates_set").touch()
        _wait(w, coord / "w_at_commit", "W's round 1 at its commit, log files written")
        _, cfg = _service_config(path, options)
        draft = draft_plan(build_view(storage, cfg.table, snapshot), cfg.clustering, cfg.sizing.max_file_size)
        if draft.empty:  # the planner left W's group out: nothing to race
            pathlib.Path(c).touch()
        else:
            body = am.write_instant_avro("HoodieRequestedReplaceMetadata",
                                         to_avro_plan(draft, storage, cfg.clustering, cfg.sizing.max_file_size))
            instant = snapshot.reload().create_new_requested(Action.REPLACE_COMMIT, body).timestamp
            lock = LockSettings(provider="tests.integration.concurrency_worker.GateLock", wait_ms=int(LIMIT * 1000))

            def run() -> None:
                try:
                    clustering.execute(engine_for(spark), storage, cfg.table, instant, cfg.clustering,
                                       parquet_settings(cfg, storage.base_uri), lock)
                except BaseException as exc:
                    errors.append(exc)
                    pathlib.Path(c).touch()

            runner = threading.Thread(target=run)
            runner.start()
        rounds = _finished(w)
        if runner is not None:
            runner.join(LIMIT)
    finally:
        stop_all([w])
    acked = [ingest_rows(ROWS, r) for r in sorted(rounds) if rounds[r]["ok"]]
    assert rounds[0]["ok"]
    if not rounds[1]["ok"]:
        assert rounds[1]["error"]["type"] == "CommitConflictError", rounds[1]["error"]
    for exc in errors:
        assert isinstance(exc, pyhudi.CommitConflictError), repr(exc)
    assert not pending_instants(path)
    assert_equals_model(spark, path, _model(*acked), COLS, "after a clustering raced an in-flight MOR write")


# --------------------------------------------------------------------------- finding 11
def _kill_clustering(tmp_path: pathlib.Path, path: str, options: dict[str, str]) -> int:
    """Run `pyhudi.cluster` in crash_worker.py and SIGKILL it (its whole session) mid-execution."""
    spec = {"path": path, "op": "cluster", "options": options, "master": "local[1]", "conf": CONF}
    (tmp_path / "crash.json").write_text(json.dumps(spec))
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
               PYHUDI_FAULT_POINT="clustering.mid_execute", PYHUDI_FAULT_OWN_GROUP="1",
               PYTHONPATH=os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
    env.pop("HUDI_CONF_DIR", None)
    with open(tmp_path / "crash.out", "wb") as out, open(tmp_path / "crash.err", "wb") as err:
        proc = subprocess.run([sys.executable, str(CRASH_WORKER), str(tmp_path / "crash.json")], stdout=out,
                              stderr=err, cwd=str(tmp_path), env=env, start_new_session=True, timeout=LIMIT)
    return proc.returncode


def test_killed_async_clustering_does_not_block_later_upserts(spark, tmp_path):
    path = str(tmp_path / "table")
    options = {**opts("c2_stuck"), "hoodie.parquet.small.file.limit": "0",
               "hoodie.clustering.plan.strategy.small.file.limit": str(64 * 1024 * 1024),
               "hoodie.clustering.plan.strategy.sort.columns": "payload",
               "hoodie.client.heartbeat.interval_in_ms": "200", "hoodie.client.heartbeat.tolerable.misses": "1"}
    batches = [[(i, f"s{s}-{i}", f"p{i % 2}", s, "x") for i in range(s * 20, s * 20 + 20)] for s in range(3)]
    for rows in batches:  # three commits: small file groups in both partitions
        pyhudi.write(spark.createDataFrame(rows, SCHEMA), path, options)
    rc = _kill_clustering(tmp_path, path, options)
    assert rc != 0, (tmp_path / "crash.err").read_text()[-2000:]
    killed = [n.split(".")[0] for n in pending_instants(path) if ".replacecommit." in n]
    assert killed, f"the killed clustering left no pending plan: {pending_instants(path)}"
    plan = killed[0]
    time.sleep(0.5)  # past the (small) heartbeat expiry, so liveness does not hinge on the dead-pid check alone
    async_opts = {**options, "hoodie.clustering.async.enabled": "true", "hoodie.clustering.async.max.commits": "99"}
    updates = [[(i, f"u{u}-{i}", f"p{i % 2}", 10 + u, "u") for i in range(0, 60, 3 + u)] for u in range(2)]
    for rows in updates:
        pyhudi.write(spark.createDataFrame(rows, SCHEMA), path, async_opts)  # raised ClusteringUpdateConflictError
    assert not pyhudi.wait_for_table_services(path, timeout=LIMIT)
    names = os.listdir(os.path.join(path, ".hoodie"))
    assert f"{plan}.replacecommit" in names or not any(n.startswith(f"{plan}.") for n in names), sorted(names)
    assert not pending_instants(path)
    assert_equals_model(spark, path, _model(*batches, *updates), COLS, "after resuming the killed clustering")
