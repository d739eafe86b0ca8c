"""Arrow data ready to write in-process: the input coerced to Arrow batches, checked, and prepared.

The in-process twin of spark_prepare.py. Accepted inputs: a `pyarrow.Table` or `RecordBatch`, a
`pyarrow.RecordBatchReader`, any object with `__arrow_c_stream__` (polars DataFrames, DuckDB relations)
and a pandas DataFrame (`pa.Table.from_pandas(df, preserve_index=False)`). Incoming `_hoodie_*` meta
columns are dropped; key, partition and precombine columns and the key types are checked from the Arrow
schema; the Avro schema is what Spark's writer would derive for the same data (`io/schema.arrow_to_avro`),
then evolved against the table's (`prepare.writer_schema`). Each batch becomes the layout
`direct_input.prepare_table` gives every engine: data columns conformed to the writer schema, record key,
partition path, delete flag, bad-key flag. Nothing here imports pyspark.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pyhudi.errors import HudiError
from pyhudi.io import schema as S
from pyhudi.keygen.arrow_keys import ArrowKeys, check_fields, column_at, field_type
from pyhudi.keygen.spec import KeySpec
from pyhudi.writer.config import WriteConfig
from pyhudi.writer.direct_input import prepare_table
from pyhudi.writer.operation import WriteOperation
from pyhudi.writer.prepare import (
    BAD_KEY,
    META_COLUMNS,
    null_ordering_error,
    ordering_required,
    precombine_missing,
    writer_schema,
)

ACCEPTED = ("pyspark.sql.DataFrame, pyarrow.Table, pyarrow.RecordBatch, pyarrow.RecordBatchReader, "
            "pandas.DataFrame, or an object with __arrow_c_stream__ (polars DataFrame, DuckDB relation)")


class UnsupportedInputError(HudiError):
    """`pyhudi.write` was given data of a type it cannot write."""


@dataclass
class ArrowSource:
    """The input as a schema and a batch iterator; `table` is set when the whole input is in memory."""

    schema: pa.Schema
    batches: Iterator[pa.RecordBatch]
    table: pa.Table | None = None


def arrow_source(data: Any) -> ArrowSource:
    """Coerce `data` to Arrow without copying what is Arrow already (a stream stays a stream)."""
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if isinstance(data, pa.Table):
        return ArrowSource(data.schema, iter(data.to_batches()), data)
    if isinstance(data, pa.RecordBatchReader):
        return ArrowSource(data.schema, iter(data))
    if type(data).__module__.split(".")[0] == "pandas" and hasattr(data, "columns"):
        table = pa.Table.from_pandas(data, preserve_index=False)
        return ArrowSource(table.schema, iter(table.to_batches()), table)
    if hasattr(data, "__arrow_c_stream__"):
        reader = pa.RecordBatchReader.from_stream(data)
        return ArrowSource(reader.schema, iter(reader))
    raise UnsupportedInputError(
        f"pyhudi.write cannot write data of type {type(data).__module__}.{type(data).__qualname__}; pass a "
        f"{ACCEPTED}")


@dataclass
class ArrowBatchSpec:
    """What every batch of one write is prepared with (checked once, up front)."""

    avro_schema: dict[str, Any]
    target: pa.Schema
    keys: ArrowKeys
    delete_all: bool
    precombine: str | None  # checked for nulls when the write orders records by it

    def prepare(self, batch: pa.RecordBatch | pa.Table) -> pa.Table:
        raw = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        return prepare_table(self._typed_nulls(normalize(drop_meta(raw))), self.target, self.keys, self.delete_all)

    def _typed_nulls(self, raw: pa.Table) -> pa.Table:
        """Columns of Arrow's null type (pandas gives a column of only None that type) as nulls of the
        table's type for the column (see `typed_null_columns`)."""
        for i, field in enumerate(raw.schema):
            if pa.types.is_null(field.type) and field.name in self.target.names:
                typ = self.target.field(field.name).type
                raw = raw.set_column(i, pa.field(field.name, typ), pa.nulls(raw.num_rows, typ))
        return raw

    def null_ordering(self, prepared_raw: pa.Table) -> int:
        """Records without a precombine value where the write needs one."""
        if not self.precombine:
            return 0
        return int(column_at(prepared_raw, self.precombine).null_count)


def drop_meta(table: pa.Table) -> pa.Table:
    drop = [c for c in table.column_names if c in META_COLUMNS]
    return table.drop_columns(drop) if drop else table


def incoming_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([f.with_type(normal_type(f.type)) for f in schema if f.name not in META_COLUMNS])


