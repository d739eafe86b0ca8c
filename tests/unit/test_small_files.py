"""COW small-file candidates (Hudi's UpsertPartitioner.getSmallFiles, reference §10.3)."""

from __future__ import annotations

from pyhudi.model.commit_metadata import CommitMetadata
from pyhudi.writer.config import SizingConfig
from pyhudi.writer.partitioner import SmallFile, plan_buckets
from pyhudi.writer.profile import WorkloadProfile
from pyhudi.writer.small_files import cow_small_files
from tests.unit._tables import T, Table


def _candidates(t: Table, sizing: SizingConfig, partitions=("p=1",), **view_kw):
    view = t.view(**view_kw)
    return cow_small_files(view, view.timeline, partitions, sizing)


def test_strictly_below_limit_in_view_order_uncapped(tmp_path):
    t = Table(tmp_path)
    t.instant(T(10), "commit")
    t.base("p=1", "a-0", T(10), size=999)
    t.base("p=1", "b-0", T(10), size=1000)   # == limit: not a candidate
    t.base("p=1", "c-0", T(10), size=1)
    t.base("p=1", "d-0", T(10), size=0)
    t.base("p=1", "e-0", T(10), size=5000)
    out = _candidates(t, SizingConfig(max_file_size=2000, small_file_limit=1000))
    assert set(out) == {"p=1"}
    got = {(s.file_id, s.size) for s in out["p=1"]}
    assert got == {("a-0", 999), ("c-0", 1), ("d-0", 0)}
    for s in out["p=1"]:
        assert s.base_instant == T(10)
        assert s.base_file == f"p=1/{s.file_id}_0-1-1_{T(10)}.parquet"
        assert s.partition == "p=1"


def test_only_latest_committed_version_counts(tmp_path):
    t = Table(tmp_path)
    t.instant(T(10), "commit")
    t.base("p=1", "a-0", T(10), size=10)
    t.instant(T(20), "commit")
    t.base("p=1", "a-0", T(20), size=5000)  # latest version is big: no candidate
    t.base("p=1", "b-0", T(10), size=10)
    t.instant(T(30), "commit", "inflight")
    t.base("p=1", "b-0", T(30), size=5000)  # inflight version invisible: older small one counts
    t.base("p=1", "c-0", T(30), size=1)     # inflight new group: invisible
    out = _candidates(t, SizingConfig(small_file_limit=1000))
    assert [(s.file_id, s.base_instant, s.size) for s in out["p=1"]] == [("b-0", T(10), 10)]


def test_disabled_by_limit_or_empty_timeline(tmp_path):
    t = Table(tmp_path)
    t.base("p=1", "a-0", T(1), size=10)
    assert _candidates(t, SizingConfig(small_file_limit=1000)) == {}  # no completed instant
    t.instant(T(10), "commit")
    t.base("p=1", "b-0", T(10), size=10)
    assert _candidates(t, SizingConfig(small_file_limit=0)) == {}
    assert _candidates(t, SizingConfig(small_file_limit=-1)) == {}
    # a-0 is older than the first active instant (archived data), so it is a candidate too
    assert {s.file_id for s in _candidates(t, SizingConfig(small_file_limit=11))["p=1"]} == {"a-0", "b-0"}
    assert _candidates(t, SizingConfig(small_file_limit=10)) == {}


def test_only_clean_completed_is_no_commit(tmp_path):
    t = Table(tmp_path)
    t.instant(T(10), "clean")
    t.base("p=1", "a-0", T(1), size=10)  # archived data, but the commits timeline is empty
    assert _candidates(t, SizingConfig(small_file_limit=1000)) == {}


def test_replaced_and_pending_clustering_groups_excluded(tmp_path):
    t = Table(tmp_path)
    t.instant(T(10), "commit")
    for fid in ("a-0", "b-0", "c-0"):
        t.base("p=1", fid, T(10), size=10)
    t.instant(T(20), "replacecommit", meta=CommitMetadata(operation_type="CLUSTER",
                                                          partition_to_replace_file_ids={"p=1": ["a-0"]}))
    t.base("p=1", "n-0", T(20), size=10)
    out = _candidates(t, SizingConfig(small_file_limit=1000), pending_clustering={("p=1", "b-0"): T(30)})
    assert {s.file_id for s in out["p=1"]} == {"c-0", "n-0"}


def test_partitions_without_candidates_absent(tmp_path):
    t = Table(tmp_path)
    t.instant(T(10), "commit")
    t.base("p=1", "a-0", T(10), size=10)
    t.base("p=2", "b-0", T(10), size=5000)
    out = _candidates(t, SizingConfig(small_file_limit=1000), partitions=("p=1", "p=2", "p=3"))
    assert list(out) == ["p=1"]


def test_end_to_end_with_partitioner(tmp_path):
    """Candidates feed the partitioner: 2 small files of 400 B and 100 B, max 1000, avg 300, 10 inserts."""
    t = Table(tmp_path)
    t.instant(T(10), "commit")
    t.base("p=1", "a-0", T(10), size=400)
    t.base("p=1", "big-0", T(10), size=900)  # >= limit 800: not a candidate
    sizing = SizingConfig(max_file_size=1000, small_file_limit=800)
    small = _candidates(t, sizing)
    assert [s.file_id for s in small["p=1"]] == ["a-0"]
    wp = WorkloadProfile()
    wp.partition("p=1").num_inserts = 10
    plan = plan_buckets(wp, small, {}, sizing, 300)
    assert [(b.kind.value, b.expected_inserts) for b in plan.buckets] == [
        ("UPDATE", 2), ("INSERT", 3), ("INSERT", 3), ("INSERT", 2)]
    assert plan.buckets[0].base_file == small["p=1"][0].base_file
    assert isinstance(small["p=1"][0], SmallFile)
