"""Reads without Spark: a planned read (`reader/plan.py`) loaded in-process into Arrow.

Same plan, same options and same rows as the Spark loader (`engine/spark/read.py`), so
`pyhudi.read(path, ...)` equals `pyhudi.read(spark, path, ...)` as a set of rows. A unit of work is
one file slice (partition, file id): a base file alone is read with `pyarrow.parquet`, reading only the
columns the query needs, and skipping the row groups whose statistics exclude a filter that parquet
orders exactly as Spark does (`arrow_filter.pushdown` / `row_groups`); a slice with log files is merged by
`log_merge.merge_file_slice` with the plan's MergeSpec, narrowed to the columns the query and the merge
need (meta fields, key and ordering fields). Every file is conformed to the query schema (schema
evolution: missing columns null, widened types cast), then every filter is applied to the rows with
Spark's semantics, then the projection. Units run on the in-process engine's thread pool
(`hoodie.pyhudi.engine.local.parallelism`); results keep partition, then file id, order.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pyhudi.config import keys as K
from pyhudi.engine.base import TaskInfo
from pyhudi.engine.local import LocalEngine
from pyhudi.errors import InvalidConfigError
from pyhudi.io.lance_file import is_lance_file, read_lance_base_file
from pyhudi.io.schema import conform_table
from pyhudi.model.file_names import parse_base_file
from pyhudi.reader import arrow_filter
from pyhudi.reader.log_merge import MergeSpec, merge_file_slice
from pyhudi.reader.plan import COMMIT_TIME, PlannedRead, meta_names, plan_read, planned_merge_spec
from pyhudi.storage import Storage
from pyhudi.view.partitions import Condition

_MAX_CHUNK = 32  # units per task at most


@dataclass(frozen=True)
class Unit:
    """One file slice to read: a base file, log files, or both."""

    partition: str
    file_id: str
    base: str | None
    logs: tuple[str, ...] = ()


@dataclass(frozen=True)
class ArrowJob:
    """Everything a task needs to turn a unit into the query's rows (no view, no timeline)."""

    storage: Storage
    units: list[Unit]
    read_schema: pa.Schema  # the columns merged slices read and conform (query + filter + merge columns)
    output: pa.Schema  # the columns returned
    conditions: tuple[Condition, ...]  # every row filter: the user's and the incremental range
    spec: MergeSpec | None  # merge-on-read slices: how logs merge (target narrowed like read_schema)
    empty: bool = False  # an incremental range with no commits: nothing to read
    # The columns a lone base file reads (query + filter columns): none for a count, which then takes
    # the row count from the footer. None: read_schema.
    base_schema: pa.Schema | None = None
    # The filter columns' types in a file -> the conditions pushed to its row-group statistics: computed
    # once per file layout, not per file (converting the literals costs more than checking statistics).
    # Keyed by types, not by the schema: a file's Arrow schema carries its footer metadata (the bloom
    # filter, ~400 KB), different in every file and slow to hash.
    _pushed: dict[tuple[Any, ...], list[arrow_filter.Pushed]] = field(default_factory=dict, compare=False,
                                                                      repr=False)

    def load(self, unit: Unit) -> pa.Table:
        if unit.logs or unit.base is None:
            assert self.spec is not None
            table, _ = merge_file_slice(self.storage, unit.file_id, unit.base, list(unit.logs), self.spec)
        else:
            schema = self.base_schema if self.base_schema is not None else self.read_schema
            table = _read_base(self.storage, unit.base, schema, self.pushed)
        table = arrow_filter.apply(table, self.conditions)
        return table.select(self.output.names)

    def pushed(self, physical: pa.Schema) -> list[arrow_filter.Pushed]:
        key = tuple(physical.field(i).type if (i := physical.get_field_index(c.column)) >= 0 else None
                    for c in self.conditions)
        found = self._pushed.get(key)
        if found is None:  # threads may compute it twice: same answer
            found = self._pushed[key] = arrow_filter.pushdown(physical, self.conditions)
        return found

    def combine(self, tables: Sequence[pa.Table]) -> pa.Table:
        """The units' tables as one; tables without columns keep their row counts (Arrow's concat
        would drop them: a count reads no columns)."""
        if not self.output.names:
            return rows_only(sum(t.num_rows for t in tables))
        return pa.concat_tables(tables) if tables else self.output.empty_table()


