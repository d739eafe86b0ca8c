"""How each column of a base file is encoded: dictionary or plain, compressed or stored raw, with or
without statistics. None of it changes a value any reader returns; it decides the file's bytes and the
writer's time, and (`java_safe_columns`) which row groups Java readers may skip.

The dictionary and raw choices are sampled, because whether a column's values repeat or compress is a
property of the column (a uuid, a measurement, a city), not of one file: `EncodingMemo` keeps a choice
sampled from one file for the table's later files of the same schema."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyhudi.io.process_cache import SchemaMemo
from pyhudi.io.write_pool import WRITE_POOL

# hoodie.parquet.compression.codec values (as the config key's enum lower-cases them) as pyarrow names
# them: pyarrow has no "uncompressed".
_PYARROW_CODECS = {"snappy": "snappy", "gzip": "gzip", "zstd": "zstd", "lz4": "lz4", "brotli": "brotli",
                   "uncompressed": "none"}
# Rows a choice is sampled from (a file of fewer rows is sampled whole). Files below MIN_SAMPLE_ROWS keep
# pyarrow's defaults (dictionary tried on every column, every column compressed) and decide nothing for the
# table. A choice sampled from fewer than SAMPLE_ROWS rows is sampled again by a file of twice as many.
SAMPLE_ROWS = 2048
MIN_SAMPLE_ROWS = 256
# A unique text column whose sampled values the codec shrinks by less than this share is stored raw.
RAW_MIN_SAVING = 0.125
# Sampled values below this many bytes say too little about a codec.
_RAW_MIN_SAMPLE_BYTES = 8192
RESAMPLE_FILES = 64
_MEMO_MAX_KEYS = 256  # (table, schema, codec) choices kept; a process writing more starts over


def pyarrow_codec(codec: str) -> str:
    """pyarrow's name of a hoodie.parquet.compression.codec value."""
    return _PYARROW_CODECS.get(codec.lower(), codec.lower())


@dataclass(frozen=True)
class ColumnChoice:
    """The sampled choices for a table's files: `dictionary` as pyarrow's `use_dictionary` takes it (True:
    try every column), `raw` the top-level columns stored uncompressed."""

    dictionary: bool | list[str] = True
    raw: frozenset[str] = frozenset()

    def compression(self, schema: pa.Schema, codec: str) -> str | dict[str, str]:
        """pyarrow's `compression`: `codec`, or per column path when some columns are raw (a path left
        out of pyarrow's dict would be written uncompressed, so every leaf is named)."""
        if not self.raw or codec == "none":
            return codec
        return {path: ("none" if name in self.raw else codec) for name, paths in _leaves_by_field(schema)
                for path in paths}


UNSAMPLED = ColumnChoice()


class EncodingMemo:
    """The sampled `ColumnChoice` of one table's base files.

    A choice sampled from one file serves the table's later files of the same schema and codec: a
    30-partition upsert sampled every column of each of its 30 files (2.5 ms a file of 20 columns, 5-7%
    of a spread write's time), and a stream of small writes sampled each write afresh (1.7 ms of a 40 ms
    write of 20,000 rows). The choices are kept for the process (a Spark Python worker's too: the memo
    pickles as its table's name), keyed by table, schema and codec, and sampled again every
    RESAMPLE_FILES files so a column whose values change character is decided again. Only the encoding
    can differ from a per-file choice; the values written and every reader's answer cannot."""

    def __init__(self, table: str | None = None) -> None:
        self.table = table if table is not None else f"#{uuid.uuid4().hex}"  # no table: this memo's own

    def choice(self, table: pa.Table, raw_codec: str | None = None) -> ColumnChoice:
        """The choice for a file of `table`; `raw_codec`: the codec whose gain decides raw columns (None:
        every column is compressed; never "none")."""
        schema = table.schema
        with _MEMO_LOCK:
            entries = _MEMO.setdefault((self.table, raw_codec), [])
            # Schemas compared, not hashed: hashing one costs ~9 us a file, `equals` (metadata aside) 0.03 us.
            entry = next((e for e in entries if e.schema.equals(schema)), None)
            if entry is None:
                entry = _MemoEntry(schema.remove_metadata())
                entries.append(entry)
            entry.uses += 1
            chosen, uses = entry.chosen, entry.uses
            grown = entry.rows < SAMPLE_ROWS and table.num_rows >= 2 * entry.rows
        if chosen is not None and uses % RESAMPLE_FILES and not grown:
            return chosen
        picked = sampled_choice(table, raw_codec)
        if picked is None:  # too small to sample: the table's choice, else the writer's defaults
            return chosen or UNSAMPLED
        with _MEMO_LOCK:
            entry.chosen, entry.rows = picked, min(table.num_rows, SAMPLE_ROWS)
            if sum(len(e) for e in _MEMO.values()) > _MEMO_MAX_KEYS:  # a process writing many: start over
                _MEMO.clear()
        return picked

    @staticmethod
    def forget() -> None:
        """Drop every kept choice (tests)."""
        with _MEMO_LOCK:
            _MEMO.clear()


