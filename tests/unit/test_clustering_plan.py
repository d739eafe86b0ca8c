"""Clustering plans without Spark: eligible slices, groups, partitions, and the written plan.

Tables are hand-made (`_cluster_tables.py`): `hoodie.properties`, commit or deltacommit JSON,
compaction and clustering plans as Avro, and sparse data files of chosen sizes. Planning works
from the timeline, file names and sizes only.

What Hudi 0.14/0.15 does (`PartitionAwareClusteringPlanStrategy`,
`SparkSizeBasedClusteringPlanStrategy`, `ClusteringPlanPartitionFilter`) and these tests hold
pyhudi to:

- Eligible: the latest slice of each live file group whose base file is below
  `small.file.limit` (a log-only slice counts as 0, so it qualifies), minus groups in a pending
  compaction or clustering.
- Groups: slices sorted by base size, largest first, a log-only slice weighing
  `hoodie.parquet.max.file.size`; next-fit into groups of at most `max.bytes.per.group` (a slice
  larger than that still gets a group of its own); `numOutputFileGroups = ceil(bytes / target)`;
  at most `max.num.groups` groups in the plan; a trailing single-slice group only when
  `single.group.clustering.enabled` or sort columns are set.
- pyhudi's one deliberate departure: a single-slice group that would be rewritten unchanged
  (nothing to merge, nothing to sort) is skipped.
- Partitions: `partition.selected`, `partition.regex.pattern` (a full match), then the filter
  mode: RECENT_DAYS keeps `lookback` partitions (all when lookback <= 0) after skipping the
  `skipfromlatest` newest; SELECTED_PARTITIONS keeps [begin, end].
- The plan: `<T>.replacecommit.requested` holding HoodieRequestedReplaceMetadata with
  operationType CLUSTER and a HoodieClusteringPlan whose slices name their files by full path.
"""

from __future__ import annotations

import dataclasses
import io
import math
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import fastavro
import pytest

from pyhudi.model import avro_models as am
from pyhudi.model.table_config import COW, MOR
from pyhudi.services import clustering
from pyhudi.services.clustering_plan import select_partitions
from pyhudi.storage import Storage
from pyhudi.timeline.timeline import ActiveTimeline
from tests.unit._cluster_tables import MAX_FILE_SIZE, MB, ClusterTable, T, cfg, decision, groups_of

DAYS = ["2025-01-01", "2025-01-02", "2025-01-03", "2025-01-04", "2025-01-05"]


@pytest.fixture()
def cow(tmp_path: Path) -> ClusterTable:
    return ClusterTable(tmp_path / "cow", COW)


@pytest.fixture()
def mor(tmp_path: Path) -> ClusterTable:
    return ClusterTable(tmp_path / "mor", MOR)


def sized_files(t: ClusterTable, ts: str, partition: str, *sizes_mb: int) -> list[str]:
    """One base file per size, named f<size>; returns the file ids."""
    fids = [f"f{s}" for s in sizes_mb]
    t.write(ts, bases=tuple((partition, f, s * MB) for f, s in zip(fids, sizes_mb, strict=True)))
    return fids


# =========================================================================== eligible slices
def test_base_files_below_the_small_file_limit_are_eligible(cow: ClusterTable) -> None:
    cow.write(T(1), bases=(("p=a", "f1", 10 * MB), ("p=a", "f2", 299 * MB), ("p=a", "f3", 300 * MB),
                           ("p=a", "f4", 400 * MB)))
    cow.write(T(2), bases=(("p=a", "f5", MB),), state="inflight")  # not committed: not part of the table
    draft = cow.draft()
    assert groups_of(draft) == [["f2", "f1"]]
    assert draft.groups[0].num_output_file_groups == 1
    assert sorted(d.file_id for d in draft.decisions) == ["f1", "f2", "f3", "f4"], "one decision per latest slice"
    for fid, size in (("f3", 300 * MB), ("f4", 400 * MB)):  # the limit itself is not below the limit
        d = decision(draft, fid)
        assert not d.chosen and d.size == size and d.group is None
        assert "small-file limit" in d.reason and str(300 * MB) in d.reason
    assert decision(draft, "f1").chosen and decision(draft, "f1").group == 0
    assert all(d.reason for d in draft.decisions)

    # A lower limit leaves nothing.
    lower = cow.draft(cfg(small_file_limit=10 * MB))
    assert lower.empty and not any(d.chosen for d in lower.decisions)
    assert "not below the clustering small-file limit 10485760 B" in decision(lower, "f1").reason