def read(path: str | os.PathLike[str], options: dict[str, Any] | None = None,
         filters: Sequence[Sequence[Any]] | None = None, columns: Sequence[str] | None = None,
         batches: bool = False, storage_options: Mapping[str, str] | None = None) -> pa.Table | pa.RecordBatchReader:
    """Read the Hudi table at `path` in-process (no Spark): a `pyarrow.Table`, or with `batches=True` a
    `pyarrow.RecordBatchReader` that reads one file slice at a time (memory follows one slice).

    `options` are Hudi's read options (query type, `as.of.instant`, incremental begin/end, ...), `filters`
    `(column, op, value)` tuples (ops `= == != < <= > >= in, not in`; partition columns prune partitions),
    `columns` the columns to return (default: all, meta columns first); `columns=[]` returns only the
    row count (`.num_rows`, Spark's `count()`): base files without logs are then counted from their
    parquet footers, decoding no column. pandas: `.to_pandas()`.
    `storage_options` configure an object store beyond the standard environment (see `pyhudi.write`).
    """
    planned = plan_read(path, options, filters, storage_options)
    job = plan_job(planned, columns)
    if batches:
        return pa.RecordBatchReader.from_batches(job.output, _batches(job))
    engine = LocalEngine(int(planned.options.get(K.LOCAL_PARALLELISM) or 0) or None)

    def task(chunk: list[Unit], _: TaskInfo) -> list[pa.Table]:
        return [job.load(unit) for unit in chunk]

    chunks = [] if job.empty else _chunks(job.units, engine.parallelism)
    return job.combine(engine.map_tasks(task, chunks, description="pyhudi read"))


