"""Timeline archival on hand-made tables (no Spark): the archiver's rules, its archive files, crash
recovery, the archived timeline reader and `pyhudi timeline --archived`.

Instant files are written as Hudi lays them out (empty `.commit.requested`, JSON `.inflight` and
`.commit`, Avro plans and clean/rollback/savepoint metadata); data files are tiny stand-ins named
like Hudi's, since the archiver and the view only look at names.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pyhudi.cli.main import main as cli_main
from pyhudi.config.registry import Options
from pyhudi.errors import InstantNotFoundError, InvalidConfigError
from pyhudi.io.log_format import CorruptBlock, read_blocks
from pyhudi.model import avro_models as am
from pyhudi.model.commit_metadata import CommitMetadata
from pyhudi.model.table_config import MOR, save_table_config
from pyhudi.model.write_stat import WriteStat
from pyhudi.reader.time_travel import check_readable
from pyhudi.services import archival
from pyhudi.services.archival import ArchivalError, archive
from pyhudi.services.archival_plan import load_groups
from pyhudi.storage import Storage
from pyhudi.timeline.archived import ArchivedTimeline, list_archive_files
from pyhudi.timeline.instant import Action, State
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.writer.config import ArchivalConfig, CleanConfig, CompactionConfig, build_write_config
from pyhudi.writer.operation import WriteOperation
from tests.unit._tables import T, Table

KEEP = ArchivalConfig(max_commits=30, min_commits=20)
NO_CLEANER = CleanConfig(automatic=False)
PART = "p=a"


def C(n: int) -> str:
    """Timestamp of the n-th commit; other instants sit between commits (C(n) < X(n) < C(n + 1))."""
    return T(10 * n)


def X(n: int, offset: int = 5) -> str:
    return T(10 * n + offset)


class ArchTable(Table):
    def __init__(self, root: Path, table_type: str = "COPY_ON_WRITE") -> None:
        super().__init__(root, table_type=table_type)
        self.storage = Storage(str(root))
        save_table_config(self.storage, self.config)

    def write(self, ts: str, action: str = "commit", state: str = "completed", files: tuple[str, ...] = (),
              replaced: dict[str, list[str]] | None = None, prev: str = "null") -> None:
        """A write instant whose stats name base files `files` (file ids) in PART, created on disk."""
        meta = CommitMetadata(operation_type="UPSERT" if replaced is None else "INSERT_OVERWRITE")
        for fid in files:
            name = self.base(PART, fid, ts)
            meta.add(WriteStat(file_id=fid, path=f"{PART}/{name}", partition_path=PART, prev_commit=prev,
                               num_writes=1, total_write_bytes=10, file_size_in_bytes=10))
        if replaced is not None:
            meta.partition_to_replace_file_ids = replaced
        self.instant(ts, action, state, meta)

    def commits(self, first: int, last: int, action: str = "commit") -> None:
        for n in range(first, last + 1):
            self.write(C(n), action)

    def avro(self, name: str, schema: str, record: dict[str, Any]) -> None:
        (self.hoodie / name).write_bytes(am.write_instant_avro(schema, record))

    def clean(self, ts: str, retained: str, state: str = "completed") -> None:
        plan = am.cleaner_plan(policy="KEEP_LATEST_COMMITS", file_paths_to_be_deleted_per_partition={},
                               earliest_instant_to_retain=am.action_instant(retained, "commit"),
                               last_completed_commit_timestamp=retained)
        self.avro(f"{ts}.clean.requested", "HoodieCleanerPlan", plan)
        if state != "requested":
            self.avro(f"{ts}.clean.inflight", "HoodieCleanerPlan", plan)
        if state == "completed":
            self.avro(f"{ts}.clean", "HoodieCleanMetadata", am.clean_metadata(
                start_clean_time=ts, earliest_commit_to_retain=retained, partition_metadata={}))

    def rollback(self, ts: str, target: str, partitions: tuple[str, ...] = (), failed: tuple[str, ...] = (),
                 state: str = "completed") -> None:
        """A rollback of `target` naming `partitions` (its files that could not be deleted: `failed`)."""
        self.avro(f"{ts}.rollback.requested", "HoodieRollbackPlan", am.rollback_plan(
            instant_to_rollback=am.instant_info(target, "commit"), rollback_requests=[am.rollback_request(
                partition_path=p, file_id="", latest_base_instant="", files_to_be_deleted=[],
                log_blocks_to_be_deleted={}) for p in partitions]))
        if state == "requested":
            return
        (self.hoodie / f"{ts}.rollback.inflight").write_bytes(b"")
        self.avro(f"{ts}.rollback", "HoodieRollbackMetadata", am.rollback_metadata(
            start_rollback_time=ts, instants_rollback=[am.instant_info(target, "commit")],
            partition_metadata={p: am.rollback_partition_metadata(partition_path=p, success_delete_files=[],
                                                                  failed_delete_files=list(failed))
                                for p in partitions}))

    def savepoint(self, ts: str) -> None:
        (self.hoodie / f"{ts}.savepoint.inflight").write_bytes(b"")
        self.avro(f"{ts}.savepoint", "HoodieSavepointMetadata", am.savepoint_metadata(
            savepointed_by="me", comments="", latest_files={PART: []}, savepointed_at=1))

    def compaction(self, ts: str, base: str, completed: bool = False) -> None:
        plan = am.compaction_plan(operations=[am.compaction_operation(
            base_instant_time=base, file_id="g", partition_path=PART, delta_file_paths=[f".g_{base}.log.1_0-1-1"])])
        self.avro(f"{ts}.compaction.requested", "HoodieCompactionPlan", plan)
        if completed:
            (self.hoodie / f"{ts}.compaction.inflight").write_bytes(b"")
            meta = CommitMetadata(compacted=True, operation_type="COMPACT")
            (self.hoodie / f"{ts}.commit").write_bytes(meta.to_bytes())

    def names(self) -> list[str]:
        return sorted(n for n in os.listdir(self.hoodie) if n[0].isdigit())

    def active_ts(self) -> list[str]:
        return sorted({n.split(".")[0] for n in self.names()})


@pytest.fixture
def table(tmp_path: Path) -> ArchTable:
    return ArchTable(tmp_path / "t")


def run(t: ArchTable, cfg: ArchivalConfig = KEEP, clean: CleanConfig = NO_CLEANER,
        compaction: CompactionConfig | None = None) -> archival.ArchiveResult | None:
    return archive(t.storage, t.config, cfg, clean, None, compaction)


def archived(t: ArchTable) -> ArchivedTimeline:
    return ArchivedTimeline.load(t.storage)


def assert_prefix(t: ArchTable) -> None:
    """Everything archived is older than everything left in `.hoodie/`."""
    arch = [e.timestamp for e in archived(t).entries]
    if arch and t.active_ts():
        assert max(arch) < min(t.active_ts())


# --------------------------------------------------------------------------- counts
def test_nothing_happens_up_to_keep_max(table: ArchTable) -> None:
    table.commits(1, 30)
    assert run(table) is None
    assert list_archive_files(table.storage, ".hoodie/archived") == []
    assert len(table.names()) == 90


def test_trims_to_keep_min_and_records_every_state(table: ArchTable) -> None:
    table.commits(1, 31)
    before = {n: (table.hoodie / n).read_bytes() for n in table.names()}
    result = run(table)
    assert result is not None and [i.timestamp for i in result.archived] == [C(n) for n in range(1, 12)]
    assert result.archive_file == ".hoodie/archived/.commits_.archive.1_1-0-1" and result.records == 33
    assert table.active_ts() == [C(n) for n in range(12, 32)]
    arch = archived(table)
    assert [i.timestamp for i in arch.instants] == [C(n) for n in range(1, 12)]
    assert all(i.action is Action.COMMIT and i.is_completed for i in arch.instants)
    assert len(arch.entries) == 33 and arch.duplicates == 0 and arch.corrupt_blocks == 0
    for ts in (C(1), C(11)):
        assert {e.state for e in arch.entries if e.timestamp == ts} == set(State)
        expected = CommitMetadata.from_bytes(before[f"{ts}.commit"])
        got = arch.commit_metadata(arch.timeline.find(ts))  # type: ignore[arg-type]
        assert got is not None and got.to_json() == expected.to_json()
    assert_prefix(table)


def test_rerun_is_a_no_op(table: ArchTable) -> None:
    table.commits(1, 35)
    assert run(table) is not None
    names = table.names()
    assert run(table) is None
    assert table.names() == names and len(list_archive_files(table.storage, ".hoodie/archived")) == 1


def test_blocks_hold_at_most_the_archival_batch(table: ArchTable) -> None:
    table.commits(1, 31)
    run(table, ArchivalConfig(max_commits=30, min_commits=20, batch=4))
    data = (table.hoodie / "archived" / ".commits_.archive.1_1-0-1").read_bytes()
    blocks = read_blocks(data)
    assert len(blocks) == 9 and not any(isinstance(b, CorruptBlock) for b in blocks)  # ceil(33 / 4)


def test_each_run_writes_a_new_file(table: ArchTable) -> None:
    table.commits(1, 31)
    run(table)
    table.commits(32, 42)
    result = run(table)
    assert result is not None and result.archive_file is not None and result.archive_file.endswith(".archive.2_1-0-1")
    assert [v for v, _ in list_archive_files(table.storage, ".hoodie/archived")] == [1, 2]
    assert len(archived(table).instants) == 22
    assert_prefix(table)


# --------------------------------------------------------------------------- what stops archival
def test_stops_at_the_oldest_pending_instant_keeping_the_commit_before_it(table: ArchTable) -> None:
    table.commits(1, 35)
    (table.hoodie / f"{C(6)}.commit").unlink()  # C(6) is inflight now
    result = run(table)
    assert result is not None and [i.timestamp for i in result.archived] == [C(n) for n in range(1, 5)]
    assert result.stopped_by is not None and "pending" in result.stopped_by
    assert table.active_ts()[:2] == [C(5), C(6)]


def test_a_pending_clean_also_stops_archival(table: ArchTable) -> None:
    table.commits(1, 35)
    table.clean(X(3), C(1), state="inflight")
    result = run(table)
    assert result is not None and [i.timestamp for i in result.archived] == [C(1), C(2)]
    assert C(3) in table.active_ts() and X(3) in table.active_ts()


def test_never_archives_the_first_savepoint_or_after_it(table: ArchTable) -> None:
    table.commits(1, 35)
    table.savepoint(C(8))  # a savepoint carries the timestamp of the commit it saves
    result = run(table)
    assert result is not None and [i.timestamp for i in result.archived] == [C(n) for n in range(1, 8)]
    assert "savepoint" in (result.stopped_by or "")
    assert f"{C(8)}.savepoint" in table.names() and f"{C(8)}.commit" in table.names()


def _cleanable(table: ArchTable, with_old_version: bool) -> None:
    """File group g: versions at C(1) (optional), C(2) and C(30); 35 commits; last clean retained C(6)."""
    for n in range(1, 36):
        files = ("g",) if n in ((1, 2, 30) if with_old_version else (2, 30)) else ()
        table.write(C(n), files=files)
    table.clean(X(16), C(6))


def test_stops_at_the_commit_the_last_clean_retains_while_files_await_cleaning(table: ArchTable) -> None:
    _cleanable(table, with_old_version=True)
    result = run(table, clean=CleanConfig(commits_retained=10))
    assert result is not None and [i.timestamp for i in result.archived] == [C(n) for n in range(1, 6)]
    assert "latest clean" in (result.stopped_by or "")


def test_with_nothing_left_to_clean_the_cleaners_current_retention_applies(table: ArchTable) -> None:
    _cleanable(table, with_old_version=False)
    result = run(table, clean=CleanConfig(commits_retained=10))
    assert result is not None and [i.timestamp for i in result.archived] == [C(n) for n in range(1, 16)]
    assert X(16) in table.active_ts()  # the clean is newer than the first commit kept


def test_without_any_clean_an_enabled_cleaner_does_not_block(table: ArchTable) -> None:
    table.commits(1, 35)
    result = run(table, clean=CleanConfig(commits_retained=10))
    assert result is not None and len(result.archived) == 15


def test_without_a_clean_a_superseded_version_still_there_holds_its_commit(table: ArchTable) -> None:
    """No clean on the timeline: a commit that wrote a new version of a file group stays while the version it
    superseded is on storage (the cleaner, finding no clean, trusts archived commits to have left nothing)."""
    table.write(C(1), files=("g",))
    table.commits(2, 2)
    table.write(C(3), files=("g",), prev=C(1))
    table.commits(4, 35)
    cleaner = CleanConfig(commits_retained=10)
    plan = archival.dry_run(table.storage, table.config, KEEP, cleaner)
    assert [g.timestamp for g in plan.groups] == [C(1), C(2)] and "superseded" in (plan.stopped_by or "")
    (table.root / PART / f"g_0-1-1_{C(1)}.parquet").unlink()  # what the cleaner deletes
    result = run(table, clean=cleaner)
    assert result is not None and [i.timestamp for i in result.archived] == [C(n) for n in range(1, 16)]


def test_stops_at_a_replacecommit_whose_replaced_files_are_still_there(table: ArchTable) -> None:
    table.write(C(1), files=("old",))
    table.commits(2, 4)
    table.write(C(5), "replacecommit", files=("new",), replaced={PART: ["old"]})
    table.commits(6, 35)
    result = run(table)
    assert result is not None and [i.timestamp for i in result.archived] == [C(n) for n in range(1, 5)]
    assert "replacecommit" in (result.stopped_by or "")
    (table.root / PART / f"old_0-1-1_{C(1)}.parquet").unlink()  # the cleaner removed the replaced group
    result = run(table)
    assert result is not None and [i.timestamp for i in result.archived] == [C(n) for n in range(5, 16)]
    assert archived(table).timeline.find(C(5)).action is Action.REPLACE_COMMIT  # type: ignore[union-attr]


def test_keeps_what_a_pending_compaction_needs(tmp_path: Path) -> None:
    table = ArchTable(tmp_path / "m", MOR)
    table.commits(1, 35, "deltacommit")
    table.compaction(X(35), base=C(3))
    result = run(table, compaction=CompactionConfig())
    assert result is not None and [i.timestamp for i in result.archived] == [C(1), C(2)]
    assert "compaction" in (result.stopped_by or "")


def test_keeps_the_delta_commits_the_compaction_trigger_counts(tmp_path: Path) -> None:
    small = ArchivalConfig(max_commits=10, min_commits=2)
    cleaner = CleanConfig(automatic=False, commits_retained=1)
    for name, compaction, kept in (("a", CompactionConfig(max_delta_commits=5), 5),  # the trigger's 5 stay
                                   ("b", CompactionConfig(trigger="TIME_ELAPSED"), 2),
                                   ("c", None, 2)):
        table = ArchTable(tmp_path / name, MOR)
        table.commits(1, 35, "deltacommit")
        result = run(table, small, cleaner, compaction)
        assert result is not None and len(result.archived) == 35 - kept, name


def _listed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every directory the code under test lists (Storage.list_dir)."""
    seen: list[str] = []
    orig = Storage.list_dir

    def spy(self: Storage, rel: str) -> Any:
        seen.append(rel.strip("/"))
        return orig(self, rel)
    monkeypatch.setattr(Storage, "list_dir", spy)
    return seen


