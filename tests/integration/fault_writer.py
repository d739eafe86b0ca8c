"""Runs pyhudi writes in a SparkSession of its own, for tests that kill, fault or distribute them.

Usage: `python fault_writer.py SPEC.json` (run as a script, so the functions below are shipped to
executors by value and nothing has to import this file there). The spec names the Spark master,
extra Spark conf and a list of jobs; each job writes rows made by `rows_frame` and prints one JSON
line (`{"event": "written", "job": i, "instant": ...}`) to stdout when its write returns.

A job may put a *gate* in front of the write: a pass-through `mapInArrow` step of the user's own
input pipeline (no hook inside pyhudi) that looks at the table on disk for every batch it hands on:

- `block_on_inflight`: once a write instant is inflight, touch the signal file and block;
- `block_after_data_file`: once a data file of an inflight instant exists, touch the signal file
  (listing the data files it saw) and block;
- `fail_first_attempt_after_data_file`: on a task's first attempt, once a data file of an inflight
  instant exists, touch the signal file (listing those files) and raise, so Spark retries the task.

A blocked gate waits for the test to SIGKILL the whole process group.
"""

from __future__ import annotations

import json
import os
import sys
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
        for batch in batches:
            pending = inflight_instants(table)
            if mode == "block_on_inflight" and pending:
                signal_once({"pending": sorted(pending), "files": data_files_of(table, pending)})
                block()
            elif mode == "block_after_data_file" and pending:
                files = data_files_of(table, pending)
                if files:
                    signal_once({"pending": sorted(pending), "files": files})
                    block()
            elif mode == "fail_first_attempt_after_data_file" and pending and tc.attemptNumber() == 0:
                files = data_files_of(table, pending)
                if files:
                    signal_once({"pending": sorted(pending), "files": files, "attempt": tc.attemptNumber(),
                                 "task_attempt_id": tc.taskAttemptId(), "partition": tc.partitionId()})
                    raise RuntimeError(f"injected failure of attempt 0 after {files} were written")
            yield batch

    return gate


def emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def main(spec_path: str) -> None:
    with open(spec_path) as f:
        spec = json.load(f)
    import pyhudi
    from pyhudi.spark_env import create_session

    spark = create_session(spec["master"], app_name=spec.get("app", "pyhudi-fault-writer"),
                           conf=spec.get("conf", {}))
    emit({"event": "started", "master": spark.sparkContext.master})
    for i, job in enumerate(spec["jobs"]):
        emit({"event": "job_start", "job": i})
        df = rows_frame(spark, job["rows"])
        if job.get("gate"):
            gate = make_gate(job["path"], job["gate"], job["signal"])
            df = df.mapInArrow(gate, df.schema)
        instant = pyhudi.write(df, job["path"], job["options"], mode=job.get("mode", "append"))
        emit({"event": "written", "job": i, "instant": instant})
    spark.stop()
    emit({"event": "done"})


if __name__ == "__main__":
    main(sys.argv[1])
