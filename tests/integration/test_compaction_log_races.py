"""A compaction planned while a merge-on-read deltacommit is in flight (in-process, threads).

The planner pauses between loading its timeline and listing the files; a writer writes its log file and
pauses before its commit; the planner resumes. Its plan must not name that log: should the write then
fail, its rollback would delete the log and the plan could never run (every compaction failed with
FileNotFoundError, new writes were never compacted). A plan that names an unfinished write's log anyway
(Hudi's plans may; older pyhudi's did) must stay runnable after that write's rollback, and a plan whose
log a rollback already deleted must still run; a log missing for no known reason is a HudiError naming it.
Both readers (pyhudi in-process, hudi-rs) are checked right after each compaction.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import CommitConflictError, HudiError
from pyhudi.model import avro_models as am
from pyhudi.model.table_config import load_table_config
from pyhudi.services import compaction
from pyhudi.storage import Storage
from pyhudi.writer.client import WriteClient
from pyhudi.writer.config import CompactionConfig
from tests.helpers import hudi_rs

ARROW = pa.schema([("id", pa.int64()), ("name", pa.string()), ("part", pa.string()), ("ts", pa.int64())])
OPTS = {
    "hoodie.table.name": "races", "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ", "hoodie.datasource.write.operation": "upsert",
    "hoodie.parquet.small.file.limit": "0", "hoodie.clean.automatic": "false",
    "hoodie.archive.automatic": "false",
}
Model = dict[int, tuple[str, str, int]]


def _write(path: str, rows: list[tuple[int, str, str, int]], model: Model | None = None) -> str:
    table = pa.Table.from_pylist([dict(zip(ARROW.names, r)) for r in rows], schema=ARROW)
    instant = pyhudi.write(table, path, OPTS)
    if model is not None:
        model.update({i: (n, p, ts) for i, n, p, ts in rows})
    return instant


def _table(path: str) -> Model:
    """Both readers must hold the same rows; returns them."""
    rs = hudi_rs(path)
    ours = pyhudi.read(path)
    got = []
    for t in (rs, ours):
        rows = [] if t is None else t.select(["id", "name", "part", "ts"]).to_pylist()
        out = {r["id"]: (r["name"], r["part"], r["ts"]) for r in rows}
        assert len(out) == len(rows), "duplicate keys"
        got.append(out)
    assert got[0] == got[1], "hudi-rs and pyhudi disagree"
    return got[0]


def _base_table(path: str) -> Model:
    """Two partitions, each one file group with a base file and a committed log file."""
    model: Model = {}
    _write(path, [(i, "v1", f"p{i % 2}", 1) for i in range(20)], model)
    _write(path, [(i, "v2", f"p{i % 2}", 2) for i in range(0, 20, 3)], model)
    assert _table(path) == model
    return model


class Gate:
    """Pauses the named thread once at a wrapped call: `reached` when it got there, `release` to go on."""

    def __init__(self, thread_name: str) -> None:
        self.thread_name = thread_name
        self.reached = threading.Event()
        self.release = threading.Event()

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def paused(*args: Any, **kwargs: Any) -> Any:
            if threading.current_thread().name == self.thread_name and not self.reached.is_set():
                self.reached.set()
                assert self.release.wait(60), "gate never released"
            return fn(*args, **kwargs)
        return paused


@contextmanager
def _thread(name: str, fn: Callable[[], Any]) -> Iterator[dict[str, Any]]:
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["result"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out["error"] = exc

    t = threading.Thread(target=run, name=name, daemon=True)
    t.start()
    try:
        yield out
    finally:
        t.join(120)
        assert not t.is_alive(), f"{name} hung"


def _race(path: str, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], dict[str, Any]]:
    """The review's interleaving: planner loads its timeline and pauses before listing; the writer writes its
    log (an update of p0's file group) and pauses before committing; the planner finishes its plan; the
    writer goes on. Returns (planner outcome, writer outcome)."""
    planner, writer = Gate("planner"), Gate("writer")
    # build_view runs between the planner's timeline load and its listing; _reconcile_markers after the
    # write's files exist and before its commit.
    monkeypatch.setattr(compaction, "build_view", planner.wrap(compaction.build_view))
    monkeypatch.setattr(WriteClient, "_reconcile_markers", writer.wrap(WriteClient._reconcile_markers))
    storage = Storage(path)
    table = load_table_config(storage)
    with _thread("planner", lambda: compaction.schedule(storage, table, CompactionConfig(), force=True)) as plan:
        assert planner.reached.wait(60)
        with _thread("writer", lambda: _write(path, [(0, "w", "p0", 9), (4, "w", "p0", 9)])) as write:
            assert writer.reached.wait(60)
            logs = [n for n in os.listdir(os.path.join(path, "p0")) if ".log." in n]
            assert len(logs) == 2, logs  # the committed log and the in-flight write's
            planner.release.set()
            plan_thread_done(plan)
            writer.release.set()
    return plan, write


def plan_thread_done(plan: dict[str, Any]) -> None:
    for _ in range(600):
        if plan:
            return
        threading.Event().wait(0.1)
    raise AssertionError("the planner did not finish")


def _plan_logs(path: str) -> dict[str, list[str]]:
    """partition -> log file names that compaction plans (pending or completed) name."""
    hoodie = os.path.join(path, ".hoodie")
    out: dict[str, list[str]] = {}
    for name in sorted(n for n in os.listdir(hoodie) if n.endswith(".compaction.requested")):
        with open(os.path.join(hoodie, name), "rb") as fh:
            plan = am.read_instant_avro(fh.read())
        for op in plan.get("operations") or []:
            out.setdefault(str(op["partitionPath"]), []).extend(op.get("deltaFilePaths") or [])
    return out


def _in_flight_rows(model: Model, write: dict[str, Any]) -> None:
    if "error" in write:
        assert isinstance(write["error"], CommitConflictError), write["error"]
    else:
        model.update({0: ("w", "p0", 9), 4: ("w", "p0", 9)})


def test_plan_leaves_out_the_log_of_a_write_in_flight(tmp_path, monkeypatch):
    path = str(tmp_path / "t")
    model = _base_table(path)
    plan, write = _race(path, monkeypatch)
    assert "error" not in plan, plan.get("error")
    _in_flight_rows(model, write)
    named = _plan_logs(path)
    assert "p0" not in named, f"the plan names p0's logs, one of them the in-flight write's: {named}"
    assert named.get("p1"), "p1's committed log is still planned"
    monkeypatch.undo()
    done = pyhudi.compact(None, path, OPTS)  # the pending plan (p1); then p0 in a later plan
    assert done
    assert _table(path) == model
    done = pyhudi.compact(None, path, OPTS)
    assert done and "p0" in _plan_logs(path)
    assert _table(path) == model
    # New writes are compacted again.
    _write(path, [(i, "v3", f"p{i % 2}", 3) for i in range(0, 20, 2)], model)
    assert pyhudi.compact(None, path, OPTS)
    assert _table(path) == model


def test_rollback_keeps_a_log_that_a_pending_plan_names(tmp_path, monkeypatch):
    """A plan naming the in-flight write's log (as the planner before the fix, or Hudi, wrote it): the write
    fails its commit (a compaction was planned over its file group), and its rollback must keep the log,
    voiding its blocks with a rollback command block, so the plan runs."""
    path = str(tmp_path / "t")
    model = _base_table(path)
    monkeypatch.setattr(compaction, "groups_with_unsettled_logs", lambda view, parts: {}, raising=False)
    plan, write = _race(path, monkeypatch)
    assert plan.get("result"), plan
    assert isinstance(write.get("error"), CommitConflictError), write
    assert len(_plan_logs(path)["p0"]) == 2, "this plan names the failed write's log"
    monkeypatch.undo()
    assert _table(path) == model
    assert pyhudi.compact(None, path, OPTS) == [plan["result"]]
    assert _table(path) == model
    _write(path, [(i, "v3", f"p{i % 2}", 3) for i in range(0, 20, 2)], model)
    assert pyhudi.compact(None, path, OPTS)
    assert _table(path) == model


def _plan_over_missing_log(path: str) -> tuple[str, str]:
    """A pending plan over both partitions; returns (its instant, the p0 log it names)."""
    storage = Storage(path)
    instant = compaction.schedule(storage, load_table_config(storage), CompactionConfig(), force=True)
    assert instant is not None
    (log_name,) = _plan_logs(path)["p0"]
    return instant, log_name


def test_a_log_deleted_by_an_earlier_rollback_does_not_wedge_the_plan(tmp_path, monkeypatch):
    """A table left by the old behaviour: the plan names a log that a completed rollback deleted (it held
    only the failed write's blocks). The compaction runs without it."""
    from pyhudi.services import rollback

    path = str(tmp_path / "t")
    model = _base_table(path)
    monkeypatch.setattr(compaction, "groups_with_unsettled_logs", lambda view, parts: {}, raising=False)
    monkeypatch.setattr(rollback, "logs_named_by_pending_compactions", lambda storage: frozenset(), raising=False)
    plan, write = _race(path, monkeypatch)
    assert isinstance(write.get("error"), CommitConflictError), write
    named = _plan_logs(path)["p0"]
    assert not all(os.path.exists(os.path.join(path, "p0", n)) for n in named), "the old rollback deleted it"
    monkeypatch.undo()
    assert pyhudi.compact(None, path, OPTS) == [plan["result"]]
    assert _table(path) == model


def test_a_log_missing_for_no_known_reason_is_named(tmp_path):
    path = str(tmp_path / "t")
    _base_table(path)
    instant, log_name = _plan_over_missing_log(path)
    os.remove(os.path.join(path, "p0", log_name))
    with pytest.raises(HudiError, match=f"compaction {instant} cannot run: its plan names p0/{log_name}"):
        pyhudi.compact(None, path, OPTS)
