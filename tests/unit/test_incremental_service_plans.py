"""Incremental compaction and clustering planning (Hudi 1.x's RFC-83, `services/plan_scope.py`): over
randomized histories written in-process, the plan made from the partitions written since the last
completed plan (plus the partitions it left out) selects exactly the file slices and groups a full
scan selects, and lists only those partitions.

Histories: upserts, inserts and deletes into random partitions (unicode, digits, values with `/`),
empty batches, compactions and clusterings scheduled and run at random points or left pending,
writes failed and left inflight (rolled back by the next write), writes refused because they update
a group under pending clustering, max-groups / IO-budget limits and partition filters that change
from plan to plan. Every table is read back with hudi-rs and compared with a model of its rows.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pyhudi
from pyhudi import faults
from pyhudi.cli.compaction_cmd import pending_writes
from pyhudi.errors import HudiError
from pyhudi.model import avro_models as am
from pyhudi.model.table_config import load_table_config
from pyhudi.services import clustering, compaction
from pyhudi.services.clustering_plan import ClusteringPlanDraft, draft_plan
from pyhudi.services.plan_scope import MISSING, WATERMARK
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action, Instant, State
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.builder import build_view
from pyhudi.writer.client import WriteClient
from pyhudi.writer.config import ClusteringConfig, CompactionConfig
from tests.helpers import hudi_rs

PARTS = ("1", "10", "é ü", "a/b", "2024/01/02", "007")
MAX_FILE = 125829120
BASE = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts"}


@contextlib.contextmanager
def _failing_write() -> Iterator[None]:
    """The write fails just before its commit and cannot roll itself back: left inflight, as a crashed
    writer leaves it (the next write rolls it back)."""
    old = os.environ.get(faults.RAISE_ENV)
    os.environ[faults.RAISE_ENV] = "write.before_commit"
    faults.reset()
    try:
        with mock.patch.object(WriteClient, "_rollback_own", lambda *a, **k: None):
            yield
    finally:
        if old is None:
            os.environ.pop(faults.RAISE_ENV, None)
        else:
            os.environ[faults.RAISE_ENV] = old
        faults.reset()


class History:
    """A table written in-process and the model of its rows (key -> (partition, value, ts))."""

    def __init__(self, root: Path, table_type: str, rng: random.Random) -> None:
        self.path = str(root / "t")
        self.rng = rng
        self.opts = {**BASE, "hoodie.datasource.write.table.type": table_type}
        self.mor = table_type == "MERGE_ON_READ"
        self.model: dict[str, tuple[str, str | None, int]] = {}
        self.n = 0
        self.comp = CompactionConfig(target_io=rng.choice([0, 500 * 1024]),
                                     log_size_threshold=rng.choice([0, 0, 3000]))
        self.clus = ClusteringConfig(max_num_groups=rng.choice([1, 2, 30]),
                                     max_bytes_per_group=rng.choice([1, 2 * 1024**3, 2 * 1024**3]),
                                     single_group_enabled=rng.random() < 0.5)
        self.incremental_plans = 0

    # -- writes -----------------------------------------------------------------------------
    def _batch(self, keys: list[str], parts: list[str], ts: int) -> pa.Table:
        values = [None if self.rng.random() < 0.2 else f"v{ts}-{k}" for k in keys]
        return pa.table({"id": keys, "part": parts, "ts": [ts] * len(keys), "v": pa.array(values, pa.string())})

    def write(self, fail: bool = False) -> None:
        self.n += 1
        ts = self.n
        op = self.rng.choice(["upsert", "upsert", "insert", "delete"]) if self.model else "insert"
        keys: list[str] = []
        parts: list[str] = []
        if op == "delete":
            keys = self.rng.sample(sorted(self.model), min(len(self.model), self.rng.randint(1, 3)))
            parts = [self.model[k][0] for k in keys]
        elif self.rng.random() >= 0.05:  # else an empty batch
            for part in self.rng.sample(PARTS, self.rng.randint(1, 2)):
                same = [k for k, v in self.model.items() if v[0] == part]
                for _ in range(self.rng.randint(1, 4)):
                    if op == "upsert" and same and self.rng.random() < 0.6:
                        keys.append(self.rng.choice(same))
                    else:
                        keys.append(f"k{self.n}-{len(keys)}-ü")
                    parts.append(part)
            keys, parts = [list(x) for x in zip(*dict(zip(keys, parts)).items())] if keys else ([], [])
        batch = self._batch(keys, parts, ts)
        small = {"hoodie.parquet.small.file.limit": "0"} if self.rng.random() < 0.6 else {}
        opts = {**self.opts, **small, "hoodie.datasource.write.operation": op}
        try:
            with _failing_write() if fail else contextlib.nullcontext():
                pyhudi.write(batch, self.path, opts)
        except (HudiError, faults.InjectedFault):
            return  # refused (an update under pending clustering, an empty table) or failed: nothing applied
        for row in batch.to_pylist():
            if op == "delete":
                self.model.pop(row["id"], None)
            else:
                self.model[row["id"]] = (row["part"], row["v"], ts)

    # -- services -----------------------------------------------------------------------------
    def storage(self) -> Storage:
        return Storage(self.path)

    def schedule_compaction(self, run: bool) -> None:
        s = self.storage()
        instant = compaction.schedule(s, load_table_config(s), self.comp, force=True, max_file_size=MAX_FILE)
        if instant and run:
            pyhudi.compact(None, self.path, self.opts, instant)

    def schedule_clustering(self, run: bool) -> None:
        s = self.storage()
        self.clus = dataclasses.replace(self.clus, **_filters(self.rng))
        instant = clustering.schedule(s, load_table_config(s), self.clus, MAX_FILE)
        if instant and run:
            with contextlib.suppress(HudiError):  # a conflicting write rolled it back
                pyhudi.cluster(None, self.path, self.opts, instant)

    # -- the property ---------------------------------------------------------------------------
    def check_plans(self) -> None:
        view = self._view()
        # Compaction is not scheduled while a write is pending (its uncommitted log files would count).
        if self.mor and not pending_writes(view.timeline):
            incr = compaction.plan_compaction(view, self.comp, MAX_FILE)
            full = compaction.plan_compaction(self._view(), dataclasses.replace(self.comp, incremental=False), MAX_FILE)
            assert _slices(incr.chosen) == _slices(full.chosen), incr.scope.reason
            assert set(full.missing) <= set(incr.missing) | _outside(incr.scope.partitions, full.missing)
            self.incremental_plans += incr.scope.incremental
        cincr = draft_plan(self._view(), self.clus, MAX_FILE)
        cfull = draft_plan(self._view(), dataclasses.replace(self.clus, incremental=False), MAX_FILE)
        assert _groups(cincr) == _groups(cfull), cincr.scope.reason if cincr.scope else ""
        self.incremental_plans += bool(cincr.scope and cincr.scope.incremental)

    def _view(self) -> Any:
        s = self.storage()
        return build_view(s, load_table_config(s), ActiveTimeline.load(s))

    def check_rows(self) -> None:
        mine = pyhudi.read(self.path).to_pylist() if self.model else []
        assert {r["id"]: (r["part"], r["v"], r["ts"]) for r in mine} == self.model
        # hudi-rs 0.5 drops logs written against a pending compaction: finish those first.
        for instant in compaction.pending_compactions(self.storage()):
            pyhudi.compact(None, self.path, self.opts, instant)
        got = hudi_rs(self.path)
        rows = {r["id"]: (r["part"], r["v"], r["ts"]) for r in (got.to_pylist() if got is not None else [])}
        assert rows == self.model


def _outside(scope: list[str] | None, parts: list[str]) -> set[str]:
    """Partitions a full scan left out that the incremental plan never looked at (nothing there to plan)."""
    return set() if scope is None else set(parts) - set(scope)


def _filters(rng: random.Random) -> dict[str, Any]:
    """Partition filters that change from plan to plan: what they leave out is planned later."""
    pick = rng.random()
    if pick < 0.5:
        return {"partition_regex": None, "partition_selected": (), "filter_mode": "NONE"}
    if pick < 0.7:
        return {"partition_regex": r"\d.*", "partition_selected": (), "filter_mode": "NONE"}
    if pick < 0.85:
        return {"partition_regex": None, "partition_selected": tuple(rng.sample(PARTS, 2)), "filter_mode": "NONE"}
    return {"partition_regex": None, "partition_selected": (), "filter_mode": "SELECTED_PARTITIONS",
            "begin_partition": "1", "end_partition": "2024/99"}


def _slices(chosen: list[compaction.CompactionCandidate]) -> list[tuple[str, str, str, tuple[str, ...]]]:
    return [(c.slice.partition, c.slice.file_id, c.slice.base_instant, tuple(lf.name for lf in c.slice.log_files))
            for c in chosen]


def _groups(d: ClusteringPlanDraft) -> list[tuple[tuple[tuple[str, str, str], ...], int]]:
    return [(tuple((s.partition, s.file_id, s.base_instant) for s in g.slices), g.num_output_file_groups)
            for g in d.groups]


USED: list[int] = []


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), mor=st.booleans())
def test_incremental_plans_equal_full_scans(tmp_path_factory: pytest.TempPathFactory, seed: int, mor: bool) -> None:
    rng = random.Random(seed)
    hist = History(tmp_path_factory.mktemp("hist"), "MERGE_ON_READ" if mor else "COPY_ON_WRITE", rng)
    for _ in range(3):
        hist.write()
    for _ in range(rng.randint(10, 18)):
        step = rng.random()
        if step < 0.45:
            hist.write()
        elif step < 0.52:
            hist.write(fail=True)
        elif step < 0.72 and mor:
            hist.schedule_compaction(run=rng.random() < 0.7)
        else:
            hist.schedule_clustering(run=rng.random() < 0.7)
        hist.check_plans()
    hist.check_rows()
    USED.append(hist.incremental_plans)


def test_property_exercised_incremental_plans() -> None:
    """The property above is not vacuous: many histories planned incrementally at some point."""
    if not USED:
        pytest.skip("runs after test_incremental_plans_equal_full_scans")
    assert sum(1 for u in USED if u) >= len(USED) // 3, USED


# --------------------------------------------------------------------------- deterministic cases
class CountingStorage(Storage):
    """Counts directory listings per path."""

    listed: list[str]

    def list_dir(self, rel: str) -> Any:
        self.listed.append(rel)
        return super().list_dir(rel)


def _upsert(path: str, parts: list[str], ts: int, table_type: str = "MERGE_ON_READ", prefix: str = "k",
            **extra: str) -> None:
    keys = [f"{prefix}-{p}-{i}" for p in parts for i in range(2)]
    batch = pa.table({"id": keys, "part": [p for p in parts for _ in range(2)], "ts": [ts] * len(keys),
                      "v": [f"v{ts}"] * len(keys)})
    pyhudi.write(batch, path, {**BASE, "hoodie.datasource.write.table.type": table_type,
                               "hoodie.datasource.write.operation": "upsert", **extra})


def _counting_view(path: str) -> tuple[CountingStorage, Any]:
    storage = CountingStorage(path)
    storage.listed = []
    return storage, build_view(storage, load_table_config(storage), ActiveTimeline.load(storage))


def _data_listings(storage: CountingStorage) -> list[str]:
    return sorted(r for r in storage.listed if not r.startswith(".hoodie"))


def test_compaction_lists_only_partitions_written_since_last_compaction(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    parts = [f"p{i:02d}" for i in range(12)]
    _upsert(path, parts, 1)
    _upsert(path, parts, 2)
    assert pyhudi.compact(None, path, BASE)  # first plan: a full scan, records its watermark
    s = Storage(path)
    tl = ActiveTimeline.load(s)
    done = [i for i in tl.completed() if i.timestamp in tl.compaction_commits][-1]
    plan = am.read_instant_avro(tl.requested_details(Instant(done.timestamp, Action.COMPACTION, State.REQUESTED)))
    assert plan["extraMetadata"][WATERMARK] <= done.timestamp and plan["extraMetadata"][MISSING] == "[]"
    _upsert(path, ["p03", "p07"], 3)
    storage, view = _counting_view(path)
    draft = compaction.plan_compaction(view, CompactionConfig(), MAX_FILE)
    assert draft.scope.incremental and draft.scope.anchor == done.timestamp, draft.scope.reason
    assert _data_listings(storage) == ["p03", "p07"]
    assert {c.slice.partition for c in draft.chosen} == {"p03", "p07"}
    full = compaction.plan_compaction(_counting_view(path)[1], CompactionConfig(incremental=False), MAX_FILE)
    assert _slices(draft.chosen) == _slices(full.chosen)
    assert "full scan" in full.scope.reason and "incremental.enabled=false" in full.scope.reason


def test_io_budget_leaves_partitions_for_the_next_plan(tmp_path: Path) -> None:
    """hoodie.compaction.target.io cuts the plan: the partitions cut are recorded and planned next."""
    path = str(tmp_path / "t")
    parts = ["a", "b", "c"]
    _upsert(path, parts, 1)
    _upsert(path, parts, 2)
    s = Storage(path)
    cfg = CompactionConfig(target_io=0)  # one slice per plan
    first = compaction.schedule(s, load_table_config(s), cfg, force=True, max_file_size=MAX_FILE)
    assert first is not None
    pyhudi.compact(None, path, BASE, first)
    tl = ActiveTimeline.load(s)
    plan = am.read_instant_avro(tl.requested_details(Instant(first, Action.COMPACTION, State.REQUESTED)))
    import json

    assert len(json.loads(plan["extraMetadata"][MISSING])) == 2
    for _ in range(2):  # nothing written since: the cut partitions are planned one by one
        draft = compaction.plan_compaction(build_view(s, load_table_config(s), ActiveTimeline.load(s)), cfg, MAX_FILE)
        assert draft.scope.incremental and len(draft.chosen) == 1, draft.scope.reason
        instant = compaction.schedule(s, load_table_config(s), cfg, force=True, max_file_size=MAX_FILE)
        assert instant is not None
        pyhudi.compact(None, path, BASE, instant)
    view = build_view(s, load_table_config(s), ActiveTimeline.load(s))
    assert compaction.plan_compaction(view, cfg, MAX_FILE).chosen == []
    assert not any(sl.log_files for p in parts for sl in view.latest_file_slices(p))
    rows = {r["id"]: r["v"] for r in hudi_rs(path).to_pylist()}
    assert rows == {f"k-{p}-{i}": "v2" for p in parts for i in range(2)}


def test_write_inflight_during_plan_is_seen_by_the_next(tmp_path: Path) -> None:
    """A write pending while a clustering is planned, completed after it with an older instant time:
    the plan's watermark is at or before that write, so the next plan looks at its partition."""
    path = str(tmp_path / "t")
    opts = {"hoodie.parquet.small.file.limit": "0"}
    _upsert(path, ["x", "y"], 1, "COPY_ON_WRITE", **opts)
    s = Storage(path)
    table = load_table_config(s)
    cfg = ClusteringConfig(single_group_enabled=True)
    _upsert(path, ["x"], 2, "COPY_ON_WRITE", prefix="n", **opts)  # a second small file group in x
    # A pending write in y, as a concurrent writer leaves it while the clustering plans.
    with _failing_write(), contextlib.suppress(faults.InjectedFault):
        pyhudi.write(pa.table({"id": ["new-y"], "part": ["y"], "ts": [3], "v": ["w"]}), path,
                     {**BASE, "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
                      "hoodie.datasource.write.operation": "insert", **opts})
    tl = ActiveTimeline.load(s)
    pending = [i for i in tl.pending() if i.action is Action.COMMIT]
    assert len(pending) == 1
    instant = clustering.schedule(s, table, cfg, MAX_FILE)
    assert instant is not None
    extra = am.read_instant_avro(ActiveTimeline.load(s).requested_details(
        Instant(instant, Action.REPLACE_COMMIT, State.REQUESTED)))["clusteringPlan"]["extraMetadata"]
    assert extra[WATERMARK] <= pending[0].timestamp
    pyhudi.cluster(None, path, BASE, instant)
    # The pending write completes now (its commit file appears with its old instant time).
    inflight = pending[0]
    meta = _fake_commit(s, inflight.timestamp)
    ActiveTimeline.load(s).complete(Instant(inflight.timestamp, Action.COMMIT, State.INFLIGHT), meta)
    view = build_view(s, table, ActiveTimeline.load(s))
    draft = draft_plan(view, cfg, MAX_FILE)
    assert draft.scope is not None and draft.scope.incremental and "y" in (draft.scope.partitions or [])
    full = draft_plan(build_view(s, table, ActiveTimeline.load(s)), dataclasses.replace(cfg, incremental=False),
                      MAX_FILE)
    assert _groups(draft) == _groups(full)


