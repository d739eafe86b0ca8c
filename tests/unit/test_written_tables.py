"""Kept tables of written base files (pyhudi/io/written_tables.py): the in-process engine's next merge takes the
old records from the table the file was encoded from instead of reading the file back. A hit must give
exactly what a read gives. Checked on adversarial values (NaN with payload bits, -0.0, nulls, empty and NUL
and astral strings, binary, decimals, dates, timestamps with and without a time zone, required columns),
after schema evolution, with deletes and updates, on a stream whose every merge compares the hit with a
read of the file; the same stream without the cache writes the same rows, and hudi-rs reads them."""

from __future__ import annotations

import decimal
import os
import struct
import threading
from datetime import date, datetime, timezone
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi.index.key_cache import remember_written
from pyhudi.io import process_cache
from pyhudi.io import written_tables as wt
from pyhudi.storage import Storage
from pyhudi.writer import merge_handle
from tests.helpers import arrow_read, hudi_rs, in_process_read_available

FILE_NAME = "_hoodie_file_name"
NAN_PAYLOAD = struct.unpack("<d", struct.pack("<Q", 0x7FF8_0000_0000_BEEF))[0]


def _options(**extra: str) -> dict[str, str]:
    return {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "p", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.clean.automatic": "false", **extra}


def _batch(start: int, n: int, updates: range = range(0), wide: bool = False, naive: bool = True) -> pa.Table:
    ids = [f"k{i}" for i in range(start, start + n)] + [f"k{i}" for i in updates]
    m = len(ids)
    cols: dict[str, Any] = {
        "id": ids, "p": [["a", "b/c", "ü"][hash(i) % 3] for i in ids],
        "ts": pa.array(range(start, start + m), pa.int64()),
        "d": pa.array([[NAN_PAYLOAD, -0.0, None, float("inf"), 1.5][j % 5] for j in range(m)], pa.float64()),
        "f": pa.array([[float("nan"), -0.0, None, 2.5][j % 4] for j in range(m)], pa.float32()),
        "s": [["", "a\0b", "🙂" * 3, None, f"v{start}-{j}"][j % 5] for j in range(m)],
        "b": pa.array([[b"", b"\x00\xff", None][j % 3] for j in range(m)], pa.binary()),
        "dec": pa.array([[decimal.Decimal("-1.25"), None, decimal.Decimal("99999.99")][j % 3] for j in range(m)],
                        pa.decimal128(7, 2)),
        "day": pa.array([[date(1, 1, 1), None, date(2024, 2, 29)][j % 3] for j in range(m)], pa.date32()),
        "t_us": pa.array([[datetime(2024, 1, 1, 0, 0, 0, 1), None][j % 2] for j in range(m)], pa.timestamp("us")),
        "t_utc": pa.array([datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=timezone.utc)] * m,
                          pa.timestamp("ms", tz="UTC")),
        "flag": pa.array([[True, False, None][j % 3] for j in range(m)], pa.bool_()),
    }
    if not naive:  # hudi-rs does not read a timestamp without a time zone (local-timestamp-micros) yet
        del cols["t_us"]
    if wide:  # schema evolution: a column added by a later write
        cols["added"] = pa.array(range(m), pa.int32())
    return pa.table(cols)


def _bits(table: pa.Table) -> dict[str, list[Any]]:
    """Columns as Python values, floats as their bit patterns (NaN payloads and -0.0 compared exactly)."""
    out = {}
    for name in table.column_names:
        col = table.column(name).combine_chunks()
        if pa.types.is_floating(col.type):
            width = pa.int64() if col.type == pa.float64() else pa.int32()
            col = col.view(width)
        out[name] = col.to_pylist()
    return out


@pytest.fixture
def hits(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, wt.Kept]]:
    """Every kept table a merge takes, with the path of its file."""
    seen: list[tuple[str, wt.Kept]] = []
    real = merge_handle.written_table

    def recording(uri: str) -> wt.Kept | None:
        kept = real(uri)
        if kept is not None:
            seen.append((uri, kept))
        return kept

    monkeypatch.setattr(merge_handle, "written_table", recording)
    return seen