def _chunks(units: list[Unit], parallelism: int) -> list[list[Unit]]:
    """Consecutive runs of units, one task each: a task per small file costs more in pool overhead than
    counting the file from its footer; about 8 tasks per worker (at most `_MAX_CHUNK` units) keep the
    workers evenly loaded when slices differ in size. Order is kept (partition, then file id)."""
    size = max(1, min(_MAX_CHUNK, len(units) // (8 * max(1, parallelism))))
    return [units[i:i + size] for i in range(0, len(units), size)]


def _batches(job: ArrowJob) -> Iterator[pa.RecordBatch]:
    if job.empty:
        return
    for unit in job.units:
        yield from job.load(unit).to_batches()


def plan_job(planned: PlannedRead, columns: Sequence[str] | None) -> ArrowJob:
    """The units, schemas and filters of a planned read."""
    plan, config = planned.plan, planned.config
    full = plan.schema
    visible = full if config.populate_meta_fields else pa.schema([f for f in full if f.name not in meta_names()])
    output = _project(visible, columns)
    conditions = list(planned.pfilter.conditions) if planned.pfilter is not None else []
    empty = False
    if planned.incremental:
        conditions = _incremental_conditions(planned) + conditions
        empty = plan.instants == ()
    for c in conditions:
        _check_filter_column(visible if c.column != COMMIT_TIME else full, c.column)
    needed = set(output.names) | {c.column.split(".")[0] for c in conditions}
    base_schema = pa.schema([f for f in full if f.name in needed])
    spec = None
    if plan.slices is not None:
        spec = planned_merge_spec(planned)
        needed |= _merge_columns(spec)
    read_schema = pa.schema([f for f in full if f.name in needed])
    if spec is not None:
        spec = dataclasses.replace(spec, target_schema=read_schema)
    return ArrowJob(planned.storage, _units(planned), read_schema, output, tuple(conditions), spec, empty,
                    base_schema)


def _project(schema: pa.Schema, columns: Sequence[str] | None) -> pa.Schema:
    if columns is None:
        return schema
    if isinstance(columns, str):
        raise InvalidConfigError(f"columns={columns!r} must be a list of column names, e.g. [{columns!r}]")
    missing = [c for c in columns if schema.get_field_index(c) < 0]
    if missing:
        raise InvalidConfigError(f"columns {missing} are not columns of the table (columns: "
                                 f"{', '.join(schema.names)}); fix columns=")
    if len(set(columns)) != len(columns):
        raise InvalidConfigError(f"columns={list(columns)!r} names a column twice; name each once")
    return pa.schema([schema.field(c) for c in columns])


def _check_filter_column(schema: pa.Schema, dotted: str) -> None:
    if schema.get_field_index(dotted.split(".")[0]) < 0:
        raise InvalidConfigError(f"filter column {dotted!r} is not a column of the table (columns: "
                                 f"{', '.join(schema.names)}); fix the filter")


def _incremental_conditions(planned: PlannedRead) -> list[Condition]:
    plan = planned.plan
    if plan.instants is not None:
        return [Condition(COMMIT_TIME, "in", list(plan.instants))] if plan.instants else []
    return [Condition(COMMIT_TIME, ">", plan.begin), Condition(COMMIT_TIME, "<=", plan.end)]


def _merge_columns(spec: MergeSpec) -> set[str]:
    """What merging a slice reads besides the query's columns: meta fields (keys, file name), the key
    and ordering fields (virtual keys, event-time ordering), the delete flag and a delete marker's column."""
    heads = {f.split(".")[0] for f in spec.record_key_fields}
    return set(meta_names()) | heads | set(spec.merge_columns)


def _units(planned: PlannedRead) -> list[Unit]:
    plan = planned.plan
    if plan.slices is not None:
        units = [Unit(s.partition, s.file_id, s.base_file.path if s.base_file else None,
                      tuple(lf.path for lf in s.log_files)) for s in plan.slices]
    else:
        units = [_base_unit(p) for p in plan.files]
    return sorted(units, key=lambda u: (u.partition, u.file_id))


def _base_unit(path: str) -> Unit:
    partition, _, name = path.rpartition("/")
    parsed = parse_base_file(name)
    return Unit(partition, parsed.file_id if parsed else name, path)


def rows_only(n: int) -> pa.Table:
    """A table of `n` rows and no columns (what a count returns)."""
    return pa.table({"_": pa.nulls(n)}).select([])


def _read_base(storage: Storage, path: str, schema: pa.Schema,
               pushed: Callable[[pa.Schema], list[arrow_filter.Pushed]]) -> pa.Table:
    """A base file's needed columns, row groups pruned by the filters `pushed` gives for its physical
    schema, conformed to `schema`; with no column needed, only its row count, from the footer (a filter
    always needs its column). A Lance base file (Hudi 1.2) has no row groups to prune: all its rows."""
    if is_lance_file(path):
        return read_lance_base_file(storage, path, schema.names, schema=schema)
    with storage.open_input_file(path) as f:
        pf = pq.ParquetFile(f)
        if not schema.names:
            return rows_only(pf.metadata.num_rows)
        physical = pf.schema_arrow
        columns = [n for n in schema.names if physical.get_field_index(n) >= 0]
        groups = arrow_filter.row_groups(pf.metadata, physical, pushed(physical))
        if len(groups) == pf.metadata.num_row_groups:
            table = pf.read(columns=columns, use_threads=storage.is_native_file(f))
        elif groups:
            table = pf.read_row_groups(groups, columns=columns, use_threads=storage.is_native_file(f))
        else:
            return schema.empty_table()  # every row group excluded: nothing to conform
    return conform_table(table, schema)


__all__ = ["ArrowJob", "Unit", "plan_job", "read", "rows_only"]
