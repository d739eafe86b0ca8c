"""The systems the small-batches benchmark streams into, behind one interface.

Each sink takes a staged batch (a directory of parquet files written once, read by every system),
writes it its own way, can run its maintenance (compaction, clustering, OPTIMIZE) at the end, and
reports its live files and the bytes it has written so far. Timing happens in the caller; what a
sink does inside `write` is exactly what a user of that system would run per batch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import _tables  # noqa: E402 - bench/ is on sys.path
import pyarrow.parquet as pq

PHASE_INSERT = "insert"
PHASE_UPSERT = "upsert"


@dataclass
class Batch:
    index: int  # 1-based
    phase: str  # PHASE_INSERT or PHASE_UPSERT
    staged: str  # directory of parquet files
    rows: int
    updates: int
    staged_bytes: int


@dataclass
class Sink:
    """Base: a named table at `path`; subclasses implement write/maintain/live_files/bytes_written."""

    key: str
    label: str
    path: str
    uses_spark: bool = True
    maintenance_what: str = "none"
    query_source: str = "live parquet files"
    notes: list[str] = field(default_factory=list)

    def write(self, spark: Any, batch: Batch) -> None:
        raise NotImplementedError

    def after_write(self) -> dict[str, Any]:
        """Bookkeeping outside the timed region: bytes this write produced, instants it completed."""
        return {}

    def maintain(self, spark: Any) -> dict[str, Any] | None:
        return None

    def live_files(self) -> list[tuple[str, int]]:
        raise NotImplementedError

    def log_files(self) -> list[tuple[str, int]]:
        return []

    def bytes_written(self) -> dict[str, Any]:
        raise NotImplementedError


# --------------------------------------------------------------------------- plain Spark append


@dataclass
class SparkAppendSink(Sink):
    """`df.write.mode("append").parquet(path)`: the small-files baseline. Updates are appended as
    duplicate rows (plain parquet cannot update), so its keys are not compared with the others."""

    partition_by: str | None = None
    _written: int = 0

    def write(self, spark: Any, batch: Batch) -> None:
        w = spark.read.parquet(batch.staged).write.mode("append")
        if self.partition_by:
            w = w.partitionBy(self.partition_by)
        w.parquet(self.path)

    def after_write(self) -> dict[str, Any]:
        total = sum(s for _, s in self.live_files())
        new, self._written = total - self._written, total
        return {"bytes_written": new}

    def live_files(self) -> list[tuple[str, int]]:
        return _tables.parquet_files(self.path)

    def bytes_written(self) -> dict[str, Any]:
        return {"bytes": sum(s for _, s in self.live_files()), "by_kind": {"append": sum(s for _, s in self.live_files())}}


# --------------------------------------------------------------------------- pyhudi


@dataclass
class PyhudiSink(Sink):
    """`pyhudi.write` with `options`; operation `insert` in the insert phase, `upsert` after.

    `maintenance` is "compact" (MOR: one `pyhudi.compact` at the end), "cluster" (one `pyhudi.cluster`
    at the end, for what inline clustering has not reached yet) or None."""

    options: dict[str, str] = field(default_factory=dict)
    maintenance: str | None = None
    ledger: _tables.HudiWriteLedger | None = None

    def __post_init__(self) -> None:
        self.ledger = _tables.HudiWriteLedger(self.path)

    def write(self, spark: Any, batch: Batch) -> None:
        import pyhudi

        op = "insert" if batch.phase == PHASE_INSERT else "upsert"
        pyhudi.write(spark.read.parquet(batch.staged), self.path,
                     {**self.options, "hoodie.datasource.write.operation": op})

    def after_write(self) -> dict[str, Any]:
        assert self.ledger is not None
        new = self.ledger.update()
        return {"bytes_written": sum(i["bytes"] for i in new),
                "instants": [{"kind": i["kind"], "bytes": i["bytes"], "files": i["files"]} for i in new]}

    def maintain(self, spark: Any) -> dict[str, Any] | None:
        import pyhudi

        if self.maintenance == "compact":
            done = pyhudi.compact(spark, self.path, self.options)
        elif self.maintenance == "cluster":
            done = pyhudi.cluster(spark, self.path, self.options)
        else:
            return None
        out = self.after_write()
        out["instants_completed"] = len(done)
        return out

    def live_files(self) -> list[tuple[str, int]]:
        return _tables.hudi_live_files(self.path)["base"]

    def log_files(self) -> list[tuple[str, int]]:
        return _tables.hudi_live_files(self.path)["log"]

    def bytes_written(self) -> dict[str, Any]:
        assert self.ledger is not None
        self.ledger.update()
        return {"bytes": self.ledger.total(), "by_kind": self.ledger.by_kind()}


@dataclass
class ArrowPyhudiSink(PyhudiSink):
    """pyhudi with the in-process engine: the staged batch is read with pyarrow inside the timed region
    (as the delta-rs sink does) and written as an Arrow table; maintenance gets no SparkSession."""

    def write(self, spark: Any, batch: Batch) -> None:
        import pyhudi

        op = "insert" if batch.phase == PHASE_INSERT else "upsert"
        pyhudi.write(pq.read_table(batch.staged), self.path, {**self.options, "hoodie.datasource.write.operation": op})


# --------------------------------------------------------------------------- delta-rs


@dataclass
class DeltaSink(Sink):
    """delta-rs: `write_deltalake(mode="append")` for insert-only batches, `merge` (update all when
    matched, insert all when not) for batches with updates, `optimize.compact(target_size)` at the end.
    The staged batch is read with pyarrow inside the timed region (Spark's systems read it too). The
    table is created with `delta.targetFileSize` = the max file size, so merges and appends roll files
    at the same size OPTIMIZE aims for (as a user tuning file sizes would set it)."""

    partition_by: str | None = None
    target_size: int = 0
    _written: int = 0

    def write(self, spark: Any, batch: Batch) -> None:
        from deltalake import DeltaTable, write_deltalake

        data = pq.read_table(batch.staged)
        parts = [self.partition_by] if self.partition_by else None
        if batch.phase == PHASE_INSERT or not DeltaTable.is_deltatable(self.path):
            write_deltalake(self.path, data, mode="append", partition_by=parts, target_file_size=self.target_size,
                            configuration={"delta.targetFileSize": str(self.target_size)})
            return
        (DeltaTable(self.path).merge(data, predicate="t.uuid = s.uuid", source_alias="s", target_alias="t")
         .when_matched_update_all().when_not_matched_insert_all().execute())

    def after_write(self) -> dict[str, Any]:
        total = _tables.delta_bytes_written(self.path)["bytes"]
        new, self._written = total - self._written, total
        return {"bytes_written": new}

    def maintain(self, spark: Any) -> dict[str, Any] | None:
        from deltalake import DeltaTable

        metrics = DeltaTable(self.path).optimize.compact(target_size=self.target_size)
        out = self.after_write()
        out["metrics"] = {k: v for k, v in metrics.items() if isinstance(v, (int, float, str))}
        return out

    def live_files(self) -> list[tuple[str, int]]:
        return _tables.delta_live_files(self.path)

    def bytes_written(self) -> dict[str, Any]:
        d = _tables.delta_bytes_written(self.path)
        return {"bytes": d["bytes"], "by_kind": d["by_operation"]}
