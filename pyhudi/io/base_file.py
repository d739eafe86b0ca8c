"""Parquet base files with Hudi's footer, written and read in executors through pyarrow.

The footer carries what Hudi's Java side needs to treat our files as its own:
the Avro schema with meta fields (`parquet.avro.schema`), the bloom filter and
min/max record keys the BLOOM index prunes with. pyarrow's own `ARROW:schema`
entry is left out so the footer looks like parquet-mr's.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pyhudi.errors import CorruptFileError, HudiError
from pyhudi.faults import armed, fault_point
from pyhudi.index.bloom_filter import (
    FOOTER_KEY,
    MAX_KEY_FOOTER,
    MIN_KEY_FOOTER,
    SIMPLE,
    BloomFilter,
    FooterFilter,
    decoded_entries,
    filter_shape,
    footer_filter_text,
)
from pyhudi.index.key_order import java_min_max
from pyhudi.io.column_encoding import (
    ColumnChoice,
    EncodingMemo,
    FloatHazards,
    every_nth,
    java_safe_columns,
    pyarrow_codec,
)
from pyhudi.io.lance_file import is_lance_file, read_lance_base_file
from pyhudi.io.schema import has_column
from pyhudi.io.write_pool import WRITE_POOL
from pyhudi.storage import Storage

RECORD_KEY = "_hoodie_record_key"
# A base file's footer key-value entries as written (a bloom filter's text may be its own, mutable buffer).
Footer = dict[bytes, bytes | bytearray]
# A parquet file's fixed cost besides data and bloom filter: magic, footer structure, schema strings.
_FOOTER_SLACK = 4096
# Smallest filter a records-sized bloom gets (~0.9 KB of footer at the default fpp).
MIN_SIZED_BLOOM_ENTRIES = 128
# Largest base file a full read fetches by one GET on an object store (see read_parquet); bigger ones
# are read by ranged GETs so memory holds the decoded table, not also the whole encoded file.
WHOLE_READ_MAX_BYTES = 64 * 1024 * 1024
# Smallest file read with Arrow's thread pools; below it their dispatch costs more than it saves.
PARALLEL_READ_MIN_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True)
class ParquetSettings:
    """The parquet writer's settings for one operation (`writer.config.parquet_settings` builds them per
    write or service run), with its table's `EncodingMemo`. `codec` is pyarrow's name (`pyarrow_codec`)."""

    codec: str = "snappy"
    page_size: int = 1048576
    block_size: int = 125829120
    bloom_type: str = "DYNAMIC_V0"
    bloom_num_entries: int = 60000
    bloom_fpp: float = 1e-9
    bloom_max_entries: int = 100000
    with_bloom: bool = True
    bloom_size_to_records: bool = True
    raw_incompressible: bool = True
    append_row_groups: bool = True
    encoding_memo: EncodingMemo = field(default_factory=EncodingMemo, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "codec", pyarrow_codec(self.codec))

    def column_choice(self, table: pa.Table) -> ColumnChoice:
        """The sampled per-column choice for files of `table` (`io/column_encoding.sampled_choice`); raw
        columns only when the option is on and there is a codec to skip."""
        raw_codec = self.codec if self.raw_incompressible and self.codec != "none" else None
        return self.encoding_memo.choice(table, raw_codec)

    def bloom_entries(self, num_records: int) -> int:
        """Entries the bloom filter of a file of `num_records` records is sized for.

        Hudi sizes every file's filter for hoodie.index.bloom.num_entries (60,000: a 431 KB footer)
        because its write handles stream records and learn the count only at close. pyhudi writes a file
        from records it holds, so (hoodie.pyhudi.index.bloom.size.to.records) it sizes the filter for the
        records, rounded up to a power of two (files of similar size share a shape, so a merge can
        extend the old filter in place), never above num_entries. The false-positive rate at the file's
        own count is the configured fpp either way; a 1,000-record file's footer shrinks from 431 KB to
        ~9 KB. Hudi's readers take the shape from the serialized filter, so any size reads."""
        if not self.bloom_size_to_records:
            return self.bloom_num_entries
        wanted = 1 << max(0, num_records - 1).bit_length()
        return min(self.bloom_num_entries, max(MIN_SIZED_BLOOM_ENTRIES, wanted))


