"""Record keys of base files, per process: base files never change once written, so a process (or a Python
worker Spark reuses for the next micro-batch) reads a file's `_hoodie_record_key` column at most once.

Write-through: a handle that writes a base file puts the keys it wrote here (`remember_written`), so the next
write's index lookup in the same process does not read back the files the previous one wrote (a stream
spread over 300 partitions rewrites 300 files a batch, and its next batch looks all of them up). The keys
are those of the table the file was encoded from, in file order: what reading the column would give. A file
that a failed write leaves and its rollback deletes is never looked up (lookups go through the committed
view), and a file name is never reused for other content (names carry the file id, the write token and the
instant; a re-split attempt rewrites the same name, and the last attempt's keys are the ones put)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence

import pyarrow as pa

from pyhudi.io.base_file import read_parquet
from pyhudi.io.process_cache import SizedLRU, pooled
from pyhudi.io.schema import has_column
from pyhudi.io.written_tables import Kept, drop_kept, keep_batch, keep_written
from pyhudi.storage import Storage

KEY_FIELD = "_hoodie_record_key"


class KeyCache(SizedLRU[pa.Array]):
    """Key columns by their base file's URI, least recently used out first."""


KEY_CACHE = KeyCache()
KEY_CACHE_MAX_BYTES = 256 * 1024 * 1024
_LOCK = threading.Lock()  # the in-process engine looks keys up (and writes files) from several threads


def stored_keys(storage: Storage, path: str) -> pa.Array:
    """The `_hoodie_record_key` column of a base file, from the bounded per-process cache."""
    return keys_of(storage.uri(path), lambda: read_parquet(storage, path, columns=[KEY_FIELD]).column(0))


def keys_of(uri: str, read: Callable[[], pa.ChunkedArray]) -> pa.Array:
    """The cached key column of the base file at `uri`, or `read()`'s, kept (a caller holding the file
    open already, as the bloom lookup does after its footer, reads the column from it)."""
    cached = cached_keys(uri)
    return cached if cached is not None else cache_keys(uri, read())


def cached_keys(uri: str) -> pa.Array | None:
    with _LOCK:
        cached = KEY_CACHE.get(uri)
        if cached is not None:
            KEY_CACHE.move_to_end(uri)
        return cached


def cache_keys(uri: str, column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Keep a copy of `column` made from pyhudi's process-long pool (`process_cache.pooled`)."""
    return _put(uri, pooled(column))


def _put(uri: str, keys: pa.Array) -> pa.Array:
    with _LOCK:
        KEY_CACHE.put(uri, keys)
        KEY_CACHE.evict_to(KEY_CACHE_MAX_BYTES)
    return keys


def remember_written(storage: Storage, path: str, table: pa.Table,
                     footer: Mapping[bytes, bytes | bytearray] | None = None, size: int = 0) -> None:
    """Put the keys of a base file this process just wrote from `table` (a no-op without meta fields:
    such files have no key column to look up), and given the file's `footer` entries and `size`, the table
    too (`io/written_tables`; without, a table kept under the same name before, by an earlier attempt, is
    dropped)."""
    uri = storage.uri(path)
    kept = None
    if footer is not None:
        kept = keep_written(uri, table, footer, size)
    else:
        drop_kept(uri)
    if not has_column(table, KEY_FIELD):
        return
    shared = _kept_keys(kept)
    if shared is not None:
        _put(uri, shared)
        return
    cache_keys(uri, _string_keys(table))


def remember_batch(storage: Storage, table: pa.Table,
                   files: Sequence[tuple[str, int, int, Mapping[bytes, bytes | bytearray], int]], keep: bool,
                   superseded: Sequence[str] = ()) -> None:
    """`remember_written` for the files of a batched merge: each (path, first row, rows, footer entries, size)
    a slice of `table`, whose buffers are its own, from pyhudi's pool (`written_tables.keep_batch`: one
    holding for the batch's tables when `keep`). Each file's keys are a copy of its own: a slice of the
    batch's key column would keep the whole column alive in a cache that evicts file by file. The files the
    merge rewrote (`superseded`, paths) are forgotten by both caches: the next lookup or merge reads the new
    versions."""
    for path in superseded:
        uri = storage.uri(path)
        drop_kept(uri)
        with _LOCK:
            KEY_CACHE.drop(uri)
    uris = [storage.uri(path) for path, *_ in files]
    if keep:
        keep_batch(table, [(uri, start, n, footer, size) for uri, (_, start, n, footer, size) in zip(uris, files)])
    else:
        for uri in uris:
            drop_kept(uri)
    if not has_column(table, KEY_FIELD):
        return
    column = _string_keys(table)
    for uri, (_, start, n, _, _) in zip(uris, files):
        cache_keys(uri, column.slice(start, n))


def _string_keys(table: pa.Table) -> pa.ChunkedArray:
    """`table`'s key column as strings, as a read of the file's key column gives it."""
    column = table.column(KEY_FIELD)
    return column if column.type == pa.string() else column.cast(pa.string())


def _kept_keys(kept: Kept | None) -> pa.Array | None:
    """The kept table's key column, when it is what `cache_keys` would keep: one string chunk, a copy of
    its own in the pool (`written_tables` copies what it keeps). Sharing it saves copying every key of
    every file a write keeps a second time; each cache counts the bytes, so each stays within its bound."""
    if kept is None or not has_column(kept.table, KEY_FIELD):
        return None
    column = kept.table.column(KEY_FIELD)
    return column.chunk(0) if column.num_chunks == 1 and column.type == pa.string() else None
