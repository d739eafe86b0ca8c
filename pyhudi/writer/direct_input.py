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
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import AtomicType, BooleanType, StructField, StructType, TimestampNTZType

from pyhudi.io import schema as S
from pyhudi.io.schema import conform_table
from pyhudi.keygen.arrow_keys import ArrowKeys, supports
from pyhudi.keygen.keygen import PARTITION_COL, RECORD_KEY_COL, KeyGenerator
from pyhudi.writer.binpack import pack_balanced, pack_sequential
from pyhudi.writer.config import WriteConfig
from pyhudi.writer.operation import WriteOperation
from pyhudi.writer.prepare import BAD_KEY, DELETE_FLAG, IS_DELETED_FIELD, META_COLUMNS

# Reader options that only choose which files are read (already reflected in the plan's file list).
_LISTING_OPTIONS = frozenset({"path", "paths", "mergeschema", "pathglobfilter", "recursivefilelookup",
                              "modifiedbefore", "modifiedafter", "basepath", "ignorecorruptfiles",
                              "ignoremissingfiles"})


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
    keygen: KeyGenerator
    schema: StructType  # the input's Spark schema (the key columns' types)
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
        n = raw.num_rows
        if len(self.target):
            data = conform_table(raw.select([f.name for f in self.target if f.name in raw.column_names]),
                                 self.target)
            cols = {name: data.column(name) for name in data.column_names}
        else:
            cols = {}
        if IS_DELETED_FIELD in raw.column_names and not self.delete_all:
            delete = pc.fill_null(raw.column(IS_DELETED_FIELD), False)
        else:
            delete = pa.repeat(pa.scalar(self.delete_all, pa.bool_()), n)
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


# --------------------------------------------------------------------------- detection (driver)
def detect(df: DataFrame, cfg: WriteConfig, target_avro: dict[str, Any]) -> DirectInput | None:
    """A DirectInput when `df` is a plain scan of parquet files this module reads as Spark would."""
    if not cfg.direct_parquet_input:
        return None
    incoming = StructType([f for f in df.schema.fields if f.name not in META_COLUMNS])
    keygen = KeyGenerator.for_table(cfg.table)
    if not _readable(incoming) or not supports(keygen, incoming):
        return None
    is_deleted = next((f for f in incoming.fields if f.name == IS_DELETED_FIELD), None)
    if is_deleted is not None and not isinstance(is_deleted.dataType, BooleanType):
        return None
    files = _scanned_files(df)
    if files is None:
        return None
    delete = cfg.operation is WriteOperation.DELETE
    target = pa.schema([]) if delete else _arrow_schema(S.avro_to_spark(target_avro))
    conf = df.sparkSession._jsparkSession.sessionState().conf()  # type: ignore[attr-defined]
    return DirectInput(
        units=tuple(InputUnit(uri, size) for uri, size in files),
        read_types=tuple((f.name, _arrow_type(f)) for f in incoming.fields),
        target=target, keygen=keygen, schema=incoming, delete_all=delete,
        max_split_bytes=int(conf.filesMaxPartitionBytes()), open_cost_bytes=int(conf.filesOpenCostInBytes()))


def _readable(schema: StructType) -> bool:
    """Flat schemas of atomic types (TIMESTAMP_NTZ aside): their Arrow reading equals Spark's."""
    return all(isinstance(f.dataType, AtomicType) and not isinstance(f.dataType, TimestampNTZType)
               for f in schema.fields)


def _arrow_type(field: StructField) -> pa.DataType:
    return to_arrow_type(field.dataType, timezone="UTC")


def _arrow_schema(struct: StructType) -> pa.Schema:
    return pa.schema([pa.field(f.name, _arrow_type(f), nullable=True) for f in struct.fields])


def _scanned_files(df: DataFrame) -> list[tuple[str, int]] | None:
    """(uri, size) of every file when the plan is a bare parquet relation; None otherwise."""
    try:
        plan = df._jdf.queryExecution().analyzed()
        if plan.getClass().getSimpleName() != "LogicalRelation":
            return None
        rel = plan.relation()
        if rel.getClass().getSimpleName() != "HadoopFsRelation" or \
                rel.fileFormat().getClass().getSimpleName() != "ParquetFileFormat":
            return None
        if rel.partitionSchema().length() or plan.output().size() != rel.schema().length():
            return None
        options = {k.lower() for k in str(rel.options().keys().mkString("\u0001")).split("\u0001") if k}
        if options - _LISTING_OPTIONS:
            return None
        uris = list(df._jdf.inputFiles())
    except Exception:  # Spark Connect or an unexpected plan: Spark's rows
        return None
    if not uris:
        return None
    try:
        fs, _ = pafs.FileSystem.from_uri(uris[0])
        infos = fs.get_file_info([pafs.FileSystem.from_uri(u)[1] for u in uris])
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError):
        return None  # a filesystem pyarrow cannot open from here
    if any(i.type != pafs.FileType.File for i in infos):
        return None
    return [(u, int(i.size)) for u, i in zip(uris, infos)]
