"""Hudi 1.x archival rules (TimelineArchiverV2) on hand-made layout-2 timelines, no Spark.

Instant files are laid out as Hudi 1.x writes them in `.hoodie/timeline/` (completed names
`<requested>_<completion>.<action>`, empty `.requested`, clean/compaction/clustering plans in Avro); commit
metadata is legacy JSON, which 1.x reads too and the archiver copies byte for byte. Data files are tiny
stand-ins named like Hudi's (the archiver's storage checks look at names only).
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import fastavro
import pyarrow.parquet as pq
import pytest

from pyhudi import faults
from pyhudi.faults import InjectedFault
from pyhudi.model import avro_models as am
from pyhudi.model.commit_metadata import CommitMetadata
from pyhudi.model.instant_time import ms_to_instant, zone
from pyhudi.model.table_config import COW, MOR, SIMPLE_KEYGEN, TableConfig, save_table_config
from pyhudi.model.write_stat import WriteStat
from pyhudi.services import archival
from pyhudi.services.archival import archival_due, archive, dry_run
from pyhudi.storage import Storage
from pyhudi.timeline.history import HistoryInstant, latest_snapshot, read_history
from pyhudi.timeline.history_writer import append_history
from pyhudi.writer.config import ArchivalConfig, CleanConfig, CompactionConfig

KEEP = ArchivalConfig(max_commits=4, min_commits=3)
NO_CLEANER = CleanConfig(automatic=False, commits_retained=2)
HISTORY = ".hoodie/timeline/history"
PART = "p=a"


def C(n: int) -> str:
    """The n-th commit's requested time; other instants sit between commits (C(n) < X(n) < C(n + 1))."""
    return f"2025010100{10 * n:05d}00"


def X(n: int, offset: int = 5) -> str:
    return f"2025010100{10 * n + offset:05d}00"


def done(ts: str) -> str:
    """The completion time of instant `ts` (a little after it, before the next instant)."""
    return ts[:-2] + "42"


