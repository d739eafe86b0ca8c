"""The `hudi` data source's batch writes: `df.write.format("hudi").options(**opts).mode(m).save(path)`.

What the Python Data Source API gives a writer: `writer()` once (a Python worker on the driver side), then
`write(batches)` in one task per partition of the DataFrame as it is (no shuffle, no count job, no way to
bring the records of one key or file group together), then `commit(messages)` or `abort(messages)` once (in
another Python worker). Spark itself accepts only the Append and Overwrite save modes for Python sources.

So this source writes what independent tasks can write with Hudi's semantics, each task writing new file
groups for its own rows as Hudi's bulk_insert does (sort mode NONE: one open file per table partition a task
sees, rolling over at hoodie.parquet.max.file.size):

* `bulk_insert` (hoodie.bulkinsert.sort.mode NONE, or PARTITION_SORT: each task sorts its own rows, as
  Spark's sortWithinPartitions does);
* `insert_overwrite` / `insert_overwrite_table`: the same new files, committed as a replacecommit that
  replaces the file groups of the partitions written (of the whole table), as Hudi does;
* mode("overwrite") with bulk_insert, insert, insert_overwrite(_table): as `pyhudi.write(mode="overwrite")`
  (writer/entry.py): one insert_overwrite_table replacecommit on an existing table of the same identity;
  a table of another identity (keys, type) is deleted first.

Refused before anything is written, naming the operation and pointing at `pyhudi.write(df, path, options)`
(same options; it shuffles as Hudi does): upsert (the default), insert (small files are topped up from a
per-partition count of the whole input), delete, delete_partition, hoodie.combine.before.insert=true and
mode("overwrite") with upsert (in-batch duplicates combined across tasks), the BUCKET index (a bucket's rows
must meet in one task), GLOBAL_SORT and PARTITION_PATH_REPARTITION(_AND_SORT) (a shuffle).

Lifecycle (writer/client.py's, split across the three calls): `writer()` checks everything, creates the table
if new, rolls back failed writes, takes the instant (requested -> inflight, the heartbeat started) and
starts its markers; tasks prepare their rows with `writer/arrow_prepare.py` (keys, partition paths, the
writer schema), refuse null keys, write with `writer/bulk_insert.write_tables`, beat the heartbeat while they
run and return their write stats; `commit()` reconciles markers (files of failed attempts), checks for
conflicts and completes under the table lock, then runs the table services a pyhudi write runs after its
commit (in that worker, in-process) and meta sync (hoodie.datasource.meta.sync.enable, checked in `writer()`);
`abort()` rolls the instant back. The heartbeat names no process (the
workers that create and complete the instant are not the same): between `writer()` and the first task, and
after the last task, it ages; a write idle for longer than the heartbeat tolerance may be rolled back by
another writer, and its `commit()` then fails with CommitConflictError instead of publishing lost files.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.pandas.types import to_arrow_schema

from pyhudi.config import keys as K
from pyhudi.config.registry import Options
from pyhudi.engine.spark.datasource_read import SourceOptions
from pyhudi.errors import InvalidConfigError
from pyhudi.model import avro_models as am
from pyhudi.model.upgrade import upgrade_for_write
from pyhudi.model.write_stat import WriteStat
from pyhudi.services import background
from pyhudi.services.rollback import sweep_after_failed_job
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action
from pyhudi.timeline.table_schema import table_schema
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.transaction.heartbeat import Heartbeat
from pyhudi.view.builder import build_view
from pyhudi.writer.arrow_prepare import ArrowBatchSpec, checked_batches, prepare_spec
from pyhudi.writer.bulk_insert import write_tables
from pyhudi.writer.client import WriteClient, WriteResult
from pyhudi.writer.config import WriteConfig, build_write_config, resolve_table_config
from pyhudi.writer.entry import combines, delete_table, existing_config
from pyhudi.writer.handles import HandleContext
from pyhudi.writer.operation import WriteOperation
from pyhudi.writer.prepare import bad_keys_error
from pyhudi.writer.profile import WorkloadProfile

log = logging.getLogger(__name__)
WRITABLE = (WriteOperation.BULK_INSERT, WriteOperation.INSERT_OVERWRITE, WriteOperation.INSERT_OVERWRITE_TABLE)
# Save mode Overwrite: what pyhudi.write(mode="overwrite") runs as one insert_overwrite_table, when the
# requested operation does not combine in-batch duplicates (that needs the records of a key together).
OVERWRITABLE = (*WRITABLE, WriteOperation.INSERT)
TASK_SORT_MODES = ("NONE", "PARTITION_SORT")
OWNER = "pyhudi-datasource:0:0"  # a heartbeat owner no process check can take for dead (see the docstring)


class UnsupportedWriteError(InvalidConfigError):
    """A write the data source API cannot run with Hudi's semantics; nothing was written."""