def test_log_only_slices_are_eligible_and_weigh_a_max_size_file(mor: ClusterTable) -> None:
    mor.write(T(1), bases=(("p=a", "big", 200 * MB), ("p=a", "mid", 100 * MB), ("p=a", "small", 5 * MB),
                           ("p=a", "huge", 400 * MB)))
    # `lo` is a file group of log files only (its base instant is the deltacommit that created it).
    mor.write(T(2), logs=(("p=a", "lo", T(2), 1, 3 * MB), ("p=a", "huge", T(1), 1, MB)))
    draft = mor.draft()
    assert groups_of(draft) == [["big", "lo", "mid", "small"]], "largest first; the log-only slice as 120 MiB"
    lo = decision(draft, "lo")
    assert lo.chosen and lo.size == MAX_FILE_SIZE
    # A big base file stays out even with logs to merge: the limit is on the base file.
    assert not decision(draft, "huge").chosen and "small-file limit" in decision(draft, "huge").reason
    # Group bytes count the log-only slice as a max-size file: 200 + 120 + 100 + 5 MiB, target 100 MiB.
    draft = mor.draft(cfg(target_file_max_bytes=100 * MB))
    assert draft.groups[0].num_output_file_groups == math.ceil(425 / 100)
    # The weight is hoodie.parquet.max.file.size: at 250 MiB the log-only slice sorts first.
    assert groups_of(mor.draft(max_file_size=250 * MB)) == [["lo", "big", "mid", "small"]]


def test_groups_under_pending_compaction_or_clustering_are_excluded(mor: ClusterTable) -> None:
    mor.write(T(1), bases=tuple(("p=a", f"g{i}", 10 * MB) for i in range(1, 6)))
    mor.write(T(2), logs=(("p=a", "g1", T(1), 1, MB), ("p=a", "g2", T(1), 1, MB)))
    mor.compaction(T(3), [("p=a", "g1")])
    mor.hudi_clustering(T(4), [[("p=a", "g2")]], state="inflight")
    # An insert overwrite in flight is a replacecommit without a clustering plan: it holds no group.
    (mor.hoodie / f"{T(5)}.replacecommit.requested").write_bytes(
        am.write_instant_avro("HoodieRequestedReplaceMetadata", am.empty_requested_replace_metadata()))
    draft = mor.draft()
    assert decision(draft, "g1").reason == "under pending compaction" and not decision(draft, "g1").chosen
    g2 = decision(draft, "g2")
    assert not g2.chosen and "pending clustering" in g2.reason and T(4) in g2.reason
    assert groups_of(draft) == [["g3", "g4", "g5"]]


def test_groups_holding_log_files_of_a_pending_write_are_excluded(mor: ClusterTable) -> None:
    """A pending (maybe failed) deltacommit's log files already sit in committed slices; a plan naming them
    could never run once the write is rolled back (its rollback deletes them)."""
    from pyhudi.writer.markers import Marking, create_marker

    mor.write(T(1), bases=tuple(("p=a", f"g{i}", 10 * MB) for i in range(1, 5)))
    mor.write(T(2), logs=(("p=a", "g1", T(1), 1, MB), ("p=a", "g2", T(1), 1, MB)), state="inflight")
    for fid in ("g1", "g2"):
        create_marker(mor.storage, T(2), "p=a", f".{fid}_{T(1)}.log.1_0-1-1", "APPEND", Marking())
    # A new base file version of g4 (not written yet) is no reason to wait: no plan can name it.
    create_marker(mor.storage, T(2), "p=a", f"g4_0-1-1_{T(2)}.parquet", "MERGE", Marking())
    draft = mor.draft()
    for fid in ("g1", "g2"):
        d = decision(draft, fid)
        assert not d.chosen and f"log files of pending write {T(2)}" in d.reason
    assert groups_of(draft) == [["g3", "g4"]]