def _check_hits(hits: list[tuple[str, wt.Kept]]) -> int:
    """Each hit's table, footer entries and size are what a read of its file gives (a merge that takes a
    kept table does not open the file)."""
    for uri, kept in hits:
        local = uri.removeprefix("file://")
        read = pq.read_table(local).drop_columns([FILE_NAME])
        assert kept.table.schema.equals(read.schema), (uri, kept.table.schema, read.schema)
        assert _bits(kept.table) == _bits(read), uri
        assert dict(kept.footer) == pq.ParquetFile(local).metadata.metadata, uri
        assert kept.size == os.path.getsize(local), uri
    n = len(hits)
    hits.clear()
    return n


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_every_hit_equals_a_read_of_its_file(tmp_path, hits, table_type):
    path = str(tmp_path / "t")
    opts = _options(**{"hoodie.datasource.write.table.type": table_type})
    pyhudi.write(_batch(0, 60), path, {**opts, "hoodie.datasource.write.operation": "insert"})
    taken = 0
    for step, (batch, op) in enumerate([(_batch(60, 30, range(0, 60, 3)), "upsert"),
                                        (_batch(90, 10), "insert"),
                                        (_batch(100, 20, range(50, 100, 2), wide=True), "upsert"),
                                        (_batch(120, 5, range(0, 120, 7), wide=True), "upsert")]):
        pyhudi.write(batch, path, {**opts, "hoodie.datasource.write.operation": op})
        taken += _check_hits(hits)
        assert taken >= step + 1, "no merge took a kept table"
    if in_process_read_available():  # hudi-rs cannot read the naive timestamp column (see `_batch`)
        assert arrow_read(path).num_rows == 60 + 30 + 10 + 20 + 5


def test_a_stream_writes_the_same_rows_without_the_cache(tmp_path, monkeypatch):
    def stream(path: str) -> None:
        opts = _options()
        pyhudi.write(_batch(0, 50, naive=False), path, {**opts, "hoodie.datasource.write.operation": "insert"})
        pyhudi.write(_batch(50, 20, range(0, 50, 2), naive=False), path,
                     {**opts, "hoodie.datasource.write.operation": "upsert"})
        deletes = _batch(0, 0, range(1, 40, 5), naive=False).append_column("_hoodie_is_deleted",
                                                                             pa.array([True] * 8))
        pyhudi.write(deletes, path, {**opts, "hoodie.datasource.write.operation": "upsert"})
        last = _batch(70, 10, range(3, 70, 4), wide=True, naive=False)
        pyhudi.write(last.append_column("_hoodie_is_deleted", pa.array([False] * last.num_rows)), path,
                     {**opts, "hoodie.datasource.write.operation": "upsert"})

    stream(str(tmp_path / "cached"))
    monkeypatch.setattr(merge_handle, "written_table", lambda uri: None)
    stream(str(tmp_path / "read"))
    keep = ["id", "p", "ts", "d", "f", "s", "b", "dec", "day", "t_utc", "flag", "added"]
    tables = [hudi_rs(tmp_path / name) for name in ("cached", "read")]
    assert tables[0] is not None and tables[1] is not None
    got, want = (_bits(t.select(keep).sort_by("id")) for t in tables)
    assert got == want
    deleted, updated = set(range(1, 40, 5)), set(range(3, 70, 4))
    assert sorted(got["id"]) == sorted(f"k{i}" for i in range(80) if i not in deleted - updated)


def test_only_schemas_that_come_back_from_parquet_are_kept():
    assert wt.round_trips(pa.schema([("a", pa.int64()), ("b", pa.string()), ("c", pa.timestamp("us", "UTC"))]))
    assert wt.round_trips(pa.schema([pa.field("a", pa.int64(), nullable=False)]))
    for typ in (pa.large_string(), pa.date64(), pa.duration("s"), pa.timestamp("ms", "Europe/Paris"),
                pa.struct([("x", pa.int32())]), pa.list_(pa.int32()), pa.dictionary(pa.int32(), pa.string())):
        assert not wt.round_trips(pa.schema([("a", typ)])), typ
    wt.keep_written("file:///x/large.parquet", pa.table({"a": pa.array(["v"], pa.large_string())}), {}, 1)
    assert wt.written_table("file:///x/large.parquet") is None