def _fake_commit(s: Storage, instant: str) -> bytes:
    """Commit metadata for the data files the left-inflight write wrote (from its markers)."""
    from pyhudi.model.commit_metadata import CommitMetadata
    from pyhudi.model.file_names import parse_base_file
    from pyhudi.model.write_stat import WriteStat
    from pyhudi.writer.markers import list_marked_files

    meta = CommitMetadata(operation_type="INSERT")
    for rel in list_marked_files(s, instant):
        part, _, name = rel.rpartition("/")
        base = parse_base_file(name)
        assert base is not None
        size = len(s.read_bytes(rel))
        meta.add(WriteStat(file_id=base.file_id, path=rel, partition_path=part, num_writes=1, num_inserts=1,
                           total_write_bytes=size, file_size_in_bytes=size))
    return meta.to_bytes()


@pytest.mark.parametrize("option,reason", [
    ({"hoodie.table.services.incremental.enabled": "false"}, "incremental.enabled=false"),
    ({"hoodie.clustering.plan.partition.filter.mode": "RECENT_DAYS"}, "RECENT_DAYS"),
])
def test_full_scan_reasons(tmp_path: Path, option: dict[str, str], reason: str) -> None:
    from pyhudi.config.registry import Options

    path = str(tmp_path / "t")
    _upsert(path, ["a", "b"], 1)
    cfg = ClusteringConfig.from_options(Options.parse(option))
    storage, view = _counting_view(path)
    draft = draft_plan(view, cfg, MAX_FILE)
    assert draft.scope is not None and not draft.scope.incremental and reason in draft.scope.reason


