"""The Hive Metastore backend of meta sync (`hoodie.datasource.hive_sync.mode=hms`): Hudi's HMSDDLExecutor
on the metastore's Thrift API, without a JVM.

`connect(options)` opens a `HiveMetastoreClient` (a `CatalogClient`) on the first reachable URI of
`hoodie.datasource.hive_sync.metastore.uris`. The calls and the structs they send are Hudi's:

- a database is created as `Database(name, "automatically created by hoodie")`;
- a table's columns go through `alter_table_with_environment_context` with an empty context (cascade off:
  partitions keep their own descriptors), read-modify-write, so that fields pyhudi does not model (Spark's
  statistics, Hive 3's catalog name, privileges, bucketing) go back to the metastore unchanged;
- a new partition's storage descriptor is the table's columns, formats and SerDe with the partition's
  location (HMSDDLExecutor.addPartitionsToTable), added with `add_partitions(ifNotExists=true)`; a changed
  partition gets the table's whole descriptor with its new location (updatePartitionsToTable);
- both go in batches of `hoodie.datasource.hive_sync.batch_num` partitions (Hudi's default, 1000);
- a partition is dropped by its values with deleteData=false, and a table likewise: sync never deletes files.

Only the Thrift settings a Hive client reads matter here. `hoodie.datasource.hive_sync.username`,
`.password` and `.jdbcurl` belong to Hudi's `jdbc` mode (HiveServer2) and are not used by `hms`.
"""

from __future__ import annotations

import getpass
import random
import re
import threading
import time
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pyhudi.errors import MetaSyncError
from pyhudi.sync import hms_thrift as ht
from pyhudi.sync.catalog import CatalogClient, Column, PartitionDef, TableDef
from pyhudi.sync.hms_thrift import (
    AddPartitionsRequestF,
    DatabaseF,
    FieldSchemaF,
    PartitionF,
    SerDeInfoF,
    StorageDescriptorF,
    TableF,
    TStruct,
)

URIS_KEY = "hoodie.datasource.hive_sync.metastore.uris"
DEFAULT_URIS = "thrift://localhost:9083"  # Hudi's default for the key
BATCH_KEY = "hoodie.datasource.hive_sync.batch_num"
DEFAULT_BATCH = 1000
# Hive client settings (HiveConf names), read when given in the options, with Hive 2.3's defaults
TIMEOUT_KEY = "hive.metastore.client.socket.timeout"
RETRIES_KEY = "hive.metastore.connect.retries"
RETRY_DELAY_KEY = "hive.metastore.client.connect.retry.delay"
FRAMED_KEY = "hive.metastore.thrift.framed.transport.enabled"
COMPACT_KEY = "hive.metastore.thrift.compact.protocol.enabled"
REFUSED_KEYS = {  # secure transports pyhudi does not speak: say so instead of hanging in a handshake
    "hive.metastore.sasl.enabled": "SASL/Kerberos authentication",
    "hive.metastore.use.SSL": "TLS to the metastore",
}
HUDI_DB_DESCRIPTION = "automatically created by hoodie"  # HMSDDLExecutor.createDatabase

try:  # the `hive` extra
    from thrift.protocol import TBinaryProtocol, TCompactProtocol
    from thrift.Thrift import TApplicationException, TType
    from thrift.transport import TSocket, TTransport
except ImportError:  # pragma: no cover - exercised only without the extra
    TBinaryProtocol = TCompactProtocol = TApplicationException = TType = TSocket = TTransport = None  # type: ignore

T = TypeVar("T")