def _refuse(what: str, why: str) -> UnsupportedWriteError:
    return UnsupportedWriteError(
        f"the hudi data source cannot write {what}: {why}. A Python data source writes each partition of the "
        "DataFrame in an independent task (no shuffle), so it writes only bulk_insert, insert_overwrite and "
        "insert_overwrite_table (and mode('overwrite') of those or of insert). Nothing was written. Call "
        "pyhudi.write(df, path, options, mode=...) with the same options instead: it shuffles as Hudi does")


@dataclasses.dataclass(frozen=True)
class StatsMessage(WriterCommitMessage):
    """A task's write stats (JSON, as the Spark engine's tasks return them)."""

    stats: tuple[str, ...]


class SharedHeartbeat(Heartbeat):
    """The instant's heartbeat, beaten by whichever process works on it (writer, tasks, commit)."""

    def __init__(self, storage: Storage, instant: str, interval_ms: int) -> None:
        super().__init__(storage, instant, interval_ms)
        self.owner = OWNER

    def pause(self) -> None:
        """Stop beating from this process, leaving the file (the write goes on elsewhere)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


@dataclasses.dataclass
class _Plan:
    """What `writer()` decided: checked options, the table's config, how overwrites go, the meta sync."""

    config: WriteConfig
    replace_all: bool  # save mode Overwrite over an existing table: replace every file group
    table_exists: bool
    sync: Any  # sync/hook.prepare's SyncOptions (None: meta sync off)


def plan_write(opts: SourceOptions, overwrite: bool) -> _Plan:
    """writer/entry.write_table's save-mode handling with the data source's refusals, all before any change
    (a table of another identity is deleted only once the write is known to be possible)."""
    from pyhudi.sync import hook as sync_hook

    hudi = Options.parse(opts.hudi)
    sync = sync_hook.prepare(hudi)  # the sync options are checked before anything is written
    requested = WriteOperation(hudi.get(K.OPERATION))
    storage = opts.storage_handle()
    existing = existing_config(storage)
    check_operation(requested, hudi, overwrite)
    replace_all, replaces_other = False, False
    operation: WriteOperation | None = None
    if overwrite and existing is not None:
        try:
            resolve_table_config(hudi, existing)
            operation, replace_all = WriteOperation.INSERT_OVERWRITE_TABLE, True
        except InvalidConfigError as exc:
            log.warning("overwrite with a different table identity (%s): deleting the old table at %s", exc,
                        opts.path)
            replaces_other, existing = True, None
    table = resolve_table_config(hudi, existing)
    config = build_write_config(hudi, table, operation)
    check_config(config)
    if config.parallelism > 0:
        log.warning("%s=%d is not applied by the hudi data source: each partition of the DataFrame is one write "
                    "task; coalesce or repartition the DataFrame to set the number of tasks",
                    K.BULKINSERT_PARALLELISM.key, config.parallelism)
    if replaces_other:
        delete_table(storage)
    return _Plan(config, replace_all, existing is not None, sync)


