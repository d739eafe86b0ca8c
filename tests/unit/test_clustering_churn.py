"""Clustering never churns: the planner leaves alone what a rewrite cannot change, and the executor's split
counts the footer (issue 19, item 4). Hand-made tables (`_cluster_tables.py`); no data is read or written.

Hudi plans a partition's trailing one-slice group whenever sort columns are set (`shouldClusteringSingleGroup`),
so the small last file a sorted clustering leaves is re-sorted by every later run (hudi#14086, PR #14087 fixed it
for Flink). pyhudi skips a one-slice group when the slice has no logs, one output file suffices, and the base file
is already in the plan's order: no sort columns, or written by a completed clustering with the same sort columns
and layout.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyhudi.model.table_config import COW, MOR
from pyhudi.services.clustering_plan import ClusteredOrders, ClusteringPlanDraft, PlannedGroup, plan_order
from pyhudi.timeline.timeline import ActiveTimeline
from tests.unit._cluster_tables import KB, MB, ClusterTable, T, cfg, decision, groups_of


def clustered_table(root: Path, sort_columns: str, table_type: str = COW) -> tuple[ClusterTable, str]:
    """Small ingested files, then a completed clustering (sorted by `sort_columns`) that left two well-sized
    files and one small tail; returns the table and the tail's file id."""
    t = ClusterTable(root, table_type)
    t.write(T(1), bases=tuple(("p=a", f"f{i}", 300 * KB) for i in range(6)))
    t.hudi_clustering(T(2), [[("p=a", f"f{i}") for i in range(6)]], state="inflight", sort_columns=sort_columns)
    t.complete_clustering(T(2), {"p=a": [900 * KB, 880 * KB, 100 * KB]})
    return t, f"c{T(2)[-4:]}-pa-2"


SMALL = {"small_file_limit": 768 * KB, "target_file_max_bytes": MB}


@pytest.mark.parametrize("sort", ["name", "name,id"])
def test_a_clustering_tail_already_in_the_plans_order_is_not_replanned(tmp_path: Path, sort: str) -> None:
    t, tail = clustered_table(tmp_path / "t", sort)
    draft = t.draft(cfg(sort_columns=sort, **SMALL))
    assert draft.empty, f"the sorted tail was planned again: {groups_of(draft)}"
    d = decision(draft, tail)
    assert not d.chosen and "already sorted by" in d.reason and T(2) in d.reason
    assert t.schedule(cfg(sort_columns=sort, **SMALL)) is None, "nothing to schedule"


def test_a_tail_in_another_order_or_ingested_unsorted_is_planned_as_hudi_does(tmp_path: Path) -> None:
    t, tail = clustered_table(tmp_path / "t", "name")
    assert groups_of(t.draft(cfg(sort_columns="id", **SMALL))) == [[tail]], "a different sort order changes it"
    assert groups_of(t.draft(cfg(sort_columns="name,id", **SMALL))) == [[tail]]
    # Multi-column orders differ by layout; a single column sorts alike under every layout.
    multi, multi_tail = clustered_table(tmp_path / "m", "name,id")
    assert groups_of(multi.draft(cfg(sort_columns="name,id", layout="z-order", **SMALL))) == [[multi_tail]]
    assert t.draft(cfg(sort_columns="name", layout="hilbert", **SMALL)).empty
    # An ingested small file was never sorted: with sort columns Hudi plans it alone, and so does pyhudi.
    fresh = ClusterTable(tmp_path / "f", COW)
    fresh.write(T(1), bases=(("p=a", "g", 100 * KB),))
    assert groups_of(fresh.draft(cfg(sort_columns="name", **SMALL))) == [["g"]]
    assert fresh.draft(cfg(**SMALL)).empty, "without sort columns it would be rewritten unchanged"


def test_a_sorted_tail_with_log_files_is_planned_to_merge_them(tmp_path: Path) -> None:
    t, tail = clustered_table(tmp_path / "t", "name", MOR)
    t.write(T(3), logs=(("p=a", tail, T(2), 1, 5 * KB),))
    assert groups_of(t.draft(cfg(sort_columns="name", **SMALL))) == [[tail]]


def test_orders_of_insert_overwrites_and_unknown_instants_are_unknown(tmp_path: Path) -> None:
    t, _ = clustered_table(tmp_path / "t", "name")
    orders = ClusteredOrders(ActiveTimeline.load(t.storage))
    assert orders.order_of(T(2)) == (("name",), "linear")
    assert orders.order_of(T(1)) is None, "a commit, not a clustering"
    assert orders.order_of(T(9)) is None and orders.order_of(None) is None
    assert plan_order(("a", "b"), None) == (("a", "b"), "linear")
    assert plan_order(("a",), "z-order") == (("a",), "linear")


