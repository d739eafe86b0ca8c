"""Object-store request counts, per pyhudi operation.

On an object store the bill and most of the latency are requests, so each operation can say what it
cost: `with request_metrics() as m: pyhudi.write(...)`, then `m.counts` is
`{"GET": .., "HEAD": .., "PUT": .., "LIST": .., "DELETE": .., "POST": ..}` (S3's request classes: a
ranged GET is a GET, a multipart upload is one POST to start it, a PUT per part and one POST to
complete it; a batch delete is one POST per 1000 keys; a copy is a PUT), plus the bytes read and written.

`ObjectBackend` (object_store.py) calls `count()` once per request it sends, retries included, so
the counts are the requests the store saw. The current collector lives in a `ContextVar`, so two
operations running at once in different threads or tasks count separately. Threads do not inherit
context: pools that run an operation's work (LocalEngine, partition listing, ...) wrap their tasks
with `bind()`, which carries the caller's collector into the worker thread. Requests from threads
that are not bound (a lock's heartbeat renewal, background table services) are not counted.
Collectors nest: an inner `request_metrics()` also counts into the outer one. Spark executors run
in other processes and are not counted (only the driver's requests are).
"""

from __future__ import annotations

import contextvars
import math
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

OPS = ("GET", "HEAD", "PUT", "LIST", "DELETE", "POST")
S3_LIST_PAGE = 1000  # keys per ListObjectsV2 page and per DeleteObjects request
MULTIPART_CHUNK = 5 * 1024 * 1024  # obstore's put(): multipart above this size, parts of this size
R = TypeVar("R")


@dataclass
class RequestMetrics:
    """Requests per kind (`counts`), bytes read/written, and the requests per pyhudi step (`by_op`:
    the storage call that issued them, e.g. "GET range", "PUT if-none-match")."""

    parent: RequestMetrics | None = None
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OPS, 0))
    by_op: dict[str, int] = field(default_factory=dict)
    bytes_read: int = 0
    bytes_written: int = 0
    notes: list[str] = field(default_factory=list)  # planning decisions, e.g. what a clean scanned and why
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def add(self, kind: str, op: str, n: int, read: int, written: int) -> None:
        """Count into this collector and every enclosing one."""
        node: RequestMetrics | None = self
        while node is not None:
            with node._lock:
                node.counts[kind] = node.counts.get(kind, 0) + n
                node.by_op[op] = node.by_op.get(op, 0) + n
                node.bytes_read += read
                node.bytes_written += written
            node = node.parent

    def add_note(self, text: str) -> None:
        node: RequestMetrics | None = self
        while node is not None:
            with node._lock:
                node.notes.append(text)
            node = node.parent

    def summary(self) -> str:
        """One line for `--explain`: `requests: 12 (GET 5, HEAD 1, PUT 4, LIST 2, DELETE 0, POST 0), ...`."""
        kinds = ", ".join(f"{k} {self.counts.get(k, 0)}" for k in OPS)
        return (f"requests: {self.total} ({kinds}); {_mb(self.bytes_read)} read, "
                f"{_mb(self.bytes_written)} written")

    def as_dict(self) -> dict[str, Any]:
        return {"counts": dict(self.counts), "total": self.total, "bytes_read": self.bytes_read,
                "bytes_written": self.bytes_written, "by_op": dict(sorted(self.by_op.items())),
                "notes": list(self.notes)}


_CURRENT: contextvars.ContextVar[RequestMetrics | None] = contextvars.ContextVar("pyhudi_request_metrics",
                                                                                  default=None)


@contextmanager
def request_metrics() -> Iterator[RequestMetrics]:
    """Count the object-store requests issued inside the block (and in the tasks it runs)."""
    metrics = RequestMetrics(parent=_CURRENT.get())
    token = _CURRENT.set(metrics)
    try:
        yield metrics
    finally:
        _CURRENT.reset(token)


def count(kind: str, op: str, n: int = 1, read: int = 0, written: int = 0) -> None:
    """Record `n` requests of `kind` (one of OPS) issued by storage call `op`; free when nobody counts."""
    metrics = _CURRENT.get()
    if metrics is not None and (n or read or written):
        metrics.add(kind, op, n, read, written)


def note(text: str) -> None:
    """Record a planning decision for `--explain` (what a table service scanned and why): the request
    counts say what an operation cost, the notes say why it had to."""
    metrics = _CURRENT.get()
    if metrics is not None:
        metrics.add_note(text)


def count_put(op: str, size: int) -> None:
    """One upload of `size` bytes as the store sees it: a PUT, or POST + a PUT per part + POST above
    obstore's multipart threshold."""
    if size > MULTIPART_CHUNK:
        count("POST", op, 2)
        count("PUT", op, math.ceil(size / MULTIPART_CHUNK), written=size)
    else:
        count("PUT", op, 1, written=size)


def size_of(data: Any) -> int:
    """Bytes in a payload (bytes, memoryview, pa.Buffer)."""
    return len(data) if isinstance(data, bytes) else memoryview(data).nbytes


def list_pages(entries: int) -> int:
    """LIST requests for a listing that returned `entries` keys and prefixes (1000 per page)."""
    return max(1, math.ceil(entries / S3_LIST_PAGE))


def bind(fn: Callable[..., R]) -> Callable[..., R]:
    """`fn` carrying the caller's collector into whatever thread runs it (thread pools start threads
    with an empty context)."""
    metrics = _CURRENT.get()
    if metrics is None:
        return fn

    def bound(*args: Any, **kwargs: Any) -> R:
        token = _CURRENT.set(metrics)
        try:
            return fn(*args, **kwargs)
        finally:
            _CURRENT.reset(token)
    return bound


def _mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 10_000 else f"{n} B"