def check_operation(requested: WriteOperation, hudi: Options, overwrite: bool) -> None:
    allowed = OVERWRITABLE if overwrite else WRITABLE
    if requested not in allowed:
        mode = "mode('overwrite') with " if overwrite else ""
        why = {WriteOperation.UPSERT: "an upsert looks every record's key up in the index and routes it to its "
                                      "file group (and combines duplicate keys of the batch)",
               WriteOperation.INSERT: "insert tops up small files from a count of the whole input per partition",
               WriteOperation.DELETE: "a delete routes every key to the file group holding it",
               WriteOperation.DELETE_PARTITION: "delete_partition takes append mode and its partitions from "
                                                "all records or the options, not from independent tasks"}
        raise _refuse(f"{mode}{K.OPERATION.key}={requested.value}",
                      why.get(requested, "it needs the records of one key or file group together"))
    if overwrite and combines(hudi, requested) or hudi.get(K.COMBINE_BEFORE_INSERT):
        raise _refuse(f"{K.COMBINE_BEFORE_INSERT.key}=true", "combining duplicate keys needs the records of a key "
                                                             "in one task")


def check_config(config: WriteConfig) -> None:
    if config.index.type == "BUCKET":
        raise _refuse("a table with hoodie.index.type=BUCKET", "each bucket's rows must be written by one task")
    if config.bulk_insert_sort_mode not in TASK_SORT_MODES:
        raise _refuse(f"hoodie.bulkinsert.sort.mode={config.bulk_insert_sort_mode}",
                      "that sort mode repartitions the input (a shuffle)")
    if config.combine_before_write:
        raise _refuse("with duplicate combining", "combining duplicate keys needs the records of a key in one task")
    check_partition_zone(config)


def check_partition_zone(config: WriteConfig) -> None:
    """A timestamp partition field without an output zone is formatted, by Hudi and by pyhudi's Spark writer,
    in the Spark session's time zone, which no data source code can see (it runs without the session):
    refused, rather than formatted in another zone, unless the zone is configured."""
    from pyhudi.keygen.spec import KeySpec

    keys = KeySpec.for_table(config.table)
    types = keys.partition_types or ("SIMPLE",) * len(keys.partition_fields)
    if keys.timestamp is not None and "TIMESTAMP" in types and keys.timestamp.zones()[1] is None:
        raise UnsupportedWriteError(
            "the hudi data source cannot format timestamp partition paths without a configured zone: Hudi then "
            "uses the Spark session's time zone (spark.sql.session.timeZone), which a Python data source does not "
            "see. Set hoodie.keygen.timebased.timezone (or .output.timezone) to that zone, or write with "
            "pyhudi.write(df, path, options). Nothing was written")


class _Client(WriteClient):
    """The engine-neutral write client's lifecycle steps, used by writer() and commit() in turn."""