class V2Table:
    """A layout-2 (table version 9) table with instant files written by hand."""

    def __init__(self, root: Path, table_type: str = COW, archive_folder: str = "archived", **props: str) -> None:
        self.root = root
        self.storage = Storage(str(root))
        self.config = TableConfig(name="t", table_type=table_type, record_key_fields=("id",), partition_fields=("p",),
                                  hive_style_partitioning=True, keygen_class=SIMPLE_KEYGEN, version=9,
                                  layout_version=2, archive_folder=archive_folder, raw=dict(props))
        save_table_config(self.storage, self.config)
        self.timeline = root / ".hoodie" / "timeline"
        (self.timeline / "history").mkdir(parents=True, exist_ok=True)

    def put(self, name: str, data: bytes = b"") -> None:
        (self.timeline / name).write_bytes(data)

    def avro(self, name: str, schema: str, record: dict[str, Any]) -> None:
        self.put(name, am.write_instant_avro(schema, record))

    def write(self, ts: str, action: str = "commit", state: str = "completed", files: tuple[str, ...] = (),
              replaced: dict[str, list[str]] | None = None, pending: str | None = None, prev: str = "null") -> None:
        """A write instant whose stats name base files `files` (file ids) in PART, created on disk."""
        meta = CommitMetadata(operation_type="UPSERT" if replaced is None else "INSERT_OVERWRITE")
        for fid in files:
            name = self.base(fid, ts)
            meta.add(WriteStat(file_id=fid, path=f"{PART}/{name}", partition_path=PART, prev_commit=prev,
                               num_writes=1, total_write_bytes=10, file_size_in_bytes=10))
        if replaced is not None:
            meta.partition_to_replace_file_ids = replaced
        pending = pending or action
        self.put(f"{ts}.{pending}.requested")
        if state != "requested":
            self.put(f"{ts}.inflight" if pending == "commit" else f"{ts}.{pending}.inflight")
        if state == "completed":
            self.put(f"{ts}_{done(ts)}.{action}", meta.to_bytes())

    def commits(self, first: int, last: int, action: str = "commit") -> None:
        for n in range(first, last + 1):
            self.write(C(n), action)

    def base(self, fid: str, ts: str) -> str:
        folder = self.root / PART
        folder.mkdir(exist_ok=True)
        (folder / ".hoodie_partition_metadata").touch()
        name = f"{fid}_0-1-1_{ts}.parquet"
        (folder / name).write_bytes(b"x" * 10)
        return name

    def clean(self, ts: str, retained: str, state: str = "completed", extra: dict[str, str] | None = None) -> None:
        plan = am.cleaner_plan(policy="KEEP_LATEST_COMMITS", file_paths_to_be_deleted_per_partition={},
                               earliest_instant_to_retain=am.action_instant(retained, "commit"),
                               last_completed_commit_timestamp=retained)
        data = _plan_with_extra_metadata(plan, extra) if extra else am.write_instant_avro("HoodieCleanerPlan", plan)
        self.put(f"{ts}.clean.requested", data)
        if state != "requested":
            self.put(f"{ts}.clean.inflight", data)
        if state == "completed":
            self.avro(f"{ts}_{done(ts)}.clean", "HoodieCleanMetadata", am.clean_metadata(
                start_clean_time=ts, earliest_commit_to_retain=retained, partition_metadata={}))

    def rollback(self, ts: str, target: str, partitions: tuple[str, ...] = ()) -> None:
        self.avro(f"{ts}.rollback.requested", "HoodieRollbackPlan", am.rollback_plan(
            instant_to_rollback=am.instant_info(target, "commit"), rollback_requests=[]))
        self.put(f"{ts}.rollback.inflight")
        self.avro(f"{ts}_{done(ts)}.rollback", "HoodieRollbackMetadata", am.rollback_metadata(
            start_rollback_time=ts, instants_rollback=[am.instant_info(target, "commit")],
            partition_metadata={p: am.rollback_partition_metadata(partition_path=p, success_delete_files=[],
                                                                  failed_delete_files=[]) for p in partitions}))

    def savepoint(self, ts: str) -> None:
        self.put(f"{ts}.savepoint.inflight")
        self.avro(f"{ts}_{done(ts)}.savepoint", "HoodieSavepointMetadata", am.savepoint_metadata(
            savepointed_by="me", comments="", latest_files={PART: []}, savepointed_at=1))

    def compaction(self, ts: str, base: str, completed: bool = True) -> None:
        plan = am.compaction_plan(operations=[am.compaction_operation(
            base_instant_time=base, file_id="g", partition_path=PART, delta_file_paths=[f".g_{base}.log.1_0-1-1"])])
        self.avro(f"{ts}.compaction.requested", "HoodieCompactionPlan", plan)
        if completed:
            self.put(f"{ts}.compaction.inflight")
            self.put(f"{ts}_{done(ts)}.commit", CommitMetadata(compacted=True, operation_type="COMPACT").to_bytes())

    def names(self) -> list[str]:
        return sorted(n for n in os.listdir(self.timeline) if n[0].isdigit())

    def active(self) -> set[str]:
        return {n.split(".")[0].split("_")[0] for n in self.names()}

    def history(self) -> list[HistoryInstant]:
        return read_history(self.storage, HISTORY)


def _plan_with_extra_metadata(plan: dict[str, Any], extra: dict[str, str]) -> bytes:
    """A cleaner plan with Hudi 1.x's extraMetadata (savepointed_timestamps), which 0.x's schema lacks."""
    schema = am.avro_schema("HoodieCleanerPlan")
    schema["fields"].append({"name": "extraMetadata", "type": ["null", {"type": "map", "values": "string"}],
                             "default": None})
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), [dict(plan, extraMetadata=extra)])
    return out.getvalue()


@pytest.fixture
def table(tmp_path: Path) -> V2Table:
    return V2Table(tmp_path / "t")


def run(t: V2Table, cfg: ArchivalConfig = KEEP, clean: CleanConfig = NO_CLEANER,
        compaction: CompactionConfig | None = None) -> archival.ArchiveResult | None:
    return archive(t.storage, t.config, cfg, clean, None, compaction)


def archived(t: V2Table) -> list[str]:
    return [h.instant_time for h in t.history()]


# --------------------------------------------------------------------------- counts
def test_nothing_up_to_keep_max_then_down_to_keep_min(table: V2Table) -> None:
    table.commits(1, 4)
    assert run(table) is None and not (table.timeline / "history" / "_version_").exists()
    table.commits(5, 5)
    result = run(table)
    assert result is not None and archived(table) == [C(1), C(2)]
    assert table.active() == {C(3), C(4), C(5)}
    assert result.archive_file == f"{HISTORY}/{C(1)}_{C(2)}_0.parquet"
    assert run(table) is None


