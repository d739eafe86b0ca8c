"""File objects over an object store for pyarrow's readers and writers, with pyhudi's retries.

pyarrow's own S3 streams do not survive a throttled store: its AWS SDK does not retry a HeadObject or
GetObject answered 503 (40 of 40 parquet reads failed with every 3rd request throttled, see
docs/architecture.md), and a cut response surfaces as `INTERNAL_FAILURE ... Failed to flush response
stream`. These files make every request one obstore call under `retry.call` instead:

* `ObjectInputFile`: random access by ranged GETs (one per read; pyarrow's parquet reader asks for the
  footer, then the column chunks it needs; its first read of the end fetches at least the last
  `TAIL_PREFETCH_BYTES`, which serve the rest of the footer and, in a small file, everything); the size
  comes from one HEAD at open, or from the listing that found the file. A caller that reads
  the whole file anyway (a merge reads every column of the old base file) passes `whole_below`: a file
  up to that size is then fetched by one GET into a native `pa.BufferReader` (one request instead of
  one per column chunk, ~10 for a typical table; no Python file object, so Arrow's pools may read it).
* `ObjectOutputFile`: buffers the content and PUTs it at close (obstore splits large bodies into a
  multipart upload, completed only when every part is stored), so a file appears whole or not at all.
  Leaving the `with` block by an exception uploads nothing: an interrupted write never becomes a file.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from pyhudi.storage.metrics import bind

if TYPE_CHECKING:
    from pyhudi.storage.object_store import ObjectBackend


# A read that ends at the end of the object (a parquet reader's first look, for the footer) fetches at least
# this much of its tail in the same GET, kept for later reads: parquet's footer length is only known from
# its last 8 bytes, and a Hudi base file's footer holds its bloom filter (~430 KB at the defaults), so
# reading 64 KB first costs a second GET for the rest of the footer, and a third for the column asked for.
# A file up to this size is then one GET in all.
TAIL_PREFETCH_BYTES = 1 << 20


class _RangeReader(io.RawIOBase):
    def __init__(self, backend: ObjectBackend, rel: str, size: int) -> None:
        self.backend, self.rel, self.length, self.pos = backend, rel, size, 0
        self.read_range = bind(backend.read_range)  # pyarrow reads from its own I/O threads: count for the opener
        self._tail_start, self._tail = size, b""  # the prefetched tail [tail_start, size)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.length}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def read(self, size: int | None = -1) -> bytes:
        end = self.length if size is None or size < 0 else min(self.length, self.pos + size)
        if end <= self.pos:
            return b""
        if self.pos >= self._tail_start:
            data = self._tail[self.pos - self._tail_start:end - self._tail_start]
        elif end == self.length and not self._tail:
            self._tail_start = max(0, min(self.pos, self.length - TAIL_PREFETCH_BYTES))
            self._tail = self.read_range(self.rel, self._tail_start, self.length)
            data = self._tail[self.pos - self._tail_start:]
        else:
            data = self.read_range(self.rel, self.pos, end)
        self.pos += len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


class _PutOnClose(io.RawIOBase):
    def __init__(self, backend: ObjectBackend, rel: str) -> None:
        self.backend, self.rel, self.buffer, self.aborted = backend, rel, io.BytesIO(), False

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        return self.buffer.write(data)

    def tell(self) -> int:
        return self.buffer.tell()

    def close(self) -> None:
        if not self.closed:
            try:
                if not self.aborted:
                    self.backend.put(self.rel, self.buffer.getbuffer())
            finally:
                self.buffer = io.BytesIO()
                super().close()


class ObjectOutputFile(pa.PythonFile):
    """A pyarrow output file whose content is PUT at a clean close (see module docstring)."""

    def __init__(self, handle: _PutOnClose, mode: str = "w") -> None:
        # pyarrow's extension type takes the constructor's arguments in its __cinit__
        self._sink = handle

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> Any:
        if exc_type is not None:
            self._sink.aborted = True
        return super().__exit__(exc_type, exc, tb)


def open_output_file(backend: ObjectBackend, rel: str) -> pa.NativeFile:
    return ObjectOutputFile(_PutOnClose(backend, rel), mode="w")


def open_input_file(backend: ObjectBackend, rel: str, whole_below: int = 0, size: int | None = None
                    ) -> pa.NativeFile:
    """A random-access pyarrow file over `rel`; FileNotFoundError if it does not exist (at the HEAD, or
    with a known `size` from a listing, at the first read). A file of at most `whole_below` bytes is read
    whole by one GET (see the module docstring)."""
    if size is None:
        meta = backend.head(rel)
        if meta is None:
            raise FileNotFoundError(f"{backend.describe(rel)} does not exist")
        size = int(meta["size"])
    if 0 < size <= whole_below:
        return pa.BufferReader(pa.py_buffer(backend.read_range(rel, 0, size)))
    return pa.PythonFile(_RangeReader(backend, rel, size), mode="r")
