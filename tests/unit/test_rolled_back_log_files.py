"""A merge-on-read writer racing a rollback that deletes log files gets a retryable CommitConflictError,
never a raw FileNotFoundError (in-process, local file system, no Spark).

* The INMEMORY index reads the keys of every log file of the latest slices, also of a failed write's; a
  rollback of that write deleting the file meanwhile stops the lookup with WriteRolledBackError.
* The writer's own instant rolled back while it runs (its heartbeat taken for expired): the rollback deletes
  its marker directory between the writer's mkdir and its create; the write goes on and fails at its commit,
  saying it was rolled back by another writer.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import pyhudi
from pyhudi import faults
from pyhudi.errors import CommitConflictError, WriteRolledBackError
from pyhudi.index import log_index
from pyhudi.services.rollback import rollback_pending_write
from pyhudi.storage import Storage
from pyhudi.storage import storage as storage_mod
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.writer import client as client_mod

OPTIONS = {
    "hoodie.table.name": "rb",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.partitionpath.field": "part",
    "hoodie.datasource.write.operation": "upsert",
    "hoodie.index.type": "INMEMORY",
    "hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
    "hoodie.cleaner.policy.failed.writes": "LAZY",
}


def _batch(ids: list[str], ts: int) -> pa.Table:
    return pa.table({"id": ids, "ts": [ts] * len(ids), "part": ["a"] * len(ids), "v": [f"{i}-{ts}-ü" for i in ids]})


def _rows(path: str) -> dict[str, Any]:
    return {r["id"]: (r["ts"], r["v"]) for r in pyhudi.read(path).select(["id", "ts", "v"]).to_pylist()}


def _roll_back_pending(path: str) -> None:
    storage = Storage(path)
    timeline = ActiveTimeline.load(storage)
    for inst in timeline.write_timeline().pending().instants:
        rollback_pending_write(storage, timeline, inst)
        timeline = timeline.reload()


def test_index_lookup_of_a_log_file_a_rollback_deleted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "t")
    pyhudi.write(_batch([f"k{i}" for i in range(8)], 1), path, OPTIONS)
    model = _rows(path)
    # A write that failed before its commit and left its log file (its owner has not rolled it back yet).
    monkeypatch.setattr(client_mod.WriteClient, "_rollback_own", lambda self, instant, action: None)
    monkeypatch.setenv(faults.RAISE_ENV, "write.before_commit")
    faults.reset()
    with pytest.raises(faults.InjectedFault):
        pyhudi.write(_batch(["k1"], 2), path, OPTIONS)
    monkeypatch.undo()
    faults.reset()
    real = log_index.log_file_keys

    def racing(storage: Storage, rel: str) -> list[str]:  # the failed write's rollback runs meanwhile
        _roll_back_pending(path)
        return real(storage, rel)

    monkeypatch.setattr(log_index, "log_file_keys", racing)
    with pytest.raises(WriteRolledBackError, match=r"log file .*\.log\.\d.* was deleted .* retry the write"):
        pyhudi.write(_batch(["k2"], 3), path, OPTIONS)
    monkeypatch.undo()
    assert _rows(path) == model
    pyhudi.write(_batch(["k2"], 3), path, OPTIONS)  # the retry goes through
    model["k2"] = (3, "k2-3-ü")
    assert _rows(path) == model


@pytest.mark.parametrize("layout", ["direct", "batched"])
def test_marker_directory_deleted_by_a_rollback_mid_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          layout: str) -> None:
    """A two-key write marks its one file DIRECT (a marker file, its directory made by the storage's
    makedirs); forced to the batched layout, its MARKERS<n> file is created exclusively (os.makedirs)."""
    path = str(tmp_path / "t")
    pyhudi.write(_batch([f"k{i}" for i in range(8)], 1), path, OPTIONS)
    model = _rows(path)
    fired: list[str] = []

    def racing(real: Any) -> Any:
        def makedirs(*args: Any, **kwargs: Any) -> None:
            real(*args, **kwargs)
            name = os.fspath(args[-1] if isinstance(args[0], storage_mod.Storage) else args[0])
            if ".hoodie/.temp/" in name and not fired:  # this write's marker directory
                fired.append(name)
                _roll_back_pending(path)  # another writer took this one for dead: its marker directory goes
        return makedirs

    if layout == "batched":
        real_begin = client_mod.begin_markers
        monkeypatch.setattr(client_mod, "begin_markers", lambda storage, instant, kind, **_: real_begin(
            storage, instant, kind))
        monkeypatch.setattr(storage_mod.os, "makedirs", racing(os.makedirs))
    else:
        monkeypatch.setattr(storage_mod.Storage, "makedirs", racing(storage_mod.Storage.makedirs))
    with pytest.raises(CommitConflictError, match="rolled back by another writer"):
        pyhudi.write(_batch(["k1", "k9"], 2), path, OPTIONS)
    monkeypatch.undo()
    # the instant's own directory (batched: the MARKERS<n> file's) or the partition's in it (DIRECT)
    assert fired and (fired[0].endswith("/a") if layout == "direct" else fired[0].split("/")[-1].isdigit()), fired
    assert _rows(path) == model
    pyhudi.write(_batch(["k1", "k9"], 2), path, OPTIONS)
    model.update({"k1": (2, "k1-2-ü"), "k9": (2, "k9-2-ü")})
    assert _rows(path) == model