def test_history_rows_carry_completion_time_metadata_and_plans(table: V2Table) -> None:
    table.commits(1, 1)
    table.clean(X(1), C(1))
    table.compaction(C(2), C(1))
    table.write(C(3), "replacecommit", pending="clustering")
    table.put(f"{C(3)}.clustering.requested", b"clustering plan")  # non-empty requested, empty inflight
    table.write(C(4), "replacecommit", replaced={})
    table.put(f"{C(4)}.replacecommit.inflight", b"inflight profile")
    table.rollback(X(4), "20250101000000000")
    table.commits(5, 8)
    files = {n: (table.timeline / n).read_bytes() for n in table.names()}
    table.clean(X(8), C(7))  # keeps the replacecommits archivable (rule 3c)
    assert run(table) is not None
    rows = {h.instant_time: h for h in table.history()}
    assert list(rows) == [C(1), X(1), C(2), C(3), C(4), X(4), C(5)]
    for ts, row in rows.items():
        (completed,) = [n for n in files if n.startswith(f"{ts}_")]
        assert row.completion_time == done(ts) and completed.endswith(f".{row.action}")
        assert row.metadata == (files[completed] or None)
    assert rows[C(1)].plan is None and rows[C(1)].action == "commit"
    assert rows[X(1)].plan == files[f"{X(1)}.clean.requested"]
    assert rows[C(2)].action == "commit" and rows[C(2)].plan == files[f"{C(2)}.compaction.requested"]
    assert rows[C(3)].action == "replacecommit" and rows[C(3)].plan == b"clustering plan"
    assert rows[C(4)].plan == b"inflight profile"  # the inflight replaces the empty requested
    assert rows[X(4)].action == "rollback" and rows[X(4)].plan is None


def test_a_legacy_completed_name_completes_at_its_modification_time(table: V2Table) -> None:
    table.commits(1, 5)
    os.rename(table.timeline / f"{C(1)}_{done(C(1))}.commit", table.timeline / f"{C(1)}.commit")
    os.utime(table.timeline / f"{C(1)}.commit", (1_700_000_000, 1_700_000_000))
    assert run(table) is not None
    assert table.history()[0].completion_time == ms_to_instant(1_700_000_000_000, zone(True))


# --------------------------------------------------------------------------- bounds
def test_oldest_pending_write_keeps_the_commit_before_it(table: V2Table) -> None:
    table.commits(1, 3)
    table.write(C(4), state="inflight")
    table.commits(5, 8)
    # (By commits, the cleaner's earliest retained commit is capped at C3 too, which raises the keep limits
    # to 6-7 commits: rule 1. By file versions there is none.)
    assert dry_run(table.storage, table.config, KEEP, NO_CLEANER).groups == []
    plan = dry_run(table.storage, table.config, KEEP, CleanConfig(automatic=False, policy="KEEP_LATEST_FILE_VERSIONS"))
    assert [g.timestamp for g in plan.groups] == [C(1), C(2)]
    assert "oldest pending write" in (plan.stopped_by or "")


def test_pending_clean_rollback_restore_and_indexing_do_not_stop_archival(table: V2Table) -> None:
    """Only the write timeline's pending instants bound archival; other actions are never archived."""
    table.commits(1, 1)
    table.clean(X(1), C(1), state="inflight")
    table.put(f"{X(1, 7)}.indexing.requested")
    table.put(f"{X(1, 7)}.indexing.inflight")
    table.put(f"{X(1, 7)}_{done(X(1, 7))}.indexing")
    table.put(f"{X(2)}.restore.requested")
    table.put(f"{X(2)}.restore.inflight")
    table.put(f"{X(2)}_{done(X(2))}.restore")
    table.commits(2, 7)
    assert run(table) is not None
    assert archived(table) == [C(1), C(2), C(3), C(4)]
    assert {X(1), X(1, 7), X(2)} <= table.active()  # left behind, as Hudi 1.x leaves them


def test_cleans_and_rollbacks_go_only_before_the_last_archived_commit(table: V2Table) -> None:
    table.commits(1, 2)
    table.clean(X(1), C(1))
    table.rollback(X(2), "20250101000000000")
    table.commits(3, 6)
    table.clean(X(6), C(5))
    assert run(table) is not None
    assert archived(table) == [C(1), X(1), C(2), X(2), C(3)]  # X(6) is newer than C(3)
    assert X(6) in table.active()