@pytest.mark.parametrize("state", ["completed", "requested"])
def test_stops_before_files_a_rollback_left_of_a_write_that_never_completed(
        table: ArchTable, monkeypatch: pytest.MonkeyPatch, state: str) -> None:
    """Option (b): a rollback (completed, or still pending) of a write in the range names the write's partition;
    a file of that write it left behind holds archival back, found by listing that partition only."""
    table.commits(1, 35)
    orphan = table.base(PART, "orphan", X(5, 3))
    table.base("p=other", "live", C(2))
    table.rollback(X(8), X(5, 3), partitions=(PART,), failed=(orphan,), state=state)
    listed = _listed(monkeypatch)
    result = run(table)
    # C(5), the last commit before the orphan, stays: the active timeline must start before it.
    assert result is not None and [i.timestamp for i in result.archived] == [C(n) for n in range(1, 5)]
    assert "never completed" in (result.stopped_by or "")
    assert PART in listed and "p=other" not in listed, listed
    view = table.view()
    assert not view.is_committed(X(5, 3)) and view.is_committed(C(1))


def test_a_restore_that_left_a_file_of_a_write_it_undid_holds_archival(table: ArchTable) -> None:
    """A completed restore names, per instant it rolled back, the partitions of that rollback: a file it left of
    an instant in the range holds archival back like a rollback's."""
    table.commits(1, 35)
    table.base(PART, "orphan", X(5, 3))
    target = am.instant_info(X(5, 3), "commit")
    rollback = am.rollback_metadata(start_rollback_time=X(30, 1), instants_rollback=[target], partition_metadata={
        PART: am.rollback_partition_metadata(partition_path=PART, success_delete_files=[], failed_delete_files=[])})
    (table.hoodie / f"{X(30)}.restore.inflight").write_bytes(b"")
    table.avro(f"{X(30)}.restore", "HoodieRestoreMetadata", am.restore_metadata(
        start_restore_time=X(30), restore_instant_info=[target], rollback_metadata_by_instant={X(5, 3): [rollback]}))
    result = run(table)
    assert result is not None and [i.timestamp for i in result.archived] == [C(n) for n in range(1, 5)]
    assert "never completed" in (result.stopped_by or "")


