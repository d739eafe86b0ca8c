"""Splitting a micro-batch into records Hudi can write and malformed ones, with the reason for each.

A record is malformed when Spark could not read it into the schema (its raw text is in the corrupt-
record column; Hudi's error table calls this JSON_ROW_DESERIALIZATION_FAILURE for every row source)
or when no Hudi record can be made from it (RECORD_CREATION): its record key is null or empty, or its
precombine field is null (Hudi's key generator and payload reject both). A null *partition* value is
not an error: as in Hudi, the record goes to `__HIVE_DEFAULT_PARTITION__`.

Both checks are Spark column expressions, evaluated in the executors; only one row per landing file
(counts and an example) reaches the driver. Every input record is either good or malformed, never
both and never neither, so committed + quarantined always equals the records read.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructType

from pyhudi.engine.spark.streamer_source import CORRUPT_COL, SOURCE_FILE_COL, display_path
from pyhudi.errors import MalformedRecordError
from pyhudi.streamer import reasons

ERROR_TYPE_COL = "_pyhudi_error_type"
CREATION_REASON_COL = "_pyhudi_creation_reason"
PARSE_FAILURE = "JSON_ROW_DESERIALIZATION_FAILURE"
RECORD_CREATION = "RECORD_CREATION"
_HELPERS = (CORRUPT_COL, SOURCE_FILE_COL, ERROR_TYPE_COL, CREATION_REASON_COL)
ERROR_TABLE_COLUMNS = ("error_id", "batch_id", "source_file", "error_type", "reason", "record", "error_time")


@dataclass(frozen=True)
class RecordRules:
    """What a record needs to become a Hudi record: key fields (simple or complex key) and a precombine value."""

    key_fields: tuple[str, ...]
    complex_key: bool
    precombine: str | None

    @classmethod
    def from_options(cls, options: Mapping[str, Any], target: str) -> RecordRules:
        """The rules pyhudi.write would apply to `target` with `options` (the table's keys win if it exists)."""
        from pyhudi.config.registry import Options
        from pyhudi.engine.spark.keygen import KeyGenerator
        from pyhudi.model.table_config import load_table_config
        from pyhudi.storage import Storage
        from pyhudi.writer.config import build_write_config, resolve_table_config
        from pyhudi.writer.operation import WriteOperation

        opts = Options.parse(options, warn_unknown=False)
        storage = Storage(target)
        existing = load_table_config(storage) if storage.exists(".hoodie/hoodie.properties") else None
        config = build_write_config(opts, resolve_table_config(opts, existing))
        keygen = KeyGenerator.for_table(config.table)
        precombine = None if config.operation is WriteOperation.DELETE else config.precombine_field
        return cls(keygen.record_key_fields, keygen.is_complex, precombine)

    def creation_reason(self, schema: StructType) -> Column:
        """Why no Hudi record can be made from a row (a string), or null when one can."""
        names = set(schema.fieldNames())
        present = [f for f in self.key_fields if f in names]
        checks: list[tuple[Column, str]] = []
        if present and len(present) == len(self.key_fields):  # a missing key column fails the write itself
            missing = [F.col(f).isNull() | (F.col(f).cast("string") == "") for f in present]
            if self.complex_key:
                every = missing[0]
                for m in missing[1:]:
                    every = every & m
                checks.append((every, f"record key fields {', '.join(present)} are all null or empty"))
            else:
                (name,) = present
                checks.append((F.col(name).isNull(), f"record key field {name} is null"))
                checks.append((missing[0], f"record key field {name} is empty"))
        if self.precombine and self.precombine in names:
            checks.append((F.col(self.precombine).isNull(), f"precombine field {self.precombine} is null"))
        out = F.lit(None).cast("string")
        for cond, text in reversed(checks):
            out = F.when(cond, F.lit(text)).otherwise(out)
        return out


def with_checks(batch: DataFrame, rules: RecordRules | None) -> DataFrame:
    """`batch` plus the error type (null = good) and record-creation reason of every record.

    `rules` None skips the record-creation checks (hoodie.errortable.validate.recordcreation.enable=false).
    """
    data = StructType([f for f in batch.schema.fields if f.name not in _HELPERS])
    creation = rules.creation_reason(data) if rules is not None else F.lit(None).cast("string")
    parse_failed = F.col(CORRUPT_COL).isNotNull() if CORRUPT_COL in batch.columns else F.lit(False)
    error_type = (F.when(parse_failed, F.lit(PARSE_FAILURE))
                  .when(F.col(CREATION_REASON_COL).isNotNull(), F.lit(RECORD_CREATION)))
    return batch.withColumn(CREATION_REASON_COL, creation).withColumn(ERROR_TYPE_COL, error_type)


def good_records(checked: DataFrame) -> DataFrame:
    return checked.filter(F.col(ERROR_TYPE_COL).isNull()).drop(*[c for c in _HELPERS if c in checked.columns])


def _display_path(uri: Column) -> Column:
    """source.display_path as a column: local files as plain paths, other schemes as given."""
    return F.when(uri.startswith("file:"), F.regexp_replace(F.url_decode(uri), "^file:/*", "/")).otherwise(uri)


def _raw_record(checked: DataFrame) -> Column:
    """The record as landed (corrupt text), else the parsed row as JSON."""
    data = [F.col(f"`{c}`") for c in checked.columns if c not in _HELPERS]
    as_json = F.to_json(F.struct(*data))
    return F.coalesce(F.col(CORRUPT_COL), as_json) if CORRUPT_COL in checked.columns else as_json


@dataclass(frozen=True)
class FileStats:
    """One landing file's share of a micro-batch: records, malformed ones, and one malformed example."""

    path: str
    records: int
    malformed: int
    example: str | None = None
    example_type: str | None = None
    example_reason: str | None = None


def file_stats(checked: DataFrame) -> list[FileStats]:
    """One aggregation over the (persisted) batch; the only data that reaches the driver."""
    bad = F.col(ERROR_TYPE_COL).isNotNull()
    example = F.struct(_raw_record(checked).alias("raw"), F.col(ERROR_TYPE_COL).alias("type"),
                       F.col(CREATION_REASON_COL).alias("reason"))
    rows = (checked.groupBy(SOURCE_FILE_COL)
            .agg(F.count(F.lit(1)).alias("n"), F.sum(bad.cast("long")).alias("bad"),
                 F.first(F.when(bad, example), ignorenulls=True).alias("ex"))
            .collect())
    out = []
    for r in sorted(rows, key=lambda r: str(r[SOURCE_FILE_COL])):
        ex = r["ex"]
        out.append(FileStats(display_path(str(r[SOURCE_FILE_COL])), int(r["n"]), int(r["bad"] or 0),
                             ex["raw"] if ex else None, ex["type"] if ex else None, ex["reason"] if ex else None))
    return out


class _Classifier:
    """The reason UDF's function: a picklable (format, fields) pair, so executors need no closure."""

    def __init__(self, fmt: str, fields: Sequence[reasons.Field]) -> None:
        self.fmt, self.fields = fmt, list(fields)

    def __call__(self, raw: str | None) -> str | None:
        return reasons.classify(self.fmt, raw, self.fields)


def schema_fields(schema: StructType) -> list[reasons.Field]:
    return [(f.name, f.dataType.simpleString()) for f in schema.fields if f.name not in _HELPERS]


def error_records(checked: DataFrame, fmt: str, fields: Sequence[reasons.Field], identifier: str,
                  batch_id: int) -> DataFrame:
    """The malformed records as error-table rows (ERROR_TABLE_COLUMNS); reasons computed in executors."""
    bad = checked.filter(F.col(ERROR_TYPE_COL).isNotNull())
    reason: Column = F.col(CREATION_REASON_COL)
    if CORRUPT_COL in checked.columns:
        classify = F.udf(_Classifier(fmt, fields), StringType(), useArrow=False)  # few rows; no Arrow setup
        reason = F.coalesce(classify(F.col(CORRUPT_COL)), reason)
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    return bad.select(
        F.concat_ws(":", F.lit(identifier), F.lit(str(batch_id)),
                    F.monotonically_increasing_id().cast("string")).alias("error_id"),
        F.lit(batch_id).cast("long").alias("batch_id"),
        _display_path(F.col(SOURCE_FILE_COL)).alias("source_file"),
        F.col(ERROR_TYPE_COL).alias("error_type"),
        reason.alias("reason"),
        _raw_record(checked).alias("record"),
        F.lit(now).cast("timestamp").alias("error_time"))


def malformed_error(stats: Sequence[FileStats], batch_id: int, fmt: str,
                    fields: Sequence[reasons.Field]) -> MalformedRecordError:
    """The fail-fast error: which files, how many records, one example each and why."""
    bad = [s for s in stats if s.malformed]
    total = sum(s.malformed for s in bad)
    parts = []
    for s in bad[:5]:
        why = s.example_reason if s.example_type == RECORD_CREATION else reasons.classify(fmt, s.example, fields)
        parts.append(f"{s.path}: {s.malformed} of {s.records} record(s), e.g. {reasons.truncate(s.example)!r} "
                     f"({why})")
    if len(bad) > 5:
        parts.append(f"and {len(bad) - 5} more file(s)")
    return MalformedRecordError(
        f"micro-batch {batch_id}: {total} malformed record(s) in {len(bad)} landing file(s): {'; '.join(parts)}. "
        "Nothing was committed. Set hoodie.errortable.enable=true to send malformed records to the error table "
        "and commit the rest, or correct the file(s) in place (same name) or move them out of the landing "
        "directory, then rerun: the failed micro-batch is read again from the same file list.")
