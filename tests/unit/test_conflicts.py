"""Commit-time conflict rules (transaction/conflicts.check_write) in every concurrency mode, and the
heartbeat liveness rule that keeps a writer from rolling back a live concurrent write."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pyhudi.errors import CommitConflictError, HudiError
from pyhudi.model import avro_models as am
from pyhudi.model.commit_metadata import CommitMetadata
from pyhudi.model.write_stat import WriteStat
from pyhudi.services.rollback import rollback_failed_writes
from pyhudi.storage import Storage
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.transaction import heartbeat as hb
from pyhudi.transaction.conflicts import check_write, footprint
from tests.unit._tables import T, Table

P = "p=a"


def merge_stat(fid: str, prev: str) -> WriteStat:
    return WriteStat(file_id=fid, path=f"{P}/{fid}_0-1-1_x.parquet", partition_path=P, prev_commit=prev)


def log_stat(fid: str, base: str) -> WriteStat:
    return WriteStat(file_id=fid, path=f"{P}/.{fid}_{base}.log.1_0-1-1", partition_path=P, prev_commit=base,
                     log_version=1)


def commit(table: Table, ts: str, *stats: WriteStat) -> None:
    meta = CommitMetadata(operation_type="UPSERT")
    for s in stats:
        meta.add(s)
    table.instant(ts, "commit", meta=meta)


def timeline(table: Table) -> ActiveTimeline:
    return ActiveTimeline.load(Storage(str(table.root)))


def test_single_writer_commit_in_between_on_same_group_conflicts(tmp_path: Path) -> None:
    """Both writers rewrote f1 from T(1); the one completing second would hide the other's update."""
    t = Table(tmp_path)
    commit(t, T(1), merge_stat("f1", "null"))
    known = frozenset({T(1)})
    t.instant(T(2), "commit", "inflight")  # the later committer
    commit(t, T(3), merge_stat("f1", T(1)))  # started after T(2), completed first
    with pytest.raises(CommitConflictError) as err:
        check_write(timeline(t), T(2), known, footprint([merge_stat("f1", T(1))]))
    assert isinstance(err.value, HudiError)
    assert f"conflicts with commit {T(3)}" in str(err.value) and "f1" in str(err.value)


def test_commit_unknown_at_start_conflicts_even_with_an_older_instant_time(tmp_path: Path) -> None:
    t = Table(tmp_path)
    commit(t, T(1), merge_stat("f1", "null"))
    commit(t, T(2), merge_stat("f1", T(1)))  # completed after T(3) loaded its timeline
    with pytest.raises(CommitConflictError):
        check_write(timeline(t), T(3), frozenset({T(1)}), footprint([merge_stat("f1", T(1))]))


def test_commit_after_own_start_conflicts_even_if_listed_as_known(tmp_path: Path) -> None:
    """An instant time after the write's own start is always a candidate (clock or listing quirks)."""
    t = Table(tmp_path)
    commit(t, T(1), merge_stat("f1", "null"))
    commit(t, T(5), merge_stat("f1", T(1)))
    with pytest.raises(CommitConflictError):
        check_write(timeline(t), T(3), frozenset({T(1), T(5)}), footprint([merge_stat("f1", T(1))]))


def test_no_conflict_when_built_on_the_other_writes_version_or_other_groups(tmp_path: Path) -> None:
    t = Table(tmp_path)
    commit(t, T(1), merge_stat("f1", "null"), merge_stat("f2", "null"))
    commit(t, T(2), merge_stat("f1", T(1)))
    tl = timeline(t)
    check_write(tl, T(3), frozenset({T(1)}), footprint([merge_stat("f1", T(2))]))  # merged onto T(2)'s version
    check_write(tl, T(3), frozenset({T(1)}), footprint([merge_stat("f2", T(1))]))  # another file group
    check_write(tl, T(3), frozenset({T(1), T(2)}), footprint([merge_stat("f1", T(1))]))  # known before start