# =========================================================================== groups
def test_slices_are_packed_largest_first_into_groups_of_max_bytes(cow: ClusterTable) -> None:
    sized_files(cow, T(1), "p=a", 15, 40, 20, 50, 30, 45)
    draft = cow.draft(cfg(max_bytes_per_group=100 * MB, target_file_max_bytes=40 * MB))
    # Next-fit over 50 45 40 30 20 15: [50 45] (95), [40 30 20] (90), [15] alone. Hudi drops that trailing
    # one-slice group (it would be rewritten unchanged); pyhudi joins it to the group before it (105 MB, past
    # max.bytes.per.group by less than the small-file limit), so the partition is not left with two small
    # files (f15 and that group's tail) for the next clustering to join (`partition_bins`).
    assert groups_of(draft) == [["f50", "f45"], ["f40", "f30", "f20", "f15"]]
    assert [g.num_output_file_groups for g in draft.groups] == [math.ceil(95 / 40), math.ceil(105 / 40)] == [3, 3]
    assert [(d.file_id, d.group) for d in draft.decisions if d.chosen] == [
        ("f50", 0), ("f45", 0), ("f40", 1), ("f30", 1), ("f20", 1), ("f15", 1)]
    # A lone small file of a partition is still left alone: nothing to join it with.
    sized_files(cow, T(2), "p=b", 16)
    assert "rewritten unchanged" in decision(cow.draft(cfg(max_bytes_per_group=100 * MB)), "f16").reason


def test_a_group_may_fill_max_bytes_exactly(cow: ClusterTable) -> None:
    sized_files(cow, T(1), "p=a", 60, 40)
    draft = cow.draft(cfg(max_bytes_per_group=100 * MB, target_file_max_bytes=50 * MB))
    assert groups_of(draft) == [["f60", "f40"]] and draft.groups[0].num_output_file_groups == 2


@pytest.mark.parametrize(("sizes_mb", "target_mb", "expected"), [
    ((40, 40), 40, 2), ((41, 40), 40, 3), ((10, 5), 1024, 1), ((100, 100, 100), 64, 5)])
def test_num_output_file_groups_is_ceil_of_bytes_over_target(cow: ClusterTable, sizes_mb: tuple[int, ...],
                                                            target_mb: int, expected: int) -> None:
    cow.write(T(1), bases=tuple(("p=a", f"f{i}", s * MB) for i, s in enumerate(sizes_mb)))
    draft = cow.draft(cfg(target_file_max_bytes=target_mb * MB))
    assert len(draft.groups) == 1 and draft.groups[0].num_output_file_groups == expected


def test_an_oversized_slice_gets_a_group_of_its_own(cow: ClusterTable) -> None:
    sized_files(cow, T(1), "p=a", 150, 30, 20)
    draft = cow.draft(cfg(max_bytes_per_group=100 * MB, target_file_max_bytes=100 * MB, sort_columns="id"))
    assert groups_of(draft) == [["f150"], ["f30", "f20"]]
    assert [g.num_output_file_groups for g in draft.groups] == [2, 1]


def test_a_single_slice_split_into_several_files_is_not_unchanged(cow: ClusterTable) -> None:
    """150 MiB with a 100 MiB target is rewritten as 2 files: not "unchanged", so not skipped (Hudi keeps it)."""
    sized_files(cow, T(1), "p=a", 150, 30, 20)
    draft = cow.draft(cfg(max_bytes_per_group=100 * MB, target_file_max_bytes=100 * MB))
    assert groups_of(draft) == [["f150"], ["f30", "f20"]]
    assert [g.num_output_file_groups for g in draft.groups] == [2, 1]


