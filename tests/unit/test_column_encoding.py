"""Per-column codec choice (io/column_encoding): a unique text column the codec cannot shrink (uuids,
hashes, random bytes, the `_hoodie_record_key` copying them) is stored uncompressed; every other column
keeps the table's codec; the values, the statistics and every reader's answer stay as they were.

Also: every hoodie.parquet.compression.codec value Hudi accepts writes (pyarrow has no "uncompressed")."""

from __future__ import annotations

import hashlib
import random
import sys
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi.config import keys as K
from pyhudi.io import column_encoding
from pyhudi.io.base_file import ParquetSettings, encode_within
from pyhudi.io.column_encoding import (
    MIN_SAMPLE_ROWS,
    RESAMPLE_FILES,
    SAMPLE_ROWS,
    EncodingMemo,
    pyarrow_codec,
    sampled_choice,
)
from tests.helpers import hudi_rs, rows_by_key

AVRO = '{"type":"record","name":"r","fields":[]}'
ROWS = 5000
RANDOM_TEXT = {"_hoodie_record_key", "uuid", "digest", "blob"}


def _table(rows: int = ROWS, seed: int = 5) -> pa.Table:
    rng = random.Random(seed)
    keys = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(rows)]
    return pa.table({
        "_hoodie_record_key": pa.array(keys),
        "uuid": pa.array(keys),
        "digest": pa.array([hashlib.sha256(k.encode()).hexdigest() for k in keys], pa.large_string()),
        "blob": pa.array([rng.randbytes(24) for _ in range(rows)], pa.binary()),
        "address": pa.array([f"{i} Main Street, Springfield, {i % 97} County" for i in range(rows)]),
        "city": pa.array([("sf", "la", "nyc")[i % 3] for i in range(rows)]),
        "n": pa.array(range(rows), pa.int64()),
    })


def _written(table: pa.Table, **settings: object) -> tuple[dict[str, pq.ColumnChunkMetaData], pa.Table]:
    """(chunk metadata by column path, the table read back) of `table` written as one base file."""
    memo = EncodingMemo(f"t-{uuid.uuid4().hex}")
    data, rows, _, _ = encode_within(lambda k: table.slice(0, k), table.num_rows, sys.maxsize, AVRO,
                                  ParquetSettings(encoding_memo=memo, **settings))  # type: ignore[arg-type]
    assert rows == table.num_rows
    f = pq.ParquetFile(pa.BufferReader(data))
    group = f.metadata.row_group(0)
    return {group.column(j).path_in_schema: group.column(j) for j in range(group.num_columns)}, f.read()


def _same(back: pa.Table, table: pa.Table) -> bool:
    """Equal values (large_string reads back as string: base files carry no Arrow schema)."""
    return back.equals(table.cast(back.schema))


def _raw(chunks: dict[str, pq.ColumnChunkMetaData]) -> set[str]:
    return {path for path, c in chunks.items() if c.compression == "UNCOMPRESSED"}


def test_random_text_is_stored_raw_under_snappy_and_everything_else_compressed() -> None:
    table = _table()
    chunks, back = _written(table)
    assert _raw(chunks) == RANDOM_TEXT
    assert {c.compression for p, c in chunks.items() if p not in RANDOM_TEXT} == {"SNAPPY"}
    assert _same(back, table)
    for path in RANDOM_TEXT:  # statistics are kept: readers still prune by them
        stats = chunks[path].statistics
        assert stats is not None and stats.has_min_max
        assert stats.min == min(table.column(path).to_pylist())
    assert chunks["city"].has_dictionary_page and not chunks["uuid"].has_dictionary_page
    # Raw is the faster and the nearly-as-small choice: snappy saved these columns ~10% at most.
    snappy, _ = _written(table, raw_incompressible=False)
    assert not _raw(snappy)
    for path in RANDOM_TEXT:
        assert snappy[path].total_compressed_size > 0.85 * chunks[path].total_compressed_size


@pytest.mark.parametrize("codec", ["zstd", "gzip"])
def test_a_codec_that_shrinks_hex_text_keeps_it_and_only_random_bytes_are_raw(codec: str) -> None:
    chunks, back = _written(_table(), codec=codec)
    assert _raw(chunks) == {"blob"}
    assert {c.compression for p, c in chunks.items() if p != "blob"} == {codec.upper()}
    assert _same(back, _table())


def test_a_slice_of_a_chunked_table_and_a_nested_schema_choose_the_same_way() -> None:
    table = _table(ROWS + 600)
    chunked = pa.Table.from_batches(table.to_batches(max_chunksize=700)).slice(300, ROWS)
    chunks, back = _written(chunked)
    assert _raw(chunks) == RANDOM_TEXT and _same(back, chunked.combine_chunks())
    nested = table.append_column("st", pa.array([{"x": str(uuid.uuid4()), "y": i} for i in range(table.num_rows)]))
    nested = nested.append_column("tags", pa.array([[f"t{i % 5}", "u"] for i in range(nested.num_rows)]))
    chunks, back = _written(nested)
    # Top-level random text is raw; nested leaves (whatever their values) keep the codec.
    assert _raw(chunks) == RANDOM_TEXT
    assert {chunks[p].compression for p in ("st.x", "st.y", "tags.list.element")} == {"SNAPPY"}
    assert _same(back, nested)


