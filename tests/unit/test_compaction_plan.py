"""Compaction scheduling without Spark: triggers, candidate slices, the written plan.

Tables are hand-made (see `_tables.py`): `hoodie.properties` of a MERGE_ON_READ table,
`.deltacommit` JSON instants with write stats, compaction plans and clustering plans as Avro,
and empty data files of chosen sizes (sparse, so "100 MiB" costs nothing). Planning works from
the timeline, file names and sizes only, so no data file needs content.

What Hudi 0.14/0.15 does, and what these tests hold pyhudi to:

- Triggers (`ScheduleCompactionActionExecutor.needCompact`): completed deltacommits after the
  last completed compaction (a `.commit` with its `.compaction.requested` beside it), or after
  the last *pending* compaction for NUM_COMMITS_AFTER_LAST_REQUEST; elapsed seconds since that
  compaction, or since the first deltacommit when there was none.
- Candidates (`BaseHoodieCompactionPlanGenerator` + `LogFileSizeBasedCompactionStrategy`): the
  latest slice of each live file group that has log files, minus groups in a pending compaction
  or clustering; largest total log size first; slices with fewer log bytes than
  `hoodie.compaction.logfile.size.threshold` dropped; then `BoundedIOCompactionStrategy` takes
  operations until `hoodie.compaction.target.io` is spent, the one that spends it included.
  An operation's IO is read (base + logs) plus write (base again): 2 * base + logs.
- The plan (`CompactionUtils.buildFromFileSlice`, plan version 2): file *names*, the slice's
  base instant, and the metrics TOTAL_LOG_FILES, TOTAL_LOG_FILES_SIZE, TOTAL_IO_READ_MB,
  TOTAL_IO_WRITE_MB, TOTAL_IO_MB.

Sizes in the main tests are whole MiB, where Hudi's MB arithmetic (whole MB, truncated) and a
byte count agree. The last section holds cases where they do not, and other places where pyhudi
departs from Hudi; those tests assert Hudi's behaviour.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from pyhudi.config.registry import Options
from pyhudi.errors import HudiError
from pyhudi.model import avro_models as am
from pyhudi.model.commit_metadata import CommitMetadata
from pyhudi.model.instant_time import instant_to_ms, ms_to_instant
from pyhudi.model.table_config import COW, MOR, load_table_config, save_table_config
from pyhudi.model.write_stat import WriteStat
from pyhudi.services import compaction
from pyhudi.services.compaction import candidates, deltas_since_last_compaction, schedule, trigger_fired
from pyhudi.storage import Storage
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.builder import build_view
from pyhudi.writer.config import CompactionConfig
from tests.unit._tables import Table

MB = 1024 * 1024
EPOCH_MS = int(datetime(2025, 1, 1, tzinfo=timezone.utc).timestamp() * 1000)
STRATEGIES = ("NUM_COMMITS", "NUM_COMMITS_AFTER_LAST_REQUEST", "TIME_ELAPSED", "NUM_AND_TIME", "NUM_OR_TIME")


def at(seconds: float) -> str:
    """The instant `seconds` after 2025-01-01T00:00:00Z."""
    return ms_to_instant(EPOCH_MS + round(seconds * 1000))


def ms(seconds: float) -> int:
    return EPOCH_MS + round(seconds * 1000)


class Mor(Table):
    """A hand-made table with its hoodie.properties, written instants and sparse data files."""

    def __init__(self, root: Path, table_type: str = MOR, partitioned: bool = True) -> None:
        super().__init__(root, table_type, partitioned)
        self.storage = Storage(str(root))
        save_table_config(self.storage, self.config)

    def sized(self, partition: str, name: str, size: int) -> str:
        with open(self._dir(partition) / name, "wb") as f:
            f.truncate(size)
        return name

    def deltacommit(self, ts: str, *, bases: tuple = (), logs: tuple = (), state: str = "completed") -> None:
        """A deltacommit of `ts` that wrote `bases` (partition, fid, size) -> `<fid>_0-1-1_<ts>.parquet`
        and `logs` (partition, fid, base instant, version, size) -> `.<fid>_<base>.log.<v>_0-1-1`."""
        meta = CommitMetadata(operation_type="UPSERT", extra_metadata={"schema": "{}"})
        for partition, fid, size in bases:
            name = self.sized(partition, f"{fid}_0-1-1_{ts}.parquet", size)
            meta.add(WriteStat(file_id=fid, path=f"{partition}/{name}", partition_path=partition,
                               num_writes=10, num_inserts=10, total_write_bytes=size, file_size_in_bytes=size))
        for partition, fid, base_ts, version, size in logs:
            name = self.sized(partition, f".{fid}_{base_ts}.log.{version}_0-1-1", size)
            meta.add(WriteStat(file_id=fid, path=f"{partition}/{name}", partition_path=partition,
                               prev_commit=base_ts, num_writes=5, num_update_writes=5, total_write_bytes=size,
                               file_size_in_bytes=size, log_version=version, log_offset=0, base_file="",
                               log_files=[name]))
        self.instant(ts, "deltacommit", state, meta)

    def compaction(self, ts: str, ops: list[tuple[str, str]], state: str = "requested",
                   base_sizes: dict[str, int] | None = None) -> None:
        """A compaction plan of `ts` over (partition, fid) groups, in `state`; a completed one also
        gets its new base files and a `.commit` naming them."""
        view = build_view(self.storage, self.config, ActiveTimeline.load(self.storage))
        operations = []
        for partition, fid in ops:
            (sl,) = [s for s in view.latest_file_slices(partition) if s.file_id == fid]
            operations.append(am.compaction_operation(
                base_instant_time=sl.base_instant, file_id=fid, partition_path=partition,
                data_file_path=sl.base_file.name if sl.base_file else None,
                delta_file_paths=[lf.name for lf in sl.log_files], metrics={}))
        plan = am.write_instant_avro("HoodieCompactionPlan", am.compaction_plan(operations=operations))
        (self.hoodie / f"{ts}.compaction.requested").write_bytes(plan)
        if state in ("inflight", "completed"):
            (self.hoodie / f"{ts}.compaction.inflight").write_bytes(b"")
        if state == "completed":
            meta = CommitMetadata(compacted=True, operation_type="COMPACT", extra_metadata={"schema": "{}"})
            for partition, fid in ops:
                size = (base_sizes or {}).get(fid, MB)
                name = self.sized(partition, f"{fid}_0-2-2_{ts}.parquet", size)
                meta.add(WriteStat(file_id=fid, path=f"{partition}/{name}", partition_path=partition,
                                   num_writes=10, total_write_bytes=size, file_size_in_bytes=size))
            (self.hoodie / f"{ts}.commit").write_bytes(meta.to_bytes())

    def clustering(self, ts: str, groups: list[tuple[str, str]], state: str = "requested") -> None:
        """A pending clustering plan (`.replacecommit.requested` Avro) over (partition, fid) groups."""
        view = build_view(self.storage, self.config, ActiveTimeline.load(self.storage))
        slices = []
        for partition, fid in groups:
            (sl,) = [s for s in view.latest_file_slices(partition) if s.file_id == fid]
            slices.append(am.slice_info(
                file_id=fid, partition_path=partition,
                data_file_path=str(self.root / partition / sl.base_file.name) if sl.base_file else "",
                delta_file_paths=[str(self.root / partition / lf.name) for lf in sl.log_files]))
        plan = am.clustering_plan(input_groups=[am.clustering_group(slices=slices, num_output_file_groups=1)])
        meta = am.requested_replace_metadata(clustering_plan=plan)
        (self.hoodie / f"{ts}.replacecommit.requested").write_bytes(
            am.write_instant_avro("HoodieRequestedReplaceMetadata", meta))
        if state == "inflight":
            (self.hoodie / f"{ts}.replacecommit.inflight").write_bytes(b"")

    def timeline(self) -> ActiveTimeline:
        return ActiveTimeline.load(self.storage)

    def candidates(self, cfg: CompactionConfig | None = None) -> list[tuple[str, str]]:
        view = build_view(self.storage, self.config, self.timeline())
        return [(c.slice.partition, c.slice.file_id) for c in candidates(view, cfg or CompactionConfig())]

    def schedule(self, cfg: CompactionConfig | None = None, force: bool = True) -> str | None:
        return schedule(self.storage, load_table_config(self.storage), cfg or CompactionConfig(), force=force)

    def plan(self, instant: str) -> dict:
        return am.read_instant_avro((self.hoodie / f"{instant}.compaction.requested").read_bytes())

    def hoodie_files(self) -> set[str]:
        return {p.name for p in self.hoodie.iterdir() if p.is_file()}


@pytest.fixture()
def mor(tmp_path: Path) -> Mor:
    return Mor(tmp_path / "t")


def fired(t: Mor, trigger: str, max_commits: int = 3, max_seconds: int = 3600, now: float = 0.0) -> bool:
    cfg = CompactionConfig(trigger=trigger, max_delta_commits=max_commits, max_delta_seconds=max_seconds)
    return trigger_fired(t.timeline(), cfg, now_ms=ms(now))


def plain_deltas(t: Mor, *seconds: float) -> list[str]:
    """Completed deltacommits (appending a log to one group) at the given times."""
    out = []
    for s in seconds:
        ts = at(s)
        t.deltacommit(ts, logs=(("p=0", "g-0", at(0), len(out) + 2, 100),))
        out.append(ts)
    return out


# =========================================================================== triggers
def test_counts_only_completed_deltacommits_after_the_last_completed_compaction(mor: Mor) -> None:
    mor.deltacommit(at(0), bases=(("p=0", "g-0", MB),))
    assert deltas_since_last_compaction(mor.timeline()) == (1, None)
    plain_deltas(mor, 10, 20)
    mor.deltacommit(at(25), logs=(("p=0", "g-0", at(0), 9, 100),), state="inflight")  # not completed
    mor.deltacommit(at(26), state="requested")
    assert deltas_since_last_compaction(mor.timeline()) == (3, None)

    # A requested and then an inflight compaction do not reset the count: only a completed one does.
    mor.compaction(at(30), [("p=0", "g-0")], state="inflight")
    plain_deltas(mor, 40)
    assert deltas_since_last_compaction(mor.timeline()) == (4, None)
    (mor.hoodie / f"{at(30)}.commit").write_bytes(CommitMetadata(compacted=True, operation_type="COMPACT").to_bytes())
    assert deltas_since_last_compaction(mor.timeline()) == (1, at(30)), "deltacommit at 40s follows the compaction"
    plain_deltas(mor, 50, 60)
    assert deltas_since_last_compaction(mor.timeline()) == (3, at(30))
    for max_commits, expected in ((2, True), (3, True), (4, False)):
        assert fired(mor, "NUM_COMMITS", max_commits) is expected, max_commits


# (anchored on a completed compaction?, deltacommits since the anchor, seconds since the anchor),
# against max 3 commits / 3600 s. Without a compaction the first deltacommit is the anchor and counts.
CASES = [(w, n, s) for w in (False, True) for n, s in ((2, 3599), (2, 3600), (3, 3599), (3, 3600), (4, 7200))]
CASES.append((True, 0, 10_000))


@pytest.mark.parametrize("trigger", STRATEGIES)
@pytest.mark.parametrize("with_compaction,count,elapsed", CASES)
def test_trigger_truth_table(tmp_path: Path, trigger: str, with_compaction: bool, count: int, elapsed: int) -> None:
    """Counts on both sides of max_delta_commits, elapsed time on both sides of max_delta_seconds.

    The time is measured from the last completed compaction, or from the first deltacommit when
    there is none (then the count includes that first deltacommit)."""
    t = Mor(tmp_path / "t")
    anchor = 1000.0
    if with_compaction:
        t.deltacommit(at(0), bases=(("p=0", "g-0", MB),))
        plain_deltas(t, 1, 2, 3, 4, 5)  # before the compaction: never counted
        t.compaction(at(anchor), [("p=0", "g-0")], state="completed")
        plain_deltas(t, *[anchor + 1 + i for i in range(count)])
    else:
        t.deltacommit(at(anchor), bases=(("p=0", "g-0", MB),))
        plain_deltas(t, *[anchor + 1 + i for i in range(count - 1)])
    assert deltas_since_last_compaction(t.timeline())[0] == count
    enough, late = count >= 3, elapsed >= 3600
    expected = {"NUM_COMMITS": enough, "NUM_COMMITS_AFTER_LAST_REQUEST": enough, "TIME_ELAPSED": late,
                "NUM_AND_TIME": enough and late, "NUM_OR_TIME": enough or late}[trigger]
    assert fired(t, trigger, 3, 3600, now=anchor + elapsed) is expected


def test_time_is_measured_from_the_last_completed_compaction_not_the_first_delta(mor: Mor) -> None:
    mor.deltacommit(at(0), bases=(("p=0", "g-0", MB),))
    mor.compaction(at(5000), [("p=0", "g-0")], state="completed")
    # 3600 s after the first deltacommit, but only 100 s after the compaction.
    assert not fired(mor, "TIME_ELAPSED", now=5100)
    assert fired(mor, "TIME_ELAPSED", now=8600)
    # A pending compaction is not an anchor for time.
    plain_deltas(mor, 8700)
    mor.compaction(at(9000), [("p=0", "g-0")], state="requested")
    assert fired(mor, "TIME_ELAPSED", now=9100), "still measured from the completed compaction at 5000 s"


def test_no_deltacommit_fires_nothing(mor: Mor) -> None:
    for trigger in STRATEGIES:
        assert not fired(mor, trigger, max_commits=1, max_seconds=1, now=10**7), trigger
    mor.deltacommit(at(0), state="inflight")
    for trigger in STRATEGIES:
        assert not fired(mor, trigger, max_commits=1, max_seconds=1, now=10**7), trigger


def test_num_commits_after_last_request_counts_from_the_last_pending_compaction(mor: Mor) -> None:
    mor.deltacommit(at(0), bases=(("p=0", "g-0", MB), ("p=0", "g-1", MB)))
    plain_deltas(mor, 1)
    mor.compaction(at(10), [("p=0", "g-0")], state="completed")
    plain_deltas(mor, 11, 12, 13)
    # Requested compaction of g-1 at 20 s; then one more deltacommit.
    mor.deltacommit(at(14), logs=(("p=0", "g-1", at(0), 1, 100),))
    mor.compaction(at(20), [("p=0", "g-1")], state="requested")
    plain_deltas(mor, 21)
    assert fired(mor, "NUM_COMMITS", max_commits=5), "5 deltacommits since the completed compaction at 10 s"
    assert not fired(mor, "NUM_COMMITS", max_commits=6)
    assert not fired(mor, "NUM_COMMITS_AFTER_LAST_REQUEST", max_commits=2), "1 since the request at 20 s"
    assert fired(mor, "NUM_COMMITS_AFTER_LAST_REQUEST", max_commits=1)
    plain_deltas(mor, 22)
    assert fired(mor, "NUM_COMMITS_AFTER_LAST_REQUEST", max_commits=2)
    assert not fired(mor, "NUM_COMMITS_AFTER_LAST_REQUEST", max_commits=3)
    # An inflight compaction is still pending: the anchor stays at 20 s.
    (mor.hoodie / f"{at(20)}.compaction.inflight").write_bytes(b"")
    assert fired(mor, "NUM_COMMITS_AFTER_LAST_REQUEST", max_commits=2)
    assert not fired(mor, "NUM_COMMITS_AFTER_LAST_REQUEST", max_commits=3)
    # Once it completes it is the last completed compaction, for both strategies.
    (mor.hoodie / f"{at(20)}.commit").write_bytes(CommitMetadata(compacted=True, operation_type="COMPACT").to_bytes())
    assert deltas_since_last_compaction(mor.timeline()) == (2, at(20))
    assert fired(mor, "NUM_COMMITS", max_commits=2) and not fired(mor, "NUM_COMMITS", max_commits=3)
    assert fired(mor, "NUM_COMMITS_AFTER_LAST_REQUEST", max_commits=2)
    assert not fired(mor, "NUM_COMMITS_AFTER_LAST_REQUEST", max_commits=3)


# =========================================================================== candidates
def test_candidates_are_the_latest_slices_with_log_files(mor: Mor) -> None:
    c0 = at(0)
    mor.deltacommit(c0, bases=(("p=0", "a", MB), ("p=0", "b", MB), ("p=1", "c", MB), ("p=1", "d", MB),
                               ("p=1", "r", MB)))
    # b, c and d get logs; e is a new log-only group (no base file); r has logs but gets replaced.
    mor.deltacommit(at(10), logs=(("p=0", "b", c0, 1, 3 * MB), ("p=1", "c", c0, 1, MB), ("p=1", "d", c0, 1, MB),
                                  ("p=1", "e", at(10), 1, 2 * MB), ("p=1", "r", c0, 1, 9 * MB)))
    # c and d are compacted; afterwards only d gets a new log (against the compaction's instant).
    mor.compaction(at(20), [("p=1", "c"), ("p=1", "d")], state="completed")
    mor.deltacommit(at(30), logs=(("p=1", "d", at(20), 1, 4 * MB),))
    replace = CommitMetadata(operation_type="INSERT_OVERWRITE", partition_to_replace_file_ids={"p=1": ["r"]})
    mor.deltacommit(at(35), bases=(("p=1", "s", MB),))
    mor.instant(at(40), "replacecommit", meta=replace)
    view = build_view(mor.storage, mor.config, mor.timeline())
    found = candidates(view, CompactionConfig())
    got = {(c.slice.partition, c.slice.file_id): c for c in found}
    assert [k for k in got] == [("p=1", "d"), ("p=0", "b"), ("p=1", "e")], "largest log volume first"
    d = got[("p=1", "d")].slice
    assert d.base_instant == at(20) and d.base_file is not None and d.base_file.name == f"d_0-2-2_{at(20)}.parquet"
    assert [lf.name for lf in d.log_files] == [f".d_{at(20)}.log.1_0-1-1"], "the slice before compaction is not used"
    e = got[("p=1", "e")].slice
    assert e.base_file is None and e.base_instant == at(10) and [lf.name for lf in e.log_files] == \
        [f".e_{at(10)}.log.1_0-1-1"]
    # Hudi's metrics in whole MB: read = base + logs = 1 + 3, write = base = 1.
    assert got[("p=0", "b")].io_mb == 5 and got[("p=0", "b")].log_bytes == 3 * MB


def test_groups_in_pending_compaction_or_clustering_are_not_candidates(mor: Mor) -> None:
    c0 = at(0)
    groups = ["pc-req", "pc-inf", "cl-req", "cl-inf", "free"]
    mor.deltacommit(c0, bases=tuple(("p=0", g, MB) for g in groups))
    mor.deltacommit(at(10), logs=tuple(("p=0", g, c0, 1, (i + 1) * MB) for i, g in enumerate(groups)))
    mor.compaction(at(20), [("p=0", "pc-req")], state="requested")
    mor.compaction(at(21), [("p=0", "pc-inf")], state="inflight")
    mor.clustering(at(22), [("p=0", "cl-req")], state="requested")
    mor.clustering(at(23), [("p=0", "cl-inf")], state="inflight")
    # Logs written after scheduling go against the pending compaction's instant; still not a candidate.
    mor.deltacommit(at(30), logs=(("p=0", "pc-req", at(20), 1, 50 * MB),))
    assert mor.candidates() == [("p=0", "free")]
    assert mor.candidates(CompactionConfig(strategy="UnBoundedCompactionStrategy")) == [("p=0", "free")]


def test_order_by_total_log_size_and_threshold(mor: Mor) -> None:
    c0 = at(0)
    sizes = {("p=0", "a"): [MB], ("p=0", "b"): [2 * MB, 2 * MB], ("p=1", "c"): [3 * MB],
             ("p=1", "d"): [MB, MB, MB, 2 * MB], ("p=2", "e"): [MB // 2]}
    mor.deltacommit(c0, bases=tuple((p, g, MB) for p, g in sizes))
    for v in range(1, 5):
        logs = tuple((p, g, c0, v, s[v - 1]) for (p, g), s in sizes.items() if len(s) >= v)
        mor.deltacommit(at(v), logs=logs)
    total = {k: sum(v) for k, v in sizes.items()}
    by_size = sorted(total, key=lambda k: -total[k])
    assert by_size == [("p=1", "d"), ("p=0", "b"), ("p=1", "c"), ("p=0", "a"), ("p=2", "e")]
    assert mor.candidates() == by_size
    # The threshold keeps slices with at least that many log bytes.
    assert mor.candidates(CompactionConfig(log_size_threshold=3 * MB)) == by_size[:3]
    assert mor.candidates(CompactionConfig(log_size_threshold=3 * MB + 1)) == by_size[:2]
    assert mor.candidates(CompactionConfig(log_size_threshold=MB // 2)) == by_size
    assert mor.candidates(CompactionConfig(log_size_threshold=MB // 2 + 1)) == by_size[:4]
    # UnBounded takes every slice with logs, whatever the threshold and the budget.
    unbounded = CompactionConfig(strategy="UnBoundedCompactionStrategy", log_size_threshold=100 * MB, target_io=1)
    assert sorted(mor.candidates(unbounded)) == sorted(by_size)


def test_target_io_includes_the_operation_that_spends_it(mor: Mor) -> None:
    c0 = at(0)
    # (base, logs) in MiB -> io = 2 * base + logs: 14, 9, 6, 4 (log sizes 6 > 5 > 4 > 2 give the order).
    slices = {"a": (4, 6), "b": (2, 5), "c": (1, 4), "d": (1, 2)}
    mor.deltacommit(c0, bases=tuple(("p=0", g, b * MB) for g, (b, _) in slices.items()))
    mor.deltacommit(at(1), logs=tuple(("p=0", g, c0, 1, lg * MB) for g, (_, lg) in slices.items()))
    io = [14, 9, 6, 4]  # MB, like hoodie.compaction.target.io
    view = build_view(mor.storage, mor.config, mor.timeline())
    assert [c.io_mb for c in candidates(view, CompactionConfig())] == io
    cases = [
        (1, 1), (io[0] - 1, 1), (io[0], 1),  # the first operation alone spends the budget
        (io[0] + 1, 2), (sum(io[:2]), 2),  # the second crosses or exactly meets it, and is included
        (sum(io[:2]) + 1, 3), (sum(io[:3]), 3), (sum(io[:3]) + 1, 4), (sum(io), 4), (10 * sum(io), 4),
    ]
    for budget, n in cases:
        got = mor.candidates(CompactionConfig(target_io=budget))
        assert got == [("p=0", g) for g in "abcd"[:n]], (budget, got)


# =========================================================================== schedule
def test_schedule_writes_the_plan_of_the_chosen_slices(mor: Mor) -> None:
    c0 = at(0)
    mor.deltacommit(c0, bases=(("p=0", "a", 3 * MB), ("p=0", "b", 2 * MB), ("p=1", "c", 5 * MB),
                               ("p=1", "quiet", MB)))
    mor.deltacommit(at(1), logs=(("p=0", "a", c0, 1, MB), ("p=0", "b", c0, 1, MB), ("p=1", "c", c0, 1, MB),
                                 ("p=1", "n", at(1), 1, 2 * MB)))
    mor.deltacommit(at(2), logs=(("p=0", "a", c0, 2, 2 * MB), ("p=1", "c", c0, 2, 4 * MB)))
    before = mor.hoodie_files()
    last = mor.timeline().last()
    assert last is not None
    # log totals: c 5, a 3, n 2, b 1 (MiB); a budget of (2*5+5) + (2*3+3) = 24 MiB takes c and a only.
    instant = mor.schedule(CompactionConfig(target_io=24))  # MB
    assert instant is not None and instant > last.timestamp
    assert mor.hoodie_files() - before == {f"{instant}.compaction.requested"}, "only the requested instant is new"
    assert instant in compaction.pending_compactions(mor.storage)
    plan = mor.plan(instant)
    assert plan["version"] == 2
    ops = [(o["partitionPath"], o["fileId"], o["baseInstantTime"], o["dataFilePath"], o["deltaFilePaths"])
           for o in plan["operations"]]
    assert ops == [
        ("p=1", "c", c0, f"c_0-1-1_{c0}.parquet", [f".c_{c0}.log.1_0-1-1", f".c_{c0}.log.2_0-1-1"]),
        ("p=0", "a", c0, f"a_0-1-1_{c0}.parquet", [f".a_{c0}.log.1_0-1-1", f".a_{c0}.log.2_0-1-1"]),
    ]
    metrics = [o["metrics"] for o in plan["operations"]]
    assert metrics == [
        {"TOTAL_LOG_FILES": 2.0, "TOTAL_LOG_FILES_SIZE": float(5 * MB), "TOTAL_IO_READ_MB": 10.0,
         "TOTAL_IO_WRITE_MB": 5.0, "TOTAL_IO_MB": 15.0},
        {"TOTAL_LOG_FILES": 2.0, "TOTAL_LOG_FILES_SIZE": float(3 * MB), "TOTAL_IO_READ_MB": 6.0,
         "TOTAL_IO_WRITE_MB": 3.0, "TOTAL_IO_MB": 9.0},
    ]
    # The plan also decodes against Hudi's own reader schema.
    resolved = am.read_instant_avro((mor.hoodie / f"{instant}.compaction.requested").read_bytes(),
                                    "HoodieCompactionPlan")
    assert [o["fileId"] for o in resolved["operations"]] == ["c", "a"]

    # A second schedule (unbounded budget) plans only what the first left out; a third has nothing left.
    second = mor.schedule()
    assert second is not None and second > instant
    ops2 = [(o["partitionPath"], o["fileId"], o["dataFilePath"], o["deltaFilePaths"])
            for o in mor.plan(second)["operations"]]
    assert ops2 == [("p=1", "n", None, [f".n_{at(1)}.log.1_0-1-1"]),
                    ("p=0", "b", f"b_0-1-1_{c0}.parquet", [f".b_{c0}.log.1_0-1-1"])]
    # Logs written against the pending compactions do not make their groups candidates again.
    mor.deltacommit(at(3), logs=(("p=1", "c", instant, 1, 10 * MB), ("p=1", "n", second, 1, 10 * MB)))
    files = mor.hoodie_files()
    assert mor.schedule() is None
    assert mor.hoodie_files() == files
    assert compaction.pending_compactions(mor.storage) == [instant, second]


def test_schedule_follows_the_trigger_unless_forced(mor: Mor) -> None:
    c0 = at(0)
    mor.deltacommit(c0, bases=(("p=0", "a", MB),))
    mor.deltacommit(at(1), logs=(("p=0", "a", c0, 1, MB),))
    cfg = CompactionConfig(max_delta_commits=3)
    files = mor.hoodie_files()
    assert mor.schedule(cfg, force=False) is None and mor.hoodie_files() == files
    mor.deltacommit(at(2), logs=(("p=0", "a", c0, 2, MB),))
    instant = mor.schedule(cfg, force=False)
    assert instant is not None
    assert [o["fileId"] for o in mor.plan(instant)["operations"]] == ["a"]


def test_plan_of_a_non_partitioned_table_lists_log_files_in_hudi_order(tmp_path: Path) -> None:
    """Partition path "" and the log files in HoodieLogFile's order: by version (as a number), then
    by write token."""
    t = Mor(tmp_path / "np", partitioned=False)
    c0 = at(0)
    t.deltacommit(c0, bases=(("", "a", 2 * MB),))
    t.deltacommit(at(1), logs=(("", "a", c0, 1, MB), ("", "a", c0, 2, MB)))
    t.deltacommit(at(2), logs=(("", "a", c0, 10, MB),))
    t.sized("", f".a_{c0}.log.2_1-5-7", MB)  # a second writer's file of version 2 (write token 1-5-7)
    t.sized("", f".a_{c0}.log.2_0-9-10", MB)  # tokens compare as text: "0-1-1" < "0-9-10" < "1-5-7"
    instant = t.schedule()
    assert instant is not None
    (op,) = t.plan(instant)["operations"]
    assert (op["partitionPath"], op["fileId"], op["baseInstantTime"], op["dataFilePath"]) == \
        ("", "a", c0, f"a_0-1-1_{c0}.parquet")
    assert op["deltaFilePaths"] == [f".a_{c0}.log.1_0-1-1", f".a_{c0}.log.2_0-1-1", f".a_{c0}.log.2_0-9-10",
                                    f".a_{c0}.log.2_1-5-7", f".a_{c0}.log.10_0-1-1"]
    assert op["metrics"]["TOTAL_LOG_FILES"] == 5.0 and op["metrics"]["TOTAL_IO_MB"] == 2 * 2 + 5


@pytest.mark.parametrize("state", ["requested", "inflight"])
def test_schedule_refuses_while_a_deltacommit_is_pending(mor: Mor, state: str) -> None:
    c0 = at(0)
    mor.deltacommit(c0, bases=(("p=0", "a", MB),))
    mor.deltacommit(at(1), logs=(("p=0", "a", c0, 1, MB),))
    mor.deltacommit(at(2), logs=(("p=0", "a", c0, 2, MB),), state=state)
    files = mor.hoodie_files()
    assert mor.schedule() is None
    assert mor.hoodie_files() == files, "no plan was written"
    # Once the write is gone (rolled back), scheduling goes ahead.
    for name in (f"{at(2)}.deltacommit.inflight", f"{at(2)}.deltacommit.requested"):
        (mor.hoodie / name).unlink(missing_ok=True)
    assert mor.schedule() is not None


def test_schedule_without_logs_plans_nothing(mor: Mor) -> None:
    assert mor.schedule() is None, "empty table"
    mor.deltacommit(at(0), bases=(("p=0", "a", MB), ("p=1", "b", MB)))
    files = mor.hoodie_files()
    assert mor.schedule() is None
    assert mor.hoodie_files() == files
    # Logs only under a too-high threshold: nothing either.
    mor.deltacommit(at(1), logs=(("p=0", "a", at(0), 1, 10),))
    assert mor.schedule(CompactionConfig(log_size_threshold=11)) is None
    assert mor.hoodie_files() == files | {f"{at(1)}.deltacommit", f"{at(1)}.deltacommit.inflight",
                                          f"{at(1)}.deltacommit.requested"}


def test_schedule_on_cow_table_raises(tmp_path: Path) -> None:
    t = Mor(tmp_path / "cow", table_type=COW)
    t.instant(at(0), "commit")
    t.sized("p=0", f"a_0-1-1_{at(0)}.parquet", MB)
    files = t.hoodie_files()
    with pytest.raises(HudiError, match="COPY_ON_WRITE"):
        t.schedule()
    assert t.hoodie_files() == files


# =========================================================================== where pyhudi departs from Hudi
def test_target_io_option_is_in_megabytes(mor: Mor) -> None:
    """`hoodie.compaction.target.io` is "Amount of MBs to spend" (default 512000 = 500 GB);
    BoundedIOCompactionStrategy subtracts each operation's TOTAL_IO_MB from it."""
    c0 = at(0)
    mor.deltacommit(c0, bases=tuple(("p=0", g, MB) for g in "abcd"))
    mor.deltacommit(at(1), logs=tuple(("p=0", g, c0, 1, (4 - i) * MB) for i, g in enumerate("abcd")))
    # io (MB) = 2 * 1 + logs: a 6, b 5, c 4, d 3. A budget of 12 MB: 12-6=6, 6-5=1, 1-4<0 -> a, b, c.
    cfg = CompactionConfig.from_options(Options.parse({"hoodie.compaction.target.io": "12"}))
    assert mor.candidates(cfg) == [("p=0", "a"), ("p=0", "b"), ("p=0", "c")]


