"""Clean planning without Spark: the earliest commit to retain and the files each policy deletes.

Tables are hand-made (instant files in `.hoodie/`, tiny data files named like Hudi's); the
planner works from the timeline and file names only. The rules held here are Hudi 0.14/0.15's
(`CleanerUtils.getEarliestCommitToRetain`, `CleanPlanner`), as summarised in
hudi-v6-format.md section 16:

- earliest commit to retain, KEEP_LATEST_COMMITS: the N-th newest completed commit/deltacommit/
  replacecommit/compaction, if there are more than N; if an older instant of those actions (a
  compaction included) is still pending, the last completed one before it instead.
- KEEP_LATEST_BY_HOURS: the first completed instant at or after now - hours. File versions: none.
- per (not replaced) file group, by commits/hours: keep the latest slice, the latest slice older
  than the earliest retained commit, every slice at or after it, and slices a pending compaction
  reads; delete the others, base file and logs together.
- by file versions: keep the newest N slices; a group under pending compaction keeps its
  compaction slices and counts them as one version.
- replaced file groups are left alone until their replacecommit is older than the earliest
  retained commit, then go whole (under file versions: at once).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pyhudi.model import avro_models as am
from pyhudi.model.commit_metadata import CommitMetadata
from pyhudi.model.instant_time import ms_to_instant
from pyhudi.model.table_config import COW, MOR, save_table_config
from pyhudi.model.write_stat import WriteStat
from pyhudi.services.clean_plan import CleanPlanDraft, earliest_commit_to_retain, plan_clean
from pyhudi.storage import Storage
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.builder import build_view
from pyhudi.writer.config import CleanConfig
from tests.unit._tables import T, Table

HOUR_MS = 3600 * 1000
EPOCH_MS = 1_735_689_600_000  # 2025-01-01T00:00:00Z


def H(hours: float) -> str:
    """The instant `hours` after 2025-01-01T00:00:00Z (UTC)."""
    return ms_to_instant(EPOCH_MS + round(hours * HOUR_MS))


def commits(n: int) -> CleanConfig:
    return CleanConfig(policy="KEEP_LATEST_COMMITS", commits_retained=n)


def versions(n: int) -> CleanConfig:
    return CleanConfig(policy="KEEP_LATEST_FILE_VERSIONS", file_versions_retained=n)


class Hand(Table):
    """A hand-made table whose commits name the files they wrote (write stats) and replaced."""

    def __init__(self, root: Path, table_type: str = COW) -> None:
        super().__init__(root, table_type)
        self.storage = Storage(str(root))
        save_table_config(self.storage, self.config)
        self.versions: dict[tuple[str, str], str] = {}  # (partition, fid) -> its latest base file's instant

    def write(self, ts: str, *, bases: tuple = (), logs: tuple = (), replaced: dict | None = None,
              action: str | None = None, state: str = "completed") -> None:
        """A write of `ts`: `bases` (partition, fid) -> `<fid>_0-1-1_<ts>.parquet`, a new version of a group
        this table wrote before naming its previous version in prevCommit, as Hudi's merge handle does; `logs`
        (partition, fid, slice base instant, version) -> `.<fid>_<base>.log.<v>_0-1-1`."""
        op = "INSERT_OVERWRITE" if replaced else "UPSERT"
        meta = CommitMetadata(operation_type=op, extra_metadata={"schema": "{}"},
                              partition_to_replace_file_ids=replaced)
        for part, fid in bases:
            name = self.base(part, fid, ts)
            prev = self.versions.get((part, fid), "null")
            if state == "completed":
                self.versions[(part, fid)] = ts
            meta.add(WriteStat(file_id=fid, path=f"{part}/{name}", partition_path=part, num_writes=1,
                               prev_commit=prev))
        for part, fid, base_ts, version in logs:
            name = self.log(part, fid, base_ts, version)
            meta.add(WriteStat(file_id=fid, path=f"{part}/{name}", partition_path=part, prev_commit=base_ts,
                               num_writes=1, log_version=version, log_offset=0, base_file="", log_files=[name]))
        default = "replacecommit" if replaced else ("deltacommit" if self.config.is_mor else "commit")
        self.instant(ts, action or default, state, meta)

    def compaction(self, ts: str, ops: list[tuple[str, str]], completed: bool = False) -> None:
        """A compaction plan of `ts` over the latest slices of (partition, fid); completed, it also
        writes the new base files and the `.commit`."""
        view = build_view(self.storage, self.config, ActiveTimeline.load(self.storage))
        operations = []
        for part, fid in ops:
            (group,) = [g for g in view.file_groups(part) if g.file_id == fid]
            sl = group.slices[-1]
            operations.append(am.compaction_operation(
                base_instant_time=sl.base_instant, file_id=fid, partition_path=part,
                data_file_path=sl.base_file.name if sl.base_file else None,
                delta_file_paths=[lf.name for lf in sl.log_files], metrics={}))
        plan = am.write_instant_avro("HoodieCompactionPlan", am.compaction_plan(operations=operations))
        (self.hoodie / f"{ts}.compaction.requested").write_bytes(plan)
        if completed:
            (self.hoodie / f"{ts}.compaction.inflight").write_bytes(b"")
            meta = CommitMetadata(compacted=True, operation_type="COMPACT", extra_metadata={"schema": "{}"})
            for part, fid in ops:
                name = self.base(part, fid, ts)
                meta.add(WriteStat(file_id=fid, path=f"{part}/{name}", partition_path=part, num_writes=1,
                                   prev_commit=self.versions.get((part, fid), "null")))
                self.versions[(part, fid)] = ts
            (self.hoodie / f"{ts}.commit").write_bytes(meta.to_bytes())

    def clustering(self, ts: str, groups: list[tuple[str, str]]) -> None:
        """A pending clustering plan over the latest slices of (partition, fid)."""
        view = build_view(self.storage, self.config, ActiveTimeline.load(self.storage))
        slices = []
        for part, fid in groups:
            (group,) = [g for g in view.file_groups(part) if g.file_id == fid]
            sl = group.slices[-1]
            slices.append(am.slice_info(
                file_id=fid, partition_path=part,
                data_file_path=str(self.root / part / sl.base_file.name) if sl.base_file else "",
                delta_file_paths=[str(self.root / part / lf.name) for lf in sl.log_files]))
        plan = am.clustering_plan(input_groups=[am.clustering_group(slices=slices, num_output_file_groups=1)])
        (self.hoodie / f"{ts}.replacecommit.requested").write_bytes(
            am.write_instant_avro("HoodieRequestedReplaceMetadata", am.requested_replace_metadata(clustering_plan=plan)))

    def timeline(self) -> ActiveTimeline:
        return ActiveTimeline.load(self.storage)

    def plan(self, cfg: CleanConfig, now: str | None = None) -> CleanPlanDraft:
        return plan_clean(self.storage, build_view(self.storage, self.config, self.timeline()), cfg, now=now)

    def deleted(self, cfg: CleanConfig, now: str | None = None) -> set[str]:
        draft = self.plan(cfg, now)
        assert all(f.reason for f in draft.files), "every file to delete has a reason"
        names = [f.path for f in draft.files]
        assert len(names) == len(set(names)), f"a file is planned twice: {names}"
        return set(names)


def B(part: str, fid: str, ts: str) -> str:
    return f"{part}/{fid}_0-1-1_{ts}.parquet"


def L(part: str, fid: str, base_ts: str, version: int) -> str:
    return f"{part}/.{fid}_{base_ts}.log.{version}_0-1-1"


# ---------------------------------------------------------------------------------------------------------
# Earliest commit to retain
# ---------------------------------------------------------------------------------------------------------

def test_earliest_by_commits_is_the_nth_newest_completed_write(tmp_path):
    t = Hand(tmp_path / "t", MOR)
    t.write(T(1), bases=(("p=a", "f1"),))
    t.write(T(2), logs=(("p=a", "f1", T(1), 1),))
    t.compaction(T(3), [("p=a", "f1")], completed=True)  # completes as .commit: a candidate
    t.instant(T(4), "clean")  # cleans and rollbacks are no candidates
    t.write(T(5), logs=(("p=a", "f1", T(3), 1),))
    t.instant(T(6), "rollback")
    t.write(T(7), bases=(("p=a", "f2"),), replaced={"p=a": ["f1"]})
    timeline = t.timeline()
    got = {n: earliest_commit_to_retain(timeline, commits(n)) for n in (1, 2, 3, 4, 5)}
    assert {n: i.timestamp if i else None for n, i in got.items()} == {
        1: T(7), 2: T(5), 3: T(3), 4: T(2), 5: None}, "N-th newest of 5 candidates; none unless more than N"
    assert got[3] is not None and got[3].action.value == "commit", "a completed compaction is a commit"
    assert earliest_commit_to_retain(timeline, versions(1)) is None


@pytest.mark.parametrize("pending", ["commit", "deltacommit", "replacecommit", "compaction"])
def test_earliest_is_capped_by_the_oldest_pending_write_or_compaction(tmp_path, pending):
    t = Hand(tmp_path / "t", MOR)
    t.write(T(1), bases=(("p=a", "f1"),))
    t.write(T(2), bases=(("p=a", "f2"),))
    if pending == "compaction":
        t.write(T(3), logs=(("p=a", "f1", T(1), 1),))
        t.compaction(T(4), [("p=a", "f1")])  # requested only
    else:
        t.write(T(3), bases=(("p=a", "f3"),))
        t.instant(T(4), pending, "inflight" if pending != "replacecommit" else "requested")
    for n in (5, 6, 7):
        t.write(T(n), bases=(("p=a", f"g{n}"),))
    timeline = t.timeline()
    # Completed: T1 T2 T3 T5 T6 T7. N=2 -> T6, which is after the pending T4: cap to T3.
    assert earliest_commit_to_retain(timeline, commits(2)).timestamp == T(3)
    # N=5 -> T2, older than the pending instant: no cap.
    assert earliest_commit_to_retain(timeline, commits(5)).timestamp == T(2)


def test_pending_clean_or_rollback_do_not_cap_and_a_pending_first_write_retains_nothing(tmp_path):
    t = Hand(tmp_path / "t")
    for n in (2, 3, 4):
        t.write(T(n), bases=(("p=a", f"f{n}"),))
    t.instant(T(5), "clean", "requested")
    t.instant(T(6), "rollback", "inflight")
    t.write(T(7), bases=(("p=a", "f7"),))
    assert earliest_commit_to_retain(t.timeline(), commits(2)).timestamp == T(4)
    t.instant(T(1), "commit", "inflight")  # older than every completed write
    assert earliest_commit_to_retain(t.timeline(), commits(2)) is None, \
        "no completed instant before the pending one: nothing can be cleaned"


def test_earliest_by_hours_is_the_first_completed_at_or_after_now_minus_hours(tmp_path):
    t = Hand(tmp_path / "t")
    for i, h in enumerate((0, 1, 2, 3.5, 5)):
        t.write(H(h), bases=(("p=a", f"f{i}"),))
    t.instant(H(1.5), "commit", "inflight")  # the hours policy has no pending cap
    timeline = t.timeline()
    by_hours = CleanConfig(policy="KEEP_LATEST_BY_HOURS", hours_retained=3)
    assert earliest_commit_to_retain(timeline, by_hours, now=H(5)).timestamp == H(2), "exactly now - 3h counts"
    assert earliest_commit_to_retain(timeline, by_hours, now=H(5.5)).timestamp == H(3.5)
    assert earliest_commit_to_retain(timeline, by_hours, now=H(4)).timestamp == H(1)
    assert earliest_commit_to_retain(timeline, by_hours, now=H(9)) is None, "nothing in the window"
    # The plan uses it: with E = 3.5h only slices older than it may go (none share a group here).
    assert t.plan(by_hours, now=H(5.5)).earliest_to_retain.timestamp == H(3.5)


# ---------------------------------------------------------------------------------------------------------
# Files to delete
# ---------------------------------------------------------------------------------------------------------

def test_by_commits_keeps_latest_the_one_before_and_all_after_the_earliest_retained(tmp_path):
    t = Hand(tmp_path / "t")
    t.write(T(1), bases=(("p=a", "A"), ("p=a", "B"), ("p=b", "C")))
    t.write(T(2), bases=(("p=a", "A"), ("p=b", "C")))
    t.write(T(3), bases=(("p=a", "A"),))
    t.write(T(4), bases=(("p=a", "A"), ("p=b", "D")))
    t.write(T(5), bases=(("p=a", "A"),))
    # E = T4 (N=2). A: keep T5 (latest), T4 (>= E), T3 (latest before E); delete T1, T2.
    # B: one slice, kept. C: latest T2 is also the one before E; T1 goes. D: kept.
    assert t.deleted(commits(2)) == {B("p=a", "A", T(1)), B("p=a", "A", T(2)), B("p=b", "C", T(1))}
    # E = T2 (N=4): A keeps T2.. and T1 (before E); nothing goes.
    assert t.deleted(commits(4)) == set()
    # Not more commits than N: nothing to clean.
    assert t.deleted(commits(5)) == set() and t.plan(commits(5)).earliest_to_retain is None


def test_by_commits_deletes_mor_slices_with_their_logs_and_keeps_pending_compaction_input(tmp_path):
    t = Hand(tmp_path / "t", MOR)
    t.write(T(1), bases=(("p=a", "F"), ("p=a", "G")))
    t.write(T(2), logs=(("p=a", "F", T(1), 1), ("p=a", "G", T(1), 1)))
    t.compaction(T(3), [("p=a", "F"), ("p=a", "G")], completed=True)
    t.write(T(4), logs=(("p=a", "F", T(3), 1), ("p=a", "G", T(3), 1)))
    t.write(T(5), logs=(("p=a", "F", T(3), 2),))
    t.compaction(T(6), [("p=a", "G")], completed=True)
    t.write(T(7), logs=(("p=a", "G", T(6), 1),))
    t.compaction(T(8), [("p=a", "F")])  # pending: reads F's slice T3 (base + 2 logs)
    t.write(T(9), logs=(("p=a", "F", T(8), 1), ("p=a", "G", T(6), 2)))
    draft = t.plan(commits(1))
    # Completed: T1 T2 T3 T4 T5 T6 T7 T9; N=1 -> T9, capped by the pending compaction T8 -> T7.
    assert draft.earliest_to_retain.timestamp == T(7)
    # F: slices T1, T3 (the pending compaction's input, also the latest before T7), T8 (logs only).
    # T1 goes with its log; T3 and T8 stay.
    # G: slices T1, T3, T6 (latest). Before T7: T6. T1 and T3 go, each with its logs.
    assert t.deleted(commits(1)) == {
        B("p=a", "F", T(1)), L("p=a", "F", T(1), 1),
        B("p=a", "G", T(1)), L("p=a", "G", T(1), 1), B("p=a", "G", T(3)), L("p=a", "G", T(3), 1)}


def test_pending_compaction_cap_keeps_the_version_readers_of_the_earliest_retained_need(tmp_path):
    """A group outside the compaction still gets the capped earliest commit (Hudi counts pending
    compactions in the commits-and-compaction timeline)."""
    t = Hand(tmp_path / "t", MOR)
    t.write(T(1), bases=(("p=a", "F"), ("p=a", "S")))
    t.write(T(2), bases=(("p=a", "S"),))  # small base file topped up: a new slice of S
    t.write(T(3), bases=(("p=a", "S"),), logs=(("p=a", "F", T(1), 1),))
    t.compaction(T(4), [("p=a", "F")])  # pending
    t.write(T(5), bases=(("p=a", "S"),))
    t.write(T(6), bases=(("p=a", "S"),))
    # Completed T1 T2 T3 T5 T6; N=1 -> T6, capped by pending T4 -> T3. S keeps T6, T5, T3 and T2
    # (latest before T3); only T1 goes. Without the cap (E = T6) T2 and T3 would go too.
    assert t.plan(commits(1)).earliest_to_retain.timestamp == T(3)
    assert t.deleted(commits(1)) == {B("p=a", "S", T(1))}


def test_by_file_versions_keeps_newest_n_and_counts_a_pending_compaction_as_one(tmp_path):
    t = Hand(tmp_path / "t", MOR)
    t.write(T(1), bases=(("p=a", "F"), ("p=a", "G")))
    t.write(T(2), logs=(("p=a", "F", T(1), 1), ("p=a", "G", T(1), 1)))
    t.compaction(T(3), [("p=a", "F"), ("p=a", "G")], completed=True)
    t.write(T(4), logs=(("p=a", "F", T(3), 1), ("p=a", "G", T(3), 1)))
    t.compaction(T(5), [("p=a", "F"), ("p=a", "G")], completed=True)
    t.write(T(6), logs=(("p=a", "F", T(5), 1), ("p=a", "G", T(5), 1)))
    t.compaction(T(7), [("p=a", "F")])  # pending over F's slice T5; no log written against T7 yet
    f_old = {B("p=a", "F", T(1)), L("p=a", "F", T(1), 1)}
    f_mid = {B("p=a", "F", T(3)), L("p=a", "F", T(3), 1)}
    g_old = {B("p=a", "G", T(1)), L("p=a", "G", T(1), 1)}
    g_mid = {B("p=a", "G", T(3)), L("p=a", "G", T(3), 1)}
    # G: newest 1 -> T5 stays. F: the compaction's slices are kept and count as the one version.
    assert t.deleted(versions(1)) == f_old | f_mid | g_old | g_mid
    assert t.deleted(versions(2)) == f_old | g_old
    assert t.deleted(versions(3)) == set()
    # Once a log was written against the pending compaction, the count is the same.
    t.write(T(8), logs=(("p=a", "F", T(7), 1),))
    assert t.deleted(versions(1)) == f_old | f_mid | g_old | g_mid
    assert t.deleted(versions(2)) == f_old | g_old


def test_replaced_groups_are_untouched_until_their_replacecommit_leaves_the_window(tmp_path):
    t = Hand(tmp_path / "t")
    t.write(T(1), bases=(("p=a", "A"), ("p=a", "B")))
    t.write(T(2), bases=(("p=a", "A"),))
    t.write(T(3), bases=(("p=a", "C"),), replaced={"p=a": ["A"]})  # insert_overwrite / clustering
    t.write(T(4), bases=(("p=a", "C"), ("p=a", "B")))
    t.write(T(5), bases=(("p=a", "C"),))
    # N=3 -> E = T3: the replacecommit is not older than E; A (both slices) stays, and so does B.
    assert t.deleted(commits(3)) == set()
    # N=2 -> E = T4: T3 < E, A goes whole; B keeps T4 and T1 (latest before E).
    assert t.deleted(commits(2)) == {B("p=a", "A", T(1)), B("p=a", "A", T(2))}
    reasons = {f.path: f.reason for f in t.plan(commits(2)).files}
    assert T(3) in reasons[B("p=a", "A", T(1))] and "replace" in reasons[B("p=a", "A", T(1))]
    # N=1 -> E = T5: C loses T3 and B loses T1 (older than their before-E slice T4).
    assert t.deleted(commits(1)) == {B("p=a", "A", T(1)), B("p=a", "A", T(2)), B("p=a", "C", T(3)),
                                     B("p=a", "B", T(1))}
    # By file versions a replaced group goes at once, whatever N.
    assert t.deleted(versions(3)) == {B("p=a", "A", T(1)), B("p=a", "A", T(2))}


def test_pending_clustering_input_and_pending_write_files_are_kept(tmp_path):
    t = Hand(tmp_path / "t")
    t.write(T(1), bases=(("p=a", "A"), ("p=a", "B")))
    t.write(T(2), bases=(("p=a", "A"),))
    t.clustering(T(3), [("p=a", "A")])  # reads A@T2
    t.write(T(4), bases=(("p=a", "A"),))  # an update allowed under clustering (allow strategy)
    t.write(T(5), bases=(("p=a", "A"),))
    t.write(T(6), bases=(("p=a", "B"),), state="inflight")  # a running write's file
    # Completed T1 T2 T4 T5; N=1 -> T5, capped by the pending clustering T3 -> T2.
    assert t.plan(commits(1)).earliest_to_retain.timestamp == T(2)
    assert t.deleted(commits(1)) == set(), "A@T1 is the latest before T2; the rest is at or after it"
    # By versions (N=1) A keeps T5 and the clustering's input T2; T4 and T1 go. B@T6 is not committed
    # and not a version of B, and is never touched.
    assert t.deleted(versions(1)) == {B("p=a", "A", T(1)), B("p=a", "A", T(4))}
    assert (t.root / B("p=a", "B", T(6))).exists()