@dataclass(frozen=True)
class ConnectionSettings:
    """Where and how to reach the metastore, from the sync options."""

    uris: tuple[tuple[str, int], ...]
    uris_text: str
    timeout_s: float = 600.0
    retries: int = 3
    retry_delay_s: float = 1.0
    framed: bool = False
    compact: bool = False
    batch_size: int = DEFAULT_BATCH

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> ConnectionSettings:
        for key, what in REFUSED_KEYS.items():
            if _flag(options, key):
                raise MetaSyncError(f"{key}=true asks for {what}, which pyhudi's metastore client does not "
                                    "support; sync through a metastore port without it, or use "
                                    "hoodie.datasource.hive_sync.mode=jdbc from Hudi's own tools")
        text = options.get(URIS_KEY) or options.get("hive.metastore.uris") or DEFAULT_URIS
        return cls(uris=parse_uris(text), uris_text=text,
                   timeout_s=_seconds(options, TIMEOUT_KEY, 600.0),
                   retries=_int(options, RETRIES_KEY, 3), retry_delay_s=_seconds(options, RETRY_DELAY_KEY, 1.0),
                   framed=_flag(options, FRAMED_KEY), compact=_flag(options, COMPACT_KEY),
                   batch_size=max(1, _int(options, BATCH_KEY, DEFAULT_BATCH)))


def parse_uris(text: str) -> tuple[tuple[str, int], ...]:
    """`thrift://host:port[,thrift://host:port...]` (Hive's hive.metastore.uris) as (host, port) pairs."""
    out = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        parsed = urllib.parse.urlsplit(part)
        try:
            port = parsed.port or 9083
        except ValueError:
            port = -1
        if parsed.scheme != "thrift" or not parsed.hostname or port < 0:
            raise MetaSyncError(f"{URIS_KEY}={text!r}: {part!r} is not a metastore URI; "
                                "expected thrift://host:port, comma-separated for several metastores")
        out.append((parsed.hostname, port))
    if not out:
        raise MetaSyncError(f"{URIS_KEY} is empty; set it to the metastore's thrift://host:port")
    return tuple(out)


def _flag(options: Mapping[str, str], key: str) -> bool:
    return str(options.get(key, "false")).strip().lower() == "true"


def _int(options: Mapping[str, str], key: str, default: int) -> int:
    raw = options.get(key)
    try:
        return default if raw is None else int(str(raw).strip())
    except ValueError:
        raise MetaSyncError(f"{key}={raw!r} is not a whole number") from None


_UNITS = {"": 1.0, "s": 1.0, "sec": 1.0, "ms": 0.001, "msec": 0.001, "m": 60.0, "min": 60.0}


def _seconds(options: Mapping[str, str], key: str, default: float) -> float:
    """A HiveConf time value ("600s", "1000ms", "5", seconds when bare)."""
    raw = options.get(key)
    if raw is None:
        return default
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*", str(raw).lower())
    if not match or match.group(2) not in _UNITS:
        raise MetaSyncError(f"{key}={raw!r} is not a time (for example 600s or 5000ms)")
    return float(match.group(1)) * _UNITS[match.group(2)]


def connect(options: Mapping[str, str]) -> HiveMetastoreClient:
    """A connected client for the metastore the options name (see the module docstring)."""
    if TSocket is None:
        raise MetaSyncError("hoodie.datasource.hive_sync.mode=hms needs the `thrift` package: "
                            "pip install 'pyhudi[hive]'")
    client = HiveMetastoreClient(ConnectionSettings.from_options(options))
    client.open()
    return client


class _Lost(Exception):
    """The connection broke during a call."""


