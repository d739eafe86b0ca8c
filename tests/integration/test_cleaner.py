"""The cleaner on real tables: policies, automatic/async/on-demand runs, timeline files, resume,
dry run, honest time travel, long reads, refused settings and bad input.

What the cleaner must leave on disk is computed here from the timeline alone (the `.commit`/
`.deltacommit`/`.replacecommit` JSON of the commits these tests made), independently of pyhudi's
planner, with Hudi's rules (hudi-v6-format.md section 16): per live file group keep the latest
slice, the latest slice older than the earliest retained commit E and every slice at or after E
(KEEP_LATEST_COMMITS / KEEP_LATEST_BY_HOURS), or the newest N slices (KEEP_LATEST_FILE_VERSIONS);
a replaced group goes whole once its replacecommit is older than E (file versions: at once).
An instant is readable when every file of the latest slice of each of its live groups is on disk;
readable instants must read exactly the model's rows (pyhudi and hudi-rs), the others must fail
naming the earliest readable instant.

Three small histories are written once per module (2 partitions, ~2 file groups each):
- `raw`: COPY_ON_WRITE, automatic cleaning off, commits dated hours in the past (upserts, an
  insert_overwrite of one partition, deletes); tests clean copies of it on demand.
- `mor`: MERGE_ON_READ with inline compaction every 2 deltacommits, automatic cleaning (inline for
  the first writes, async for the last ones).
- the long-read test adds two COW writes with automatic cleaning to a copy of `raw`.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import fastavro
import pytest

import pyhudi
from pyhudi.config.registry import Options
from pyhudi.errors import InstantNotFoundError, InvalidConfigError, UnsupportedTableError
from pyhudi.model.avro_schemas import SCHEMAS
from pyhudi.model.instant_time import ms_to_instant, new_instant_time
from pyhudi.model.table_config import load_table_config
from pyhudi.services import background
from pyhudi.services import clean as clean_svc
from pyhudi.storage import Storage
from pyhudi.writer.config import CleanConfig
from tests.helpers import hudi_rs, rows_by_key, state_at

pytestmark = pytest.mark.spark
SCHEMA = "id long, v string, ts long, p string"
COLS = ["v", "ts", "p"]
HOUR_MS = 3600 * 1000
COMMITS, VERSIONS, HOURS = "KEEP_LATEST_COMMITS", "KEEP_LATEST_FILE_VERSIONS", "KEEP_LATEST_BY_HOURS"
WRITE_RE = re.compile(r"^(\d{17})\.(commit|deltacommit|replacecommit)$")
PENDING_RE = re.compile(r"^(\d{17})\.(?:(commit|deltacommit|replacecommit|compaction)\.(?:requested|inflight)|inflight)$")
BASE_RE = re.compile(r"^(?P<fid>.+)_\d+-\d+-\d+_(?P<inst>\d{17})\.parquet$")
LOG_RE = re.compile(r"^\.(?P<fid>.+)_(?P<inst>\d{17})\.log\.\d+_.+$")


def _opts(table_type: str = "COPY_ON_WRITE", **extra: str) -> dict[str, str]:
    return {"hoodie.table.name": "cleaned", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
            "hoodie.datasource.write.table.type": table_type,
            "hoodie.parquet.max.file.size": "3000", "hoodie.parquet.small.file.limit": "0",
            "hoodie.copyonwrite.record.size.estimate": "100", "hoodie.index.bloom.num_entries": "20", **extra}


# ---------------------------------------------------------------------------------------------------------
# The model: rows per instant
# ---------------------------------------------------------------------------------------------------------

@dataclass
class History:
    path: str
    opts: dict[str, str]
    model: dict[int, tuple] = field(default_factory=dict)
    states: list[tuple[str, dict[int, tuple]]] = field(default_factory=list)

    def _df(self, spark, rows: list[tuple]):
        return spark.createDataFrame(rows, SCHEMA)

    def _commit(self, instant: str | None) -> str:
        assert instant is not None
        self.states.append((instant, dict(self.model)))
        return instant

    def upsert(self, spark, ids, ts: int, **extra: str) -> str:
        rows = [(i, f"v{i}_{ts}", ts, f"p{i % 2}") for i in ids]
        inst = pyhudi.write(self._df(spark, rows), self.path, {**self.opts, **extra,
                                                               "hoodie.datasource.write.operation": "upsert"})
        self.model.update({r[0]: r[1:] for r in rows})
        return self._commit(inst)

    def delete(self, spark, ids, **extra: str) -> str:
        rows = [(i, "", 99, f"p{i % 2}") for i in ids]
        inst = pyhudi.write(self._df(spark, rows), self.path, {**self.opts, **extra,
                                                               "hoodie.datasource.write.operation": "delete"})
        for i in ids:
            self.model.pop(i, None)
        return self._commit(inst)

    def overwrite_partition(self, spark, ids, ts: int, part: str, **extra: str) -> str:
        rows = [(i, f"v{i}_{ts}", ts, part) for i in ids]
        inst = pyhudi.write(self._df(spark, rows), self.path, {
            **self.opts, **extra, "hoodie.datasource.write.operation": "insert_overwrite"})
        self.model = {k: v for k, v in self.model.items() if v[2] != part}
        self.model.update({r[0]: r[1:] for r in rows})
        return self._commit(inst)

    def at(self, instant: str) -> dict[int, tuple]:
        return state_at(self.states, instant)

    def copy(self, dest: Path) -> History:
        shutil.copytree(self.path, dest)
        return History(str(dest), dict(self.opts), dict(self.model), list(self.states))


# ---------------------------------------------------------------------------------------------------------
# The timeline as the commits wrote it (independent of pyhudi's view and planner)
# ---------------------------------------------------------------------------------------------------------

@dataclass
class Written:
    """Every data file the completed commits wrote, by file group and slice, and what was replaced."""
    writes: list[tuple[str, str]]  # (instant, action) of completed commit/deltacommit/replacecommit
    pending: list[str]  # instants of pending writes and compactions
    slices: dict[tuple[str, str], dict[str, set[str]]]  # (partition, fileId) -> base instant -> paths
    written_by: dict[str, str]  # path -> instant of the commit that wrote it
    replaced: dict[tuple[str, str], str]  # (partition, fileId) -> replacecommit

    @property
    def instants(self) -> list[str]:
        return [ts for ts, _ in self.writes]

    def all_files(self) -> set[str]:
        return set(self.written_by)

    def earliest(self, policy: str, n: int = 0, cutoff: str | None = None) -> str | None:
        """Earliest commit to retain (Hudi's CleanerUtils), from the instants alone."""
        if policy == COMMITS:
            if len(self.writes) <= n:
                return None
            nth = self.instants[len(self.writes) - n]
            if self.pending and nth > min(self.pending):
                older = [ts for ts in self.instants if ts < min(self.pending)]
                return older[-1] if older else None
            return nth
        if policy == HOURS:
            assert cutoff is not None
            return next((ts for ts in self.instants if ts >= cutoff), None)
        return None

    def kept(self, policy: str, earliest: str | None, n: int = 0) -> set[str]:
        """The files a cleaner following Hudi's rules leaves."""
        keep: set[str] = set()
        for key, slices in self.slices.items():
            newest_first = sorted(slices, reverse=True)
            if key in self.replaced:
                if policy == VERSIONS or (earliest is not None and self.replaced[key] < earliest):
                    continue
                chosen = newest_first
            elif policy == VERSIONS:
                chosen = newest_first[:n]
            elif earliest is None:
                chosen = newest_first
            else:
                before = next((b for b in newest_first if b < earliest), None)
                chosen = [b for b in newest_first if b in (newest_first[0], before) or b >= earliest]
            for b in chosen:
                keep |= slices[b]
        return keep

    def needed(self, instant: str) -> set[str]:
        """Files a reader as of `instant` needs: the latest slice of each group live then, with the
        files written at or before it."""
        out: set[str] = set()
        for key, slices in self.slices.items():
            if key in self.replaced and self.replaced[key] <= instant:
                continue
            older = [b for b in slices if b <= instant]
            if older:
                out |= {f for f in slices[max(older)] if self.written_by[f] <= instant}
        return out

    def before(self, instant: str) -> Written:
        """The timeline as it was just before `instant` (e.g. when a clean was planned)."""
        writes = [(ts, a) for ts, a in self.writes if ts < instant]
        keep = {f for f, ts in self.written_by.items() if ts < instant}
        slices: dict[tuple[str, str], dict[str, set[str]]] = {}
        for key, by_base in self.slices.items():
            for b, files in by_base.items():
                if files & keep:
                    slices.setdefault(key, {})[b] = files & keep
        return Written(writes, [p for p in self.pending if p < instant], slices,
                       {f: ts for f, ts in self.written_by.items() if f in keep},
                       {k: ts for k, ts in self.replaced.items() if ts < instant})


def written(path: str) -> Written:
    hoodie = Path(path, ".hoodie")
    names = sorted(p.name for p in hoodie.iterdir() if p.is_file())
    writes = [(m.group(1), m.group(2)) for n in names if (m := WRITE_RE.match(n))]
    done = {ts for ts, _ in writes}
    pending = sorted({m.group(1) for n in names if (m := PENDING_RE.match(n))} - done)
    slices: dict[tuple[str, str], dict[str, set[str]]] = {}
    written_by: dict[str, str] = {}
    replaced: dict[tuple[str, str], str] = {}
    for ts, action in writes:
        meta = json.loads((hoodie / f"{ts}.{action}").read_text())
        for part, ids in (meta.get("partitionToReplaceFileIds") or {}).items():
            replaced.update({(part, fid): ts for fid in ids})
        for part, stats in (meta.get("partitionToWriteStats") or {}).items():
            for s in stats:
                if not s.get("path"):
                    continue
                name = s["path"].rsplit("/", 1)[-1]
                m = BASE_RE.match(name) or LOG_RE.match(name)
                assert m, f"unexpected data file name {name}"
                assert m.group("fid") == s["fileId"]
                slices.setdefault((part, s["fileId"]), {}).setdefault(m.group("inst"), set()).add(s["path"])
                written_by[s["path"]] = ts
    return Written(writes, pending, slices, written_by, replaced)


def on_disk(path: str) -> set[str]:
    out = set()
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if d != ".hoodie"]
        for f in files:
            if f.endswith(".parquet") or ".log." in f:
                out.add(os.path.relpath(os.path.join(root, f), path))
    return out


