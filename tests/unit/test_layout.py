"""Record orderings for clustering (`hoodie.layout.optimize.strategy`): linear, z-order, Hilbert.

The space-filling curves are checked on full grids, where their defining properties are exact:
both map the 2^(k*n) cells of an n-dimensional grid of side 2^k one-to-one onto 0..2^(k*n)-1, and
consecutive cells along the Hilbert curve are neighbours (Manhattan distance 1). Through
`order()` the coordinates are the columns' dense ranks, so any orderable type works, equal values
share a coordinate, and ties keep their input order.
"""

from __future__ import annotations

import datetime as dt
import itertools
import random

import numpy as np
import pyarrow as pa
import pytest

from pyhudi.errors import InvalidConfigError
from pyhudi.services.layout import _scaled_ranks, hilbert_keys, order, z_order_keys

CURVES = ("z-order", "hilbert")
STRATEGIES = ("linear", *CURVES)


def grid(n: int, k: int) -> np.ndarray:
    return np.array(list(itertools.product(range(2 ** k), repeat=n)), dtype=np.uint64)


def coords(points: np.ndarray) -> list[np.ndarray]:
    return [points[:, d].copy() for d in range(points.shape[1])]


def manhattan_steps(points: np.ndarray) -> set[int]:
    p = points.astype(np.int64)
    return set(np.abs(np.diff(p, axis=0)).sum(axis=1).tolist())


def grid_table(n: int, k: int, seed: int = 7) -> pa.Table:
    """Every cell of the grid once, in shuffled order, with an id recording the input position."""
    rows = [tuple(int(v) for v in p) for p in grid(n, k)]
    random.Random(seed).shuffle(rows)
    cols = {f"c{d}": pa.array([r[d] for r in rows], pa.int64()) for d in range(n)}
    return pa.table({"id": pa.array(range(len(rows)), pa.int64()), **cols})


def points_of(table: pa.Table, n: int) -> np.ndarray:
    return np.column_stack([table.column(f"c{d}").to_numpy() for d in range(n)])


# --------------------------------------------------------------------------- the curves on grids
@pytest.mark.parametrize(("n", "k"), [(2, 1), (2, 2), (2, 3), (2, 4), (3, 1), (3, 2), (3, 3)])
def test_curve_keys_are_a_permutation_of_the_grid(n: int, k: int) -> None:
    pts = grid(n, k)
    for keys in (z_order_keys(coords(pts), k), hilbert_keys(coords(pts), k)):
        assert sorted(keys.tolist()) == list(range(2 ** (n * k)))


@pytest.mark.parametrize(("n", "k"), [(2, 1), (2, 2), (2, 3), (2, 5), (3, 1), (3, 2), (3, 3)])
def test_hilbert_neighbours_are_adjacent(n: int, k: int) -> None:
    pts = grid(n, k)
    walk = pts[np.argsort(hilbert_keys(coords(pts), k))]
    assert manhattan_steps(walk) == {1}
    assert walk[0].tolist() == [0] * n


def test_z_order_interleaves_bits_first_column_most_significant() -> None:
    pts = grid(2, 2)
    keys = z_order_keys(coords(pts), 2)

    def interleave(x: int, y: int) -> int:
        return sum((((x >> b) & 1) << (2 * b + 1)) | (((y >> b) & 1) << (2 * b)) for b in range(2))

    assert keys.tolist() == [interleave(int(x), int(y)) for x, y in pts]
    # The Z: each 2x2 quadrant is finished before the next one starts.
    walk = pts[np.argsort(keys)].tolist()
    assert walk[:4] == [[0, 0], [0, 1], [1, 0], [1, 1]]
    assert {tuple(p) for p in walk[4:8]} == {(0, 2), (0, 3), (1, 2), (1, 3)}


# --------------------------------------------------------------------------- order() on tables
def test_linear_order_is_sort_by() -> None:
    t = pa.table({"a": [3, 1, 2, 1, 3], "b": ["x", "z", "y", "a", "a"], "id": [0, 1, 2, 3, 4]})
    assert order(t, ["a", "b"], "linear").equals(t.sort_by([("a", "ascending"), ("b", "ascending")]))
    assert order(t, ["a", "b"]).column("id").to_pylist() == [3, 1, 2, 4, 0]


