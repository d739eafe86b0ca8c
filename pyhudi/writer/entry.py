"""`pyhudi.write`'s engine-neutral part: save modes, the table identity, the write config, and which
client writes the data (a Spark DataFrame: the Spark client; Arrow, pandas, polars, DuckDB: in-process).

Imports no pyspark: the Spark client is imported only when the data is a Spark DataFrame.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
from collections.abc import Mapping
from typing import Any

from pyhudi.config import keys as K
from pyhudi.config.registry import Options
from pyhudi.errors import HudiError, InvalidConfigError, TableNotFoundError, from_worker
from pyhudi.model.table_config import TableConfig, load_table_config
from pyhudi.storage import Storage
from pyhudi.writer.config import WriteConfig, build_write_config, resolve_table_config
from pyhudi.writer.operation import WriteOperation

log = logging.getLogger("pyhudi.api")
MODES = ("append", "overwrite", "error", "errorifexists", "ignore")


def is_spark_dataframe(data: Any) -> bool:
    """A (classic or Connect) Spark DataFrame, recognized without importing pyspark."""
    module = type(data).__module__
    return module.startswith("pyspark.") and hasattr(data, "sparkSession")


def write_table(data: Any, path: str, options: Mapping[str, Any] | None, mode: str = "append",
                streaming: bool = False, storage_options: Mapping[str, str] | None = None) -> str | None:
    """Hudi 0.14's HoodieSparkSqlWriter save-mode handling, then the write (see api.write)."""
    mode_norm = (mode or "append").lower()
    if mode_norm not in MODES:
        raise InvalidConfigError(f"mode={mode!r} is not valid; use one of {', '.join(MODES)}")
    opts = Options.parse(options)
    from pyhudi.sync import hook as sync_hook

    sync = sync_hook.prepare(opts)  # the sync options are checked before anything is committed
    storage = Storage(path, storage_options=dict(storage_options or {}))
    existing = existing_config(storage)
    if existing is not None and mode_norm == "ignore":
        return None
    requested = WriteOperation(opts.get(K.OPERATION))
    check_mode(mode, mode_norm, requested)
    if existing is None and requested is WriteOperation.DELETE_PARTITION:
        raise TableNotFoundError(f"delete_partition: no Hudi table at {path}; there is nothing to delete")
    if existing is not None and mode_norm in ("error", "errorifexists"):
        raise HudiError(f"table already exists at {path}; use mode='append' or mode='overwrite'")
    replace_all = False
    operation: WriteOperation | None = None
    if mode_norm == "overwrite" and existing is not None:
        try:
            resolve_table_config(opts, existing)
            operation = WriteOperation.INSERT_OVERWRITE_TABLE
            replace_all = True
        except InvalidConfigError as exc:
            log.warning("overwrite with a different table identity (%s): deleting the old table at %s", exc, path)
            delete_table(storage)
            existing = None
    table = resolve_table_config(opts, existing)
    config = build_write_config(opts, table, operation, streaming=streaming)
    if replace_all:
        # Hudi runs the requested operation on an emptied table: an upsert combines in-batch duplicates
        # by precombine (hoodie.combine.before.upsert), an insert/bulk_insert only if combine.before.insert.
        config = dataclasses.replace(config, combine_before_write=combines(opts, requested))
    if not is_spark_dataframe(data):
        from pyhudi.writer.local_write import LocalWriteClient

        client = LocalWriteClient(storage, config, table_exists=existing is not None)
        instant = client.write(data, replace_all=replace_all).instant
    else:
        instant = _spark_write(data, storage, config, replace_all)
    # Hudi's metaSync runs after the commit (and its inline services); a failure raises MetaSyncError
    # carrying the committed instant, and the commit stays.
    sync_hook.after_commit(storage, sync, instant, _spark_version(data))
    return instant


def _spark_version(data: Any) -> str | None:
    """spark.sql.create.version of a Spark write (HoodieSparkSqlWriter passes SPARK_VERSION); None in-process."""
    if not is_spark_dataframe(data):
        return None
    import sys

    return getattr(sys.modules.get("pyspark"), "__version__", None)


def _spark_write(df: Any, storage: Storage, config: WriteConfig, replace_all: bool) -> str:
    from pyhudi.engine.spark.write import SparkWriteClient

    try:
        result = SparkWriteClient(df.sparkSession, storage, config).write(df, replace_all=replace_all)
    except Exception as exc:
        raised = from_worker(exc)  # a HudiError raised in a Spark task arrives as a PythonException
        if raised is None:
            raise
        raise raised from exc
    return result.instant


def check_mode(mode: str, mode_norm: str, operation: WriteOperation) -> None:
    """Hudi's handleSaveModes: deletes only make sense against the existing table, so Append is the only
    save mode for them (Hudi would delete the table for Overwrite and then fail; we refuse first)."""
    if operation in (WriteOperation.DELETE, WriteOperation.DELETE_PARTITION) and mode_norm != "append":
        raise InvalidConfigError(
            f"mode={mode!r} cannot be used with {K.OPERATION.key}={operation.value}: append is the only save "
            "mode for delete operations (as in Hudi); use mode='append'")


def combines(opts: Options, operation: WriteOperation) -> bool:
    """Whether `operation` combines duplicate keys of one batch (Hudi's combine.before.* per operation)."""
    key = K.COMBINE_BEFORE_UPSERT if operation is WriteOperation.UPSERT else K.COMBINE_BEFORE_INSERT
    return bool(opts.get(key))


def existing_config(storage: Storage) -> TableConfig | None:
    try:
        return load_table_config(storage)
    except TableNotFoundError:
        return None


def delete_table(storage: Storage) -> None:
    if storage.is_local:
        shutil.rmtree(storage.full_path(""), ignore_errors=True)
    else:
        storage.delete_dir("")