def timeline_files(path: str) -> set[str]:
    return {p.name for p in Path(path, ".hoodie").iterdir() if p.is_file()}


def read_avro(path: Path) -> dict[str, Any]:
    with open(path, "rb") as fh:
        (record,) = list(fastavro.reader(fh))
    return record


def cleans(path: str) -> list[str]:
    return sorted(n.split(".")[0] for n in timeline_files(path) if re.fullmatch(r"\d{17}\.clean", n))


# ---------------------------------------------------------------------------------------------------------
# Checks shared by the tests
# ---------------------------------------------------------------------------------------------------------

def check_clean_instant(path: str, clean: str, policy: str, earliest: str | None, planned: set[str]) -> None:
    """`<clean>.clean.requested` (HoodieCleanerPlan) -> `.clean.inflight` -> `.clean` (HoodieCleanMetadata)
    decoded with fastavro: the plan names exactly `planned` and the metadata reports them deleted."""
    hoodie = Path(path, ".hoodie")
    assert (hoodie / f"{clean}.clean.inflight").exists()
    plan = read_avro(hoodie / f"{clean}.clean.requested")
    assert plan["policy"] == policy and plan["version"] == 2
    tl = written(path).before(clean)
    assert plan["lastCompletedCommitTimestamp"] == tl.instants[-1]
    if earliest is None:
        assert plan["earliestInstantToRetain"] is None
    else:
        action = dict(tl.writes)[earliest]
        assert plan["earliestInstantToRetain"] == {"timestamp": earliest, "action": action, "state": "COMPLETED"}
    in_plan = set()
    for part, infos in plan["filePathsToBeDeletedPerPartition"].items():
        for info in infos:
            assert info["isBootstrapBaseFile"] is False
            full = urlparse(info["filePath"]).path if info["filePath"].startswith("file:") else info["filePath"]
            assert os.path.isabs(full), f"Hudi stores full paths: {info['filePath']}"
            rel = os.path.relpath(full, os.path.abspath(path))
            assert rel.startswith(part + "/"), (rel, part)
            in_plan.add(rel)
    assert in_plan == planned, f"plan of {clean}: extra {in_plan - planned}, missing {planned - in_plan}"
    meta = read_avro(hoodie / f"{clean}.clean")
    assert meta["startCleanTime"] == clean and meta["version"] == 2
    assert meta["earliestCommitToRetain"] == (earliest or "")
    assert meta["lastCompletedCommitTimestamp"] == tl.instants[-1]
    assert meta["totalFilesDeleted"] == len(planned)
    assert set(meta["partitionMetadata"]) == {f.rsplit("/", 1)[0] for f in planned}
    for part, pm in meta["partitionMetadata"].items():
        names = sorted(f.rsplit("/", 1)[-1] for f in planned if f.rsplit("/", 1)[0] == part)
        assert pm["partitionPath"] == part and pm["policy"] == policy
        assert sorted(pm["deletePathPatterns"]) == names and sorted(pm["successDeleteFiles"]) == names
        assert pm["failedDeleteFiles"] == []


