"""The one bin-packer: small-file assignment, clustering groups and compaction plans use it.

Hudi's three sizing decisions are all greedy, order-preserving packings:
filling free room in existing small files, cutting the remainder into new
files of a fixed record count, grouping slices into clustering groups, and
taking compaction candidates until an IO budget is spent. Keeping them in one
place keeps their edge cases (exact boundaries, the remainder bucket) alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

K = TypeVar("K")
T = TypeVar("T")


def fill_open_bins(free_room: Sequence[tuple[K, int]], amount: int) -> tuple[list[tuple[K, int]], int]:
    """Pour a divisible `amount` into bins with free room, in the given order.

    Returns the non-empty allocations and what did not fit. Bins with no room
    are skipped, exactly as Hudi skips small files where `recordsToAppend` is 0.
    """
    allocations: list[tuple[K, int]] = []
    remaining = amount
    for key, room in free_room:
        if remaining <= 0:
            break
        take = min(room, remaining)
        if take > 0:
            allocations.append((key, take))
            remaining -= take
    return allocations, remaining


def split_evenly_capped(amount: int, per_bin: int) -> list[int]:
    """ceil(amount / per_bin) bins of `per_bin`; the last takes the remainder (a small file is normal)."""
    if amount <= 0:
        return []
    per_bin = max(1, per_bin)
    full, rest = divmod(amount, per_bin)
    return [per_bin] * full + ([rest] if rest else [])


def pack_sequential(items: Sequence[T], size: Callable[[T], int], capacity: int,
                    max_bins: int | None = None) -> list[list[T]]:
    """Next-fit in the given order: a bin closes when the next item would push it past `capacity`.

    An item larger than the capacity still gets a bin of its own.
    """
    bins: list[list[T]] = []
    current: list[T] = []
    used = 0
    for item in items:
        s = size(item)
        if current and used + s > capacity:
            bins.append(current)
            if max_bins is not None and len(bins) >= max_bins:
                return bins
            current, used = [], 0
        current.append(item)
        used += s
    if current and (max_bins is None or len(bins) < max_bins):
        bins.append(current)
    return bins


def take_within_budget(items: Sequence[T], size: Callable[[T], int], budget: int) -> list[T]:
    """Items in order until the budget is spent; the item that spends it is included.

    This is Hudi's BoundedIOCompactionStrategy: subtract, add, stop once nothing remains.
    """
    taken: list[T] = []
    remaining = budget
    for item in items:
        remaining -= size(item)
        taken.append(item)
        if remaining <= 0:
            break
    return taken


def pack_balanced(items: Sequence[T], size: Callable[[T], int], bins: int) -> list[list[T]]:
    """Largest first into the least-loaded of `bins` bins (LPT): for a fixed number of equal workers,
    such as input files spread over a write's tasks. Empty bins are dropped."""
    loads = [0] * max(1, bins)
    out: list[list[T]] = [[] for _ in loads]
    for item in sorted(items, key=size, reverse=True):
        i = loads.index(min(loads))
        out[i].append(item)
        loads[i] += size(item)
    return [b for b in out if b]
