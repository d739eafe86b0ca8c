"""One operation on a Hudi table, in a process of its own, for the crash test to SIGKILL part-way.

Usage: `python crash_worker.py SPEC.json`, started by test_crash.py in a session of its own with
`PYHUDI_FAULT_POINT` armed (see pyhudi/faults.py). The spec names the table `path`, the operation
`op`, Hudi `options`, and for writes the batch (`seed`, `step`). Operations:

- `upsert`, `delete`, `bulk_insert`: write batch `step` (rows from `batch_rows`, the test's model);
- `overwrite`: write batch `step` with mode="overwrite" (an insert_overwrite_table replacecommit);
- `compact`, `cluster`: `pyhudi.compact` / `pyhudi.cluster` (schedule if nothing is pending, execute);
- `clean`: `pyhudi.clean` (resume pending cleans, plan and run a new one);
- `rollback`: roll back the table's failed (pending) writes, as the next writer would;
- `archive`: archive old instants (needs pyhudi.services.archival).

Spark starts only when an operation first needs it (`LazySpark`), so a kill point reached before
any Spark work (scheduling, cleaning, rolling back) costs no JVM start. On success the worker prints
`{"event": "done", ...}` and exits 0: the crash test treats that as "the kill point was never reached".
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sys
from typing import Any

SCHEMA = "id long, name string, city string, ts long, payload string"
COLUMNS = ["name", "city", "ts", "payload"]
PARTS = 3
INITIAL = 600  # keys of batch 0
NEW = 60  # fresh keys of every later upsert batch
UPDATES = 150  # existing keys an upsert batch updates
DELETES = 40  # keys a delete batch deletes
KB = 1024

Row = tuple[int, str, str, int, str]


# --------------------------------------------------------------------------- data (also the test's model)
def batch_rows(seed: int, step: int, kind: str) -> list[Row]:
    """The rows of batch `step`. Batch 0 inserts keys [0, INITIAL); an upsert batch s >= 1 inserts NEW
    fresh keys and updates UPDATES keys drawn from every key of earlier batches (deleted ones come back);
    a delete batch deletes DELETES of those keys (its rows carry the values of the delete batch); a
    bulk_insert batch only inserts the NEW fresh keys (bulk_insert does not merge with stored keys)."""
    if step == 0:
        ids = list(range(INITIAL))
    else:
        known = INITIAL + (step - 1) * NEW
        rng = random.Random(seed * 1_000_003 + step)
        if kind == "delete":
            ids = sorted(rng.sample(range(known), DELETES))
        elif kind == "bulk_insert":
            ids = list(range(known, known + NEW))
        else:
            ids = sorted(rng.sample(range(known), UPDATES)) + list(range(known, known + NEW))

    def payload(i: int) -> str:
        return hashlib.sha256(f"{seed}:{step}:{i}".encode()).hexdigest()

    return [(i, f"s{step}-{i}", f"p{i % PARTS}", step, payload(i)) for i in ids]


def apply_batch(model: dict[int, tuple[Any, ...]], seed: int, step: int, kind: str) -> dict[int, tuple[Any, ...]]:
    """The model after batch `step` committed: key -> (name, city, ts, payload)."""
    out = {} if kind == "overwrite" else dict(model)
    for row in batch_rows(seed, step, kind):
        if kind == "delete":
            out.pop(row[0], None)
        else:
            out[row[0]] = row[1:]
    return out


# PYHUDI_CRASH_TABLE_VERSION=8|9: the same kill points on tables created at a Hudi 1.x version (layout 2).
TABLE_VERSION = os.environ.get("PYHUDI_CRASH_TABLE_VERSION", "6")


def table_options(name: str, table_type: str) -> dict[str, str]:
    """Small files (so every partition has several file groups), a short lock lease (a writer killed while
    holding the table lock must not stall the next one for a minute)."""
    version = {"hoodie.write.table.version": TABLE_VERSION} if TABLE_VERSION != "6" else {}
    return {**version,
        "hoodie.table.name": name,
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.parquet.max.file.size": str(16 * KB),
        "hoodie.parquet.small.file.limit": str(8 * KB) if table_type == "COPY_ON_WRITE" else "0",
        "hoodie.copyonwrite.record.size.estimate": "120",
        "hoodie.index.bloom.num_entries": "200",
        "hoodie.write.lock.filesystem.expire": str(2 / 60),  # minutes: a 2 s lease
    }


# --------------------------------------------------------------------------- operations
class LazySpark:
    """A SparkSession created on first use."""

    def __init__(self, master: str, conf: dict[str, str]) -> None:
        self._master = master
        self._conf = conf
        self._session: Any = None

    def __getattr__(self, name: str) -> Any:
        if self._session is None:
            from pyhudi.spark_env import create_session

            self._session = create_session(self._master, app_name="pyhudi-crash-worker", conf=self._conf)
        return getattr(self._session, name)

    def stop(self) -> None:
        if self._session is not None:
            self._session.stop()


def run(spark: Any, spec: dict[str, Any]) -> Any:
    import pyhudi

    op, path, options = spec["op"], spec["path"], dict(spec["options"])
    if op in ("upsert", "delete", "bulk_insert"):
        rows = batch_rows(int(spec["seed"]), int(spec["step"]), op)
        options["hoodie.datasource.write.operation"] = op
        df = spark.createDataFrame(rows, SCHEMA, verifySchema=False)
        return pyhudi.write(df, path, options)
    if op == "overwrite":
        df = spark.createDataFrame(batch_rows(int(spec["seed"]), int(spec["step"]), op), SCHEMA, verifySchema=False)
        return pyhudi.write(df, path, options, mode="overwrite")
    if op == "compact":
        return pyhudi.compact(spark, path, options)
    if op == "cluster":
        return pyhudi.cluster(spark, path, options)
    if op == "clean":
        return [r.instant for r in pyhudi.clean(None, path, options)]
    if op == "rollback":
        from pyhudi.config.registry import Options
        from pyhudi.services.rollback import rollback_failed_writes
        from pyhudi.storage import Storage
        from pyhudi.timeline.timeline import ActiveTimeline
        from pyhudi.writer.config import lock_settings

        storage = Storage(path)  # the writer's lock settings: its short lease frees the lock it dies holding
        return [r.rollback_instant for r in rollback_failed_writes(storage, ActiveTimeline.load(storage), None,
                                                                   lock_settings(Options.parse(options)))]
    if op == "archive":
        return archive(path, options)
    raise ValueError(f"unknown operation {op!r}")


def archive(path: str, options: dict[str, str]) -> Any:
    """Archive old instants through the public entry point of the archival service."""
    import pyhudi

    entry = getattr(pyhudi, "archive", None)
    if entry is None:
        raise RuntimeError("pyhudi has no archive(); adapt crash_worker.archive to the archival service's API")
    return entry(None, path, options)


def main(spec_path: str) -> None:
    with open(spec_path) as f:
        spec = json.load(f)
    spark = LazySpark(spec.get("master", "local[2]"), spec.get("conf", {}))
    result = run(spark, spec)
    spark.stop()
    sys.stdout.write(json.dumps({"event": "done", "result": result}, default=str) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1])
