"""The pyspark calls behind `pyhudi.spark_env` and the CLI's Spark path: building, finding and stopping a
SparkSession.

They live in the Spark engine so that no module outside `pyhudi/engine/spark*` imports pyspark:
`pyhudi.spark_env` (the Java check, worker-Python pinning) and the CLI only reach pyspark through here,
and only once Spark was asked for. Callers check that Java and pyspark are there first
(`spark_env.check_spark`), so the errors users see name what to install, not a py4j traceback.
"""

from __future__ import annotations

import re
import sys
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pyspark
from pyspark import SparkContext
from pyspark.sql import SparkSession

from pyhudi.engine.spark.runtime import connect_session


def spark_version() -> tuple[int, int]:
    major, minor = (int(p) for p in re.findall(r"\d+", pyspark.__version__)[:2])
    return major, minor


def _classic_context() -> Any:
    """The running classic SparkContext of this process, or None. Classic-only, guarded: a Spark Connect
    client has none (a local Connect server has one: the server's, in this process)."""
    sc = SparkContext._active_spark_context
    return sc if sc is not None and getattr(sc, "_jsc", None) is not None else None


def active_context() -> Any:
    """What the CLI's status line polls, or None: the running classic SparkContext, else the stage tracker
    of the active Spark Connect session (fed by Connect's progress reports, see ConnectStages)."""
    sc = _classic_context()
    if sc is not None:
        return sc
    session = connect_session()
    return None if session is None else ConnectStages.of(session)


class _StageInfo:
    """What StatusTracker.getStageInfo gives, from a Connect progress report."""

    def __init__(self, stage_id: int, num_tasks: int, completed: int, active: int) -> None:
        self.stageId, self.name, self.numTasks = stage_id, "on Spark Connect", num_tasks
        self.numCompletedTasks, self.numActiveTasks, self.numFailedTasks = completed, active, 0


class ConnectStages:
    """A StatusTracker look-alike for a Spark Connect session: a progress handler registered on the
    session (`registerProgressHandler`) records the stages the server reports while an operation runs
    (every `spark.connect.progress.reportInterval`, 2 s by default); the status line reads them as it
    reads a classic StatusTracker. Connect reports no stage names: "stage N on Spark Connect"."""

    _BY_SESSION: weakref.WeakKeyDictionary[Any, ConnectStages] = weakref.WeakKeyDictionary()
    _LOCK = threading.Lock()

    def __init__(self) -> None:
        self._stages: dict[int, tuple[int, int, bool]] = {}  # id -> (tasks, completed, done)
        self._inflight = 0
        self._lock = threading.Lock()

    @classmethod
    def of(cls, session: Any) -> ConnectStages:
        with cls._LOCK:
            found = cls._BY_SESSION.get(session)
            if found is None:
                found = cls._BY_SESSION[session] = ConnectStages()
                session.registerProgressHandler(found)
        return found

    def __call__(self, stages: Any = None, inflight_tasks: int = 0, operation_id: Any = None,
                 done: bool = False) -> None:
        with self._lock:
            for s in stages or ():
                self._stages[int(s.stage_id)] = (int(s.num_tasks), int(s.num_completed_tasks), bool(s.done or done))
            if done:
                self._stages.update({k: (t, c, True) for k, (t, c, _) in self._stages.items()})
            self._inflight = 0 if done else int(inflight_tasks)

    def statusTracker(self) -> ConnectStages:  # noqa: N802 - SparkContext's name
        return self

    def getActiveStageIds(self) -> list[int]:  # noqa: N802 - StatusTracker's names
        with self._lock:
            return sorted(k for k, (_, _, d) in self._stages.items() if not d)

    def getStageInfo(self, stage_id: int) -> _StageInfo | None:  # noqa: N802
        with self._lock:
            found = self._stages.get(stage_id)
            if found is None:
                return None
            tasks, completed, done = found
            running = sum(1 for _, _, d in self._stages.values() if not d)
            active = 0 if done or not running else max(0, self._inflight // running)
            return _StageInfo(stage_id, tasks, completed, active)

    def getJobIdsForGroup(self, group: Any = None) -> list[int]:  # noqa: N802
        return []

    def getJobInfo(self, job_id: int) -> None:  # noqa: N802
        return None


def build_session(master: str, app_name: str, conf: dict[str, str], quiet: bool, uds_key: str) -> SparkSession:
    """The session pyhudi's CLI, demo and tests use (see spark_env.create_session for why each setting).
    An `sc://host:port` master is a Spark Connect server: only session settings are sent (the server's
    own configuration decides the rest)."""
    if master.startswith("sc://"):
        remote = SparkSession.builder.remote(master).config("spark.sql.session.timeZone", "UTC")
        for key, value in conf.items():
            remote = remote.config(key, value)
        return remote.getOrCreate()
    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.pyspark.python", sys.executable)
               .config("spark.sql.session.timeZone", "UTC")
               # Background table services run their jobs in a pool of their own; FAIR lets a micro-batch's
               # tasks start while a compaction/clustering job is running instead of queueing behind all its
               # tasks (bench/streaming_services.py: micro-batches overlapping a service slowed less)
               .config("spark.scheduler.mode", "FAIR")
               # Python workers talk to their executor over a Unix domain socket, not loopback TCP: over TCP
               # every Python task stalled ~40 ms reading its input (delayed ACK), a large share of a
               # small batch's one-task write (docs/architecture.md, "Small batches")
               .config(uds_key, "true")
               .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
               .config("spark.executor.extraJavaOptions", "-Duser.timezone=UTC"))
    if quiet:  # Spark 3.5+: as SparkContext.setLogLevel at start-up
        builder = builder.config("spark.log.level", "ERROR")
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


@contextmanager
def command_session(create: Callable[[], SparkSession], before_stop: Callable[[], None]) -> Iterator[SparkSession]:
    """A session for one CLI command: one the command started is stopped at the end (after `before_stop`,
    which lets the status line count stages while Spark still answers); one that already existed (a
    notebook, the tests) is kept."""
    created = _classic_context() is None and connect_session() is None
    spark = create()
    try:
        yield spark
    finally:
        if created:
            before_stop()
            spark.stop()


def empty_frame(spark: SparkSession) -> Any:
    """A DataFrame with no rows (delete_partition by name reads no data)."""
    return spark.createDataFrame([], "_pyhudi_unused string")


def read_files(spark: SparkSession, path: str, fmt: str) -> Any:
    """The streamer's reading rules for `pyhudi write --master`: csv with a header row, inferred types."""
    reader = spark.read.format(fmt)
    if fmt == "csv":
        reader = reader.option("header", "true").option("inferSchema", "true")
    return reader.load(path)


def set_thread_pool(pool: str | None, description: str) -> None:
    """Run this thread's next Spark jobs in the FAIR scheduler pool `pool` (None: the default pool), under
    `description` (background table services, so a micro-batch's tasks are not queued behind theirs).
    Classic-only, guarded: scheduler pools and job descriptions are SparkContext thread properties, which
    a Spark Connect client cannot set (its jobs run on server threads): there this does nothing, and
    background services share the default pool."""
    if connect_session() is not None:
        return
    sc = _classic_context()
    if sc is None:
        return
    sc.setLocalProperty("spark.scheduler.pool", pool or None)  # type: ignore[arg-type]
    sc.setJobDescription(description)
