"""Table services in the background: ingestion does not wait for them.

One daemon worker thread per table runs submitted jobs (e.g. a clustering execution) on the
writer's SparkSession, which accepts concurrent jobs. A failure is logged and never reaches
the writer; conflicts with concurrent writes are already resolved safely at commit.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

log = logging.getLogger(__name__)
_lock = threading.Lock()
_executors: dict[str, ThreadPoolExecutor] = {}
_futures: dict[str, list[Future[object]]] = {}


def submit(table_uri: str, name: str, job: Callable[[], object]) -> Future[object]:
    def guarded() -> object:
        try:
            return job()
        except Exception as exc:  # background services must never take the writer down
            log.warning("background %s on %s failed: %s", name, table_uri, exc)
            raise

    with _lock:
        pool = _executors.setdefault(table_uri, ThreadPoolExecutor(1, thread_name_prefix=f"pyhudi-{name}"))
        fut = pool.submit(guarded)
        _futures.setdefault(table_uri, []).append(fut)
        return fut


def busy(table_uri: str) -> bool:
    with _lock:
        return any(not f.done() for f in _futures.get(table_uri, []))


def wait(table_uri: str | None = None, timeout: float | None = None) -> list[BaseException]:
    """Wait for background services (of one table, or all); return the errors they raised."""
    with _lock:
        futures = [f for uri, fs in _futures.items() if table_uri in (None, uri) for f in fs]
    errors = []
    for f in futures:
        exc = f.exception(timeout=timeout)
        if exc is not None:
            errors.append(exc)
    with _lock:
        for uri in list(_futures):
            if table_uri in (None, uri):
                _futures[uri] = [f for f in _futures[uri] if not f.done()]
    return errors
