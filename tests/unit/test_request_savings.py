"""What lets a write on an object store skip requests (issue 31) without losing what the requests told:
the in-process engine's markers known in memory equal what listing the marker folder finds; the `.hoodie`
listing taken with the table's properties serves only the write's first timeline load; completion under the
lock takes the metadata-table folder from that lock's own listing."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyhudi.model.table_config import load_table_config
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action, Instant, State
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.writer.markers import (
    MARKER_ROOT,
    begin_markers,
    create_marker,
    delete_markers,
    list_marked_files,
    premark,
    remove_marker,
)
from tests.helpers import plant_metadata_table
from tests.unit._samples import extract_sample

I1 = "20260101000000001"


def test_markers_known_in_process_equal_the_listed_ones(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    marking = begin_markers(storage, I1, "TIMELINE_SERVER_BASED")
    marking = premark(storage, I1, [("a/b", "f1.parquet", "MERGE"), ("", "f2.parquet", "CREATE")], marking)
    own = create_marker(storage, I1, "a/b", ".f3_1.log.2_0-1-1", "APPEND", marking)
    kept = create_marker(storage, I1, "c", "f4.parquet", "CREATE", marking)
    assert own is not None and kept is not None
    remove_marker(storage, own)  # withdrawn: another writer had the name
    listed = list_marked_files(storage, I1)
    assert listed == ["a/b/f1.parquet", "c/f4.parquet", "f2.parquet"]
    assert list_marked_files(storage, I1, in_process=True) == listed
    delete_markers(storage, I1, in_process=True)
    assert not (tmp_path / MARKER_ROOT / I1).exists()
    assert list_marked_files(storage, I1, in_process=True) == [], "forgotten with the folder"


def test_direct_markers_known_in_process_equal_the_listed_ones(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    marking = begin_markers(storage, I1, "DIRECT")
    create_marker(storage, I1, "a", "f1.parquet", "CREATE", marking)
    create_marker(storage, I1, "", "f2.parquet", "MERGE", marking)
    assert list_marked_files(storage, I1, in_process=True) == list_marked_files(storage, I1) == \
        ["a/f1.parquet", "f2.parquet"]


@pytest.fixture
def table(tmp_path: Path) -> Path:
    return extract_sample("cow__v6_simplekeygen_nonhivestyle", tmp_path / "t")


def test_the_properties_listing_serves_only_the_first_load_that_asks(table: Path) -> None:
    """A load that did not ask for the listing discards it: a load under a lock always lists afresh."""
    storage = Storage(str(table))
    load_table_config(storage)
    before = ActiveTimeline.load(storage).timestamps()
    late = "29990101000000000"
    (table / ".hoodie" / f"{late}.commit.requested").write_bytes(b"")
    assert ActiveTimeline.load(storage, reuse_listing=True).find(late) is not None, "the stash was discarded"
    load_table_config(storage)
    (table / ".hoodie" / f"{late}.commit.requested").unlink()
    (table / ".hoodie" / "29990101000000001.commit.requested").write_bytes(b"")
    first = ActiveTimeline.load(storage, reuse_listing=True)
    assert first.find(late) is not None and first.find("29990101000000001") is None, "taken at the properties' load"
    again = ActiveTimeline.load(storage, reuse_listing=True)
    assert again.find(late) is None and again.find("29990101000000001") is not None, "served once only"
    assert before


def test_completion_under_the_lock_finds_a_metadata_table_in_its_listing(table: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The listing taken under the lock shows `.hoodie/metadata`: the table is dropped before the commit, and
    no LIST of its own is made (nor when the listing shows no such folder)."""
    storage = Storage(str(table))
    load_table_config(storage)
    folder_checks: list[str] = []
    original = storage.folder_exists
    monkeypatch.setattr(storage, "folder_exists", lambda rel: folder_checks.append(rel) or original(rel))
    for ts, planted in (("29990101000000000", False), ("29990101000000001", True)):
        timeline = ActiveTimeline.load(storage)
        requested = timeline.create_requested(Instant(ts, Action.COMMIT, State.REQUESTED))
        timeline.transition_to_inflight(requested, b"{}")
        if planted:
            plant_metadata_table(table)
        locked = ActiveTimeline.load(storage)
        locked.complete(Instant(ts, Action.COMMIT, State.INFLIGHT), b"{}", listed_under_lock=True)
        assert not (table / ".hoodie" / "metadata").exists()
    assert not [r for r in folder_checks if r.endswith("metadata")], folder_checks
