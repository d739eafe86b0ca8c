"""The shared bin-packer: exact boundaries and the remainder bucket (reference §10.4-10.5, §14.2, §15.1)."""

from __future__ import annotations

import pytest

from pyhudi.writer.binpack import fill_open_bins, pack_sequential, split_evenly_capped, take_within_budget


# ----------------------------------------------------------------------------- fill_open_bins (greedy top-up)
def test_fill_in_given_order_until_exhausted():
    allocs, rest = fill_open_bins([("a", 5), ("b", 10), ("c", 7)], 12)
    assert allocs == [("a", 5), ("b", 7)]
    assert rest == 0


def test_fill_skips_bins_without_room_and_keeps_order():
    allocs, rest = fill_open_bins([("full", 0), ("neg", -3), ("x", 4), ("y", 0), ("z", 2)], 100)
    assert allocs == [("x", 4), ("z", 2)]
    assert rest == 94


def test_fill_exact_fit_and_empty_inputs():
    assert fill_open_bins([("a", 3), ("b", 2)], 5) == ([("a", 3), ("b", 2)], 0)
    assert fill_open_bins([], 5) == ([], 5)
    assert fill_open_bins([("a", 3)], 0) == ([], 0)


def test_fill_later_bins_untouched_once_done():
    allocs, rest = fill_open_bins([("a", 10), ("b", 10)], 10)
    assert allocs == [("a", 10)] and rest == 0


# ----------------------------------------------------------------------------- split_evenly_capped (new files)
@pytest.mark.parametrize("amount, per, expected", [
    (0, 10, []), (-5, 10, []), (1, 10, [1]), (10, 10, [10]), (11, 10, [10, 1]), (25, 10, [10, 10, 5]),
    (207840, 122880, [122880, 84960]), (3, 1, [1, 1, 1]), (5, 0, [1, 1, 1, 1, 1]),
])
def test_split(amount, per, expected):
    assert split_evenly_capped(amount, per) == expected


def test_split_count_is_ceil():
    for amount in range(1, 200):
        for per in (1, 3, 7, 50, 199, 500):
            parts = split_evenly_capped(amount, per)
            assert len(parts) == -(-amount // per)
            assert sum(parts) == amount
            assert all(p == per for p in parts[:-1]) and 0 < parts[-1] <= per


# ----------------------------------------------------------------------------- pack_sequential (clustering groups)
def test_pack_closes_group_when_next_item_would_overflow():
    assert pack_sequential([4, 4, 4, 4], lambda x: x, 8) == [[4, 4], [4, 4]]
    assert pack_sequential([5, 4, 3, 2], lambda x: x, 8) == [[5], [4, 3], [2]]
    assert pack_sequential([8, 1], lambda x: x, 8) == [[8], [1]]  # exactly full stays in the group


def test_pack_oversized_item_gets_its_own_group():
    assert pack_sequential([3, 20, 2], lambda x: x, 8) == [[3], [20], [2]]
    assert pack_sequential([20], lambda x: x, 8) == [[20]]


def test_pack_max_bins():
    assert pack_sequential([4] * 10, lambda x: x, 8, max_bins=2) == [[4, 4], [4, 4]]
    assert pack_sequential([4, 4, 4], lambda x: x, 8, max_bins=2) == [[4, 4], [4]]
    assert pack_sequential([4, 4, 4], lambda x: x, 8, max_bins=1) == [[4, 4]]
    assert pack_sequential([], lambda x: x, 8) == []


def test_pack_clustering_example_largest_first():
    """Slices sorted largest first into 2 GB groups (reference §15.1)."""
    gb = 1024 ** 3
    sizes = sorted([290, 280, 250, 100, 90, 10, 5], reverse=True)
    groups = pack_sequential([s * 1024 ** 2 for s in sizes], lambda x: x, 2 * gb)
    assert [len(g) for g in groups] == [7]
    big = [300 * 1024 ** 2 - 1] * 8  # just under the 300 MB small-file limit
    groups = pack_sequential(big, lambda x: x, 2 * gb)
    assert [len(g) for g in groups] == [6, 2]


# ----------------------------------------------------------------------------- take_within_budget (compaction IO)
def test_budget_first_item_always_taken():
    assert take_within_budget([50], lambda x: x, 10) == [50]


def test_budget_stops_once_the_budget_is_spent():
    assert take_within_budget([5, 5, 1], lambda x: x, 10) == [5, 5]
    assert take_within_budget([1, 2, 3], lambda x: x, 100) == [1, 2, 3]
    assert take_within_budget([], lambda x: x, 10) == []


def test_budget_includes_the_operation_that_crosses_it_like_hudi():
    """BoundedIOCompactionStrategy.orderAndFilter: subtract the op's IO, add the op, then stop if the remaining
    budget is <= 0 -- so the operation that crosses the budget is still compacted."""
    assert take_within_budget([4, 4, 4, 4], lambda x: x, 10) == [4, 4, 4]
    assert take_within_budget([6, 6, 6], lambda x: x, 10) == [6, 6]