class HiveMetastoreClient:
    """A `CatalogClient` on one Thrift connection. Calls are serialized (one lock), so threads may share it."""

    def __init__(self, settings: ConnectionSettings) -> None:
        self.settings = settings
        self.uri: str | None = None
        self._transport: Any = None
        self._protocol: Any = None
        self._seqid = 0
        self._lock = threading.Lock()

    # --- connection ---------------------------------------------------------------------------------

    def open(self) -> None:
        """Try every URI, in random order, `retries + 1` times with the retry delay between rounds: what
        Hive's HiveMetaStoreClient.open does (the shuffle spreads clients over several metastores)."""
        uris = list(self.settings.uris)
        random.shuffle(uris)
        errors: dict[str, str] = {}
        for attempt in range(self.settings.retries + 1):
            if attempt:
                time.sleep(self.settings.retry_delay_s)
            for host, port in uris:
                try:
                    self._open_one(host, port)
                    return
                except Exception as exc:  # noqa: BLE001 - every way a socket fails is reported together
                    errors[f"thrift://{host}:{port}"] = str(exc) or type(exc).__name__
        detail = "; ".join(f"{uri}: {msg}" for uri, msg in errors.items())
        raise MetaSyncError(
            f"could not connect to the Hive Metastore at {self.settings.uris_text} ({URIS_KEY}) after "
            f"{self.settings.retries + 1} attempt(s): {detail}. Check that the metastore runs and the key "
            "names its thrift://host:port")

    def _open_one(self, host: str, port: int) -> None:
        sock = TSocket.TSocket(host, port)
        sock.setTimeout(self.settings.timeout_s * 1000)
        transport = TTransport.TFramedTransport(sock) if self.settings.framed else TTransport.TBufferedTransport(sock)
        transport.open()
        protocol_class = TCompactProtocol.TCompactProtocol if self.settings.compact else TBinaryProtocol.TBinaryProtocol
        self._transport, self._protocol = transport, protocol_class(transport)
        self.uri = f"thrift://{host}:{port}"

    def close(self) -> None:
        if self._transport is not None:
            try:
                self._transport.close()
            finally:
                self._transport = self._protocol = None

    def __enter__(self) -> HiveMetastoreClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, call: ht.Call, args: TStruct, what: str, *, retry: bool = True,
              expected: tuple[str, ...] = ()) -> tuple[Any, str | None]:
        """Invoke `call`; returns (success value, None), or (None, kind) for a declared exception whose
        kind is in `expected`. Other failures raise MetaSyncError naming the call, `what` and the message.
        A broken connection is reopened and, when `retry`, the call is sent once more (Hive's
        RetryingMetaStoreClient; every call here but create_table is idempotent)."""
        with self._lock:
            for attempt in (0, 1):
                try:
                    return self._invoke(call, args), None
                except ht.RemoteError as exc:
                    if exc.kind in expected:
                        return None, exc.kind
                    raise MetaSyncError(f"Hive Metastore {call.name} of {what} failed at {self.uri}: "
                                        f"{exc.kind}: {exc.message}") from None
                except TApplicationException as exc:
                    raise MetaSyncError(f"Hive Metastore {call.name} of {what} failed at {self.uri}: {exc} "
                                        "(a metastore older than Hive 2.3 may lack the call)") from None
                except _Lost as exc:
                    self.close()
                    if attempt or not retry:
                        raise MetaSyncError(
                            f"Hive Metastore {call.name} of {what}: the connection to {self.uri} broke "
                            f"({exc.__cause__}); {'its outcome is unknown' if not retry else 'retried once'}"
                        ) from exc.__cause__
            raise AssertionError("unreachable")

    def _invoke(self, call: ht.Call, args: TStruct) -> Any:
        try:
            if self._protocol is None:
                self.open()
            self._seqid += 1
            return ht.invoke(self._protocol, self._seqid, call, args)
        except (TTransport.TTransportException, OSError, EOFError) as exc:
            raise _Lost() from exc

    # --- databases and tables -----------------------------------------------------------------------

    def database_exists(self, database: str) -> bool:
        found, _ = self._call(ht.GET_DATABASE, _args((1, TType.STRING, database)), f"database {database}",
                              expected=(ht.NSO,))
        return found is not None

    def create_database(self, database: str) -> None:
        """Create it as Hudi does; one that already exists (another writer's sync) is no error."""
        db = TStruct().put(DatabaseF.NAME, TType.STRING, database) \
            .put(DatabaseF.DESCRIPTION, TType.STRING, HUDI_DB_DESCRIPTION)
        self._call(ht.CREATE_DATABASE, _args((1, TType.STRUCT, db)), f"database {database}", expected=(ht.AE,))

    def get_table(self, database: str, name: str) -> TableDef | None:
        raw = self._raw_table(database, name)
        return None if raw is None else table_def(raw)

    def _raw_table(self, database: str, name: str) -> TStruct | None:
        found, _ = self._call(ht.GET_TABLE, _args((1, TType.STRING, database), (2, TType.STRING, name)),
                              f"table {database}.{name}", expected=(ht.NSO,))
        return found

    def _existing_table(self, table: TableDef, purpose: str) -> TStruct:
        raw = self._raw_table(table.database, table.name)
        if raw is None:
            raise MetaSyncError(f"Hive Metastore: table {table.database}.{table.name} does not exist at "
                                f"{self.uri}, cannot {purpose}")
        return raw

    def create_table(self, table: TableDef) -> None:
        self._call(ht.CREATE_TABLE, _args((1, TType.STRUCT, table_struct(table))),
                   f"table {table.database}.{table.name}", retry=False)

    def update_table(self, table: TableDef) -> None:
        new = table_struct(table, base=self._existing_table(table, "update it"))
        context = TStruct().put(ht.ENVIRONMENT_CONTEXT_PROPERTIES, TType.MAP, ht.string_map({}))
        self._call(ht.ALTER_TABLE, _args((1, TType.STRING, table.database), (2, TType.STRING, table.name),
                                         (3, TType.STRUCT, new), (4, TType.STRUCT, context)),
                   f"table {table.database}.{table.name}")

    def drop_table(self, database: str, name: str) -> None:
        """Drop the table's entry, never its files (deleteData=false); a missing table is no error."""
        self._call(ht.DROP_TABLE, _args((1, TType.STRING, database), (2, TType.STRING, name),
                                        (3, TType.BOOL, False)), f"table {database}.{name}", expected=(ht.NSO,))

    # --- partitions ---------------------------------------------------------------------------------

    def list_partitions(self, table: TableDef) -> list[PartitionDef]:
        """Every partition, in one call as Hudi's getAllPartitions (max_parts=-1); none for a missing table."""
        found, _ = self._call(ht.GET_PARTITIONS, _args((1, TType.STRING, table.database),
                                                       (2, TType.STRING, table.name), (3, TType.I16, -1)),
                              f"partitions of {table.database}.{table.name}", expected=(ht.NSO,))
        return [] if found is None else [partition_def(p) for p in found.items]

    def add_partitions(self, table: TableDef, partitions: Sequence[PartitionDef]) -> None:
        if not partitions:
            return
        sd = _sd_of(self._existing_table(table, "add partitions"))
        for batch in _batches(partitions, self.settings.batch_size):
            parts = [partition_struct(table, p, new_partition_sd(sd, p.location)) for p in batch]
            request = TStruct().put(AddPartitionsRequestF.DB_NAME, TType.STRING, table.database) \
                .put(AddPartitionsRequestF.TBL_NAME, TType.STRING, table.name) \
                .put(AddPartitionsRequestF.PARTS, TType.LIST, ht.struct_list(parts)) \
                .put(AddPartitionsRequestF.IF_NOT_EXISTS, TType.BOOL, True) \
                .put(AddPartitionsRequestF.NEED_RESULT, TType.BOOL, False)
            self._call(ht.ADD_PARTITIONS, _args((1, TType.STRUCT, request)),
                       _partitions_what(table, batch))

    def update_partitions(self, table: TableDef, partitions: Sequence[PartitionDef]) -> None:
        if not partitions:
            return
        sd = _sd_of(self._existing_table(table, "update partitions"))
        for batch in _batches(partitions, self.settings.batch_size):
            parts = [partition_struct(table, p, changed_partition_sd(sd, p.location)) for p in batch]
            self._call(ht.ALTER_PARTITIONS, _args((1, TType.STRING, table.database), (2, TType.STRING, table.name),
                                                  (3, TType.LIST, ht.struct_list(parts))),
                       _partitions_what(table, batch))

    def drop_partitions(self, table: TableDef, values: Sequence[tuple[str, ...]]) -> None:
        """One drop_partition per partition (as Hudi), deleteData=false; a missing partition is no error."""
        for vals in values:
            self._call(ht.DROP_PARTITION, _args((1, TType.STRING, table.database), (2, TType.STRING, table.name),
                                                (3, TType.LIST, ht.string_list(list(vals))), (4, TType.BOOL, False)),
                       f"partition {list(vals)} of {table.database}.{table.name}", expected=(ht.NSO,))