def test_a_rollback_that_left_nothing_lets_archival_pass(table: ArchTable, monkeypatch: pytest.MonkeyPatch) -> None:
    table.commits(1, 35)
    table.rollback(X(8), X(5, 3), partitions=(PART,))
    listed = _listed(monkeypatch)
    result = run(table)
    assert result is not None and result.stopped_by is None
    assert [i.timestamp for i in result.archived if i.action is Action.COMMIT] == [C(n) for n in range(1, 16)]
    assert listed.count(PART) == 1, listed


def test_without_a_rollback_no_data_file_is_listed(table: ArchTable, monkeypatch: pytest.MonkeyPatch) -> None:
    """What option (b) gives up, written down: a file whose write left no trace in any timeline file (no
    requested or inflight instant, no rollback) is not looked for, so archival passes it. Nothing but the
    timeline is listed."""
    table.commits(1, 35)
    table.base(PART, "no-trace", X(5, 3))
    table.rollback(X(0, 7), X(0, 6), partitions=(PART,))  # a rollback of an instant outside the range
    listed = _listed(monkeypatch)
    result = run(table)
    assert result is not None and result.stopped_by is None
    assert [i.timestamp for i in result.archived if i.action is Action.COMMIT] == [C(n) for n in range(1, 16)]
    assert PART not in listed, listed


