"""pyhudi: write, read and maintain Apache Hudi (table version 6) tables from PySpark."""

from pyhudi.errors import (
    ClusteringUpdateConflictError,
    CommitConflictError,
    CorruptFileError,
    HudiError,
    InstantNotFoundError,
    InvalidConfigError,
    InvalidRecordError,
    JavaNotFoundError,
    MalformedRecordError,
    MetaSyncError,
    SchemaMismatchError,
    TableNotFoundError,
    TimelineError,
    UnsupportedTableError,
)

__version__ = "0.1.0"

# `pyhudi.sync(path, options)` is the subpackage pyhudi.sync itself, made callable (a function of that name
# here would be replaced by the subpackage the first time any of its modules is imported).
from pyhudi import sync  # noqa: E402


def write(data, path, options=None, mode="append", storage_options=None):  # type: ignore[no-untyped-def]
    """Write a Spark DataFrame, or Arrow/pandas/polars/DuckDB data in-process (no JVM), to a Hudi table;
    returns the commit's instant time. See pyhudi.api.write."""
    from pyhudi.writer.entry import write_table  # not pyhudi.api: the in-process path imports no pyspark

    return write_table(data, path, options, mode, storage_options=storage_options)


def cluster(spark, path, options=None, instant=None, storage_options=None):  # type: ignore[no-untyped-def]
    """Cluster a table (schedule if needed, run pending plans); returns instants. See pyhudi.api.cluster."""
    from pyhudi.api import cluster as _cluster

    return _cluster(spark, path, options, instant, storage_options=storage_options)


def clean(spark, path, options=None, dry_run=False, storage_options=None):  # type: ignore[no-untyped-def]
    """Clean old file versions per hoodie.cleaner.*; with dry_run, the plan only. See pyhudi.api.clean."""
    from pyhudi.api import clean as _clean

    return _clean(spark, path, options, dry_run, storage_options=storage_options)


def rollback(spark, path, instant, options=None, storage_options=None):  # type: ignore[no-untyped-def]
    """Undo the latest completed write or a failed one. See pyhudi.api.rollback."""
    from pyhudi.api import rollback as _rollback

    return _rollback(spark, path, instant, options, storage_options=storage_options)


def savepoint(spark, path, instant=None, user=None, comments="", options=None,
              storage_options=None):  # type: ignore[no-untyped-def]
    """Protect an instant from cleaning and archival. See pyhudi.api.savepoint."""
    from pyhudi.api import savepoint as _savepoint

    return _savepoint(spark, path, instant, user, comments, options, storage_options=storage_options)


def restore(spark, path, savepoint, options=None, storage_options=None):  # type: ignore[no-untyped-def]
    """Bring the table back to a savepoint. See pyhudi.api.restore."""
    from pyhudi.api import restore as _restore

    return _restore(spark, path, savepoint, options, storage_options=storage_options)
def archive(spark, path, options=None, dry_run=False, storage_options=None):  # type: ignore[no-untyped-def]
    """Archive old timeline instants per hoodie.keep.*.commits; with dry_run, the plan only. See
    pyhudi.api.archive."""
    from pyhudi.api import archive as _archive

    return _archive(spark, path, options, dry_run, storage_options=storage_options)


def write_stream(df, path, options, checkpoint_location, trigger=None):  # type: ignore[no-untyped-def]
    """Start a Structured Streaming query writing each micro-batch as one commit, exactly once.
    See pyhudi.engine.spark.streaming.write_stream."""
    from pyhudi.engine.spark.streaming import write_stream as _write_stream

    return _write_stream(df, path, options, checkpoint_location, trigger)


def wait_for_table_services(path=None, timeout=None):  # type: ignore[no-untyped-def]
    """Wait for background table services (async compaction, clustering, clean, archival); returns the errors
    they raised since the last call. See pyhudi.api.wait_for_table_services."""
    from pyhudi.api import wait_for_table_services as _wait

    return _wait(path, timeout)


def compact(spark, path, options=None, instant=None, storage_options=None):  # type: ignore[no-untyped-def]
    """Compact a merge-on-read table; returns the completed compaction instants. See pyhudi.api.compact."""
    from pyhudi.api import compact as _compact

    return _compact(spark, path, options, instant, storage_options=storage_options)


def request_metrics():  # type: ignore[no-untyped-def]
    """`with pyhudi.request_metrics() as m: ...`: object-store requests of the block, `m.counts` per
    kind (GET/HEAD/PUT/LIST/DELETE/POST). See pyhudi.storage.metrics."""
    from pyhudi.storage.metrics import request_metrics as _request_metrics

    return _request_metrics()


def read(source, *args, **kwargs):  # type: ignore[no-untyped-def]
    """Read a Hudi table.

    `read(path, options=None, filters=None, columns=None, batches=False)` reads in-process (no Spark, no
    Java) into a `pyarrow.Table` (pandas: `.to_pandas()`), or a `pyarrow.RecordBatchReader` with
    `batches=True`; see pyhudi.reader.arrow_read.read. `read(spark, path, options=None, filters=None)`
    returns a Spark DataFrame; see pyhudi.api.read.
    """
    import os

    if isinstance(source, (str, os.PathLike)):
        from pyhudi.reader.arrow_read import read as _read_arrow

        return _read_arrow(source, *args, **kwargs)
    from pyhudi.api import read as _read

    return _read(source, *args, **kwargs)


__all__ = [
    "ClusteringUpdateConflictError", "CommitConflictError", "CorruptFileError", "HudiError",
    "InstantNotFoundError", "InvalidConfigError", "InvalidRecordError", "JavaNotFoundError",
    "MalformedRecordError", "MetaSyncError", "SchemaMismatchError", "TableNotFoundError", "TimelineError", "UnsupportedTableError", "archive", "clean", "cluster",
    "compact", "read", "request_metrics", "restore", "rollback", "savepoint", "sync", "wait_for_table_services",
    "write",
    "write_stream",
]