def footer_metadata(table: pa.Table, avro_schema_with_meta: str, settings: ParquetSettings,
                    bloom: BloomFilter | FooterFilter | None = None) -> dict[str, str]:
    """`bloom`, when given, already holds every key of `table` (see `extended_bloom`)."""
    return decoded_entries(footer_raw(table, avro_schema_with_meta, settings, bloom))


def footer_raw(table: pa.Table, avro_schema_with_meta: str, settings: ParquetSettings,
               bloom: BloomFilter | FooterFilter | None = None, key_bounds: tuple[str, str] | None = None
               ) -> dict[bytes, bytes | bytearray]:
    """`footer_metadata` as the bytes the parquet writer takes: the bloom filter's text goes in without
    a decode and an encode (two copies of ~431 KB a file at Hudi's defaults). `key_bounds`, when given,
    are the keys' `java_min_max` (computed for many files at once by a batched merge)."""
    meta: dict[bytes, bytes | bytearray] = {b"parquet.avro.schema": avro_schema_with_meta.encode(),
                                            b"writer.model.name": b"avro"}
    if settings.with_bloom and has_column(table, RECORD_KEY):
        keys = table.column(RECORD_KEY)
        if len(keys) and keys.null_count < len(keys):
            if bloom is None:
                bloom = fresh_bloom(settings, keys)
            meta.update(bloom.footer_raw())
            bounds = key_bounds or java_min_max(keys)  # Hudi's order (String.compareTo), not UTF-8 byte order
            if bounds is not None:
                meta[MIN_KEY_FOOTER.encode()], meta[MAX_KEY_FOOTER.encode()] = bounds[0].encode(), bounds[1].encode()
    return meta


def new_bloom(settings: ParquetSettings, num_records: int) -> BloomFilter:
    return BloomFilter.create(settings.bloom_entries(num_records), settings.bloom_fpp, settings.bloom_max_entries,
                              settings.bloom_type)


def fresh_bloom(settings: ParquetSettings, keys: pa.Array | pa.ChunkedArray,
                hashed: np.ndarray | None = None) -> BloomFilter | FooterFilter:
    """A new filter holding `keys`, as Hudi's writers build it from every key written. A few keys are
    patched into the cached text of an empty filter (`FooterFilter.patch_pays`), which saves packing and
    encoding the whole (mostly zero) 431 KB filter; the text is the same either way. `hashed`: the keys'
    `key_positions` for the shape `settings` gives `len(keys)` records (see `bloom_shape`)."""
    bloom: BloomFilter | FooterFilter | None = _patched_empty(settings, len(keys))
    if bloom is None:
        bloom = new_bloom(settings, len(keys))
    if hashed is not None:
        bloom.add_hashed(hashed)
    else:
        bloom.add_keys(keys)
    return bloom


def _patched_empty(settings: ParquetSettings, n: int) -> FooterFilter | None:
    """The cached text of an empty filter for `n` keys, where patching them in pays (`fresh_bloom`)."""
    empty = FooterFilter.parse(_empty_filter_text(settings.bloom_type, settings.bloom_entries(n), settings.bloom_fpp,
                                                  settings.bloom_max_entries),
                               settings.bloom_type)
    return empty if empty is not None and empty.fits(n) and empty.patch_pays(n, fresh=True) else None


def fresh_blooms(settings: ParquetSettings, keys: pa.ChunkedArray, at: np.ndarray, files: Sequence[int]
                 ) -> dict[int, BloomFilter | FooterFilter]:
    """`fresh_bloom` of each file's keys (`keys[at[i]:at[i + 1]]`, none null; files without keys left
    out). Files whose filters share a shape and take their keys in one row are built together
    (`BloomFilter.create_filled`), one hashing pass for all of them."""
    out: dict[int, BloomFilter | FooterFilter] = {}
    by_shape: dict[tuple[int, int], list[int]] = {}
    for i in files:
        n = int(at[i + 1] - at[i])
        if not n:
            continue
        alone: BloomFilter | FooterFilter | None = _patched_empty(settings, n)
        if alone is None and settings.bloom_type.upper() != SIMPLE and n > settings.bloom_entries(n):
            alone = new_bloom(settings, n)  # more keys than one row holds: Hudi's rows fill in turn
        if alone is None:
            by_shape.setdefault(bloom_shape(settings, n), []).append(i)
        else:
            alone.add_keys(keys.slice(at[i], n))
            out[i] = alone
    for members in by_shape.values():
        counts = [int(at[i + 1] - at[i]) for i in members]
        out.update(zip(members, BloomFilter.create_filled([settings.bloom_entries(n) for n in counts],
                                                          settings.bloom_fpp, settings.bloom_max_entries,
                                                          settings.bloom_type, keys_of_files(keys, at, members),
                                                          counts)))
    return out


