"""Runs pyhudi writes in a SparkSession of its own, for tests that kill, fault or distribute them.

Usage: `python fault_writer.py SPEC.json` (run as a script, so the functions below are shipped to
executors by value and nothing has to import this file there). The spec names the Spark master,
extra Spark conf and a list of jobs; each job writes rows made by `rows_frame` and prints JSON lines
(`{"event": "job_start", "job": i}`, then `{"event": "written", "job": i, "instant": ...}`) to
stdout. Jobs with the same `thread` run one after the other; different threads run concurrently in
the one driver (so one SIGKILL can catch several writes, each at its own point). A job with
`wait_for` (a list of paths) starts only once those files exist.

A job may put a *gate* in front of the write: a pass-through `mapInArrow` step of the user's own
input pipeline (no hook inside pyhudi) that looks at the table on disk for every batch it hands on:

- `block_on_inflight`: once a write instant is inflight, write the signal file and block;
- `hold_until_data_file`: once a write instant is inflight, let Spark partition 0 through, but hold
  every other partition until a data file of that instant exists (written by partition 0's task),
  then write the signal file (listing the data files) and block.

A blocked gate waits for the test to SIGKILL the whole process group.

A job with a `kind` other than `write` runs a table service instead of writing rows (it still
emits `job_start` and `written`, with the service's result as `instant`):

- `copy_table`: copy the table at `path` to `to` (a snapshot of a table that nothing writes to);
- `schedule_compaction`: schedule a compaction of `path` now (pyhudi's scheduler, forced);
- `compact`: `pyhudi.compact(spark, path, options, instant)`, i.e. execute compactions.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time
from typing import Any

WRITE_ACTIONS = ("commit", "deltacommit", "replacecommit")
BLOCK_LIMIT_SECONDS = 900  # a gate nobody kills gives up eventually instead of hanging forever


def model_rows(spec: dict[str, Any]) -> dict[int, tuple[str, str, int]]:
    """What `rows_frame(spec)` holds, as id -> (name, city, ts): the tests' model of a batch."""
    version, parts, city = int(spec["version"]), int(spec.get("partitions", 3)), spec.get("city")
    return {i: (f"v{version}-{i}", city or f"p{i % parts}", version) for i in range(spec["start"], spec["stop"])}


def rows_frame(spark: Any, spec: dict[str, Any]) -> Any:
    version, parts = int(spec["version"]), int(spec.get("partitions", 3))
    slices = int(spec.get("slices", 2))
    city = f"'{spec['city']}'" if spec.get("city") else f"concat('p', cast(id % {parts} as string))"
    return spark.range(spec["start"], spec["stop"], 1, slices).selectExpr(
        "id", f"concat('v{version}-', cast(id as string)) as name", f"{city} as city",
        f"cast({version} as bigint) as ts")


def inflight_instants(table: str) -> set[str]:
    """Write instants with an `.inflight` file but no completed file (Hudi keeps both once completed)."""
    try:
        names = os.listdir(os.path.join(table, ".hoodie"))
    except FileNotFoundError:
        return set()
    inflight, done = set(), set()
    for name in names:
        parts = name.split(".")
        # Timeline layout 1: a commit's inflight file is `<ts>.inflight`, the others `<ts>.<action>.inflight`.
        if parts[-1] == "inflight" and (len(parts) == 2 or (len(parts) == 3 and parts[1] in WRITE_ACTIONS)):
            inflight.add(parts[0])
        elif len(parts) == 2 and parts[1] in WRITE_ACTIONS:
            done.add(parts[0])
    return inflight - done


def data_files_of(table: str, instants: set[str]) -> list[str]:
    """Relative paths of base files (outside .hoodie) written by any of `instants`."""
    found = []
    for root, dirs, files in os.walk(table):
        dirs[:] = [d for d in dirs if d != ".hoodie"]
        for name in files:
            if name.endswith(".parquet") and any(name.endswith(f"_{i}.parquet") for i in instants):
                found.append(os.path.relpath(os.path.join(root, name), table))
    return sorted(found)


