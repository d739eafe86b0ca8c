"""Write-through of the per-process key cache (`index/key_cache.py`): the base files a write creates or
merges put their keys in the cache, so the next write's index lookup in the same process reads none of them
back; the answers stay those of a process that reads every file (the same upsert stream with the cache
cleared before each write), read back with pyhudi and hudi-rs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi.index import key_cache
from pyhudi.storage import Storage
from pyhudi.writer import local_tagging
from tests.helpers import hudi_rs

PARTS = ["2024/01", "p=ü", ""]


def _opts(table_type: str, index: str) -> dict[str, str]:
    return {"hoodie.table.name": "kc", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
            "hoodie.datasource.write.operation": "upsert", "hoodie.datasource.write.table.type": table_type,
            "hoodie.index.type": index, "hoodie.parquet.max.file.size": str(40 * 1024),
            "hoodie.parquet.small.file.limit": str(30 * 1024), "hoodie.compact.inline": "true",
            "hoodie.compact.inline.max.delta.commits": "2", "hoodie.cleaner.commits.retained": "2"}


def _batch(step: int) -> pa.Table:
    """New keys, updates of older ones (some twice in the stream), and keys that differ only in case."""
    ids = [f"k{i:05d}" for i in range(step * 300, step * 300 + 300)] + \
        [f"k{i:05d}" for i in range(0, step * 300, 7)] + [f"K{step}", f"k{step}"]
    return pa.table({"id": ids, "ts": [step] * len(ids), "p": [PARTS[hash(i) % 3] for i in ids],
                     "v": [f"{i}-{step}" for i in ids]})


def _rows(got: pa.Table | None) -> dict[str, tuple[Any, ...]]:
    assert got is not None
    return {r["id"]: (r["p"], r["ts"], r["v"]) for r in got.select(["id", "p", "ts", "v"]).to_pylist()}


def _model(steps: int) -> dict[str, tuple[Any, ...]]:
    model: dict[str, tuple[Any, ...]] = {}
    for step in range(steps):
        for r in _batch(step).to_pylist():
            model[r["id"]] = (r["p"], r["ts"], r["v"])
    return model


def _forget(prefix: str) -> None:
    for uri in [u for u in key_cache.KEY_CACHE if u.startswith(prefix)]:
        key_cache.KEY_CACHE.nbytes -= key_cache.KEY_CACHE.pop(uri).nbytes


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize("index", ["SIMPLE", "BLOOM"])
def test_written_files_are_looked_up_from_the_cache_with_the_same_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                        table_type: str, index: str) -> None:
    key_cache.KEY_CACHE.clear()
    reads: list[str] = []
    real = key_cache.read_parquet

    def counting(storage: Storage, path: str, columns: list[str] | None = None) -> pa.Table:
        reads.append(path)
        return real(storage, path, columns)

    monkeypatch.setattr(key_cache, "read_parquet", counting)
    footers: list[int] = []  # BLOOM: footers probed (a file whose keys are cached needs none)
    probe = local_tagging._bloom_filtered

    def counting_probe(meta: dict[bytes, bytes], keys: pa.Array, by_ranges: bool) -> pa.Array:
        footers.append(len(keys))
        return probe(meta, keys, by_ranges)

    monkeypatch.setattr(local_tagging, "_bloom_filtered", counting_probe)
    cached, cold = tmp_path / "cached", tmp_path / "cold"
    steps = 6
    cold_prefix = Storage(str(cold)).uri("")
    for step in range(steps):
        _forget(cold_prefix)  # the cold table's writes read every file they look up
        pyhudi.write(_batch(step), str(cold), _opts(table_type, index))
        cold_probes = len(footers)
        reads.clear()
        footers.clear()
        pyhudi.write(_batch(step), str(cached), _opts(table_type, index))
        if step and table_type == "COPY_ON_WRITE":
            assert not reads, f"step {step}: read back files this process wrote: {reads}"
            assert not footers, f"step {step}: probed the footers of {len(footers)} files this process wrote"
            assert cold_probes or index == "SIMPLE", "the cold write probes the footers it cannot skip"
    storage = Storage(str(cached))
    for uri, keys in list(key_cache.KEY_CACHE.items()):  # every kept column is its file's
        path = uri[len(storage.base_uri):].lstrip("/")
        if storage.exists(path):
            assert keys.equals(pq.read_table(cached / path, columns=["_hoodie_record_key"]).column(0).combine_chunks())
    model = _model(steps)
    for table in (cached, cold):
        assert _rows(pyhudi.read(str(table))) == model, table
        assert _rows(hudi_rs(table)) == model, table
    key_cache.KEY_CACHE.clear()


_SHORT_LIVED_POOL = """
import gc, sys
import pyarrow as pa
import pyhudi
from pyhudi.index import key_cache
from pyhudi.io import written_tables
from tests.unit.test_key_cache_write_through import _batch, _opts

table, index = sys.argv[1], sys.argv[2]
default = pa.default_memory_pool()
pool = pa.proxy_memory_pool(default)
pa.set_memory_pool(pool)  # as a caller measuring a write's peak does
for step in range(3):  # written (write-through) and read back (the index's lookups)
    pyhudi.write(_batch(step), table, _opts("COPY_ON_WRITE", index))
pa.set_memory_pool(default)
assert len(key_cache.KEY_CACHE) > 0 and len(written_tables.TABLES) > 0
del pool
gc.collect()
for cache in (key_cache.KEY_CACHE, written_tables.TABLES):
    cache.evict_to(0)  # frees all but the newest
    cache.clear()
print("freed")
"""


@pytest.mark.parametrize("index", ["SIMPLE", "BLOOM"])
def test_cached_keys_outlive_a_short_lived_default_pool(tmp_path: Path, index: str) -> None:
    """The key cache and the written tables keep columns for the process's life: one allocated from a pool
    its caller has since dropped crashed the process when evicted. In a child process, so that a crash fails this test only."""
    done = subprocess.run([sys.executable, "-c", _SHORT_LIVED_POOL, str(tmp_path / "t"), index],
                          capture_output=True, text=True, cwd=Path(__file__).parents[2], timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "freed", (done.returncode, done.stderr[-2000:])


def _addresses(array: pa.Array) -> set[int]:
    return {b.address for b in array.buffers() if b is not None and b.size}


@pytest.mark.parametrize("kept", [True, False])
def test_a_kept_table_and_the_key_cache_share_one_copy_of_the_keys(tmp_path, kept):
    """A file whose table is kept gives the key cache the kept table's own key column (no second copy of
    every key); one not kept gives it a copy. Either way the cache holds the file's keys, in buffers of
    its own (not the caller's batch, which a slice would pin)."""
    from pyhudi.io import written_tables

    storage = Storage(str(tmp_path))
    batch = pa.table({"_hoodie_record_key": [f"key{i}" for i in range(400)], "v": list(range(400))})
    rows = batch.slice(100, 200)
    key_cache.remember_written(storage, "p/f1.parquet", rows, {b"k": b"v"} if kept else None, 123)
    uri = storage.uri("p/f1.parquet")
    keys = key_cache.cached_keys(uri)
    assert keys is not None and keys.to_pylist() == [f"key{i}" for i in range(100, 300)]
    assert not _addresses(keys) & {a for c in batch.column(0).chunks for a in _addresses(c)}
    held = written_tables.written_table(uri)
    assert (held is not None) is kept
    if held is not None:
        assert _addresses(keys) == _addresses(held.table.column("_hoodie_record_key").chunk(0))
    written_tables.drop_kept(uri)
    key_cache.KEY_CACHE.drop(uri)
