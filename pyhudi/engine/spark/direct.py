"""Direct parquet input, the Spark side: is a DataFrame a plain scan of parquet files pyarrow reads as Spark
would? If so, `detect` takes the files' names and sizes from Spark's plan (metadata only); the executors
then read and prepare them with writer/direct_input.py."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import AtomicType, BooleanType, StructField, StructType, TimestampNTZType

from pyhudi.engine.spark.keygen import KeyGenerator
from pyhudi.engine.spark.runtime import conf_bytes, is_connect
from pyhudi.engine.spark.schema import avro_to_spark
from pyhudi.keygen.arrow_keys import supports
from pyhudi.writer.config import WriteConfig
from pyhudi.writer.direct_input import DirectInput, InputUnit
from pyhudi.writer.operation import WriteOperation
from pyhudi.writer.prepare import IS_DELETED_FIELD, META_COLUMNS

# Reader options that only choose which files are read (already reflected in the plan's file list).
_LISTING_OPTIONS = frozenset({"path", "paths", "mergeschema", "pathglobfilter", "recursivefilelookup",
                              "modifiedbefore", "modifiedafter", "basepath", "ignorecorruptfiles",
                              "ignoremissingfiles"})


# --------------------------------------------------------------------------- detection (driver)
def detect(df: DataFrame, cfg: WriteConfig, target_avro: dict[str, Any]) -> DirectInput | None:
    """A DirectInput when `df` is a plain scan of parquet files this module reads as Spark would."""
    if not cfg.direct_parquet_input:
        return None
    incoming = StructType([f for f in df.schema.fields if f.name not in META_COLUMNS])
    keygen = KeyGenerator.for_table(cfg.table)
    if not _readable(incoming) or not supports(keygen, arrow_schema(incoming)):
        return None
    is_deleted = next((f for f in incoming.fields if f.name == IS_DELETED_FIELD), None)
    if is_deleted is not None and not isinstance(is_deleted.dataType, BooleanType):
        return None
    files = _scanned_files(df)
    if files is None:
        return None
    delete = cfg.operation is WriteOperation.DELETE
    target = pa.schema([]) if delete else arrow_schema(avro_to_spark(target_avro))
    spark = df.sparkSession
    read_types = tuple((f.name, _arrow_type(f)) for f in incoming.fields)
    return DirectInput(
        units=tuple(InputUnit(uri, size) for uri, size in files), read_types=read_types,
        target=target, keygen=keygen, schema=pa.schema(list(read_types)), delete_all=delete,
        max_split_bytes=conf_bytes(spark, "spark.sql.files.maxPartitionBytes", 128 << 20),
        open_cost_bytes=conf_bytes(spark, "spark.sql.files.openCostInBytes", 4 << 20))


def _readable(schema: StructType) -> bool:
    """Flat schemas of atomic types (TIMESTAMP_NTZ aside): their Arrow reading equals Spark's."""
    return all(isinstance(f.dataType, AtomicType) and not isinstance(f.dataType, TimestampNTZType)
               for f in schema.fields)


def _arrow_type(field: StructField) -> pa.DataType:
    return to_arrow_type(field.dataType, timezone="UTC")


def arrow_schema(struct: StructType) -> pa.Schema:
    """The Arrow schema Spark's types map to (a Spark caller's boundary into the Arrow key path)."""
    return pa.schema([pa.field(f.name, _arrow_type(f), nullable=True) for f in struct.fields])


def _scanned_files(df: DataFrame) -> list[tuple[str, int]] | None:
    """(uri, size) of every file when the plan is a bare parquet relation; None otherwise.

    Classic-only optimisation: the analyzed plan is read through the JVM gateway. A Spark Connect
    client has none (None: the write takes Spark's rows, as for any other input)."""
    if is_connect(df):
        return None
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
    except Exception:  # an unexpected plan: Spark's rows
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
