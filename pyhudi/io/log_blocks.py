"""Contents of Hudi log blocks: Avro and parquet data, deletes, rollback commands.

Each ``encode_*`` returns a complete framed block (see :mod:`pyhudi.io.log_format`);
each decoder takes a :class:`~pyhudi.io.log_format.LogBlock`. Layouts follow
``hudi-v6-format.md`` §9.4 and Hudi 0.14's ``HoodieAvroDataBlock``,
``HoodieParquetDataBlock``, ``HoodieDeleteBlock`` and ``HoodieCommandBlock``.

Avro datums are encoded with fastavro from plain Python values that this
module prepares itself (timestamps as epoch micros, decimals as two's
complement bytes, dates as epoch days). Doing the logical-type conversion here
rather than in fastavro keeps the bytes identical to Java's ``GenericDatumWriter``
and avoids fastavro's local-time reading of naive datetimes.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import struct
import zlib
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any, NamedTuple

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq

from pyhudi.errors import CorruptFileError, InvalidRecordError, UnsupportedTableError
from pyhudi.io.column_encoding import ColumnChoice
from pyhudi.io.log_format import (
    ROLLBACK_COMMAND,
    BlockType,
    HeaderKey,
    LogBlock,
    encode_block,
)

CONTENT_VERSION = 3
"""``HoodieLogBlock.version`` in Hudi 0.14/0.15: first int32 of Avro and delete contents."""

_I32 = struct.Struct(">i")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_EPOCH_DATE = dt.date(1970, 1, 1)
_MICRO = dt.timedelta(microseconds=1)

# ---- Avro schema walking -----------------------------------------------------------------------

_PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}


class _Names:
    """Named Avro types by full name, so references like ``"ns.Rec"`` can be followed."""

    def __init__(self, schema: Any) -> None:
        self.types: dict[str, dict[str, Any]] = {}
        self._collect(schema, "")

    @staticmethod
    def full_name(node: dict[str, Any], ns: str) -> tuple[str, str]:
        name = str(node["name"])
        if "." in name:
            return name, name.rsplit(".", 1)[0]
        space = str(node.get("namespace", ns) or "")
        return (f"{space}.{name}" if space else name), space

    def _collect(self, node: Any, ns: str) -> None:
        if isinstance(node, list):
            for branch in node:
                self._collect(branch, ns)
        elif isinstance(node, dict):
            kind = node.get("type")
            if kind in ("record", "error", "enum", "fixed"):
                full, ns = self.full_name(node, ns)
                self.types[full] = node
            if kind in ("record", "error"):
                for f in node.get("fields", []):
                    self._collect(f["type"], ns)
            elif kind == "array":
                self._collect(node["items"], ns)
            elif kind == "map":
                self._collect(node["values"], ns)
            elif isinstance(kind, (dict, list)):
                self._collect(kind, ns)

    def resolve(self, ref: str, ns: str) -> tuple[dict[str, Any], str]:
        for cand in (f"{ns}.{ref}" if ns else ref, ref):
            if cand in self.types:
                node = self.types[cand]
                return node, self.full_name(node, ns)[1]
        raise InvalidRecordError(f"Avro schema references unknown type {ref!r}; check the SCHEMA JSON")


def _parse_schema_json(schema_json: str) -> Any:
    try:
        return json.loads(schema_json)
    except json.JSONDecodeError as exc:
        raise CorruptFileError(f"log block SCHEMA header is not valid JSON: {exc}") from exc


# ---- Python/Arrow values -> Avro-ready values --------------------------------------------------


def _java_bigint_bytes(n: int) -> bytes:
    """Minimal big-endian two's complement, like ``BigInteger.toByteArray``."""
    bits = n.bit_length() if n >= 0 else (~n).bit_length()
    return n.to_bytes(bits // 8 + 1, "big", signed=True)


def _unscaled(value: Any, scale: int, precision: int) -> int:
    """Unscaled integer of a decimal at ``scale``; refuses values that would lose digits."""
    d = value if isinstance(value, Decimal) else Decimal(str(value))
    q = d.scaleb(scale)
    if q != q.to_integral_value():
        raise InvalidRecordError(f"decimal {value} has more than {scale} fractional digits")
    n = int(q)
    if len(str(abs(n))) > precision:
        raise InvalidRecordError(f"decimal {value} does not fit decimal({precision},{scale})")
    return n


def _micros(value: Any) -> int:
    """Epoch microseconds; naive datetimes are UTC wall clock, as in Spark's Avro conversion."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        return (value - _EPOCH) // _MICRO
    return int(value)


def _convert_logical(node: dict[str, Any], value: Any) -> Any:
    logical = node.get("logicalType")
    base = node["type"]
    if logical == "decimal":
        scale, precision = int(node.get("scale", 0)), int(node["precision"])
        if isinstance(value, (bytes, bytearray)):
            return bytes(value)
        n = _unscaled(value, scale, precision)
        if base == "fixed":
            return n.to_bytes(int(node["size"]), "big", signed=True)
        return _java_bigint_bytes(n)
    if logical == "date" and isinstance(value, dt.date):
        return (value - _EPOCH_DATE).days
    if logical in ("timestamp-micros", "local-timestamp-micros"):
        return _micros(value)
    if logical in ("timestamp-millis", "local-timestamp-millis"):
        return _micros(value) // 1000 if isinstance(value, dt.datetime) else int(value)
    if logical in ("time-micros", "time-millis") and isinstance(value, dt.time):
        us = ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
        return us if logical == "time-micros" else us // 1000
    return _convert_plain(base, value) if base in _PRIMITIVES else value


def _convert_plain(kind: str, value: Any) -> Any:
    if kind in ("int", "long"):
        return int(value)
    if kind in ("float", "double"):
        return float(value)
    if kind == "boolean":
        return bool(value)
    if kind == "string":
        return str(value)
    if kind == "bytes":
        return bytes(value)
    return value


_PY_TYPES: dict[str, tuple[type, ...]] = {
    "boolean": (bool,), "int": (int,), "long": (int,), "float": (float, int), "double": (float, int),
    "string": (str,), "bytes": (bytes, bytearray), "record": (dict,), "map": (dict, list), "array": (list,),
}  # fmt: skip


def _branch_accepts(branch: Any, value: Any) -> bool:
    """Cheap type test used only for unions with several non-null branches."""
    kind = branch.get("type") if isinstance(branch, dict) else branch
    return isinstance(value, _PY_TYPES.get(str(kind), (object,)))


def _to_avro(node: Any, value: Any, ns: str, names: _Names) -> Any:
    """Convert one value (as produced by ``pyarrow`` ``to_pylist``) to what the schema expects."""
    if value is None:
        return None
    if isinstance(node, list):
        branches = [b for b in node if b != "null"]
        if len(branches) == 1:
            return _to_avro(branches[0], value, ns, names)
        for branch in branches:
            if _branch_accepts(branch, value):
                return _to_avro(branch, value, ns, names)
        return value
    if isinstance(node, str):
        if node in _PRIMITIVES:
            return _convert_plain(node, value)
        ref, ref_ns = names.resolve(node, ns)
        return _to_avro(ref, value, ref_ns, names)
    kind = node["type"]
    if "logicalType" in node:
        return _convert_logical(node, value)
    if kind in ("record", "error"):
        _, inner_ns = _Names.full_name(node, ns)
        return {
            f["name"]: _to_avro(f["type"], value.get(f["name"], f.get("default")), inner_ns, names)
            for f in node["fields"]
        }
    if kind == "array":
        return [_to_avro(node["items"], v, ns, names) for v in value]
    if kind == "map":
        pairs = value.items() if isinstance(value, dict) else value
        return {str(k): _to_avro(node["values"], v, ns, names) for k, v in pairs}
    if kind == "fixed":
        return bytes(value)
    if kind == "enum":
        return str(value)
    if isinstance(kind, (dict, list)) or kind in _PRIMITIVES:
        return _to_avro(kind, value, ns, names)
    return value


def table_to_avro_records(table: pa.Table, avro_schema_json: str) -> list[dict[str, Any]]:
    """Rows of ``table`` as Avro-ready dicts; columns absent from the table become null/default."""
    schema = _parse_schema_json(avro_schema_json)
    names = _Names(schema)
    return [_to_avro(schema, row, "", names) for row in table.to_pylist()]


# ---- Partial updates (IS_PARTIAL, Hudi 1.x) -----------------------------------------------------


def check_full_records(block: LogBlock) -> None:
    """Refuse a data block of partial updates (header ``IS_PARTIAL=true``, table version 8+).

    Such a block's SCHEMA lists only the columns an update set (Hudi 1.x Spark SQL MERGE INTO on a MOR
    table writes one under default options whenever the matched update assigns a strict subset of the
    columns: ``MergeIntoHoodieTableCommand``, ``hoodie.spark.sql.merge.into.partial.updates`` default
    true). Hudi merges it field by field: the columns the block lacks come from the older record
    (``SparkRecordMergingUtils.mergePartialRecords``, the file group reader's partial merger). pyhudi's
    merge picks one whole record per key, so it would read the missing columns as null: refused instead,
    naming the file and how to get full records.
    """
    if not block.is_partial:
        return
    listed = [n for n in _schema_field_names(block.header.get(HeaderKey.SCHEMA)) if not n.startswith("_hoodie_")]
    raise UnsupportedTableError(
        f"{block.source or 'log file'}: the {block.block_type.name} at offset {block.offset} (instant "
        f"{block.instant_time}) has header IS_PARTIAL=true: its records are partial updates holding only the "
        f"columns {listed}, whose other columns come from older versions of each record. pyhudi does not "
        "merge partial updates and refuses the file rather than read those columns as null. Compact the "
        "file group with Apache Hudi (compaction writes whole records) or read the table with Apache Hudi; "
        "writers avoid such blocks with hoodie.spark.sql.merge.into.partial.updates=false")


def _schema_field_names(schema_json: str | None) -> list[str]:
    """The top-level field names of a SCHEMA header, for messages (empty when it does not parse)."""
    try:
        return [str(f["name"]) for f in json.loads(schema_json or "").get("fields", [])]
    except (ValueError, AttributeError, KeyError, TypeError):
        return []


# ---- Avro data block (type 3) ------------------------------------------------------------------


def encode_avro_records(records: Sequence[dict[str, Any]], avro_schema_json: str) -> bytes:
    """Avro block content: version, count, then per record int32 length + binary datum."""
    parsed = fastavro.parse_schema(_parse_schema_json(avro_schema_json))
    parts = [_I32.pack(CONTENT_VERSION), _I32.pack(len(records))]
    buf = io.BytesIO()
    for rec in records:
        buf.seek(0)
        buf.truncate()
        fastavro.schemaless_writer(buf, parsed, rec)
        datum = buf.getvalue()
        parts.append(_I32.pack(len(datum)))
        parts.append(datum)
    return b"".join(parts)


def encode_avro_data_block(records_table: pa.Table, avro_schema_json: str, instant: str,
                           extra_header: Mapping[HeaderKey, str] | None = None) -> bytes:
    """Complete AVRO_DATA block holding every row of ``records_table``.

    The header carries ``INSTANT_TIME`` and the writer ``SCHEMA`` (the table
    schema with meta fields), as Hudi's append handle writes it; ``extra_header``
    adds entries (the other keys Hudi 1.x writes, for tests of how readers take them).
    """
    records = table_to_avro_records(records_table, avro_schema_json)
    content = encode_avro_records(records, avro_schema_json)
    header = {HeaderKey.INSTANT_TIME: instant, HeaderKey.SCHEMA: avro_schema_json, **(extra_header or {})}
    return encode_block(BlockType.AVRO_DATA_BLOCK, header, content)


def _split_records(content: bytes, offset: int) -> tuple[int, list[memoryview]]:
    """Return the record count and each record's datum bytes, bounds-checked."""
    view = memoryview(content)
    if len(content) < offset + 4:
        raise CorruptFileError("Avro data block content is too short for a record count")
    count = _I32.unpack_from(content, offset)[0]
    pos = offset + 4
    datums: list[memoryview] = []
    for i in range(count):
        if pos + 4 > len(content):
            raise CorruptFileError(f"Avro data block ends before record {i} of {count}")
        length = _I32.unpack_from(content, pos)[0]
        pos += 4
        if length < 0 or pos + length > len(content):
            raise CorruptFileError(f"Avro record {i} length {length} overruns the block content")
        datums.append(view[pos : pos + length])
        pos += length
    return count, datums


def _legacy_schema_and_offset(content: bytes) -> tuple[str, int]:
    """Format-version-0 content starts with a zlib-deflated writer schema."""
    n = _I32.unpack_from(content, 0)[0]
    try:
        schema = zlib.decompress(content[4 : 4 + n]).decode("utf-8")
    except (zlib.error, UnicodeDecodeError) as exc:
        raise CorruptFileError(f"legacy Avro block schema cannot be inflated: {exc}") from exc
    return schema, 4 + n


def _newer_content(block: LogBlock, kind: str, version: int) -> UnsupportedTableError:
    """A content version above Hudi 0.14/0.15's: a newer writer's layout, refused with the file named."""
    return UnsupportedTableError(
        f"{block.source or 'log file'}: the {kind} block at offset {block.offset} has content version {version}; "
        f"pyhudi reads versions up to {CONTENT_VERSION} (Hudi 0.14/0.15), so it refuses the file rather than "
        "misread it; read the table with Apache Hudi")


def decode_avro_data_block(block: LogBlock, reader_schema_json: str | None = None) -> list[dict[str, Any]]:
    """Records of an Avro data block as dicts, resolved to ``reader_schema_json`` if given.

    The datums are read with the block's own ``SCHEMA`` header as writer schema,
    which is what makes older blocks readable after schema evolution.
    """
    if block.block_type != BlockType.AVRO_DATA_BLOCK:
        raise ValueError(f"expected an AVRO_DATA_BLOCK, got {block.block_type.name}")
    check_full_records(block)
    content = block.content
    if block.format_version == 0:
        writer_json, offset = _legacy_schema_and_offset(content)
    else:
        writer_json = block.header.get(HeaderKey.SCHEMA) or ""
        if not writer_json:
            raise CorruptFileError("Avro data block has no SCHEMA header")
        if len(content) < 4:
            raise CorruptFileError("Avro data block content is empty")
        version = _I32.unpack_from(content, 0)[0]
        if version > CONTENT_VERSION:
            raise _newer_content(block, "Avro data", version)
        if version < 1:
            raise CorruptFileError(f"unsupported Avro data block content version {version}")
        offset = 4
    writer = fastavro.parse_schema(_parse_schema_json(writer_json))
    reader = fastavro.parse_schema(_parse_schema_json(reader_schema_json)) if reader_schema_json else None
    _, datums = _split_records(content, offset)
    out: list[dict[str, Any]] = []
    for datum in datums:
        rec = fastavro.schemaless_reader(io.BytesIO(datum), writer, reader)
        out.append(rec)  # type: ignore[arg-type]
    return out


def avro_schema_to_arrow(avro_schema_json: str) -> pa.Schema:
    """Arrow schema matching what Spark/hudi-rs produce for a Hudi Avro record schema."""
    from pyhudi.io import schema as S

    return S.avro_to_arrow(S.from_json(avro_schema_json))


def avro_block_to_arrow(block: LogBlock, arrow_schema: pa.Schema | None = None) -> pa.Table:
    """Records of an Avro data block as an Arrow table (schema derived from SCHEMA if not given)."""
    records = decode_avro_data_block(block)
    if arrow_schema is None:
        writer_json = block.header.get(HeaderKey.SCHEMA)
        if writer_json is None:
            raise CorruptFileError("cannot derive an Arrow schema: block has no SCHEMA header")
        arrow_schema = avro_schema_to_arrow(writer_json)
    return pa.Table.from_pylist(records, schema=arrow_schema)


# ---- Parquet data block (type 5) ---------------------------------------------------------------


def _conform(table: pa.Table, target: pa.Schema) -> pa.Table:
    """Select/cast ``table`` to ``target`` so the parquet matches the SCHEMA header."""
    from pyhudi.io.schema import conform_table

    return conform_table(table.select([c for c in table.column_names if c in target.names]), target)


def encode_parquet_data_block(
    records_table: pa.Table,
    avro_schema_json: str,
    instant: str,
    compression: str = "gzip",
    extra_header: Mapping[HeaderKey, str] | None = None,
    raw_columns: frozenset[str] = frozenset(),
) -> bytes:
    """Complete PARQUET_DATA block: a whole parquet file as content (``extra_header``: as for Avro).

    GZIP is Hudi's default ``hoodie.parquet.compression.codec``. The Avro
    schema also goes into the parquet footer as ``parquet.avro.schema``, as
    Hudi's Avro parquet writer does, so parquet-avro readers resolve it. ``raw_columns`` are stored
    uncompressed, as the table's base files store them (`io/column_encoding`), so a compacted file's size
    follows its logs'.
    """
    table = _conform(records_table, avro_schema_to_arrow(avro_schema_json))
    sink = io.BytesIO()
    codecs = ColumnChoice(raw=raw_columns).compression(table.schema, compression)
    with pq.ParquetWriter(sink, table.schema, compression=codecs, store_schema=False) as writer:
        writer.write_table(table)
        writer.add_key_value_metadata({"parquet.avro.schema": avro_schema_json, "writer.model.name": "avro"})
    header = {HeaderKey.INSTANT_TIME: instant, HeaderKey.SCHEMA: avro_schema_json, **(extra_header or {})}
    return encode_block(BlockType.PARQUET_DATA_BLOCK, header, sink.getvalue())


def parquet_block_to_arrow(block: LogBlock) -> pa.Table:
    """Rows of a parquet data block."""
    if block.block_type != BlockType.PARQUET_DATA_BLOCK:
        raise ValueError(f"expected a PARQUET_DATA_BLOCK, got {block.block_type.name}")
    check_full_records(block)
    try:
        return pq.read_table(pa.BufferReader(block.content))
    except (pa.ArrowInvalid, OSError) as exc:
        raise CorruptFileError(f"parquet data block at offset {block.offset} is unreadable: {exc}") from exc


# ---- Delete block (type 1) ---------------------------------------------------------------------
# Private copy of org.apache.hudi.avro.model.HoodieDeleteRecordList as shipped with
# Hudi 0.14 (orderingVal is a union of value wrappers; Hudi 1.x changed it to an
# array). pyhudi/model/avro_models.py was not available when this was written.

_WRAPPERS: list[tuple[str, Any]] = [
    ("BooleanWrapper", "boolean"), ("IntWrapper", "int"), ("LongWrapper", "long"),
    ("FloatWrapper", "float"), ("DoubleWrapper", "double"), ("BytesWrapper", "bytes"),
    ("StringWrapper", "string"), ("DateWrapper", "int"),
    ("DecimalWrapper", {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15}),
    ("TimeMicrosWrapper", {"type": "long", "logicalType": "time-micros"}),
    ("TimestampMicrosWrapper", "long"),
]  # fmt: skip
_MODEL_NS = "org.apache.hudi.avro.model"
_ORDERING_UNION = ["null"] + [
    {"type": "record", "name": n, "fields": [{"name": "value", "type": t}]} for n, t in _WRAPPERS
]
_DELETE_RECORD = {
    "type": "record",
    "name": "HoodieDeleteRecord",
    "fields": [
        {"name": "recordKey", "type": ["null", "string"], "default": None},
        {"name": "partitionPath", "type": ["null", "string"], "default": None},
        {"name": "orderingVal", "type": _ORDERING_UNION, "default": None},
    ],
}
DELETE_RECORD_LIST_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "HoodieDeleteRecordList",
    "namespace": _MODEL_NS,
    "fields": [{"name": "deleteRecordList", "type": {"type": "array", "items": _DELETE_RECORD}}],
}
_DELETE_PARSED = fastavro.parse_schema(DELETE_RECORD_LIST_SCHEMA)


