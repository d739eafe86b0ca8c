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
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pyhudi.errors import CorruptFileError, HudiError
from pyhudi.faults import armed, fault_point
from pyhudi.index.bloom_filter import (
    FOOTER_KEY,
    MAX_KEY_FOOTER,
    MIN_KEY_FOOTER,
    BloomFilter,
    FooterFilter,
    decoded_entries,
    filter_shape,
    footer_filter_text,
)
from pyhudi.index.key_order import java_min_max
from pyhudi.io.lance_file import is_lance_file, read_lance_base_file
from pyhudi.io.write_pool import WRITE_POOL
from pyhudi.storage import Storage

RECORD_KEY = "_hoodie_record_key"
# A parquet file's fixed cost besides data and bloom filter: magic, footer structure, schema strings.
_FOOTER_SLACK = 4096
# Smallest filter a records-sized bloom gets (~0.9 KB of footer at the default fpp).
MIN_SIZED_BLOOM_ENTRIES = 128
# Largest base file a full read fetches by one GET on an object store (see read_parquet); bigger ones
# are read by ranged GETs so memory holds the decoded table, not also the whole encoded file.
WHOLE_READ_MAX_BYTES = 64 * 1024 * 1024
# Smallest file read with Arrow's thread pools; below it their dispatch costs more than it saves.
PARALLEL_READ_MIN_BYTES = 2 * 1024 * 1024


class DictionaryMemo:
    """The dictionary columns (`dictionary_columns`) of one table's base files, chosen from a sample.

    Whether a column's values repeat is a property of the column (a uuid, a measurement, a city), not of
    one file, so a choice sampled from one file serves the table's later files of the same schema: a
    30-partition upsert sampled every column of each of its 30 files (2.5 ms a file of 20 columns, 5-7%
    of a spread write's time), and a stream of small writes sampled each write afresh (1.7 ms of a 40 ms
    write of 20,000 rows). The choices are kept for the process (a Spark Python worker's too: the memo
    pickles as its table's name), keyed by table and schema, and sampled again every RESAMPLE_FILES
    files so a column whose values change character is decided again. Only the encoding can differ from
    a per-file choice; the values written and every reader's answer cannot."""

    def __init__(self, table: str | None = None) -> None:
        self.table = table if table is not None else f"#{uuid.uuid4().hex}"  # no table: this memo's own

    def columns(self, table: pa.Table) -> bool | list[str]:
        key = (self.table, table.schema.remove_metadata())
        with _MEMO_LOCK:
            chosen = _MEMO_CHOSEN.get(key)
            uses = _MEMO_USES[key] = _MEMO_USES.get(key, 0) + 1
        if chosen is not None and uses % RESAMPLE_FILES:
            return chosen
        picked = dictionary_columns(table)
        if isinstance(picked, list):  # a sampled choice (small files keep the writer's default)
            with _MEMO_LOCK:
                if len(_MEMO_CHOSEN) >= _MEMO_MAX_KEYS and key not in _MEMO_CHOSEN:
                    _MEMO_CHOSEN.clear()
                    _MEMO_USES.clear()
                    _MEMO_USES[key] = uses
                _MEMO_CHOSEN[key] = picked
        return picked

    @staticmethod
    def forget() -> None:
        """Drop every kept choice (tests)."""
        with _MEMO_LOCK:
            _MEMO_CHOSEN.clear()
            _MEMO_USES.clear()


RESAMPLE_FILES = 64
_MEMO_MAX_KEYS = 256  # (table, schema) pairs kept; a process writing more starts over
_MEMO_CHOSEN: dict[tuple[str, pa.Schema], list[str]] = {}
_MEMO_USES: dict[tuple[str, pa.Schema], int] = {}
_MEMO_LOCK = threading.Lock()