def test_stops_before_an_action_it_does_not_archive(table: ArchTable) -> None:
    table.commits(1, 35)
    (table.hoodie / f"{X(4)}.restore").write_bytes(b"")
    result = run(table)
    assert result is not None and [i.timestamp for i in result.archived] == [C(n) for n in range(1, 5)]


def test_cleans_and_rollbacks_older_than_the_first_commit_kept_go_too(table: ArchTable) -> None:
    table.commits(1, 35)
    for n in range(11, 36):
        table.clean(X(n), C(n - 10))
    table.rollback(X(3, 7), X(3, 6))
    result = run(table)
    assert result is not None
    assert {(i.action, i.timestamp) for i in result.archived} == (
        {(Action.COMMIT, C(n)) for n in range(1, 16)} | {(Action.CLEAN, X(n)) for n in range(11, 16)}
        | {(Action.ROLLBACK, X(3, 7))})
    assert X(16) in table.active_ts() and X(15) not in table.active_ts()
    arch = archived(table)
    clean = arch.payload(arch.timeline.find(X(11)))  # type: ignore[arg-type]
    assert clean is not None and clean["earliestCommitToRetain"] == C(1)
    rb = arch.payload(arch.timeline.find(X(3, 7)))  # type: ignore[arg-type]
    assert rb is not None and rb["commitsRollback"] == [X(3, 6)]
    assert_prefix(table)