def test_the_cache_stays_within_its_bounds(tmp_path, monkeypatch):
    monkeypatch.setattr(wt, "TABLES_MAX_BYTES", 10_000)
    monkeypatch.setattr(wt, "TABLE_MAX_BYTES", 4_000)
    wt.TABLES.clear()
    wt.keep_written("file:///x/big.parquet", pa.table({"a": pa.array(range(1000), pa.int64())}), {}, 0)  # 8,000 bytes
    assert wt.written_table("file:///x/big.parquet") is None
    for i in range(10):
        wt.keep_written(f"file:///x/{i}.parquet", pa.table({"a": pa.array(range(300), pa.int64())}), {}, 0)  # 2,400
    assert wt.TABLES.nbytes <= 10_000 and len(wt.TABLES) == 4
    assert wt.written_table("file:///x/9.parquet") is not None and wt.written_table("file:///x/0.parquet") is None
    wt.keep_written("file:///x/9.parquet", pa.table({"a": pa.array(["v"], pa.large_string())}), {}, 0)
    assert wt.written_table("file:///x/9.parquet") is None  # a rewrite of the name that is not kept drops the old
    assert wt.TABLES.nbytes == 3 * 2_400
    storage = Storage(str(tmp_path))
    uri = storage.uri("8.parquet")
    wt.keep_written(uri, pa.table({"a": pa.array(range(3), pa.int64())}), {}, 0)
    assert wt.written_table(uri) is not None
    remember_written(storage, "8.parquet", pa.table({"_hoodie_record_key": ["k"]}))
    assert wt.written_table(uri) is None  # written again, by a path that keeps no table
    wt.TABLES.clear()


def _copies_counted(monkeypatch) -> tuple[list[int], pa.Table]:
    """A 4,000-byte bound on a kept table, the rows of every copy the cache makes, and a batch of 80,000
    bytes of buffers to slice files from."""
    monkeypatch.setattr(wt, "TABLE_MAX_BYTES", 4_000)
    copies: list[int] = []
    pooled_table = wt.pooled_table
    monkeypatch.setattr(wt, "pooled_table", lambda table: copies.append(table.num_rows) or pooled_table(table))
    wt.TABLES.clear()
    return copies, pa.table({"a": pa.array(range(10_000), pa.int64())})


def test_a_file_sliced_from_a_large_batch_is_kept_and_a_large_table_never_copied(monkeypatch):
    copies, batch = _copies_counted(monkeypatch)
    wt.keep_written("file:///x/slice.parquet", batch.slice(5_000, 100), {}, 0)  # its own 800 bytes count
    assert wt.written_table("file:///x/slice.parquet").table.column("a").to_pylist() == list(range(5_000, 5_100))
    assert wt.TABLES.nbytes < 4_000 and copies == [100]
    wt.keep_written("file:///x/whole.parquet", batch, {}, 0)
    assert wt.written_table("file:///x/whole.parquet") is None and copies == [100]  # refused before copying
    wt.TABLES.clear()


def test_a_sliced_file_is_judged_by_its_callers_estimate_and_kept_only_by_its_exact_size(monkeypatch):
    """A batched merge passes each file's share of its batch's bytes (`approx_bytes`) instead of having every
    slice's own size measured: an estimate over the limit refuses the slice before any copy, one under it
    lets the copy be made, and the copy's exact size still refuses a slice the estimate misjudged."""
    copies, batch = _copies_counted(monkeypatch)
    wt.keep_written("file:///x/small.parquet", batch.slice(0, 100), {}, 0, approx_bytes=800)
    assert wt.written_table("file:///x/small.parquet").table.column("a").to_pylist() == list(range(100))
    wt.keep_written("file:///x/refused.parquet", batch.slice(0, 100), {}, 0, approx_bytes=5_000)
    assert wt.written_table("file:///x/refused.parquet") is None and copies == [100]  # no copy made
    wt.keep_written("file:///x/misjudged.parquet", batch.slice(0, 1_000), {}, 0, approx_bytes=100)  # 8,000 bytes
    assert wt.written_table("file:///x/misjudged.parquet") is None and copies == [100, 1_000]
    assert wt.TABLES.nbytes == 800
    wt.TABLES.clear()


