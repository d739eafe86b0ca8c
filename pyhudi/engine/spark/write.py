"""The Spark write client: a Spark DataFrame written by Spark executors; its rows never pass through the
driver. The engine-neutral lifecycle (instant, recovery, plan, commit, services) is `client.WriteClient`;
this module is Spark's data path: prepare with Spark expressions (prepare.py), the count job,
tagging joins (tagging.py), routing with `repartition` + `mapInArrow`, the one-task write
(writer/single_task.py) and the direct parquet input (direct.py)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from pyhudi.config import keys as K
from pyhudi.engine.spark import direct as spark_direct
from pyhudi.engine.spark import index_simple as simple_index
from pyhudi.engine.spark import tasks as spark_tasks
from pyhudi.engine.spark.bulk import layout
from pyhudi.engine.spark.keygen import PARTITION_COL, RECORD_KEY_COL, KeyGenerator
from pyhudi.engine.spark.prepare import PreparedBatch, null_ordering_flag, prepare_batch
from pyhudi.engine.spark.runtime import default_parallelism, is_connect, run_tasks
from pyhudi.engine.spark.tagging import tag_and_profile
from pyhudi.engine.spark.tasks import run_bucket_task, run_bulk_task, run_direct_bulk_task
from pyhudi.engine.spark.udf import arrow_udf
from pyhudi.model.upgrade import upgrade_for_write
from pyhudi.model.write_stat import WriteStat
from pyhudi.services.rollback import sweep_after_failed_job
from pyhudi.spark_env import ensure_worker_python
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action
from pyhudi.timeline.table_schema import table_schema
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.builder import build_view
from pyhudi.writer import single_task
from pyhudi.writer.client import WriteClient, WriteResult
from pyhudi.writer.config import WriteConfig
from pyhudi.writer.direct_input import DirectInput
from pyhudi.writer.dispatch import bucket_tasks
from pyhudi.writer.operation import WriteOperation
from pyhudi.writer.partitioner import BucketPlan
from pyhudi.writer.prepare import BAD_KEY, DELETE_FLAG, null_ordering_error
from pyhudi.writer.profile import WorkloadProfile
from pyhudi.writer.routing import bucket_salts, make_router

# One logger for the write client whichever engine runs it (a child of the engine-neutral client's).
log = logging.getLogger("pyhudi.writer.client.spark")
LOC_FILE_ID = simple_index.LOC_FILE_ID
LOC_INSTANT = simple_index.LOC_INSTANT
SALT = "_pyhudi_salt"
UNKNOWN_SIZE = (1 << 63) - 1  # Spark's sizeInBytes when it cannot estimate (spark.sql.defaultSizeInBytes)


T = TypeVar("T")


class SparkWriteClient(WriteClient):
    def __init__(self, spark: SparkSession, storage: Storage, config: WriteConfig) -> None:
        super().__init__(spark, storage, config)
        self.spark = spark
        self._tasks_may_linger = False  # a job of several write tasks failed (see _write_job)
        ensure_worker_python(spark)

    def _write_job(self, job: Callable[[], T]) -> T:
        """Runs a job of several write tasks. When it fails, Spark cancels its other tasks, whose Python
        workers may go on writing until they are killed: the rollback that follows sweeps again."""
        try:
            return job()
        except BaseException:
            self._tasks_may_linger = True
            raise

    def _rollback_own(self, instant: str, action: Action) -> None:
        super()._rollback_own(instant, action)
        if self._tasks_may_linger:
            self._tasks_may_linger = False
            sweep_after_failed_job(self.storage, instant)

    def _sampled_record_size(self, tagged: Any) -> int | None:
        from pyhudi.engine.spark.record_size import spark_sampled_record_size

        return spark_sampled_record_size(tagged, self.config, self.storage.base_uri)

    # ------------------------------------------------------------------ entry point
    def write(self, df: DataFrame, replace_all: bool = False) -> WriteResult:
        # A version-4/5 table becomes version 6 first, as in Hudi 0.14; hoodie.write.table.version=8|9 upgrades
        # a version-6 one to Hudi 1.x's layout (the write then goes on with the upgraded table's config).
        self.config = cfg = upgrade_for_write(self.storage, self.config)
        if cfg.operation is WriteOperation.DELETE_PARTITION:
            return self._delete_partitions(self._timeline(), lambda: self._partitions_of(df))
        timeline = self._begin()
        table_avro = table_schema(timeline, cfg.table) if timeline is not None else None
        batch = prepare_batch(df, cfg, None if replace_all else table_avro)
        one_task = timeline is not None and not replace_all and single_task.eligible_operation(cfg)
        estimate = estimated_input_bytes(df) if one_task else None
        if one_task and estimate is not None and estimate <= cfg.single_task_max_bytes:
            small = self._write_single_task(batch, None, spark_direct.detect(df, cfg, batch.avro_schema))
            if small is not None:
                self._inline_services()
                return small
        direct = spark_direct.detect(df, cfg, batch.avro_schema) if self._bulk_reads_files(replace_all) else None
        if direct is not None:
            bulk = self._write_bulk_direct(batch, direct)
            self._inline_services()
            return bulk
        # Spark cannot size some inputs (an RDD, a streaming source): the counts tell.
        one_task = one_task and (estimate is None or estimate >= UNKNOWN_SIZE)
        keyed = batch.df
        level = _storage_level(cfg.storage_level)
        # bulk_insert is the big-load path: recomputing its input is cheaper than caching all of it
        # (and caching a large load can exhaust a default-sized executor), unless asked for.
        if cfg.operation is WriteOperation.BULK_INSERT and not cfg.options.is_set(K.TAGGED_STORAGE_LEVEL):
            level = None
        # The input itself is cached only when reading it again costs more than caching it: a plain
        # scan of files is re-read column-pruned by the count job (keys and partition only). Tagged
        # records (an index join) are still cached at `level`.
        keyed_level = None if level is None or (
            not cfg.options.is_set(K.TAGGED_STORAGE_LEVEL) and cheap_to_recompute(df)) else level
        if keyed_level is not None:
            keyed = keyed.persist(keyed_level)  # read by the count job, then by tagging or the write
        result: WriteResult | None = None
        try:
            counts = self._partition_counts(keyed)
            if one_task and timeline is not None and single_task.fits(cfg, timeline, counts):
                result = self._write_single_task(batch, keyed, partitions=list(counts))
            if result is None:
                result = self._write_distributed(batch, keyed, counts, timeline, level, keyed_level, replace_all)
        finally:
            if keyed_level is not None:
                keyed.unpersist()
        self._inline_services()
        return result

    def _partitions_of(self, df: DataFrame) -> list[str]:
        """delete_partition's partitions from the DataFrame's records: one Spark aggregation; a null or
        empty record key is refused, as Hudi's key generator refuses it."""
        keygen = KeyGenerator.for_table(self.config.table)
        incoming = StructType([f for f in df.schema.fields if not f.name.startswith("_hoodie_")])
        keygen.check_columns(incoming, need_partition=True)
        keygen.check_types(incoming, need_partition=True)
        rows = (df.select(keygen.partition_path(incoming).alias(PARTITION_COL),
                          keygen.bad_key(incoming).cast("long").alias(BAD_KEY))
                .groupBy(PARTITION_COL).agg(F.sum(BAD_KEY).alias("bad")).collect())
        bad = sum(int(r["bad"] or 0) for r in rows)
        if bad:
            raise self._bad_keys(bad)
        return sorted(str(r[PARTITION_COL]) for r in rows)

    def _write_distributed(self, batch: PreparedBatch, keyed: DataFrame, counts: dict[str, tuple[int, int]],
                           timeline: ActiveTimeline | None, level: StorageLevel | None,
                           keyed_level: StorageLevel | None, replace_all: bool) -> WriteResult:
        cfg = self.config
        tagged = keyed
        try:
            view = build_view(self.storage, cfg.table, timeline) if timeline is not None else None
            tagged, profile = tag_and_profile(self.spark, self.storage, cfg, keyed, counts, view, level)
            if keyed_level is not None and tagged.is_cached and tagged is not keyed:
                keyed.unpersist()  # the tagged records are cached now; the input is no longer needed
            self._ensure_table()
            timeline, view = self._recovered_view()
            return self._commit_write(tagged, profile, batch.avro_schema, timeline, view, replace_all)
        finally:
            if level is not None:
                tagged.unpersist()

    def _partition_counts(self, keyed: DataFrame) -> dict[str, tuple[int, int]]:
        """One aggregation: rows and deletes per partition; fails on null/empty keys and on null precombine
        values where the write orders records by them (before anything is written)."""
        rows = (keyed.groupBy(PARTITION_COL)
                .agg(F.count(F.lit(1)).alias("n"), F.sum(F.col(DELETE_FLAG).cast("long")).alias("d"),
                     F.sum(F.col(BAD_KEY).cast("long")).alias("bad"),
                     F.sum(null_ordering_flag(self.config).cast("long")).alias("null_ordering"))
                .collect())
        bad = sum(int(r["bad"] or 0) for r in rows)
        if bad:
            raise self._bad_keys(bad)
        null_ordering = sum(int(r["null_ordering"] or 0) for r in rows)
        if null_ordering:
            raise null_ordering_error(self.config, null_ordering)
        return {str(r[PARTITION_COL]): (int(r["n"]), int(r["d"] or 0)) for r in rows}

    def _bulk_reads_files(self, replace_all: bool) -> bool:
        """bulk_insert without Spark-side dedup or sorting can have its tasks read input files directly."""
        cfg = self.config
        return (cfg.operation is WriteOperation.BULK_INSERT and not replace_all and cfg.direct_parquet_input
                and cfg.bulk_insert_sort_mode == "NONE" and not cfg.combine_before_write
                and cfg.index.type != "BUCKET")  # BUCKET: rows must be shuffled into their buckets

    def _write_bulk_direct(self, batch: PreparedBatch, direct: DirectInput) -> WriteResult:
        """bulk_insert over parquet input files: one job whose tasks read their share of the files
        (split as Spark would) and write it; no count job, no rows through the JVM. Null keys are
        found by the tasks, which makes the instant roll back. The inflight carries no counts."""
        cfg = self.config
        self._ensure_table()
        timeline = self._recovered_timeline()  # bulk_insert reads no file layout: no view to build
        action = Action.DELTA_COMMIT if cfg.table.is_mor else Action.COMMIT

        def run(instant: str) -> list[WriteStat]:
            return self._run_bulk_direct(batch, direct, instant)

        inflight = WorkloadProfile(operation_type=cfg.operation.operation_type).to_inflight_bytes()
        return self._run_instant(timeline, action, b"", inflight, batch.avro_schema, run, None)

    def _run_bulk_direct(self, batch: PreparedBatch, direct: DirectInput, instant: str) -> list[WriteStat]:
        groups = direct.task_units(self.config.parallelism or None)
        log.info("%s: %d task(s) read %d input file(s) directly", instant, len(groups), len(direct.units))
        ctx = self._handle_context(batch.avro_schema, instant, None, [])
        rows = self._write_job(lambda: run_tasks(self.spark, lambda units, _task: run_direct_bulk_task(
            ctx, direct, units), groups, len(groups)))
        return self._task_stats(rows)

    def _write_single_task(self, batch: PreparedBatch, records: DataFrame | None,
                           direct: DirectInput | None = None, partitions: list[str] | None = None
                           ) -> WriteResult | None:
        """The small-batch path (writer/single_task.py): one Spark task tags, plans and writes. None when
        the table turns out not to suit it (no completed write yet, too many files for the index)."""
        cfg = self.config
        timeline, view = self._recovered_view()
        if not view.committed_instants:
            return None
        # The batch's one task may use a few of the cores Spark would otherwise spread it over.
        parallelism = default_parallelism(self.spark)
        threads = min(4, parallelism)
        layout = single_task.table_layout(cfg, view, timeline, threads, partitions)
        if layout.index_files > self._max_index_files(threads, parallelism):
            return None
        action = Action.DELTA_COMMIT if cfg.table.is_mor else Action.COMMIT
        if direct is None and records is None:
            records = batch.df  # built (and analyzed) before the instant exists, so its errors leave no trace

        def run(instant: str) -> list[WriteStat]:
            log.info("%s %s: tagging, planning and writing the batch in one task", action.value, instant)
            return self._run_single_task(records, batch, layout, instant, direct)

        inflight = WorkloadProfile(operation_type=cfg.operation.operation_type).to_inflight_bytes()
        return self._run_instant(timeline, action, b"", inflight, batch.avro_schema, run, None)

    def _max_index_files(self, threads: int, parallelism: int) -> float:
        """How many base files the one task may look keys up in. Beyond
        `hoodie.pyhudi.write.single.task.max.index.files`, the distributed path spreads the lookup and the
        handles over the cluster's cores. But when the one task's threads are already as many as Spark's
        default parallelism (a local master, a one-executor cluster), spreading gains no core, only the
        distributed path's fixed cost (a count job, the lookup's and profile's jobs, a shuffle: profiled on
        a 300-partition spread upsert on local[2], four times the one task's time); then the limit applies
        only when set explicitly."""
        cfg = self.config
        if threads >= parallelism and not cfg.options.is_set(K.SINGLE_TASK_MAX_INDEX_FILES):
            return float("inf")
        return cfg.single_task_max_index_files

    def _run_single_task(self, records: DataFrame | None, batch: PreparedBatch, layout: single_task.TableLayout,
                         instant: str, direct: DirectInput | None) -> list[WriteStat]:
        ctx = self._handle_context(batch.avro_schema, instant, None, [], combine=self.config.combine_before_write)
        if direct is not None:  # the task reads the input files itself
            log.info("%s: the task reads %d input file(s) directly", instant, len(direct.units))
            rows = run_tasks(self.spark, lambda units, _task: spark_tasks.run_direct_single_task(
                ctx, layout, direct, [units]), [list(direct.units)], 1)
        else:
            assert records is not None
            rows = [(r["kind"], r["payload"]) for r in records.coalesce(1).mapInArrow(
                lambda it: spark_tasks.run_single_task(ctx, layout, it), spark_tasks.OUTPUT_SCHEMA).collect()]
        return self._task_stats(rows)

    def _run_handles(self, tagged: DataFrame, plan: BucketPlan, avro_schema: dict[str, Any],
                     instant: str) -> list[WriteStat]:
        # A few tasks per core of about equal cost, each writing several buckets (a spread write's
        # hundreds of small buckets were as many Spark tasks, each with its fixed cost), yet no task
        # gets much more than a file's worth of records.
        task_of, tasks = bucket_tasks(plan.buckets, default_parallelism(self.spark), plan.average_record_size,
                                      self.config.sizing.max_file_size)
        salts = bucket_salts(task_of, tasks)
        router = make_router(plan, salts)
        route_udf = arrow_udf(router, "int")
        routed = tagged.withColumn(SALT, route_udf(F.col(RECORD_KEY_COL), F.col(PARTITION_COL), F.col(LOC_FILE_ID)))
        keep = [c for c in routed.columns if c not in (LOC_FILE_ID, LOC_INSTANT, BAD_KEY)]
        shuffled = routed.select(*keep).repartition(tasks, SALT)
        ctx = self._handle_context(avro_schema, instant, plan, salts)
        log.info("%s: %d bucket(s) in %d write task(s)", instant, plan.num_buckets, tasks)
        job = shuffled.mapInArrow(lambda it: run_bucket_task(ctx, task_of, it), "stat string")
        rows = self._write_job(job.collect)
        return [WriteStat.from_json(json.loads(r["stat"])) for r in rows]

    def _run_bulk(self, keyed: DataFrame, avro_schema: dict[str, Any], instant: str) -> list[WriteStat]:
        cfg = self.config
        ctx = self._handle_context(avro_schema, instant, None, [])
        bucket = (cfg.bucket_hash_fields, cfg.index.bucket_num) \
            if cfg.index.type == "BUCKET" else None
        laid_out = layout(keyed.drop(BAD_KEY, LOC_FILE_ID, LOC_INSTANT), cfg.bulk_insert_sort_mode, cfg.parallelism, cfg.precombine_field,
                          cfg.combine_before_write, bucket)
        rows = self._write_job(laid_out.mapInArrow(lambda it: run_bulk_task(ctx, it), "stat string").collect)
        return [WriteStat.from_json(json.loads(r["stat"])) for r in rows]


