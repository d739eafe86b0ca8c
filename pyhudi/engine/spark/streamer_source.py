"""Reading the landing directory: the schema, PERMISSIVE readers, and read failures that name the file.

JSON and CSV are read in Spark's PERMISSIVE mode with a corrupt-record column, so a line that does not
parse or does not fit the schema arrives as its raw text instead of failing the query or (Spark's
default) being turned into nulls silently; `validate.py` decides what happens to it. Every record also
carries its landing file (`_metadata.file_path`). Parquet has no corrupt-record column: a file whose
column types conflict with the stream's schema fails the read, as does a CSV file whose header differs
from the streamer's columns (Spark's header check, `enforceSchema=false`: CSV values are positional);
`read_failure` turns Spark's FAILED_READ_FILE error into a pyhudi error naming the file and the problem. A parquet file with columns
the stream's schema lacks would lose them silently; its footer gives it away (`unknown_parquet_columns`).
"""

from __future__ import annotations

import logging
import re
from typing import Any
from urllib.parse import unquote

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from pyhudi.errors import HudiError, MalformedRecordError, SchemaMismatchError

log = logging.getLogger(__name__)
CORRUPT_COL = "_pyhudi_corrupt_record"
SOURCE_FILE_COL = "_pyhudi_source_file"
TEXT_FORMATS = ("json", "csv")

_READ_FAILED = re.compile(r"\[FAILED_READ_FILE\.(\w+)\] Encountered error while reading file (\S+?)\.(?:\s|$)")
_TYPE_MISMATCH = re.compile(r"Parquet column \[(.*?)\]\. Expected Spark type (\S+), actual Parquet type (\S+?)\.")


def landing_schema(spark: Any, fmt: str, source_dir: str, target: str) -> StructType | None:
    """The schema the streamer reads with; None while nothing has landed.

    Inferred from the landing directory. For JSON and CSV, whose types are only an interpretation of
    text, columns the table already has take the table's type: a value that no longer fits (a string
    in a numeric column) is then a malformed record, not a silent change of the column's type. Parquet
    files carry their types, so parquet keeps the inferred schema and Spark reports a conflicting file.
    """
    inferred = _infer(spark, fmt, source_dir)
    if inferred is None:
        return None
    data = StructType([f for f in inferred.fields if f.name not in (CORRUPT_COL, SOURCE_FILE_COL)])
    if fmt not in TEXT_FORMATS:
        return data
    table = _table_struct(target)
    if table is None:
        return data
    types = {f.name: f.dataType for f in table.fields}
    return StructType([StructField(f.name, types.get(f.name, f.dataType), True) for f in data.fields])


def _infer(spark: Any, fmt: str, source_dir: str, merge: bool = True) -> StructType | None:
    """Spark's inference; parquet merges every file's footer, so a column added by newer files is seen.

    Files whose types conflict cannot be merged: then one file's schema is taken, and the conflicting file
    is named when the stream reads it.
    """
    try:
        reader = spark.read.format(fmt)
        if fmt in TEXT_FORMATS:
            reader = reader.option("columnNameOfCorruptRecord", CORRUPT_COL)
        if fmt == "csv":
            reader = reader.option("header", "true").option("inferSchema", "true")
        if fmt == "parquet" and merge:
            reader = reader.option("mergeSchema", "true")
        schema: StructType = reader.load(source_dir).schema
        return schema
    except Exception as exc:  # an empty or missing landing directory has no schema yet
        if "UNABLE_TO_INFER_SCHEMA" in str(exc) or "PATH_NOT_FOUND" in str(exc):
            return None
        if fmt == "parquet" and merge:
            return _infer(spark, fmt, source_dir, merge=False)
        raise


def _table_struct(target: str) -> StructType | None:
    """The target table's data columns (no meta columns), or None when there is no table yet."""
    from pyhudi.engine.spark.schema import avro_to_spark
    from pyhudi.model.table_config import load_table_config
    from pyhudi.storage import Storage
    from pyhudi.timeline.table_schema import table_schema
    from pyhudi.timeline.timeline import ActiveTimeline

    storage = Storage(target)
    if not storage.exists(".hoodie/hoodie.properties"):
        return None
    avro = table_schema(ActiveTimeline.load(storage), load_table_config(storage))
    return None if avro is None else avro_to_spark(avro)