@dataclass(frozen=True)
class ParquetSettings:
    """The parquet writer's settings for one operation (`writer.config.parquet_settings` builds them per
    write or service run), with its table's `DictionaryMemo`."""

    codec: str = "snappy"
    page_size: int = 1048576
    block_size: int = 125829120
    bloom_type: str = "DYNAMIC_V0"
    bloom_num_entries: int = 60000
    bloom_fpp: float = 1e-9
    bloom_max_entries: int = 100000
    with_bloom: bool = True
    bloom_size_to_records: bool = True
    dictionary_memo: DictionaryMemo = field(default_factory=DictionaryMemo, compare=False, repr=False)

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
    if settings.with_bloom and RECORD_KEY in table.column_names:
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
    entries = settings.bloom_entries(len(keys))
    empty = FooterFilter.parse(_empty_filter_text(settings.bloom_type, entries, settings.bloom_fpp,
                                                  settings.bloom_max_entries),
                               settings.bloom_type)
    bloom: BloomFilter | FooterFilter
    if empty is not None and empty.fits(len(keys)) and empty.patch_pays(len(keys), fresh=True):
        bloom = empty
    else:
        bloom = new_bloom(settings, len(keys))
    if hashed is not None:
        bloom.add_hashed(hashed)
    else:
        bloom.add_keys(keys)
    return bloom


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
              bloom: BloomFilter | FooterFilter | None = None, key_bounds: tuple[str, str] | None = None) -> None:
    metadata = footer_raw(table, avro_schema_with_meta, settings, bloom, key_bounds)
    plain, statistics, dictionary = _encoding(table, settings)
    writer = pq.ParquetWriter(
        sink, plain.schema, compression=settings.codec, data_page_size=settings.page_size,
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


def _encoding(table: pa.Table, settings: ParquetSettings) -> tuple[pa.Table, bool | list[str], bool | list[str]]:
    """`table` without schema metadata, and the `write_statistics` and `use_dictionary` a base file of
    it is written with: shared by the writer and `estimate_bytes_per_row`, whose estimate came out ~10%
    high on unique strings while it let pyarrow try a dictionary on every column."""
    plain = table.replace_schema_metadata(None)
    statistics, dictionary = java_safe_columns(plain, settings.dictionary_memo.columns(plain))
    return plain, statistics, dictionary


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
    sample = every_nth(table, step, sample_rows)
    return [name for name, col in zip(sample.column_names, sample.columns)  # dictionary columns: as given
            if pa.types.is_dictionary(col.type) or _distinct(col) < sample_rows * 0.9]


def _distinct(col: pa.ChunkedArray) -> int:
    """Distinct non-null values: `pc.unique` hashes at half `pc.count_distinct`'s cost (measured on 2,048
    strings: 58 against 129 us), and counts null as one value."""
    return len(pc.unique(col)) - (1 if col.null_count else 0)


def java_safe_columns(table: pa.Table, dictionary: bool | list[str]) -> tuple[bool | list[str], bool | list[str]]:
    """`write_statistics` and `use_dictionary` for `table` such that Java readers skip no row group
    holding a row their predicate keeps (`dictionary`: the columns `dictionary_columns` chose).

    parquet-mr (Spark, Hudi's Spark reader, every Java engine with pushdown) drops a row group when its
    footer statistics or its dictionary page say no value can match, comparing with `Double.compare`
    and `Double.equals`, while Spark's own semantics are NaN = NaN, NaN above every number and
    -0.0 = 0.0. Two things pyarrow writes break that for float/double columns (nested fields too):

    * min/max leave NaN out (as the parquet spec asks), so `f > 10`, `f >= inf` or `f = NaN` skips a
      row group holding NaN. parquet-mr's own writer puts NaN into max and its reader then ignores
      that chunk's min/max; pyarrow cannot, so a column holding NaN is written without statistics
      (for the whole file: the writer's options are per file).
    * a dictionary holding -0.0 but not 0.0 fails `f = 0.0` / `f IN (0.0)` / `f >= 0.0` (and the
      reverse for a literal -0.0), since `Double.equals` and `Double.compare` tell the zeros apart.
      Min/max are safe here (pyarrow widens a zero bound to -0.0/+0.0, as parquet-mr does). A column
      holding a zero of either sign is written without a dictionary. Deliberate difference from Hudi:
      parquet-mr dictionary-encodes such columns, so Spark can miss rows of Hudi's own files; pyhudi's
      files stay correct at the cost of plain encoding for those columns.

    Strings, decimals, integers and ±inf need nothing: pyarrow's bounds order them as parquet-mr does
    (UTF-8 bytes unsigned, decimals as signed integers). pyhudi writes no page index (column index),
    so there are no page bounds to check. Scanning a float column for NaN and zeros costs two compute
    passes (measured: ~0.02 ms a column at 166 rows, ~0.2 ms at 100,000); other columns are not read.
    """
    no_stats: set[str] = set()
    no_dict: set[str] = set()
    for name, col in zip(table.column_names, table.columns):
        if not _has_float(col.type):
            continue
        for chunk in col.chunks:
            for path, values in _float_leaves(chunk, name):
                if path in no_stats and path in no_dict:
                    continue
                nan, zero = _nan_and_zero(values)
                if nan:
                    no_stats.add(path)
                if zero:
                    no_dict.add(path)
    if not no_stats and not no_dict:
        return True, dictionary
    leaves = [path for field in table.schema for path in _leaf_paths(field.name, field.type)]
    statistics: bool | list[str] = [p for p in leaves if p not in no_stats] if no_stats else True
    if no_dict and dictionary is not False:
        dictionary = [p for p in (leaves if dictionary is True else dictionary) if p not in no_dict]
    return statistics, dictionary


def _nan_and_zero(values: pa.Array) -> tuple[bool, bool]:
    """Whether float `values` hold a NaN, and a zero of either sign. Without nulls numpy reads the buffer
    in place (~8 us for 10,000 values, against ~27 us for the two compute kernels, per column and file);
    with nulls, whose slots hold arbitrary bits, the compute kernels skip them."""
    if values.null_count == 0:
        arr = values.to_numpy(zero_copy_only=True)
        return bool(np.isnan(arr).any()), bool(np.count_nonzero(arr) < len(arr))  # NaN is nonzero, -0.0 zero
    return (bool(pc.any(pc.is_nan(values)).as_py()),
            bool(pc.any(pc.equal(values, pa.scalar(0, values.type))).as_py()))


def _has_float(dtype: pa.DataType) -> bool:
    if pa.types.is_float32(dtype) or pa.types.is_float64(dtype):
        return True
    if pa.types.is_dictionary(dtype):
        return _has_float(dtype.value_type)
    return any(_has_float(dtype.field(i).type) for i in range(dtype.num_fields))


def _float_leaves(arr: pa.Array, path: str) -> Iterator[tuple[str, pa.Array]]:
    """(parquet column path, values) of each float/double leaf under `arr`. Where the exact slice is
    awkward (map entries, dictionaries) a superset of the values is given: that can only leave out
    statistics or a dictionary that were safe, never keep an unsafe one."""
    dtype = arr.type
    if pa.types.is_float32(dtype) or pa.types.is_float64(dtype):
        yield path, arr
    elif pa.types.is_dictionary(dtype):
        yield from _float_leaves(arr.dictionary, path)
    elif pa.types.is_struct(dtype):
        for i in range(dtype.num_fields):
            if _has_float(dtype.field(i).type):
                yield from _float_leaves(arr.field(i), f"{path}.{dtype.field(i).name}")
    elif pa.types.is_map(dtype):
        yield from _float_leaves(arr.keys, f"{path}.key_value.key")
        yield from _float_leaves(arr.items, f"{path}.key_value.value")
    elif _is_list(dtype):
        yield from _float_leaves(arr.flatten(), f"{path}.list.element")


def _is_list(dtype: pa.DataType) -> bool:
    return pa.types.is_list(dtype) or pa.types.is_large_list(dtype) or pa.types.is_fixed_size_list(dtype)


def _leaf_paths(path: str, dtype: pa.DataType) -> Iterator[str]:
    """Parquet column paths under a field, as pyarrow names them (compliant nested types:
    `list.element`, `key_value.key`/`value`); the keys of per-column writer options."""
    if pa.types.is_dictionary(dtype):
        yield from _leaf_paths(path, dtype.value_type)
    elif pa.types.is_struct(dtype):
        for i in range(dtype.num_fields):
            yield from _leaf_paths(f"{path}.{dtype.field(i).name}", dtype.field(i).type)
    elif pa.types.is_map(dtype):
        yield from _leaf_paths(f"{path}.key_value.key", dtype.key_type)
        yield from _leaf_paths(f"{path}.key_value.value", dtype.item_type)
    elif _is_list(dtype):
        yield from _leaf_paths(f"{path}.list.element", dtype.value_type)
    else:
        yield path


def write_parquet(storage: Storage, rel_path: str, table: pa.Table, avro_schema_with_meta: str,
                  settings: ParquetSettings, bytes_per_row: float = 0.0, mid_write_fault: str | None = None,
                  bloom: BloomFilter | FooterFilter | None = None, key_bounds: tuple[str, str] | None = None) -> int:
    """Write `table` as one base file and return its size in bytes (`mid_write_fault`: a fault point
    reached when the data is written but the footer is not, for crash tests). The size is the bytes
    written to the stream: on an object store a HEAD after the PUT would cost a request per file."""
    with storage.open_output_stream(rel_path) as sink:
        _write_to(sink, table, avro_schema_with_meta, settings, bytes_per_row, mid_write_fault, bloom, key_bounds)
        size = int(sink.tell())
    return size


Shrink = Callable[[int, int, int], int]


def proportional(rows: int, size: int, limit: int) -> int:
    """The rows to try after `rows` rows encoded to `size` bytes, over `limit`: proportionally fewer."""
    return int(rows * limit / size * 0.98)


def encode_within(make: Callable[[int], pa.Table], rows: int, limit: int, avro_schema_with_meta: str,
                  settings: ParquetSettings, bytes_per_row: float = 0.0,
                  shrink: Shrink = proportional) -> tuple[pa.Buffer, int, pa.Table]:
    """Encode the first `rows` rows (as built by `make`) as a base file of at most `limit` bytes.

    Size estimates can miss (compression varies along the data), so the file is encoded in memory
    and, if it is too big, re-encoded with fewer rows, as many as `shrink(rows, size, limit)` says
    (at least one fewer). Returns (bytes, rows, the table encoded).
    """
    while True:
        sink = pa.BufferOutputStream()
        table = make(rows)
        _write_to(sink, table, avro_schema_with_meta, settings, bytes_per_row)
        data = sink.getvalue()  # written as is: no copy into Python bytes
        if len(data) <= limit or rows <= 1:
            return data, rows, table
        rows = max(1, min(rows - 1, shrink(rows, len(data), limit)))


def write_within(storage: Storage, rel_path: str, make: Callable[[int], pa.Table], rows: int, limit: int,
                 avro_schema_with_meta: str, settings: ParquetSettings, bytes_per_row: float = 0.0,
                 mid_write_fault: str | None = None, shrink: Shrink = proportional) -> tuple[int, int, pa.Table]:
    """`encode_within`, written: the first `rows` rows (as built by `make`) as a base file of at most
    `limit` bytes at `rel_path`; returns (size, rows, the table written).

    On a local file system the encoder writes straight into the file and a file that came out too big
    is written again with proportionally fewer rows (rare: the rows were planned from a measured size
    per row). Encoding into memory first costs a growing buffer as large as the file (measured on a
    70 MB file: 308 MB allocated and 0.74 s CPU, against 180 MB and 0.39 s into the file). An object
    store's file is one PUT of bytes held in memory anyway, so there the file is encoded in memory first
    and stored only once it fits."""
    if not storage.is_local:
        data, rows, table = encode_within(make, rows, limit, avro_schema_with_meta, settings, bytes_per_row,
                                          shrink)
        storage.write_bytes(rel_path, data, mid_write_fault=mid_write_fault)
        return len(data), rows, table
    while True:
        table = make(rows)
        size = write_parquet(storage, rel_path, table, avro_schema_with_meta, settings, bytes_per_row,
                             mid_write_fault)
        if size <= limit or rows <= 1:
            return size, rows, table
        rows = max(1, min(rows - 1, shrink(rows, size, limit)))


def estimate_bytes_per_row(table: pa.Table, settings: ParquetSettings, sample_rows: int = 4000) -> float:
    """Compressed bytes per row, measured by encoding an evenly spread sample (footer excluded)."""
    n = table.num_rows
    if n == 0:
        return 0.0
    sample = every_nth(table, n / sample_rows, sample_rows) if n > sample_rows else table
    sink = pa.BufferOutputStream()
    plain, statistics, dictionary = _encoding(sample, settings)  # as `_write_to` encodes a file
    pq.write_table(plain, sink, compression=settings.codec, data_page_size=settings.page_size,
                   store_schema=False, write_statistics=statistics, use_dictionary=dictionary)
    size = sink.tell()
    return max(1.0, (size - _FOOTER_SLACK / 4) / sample.num_rows)


def every_nth(table: pa.Table, step: float, count: int) -> pa.Table:
    """Rows `int(i * step)` for i < count, in order, picked with a boolean mask: `Table.take` on a table
    of several chunks concatenates every column first (measured: 496 MB allocated and 0.3 s to take
    rows of a 2M-row, 16-chunk table), a filter copies only the rows it keeps."""
    mask = np.zeros(table.num_rows, dtype=bool)
    mask[(np.arange(count) * step).astype(np.int64)] = True
    return pc.filter(table, pa.array(mask), memory_pool=WRITE_POOL)


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
    "read_footer", "read_parquet", "write_parquet", "write_within",
]