def test_savepoint_stops_archival_and_stays(table: V2Table) -> None:
    table.commits(1, 8)
    table.savepoint(C(2))
    plan = dry_run(table.storage, table.config, KEEP, NO_CLEANER)
    assert [g.timestamp for g in plan.groups] == [C(1)] and "savepoint" in (plan.stopped_by or "")


def test_mor_keeps_the_delta_commits_the_compaction_trigger_counts(tmp_path: Path) -> None:
    t = V2Table(tmp_path / "mor", MOR)
    t.commits(1, 2, "deltacommit")
    t.compaction(C(3), C(1))
    t.commits(4, 9, "deltacommit")
    t.write(C(10), "deltacommit", state="inflight")  # pending delta commits count (CompactionUtils)
    # Delta commits after the compaction C3: C4..C9 and the pending C10 (it counts too); the newest 5 of
    # them (C6..C10) stay, so C1..C5 go (not counting C10 would let C5's bound be C5).
    plan = dry_run(t.storage, t.config, KEEP, NO_CLEANER, CompactionConfig(max_delta_commits=5))
    assert [g.timestamp for g in plan.groups] == [C(n) for n in range(1, 6)]
    assert "compaction trigger" in (plan.stopped_by or "")
    plan = dry_run(t.storage, t.config, KEEP, NO_CLEANER, CompactionConfig(max_delta_commits=20))
    assert [g.timestamp for g in plan.groups] == [C(1), C(2)]  # fewer than 20 since C3: C3 stays
    # Without a trigger that counts commits only the pending C10 binds (C9 stays), and the keep limit.
    plan = dry_run(t.storage, t.config, KEEP, NO_CLEANER, CompactionConfig(trigger="TIME_ELAPSED"))
    assert [g.timestamp for g in plan.groups] == [C(n) for n in range(1, 7)]


def test_replacecommit_waits_for_a_clean_past_it(table: V2Table) -> None:
    table.commits(1, 2)
    table.write(C(3), "replacecommit", files=("new",), replaced={PART: ["old"]})
    table.commits(4, 8)
    plan = dry_run(table.storage, table.config, KEEP, NO_CLEANER)
    assert [g.timestamp for g in plan.groups] == [C(1), C(2)] and "no clean" in (plan.stopped_by or "")
    table.clean(X(4), C(3))  # retains from the replacecommit itself: it stays
    assert [g.timestamp for g in dry_run(table.storage, table.config, KEEP, NO_CLEANER).groups] == [C(1), C(2)]
    table.clean(X(5), C(5))
    plan = dry_run(table.storage, table.config, KEEP, NO_CLEANER)
    assert C(3) in [g.timestamp for g in plan.groups]


def test_replacecommit_with_replaced_files_still_on_storage_stays(table: V2Table) -> None:
    """pyhudi's extra bound: rule 3c trusts the cleaner; a replaced file left behind keeps the replacecommit."""
    table.write(C(1), files=("old",))
    table.write(C(2), "replacecommit", files=("new",), replaced={PART: ["old"]})
    table.commits(3, 8)
    table.clean(X(8), C(7))
    plan = dry_run(table.storage, table.config, KEEP, NO_CLEANER)
    assert [g.timestamp for g in plan.groups] == [C(1)] and "still on storage" in (plan.stopped_by or "")
    (table.root / PART / f"old_0-1-1_{C(1)}.parquet").unlink()
    assert C(2) in [g.timestamp for g in dry_run(table.storage, table.config, KEEP, NO_CLEANER).groups]


