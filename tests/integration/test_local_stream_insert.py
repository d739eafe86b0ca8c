"""A streamed `insert` (writer/local_stream.py): a RecordBatchReader written in bounded memory, in one
instant, with the first chunk topping up small files and the rest rolling into well-sized new files.

Every table is read with hudi-rs and with pyhudi's in-process reader and compared with a model (a dict of
expected rows). No Spark: these run in a few seconds each.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import pyhudi
from pyhudi.config.registry import Options
from pyhudi.errors import InvalidRecordError
from pyhudi.writer.config import build_write_config, resolve_table_config
from pyhudi.writer.local_stream import materialize_reason
from tests.helpers import arrow_read, hudi_rs
from tests.integration.table_checks import all_data_files, assert_files_match_commits, completed_commits

MAX = 256 * 1024
SMALL = 180 * 1024
ARROW = pa.schema([("id", pa.int64()), ("name", pa.string()), ("part", pa.string()), ("ts", pa.int64())])
PARTS = ["2024/01", "ü日本", "007"]  # a `/`, unicode, digits
Model = dict[tuple[str, int], tuple[str, int]]


def _opts(table_type: str = "COPY_ON_WRITE", index: str = "SIMPLE", **extra: str) -> dict[str, str]:
    return {
        "hoodie.table.name": "stream", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type, "hoodie.datasource.write.operation": "insert",
        "hoodie.parquet.max.file.size": str(MAX), "hoodie.parquet.small.file.limit": str(SMALL),
        "hoodie.index.bloom.num_entries": "2000", "hoodie.record.size.estimation.threshold": "0.1",
        "hoodie.index.type": index, **extra,
    }


def _batch(lo: int, n: int, ts: int = 1, width: int = 60, noise: bool = False) -> pa.RecordBatch:
    """Rows lo..lo+n; `noise`: names that barely compress (random hex, the same for the same lo), so the
    Arrow bytes a file's worth of rows holds stay close to the file's size."""
    ids = np.arange(lo, lo + n, dtype=np.int64)
    names = np.char.add(np.char.add("v-", ids.astype(str)), "-" + "y" * width).astype(object)
    if noise:
        raw = np.random.default_rng(lo).integers(0, 1 << 62, size=(n, 4))
        names = np.array([f"{i}-{a:x}{b:x}{c:x}{d:x}" for i, (a, b, c, d) in zip(ids.tolist(), raw.tolist())],
                         dtype=object)
    parts = np.array(PARTS, dtype=object)[ids % len(PARTS)]
    return pa.record_batch([pa.array(ids), pa.array(names, pa.string()), pa.array(parts, pa.string()),
                            pa.array(np.full(n, ts, dtype=np.int64))], schema=ARROW)


def _stream(batches: list[pa.RecordBatch] | Iterator[pa.RecordBatch]) -> pa.RecordBatchReader:
    return pa.RecordBatchReader.from_batches(ARROW, iter(batches))


def _model_of(batches: list[pa.RecordBatch]) -> Model:
    out: Model = {}
    for b in batches:
        for r in b.to_pylist():
            out[(r["part"], r["id"])] = (r["name"], r["ts"])
    return out


def _rows(table: pa.Table | None) -> Model:
    out: Model = {}
    if table is None:
        return out
    cols = [table.column(c).to_pylist() for c in ("part", "id", "name", "ts")]
    for part, rid, name, ts in zip(*cols):
        assert (part, rid) not in out, f"duplicate record {(part, rid)}"
        out[(part, rid)] = (name, ts)
    return out


def _assert_model(path: str, model: Model) -> None:
    assert _rows(hudi_rs(path)) == model, "hudi-rs differs from the model"
    assert _rows(arrow_read(path)) == model, "pyhudi.read differs from the model"


def _commit(path: str, instant: str) -> dict[str, Any]:
    hoodie = os.path.join(path, ".hoodie")
    name = next(n for n in os.listdir(hoodie) if n.startswith(instant) and n.split(".")[-1] in
                ("commit", "deltacommit"))
    with open(os.path.join(hoodie, name)) as fh:
        return json.load(fh)  # type: ignore[no-any-return]


def _stats(path: str, instant: str) -> list[dict[str, Any]]:
    return [s for v in _commit(path, instant)["partitionToWriteStats"].values() for s in v]


def _assert_well_sized(path: str, instant: str) -> None:
    """New files of the commit between the small-file limit and 1.1x the max, except one tail per partition."""
    tails: dict[str, int] = {}
    for s in _stats(path, instant):
        if s["prevCommit"] != "null":
            continue
        size = s["fileSizeInBytes"]
        assert size <= 1.1 * MAX, f"{s['path']}: {size} B over 1.1x the max"
        if size < SMALL:
            tails[s["partitionPath"]] = tails.get(s["partitionPath"], 0) + 1
    assert all(n <= 1 for n in tails.values()), f"more than one small new file in a partition: {tails}"


# --------------------------------------------------------------------------- memory
def test_a_large_stream_is_written_in_bounded_memory(tmp_path):
    """300k rows in 2k-row batches from a generator: the peak Arrow allocation (a fresh proxy pool set as
    the default pool, so its max_memory is this write's peak) stays below a third of the stream's Arrow
    bytes; materializing the stream (the old path) needs more than the stream itself."""
    path = str(tmp_path / "t")
    produced: list[int] = []

    def gen() -> Iterator[pa.RecordBatch]:
        for lo in range(0, 300_000, 2000):
            b = _batch(lo, 2000, noise=True)
            produced.append(b.nbytes)
            yield b

    default = pa.default_memory_pool()
    pool = pa.proxy_memory_pool(default)
    pa.set_memory_pool(pool)
    try:
        instant = pyhudi.write(_stream(gen()), path, _opts())
    finally:
        pa.set_memory_pool(default)
    stream_bytes = sum(produced)
    assert len(produced) == 150 and stream_bytes > 25 * 1024 * 1024
    assert pool.max_memory() < stream_bytes / 3, (
        f"peak Arrow memory {pool.max_memory()} B for a stream of {stream_bytes} B: not bounded")
    assert completed_commits(path) == [instant], "one instant"
    _assert_model(path, _model_of([_batch(lo, 2000, noise=True) for lo in range(0, 300_000, 2000)]))
    _assert_well_sized(path, instant)
    assert_files_match_commits(path)


# --------------------------------------------------------------------------- small files
@pytest.mark.parametrize("table_type,index", [("COPY_ON_WRITE", "SIMPLE"), ("MERGE_ON_READ", "BLOOM")])
def test_first_chunk_tops_up_small_files_as_the_in_memory_insert_does(tmp_path, table_type, index):
    """Two copies of a table with one small file per partition: the same records inserted as a stream and
    as an in-memory Table give each small file the same share of inserts (the first chunk is planned as
    the in-memory insert is); the stream's new files are well sized; both hold the model."""
    streamed, in_memory = str(tmp_path / "s"), str(tmp_path / "m")
    o = _opts(table_type, index)
    # Small files whose room (about 5,000 rows each) fits in the stream's first chunk, which its Arrow bytes
    # bound at about 18,000 of these rows (FIRST_CHUNK_ARROW_FILES): a chunk that ends first tops them up less.
    first = [_batch(0, 9000)]
    pyhudi.write(_stream(first), streamed, {**o, "hoodie.datasource.write.operation": "bulk_insert"})
    shutil.copytree(streamed, in_memory)
    small = {s["fileId"]: s["numWrites"] for s in _stats(streamed, completed_commits(streamed)[0])}
    assert len(small) == 3 and all(s["fileSizeInBytes"] < SMALL for s in _stats(streamed, completed_commits(streamed)[0]))
    more = [_batch(lo, 2000) for lo in range(9000, 89_000, 2000)]
    i_stream = pyhudi.write(_stream(more), streamed, o)
    i_mem = pyhudi.write(pa.Table.from_batches(more), in_memory, o)
    model = _model_of(first + more)
    _assert_model(streamed, model)
    _assert_model(in_memory, model)

    def topped(path: str, instant: str) -> dict[str, int]:
        return {s["fileId"]: s["numInserts"] for s in _stats(path, instant) if s["fileId"] in small}

    got, expected = topped(streamed, i_stream), topped(in_memory, i_mem)
    assert set(got) == set(small) and all(n > 0 for n in got.values()), f"small files topped up: {got}"
    # The plan gives each small file the same room; records reach it by the MD5 of their key against the
    # bucket weights (Hudi's rule), so the counts match up to that hashing's spread.
    assert all(abs(got[f] - expected[f]) <= 0.05 * expected[f] for f in small), (got, expected)
    _assert_well_sized(streamed, i_stream)
    assert all(s["prevCommit"] == "null" or s["fileId"] in small for s in _stats(streamed, i_stream))
    action = "deltacommit" if table_type == "MERGE_ON_READ" else "commit"
    assert os.path.exists(os.path.join(streamed, ".hoodie", f"{i_stream}.{action}"))


# --------------------------------------------------------------------------- refusals
def test_a_null_key_in_a_later_batch_rolls_the_instant_back(tmp_path):
    path = str(tmp_path / "t")
    o = _opts()
    base = [_batch(0, 3000)]
    pyhudi.write(_stream(base), path, o)
    before_files, before_commits = all_data_files(path), completed_commits(path)
    consumed: list[int] = []

    def gen() -> Iterator[pa.RecordBatch]:
        for i, lo in enumerate(range(3000, 103_000, 2000)):
            consumed.append(i)
            b = _batch(lo, 2000)
            if i == 40:  # long after the first chunk, files of this write already exist
                ids = b.column(0).to_pylist()
                ids[7] = None
                b = b.set_column(0, "id", pa.array(ids, pa.int64()))
            yield b

    with pytest.raises(InvalidRecordError, match="1 record.*null or empty record key"):
        pyhudi.write(_stream(gen()), path, o)
    assert consumed[-1] == 40, "refused when the bad batch arrived"
    assert all_data_files(path) == before_files, "the refused write's files were rolled back"
    assert completed_commits(path) == before_commits, "no commit became visible"
    assert any(n.endswith(".rollback") for n in os.listdir(os.path.join(path, ".hoodie"))), \
        "files existed: the instant was rolled back, not just withdrawn"
    _assert_model(path, _model_of(base))
    # The table takes the next write as usual.
    nxt = [_batch(500_000, 10)]
    pyhudi.write(_stream(nxt), path, o)
    _assert_model(path, _model_of(base + nxt))


def test_null_key_or_precombine_in_the_first_chunk_refused_before_anything_exists(tmp_path):
    path = str(tmp_path / "t")
    o = _opts()
    pyhudi.write(_stream([_batch(0, 10)]), path, o)
    before = sorted(os.listdir(os.path.join(path, ".hoodie")))
    bad = _batch(100, 2000)
    ids = bad.column(0).to_pylist()
    ids[3] = None
    bad = bad.set_column(0, "id", pa.array(ids, pa.int64()))
    with pytest.raises(InvalidRecordError, match="null or empty record key"):
        pyhudi.write(_stream([bad] + [_batch(lo, 2000) for lo in range(10_000, 90_000, 2000)]), path, o)
    # combine.before.insert reads the ordering value: a null one is refused (that write materializes).
    no_ts = _batch(200_000, 50)
    no_ts = no_ts.set_column(3, "ts", pa.nulls(50, pa.int64()))
    with pytest.raises(InvalidRecordError, match="null precombine"):
        pyhudi.write(_stream([_batch(300_000, 2000), no_ts]), path,
                     {**o, "hoodie.combine.before.insert": "true"})
    assert sorted(os.listdir(os.path.join(path, ".hoodie"))) == before, "refused writes left no instant"
    _assert_model(path, _model_of([_batch(0, 10)]))


# --------------------------------------------------------------------------- semantics
def test_combine_before_insert_streams_materialized_and_removes_duplicates(tmp_path):
    """Deduplication needs every record of a key: such a stream is materialized, and exactly the greatest
    precombine value of each key is kept, even when the duplicates are far apart in the stream."""
    path = str(tmp_path / "t")
    o = _opts(**{"hoodie.combine.before.insert": "true"})
    batches = [_batch(lo, 2000, ts=1) for lo in range(0, 60_000, 2000)]
    winners = _batch(0, 500, ts=5)  # keys of the first batch again, later, with a greater ts
    losers = _batch(2000, 300, ts=0)
    stream = batches[:1] + [losers] + batches[1:] + [winners]
    pyhudi.write(_stream(stream), path, o)
    model = _model_of(batches)
    model.update(_model_of([winners]))
    _assert_model(path, model)


def test_adversarial_keys_partitions_and_empty_batches(tmp_path):
    """Unicode and empty-ish string keys with decimal keys (ComplexKeyGenerator), partition values with
    `/`, unicode and digits, empty batches between full ones, a stream beyond the first chunk."""
    path = str(tmp_path / "t")
    schema = pa.schema([("k", pa.string()), ("d", pa.decimal128(38, 18)), ("part", pa.string()),
                        ("name", pa.string()), ("ts", pa.int64())])
    o = {**_opts(), "hoodie.datasource.write.recordkey.field": "k,d",
         "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator"}

    def batch(lo: int, n: int) -> pa.RecordBatch:
        ids = range(lo, lo + n)
        return pa.record_batch([
            pa.array([f"ü/ß-{i}" if i % 3 else f"日本,{i}" for i in ids]),
            pa.array([Decimal(i) / Decimal(10**18) if i % 2 else None for i in ids], pa.decimal128(38, 18)),
            pa.array([PARTS[i % 3] for i in ids]), pa.array([f"n{i}" * 8 for i in ids]),
            pa.array(list(ids), pa.int64())], schema=schema)

    batches = []
    for lo in range(0, 60_000, 3000):
        batches += [batch(lo, 3000), batch(lo, 0)]
    instant = pyhudi.write(pa.RecordBatchReader.from_batches(schema, iter(batches)), path, o)
    expected = {(r["part"], r["k"], r["d"]): (r["name"], r["ts"]) for b in batches for r in b.to_pylist()}
    for got in (hudi_rs(path), arrow_read(path)):
        assert got is not None
        rows = {(r["part"], r["k"], r["d"]): (r["name"], r["ts"])
                for r in got.select(["part", "k", "d", "name", "ts"]).to_pylist()}
        assert got.num_rows == len(expected) and rows == expected
    parts = {s["partitionPath"] for s in _stats(path, instant)}
    assert parts == set(PARTS)
    _assert_well_sized(path, instant)


def test_a_bucket_index_stream_is_materialized_and_correct(tmp_path):
    """A BUCKET index plans the whole batch per bucket: the stream is read into memory first
    (materialize_reason says why) and the result is the in-memory insert's."""
    o = _opts("COPY_ON_WRITE", "BUCKET", **{"hoodie.bucket.index.num.buckets": "4"})
    options = Options.parse(o)
    assert "BUCKET" in (materialize_reason(build_write_config(options, resolve_table_config(options, None))) or "")
    plain = Options.parse(_opts("MERGE_ON_READ", "INMEMORY"))
    assert materialize_reason(build_write_config(plain, resolve_table_config(plain, None))) is None, \
        "MOR + INMEMORY insert streams"
    path = str(tmp_path / "t")
    first = [_batch(0, 300)]
    pyhudi.write(_stream(first), path, o)
    more = [_batch(lo, 2000) for lo in range(300, 40_300, 2000)]
    instant = pyhudi.write(_stream(more), path, o)
    _assert_model(path, _model_of(first + more))
    assert all(s["fileId"][:8].isdigit() for s in _stats(path, instant)), "bucket file ids"


def test_mor_inmemory_stream_starts_new_groups_log_only(tmp_path):
    """MOR with the INMEMORY index (sees log files): small slices get their inserts appended as logs, new
    file groups start log-only (as Hudi's INSERT_LOG buckets), each of the planner's records per group."""
    path = str(tmp_path / "t")
    o = _opts("MERGE_ON_READ", "INMEMORY")
    first = [_batch(0, 3000)]
    pyhudi.write(_stream(first), path, {**o, "hoodie.datasource.write.operation": "bulk_insert"})
    small = {s["fileId"] for s in _stats(path, completed_commits(path)[0])}
    more = [_batch(lo, 2000) for lo in range(3000, 83_000, 2000)]
    consumed: list[int] = []

    def gen() -> Iterator[pa.RecordBatch]:
        for i, b in enumerate(more):
            consumed.append(i)
            yield b

    instant = pyhudi.write(_stream(gen()), path, o)
    assert consumed == list(range(len(more)))
    _assert_model(path, _model_of(first + more))
    stats = _stats(path, instant)
    assert all(".log." in s["path"] for s in stats), "inserts of a log-aware index go to log files"
    appended = {s["fileId"] for s in stats if s["fileId"] in small}
    assert appended == small, "every small slice took inserts as a log"
    new_groups = [s for s in stats if s["fileId"] not in small]
    assert new_groups and all(s["fileId"].endswith("-0") for s in new_groups)
    per_part: dict[str, list[int]] = {}
    for s in new_groups:
        per_part.setdefault(s["partitionPath"], []).append(s["numInserts"])
    for part, counts in per_part.items():
        full = max(counts)
        assert sorted(counts)[1:] == [full] * (len(counts) - 1), f"{part}: one remainder group at most: {counts}"
    assert os.path.exists(os.path.join(path, ".hoodie", f"{instant}.deltacommit"))
