"""The timeline a writer's commit leaves (`ActiveTimeline.with_completed`) stands for a listing in the
cleaner and archival's check after the commit, and archival's leftovers check reads the archive once per
table and process until an instant file disappears (services/archival.archival_due)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.services import archival
from pyhudi.services.archival_plan import load_groups
from pyhudi.storage import Storage
from pyhudi.timeline.history import HistoryInstant
from pyhudi.timeline.history_writer import append_history
from pyhudi.timeline.instant import Action
from pyhudi.timeline.timeline import ActiveTimeline
from tests.unit import test_archival as v1
from tests.unit import test_archival_1x as v2


def _opts(op: str, version: str) -> dict[str, str]:
    return {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "k",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
            "hoodie.datasource.write.operation": op, "hoodie.write.table.version": version,
            "hoodie.cleaner.commits.retained": "1"}


def _groups(groups: list[Any]) -> list[tuple[str, tuple[Any, ...]]]:
    return [(g.timestamp, g.files) for g in groups]


@pytest.mark.parametrize("version", ["6", "9"])
def test_the_timeline_a_commit_leaves_is_what_a_listing_shows(tmp_path: Path, version: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Inserts, upserts and their cleans: after each commit the timeline handed to the cleaner equals a
    fresh listing's in instants, files, completion times and archival's groups; the one handed to archival
    too, but for the clean the cleaner may have completed since (it adds no commit)."""
    from pyhudi.services import clean as cleaner

    uri = str(tmp_path / "t")
    handed: dict[str, list[ActiveTimeline | None]] = {"clean": [], "archival": []}

    def same(given: ActiveTimeline | None, what: str) -> None:
        assert given is not None, what
        listed = ActiveTimeline.load(Storage(uri))
        if what == "archival":  # the clean made after the commit is the only difference allowed
            last = given.instants[-1].timestamp
            listed = listed.reload()
            assert all(i.action.value == "clean" for i in listed.instants if i.timestamp > last), listed
            assert [i for i in listed.instants if i.timestamp <= last] == list(given.instants)
            assert _groups(load_groups(Storage(uri), given)) == \
                [g for g in _groups(load_groups(Storage(uri))) if g[0] <= last]
            return
        assert given.instants == listed.instants
        assert {ts: given.instant_files(ts) for ts in given.timestamps()} == \
            {ts: listed.instant_files(ts) for ts in listed.timestamps()}
        assert given.completion_times() == listed.completion_times()
        assert given.compaction_commits == listed.compaction_commits
        assert _groups(load_groups(Storage(uri), given)) == _groups(load_groups(Storage(uri)))

    real_clean, real_archival = cleaner.clean, archival.archive_after_commit

    def clean_spy(*args: Any, timeline: ActiveTimeline | None = None, **kw: Any) -> Any:
        handed["clean"].append(timeline)
        same(timeline, "clean")
        return real_clean(*args, timeline=timeline, **kw)

    def archival_spy(storage: Storage, cfg: Any, timeline: ActiveTimeline | None = None) -> None:
        handed["archival"].append(timeline)
        same(timeline, "archival")
        real_archival(storage, cfg, timeline)

    monkeypatch.setattr(cleaner, "clean", clean_spy)
    monkeypatch.setattr(archival, "archive_after_commit", archival_spy)
    for step, op in enumerate(["insert", "upsert", "upsert", "insert", "upsert"]):
        keys = ["a", "b", f"n{step}"] if op == "upsert" or step == 0 else [f"m{step}", f"n{step}"]
        rows = pa.table({"k": keys, "p": ["x", "y", "x"][:len(keys)], "ts": [step] * len(keys)})
        pyhudi.write(rows, uri, _opts(op, version))
        assert len(handed["clean"]) == len(handed["archival"]) == step + 1
    timeline = ActiveTimeline.load(Storage(uri))
    assert timeline.actions(Action.CLEAN).completed(), "the cleaner ran"
    assert pyhudi.read(uri).num_rows == 8  # a, b, n0-n4, m3