def test_files_a_rollback_left_of_a_failed_write_hold_archival(table: V2Table, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rule 7 under option (b): only a rollback of a write in the range makes archival list data files, in the
    partitions it names; the failed write's file it left keeps the commit before it on the active timeline."""
    table.commits(1, 8)
    table.base("orphan", X(2, 3))
    listed: list[str] = []
    orig = Storage.list_dir
    monkeypatch.setattr(Storage, "list_dir", lambda self, rel: listed.append(rel) or orig(self, rel))
    plan = dry_run(table.storage, table.config, KEEP, NO_CLEANER)  # no rollback: the file has no trace
    assert [g.timestamp for g in plan.groups] == [C(n) for n in range(1, 6)] and PART not in listed
    table.rollback(X(7), X(2, 3), partitions=(PART,))
    plan = dry_run(table.storage, table.config, KEEP, NO_CLEANER)
    assert [g.timestamp for g in plan.groups] == [C(1)] and "never completed" in (plan.stopped_by or "")  # C(2) stays
    assert PART in listed


@pytest.mark.parametrize("cleaned", [False, True])
def test_a_superseded_version_still_there_holds_its_commit(table: V2Table, cleaned: bool) -> None:
    """pyhudi's rule 8, the cleaner on (lagging: async, or hoodie.clean.max.commits > 1): a commit that wrote a
    new version of a file group stays while the version it superseded is on storage, with or without a clean
    on the timeline."""
    table.write(C(1), files=("g",))
    table.write(C(2), files=("g",), prev=C(1))
    table.commits(3, 8)
    if cleaned:
        table.clean(X(1), C(1))
    cleaner = CleanConfig(commits_retained=2)
    plan = dry_run(table.storage, table.config, KEEP, cleaner)
    assert [g.timestamp for g in plan.groups if g.timestamp != X(1)] == [C(1)] and "superseded" in (plan.stopped_by or "")
    (table.root / PART / f"g_0-1-1_{C(1)}.parquet").unlink()
    assert [g.timestamp for g in dry_run(table.storage, table.config, KEEP, cleaner).groups
            if g.timestamp != X(1)] == [C(n) for n in range(1, 6)]


def test_savepoint_named_in_the_clean_plan_holds_replacecommits(table: V2Table) -> None:
    """ClusteringUtils.getEarliestReplacedSavepointInClean: a savepoint the clean kept files for, with a
    replacecommit between it and the plan's earliest retained commit, is the lower bound."""
    table.commits(1, 2)
    table.write(C(3), "replacecommit", replaced={})
    table.commits(4, 8)
    table.clean(X(8), C(7), extra={"savepointed_timestamps": C(2)})
    plan = dry_run(table.storage, table.config, KEEP, CleanConfig(automatic=False, commits_retained=2))
    assert [g.timestamp for g in plan.groups] == [C(1), C(2)] and f"savepoint {C(2)}" in (plan.stopped_by or "")
    by_versions = CleanConfig(automatic=False, policy="KEEP_LATEST_FILE_VERSIONS")
    assert C(3) in [g.timestamp for g in dry_run(table.storage, table.config, KEEP, by_versions).groups]


def test_keep_limits_follow_the_cleaner(tmp_path: Path) -> None:
    """ArchivalUtils.getMinAndMaxInstantsToKeep: the commits after the cleaner's earliest retained one, plus
    two, are kept when that is more than hoodie.keep.min.commits (here KEEP_LATEST_BY_HOURS, one hour
    counted back from the latest commit)."""
    t = V2Table(tmp_path / "t")
    hours = [f"202501010{h}0000000" for h in range(10)]  # one commit an hour
    for ts in hours:
        t.write(ts)
    by_hours = CleanConfig(automatic=False, policy="KEEP_LATEST_BY_HOURS", hours_retained=2)
    plan = dry_run(t.storage, t.config, KEEP, by_hours)
    # Retained from 07:00 (09:00 - 2 h): 2 commits after it, + 2 = 4 kept > min 3.
    assert [g.timestamp for g in plan.groups] == hours[:6]


def test_metadata_table_without_compaction_stops_everything(tmp_path: Path) -> None:
    t = V2Table(tmp_path / "t", **{"hoodie.table.metadata.partitions": "files"})
    t.commits(1, 8)
    mdt = t.root / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    mdt.mkdir(parents=True)
    (mdt / f"{C(1)}_{done(C(1))}.deltacommit").write_bytes(b"")
    plan = dry_run(t.storage, t.config, KEEP, NO_CLEANER)
    assert plan.groups == [] and "no compaction" in (plan.stopped_by or "")
    (mdt / f"{X(3, 1)}_{X(3, 2)}.commit").write_bytes(b"")  # compacted after C3 completed
    plan = dry_run(t.storage, t.config, KEEP, NO_CLEANER)
    assert [g.timestamp for g in plan.groups] == [C(1), C(2), C(3)]


# --------------------------------------------------------------------------- crashes and re-runs
class Crash(Exception):
    pass


@pytest.mark.parametrize("point", ["archival.after_archive_file", "archival.after_pending_deleted",
                                   "archival.mid_delete"])
def test_a_rerun_finishes_without_writing_rows_twice(table: V2Table, monkeypatch: pytest.MonkeyPatch,
                                                     point: str) -> None:
    table.compaction(C(1), "20250101000000000")
    table.commits(2, 8)
    everything = table.active()

    def fault(name: str) -> None:
        if name == point:
            raise Crash(name)

    monkeypatch.setattr(archival, "fault_point", fault)
    with pytest.raises(Crash):
        run(table)
    monkeypatch.undo()
    assert table.active() | set(archived(table)) == everything
    left = [ts for ts in archived(table) if ts in table.active()]
    assert left == [C(n) for n in range(1 if point != "archival.mid_delete" else 2, 6)]
    for ts in table.active():  # a completed file is never deleted before the instant's pending ones
        assert any(n.startswith(f"{ts}_") for n in table.names() if n.startswith(ts))
    if point == "archival.after_pending_deleted":
        assert not [n for n in table.names() if n.startswith(C(1)) and not n.startswith(f"{C(1)}_")]
    assert archival_due(table.storage, table.config, ArchivalConfig(max_commits=30, min_commits=20))
    table.commits(9, 9)  # a commit arrives before the re-run
    result = run(table)
    assert result is not None and [i.timestamp for i in result.recovered] == left
    assert result.records == 1 and result.archive_file == f"{HISTORY}/{C(6)}_{C(6)}_0.parquet"
    assert sorted(archived(table)) == archived(table) and len(set(archived(table))) == len(archived(table))
    assert set(archived(table)) | table.active() == everything | {C(9)}
    assert not archival_due(table.storage, table.config, ArchivalConfig(max_commits=30, min_commits=20))


def test_leftovers_in_history_are_removed_even_below_keep_max(table: V2Table) -> None:
    """Instants a run wrote to the history but did not delete are finished whatever the counts say."""
    table.commits(1, 3)
    completed = table.timeline / f"{C(1)}_{done(C(1))}.commit"
    append_history(table.storage, HISTORY, [HistoryInstant(C(1), done(C(1)), "commit", completed.read_bytes())])
    assert archival_due(table.storage, table.config, KEEP)
    result = run(table)
    assert result is not None and result.archive_file is None and result.records == 0
    assert [i.timestamp for i in result.recovered] == [C(1)] and table.active() == {C(2), C(3)}
    assert archived(table) == [C(1)] and run(table) is None


def test_archivelog_folder_is_ignored(tmp_path: Path) -> None:
    t = V2Table(tmp_path / "t", archive_folder="elsewhere")
    t.commits(1, 5)
    assert run(t) is not None and archived(t) == [C(1), C(2)]
    assert not (t.root / ".hoodie" / "elsewhere").exists()


def test_a_failed_history_compaction_leaves_a_valid_history_and_the_next_round_compacts(
        table: V2Table, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tenth level-0 file triggers LSMTimelineWriter's compaction after the active files are gone; a
    failure before its `_version_` leaves the snapshot of ten files, which the next round compacts."""
    for n in range(9):  # older batches, as earlier runs left them
        ts = f"2024010100{n:05d}00"
        append_history(table.storage, HISTORY, [HistoryInstant(ts, done(ts), "commit", b"m")])
    table.commits(1, 5)
    monkeypatch.setenv(faults.RAISE_ENV, "history.after_manifest@2")  # the first is the batch's own commit
    faults.reset()
    with pytest.raises(InjectedFault):
        run(table)
    monkeypatch.delenv(faults.RAISE_ENV)
    assert table.active() == {C(3), C(4), C(5)}
    assert len(latest_snapshot(table.storage, HISTORY).files) == 10 and len(archived(table)) == 11
    table.commits(6, 7)
    assert run(table) is not None
    names = latest_snapshot(table.storage, HISTORY).names
    assert sorted(int(n.rsplit("_", 1)[1][0]) for n in names) == [0, 1]  # ten merged into level 1, one new
    assert archived(table)[-4:] == [C(1), C(2), C(3), C(4)] and len(archived(table)) == 13
    rows = [r for n in names for r in pq.read_table(table.root / HISTORY / n, columns=["instantTime"]).column(0)
            .to_pylist()]
    assert len(rows) == len(set(rows)) == 13
