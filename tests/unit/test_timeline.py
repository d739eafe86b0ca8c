"""Active timeline: loading samples and synthetic timelines, filters, and atomic state transitions."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from pyhudi.errors import InstantNotFoundError, TimelineError
from pyhudi.model.commit_metadata import CommitMetadata
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action, Instant, State
from pyhudi.timeline.timeline import ActiveTimeline, Timeline
from tests.unit._samples import SampleTables, manifest, sample_names


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    return SampleTables(tmp_path_factory.mktemp("tl_samples"))


def _touch(hoodie: Path, *names: str, content: bytes = b"") -> None:
    hoodie.mkdir(parents=True, exist_ok=True)
    for n in names:
        (hoodie / n).write_bytes(content)


# ----------------------------------------------------------------------------- samples
@pytest.mark.parametrize("name", sample_names())
def test_load_sample_timelines(samples, name):
    facts = manifest()[name]
    tl = ActiveTimeline.load(Storage(str(samples.root(name))))
    expected = [(i["instant"], i["action"]) for i in facts["completed_instants"]]
    assert [(i.timestamp, i.action.value) for i in tl] == expected
    assert all(i.is_completed for i in tl)
    assert len(tl.pending()) == 0
    assert tl.compaction_commits == frozenset()
    if not expected:
        assert not tl and tl.last() is None and tl.first() is None
        return
    for inst in tl:
        action = inst.action.value
        inflight = f"{inst.timestamp}.inflight" if action == "commit" else f"{inst.timestamp}.{action}.inflight"
        assert tl.instant_files(inst.timestamp) == {
            f"{inst.timestamp}.{action}.requested", inflight, f"{inst.timestamp}.{action}"}
        meta = tl.commit_metadata(inst)
        op = next(i["operation_type"] for i in facts["completed_instants"] if i["instant"] == inst.timestamp)
        assert meta.operation_type == op
        requested = tl.requested_details(inst)
        if action == "replacecommit":
            assert requested.startswith(b"Obj\x01")
        else:
            assert requested == b""
        # the inflight profile is readable too
        inflight_meta = CommitMetadata.from_bytes(tl.details(Instant(inst.timestamp, inst.action, State.INFLIGHT)))
        assert inflight_meta.operation_type == op
    assert tl.last().timestamp == expected[-1][0]
    assert tl.first().timestamp == expected[0][0]
    assert tl.commits().completed().timestamps() == [ts for ts, _ in expected]


# ----------------------------------------------------------------------------- synthetic loading
def T(n: int) -> str:
    """A 17-digit instant time for synthetic timelines."""
    return f"2025010100000{n:04d}"


def test_latest_state_per_timestamp_and_pending_compaction(tmp_path):
    h = tmp_path / ".hoodie"
    _touch(h, "hoodie.properties")
    (h / "archived").mkdir()
    _touch(h, f"{T(1)}.commit.requested", f"{T(1)}.inflight", f"{T(1)}.commit")  # completed COW commit
    _touch(h, f"{T(2)}.deltacommit.requested", f"{T(2)}.deltacommit.inflight")  # inflight deltacommit
    _touch(h, f"{T(3)}.compaction.requested")  # requested compaction
    _touch(h, f"{T(4)}.compaction.requested", f"{T(4)}.compaction.inflight", f"{T(4)}.commit")  # done compaction
    _touch(h, f"{T(5)}.clean.requested", f"{T(5)}.clean.inflight", f"{T(5)}.clean")
    _touch(h, f"{T(6)}.replacecommit.requested")
    _touch(h, f"{T(7)}.rollback.requested", f"{T(7)}.rollback.inflight")
    tl = ActiveTimeline.load(Storage(str(tmp_path)))
    got = {i.timestamp: (i.action, i.state) for i in tl}
    assert got == {
        T(1): (Action.COMMIT, State.COMPLETED),
        T(2): (Action.DELTA_COMMIT, State.INFLIGHT),
        T(3): (Action.COMPACTION, State.REQUESTED),
        T(4): (Action.COMMIT, State.COMPLETED),
        T(5): (Action.CLEAN, State.COMPLETED),
        T(6): (Action.REPLACE_COMMIT, State.REQUESTED),
        T(7): (Action.ROLLBACK, State.INFLIGHT),
    }
    assert tl.compaction_commits == frozenset({T(3), T(4)})
    assert tl.is_compaction_commit(tl.find(T(4)))
    assert not tl.is_compaction_commit(tl.find(T(1)))
    assert tl.actions(Action.COMPACTION).pending().timestamps() == [T(3)]
    assert tl.commits().timestamps() == [T(1), T(2), T(4), T(6)]
    assert tl.commits().completed().timestamps() == [T(1), T(4)]
    assert tl.write_timeline().timestamps() == [T(1), T(2), T(3), T(4), T(6)]
    assert tl.completed().timestamps() == [T(1), T(4), T(5)]
    assert tl.pending().timestamps() == [T(2), T(3), T(6), T(7)]
    assert tl.instant_files(T(4)) == {f"{T(4)}.compaction.requested", f"{T(4)}.compaction.inflight",
                                      f"{T(4)}.commit"}


def test_timeline_filters_and_lookups():
    insts = [Instant("20250101000000003", Action.COMMIT), Instant("20250101000000001", Action.COMMIT),
             Instant("20250101000000002", Action.DELTA_COMMIT, State.INFLIGHT),
             Instant("20250101000000005", Action.CLEAN)]
    tl = Timeline(insts)
    assert tl.timestamps() == ["20250101000000001", "20250101000000002", "20250101000000003",
                               "20250101000000005"]
    assert tl.before_or_on("20250101000000003").timestamps()[-1] == "20250101000000003"
    assert tl.before("20250101000000003").timestamps() == ["20250101000000001", "20250101000000002"]
    assert tl.after("20250101000000002").timestamps() == ["20250101000000003", "20250101000000005"]
    assert tl.between("20250101000000001", "20250101000000003").timestamps() == [
        "20250101000000002", "20250101000000003"]
    assert tl.find("20250101000000002") == insts[2]
    assert tl.find("20250101000000004") is None
    assert tl.contains("20250101000000005") and not tl.contains("2025")
    assert tl.find("99999999999999999") is None and tl.find("0") is None
    assert len(tl) == 4 and bool(tl) and not Timeline([])
    assert tl.completed().actions(Action.COMMIT).timestamps() == ["20250101000000001", "20250101000000003"]


# ----------------------------------------------------------------------------- transitions
@pytest.fixture
def table(tmp_path):
    (tmp_path / ".hoodie").mkdir()
    return tmp_path


def test_cow_commit_lifecycle(table):
    storage = Storage(str(table))
    tl = ActiveTimeline.load(storage)
    ts = "20250101000000001"
    req = tl.create_requested(Instant(ts, Action.COMMIT, State.REQUESTED))
    assert (table / ".hoodie" / f"{ts}.commit.requested").read_bytes() == b""
    inflight = tl.transition_to_inflight(req, b'{"profile":1}')
    assert inflight == Instant(ts, Action.COMMIT, State.INFLIGHT)
    assert (table / ".hoodie" / f"{ts}.inflight").read_bytes() == b'{"profile":1}'
    reloaded = tl.reload()
    assert reloaded.find(ts) == inflight
    done = tl.complete(inflight, b"{}")
    assert done == Instant(ts, Action.COMMIT, State.COMPLETED)
    assert (table / ".hoodie" / f"{ts}.commit").read_bytes() == b"{}"
    reloaded = tl.reload()
    assert reloaded.find(ts) == done
    assert reloaded.instant_files(ts) == {f"{ts}.commit.requested", f"{ts}.inflight", f"{ts}.commit"}


def test_compaction_lifecycle_completes_as_commit(table):
    tl = ActiveTimeline.load(Storage(str(table)))
    ts = "20250101000000002"
    req = tl.create_requested(Instant(ts, Action.COMPACTION, State.REQUESTED), b"Obj\x01plan")
    inflight = tl.transition_to_inflight(req)
    assert inflight.file_name == f"{ts}.compaction.inflight"
    done = tl.complete(inflight, b'{"compacted" : true}')
    assert done == Instant(ts, Action.COMMIT, State.COMPLETED)
    names = {p.name for p in (table / ".hoodie").iterdir() if p.is_file()}
    assert names == {f"{ts}.compaction.requested", f"{ts}.compaction.inflight", f"{ts}.commit"}
    reloaded = tl.reload()
    assert reloaded.find(ts) == done and reloaded.is_compaction_commit(done)
    assert reloaded.requested_details(Instant(ts, Action.COMPACTION)) == b"Obj\x01plan"


def test_deltacommit_and_replacecommit_lifecycle(table):
    tl = ActiveTimeline.load(Storage(str(table)))
    for ts, action in (("20250101000000003", Action.DELTA_COMMIT), ("20250101000000004", Action.REPLACE_COMMIT)):
        inst = tl.create_requested(Instant(ts, action, State.REQUESTED))
        inst = tl.transition_to_inflight(inst, b"{}")
        assert inst.file_name == f"{ts}.{action.value}.inflight"
        done = tl.complete(inst, b"{}")
        assert done.file_name == f"{ts}.{action.value}"


def test_create_requested_is_exclusive(table):
    tl = ActiveTimeline.load(Storage(str(table)))
    ts = "20250101000000005"
    tl.create_requested(Instant(ts, Action.DELTA_COMMIT, State.REQUESTED))
    with pytest.raises(TimelineError):
        tl.create_requested(Instant(ts, Action.DELTA_COMMIT, State.REQUESTED))
    # the timestamp is taken, whatever the action
    with pytest.raises(TimelineError):
        tl.create_requested(Instant(ts, Action.COMMIT, State.REQUESTED))
    with pytest.raises(TimelineError):
        tl.create_requested(Instant("20250101000000006", Action.COMMIT, State.INFLIGHT))
    with pytest.raises(TimelineError):
        tl.create_requested(Instant("20250101000000006", Action.COMMIT, State.COMPLETED))
    assert not (table / ".hoodie" / "20250101000000006.inflight").exists()


def test_create_requested_race_exactly_one_writer_wins(table):
    n = 16
    ts = "20250101000000007"
    barrier = threading.Barrier(n)
    outcomes: list[str] = []
    lock = threading.Lock()

    def writer(i: int) -> None:
        tl = ActiveTimeline.load(Storage(str(table)))
        barrier.wait()
        try:
            tl.create_requested(Instant(ts, Action.COMMIT, State.REQUESTED), f"w{i}".encode())
            result = "won"
        except TimelineError:
            result = "lost"
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["lost"] * (n - 1) + ["won"]


def test_transitions_require_previous_state(table):
    tl = ActiveTimeline.load(Storage(str(table)))
    with pytest.raises(TimelineError):
        tl.transition_to_inflight(Instant("20250101000000008", Action.COMMIT, State.REQUESTED))
    assert not (table / ".hoodie" / "20250101000000008.inflight").exists()
    tl.create_requested(Instant("20250101000000008", Action.COMMIT, State.REQUESTED))
    with pytest.raises(TimelineError):
        tl.complete(Instant("20250101000000008", Action.COMMIT, State.INFLIGHT), b"{}")
    assert not (table / ".hoodie" / "20250101000000008.commit").exists()


def test_inflight_and_complete_are_written_atomically(table, monkeypatch):
    """Every instant file appears by link(2) of a complete temp file (exclusive and atomic): requested,
    inflight and completed alike, never by rename over an existing file."""
    storage = Storage(str(table))
    tl = ActiveTimeline.load(storage)
    ts = "20250101000000009"
    payload = b'{"partitionToWriteStats" : { }}' * 2000
    real_link = os.link
    renamed: list[str] = []

    def spy(src, dst):
        dst = os.fspath(dst)
        assert not os.path.exists(dst)
        with open(src, "rb") as f:
            assert f.read() == (payload if renamed else b"")
        renamed.append(os.path.basename(dst))
        real_link(src, dst)

    monkeypatch.setattr(os, "link", spy)
    monkeypatch.setattr(os, "replace", lambda *a: pytest.fail(f"instant file renamed into place: {a}"))
    plain_writes: list[str] = []
    real_write_bytes = storage.write_bytes

    def write_bytes_spy(rel, data):
        plain_writes.append(rel)
        real_write_bytes(rel, data)

    monkeypatch.setattr(storage, "write_bytes", write_bytes_spy)
    inst = tl.create_requested(Instant(ts, Action.COMMIT, State.REQUESTED))
    assert renamed == [f"{ts}.commit.requested"]
    inst = tl.transition_to_inflight(inst, payload)
    inst = tl.complete(inst, payload)
    assert renamed == [f"{ts}.commit.requested", f"{ts}.inflight", f"{ts}.commit"]
    # the only plain writes went to the temp area, never to the instant files themselves
    assert all(not rel.startswith(f".hoodie/{ts}") for rel in plain_writes)
    assert (table / ".hoodie" / f"{ts}.commit").read_bytes() == payload


def test_complete_failure_leaves_instant_inflight(table, monkeypatch):
    storage = Storage(str(table))
    tl = ActiveTimeline.load(storage)
    ts = "20250101000000010"
    inst = tl.transition_to_inflight(tl.create_requested(Instant(ts, Action.DELTA_COMMIT, State.REQUESTED)))

    def boom(src, dst):
        raise OSError("crash during link")

    monkeypatch.setattr(os, "link", boom)
    with pytest.raises(OSError):
        tl.complete(inst, b"{}")
    monkeypatch.undo()
    assert not (table / ".hoodie" / f"{ts}.deltacommit").exists()
    assert tl.reload().find(ts) == Instant(ts, Action.DELTA_COMMIT, State.INFLIGHT)


def test_delete_pending_removes_inflight_before_requested_and_keeps_completed(table, monkeypatch):
    storage = Storage(str(table))
    h = table / ".hoodie"
    ts = "20250101000000011"
    _touch(h, f"{ts}.commit.requested", f"{ts}.inflight")
    tl = ActiveTimeline.load(storage)
    order: list[str] = []
    real_delete = storage.delete

    def delete_spy(rel):
        existed = storage.exists(rel)
        ok = real_delete(rel)
        if existed:
            order.append(rel.rsplit("/", 1)[-1])
        return ok

    monkeypatch.setattr(storage, "delete", delete_spy)
    tl.delete_pending(tl.find(ts))
    assert order == [f"{ts}.inflight", f"{ts}.commit.requested"]
    assert not any(p.name.startswith(ts) for p in h.iterdir())
    assert tl.reload().find(ts) is None


def test_delete_pending_never_deletes_a_completed_file(table):
    h = table / ".hoodie"
    ts = "20250101000000012"
    _touch(h, f"{ts}.compaction.requested", f"{ts}.compaction.inflight", f"{ts}.commit")
    tl = ActiveTimeline.load(Storage(str(table)))
    tl.delete_pending(Instant(ts, Action.COMPACTION, State.INFLIGHT))
    assert sorted(p.name for p in h.iterdir()) == [f"{ts}.commit"]


def test_delete_completed_removes_completed_first(table, monkeypatch):
    storage = Storage(str(table))
    h = table / ".hoodie"
    ts = "20250101000000013"
    _touch(h, f"{ts}.compaction.requested", f"{ts}.compaction.inflight", f"{ts}.commit")
    tl = ActiveTimeline.load(storage)
    order: list[str] = []
    real_delete = storage.delete

    def delete_spy(rel):
        if storage.exists(rel):
            order.append(rel.rsplit("/", 1)[-1])
        return real_delete(rel)

    monkeypatch.setattr(storage, "delete", delete_spy)
    tl.delete_completed(tl.find(ts))
    assert order == [f"{ts}.commit", f"{ts}.compaction.inflight", f"{ts}.compaction.requested"]
    assert list(h.iterdir()) == []


def test_details_of_missing_instant(table):
    tl = ActiveTimeline.load(Storage(str(table)))
    with pytest.raises(InstantNotFoundError):
        tl.details(Instant("20250101000000099", Action.COMMIT))


def test_as_timeline_is_plain_and_equal(table):
    _touch(table / ".hoodie", "20250101000000001.commit", "20250101000000002.deltacommit.requested")
    tl = ActiveTimeline.load(Storage(str(table)))
    plain = tl.as_timeline()
    assert type(plain) is Timeline
    assert plain.instants == tl.instants
    assert [i.state for i in plain] == [State.COMPLETED, State.REQUESTED]
