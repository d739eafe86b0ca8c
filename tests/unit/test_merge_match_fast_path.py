"""The merge handle's key match (writer/merge_handle._matches): with every incoming key distinct it matches on
the key alone and keeps a hit only inside the old row's own file; that must equal matching `<file>\\0<key>`
pairs (the general path), including a key stored in several files of the batch (two partitions) and keys
whose text looks like a file prefix."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from pyhudi.writer import merge_handle


def _general(old_keys: pa.Array, old_file: np.ndarray, new_keys: pa.Array, in_file: np.ndarray, k: int) -> np.ndarray:
    match = pc.index_in(merge_handle._match_keys(old_keys, old_file, k),
                        value_set=merge_handle._match_keys(new_keys, in_file, k))
    return pc.fill_null(match, -1).to_numpy(zero_copy_only=False).astype(np.int64)


@pytest.mark.parametrize("seed", range(6))
def test_distinct_incoming_keys_match_as_file_key_pairs(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 6))
    pool = [f"{i}" for i in range(12)] + ["0\0" + "1", "1\x001", "é", ""]
    # Old rows: every file holds a random subset of the pool, so a key often sits in several files.
    old = [(f, key) for f in range(k) for key in pool if rng.random() < 0.5]
    old_keys = pa.array([key for _, key in old], pa.string())
    old_file = np.array([f for f, _ in old], dtype=np.int64)
    # Incoming: distinct keys (some stored in the row's file, some in another file only, some new),
    # grouped by file as the merge batch lays them out.
    chosen = rng.permutation(len(pool))[: int(rng.integers(1, len(pool)))]
    incoming = sorted((int(rng.integers(0, k)), pool[i]) for i in chosen)
    new_keys = pa.array([key for _, key in incoming], pa.string())
    in_file = np.array([f for f, _ in incoming], dtype=np.int64)
    assert merge_handle._distinct(new_keys)
    got = merge_handle._matches(old_keys, old_file, new_keys, in_file, k)
    want = _general(old_keys, old_file, new_keys, in_file, k)
    assert got.tolist() == want.tolist()
    assert (got >= 0).any() or not len(incoming), "the case should hold matches"


def test_repeated_incoming_keys_take_the_pair_match():
    """The same key arriving for two files (two partitions) is not distinct: each file matches its own copy."""
    old_keys = pa.array(["a", "b", "a"], pa.string())
    old_file = np.array([0, 0, 1], dtype=np.int64)
    new_keys = pa.array(["a", "a"], pa.string())
    in_file = np.array([0, 1], dtype=np.int64)
    assert not merge_handle._distinct(new_keys)
    assert merge_handle._matches(old_keys, old_file, new_keys, in_file, 2).tolist() == [0, -1, 1]


def test_distinct_keys_skip_the_per_file_dedupe():
    table = pa.table({"_hoodie_record_key": ["x", "y", "z"], "ts": [1, 2, 3]})
    in_file = np.array([0, 0, 1], dtype=np.int64)
    out, files = merge_handle._dedupe_per_file(table, in_file, 2, "ts")
    assert out is table and files is in_file
    dup = pa.table({"_hoodie_record_key": ["x", "x", "x"], "ts": [1, 2, 3]})
    out, files = merge_handle._dedupe_per_file(dup, np.array([0, 0, 1], dtype=np.int64), 2, "ts")
    assert sorted(zip(out.column("_hoodie_record_key").to_pylist(), out.column("ts").to_pylist(), files.tolist())) \
        == [("x", 2, 0), ("x", 3, 1)]