def check_cleans_since(path: str, done: set[str], policy: str, n: int) -> set[str]:
    """Every clean completed after `done`: its plan is what Hudi's rules delete from the timeline it
    saw (minus what earlier cleans already deleted). Returns the new clean instants."""
    new = [c for c in cleans(path) if c not in done]
    for clean in new:
        tl = written(path).before(clean)
        earliest = tl.earliest(policy, n)
        already = set()
        for older in cleans(path):
            if older < clean:
                meta = read_avro(Path(path, ".hoodie", f"{older}.clean"))
                already |= {f"{p}/{name}" for p, pm in meta["partitionMetadata"].items()
                            for name in pm["successDeleteFiles"]}
        planned = tl.all_files() - tl.kept(policy, earliest, n) - already
        check_clean_instant(path, clean, policy, earliest, planned)
    return set(new)


def check_time_travel(spark, h: History, rs: bool = True) -> tuple[list[str], list[str]]:
    """Readable instants read the model's rows (pyhudi, and hudi-rs if `rs`); the others raise
    InstantNotFoundError naming the earliest readable one. Returns (readable, unreadable)."""
    tl, disk = written(h.path), on_disk(h.path)
    readable = [ts for ts in tl.instants if tl.needed(ts) <= disk]
    unreadable = [ts for ts in tl.instants if ts not in readable]
    for ts in readable:
        expected = h.at(ts)
        got = pyhudi.read(spark, h.path, {"hoodie.datasource.read.as.of.instant": ts}).toArrow()
        assert rows_by_key(got, "id", COLS) == expected, f"pyhudi as of {ts}"
        if rs:
            assert rows_by_key(hudi_rs(h.path, as_of=ts), "id", COLS) == expected, f"hudi-rs as of {ts}"
    for ts in unreadable:
        first = next(r for r in readable if r > ts)
        with pytest.raises(InstantNotFoundError, match=f"earliest instant still readable is {first}"):
            pyhudi.read(spark, h.path, {"as.of.instant": ts}).toArrow()
    return readable, unreadable