# --------------------------------------------------------------------------- output split counts the footer
def _ctx(target: int, small: int, bloom: bool, sized: bool = False) -> object:
    from pyhudi.io.base_file import ParquetSettings
    from pyhudi.services.clustering import ClusterContext

    settings = ParquetSettings(with_bloom=bloom, bloom_size_to_records=sized)
    return ClusterContext("file:///t", "1", None, "{}", settings, target, (),  # type: ignore[arg-type]
                          "linear", small)


@pytest.mark.parametrize("sized", [False, True])
def test_the_even_split_counts_each_files_footer(sized: bool) -> None:
    """1 MB target, 768 KB limit. Hudi's default bloom filter (~431 KB a file): 2.0 MB of data fits four files
    of ~950 KB each. Comparing only the data (~500 KB a file) with the limit filled three files to the target
    and left a fourth, small one (the tail the next sorted clustering rewrote again). A filter sized to each
    file's records (~60-120 KB here): an even split into three would leave three small files (~725 KB), so
    two files fill to the target and only the last one is small."""
    from pyhudi.services.clustering import _next_file_rows
    from pyhudi.writer.handles import file_overhead

    ctx = _ctx(MB, 768 * KB, bloom=True, sized=sized)
    per_row, remaining = 100.0, 20_000
    sizes = []
    while remaining:
        rows = _next_file_rows(ctx, remaining, per_row)  # type: ignore[arg-type]
        sizes.append(rows * per_row + file_overhead(rows, ctx.parquet))  # type: ignore[attr-defined]
        remaining -= rows
    full = sizes[:-1] if sized else sizes
    assert len(sizes) == (3 if sized else 4) and all(768 * KB <= s <= MB for s in full), sizes
    assert sizes[-1] <= MB


# --------------------------------------------------------------------------- property: no unchangeable group
def _unchangeable(group: PlannedGroup, sort_columns: tuple[str, ...], layout: str, orders: ClusteredOrders) -> bool:
    """A rewrite of `group` could not change anything: one slice, no logs, a base file, one output file,
    and the base file already in the plan's order."""
    if len(group.slices) != 1 or group.num_output_file_groups != 1:
        return False
    (s,) = group.slices
    if s.log_files or s.base_file is None:
        return False
    return not sort_columns or orders.order_of(s.base_instant) == plan_order(sort_columns, layout)


slice_spec = st.tuples(st.sampled_from(["p=a", "p=b", "7"]), st.integers(1, 1200),
                       st.booleans(), st.sampled_from(["", "name", "name,id"]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(slices=st.lists(slice_spec, min_size=1, max_size=8), mor=st.booleans(),
       sort=st.sampled_from(["", "name", "name,id"]), layout=st.sampled_from(["linear", "z-order"]),
       limit_kb=st.sampled_from([192, 768, 1100]), single=st.booleans())
def test_the_planner_never_plans_a_group_its_rewrite_cannot_change(slices, mor, sort, layout, limit_kb, single):
    """Random tables of ingested and clustered (sorted or not) small and large files, some with logs: no
    planned group is one whose rewrite cannot change anything, and every planned base file is small."""
    with tempfile.TemporaryDirectory() as root:
        t = ClusterTable(Path(root) / "t", MOR if mor else COW)
        ts = 1
        for i, (part, size_kb, logs, sorted_by) in enumerate(slices):
            fid = f"g{i}"
            t.write(T(ts), bases=((part, fid, size_kb * KB),))
            ts += 1
            if sorted_by:  # the file group becomes a clustering's output, in that clustering's order
                t.hudi_clustering(T(ts), [[(part, fid)]], state="inflight", sort_columns=sorted_by)
                t.complete_clustering(T(ts), {part: [size_kb * KB]})
                fid, base_ts = f"c{T(ts)[-4:]}-{part.replace('=', '')}-0", T(ts)
                ts += 1
            else:
                base_ts = T(ts - 1)
            if logs and mor:
                t.write(T(ts), logs=((part, fid, base_ts, 1, 4 * KB),))
                ts += 1
        config = cfg(sort_columns=sort, layout=layout, small_file_limit=limit_kb * KB, target_file_max_bytes=MB,
                     single_group=str(single).lower())
        draft: ClusteringPlanDraft = t.draft(config)
        orders = ClusteredOrders(ActiveTimeline.load(t.storage))
        for g in draft.groups:
            assert not _unchangeable(g, config.sort_columns, config.layout, orders), \
                f"planned a group its rewrite cannot change: {[s.file_id for s in g.slices]}"
            assert all(s.base_file is None or s.base_size < config.small_file_limit for s in g.slices)
        planned = {s.file_id for g in draft.groups for s in g.slices}
        assert {d.file_id for d in draft.decisions if d.chosen} == planned
