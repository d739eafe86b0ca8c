"""Base files this process wrote, kept as the Arrow tables they were encoded from (the twin of the key cache,
`index/key_cache.py`), so the next write that merges into the same file group does not read and decode them
back, nor even open them (their footer entries and size are kept too): a stream rewrites the files the batch
before wrote, and on a write spread over 30 partitions the read of each old file was a fifth of its merge.

What is kept is what a read of the file gives, so a merge cannot tell a hit from a read:
* only tables whose schema comes back from parquet as it went in (`round_trips`: a probe of the empty
  table, written as base files are written and read as `read_parquet` reads; large strings, date64,
  durations, time zones parquet does not keep and nested types are never kept);
* without the file name column, which every merge replaces (`merge_handle` never reads it);
* the commit time column as strings (the create handle encodes it as a one-entry dictionary column);
* copied into pyhudi's process-long pool (`process_cache.pooled`), as the key cache's columns are.

Base files never change once written, and a file name is never reused for other content; a re-split
attempt of the create handle rewrites the same name, and the last attempt's table is the one kept. Only the
in-process engine keeps tables (`HandleContext.keep_tables`): a Spark Python worker's memory is the
executor's. The cache holds at most TABLES_MAX_BYTES, a table at most TABLE_MAX_BYTES (a large file is
read back at a fraction of the cost of its merge, and would evict every small one).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from pyhudi.io.process_cache import SchemaMemo, SizedLRU, pooled_table
from pyhudi.io.schema import META_FIELDS, has_column

TABLES_MAX_BYTES = 64 * 1024 * 1024
TABLE_MAX_BYTES = 16 * 1024 * 1024
COMMIT_TIME, FILE_NAME = META_FIELDS[0], META_FIELDS[4]


@dataclass(frozen=True)
class Kept:
    """A kept table with the file's footer entries and size, and the bytes it holds (taken once)."""

    table: pa.Table
    nbytes: int
    footer: Mapping[bytes, bytes]
    size: int


TABLES: SizedLRU[Kept] = SizedLRU()
_LOCK = threading.Lock()


def written_table(uri: str) -> Kept | None:
    """What is kept of the base file at `uri` (its table without the file name column), or None."""
    with _LOCK:
        kept = TABLES.get(uri)
        if kept is not None:
            TABLES.move_to_end(uri)
        return kept


def drop_kept(uri: str) -> None:
    """Drop the table kept under `uri`, if any: the name was written again and this table is not kept."""
    with _LOCK:
        TABLES.drop(uri)


def keep_written(uri: str, table: pa.Table, footer: Mapping[bytes, bytes | bytearray], size: int,
                 approx_bytes: int | None = None) -> Kept | None:
    """Keep `table`, the rows just encoded as the base file at `uri` of `size` bytes with `footer`'s
    key-value entries, when a read of the file would give the same columns (see the module docstring);
    otherwise drop any table kept under `uri` (a re-split attempt's, say). Returns what was kept: its
    columns are copies of their own, which the key cache may share. `approx_bytes`: an estimate of the
    table's own bytes from a caller that sliced it from a larger batch (see `_too_large`)."""
    kept = _as_read(table, footer, size, approx_bytes)
    with _LOCK:
        if kept is None:
            TABLES.drop(uri)
        else:
            TABLES.put(uri, kept)
            TABLES.evict_to(TABLES_MAX_BYTES)
    return kept


def _as_read(table: pa.Table, footer: Mapping[bytes, bytes | bytearray], size: int,
             approx_bytes: int | None = None) -> Kept | None:
    if has_column(table, FILE_NAME):
        table = table.drop_columns([FILE_NAME])
    at = table.schema.get_field_index(COMMIT_TIME)
    if at >= 0 and pa.types.is_dictionary(table.schema.field(at).type):
        field = table.schema.field(at)
        table = table.set_column(at, field.with_type(field.type.value_type),
                                 table.column(at).cast(field.type.value_type))
    table = table.replace_schema_metadata(None)
    if not round_trips(table.schema) or _too_large(table, approx_bytes):
        return None
    kept = pooled_table(table)
    nbytes = kept.get_total_buffer_size()  # the copy's buffers are its own and whole: its exact size
    if nbytes > TABLE_MAX_BYTES:
        return None
    # As a read gives them: bytes, and a copy of a filter's buffer that its owner may patch later.
    entries = {k: bytes(v) if isinstance(v, bytearray) else v for k, v in footer.items()}
    return Kept(kept, nbytes + sum(len(k) + len(v) for k, v in entries.items()), entries, size)


def _too_large(table: pa.Table, approx_bytes: int | None) -> bool:
    """Whether `table` is too large to copy into the cache, by the caller's estimate when it gave one (a
    batched merge: each file's share of its batch's bytes), else by its buffers. A file's rows may be a
    slice of its merge batch, whose buffers hold the whole batch: only then is the slice's own size
    measured (`Table.nbytes`: 100-120 us a file of 23 columns, with the GIL held; the buffers' total
    30-80 us more on a slice, against ~5 us on a table of its own). A table too large is never copied;
    an estimate that was too low costs a copy that the copy's exact size then refuses."""
    if approx_bytes is not None:
        return approx_bytes > TABLE_MAX_BYTES
    return table.get_total_buffer_size() > TABLE_MAX_BYTES and table.nbytes > TABLE_MAX_BYTES


def _round_trips(schema: pa.Schema) -> bool:
    """Whether a base file of `schema` reads back with `schema` (nullability included): flat columns only,
    probed with an empty file written and read as base files are."""
    if any(pa.types.is_nested(f.type) or pa.types.is_dictionary(f.type) for f in schema):
        return False
    sink = pa.BufferOutputStream()
    try:
        pq.write_table(schema.empty_table(), sink, store_schema=False)
        back = pq.ParquetFile(pa.BufferReader(sink.getvalue())).read().schema
    except (pa.ArrowException, ValueError, TypeError):
        return False
    return back.equals(schema)


round_trips = SchemaMemo(_round_trips)  # probed once per schema
