"""Archival of Hudi 1.x tables (versions 8 and 9, timeline layout 2) into the LSM timeline history.

Each test copies a real Hudi 1.x sample, upserts a few rows per commit with pyhudi and archives with small
keep limits (keep 3-4 commits, the cleaner retaining 2), then checks what Hudi 1.x's archiver would leave:
one history row per archived instant (instant and completion time, completed action, the completed file's
bytes, the plan of its pending action), the active timeline without exactly those instants' files, and
reads (snapshot, time travel, incremental) equal to pyhudi's reads before archival, but where Hudi 1.x too
answers differently once instants are archived (`assert_same_reads`), and to a plain-Python model of the
rows. Failures and a SIGKILL at the archiver's fault points leave a table that reads the same, and the
next run finishes without a history row written twice.

hudi-rs is no reference here: it reads the active timeline only and drops the files of archived commits,
and the samples' base files written by archived commits are still live after archival.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi import faults
from pyhudi.errors import InstantNotFoundError
from pyhudi.faults import InjectedFault
from pyhudi.model.table_config import load_table_config
from pyhudi.storage import Storage
from pyhudi.timeline.history import latest_snapshot, read_history
from tests.helpers import REPO, extract_sample_1x, same_rows

TIMELINE = ".hoodie/timeline"
HISTORY = ".hoodie/timeline/history"
META = ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
        "_hoodie_file_name"]
# The samples' metadata tables hold indexes pyhudi cannot rebuild: its first commit removes them (allowed here).
KEEP = {"hoodie.keep.min.commits": "3", "hoodie.keep.max.commits": "4", "hoodie.cleaner.commits.retained": "2",
        "hoodie.compact.inline.max.delta.commits": "2", "hoodie.archive.automatic": "false",
        "hoodie.write.drop.unrebuildable.metadata.indexes": "true",
        # An empty clean (Hudi's default -1 writes none) even where the upserts leave nothing to clean (MOR logs):
        # the archived range then holds cleans on every sample.
        "hoodie.write.empty.clean.create.duration.ms": "1"}
SAMPLES = ["cow_v8_nonpartitioned", "cow_v9_txns_simple_meta", "mor_avro_v9_txns_simple_meta",
           "qs_mor_avro_v8_trips_8i3u1d", "mor_avro_v9_nonpartitioned_rollback"]
# Hudi 1.x leaves completed indexing instants on the active timeline in front of archived commits: upserts
# into file groups last written by an archived commit must still commit (conflicts._check_bases_live).
WRITES_AFTER_ARCHIVAL = SAMPLES
ARCHIVABLE = {"commit", "deltacommit", "replacecommit", "clean", "rollback"}
FAULT_POINTS = ["archival.after_plan", "history.after_data_file", "history.after_manifest",
                "archival.after_archive_file", "archival.after_pending_deleted", "archival.mid_delete",
                "archival.after_delete"]


class Sample:
    """A copied 1.x sample and a model of its rows: key -> row (data columns), after every pyhudi commit."""

    def __init__(self, name: str, dest: Path) -> None:
        self.name = name
        self.root = str(extract_sample_1x(name, dest))
        cfg = load_table_config(Storage(self.root))
        self.key = cfg.record_key_fields[0]
        data = pyhudi.read(self.root).drop_columns(META)
        self.schema = data.schema
        counts = Counter(data.column(self.key).to_pylist())
        # A key in two file groups (the rollback sample has one) is left alone: an upsert updates one of them.
        self.model: dict[Any, dict[str, Any]] = {r[self.key]: r for r in data.to_pylist() if counts[r[self.key]] == 1}
        fixed = {self.key, *cfg.partition_fields, *cfg.ordering_fields}
        self.ordering = [f for f in cfg.ordering_fields if pa.types.is_integer(self.schema.field(f).type)]
        self.text = next(f.name for f in self.schema if pa.types.is_string(f.type) and f.name not in fixed)
        self.states: list[tuple[str, dict[Any, dict[str, Any]]]] = []  # (instant, rows after it)
        self.n = 0

    def upsert(self, options: dict[str, str] = KEEP) -> str:
        """Update two rows (a new text value, ordering values raised so the update wins in every merge mode)."""
        keys = sorted(self.model, key=str)
        chosen = [keys[(2 * self.n + i) % len(keys)] for i in range(2)]
        self.n += 1
        rows = []
        for k in dict.fromkeys(chosen):
            row = dict(self.model[k], **{self.text: f"w{self.n}-{k}"})
            row.update({f: row[f] + 1 for f in self.ordering})
            rows.append(row)
        instant = pyhudi.write(pa.Table.from_pylist(rows, schema=self.schema), self.root, options)
        assert instant is not None
        self.model.update({r[self.key]: r for r in rows})
        self.states.append((instant, copy.deepcopy(self.model)))
        return instant

    def rows(self, table: pa.Table) -> dict[Any, dict[str, Any]]:
        """The rows of the keys the model follows."""
        return {r[self.key]: r for r in table.drop_columns(META).to_pylist() if r[self.key] in self.model}

    def timeline(self) -> dict[str, bytes]:
        folder = Path(self.root, TIMELINE)
        return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def _instant_files(files: dict[str, bytes], ts: str) -> dict[str, bytes]:
    return {n: b for n, b in files.items() if n.startswith((f"{ts}.", f"{ts}_"))}


def completed_writes(files: dict[str, bytes]) -> list[tuple[str, str]]:
    """(requested, completion) of the completed writes of a timeline listing, by requested time."""
    out = []
    for name in files:
        stem, _, action = name.rpartition(".")
        if "_" in stem and action in ("commit", "deltacommit", "replacecommit"):
            requested, completion = stem.split("_")
            out.append((requested, completion))
    return sorted(out)


def expected_row(files: dict[str, bytes], ts: str) -> tuple[str, str, bytes | None, bytes | None]:
    """(completion, action, metadata, plan) of the history row of instant `ts`, as
    MetadataConversionUtils.createLSMTimelineInstant fills it, from the instant's files alone."""
    mine = _instant_files(files, ts)
    (done,) = [n for n in mine if n.startswith(f"{ts}_")]
    completion, action = done[len(ts) + 1:].split(".")
    requested = next((n for n in mine if n.endswith(".requested")), None)
    inflight = next((n for n in mine if n.endswith(".inflight")), None)
    pending = requested or inflight
    pending_action = None if pending is None else ("commit" if pending == f"{ts}.inflight" else pending.split(".")[1])
    plan: bytes | None = None
    if pending_action == "clean":
        plan = mine[pending]
    elif pending_action in ("replacecommit", "clustering"):
        plan = (mine[requested] if requested else b"") or None
        plan = (mine[inflight] if inflight else b"") or plan
    elif pending_action in ("compaction", "logcompaction") and requested:
        plan = mine[requested]
    return completion, action, mine[done] or None, plan


