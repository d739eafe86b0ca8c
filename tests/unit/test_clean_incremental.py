"""Incremental clean planning (Hudi's hoodie.cleaner.incremental.mode): the plan made from the
partitions written since the last clean equals the plan of a full scan, over random histories, and
it lists only those partitions.

Histories are hand-made (tests/unit/test_clean_plan.Hand: instant files plus tiny data files named
like Hudi's): writes of new file groups and new versions (COW) or log files (MOR), replacecommits,
compactions, and cleans that delete what the full-scan plan names and record their earliest
retained commit, as pyhudi's cleaner does; with nothing to delete, an empty clean that records it
(`hoodie.write.empty.clean.create.duration.ms`) or none (-1, Hudi's default).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyhudi.model import avro_models as am
from pyhudi.model.table_config import COW, MOR
from pyhudi.services.clean import empty_clean_due
from pyhudi.services.clean_plan import clean_scope, partitions_to_clean, plan_clean
from pyhudi.storage import Storage
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.builder import build_view
from pyhudi.writer.config import CleanConfig
from tests.unit._tables import T
from tests.unit.test_clean_plan import Hand

# Adversarial partition paths: digits, unicode, a value with '/', a deep path.
PARTS = ("p=1", "p=10", "p=é ü", "p=a/b", "p=2024/01/02")


def _cfg(incremental: bool, retained: int) -> CleanConfig:
    return CleanConfig(policy="KEEP_LATEST_COMMITS", commits_retained=retained, incremental=incremental)


def _plan(h: Hand, cfg: CleanConfig) -> set[tuple[str, str]]:
    view = build_view(h.storage, h.config, ActiveTimeline.load(h.storage))
    return {(f.partition, f.path) for f in plan_clean(h.storage, view, cfg).files}


def _record_clean(h: Hand, ts: str, cfg: CleanConfig, empty_cleans: bool = False) -> None:
    """Delete what the full scan plans and complete a clean instant with its earliest retained commit;
    with nothing to delete, an empty clean only when `empty_cleans` and the cleaner would write one."""
    timeline = ActiveTimeline.load(h.storage)
    view = build_view(h.storage, h.config, timeline)
    draft = plan_clean(h.storage, view, _cfg(False, cfg.commits_retained))
    if draft.empty and not (empty_cleans and empty_clean_due(timeline, draft, cfg, False)):
        return
    for f in draft.files:
        (h.root / f.path).unlink()
    by_part: dict[str, list[str]] = {}
    for f in draft.files:
        by_part.setdefault(f.partition, []).append(f.path.rsplit("/", 1)[-1])
    meta = am.clean_metadata(
        start_clean_time=ts, earliest_commit_to_retain=draft.earliest_to_retain.timestamp
        if draft.earliest_to_retain else "",
        partition_metadata={p: am.clean_partition_metadata(
            partition_path=p, policy=cfg.policy, delete_path_patterns=n, success_delete_files=n,
            failed_delete_files=[]) for p, n in by_part.items()})
    (h.hoodie / f"{ts}.clean.requested").write_bytes(b"")
    (h.hoodie / f"{ts}.clean.inflight").write_bytes(b"")
    (h.hoodie / f"{ts}.clean").write_bytes(am.write_instant_avro("HoodieCleanMetadata", meta))


class History:
    """A random history over PARTS; `groups[partition]` = [(fid, latest slice base instant, next log version)]."""

    def __init__(self, root: Path, table_type: str, rng: random.Random) -> None:
        self.h = Hand(root, table_type)
        self.rng = rng
        self.n = 0
        self.groups: dict[str, list[list[Any]]] = {p: [] for p in PARTS}

    def ts(self) -> str:
        self.n += 1
        return T(self.n)

    def write(self) -> None:
        ts = self.ts()
        bases, logs = [], []
        for part in self.rng.sample(PARTS, self.rng.randint(1, 2)):
            live = self.groups[part]
            if not live or self.rng.random() < 0.3:
                fid = f"{part[-1]}{self.n:04d}-fid"
                live.append([fid, ts, 1])
                bases.append((part, fid))
                continue
            g = self.rng.choice(live)
            if self.h.config.is_mor and self.rng.random() < 0.7:
                logs.append((part, g[0], g[1], g[2]))
                g[2] += 1
            else:
                bases.append((part, g[0]))
                g[1], g[2] = ts, 1
        self.h.write(ts, bases=tuple(bases), logs=tuple(logs))

    def replace(self) -> None:
        part = self.rng.choice([p for p in PARTS if self.groups[p]] or [PARTS[0]])
        if not self.groups[part]:
            return self.write()
        ts = self.ts()
        old = self.groups[part].pop(self.rng.randrange(len(self.groups[part])))
        fid = f"r{self.n:04d}-fid"
        self.groups[part].append([fid, ts, 1])
        self.h.write(ts, bases=((part, fid),), replaced={part: [old[0]]})
        return None

    def compact(self) -> None:
        with_logs = [(p, g) for p in PARTS for g in self.groups[p] if g[2] > 1]
        if not with_logs:
            return self.write()
        part, g = self.rng.choice(with_logs)
        ts = self.ts()
        self.h.compaction(ts, [(part, g[0])], completed=True)
        g[1], g[2] = ts, 1
        return None


USED: list[int] = []


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), mor=st.booleans(), retained=st.integers(1, 4), empty_cleans=st.booleans())
def test_incremental_plan_equals_full_scan(tmp_path_factory: pytest.TempPathFactory, seed: int, mor: bool,
                                           retained: int, empty_cleans: bool) -> None:
    rng = random.Random(seed)
    hist = History(tmp_path_factory.mktemp("hist"), MOR if mor else COW, rng)
    incremental_used = 0
    for _ in range(rng.randint(8, 30)):
        step = rng.random()
        if step < 0.6:
            hist.write()
        elif step < 0.75:
            hist.replace()
        elif step < 0.85 and mor:
            hist.compact()
        else:
            full, incr = _plan(hist.h, _cfg(False, retained)), _plan(hist.h, _cfg(True, retained))
            assert incr == full, f"incremental plan differs: missing {full - incr}, extra {incr - full}"
            _record_clean(hist.h, hist.ts(), _cfg(True, retained), empty_cleans)
        full, incr = _plan(hist.h, _cfg(False, retained)), _plan(hist.h, _cfg(True, retained))
        assert incr == full, f"incremental plan differs: missing {full - incr}, extra {incr - full}"
        view = build_view(hist.h.storage, hist.h.config, ActiveTimeline.load(hist.h.storage))
        timeline = view.timeline
        scope = partitions_to_clean(view, _cfg(True, retained), _earliest(timeline, retained))
        incremental_used += scope is not None and len(scope) < len(PARTS)
    USED.append(incremental_used)


def test_property_exercised_incremental_scopes() -> None:
    """The property above is not vacuous: most histories planned from fewer partitions than all."""
    if not USED:
        pytest.skip("runs after test_incremental_plan_equals_full_scan")
    assert sum(1 for u in USED if u) >= len(USED) // 3, USED


def _earliest(timeline: ActiveTimeline, retained: int) -> Any:
    from pyhudi.services.clean_plan import earliest_commit_to_retain

    return earliest_commit_to_retain(timeline, _cfg(True, retained))


class CountingStorage(Storage):
    """Counts directory listings per path."""

    listed: list[str]

    def list_dir(self, rel: str) -> Any:
        self.listed.append(rel)
        return super().list_dir(rel)


def test_clean_lists_only_partitions_written_since_last_clean(tmp_path: Path) -> None:
    """40 partitions, a clean, then new versions in one partition: the next plan lists that partition
    only (no partition discovery walk), and deletes what a full scan deletes."""
    h = Hand(tmp_path / "t")
    parts = [f"p={i}" for i in range(40)]
    for n in (1, 2, 3):
        h.write(T(n), bases=tuple((p, f"fid{i}") for i, p in enumerate(parts)))
    cfg = _cfg(True, 1)
    _record_clean(h, T(4), cfg)  # retains T3: deletes T1 everywhere
    assert not (h.root / "p=5" / f"fid5_0-1-1_{T(1)}.parquet").exists()
    h.write(T(5), bases=(("p=7", "fid7"),))
    h.write(T(6), bases=(("p=7", "fid7"),))
    _record_clean(h, T(7), cfg)  # retains T6: T2 everywhere, T3 in p=7
    for n in (8, 9, 10):
        h.write(T(n), bases=(("p=7", "fid7"),))
    storage = CountingStorage(str(h.root))
    storage.listed = []
    view = build_view(storage, h.config, ActiveTimeline.load(storage))
    draft = plan_clean(storage, view, cfg)
    assert {f.path for f in draft.files} == {f"p=7/fid7_0-1-1_{T(n)}.parquet" for n in (5, 6, 8)}
    assert draft.scope.startswith("incremental: 1 partition"), draft.scope
    data_listings = [r for r in storage.listed if not r.startswith(".hoodie")]
    assert data_listings == ["p=7"], data_listings
    assert {(f.partition, f.path) for f in draft.files} == _plan(h, _cfg(False, 1))


def test_full_scan_when_incremental_cannot_be_trusted(tmp_path: Path) -> None:
    """The mode off, file versions, or a savepoint: every partition is scanned (no clean yet: the partitions
    where commits before the earliest retained one superseded a version, `scope_without_clean`)."""
    h = Hand(tmp_path / "t")
    h.write(T(1), bases=(("p=1", "a"), ("p=2", "b"), ("p=3", "c")))  # p=3: one version only
    for n in range(2, 5):
        h.write(T(n), bases=(("p=1", "a"), ("p=2", "b")))
    timeline = ActiveTimeline.load(h.storage)
    view = build_view(h.storage, h.config, timeline)
    earliest = _earliest(timeline, 1)
    assert partitions_to_clean(view, _cfg(True, 1), earliest) == ["p=1", "p=2"]  # no clean yet
    assert partitions_to_clean(view, _cfg(True, 1), None) == []  # nothing retained: Hudi scans nothing
    assert partitions_to_clean(view, _cfg(False, 1), earliest) is None
    assert partitions_to_clean(view, CleanConfig(policy="KEEP_LATEST_FILE_VERSIONS"), earliest) is None
    _record_clean(h, T(5), _cfg(False, 1))
    h.write(T(6), bases=(("p=1", "a"),))
    timeline = ActiveTimeline.load(h.storage)
    view = build_view(h.storage, h.config, timeline)
    assert partitions_to_clean(view, _cfg(True, 1), _earliest(timeline, 1)) == ["p=1", "p=2"]
    (h.hoodie / f"{T(2)}.savepoint").write_bytes(b"")
    timeline = ActiveTimeline.load(h.storage)
    view = build_view(h.storage, h.config, timeline)
    assert partitions_to_clean(view, _cfg(True, 1), _earliest(timeline, 1)) is None
    assert "savepoint" in clean_scope(view, _cfg(True, 1), _earliest(timeline, 1))[1]
