"""The streamer's foreachBatch function: check every record, quarantine or fail fast, commit the rest.

Per micro-batch (after the replay check of `streaming.BatchWriter`):

1. persist the batch (Spark only fills the corrupt-record column reliably on a cached batch) and
   count records and malformed records per landing file, the first action that reads the files; a
   parquet file Spark cannot read becomes an error naming it (`source.read_failure`), as does one with
   columns the stream's schema lacks (Spark would drop them);
2. malformed records with the error table off: raise MalformedRecordError naming the files, counts and
   an example. Nothing is committed and Spark's checkpoint does not advance, so the same batch is
   replayed by the next run;
3. with the error table on: commit the malformed records there first (skipped on replay), then
   commit the good records to the target; the commit line says how many were quarantined. If the
   error-table write fails, ROLLBACK_COMMIT fails the batch before the target is touched, LOG_ERROR
   logs it and commits the good records;
4. a write the target refuses (schema, keys) is re-raised naming the batch's landing files.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from pyhudi.engine.spark.streamer_error_table import ROLLBACK_COMMIT, ErrorTableConfig, write_errors
from pyhudi.engine.spark.streamer_source import new_columns_error, read_failure, unknown_parquet_columns
from pyhudi.engine.spark.streamer_validate import (
    FileStats,
    RecordRules,
    error_records,
    file_stats,
    good_records,
    malformed_error,
    schema_fields,
    with_checks,
)
from pyhudi.engine.spark.streaming import BatchWriter
from pyhudi.errors import HudiError, InvalidRecordError, SchemaMismatchError

log = logging.getLogger(__name__)


class StreamerSink(BatchWriter):
    """BatchWriter that validates records first; keeps the HudiError that failed a batch in `failure`."""

    def __init__(self, path: str, options: Mapping[str, Any], checkpoint_location: str,
                 on_commit: Callable[[str], None] | None, fmt: str, schema: StructType) -> None:
        super().__init__(path, options, checkpoint_location, on_commit)
        self.fmt = fmt
        self.fields = schema_fields(schema)
        self.errors = ErrorTableConfig.from_options(options, path)
        self.failure: HudiError | None = None

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        try:
            super().__call__(batch, batch_id)
        except HudiError as exc:  # Spark wraps it in a StreamingQueryException; keep the original
            self.failure = exc
            raise

    def write_batch(self, batch: DataFrame, batch_id: int, identifier: str, query_id: str) -> None:
        batch = batch.persist()
        try:
            self._write_checked(batch, batch_id, identifier, query_id)
        finally:
            batch.unpersist()

    def _write_checked(self, batch: DataFrame, batch_id: int, identifier: str, query_id: str) -> None:
        validate_creation = self.errors.validate_record_creation or not self.errors.enabled
        rules = RecordRules.from_options(self.options, self.path) if validate_creation else None
        checked = with_checks(batch, rules)
        stats = self._stats(checked, batch_id)
        if self.fmt == "parquet":
            unknown = unknown_parquet_columns([s.path for s in stats], {name for name, _ in self.fields})
            if unknown:
                raise new_columns_error(unknown, batch_id)
        records, malformed = sum(s.records for s in stats), sum(s.malformed for s in stats)
        if records == 0:
            return
        note = ""
        if malformed:
            if not self.errors.enabled:
                raise malformed_error(stats, batch_id, self.fmt, self.fields)
            note = self._quarantine(checked, malformed, batch_id, identifier, query_id)
        if malformed == records:
            if self.on_commit is not None:
                self.on_commit(f"batch {batch_id}: no records committed{note}")
            return
        try:
            self.commit(good_records(checked), batch_id, identifier, query_id, note)
        except (SchemaMismatchError, InvalidRecordError) as exc:
            raise type(exc)(f"{exc} [micro-batch {batch_id}, landing file(s): {_files(stats)}]") from exc

    def _stats(self, checked: DataFrame, batch_id: int) -> list[FileStats]:
        try:
            return file_stats(checked)
        except Exception as exc:
            translated = read_failure(str(exc), batch_id)
            if translated is None:
                raise
            raise translated from None  # Spark's JVM trace adds nothing to the file and column named

    def _quarantine(self, checked: DataFrame, malformed: int, batch_id: int, identifier: str,
                    query_id: str) -> str:
        """Commit the malformed records to the error table; the note for the commit line."""
        errors = error_records(checked, self.fmt, self.fields, identifier, batch_id).persist()
        where = self.errors.base_path
        try:
            write_errors(errors, self.errors, identifier, query_id, batch_id)
        except Exception as exc:
            if self.errors.failure_strategy == ROLLBACK_COMMIT:
                raise HudiError(
                    f"micro-batch {batch_id}: writing {malformed} malformed record(s) to the error table at {where} "
                    f"failed ({exc}); nothing was committed (hoodie.errortable.write.failure.strategy="
                    "ROLLBACK_COMMIT). Fix the error table's path or set the strategy to LOG_ERROR to commit the "
                    "good records without them.") from exc
            log.error("micro-batch %d: %d malformed records could not be written to the error table at %s: %s",
                      batch_id, malformed, where, exc)
            first_line = (str(exc).splitlines() or [type(exc).__name__])[0]
            return f", {malformed} malformed records NOT quarantined (error table write failed: {first_line})"
        finally:
            errors.unpersist()
        return f", {malformed} records quarantined to {where}"


def _files(stats: list[FileStats], limit: int = 5) -> str:
    names = [s.path for s in stats[:limit]]
    return ", ".join(names) + (f" and {len(stats) - limit} more" if len(stats) > limit else "")


def await_round(query: Any, sink: StreamerSink) -> None:
    """Wait for a one-shot round; a batch that failed on bad input re-raises its own HudiError."""
    try:
        query.awaitTermination()
    except Exception:
        if sink.failure is not None:
            raise sink.failure from None
        raise