@dataclass
class _MemoEntry:
    schema: pa.Schema
    chosen: ColumnChoice | None = None
    uses: int = 0
    rows: int = 0  # the rows `chosen` was sampled from


_MEMO: dict[tuple[str, str | None], list[_MemoEntry]] = {}
_MEMO_LOCK = threading.Lock()


def sampled_choice(table: pa.Table, raw_codec: str | None) -> ColumnChoice | None:
    """The columns worth a dictionary and those worth storing raw, from `SAMPLE_ROWS` evenly spread rows
    (None: the table is too small to sample).

    Dictionary: parquet writers try a dictionary for every column and fall back to plain encoding once it
    outgrows a page; for unique values (record keys, sequence numbers, uuids, measurements) that attempt
    is pure waste, up to 40% of the encoding time of a typical file, and the fallback pages are not
    smaller. A column whose sampled values (almost) never repeat is written plain; any real repetition
    keeps the dictionary. Nested columns keep the writer's default (their leaf paths are not top-level
    names).

    Raw: a unique text column of random characters (uuids, hashes, random ids; and Hudi's
    `_hoodie_record_key`, a copy of such a key) is what the codec cannot shrink, yet snappy spends most
    of a file's compression time on it: on the benchmark's trips, snappy took 18 ms of a 103 ms file
    for each of the two uuid columns, to save 11% of their bytes. Such a column (the codec saves less
    than RAW_MIN_SAVING of its sampled values) is stored uncompressed, which every parquet reader reads:
    the file is a few percent bigger and written (and read) faster. Strong codecs (zstd, gzip) halve
    hex text, so under them the rule keeps compression."""
    n = table.num_rows
    if n < MIN_SAMPLE_ROWS:
        return None
    sample = table if n <= SAMPLE_ROWS else every_nth(table, n // SAMPLE_ROWS, SAMPLE_ROWS)
    nested = any(pa.types.is_nested(f.type) for f in table.schema)
    unique = [name for name, col in zip(sample.column_names, sample.columns)
              if not pa.types.is_nested(col.type) and not pa.types.is_dictionary(col.type)
              and (nested is False or _is_text(col.type)) and _distinct(col) >= sample.num_rows * 0.9]
    dictionary: bool | list[str] = True if nested else [c for c in sample.column_names if c not in unique]
    raw = frozenset(c for c in unique if raw_codec is not None and _is_text(sample.schema.field(c).type)
                    and _incompressible(sample.column(c), raw_codec))
    return ColumnChoice(dictionary, raw)


def _is_text(dtype: pa.DataType) -> bool:
    return (pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or pa.types.is_binary(dtype)
            or pa.types.is_large_binary(dtype))


def _incompressible(col: pa.ChunkedArray, codec: str) -> bool:
    """Whether `codec` saves less than RAW_MIN_SAVING of the (sampled) values' bytes."""
    arr = col.combine_chunks()
    _, offsets, data = arr.buffers()[:3]
    if offsets is None or data is None:
        return False
    width = np.int64 if pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type) else np.int32
    bounds = np.frombuffer(offsets, dtype=width)[[arr.offset, arr.offset + len(arr)]]
    first, size = int(bounds[0]), int(bounds[1] - bounds[0])
    if size < _RAW_MIN_SAMPLE_BYTES:
        return False
    packed = pa.compress(data.slice(first, size), codec=codec, asbytes=False)
    return packed.size > size * (1 - RAW_MIN_SAVING)


def _distinct(col: pa.ChunkedArray) -> int:
    """Distinct non-null values: `pc.unique` hashes at half `pc.count_distinct`'s cost (measured on 2,048
    strings: 58 against 129 us), and counts null as one value."""
    return len(pc.unique(col)) - (1 if col.null_count else 0)


# The float leaves of a file that hold a NaN (written without statistics) and a zero of either sign
# (written without a dictionary): what `java_safe_columns` scans for, or is told.
FloatHazards = tuple[frozenset[str], frozenset[str]]