def normal_type(typ: pa.DataType) -> pa.DataType:
    """A top-level type as Spark would read the value: dictionaries decoded, string/binary views as plain
    strings/binaries, timestamps of any unit in microseconds (a zone normalized to UTC), date64 as date32."""
    t = pa.types
    if t.is_dictionary(typ):
        return normal_type(typ.value_type)
    if getattr(t, "is_string_view", lambda _: False)(typ) or t.is_large_string(typ):
        return pa.string()
    if getattr(t, "is_binary_view", lambda _: False)(typ) or t.is_large_binary(typ):
        return pa.binary()
    if t.is_timestamp(typ) and (typ.unit != "us" or typ.tz not in (None, "UTC")):
        return pa.timestamp("us", tz=None if typ.tz is None else "UTC")
    if t.is_date64(typ):
        return pa.date32()
    return typ


def normalize(table: pa.Table) -> pa.Table:
    """The table's top-level columns in their `normal_type` (timestamps truncate to microseconds)."""
    changed = False
    cols = []
    for field, col in zip(table.schema, table.columns):
        typ = normal_type(field.type)
        if typ != field.type:
            col, changed = col.cast(typ, safe=not pa.types.is_timestamp(typ)), True
        cols.append(col)
    return pa.table(cols, names=table.column_names) if changed else table


def prepare_spec(schema: pa.Schema, config: WriteConfig, table_avro: dict[str, Any] | None) -> ArrowBatchSpec:
    """Check the batch's schema and derive its writer schema; raises before anything is written."""
    keygen = KeySpec.for_table(config.table)
    incoming = typed_null_columns(incoming_schema(schema), table_avro)
    op = config.operation
    need_partition = not config.index.is_global or op is not WriteOperation.DELETE
    check_fields(keygen, incoming, need_partition=need_partition)
    if config.precombine_field and field_type(incoming, config.precombine_field) is None:
        precombine_missing(config, incoming.names)
    if op is WriteOperation.DELETE:
        avro = S.arrow_to_avro(incoming, config.table.name) if table_avro is None else table_avro
        target = pa.schema([])
    else:
        avro = writer_schema(config, table_avro, S.arrow_to_avro(incoming, config.table.name))
        target = S.avro_to_arrow(avro)
    if not need_partition and keygen.is_partitioned and any(
            field_type(incoming, f) is None for f in keygen.partition_fields):
        keygen = KeySpec(keygen.record_key_fields, (), keygen.keygen_class, False, False)  # the index finds it
    precombine = config.precombine_field if ordering_required(config) else None
    return ArrowBatchSpec(avro, target, ArrowKeys(keygen, incoming), op is WriteOperation.DELETE, precombine)


def typed_null_columns(incoming: pa.Schema, table_avro: dict[str, Any] | None) -> pa.Schema:
    """A column holding only nulls has no type in Arrow (pandas gives a column of only None that type). Where
    the table already has the column, it takes the table's type, so the batch writes nulls of that type
    (Spark would refuse the NullType column outright: a deliberate difference, since a pandas batch
    easily has a column that is None throughout). A new column still needs a type: arrow_to_avro refuses
    it, naming the column."""
    if table_avro is None or not any(pa.types.is_null(f.type) for f in incoming):
        return incoming
    table_types = S.avro_to_arrow(table_avro)
    return pa.schema([f.with_type(table_types.field(f.name).type)
                      if pa.types.is_null(f.type) and f.name in table_types.names else f for f in incoming])


def bad_key_count(prepared: pa.Table) -> int:
    return int(pc.sum(prepared.column(BAD_KEY).cast(pa.int64())).as_py() or 0)


def checked_batches(spec: ArrowBatchSpec, config: WriteConfig, batches: Iterable[pa.RecordBatch],
                    bad_keys: Callable[[int], HudiError],
                    refuse: Callable[[HudiError], BaseException] = lambda exc: exc) -> Iterator[pa.Table]:
    """Each non-empty batch prepared (keys, partition path, the writer schema); a null or empty key
    (`bad_keys(count)`) or a null required ordering value refuses the write, raised as `refuse(error)`
    (the in-process streamed insert withdraws its instant; a data-source task fails its job)."""
    for batch in batches:
        if not batch.num_rows:
            continue
        prepared = spec.prepare(batch)
        bad = bad_key_count(prepared)
        if bad:
            raise refuse(bad_keys(bad))
        missing = spec.null_ordering(prepared)
        if missing:
            raise refuse(null_ordering_error(config, missing))
        yield prepared.drop_columns([BAD_KEY])