def _stream_start(path: str) -> tuple[dict[str, str], str]:
    """A table whose last commit merged into every file group, written by this process (its files kept)."""
    opts = _options(**{"hoodie.datasource.write.operation": "upsert"})
    pyhudi.write(_batch(0, 60, naive=False), path, {**opts, "hoodie.datasource.write.operation": "insert"})
    last = pyhudi.write(_batch(60, 6, range(0, 60, 2), naive=False), path, opts)
    assert last is not None
    return opts, last


def test_a_merge_into_a_kept_file_does_not_open_it(tmp_path, monkeypatch, hits):
    path = str(tmp_path / "t")
    opts, _ = _stream_start(path)
    opened: list[str] = []
    real = Storage.open_input_file

    def recording(self: Storage, rel: str, whole_below: int = 0) -> Any:
        opened.append(rel)
        return real(self, rel, whole_below)

    monkeypatch.setattr(Storage, "open_input_file", recording)
    hits.clear()
    pyhudi.write(_batch(66, 3, range(1, 66, 2), naive=False), path, opts)
    taken = [uri.rsplit("/", 2)[-2:] for uri, _ in hits]
    assert taken, "no merge took a kept table"
    assert not [rel for rel in opened if rel.endswith(".parquet")], opened  # keys cached too: no data file read
    _check_hits([(u, k) for u, k in hits])
    got = hudi_rs(path)
    assert got is not None and got.num_rows == 69


@pytest.mark.parametrize("undo", ["rollback", "restore"])
def test_a_kept_base_rolled_back_under_a_paused_merge_fails_the_merge_at_commit(tmp_path, undo):
    """The merge takes the kept table without opening the file, so a rollback (or restore) that deleted
    the file meanwhile is found by the commit's check that every base it built on is still committed:
    the merge fails, nothing of it is visible, and the table stays writable."""
    from pyhudi import faults
    from pyhudi.errors import CommitConflictError

    path = str(tmp_path / "t")
    if undo == "restore":
        opts = _options(**{"hoodie.datasource.write.operation": "upsert"})
        pyhudi.write(_batch(0, 60, naive=False), path, {**opts, "hoodie.datasource.write.operation": "insert"})
        saved = pyhudi.savepoint(None, path, options=opts)
        pyhudi.write(_batch(60, 6, range(0, 60, 2), naive=False), path, opts)
    else:
        opts, last = _stream_start(path)
    before = hudi_rs(path)
    assert before is not None
    pause = faults.pause_at("write.after_tagging")
    failure: list[BaseException] = []

    def merge() -> None:
        try:
            pyhudi.write(_batch(70, 2, range(0, 66, 3), naive=False), path, opts)
        except BaseException as exc:  # noqa: BLE001 - checked below
            failure.append(exc)

    writer = threading.Thread(target=merge)
    writer.start()
    try:
        assert pause.wait_reached(60)
        if undo == "restore":
            pyhudi.restore(None, path, saved, opts)
        else:
            pyhudi.rollback(None, path, last, opts)
    finally:
        pause.release()
        writer.join(60)
    assert failure and isinstance(failure[0], CommitConflictError), failure
    undone = hudi_rs(path)
    assert undone is not None and undone.num_rows == 60
    assert sorted(undone.column("id").to_pylist()) == sorted(f"k{i}" for i in range(60))
    pyhudi.write(_batch(80, 2, range(0, 60, 5), naive=False), path, opts)  # still writable
    after = hudi_rs(path)
    assert after is not None and after.num_rows == 62


# ------------------------------------------------------------------ holdings: a batched merge's files in one copy