def make_writer(opts: SourceOptions, schema: T.StructType, overwrite: bool) -> HudiBatchWriter:
    plan = plan_write(opts, overwrite)
    storage = opts.storage_handle()
    client = _Client(None, storage, plan.config, table_exists=plan.table_exists)
    client.config = cfg = upgrade_for_write(storage, plan.config)
    timeline = client._begin()
    table_avro = table_schema(timeline, cfg.table) if timeline is not None and not plan.replace_all else None
    spec = prepare_spec(to_arrow_schema(schema, timezone="UTC"), cfg, table_avro)
    client._ensure_table()
    timeline = client._recovered_timeline()
    replaced = _replaceable(storage, cfg, timeline) if cfg.operation.is_overwrite else None
    action = Action.REPLACE_COMMIT if cfg.operation.is_overwrite else (
        Action.DELTA_COMMIT if cfg.table.is_mor else Action.COMMIT)
    write_avro = am.write_instant_avro_1x if timeline.layout.is_v2 else am.write_instant_avro
    requested = write_avro("HoodieRequestedReplaceMetadata", am.empty_requested_replace_metadata()) \
        if action is Action.REPLACE_COMMIT else b""
    inflight = WorkloadProfile(operation_type=cfg.operation.operation_type).to_inflight_bytes()
    instant, beat = client._start_instant(timeline, action, requested, inflight)
    # The beat passes to a heartbeat of no process (this worker does not outlive the call): the file is
    # rewritten in place, never missing, so no other writer takes the new instant for a dead one.
    beat._stop.set()
    if beat._thread is not None:
        beat._thread.join(timeout=5)
    SharedHeartbeat(storage, instant.timestamp, cfg.heartbeat_interval_ms)._beat()
    try:
        ctx = client._handle_context(spec.avro_schema, instant.timestamp, None, [], combine=False)
    except BaseException:
        client._rollback_own(instant.timestamp, action)
        raise
    log.info("hudi data source: %s %s started (%s)", action.value, instant.timestamp, cfg.operation.value)
    return HudiBatchWriter(_Job(storage, cfg, spec, ctx, instant.timestamp, action, plan.replace_all, replaced,
                                client._known_completed, client._known_instants, plan.sync))


def _replaceable(storage: Storage, cfg: WriteConfig, timeline: ActiveTimeline) -> dict[str, list[str]]:
    """Every partition's live file groups as the write starts (the view pyhudi's overwrite replaces from);
    commit() keeps the partitions an insert_overwrite wrote."""
    view = build_view(storage, cfg.table, timeline)
    out: dict[str, list[str]] = {}
    for part in view.partition_paths:
        ids = sorted(g.file_id for g in view.live_groups(part))
        if ids:
            out[part] = ids
    return out


@dataclasses.dataclass
class _Job:
    """Everything tasks and commit() need, pickled with the writer."""

    storage: Storage
    config: WriteConfig
    spec: ArrowBatchSpec
    ctx: HandleContext
    instant: str
    action: Action
    replace_all: bool
    replaceable: dict[str, list[str]] | None
    known_completed: frozenset[str]
    known_instants: frozenset[str]
    sync: Any


class HudiBatchWriter(DataSourceArrowWriter):
    def __init__(self, job: _Job) -> None:
        self.job = job

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StatsMessage:
        job = self.job
        pid, token = task_identity()
        beat = SharedHeartbeat(job.storage, job.instant, job.config.heartbeat_interval_ms)
        beat.start()
        try:
            tables = checked(job.spec, job.config, iterator)
            if job.config.bulk_insert_sort_mode == "PARTITION_SORT":
                tables = iter(_sorted(list(tables)))
            return StatsMessage(tuple(write_tables(job.ctx, tables, pid, token)))
        finally:
            beat.pause()

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        complete(self.job, [WriteStat.from_json(json.loads(s)) for m in messages
                            if isinstance(m, StatsMessage) for s in m.stats])

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        job = self.job
        log.warning("hudi data source: a task failed, rolling back %s %s", job.action.value, job.instant)
        client = _client(job)
        client._rollback_own(job.instant, job.action)
        sweep_after_failed_job(job.storage, job.instant)  # tasks cancelled with the job may still have written
        _drop_heartbeat(job)


def checked(spec: ArrowBatchSpec, config: WriteConfig, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.Table]:
    """Each batch prepared; a null key or a missing required ordering value fails the task (the job
    aborts: the instant is rolled back)."""
    return checked_batches(spec, config, batches, lambda count: bad_keys_error(config, count, "The write was rolled back."))


def _sorted(tables: list[pa.Table]) -> list[pa.Table]:
    """PARTITION_SORT: the task's rows by partition path, then record key (Spark's sortWithinPartitions)."""
    from pyhudi.keygen.spec import PARTITION_COL, RECORD_KEY_COL

    if not tables:
        return []
    return [pa.concat_tables(tables).sort_by([(PARTITION_COL, "ascending"), (RECORD_KEY_COL, "ascending")])]


