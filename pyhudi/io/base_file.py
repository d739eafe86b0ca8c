"""Parquet base files with Hudi's footer, written and read in executors through pyarrow.

The footer carries what Hudi's Java side needs to treat our files as its own:
the Avro schema with meta fields (`parquet.avro.schema`), the bloom filter and
min/max record keys the BLOOM index prunes with. pyarrow's own `ARROW:schema`
entry is left out so the footer looks like parquet-mr's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pyhudi.errors import HudiError
from pyhudi.faults import armed, fault_point
from pyhudi.index.bloom_filter import (
    FOOTER_KEY,
    MAX_KEY_FOOTER,
    MIN_KEY_FOOTER,
    BloomFilter,
    filter_shape,
    read_footer_filter,
)
from pyhudi.index.key_order import java_min_max
from pyhudi.storage import Storage

RECORD_KEY = "_hoodie_record_key"
# A parquet file's fixed cost besides data and bloom filter: magic, footer structure, schema strings.
_FOOTER_SLACK = 4096
# Largest base file a full read fetches by one GET on an object store (see read_parquet); bigger ones
# are read by ranged GETs so memory holds the decoded table, not also the whole encoded file.
WHOLE_READ_MAX_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class ParquetSettings:
    codec: str = "snappy"
    page_size: int = 1048576
    block_size: int = 125829120
    bloom_type: str = "DYNAMIC_V0"
    bloom_num_entries: int = 60000
    bloom_fpp: float = 1e-9
    bloom_max_entries: int = 100000
    with_bloom: bool = True


def footer_metadata(table: pa.Table, avro_schema_with_meta: str, settings: ParquetSettings,
                    bloom: BloomFilter | None = None) -> dict[str, str]:
    """`bloom`, when given, already holds every key of `table` (see `extended_bloom`)."""
    meta = {"parquet.avro.schema": avro_schema_with_meta, "writer.model.name": "avro"}
    if settings.with_bloom and RECORD_KEY in table.column_names:
        keys = table.column(RECORD_KEY)
        if len(keys) and keys.null_count < len(keys):
            if bloom is None:
                bloom = new_bloom(settings)
                bloom.add_keys(keys)
            meta.update(bloom.footer_metadata())
            bounds = java_min_max(keys)  # Hudi's order (String.compareTo), not UTF-8 byte order
            if bounds is not None:
                meta[MIN_KEY_FOOTER], meta[MAX_KEY_FOOTER] = bounds
    return meta


def new_bloom(settings: ParquetSettings) -> BloomFilter:
    return BloomFilter.create(settings.bloom_num_entries, settings.bloom_fpp, settings.bloom_max_entries,
                              settings.bloom_type)


def extended_bloom(old_footer: Mapping[bytes, bytes] | None, new_keys: pa.Array | pa.ChunkedArray,
                   settings: ParquetSettings) -> BloomFilter | None:
    """The old base file's bloom filter plus `new_keys`, or None when it cannot be reused.

    A merge keeps every old record key (updates keep their key; deletes may leave a key behind, which
    is only a false positive the index's key check removes), so the old filter plus the inserted keys
    covers the new file. Hashing every key again costs as much as encoding the file: with Hudi's
    default fpp each key takes ~30 murmur hashes. Reused only if the filter is what `settings` would
    create (same type, bits and hashes), so a changed bloom config still takes effect on rewrite.
    """
    if not settings.with_bloom or not old_footer:
        return None
    try:
        old = read_footer_filter(old_footer)
    except HudiError:
        return None  # a damaged filter is rebuilt from the keys
    expected = (settings.bloom_type.upper(), *filter_shape(settings.bloom_num_entries, settings.bloom_fpp))
    if old is None or (old.type_code, old.vector_size, old.num_hashes) != expected:
        return None
    old.set_max_entries(settings.bloom_max_entries)
    if len(new_keys):
        old.add_keys(new_keys)
    return old


def bloom_overhead(num_records: int, settings: ParquetSettings) -> int:
    """Bytes the footer's bloom filter adds for a file of `num_records` records (it is large: ~431 KB)."""
    if not settings.with_bloom:
        return 0
    bits = filter_shape(settings.bloom_num_entries, settings.bloom_fpp)[0]
    rows = 1 if num_records <= settings.bloom_num_entries or settings.bloom_type != "DYNAMIC_V0" else 2
    raw = 24 + rows * (13 + (bits + 7) // 8)
    return 4 * math.ceil(raw / 3)


def _row_group_rows(table: pa.Table, settings: ParquetSettings, bytes_per_row: float) -> int:
    if bytes_per_row <= 0:
        return max(1, table.num_rows)
    return max(1000, int(settings.block_size / bytes_per_row))


def _write_to(sink: pa.NativeFile, table: pa.Table, avro_schema_with_meta: str, settings: ParquetSettings,
              bytes_per_row: float, mid_write_fault: str | None = None, bloom: BloomFilter | None = None) -> None:
    metadata = footer_metadata(table, avro_schema_with_meta, settings, bloom)
    plain = table.replace_schema_metadata(None)
    writer = pq.ParquetWriter(
        sink, plain.schema, compression=settings.codec, data_page_size=settings.page_size,
        store_schema=False, write_statistics=True, use_dictionary=dictionary_columns(plain),
    )
    writer.write_table(plain, row_group_size=_row_group_rows(table, settings, bytes_per_row))
    if mid_write_fault is not None and armed(mid_write_fault):  # crash tests: row groups written, no footer
        sink.flush()
        fault_point(mid_write_fault)
    # With store_schema=False, schema metadata is not written; footer entries go in explicitly.
    writer.add_key_value_metadata(metadata)
    writer.close()


def dictionary_columns(table: pa.Table, sample_rows: int = 2048) -> bool | list[str]:
    """Columns worth dictionary encoding: those whose values repeat.

    Parquet writers try a dictionary for every column and fall back to plain encoding once it
    outgrows a page; for unique values (record keys, sequence numbers, uuids, measurements) that
    attempt is pure waste, up to 40% of the encoding time of a typical file, and the fallback
    pages are not smaller. A sample decides: a column whose sampled values (almost) never repeat is
    written plain; any real repetition keeps the dictionary. Nested columns keep the writer's default (their leaf paths are not top-level names).
    """
    n = table.num_rows
    if n <= sample_rows or any(pa.types.is_nested(f.type) for f in table.schema):
        return True
    step = n // sample_rows
    sample = table.take(pa.array(range(0, step * sample_rows, step), type=pa.int64()))
    return [name for name, col in zip(sample.column_names, sample.columns)
            if pc.count_distinct(col).as_py() < sample_rows * 0.9]


def write_parquet(storage: Storage, rel_path: str, table: pa.Table, avro_schema_with_meta: str,
                  settings: ParquetSettings, bytes_per_row: float = 0.0, mid_write_fault: str | None = None,
                  bloom: BloomFilter | None = None) -> int:
    """Write `table` as one base file and return its size in bytes (`mid_write_fault`: a fault point
    reached when the data is written but the footer is not, for crash tests). The size is the bytes
    written to the stream: on an object store a HEAD after the PUT would cost a request per file."""
    with storage.open_output_stream(rel_path) as sink:
        _write_to(sink, table, avro_schema_with_meta, settings, bytes_per_row, mid_write_fault, bloom)
        size = int(sink.tell())
    return size


def encode_within(make: Callable[[int], pa.Table], rows: int, limit: int, avro_schema_with_meta: str,
                  settings: ParquetSettings, bytes_per_row: float = 0.0) -> tuple[pa.Buffer, int]:
    """Encode the first `rows` rows (as built by `make`) as a base file of at most `limit` bytes.

    Size estimates can miss (compression varies along the data), so the file is encoded in memory
    and, if it is too big, re-encoded with proportionally fewer rows. Returns (bytes, rows).
    """
    while True:
        sink = pa.BufferOutputStream()
        _write_to(sink, make(rows), avro_schema_with_meta, settings, bytes_per_row)
        data = sink.getvalue()  # written as is: no copy into Python bytes
        if len(data) <= limit or rows <= 1:
            return data, rows
        rows = max(1, min(rows - 1, int(rows * limit / len(data) * 0.98)))


def estimate_bytes_per_row(table: pa.Table, settings: ParquetSettings, sample_rows: int = 4000) -> float:
    """Compressed bytes per row, measured by encoding an evenly spread sample (footer excluded)."""
    n = table.num_rows
    if n == 0:
        return 0.0
    if n > sample_rows:
        step = n / sample_rows
        sample = table.take(pa.array([int(i * step) for i in range(sample_rows)], type=pa.int64()))
    else:
        sample = table
    sink = pa.BufferOutputStream()
    pq.write_table(sample, sink, compression=settings.codec, data_page_size=settings.page_size,
                   store_schema=False)
    size = sink.tell()
    return max(1.0, (size - _FOOTER_SLACK / 4) / sample.num_rows)


def read_parquet(storage: Storage, rel_path: str, columns: list[str] | None = None) -> pa.Table:
    """One file, read with ParquetFile: pq.read_table builds a dataset per call, which costs about three
    times a small file's read (the index lookup and the merge read thousands on a spread write).

    All columns (a merge's old base file) of a file up to WHOLE_READ_MAX_BYTES on an object store come
    in one GET of the whole object instead of one ranged GET per column chunk; a read of some columns
    (the index's key column) keeps the ranged reads, which fetch only those chunks."""
    whole_below = WHOLE_READ_MAX_BYTES if columns is None else 0
    with storage.open_input_file(rel_path, whole_below=whole_below) as f:
        threads = storage.is_native_file(f)
        return pq.ParquetFile(f, pre_buffer=threads).read(columns=columns, use_threads=threads)


def read_footer(storage: Storage, rel_path: str) -> dict[str, str]:
    with storage.open_input_file(rel_path) as f:
        meta = pq.ParquetFile(f).metadata.metadata or {}
    return {k.decode(): v.decode() for k, v in meta.items()}


def avro_schema_from_footer(storage: Storage, rel_path: str) -> dict[str, object] | None:
    text = read_footer(storage, rel_path).get("parquet.avro.schema")
    return json.loads(text) if text else None


__all__ = [
    "FOOTER_KEY", "ParquetSettings", "bloom_overhead", "estimate_bytes_per_row", "extended_bloom", "footer_metadata",
    "new_bloom",
    "read_footer", "read_parquet", "write_parquet",
]
