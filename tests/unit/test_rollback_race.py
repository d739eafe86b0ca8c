"""A failed-write rollback and a commit racing (found by two writers on S3 under the default lock):

* a writer that loaded its timeline while another write was still pending must not roll that write back
  after it completed (its heartbeat is deleted at completion and then reads as expired);
* a write that another writer rolled back, or began to, while it was paused must not complete.

In-process writes; the race is staged by wrapping `WriteClient._complete`. Each table is read with pyhudi
and hudi-rs and compared with a model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import CommitConflictError
from pyhudi.model import avro_models as am
from pyhudi.services import rollback as rb
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action, Instant, State
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.writer.client import WriteClient
from tests.helpers import hudi_rs

OPTS = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.operation": "upsert"}


def _batch(n: int) -> pa.Table:
    return pa.table({"id": [f"k-{n}-ü", "shared"], "ts": [n, n], "p": ["2024/01/02", "p=7"]})


def _apply(model: dict[str, tuple[str, int]], n: int) -> None:
    model.update({f"k-{n}-ü": ("2024/01/02", n), "shared": ("p=7", n)})


def _check(path: Path, model: dict[str, tuple[str, int]]) -> None:
    ours = pyhudi.read(str(path))
    assert {r["id"]: (r["p"], r["ts"]) for r in ours.to_pylist()} == model
    got = hudi_rs(path)
    assert got is not None
    assert {r["id"]: (r["p"], r["ts"]) for r in got.to_pylist()} == model


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_a_stale_timeline_never_rolls_back_a_write_that_completed(tmp_path: Path, table_type: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    path, model = tmp_path / "t", {}
    opts = {**OPTS, "hoodie.datasource.write.table.type": table_type,
            "hoodie.datasource.write.partitionpath.field": "p"}
    pyhudi.write(_batch(1), str(path), {**opts, "hoodie.datasource.write.partitionpath.field": "p"})
    _apply(model, 1)
    seen: list[ActiveTimeline] = []
    original = WriteClient._complete

    def complete(self: WriteClient, *args: Any, **kwargs: Any) -> None:
        seen.append(ActiveTimeline.load(self.storage))  # another writer's view: this write still pending
        original(self, *args, **kwargs)

    monkeypatch.setattr(WriteClient, "_complete", complete)
    pyhudi.write(_batch(2), str(path), opts)
    monkeypatch.undo()
    _apply(model, 2)
    stale = seen[-1]
    assert [i.state for i in stale.pending()] == [State.INFLIGHT]
    storage = Storage(str(path))
    assert rb.rollback_failed_writes(storage, stale, (60_000, 2)) == []  # heartbeat gone, yet completed
    assert rb.rollback_failed_writes(storage, stale, None) == []  # EAGER mode: the same
    _check(path, model)


@pytest.mark.parametrize("begun_only", [False, True])
def test_a_write_rolled_back_while_paused_does_not_complete(tmp_path: Path, begun_only: bool,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Another writer took this paused write for a crashed one: it rolled it back completely, or crashed
    after writing its rollback plan. The write fails with CommitConflictError and leaves nothing visible."""
    path, model = tmp_path / "t", {}
    pyhudi.write(_batch(1), str(path), OPTS)
    _apply(model, 1)
    commits = ActiveTimeline.load(Storage(str(path))).commits().completed().timestamps()
    original = WriteClient._complete

    def complete(self: WriteClient, instant: str, action: Action, *args: Any, **kwargs: Any) -> None:
        timeline = ActiveTimeline.load(self.storage)
        target = Instant(instant, action, State.INFLIGHT)
        if begun_only:
            plan = rb.plan_rollback(self.storage, target)
            timeline.create_new_requested(Action.ROLLBACK, am.write_instant_avro("HoodieRollbackPlan", plan))
        else:
            rb.rollback_pending_write(self.storage, timeline, target)
        original(self, instant, action, *args, **kwargs)

    monkeypatch.setattr(WriteClient, "_complete", complete)
    with pytest.raises(CommitConflictError, match="was rolled back by another writer"):
        pyhudi.write(_batch(2), str(path), OPTS)
    monkeypatch.undo()
    assert ActiveTimeline.load(Storage(str(path))).commits().completed().timestamps() == commits
    _check(path, model)
    pyhudi.write(_batch(3), str(path), OPTS)  # the next write finishes a begun rollback
    _apply(model, 3)
    assert not ActiveTimeline.load(Storage(str(path))).pending()
    _check(path, model)