def java_safe_columns(table: pa.Table, dictionary: bool | list[str], hazards: FloatHazards | None = None
                      ) -> tuple[bool | list[str], bool | list[str]]:
    """`write_statistics` and `use_dictionary` for `table` such that Java readers skip no row group
    holding a row their predicate keeps (`dictionary`: the columns `sampled_choice` chose; `hazards`:
    what a scan of `table` would find, found for many files at once by `hazards_by_range`).

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
    no_stats, no_dict = _scanned(table) if hazards is None else hazards
    if not no_stats and not no_dict:
        return True, dictionary
    leaves = [path for _, paths in _leaves_by_field(table.schema) for path in paths]
    statistics: bool | list[str] = [p for p in leaves if p not in no_stats] if no_stats else True
    if no_dict and dictionary is not False:
        dictionary = [p for p in (leaves if dictionary is True else dictionary) if p not in no_dict]
    return statistics, dictionary


def _scanned(table: pa.Table) -> FloatHazards:
    no_stats: set[str] = set()
    no_dict: set[str] = set()
    for i, name in _float_columns(table.schema):
        for chunk in table.column(i).chunks:
            for path, values in _float_leaves(chunk, name):
                if path in no_stats and path in no_dict:
                    continue
                nan, zero = _nan_and_zero(values)
                if nan:
                    no_stats.add(path)
                if zero:
                    no_dict.add(path)
    return frozenset(no_stats), frozenset(no_dict)


def hazards_by_range(table: pa.Table, bounds: np.ndarray) -> list[FloatHazards] | None:
    """What `java_safe_columns` would find in each row range `bounds[i]:bounds[i + 1]` of `table` (a
    batched merge's files, one after another), in one pass per float column instead of one per file and
    column. None when a float leaf is not a top-level float column (the per-file scan handles those)."""
    columns = _float_columns(table.schema)
    if any(not _is_float(table.schema.field(i).type) for i, _ in columns):
        return None
    starts, ends = bounds[:-1], bounds[1:]
    nan_in = []
    zero_in = []
    for i, name in columns:
        column = table.column(i)
        nan, zero = _nan_and_zero_masks(column.combine_chunks() if column.num_chunks != 1 else column.chunk(0))
        nan_in.append((name, _any_in(nan, starts, ends)))
        zero_in.append((name, _any_in(zero, starts, ends)))
    return [(frozenset(n for n, c in nan_in if c[f]), frozenset(n for n, c in zero_in if c[f]))
            for f in range(len(starts))]


def _is_float(dtype: pa.DataType) -> bool:
    return pa.types.is_float32(dtype) or pa.types.is_float64(dtype)


def _nan_and_zero_masks(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Which float `values` are NaN, and which a zero of either sign. Without nulls numpy reads the buffer
    in place (~8 us for 10,000 values, against ~27 us for the compute kernels); with nulls, whose slots
    hold arbitrary bits, the compute kernels skip them."""
    if values.null_count == 0:
        arr = values.to_numpy(zero_copy_only=True)
        return np.isnan(arr), arr == 0  # -0.0 == 0
    nan = pc.fill_null(pc.is_nan(values), False)
    zero = pc.fill_null(pc.equal(values, pa.scalar(0, values.type)), False)
    return nan.to_numpy(zero_copy_only=False), zero.to_numpy(zero_copy_only=False)


def _any_in(mask: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Whether each range of `mask` holds a True value; the ranges tile `mask` in order. `reduceat` runs
    over the non-empty ranges only: it would give an empty range the value at its start (and cannot
    start one at the end); a non-empty range then ends where the next non-empty one starts, as it does."""
    found = np.zeros(len(starts), dtype=bool)
    filled = np.flatnonzero(starts < ends)
    if len(filled):
        found[filled] = np.logical_or.reduceat(mask, starts[filled])
    return found


# (index, name) of the columns holding float leaves, per schema: looking at every column's type cost ~20 us
# a file of 23 columns.
_float_columns = SchemaMemo(lambda schema: [(i, f.name) for i, f in enumerate(schema) if _has_float(f.type)])


# Each top-level field's parquet column paths, per schema: every file of a write asks for the same few
# schemas, and walking 23 columns' types cost ~85 Python calls a file.
_leaves_by_field = SchemaMemo(lambda schema: [(f.name, tuple(_leaf_paths(f.name, f.type))) for f in schema])


def _nan_and_zero(values: pa.Array) -> tuple[bool, bool]:
    """Whether float `values` hold a NaN, and a zero of either sign."""
    nan, zero = _nan_and_zero_masks(values)
    return bool(nan.any()), bool(zero.any())


def _has_float(dtype: pa.DataType) -> bool:
    if _is_float(dtype):
        return True
    if pa.types.is_dictionary(dtype):
        return _has_float(dtype.value_type)
    return any(_has_float(dtype.field(i).type) for i in range(dtype.num_fields))


def _float_leaves(arr: pa.Array, path: str) -> Iterator[tuple[str, pa.Array]]:
    """(parquet column path, values) of each float/double leaf under `arr`. Where the exact slice is
    awkward (map entries, dictionaries) a superset of the values is given: that can only leave out
    statistics or a dictionary that were safe, never keep an unsafe one."""
    dtype = arr.type
    if _is_float(dtype):
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


def every_nth(table: pa.Table, step: float, count: int) -> pa.Table:
    """Rows `int(i * step)` for i < count, in order, picked with a boolean mask: `Table.take` on a table
    of several chunks concatenates every column first (measured: 496 MB allocated and 0.3 s to take
    rows of a 2M-row, 16-chunk table), a filter copies only the rows it keeps."""
    mask = np.zeros(table.num_rows, dtype=bool)
    mask[(np.arange(count) * step).astype(np.int64)] = True
    return pc.filter(table, pa.array(mask), memory_pool=WRITE_POOL)
