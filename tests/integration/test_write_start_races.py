"""A write paused after tagging, before its instant exists (in-process engine, `faults.pause_at`).

pyhudi takes a write's instant after it tagged its records, so whatever happens in that gap has an earlier
instant time than the write, yet the write never saw it:

* a clustering plan made then, taking a group the write updates: the write must fail at its commit (Hudi's
  getCandidateInstants counts plans made after the write started), not leave the plan unable to commit;
* a rollback or restore of the commit the write built on: the write must fail with a conflict (not a raw
  FileNotFoundError, and never commit a version carrying the rolled-back rows), also when the rollback
  comes after the write read the old version (paused before its commit).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

import pyhudi
from pyhudi import faults
from pyhudi.errors import CommitConflictError
from pyhudi.model.table_config import load_table_config
from pyhudi.services import clustering
from pyhudi.storage import Storage
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.writer.config import ClusteringConfig
from tests.integration.test_replace_and_bucket_races import Rows, _arrow, _check


def _opts(table_type: str, index: str) -> dict[str, str]:
    return {"hoodie.table.name": "s", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.table.type": table_type, "hoodie.index.type": index,
            "hoodie.clustering.plan.strategy.small.file.limit": str(64 << 20)}


def _paused_write(rows: Rows, path: str, opts: dict[str, str], during: Any,
                  point: str = "write.after_tagging") -> BaseException | None:
    """Write `rows`, paused at `point` while `during()` runs; the write's exception, if any."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            pyhudi.write(_arrow(rows), path, opts)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            errors.append(exc)

    with faults.pause_at(point) as pause:
        thread = threading.Thread(target=run)
        thread.start()
        assert pause.wait_reached(120), f"the write never reached {point}"
        during()
    thread.join(120)
    assert not thread.is_alive()
    return errors[0] if errors else None


def _table(path: str, table_type: str, index: str) -> Rows:
    rows: Rows = {}
    for n in range(2):  # two bulk_inserts: two small file groups in x, which a clustering plan takes
        batch = {f"k{n}{i}": (f"v{n}", "x", 1) for i in range(4)}
        pyhudi.write(_arrow(batch), path, {**_opts(table_type, index), "hoodie.datasource.write.operation":
                                           "bulk_insert"})
        rows |= batch
    return rows


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_clustering_planned_while_the_write_tagged_fails_the_write(tmp_path, table_type):
    path = str(tmp_path / "t")
    opts = _opts(table_type, "SIMPLE")
    before = _table(path, table_type, "SIMPLE")
    storage = Storage(path)
    planned: list[str | None] = []

    def schedule() -> None:
        cfg = ClusteringConfig(small_file_limit=64 << 20)
        planned.append(clustering.schedule(storage, load_table_config(storage), cfg, 128 << 20))

    err = _paused_write({"k00": ("upd", "x", 2)}, path, opts, schedule)
    assert planned and planned[0], "no clustering was planned"
    assert isinstance(err, CommitConflictError), err
    _check(path, before)
    assert pyhudi.cluster(None, path, opts) == [planned[0]]  # the plan stays runnable
    _check(path, before)
    pyhudi.write(_arrow({"k00": ("upd", "x", 2)}), path, opts)
    _check(path, before | {"k00": ("upd", "x", 2)})


@pytest.mark.parametrize("point", ["write.after_tagging", "write.before_complete"])
@pytest.mark.parametrize(("table_type", "index"), [("COPY_ON_WRITE", "SIMPLE"), ("COPY_ON_WRITE", "BUCKET"),
                                                    ("MERGE_ON_READ", "GLOBAL_SIMPLE"),
                                                    ("COPY_ON_WRITE", "GLOBAL_SIMPLE"), ("MERGE_ON_READ", "BUCKET")])
def test_rollback_of_the_commit_a_write_built_on_fails_the_write(tmp_path, table_type, index, point):
    path = str(tmp_path / "t")
    opts = _opts(table_type, index)
    if index == "BUCKET":
        opts["hoodie.bucket.index.num.buckets"] = "2"
    first = {f"k{i}": ("v1", "x", 1) for i in range(6)}
    pyhudi.write(_arrow(first), path, opts)
    second = {f"k{i}": ("v2", "x", 2) for i in range(3)}
    last = pyhudi.write(_arrow(second), path, opts)
    assert last
    err = _paused_write({"k4": ("v3", "x", 3)}, path, opts, lambda: pyhudi.rollback(None, path, last), point)
    update = {"k4": ("v3", "x", 3)}
    if err is None:  # allowed only as the serial order rollback -> write (e.g. a MOR log on a slice kept)
        _check(path, first | update)
        return
    assert isinstance(err, CommitConflictError), err
    _check(path, first)  # the rollback alone: nothing of the write, nothing of the rolled-back commit
    pending = list(ActiveTimeline.load(Storage(path)).pending())
    assert not pending, f"the failed write was not rolled back: {pending}"
    pyhudi.write(_arrow(update), path, opts)
    _check(path, first | update)