def check_latest(spark, h: History) -> None:
    assert rows_by_key(pyhudi.read(spark, h.path).toArrow(), "id", COLS) == h.model
    assert rows_by_key(hudi_rs(h.path), "id", COLS) == h.model


# ---------------------------------------------------------------------------------------------------------
# The histories
# ---------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def raw(spark, tmp_path_factory):
    """COW, automatic cleaning off; its six commits are dated 6h, 5h, 4h, 2.5h, 1.5h and 0.5h ago."""
    h = History(str(tmp_path_factory.mktemp("raw") / "t"), _opts(**{"hoodie.clean.automatic": "false"}))
    now_ms = int(time.time() * 1000)
    ago = iter([6, 5, 4, 2.5, 1.5, 0.5])

    def dated(after=None, local=False):  # the writer's call signature; the date comes from `ago`
        return ms_to_instant(now_ms - round(next(ago) * HOUR_MS))

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("pyhudi.writer.client.new_instant_time", dated)
        h.upsert(spark, range(0, 120), ts=1)
        h.upsert(spark, range(0, 120, 3), ts=2)
        h.upsert(spark, range(1, 120, 4), ts=3)
        h.overwrite_partition(spark, range(200, 230), ts=4, part="p1")
        h.upsert(spark, range(0, 120, 5), ts=5)
        h.delete(spark, range(0, 120, 6))
    return h


