"""What every engine's prepare step shares: the prepared-record column names, the table's schema, the
writer schema (evolution), and the precombine (ordering) rules.

A batch is checked before anything is written: key/partition/precombine columns exist, and its schema can
be written into the table's (a new nullable column is fine, a safe widening is fine, anything else is a
SchemaMismatchError). The Spark path builds its records with Spark expressions (engine/spark/prepare.py), the
in-process path with Arrow compute (arrow_prepare.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyhudi.config import keys as K
from pyhudi.errors import InvalidRecordError
from pyhudi.io import schema as S
from pyhudi.writer.config import WriteConfig
from pyhudi.writer.operation import WriteOperation

DELETE_FLAG = "_pyhudi_delete"
BAD_KEY = "_pyhudi_bad_key"
IS_DELETED_FIELD = "_hoodie_is_deleted"
META_COLUMNS = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
                "_hoodie_file_name", "_hoodie_operation")


def precombine_missing(config: WriteConfig, columns: Sequence[str]) -> None:
    """Refuse a batch without the precombine column (deletes need none)."""
    if config.precombine_field and config.operation is not WriteOperation.DELETE:
        raise InvalidRecordError(
            f"precombine field {config.precombine_field!r} is not a column of the batch (columns: "
            f"{', '.join(columns)}); add it or fix hoodie.datasource.write.precombine.field")


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


def bad_keys_error(config: WriteConfig, count: int, outcome: str = "Nothing was written.") -> InvalidRecordError:
    """The refusal of records with a null or empty record key (Hudi's key generator refuses them too);
    `outcome` says what became of the write (refused before anything existed, or rolled back)."""
    fields = ",".join(config.table.record_key_fields)
    return InvalidRecordError(
        f"{count} record(s) have a null or empty record key (field(s) {fields}); every record needs a key. "
        f"Filter or fill them before writing. {outcome}")


def null_ordering_error(config: WriteConfig, count: int) -> InvalidRecordError:
    field = config.precombine_field
    return InvalidRecordError(
        f"{count} record(s) have a null precombine value (field {field!r}, hoodie.datasource.write.precombine"
        f".field); {config.operation.value} orders records by it, so Hudi refuses a null one (\"Ordering value "
        "is null for record\"). Fill the field (for example with coalesce) or filter those records before "
        "writing. Nothing was written.")


def writer_schema(config: WriteConfig, table_avro: dict[str, Any] | None, incoming_avro: dict[str, Any]) -> dict[str, Any]:
    """The schema the batch is written with (Hudi's deduceWriterSchema and its three options); raises
    SchemaMismatchError before anything is written when the batch cannot be written into the table."""
    if table_avro is None:
        return incoming_avro
    return S.evolve(table_avro, incoming_avro, reconcile=config.reconcile_schema,
                    set_null_for_missing=bool(config.options.get(K.SET_NULL_FOR_MISSING_COLUMNS)),
                    allow_column_drop=bool(config.options.get(K.SCHEMA_ALLOW_COLUMN_DROP)))