def task_identity() -> tuple[int, str]:
    """(partition id, Hudi's write token partitionId-stageId-taskAttemptId) of this Spark task."""
    from pyspark import TaskContext

    from pyhudi.model.file_names import write_token

    tc = TaskContext.get()
    if tc is None:
        raise InvalidConfigError("the hudi data source's write() runs in a Spark task")
    return tc.partitionId(), write_token(tc.partitionId(), tc.stageId(), tc.taskAttemptId())


def _client(job: _Job) -> _Client:
    client = _Client(None, job.storage, job.config, table_exists=True)
    client._known_completed, client._known_instants = job.known_completed, job.known_instants
    return client


def complete(job: _Job, stats: list[WriteStat]) -> WriteResult:
    """writer/client._run_instant's second half: markers, metadata, conflict check and commit, services."""
    from pyhudi.io import schema as S
    from pyhudi.model.commit_metadata import CommitMetadata

    client = _client(job)
    beat = SharedHeartbeat(job.storage, job.instant, job.config.heartbeat_interval_ms)
    beat.start()
    try:
        client._reconcile_markers(job.instant, stats)
        meta = CommitMetadata(operation_type=job.config.operation.operation_type)
        for s in stats:
            meta.add(s)
        meta.extra_metadata = {"schema": S.to_json(job.spec.avro_schema), **job.config.extra_metadata}
        if job.replaceable is not None:
            meta.partition_to_replace_file_ids = replaced_ids(job, stats)
        client._complete(job.instant, job.action, meta, stats)
    except BaseException:
        if not client._commit_exists(job.instant, job.action):
            client._rollback_unless_undone(job.instant, job.action)
        raise
    finally:
        beat.pause()
        _drop_heartbeat(job)
    result = client._committed = WriteResult(job.instant, stats, job.config.operation)
    _after_commit(client, job)
    log.info("hudi data source: completed %s %s: %d files written", job.action.value, job.instant, len(stats))
    return result


def replaced_ids(job: _Job, stats: list[WriteStat]) -> dict[str, list[str]]:
    """The file groups an overwrite replaces: every partition's (insert_overwrite_table, save mode
    Overwrite), else those of the partitions written, as of the write's start."""
    assert job.replaceable is not None
    if job.replace_all or job.config.operation is WriteOperation.INSERT_OVERWRITE_TABLE:
        return dict(job.replaceable)
    written = {s.partition_path for s in stats}
    return {p: ids for p, ids in job.replaceable.items() if p in written}


def _after_commit(client: _Client, job: _Job) -> None:
    """Marker cleanup, the table services a pyhudi write runs after its commit, then meta sync, as
    pyhudi.write orders them. They run here, in the Python worker that commits, on the in-process engine;
    background (async) services are waited for, since the worker does not outlive the call. A failed sync
    raises MetaSyncError (the commit stays; the next commit's sync catches the catalog up)."""
    import pyspark

    from pyhudi.sync import hook as sync_hook
    from pyhudi.writer.markers import delete_markers

    try:
        delete_markers(job.storage, job.instant)
    except Exception as exc:
        client._post_commit_failed("marker cleanup", exc)
    client._inline_services()
    for failure in background.wait(job.storage.base_uri):
        client._post_commit_failed("background service",
                                   failure if isinstance(failure, Exception) else Exception(failure))
    sync_hook.after_commit(job.storage, job.sync, job.instant, pyspark.__version__)


def _drop_heartbeat(job: _Job) -> None:
    try:
        job.storage.delete(f".hoodie/.heartbeat/{job.instant}")
    except Exception:  # noqa: BLE001 - an expired heartbeat of a finished write is harmless
        log.debug("could not delete the heartbeat of %s", job.instant)


__all__ = ["HudiBatchWriter", "StatsMessage", "UnsupportedWriteError", "make_writer", "plan_write"]