def test_plan_metrics_are_whole_megabytes_and_log_only_slices_write_a_max_size_file(mor: Mor) -> None:
    """FileSliceMetricUtils.addFileSliceCommonMetrics: TOTAL_IO_READ_MB = MB(base + logs) and
    TOTAL_IO_WRITE_MB = MB(base, or hoodie.parquet.max.file.size (120 MB) without a base file), each a
    whole number of MB (FSUtils.getSizeInMB truncates); TOTAL_IO_MB is their sum."""
    c0 = at(0)
    mor.deltacommit(c0, bases=(("p=0", "a", MB + MB // 2),))
    mor.deltacommit(at(1), logs=(("p=0", "a", c0, 1, MB - MB // 4), ("p=0", "n", at(1), 1, MB // 2)))
    instant = mor.schedule()
    assert instant is not None
    metrics = {o["fileId"]: o["metrics"] for o in mor.plan(instant)["operations"]}
    assert metrics["a"] == {"TOTAL_LOG_FILES": 1.0, "TOTAL_LOG_FILES_SIZE": float(MB - MB // 4),
                            "TOTAL_IO_READ_MB": 2.0, "TOTAL_IO_WRITE_MB": 1.0, "TOTAL_IO_MB": 3.0}
    assert metrics["n"] == {"TOTAL_LOG_FILES": 1.0, "TOTAL_LOG_FILES_SIZE": float(MB // 2),
                            "TOTAL_IO_READ_MB": 0.0, "TOTAL_IO_WRITE_MB": 120.0, "TOTAL_IO_MB": 120.0}


def test_log_only_slice_counts_a_max_size_base_file_against_the_budget(mor: Mor) -> None:
    """The IO of a slice without a base file includes writing a new base file estimated at
    hoodie.parquet.max.file.size (120 MB), so with a 100 MB budget a log-only slice with the
    largest logs spends it alone."""
    c0 = at(0)
    mor.deltacommit(c0, bases=(("p=0", "a", MB),))
    mor.deltacommit(at(1), logs=(("p=0", "n", at(1), 1, 5 * MB), ("p=0", "a", c0, 1, 2 * MB)))
    assert mor.candidates(CompactionConfig(target_io=100)) == [("p=0", "n")]  # MB, as in Hudi


def test_num_commits_after_last_request_uses_a_pending_compaction_older_than_a_completed_one(mor: Mor) -> None:
    """CompactionUtils.getDeltaCommitsSinceLatestCompactionRequest: if any compaction is pending,
    the last *pending* one is the anchor, even when a later compaction has already completed."""
    c0 = at(0)
    mor.deltacommit(c0, bases=(("p=0", "a", MB), ("p=0", "b", MB)))
    mor.deltacommit(at(1), logs=(("p=0", "a", c0, 1, MB),))
    mor.compaction(at(10), [("p=0", "a")], state="requested")  # pending, older
    plain_deltas(mor, 11, 12)
    mor.deltacommit(at(13), logs=(("p=0", "b", c0, 1, MB),))
    mor.compaction(at(20), [("p=0", "b")], state="completed")  # completed, newer
    plain_deltas(mor, 21)
    # Since the pending request at 10 s: 11, 12, 13, 21 -> 4 deltacommits.
    assert fired(mor, "NUM_COMMITS_AFTER_LAST_REQUEST", max_commits=4)


def test_elapsed_time_is_compared_in_whole_seconds(mor: Mor) -> None:
    """needCompact compares parsedToSeconds(compaction instant) - parsedToSeconds(anchor), both
    truncated to whole seconds: from 00:00:00.900 to 01:00:00.100 is 3600 s."""
    mor.deltacommit(at(0.9), bases=(("p=0", "a", MB),))
    assert fired(mor, "TIME_ELAPSED", max_seconds=3600, now=3600.1)
    assert not fired(mor, "TIME_ELAPSED", max_seconds=3600, now=3599.95)


def test_instant_helper_round_trips() -> None:
    assert instant_to_ms(at(12.345)) == ms(12.345) and at(0) == "20250101000000000"