def test_max_num_groups_counts_across_partitions(cow: ClusterTable) -> None:
    for i, p in enumerate(("p=a", "p=b", "p=c")):
        cow.write(T(i + 1), bases=tuple((p, f"{p[-1]}{j}", 50 * MB) for j in range(4)))
    draft = cow.draft(cfg(max_bytes_per_group=100 * MB, max_num_groups=3))
    assert [(g.slices[0].partition, len(g.slices)) for g in draft.groups] == [("p=a", 2), ("p=a", 2), ("p=b", 2)]
    rejected = [d for d in draft.decisions if not d.chosen]
    assert sorted(d.file_id for d in rejected) == ["b2", "b3", "c0", "c1", "c2", "c3"]
    assert all("max.num.groups=3" in d.reason for d in rejected)
    assert len(cow.draft(cfg(max_bytes_per_group=100 * MB)).groups) == 6


# =========================================================================== single-slice groups
def test_a_single_slice_rewritten_unchanged_is_skipped(cow: ClusterTable, mor: ClusterTable) -> None:
    sized_files(cow, T(1), "p=a", 10)
    draft = cow.draft()
    assert draft.empty
    assert "single file group with nothing to merge or sort would be rewritten unchanged" in \
        decision(draft, "f10").reason
    # With sort columns the rewrite orders the records: kept.
    sorted_draft = cow.draft(cfg(sort_columns="id"))
    assert groups_of(sorted_draft) == [["f10"]] and decision(sorted_draft, "f10").chosen
    # With log files the rewrite merges them: kept; a log-only slice alone too.
    mor.write(T(1), bases=(("p=a", "g1", 10 * MB),))
    mor.write(T(2), logs=(("p=a", "g1", T(1), 1, MB), ("p=b", "lo", T(2), 1, MB)))
    assert groups_of(mor.draft()) == [["g1"], ["lo"]]


def test_single_group_clustering_disabled_drops_a_trailing_single_slice(mor: ClusterTable) -> None:
    mor.write(T(1), bases=(("p=a", "g1", 10 * MB), ("p=b", "b50", 50 * MB), ("p=b", "b45", 45 * MB),
                           ("p=b", "b10", 10 * MB)))
    mor.write(T(2), logs=(("p=a", "g1", T(1), 1, MB), ("p=b", "b10", T(1), 1, MB)))
    off = cfg(single_group="false", max_bytes_per_group=100 * MB)
    draft = mor.draft(off)
    assert groups_of(draft) == [["b50", "b45"]]
    for fid in ("g1", "b10"):
        assert "single.group.clustering.enabled=false" in decision(draft, fid).reason
    assert groups_of(mor.draft(cfg(max_bytes_per_group=100 * MB))) == [["g1"], ["b50", "b45"], ["b10"]]


def test_sort_columns_keep_a_single_slice_group_even_when_single_groups_are_disabled(cow: ClusterTable) -> None:
    """Hudi: shouldClusteringSingleGroup() = sort columns set || single.group.clustering.enabled."""
    sized_files(cow, T(1), "p=a", 10)
    draft = cow.draft(cfg(single_group="false", sort_columns="id"))
    assert groups_of(draft) == [["f10"]]


def test_single_group_setting_applies_only_to_the_trailing_group(mor: ClusterTable) -> None:
    """Hudi checks single.group.clustering.enabled only for the last group of a partition; a slice larger
    than max.bytes.per.group closes a group of its own before that and is kept."""
    mor.write(T(1), bases=(("p=a", "big", 150 * MB), ("p=a", "f30", 30 * MB), ("p=a", "f20", 20 * MB)))
    mor.write(T(2), logs=(("p=a", "big", T(1), 1, MB),))
    draft = mor.draft(cfg(single_group="false", max_bytes_per_group=100 * MB))
    assert groups_of(draft) == [["big"], ["f30", "f20"]]


