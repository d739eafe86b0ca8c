"""Two writers taking the same instant time for different actions at the same moment."""

from __future__ import annotations

import pytest

from pyhudi.errors import TimelineError
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
