"""Turning a user's DataFrame into records ready to tag and route.

All checks that can be made without reading data happen here, on the driver,
before anything is written: key/partition/precombine columns exist, and the
batch's schema can be written into the table's (a new nullable column is
fine, a safe widening is fine, anything else is a SchemaMismatchError).
The per-row work (keys, partition paths, delete flags, casts) is expressed as
Spark columns so it runs in the JVM.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import AtomicType, StructField, StructType

from pyhudi.config import keys as K
from pyhudi.errors import InvalidRecordError
from pyhudi.io import schema as S
from pyhudi.keygen.keygen import PARTITION_COL, RECORD_KEY_COL, KeyGenerator, field_type
from pyhudi.model.table_config import TableConfig
from pyhudi.timeline.instant import WRITE_ACTIONS, Action
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.writer.config import WriteConfig
from pyhudi.writer.operation import WriteOperation

DELETE_FLAG = "_pyhudi_delete"
BAD_KEY = "_pyhudi_bad_key"
IS_DELETED_FIELD = "_hoodie_is_deleted"
META_COLUMNS = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
                "_hoodie_file_name", "_hoodie_operation")


@dataclass
class PreparedBatch:
    """The batch's target schema, checked up front, and its keyed records as a Spark DataFrame, built on
    first use: a write whose executors read the input files themselves (direct_input.py) never needs
    them, and building the columns costs dozens of JVM calls per batch."""

    source: DataFrame
    avro_schema: dict[str, Any]
    schema_json: str
    columns: Callable[[], list[Column]]

    @cached_property
    def df(self) -> DataFrame:
        return self.source.select(*self.columns())


def table_schema(timeline: ActiveTimeline, config: TableConfig, as_of: str | None = None) -> dict[str, Any] | None:
    """The table's Avro schema (no meta fields): newest completed write's, else the create schema."""
    writes = timeline.completed().actions(*WRITE_ACTIONS, Action.COMMIT)
    for inst in reversed(writes.instants):
        if as_of is not None and inst.timestamp > as_of:
            continue
        meta = timeline.commit_metadata(inst)
        if meta.schema:
            return S.without_meta_fields(S.from_json(meta.schema))
    if config.create_schema:
        return S.without_meta_fields(S.from_json(config.create_schema))
    return None


def _incoming_struct(df: DataFrame) -> StructType:
    return StructType([f for f in df.schema.fields if f.name not in META_COLUMNS])


def _check_precombine(config: WriteConfig, schema: StructType) -> None:
    field = config.precombine_field
    if field and config.operation is not WriteOperation.DELETE and field_type(schema, field) is None:
        raise InvalidRecordError(
            f"precombine field {field!r} is not a column of the batch (columns: {', '.join(schema.fieldNames())}); "
            "add it or fix hoodie.datasource.write.precombine.field")


_COMBINING_INSERTS = (WriteOperation.INSERT, WriteOperation.BULK_INSERT, WriteOperation.INSERT_OVERWRITE,
                      WriteOperation.INSERT_OVERWRITE_TABLE)


def ordering_required(config: WriteConfig) -> bool:
    """Whether every record of this write needs a non-null precombine (ordering) value.

    Hudi 0.14's datasource writer reads each record's ordering value when it combines records: always for
    an upsert, for inserts only with hoodie.combine.before.insert; its payload (BaseAvroPayload) then
    refuses a null one ("Ordering value is null for record"). A null would otherwise decide which record
    wins arbitrarily, or overwrite a stored record's real value. Deletes carry keys only.
    """
    if not config.precombine_field:
        return False
    op = config.operation
    return op is WriteOperation.UPSERT or (op in _COMBINING_INSERTS and config.combine_before_write)


def null_ordering_flag(config: WriteConfig) -> Column:
    """Spark column: the record's precombine value is null (False when the write needs none)."""
    if not ordering_required(config):
        return F.lit(False)
    return F.col(str(config.precombine_field)).isNull()