# =========================================================================== partitions
@pytest.mark.parametrize(("options", "kept"), [
    ({}, DAYS),
    ({"selected": "2025-01-02,2025-01-04"}, ["2025-01-02", "2025-01-04"]),
    ({"regex": "2025-01-0[12]"}, ["2025-01-01", "2025-01-02"]),
    ({"regex": "2025-01-0"}, []),  # Pattern.matches: the whole path must match
    ({"regex": ".*-0[345]", "filter_mode": "RECENT_DAYS", "lookback": "2"}, ["2025-01-04", "2025-01-05"]),
    ({"filter_mode": "RECENT_DAYS"}, ["2025-01-04", "2025-01-05"]),  # lookback 2 by default
    ({"filter_mode": "RECENT_DAYS", "lookback": "2", "skip_latest": "1"}, ["2025-01-03", "2025-01-04"]),
    ({"filter_mode": "RECENT_DAYS", "lookback": "10", "skip_latest": "2"}, DAYS[:3]),
    ({"filter_mode": "RECENT_DAYS", "lookback": "1", "skip_latest": "5"}, []),
    ({"filter_mode": "SELECTED_PARTITIONS", "begin": "2025-01-02", "end": "2025-01-04"}, DAYS[1:4]),
    ({"filter_mode": "SELECTED_PARTITIONS", "begin": "2025-01-03"}, DAYS[2:]),
    ({"filter_mode": "SELECTED_PARTITIONS", "end": "2025-01-01"}, DAYS[:1]),
    ({"filter_mode": "SELECTED_PARTITIONS", "begin": "2025-01-02", "end": "2025-01-02"}, DAYS[1:2]),
])
def test_partition_selection(options: dict[str, str], kept: list[str]) -> None:
    got, skipped = select_partitions(list(DAYS), cfg(**options))
    assert sorted(got) == kept
    assert sorted(skipped) == sorted(set(DAYS) - set(kept)), "every partition left out has a reason"
    assert all(skipped.values())


def test_recent_days_lookback_zero_means_all_partitions() -> None:
    """ClusteringPlanPartitionFilter.recentDaysFilter: .limit(lookback > 0 ? lookback : partitions.size())."""
    got, _ = select_partitions(list(DAYS), cfg(filter_mode="RECENT_DAYS", lookback="0", skip_latest="1"))
    assert sorted(got) == DAYS[:4]


def test_partition_filters_apply_to_the_plan(cow: ClusterTable) -> None:
    for i, day in enumerate(DAYS):
        cow.write(T(i + 1), bases=((day, f"{day}-a", 10 * MB), (day, f"{day}-b", 20 * MB)))
    draft = cow.draft(cfg(filter_mode="RECENT_DAYS", lookback="1"))
    assert draft.partitions_considered == ["2025-01-05"]
    assert groups_of(draft) == [["2025-01-05-b", "2025-01-05-a"]]
    assert draft.partitions_skipped == {d: "outside the RECENT_DAYS window" for d in DAYS[:4]}
    assert {d.partition for d in draft.decisions} == {"2025-01-05"}, "slices of skipped partitions are not listed"
    draft = cow.draft(cfg(selected="2025-01-01,2025-01-03"))
    assert [g.slices[0].partition for g in draft.groups] == ["2025-01-01", "2025-01-03"]
    assert "partition.selected" in draft.partitions_skipped["2025-01-02"]
    draft = cow.draft(cfg(regex="nothing"))
    assert draft.empty and draft.partitions_considered == [] and len(draft.partitions_skipped) == 5