# --------------------------------------------------------------------------- records
def test_records_are_filled_as_metadata_conversion_utils_does(table: ArchTable) -> None:
    table.commits(1, 2)
    table.compaction(C(3), base=C(1), completed=True)
    table.write(C(4), "replacecommit", replaced={})
    table.clean(X(4), C(1))
    table.commits(5, 35)
    run(table)
    arch = archived(table)
    by_key = {(e.timestamp, e.action, e.state): e.record for e in arch.entries}
    assert by_key[(C(1), "commit", State.REQUESTED)]["hoodieCommitMetadata"] is None  # empty file
    assert by_key[(C(1), "commit", State.INFLIGHT)]["hoodieCommitMetadata"]["operationType"] is None  # "{}"
    done = by_key[(C(1), "commit", State.COMPLETED)]
    assert done["hoodieCommitMetadata"]["operationType"] == "UPSERT" and done["actionState"] == "COMPLETED"
    assert done["hoodieCommitMetadata"]["extraMetadata"] == {"ROLLING_STAT": ""}
    assert done["stateTransitionTime"] is not None and len(done["stateTransitionTime"]) == 17
    plan = by_key[(C(3), "compaction", State.REQUESTED)]["hoodieCompactionPlan"]
    assert plan["operations"][0]["baseInstantTime"] == C(1)
    assert by_key[(C(3), "compaction", State.INFLIGHT)]["hoodieCompactionPlan"] is None
    assert by_key[(C(3), "commit", State.COMPLETED)]["hoodieCommitMetadata"]["operationType"] == "COMPACT"
    assert arch.timeline.is_compaction_commit(arch.timeline.find(C(3)))  # type: ignore[arg-type]
    assert by_key[(C(4), "replacecommit", State.COMPLETED)]["hoodieReplaceCommitMetadata"][
        "partitionToReplaceFileIds"] == {}
    assert by_key[(X(4), "clean", State.REQUESTED)]["hoodieCleanerPlan"]["policy"] == "KEEP_LATEST_COMMITS"
    assert by_key[(X(4), "clean", State.COMPLETED)]["hoodieCleanMetadata"]["earliestCommitToRetain"] == C(1)
    assert all(r["version"] is None for r in by_key.values())