def keys_of_files(keys: pa.ChunkedArray, at: np.ndarray, files: Sequence[int]) -> pa.ChunkedArray:
    """The keys of `files` (file i's are `keys[at[i]:at[i + 1]]`) end to end, for one hashing pass."""
    return pa.chunked_array([c for i in files for c in keys.slice(at[i], at[i + 1] - at[i]).chunks], keys.type)


def bloom_shape(settings: ParquetSettings, num_records: int) -> tuple[int, int]:
    """(bits, hashes) of the filter `settings` give a file of `num_records` records: keys hashed for it
    once (`key_positions`) serve `fresh_bloom` and `extended_bloom` of any file of that shape."""
    return filter_shape(settings.bloom_entries(num_records), settings.bloom_fpp)


def filter_extends(old_footer: Mapping[bytes, bytes] | None, settings: ParquetSettings, num_records: int) -> bool:
    """Whether `extended_bloom` can reuse the old file's filter for a new file of `num_records` records
    (its type and shape are what `settings` give it), read from the filter's header alone. True when the
    header cannot be read that way: `extended_bloom` then decodes it in full and decides."""
    found = footer_filter_text(old_footer) if settings.with_bloom and old_footer else None
    if found is None:
        return False
    parsed = FooterFilter.parse(*found)
    return parsed is None or (parsed.type_code, parsed.vector_size, parsed.num_hashes) == (
        settings.bloom_type.upper(), *bloom_shape(settings, num_records))


@functools.lru_cache(maxsize=32)
def _empty_filter_text(type_code: str, num_entries: int, fpp: float, max_entries: int) -> bytes:
    return BloomFilter.create(num_entries, fpp, max_entries, type_code).serialized()


def extended_bloom(old_footer: Mapping[bytes, bytes] | None, new_keys: pa.Array | pa.ChunkedArray,
                   settings: ParquetSettings, num_records: int,
                   hashed: np.ndarray | None = None) -> BloomFilter | FooterFilter | None:
    """The old base file's bloom filter plus `new_keys` (the new file holds `num_records`), or None when
    it cannot be reused (the writer then builds a fresh filter from every key it writes, as Hudi's merge
    handle always does).

    A merge keeps every old record key (updates keep their key; deletes may leave a key behind, which
    is only a false positive the index's key check removes), so the old filter plus the inserted keys
    covers the new file. Reused only if the filter is what `settings` would create for the new file (same
    type, bits and hashes), so a changed bloom config, or a file grown past its filter's size, gets a
    fresh filter on rewrite.

    Which path, measured (Hudi's default 431 KB filter, one thread, 2-core EPYC): a fresh filter costs
    ~0.55 ms plus hashing every key of the file (~30 murmur rounds a key: 0.6 ms in all at 100 keys of
    one length, 0.8 ms at 2,000, 1.0 ms at 4,000; keys of mixed lengths hash in one numpy pass per length,
    1.8 ms at 100); decoding the old filter and encoding it again ~0.9 ms plus hashing the new keys. A
    fresh build would win only below ~1,000-2,000 keys of one length. Patching the old text in place
    (`FooterFilter`: only the characters holding the bits the new keys set are re-encoded) costs ~0.05
    ms plus hashing the new keys plus ~40 ns a bit, below both up to ~1,000 new keys
    (`FooterFilter.patch_pays`); a merge that adds no key copies the old text as it is. More keys, or
    keys that start a row (past `num_entries`), take the decode path.
    """
    if not settings.with_bloom or not old_footer:
        return None
    found = footer_filter_text(old_footer)
    if found is None:
        return None
    expected = (settings.bloom_type.upper(), *bloom_shape(settings, num_records))
    patched = FooterFilter.parse(*found)
    if patched is not None and (patched.type_code, patched.vector_size, patched.num_hashes) == expected \
            and patched.fits(len(new_keys)) and patched.patch_pays(len(new_keys)):
        try:
            if hashed is not None:  # the keys' `key_positions` for the shape `settings` gives (checked above)
                patched.add_hashed(hashed)
            elif len(new_keys):
                patched.add_keys(new_keys)
            return patched
        except CorruptFileError:
            pass  # a damaged group: the full decode below reports it, and the filter is rebuilt
    try:
        old = BloomFilter.deserialize(*found)
    except HudiError:
        return None  # a damaged filter is rebuilt from the keys
    if (old.type_code, old.vector_size, old.num_hashes) != expected:
        return None
    old.set_max_entries(settings.bloom_max_entries)
    if hashed is not None:
        old.add_hashed(hashed)
    elif len(new_keys):
        old.add_keys(new_keys)
    return old