def _owned(n: int) -> pa.Table:
    """A table of `n` int64 rows whose buffers are its own, as a merge's take into the pool makes them."""
    return process_cache.pooled_table(pa.table({"a": pa.array(range(n), pa.int64())}))


def test_a_holding_counts_its_whole_buffer_until_its_last_file_goes():
    wt.TABLES.clear()
    table = _owned(1_000)  # 8,000 bytes
    kept = wt.keep_batch(table, [("file:///h/0.parquet", 0, 400, {b"k": b"v"}, 11),
                                 ("file:///h/1.parquet", 400, 600, {}, 12)])
    assert [k is not None for k in kept] == [True, True] and len(wt.TABLES) == 1
    assert wt.TABLES.nbytes == 8_000 + 2  # the buffer, and the kept footer entries
    first = wt.written_table("file:///h/0.parquet")
    assert first is not None and first.table.column("a").to_pylist() == list(range(400))
    assert first.footer == {b"k": b"v"} and first.size == 11
    wt.drop_kept("file:///h/0.parquet")  # a slice still pins the buffer: it still counts whole
    assert wt.written_table("file:///h/0.parquet") is None and wt.TABLES.nbytes == 8_002
    second = wt.written_table("file:///h/1.parquet")
    assert second is not None and second.table.column("a").to_pylist() == list(range(400, 1_000))
    wt.drop_kept("file:///h/1.parquet")
    assert len(wt.TABLES) == 0 and wt.TABLES.nbytes == 0 and not wt.TABLES.holder


def test_holdings_leave_whole_and_a_file_kept_again_leaves_its_old_holding(monkeypatch):
    monkeypatch.setattr(wt, "TABLES_MAX_BYTES", 20_000)
    wt.TABLES.clear()
    wt.keep_batch(_owned(1_000), [("file:///h/a0", 0, 500, {}, 0), ("file:///h/a1", 500, 500, {}, 0)])
    wt.keep_batch(_owned(1_000), [("file:///h/b0", 0, 1_000, {}, 0)])
    assert wt.written_table("file:///h/a1") is not None  # a's holding now the most recently used
    wt.keep_batch(_owned(1_000), [("file:///h/c0", 0, 1_000, {}, 0)])  # 24,000 bytes: b's holding goes
    assert wt.written_table("file:///h/b0") is None and wt.TABLES.nbytes == 16_000
    wt.keep_written("file:///h/a0", pa.table({"a": pa.array([7], pa.int64())}), {}, 0)  # written again
    again = wt.written_table("file:///h/a0")
    assert again is not None and again.table.column("a").to_pylist() == [7]
    wt.drop_kept("file:///h/a1")  # a's holding lost both its files: gone
    assert wt.TABLES.nbytes == 8_000 + 8 and set(wt.TABLES.holder) == {"file:///h/a0", "file:///h/c0"}
    wt.keep_batch(_owned(3_000), [("file:///h/d0", 0, 3_000, {}, 0)])  # evicts everything older
    assert set(wt.TABLES.holder) == {"file:///h/d0"} and wt.TABLES.nbytes == 24_000
    wt.TABLES.clear()


def test_a_batch_too_large_to_hold_is_kept_file_by_file_within_the_bounds(monkeypatch):
    copies, _ = _copies_counted(monkeypatch)  # a kept table at most 4,000 bytes
    monkeypatch.setattr(wt, "TABLES_MAX_BYTES", 10_000)
    table = _owned(2_000)  # 16,000 bytes: more than the whole cache
    kept = wt.keep_batch(table, [("file:///h/0", 0, 300, {}, 0), ("file:///h/1", 300, 400, {}, 0),
                                 ("file:///h/2", 700, 1_300, {}, 0)])
    assert [k is not None for k in kept] == [True, True, False] and copies == [300, 400]  # 10,400 bytes refused
    assert wt.TABLES.nbytes == 5_600 and len(wt.TABLES) == 2
    wt.TABLES.clear()
    kept = wt.keep_batch(_owned(1_200), [("file:///h/3", 0, 200, {}, 0), ("file:///h/4", 200, 1_000, {}, 0)])
    assert [k is not None for k in kept] == [True, False] and copies == [300, 400]  # held, 8,000 > 4,000
    assert wt.TABLES.nbytes == 9_600 and len(wt.TABLES) == 1
    wt.TABLES.clear()