class Ordering(NamedTuple):
    """An ordering value pinned to one wrapper, e.g. ``Ordering("LongWrapper", 5)``.

    Python has one ``int``; Java picks ``IntWrapper`` or ``LongWrapper`` from the
    column type. Use this when the ordering field is a ``long`` with small values.
    """

    wrapper: str
    value: Any


def _wrap_ordering(value: Any) -> dict[str, Any] | None:
    """Mirror ``HoodieAvroUtils.wrapValueIntoAvro`` for Python (and numpy) values."""
    if value is None:
        return None
    if type(value).__module__ == "numpy":
        value = _numpy_ordering(value)
    if isinstance(value, Ordering):
        name, raw = value.wrapper, value.value
    elif isinstance(value, bool):
        name, raw = "BooleanWrapper", value
    elif isinstance(value, int):
        name, raw = ("IntWrapper" if -(2**31) <= value < 2**31 else "LongWrapper"), value
    elif isinstance(value, float):
        name, raw = "DoubleWrapper", value
    elif isinstance(value, str):
        name, raw = "StringWrapper", value
    elif isinstance(value, (bytes, bytearray)):
        name, raw = "BytesWrapper", bytes(value)
    elif isinstance(value, dt.datetime):
        name, raw = "TimestampMicrosWrapper", _micros(value)
    elif isinstance(value, dt.date):
        name, raw = "DateWrapper", (value - _EPOCH_DATE).days
    elif isinstance(value, Decimal):
        name, raw = "DecimalWrapper", _java_bigint_bytes(_unscaled(value, 15, 30))
    else:
        raise InvalidRecordError(f"unsupported ordering value type {type(value).__name__}: {value!r}")
    return {"-type": f"{_MODEL_NS}.{name}", "value": raw}


