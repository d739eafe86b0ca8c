"""Table services in the background: ingestion does not wait for them.

Jobs run on worker threads of the writer's process (joined when the interpreter exits), on its
SparkSession (which accepts concurrent jobs). Concurrency is bounded so a slow service never piles up work:

* at most one job of each kind (clustering, compaction, clean, archival) per table is queued or
  running; submitting another while one is, returns None and submits nothing (the writer tries again
  after its next commit, when the table has moved on anyway);
* at most `MAX_RUNNING_PER_TABLE` jobs of a table run at once (e.g. one clustering and one compaction).

A failure is logged and never reaches the writer; conflicts with concurrent writes are resolved
safely at commit. Compaction and clustering record their failures per instant (`Attempts`): the
plan stays pending on the timeline and the writer re-submits it after a later commit, once the
back-off has passed, until `hoodie.table.services.async.retry.count` retries are used up; then it is
logged as an error and left pending for `pyhudi compaction|clustering PATH run`.

Spark jobs of a background service run in the scheduler pool `hoodie.table.services.async.scheduler.pool`
(a thread-local property), which shares executors fairly with the micro-batches when the session
runs with spark.scheduler.mode=FAIR.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

log = logging.getLogger(__name__)
MAX_RUNNING_PER_TABLE = 2
_lock = threading.Lock()


@dataclass
class _TableJobs:
    pool: ThreadPoolExecutor
    by_kind: dict[str, Future[object]] = field(default_factory=dict)
    futures: list[Future[object]] = field(default_factory=list)  # not yet collected by wait()


_tables: dict[str, _TableJobs] = {}


def _in_pool(name: str, pool: str | None) -> None:
    """Put this thread's Spark jobs in the services' scheduler pool, with a readable description. Only when
    Spark is already loaded: an in-process writer never imports it."""
    if "pyspark" not in sys.modules:
        return
    from pyhudi.engine.spark.session import set_thread_pool

    set_thread_pool(pool, f"pyhudi background {name}")


def submit(table_uri: str, name: str, job: Callable[[], object], pool: str | None = None) -> Future[object] | None:
    """Run `job` in the background unless a job of kind `name` for this table is still queued or running."""

    def guarded() -> object:
        try:
            _in_pool(name, pool)
            return job()
        except Exception as exc:  # background services must never take the writer down
            log.warning("background %s on %s failed: %s: %s", name, table_uri, type(exc).__name__, exc)
            raise

    with _lock:
        jobs = _tables.get(table_uri)
        if jobs is None:
            jobs = _tables[table_uri] = _TableJobs(
                ThreadPoolExecutor(MAX_RUNNING_PER_TABLE, thread_name_prefix="pyhudi-services"))
        current = jobs.by_kind.get(name)
        if current is not None and not current.done():
            log.debug("background %s on %s still running; not submitting another", name, table_uri)
            return None
        fut = jobs.pool.submit(guarded)
        jobs.by_kind[name] = fut
        jobs.futures.append(fut)
        return fut


def busy(table_uri: str, name: str | None = None) -> bool:
    """Whether a background job (of kind `name`, or any) for the table is queued or running."""
    with _lock:
        jobs = _tables.get(table_uri)
        if jobs is None:
            return False
        if name is not None:
            current = jobs.by_kind.get(name)
            return current is not None and not current.done()
        return any(not f.done() for f in jobs.futures)


def wait(table_uri: str | None = None, timeout: float | None = None) -> list[BaseException]:
    """Wait for background services (of one table, or all); return the errors they raised since the
    last wait. Jobs submitted while waiting are waited for too. On timeout raises TimeoutError and
    keeps every unfinished job for the next wait."""
    errors: list[BaseException] = []
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        with _lock:
            futures = [f for uri, jobs in _tables.items() if table_uri in (None, uri) for f in jobs.futures]
        if not futures:
            return errors
        for f in futures:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            exc = f.exception(timeout=left)
            if exc is not None:
                errors.append(exc)
        with _lock:
            for uri, jobs in _tables.items():
                if table_uri in (None, uri):
                    jobs.futures = [f for f in jobs.futures if f not in futures]


# --------------------------------------------------------------------------- retries of failed plans
@dataclass
class _Attempt:
    failures: int = 0
    not_before: float = 0.0  # time.monotonic() before which no retry starts
    gave_up: bool = False


class Attempts:
    """Failures of background executions per (table, instant), kept for the life of the process.

    A restarted process starts counting afresh: it resumes pending plans from the timeline.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_instant: dict[tuple[str, str], _Attempt] = {}

    def state(self, table_uri: str, instant: str) -> str:
        """"ready" (never failed, or its back-off has passed), "waiting" (in back-off) or "gave_up"."""
        with self._lock:
            a = self._by_instant.get((table_uri, instant))
        if a is None:
            return "ready"
        if a.gave_up:
            return "gave_up"
        return "ready" if time.monotonic() >= a.not_before else "waiting"

    def failures(self, table_uri: str, instant: str) -> int:
        with self._lock:
            a = self._by_instant.get((table_uri, instant))
        return a.failures if a else 0

    def succeeded(self, table_uri: str, instant: str) -> None:
        with self._lock:
            self._by_instant.pop((table_uri, instant), None)

    def failed(self, table_uri: str, kind: str, instant: str, exc: BaseException, retry_count: int,
               interval_ms: int) -> None:
        """Log the failure with its instant and exception, and schedule (or give up) the retry."""
        with self._lock:
            a = self._by_instant.setdefault((table_uri, instant), _Attempt())
            a.failures += 1
            a.gave_up = a.failures > retry_count
            delay = interval_ms / 1000.0 * 2 ** (a.failures - 1)
            a.not_before = time.monotonic() + delay
            failures, gave_up = a.failures, a.gave_up
        what = f"background {kind} {instant} of {table_uri}"
        if gave_up:
            log.error("%s failed %d time(s), the last with %s: %s. It is not retried again by this process; its plan "
                      "stays pending (see `pyhudi %s %s show`); run it with `pyhudi %s %s run --instant %s`",
                      what, failures, type(exc).__name__, exc, kind, table_uri, kind, table_uri, instant)
        else:
            log.warning("%s failed (attempt %d of %d): %s: %s. Its plan stays pending on the timeline and is "
                        "retried after a later commit, in %.1f s at the earliest", what, failures, retry_count + 1,
                        type(exc).__name__, exc, delay)

    def forget(self) -> None:
        with self._lock:
            self._by_instant.clear()


ATTEMPTS = Attempts()
