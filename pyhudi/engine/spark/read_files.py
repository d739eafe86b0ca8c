"""Reading an explicit list of parquet files through Spark's own reader.

Spark lists each given path again; above
`spark.sql.sources.parallelPartitionDiscovery.threshold` paths it launches a
whole Spark job just for that. We raise the threshold for the duration of the
call, because our paths come from a listing we already did.

Schema evolution: a table's base files keep the schema of the commit that wrote
them, and files are read with the table's latest schema. Spark's parquet reader
pads columns a file lacks (also nested fields) and widens int -> long/double and
float -> double itself, but refuses int -> float and long -> float/double, which
Avro (and so Hudi's writer) allows. `read_base_files` sends only the files whose
commit schema needs such a widening (or whose schema is unknown: the commit is
archived) through executors that read them with pyarrow and conform them.
"""

from __future__ import annotations

import threading
import uuid
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T
from pyspark.sql.types import StructType

from pyhudi.engine.spark.runtime import default_parallelism
from pyhudi.engine.spark.schema import avro_to_spark
from pyhudi.io import schema as S
from pyhudi.io.base_file import read_parquet
from pyhudi.io.lance_file import is_lance_file
from pyhudi.storage import Storage
from pyhudi.timeline.instant import WRITE_ACTIONS
from pyhudi.timeline.timeline import ActiveTimeline

_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"
# (file type, read type) pairs Spark's parquet reader widens itself (Spark 4's parquet type widening).
_SPARK_WIDENS = {(T.IntegerType, T.LongType), (T.IntegerType, T.DoubleType), (T.FloatType, T.DoubleType)}
_FLOATING = (T.FloatType, T.DoubleType)


def read_parquet_files(spark: SparkSession, paths: Sequence[str], schema: StructType | str) -> DataFrame:
    previous = spark.conf.get(_THRESHOLD, None)
    spark.conf.set(_THRESHOLD, str(max(32, len(paths) + 1)))
    try:
        return spark.read.schema(schema).parquet(*paths)
    finally:
        if previous is None:
            spark.conf.unset(_THRESHOLD)
        else:
            spark.conf.set(_THRESHOLD, previous)


def read_base_files(spark: SparkSession, storage: Storage, paths: Sequence[str], schema: StructType,
                    target: pa.Schema | None, timeline: ActiveTimeline | None) -> DataFrame:
    """Base files (relative paths) read with the table schema `schema` (`target` is its Arrow form).

    Where the cluster has no Hadoop file system for the table's scheme (s3:// without hadoop-aws, gs://
    without the GCS connector), every file is read on the executors with pyarrow through `Storage`, so
    the rows still never pass through the driver. So are Lance base files (Hudi 1.2 LANCE tables)."""
    native = spark_reads_scheme(spark, storage.base_uri)
    if target is None:
        arrow: set[str] = set()
    else:
        arrow = set(paths) if not native else set(arrow_read_paths(paths, schema, timeline))
        arrow.update(p for p in paths if is_lance_file(p))  # Spark has no Lance reader: pyarrow on executors
    parts = []
    spark_paths = [p for p in paths if p not in arrow]
    if spark_paths or not arrow:
        parts.append(read_parquet_files(spark, [spark_uri(spark, storage.uri(p)) for p in spark_paths], schema))
    if arrow:
        assert target is not None
        rows = spark.createDataFrame([(p,) for p in sorted(arrow)], "path string")
        rows = rows.repartition(max(1, min(len(arrow), default_parallelism(spark) * 4)))
        target_json = _schema_bytes(target)
        parts.append(rows.mapInArrow(lambda it: _read_task(storage, target_json, it), schema))
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out


def _scheme(uri: str) -> str:
    return uri.split("://", 1)[0].lower() if "://" in uri else "file"


_PROBED: weakref.WeakKeyDictionary[Any, dict[str, bool]] = weakref.WeakKeyDictionary()
_PROBE_LOCK = threading.Lock()
# Hadoop's UnsupportedFileSystemException, and a configured implementation missing from the classpath
# (fs.s3a.impl is in Hadoop's defaults; hadoop-aws may not be there)
_NO_FILESYSTEM = ("No FileSystem for scheme", "ClassNotFoundException", "NoClassDefFoundError")