# =========================================================================== schedule: the written plan
def test_schedule_writes_hudis_requested_replace_metadata(mor: ClusterTable) -> None:
    mor.write(T(1), bases=(("p=a", "a1", 10 * MB), ("p=a", "a2", 20 * MB), ("p=b", "b1", 400 * MB),
                           ("p=b", "b2", 5 * MB), ("p=b", "b3", 6 * MB)))
    mor.write(T(2), logs=(("p=a", "a2", T(1), 1, MB), ("p=a", "lo", T(2), 1, 2 * MB)))
    config = cfg(sort_columns="id,name", layout="z-order", target_file_max_bytes=64 * MB)
    before = {p.name for p in mor.hoodie.iterdir() if p.is_file()}
    instant = mor.schedule(config)
    assert instant is not None and instant > T(2)
    assert {p.name for p in mor.hoodie.iterdir() if p.is_file()} - before == {f"{instant}.replacecommit.requested"}

    data = (mor.hoodie / f"{instant}.replacecommit.requested").read_bytes()
    reader: Any = fastavro.reader(io.BytesIO(data))
    assert reader.writer_schema["name"] == "org.apache.hudi.avro.model.HoodieRequestedReplaceMetadata"
    (record,) = list(reader)
    meta = am.read_instant_avro(data)
    assert record == meta
    assert meta["operationType"] == "CLUSTER" and meta["version"] == 1
    plan = meta["clusteringPlan"]
    assert plan["version"] == 1 and plan["preserveHoodieMetadata"] is True
    assert plan["strategy"]["strategyClassName"] == \
        "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy"
    params = plan["strategy"]["strategyParams"]
    assert params["hoodie.clustering.plan.strategy.sort.columns"] == "id,name"
    assert params["hoodie.layout.optimize.strategy"] == "z-order"
    assert params["hoodie.clustering.plan.strategy.target.file.max.bytes"] == str(64 * MB)

    storage = Storage(str(mor.root))
    uri = storage.uri
    g0, g1 = plan["inputGroups"]
    # p=a: lo (log-only, weighs 120 MiB), a2 (20 MiB + log), a1 (10 MiB) -> 150 MiB / 64 MiB = 3 files.
    assert [(s["fileId"], s["partitionPath"]) for s in g0["slices"]] == [("lo", "p=a"), ("a2", "p=a"), ("a1", "p=a")]
    lo, a2, a1 = g0["slices"]
    assert lo["dataFilePath"] == "" and lo["deltaFilePaths"] == [uri(f"p=a/.lo_{T(2)}.log.1_0-1-1")]
    assert a2["dataFilePath"] == uri(f"p=a/a2_0-1-1_{T(1)}.parquet")
    assert a2["deltaFilePaths"] == [uri(f"p=a/.a2_{T(1)}.log.1_0-1-1")]
    assert a1["dataFilePath"] == uri(f"p=a/a1_0-1-1_{T(1)}.parquet") and a1["deltaFilePaths"] == []
    for path in (a1["dataFilePath"], a2["dataFilePath"], *a2["deltaFilePaths"], *lo["deltaFilePaths"]):
        assert urlparse(path).scheme == "file" and Path(urlparse(path).path).is_file(), path
    assert all(s["bootstrapFilePath"] == "" for s in g0["slices"])
    assert g0["numOutputFileGroups"] == 3
    # FileSliceMetricUtils: whole MB; read = bases + logs, write = bases with a max-size file per log-only slice.
    assert g0["metrics"] == {"TOTAL_IO_READ_MB": 33.0, "TOTAL_IO_WRITE_MB": 150.0, "TOTAL_IO_MB": 183.0,
                             "TOTAL_LOG_FILES_SIZE": float(3 * MB), "TOTAL_LOG_FILES": 2.0}
    # p=b: b1 is too big; b3 and b2 are packed together.
    assert [s["fileId"] for s in g1["slices"]] == ["b3", "b2"] and g1["numOutputFileGroups"] == 1
    assert g1["metrics"]["TOTAL_IO_MB"] == 22.0 and g1["metrics"]["TOTAL_LOG_FILES"] == 0.0

    assert clustering.pending_clusterings(storage) == [instant]
    assert clustering.read_plan(ActiveTimeline.load(storage), instant) == plan
    view = mor.view()
    assert view.pending_clustering_file_ids() == {("p=a", f): instant for f in ("lo", "a2", "a1")} | {
        ("p=b", f): instant for f in ("b3", "b2")}


