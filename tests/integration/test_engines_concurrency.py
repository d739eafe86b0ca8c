"""Concurrency on the in-process engine: writers in separate processes, each writing Arrow data with no
SparkSession, racing each other, a Spark writer, and an in-process clustering.

Writers are `engine_worker.py` children (no JVM) held at an exact fault point by a pause (see the
worker): `write.after_marker` holds a writer while it writes data files (its instant inflight, its
view of the table loaded). Every table starts with 200 keys in p0/p1 (one file group each); writers
write disjoint keys, in the same file group (`same`: p0) or apart (A in p0, B in p1), so the model does
not depend on commit order. After each race the table read by pyhudi and by hudi-rs holds the initial
rows plus exactly the rows of every acknowledged write, and every failure is a HudiError.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

import pyhudi
from pyhudi import faults
from tests.helpers import REPO, arrow_read, hudi_rs, rows_by_key
from tests.integration import engine_worker

WORKER = pathlib.Path(engine_worker.__file__)
LIMIT = 180.0
COLS = ["name", "part", "ts"]
COLUMNS = ["id", "name", "part", "ts"]
HEARTBEAT_MS = 400
OCC = {"hoodie.write.concurrency.mode": "optimistic_concurrency_control",
       "hoodie.cleaner.policy.failed.writes": "LAZY",
       "hoodie.client.heartbeat.interval_in_ms": str(HEARTBEAT_MS),
       "hoodie.client.heartbeat.tolerable.misses": "2"}
HOLD = "write.after_marker"


def options(table_type: str, occ: bool) -> dict[str, str]:
    base = {"hoodie.table.name": "race", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part",
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.operation": "upsert",
            "hoodie.datasource.write.table.type": table_type,
            "hoodie.clean.automatic": "false", "hoodie.archive.automatic": "false",
            "hoodie.clustering.plan.strategy.sort.columns": "name"}
    return {**base, **(OCC if occ else {})}


def rows(ids: list[int], tag: str, ts: int) -> list[list[Any]]:
    return [[i, f"{tag}-{i}-ü", f"p{i % 2}", ts] for i in ids]


def writer_ids(writer: str, placement: str) -> list[int]:
    """Disjoint keys per writer: 10 updates of initial keys plus 3 inserts."""
    if placement == "same":
        base = {"A": 0, "B": 100, "C": 50}[writer]
        return [base + 2 * k for k in range(10)] + [1000 + {"A": 0, "B": 500, "C": 250}[writer] + 2 * k
                                                    for k in range(3)]
    parity = {"A": 0, "B": 1}[writer]
    return [2 * k + parity for k in range(10)] + [1000 + 2 * k + parity for k in range(3)]


_STARTED: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def _no_child_left() -> Any:
    """A failed race must not leave a held child waiting: kill (by its own session id) whatever is left."""
    yield
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


class Child:
    """One engine_worker.py run, optionally held at a fault point until released."""

    def __init__(self, root: pathlib.Path, name: str, spec: dict[str, Any], hold: str | None = None) -> None:
        self.name = name
        self.engine = spec.get("engine", "local")
        self.signal = root / f"{name}.signal"
        self.release_file = root / f"{name}.release"
        if hold:
            spec["pause"] = {"point": hold, "signal": str(self.signal), "release": str(self.release_file)}
        spec["repo"] = str(REPO)
        (root / f"{name}.json").write_text(json.dumps(spec))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
        env.pop("HUDI_CONF_DIR", None)
        self.err = root / f"{name}.err"
        with open(self.err, "w") as err:
            self.proc = subprocess.Popen([sys.executable, str(WORKER), str(root / f"{name}.json")],
                                         stdout=subprocess.PIPE, stderr=err, text=True, cwd=str(root), env=env,
                                         start_new_session=True)
        _STARTED.append(self.proc)

    def wait_held(self) -> None:
        deadline = time.monotonic() + LIMIT
        while not self.signal.exists():
            assert self.proc.poll() is None, f"{self.name} ended before its hold: {self.outcome()}"
            assert time.monotonic() < deadline, f"{self.name} never reached its hold"
            time.sleep(0.02)

    def release(self) -> None:
        self.release_file.touch()

    def outcome(self) -> dict[str, Any]:
        out, _ = self.proc.communicate(timeout=LIMIT)
        lines = [line for line in out.splitlines() if line.startswith("{")]
        assert lines, f"{self.name} gave no outcome (exit {self.proc.returncode}): {self.err.read_text()[-2000:]}"
        reply = json.loads(lines[-1])
        if self.engine == "local":
            assert not reply["pyspark_loaded"], f"{self.name}: the in-process path imported pyspark"
        return reply


class Race:
    def __init__(self, request: pytest.FixtureRequest, root: pathlib.Path, table_type: str, occ: bool) -> None:
        self.request, self.root = request, root
        self.path = str(root / "table")
        self.opts = options(table_type, occ)
        self.model: dict[int, tuple[Any, ...]] = {}
        self.outcomes: list[tuple[str, dict[str, Any]]] = []
        init = rows(list(range(200)), "init", 0)
        self.acknowledge("init", {"ok": True, "result": self.write_here(init)}, init)
        self.ts = 0

    def write_here(self, data: list[list[Any]], session: Any = None) -> Any:
        spec = {"op": "upsert", "path": self.path, "options": self.opts, "rows": data, "columns": COLUMNS}
        return engine_worker.run(spec, session)

    def batch(self, writer: str, placement: str) -> list[list[Any]]:
        self.ts += 1
        return rows(writer_ids(writer, placement), writer, self.ts)

    def child(self, name: str, data: list[list[Any]], hold: str | None = HOLD, engine: str = "local") -> Child:
        spec = {"op": "upsert", "path": self.path, "options": self.opts, "rows": data, "columns": COLUMNS,
                "engine": engine}
        return Child(self.root, name, spec, hold)

    def acknowledge(self, what: str, reply: dict[str, Any], written: list[list[Any]]) -> None:
        self.outcomes.append((what, reply))
        if reply["ok"]:
            for i, name, part, ts in written:
                self.model[i] = (name, part, ts)
        else:
            err = reply["error"]
            assert err["hudi"], f"{what} failed with a non-HudiError {err['type']}: {err['message']}"

    def failed(self) -> dict[str, str]:
        return {w: r["error"]["type"] for w, r in self.outcomes if not r["ok"]}

    def check(self) -> None:
        story = "; ".join(f"{w}: {'ok' if r['ok'] else r['error']['type'] + ' ' + r['error']['message'][:200]}"
                          for w, r in self.outcomes)
        ours = rows_by_key(arrow_read(self.path, None, lambda: self.request.getfixturevalue("spark")), "id", COLS)
        for name, got in (("pyhudi", ours), ("hudi-rs", rows_by_key(hudi_rs(self.path), "id", COLS))):
            wrong = sorted(k for k in self.model if got.get(k) != self.model[k])
            extra = sorted(set(got) - set(self.model))
            assert not wrong and not extra, (f"{name} differs from the acknowledged writes ({story}): wrong or "
                                             f"missing {[(k, got.get(k), self.model[k]) for k in wrong[:5]]}, "
                                             f"unexpected {extra[:5]}")


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", pytest.param("MERGE_ON_READ", marks=pytest.mark.slow)])
def test_two_local_writers_one_file_group_one_conflict(request, tmp_path, table_type):
    """Both writers hold while writing data files (both instants inflight, both views alike), then both go
    on: the second to commit must fail with CommitConflictError (Hudi's overlapping-file-group rule)."""
    race = Race(request, tmp_path, table_type, occ=True)
    da, db = race.batch("A", "same"), race.batch("B", "same")
    a, b = race.child("A", da), race.child("B", db)
    a.wait_held()
    b.wait_held()
    a.release()
    b.release()
    race.acknowledge("A", a.outcome(), da)
    race.acknowledge("B", b.outcome(), db)
    race.check()
    assert list(race.failed().values()) == ["CommitConflictError"], f"expected one conflict: {race.outcomes}"


def test_two_local_writers_disjoint_partitions_both_commit(request, tmp_path):
    race = Race(request, tmp_path, "COPY_ON_WRITE", occ=True)
    da, db = race.batch("A", "apart"), race.batch("B", "apart")
    a, b = race.child("A", da), race.child("B", db)
    a.wait_held()
    b.wait_held()
    b.release()
    a.release()
    race.acknowledge("A", a.outcome(), da)
    race.acknowledge("B", b.outcome(), db)
    race.check()
    assert not race.failed(), f"writes to different partitions must both commit: {race.outcomes}"


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", pytest.param("MERGE_ON_READ", marks=pytest.mark.slow)])
def test_held_writer_loses_to_a_writer_that_committed_over_it(request, tmp_path, table_type):
    """Default single-writer mode: B writes (rolling A's pending instant back as failed) while A holds; A
    then cannot commit over B's file group and fails; B's rows stay."""
    race = Race(request, tmp_path, table_type, occ=False)
    da = race.batch("A", "same")
    a = race.child("A", da)
    a.wait_held()
    db = race.batch("B", "same")
    race.acknowledge("B", race.child("B", db, hold=None).outcome(), db)
    a.release()
    race.acknowledge("A (held)", a.outcome(), da)
    race.check()
    assert set(race.failed()) == {"A (held)"}, race.outcomes


@pytest.mark.spark
def test_local_writer_races_a_spark_writer(request, tmp_path, spark):
    """A local writer held mid-write while a Spark writer commits to the same file group: the local one
    fails with a conflict. Then the reverse: a Spark writer held before its instant goes inflight while a
    local writer commits: the Spark one fails. Each engine continues the table the other wrote."""
    race = Race(request, tmp_path, "COPY_ON_WRITE", occ=True)
    da = race.batch("A", "same")
    a = race.child("A", da)
    a.wait_held()
    db = race.batch("B", "same")
    race.acknowledge("B (spark)", {"ok": True, "result": race.write_here(db, spark)}, db)
    a.release()
    race.acknowledge("A (local, held)", a.outcome(), da)
    race.check()
    assert list(race.failed()) == ["A (local, held)"], race.outcomes
    assert race.failed()["A (local, held)"] == "CommitConflictError", race.outcomes

    dc = race.batch("C", "same")
    dd = race.batch("A", "same")
    local_reply: dict[str, Any] = {}
    original = faults._maybe_raise

    def hold_spark_writer(name: str) -> None:  # runs the local writer while the Spark writer is held
        original(name)
        if name == "timeline.before_inflight" and not local_reply:
            local_reply.update(race.child("C", dc, hold=None).outcome())

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(faults, "_maybe_raise", hold_spark_writer)
        try:
            reply: dict[str, Any] = {"ok": True, "result": race.write_here(dd, spark)}
        except Exception as exc:
            reply = {"ok": False, "error": engine_worker.describe(exc)}
    assert local_reply, "the Spark writer never reached timeline.before_inflight"
    race.acknowledge("C (local)", local_reply, dc)
    race.acknowledge("D (spark, held)", reply, dd)
    race.check()
    assert set(race.failed()) == {"A (local, held)", "D (spark, held)"}, race.outcomes


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", pytest.param("MERGE_ON_READ", marks=pytest.mark.slow)])
def test_local_writer_races_in_process_clustering(request, tmp_path, table_type):
    """Clustering (in-process, no session) replaces p0's file group while a local writer holds mid-write
    in it: the writer must not commit over the replaced group (it fails with a HudiError), clustering
    keeps every row, and the next write goes through."""
    race = Race(request, tmp_path, table_type, occ=True)
    da = race.batch("A", "same")
    a = race.child("A", da)
    a.wait_held()
    opts = {**race.opts, "hoodie.clustering.plan.strategy.small.file.limit": str(1024 * 1024)}
    done = pyhudi.cluster(None, race.path, opts)
    race.outcomes.append(("cluster", {"ok": True, "result": done}))
    assert done, "nothing was clustered: the race did not happen"
    a.release()
    race.acknowledge("A (held)", a.outcome(), da)
    race.check()
    assert set(race.failed()) == {"A (held)"}, race.outcomes
    db = race.batch("B", "same")
    race.acknowledge("B", {"ok": True, "result": race.write_here(db)}, db)
    race.check()
