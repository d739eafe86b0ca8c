"""Spark task bodies of the write: they take their identity (partition, stage, attempt) from Spark's
TaskContext and hand the engine-neutral writers (single_task, bulk_insert, dispatch) their rows."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
from pyspark import TaskContext

from pyhudi.model.file_names import write_token
from pyhudi.writer.bulk_insert import write_tables
from pyhudi.writer.direct_input import DirectInput, InputUnit
from pyhudi.writer.dispatch import run_handles
from pyhudi.writer.handles import SALT, STAT_SCHEMA, HandleContext
from pyhudi.writer.single_task import OUTPUT_SCHEMA, TableLayout, bad_keys_refusal, write_batch

_OUT = pa.schema([("kind", pa.string()), ("payload", pa.string())])
__all__ = ["OUTPUT_SCHEMA", "run_bucket_task", "run_bulk_task", "run_direct_bulk_task", "run_direct_single_task",
           "run_single_task"]


def run_bucket_task(ctx: HandleContext, task_of: Sequence[int], batches: Iterator[pa.RecordBatch]
                    ) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: gather this task's rows, tell its buckets apart by their salts (`ctx.salts[b]` is
    bucket b's), run their handles (`run_handles`: markers ahead in one file, update buckets merged in
    batches), emit write stats as JSON rows."""
    tc = TaskContext.get()
    assert tc is not None
    pid = tc.partitionId()
    collected = [b for b in batches if b.num_rows]
    if not collected:
        return
    records = pa.Table.from_batches(collected)
    bucket_of_salt = {salt: b for b, salt in enumerate(ctx.salts)}
    salts = records.column(SALT).to_numpy()
    found = np.unique(salts)
    wrong = [int(s) for s in found if s not in bucket_of_salt or task_of[bucket_of_salt[s]] != pid]
    if wrong:
        raise RuntimeError(f"task {pid} received rows of salts {wrong[:10]}, which belong to no bucket of its own")
    order = np.argsort(salts, kind="stable")
    bounds = np.searchsorted(salts[order], found)
    work = [(ctx.buckets[bucket_of_salt[int(s)]], rows)
            for s, rows in zip(found, np.split(order, bounds[1:]))]
    work.sort(key=lambda item: item[0].number)
    stage, attempt = tc.stageId(), tc.taskAttemptId()
    stats = run_handles(ctx, ctx.storage, work, records, lambda number: write_token(number, stage, attempt))
    rows = [json.dumps(s.to_json()) for s in stats]
    yield pa.RecordBatch.from_pydict({"stat": rows}, schema=STAT_SCHEMA)


def run_single_task(ctx: HandleContext, layout: TableLayout, batches: Iterator[pa.RecordBatch]
                    ) -> Iterator[pa.RecordBatch]:
    """mapInArrow body over the whole batch (one input partition): emits ("stat", json) rows, or one
    ("error", json) row and nothing written."""
    collected = [b for b in batches if b.num_rows]
    if not collected:
        return
    rows = _outcome_rows(ctx, layout, pa.Table.from_batches(collected))
    yield pa.RecordBatch.from_pydict({"kind": [k for k, _ in rows], "payload": [p for _, p in rows]}, schema=_OUT)


def run_direct_single_task(ctx: HandleContext, layout: TableLayout, direct: DirectInput,
                           units: Iterable[list[InputUnit]]) -> Iterator[tuple[str, str]]:
    """Task body (runtime.run_tasks): the same, over input files the task reads itself
    (writer/direct_input.py)."""
    tables = [t for group in units for t in direct.read_prepared(group) if t.num_rows]
    if tables:
        yield from _outcome_rows(ctx, layout, pa.concat_tables(tables))


def _outcome_rows(ctx: HandleContext, layout: TableLayout, records: pa.Table) -> list[tuple[str, str]]:
    outcome = write_batch(ctx, layout, ctx.storage, records, _task_token)
    return [("error", json.dumps(o)) if isinstance(o, dict) else ("stat", json.dumps(o.to_json()))
            for o in outcome]


def _task_token(bucket_number: int) -> str:
    from pyspark import TaskContext

    tc = TaskContext.get()
    assert tc is not None
    return write_token(bucket_number, tc.stageId(), tc.taskAttemptId())


def run_bulk_task(ctx: HandleContext, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body over Spark's rows: write them, emit write stats as JSON rows."""
    pid, token = _task_identity()
    tables = (pa.Table.from_batches([b]) for b in batches if b.num_rows)
    stats = write_tables(ctx, tables, pid, token)
    if stats:
        yield pa.RecordBatch.from_pydict({"stat": stats}, schema=pa.schema([("stat", pa.string())]))


def run_direct_bulk_task(ctx: HandleContext, direct: DirectInput, units: list[InputUnit]
                         ) -> Iterator[tuple[str, str]]:
    """Task body (runtime.run_tasks) over input files the task reads itself: ("stat", json) rows, or one ("error", json)
    row when a record has no key (rows before it may be written: the driver rolls the instant back)."""
    pid, token = _task_identity()
    refused: list[dict[str, object]] = []

    def checked() -> Iterator[pa.Table]:
        for table in direct.read_prepared(units):
            refusal = bad_keys_refusal(table)
            if refusal is not None:
                refused.append(refusal)
                return
            yield table

    stats = write_tables(ctx, checked(), pid, token)
    if refused:
        yield "error", json.dumps(refused[0])
        return
    yield from (("stat", s) for s in stats)


def _task_identity() -> tuple[int, str]:
    from pyspark import TaskContext

    tc = TaskContext.get()
    assert tc is not None
    pid = tc.partitionId()
    return pid, write_token(pid, tc.stageId(), tc.taskAttemptId())


