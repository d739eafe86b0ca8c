"""Instants and their layout-1 file names, including Hudi's two naming quirks."""

from __future__ import annotations

import pytest

from pyhudi.timeline.instant import (
    Action,
    Instant,
    State,
    instant_file_names,
    parse_instant_file,
)

TS = "20250331030642808"


@pytest.mark.parametrize("action, state, name", [
    (Action.COMMIT, State.REQUESTED, f"{TS}.commit.requested"),
    (Action.COMMIT, State.INFLIGHT, f"{TS}.inflight"),  # COW quirk: no action in the name
    (Action.COMMIT, State.COMPLETED, f"{TS}.commit"),
    (Action.DELTA_COMMIT, State.REQUESTED, f"{TS}.deltacommit.requested"),
    (Action.DELTA_COMMIT, State.INFLIGHT, f"{TS}.deltacommit.inflight"),
    (Action.DELTA_COMMIT, State.COMPLETED, f"{TS}.deltacommit"),
    (Action.REPLACE_COMMIT, State.REQUESTED, f"{TS}.replacecommit.requested"),
    (Action.REPLACE_COMMIT, State.INFLIGHT, f"{TS}.replacecommit.inflight"),
    (Action.REPLACE_COMMIT, State.COMPLETED, f"{TS}.replacecommit"),
    (Action.COMPACTION, State.REQUESTED, f"{TS}.compaction.requested"),
    (Action.COMPACTION, State.INFLIGHT, f"{TS}.compaction.inflight"),
    (Action.LOG_COMPACTION, State.REQUESTED, f"{TS}.logcompaction.requested"),
    (Action.LOG_COMPACTION, State.INFLIGHT, f"{TS}.logcompaction.inflight"),
    (Action.CLEAN, State.REQUESTED, f"{TS}.clean.requested"),
    (Action.CLEAN, State.INFLIGHT, f"{TS}.clean.inflight"),
    (Action.CLEAN, State.COMPLETED, f"{TS}.clean"),
    (Action.ROLLBACK, State.REQUESTED, f"{TS}.rollback.requested"),
    (Action.ROLLBACK, State.INFLIGHT, f"{TS}.rollback.inflight"),
    (Action.ROLLBACK, State.COMPLETED, f"{TS}.rollback"),
    (Action.SAVEPOINT, State.INFLIGHT, f"{TS}.savepoint.inflight"),
    (Action.SAVEPOINT, State.COMPLETED, f"{TS}.savepoint"),
])
def test_file_names_and_parse_back(action, state, name):
    inst = Instant(TS, action, state)
    assert inst.file_name == name
    assert parse_instant_file(name) == inst


def test_compaction_completes_as_commit():
    req = Instant(TS, Action.COMPACTION, State.REQUESTED)
    inflight = req.with_state(State.INFLIGHT)
    assert inflight == Instant(TS, Action.COMPACTION, State.INFLIGHT)
    done = inflight.with_state(State.COMPLETED)
    assert done == Instant(TS, Action.COMMIT, State.COMPLETED)
    assert done.file_name == f"{TS}.commit"


def test_log_compaction_completes_as_deltacommit():
    done = Instant(TS, Action.LOG_COMPACTION, State.INFLIGHT).with_state(State.COMPLETED)
    assert done == Instant(TS, Action.DELTA_COMMIT, State.COMPLETED)
    assert done.file_name == f"{TS}.deltacommit"


def test_other_actions_keep_their_action_when_completing():
    for action in (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.CLEAN, Action.ROLLBACK):
        assert Instant(TS, action, State.INFLIGHT).with_state(State.COMPLETED).action is action


def test_legacy_commit_inflight_name_parses():
    assert parse_instant_file(f"{TS}.commit.inflight") == Instant(TS, Action.COMMIT, State.INFLIGHT)


def test_fourteen_digit_instants():
    assert parse_instant_file("20250331030642.commit") == Instant("20250331030642", Action.COMMIT)


@pytest.mark.parametrize("name", [
    "hoodie.properties", "archived", ".temp", ".aux", ".schema", ".heartbeat", "metadata",
    f"{TS}.unknownaction", f"{TS}.commit.done", f"{TS}", f".{TS}.commit.crc", f"{TS}.commit.crc",
    "2025.commit", f"{TS}.COMMIT", f"x{TS}.commit", f"{TS}.commit.requested.tmp",
])
def test_non_instant_names(name):
    assert parse_instant_file(name) is None


def test_states_and_ordering():
    a = Instant("20250101000000000", Action.COMMIT, State.REQUESTED)
    b = Instant("20250101000000001", Action.CLEAN)
    assert a.is_pending and not a.is_completed
    assert b.is_completed and not b.is_pending
    assert sorted([b, a]) == [a, b]
    assert str(b) == "[20250101000000001__clean__COMPLETED]"


def test_instant_file_names_cover_every_state():
    assert instant_file_names(TS, Action.COMMIT) == [
        f"{TS}.commit.requested", f"{TS}.inflight", f"{TS}.commit", f"{TS}.commit.inflight"]
    assert instant_file_names(TS, Action.DELTA_COMMIT) == [
        f"{TS}.deltacommit.requested", f"{TS}.deltacommit.inflight", f"{TS}.deltacommit"]
    assert instant_file_names(TS, Action.COMPACTION) == [
        f"{TS}.compaction.requested", f"{TS}.compaction.inflight", f"{TS}.commit"]
