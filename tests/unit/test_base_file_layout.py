"""The create handle's encoder input (`handles.file_layout`: constant meta columns as one-entry
dictionaries) writes the same bytes as the plain layout, and bulk_insert's `gather` picks the same rows
as a take, on tables of one chunk and of several."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pyhudi.io import schema as S
from pyhudi.io.base_file import ParquetSettings, _write_to, encode_within, every_nth, write_within
from pyhudi.storage import Storage
from pyhudi.writer import handles as H
from pyhudi.writer.bulk_insert import gather
from pyhudi.writer.config import SizingConfig
from pyhudi.writer.operation import WriteOperation

AVRO = S.with_meta_fields({"type": "record", "name": "t_record", "namespace": "hoodie.t", "fields": [
    {"name": "id", "type": "string"}, {"name": "v", "type": ["null", "long"], "default": None}]})


def _ctx(root: str, populate_meta: bool) -> H.HandleContext:
    return H.HandleContext(
        storage=Storage(root), instant="20260101000000000", operation=WriteOperation.BULK_INSERT,
        file_schema=S.avro_to_arrow(AVRO), avro_schema_with_meta=S.to_json(AVRO), populate_meta=populate_meta,
        precombine_field=None, event_time_ordering=False, combine=False, allow_duplicate_on_inserts=True,
        sizing=SizingConfig(), parquet=ParquetSettings(), buckets=(), salts=())


@pytest.mark.parametrize("populate_meta", [True, False])
def test_file_layout_encodes_to_the_same_bytes_as_with_meta(tmp_path: Path, populate_meta: bool) -> None:
    ctx = _ctx(str(tmp_path), populate_meta)
    n = 5000
    keys = [f"k{i:06d}" for i in range(n)]
    records = pa.table({H.RECORD_KEY: keys, H.PARTITION: ["p=a"] * n, "id": keys, "v": list(range(n))})
    files = []
    for layout in (H.with_meta, H.file_layout):
        table = layout(ctx, records, "fg-0_0-1-1_20260101000000000.parquet", 3, 10)
        sink = pa.BufferOutputStream()
        _write_to(sink, table, ctx.avro_schema_with_meta, ctx.parquet, 50.0)
        files.append(sink.getvalue().to_pybytes())
    assert pa.types.is_dictionary(H.file_layout(ctx, records.slice(0, 3), "f", 0, 0).schema.field(H.FILE_NAME).type)
    assert files[0] == files[1]


def _chunked(n: int, chunks: int) -> pa.Table:
    step = -(-n // chunks)
    parts = [pa.table({"a": np.arange(lo, min(n, lo + step)), "s": [f"v{i}" for i in range(lo, min(n, lo + step))]})
             for lo in range(0, n, step)]
    return pa.concat_tables(parts)


@pytest.mark.parametrize("chunks", [1, 7])
def test_gather_equals_take(chunks: int) -> None:
    table = _chunked(1000, chunks)
    rng = np.random.default_rng(chunks)
    for rows in (np.arange(1000), np.arange(100, 400), np.sort(rng.choice(1000, 600, replace=False)),
                 np.sort(rng.choice(1000, 20, replace=False)), rng.permutation(1000)[:50], np.array([], np.int64)):
        got = gather(table, rows)
        assert got.equals(table.take(pa.array(rows, pa.int64()))), rows[:5]


def test_every_nth_picks_the_rows_a_take_would() -> None:
    table = _chunked(1003, 5)
    step = 1003 / 100
    want = table.take(pa.array([int(i * step) for i in range(100)], pa.int64()))
    assert every_nth(table, step, 100).equals(want)


def test_write_within_rewrites_a_file_that_came_out_too_big(tmp_path: Path) -> None:
    """Encoded straight into the local file; above the limit it is written again with fewer rows, and
    what is on disk is the returned size and rows (the same as the in-memory encode would give)."""
    table = pa.table({"_hoodie_record_key": [f"key-{i:08d}" for i in range(20_000)],
                      "v": np.random.default_rng(1).random(20_000)})
    settings = ParquetSettings(with_bloom=False)
    full = len(encode_within(lambda n: table.slice(0, n), table.num_rows, sys.maxsize, "{}", settings)[0])
    limit = full // 2
    size, rows, _, _ = write_within(Storage(str(tmp_path)), "p/f.parquet", lambda n: table.slice(0, n), table.num_rows,
                                 limit, "{}", settings)
    assert rows < table.num_rows and size <= limit
    assert os.path.getsize(tmp_path / "p" / "f.parquet") == size
    assert pq.read_table(tmp_path / "p" / "f.parquet").equals(table.slice(0, rows))
    data, mem_rows, _, _ = encode_within(lambda n: table.slice(0, n), table.num_rows, limit, "{}", settings)
    assert (len(data), mem_rows) == (size, rows)
