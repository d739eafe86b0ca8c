"""Turning a Spark DataFrame into records ready to tag and route (the Spark path's prepare).

All checks that can be made without reading data happen here, on the driver, before anything is
written (writer/prepare.py has the engine-neutral ones). The per-row work (keys, partition paths,
delete flags, casts) is expressed as Spark columns so it runs in the JVM.
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

from pyhudi.engine.spark.keygen import PARTITION_COL, RECORD_KEY_COL, KeyGenerator, field_type
from pyhudi.engine.spark.schema import avro_to_spark, spark_to_avro
from pyhudi.writer.config import WriteConfig
from pyhudi.writer.operation import WriteOperation
from pyhudi.writer.prepare import (
    BAD_KEY,
    DELETE_FLAG,
    IS_DELETED_FIELD,
    META_COLUMNS,
    ordering_required,
    precombine_missing,
    writer_schema,
)


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


def _incoming_struct(df: DataFrame) -> StructType:
    return StructType([f for f in df.schema.fields if f.name not in META_COLUMNS])


def _check_precombine(config: WriteConfig, schema: StructType) -> None:
    if field_type(schema, str(config.precombine_field or "")) is None:
        precombine_missing(config, schema.fieldNames())


def null_ordering_flag(config: WriteConfig) -> Column:
    """Spark column: the record's precombine value is null (False when the write needs none)."""
    if not ordering_required(config):
        return F.lit(False)
    return F.col(str(config.precombine_field)).isNull()


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


def prepare_batch(df: DataFrame, config: WriteConfig, table_avro: dict[str, Any] | None) -> PreparedBatch:
    keygen = KeyGenerator.for_table(config.table)
    incoming = _incoming_struct(df)
    op = config.operation
    need_partition = not config.index.is_global or op is not WriteOperation.DELETE
    keygen.check_columns(incoming, need_partition=need_partition)
    keygen.check_types(incoming, need_partition=need_partition)
    _check_precombine(config, incoming)
    if op is WriteOperation.DELETE:
        target_avro = spark_to_avro(incoming, config.table.name) if table_avro is None else table_avro
        target = StructType([])
    else:
        incoming_avro = spark_to_avro(incoming, config.table.name)
        target_avro = writer_schema(config, table_avro, incoming_avro)
        target = avro_to_spark(target_avro)

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
    return avro_to_spark(avro)


def struct_field_names(struct: StructType) -> list[str]:
    return [f.name for f in struct.fields if isinstance(f, StructField)]