@pytest.mark.parametrize(("n", "k"), [(2, 3), (3, 2)])
def test_order_walks_the_grid_along_the_curve(n: int, k: int) -> None:
    t = grid_table(n, k)
    cols = [f"c{d}" for d in range(n)]
    hil = order(t, cols, "hilbert")
    assert manhattan_steps(points_of(hil, n)) == {1}
    zo = order(t, cols, "z-order")
    pts = points_of(zo, n).astype(np.uint64)
    keys = z_order_keys(coords(pts), k)
    assert np.all(np.diff(keys.astype(np.int64)) == 1), "z-order visits cells in key order"
    for result in (hil, zo):
        assert sorted(result.column("id").to_pylist()) == list(range(t.num_rows))


@pytest.mark.parametrize("strategy", CURVES)
def test_curves_keep_ties_in_input_order_and_are_deterministic(strategy: str) -> None:
    rng = random.Random(3)
    rows = [(rng.randrange(3), rng.randrange(3)) for _ in range(60)]  # many duplicate points
    t = pa.table({"a": [r[0] for r in rows], "b": [r[1] for r in rows], "id": list(range(len(rows)))})
    out = order(t, ["a", "b"], strategy)
    assert out.equals(order(t, ["a", "b"], strategy))
    seen: dict[tuple[int, int], list[int]] = {}
    for a, b, i in zip(*(out.column(c).to_pylist() for c in ("a", "b", "id")), strict=True):
        seen.setdefault((a, b), []).append(i)
    assert all(ids == sorted(ids) for ids in seen.values()), "rows with equal sort values keep their input order"
    # Equal values share a coordinate, so each distinct point's rows are contiguous.
    points = list(zip(out.column("a").to_pylist(), out.column("b").to_pylist(), strict=True))
    runs = [p for i, p in enumerate(points) if i == 0 or points[i - 1] != p]
    assert len(runs) == len(set(points))


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_nulls_strings_and_dates(strategy: str) -> None:
    names = ["d", "b", None, "a", "c", "b", None, "a"]
    days = [dt.date(2025, 1, d) if d else None for d in (4, 2, 1, None, 3, 2, 1, 4)]
    t = pa.table({"name": pa.array(names, pa.string()), "day": pa.array(days, pa.date32()), "id": list(range(8))})
    out = order(t, ["name", "day"], strategy)
    assert sorted(out.column("id").to_pylist()) == list(range(8)), "a permutation of the rows"
    assert out.schema == t.schema
    # Ranks make types irrelevant: the same order as integer columns with the same ranks (nulls last).
    name_rank = {"a": 0, "b": 1, "c": 2, "d": 3, None: 4}
    day_rank = {d: i for i, d in enumerate([dt.date(2025, 1, x) for x in (1, 2, 3, 4)])} | {None: 4}
    ints = pa.table({"name": [name_rank[v] for v in names], "day": [day_rank[v] for v in days], "id": list(range(8))})
    assert out.column("id").equals(order(ints, ["name", "day"], strategy).column("id"))
    if strategy == "linear":
        assert out.column("name").to_pylist()[-2:] == [None, None]


@pytest.mark.parametrize("strategy", CURVES)
def test_one_column_curve_is_linear(strategy: str) -> None:
    t = pa.table({"a": [5, None, 1, 3, 1, 2], "id": list(range(6))})
    assert order(t, ["a"], strategy).equals(order(t, ["a"], "linear"))


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_no_columns_or_tiny_tables_are_returned_as_is(strategy: str) -> None:
    t = pa.table({"a": [2, 1], "id": [0, 1]})
    assert order(t, [], strategy).equals(t)
    one = t.slice(0, 1)
    assert order(one, ["a"], strategy).equals(one)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_unknown_sort_column_names_it(strategy: str) -> None:
    t = pa.table({"a": [2, 1, 3], "b": [1, 2, 3]})
    with pytest.raises(InvalidConfigError) as exc:
        order(t, ["a", "nope"], strategy)
    assert "nope" in str(exc.value) and "sort.columns" in str(exc.value)


@pytest.mark.parametrize("rows", [0, 1])
def test_unknown_sort_column_is_an_error_whatever_the_group_size(rows: int) -> None:
    """A misspelt sort column must not pass silently just because a group has 0 or 1 record."""
    t = pa.table({"a": [2, 1, 3], "b": [1, 2, 3]}).slice(0, rows)
    for strategy in STRATEGIES:
        with pytest.raises(InvalidConfigError, match="nope"):
            order(t, ["nope"], strategy)


def test_scaled_ranks_fit_the_bit_width_and_keep_the_order() -> None:
    t = pa.table({"a": list(range(100, 0, -1))})
    (scaled,) = _scaled_ranks(t, ["a"], 3)
    assert scaled.max() == 7 and scaled.min() == 0
    by_value = scaled[np.argsort(t.column("a").to_numpy())]
    assert np.all(np.diff(by_value.astype(np.int64)) >= 0)