# --- records <-> structs ----------------------------------------------------------------------------

def _args(*fields: tuple[int, int, Any]) -> TStruct:
    out = TStruct()
    for fid, ttype, value in fields:
        out.put(fid, ttype, value)
    return out


def _batches(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _partitions_what(table: TableDef, batch: Sequence[PartitionDef]) -> str:
    first = list(batch[0].values)
    more = f" and {len(batch) - 1} more" if len(batch) > 1 else ""
    return f"partitions {first}{more} of {table.database}.{table.name}"


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else bytes(value).decode("utf-8", "replace")


def _columns(value: ht.TList | None) -> list[Column]:
    if value is None:
        return []
    return [Column(_text(f.get(FieldSchemaF.NAME)) or "", _text(f.get(FieldSchemaF.TYPE)) or "",
                   _text(f.get(FieldSchemaF.COMMENT))) for f in value.items]


def _field_schemas(columns: Sequence[Column]) -> ht.TList:
    return ht.struct_list([TStruct().put(FieldSchemaF.NAME, TType.STRING, c.name)
                           .put(FieldSchemaF.TYPE, TType.STRING, c.type)
                           .put(FieldSchemaF.COMMENT, TType.STRING, c.comment) for c in columns])


def _sd_of(raw: TStruct) -> TStruct:
    sd: TStruct | None = raw.get(TableF.SD)
    return sd if sd is not None else TStruct()


def table_def(raw: TStruct) -> TableDef:
    """The record of a metastore Table struct. The table comment is Hive's `comment` parameter."""
    sd = _sd_of(raw)
    serde: TStruct = sd.get(StorageDescriptorF.SERDE_INFO) or TStruct()
    parameters = ht.map_to_dict(raw.get(TableF.PARAMETERS))
    comment = parameters.pop("comment", None)
    return TableDef(
        database=_text(raw.get(TableF.DB_NAME)) or "", name=_text(raw.get(TableF.TABLE_NAME)) or "",
        columns=_columns(sd.get(StorageDescriptorF.COLS)),
        partition_keys=_columns(raw.get(TableF.PARTITION_KEYS)),
        location=_text(sd.get(StorageDescriptorF.LOCATION)) or "",
        input_format=_text(sd.get(StorageDescriptorF.INPUT_FORMAT)) or "",
        output_format=_text(sd.get(StorageDescriptorF.OUTPUT_FORMAT)) or "",
        serde_library=_text(serde.get(SerDeInfoF.SERIALIZATION_LIB)) or "",
        serde_parameters=ht.map_to_dict(serde.get(SerDeInfoF.PARAMETERS)),
        parameters=parameters, table_type=_text(raw.get(TableF.TABLE_TYPE)) or "", comment=comment)


def table_struct(table: TableDef, base: TStruct | None = None) -> TStruct:
    """The Table struct for `table`: HMSDDLExecutor.createTable's fields on a new table, or `base` (the
    metastore's current struct) with the modelled fields replaced and every other field kept.

    An EXTERNAL_TABLE always carries EXTERNAL=TRUE: without it the metastore stores the table as managed
    (ObjectStore.convertToMTable), and a DROP TABLE in Spark or Hive would then delete the Hudi table."""
    out = base.copy() if base is not None else _new_table_struct()
    parameters = dict(table.parameters)
    if table.comment is not None:
        parameters["comment"] = table.comment
    if table.table_type == "EXTERNAL_TABLE":
        parameters.setdefault("EXTERNAL", "TRUE")
    sd = _sd_of(out)
    serde: TStruct = sd.get(StorageDescriptorF.SERDE_INFO) or TStruct()
    serde.put(SerDeInfoF.SERIALIZATION_LIB, TType.STRING, table.serde_library) \
        .put(SerDeInfoF.PARAMETERS, TType.MAP, ht.string_map(dict(table.serde_parameters)))
    sd.put(StorageDescriptorF.COLS, TType.LIST, _field_schemas(table.columns)) \
        .put(StorageDescriptorF.LOCATION, TType.STRING, table.location) \
        .put(StorageDescriptorF.INPUT_FORMAT, TType.STRING, table.input_format) \
        .put(StorageDescriptorF.OUTPUT_FORMAT, TType.STRING, table.output_format) \
        .put(StorageDescriptorF.SERDE_INFO, TType.STRUCT, serde)
    return out.put(TableF.TABLE_NAME, TType.STRING, table.name).put(TableF.DB_NAME, TType.STRING, table.database) \
        .put(TableF.SD, TType.STRUCT, sd) \
        .put(TableF.PARTITION_KEYS, TType.LIST, _field_schemas(table.partition_keys)) \
        .put(TableF.PARAMETERS, TType.MAP, ht.string_map(parameters)) \
        .put(TableF.TABLE_TYPE, TType.STRING, table.table_type)


def _new_table_struct() -> TStruct:
    """The fields Hudi's Java `new Table()` / `new StorageDescriptor()` send besides the modelled ones."""
    sd = TStruct().put(StorageDescriptorF.COMPRESSED, TType.BOOL, False) \
        .put(StorageDescriptorF.NUM_BUCKETS, TType.I32, 0)
    return TStruct().put(TableF.OWNER, TType.STRING, _owner()) \
        .put(TableF.CREATE_TIME, TType.I32, int(time.time())).put(TableF.LAST_ACCESS_TIME, TType.I32, 0) \
        .put(TableF.RETENTION, TType.I32, 0).put(TableF.SD, TType.STRUCT, sd)


def _owner() -> str | None:
    """The table owner, the current user's name as Hudi's UserGroupInformation gives it."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no user name in a bare container
        return None


def new_partition_sd(table_sd: TStruct, location: str) -> TStruct:
    """HMSDDLExecutor.addPartitionsToTable: a new descriptor with the table's columns, formats and SerDe."""
    out = TStruct().put(StorageDescriptorF.LOCATION, TType.STRING, location) \
        .put(StorageDescriptorF.COMPRESSED, TType.BOOL, False).put(StorageDescriptorF.NUM_BUCKETS, TType.I32, 0)
    for fid in (StorageDescriptorF.COLS, StorageDescriptorF.INPUT_FORMAT, StorageDescriptorF.OUTPUT_FORMAT,
                StorageDescriptorF.SERDE_INFO):
        if fid in table_sd.fields:
            ttype, value = table_sd.fields[fid]
            out.put(fid, ttype, ht.copy_value(ttype, value))
    return out


def changed_partition_sd(table_sd: TStruct, location: str) -> TStruct:
    """HMSDDLExecutor.updatePartitionsToTable: the table's whole descriptor with the partition's location."""
    return table_sd.copy().put(StorageDescriptorF.LOCATION, TType.STRING, location)


def partition_struct(table: TableDef, partition: PartitionDef, sd: TStruct) -> TStruct:
    """`new Partition(values, db, table, 0, 0, sd, null)` as Hudi builds it."""
    return TStruct().put(PartitionF.VALUES, TType.LIST, ht.string_list(list(partition.values))) \
        .put(PartitionF.DB_NAME, TType.STRING, table.database).put(PartitionF.TABLE_NAME, TType.STRING, table.name) \
        .put(PartitionF.CREATE_TIME, TType.I32, 0).put(PartitionF.LAST_ACCESS_TIME, TType.I32, 0) \
        .put(PartitionF.SD, TType.STRUCT, sd)


def partition_def(raw: TStruct) -> PartitionDef:
    values: ht.TList | None = raw.get(PartitionF.VALUES)
    sd: TStruct = raw.get(PartitionF.SD) or TStruct()
    return PartitionDef(tuple(_text(v) or "" for v in (values.items if values else [])),
                        _text(sd.get(StorageDescriptorF.LOCATION)) or "")


if TYPE_CHECKING:  # mypy checks that the client is a CatalogClient
    _CLIENT: CatalogClient = HiveMetastoreClient(ConnectionSettings(uris=(), uris_text=""))