def _numpy_ordering(value: Any) -> Any:
    """numpy scalars know their width, so they pick Int/Long and Float/Double like Java."""
    kind, wide = value.dtype.kind, value.dtype.itemsize >= 8
    if kind in "iu":
        return Ordering("LongWrapper" if wide else "IntWrapper", int(value))
    if kind == "f":
        return Ordering("DoubleWrapper" if wide else "FloatWrapper", float(value))
    return value.item()


def encode_delete_block(
    keys: Sequence[tuple[str | None, str | None, Any]],
    instant: str,
    avro_schema_json: str | None = None,
    extra_header: Mapping[HeaderKey, str] | None = None,
) -> bytes:
    """Complete DELETE block for ``(record_key, partition_path, ordering_value)`` tuples.

    Content is int32 version 3, int32 datum length, one ``HoodieDeleteRecordList``
    datum. Spark also puts the table schema in the header; pass it to match.
    """
    datum = {
        "deleteRecordList": [
            {"recordKey": k, "partitionPath": p, "orderingVal": _wrap_ordering(o)} for k, p, o in keys
        ]
    }
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, _DELETE_PARSED, datum)
    payload = buf.getvalue()
    content = _I32.pack(CONTENT_VERSION) + _I32.pack(len(payload)) + payload
    header: dict[HeaderKey, str] = {HeaderKey.INSTANT_TIME: instant}
    if avro_schema_json is not None:
        header[HeaderKey.SCHEMA] = avro_schema_json
    header.update(extra_header or {})
    return encode_block(BlockType.DELETE_BLOCK, header, content)


