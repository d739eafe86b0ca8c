"""A long-lived pyhudi process for the concurrency matrix: one SparkSession (and JVM) that runs commands.

Usage: `python matrix_worker.py MASTER`. Commands arrive as JSON lines on stdin, results leave as JSON
lines on stdout (`{"id": ..., "ok": true, "result": ...}` or `{"id": ..., "ok": false, "error": {...}}`).
One process serves a whole test module, so the matrix pays a JVM start per worker, not per scenario.

Commands (`op`):
- `write`: `pyhudi.write` of `rows` (id, name, part, ts) with `options`; with `gate`, the input passes a
  pass-through step in the *user's* pipeline that writes `gate.signal` and waits for `gate.release`
  (no hook inside pyhudi). The input is a pandas DataFrame (a LocalRelation that Spark can size), so on
  a table with a completed write a small batch takes the one-task path, whose gate fires after the
  instant exists and before any data file is written; the distributed path's gate fires in its count job.
- `compact`, `cluster`, `clean`: the table services, with `options`.
- `exit`.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

SCHEMA = "id long, name string, part string, ts long"
WAIT_LIMIT_SECONDS = 300  # bounds a hang only; the test fails on its own assertions first


def touch(path: str) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w"):
        pass
    os.replace(tmp, path)


def make_gate(signal: str, release: str):  # type: ignore[no-untyped-def]
    def gate(batches):  # type: ignore[no-untyped-def]
        touch(signal)
        deadline = time.monotonic() + WAIT_LIMIT_SECONDS
        while not os.path.exists(release):
            if time.monotonic() > deadline:
                raise TimeoutError(f"gate gave up waiting for {release}")
            time.sleep(0.02)
        yield from batches

    return gate


def describe(exc: BaseException) -> dict[str, Any]:
    from pyhudi.errors import HudiError

    return {"type": type(exc).__name__, "hudi": isinstance(exc, HudiError), "message": str(exc)[:3000]}


def run(spark: Any, cmd: dict[str, Any]) -> Any:
    import pandas as pd

    import pyhudi

    op = cmd["op"]
    if op == "write":
        names = [f.split()[0] for f in SCHEMA.split(",")]
        df = spark.createDataFrame(pd.DataFrame(cmd["rows"], columns=names), SCHEMA)
        gate = cmd.get("gate")
        if gate:
            df = df.mapInArrow(make_gate(gate["signal"], gate["release"]), df.schema)
        return pyhudi.write(df, cmd["path"], cmd["options"])
    if op == "compact":
        return pyhudi.compact(spark, cmd["path"], cmd["options"])
    if op == "cluster":
        return pyhudi.cluster(spark, cmd["path"], cmd["options"])
    if op == "clean":
        result = pyhudi.clean(spark, cmd["path"], cmd["options"])
        return None if result is None else str(result)
    raise ValueError(f"unknown command {op!r}")


def main(master: str) -> None:
    from pyhudi.spark_env import create_session

    spark = create_session(master, app_name="pyhudi-matrix",
                           conf={"spark.sql.shuffle.partitions": "1", "spark.default.parallelism": "1"})
    print(json.dumps({"id": "ready", "ok": True, "pid": os.getpid()}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["op"] == "exit":
            break
        try:
            reply = {"id": cmd["id"], "ok": True, "result": run(spark, cmd)}
        except Exception as exc:  # every outcome is reported; the test judges it
            reply = {"id": cmd["id"], "ok": False, "error": describe(exc)}
        print(json.dumps(reply, default=str), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
