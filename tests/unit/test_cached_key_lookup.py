"""The index lookup over files whose keys the process holds (`local_tagging._cached_hits`: one pass over all
cached keys) gives the answers of the lookup per file that reads them: a key stored in two partitions
goes to its own partition's file (non-global) or to the first file (global), keys stored nowhere or in
another partition only are inserts, and a file with log files or keys not cached sends the write down the
per-file path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyhudi.engine.local import LocalEngine
from pyhudi.index import key_cache
from pyhudi.keygen.spec import PARTITION_COL, RECORD_KEY_COL
from pyhudi.storage import Storage
from pyhudi.writer import local_tagging as LT

STORED = {  # (partition, file id) -> keys
    ("a", "f1"): ["k1", "k2", "K1", "ü", ""],
    ("b", "f2"): ["k1", "k3"],
    ("b", "f3"): ["k4", "k1"],  # k1 twice in partition b (duplicates allowed on insert)
    ("c", "f4"): [],
}


def _files(tmp_path: Path) -> tuple[Storage, list[LT.KeyFile]]:
    storage = Storage(str(tmp_path))
    files = []
    for (part, fid), keys in STORED.items():
        path = f"{part}/{fid}_0-1-1_001.parquet"
        (tmp_path / part).mkdir(exist_ok=True)
        pq.write_table(pa.table({RECORD_KEY_COL: pa.array(keys, pa.string())}), tmp_path / path)
        files.append(LT.KeyFile(part, fid, "001", path))
    return storage, files


def _batch() -> pa.Table:
    rows = [("a", "k1"), ("b", "k1"), ("c", "k1"), ("a", "k3"), ("b", "k2"), ("a", "K1"), ("a", ""),
            ("b", "k4"), ("a", "new"), ("b", "ü"), ("a", "ü")]
    return pa.table({PARTITION_COL: [p for p, _ in rows], RECORD_KEY_COL: [k for _, k in rows]})


def _lookup(storage: Storage, files: list[LT.KeyFile], global_index: bool) -> list[tuple[object, ...]]:
    out = LT.locate_in_files(LocalEngine(2), storage, files, _batch(), global_index=global_index)
    return list(zip(*(a.to_pylist() for a in out)))


@pytest.mark.parametrize("global_index", [False, True])
def test_cached_lookup_answers_as_the_lookup_per_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      global_index: bool) -> None:
    storage, files = _files(tmp_path)
    key_cache.KEY_CACHE.clear()
    cold = _lookup(storage, files, global_index)  # reads every file's keys (and caches them)
    assert all(key_cache.cached_keys(storage.uri(f.base_path or "")) is not None for f in files)
    per_file = LT.locate_in_files
    taken: list[int] = []
    real = LT._cached_hits

    def counting(*args: object) -> object:
        result = real(*args)  # type: ignore[arg-type]
        taken.append(result is not None)
        return result

    monkeypatch.setattr(LT, "_cached_hits", counting)
    warm = _lookup(storage, files, global_index)
    assert taken == [True]
    assert warm == cold
    if global_index:  # first file holding the key, whatever the record's partition
        assert warm[0] == warm[1] == warm[2] == ("f1", "001", "a")
        assert warm[3] == ("f2", "001", "b") and warm[8] == (None, None, None)
    else:
        assert warm[:3] == [("f1", "001", "a"), ("f2", "001", "b"), (None, None, None)]
        assert warm[3] == warm[4] == (None, None, None)  # stored in another partition only
        assert warm[5:8] == [("f1", "001", "a"), ("f1", "001", "a"), ("f3", "001", "b")]
        assert warm[8:] == [(None, None, None), (None, None, None), ("f1", "001", "a")]
    assert per_file is LT.locate_in_files
    key_cache.KEY_CACHE.clear()


def test_a_file_not_cached_or_with_logs_takes_the_lookup_per_file(tmp_path: Path) -> None:
    storage, files = _files(tmp_path)
    key_cache.KEY_CACHE.clear()
    _lookup(storage, files, False)
    keys = _batch().column(RECORD_KEY_COL).combine_chunks()
    assert LT._cached_hits(storage, files, keys) is not None
    with_logs = [files[0], LT.KeyFile("b", "f2", "001", files[1].base_path, log_paths=("b/.f2_001.log.1_0-1-1",))]
    assert LT._cached_hits(storage, with_logs, keys) is None
    key_cache.KEY_CACHE.pop(storage.uri(files[2].base_path or ""))
    assert LT._cached_hits(storage, files, keys) is None
    key_cache.KEY_CACHE.clear()


def _assign_by_joined_keys(n: int, parts: pa.Array, keys: pa.Array, files: list[LT.KeyFile], owner: np.ndarray,
                           hit_keys: pa.Array, global_index: bool) -> list[tuple[object, ...]]:
    """The reference: each record's first hit of its (partition, key) pair, or of its key (global)."""
    first: dict[object, int] = {}
    for i, key in enumerate(hit_keys.to_pylist()):
        f = int(owner[i])
        first.setdefault(key if global_index else (files[f].partition, key), f)
    out = []
    for part, key in zip(parts.to_pylist(), keys.to_pylist()):
        f = first.get(key if global_index else (part, key))
        out.append((None, None, None) if f is None else (files[f].file_id, files[f].instant, files[f].partition))
    return out


_NAMES = st.sampled_from(["a", "b", "", "ü", "a\u0001", "k1", "\u0001k1"])


@settings(max_examples=300, deadline=None)
@given(stored=st.lists(st.tuples(_NAMES, st.lists(_NAMES, max_size=6)), max_size=5),
       batch=st.lists(st.tuples(_NAMES, _NAMES), min_size=1, max_size=12), global_index=st.booleans())
def test_assign_answers_each_record_with_the_first_file_of_its_partition(
        stored: list[tuple[str, list[str]]], batch: list[tuple[str, str]], global_index: bool) -> None:
    """Keys stored in several files, partitions and both at once, separators inside values: the probe by
    key alone (and its fallback to partition and key) answers as the pair-by-pair reference."""
    files = [LT.KeyFile(part, f"f{i}", f"00{i}", None) for i, (part, _) in enumerate(stored)]
    owner = np.array([i for i, (_, keys) in enumerate(stored) for _ in keys], dtype=np.int64)
    hit_keys = pa.array([k for _, keys in stored for k in keys], pa.string())
    parts = pa.array([p for p, _ in batch], pa.string())
    keys = pa.array([k for _, k in batch], pa.string())
    got = LT._assign(len(batch), parts, keys, files, owner, hit_keys, global_index)
    want = _assign_by_joined_keys(len(batch), parts, keys, files, owner, hit_keys, global_index)
    assert list(zip(*(a.to_pylist() for a in got))) == want
