"""Instant transitions are exclusive creates, and table services re-check their lock lease before they
change the timeline (in-process, local file system, no Spark).

* Two completers of one instant: the first wins, the second gets InstantAlreadyCompletedError and cannot
  overwrite the first's commit; a completer that repeats its own bytes (a retry) succeeds.
* A clustering, or an archival, whose storage-based lock was taken over while it paused inside the lock
  does not commit (the writer's case is tests/integration/test_lock_lost_commit.py).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import CommitConflictError, InstantAlreadyCompletedError, TimelineError
from pyhudi.services import archival, clustering
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action, Instant, State
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.transaction.storage_lock import LOCK_FILE, STORAGE_LOCK_CLASSES, LockData
from tests.helpers import hudi_rs

TS = "20250101000000001"
STORAGE_LOCK = next(iter(sorted(STORAGE_LOCK_CLASSES)))


def _pending(storage: Storage, action: Action = Action.COMMIT) -> tuple[ActiveTimeline, Instant]:
    tl = ActiveTimeline.load(storage)
    inst = tl.transition_to_inflight(tl.create_requested(Instant(TS, action, State.REQUESTED)), b"{}")
    return tl, inst


@pytest.mark.parametrize("action", [Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.CLEAN,
                                    Action.ROLLBACK, Action.COMPACTION])
def test_second_completer_of_an_instant_fails_and_cannot_overwrite(tmp_path: Path, action: Action) -> None:
    storage = Storage(str(tmp_path / "t"))
    tl, inst = _pending(storage, action)
    done = tl.complete(inst, b'{"by": "first"}')
    assert done.file_name == f"{TS}.{'commit' if action is Action.COMPACTION else action.value}"
    other = ActiveTimeline.load(storage)  # another process that loaded the timeline before the completion
    with pytest.raises(InstantAlreadyCompletedError, match=done.file_name):
        other.complete(inst, b'{"by": "second"}')
    assert storage.read_bytes(f".hoodie/{done.file_name}") == b'{"by": "first"}'


def test_a_retried_completion_with_the_same_bytes_succeeds(tmp_path: Path) -> None:
    """A caller that retries its completion (its first try took effect, the answer was lost) recognises
    its own file by the content."""
    storage = Storage(str(tmp_path / "t"))
    tl, inst = _pending(storage)
    tl.complete(inst, b'{"mine": 1}')
    assert tl.complete(inst, b'{"mine": 1}') == Instant(TS, Action.COMMIT)
    assert ActiveTimeline.load(storage).find(TS) == Instant(TS, Action.COMMIT)
    with pytest.raises(InstantAlreadyCompletedError):  # but not another completer's bytes
        tl.complete(inst, b'{"theirs": 1}')
    assert storage.read_bytes(f".hoodie/{TS}.commit") == b'{"mine": 1}'


def test_inflight_is_created_exclusively(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path / "t"))
    tl = ActiveTimeline.load(storage)
    req = tl.create_requested(Instant(TS, Action.REPLACE_COMMIT, State.REQUESTED))
    tl.transition_to_inflight(req, b"first")
    tl.transition_to_inflight(req, b"first")  # the same bytes again: its own earlier attempt
    with pytest.raises(TimelineError, match="already exists with other content"):
        tl.transition_to_inflight(req, b"second")
    assert storage.read_bytes(f".hoodie/{TS}.replacecommit.inflight") == b"first"


# --------------------------------------------------------------------------- lease re-checks
OPTIONS = {
    "hoodie.table.name": "lease",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.partitionpath.field": "part",
    "hoodie.datasource.write.operation": "insert",
    "hoodie.write.lock.provider": STORAGE_LOCK,
    "hoodie.clean.automatic": "false",
    "hoodie.archive.automatic": "false",
    "hoodie.parquet.small.file.limit": "0",  # every insert a new file group: small files to cluster
}


def _rows(path: str) -> dict[str, Any]:
    return {r["id"]: r["v"] for r in pyhudi.read(path).select(["id", "v"]).to_pylist()}


def _small_files_table(path: str, commits: int = 3) -> dict[str, Any]:
    model: dict[str, Any] = {}
    for n in range(commits):  # each insert a small file in one partition
        batch = pa.table({"id": [f"k{n}-{i}" for i in range(5)], "ts": [n] * 5, "part": ["p"] * 5,
                          "v": [f"v{n}-{i}-ü" for i in range(5)]})
        pyhudi.write(batch, path, OPTIONS)
        model.update({r["id"]: r["v"] for r in batch.to_pylist()})
    return model


def _take_over(path: str) -> None:
    """Another process takes the lock object over (this one's lease lapsed during a pause)."""
    other = LockData(False, int(time.time() * 1000) + 60_000, "another-process")
    Storage(path).write_atomic(LOCK_FILE, other.to_bytes())


def test_a_clustering_that_lost_its_lock_does_not_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "t")
    model = _small_files_table(path)
    real_check = clustering.check_clustering

    def paused_check(*args: Any, **kwargs: Any) -> None:  # runs under the table lock, before completing
        real_check(*args, **kwargs)
        _take_over(path)

    monkeypatch.setattr(clustering, "check_clustering", paused_check)
    with pytest.raises(CommitConflictError, match="lock"):
        pyhudi.cluster(None, path, {**OPTIONS, "hoodie.clustering.plan.strategy.small.file.limit": str(64 << 20)})
    monkeypatch.undo()
    timeline = ActiveTimeline.load(Storage(path))
    assert not timeline.actions(Action.REPLACE_COMMIT).completed().instants  # nothing committed
    assert _rows(path) == model
    got = hudi_rs(path)
    assert {r["id"]: r["v"] for r in got.select(["id", "v"]).to_pylist()} == model


def test_an_archival_that_lost_its_lock_deletes_no_instant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "t")
    model = _small_files_table(path, commits=4)
    storage = Storage(path)
    before = sorted(i.name for i in storage.list_dir(".hoodie") if not i.is_dir)

    def paused(name: str) -> None:
        if name == "archival.after_archive_file":
            _take_over(path)

    monkeypatch.setattr(archival, "fault_point", paused)
    with pytest.raises(CommitConflictError, match="lock"):
        pyhudi.archive(None, path, {**OPTIONS, "hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3",
                                    "hoodie.cleaner.commits.retained": "1"})
    assert sorted(i.name for i in storage.list_dir(".hoodie") if not i.is_dir) == before
    assert _rows(path) == model
