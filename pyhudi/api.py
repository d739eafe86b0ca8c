"""The public functions: `write` and `read` (services arrive with their issues).

Signatures mirror how Hudi is used from PySpark: a DataFrame, a base path
and Hudi's own option keys.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pyhudi.config import keys as K
from pyhudi.config.registry import Options
from pyhudi.engine import engine_for
from pyhudi.model.table_config import load_table_config
from pyhudi.storage import Storage
from pyhudi.sync.hook import (
    after_service as _sync_after_service,  # clean, rollback, restore: sync as writes do
)
from pyhudi.writer.config import WriteConfig, build_write_config
from pyhudi.writer.entry import MODES, write_table
from pyhudi.writer.entry import existing_config as _existing_config
from pyhudi.writer.operation import WriteOperation

if TYPE_CHECKING:  # pyspark only for the Spark path: `import pyhudi.api` works without it (issue 17)
    from pyspark.sql import DataFrame, SparkSession

    from pyhudi.sync.tool import SyncReport

log = logging.getLogger(__name__)
_MODES = MODES  # the save modes pyhudi.write accepts (writer/entry.py)


def write(data: Any, path: str, options: Mapping[str, Any] | None = None, mode: str = "append",
          storage_options: Mapping[str, str] | None = None) -> str | None:
    """Write `data` into the Hudi table at `path` and return the instant time of the commit.

    `data` is a Spark DataFrame (written by Spark's executors, as before) or Arrow data written in this
    process with no JVM: a `pyarrow.Table`, `RecordBatch` or `RecordBatchReader`, any object with
    `__arrow_c_stream__` (polars DataFrames, DuckDB relations) or a pandas DataFrame. Same options, same
    table either way; anything else raises UnsupportedInputError naming the accepted types.

    mode (Spark's SaveMode, as Hudi 0.14's HoodieSparkSqlWriter handles it):
    "append" (default) writes with the configured operation, creating the table if needed;
    "overwrite" makes the table hold exactly what the operation writes into an empty table (Hudi deletes the
    table first; pyhudi writes one insert_overwrite_table replacecommit instead, combining in-batch
    duplicates as the requested operation would, so time travel and concurrent readers keep working; if the
    table's keys or type change, the old table is deleted);
    "error"/"errorifexists" fail if the table exists; "ignore" does nothing if it exists.
    delete and delete_partition take "append" only (any other mode is refused before anything changes), as
    in Hudi. delete_partition deletes the partitions named by hoodie.datasource.write.partitions.to.delete
    (`*` wildcards allowed), else those of the data's records, in one replacecommit.

    `storage_options` configure an object store (s3://, s3a://, gs://, abfs(s)://) beyond what the standard
    environment variables and profiles give (`AWS_ENDPOINT_URL`, `AWS_REGION`, `AWS_PROFILE`, ...): object_store's
    keys such as `aws_endpoint`, `aws_region`, `aws_access_key_id`, `google_service_account`,
    `azure_storage_account_key`, plus `pyhudi.retry.*` and `pyhudi.conditional_writes`. They travel to
    Spark's executors with the tasks; every other function takes the same keyword.
    """
    return _write(data, path, options, mode, storage_options=storage_options)


def _write(data: Any, path: str, options: Mapping[str, Any] | None, mode: str = "append",
           streaming: bool = False, storage_options: Mapping[str, str] | None = None) -> str | None:
    """`write`, also for a streaming micro-batch (`streaming=True`: Hudi's streaming defaults, such as
    asynchronous compaction of MOR tables)."""
    return write_table(data, path, options, mode, streaming, storage_options)


def _service_config(path: str, options: Mapping[str, Any] | None, upgrade: bool = False,
                    storage_options: Mapping[str, str] | None = None) -> tuple[Storage, WriteConfig]:
    """Table services never look up keys, so they are configured as an insert (no index requirements)."""
    from pyhudi.model.upgrade import upgrade_for_write

    storage = Storage(path, storage_options=dict(storage_options or {}))
    config = build_write_config(Options.parse(options), load_table_config(storage), WriteOperation.INSERT)
    if upgrade:  # a service that writes data upgrades a version-4/5 table first, as Hudi's do
        config = upgrade_for_write(storage, config)
    return storage, config


def compact(spark: SparkSession | None, path: str, options: Mapping[str, Any] | None = None,
            instant: str | None = None, storage_options: Mapping[str, str] | None = None) -> list[str]:
    """Run compaction on a merge-on-read table; returns the compaction instants completed.

    With `instant`, execute that pending compaction. Otherwise schedule one if none is pending and some
    file slice has log files (an explicit call does not wait for the inline trigger), then execute every
    pending compaction, oldest first.
    """
    from pyhudi.services import compaction
    from pyhudi.writer.config import parquet_settings

    storage, config = _service_config(path, options, upgrade=True, storage_options=storage_options)
    table = config.table
    if instant is not None:
        todo = [instant]
    else:
        if not compaction.pending_compactions(storage):
            compaction.schedule(storage, table, config.compaction, force=True,
                                max_file_size=config.sizing.max_file_size, lock=config.lock)
        beat = (config.heartbeat_interval_ms, config.heartbeat_tolerable_misses)
        todo = [i for i in compaction.pending_compactions(storage)
                if not compaction.being_executed(storage, i, beat)]  # never run one twice
    for inst in todo:
        compaction.execute(engine_for(spark, config.local_parallelism), storage, table, inst,
                           parquet_settings(config, storage.base_uri), config.marker_type, config.lock,
                           (config.heartbeat_interval_ms, config.heartbeat_tolerable_misses))
    return todo


def cluster(spark: SparkSession | None, path: str, options: Mapping[str, Any] | None = None,
            instant: str | None = None, storage_options: Mapping[str, str] | None = None) -> list[str]:
    """Cluster the table: returns the clustering instants completed.

    With `instant`, execute that pending clustering. Otherwise schedule a plan if none is pending (and
    some small files qualify), then execute every pending clustering no other process is executing (live
    heartbeat), oldest first. A clustering that
    would overwrite a concurrent write is rolled back and raises CommitConflictError; one whose input groups an
    overwrite replaced after it was planned is dropped (not returned).
    """
    from pyhudi.services import clustering
    from pyhudi.writer.config import parquet_settings

    storage, config = _service_config(path, options, upgrade=True, storage_options=storage_options)
    table = config.table
    if instant is not None:
        todo = [instant]
    else:
        if not clustering.pending_clusterings(storage):
            clustering.schedule(storage, table, config.clustering, config.sizing.max_file_size, config.lock)
        todo = [i for i in clustering.pending_clusterings(storage) if not clustering.being_executed(
            storage, i, config.heartbeat_interval_ms, config.heartbeat_tolerable_misses)]  # never run one twice
    done = []
    for inst in todo:
        if clustering.execute(engine_for(spark, config.local_parallelism), storage, table, inst, config.clustering,
                              parquet_settings(config, storage.base_uri), config.lock,
                              config.heartbeat_interval_ms, config.marker_type) is not None:
            done.append(inst)
    return done


def clean(spark: SparkSession | None, path: str, options: Mapping[str, Any] | None = None,
          dry_run: bool = False, storage_options: Mapping[str, str] | None = None) -> Any:
    """Delete file versions the retention policy (hoodie.cleaner.*) no longer needs.

    Resumes an interrupted clean first. Returns the completed clean results, or with `dry_run` the plan
    (what would be deleted and why) without deleting anything. Needs no Spark session.
    """
    from pyhudi.services import clean as cleaner

    storage, config = _service_config(path, options, upgrade=not dry_run, storage_options=storage_options)
    table = config.table
    if dry_run:
        return cleaner.dry_run(storage, table, config.clean)
    results = cleaner.clean(storage, table, config.clean, config.lock)
    if results:  # a clean can delete a partition (Hudi's isPartitionDeleted): the catalog drops it
        _sync_after_service(path, options, results[-1].instant, storage_options)
    return results


def rollback(spark: SparkSession | None, path: str, instant: str, options: Mapping[str, Any] | None = None,
             storage_options: Mapping[str, str] | None = None) -> Any:
    """Undo the latest completed write or a failed (pending) one; returns the RollbackResult.

    Refuses (RollbackRefusedError, nothing changed) an instant that a later write, a savepoint or a live
    writer (under LAZY failed-write handling) still depends on. Needs no Spark session.
    """
    from pyhudi.services import restore as rs

    storage, config = _service_config(path, options, storage_options=storage_options)
    lazy = (config.heartbeat_interval_ms, config.heartbeat_tolerable_misses) if config.failed_writes_lazy else None
    result = rs.rollback(storage, instant, config.lock, lazy)
    # A rolled-back commit may have been synced (its partitions registered): with the sync point gone from
    # the timeline, the sync compares the catalog with the table in full.
    _sync_after_service(path, options, getattr(result, "rollback_instant", None), storage_options)
    return result


def savepoint(spark: SparkSession | None, path: str, instant: str | None = None, user: str | None = None,
              comments: str = "", options: Mapping[str, Any] | None = None,
              storage_options: Mapping[str, str] | None = None) -> str:
    """Protect a completed instant (default: the latest) from cleaning and archival; returns it."""
    from pyhudi.services import restore as rs

    storage, config = _service_config(path, options, storage_options=storage_options)
    return rs.create_savepoint(storage, instant, user, comments, config.lock)


def restore(spark: SparkSession | None, path: str, savepoint: str, options: Mapping[str, Any] | None = None,
            storage_options: Mapping[str, str] | None = None) -> str:
    """Bring the table back to a savepoint (rolls back every later write); returns the restore instant."""
    from pyhudi.services import restore as rs

    storage, config = _service_config(path, options, storage_options=storage_options)
    restored = rs.restore(storage, savepoint, config.lock)
    _sync_after_service(path, options, restored, storage_options)
    return restored


def sync(path: str, options: Mapping[str, Any] | None = None, storage_options: Mapping[str, str] | None = None,
         explain: bool = False, progress: Callable[[str], None] | None = None) -> list[SyncReport]:
    """Register the Hudi table at `path` in the catalogs of its sync options, now, as a write with meta sync
    enabled would after its commit (Hudi's HiveSyncTool / AwsGlueCatalogSyncTool run by hand), for a table
    written by anyone. The sync runs whatever hoodie.datasource.meta.sync.enable says; the catalogs are
    hoodie.meta.sync.client.tool.class's (default HiveSyncTool, the metastore at
    hoodie.datasource.hive_sync.metastore.uris).

    Returns one SyncReport per sync tool (`report.lines()` says what changed). With `explain`, nothing in a
    catalog changes: the reports say what would. `progress` receives one line per step of a long sync.
    Raises MetaSyncError naming each tool that failed."""
    from pyhudi.sync.config import sync_options
    from pyhudi.sync.hook import sync_storage

    settings = sync_options(Options.parse(options), force=True)
    assert settings is not None
    # sync_storage reads hoodie.properties first: TableNotFoundError before any catalog call
    return sync_storage(Storage(path, storage_options=dict(storage_options or {})), settings, explain=explain,
                        progress=progress)


def archive(spark: SparkSession | None, path: str, options: Mapping[str, Any] | None = None,
            dry_run: bool = False, storage_options: Mapping[str, str] | None = None) -> Any:
    """Archive old instants of the timeline (hoodie.keep.max/min.commits) into `.hoodie/archived/` (table
    version 6) or the LSM history `.hoodie/timeline/history/` (Hudi 1.x tables, versions 8 and 9).

    Writers do this after every commit unless hoodie.archive.automatic=false; call it to archive by
    hand. Returns the ArchiveResult (None if nothing could go), or with `dry_run` the plan: which
    instants would be archived and what stops archival where it stops. Needs no Spark session.
    """
    from pyhudi.services import archival

    storage, config = _service_config(path, options, storage_options=storage_options)
    table = config.table
    if dry_run:
        return archival.dry_run(storage, table, config.archival, config.clean, config.compaction)
    return archival.archive(storage, table, config.archival, config.clean, config.lock, config.compaction)


def wait_for_table_services(path: str | None = None, timeout: float | None = None) -> list[BaseException]:
    """Block until background table services (async clustering and compaction, async clean and archival) of
    `path` (or of all tables) finish; returns the exceptions they raised since the last call (each is also
    logged; a failed compaction or clustering stays pending and is retried after a later commit)."""
    from pyhudi.services import background

    return background.wait(Storage(path).base_uri if path else None, timeout)


def resume_table_services(spark: SparkSession, path: str, options: Mapping[str, Any] | None,
                          streaming: bool = True) -> None:
    """Submit pending compaction/clustering plans of the table's enabled async services to the background
    (a streaming query does this when it starts). Does nothing if the table does not exist yet."""
    from pyhudi.services.table_services import resume

    storage = Storage(path)
    existing = _existing_config(storage)
    if existing is None:
        return
    opts = Options.parse(options, warn_unknown=False)
    resume(engine_for(spark), storage, build_write_config(opts, existing, WriteOperation.INSERT, streaming=streaming))


def read(spark: SparkSession | str | os.PathLike[str], *args: Any, **kwargs: Any) -> Any:
    """Read the Hudi table at `path` (snapshot, read-optimized, time travel or incremental).

    `read(spark, path, options=None, filters=None)` returns a Spark DataFrame. With a path as the first
    argument, `read(path, options=None, filters=None, columns=None, batches=False)` reads in-process (no
    Spark) into a pyarrow.Table or, with batches=True, a pyarrow.RecordBatchReader (pyhudi.reader.arrow_read).
    """
    if isinstance(spark, (str, os.PathLike)):
        from pyhudi.reader.arrow_read import read as read_arrow  # pyarrow.dataset: loaded for reads only

        return read_arrow(spark, *args, **kwargs)
    return _read_spark(spark, *args, **kwargs)


def _read_spark(spark: SparkSession, path: str | os.PathLike[str], options: Mapping[str, Any] | None = None,
                filters: Sequence[Sequence[Any]] | None = None,
                storage_options: Mapping[str, str] | None = None) -> DataFrame:
    from pyhudi.engine.spark.read import read as _read  # the Spark reader imports pyspark

    return _read(spark, path, dict(options or {}), filters, dict(storage_options or {}))


__all__ = ["K", "archive", "clean", "cluster", "compact", "read", "restore", "rollback", "savepoint", "sync",
           "wait_for_table_services", "write"]
