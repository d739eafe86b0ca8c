"""A writer whose storage-based lock was taken over before its commit must not commit (in-process, no Spark).

The lock object is replaced by another owner's right before the final timeline write (the point where a
long pause would let the lease lapse and another writer take it): the write fails with a
CommitConflictError, its instant is rolled back, and the table reads as before.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import CommitConflictError
from pyhudi.storage import Storage
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.transaction.storage_lock import LOCK_FILE, LockData
from pyhudi.writer import client as client_mod
from tests.helpers import hudi_rs

OPTIONS = {
    "hoodie.table.name": "lock_lost",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.partitionpath.field": "part",
    "hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
    "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.StorageBasedLockProvider",
}


def _batch(ids: list[str], ts: int) -> pa.Table:
    return pa.table({"id": ids, "ts": [ts] * len(ids), "part": ["2024/01" if i.endswith(("0", "2")) else "007"
                                                               for i in ids],
                     "v": [f"{i}-{ts}-ü" for i in ids]})


def _rows(path: str) -> dict[str, Any]:
    t = pyhudi.read(path)
    return {r["id"]: (r["ts"], r["v"]) for r in t.select(["id", "ts", "v"]).to_pylist()}


@pytest.mark.parametrize("operation", ["upsert", "insert"])
def test_a_writer_that_lost_its_lock_does_not_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      operation: str) -> None:
    path = str(tmp_path / "t")
    first = _batch([f"k{i}" for i in range(10)], 1)
    pyhudi.write(first, path, {**OPTIONS, "hoodie.datasource.write.operation": "upsert"})
    model = {r["id"]: (r["ts"], r["v"]) for r in first.to_pylist()}
    commits_before = len(ActiveTimeline.load(Storage(path)).completed().write_timeline().instants)

    real_fault_point = client_mod.fault_point

    def takeover(name: str) -> None:
        if name == "write.before_commit":  # another writer took the lock while this one was paused
            other = LockData(False, int(time.time() * 1000) + 60_000, "another-writer")
            Storage(path).write_atomic(LOCK_FILE, other.to_bytes())
        real_fault_point(name)

    monkeypatch.setattr(client_mod, "fault_point", takeover)
    with pytest.raises(CommitConflictError, match="lock"):
        pyhudi.write(_batch(["k1", "k2", "k30"], 2), path, {**OPTIONS, "hoodie.datasource.write.operation": operation})
    monkeypatch.setattr(client_mod, "fault_point", real_fault_point)

    timeline = ActiveTimeline.load(Storage(path))
    assert len(timeline.completed().write_timeline().instants) == commits_before  # nothing committed
    assert not timeline.write_timeline().pending().instants  # the failed write was rolled back at once
    assert _rows(path) == model
    got = hudi_rs(path)
    assert {r["id"]: (r["ts"], r["v"]) for r in got.select(["id", "ts", "v"]).to_pylist()} == model

    # The other writer's lock expires; the next write goes through and wins.
    Storage(path).write_atomic(LOCK_FILE, LockData(True, 0, "another-writer").to_bytes())
    pyhudi.write(_batch(["k1", "k30"], 3), path, {**OPTIONS, "hoodie.datasource.write.operation": "upsert"})
    model.update({r["id"]: (r["ts"], r["v"]) for r in _batch(["k1", "k30"], 3).to_pylist()})
    assert _rows(path) == model
