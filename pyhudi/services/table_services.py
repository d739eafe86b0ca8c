"""Compaction and clustering after a writer's commit: inline, schedule-only, or in the background.

The writer (or a streaming query, at every micro-batch) calls `clustering_service` and
`compaction_service` after each commit. In async mode they work as Hudi's streaming sink and
HoodieStreamer do: *scheduling* stays in the writer's thread, between two commits, so a plan never
races a write of the same writer; *execution* goes to `pyhudi.services.background`, which runs at
most one job per kind and table. When a job of that kind is still running, nothing is scheduled
(no queue of plans builds up behind a slow service).

Which plan runs next: the oldest pending plan of that kind that may run now (a plan left by a crash,
or one whose failed attempt has waited out its back-off); otherwise a new plan if the trigger fires.
A plan in back-off holds off new plans of its kind; a plan given up after
`hoodie.table.services.async.retry.count` retries stays pending (see the log and
`pyhudi compaction|clustering PATH show`) and no longer holds anything off.

After a background compaction or clustering completes, the same job runs the cleaner and archival
(when automatic), since the service just made older file versions cleanable; every later commit
runs them as usual too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from pyhudi.engine.base import Engine
from pyhudi.services import background
from pyhudi.storage import Storage
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.writer.config import WriteConfig

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Service:
    kind: str
    pending: Callable[[Storage], list[str]]
    schedule: Callable[[Storage, WriteConfig], str | None]  # applies the service's trigger
    execute: Callable[[Engine, Storage, WriteConfig, str], object]


# --------------------------------------------------------------------------- clustering
def _clustering_pending(storage: Storage) -> list[str]:
    from pyhudi.services import clustering

    return clustering.pending_clusterings(storage)


def _clustering_schedule(storage: Storage, cfg: WriteConfig) -> str | None:
    from pyhudi.services import clustering

    cc = cfg.clustering
    every = cc.async_max_commits if cc.async_enabled else cc.inline_max_commits
    if clustering.commits_since_last_clustering(ActiveTimeline.load(storage)) < every:
        return None
    return clustering.schedule(storage, cfg.table, cc, cfg.sizing.max_file_size, cfg.lock)


def _clustering_execute(engine: Engine, storage: Storage, cfg: WriteConfig, instant: str) -> object:
    from pyhudi.services import clustering
    from pyhudi.writer.config import parquet_settings

    return clustering.execute(engine, storage, cfg.table, instant, cfg.clustering,
                              parquet_settings(cfg, storage.base_uri),
                              cfg.lock, cfg.heartbeat_interval_ms, cfg.marker_type)


def resume_orphaned_clusterings(engine: Engine, storage: Storage, cfg: WriteConfig) -> list[str]:
    """Before a write plans anything: execute pending clusterings whose owner is gone (its process died
    mid-execution, see `clustering.owner_gone`), when this writer runs clustering itself (async or
    inline). Otherwise such a plan would hold its file groups for good: under the default reject
    strategy every update to them fails, and a failing write never reaches its post-commit trigger.
    Runs in the writer's thread, so the write that follows sees the clustered groups. A plan that
    fails again is left pending (logged); the write then reports it with the command that runs it."""
    from pyhudi.services import clustering

    cc = cfg.clustering
    if not (cc.async_enabled or cc.inline):
        return []
    done = []
    uri = storage.base_uri
    for instant in clustering.pending_clusterings(storage):
        if background.busy(uri, CLUSTERING.kind) or background.ATTEMPTS.state(uri, instant) != "ready":
            continue  # this process runs it, or retries it on its own schedule
        if not clustering.owner_gone(storage, instant, cfg.heartbeat_interval_ms, cfg.heartbeat_tolerable_misses):
            continue
        log.warning("resuming clustering %s of %s: its executor is gone (heartbeat expired)", instant,
                    storage.base_uri)
        try:
            CLUSTERING.execute(engine, storage, cfg, instant)
            done.append(instant)
        except Exception as exc:  # the write goes on; the plan stays pending or was rolled back
            log.warning("resuming clustering %s of %s failed: %s: %s", instant, storage.base_uri,
                        type(exc).__name__, exc)
    return done


CLUSTERING = _Service("clustering", _clustering_pending, _clustering_schedule, _clustering_execute)


def clustering_service(engine: Engine, storage: Storage, cfg: WriteConfig) -> None:
    """hoodie.clustering.async.enabled (background), .inline (synchronous) or .schedule.inline (plan only)."""
    cc = cfg.clustering
    if cc.async_enabled:
        run_async(engine, storage, cfg, CLUSTERING)
        return
    if not (cc.inline or cc.schedule_inline):
        return
    pending = CLUSTERING.pending(storage)
    instant = pending[0] if pending else CLUSTERING.schedule(storage, cfg)
    if instant is not None and cc.inline:
        CLUSTERING.execute(engine, storage, cfg, instant)


# --------------------------------------------------------------------------- compaction
def _compaction_pending(storage: Storage) -> list[str]:
    from pyhudi.services import compaction

    return compaction.pending_compactions(storage)


def _compaction_schedule(storage: Storage, cfg: WriteConfig) -> str | None:
    from pyhudi.services import compaction

    return compaction.schedule(storage, cfg.table, cfg.compaction, max_file_size=cfg.sizing.max_file_size,
                               lock=cfg.lock)


def _compaction_execute(engine: Engine, storage: Storage, cfg: WriteConfig, instant: str) -> object:
    from pyhudi.services import compaction
    from pyhudi.writer.config import parquet_settings

    return compaction.execute(engine, storage, cfg.table, instant, parquet_settings(cfg, storage.base_uri),
                              cfg.marker_type, cfg.lock,
                              (cfg.heartbeat_interval_ms, cfg.heartbeat_tolerable_misses))


COMPACTION = _Service("compaction", _compaction_pending, _compaction_schedule, _compaction_execute)


def compaction_service(engine: Engine, storage: Storage, cfg: WriteConfig) -> None:
    """MOR only: async (streaming, hoodie.datasource.compaction.async.enable), hoodie.compact.inline, or
    hoodie.compact.schedule.inline (plan only)."""
    c = cfg.compaction
    if not cfg.table.is_mor:
        return
    if c.run_async:
        run_async(engine, storage, cfg, COMPACTION)
        return
    if not (c.inline or c.schedule_inline):
        return
    COMPACTION.schedule(storage, cfg)
    if c.inline:
        for instant in COMPACTION.pending(storage):
            COMPACTION.execute(engine, storage, cfg, instant)


# --------------------------------------------------------------------------- background execution
def resume(engine: Engine, storage: Storage, cfg: WriteConfig) -> None:
    """Submit pending plans of the enabled async services without scheduling new ones: what a streaming
    query does when it starts, so a plan a crash left behind runs even if no new data arrives."""
    if cfg.clustering.async_enabled:
        run_async(engine, storage, cfg, CLUSTERING, schedule=False)
    if cfg.table.is_mor and cfg.compaction.run_async:
        run_async(engine, storage, cfg, COMPACTION, schedule=False)


def run_async(engine: Engine, storage: Storage, cfg: WriteConfig, service: _Service,
              schedule: bool = True) -> Future[object] | None:
    """Submit the next plan of `service` to the background (see the module docstring); None if none."""
    uri = storage.base_uri
    if background.busy(uri, service.kind):
        return None
    pending = [i for i in service.pending(storage) if not _executing_elsewhere(storage, cfg, service, i)]
    states = {i: background.ATTEMPTS.state(uri, i) for i in pending}
    instant = next((i for i, state in states.items() if state == "ready"), None)
    if instant is None:
        if "waiting" in states.values() or not schedule:
            return None
        instant = service.schedule(storage, cfg)
        if instant is None:
            return None
    chosen = instant

    def job() -> object:
        try:
            result = service.execute(engine, storage, cfg, chosen)
        except Exception as exc:
            if chosen in service.pending(storage):
                r = cfg.services
                background.ATTEMPTS.failed(uri, service.kind, chosen, exc, r.retry_count, r.retry_interval_ms)
            else:  # the service rolled its plan back (e.g. a clustering conflicting with a write)
                background.ATTEMPTS.succeeded(uri, chosen)
                log.warning("background %s %s of %s was rolled back: %s", service.kind, chosen, uri, exc)
            raise
        background.ATTEMPTS.succeeded(uri, chosen)
        clean_and_archive(storage, cfg, f"{service.kind} {chosen}")
        return result

    return background.submit(uri, service.kind, job, cfg.services.scheduler_pool)


def _executing_elsewhere(storage: Storage, cfg: WriteConfig, service: _Service, instant: str) -> bool:
    """A clustering with a live heartbeat is being executed by another process: never run it twice."""
    from pyhudi.services import clustering

    return service.kind == CLUSTERING.kind and clustering.being_executed(
        storage, instant, cfg.heartbeat_interval_ms, cfg.heartbeat_tolerable_misses)


def clean_and_archive(storage: Storage, cfg: WriteConfig, after: str) -> None:
    """The cleaner and archival after a completed service (when automatic); failures are logged, the next
    commit runs them again."""
    from pyhudi.services import archival
    from pyhudi.services import clean as cleaner

    try:
        # One listing serves the clean's due check, its start (unless it shows a pending clean) and archival's
        # check: a clean adds no commit, and the lock-taking steps list again.
        timeline = ActiveTimeline.load(storage)
        if cfg.clean.automatic and cleaner.cleans_due(timeline, cfg.clean):
            cleaner.clean(storage, cfg.table, cfg.clean, cfg.lock, timeline=timeline)
        if cfg.archival.automatic and archival.archival_due(storage, cfg.table, cfg.archival, timeline):
            archival.archive(storage, cfg.table, cfg.archival, cfg.clean, cfg.lock, cfg.compaction)
    except Exception as exc:  # the service itself completed; the table is consistent
        log.warning("clean/archival after %s on %s failed (the next commit runs them again): %s: %s", after,
                    storage.base_uri, type(exc).__name__, exc)