def test_archived_log_stats_are_delta_writes_again(table: ArchTable) -> None:
    meta = CommitMetadata(operation_type="UPSERT")
    log_name = f".g_{C(0)}.log.2_0-1-1"
    meta.add(WriteStat(file_id="g", path=f"{PART}/{log_name}", partition_path=PART, prev_commit=C(0),
                       num_writes=3, log_version=2, log_offset=0, base_file="", log_files=[log_name]))
    table.instant(C(1), "deltacommit", meta=meta)
    table.commits(2, 31, "deltacommit")
    run(table)
    arch = archived(table)
    got = arch.commit_metadata(arch.timeline.find(C(1)))  # type: ignore[arg-type]
    assert got is not None
    (stat,) = got.all_stats()
    assert stat.is_delta and stat.log_version == 2 and stat.prev_commit == C(0) and stat.num_writes == 3


def test_an_unreadable_instant_is_not_archived_and_nothing_is_deleted(table: ArchTable) -> None:
    table.commits(1, 31)
    (table.hoodie / f"{C(3)}.commit").write_bytes(b"{not json")
    names = table.names()
    with pytest.raises(ArchivalError, match="unreadable"):
        run(table)
    assert table.names() == names and list_archive_files(table.storage, ".hoodie/archived") == []


# --------------------------------------------------------------------------- crash safety
class Crash(Exception):
    pass


def crash_at(monkeypatch: pytest.MonkeyPatch, point: str) -> None:
    def fault(name: str) -> None:
        if name == point:
            raise Crash(name)

    monkeypatch.setattr(archival, "fault_point", fault)