def test_leftovers_check_reads_the_archive_until_an_instant_file_goes(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Layout 1: the archive is listed once while the timeline only grows; an interrupted run of another
    process (it deleted the oldest instant's files) is seen at the next check and finished."""
    table = v1.ArchTable(tmp_path / "t")
    table.commits(1, 31)
    assert v1.run(table) is not None and len(table.active_ts()) == 20
    listed: list[str] = []  # the leftovers checks that read the archive
    real = archival._archive_leftovers

    def counting(storage: Storage, config: Any, groups: Any) -> bool:
        listed.append(storage.base_uri)
        return real(storage, config, groups)

    monkeypatch.setattr(archival, "_archive_leftovers", counting)
    assert not archival.archival_due(table.storage, table.config, v1.KEEP)
    table.commits(32, 32)
    assert not archival.archival_due(table.storage, table.config, v1.KEEP)
    assert len(listed) == 1, listed
    with monkeypatch.context() as m:  # another process: its run does not reset this process's check
        m.setattr(archival, "_forget_check", lambda uri: None)
        table.commits(33, 42)
        v1.crash_at(m, "archival.mid_delete")
        with pytest.raises(v1.Crash):
            v1.run(table)
    assert len(table.active_ts()) == 30  # no more than hoodie.keep.max.commits: only the leftovers tell
    assert archival.archival_due(table.storage, table.config, v1.KEEP) and len(listed) == 2
    result = v1.run(table)
    assert result is not None and result.recovered
    assert len(table.active_ts()) == 20
    assert not archival.archival_due(table.storage, table.config, v1.KEEP)
    assert len(listed) == 3, "this process archived: the next check reads the archive again"


def test_leftovers_in_history_are_seen_once_an_instant_file_goes(tmp_path: Path) -> None:
    """Layout 2: a check that found nothing is not repeated while the timeline only grows; once a run
    elsewhere wrote the history and deleted the oldest instant's pending files, the next check finds it."""
    table = v2.V2Table(tmp_path / "t")
    table.commits(1, 3)
    assert not archival.archival_due(table.storage, table.config, v2.KEEP)
    completed = table.timeline / f"{v2.C(1)}_{v2.done(v2.C(1))}.commit"
    append_history(table.storage, v2.HISTORY, [HistoryInstant(v2.C(1), v2.done(v2.C(1)), "commit",
                                                               completed.read_bytes())])
    (table.timeline / f"{v2.C(1)}.inflight").unlink()
    (table.timeline / f"{v2.C(1)}.commit.requested").unlink()
    assert archival.archival_due(table.storage, table.config, v2.KEEP)
    result = v2.run(table)
    assert result is not None and [i.timestamp for i in result.recovered] == [v2.C(1)]
    assert not archival.archival_due(table.storage, table.config, v2.KEEP)


def test_a_handed_timeline_showing_a_pending_clean_is_listed_again(tmp_path: Path) -> None:
    """The cleaner takes a handed timeline only when it shows no pending clean: one it shows may have been
    completed since (here by another clean of this process), and must not be executed a second time."""
    from pyhudi.services import clean as cleaner

    table = v1.ArchTable(tmp_path / "t")
    table.commits(1, 3)
    table.clean(v1.X(3), v1.C(2), state="requested")
    handed = ActiveTimeline.load(table.storage)
    assert [i.timestamp for i in handed.actions(Action.CLEAN).pending()] == [v1.X(3)]
    first = cleaner.clean(table.storage, table.config, v1.CleanConfig(commits_retained=2))
    assert [r.instant for r in first][:1] == [v1.X(3)]
    again = cleaner.clean(table.storage, table.config, v1.CleanConfig(commits_retained=2), timeline=handed)
    assert v1.X(3) not in [r.instant for r in again]
    names = [n for n in table.names() if n.startswith(v1.X(3))]
    assert sorted(names) == sorted(f"{v1.X(3)}.clean{s}" for s in ("", ".inflight", ".requested")), names