def _hadoop_has(spark: SparkSession, uri: str, scheme: str) -> bool:
    """Whether the cluster's Hadoop configuration has a file system for `scheme`, asked through the
    DataFrame API (so also of a Spark Connect server): Spark analyzes a text read of a path that does not
    exist under `uri` (the table or checkpoint location, with `scheme`), which fails with Hadoop's
    UnsupportedFileSystemException (or the ClassNotFoundException of a configured implementation) only
    when no file system serves the scheme; a missing path (or any other failure, e.g. credentials) means
    there is one. Remembered per session and scheme."""
    with _PROBE_LOCK:
        known = _PROBED.setdefault(spark, {}).get(scheme)
    if known is not None:
        return known
    probe = f"{scheme}://{uri.split('://', 1)[1].rstrip('/')}/.hoodie/.pyhudi-scheme-probe-{uuid.uuid4().hex}"
    try:
        spark.read.format("text").load(probe).schema  # noqa: B018 - analysis resolves the path
        found = True
    except Exception as exc:  # noqa: BLE001 - classic (py4j) and Connect raise different types
        text = str(exc)
        found = not any(marker in text for marker in _NO_FILESYSTEM)
    with _PROBE_LOCK:
        _PROBED.setdefault(spark, {})[scheme] = found
    return found


def spark_reads_scheme(spark: SparkSession, uri: str) -> bool:
    """Whether Spark's own parquet reader can open files under `uri`: local paths always; an object store
    only when the cluster has a connector for it (s3:// is also read through s3a:// when only that is
    configured, as on a cluster with hadoop-aws)."""
    scheme = _scheme(uri)
    if scheme == "file":
        return True
    if _hadoop_has(spark, uri, scheme):
        return True
    return scheme == "s3" and _hadoop_has(spark, uri, "s3a")


def spark_uri(spark: SparkSession, uri: str) -> str:
    """`uri` as Spark's reader should open it: s3:// becomes s3a:// on a cluster that only knows s3a."""
    if _scheme(uri) == "s3" and not _hadoop_has(spark, uri, "s3") and _hadoop_has(spark, uri, "s3a"):
        return "s3a://" + uri.split("://", 1)[1]
    return uri


def arrow_read_paths(paths: Sequence[str], schema: StructType, timeline: ActiveTimeline | None) -> list[str]:
    """The files Spark's reader cannot read with `schema`: written with a narrower type Spark does not widen,
    or by a commit whose schema is unknown, when `schema` has a float/double column at all."""
    if not paths or not _has_floating(schema):
        return []
    readable = _readable_instants(schema, timeline)
    return [p for p in paths if not readable.get(_instant(p), False)]


def _readable_instants(schema: StructType, timeline: ActiveTimeline | None) -> dict[str, bool]:
    """Completed write instant -> whether Spark reads its files with `schema` (by the commit's schema)."""
    out: dict[str, bool] = {}
    if timeline is None:
        return out
    for inst in timeline.completed().actions(*WRITE_ACTIONS).instants:
        text = timeline.commit_metadata(inst).schema
        if text:
            written = avro_to_spark(S.with_meta_fields(S.without_meta_fields(S.from_json(text))))
            out[inst.timestamp] = spark_reads_as(written, schema)
    return out


def spark_reads_as(written: T.DataType, read: T.DataType) -> bool:
    """Whether Spark's parquet reader returns data written as `written` with type `read`."""
    if isinstance(written, T.StructType) and isinstance(read, T.StructType):
        have = {f.name: f.dataType for f in written.fields}
        return all(spark_reads_as(have[f.name], f.dataType) for f in read.fields if f.name in have)
    if isinstance(written, T.ArrayType) and isinstance(read, T.ArrayType):
        return spark_reads_as(written.elementType, read.elementType)
    if isinstance(written, T.MapType) and isinstance(read, T.MapType):
        return spark_reads_as(written.valueType, read.valueType)
    return written == read or (type(written), type(read)) in _SPARK_WIDENS


def _has_floating(dt: T.DataType) -> bool:
    if isinstance(dt, T.StructType):
        return any(_has_floating(f.dataType) for f in dt.fields)
    if isinstance(dt, T.ArrayType):
        return _has_floating(dt.elementType)
    if isinstance(dt, T.MapType):
        return _has_floating(dt.valueType)
    return isinstance(dt, _FLOATING)


def _instant(path: str) -> str:
    """A base file's instant: `<fileId>_<writeToken>_<instant>.parquet`."""
    return path.rsplit("/", 1)[-1].rsplit(".", 1)[0].rsplit("_", 1)[-1]


def _schema_bytes(schema: pa.Schema) -> bytes:
    return bytes(schema.serialize())


def _read_task(storage: Storage, target_bytes: bytes, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    target = pa.ipc.read_schema(pa.py_buffer(target_bytes))
    for batch in batches:
        for path in batch.column("path").to_pylist():
            raw = read_parquet(storage, path)
            table = S.conform_table(raw.select([c for c in raw.column_names if c in target.names]), target)
            yield from table.to_batches(max_chunksize=10000)


__all__ = ["arrow_read_paths", "read_base_files", "read_parquet_files", "spark_reads_as", "spark_reads_scheme",
           "spark_uri"]
