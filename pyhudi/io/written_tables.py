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

What the cache holds are holdings, each one copy in the pool: a file's table, or the files of one batched
merge as slices of the batch's table (`keep_batch`: a batch of 300 files made 300 copies, each freed on its
own later, ~200 us of Python a file with the GIL held, a sixth of a 300-partition stream's CPU outside the
parquet encoder). A holding counts all its bytes while any of its files is kept, since any slice keeps the
whole buffer alive, and leaves whole: evicted, or dropped with its last file. A merge drops the old version
of each file it rewrote (`drop_kept`): the next merge reads the new one, and an old version kept would
hold its batch's memory and look recently used (it was just read) where another table's files are not.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

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


@dataclass
class _Holding:
    """One copy in the pool and the kept files it holds (see the module docstring)."""

    nbytes: int
    files: dict[str, Kept] = field(default_factory=dict)


class _Holdings(SizedLRU[_Holding]):
    """Holdings by key (a single file's: its URI), with each kept file's holding."""

    def __init__(self) -> None:
        super().__init__()
        self.holder: dict[str, str] = {}  # file URI -> its holding's key

    def left(self, value: _Holding) -> None:
        for uri in value.files:
            self.holder.pop(uri, None)

    def clear(self) -> None:
        super().clear()
        self.holder.clear()

    def release(self, uri: str) -> None:
        """Stop keeping `uri`; its holding goes with its last file."""
        key = self.holder.pop(uri, None)
        if key is None:
            return
        held = self[key]
        del held.files[uri]
        if not held.files:
            self.drop(key)

    def hold(self, key: str, held: _Holding, max_bytes: int) -> None:
        for uri in held.files:
            self.release(uri)
        self.put(key, held)
        self.holder.update(dict.fromkeys(held.files, key))
        self.evict_to(max_bytes)


TABLES = _Holdings()
_LOCK = threading.Lock()
_BATCHES = itertools.count()


def written_table(uri: str) -> Kept | None:
    """What is kept of the base file at `uri` (its table without the file name column), or None."""
    with _LOCK:
        key = TABLES.holder.get(uri)
        if key is None:
            return None
        TABLES.move_to_end(key)
        return TABLES[key].files[uri]


def drop_kept(uri: str) -> None:
    """Drop the table kept under `uri`, if any: the name was written again and this table is not kept, or
    a merge wrote the file's next version."""
    with _LOCK:
        TABLES.release(uri)


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
            TABLES.release(uri)
        else:
            TABLES.hold(uri, _Holding(kept.nbytes, {uri: kept}), TABLES_MAX_BYTES)
    return kept


def keep_batch(table: pa.Table, files: Sequence[tuple[str, int, int, Mapping[bytes, bytes | bytearray], int]]
               ) -> list[Kept | None]:
    """Keep the files of a batched merge: each (URI, first row, rows, footer entries, size) is a slice of
    `table`, whose buffers must be its own, from pyhudi's pool (a merge's take into it makes them so: a
    slice then pins nothing but its holding). One holding for all; a batch too large for the cache, or of a
    table `_as_read` would change, is kept file by file as `keep_written` keeps it (copies)."""
    plain = table.replace_schema_metadata(None)
    nbytes = plain.get_total_buffer_size()
    per_row = nbytes / max(1, plain.num_rows)
    if (nbytes > TABLES_MAX_BYTES or has_column(plain, FILE_NAME) or _dictionary_commit_time(plain)
            or not round_trips(plain.schema)):
        return [keep_written(uri, table.slice(start, n), footer, size, int(n * per_row))
                for uri, start, n, footer, size in files]
    held = _Holding(nbytes)
    for uri, start, n, footer, size in files:
        if n * per_row <= TABLE_MAX_BYTES:
            entries = _as_read_entries(footer)
            extra = _entries_bytes(entries)
            held.files[uri] = Kept(plain.slice(start, n), int(n * per_row) + extra, entries, size)
            held.nbytes += extra
    with _LOCK:
        for uri, *_ in files:
            TABLES.release(uri)
        if held.files:
            TABLES.hold(f"\0batch{next(_BATCHES)}", held, TABLES_MAX_BYTES)
    return [held.files.get(uri) for uri, *_ in files]


def _as_read(table: pa.Table, footer: Mapping[bytes, bytes | bytearray], size: int,
             approx_bytes: int | None = None) -> Kept | None:
    if has_column(table, FILE_NAME):
        table = table.drop_columns([FILE_NAME])
    if _dictionary_commit_time(table):
        at = table.schema.get_field_index(COMMIT_TIME)
        value_type = table.schema.field(at).type.value_type
        table = table.set_column(at, table.schema.field(at).with_type(value_type), table.column(at).cast(value_type))
    table = table.replace_schema_metadata(None)
    if not round_trips(table.schema) or _too_large(table, approx_bytes):
        return None
    kept = pooled_table(table)
    nbytes = kept.get_total_buffer_size()  # the copy's buffers are its own and whole: its exact size
    if nbytes > TABLE_MAX_BYTES:
        return None
    entries = _as_read_entries(footer)
    return Kept(kept, nbytes + _entries_bytes(entries), entries, size)


def _dictionary_commit_time(table: pa.Table) -> bool:
    at = table.schema.get_field_index(COMMIT_TIME)
    return at >= 0 and pa.types.is_dictionary(table.schema.field(at).type)


def _as_read_entries(footer: Mapping[bytes, bytes | bytearray]) -> dict[bytes, bytes]:
    """Footer entries as a read gives them: bytes, and a copy of a filter's buffer that its owner may patch
    later."""
    return {k: bytes(v) if isinstance(v, bytearray) else v for k, v in footer.items()}


def _entries_bytes(entries: Mapping[bytes, bytes]) -> int:
    return sum(len(k) + len(v) for k, v in entries.items())


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
