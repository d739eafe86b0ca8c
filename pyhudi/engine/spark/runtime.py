"""What the Spark engine needs of a session, through the DataFrame API only, so a Spark Connect session
works as a classic one does (one code path): no SparkContext, RDD or JVM gateway.

- `run_tasks`: the engine's tasks (small items: plans, file names, key ranges), one group per partition of
  `spark.range(n)`, run by `mapInArrow`; only the tasks' (pickled) results come back.
- `default_parallelism`: from `spark.default.parallelism`, else the master (`local[N]`,
  `local-cluster[n,c,m]`), else one probe job; once per session.
- `conf_bytes` / `session_time_zone`: SQL confs read through `spark.conf`.
- `is_connect`: whether a session or DataFrame is Spark Connect's (for the few classic-only
  optimisations, which are guarded by it and have a tested fallback).
"""

from __future__ import annotations

import os
import pickle
import re
import sys
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

import pyarrow as pa
from pyspark import TaskContext, cloudpickle
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, IntegerType, StructField, StructType

from pyhudi.engine.base import TaskInfo

T = TypeVar("T")
R = TypeVar("R")

# A StructType, not DDL text: pyspark parses a DDL return type through the JVM on each mapInArrow call
# (a gateway round trip, about 7% of a no-op batch's driver time when profiled).
_RESULT_SCHEMA = StructType([StructField("_slot", IntegerType()), StructField("_seq", IntegerType()),
                             StructField("_result", BinaryType())])
_RESULT_ARROW = pa.schema([("_slot", pa.int32()), ("_seq", pa.int32()), ("_result", pa.binary())])


def is_connect(obj: Any) -> bool:
    """A Spark Connect session or DataFrame (recognized by its class's module; nothing imported)."""
    return type(obj).__module__.startswith("pyspark.sql.connect.")


# --------------------------------------------------------------------------- parallelism
_PARALLELISM: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()
_LOCAL = re.compile(r"local(?:\[(\d+|\*)(?:,\s*\d+)?\])?$")
_LOCAL_CLUSTER = re.compile(r"local-cluster\[\s*(\d+)\s*,\s*(\d+)\s*,\s*\d+\s*\]$")


def parallelism_of_master(master: str | None) -> int | None:
    """Spark's default parallelism for a local master (`local` 1, `local[N]` N, `local[*]` the cores,
    `local-cluster[n,c,m]` n*c); None for a cluster manager (the executors decide)."""
    master = (master or "").strip()
    m = _LOCAL.match(master)
    if m:
        n = m.group(1)
        return 1 if n is None else (os.cpu_count() or 1) if n == "*" else int(n)
    m = _LOCAL_CLUSTER.match(master)
    if m:
        return int(m.group(1)) * int(m.group(2))
    return None


def _conf(spark: SparkSession, key: str) -> str | None:
    try:
        value = spark.conf.get(key, None)
    except Exception:  # noqa: BLE001 - a conf the server will not show: unknown
        return None
    return None if value in (None, "") else str(value)


def _probe_parallelism(spark: SparkSession) -> int:
    """The partitions Spark gives a leaf without a partition count (its default parallelism)."""
    row = spark.range(0, 1 << 20).select(F.spark_partition_id().alias("p")).agg(F.max("p").alias("m")).first()
    return int(row["m"]) + 1 if row is not None and row["m"] is not None else 1


def default_parallelism(spark: SparkSession) -> int:
    """Spark's default parallelism for `spark` (what `sparkContext.defaultParallelism` gives), found once
    per session: `spark.default.parallelism` if set, else from a local master, else a probe job
    (`local[*]` on a Connect server is probed too: the server's cores are not the client's)."""
    with _LOCK:
        known = _PARALLELISM.get(spark)
    if known is not None:
        return known
    found: int | None = None
    explicit = _conf(spark, "spark.default.parallelism")
    if explicit is not None and explicit.isdigit():
        found = int(explicit)
    if found is None:
        master = _conf(spark, "spark.master")
        if not (is_connect(spark) and master is not None and "*" in master):
            found = parallelism_of_master(master)
    if found is None:
        found = _probe_parallelism(spark)
    found = max(1, found)
    with _LOCK:
        _PARALLELISM[spark] = found
    return found


# --------------------------------------------------------------------------- confs
_BYTES = re.compile(r"^\s*(\d+)\s*([a-z]*)\s*$")
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "g": 1 << 30, "gb": 1 << 30,
          "t": 1 << 40, "tb": 1 << 40, "p": 1 << 50, "pb": 1 << 50}