def bloom_overhead(num_records: int, settings: ParquetSettings) -> int:
    """Bytes the footer's bloom filter adds for a file of `num_records` records (~431 KB at Hudi's sizing)."""
    if not settings.with_bloom:
        return 0
    entries = settings.bloom_entries(num_records)
    bits = filter_shape(entries, settings.bloom_fpp)[0]
    rows = 1 if num_records <= entries or settings.bloom_type != "DYNAMIC_V0" else 2
    raw = 24 + rows * (13 + (bits + 7) // 8)
    return 4 * math.ceil(raw / 3)


def _row_group_rows(table: pa.Table, settings: ParquetSettings, bytes_per_row: float) -> int:
    if bytes_per_row <= 0:
        return max(1, table.num_rows)
    return max(1000, int(settings.block_size / bytes_per_row))


def _write_to(sink: pa.NativeFile, table: pa.Table, avro_schema_with_meta: str, settings: ParquetSettings,
              bytes_per_row: float, mid_write_fault: str | None = None,
              bloom: BloomFilter | FooterFilter | None = None, key_bounds: tuple[str, str] | None = None,
              hazards: FloatHazards | None = None) -> Footer:
    """Encode `table` into `sink` and return the footer's key-value entries."""
    metadata = footer_raw(table, avro_schema_with_meta, settings, bloom, key_bounds)
    plain, statistics, dictionary, compression = _encoding(table, settings, hazards)
    writer = pq.ParquetWriter(
        sink, plain.schema, compression=compression, data_page_size=settings.page_size,
        store_schema=False, write_statistics=statistics, use_dictionary=dictionary, memory_pool=WRITE_POOL,
    )
    writer.write_table(plain, row_group_size=_row_group_rows(table, settings, bytes_per_row))
    if mid_write_fault is not None and armed(mid_write_fault):  # crash tests: row groups written, no footer
        sink.flush()
        fault_point(mid_write_fault)
    # With store_schema=False, schema metadata is not written; footer entries go in explicitly, as bytes:
    # given str, pyarrow converts the 431 KB bloom entry at ~0.3 ms a file, given bytes at ~0.02 ms.
    writer.add_key_value_metadata(metadata)
    writer.close()
    return metadata


def _encoding(table: pa.Table, settings: ParquetSettings, hazards: FloatHazards | None = None
              ) -> tuple[pa.Table, bool | list[str], bool | list[str], str | dict[str, str]]:
    """`table` without schema metadata, and the `write_statistics`, `use_dictionary` and `compression` a
    base file of it is written with: shared by the writer and `estimate_bytes_per_row`, whose estimate
    came out ~10% high on unique strings while it let pyarrow try a dictionary on every column."""
    plain = table.replace_schema_metadata(None)
    choice = settings.column_choice(plain)
    statistics, dictionary = java_safe_columns(plain, choice.dictionary, hazards)
    return plain, statistics, dictionary, choice.compression(plain.schema, settings.codec)


def encode_file(table: pa.Table, avro_schema_with_meta: str, settings: ParquetSettings, bytes_per_row: float = 0.0,
                bloom: BloomFilter | FooterFilter | None = None, key_bounds: tuple[str, str] | None = None
                ) -> pa.Buffer:
    """`table` encoded in memory as one base file (`bloom` and `key_bounds`, when given, describe the file
    it will be part of: `io/splice`), as is: no copy into Python bytes."""
    return _encode_file(table, avro_schema_with_meta, settings, bytes_per_row, bloom, key_bounds)[0]


def _encode_file(table: pa.Table, avro_schema_with_meta: str, settings: ParquetSettings, bytes_per_row: float = 0.0,
                 bloom: BloomFilter | FooterFilter | None = None, key_bounds: tuple[str, str] | None = None
                 ) -> tuple[pa.Buffer, Footer]:
    sink = pa.BufferOutputStream()
    footer = _write_to(sink, table, avro_schema_with_meta, settings, bytes_per_row, bloom=bloom, key_bounds=key_bounds)
    return sink.getvalue(), footer


def write_parquet(storage: Storage, rel_path: str, table: pa.Table, avro_schema_with_meta: str,
                  settings: ParquetSettings, bytes_per_row: float = 0.0, mid_write_fault: str | None = None,
                  bloom: BloomFilter | FooterFilter | None = None, key_bounds: tuple[str, str] | None = None) -> int:
    """Write `table` as one base file and return its size in bytes (`mid_write_fault`: a fault point
    reached when the data is written but the footer is not, for crash tests). The size is the bytes
    written to the stream: on an object store a HEAD after the PUT would cost a request per file."""
    return write_base_file(storage, rel_path, table, avro_schema_with_meta, settings, bytes_per_row,
                           mid_write_fault, bloom, key_bounds)[0]


def write_base_file(storage: Storage, rel_path: str, table: pa.Table, avro_schema_with_meta: str,
                    settings: ParquetSettings, bytes_per_row: float = 0.0, mid_write_fault: str | None = None,
                    bloom: BloomFilter | FooterFilter | None = None, key_bounds: tuple[str, str] | None = None,
                    hazards: FloatHazards | None = None) -> tuple[int, Footer]:
    """`write_parquet` with the footer's key-value entries: a process that keeps the table it wrote
    (`io/written_tables`) keeps them too, so its next merge of the file need not open it. `bloom`,
    `key_bounds` and `hazards` (`column_encoding.hazards_by_range`), when given, were found for many
    files at once by a batched merge."""
    with storage.open_output_stream(rel_path) as sink:
        footer = _write_to(sink, table, avro_schema_with_meta, settings, bytes_per_row, mid_write_fault, bloom,
                           key_bounds, hazards)
        size = int(sink.tell())
    return size, footer


Shrink = Callable[[int, int, int], int]


def proportional(rows: int, size: int, limit: int) -> int:
    """The rows to try after `rows` rows encoded to `size` bytes, over `limit`: proportionally fewer."""
    return int(rows * limit / size * 0.98)


def encode_within(make: Callable[[int], pa.Table], rows: int, limit: int, avro_schema_with_meta: str,
                  settings: ParquetSettings, bytes_per_row: float = 0.0,
                  shrink: Shrink = proportional) -> tuple[pa.Buffer, int, pa.Table, Footer]:
    """Encode the first `rows` rows (as built by `make`) as a base file of at most `limit` bytes.

    Size estimates can miss (compression varies along the data), so the file is encoded in memory
    and, if it is too big, re-encoded with fewer rows, as many as `shrink(rows, size, limit)` says
    (at least one fewer). Returns (bytes, rows, the table encoded, its footer's key-value entries).
    """
    while True:
        table = make(rows)
        data, footer = _encode_file(table, avro_schema_with_meta, settings, bytes_per_row)
        if len(data) <= limit or rows <= 1:
            return data, rows, table, footer
        rows = max(1, min(rows - 1, shrink(rows, len(data), limit)))


def write_within(storage: Storage, rel_path: str, make: Callable[[int], pa.Table], rows: int, limit: int,
                 avro_schema_with_meta: str, settings: ParquetSettings, bytes_per_row: float = 0.0,
                 mid_write_fault: str | None = None, shrink: Shrink = proportional) -> tuple[int, int, pa.Table, Footer]:
    """`encode_within`, written: the first `rows` rows (as built by `make`) as a base file of at most
    `limit` bytes at `rel_path`; returns (size, rows, the table written, its footer's key-value entries).

    On a local file system the encoder writes straight into the file and a file that came out too big
    is written again with proportionally fewer rows (rare: the rows were planned from a measured size
    per row). Encoding into memory first costs a growing buffer as large as the file (measured on a
    70 MB file: 308 MB allocated and 0.74 s CPU, against 180 MB and 0.39 s into the file). An object
    store's file is one PUT of bytes held in memory anyway, so there the file is encoded in memory first
    and stored only once it fits."""
    if not storage.is_local:
        data, rows, table, footer = encode_within(make, rows, limit, avro_schema_with_meta, settings,
                                                  bytes_per_row, shrink)
        storage.write_bytes(rel_path, data, mid_write_fault=mid_write_fault)
        return len(data), rows, table, footer
    while True:
        table = make(rows)
        size, footer = write_base_file(storage, rel_path, table, avro_schema_with_meta, settings, bytes_per_row,
                                       mid_write_fault)
        if size <= limit or rows <= 1:
            return size, rows, table, footer
        rows = max(1, min(rows - 1, shrink(rows, size, limit)))


def estimate_bytes_per_row(table: pa.Table, settings: ParquetSettings, sample_rows: int = 4000) -> float:
    """Compressed bytes per row, measured by encoding an evenly spread sample (footer excluded)."""
    n = table.num_rows
    if n == 0:
        return 0.0
    sample = every_nth(table, n / sample_rows, sample_rows) if n > sample_rows else table
    sink = pa.BufferOutputStream()
    plain, statistics, dictionary, compression = _encoding(sample, settings)  # as `_write_to` encodes a file
    pq.write_table(plain, sink, compression=compression, data_page_size=settings.page_size,
                   store_schema=False, write_statistics=statistics, use_dictionary=dictionary)
    size = sink.tell()
    return max(1.0, (size - _FOOTER_SLACK / 4) / sample.num_rows)


def read_parquet(storage: Storage, rel_path: str, columns: list[str] | None = None) -> pa.Table:
    """One file, read with ParquetFile: pq.read_table builds a dataset per call, which costs about three
    times a small file's read (the index lookup and the merge read thousands on a spread write).

    All columns (a merge's old base file) of a file up to WHOLE_READ_MAX_BYTES on an object store come
    in one GET of the whole object instead of one ranged GET per column chunk; a read of some columns
    (the index's key column) keeps the ranged reads, which fetch only those chunks. A Lance base file
    (Hudi 1.2's LANCE tables) is read by `lance_file.read_lance_base_file`."""
    if is_lance_file(rel_path):
        return read_lance_base_file(storage, rel_path, columns)
    whole_below = WHOLE_READ_MAX_BYTES if columns is None else 0
    with storage.open_input_file(rel_path, whole_below=whole_below) as f:
        return read_open_parquet(storage, f, columns)


def read_open_parquet(storage: Storage, f: pa.NativeFile, columns: list[str] | None = None) -> pa.Table:
    """`read_parquet` of a file already opened (`Storage.open_input_file`)."""
    threads = parallel_read(storage, f)
    return pq.ParquetFile(f, pre_buffer=threads).read(columns=columns, use_threads=threads)


def parallel_read(storage: Storage, f: pa.NativeFile) -> bool:
    """Whether to read `f` with Arrow's thread pools (`use_threads`, `pre_buffer`): only files Arrow may
    read so (Storage.is_native_file) and large enough to gain. Small files lose: a local ~430 KB base
    file (33 rows, Hudi's bloom footer) took 0.45 ms with threads and pre-buffering, 0.16 ms without,
    and a write spread over many partitions reads thousands of them. From ~2 MB up the pool wins while a
    core is idle (pyhudi's merges of 2.4-8.2 MB base files on 2 idle cores: 3.5 against 5.1 ms, 11 against
    21 ms; 19 files of 2-8 MB read one after another, 158 against 282 ms) and costs nothing measurable
    when the engine's tasks already fill the cores (the same 19 files by two tasks at once: 144 against
    141 ms). A merge into one partition's open file, the common stream shape, runs one task."""
    return storage.is_native_file(f) and f.size() > PARALLEL_READ_MIN_BYTES


def read_footer(storage: Storage, rel_path: str) -> dict[str, str]:
    with storage.open_input_file(rel_path) as f:
        meta = pq.ParquetFile(f).metadata.metadata or {}
    return {k.decode(): v.decode() for k, v in meta.items()}


def avro_schema_from_footer(storage: Storage, rel_path: str) -> dict[str, object] | None:
    text = read_footer(storage, rel_path).get("parquet.avro.schema")
    return json.loads(text) if text else None


__all__ = [
    "FOOTER_KEY", "ParquetSettings", "bloom_overhead", "bloom_shape", "estimate_bytes_per_row", "extended_bloom",
    "filter_extends", "footer_metadata", "fresh_bloom", "java_safe_columns", "new_bloom", "parallel_read",
    "read_footer", "read_open_parquet", "read_parquet", "write_parquet", "write_within",
]