def estimated_input_bytes(df: DataFrame) -> int | None:
    """Spark's size estimate of the input (file sizes for a scan; Long.MaxValue when unknown).

    Classic-only optimisation: the estimate is read off the plan through the JVM gateway, which a Spark
    Connect client does not have; there (None) the write's count job decides whether one task fits."""
    if is_connect(df):
        return None
    try:
        size = df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()
        return int(size if isinstance(size, int) else size.toString())
    except Exception:  # an unexpected plan: treat as unknown
        return None


_CHEAP_PLAN_NODES = frozenset({"LogicalRelation", "LocalRelation", "InMemoryRelation", "Project", "Filter"})


def cheap_to_recompute(df: DataFrame, max_nodes: int = 64) -> bool:
    """Whether `df` is a deterministic scan of files, local rows or an already cached DataFrame (e.g. the
    streamer's validated batch), with projections and filters only, so reading it twice costs less than
    caching it (again): Spark prunes the first read to a few columns.

    Classic-only optimisation (the plan is walked through the JVM gateway); under Spark Connect the
    input is cached, the safe choice."""
    if is_connect(df):
        return False
    try:
        root = df._jdf.queryExecution().optimizedPlan()
        if not root.deterministic():
            return False
        stack, seen = [root], 0
        while stack:
            node = stack.pop()
            seen += 1
            if seen > max_nodes or node.getClass().getSimpleName() not in _CHEAP_PLAN_NODES:
                return False
            children = node.children()
            stack.extend(children.apply(i) for i in range(children.size()))
        return True
    except Exception:  # an unexpected plan: cache, the safe choice
        return False


def _storage_level(name: str) -> StorageLevel | None:
    if name in ("", "NONE"):
        return None
    return getattr(StorageLevel, name, StorageLevel.MEMORY_AND_DISK)