def test_files_a_late_task_wrote_after_the_rollback_are_swept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Spark job's failed task makes the data source roll the write back at once, while a cancelled task
    of the same job can still write (its Python worker is killed only spark.python.task.killTimeout later):
    its marker makes the marker directory again and its base file lands after the rollback. The sweep
    deletes exactly that, and the table shows no trace of the failed write."""
    import os
    import shutil

    from pyhudi.writer.markers import Marking, create_marker, marker_dir

    path, model = tmp_path / "t", {}
    pyhudi.write(_batch(1), str(path), OPTS)
    _apply(model, 1)
    failed: list[str] = []
    original = WriteClient._complete

    def complete(self: WriteClient, instant: str, *args: Any, **kwargs: Any) -> None:
        failed.append(instant)
        raise RuntimeError("a task failed")

    monkeypatch.setattr(WriteClient, "_complete", complete)
    with pytest.raises(RuntimeError, match="a task failed"):
        pyhudi.write(_batch(2), str(path), OPTS)
    monkeypatch.setattr(WriteClient, "_complete", original)
    storage = Storage(str(path))
    (instant,) = failed
    timeline = ActiveTimeline.load(storage)
    assert timeline.find(instant) is None and len(timeline.actions(Action.ROLLBACK).completed()) == 1
    committed = sorted(f for _, _, fs in os.walk(path) for f in fs if f.endswith(".parquet"))
    # Late tasks, each leaving a base file of the rolled-back instant (a copy of a committed one): one whose
    # marker came after the rollback, and one whose marker the rollback consumed before its file appeared.
    late = f"late-0_1-2-3_{instant}.parquet"
    create_marker(storage, instant, "p=7", late, "CREATE", Marking())
    shutil.copy(next(p for p in path.joinpath("p=7").iterdir() if p.suffix == ".parquet"), path / "p=7" / late)
    unmarked = f"late-1_0-2-3_{instant}.parquet"
    shutil.copy(next(p for p in path.joinpath("2024/01/02").iterdir() if p.suffix == ".parquet"),
                path / "2024/01/02" / unmarked)
    assert rb.sweep_late_files(storage, instant) == [f"2024/01/02/{unmarked}", f"p=7/{late}"]
    assert not storage.exists(marker_dir(instant))
    assert sorted(f for _, _, fs in os.walk(path) for f in fs if f.endswith(".parquet")) == committed
    assert rb.sweep_late_files(storage, instant) == []  # nothing left: a second sweep is a no-op
    pyhudi.write(_batch(3), str(path), OPTS)
    _apply(model, 3)
    _check(path, model)
    # A write whose rollback failed keeps its instant: the sweep leaves its files to the next rollback.
    monkeypatch.setattr(rb, "LATE_TASK_GRACE_S", 0.0)
    monkeypatch.setattr(WriteClient, "_complete", complete)
    monkeypatch.setattr(WriteClient, "_rollback_own", lambda self, instant, action: None)
    with pytest.raises(RuntimeError, match="a task failed"):
        pyhudi.write(_batch(4), str(path), OPTS)
    monkeypatch.setattr(WriteClient, "_complete", original)
    pending = failed[-1]
    left = sorted(f for _, _, fs in os.walk(path) for f in fs if f.endswith(f"_{pending}.parquet"))
    assert left and rb.sweep_after_failed_job(storage, pending) == []
    assert sorted(f for _, _, fs in os.walk(path) for f in fs if f.endswith(f"_{pending}.parquet")) == left
    assert storage.exists(marker_dir(pending))
    monkeypatch.undo()