def null_ordering_error(config: WriteConfig, count: int) -> InvalidRecordError:
    field = config.precombine_field
    return InvalidRecordError(
        f"{count} record(s) have a null precombine value (field {field!r}, hoodie.datasource.write.precombine"
        f".field); {config.operation.value} orders records by it, so Hudi refuses a null one (\"Ordering value "
        "is null for record\"). Fill the field (for example with coalesce) or filter those records before "
        "writing. Nothing was written.")


def _conformed(df: DataFrame, target: StructType) -> list[Column]:
    """Select the target schema from the batch: casts for widened atomic types, nulls for missing columns."""
    if [(f.name, f.dataType) for f in df.schema.fields] == [(f.name, f.dataType) for f in target.fields]:
        return [F.col("*")]  # the batch is already in the table's layout: one JVM call, not one per column
    have = {f.name: f for f in df.schema.fields}
    cols = []
    for f in target.fields:
        src = have.get(f.name)
        if src is None:
            cols.append(F.lit(None).cast(f.dataType).alias(f.name))
        elif src.dataType != f.dataType and isinstance(f.dataType, AtomicType):
            cols.append(F.col(f"`{f.name}`").cast(f.dataType).alias(f.name))
        else:
            cols.append(F.col(f"`{f.name}`"))
    return cols


def writer_schema(config: WriteConfig, table_avro: dict[str, Any] | None, incoming_avro: dict[str, Any]) -> dict[str, Any]:
    """The schema the batch is written with (Hudi's deduceWriterSchema and its three options); raises
    SchemaMismatchError before anything is written when the batch cannot be written into the table."""
    if table_avro is None:
        return incoming_avro
    return S.evolve(table_avro, incoming_avro, reconcile=config.reconcile_schema,
                    set_null_for_missing=bool(config.options.get(K.SET_NULL_FOR_MISSING_COLUMNS)),
                    allow_column_drop=bool(config.options.get(K.SCHEMA_ALLOW_COLUMN_DROP)))


def prepare_batch(df: DataFrame, config: WriteConfig, table_avro: dict[str, Any] | None) -> PreparedBatch:
    keygen = KeyGenerator.for_table(config.table)
    incoming = _incoming_struct(df)
    op = config.operation
    need_partition = not config.index.is_global or op is not WriteOperation.DELETE
    keygen.check_columns(incoming, need_partition=need_partition)
    keygen.check_types(incoming, need_partition=need_partition)
    _check_precombine(config, incoming)
    if op is WriteOperation.DELETE:
        target_avro = S.spark_to_avro(incoming, config.table.name) if table_avro is None else table_avro
        target = StructType([])
    else:
        incoming_avro = S.spark_to_avro(incoming, config.table.name)
        target_avro = writer_schema(config, table_avro, incoming_avro)
        target = S.avro_to_spark(target_avro)

    def columns() -> list[Column]:
        internal = {
            RECORD_KEY_COL: keygen.record_key(incoming),
            PARTITION_COL: keygen.partition_path(incoming),
            DELETE_FLAG: _delete_flag(df, op),
            BAD_KEY: keygen.bad_key(incoming),
        }
        data_cols = _conformed(df, target) if target.fields else []
        return [*data_cols, *[c.alias(name) for name, c in internal.items()]]

    return PreparedBatch(df, target_avro, json.dumps(target_avro), columns)


def _delete_flag(df: DataFrame, op: WriteOperation) -> Column:
    if op is WriteOperation.DELETE:
        return F.lit(True)
    if IS_DELETED_FIELD in df.columns:
        return F.coalesce(F.col(IS_DELETED_FIELD).cast("boolean"), F.lit(False))
    return F.lit(False)


def data_struct(avro: dict[str, Any]) -> StructType:
    return S.avro_to_spark(avro)


def struct_field_names(struct: StructType) -> list[str]:
    return [f.name for f in struct.fields if isinstance(f, StructField)]