def test_small_files_sparse_columns_and_short_values_decide_nothing() -> None:
    small = _table(MIN_SAMPLE_ROWS - 1)
    assert sampled_choice(small, "snappy") is None
    chunks, _ = _written(small)
    assert not _raw(chunks)
    sparse = _table().set_column(1, "uuid", pa.array([str(uuid.uuid4()) if i % 50 == 0 else None
                                                      for i in range(ROWS)]))
    choice = sampled_choice(sparse, "snappy")
    assert choice is not None and "uuid" not in choice.raw  # its nulls repeat: a dictionary column
    rng = random.Random(1)
    short = _table().set_column(3, "blob", pa.array([rng.randbytes(3) for _ in range(ROWS)]))
    choice = sampled_choice(short, "snappy")  # unique, but ~6 KB of sampled values: too few to judge
    assert choice is not None and isinstance(choice.dictionary, list) and "blob" not in choice.dictionary
    assert "blob" not in choice.raw and "uuid" in choice.raw
    assert sampled_choice(_table(), None) is not None and not sampled_choice(_table(), None).raw  # type: ignore[union-attr]


@pytest.mark.parametrize("rows", [MIN_SAMPLE_ROWS, 700, SAMPLE_ROWS])
def test_a_file_below_the_sample_size_is_sampled_whole(rows: int) -> None:
    """A small file (a partition's first batches in a stream over many partitions) is sampled from all
    its rows: its unique columns are written plain and its random text raw, as a large file's are."""
    table = _table(rows)
    choice = sampled_choice(table, "snappy")
    # 256 blobs of 24 random bytes are 6 KB of values: too few to judge a codec by (the other three: 9-16 KB)
    raw = RANDOM_TEXT - {"blob"} if rows == MIN_SAMPLE_ROWS else RANDOM_TEXT
    assert choice is not None and choice.raw == raw
    assert set(table.column_names) - set(choice.dictionary) == RANDOM_TEXT | {"address", "n"}  # type: ignore[arg-type]
    chunks, back = _written(table)
    assert _raw(chunks) == raw and _same(back, table)
    assert chunks["city"].has_dictionary_page and not chunks["n"].has_dictionary_page


def test_a_choice_from_a_small_file_is_sampled_again_by_a_file_twice_as_large(monkeypatch) -> None:
    """A column of 2,000 values looks unique in 256 rows but repeats in 2,048: the table's choice follows
    the larger files as they come (256 -> 512 -> ... rows), and stops resampling at SAMPLE_ROWS."""
    EncodingMemo.forget()
    memo = EncodingMemo("growing")
    rng = random.Random(3)
    rows = 4 * SAMPLE_ROWS
    table = _table(rows).append_column("rider", pa.array([f"rider-{rng.randrange(2000):05d}" for _ in range(rows)]))
    calls: list[int] = []
    real = sampled_choice

    def spy(t: pa.Table, codec: str | None):  # type: ignore[no-untyped-def]
        calls.append(t.num_rows)
        return real(t, codec)

    monkeypatch.setattr(column_encoding, "sampled_choice", spy)
    assert "rider" not in memo.choice(table.slice(0, MIN_SAMPLE_ROWS), "snappy").dictionary  # type: ignore[operator]
    assert "rider" not in memo.choice(table.slice(0, 2 * MIN_SAMPLE_ROWS - 1), "snappy").dictionary  # type: ignore[operator]
    assert "rider" in memo.choice(table.slice(0, 2 * SAMPLE_ROWS), "snappy").dictionary  # type: ignore[operator]
    assert "rider" in memo.choice(table.slice(0, MIN_SAMPLE_ROWS), "snappy").dictionary  # type: ignore[operator]
    assert "rider" in memo.choice(table, "snappy").dictionary  # type: ignore[operator]
    # The RESAMPLE_FILES-th file samples again; one too small to sample keeps the table's choice.
    for _ in range(RESAMPLE_FILES - 5):
        assert "rider" in memo.choice(table.slice(0, 10), "snappy").dictionary  # type: ignore[operator]
    assert calls == [MIN_SAMPLE_ROWS, 2 * SAMPLE_ROWS, 10]
    EncodingMemo.forget()


