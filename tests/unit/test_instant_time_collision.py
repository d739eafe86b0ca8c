"""Two writers taking the same instant time for different actions at the same moment."""

from __future__ import annotations

import pytest

from pyhudi.errors import InstantTimeTakenError, TimelineError
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action, Instant, State
from pyhudi.timeline.timeline import ActiveTimeline


def _racing_storage(tmp_path, other: str) -> Storage:
    """A storage whose exclusive create lets another writer create `other` first (after the pre-check)."""
    storage = Storage(str(tmp_path))
    storage.makedirs(".hoodie")
    original = storage.create_exclusive

    def create_exclusive(rel: str, data: bytes = b"") -> bool:
        original(f".hoodie/{other}", b"")
        return original(rel, data)

    storage.create_exclusive = create_exclusive  # type: ignore[method-assign]
    return storage


def test_a_time_taken_for_another_action_meanwhile_is_given_up(tmp_path):
    storage = _racing_storage(tmp_path, "20260101000000000.replacecommit.requested")
    timeline = ActiveTimeline.load(storage)
    with pytest.raises(TimelineError, match="taken at the same moment"):
        timeline.create_requested(Instant("20260101000000000", Action.COMMIT, State.REQUESTED))
    names = sorted(i.name for i in storage.list_dir(".hoodie") if not i.is_dir)
    assert names == ["20260101000000000.replacecommit.requested"], "our requested file was withdrawn"


def test_create_new_requested_moves_on_to_a_free_time(tmp_path):
    storage = Storage(str(tmp_path))
    storage.makedirs(".hoodie")
    timeline = ActiveTimeline.load(storage)
    first = timeline.create_new_requested(Action.CLEAN, b"x")
    second = timeline.reload().create_new_requested(Action.COMPACTION, b"y")
    assert second.timestamp > first.timestamp


def _names(storage: Storage) -> list[str]:
    return sorted(i.name for i in storage.list_dir(".hoodie") if not i.is_dir)


def test_a_writers_one_listing_after_requested_and_inflight_finds_a_time_taken_meanwhile(tmp_path):
    """A writer creates requested then inflight and lists once (`check_time`): another action's instant of
    the same time, created between the pre-check and the create, makes it withdraw both of its files."""
    storage = _racing_storage(tmp_path, "20260101000000000.replacecommit.requested")
    timeline = ActiveTimeline.load(storage)
    requested = timeline.create_requested(Instant("20260101000000000", Action.COMMIT, State.REQUESTED),
                                          check_time=False)
    assert "20260101000000000.commit.requested" in _names(storage), "no listing yet: the file stays"
    with pytest.raises(InstantTimeTakenError, match="taken at the same moment"):
        timeline.transition_to_inflight(requested, b"{}", check_time=True)
    assert _names(storage) == ["20260101000000000.replacecommit.requested"], "both of our files withdrawn"


def test_the_writers_listing_finds_its_requested_file_rolled_back(tmp_path):
    """The listing also stands for the HEAD of the requested file: removed between the creates (a rollback
    that took the write for dead), the inflight file is withdrawn and the error is not a time clash (the
    caller rolls back; it does not just take the next time)."""
    storage = Storage(str(tmp_path))
    storage.makedirs(".hoodie")
    timeline = ActiveTimeline.load(storage)
    requested = timeline.create_requested(Instant("20260101000000000", Action.COMMIT, State.REQUESTED),
                                          check_time=False)
    storage.delete(".hoodie/20260101000000000.commit.requested")
    with pytest.raises(TimelineError, match="is missing") as err:
        timeline.transition_to_inflight(requested, b"{}", check_time=True)
    assert not isinstance(err.value, InstantTimeTakenError)
    assert _names(storage) == []


def test_a_write_whose_time_is_taken_meanwhile_commits_at_the_next_time(tmp_path, monkeypatch):
    """End to end: the first time a write takes is also taken by a clustering plan of another process
    between its requested file and its listing; the write gives it up and commits at a later time, the
    plan's file stays, nothing of the given-up attempt is left on the timeline, the heartbeat file of that
    time (which the live plan beats too) is not deleted, and hudi-rs reads the rows."""
    import pyarrow as pa

    import pyhudi
    from pyhudi.writer import client as writer_client
    from tests.helpers import hudi_rs

    path = tmp_path / "t"
    opts = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": ""}
    pyhudi.write(pa.table({"id": ["a", "b"], "ts": [1, 1]}), str(path), opts)
    taken = "29990101000000000"
    times = iter([taken])
    real_time = writer_client.new_instant_time
    monkeypatch.setattr(writer_client, "new_instant_time", lambda **kw: next(times, None) or real_time(**kw))
    original = ActiveTimeline.transition_to_inflight

    def racing(self, instant, content=b"", check_time=False):
        if instant.timestamp == taken:  # the other process's plan, and its heartbeat over this writer's
            (path / ".hoodie" / f"{taken}.replacecommit.requested").write_bytes(b"")
            (path / ".hoodie" / ".heartbeat" / taken).write_bytes(b"")
        return original(self, instant, content, check_time)

    monkeypatch.setattr(ActiveTimeline, "transition_to_inflight", racing)
    instant = pyhudi.write(pa.table({"id": ["b", "c"], "ts": [2, 2]}), str(path), opts)
    assert instant > taken, "the next time after the one given up"
    assert [n for n in _names(Storage(str(path))) if n.startswith(taken)] == [f"{taken}.replacecommit.requested"]
    assert (path / ".hoodie" / ".heartbeat" / taken).exists(), "the live plan's heartbeat (same time) is kept"
    (path / ".hoodie" / f"{taken}.replacecommit.requested").unlink()  # the other process's plan, not ours to read
    got = hudi_rs(path)
    assert got is not None and sorted(zip(got["id"].to_pylist(), got["ts"].to_pylist())) == \
        [("a", 1), ("b", 2), ("c", 2)]
