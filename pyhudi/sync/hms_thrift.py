"""The few Hive Metastore Thrift calls meta sync makes, encoded by hand on the `thrift` package's protocols.

Why not generated code or a PyPI client: see docs/architecture.md (meta sync). In short, the calls are a
dozen, the structs they carry are six, and a *generic* codec keeps what a typed one loses: every field of a
struct the metastore sends back, including those of Hive versions newer than the ids below (Hive 3's
catalog names, a table's privileges, column-statistics flags). A read-modify-write (`alter_table`,
`alter_partitions`) therefore sends back every field it did not touch, byte for byte, as Hive's Java client
does with its own objects.

A struct is a `TStruct`: its fields by id, each with its Thrift type. Values are Python values (bool, int,
float, str, bytes for non-UTF-8 strings, `TStruct`, `TList`, `TMap`). Field ids are Hive 2.3's
(hive_metastore.thrift, checked against the generated classes of hive-metastore-2.3.10.jar); ids never
change across Hive versions, which is what lets a 2.3 client talk to a Hive 3 or 4 metastore.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from thrift.Thrift import TApplicationException, TMessageType, TType

# --- field ids (Hive 2.3's IDL) ---------------------------------------------------------------------

class FieldSchemaF:
    NAME, TYPE, COMMENT = 1, 2, 3


class SerDeInfoF:
    NAME, SERIALIZATION_LIB, PARAMETERS = 1, 2, 3


class StorageDescriptorF:
    COLS, LOCATION, INPUT_FORMAT, OUTPUT_FORMAT, COMPRESSED, NUM_BUCKETS = 1, 2, 3, 4, 5, 6
    SERDE_INFO, BUCKET_COLS, SORT_COLS, PARAMETERS = 7, 8, 9, 10


class TableF:
    TABLE_NAME, DB_NAME, OWNER, CREATE_TIME, LAST_ACCESS_TIME, RETENTION = 1, 2, 3, 4, 5, 6
    SD, PARTITION_KEYS, PARAMETERS, TABLE_TYPE = 7, 8, 9, 12


class PartitionF:
    VALUES, DB_NAME, TABLE_NAME, CREATE_TIME, LAST_ACCESS_TIME, SD, PARAMETERS = 1, 2, 3, 4, 5, 6, 7


class DatabaseF:
    NAME, DESCRIPTION, LOCATION_URI, PARAMETERS = 1, 2, 3, 4


class AddPartitionsRequestF:
    DB_NAME, TBL_NAME, PARTS, IF_NOT_EXISTS, NEED_RESULT = 1, 2, 3, 4, 5


ENVIRONMENT_CONTEXT_PROPERTIES = 1
EXCEPTION_MESSAGE = 1  # every metastore exception struct: 1: string message


# --- values -----------------------------------------------------------------------------------------

@dataclass
class TList:
    """A Thrift list (or set: `is_set`) with its element type."""

    elem_type: int
    items: list[Any] = field(default_factory=list)
    is_set: bool = False


@dataclass
class TMap:
    """A Thrift map with its key and value types, as pairs in wire order."""

    key_type: int
    value_type: int
    items: list[tuple[Any, Any]] = field(default_factory=list)


@dataclass
class TStruct:
    """A Thrift struct: field id -> (Thrift type, value). Unknown ids are kept as read."""

    fields: dict[int, tuple[int, Any]] = field(default_factory=dict)

    def get(self, fid: int, default: Any = None) -> Any:
        entry = self.fields.get(fid)
        return default if entry is None else entry[1]

    def put(self, fid: int, ttype: int, value: Any) -> TStruct:
        """Set a field; `None` removes it (Thrift's unset)."""
        if value is None:
            self.fields.pop(fid, None)
        else:
            self.fields[fid] = (ttype, value)
        return self

    def copy(self) -> TStruct:
        """A deep copy, so that a read-modify-write never changes the struct it started from."""
        return copy_value(TType.STRUCT, self)  # type: ignore[no-any-return]


def copy_value(ttype: int, value: Any) -> Any:
    if ttype == TType.STRUCT:
        return TStruct({fid: (t, copy_value(t, v)) for fid, (t, v) in value.fields.items()})
    if ttype in (TType.LIST, TType.SET):
        return TList(value.elem_type, [copy_value(value.elem_type, v) for v in value.items], value.is_set)
    if ttype == TType.MAP:
        return TMap(value.key_type, value.value_type,
                    [(copy_value(value.key_type, k), copy_value(value.value_type, v)) for k, v in value.items])
    return value


def string_map(values: dict[str, str] | None) -> TMap | None:
    return None if values is None else TMap(TType.STRING, TType.STRING, list(values.items()))


def map_to_dict(value: TMap | None) -> dict[str, str]:
    return {} if value is None else {str(k): str(v) for k, v in value.items}


def string_list(values: list[str]) -> TList:
    return TList(TType.STRING, list(values))


def struct_list(values: list[TStruct]) -> TList:
    return TList(TType.STRUCT, list(values))


# --- reading and writing ----------------------------------------------------------------------------

def read_value(prot: Any, ttype: int) -> Any:
    """Read one value of any Thrift type; strings come back as str when they are UTF-8, else bytes."""
    if ttype == TType.STRUCT:
        return read_struct(prot)
    if ttype == TType.STRING:
        raw = prot.readBinary()
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw
    if ttype in (TType.LIST, TType.SET):
        elem_type, size = prot.readListBegin() if ttype == TType.LIST else prot.readSetBegin()
        items = [read_value(prot, elem_type) for _ in range(size)]
        prot.readListEnd() if ttype == TType.LIST else prot.readSetEnd()
        return TList(elem_type, items, ttype == TType.SET)
    if ttype == TType.MAP:
        key_type, value_type, size = prot.readMapBegin()
        pairs = [(read_value(prot, key_type), read_value(prot, value_type)) for _ in range(size)]
        prot.readMapEnd()
        return TMap(key_type, value_type, pairs)
    reader = _SCALAR_READERS.get(ttype)
    if reader is None:
        raise ValueError(f"unknown Thrift type {ttype}")
    return getattr(prot, reader)()


def read_struct(prot: Any) -> TStruct:
    prot.readStructBegin()
    out = TStruct()
    while True:
        _name, ttype, fid = prot.readFieldBegin()
        if ttype == TType.STOP:
            break
        out.fields[fid] = (ttype, read_value(prot, ttype))
        prot.readFieldEnd()
    prot.readStructEnd()
    return out


def write_value(prot: Any, ttype: int, value: Any) -> None:
    if ttype == TType.STRUCT:
        write_struct(prot, value)
    elif ttype == TType.STRING:
        prot.writeBinary(value.encode("utf-8") if isinstance(value, str) else bytes(value))
    elif ttype in (TType.LIST, TType.SET):
        begin, end = (prot.writeSetBegin, prot.writeSetEnd) if ttype == TType.SET else \
            (prot.writeListBegin, prot.writeListEnd)
        begin(value.elem_type, len(value.items))
        for item in value.items:
            write_value(prot, value.elem_type, item)
        end()
    elif ttype == TType.MAP:
        prot.writeMapBegin(value.key_type, value.value_type, len(value.items))
        for key, item in value.items:
            write_value(prot, value.key_type, key)
            write_value(prot, value.value_type, item)
        prot.writeMapEnd()
    else:
        writer = _SCALAR_WRITERS.get(ttype)
        if writer is None:
            raise ValueError(f"unknown Thrift type {ttype}")
        getattr(prot, writer)(value)


def write_struct(prot: Any, struct: TStruct) -> None:
    prot.writeStructBegin("s")
    for fid in sorted(struct.fields):
        ttype, value = struct.fields[fid]
        prot.writeFieldBegin("f", ttype, fid)
        write_value(prot, ttype, value)
        prot.writeFieldEnd()
    prot.writeFieldStop()
    prot.writeStructEnd()


_SCALAR_READERS = {TType.BOOL: "readBool", TType.BYTE: "readByte", TType.I16: "readI16", TType.I32: "readI32",
                   TType.I64: "readI64", TType.DOUBLE: "readDouble"}
_SCALAR_WRITERS = {TType.BOOL: "writeBool", TType.BYTE: "writeByte", TType.I16: "writeI16",
                   TType.I32: "writeI32", TType.I64: "writeI64", TType.DOUBLE: "writeDouble"}


# --- one call ---------------------------------------------------------------------------------------

class RemoteError(Exception):
    """A declared exception of the call (MetaException, NoSuchObjectException, ...): its Hive class name
    and message."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


@dataclass(frozen=True)
class Call:
    """A service method: its name and the Hive exception class behind each result field id."""

    name: str
    exceptions: dict[int, str]


NSO, META, AE = "NoSuchObjectException", "MetaException", "AlreadyExistsException"
IO, IOP = "InvalidObjectException", "InvalidOperationException"
GET_DATABASE = Call("get_database", {1: NSO, 2: META})
CREATE_DATABASE = Call("create_database", {1: AE, 2: IO, 3: META})
GET_TABLE = Call("get_table", {1: META, 2: NSO})
CREATE_TABLE = Call("create_table", {1: AE, 2: IO, 3: META, 4: NSO})
ALTER_TABLE = Call("alter_table_with_environment_context", {1: IOP, 2: META})
DROP_TABLE = Call("drop_table", {1: NSO, 2: META})
GET_PARTITIONS = Call("get_partitions", {1: NSO, 2: META})
ADD_PARTITIONS = Call("add_partitions_req", {1: IO, 2: AE, 3: META})
ALTER_PARTITIONS = Call("alter_partitions_with_environment_context", {1: IOP, 2: META})
DROP_PARTITION = Call("drop_partition", {1: NSO, 2: META})


def invoke(prot: Any, seqid: int, call: Call, args: TStruct) -> Any:
    """Send `call` with `args` (the `<name>_args` struct) and return its `success` value (None for void).

    Raises RemoteError for a declared exception, TApplicationException for a server-side failure outside
    the IDL (an unknown method on an old metastore), and the transport's errors as they come."""
    prot.writeMessageBegin(call.name, TMessageType.CALL, seqid)
    write_struct(prot, args)
    prot.writeMessageEnd()
    prot.trans.flush()
    _name, mtype, _rseqid = prot.readMessageBegin()
    if mtype == TMessageType.EXCEPTION:
        error = TApplicationException()
        error.read(prot)
        prot.readMessageEnd()
        raise error
    result = read_struct(prot)
    prot.readMessageEnd()
    for fid, kind in call.exceptions.items():
        thrown = result.get(fid)
        if thrown is not None:
            raise RemoteError(kind, str(thrown.get(EXCEPTION_MESSAGE, "")))
    return result.get(0)