def _unwrap_ordering(wrapped: Any) -> Any:
    """Mirror ``unwrapAvroValueWrapper``: dates, decimals and timestamps come back typed."""
    if wrapped is None:
        return None
    name, value = wrapped
    short = str(name).rsplit(".", 1)[-1]
    if short == "DateWrapper":
        return _EPOCH_DATE + dt.timedelta(days=value["value"])
    if short == "TimestampMicrosWrapper":
        return _EPOCH + dt.timedelta(microseconds=value["value"])
    return value["value"]


def delete_records(block: LogBlock) -> list[tuple[str | None, str | None, str | None, Any]]:
    """``(record_key, partition_path, wrapper, raw_value)`` of each deleted key, for every block version.

    ``wrapper`` is the short Avro wrapper name (``IntWrapper``...) and ``raw_value`` its value as stored;
    readers need the wrapper class (Java compares ordering values of the same class only). Versions 1 and
    2 (Kryo ``HoodieKey[]`` / ``DeleteRecord[]``, still in tables of version 4/5 and in version-6 tables
    upgraded from them) map each Java class to the wrapper v3 would use.
    """
    if block.block_type != BlockType.DELETE_BLOCK:
        raise ValueError(f"expected a DELETE_BLOCK, got {block.block_type.name}")
    content = block.content
    where = f"{block.source or 'log file'} (delete block at offset {block.offset})"
    if len(content) < 8:
        raise CorruptFileError(f"{where}: delete block content is too short")
    version, length = struct.unpack_from(">ii", content, 0)
    if length < 0 or 8 + length > len(content):
        raise CorruptFileError(f"{where}: delete block datum length {length} overruns the content")
    data = content[8 : 8 + length]
    if version in (1, 2):
        from pyhudi.io.kryo_delete import decode_kryo_deletes

        return decode_kryo_deletes(version, data, where)
    if version > CONTENT_VERSION:
        raise _newer_content(block, "delete", version)
    if version != CONTENT_VERSION:
        raise CorruptFileError(f"{where}: unknown delete block version {version}")
    try:
        rec: Any = fastavro.schemaless_reader(io.BytesIO(data), _DELETE_PARSED, None, return_record_name=True)
    except Exception as exc:  # noqa: BLE001 - fastavro raises IndexError/EOFError/ValueError/... on foreign data
        raise UnsupportedTableError(
            f"{where}: the delete block cannot be decoded ({type(exc).__name__}: {exc}); its ordering values may be "
            "of a type pyhudi does not know (Hudi 1.1 writes ArrayWrapper values for tables with several ordering "
            "fields), or the block is damaged. Its deletes cannot be ignored: read the table with Apache Hudi, or "
            "compact it with Hudi first") from exc
    out: list[tuple[str | None, str | None, str | None, Any]] = []
    for item in rec["deleteRecordList"]:
        wrapped = item["orderingVal"]
        if wrapped is None:
            out.append((item["recordKey"], item["partitionPath"], None, None))
        else:
            name, value = wrapped
            out.append((item["recordKey"], item["partitionPath"], str(name).rsplit(".", 1)[-1], value["value"]))
    return out


def decode_delete_block(block: LogBlock) -> list[tuple[str | None, str | None, Any]]:
    """``(record_key, partition_path, ordering_value)`` for each deleted key."""
    return [(k, p, _unwrap_ordering((w, {"value": v}) if w is not None else None))
            for k, p, w, v in delete_records(block)]


# ---- Command block (type 0) --------------------------------------------------------------------


def encode_rollback_block(rollback_instant: str, target_instant: str) -> bytes:
    """Complete ROLLBACK command block: empty content, three header entries.

    v6 rollbacks of appended logs write this into a new log file version; readers
    then ignore every block whose instant equals ``target_instant``.
    """
    header = {
        HeaderKey.INSTANT_TIME: rollback_instant,
        HeaderKey.TARGET_INSTANT_TIME: target_instant,
        HeaderKey.COMMAND_BLOCK_TYPE: ROLLBACK_COMMAND,
    }
    return encode_block(BlockType.COMMAND_BLOCK, header, b"")