def test_mor_log_appends_to_the_same_group_conflict(tmp_path: Path) -> None:
    t = Table(tmp_path)
    commit(t, T(1), merge_stat("f1", "null"))
    meta = CommitMetadata(operation_type="UPSERT")
    meta.add(log_stat("f1", T(1)))
    t.instant(T(3), "deltacommit", meta=meta)
    with pytest.raises(CommitConflictError):
        check_write(timeline(t), T(2), frozenset({T(1)}), footprint([log_stat("f1", T(1))]))


def _clustering_requested(t: Table, ts: str, fid: str) -> None:
    group = am.clustering_group(slices=[am.slice_info(file_id=fid, partition_path=P, data_file_path="x",
                                                      delta_file_paths=[])], num_output_file_groups=1, metrics={})
    plan = am.clustering_plan(input_groups=[group], strategy=am.clustering_strategy(strategy_params={}),
                              preserve_hoodie_metadata=True)
    body = am.write_instant_avro("HoodieRequestedReplaceMetadata",
                                 am.requested_replace_metadata(clustering_plan=plan, operation_type="CLUSTER"))
    (t.hoodie / f"{ts}.replacecommit.requested").write_bytes(body)


def test_clustering_planned_after_the_write_started_fails_the_write(tmp_path: Path) -> None:
    """Hudi's getCandidateInstants counts pending clusterings newer than the write: the plan was made
    without the write's data, so one of the two must fail, and the clustering's own check could miss a
    log file the plan already named."""
    t = Table(tmp_path)
    commit(t, T(1), merge_stat("f1", "null"))
    _clustering_requested(t, T(3), "f1")
    with pytest.raises(CommitConflictError) as err:
        check_write(timeline(t), T(2), frozenset({T(1)}), footprint([log_stat("f1", T(1))]))
    assert f"replacecommit {T(3)}" in str(err.value)
    # A clustering planned before the write started is the clustering's problem (its commit check).
    check_write(timeline(t), T(4), frozenset({T(1)}), footprint([log_stat("f1", T(1))]))


