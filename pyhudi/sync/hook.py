"""Running the sync tools: on demand (`pyhudi.sync`, `pyhudi sync`) and after a commit (the write path and
the services that change partitions), with Hudi's failure semantics.

As in HoodieSparkSqlWriter.metaSync, every configured tool runs even when an earlier one failed, and the
failures are raised together afterwards as one MetaSyncError (Hudi's HoodieMetaSyncException) naming each
tool. After a commit the commit stays: the error carries its instant, the rows are in the table, and since
last_commit_time_sync did not advance, the next commit's sync (or `pyhudi sync`) catches the catalog up.
hoodie.datasource.hive_sync.ignore_exceptions only covers what it covers in Hudi's HiveSyncTool: a metastore
that cannot be reached is logged and reported as a PostCommitWarning instead of failing; nothing is ever
swallowed silently."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from pyhudi.config.registry import Options
from pyhudi.errors import MetaSyncError, PostCommitWarning
from pyhudi.model.table_config import TableConfig, load_table_config
from pyhudi.storage import Storage
from pyhudi.sync import factory
from pyhudi.sync.config import BACKEND_OF_TOOL, SyncConfig, SyncOptions, resolve, sync_options
from pyhudi.sync.keys import HIVE_SYNC_TOOL
from pyhudi.sync.snapshot import Snapshot
from pyhudi.sync.tool import SyncReport, run_tool

log = logging.getLogger("pyhudi.sync")
Progress = Callable[[str], None]


def sync_storage(storage: Storage, options: SyncOptions, *, instant: str | None = None, explain: bool = False,
                 progress: Progress | None = None) -> list[SyncReport]:
    """Run every configured sync tool on the table at `storage`; raises one MetaSyncError for all failures."""
    table = load_table_config(storage)
    cfg = resolve(options, table, storage.base_uri)
    reports: list[SyncReport] = []
    failures: dict[str, BaseException] = {}
    for tool in options.tools:
        try:
            report = _run_one(tool, cfg, storage, table, explain, progress)
        except Exception as exc:  # each tool's failure is collected, as Hudi's metaSync does
            log.error("meta sync: %s failed for %s: %s", tool, storage.base_uri, exc, exc_info=True)
            failures[tool] = exc
            continue
        if isinstance(report, SyncReport):
            reports.append(report)
        else:
            _warn_ignored(instant, tool, report)
    if failures:
        raise MetaSyncError(_message(failures, instant, storage.base_uri), instant, failures)
    return reports


def _run_one(tool: str, cfg: SyncConfig, storage: Storage, table: TableConfig, explain: bool,
             progress: Progress | None) -> SyncReport | BaseException:
    """One tool's report; the connection error when HiveSyncTool could not connect and ignore_exceptions
    says to go on."""
    backend = BACKEND_OF_TOOL[tool]
    try:
        client = factory.connect(backend, cfg.options.raw)
    except Exception as exc:
        if tool == HIVE_SYNC_TOOL and cfg.options.ignore_exceptions:
            log.error("Got runtime exception when hive syncing, but continuing as ignoreExceptions config is set",
                      exc_info=True)
            return exc
        raise
    try:
        return run_tool(tool, backend, client, cfg, lambda: Snapshot.load(storage, table, cfg.include_meta_fields),
                        explain, progress)
    finally:
        try:
            client.close()
        except Exception as exc:  # closing must not hide the sync's own outcome
            log.warning("meta sync: closing the %s client failed: %s", backend, exc)


def _warn_ignored(instant: str | None, tool: str, error: BaseException) -> None:
    warnings.warn(PostCommitWarning(instant or "(on demand)", f"meta sync ({tool}, ignored per "
                                    "hoodie.datasource.hive_sync.ignore_exceptions)", error), stacklevel=3)


def _message(failures: Mapping[str, BaseException], instant: str | None, base: str) -> str:
    detail = "; ".join(f"{tool.rsplit('.', 1)[-1]}: {type(e).__name__}: {e}" for tool, e in failures.items())
    head = f"Could not sync using the meta sync class {','.join(failures)} for {base}"
    if instant is None:
        return f"{head}: {detail}"
    return (f"write {instant} committed; {head}: {detail}. The rows are in the table (do not write them again); "
            "the next commit's sync, or `pyhudi sync`, catches the catalog up")


def prepare(opts: Options) -> SyncOptions | None:
    """The sync settings of a write, validated before it commits (None: sync is off)."""
    return sync_options(opts)


def after_commit(storage: Storage, options: SyncOptions | None, instant: str | None,
                 spark_version: str | None = None) -> None:
    """The hook after a committed write or service: sync when enabled; every failure is a MetaSyncError
    carrying the committed instant (the commit is never undone)."""
    if options is None or instant is None:
        return
    if spark_version and not options.spark_version:
        options = replace(options, spark_version=spark_version)
    try:
        sync_storage(storage, options, instant=instant)
    except Exception as exc:
        if isinstance(exc, MetaSyncError) and exc.instant is not None:
            raise  # the tools' failures, already naming the committed instant
        raise MetaSyncError(_message({"meta sync": exc}, instant, storage.base_uri), instant,
                            {"meta sync": exc}) from exc


def after_service(path: str, options: Mapping[str, Any] | None, instant: str | None,
                  storage_options: Mapping[str, str] | None = None) -> None:
    """After a service that can change the table's partitions (clean, rollback, restore)."""
    opts = Options.parse(options, warn_unknown=False)
    after_commit(Storage(path, storage_options=dict(storage_options or {})), prepare(opts), instant)