def _partitioned(start: int, n: int, updates: range = range(0)) -> pa.Table:
    """Rows over 8 partitions (`q`), every partition in every batch."""
    ids = [f"k{i}" for i in range(start, start + n)] + [f"k{i}" for i in updates]
    return pa.table({"id": ids, "q": [f"q{int(i[1:]) % 8}" for i in ids], "ts": list(range(len(ids))),
                     "v": [f"v{start}-{j}" for j in range(len(ids))]})


def test_a_batched_merge_holds_its_files_once_and_forgets_what_it_rewrote(tmp_path, monkeypatch):
    """Each batched merge keeps its 8 files in one holding whose tables equal reads of the files; the files
    it rewrote leave both caches; and a batch is closed by its old files' shares of their holdings, not by
    the holdings' buffers each slice reports (which made batches of two files here)."""
    from pyhudi.index import key_cache

    wt.TABLES.clear()
    key_cache.KEY_CACHE.clear()
    path = str(tmp_path / "t")
    opts = _options(**{"hoodie.datasource.write.partitionpath.field": "q",
                       "hoodie.pyhudi.engine.local.parallelism": "1"})  # one task: one batch of all 8 files
    batches: list[int] = []
    real = merge_handle._merge_batch
    monkeypatch.setattr(merge_handle, "_merge_batch",
                        lambda ctx, storage, records, batch: batches.append(len(batch)) or real(ctx, storage, records, batch))
    pyhudi.write(_partitioned(0, 400), path, {**opts, "hoodie.datasource.write.operation": "insert"})
    storage = Storage(path)
    holdings = []
    for step, (rows, op) in enumerate([(_partitioned(400, 80, range(0, 400, 5)), "upsert"),  # replaces: a take
                                       (_partitioned(480, 80), "insert")]):  # top-ups only: slices copied once
        before = {u for u in wt.TABLES.holder if u.startswith(storage.uri(""))}
        if step == 1:
            held = sum(h.nbytes for h in wt.TABLES.values())
            monkeypatch.setattr(merge_handle, "MERGE_BATCH_BYTES", 2 * held)
        pyhudi.write(rows, path, {**opts, "hoodie.datasource.write.operation": op})
        assert batches[-1] == 8, batches
        now = {u: wt.TABLES.holder[u] for u in wt.TABLES.holder if u.startswith(storage.uri(""))}
        assert len(now) == 8 and len(set(now.values())) == 1 and not before & set(now)
        assert not before & set(key_cache.KEY_CACHE) and set(now) <= set(key_cache.KEY_CACHE)
        holding = wt.TABLES[next(iter(now.values()))]
        assert holding.nbytes == (holding.files[next(iter(now))].table.get_total_buffer_size()
                                  + sum(len(k) + len(v) for f in holding.files.values() for k, v in f.footer.items()))
        _check_hits([(u, holding.files[u]) for u in now])
        for u in now:  # the key cache's copy is the file's keys, in buffers of its own
            keys = key_cache.cached_keys(u)
            assert keys is not None
            assert keys.to_pylist() == pq.read_table(u.removeprefix("file://"), columns=["_hoodie_record_key"]).column(0).to_pylist()
            held_keys = {b.address for c in holding.files[u].table.column("_hoodie_record_key").chunks
                         for b in c.buffers() if b is not None and b.size}
            assert not {b.address for b in keys.buffers() if b is not None and b.size} & held_keys
        holdings.append(next(iter(now.values())))
    assert holdings[0] not in wt.TABLES  # every file of the first holding was rewritten by the second write
    got = hudi_rs(path)
    assert got is not None and got.num_rows == 560
    wt.TABLES.clear()
    key_cache.KEY_CACHE.clear()