def test_second_schedule_does_not_replan_pending_groups(cow: ClusterTable) -> None:
    sized_files(cow, T(1), "p=a", 10, 20)
    first = cow.schedule()
    assert first is not None
    assert cow.schedule() is None and cow.schedule(cfg(sort_columns="id")) is None
    assert cow.replace_requests() == [first]
    draft = cow.draft()
    assert {d.file_id: d.reason for d in draft.decisions} == {
        "f20": f"already in pending clustering {first}", "f10": f"already in pending clustering {first}"}

    # New small files: the next plan takes only them.
    cow.write(T(3), bases=(("p=a", "n5", 5 * MB), ("p=a", "n6", 6 * MB)))
    second = cow.schedule()
    assert second is not None and second > first
    plan = cow.requested(second)["clusteringPlan"]
    assert [[s["fileId"] for s in g["slices"]] for g in plan["inputGroups"]] == [["n6", "n5"]]

    # Once the first completes, its output (one small file) is not clustered again on its own,
    # and the replaced groups are gone from the view.
    cow.complete_clustering(first, {"p=a": [30 * MB]})
    draft = cow.draft(dataclasses.replace(cfg(), incremental=False))  # every partition's decisions
    assert draft.empty
    assert {d.file_id for d in draft.decisions} == {"n5", "n6", f"c{first[-4:]}-pa-0"}
    assert cow.draft().empty  # incremental (p=a holds one small output of the last clustering): the same plan
    assert cow.schedule() is None


def test_execution_finds_the_files_of_a_plan_written_by_hudi(cow: ClusterTable) -> None:
    """Hudi writes slice paths as Hadoop prints them (`file:/abs/path`, `s3://bucket/...`); execution must
    resolve them to the same table-relative files as pyhudi's own `file:///abs/path`."""
    sized_files(cow, T(1), "p=a", 10, 20)
    cow.hudi_clustering(T(2), [[("p=a", "f10"), ("p=a", "f20")]])
    plan = clustering.read_plan(ActiveTimeline.load(cow.storage), T(2))
    paths = [s["dataFilePath"] for s in plan["inputGroups"][0]["slices"]]
    assert paths[0].startswith("file:/") and not paths[0].startswith("file://")
    rel = f"p=a/f10_0-1-1_{T(1)}.parquet"
    assert clustering._rel("p=a", cow.storage.uri(rel)) == rel
    assert clustering._rel("p=a", paths[0]) == rel


def test_execution_resolves_s3_and_s3a_paths_alike() -> None:
    """EMR's Hudi writes `s3://` paths; pyhudi's storage.uri writes `s3a://`: both are the same file."""
    assert clustering._rel("p=a", "s3://bucket/tables/t/p=a/f.parquet") == "p=a/f.parquet"
    assert clustering._rel("p=a", "s3a://bucket/tables/t/p=a/f.parquet") == "p=a/f.parquet"


# --------------------------------------------------------------------------- output file sizes at execution

def _ctx(target: int, small: int) -> Any:
    from pyhudi.io.base_file import ParquetSettings
    from pyhudi.services.clustering import ClusterContext

    return ClusterContext("file:///t", "1", None, "{}", ParquetSettings(with_bloom=False), target, (), "linear",  # type: ignore[arg-type]
                          small)


@pytest.mark.parametrize("total_mb,expected_mb", [
    (15.0, [7.5, 7.5]),          # an even split keeps both files above the 7 MB limit: no small remainder
    (20.0, [7.76, 7.76, 4.48]),  # even thirds (6.7 MB) would all be small: fill to the target instead
    (7.0, [7.0]),
    (3.0, [3.0]),                # everything fits one file, small or not
])
def test_clustering_output_split_keeps_bytes_in_well_sized_files(total_mb: float, expected_mb: list[float]) -> None:
    from pyhudi.services.clustering import _next_file_rows

    mb = 1 << 20
    ctx = _ctx(8 * mb, 7 * mb)
    per_row = 1000.0
    remaining = int(total_mb * mb / per_row)
    files = []
    while remaining:
        rows = _next_file_rows(ctx, remaining, per_row)
        files.append(rows * per_row / mb)
        remaining -= rows
    assert files == pytest.approx(expected_mb, abs=0.01)
