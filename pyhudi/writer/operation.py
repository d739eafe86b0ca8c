"""Write operations and the `operationType` strings Hudi records for them."""

from __future__ import annotations

from enum import Enum


class WriteOperation(str, Enum):
    UPSERT = "upsert"
    INSERT = "insert"
    BULK_INSERT = "bulk_insert"
    DELETE = "delete"
    INSERT_OVERWRITE = "insert_overwrite"
    INSERT_OVERWRITE_TABLE = "insert_overwrite_table"
    DELETE_PARTITION = "delete_partition"

    @property
    def operation_type(self) -> str:
        """Value of `operationType` in commit metadata."""
        return self.name

    @property
    def is_overwrite(self) -> bool:
        return self in (WriteOperation.INSERT_OVERWRITE, WriteOperation.INSERT_OVERWRITE_TABLE,
                        WriteOperation.DELETE_PARTITION)

    @property
    def needs_tagging(self) -> bool:
        """Hudi's `requiresTagging`: only updates and deletes look up existing keys."""
        return self in (WriteOperation.UPSERT, WriteOperation.DELETE)

    @property
    def uses_small_files(self) -> bool:
        return self in (WriteOperation.UPSERT, WriteOperation.INSERT)