@pytest.fixture(scope="module")
def mor(spark, tmp_path_factory):
    """MOR, inline compaction every 2 deltacommits, automatic cleaning keeping 1 commit: inline for
    the first three writes, async for the last two. Records the table's state after every write."""
    h = History(str(tmp_path_factory.mktemp("mor") / "t"), _opts(
        "MERGE_ON_READ", **{"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "2",
                            "hoodie.cleaner.commits.retained": "1"}))
    log: dict[str, Any] = {"after_write": [], "submitted": []}
    real_submit = background.submit

    def spy(table_uri, name, job):
        log["submitted"].append(name)
        return real_submit(table_uri, name, job)

    steps = [lambda **o: h.upsert(spark, range(0, 120), ts=1, **o),
             lambda **o: h.upsert(spark, range(0, 120, 3), ts=2, **o),
             lambda **o: h.upsert(spark, range(1, 120, 4), ts=3, **o),
             lambda **o: h.delete(spark, range(0, 120, 10), **o),
             lambda **o: h.upsert(spark, range(0, 120, 5), ts=5, **o)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(background, "submit", spy)
        for i, step in enumerate(steps):
            run_async = i >= 3
            if i == 4:  # a query planned now, collected after the next write and its background clean
                lazy, log["lazy_expected"] = pyhudi.read(spark, h.path), dict(h.model)
            step(**({"hoodie.clean.async": "true"} if run_async else {}))
            errors = pyhudi.wait_for_table_services(h.path) if run_async else []
            log["after_write"].append((run_async, errors, on_disk(h.path), written(h.path), cleans(h.path)))
    log["lazy_rows"] = rows_by_key(lazy.toArrow(), "id", COLS)
    h.log = log  # type: ignore[attr-defined]
    return h


# ---------------------------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------------------------

def test_automatic_cleaning_off_keeps_every_version(spark, raw):
    """hoodie.clean.automatic=false: no clean instant, every file every commit wrote is on disk."""
    tl = written(raw.path)
    assert len(tl.instants) == 6 and cleans(raw.path) == []
    assert not any(".clean" in n for n in timeline_files(raw.path))
    assert on_disk(raw.path) == tl.all_files()
    assert len(tl.slices) >= 5 and max(len(s) for s in tl.slices.values()) >= 3, "several groups and versions"
    assert tl.replaced, "the insert_overwrite replaced the groups of p1"
    readable, unreadable = check_time_travel(spark, raw)
    assert unreadable == [] and readable == tl.instants
    check_latest(spark, raw)


def test_keep_latest_commits_on_demand_cow(spark, raw, tmp_path):
    h = raw.copy(tmp_path / "t")
    o = {**h.opts, "hoodie.cleaner.commits.retained": "2"}
    tl = written(h.path)
    earliest = tl.earliest(COMMITS, 2)
    assert earliest == tl.instants[4], "E is the 2nd newest of 6 commits"
    keep = tl.kept(COMMITS, earliest)
    replaced_files = {f for k, s in tl.slices.items() if k in tl.replaced for fs in s.values() for f in fs}
    assert replaced_files and not replaced_files & keep, "replacecommit (4th) is older than E: p1's old groups go"
    results = pyhudi.clean(spark, h.path, o)
    assert len(results) == 1 and results[0].deleted == len(tl.all_files() - keep) and results[0].failed == 0
    assert results[0].earliest_retained == earliest
    assert on_disk(h.path) == keep
    check_clean_instant(h.path, results[0].instant, COMMITS, earliest, tl.all_files() - keep)
    readable, unreadable = check_time_travel(spark, h)
    assert readable[0] == tl.instants[3] and unreadable == tl.instants[:3], \
        "the commit just before E is still readable (its slices are the latest before E), older ones are not"
    check_latest(spark, h)
    # A second clean right away finds nothing: no new instant.
    assert pyhudi.clean(spark, h.path, o) == [] and cleans(h.path) == [results[0].instant]


def test_keep_latest_file_versions_cow(spark, raw, tmp_path):
    h = raw.copy(tmp_path / "t")
    tl = written(h.path)
    done: set[str] = set()
    for n in (2, 1):
        o = {**h.opts, "hoodie.cleaner.policy": VERSIONS, "hoodie.cleaner.fileversions.retained": str(n)}
        pyhudi.clean(spark, h.path, o)
        keep = tl.kept(VERSIONS, None, n)
        assert on_disk(h.path) == keep, f"fileversions.retained={n}"
        assert all(len([b for b in s if s[b] <= keep]) <= n for k, s in tl.slices.items())
        assert not any(k in tl.replaced for k, s in tl.slices.items() if any(s[b] <= keep for b in s)), \
            "replaced groups go at once under file versions"
        (clean,) = check_cleans_since(h.path, done, VERSIONS, n)
        done.add(clean)
    check_latest(spark, h)
    readable, _ = check_time_travel(spark, h)
    assert readable[-1] == tl.instants[-1]


def test_keep_latest_by_hours_cow(spark, raw, tmp_path):
    h = raw.copy(tmp_path / "t")
    o = {**h.opts, "hoodie.cleaner.policy": HOURS, "hoodie.cleaner.hours.retained": "3"}
    tl = written(h.path)
    cutoff = ms_to_instant(int(time.time() * 1000) - 3 * HOUR_MS)
    earliest = tl.earliest(HOURS, cutoff=cutoff)
    assert earliest == tl.instants[3], "commits are 6, 5, 4, 2.5, 1.5, 0.5 hours old: E is the 2.5h one"
    (result,) = pyhudi.clean(spark, h.path, o)
    keep = tl.kept(HOURS, earliest)
    assert on_disk(h.path) == keep and result.earliest_retained == earliest
    replaced_files = {f for k, s in tl.slices.items() if k in tl.replaced for fs in s.values() for f in fs}
    assert replaced_files <= keep, "replaced by E itself, not before it: the old groups of p1 stay"
    check_clean_instant(h.path, result.instant, HOURS, earliest, tl.all_files() - keep)
    readable, unreadable = check_time_travel(spark, h)
    assert unreadable == tl.instants[:1] and readable[0] == tl.instants[1], \
        "p1's old groups stay whole; p0 keeps its last version before E, so only the first commit is gone"


def test_dry_run_lists_files_and_reasons_and_deletes_nothing(spark, raw, tmp_path):
    h = raw.copy(tmp_path / "t")
    tl = written(h.path)
    disk, hoodie = on_disk(h.path), timeline_files(h.path)
    for policy, extra, earliest in ((COMMITS, {"hoodie.cleaner.commits.retained": "2"}, tl.instants[4]),
                                    (VERSIONS, {"hoodie.cleaner.fileversions.retained": "1"}, None)):
        draft = pyhudi.clean(spark, h.path, {**h.opts, "hoodie.cleaner.policy": policy, **extra}, dry_run=True)
        n = int(next(iter(extra.values())))
        assert {f.path for f in draft.files} == tl.all_files() - tl.kept(policy, earliest, n)
        assert (draft.earliest_to_retain.timestamp if draft.earliest_to_retain else None) == earliest
        for f in draft.files:
            key = (f.partition, BASE_RE.match(f.path.rsplit("/", 1)[-1]).group("fid"))
            assert f.path.startswith(f.partition + "/")
            if key in tl.replaced:
                assert f"replaced by replacecommit {tl.replaced[key]}" in f.reason, f.reason
            elif policy == COMMITS:
                assert earliest in f.reason, f.reason
            else:
                assert "fileversions.retained" in f.reason, f.reason
        assert on_disk(h.path) == disk and timeline_files(h.path) == hoodie, "a dry run changes nothing"


def test_interrupted_clean_resumes_from_its_plan(spark, raw, tmp_path):
    h = raw.copy(tmp_path / "t")
    o = {**h.opts, "hoodie.cleaner.commits.retained": "2"}
    tl = written(h.path)
    earliest = tl.earliest(COMMITS, 2)
    planned = tl.all_files() - tl.kept(COMMITS, earliest)
    storage = Storage(h.path)
    cfg = CleanConfig.from_options(Options.parse(o))
    # 1. Scheduled only: the plan is on the timeline, nothing is deleted yet.
    instant = clean_svc.schedule(storage, load_table_config(storage), cfg)
    assert instant is not None
    hoodie = Path(h.path, ".hoodie")
    assert (hoodie / f"{instant}.clean.requested").exists() and not (hoodie / f"{instant}.clean.inflight").exists()
    assert on_disk(h.path) == tl.all_files()
    # 2. Crashed while executing: inflight, half of the plan's files deleted.
    (hoodie / f"{instant}.clean.inflight").write_bytes((hoodie / f"{instant}.clean.requested").read_bytes())
    gone = sorted(planned)[::2]
    for f in gone:
        os.remove(os.path.join(h.path, f))
    # Time travel must not trust the listing while the clean is pending.
    hit = [ts for ts in tl.instants if tl.needed(ts) & set(gone)]
    assert hit
    with pytest.raises(InstantNotFoundError, match="earliest instant still readable is"):
        pyhudi.read(spark, h.path, {"as.of.instant": hit[0]}).toArrow()
    # 3. The next clean finishes it (the same instant; nothing else is left to plan).
    results = pyhudi.clean(spark, h.path, o)
    assert [r.instant for r in results] == [instant] and cleans(h.path) == [instant]
    assert on_disk(h.path) == tl.all_files() - planned
    check_clean_instant(h.path, instant, COMMITS, earliest, planned)
    check_time_travel(spark, h)


def test_refuses_unsafe_or_invalid_settings_and_deletes_nothing(spark, raw, tmp_path):
    h = raw.copy(tmp_path / "t")
    disk, hoodie = on_disk(h.path), timeline_files(h.path)
    bad = [({"hoodie.cleaner.commits.retained": "0"}, "hoodie.cleaner.commits.retained"),
           ({"hoodie.cleaner.commits.retained": "-1"}, "hoodie.cleaner.commits.retained"),
           ({"hoodie.cleaner.policy": VERSIONS, "hoodie.cleaner.fileversions.retained": "0"},
            "hoodie.cleaner.fileversions.retained"),
           ({"hoodie.cleaner.fileversions.retained": "-2"}, "hoodie.cleaner.fileversions.retained"),
           ({"hoodie.cleaner.policy": HOURS, "hoodie.cleaner.hours.retained": "-3"}, "hoodie.cleaner.hours.retained"),
           ({"hoodie.cleaner.policy": "KEEP_EVERYTHING_FOREVER"}, "hoodie.cleaner.policy")]
    for extra, key in bad:
        with pytest.raises(InvalidConfigError, match=re.escape(key)):
            pyhudi.clean(spark, h.path, {**h.opts, **extra})
        with pytest.raises(InvalidConfigError, match=re.escape(key)):
            pyhudi.clean(spark, h.path, {**h.opts, **extra}, dry_run=True)
        assert on_disk(h.path) == disk and timeline_files(h.path) == hoodie, extra
    # A writer with such settings is refused before it writes anything.
    df = spark.createDataFrame([(0, "x", 9, "p0")], SCHEMA)
    with pytest.raises(InvalidConfigError, match="hoodie.cleaner.commits.retained"):
        pyhudi.write(df, h.path, {**h.opts, "hoodie.clean.automatic": "true", "hoodie.cleaner.commits.retained": "0"})
    assert on_disk(h.path) == disk and timeline_files(h.path) == hoodie
    check_latest(spark, h)


def test_pending_clean_with_a_newer_plan_version_is_refused(spark, raw, tmp_path):
    h = raw.copy(tmp_path / "t")
    tl = written(h.path)
    victims = sorted(tl.all_files() - tl.kept(COMMITS, tl.earliest(COMMITS, 2)))[:3]
    named: dict[str, Any] = {}
    for name in ("HoodieActionInstant", "HoodieCleanFileInfo"):
        fastavro.parse_schema(SCHEMAS[name], named)
    schema = fastavro.parse_schema(SCHEMAS["HoodieCleanerPlan"], named, expand=True)  # self-contained
    by_part: dict[str, list] = {}
    for f in victims:
        by_part.setdefault(f.rsplit("/", 1)[0], []).append(
            {"filePath": os.path.abspath(os.path.join(h.path, f)), "isBootstrapBaseFile": False})
    plan = {"earliestInstantToRetain": {"timestamp": tl.instants[4], "action": "commit", "state": "COMPLETED"},
            "lastCompletedCommitTimestamp": tl.instants[-1], "policy": COMMITS, "filesToBeDeletedPerPartition": {},
            "version": 99, "filePathsToBeDeletedPerPartition": by_part, "partitionsToBeDeleted": []}
    buf = io.BytesIO()
    fastavro.writer(buf, schema, [plan])
    instant = new_instant_time(after=tl.instants[-1])
    Path(h.path, ".hoodie", f"{instant}.clean.requested").write_bytes(buf.getvalue())
    disk, hoodie = on_disk(h.path), timeline_files(h.path)
    for run in (lambda: pyhudi.clean(spark, h.path, {**h.opts, "hoodie.cleaner.commits.retained": "2"}),
                lambda: pyhudi.clean(None, h.path)):  # no Spark session, no options: table config only
        with pytest.raises(UnsupportedTableError, match=r"version 99") as err:
            run()
        assert instant in str(err.value) and "Nothing was deleted" in str(err.value)
        assert on_disk(h.path) == disk and timeline_files(h.path) == hoodie
    assert all(os.path.exists(os.path.join(h.path, f)) for f in victims)
    check_latest(spark, h)


def test_mor_automatic_and_async_cleaning(spark, mor):
    """After every write (inline clean for the first three, async for the last two) the files on disk
    are what Hudi's rules keep, base files and logs going together, and every clean's timeline files
    say so."""
    done: set[str] = set()
    async_cleans: list[int] = []
    for i, (run_async, errors, disk, tl, cleans_then) in enumerate(mor.log["after_write"]):
        assert errors == [], f"write {i}: background service failed: {errors}"
        earliest = tl.earliest(COMMITS, 1)
        assert disk == tl.kept(COMMITS, earliest), f"after write {i}: files on disk vs Hudi's rules"
        if run_async and set(cleans_then) - done:
            async_cleans.append(i)
        done |= set(cleans_then)
    assert mor.log["submitted"].count("clean") == 2, "the last two writes cleaned in the background"
    assert async_cleans, "a background clean deleted files"
    assert len(cleans(mor.path)) >= 2
    tl = written(mor.path)
    assert any(a == "commit" for _, a in tl.writes), "inline compactions ran"
    deleted = tl.all_files() - on_disk(mor.path)
    assert any(".log." in f for f in deleted) and any(f.endswith(".parquet") for f in deleted), \
        "old slices went with their logs"
    check_cleans_since(mor.path, set(), COMMITS, 1)


def test_mor_read_planned_before_a_background_clean_returns_its_rows(mor):
    *_, cleans_before = mor.log["after_write"][3]
    *_, cleans_after = mor.log["after_write"][4]
    assert set(cleans_after) - set(cleans_before), "the last write's background clean deleted files"
    assert mor.log["lazy_rows"] == mor.log["lazy_expected"]


def test_mor_time_travel_after_cleaning(spark, mor):
    tl = written(mor.path)
    readable, unreadable = check_time_travel(spark, mor)
    assert unreadable and len(readable) >= 2, "commits.retained=1: E and the commit before it"
    assert readable[-1] == tl.instants[-1]
    check_latest(spark, mor)


def test_reads_started_on_retained_instants_survive_cleaning(spark, raw, tmp_path):
    """A query planned on the latest snapshot (or on the instant just before E) keeps its files while
    later writes clean automatically (commits.retained=2: two more commits)."""
    h = raw.copy(tmp_path / "t")
    h.opts = {**h.opts, "hoodie.clean.automatic": "true", "hoodie.cleaner.commits.retained": "2"}
    r5, r6 = written(h.path).instants[4:6]
    latest = pyhudi.read(spark, h.path)
    previous = pyhudi.read(spark, h.path, {"as.of.instant": r5})
    h.upsert(spark, range(0, 120, 2), ts=7)
    tl = written(h.path)
    assert len(cleans(h.path)) == 1 and tl.all_files() - on_disk(h.path), "the write cleaned files"
    assert on_disk(h.path) == tl.kept(COMMITS, tl.earliest(COMMITS, 2))
    assert rows_by_key(previous.toArrow(), "id", COLS) == h.at(r5)
    h.upsert(spark, range(1, 120, 2), ts=8)
    assert len(cleans(h.path)) == 2
    assert rows_by_key(latest.toArrow(), "id", COLS) == h.at(r6)
    tl = written(h.path)
    assert on_disk(h.path) == tl.kept(COMMITS, tl.earliest(COMMITS, 2))
    check_cleans_since(h.path, set(), COMMITS, 2)
    readable, _ = check_time_travel(spark, h)
    assert r6 in readable
    check_latest(spark, h)
