"""What a process keeps between its writes: a least-recently-used map that keeps the sum of its values'
bytes, copies into pyhudi's process-long pool, and answers derived from the last few schemas seen. The key
cache (`index/key_cache.py`) and the written tables (`io/written_tables.py`) are made of them."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

import pyarrow as pa

from pyhudi.io.write_pool import WRITE_POOL


class Sized(Protocol):
    @property
    def nbytes(self) -> int: ...


V = TypeVar("V", bound=Sized)
T = TypeVar("T")


class SizedLRU(OrderedDict[str, V]):
    """LRU that keeps the sum of its values' `nbytes`: summing the whole map on every insert cost
    O(files^2) on a write spread over thousands of files."""

    def __init__(self) -> None:
        super().__init__()
        self.nbytes = 0

    def put(self, key: str, value: V) -> None:
        self.drop(key)
        self[key] = value
        self.nbytes += value.nbytes

    def drop(self, key: str) -> None:
        old = self.pop(key, None)
        if old is not None:
            self.nbytes -= old.nbytes
            self.left(old)

    def evict_to(self, max_bytes: int) -> None:
        """Drop the least recently used values until the rest fit `max_bytes` (the newest always stays)."""
        while self.nbytes > max_bytes and len(self) > 1:
            _, dropped = self.popitem(last=False)
            self.nbytes -= dropped.nbytes
            self.left(dropped)

    def left(self, value: V) -> None:
        """`value` was dropped or evicted: a subclass that indexes its values' parts forgets them here."""

    def clear(self) -> None:
        super().clear()
        self.nbytes = 0


def pooled(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A copy of `column` made from pyhudi's process-long pool. The column was allocated from whatever pool
    was Arrow's default during the read or the write, and a caller may have set a short-lived one (a
    `proxy_memory_pool` to measure a write's peak): freeing an array after its pool is gone is a
    segmentation fault, and a cache frees its arrays at any later eviction. `concat_arrays` always copies
    (a chunked column's chunks in the same pass), where `combine_chunks` of a single chunk hands the same
    buffers back."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    return (pa.concat_arrays(chunks, memory_pool=WRITE_POOL) if chunks
            else pa.array([], column.type, memory_pool=WRITE_POOL))


_CONCAT_BATCHES = getattr(pa, "concat_batches", None)  # pyarrow >= 19


def pooled_table(table: pa.Table) -> pa.Table:
    """A copy of `table` made from pyhudi's pool, as `pooled` copies a column: in one call for all its
    columns where pyarrow has `concat_batches` (a copy per column cost ~5 us of Python each, with the GIL
    held, on every file a write keeps)."""
    batches = table.to_batches()
    if _CONCAT_BATCHES is None or not batches:
        return pa.table([pooled(c) for c in table.columns], schema=table.schema)
    return pa.Table.from_batches([_CONCAT_BATCHES(batches, memory_pool=WRITE_POOL)], table.schema)


class SchemaMemo(Generic[T]):
    """What `derive` says of a schema, for the last `size` schemas seen. A write asks once per file about the
    same few schemas; they are found by `equals` (0.03 us), where hashing a schema costs ~9 us."""

    def __init__(self, derive: Callable[[pa.Schema], T], size: int = 8) -> None:
        self._derive = derive
        self._size = size
        self._seen: list[tuple[pa.Schema, T]] = []  # newest first
        self._lock = threading.Lock()

    def __call__(self, schema: pa.Schema) -> T:
        with self._lock:
            for seen, answer in self._seen:
                if seen.equals(schema):
                    return answer
        answer = self._derive(schema)
        with self._lock:
            self._seen = [(schema, answer), *self._seen[:self._size - 1]]
        return answer