def test_crash_after_the_archive_file_is_finished_by_the_next_run(table: ArchTable,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    table.commits(1, 31)
    everything = set(table.active_ts())
    crash_at(monkeypatch, "archival.after_archive_file")
    with pytest.raises(Crash):
        run(table)
    assert set(table.active_ts()) == everything and len(archived(table).instants) == 11  # in both: fine
    monkeypatch.undo()
    table.commits(32, 33)  # more commits arrive before the next run
    result = run(table)
    assert result is not None and [i.timestamp for i in result.recovered] == [C(n) for n in range(1, 12)]
    assert [i.timestamp for i in result.archived] == [C(n) for n in range(1, 14)]
    arch = archived(table)
    assert arch.duplicates == 0 and len(arch.entries) == 39  # the 11 are not written a second time
    assert {i.timestamp for i in arch.instants} | set(table.active_ts()) == everything | {C(32), C(33)}
    assert_prefix(table)


def test_crash_mid_delete_leaves_whole_instants_and_is_finished_later(table: ArchTable,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    table.commits(1, 31)
    everything = set(table.active_ts())
    crash_at(monkeypatch, "archival.mid_delete")
    with pytest.raises(Crash):
        run(table)
    assert C(1) not in table.active_ts() and table.active_ts()[0] == C(2)
    timeline = ActiveTimeline.load(table.storage)
    assert not timeline.pending()  # no inflight without its completed file, ever
    monkeypatch.undo()
    result = run(table)
    assert result is not None and result.archive_file is None  # nothing new to write
    assert [i.timestamp for i in result.recovered] == [C(n) for n in range(2, 12)]
    arch = archived(table)
    assert arch.duplicates == 0 and {i.timestamp for i in arch.instants} | set(table.active_ts()) == everything
    assert run(table) is None


def test_deletes_oldest_first_and_the_completed_file_last(table: ArchTable, monkeypatch: pytest.MonkeyPatch) -> None:
    table.commits(1, 2)
    table.compaction(C(3), base=C(1), completed=True)
    table.commits(4, 31)
    deleted: list[str] = []
    real = Storage.delete

    def spy(self: Storage, rel: str) -> bool:
        if rel.startswith(".hoodie/") and rel.count("/") == 1:
            deleted.append(rel.split("/", 1)[1])
        return real(self, rel)

    monkeypatch.setattr(Storage, "delete", spy)
    run(table)
    order = [n for n in deleted if n[0].isdigit()]
    assert order[:3] == [f"{C(1)}.commit.requested", f"{C(1)}.inflight", f"{C(1)}.commit"]
    assert order[6:9] == [f"{C(3)}.compaction.requested", f"{C(3)}.compaction.inflight", f"{C(3)}.commit"]
    stamps = [n.split(".")[0] for n in order]
    assert stamps == sorted(stamps)


# --------------------------------------------------------------------------- the archived timeline
def test_reader_skips_torn_blocks_and_duplicates(table: ArchTable) -> None:
    table.commits(1, 31)
    run(table, ArchivalConfig(max_commits=30, min_commits=20, batch=10))
    folder = table.hoodie / "archived"
    data = (folder / ".commits_.archive.1_1-0-1").read_bytes()
    blocks = [b for b in read_blocks(data) if not isinstance(b, CorruptBlock)]
    assert len(blocks) == 4
    (folder / ".commits_.archive.2_1-0-1").write_bytes(data)  # a re-run's duplicate
    torn = data[: blocks[1].offset + blocks[1].size // 2]  # block 2 of 4 cut in half, as by a crash
    (folder / ".commits_.archive.3_1-0-1").write_bytes(torn)
    arch = archived(table)
    assert len(arch.entries) == 33 and arch.duplicates == 33 + 10 and arch.corrupt_blocks == 1
    (folder / ".commits_.archive.1_1-0-1").unlink()
    (folder / ".commits_.archive.2_1-0-1").unlink()
    arch = archived(table)
    assert [e.timestamp for e in arch.entries][-1] == C(4) and len(arch.entries) == 10


def test_reads_records_written_with_another_writer_schema(table: ArchTable) -> None:
    """Hudi's blocks carry its own schema: decode with it (a field we lack is simply extra)."""
    from pyhudi.io.log_blocks import encode_avro_records
    from pyhudi.io.log_format import BlockType, HeaderKey, encode_block

    schema = json.loads(am.avro_schema_json("HoodieArchivedMetaEntry"))
    schema["fields"].append({"name": "hoodieIndexPlan", "type": ["null", "string"], "default": None})
    text = json.dumps(schema)
    record = am.archived_meta_entry(commit_time=C(1), action_type="commit")
    record["hoodieIndexPlan"] = None
    block = encode_block(BlockType.AVRO_DATA_BLOCK, {HeaderKey.SCHEMA: text}, encode_avro_records([record], text))
    (table.hoodie / "archived" / ".commits_.archive.1_1-0-1").write_bytes(block)
    arch = archived(table)
    assert [(i.timestamp, i.action, i.state) for i in arch.instants] == [(C(1), Action.COMMIT, State.COMPLETED)]


# --------------------------------------------------------------------------- config, CLI, time travel
def test_keep_min_must_exceed_the_cleaner_retention() -> None:
    from pyhudi.model.table_config import TableConfig

    table_cfg = TableConfig(name="t", record_key_fields=("id",))
    with pytest.raises(InvalidConfigError, match="hoodie.keep.min.commits=10 must be greater than"):
        build_write_config(Options.parse({"hoodie.keep.min.commits": "10", "hoodie.keep.max.commits": "12",
                                          "hoodie.cleaner.commits.retained": "10"}), table_cfg, WriteOperation.INSERT)
    with pytest.raises(InvalidConfigError, match="must be greater than hoodie.keep.min.commits"):
        build_write_config(Options.parse({"hoodie.keep.min.commits": "20", "hoodie.keep.max.commits": "20"}),
                           table_cfg, WriteOperation.INSERT)
    cfg = build_write_config(Options.parse({"hoodie.archive.automatic": "false", "hoodie.archive.async": "true",
                                            "hoodie.commits.archival.batch": "3"}), table_cfg, WriteOperation.INSERT)
    assert (cfg.archival.automatic, cfg.archival.run_async, cfg.archival.batch) == (False, True, 3)
    assert build_write_config(Options.parse({}), table_cfg, WriteOperation.INSERT).archival == ArchivalConfig()


def test_cli_timeline_shows_archived_instants_first(table: ArchTable, capsys: pytest.CaptureFixture[str]) -> None:
    table.commits(1, 31)
    table.clean(X(31), C(21))
    run(table)
    assert cli_main(["timeline", str(table.root), "--archived", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    rows = data["instants"]
    assert [r["archived"] for r in rows] == [True] * 11 + [False] * 21
    assert [r["timestamp"] for r in rows[:11]] == [C(n) for n in range(1, 12)]
    assert rows[0]["operation"] == "UPSERT" and rows[-1]["action"] == "clean"
    assert data["counts"]["archived"] == 11 and data["archive"]["records"] == 33
    assert cli_main(["timeline", str(table.root), "--archived", "--limit", "22"]) == 0
    text = capsys.readouterr().out
    assert "archived: 11 instants in 1 file(s); commit 11" in text
    lines = [ln for ln in text.splitlines() if ln.startswith("2025")]
    assert len(lines) == 22 and " archived " in lines[0] and " archived " not in lines[1]
    assert cli_main(["timeline", str(table.root)]) == 0
    assert "archived" not in capsys.readouterr().out  # without --archived: the active timeline only


def test_time_travel_needs_the_files_archived_commits_wrote(table: ArchTable) -> None:
    table.write(C(1), files=("g",))
    for n in range(2, 36):
        table.write(C(n), files=(f"h{n}",) if n != 30 else ("g",), prev=C(1) if n == 30 else "null")
    run(table)
    assert archived(table).timeline.find(C(1)) is not None
    timeline = ActiveTimeline.load(table.storage)
    check_readable(table.storage, timeline, C(20))  # every file still there
    (table.root / PART / f"g_0-1-1_{C(1)}.parquet").unlink()  # cleaned: only the archive names it
    with pytest.raises(InstantNotFoundError, match=f"earliest instant still readable is {C(30)}"):
        check_readable(table.storage, timeline, C(20))
    check_readable(table.storage, timeline, C(30))
    with pytest.raises(InstantNotFoundError, match="older than the active timeline"):
        check_readable(table.storage, timeline, C(5))


def test_groups_keep_a_savepoint_apart_from_its_commit(table: ArchTable) -> None:
    table.commits(1, 2)
    table.savepoint(C(2))
    groups = load_groups(table.storage)
    assert [(g.timestamp, g.action) for g in groups] == [(C(1), Action.COMMIT), (C(2), Action.COMMIT),
                                                        (C(2), Action.SAVEPOINT)]


def test_automatic_archival_after_a_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pyhudi.services import background

    def config(**opts: str):  # type: ignore[no-untyped-def]
        return build_write_config(Options.parse({"hoodie.keep.max.commits": "30", "hoodie.keep.min.commits": "20",
                                                 **opts}), table_config, WriteOperation.INSERT)

    table = ArchTable(tmp_path / "t")
    table_config = table.config  # every ArchTable has the same identity
    table.commits(1, 31)
    archival.archive_after_commit(table.storage, config(**{"hoodie.archive.automatic": "false"}))
    assert len(table.active_ts()) == 31
    archival.archive_after_commit(table.storage, config(**{"hoodie.archive.async": "true"}))
    assert background.wait(table.storage.base_uri, timeout=60) == []
    assert len(table.active_ts()) == 20
    assert not archival.archival_due(table.storage, table.config, config().archival)

    # An interrupted run with no more than keep.max commits left is still finished after the next commit.
    other = ArchTable(tmp_path / "u")
    other.commits(1, 31)
    crash_at(monkeypatch, "archival.mid_delete")
    with pytest.raises(Crash):
        run(other)
    monkeypatch.undo()
    assert len(other.active_ts()) == 30 and archival.archival_due(other.storage, other.config, KEEP)
    archival.archive_after_commit(other.storage, config())
    assert len(other.active_ts()) == 20 and not archival.archival_due(other.storage, other.config, KEEP)


def test_async_archival_is_queued_again_after_a_commit_that_found_one_running(tmp_path: Path) -> None:
    """A commit whose async archival is refused (one is still running) must not block later ones."""
    import threading

    from pyhudi.services import background

    table = ArchTable(tmp_path / "t")
    table.commits(1, 31)
    cfg = build_write_config(Options.parse({"hoodie.archive.async": "true"}), table.config, WriteOperation.INSERT)
    release = threading.Event()
    assert background.submit(table.storage.base_uri, "archival", lambda: release.wait(30)) is not None
    archival.archive_after_commit(table.storage, cfg)  # refused: an archival job is running
    release.set()
    assert background.wait(table.storage.base_uri, timeout=60) == []
    assert len(table.active_ts()) == 31
    archival.archive_after_commit(table.storage, cfg)  # the next commit's archival runs
    assert background.wait(table.storage.base_uri, timeout=60) == []
    assert len(table.active_ts()) == 20