def history_instant_counts(root: str) -> Counter[str]:
    """How often each instant time appears across the data files the latest manifest lists."""
    counts: Counter[str] = Counter()
    for entry in latest_snapshot(Storage(root), HISTORY).files:
        counts.update(pq.read_table(os.path.join(root, HISTORY, entry.name), columns=["instantTime"])
                      .column(0).to_pylist())
    return counts


def _incremental(begin: str, end: str | None = None) -> dict[str, str]:
    """An incremental read; a range whose files were cleaned reads the latest snapshot filtered by commit
    time (the full-table-scan fallback) instead of failing, before archival and after."""
    opts = {"hoodie.datasource.query.type": "incremental", "hoodie.datasource.read.begin.instanttime": begin,
            "hoodie.datasource.read.incr.fallback.fulltablescan.enable": "true"}
    return opts if end is None else dict(opts, **{"hoodie.datasource.read.end.instanttime": end})


def _read(root: str, options: dict[str, str] | None = None) -> Any:
    try:
        return pyhudi.read(root, options)
    except InstantNotFoundError:
        return InstantNotFoundError


def reads(sample: Sample, files: dict[str, bytes]) -> dict[str, Any]:
    """Snapshot, incremental reads from the start and over completion-time ranges of the writes of
    `files` (the timeline before archival), and time travel to each pyhudi commit (rows, or the error)."""
    out: dict[str, Any] = {"snapshot": pyhudi.read(sample.root)}
    done = [c for _, c in completed_writes(files)]
    mid = done[len(done) // 2]
    for begin in ("earliest", done[0], mid, done[-3]):
        out[("incremental", begin, None)] = _read(sample.root, _incremental(begin))
    for start, end in ((done[0], done[1]), (done[1], mid), (mid, done[-1])):
        out[("incremental", start, end)] = _read(sample.root, _incremental(start, end))
    for instant, _ in sample.states:
        out[("as of", instant)] = _read(sample.root, {"as.of.instant": instant})
    return out


def _commit_times(table: pa.Table, chosen: set[str]) -> pa.Table:
    return table.filter(pa.array([t in chosen for t in table.column("_hoodie_commit_time").to_pylist()]))


def assert_same_reads(before: dict[str, Any], after: dict[str, Any], archived: set[str],
                      files: dict[str, bytes]) -> None:
    """Reads after archival equal those before, except where archived instants change the answer: no time
    travel to before the active timeline (Hudi 1.x refuses times before the latest clean's earliest retained
    commit, TimelineUtils.validateTimestampAsOf, which archival keeps), and an incremental range whose last
    commit is archived is no longer read as of that commit but, with the full-table-scan fallback on (as
    here), from the latest snapshot filtered by the range's commit times, where later updates hide its rows
    (Hudi 1.x falls back as soon as any selected commit is archived)."""
    writes = completed_writes(files)
    for what, got in after.items():
        expected = before[what]
        if what[0] == "as of" and what[1] in archived:
            assert got is InstantNotFoundError, what
            continue
        if what[0] == "incremental" and what[2] is not None:
            floor = "0" if what[1] == "earliest" else what[1]
            chosen = {r for r, c in writes if floor < c <= what[2]}
            if max(chosen) in archived:
                expected = _commit_times(after["snapshot"], chosen)
        if got is InstantNotFoundError or expected is InstantNotFoundError:
            assert got is expected, f"{what}: {got} after archival, {expected} expected"
        else:
            assert same_rows(got, expected), f"{what} differs after archival"


def assert_model(sample: Sample) -> None:
    assert sample.rows(pyhudi.read(sample.root)) == sample.model
    for instant, state in sample.states[-2:]:  # the newest pyhudi commits stay on the active timeline
        assert sample.rows(pyhudi.read(sample.root, {"as.of.instant": instant})) == state, instant


def prepared(name: str, tmp_path: Path, commits: int = 6) -> Sample:
    sample = Sample(name, tmp_path)
    for _ in range(commits):
        sample.upsert()
    return sample


def check_archived(sample: Sample, before: dict[str, bytes], planned: list[str]) -> None:
    """The history holds one row per planned instant, equal to what Hudi writes from the removed files;
    the active timeline lost exactly those instants' files."""
    after = sample.timeline()
    history = {h.instant_time: h for h in read_history(Storage(sample.root), HISTORY)}
    for ts in planned:
        h = history[ts]
        assert (h.completion_time, h.action, h.metadata, h.plan) == expected_row(before, ts), ts
        assert not _instant_files(after, ts), f"{ts} is still on the active timeline"
    removed = {n for n in before if n not in after}
    assert removed == {n for ts in planned for n in _instant_files(before, ts)}
    assert all(n in before for n in after if n != "history")  # nothing but the archived instants changed
    assert max(history_instant_counts(sample.root).values()) == 1, "an instant archived twice"


@pytest.mark.parametrize("name", SAMPLES)
def test_archival_moves_instants_into_the_history_and_reads_stay(tmp_path: Path, name: str) -> None:
    sample = prepared(name, tmp_path)
    files = sample.timeline()
    before = reads(sample, files)
    plan = pyhudi.archive(None, sample.root, KEEP, dry_run=True)
    planned = [g.timestamp for g in plan.groups]
    assert plan.commits_archived == plan.commits_total - 3 and not plan.leftovers, plan.stopped_by

    result = pyhudi.archive(None, sample.root, KEEP)
    assert result is not None and [i.timestamp for i in result.archived] == planned
    assert result.records == len(planned) and not result.recovered
    assert result.archive_file == f"{HISTORY}/{planned[0]}_{planned[-1]}_0.parquet"
    check_archived(sample, files, planned)
    assert {Path(n).name for n in os.listdir(Path(sample.root, HISTORY))} >= {"_version_", "manifest_1"}
    assert not Path(sample.root, ".hoodie", "archived").exists()
    kinds = {expected_row(files, ts)[1] for ts in planned}
    assert {"clean"} <= kinds, "cleans older than the last archived commit go with it"
    assert_same_reads(before, reads(sample, files), set(planned), files)
    assert_model(sample)
    assert pyhudi.archive(None, sample.root, KEEP) is None  # nothing left to do


@pytest.mark.parametrize("name", WRITES_AFTER_ARCHIVAL)
def test_a_second_round_appends_a_second_history_file(tmp_path: Path, name: str) -> None:
    """Writes go on after archival (upserts into file groups last written by archived commits), and the
    next archival appends a second level-0 file; the first stays as it was."""
    sample = prepared(name, tmp_path)
    result = pyhudi.archive(None, sample.root, KEEP)
    assert result is not None and result.archive_file
    planned = [i.timestamp for i in result.archived]
    for _ in range(3):
        sample.upsert()
    files2 = sample.timeline()
    before2 = reads(sample, files2)
    second = pyhudi.archive(None, sample.root, KEEP)
    assert second is not None and second.archive_file
    check_archived(sample, files2, [i.timestamp for i in second.archived])
    listed = latest_snapshot(Storage(sample.root), HISTORY).names
    assert listed == [Path(result.archive_file).name, Path(second.archive_file).name]
    assert_same_reads(before2, reads(sample, files2), set(planned) | {i.timestamp for i in second.archived},
                      files2)
    assert_model(sample)


def test_sample_specific_instants_and_plans(tmp_path: Path) -> None:
    """The MOR v9 sample's compaction, clustering and insert-overwrite go into the history with their
    plans: the compaction plan, the clustering plan (`.clustering.requested`), the insert-overwrite's
    non-empty `.inflight`; and the rollback sample's rollback with its metadata and no plan."""
    mor = prepared("mor_avro_v9_txns_simple_meta", tmp_path / "mor")
    files = mor.timeline()
    assert pyhudi.archive(None, mor.root, KEEP) is not None
    history = {h.instant_time: h for h in read_history(Storage(mor.root), HISTORY)}
    compaction, clustering = history["20260307162618152"], history["20260307162619269"]
    assert compaction.action == "commit" and compaction.completion_time == "20260307162619230"
    assert compaction.plan == files["20260307162618152.compaction.requested"]
    assert clustering.action == "replacecommit" and clustering.plan == files["20260307162619269.clustering.requested"]
    overwrite = history["20260307162614221"]
    assert overwrite.plan == (files["20260307162614221.replacecommit.inflight"]
                              or files["20260307162614221.replacecommit.requested"] or None)
    assert history["20260307162557587"].metadata == files["20260307162557587_20260307162601961.deltacommit"]
    assert history["20260307162557587"].plan is None

    rb = prepared("mor_avro_v9_nonpartitioned_rollback", tmp_path / "rb")
    files = rb.timeline()
    assert pyhudi.archive(None, rb.root, KEEP) is not None
    rollback = {h.instant_time: h for h in read_history(Storage(rb.root), HISTORY)}["20260403184259077"]
    assert rollback.action == "rollback" and rollback.plan is None
    assert rollback.metadata == files["20260403184259077_20260403184300219.rollback"]


# ------------------------------------------------------------------------------------------- crashes
@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A prepared MOR v9 table, its timeline, reads and archival plan, copied by each crash test."""
    sample = prepared("mor_avro_v9_txns_simple_meta", tmp_path_factory.mktemp("template"))
    files = sample.timeline()
    plan = pyhudi.archive(None, sample.root, KEEP, dry_run=True)
    return {"sample": sample, "files": files, "reads": reads(sample, files),
            "planned": [g.timestamp for g in plan.groups]}


def _copy(template: dict[str, Any], dest: Path) -> Sample:
    sample = copy.copy(template["sample"])
    sample.root = str(dest / "t")
    shutil.copytree(template["sample"].root, sample.root)
    return sample


def _archivable(files: dict[str, bytes]) -> set[str]:
    return {n.split("_")[0] for n in files if "_" in n.split(".")[0] and n.rpartition(".")[2] in ARCHIVABLE}


def assert_consistent(sample: Sample, template: dict[str, Any]) -> None:
    """A half-archived table: reads as before, no instant lost, none left pending by the archiver."""
    files, planned = template["files"], template["planned"]
    now = sample.timeline()
    history = {h.instant_time for h in read_history(Storage(sample.root), HISTORY)}
    assert _archivable(files) == _archivable(now) | (history & _archivable(files)), "an instant was lost"
    for ts in planned:
        left = _instant_files(now, ts)
        # Never a requested/inflight file without the completed one: services would take it for pending.
        assert not left or any(n.startswith(f"{ts}_") for n in left), left
    gone = {ts for ts in planned if not _instant_files(now, ts)}
    assert_same_reads(template["reads"], reads(sample, files), gone, files)


@pytest.mark.parametrize("point", FAULT_POINTS)
def test_a_failure_at_each_step_is_finished_by_the_next_run(tmp_path: Path, template: dict[str, Any],
                                                            monkeypatch: pytest.MonkeyPatch, point: str) -> None:
    sample = _copy(template, tmp_path)
    monkeypatch.setenv(faults.RAISE_ENV, point)
    faults.reset()
    with pytest.raises(InjectedFault):
        pyhudi.archive(None, sample.root, KEEP)
    monkeypatch.delenv(faults.RAISE_ENV)
    assert_consistent(sample, template)
    left = [ts for ts in template["planned"] if _instant_files(sample.timeline(), ts)]

    rerun = pyhudi.archive(None, sample.root, KEEP)
    if not left:  # archival.after_delete: all done but the history's compaction, which waits for the next run
        assert rerun is None and point == "archival.after_delete"
    else:
        assert rerun is not None and [i.timestamp for i in rerun.archived] == left
    check_archived(sample, template["files"], template["planned"])
    assert pyhudi.archive(None, sample.root, KEEP) is None
    assert_same_reads(template["reads"], reads(sample, template["files"]), set(template["planned"]),
                      template["files"])
    assert sample.rows(pyhudi.read(sample.root)) == sample.model


def _archive_until_killed(path: str, point: str) -> None:
    code = "import json, sys, pyhudi; pyhudi.archive(None, sys.argv[1], json.loads(sys.argv[2]))"
    opts = dict(KEEP, **{"hoodie.write.lock.filesystem.expire": str(3 / 60)})  # minutes: a 3 s lease
    env = {**os.environ, "PYHUDI_FAULT_POINT": point, "PYHUDI_FAULT_OWN_GROUP": "1",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", code, path, json.dumps(opts)], env=env, start_new_session=True,
                          timeout=300, capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]


def test_a_killed_archiver_is_finished_by_the_next_run(tmp_path: Path, template: dict[str, Any]) -> None:
    """A real crash (SIGKILL, table lock still held) in the middle of the deletes; the points before are
    covered by the failures above."""
    sample = _copy(template, tmp_path)
    _archive_until_killed(sample.root, "archival.mid_delete")
    assert_consistent(sample, template)
    opts = dict(KEEP, **{"hoodie.write.lock.filesystem.expire": str(3 / 60)})
    assert pyhudi.archive(None, sample.root, opts) is not None  # waits out the dead archiver's lease
    check_archived(sample, template["files"], template["planned"])
    assert pyhudi.archive(None, sample.root, opts) is None


# ------------------------------------------------------------------------------------------- inline archival
@pytest.mark.parametrize("name", ["cow_v9_txns_simple_meta", "qs_mor_avro_v8_trips_8i3u1d"])
def test_writers_archive_after_their_commits(tmp_path: Path, name: str) -> None:
    """hoodie.archive.automatic (the default): each commit archives what the rules allow, cleaner first."""
    sample = Sample(name, tmp_path)
    auto = dict(KEEP, **{"hoodie.archive.automatic": "true"})
    for _ in range(8):
        sample.upsert(auto)
    history = read_history(Storage(sample.root), HISTORY)
    assert len(latest_snapshot(Storage(sample.root), HISTORY).files) >= 2, "several archival rounds"
    writes = completed_writes(sample.timeline())
    assert len(writes) <= 4 and max(h.instant_time for h in history) < writes[0][0]
    assert max(history_instant_counts(sample.root).values()) == 1
    assert sample.rows(pyhudi.read(sample.root)) == sample.model
    assert pyhudi.archive(None, sample.root, KEEP) is None  # the writers left nothing to archive


def test_metadata_table_bounds_archival_of_a_table_hudi_wrote_last(tmp_path: Path) -> None:
    """Untouched by pyhudi, the sample still has its metadata table (compacted at 20260307162612567):
    Hudi 1.x archives no commit that completed after that compaction."""
    root = str(extract_sample_1x("mor_avro_v9_txns_simple_meta", tmp_path))
    opts = dict(KEEP, **{"hoodie.compact.inline.max.delta.commits": "1"})
    plan = pyhudi.archive(None, root, opts, dry_run=True)
    assert "metadata table" in (plan.stopped_by or "")
    assert [g.timestamp for g in plan.groups if g.action.value == "deltacommit"][-1] < "20260307162612542"
    assert pyhudi.archive(None, root, opts) is not None
    assert Path(root, ".hoodie", "metadata").exists()  # archival is no instant: the metadata table stays


def test_archivelog_folder_is_ignored_on_layout_2(tmp_path: Path) -> None:
    sample = prepared("cow_v8_nonpartitioned", tmp_path)
    props = Path(sample.root, ".hoodie", "hoodie.properties")
    props.write_text(props.read_text() + "hoodie.archivelog.folder=elsewhere\n")
    assert pyhudi.archive(None, sample.root, KEEP) is not None
    assert latest_snapshot(Storage(sample.root), HISTORY).files
    assert not Path(sample.root, ".hoodie", "elsewhere").exists()