def parse_bytes(text: str) -> int:
    """A Spark byte size (`134217728b`, `128m`, `4MB`; a bare number is bytes) as an int."""
    m = _BYTES.match(text.lower())
    if m is None or m.group(2) not in _UNITS:
        raise ValueError(f"not a byte size: {text!r}")
    return int(m.group(1)) * _UNITS[m.group(2)]


def conf_bytes(spark: SparkSession, key: str, default: int) -> int:
    value = _conf(spark, key)
    if value is None:
        return default
    try:
        return parse_bytes(value)
    except ValueError:
        return default


def session_time_zone(spark: SparkSession | None) -> str:
    """`spark.sql.session.timeZone` (its default is the JVM's default zone), else UTC."""
    if spark is None:
        return "UTC"
    return _conf(spark, "spark.sql.session.timeZone") or "UTC"


def connect_session() -> Any:
    """This thread's active (else the process's default) Spark Connect session, or None; pyspark's Connect
    client is only looked at when something already imported it (it needs grpc)."""
    module = sys.modules.get("pyspark.sql.connect.session")
    if module is None:
        return None
    cls = module.SparkSession
    try:
        session = cls.getActiveSession() or cls._get_default_session()
    except Exception:  # noqa: BLE001 - a half-initialised client
        return None
    return None if session is None or getattr(session, "is_stopped", False) else session


def active_session() -> SparkSession | None:
    """The active session of this thread: a Spark Connect one first (a local Connect server runs a
    classic session in the same process), else the classic one."""
    session = connect_session()
    if session is not None:
        return session  # type: ignore[no-any-return]
    try:
        return SparkSession.getActiveSession()
    except Exception:  # noqa: BLE001 - a half-initialised pyspark
        return None


# --------------------------------------------------------------------------- tasks
def task_info() -> TaskInfo:
    tc = TaskContext.get()
    assert tc is not None, "not inside a Spark task"
    return TaskInfo(tc.partitionId(), tc.stageId(), tc.taskAttemptId())


def _groups(n: int, slices: int) -> list[int]:
    """Each item's group: contiguous runs of (nearly) equal size, as `parallelize` slices a list."""
    return [(i * slices) // n for i in range(n)]


def map_groups(spark: SparkSession, groups: Sequence[Sequence[T]],
               fn: Callable[[list[T]], Iterator[pa.RecordBatch]], schema: StructType) -> DataFrame:
    """A DataFrame of `fn(group)`'s batches, one partition per group, run on the executors when it is
    evaluated: one `mapInArrow` over `spark.range(len(groups))` with one row per partition (Range splits
    exactly); task k takes group k, which travels pickled inside the task function (groups are small:
    plans, file names, key ranges; Spark ships a stage's function once per executor, not once per task).
    What `fn` yields stays on the executors unless the caller collects it."""
    payload = cloudpickle.dumps([list(g) for g in groups])

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for _ in batches:  # the range's one row; read to the end so the Python worker is reused
            pass
        yield from fn(pickle.loads(payload)[task_info().partition_id])

    n = len(groups)
    return spark.range(0, n, 1, n).mapInArrow(run, schema)


def run_tasks(spark: SparkSession, fn: Callable[[T, TaskInfo], Iterable[R]], items: Sequence[T],
              slices: int) -> list[R]:
    """`fn(item, task)` for every item on the executors, `slices` tasks, results in item order.

    One job of `map_groups`: task k takes group k of the items. Each result comes back pickled, tagged with
    its item's index."""
    items = list(items)
    if not items:
        return []
    slices = max(1, min(len(items), slices))
    grouped: list[list[tuple[int, Any]]] = [[] for _ in range(slices)]
    for i, (g, item) in enumerate(zip(_groups(len(items), slices), items)):
        grouped[g].append((i, item))
    def run(group: list[tuple[int, Any]]) -> Iterator[pa.RecordBatch]:
        info = task_info()
        slots: list[int] = []
        seqs: list[int] = []
        results: list[bytes] = []
        for slot, item in group:
            for seq, result in enumerate(fn(item, info)):
                slots.append(slot)
                seqs.append(seq)
                results.append(cloudpickle.dumps(result))
        if results:
            yield pa.RecordBatch.from_pydict({"_slot": slots, "_seq": seqs, "_result": results}, schema=_RESULT_ARROW)

    rows = map_groups(spark, grouped, run, _RESULT_SCHEMA).collect()
    collected = sorted((int(r["_slot"]), int(r["_seq"]), bytes(r["_result"])) for r in rows)
    return [pickle.loads(r[2]) for r in collected]