def make_gate(table: str, mode: str, signal: str):  # type: ignore[no-untyped-def]
    def signal_once(payload: dict[str, Any]) -> None:
        tmp = f"{signal}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(payload, f)
        os.replace(tmp, signal)

    def block() -> None:
        deadline = time.monotonic() + BLOCK_LIMIT_SECONDS
        while time.monotonic() < deadline:
            time.sleep(0.2)
        raise RuntimeError("gate was never killed")

    def gate(batches):  # type: ignore[no-untyped-def]
        from pyspark import TaskContext

        tc = TaskContext.get()
        assert tc is not None
        for batch in batches:
            pending = inflight_instants(table)
            if mode == "block_on_inflight" and pending:
                signal_once({"pending": sorted(pending), "files": data_files_of(table, pending)})
                block()
            elif mode == "hold_until_data_file" and pending and tc.partitionId() > 0:
                deadline = time.monotonic() + BLOCK_LIMIT_SECONDS
                while not data_files_of(table, pending) and time.monotonic() < deadline:
                    time.sleep(0.05)
                signal_once({"pending": sorted(pending), "files": data_files_of(table, pending)})
                block()
            yield batch

    return gate


_emit_lock = threading.Lock()


def emit(event: dict[str, Any]) -> None:
    with _emit_lock:
        sys.stdout.write(json.dumps(event) + "\n")
        sys.stdout.flush()


def wait_for_files(paths: list[str]) -> None:
    assert isinstance(paths, list), f"wait_for must be a list of paths, got {paths!r}"
    deadline = time.monotonic() + BLOCK_LIMIT_SECONDS
    while not all(os.path.exists(p) for p in paths) and time.monotonic() < deadline:
        time.sleep(0.05)


def run_service(spark: Any, job: dict[str, Any]) -> Any:
    import pyhudi
    from pyhudi.model.table_config import load_table_config
    from pyhudi.services import compaction
    from pyhudi.storage import Storage
    from pyhudi.writer.config import CompactionConfig

    kind = job["kind"]
    if kind == "copy_table":
        shutil.copytree(job["path"], job["to"])
        return job["to"]
    if kind == "schedule_compaction":
        storage = Storage(job["path"])
        return compaction.schedule(storage, load_table_config(storage), CompactionConfig(), force=True)
    if kind == "compact":
        return pyhudi.compact(spark, job["path"], job.get("options"), job.get("instant"))
    raise ValueError(f"unknown job kind {kind!r}")


def run_jobs(spark: Any, jobs: list[tuple[int, dict[str, Any]]], failures: list[BaseException]) -> None:
    import pyhudi

    try:
        for i, job in jobs:
            wait_for_files(job.get("wait_for", []))
            emit({"event": "job_start", "job": i})
            if job.get("kind", "write") != "write":
                emit({"event": "written", "job": i, "instant": run_service(spark, job)})
                continue
            df = rows_frame(spark, job["rows"])
            if job.get("gate"):
                gate = make_gate(job["path"], job["gate"], job["signal"])
                df = df.mapInArrow(gate, df.schema)
            instant = pyhudi.write(df, job["path"], job["options"], mode=job.get("mode", "append"))
            emit({"event": "written", "job": i, "instant": instant})
    except BaseException as exc:
        emit({"event": "failed", "job": i, "error": repr(exc)[:2000]})
        failures.append(exc)


def main(spec_path: str) -> None:
    with open(spec_path) as f:
        spec = json.load(f)
    from pyhudi.spark_env import create_session

    spark: Any = create_session(spec["master"], app_name=spec.get("app", "pyhudi-fault-writer"),
                                conf=spec.get("conf", {}))
    emit({"event": "started", "master": spark.sparkContext.master})
    # Jobs of one `thread` run in order; different threads run at the same time in this one driver.
    lanes: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for i, job in enumerate(spec["jobs"]):
        lanes.setdefault(job.get("thread", "main"), []).append((i, job))
    failures: list[BaseException] = []
    threads = [threading.Thread(target=run_jobs, args=(spark, lane, failures)) for lane in lanes.values()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    spark.stop()
    if failures:
        raise failures[0]
    emit({"event": "done"})


if __name__ == "__main__":
    main(sys.argv[1])
