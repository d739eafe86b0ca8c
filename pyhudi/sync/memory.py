"""An in-memory catalog: the CatalogClient the tests (and `pyhudi sync --explain` dry runs of the tests) sync
into, with the idempotence a real metastore has (adding an existing partition and dropping a missing one
change nothing, as HMS's add_partitions(ifNotExists) and Glue's batch calls tolerate) and failure injection.

Records are copied in and out, so a caller can never change the catalog except through the interface.
Thread-safe: concurrent syncers of one test share an instance."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Sequence

from pyhudi.errors import MetaSyncError
from pyhudi.sync.catalog import PartitionDef, TableDef


class InMemoryCatalog:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.databases: set[str] = set()
        self.tables: dict[tuple[str, str], TableDef] = {}
        self.partitions: dict[tuple[str, str], dict[tuple[str, ...], PartitionDef]] = {}
        self.calls: list[str] = []
        # Injected failures: operation name -> predicate on the call's table name (True: raise).
        self.fail: dict[str, Callable[[str], bool]] = {}

    # ---------------------------------------------------------------------------- helpers
    def _call(self, op: str, name: str = "") -> None:
        self.calls.append(op)
        check = self.fail.get(op) or self.fail.get("*")
        if check is not None and check(name):
            raise MetaSyncError(f"in-memory catalog: {op} {name} failed (injected)")

    def _key(self, table: TableDef) -> tuple[str, str]:
        key = (table.database, table.name)
        if key not in self.tables:
            raise MetaSyncError(f"in-memory catalog: no table {table.database}.{table.name}")
        return key

    # ---------------------------------------------------------------------------- CatalogClient
    def database_exists(self, database: str) -> bool:
        with self._lock:
            self._call("database_exists", database)
            return database in self.databases

    def create_database(self, database: str) -> None:
        with self._lock:
            self._call("create_database", database)
            self.databases.add(database)

    def get_table(self, database: str, name: str) -> TableDef | None:
        with self._lock:
            self._call("get_table", name)
            return copy.deepcopy(self.tables.get((database, name)))

    def create_table(self, table: TableDef) -> None:
        with self._lock:
            self._call("create_table", table.name)
            if table.database not in self.databases:
                raise MetaSyncError(f"in-memory catalog: no database {table.database}")
            key = (table.database, table.name)
            if key in self.tables:
                raise MetaSyncError(f"in-memory catalog: table {table.database}.{table.name} already exists")
            self.tables[key] = copy.deepcopy(table)
            self.partitions[key] = {}

    def update_table(self, table: TableDef) -> None:
        with self._lock:
            self._call("update_table", table.name)
            self.tables[self._key(table)] = copy.deepcopy(table)

    def drop_table(self, database: str, name: str) -> None:
        with self._lock:
            self._call("drop_table", name)
            self.tables.pop((database, name), None)
            self.partitions.pop((database, name), None)

    def list_partitions(self, table: TableDef) -> list[PartitionDef]:
        with self._lock:
            self._call("list_partitions", table.name)
            return sorted(self.partitions[self._key(table)].values(), key=lambda p: p.values)

    def add_partitions(self, table: TableDef, partitions: Sequence[PartitionDef]) -> None:
        with self._lock:
            self._call("add_partitions", table.name)
            parts = self.partitions[self._key(table)]
            for p in partitions:
                self._check_arity(table, p.values)
                parts.setdefault(p.values, p)

    def update_partitions(self, table: TableDef, partitions: Sequence[PartitionDef]) -> None:
        with self._lock:
            self._call("update_partitions", table.name)
            parts = self.partitions[self._key(table)]
            missing = [p.values for p in partitions if p.values not in parts]
            if missing:
                raise MetaSyncError(f"in-memory catalog: cannot alter missing partitions {missing}")
            for p in partitions:
                parts[p.values] = p

    def drop_partitions(self, table: TableDef, values: Sequence[tuple[str, ...]]) -> None:
        with self._lock:
            self._call("drop_partitions", table.name)
            parts = self.partitions[self._key(table)]
            for v in values:
                parts.pop(tuple(v), None)

    def close(self) -> None:
        self.calls.append("close")

    def _check_arity(self, table: TableDef, values: tuple[str, ...]) -> None:
        if len(values) != len(self.tables[(table.database, table.name)].partition_keys):
            raise MetaSyncError(f"in-memory catalog: partition values {values} do not match the partition keys "
                                f"of {table.database}.{table.name}")