def test_first_plan_and_changed_settings_are_full_scans(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _upsert(path, ["a", "b"], 1, "COPY_ON_WRITE", **{"hoodie.parquet.small.file.limit": "0"})
    _upsert(path, ["a", "b"], 2, "COPY_ON_WRITE", prefix="n", **{"hoodie.parquet.small.file.limit": "0"})
    s = Storage(path)
    table = load_table_config(s)
    cfg = ClusteringConfig()
    first = draft_plan(build_view(s, table, ActiveTimeline.load(s)), cfg, MAX_FILE)
    assert first.scope is not None and "no completed clustering" in first.scope.reason
    instant = clustering.schedule(s, table, cfg, MAX_FILE)
    assert instant is not None
    pyhudi.cluster(None, path, BASE, instant)
    _upsert(path, ["b"], 3, "COPY_ON_WRITE")
    same = draft_plan(build_view(s, table, ActiveTimeline.load(s)), cfg, MAX_FILE)
    # b was written; a holds only the clustering's own output: one small file, never planned alone
    assert same.scope is not None and same.scope.partitions == ["b"], same.scope.reason
    full = draft_plan(build_view(s, table, ActiveTimeline.load(s)), dataclasses.replace(cfg, incremental=False),
                      MAX_FILE)
    assert _groups(same) == _groups(full)
    big = dataclasses.replace(cfg, small_file_limit=1)  # nothing is small: settings differ from the plan's
    assert "settings changed" in (draft_plan(build_view(s, table, ActiveTimeline.load(s)), big,
                                             MAX_FILE).scope or full.scope).reason
    changed = draft_plan(build_view(s, table, ActiveTimeline.load(s)),
                         dataclasses.replace(cfg, small_file_limit=1234), MAX_FILE)
    assert changed.scope is not None and "settings changed" in changed.scope.reason
    rows = {r["id"]: r["v"] for r in hudi_rs(path).to_pylist()}
    assert rows == {"k-a-0": "v1", "k-a-1": "v1", "k-b-0": "v3", "k-b-1": "v3", "n-a-0": "v2", "n-a-1": "v2",
                    "n-b-0": "v2", "n-b-1": "v2"}


def test_explain_says_whether_the_plan_is_incremental(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`compaction|clustering schedule --explain` name the scope: a full scan and why, or incremental
    from which plan and how many partitions."""
    from pyhudi.cli.main import main

    path = str(tmp_path / "t")
    parts = ["d=2024/01/01", "d=2024/01/02", "d=ü"]
    _upsert(path, parts, 1)
    _upsert(path, parts, 2)
    assert main(["compaction", path, "schedule", "--explain"]) == 0
    out = capsys.readouterr().out
    assert "plan: compaction: full scan: no completed compaction in the active timeline" in out, out
    assert main(["compaction", path, "run"]) == 0
    capsys.readouterr()
    _upsert(path, ["d=ü"], 3)
    _upsert(path, ["d=ü"], 4, prefix="n")
    assert main(["compaction", path, "schedule", "--explain", "--json"]) == 0
    data = __import__("json").loads(capsys.readouterr().out)
    assert data["scope"]["mode"] == "incremental" and data["scope"]["partitions"] == 1, data["scope"]
    assert data["compaction"]["file_slices"] == 1
    assert main(["compaction", path, "run", "--explain"]) == 0
    assert "plan: compaction:" not in capsys.readouterr().err  # a pending plan runs: nothing planned now
    assert main(["clustering", path, "schedule", "--explain"]) == 0
    out = capsys.readouterr().out
    assert "plan: clustering: full scan: no completed clustering" in out, out
    rows = {r["id"]: r["v"] for r in hudi_rs(path).to_pylist()}
    assert rows == {**{f"k-{p}-{i}": "v2" for p in parts[:2] for i in range(2)},
                    "k-d=ü-0": "v3", "k-d=ü-1": "v3", "n-d=ü-0": "v4", "n-d=ü-1": "v4"}


def test_top_level_value_reads_one_key_of_a_commit() -> None:
    """The planners read a clustering's replaced ids and extra metadata without its write stats; keys
    that also appear as partition names, inside strings or escaped must not be taken for them."""
    from pyhudi.model.commit_metadata import CommitMetadata, top_level_value
    from pyhudi.model.write_stat import WriteStat

    meta = CommitMetadata(operation_type="CLUSTER",
                          extra_metadata={"schema": '{"name": "extraMetadata", "operationType": "x"}', "k": "v"},
                          partition_to_replace_file_ids={"operationType": ["f1"], "partitionToReplaceFileIds": ["f2"],
                                                         "é/ü": ["f3"]})
    meta.add(WriteStat(file_id="g", path="extraMetadata/g.parquet", partition_path="extraMetadata"))
    data = meta.to_bytes()
    assert top_level_value(data, "operationType", str) == "CLUSTER"
    assert top_level_value(data, "extraMetadata", dict) == meta.extra_metadata
    assert top_level_value(data, "partitionToReplaceFileIds", dict) == meta.partition_to_replace_file_ids
    assert top_level_value(data, "missing", dict) is None and top_level_value(b"", "x", dict) is None


@pytest.mark.parametrize("window", [1, 2, 3, 5, 7, 64, 16384])
def test_top_level_value_decodes_a_growing_window(window: int) -> None:
    """The value after a key is decoded from a window that grows until the value ends inside it: a value cut
    by the window (a number cut short would still parse), multi-byte characters cut in the middle and a
    value running to the end of the data read as a whole decode reads them."""
    import json

    from pyhudi.model import commit_metadata as cm

    extra = {"é/ü🙂": "x" * 40, "n": "12345", "deep": '{"a": [1, 2]}'}
    for data in (b'{ "count" : 123456789 , "extraMetadata" : ' + json.dumps(extra, ensure_ascii=False).encode() + b" }",
                 b'{"extraMetadata":' + json.dumps(extra, ensure_ascii=False).encode() + b"}",
                 b'{"count":1234567}', b'{"count" : 98765'):
        at = data.find(b'"', 1)
        key_end = data.find(b'"', at + 1) + 1
        whole = json.JSONDecoder().raw_decode(data[key_end:].decode().lstrip()[1:].lstrip())[0]
        assert cm._value_after(data, key_end, window) == whole
    assert cm._value_after(b'"k" : [1, 2', 3, window) is None  # never closed: no value
    assert cm._value_after(b'"k" : "\xff"', 3, window) is None  # not UTF-8
