"""One pyhudi operation in a process of its own, on the in-process engine (no SparkSession, no JVM) or on
Spark, for the local-engine crash and concurrency tests (test_engines_crash.py, test_engines_concurrency.py).

Usage: `python engine_worker.py SPEC.json`. The spec names the table `path`, the operation `op`,
Hudi `options`, and for writes either `rows` (lists in `columns` order) or a crash-test batch (`seed`,
`step`: crash_worker.batch_rows). `engine` is "local" (default: Arrow data, services with `None`) or
"spark" (a local[1] session). Operations: `upsert`, `delete`, `bulk_insert`, `insert` (writes),
`overwrite` (mode="overwrite"), `compact`, `cluster`, `clean`, `archive`.

With `pause` ({"point", "signal", "release"}), the first time the code reaches the named fault point
(pyhudi/faults.py) the worker creates `signal` and waits until `release` exists: a test holds a writer
at an exact place (for instance with its instant requested but not inflight) while another one runs.
The hook sits on the fault points' own entry (`faults._maybe_raise`), so nothing in pyhudi changes.

The outcome is the last stdout line: `{"ok": true, "result": ...}` or `{"ok": false, "error": {...}}`.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

WAIT_LIMIT_SECONDS = 300  # bounds a hang only
COLUMNS = ["id", "name", "city", "ts", "payload"]  # crash_worker's batches
TYPES = {"id": "int64", "name": "string", "city": "string", "part": "string", "ts": "int64", "payload": "string"}


def touch(path: str) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w"):
        pass
    os.replace(tmp, path)


def install_pause(point: str, signal: str, release: str) -> None:
    """Hold the process at the first hit of `point` until `release` exists (`signal` says it is held)."""
    from pyhudi import faults

    original = faults._maybe_raise
    state = {"held": False}

    def hook(name: str) -> None:
        original(name)
        if name != point or state["held"]:
            return
        state["held"] = True
        touch(signal)
        deadline = time.monotonic() + WAIT_LIMIT_SECONDS
        while not os.path.exists(release):
            if time.monotonic() > deadline:
                raise TimeoutError(f"pause at {point} gave up waiting for {release}")
            time.sleep(0.02)

    faults._maybe_raise = hook  # type: ignore[assignment]


def arrow_table(rows: list[list[Any]], columns: list[str]) -> Any:
    import pyarrow as pa

    cols = list(zip(*rows)) if rows else [[] for _ in columns]
    return pa.table({c: pa.array(list(v), getattr(pa, TYPES[c])()) for c, v in zip(columns, cols)})


def batch(spec: dict[str, Any]) -> tuple[list[list[Any]], list[str]]:
    if "rows" in spec:
        return spec["rows"], spec["columns"]
    from tests.integration.crash_worker import batch_rows

    kind = spec["op"]
    return [list(r) for r in batch_rows(int(spec["seed"]), int(spec["step"]), kind)], COLUMNS


def frame(session: Any, rows: list[list[Any]], columns: list[str]) -> Any:
    if session is None:
        return arrow_table(rows, columns)
    schema = ", ".join(f"{c} {'long' if TYPES[c] == 'int64' else 'string'}" for c in columns)
    return session.createDataFrame([tuple(r) for r in rows], schema)


def run(spec: dict[str, Any], session: Any) -> Any:
    import pyhudi

    op, path, options = spec["op"], spec["path"], dict(spec["options"])
    if op in ("upsert", "delete", "bulk_insert", "insert", "overwrite"):
        rows, columns = batch(spec)
        if op != "overwrite":
            options["hoodie.datasource.write.operation"] = op
        return pyhudi.write(frame(session, rows, columns), path, options,
                            mode="overwrite" if op == "overwrite" else "append")
    if op == "compact":
        return pyhudi.compact(session, path, options)
    if op == "cluster":
        return pyhudi.cluster(session, path, options)
    if op == "clean":
        return [r.instant for r in pyhudi.clean(None, path, options)]
    if op == "archive":
        return pyhudi.archive(None, path, options)  # type: ignore[attr-defined]
    raise ValueError(f"unknown operation {op!r}")


def describe(exc: BaseException) -> dict[str, Any]:
    from pyhudi.errors import HudiError

    return {"type": type(exc).__name__, "hudi": isinstance(exc, HudiError), "message": str(exc)[:3000]}


def main(spec_path: str) -> None:
    with open(spec_path) as f:
        spec = json.load(f)
    sys.path.insert(0, spec.get("repo", os.getcwd()))
    pause = spec.get("pause")
    if pause:
        install_pause(pause["point"], pause["signal"], pause["release"])
    session = None
    if spec.get("engine", "local") == "spark":
        from pyhudi.spark_env import create_session

        session = create_session("local[1]", app_name="pyhudi-engine-worker",
                                 conf={"spark.sql.shuffle.partitions": "1", "spark.default.parallelism": "1"})
    try:
        reply: dict[str, Any] = {"ok": True, "result": run(spec, session)}
    except Exception as exc:  # every outcome is reported; the test judges it
        reply = {"ok": False, "error": describe(exc)}
    reply["pyspark_loaded"] = "pyspark" in sys.modules  # the in-process path must not import it
    if session is not None:
        session.stop()
    sys.stdout.write(json.dumps(reply, default=str) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1])