def test_the_choice_is_kept_per_table_and_codec() -> None:
    EncodingMemo.forget()
    memo = EncodingMemo("kept")
    table = _table()
    assert memo.choice(table, "snappy").raw == RANDOM_TEXT
    assert memo.choice(table, "zstd").raw == {"blob"}
    compressible = table.set_column(1, "uuid", pa.array([f"row {i:08d} of many" for i in range(ROWS)]))
    assert memo.choice(compressible, "snappy").raw == RANDOM_TEXT  # kept: same table, schema and codec
    assert EncodingMemo("other").choice(compressible, "snappy").raw == RANDOM_TEXT - {"uuid"}
    EncodingMemo.forget()


@pytest.mark.parametrize("codec", K.PARQUET_COMPRESSION_CODEC.choices)
def test_every_codec_hudi_accepts_writes_a_base_file(codec: str) -> None:
    chunks, back = _written(_table(), codec=codec)
    expected = {"uncompressed": "UNCOMPRESSED"}.get(codec, codec.upper())
    assert {c.compression for p, c in chunks.items() if p not in RANDOM_TEXT} == {expected}
    assert _same(back, _table())
    assert pyarrow_codec(codec.upper()) == pyarrow_codec(codec)


@pytest.mark.parametrize("extra", [{}, {"hoodie.parquet.compression.codec": "UNCOMPRESSED"},
                                   {"hoodie.pyhudi.parquet.raw.incompressible": "false"}])
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_tables_with_raw_columns_read_back_with_pyhudi_and_hudi_rs(tmp_path, table_type: str,
                                                                 extra: dict[str, str]) -> None:
    """Inserts, then upserts of a third of the keys (COW merges rewrite raw columns; MOR writes log blocks
    and compacts inline), against a model, read by pyhudi and by hudi-rs."""
    path = str(tmp_path / "t")
    opts = {"hoodie.table.name": "raw", "hoodie.datasource.write.recordkey.field": "uuid",
            "hoodie.datasource.write.partitionpath.field": "", "hoodie.datasource.write.precombine.field": "n",
            "hoodie.datasource.write.table.type": table_type, "hoodie.compact.inline": "true",
            "hoodie.compact.inline.max.delta.commits": "2", **extra}
    data = _table().drop_columns(["_hoodie_record_key"])
    model = {r["uuid"]: r for r in data.to_pylist()}
    pyhudi.write(data, path, {**opts, "hoodie.datasource.write.operation": "insert"})
    for step in range(3):
        update = data.slice(step * 1000, 1500)
        update = update.set_column(5, "n", pa.array([ROWS * (step + 1) + i for i in range(update.num_rows)]))
        pyhudi.write(update, path, {**opts, "hoodie.datasource.write.operation": "upsert"})
        model.update({r["uuid"]: r for r in update.to_pylist()})
    columns = [c for c in data.column_names if c != "uuid"]
    expected = rows_by_key(pa.Table.from_pylist(list(model.values())), "uuid", columns)
    assert rows_by_key(pyhudi.read(path), "uuid", columns) == expected
    assert rows_by_key(hudi_rs(path), "uuid", columns) == expected
    files = [f for f in (tmp_path / "t").rglob("*.parquet") if ".hoodie" not in f.parts]
    assert len(files) >= 2
    for name in ("_hoodie_record_key", "uuid", "digest", "address"):
        codecs = {_chunk(f, name).compression for f in files}
        raw = "hoodie.parquet.compression.codec" in extra or (not extra and name != "address")
        assert codecs == ({"UNCOMPRESSED"} if raw else {"SNAPPY"}), name


def _chunk(path: object, name: str) -> pq.ColumnChunkMetaData:
    group = pq.ParquetFile(path).metadata.row_group(0)
    return next(group.column(j) for j in range(group.num_columns) if group.column(j).path_in_schema == name)


def test_log_blocks_store_the_tables_raw_columns_raw() -> None:
    """MOR log blocks use the base files' choice, so a compacted file's size follows its logs'."""
    from pyhudi.io.log_blocks import encode_parquet_data_block, parquet_block_to_arrow
    from pyhudi.io.log_format import build_log_file, read_valid_blocks

    table = _table().drop_columns(["blob", "digest"])
    avro = ('{"type":"record","name":"r","fields":[' + ",".join(
        f'{{"name":"{c}","type":["null","{"long" if c == "n" else "string"}"],"default":null}}'
        for c in table.column_names) + "]}")
    settings = ParquetSettings(encoding_memo=EncodingMemo(f"log-{uuid.uuid4().hex}"))
    raw = settings.column_choice(table).raw
    assert raw == {"_hoodie_record_key", "uuid"}
    data = build_log_file([encode_parquet_data_block(table, avro, "001", "snappy", raw_columns=raw)])
    (block,) = read_valid_blocks(data)
    content = pq.ParquetFile(pa.BufferReader(block.content)).metadata.row_group(0)
    codecs = {content.column(j).path_in_schema: content.column(j).compression for j in range(content.num_columns)}
    assert {p for p, c in codecs.items() if c == "UNCOMPRESSED"} == raw
    assert {c for p, c in codecs.items() if p not in raw} == {"SNAPPY"}
    assert _same(parquet_block_to_arrow(block), table)
