"""Direct parquet input: executors read the input's parquet files with pyarrow, not through Spark's rows.

Landed parquet files are the most common input of a Hudi ingestion job
(`pyhudi.write(spark.read.parquet(landing), ...)`). Spark would decode them into
rows in the JVM and send every row to a Python worker as Arrow, and that
transfer costs more than writing the table. When the input DataFrame is
exactly a scan of parquet files (no filter, projection, join or partition
discovery), the driver takes the files' names and sizes (metadata only) from
Spark's plan, and the executors read the files themselves and compute keys and
partition paths with Arrow (keygen/arrow_keys.py): the same columns
`prepare.prepare_batch` builds with Spark expressions.

Used by bulk_insert (files spread over tasks as Spark would split them) and by
the one-task small-batch write. Anything else, or an input it cannot read the
way Spark would (nested or floating-point key columns, reader options that
change values, a filesystem pyarrow does not know), takes Spark's row path.
`hoodie.pyhudi.write.direct.parquet.input=false` turns it off.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from pyhudi.io.schema import conform_table
from pyhudi.keygen.arrow_keys import ArrowKeys
from pyhudi.keygen.spec import PARTITION_COL, RECORD_KEY_COL, KeySpec
from pyhudi.writer.binpack import pack_balanced, pack_sequential
from pyhudi.writer.prepare import BAD_KEY, DELETE_FLAG, IS_DELETED_FIELD


@dataclass(frozen=True)
class InputUnit:
    """One task's share of an input file: row groups `g` with `g % parts == part` (Spark splits big files)."""

    uri: str
    size: int
    part: int = 0
    parts: int = 1


@dataclass(frozen=True)
class DirectInput:
    """What executors need to read and prepare the input; small and picklable."""

    units: tuple[InputUnit, ...]
    read_types: tuple[tuple[str, pa.DataType], ...]  # input columns, as Spark's types map to Arrow
    target: pa.Schema  # the data columns a prepared batch carries (none for a delete)
    keygen: KeySpec
    schema: pa.Schema  # the input's columns as Spark reads them (the key columns' types)
    delete_all: bool
    max_split_bytes: int
    open_cost_bytes: int

    # ------------------------------------------------------------------ driver side
    def task_units(self, tasks: int | None = None) -> list[list[InputUnit]]:
        """Units grouped per task: Spark's file split rule (files packed up to the max split size,
        big files split), then at most `tasks` tasks when the write's parallelism asks for it."""
        units = [piece for f in self.units for piece in _slices(f, self.max_split_bytes)]
        units.sort(key=lambda u: -u.size)
        bins = pack_sequential(units, lambda u: u.size + self.open_cost_bytes, self.max_split_bytes)
        if tasks and tasks < len(bins):
            return pack_balanced(units, lambda u: u.size, tasks)
        return bins

    # ------------------------------------------------------------------ executor side
    def read_prepared(self, units: Sequence[InputUnit]) -> Iterator[pa.Table]:
        """The input's rows in the layout `prepare_batch` gives them: data columns, key, partition path,
        delete flag and bad-key flag; one table per row group read."""
        keys = ArrowKeys(self.keygen, self.schema)
        for unit in units:
            for raw in _read_unit(unit, dict(self.read_types)):
                yield self._prepare(raw, keys)

    def _prepare(self, raw: pa.Table, keys: ArrowKeys) -> pa.Table:
        return prepare_table(raw, self.target, keys, self.delete_all)


def prepare_table(raw: pa.Table, target: pa.Schema, keys: ArrowKeys, delete_all: bool) -> pa.Table:
    """Prepared records from input rows, as Spark's `prepare_batch` builds them: the data columns conformed
    to `target` (none for a delete), then record key, partition path, delete flag (`_hoodie_is_deleted`, or
    every row for a delete) and bad-key flag. Shared by the direct parquet input and the in-process write."""
    n = raw.num_rows
    if len(target):
        present = set(raw.column_names)
        data = conform_table(raw.select([f.name for f in target if f.name in present]), target)
        cols = {name: data.column(name) for name in data.column_names}
    else:
        cols = {}
    if IS_DELETED_FIELD in raw.column_names and not delete_all:
        delete = pc.fill_null(raw.column(IS_DELETED_FIELD).cast(pa.bool_()), False)
    else:
        delete = pa.repeat(pa.scalar(delete_all, pa.bool_()), n)
    cols[RECORD_KEY_COL] = keys.record_key(raw)
    cols[PARTITION_COL] = keys.partition_path(raw)
    cols[DELETE_FLAG] = delete
    cols[BAD_KEY] = keys.bad_key(raw)
    return pa.table(cols)


def _slices(unit: InputUnit, max_split: int) -> list[InputUnit]:
    parts = max(1, math.ceil(unit.size / max(1, max_split)))
    return [InputUnit(unit.uri, unit.size // parts, i, parts) for i in range(parts)]


def _read_unit(unit: InputUnit, types: dict[str, pa.DataType]) -> Iterator[pa.Table]:
    fs, path = pafs.FileSystem.from_uri(unit.uri)
    with fs.open_input_file(path) as f:
        pf = pq.ParquetFile(f)
        present = set(pf.schema_arrow.names)
        wanted = [n for n in types if n in present]
        for group in range(unit.part, pf.num_row_groups, unit.parts):
            yield _as_read_types(pf.read_row_group(group, columns=wanted), types)


def _as_read_types(table: pa.Table, types: dict[str, pa.DataType]) -> pa.Table:
    """Spark's view of the file's columns: its types, nulls for columns this file lacks (mergeSchema).
    Timestamps truncate to microseconds (INT96 nanoseconds), as Spark's reader does."""
    cols = []
    for name, typ in types.items():
        if name not in table.column_names:
            cols.append(pa.nulls(table.num_rows, typ))
            continue
        col = table.column(name)
        if col.type != typ:
            col = pc.cast(col, typ, safe=not pa.types.is_timestamp(typ))
        cols.append(col)
    return pa.table(cols, names=list(types))