def read_landing(spark: Any, fmt: str, source_dir: str, schema: StructType) -> DataFrame:
    """The streaming DataFrame of new landing files, with the corrupt-record (JSON/CSV) and file columns."""
    reader = spark.readStream.format(fmt)
    if fmt in TEXT_FORMATS:
        with_corrupt = StructType([*schema.fields, StructField(CORRUPT_COL, StringType(), True)])
        reader = (reader.schema(with_corrupt).option("mode", "PERMISSIVE")
                  .option("columnNameOfCorruptRecord", CORRUPT_COL))
    else:
        reader = reader.schema(schema)
    if fmt == "csv":  # columns are positional: a file whose header differs must fail, not shift values
        reader = reader.option("header", "true").option("enforceSchema", "false")
    df: DataFrame = reader.load(source_dir).withColumn(SOURCE_FILE_COL, F.col("_metadata.file_path"))
    return df


def unknown_parquet_columns(paths: list[str], known: set[str]) -> dict[str, list[str]]:
    """Per landing parquet file, the columns (with types) the stream's schema lacks: Spark would drop them.

    Reads only footers, in the driver. A file whose footer cannot be read here is left to Spark's read.
    """
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

    out: dict[str, list[str]] = {}
    for path in paths:
        try:
            if "://" in path:
                fs, inner = pafs.FileSystem.from_uri(path.replace("s3a://", "s3://", 1))
                inner = unquote(inner)
            else:
                fs, inner = pafs.LocalFileSystem(), path
            schema = pq.read_schema(inner, filesystem=fs)
        except Exception as exc:  # unknown scheme, credentials: Spark read the file, so nothing is lost
            log.warning("cannot read the footer of %s to check its columns: %s", path, exc)
            continue
        extra = [f"{f.name} ({f.type})" for f in schema if f.name not in known]
        if extra:
            out[path] = extra
    return out


def new_columns_error(unknown: dict[str, list[str]], batch_id: int) -> SchemaMismatchError:
    files = "; ".join(f"{path}: {', '.join(cols)}" for path, cols in sorted(unknown.items()))
    return SchemaMismatchError(
        f"landing file(s) with column(s) the running streamer's schema does not have ({files}); their values would "
        f"be dropped, so micro-batch {batch_id} was not committed. Restart the streamer: it infers the schema again "
        "from the landing files, the failed micro-batch is read again with the new column(s), and Hudi's schema "
        "evolution adds them to the table (new columns must be nullable).")


def display_path(uri: str) -> str:
    """A landing file as the user knows it: `file:///x/a%20b.json` -> `/x/a b.json`; other schemes kept."""
    if uri.startswith("file:"):
        return "/" + unquote(uri[len("file:"):]).lstrip("/")
    return uri


def read_failure(message: str, batch_id: int) -> HudiError | None:
    """Spark's error for a landing file it could not read, as an error naming the file; None otherwise."""
    m = _READ_FAILED.search(message)
    if m is None:
        return None
    kind, path = m.group(1), display_path(m.group(2))
    retry = ("Nothing was committed. Move the file out of the landing directory (or replace it, under the same "
             "name, with a corrected file) and rerun: the failed micro-batch is read again from the same file "
             "list, and a removed file is skipped.")
    t = _TYPE_MISMATCH.search(message)
    if t is not None:
        column, expected, actual = t.groups()
        return SchemaMismatchError(
            f"landing file {path}: column {column} is parquet {actual} in the file but {expected} in the "
            f"streamer's schema (inferred from the landing directory when the streamer started), so "
            f"micro-batch {batch_id} cannot be read. {retry} A different type for {column} is a schema change "
            "Hudi does not apply to an existing column: write such files to a new table.")
    if "CSV header" in message:
        return SchemaMismatchError(
            f"landing file {path}: its CSV header does not match the streamer's columns ({_csv_header_detail(message)}), "
            f"so micro-batch {batch_id} cannot be read. CSV columns are matched by position: rewrite the file with "
            f"the streamer's header, or send files with other columns to a new table. {retry}")
    detail = message[m.start():].splitlines()[0]
    return MalformedRecordError(f"landing file {path} cannot be read ({kind}): {detail} "
                                f"Micro-batch {batch_id}: {retry}")


def _csv_header_detail(message: str) -> str:
    """Spark's 'Header: ... Schema: ... Expected: x but found: y' (or the two lengths) on one line."""
    wanted = ("Header", "Schema", "Expected", "schema size")
    lines = [line.strip() for line in message.splitlines()]
    return "; ".join(line for line in lines if line.startswith(wanted))
