"""The `hudi` Python data source's batch reads: `spark.read.format("hudi").load(path)`.

Spark calls `DataSource.schema()`, `reader()`, `pushFilters()` and `partitions()` in Python worker processes
that its driver starts (there is no SparkSession there, classic or Connect), and `read()` in executor tasks.
So the read is pyhudi's engine-neutral one: `reader/plan.py` plans it (timeline, file-system view, partition
pruning), `reader/arrow_read.plan_job` turns the plan into units (one file slice each) plus everything a task
needs (the MergeSpec of merge-on-read slices, the row conditions), and a task loads its units with
`ArrowJob.load`: base files with pyarrow (row groups pruned by min/max statistics), slices with log files
merged by `log_merge.merge_file_slice`, the same per-slice code `pyhudi.read(spark, ...)`'s merge tasks run.
Rows go from the files to Spark as Arrow record batches, never through the driver.

`partitions()` packs units into InputPartitions as Spark packs files (`spark.sql.files.maxPartitionBytes`,
128 MB, plus an open cost of 4 MB per file, largest first): one slice per task for large slices, small slices
grouped. The job itself travels inside each InputPartition: Spark serializes the read function before it
calls `partitions()`, so what `partitions()` computes is not seen by `read()` otherwise.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSourceReader, Filter, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema

from pyhudi.config import keys as K
from pyhudi.config.registry import Options
from pyhudi.engine.spark import datasource_filters
from pyhudi.engine.spark.schema import avro_to_spark
from pyhudi.errors import InvalidConfigError
from pyhudi.io import schema as S
from pyhudi.model.table_config import TableConfig, load_table_config
from pyhudi.reader.arrow_read import ArrowJob, Unit, plan_job
from pyhudi.reader.plan import PlannedRead, as_of_instant, meta_names, plan_read, schema_as_of
from pyhudi.storage import Storage
from pyhudi.storage.config import PYHUDI_KEYS
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.partitions import Condition

STORAGE_PREFIX = "storage."  # .option("storage.aws_endpoint", ...): pyhudi.read's storage_options
MAX_PARTITION_BYTES = "pyhudi.datasource.max.partition.bytes"  # Spark's spark.sql.files.maxPartitionBytes
OPEN_COST_BYTES = "pyhudi.datasource.open.cost.bytes"  # Spark's spark.sql.files.openCostInBytes
# Spark (4.1-4.3) resolves a catalog table whose provider is `hudi` (spark.sql.sources.provider, as meta sync
# registers it) to this source, but hands it no options at all: neither the table's location nor its
# `path` serde property. Nothing here can tell which table is meant.
CATALOG_TABLE_HINT = (
    "the hudi data source was given no options, which is how Spark hands it a catalog table (spark.table, "
    "SELECT ... FROM db.t): without the table's location. Read catalog tables with "
    "pyhudi.spark.table(spark, 'db.t') (and .createOrReplaceTempView(...) for SQL), or "
    "spark.read.format('hudi').load(path)")
_DEFAULT_MAX_BYTES = 128 << 20
_DEFAULT_OPEN_COST = 4 << 20
_OWN = (MAX_PARTITION_BYTES, OPEN_COST_BYTES, "path")


@dataclasses.dataclass(frozen=True)
class SourceOptions:
    """A data source's options split the way pyhudi's functions take them."""

    path: str
    hudi: dict[str, str]  # Hudi's option keys (read or write)
    storage: dict[str, str]  # pyhudi.read / pyhudi.write's storage_options
    own: dict[str, str]  # the data source's own keys (MAX_PARTITION_BYTES, ...)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        """Spark hands options with lower-cased keys (Hudi's keys are lower case); `path` is load(path)'s."""
        path = options.get("path")
        if not path and not options:
            raise InvalidConfigError(CATALOG_TABLE_HINT)
        if not path:
            raise InvalidConfigError("the hudi data source needs the table's base path: .load(path) or "
                                     f".option('path', path) (options given: {sorted(options)})")
        hudi, storage, own = {}, {}, {}
        for key, value in options.items():
            if key.startswith(STORAGE_PREFIX):
                storage[key[len(STORAGE_PREFIX):]] = value
            elif key in PYHUDI_KEYS:
                storage[key] = value
            elif key in _OWN:
                own[key] = value
            else:
                hudi[key] = value
        return cls(str(path), hudi, storage, own)

    def storage_handle(self) -> Storage:
        return Storage(self.path, storage_options=self.storage)

    def int_option(self, key: str, default: int) -> int:
        text = self.own.get(key)
        try:
            return int(text) if text is not None else default
        except ValueError:
            raise InvalidConfigError(f"{key}={text!r} must be a number of bytes") from None


def table_schema(opts: SourceOptions) -> T.StructType:
    """The schema Spark reads the table with, as `pyhudi.read(spark, path, options)` returns it: meta columns
    first (dropped for tables written without them), then the table's columns as of the query's instant.
    A snapshot or time travel needs only the timeline (no listing); an incremental query is planned, since
    the instant its schema is taken at depends on what the cleaner left."""
    hudi = Options.parse(opts.hudi)
    storage = opts.storage_handle()
    config = load_table_config(storage)
    if hudi.get(K.QUERY_TYPE) == "incremental":
        planned = plan_read(opts.path, opts.hudi, None, opts.storage)
        assert planned.plan.avro is not None
        return spark_schema(planned.plan.avro, planned.config)
    timeline = ActiveTimeline.load(storage)
    at = as_of_instant(hudi)
    avro = schema_as_of(timeline, config, at) or schema_as_of(timeline, config, None) or \
        {"type": "record", "name": f"{config.name}_record", "fields": []}
    return spark_schema(avro, config)


def spark_schema(avro: dict[str, Any], config: TableConfig) -> T.StructType:
    full = avro_to_spark(S.with_meta_fields(avro))
    if config.populate_meta_fields:
        return full
    meta = set(meta_names())
    return T.StructType([f for f in full.fields if f.name not in meta])


class SliceGroup(InputPartition):
    """One read task: file slices and the job that reads them (see the module docstring)."""

    def __init__(self, job: ArrowJob, units: list[Unit]) -> None:
        super().__init__(len(units))
        self.job = job
        self.units = units


class HudiReader(DataSourceReader):
    """Plans in `partitions()` (with the conditions `pushFilters` kept), reads in `read()`."""

    def __init__(self, opts: SourceOptions, schema: T.StructType) -> None:
        self.opts = opts
        self.schema = schema
        self.conditions: list[Condition] = []

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        """Keep the filters pyhudi applies exactly (they prune partitions and row groups and filter the
        rows); return the rest, which Spark applies after the scan."""
        conditions, rest = datasource_filters.split(filters, self.schema)
        self.conditions.extend(conditions)
        return iter(rest)

    def partitions(self) -> list[InputPartition]:
        filters = [(c.column, c.op, c.value) for c in self.conditions] or None
        planned = plan_read(self.opts.path, self.opts.hudi, filters, self.opts.storage)
        return list(group_partitions(self.opts, planned, self.schema))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, SliceGroup):
            return iter(())
        return read_units(partition.job, partition.units, self.schema)


def group_partitions(opts: SourceOptions, planned: PlannedRead, schema: T.StructType) -> Iterator[SliceGroup]:
    """The planned read's units packed into read tasks, each carrying the (unit-less) job. A column of
    `schema` the plan's schema lacks (a stream's schema is the table's latest) is read as nulls."""
    known = set(planned.plan.schema.names)
    job = plan_job(planned, [n for n in schema.fieldNames() if n in known])
    if job.empty or not job.units:
        return  # no partition: Spark runs one task with InputPartition(None), whose read() returns nothing
    shared = dataclasses.replace(job, units=[])
    max_bytes = opts.int_option(MAX_PARTITION_BYTES, _DEFAULT_MAX_BYTES)
    open_cost = opts.int_option(OPEN_COST_BYTES, _DEFAULT_OPEN_COST)
    for group in pack(job.units, unit_sizes(planned, job.units), max_bytes, open_cost):
        yield SliceGroup(shared, group)


def read_units(job: ArrowJob, units: list[Unit], schema: T.StructType) -> Iterator[pa.RecordBatch]:
    """The units' rows as record batches of exactly the Arrow schema Spark expects for `schema`."""
    target = to_arrow_schema(schema, timezone="UTC")
    for unit in units:
        table = job.load(unit)
        if table.num_rows:
            yield from conform(table, target).to_batches(max_chunksize=10_000)


def conform(table: pa.Table, target: pa.Schema) -> pa.Table:
    """`table` cast to Spark's Arrow schema (timestamps in UTC microseconds, Spark's map and list layouts,
    its nullability); a non-nullable column is declared nullable in the data when Arrow cannot prove it;
    a column the table lacks is nulls."""
    for f in target:
        if f.name not in table.column_names:
            table = table.append_column(f.name, pa.nulls(table.num_rows, f.type))
    table = table.select(target.names)
    try:
        return table.cast(target)
    except (pa.ArrowInvalid, ValueError):
        loose = pa.schema([f.with_nullable(True) for f in target])
        cast = table.cast(loose)
        return pa.Table.from_arrays(cast.columns, schema=target)


def unit_sizes(planned: PlannedRead, units: list[Unit]) -> list[int]:
    """Bytes on storage of each unit's files, from the listing the plan already made (no request)."""
    view = planned.view
    sizes: dict[str, dict[str, int]] = {}

    def size(path: str) -> int:
        partition, _, name = path.rpartition("/")
        if partition not in sizes:
            sizes[partition] = {i.name: i.size for i in view.listing(partition)}
        return sizes[partition].get(name, 0)

    return [sum(size(p) for p in ((u.base,) if u.base else ()) + u.logs) for u in units]


def pack(units: list[Unit], sizes: list[int], max_bytes: int, open_cost: int) -> list[list[Unit]]:
    """Spark's FilePartition packing: largest first, a new group when the next one would pass `max_bytes`."""
    order = sorted(range(len(units)), key=lambda i: -sizes[i])
    groups: list[list[Unit]] = []
    current: list[Unit] = []
    used = 0
    for i in order:
        cost = sizes[i] + open_cost
        if current and used + cost > max_bytes:
            groups.append(current)
            current, used = [], 0
        current.append(units[i])
        used += cost
    if current:
        groups.append(current)
    return groups


__all__ = ["HudiReader", "SliceGroup", "SourceOptions", "conform", "group_partitions", "pack", "read_units",
           "spark_schema",
           "table_schema", "unit_sizes"]
