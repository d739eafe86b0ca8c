"""The catalog a sync writes to, as one small interface (Hudi's HoodieMetaSyncOperations, trimmed to what
HiveSyncTool and AwsGlueCatalogSyncTool call). Each backend (sync/hms.py, sync/glue.py, and the in-memory one
of the tests) maps these records onto its own API; the sync tool decides *what* to register, a backend only
*how*. Records are plain values so that a test can compare what two catalogs hold field by field."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class Column:
    """A Hive column: its name (lower case, as the metastore stores it), Hive type string, comment."""

    name: str
    type: str
    comment: str | None = None


@dataclass
class TableDef:
    """What a catalog holds for one table: the storage descriptor's fields and the table's parameters.

    `columns` are the data columns; `partition_keys` the partition columns (Hive keeps them apart).
    `parameters` are the table properties (EXTERNAL, spark.sql.sources.*, last_commit_time_sync, ...);
    `serde_parameters` the SerDe's (path, hoodie.query.as.ro.table, serialization.format)."""

    database: str
    name: str
    columns: list[Column]
    partition_keys: list[Column]
    location: str
    input_format: str
    output_format: str
    serde_library: str
    serde_parameters: dict[str, str] = field(default_factory=dict)
    parameters: dict[str, str] = field(default_factory=dict)
    table_type: str = "EXTERNAL_TABLE"
    comment: str | None = None


@dataclass(frozen=True)
class PartitionDef:
    """One partition: its values in partition-key order and its location (a full URI or absolute path).
    Backends give it the table's storage descriptor (formats, SerDe, columns), as Hudi's DDL executors do."""

    values: tuple[str, ...]
    location: str


class CatalogClient(Protocol):
    """The operations a sync needs. Missing objects are `None`/empty, never an exception; failures of the
    catalog itself raise `pyhudi.errors.MetaSyncError` naming the call and the object."""

    def database_exists(self, database: str) -> bool: ...

    def create_database(self, database: str) -> None: ...

    def get_table(self, database: str, name: str) -> TableDef | None: ...

    def create_table(self, table: TableDef) -> None: ...

    def update_table(self, table: TableDef) -> None:
        """Replace the table's columns, partition keys, location, formats, SerDe and parameters with `table`'s
        (Hive's alter_table with cascade off: partitions keep their own descriptors)."""
        ...

    def drop_table(self, database: str, name: str) -> None: ...

    def list_partitions(self, table: TableDef) -> list[PartitionDef]: ...

    def add_partitions(self, table: TableDef, partitions: Sequence[PartitionDef]) -> None: ...

    def update_partitions(self, table: TableDef, partitions: Sequence[PartitionDef]) -> None:
        """Point existing partitions at new locations (Hudi's updatePartitionsToTable)."""
        ...

    def drop_partitions(self, table: TableDef, values: Sequence[tuple[str, ...]]) -> None: ...

    def close(self) -> None: ...