# --------------------------------------------------------------------------- heartbeats
def test_heartbeat_names_its_owner_and_a_dead_owner_expires_at_once(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    beat = hb.Heartbeat(storage, T(1), 60000).start()
    try:
        assert not hb.is_expired(storage, T(1), 60000, 2)
    finally:
        beat.stop()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    storage.write_atomic(f"{hb.HEARTBEAT_DIR}/{T(2)}", f"{int(time.time() * 1000)}\n"
                         f"{hb.owner_token().split(':')[0]}:{pid}:1".encode())
    assert hb.is_expired(storage, T(2), 60000, 2)  # fresh beat, but its process is gone
    storage.write_atomic(f"{hb.HEARTBEAT_DIR}/{T(3)}", f"{int(time.time() * 1000)}\nother-host:{pid}:1".encode())
    assert not hb.is_expired(storage, T(3), 60000, 2)  # another host: only the beat's age tells


def test_hudi_empty_heartbeat_file_uses_its_modification_time(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    storage.write_atomic(f"{hb.HEARTBEAT_DIR}/{T(1)}", b"")
    assert not hb.is_expired(storage, T(1), 60000, 2)
    old = time.time() - 600
    os.utime(tmp_path / hb.HEARTBEAT_DIR / T(1), (old, old))
    assert hb.is_expired(storage, T(1), 60000, 2)


def test_recovery_never_rolls_back_a_live_writers_pending_instant(tmp_path: Path) -> None:
    """EAGER recovery used to roll back every pending write, including one a live process was writing."""
    t = Table(tmp_path)
    commit(t, T(1), merge_stat("f1", "null"))
    t.instant(T(2), "commit", "inflight")
    t.instant(T(3), "commit", "inflight")
    storage = Storage(str(tmp_path))
    live = hb.Heartbeat(storage, T(2), 60000).start()
    try:
        done = rollback_failed_writes(storage, timeline(t), (60000, 2))
        assert [r.target for r in done] == [T(3)]  # no heartbeat: a crashed writer
        assert timeline(t).find(T(2)) is not None
    finally:
        live.stop()


# --------------------------------------------------------------------------- stuck clustering plans
def test_clustering_plan_owner_gone_only_after_expiry_without_heartbeat(tmp_path: Path) -> None:
    from pyhudi.services import clustering

    t = Table(tmp_path)
    commit(t, T(1), merge_stat("f1", "null"))
    _clustering_requested(t, T(2), "f1")
    storage = Storage(str(tmp_path))
    assert not clustering.owner_gone(storage, T(2), 60000, 2)  # just scheduled: its execution has not started
    old = time.time() - 600
    os.utime(t.hoodie / f"{T(2)}.replacecommit.requested", (old, old))
    assert clustering.owner_gone(storage, T(2), 60000, 2)  # nobody ever picked it up
    beat = hb.Heartbeat(storage, T(2), 60000).start()
    try:
        assert not clustering.owner_gone(storage, T(2), 60000, 2)  # a live executor
    finally:
        beat.stop()


def test_clustering_update_conflict_names_the_command_that_unblocks_it() -> None:
    from pyhudi.writer.client import _updates_under_clustering

    message = str(_updates_under_clustering(2, "p0", "f1", T(3), "file:/data/t"))
    assert f"pyhudi clustering file:/data/t run --instant {T(3)}" in message
    assert f"pyhudi.cluster(spark, 'file:/data/t', instant='{T(3)}')" in message
    assert "SparkAllowUpdateStrategy" in message


def test_a_live_clustering_execution_is_not_run_twice(tmp_path: Path) -> None:
    from pyhudi.services import clustering

    t = Table(tmp_path)
    commit(t, T(1), merge_stat("f1", "null"))
    _clustering_requested(t, T(2), "f1")
    storage = Storage(str(tmp_path))
    assert not clustering.being_executed(storage, T(2), 60000, 2)  # scheduled only: anyone may run it
    beat = hb.Heartbeat(storage, T(2), 60000).start()
    try:
        assert clustering.being_executed(storage, T(2), 60000, 2)
    finally:
        beat.stop()


def test_clustering_commit_detects_a_log_file_written_into_an_input_group_after_planning(tmp_path: Path) -> None:
    """check_clustering on MOR: a log file that joined an input group after the plan (committed or still
    pending) fails the clustering, which would otherwise replace the group without it."""
    from pyhudi.model.table_config import MOR
    from pyhudi.transaction.conflicts import check_clustering

    t = Table(tmp_path, MOR)
    base = t.base(P, "f1", T(1))
    commit(t, T(1), merge_stat("f1", "null"))
    storage = Storage(str(tmp_path))
    slice_ = am.slice_info(file_id="f1", partition_path=P, data_file_path=storage.uri(f"{P}/{base}"),
                           delta_file_paths=[])
    plan = am.clustering_plan(input_groups=[am.clustering_group(slices=[slice_], num_output_file_groups=1,
                                                                metrics={})],
                              strategy=am.clustering_strategy(strategy_params={}), preserve_hoodie_metadata=True)
    check_clustering(storage, t.config, timeline(t), T(2), plan)  # nothing changed: fine
    t.instant(T(3), "deltacommit", "inflight")
    t.log(P, "f1", T(1))  # a write in flight appended to the planned slice
    with pytest.raises(CommitConflictError, match="written after the clustering was scheduled"):
        check_clustering(storage, t.config, timeline(t), T(2), plan)


_FORKED_TOKEN = """
import os
from pyhudi.transaction import heartbeat as hb
parent = hb.owner_token()
assert hb.owner_token() == parent
read, write = os.pipe()
pid = os.fork()
if pid == 0:  # the child: report its token and leave
    os.write(write, hb.owner_token().encode())
    os._exit(0)
os.close(write)
child = os.read(read, 1024).decode()
os.waitpid(pid, 0)
host, child_pid, _start = child.split(":")
assert (host, child_pid) == (parent.split(":")[0], str(pid)) and child != parent, (parent, child)
assert hb._process_gone(child), "the child has exited: its token must read as gone"
assert not hb._process_gone(parent)
"""


def test_owner_token_is_each_processs_own_after_a_fork() -> None:
    """The token is read once per pid: a forked child (which inherits the parent's memo) names itself, with
    its own start time, so its heartbeats are not taken for the parent's and a dead child is seen as gone
    (in a fresh interpreter: nothing else in it forks)."""
    subprocess.run([sys.executable, "-c", _FORKED_TOKEN], check=True, timeout=60)
