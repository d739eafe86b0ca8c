"""Read and write the Avro records of Hudi's timeline (plans, service metadata, archive).

Timeline instant files for plans and service metadata (``.compaction.requested``,
``.clean.requested``, ``.clean``, ``.rollback.requested``, ``.rollback``,
``.replacecommit.requested``, ``.savepoint``, ``.restore.requested``, ``.restore``) are
Avro object container files holding exactly one record.  Hudi 0.14/0.15 write them with
``TimelineMetadataUtils.serializeAvroMetadata``: a ``DataFileWriter`` over the generated
class's schema, **no codec** (so the header carries only ``avro.schema``, no
``avro.codec``), a random 16-byte sync marker and a single block.  The embedded schema is
the generated class's ``SCHEMA$`` printed by Java: compact JSON, named types inlined at
first use, namespace only on the outer record, ``"avro.java.string":"String"`` on every
string and map type.  :func:`avro_schema_json` reproduces that text byte for byte (checked
against the sample ``.replacecommit.requested`` files).

Records are plain dicts keyed by Avro field names.  Values of a union that holds more
than one record type (only ``HoodieDeleteRecord.orderingVal``) are ``(full_name, dict)``
tuples, e.g. ``("org.apache.hudi.avro.model.IntWrapper", {"value": 0})``; build them with
:func:`ordering_value`.

Delete log blocks carry one schemaless ``HoodieDeleteRecordList`` datum: use
:func:`encode_avro_datum` / :func:`decode_avro_datum`.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Mapping
from functools import cache
from typing import Any

import fastavro
import fastavro.validation

from pyhudi.errors import CorruptFileError
from pyhudi.model.avro_records import *  # noqa: F403 - the record builders, re-exported: callers use this module
from pyhudi.model.avro_schemas import (
    ADDED_IN_1X,
    CHANGED_IN_1X,
    NAMESPACE,
    SCHEMAS,
    TOP_LEVEL_SCHEMAS,
    AvroModelError,
    UnknownAvroSchemaError,
    simple_name,
)

AVRO_MAGIC = b"Obj\x01"
_SYNC_SIZE = 16
_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
_JAVA_STRING = {"avro.java.string": "String"}


# ---------------------------------------------------------------------------------------
# Schemas
# ---------------------------------------------------------------------------------------


def _lookup(schema_name: str) -> str:
    simple = simple_name(schema_name)
    if simple not in SCHEMAS:
        known = ", ".join(TOP_LEVEL_SCHEMAS)
        raise UnknownAvroSchemaError(
            f"unknown Hudi Avro schema {schema_name!r}; use one of {known} (or a nested record name)"
        )
    return simple


def full_name(schema_name: str) -> str:
    """``org.apache.hudi.avro.model.<Name>`` for a known schema name (simple or full)."""
    return f"{NAMESPACE}.{_lookup(schema_name)}"


def _java_type(node: Any, seen: set[str]) -> Any:
    """Convert an .avsc-style node to the JSON tree Java's Schema.toString() prints."""
    if isinstance(node, str):
        if node == "string":
            return {"type": "string", **_JAVA_STRING}
        if node in _PRIMITIVES:
            return node
        return _java_named(_lookup(node), seen, top=False)
    if isinstance(node, list):
        return [_java_type(branch, seen) for branch in node]
    kind = node["type"]
    props = {k: v for k, v in node.items() if k not in ("type", "items", "values", "doc", "name")}
    if kind == "array":
        return {"type": "array", "items": _java_type(node["items"], seen), **props}
    if kind == "map":
        return {"type": "map", "values": _java_type(node["values"], seen), **_JAVA_STRING, **props}
    if kind == "record":  # only reached through _java_named
        raise AssertionError("records are referenced by name in avro_schemas")
    if kind == "string" and "logicalType" not in props:
        return {"type": "string", **_JAVA_STRING, **props}
    return {"type": kind, **props} if props else kind


def _java_named(simple: str, seen: set[str], top: bool) -> Any:
    if simple in seen:
        return simple
    seen.add(simple)
    definition = SCHEMAS[simple]
    out: dict[str, Any] = {"type": "record", "name": simple}
    if top:
        out["namespace"] = NAMESPACE
    if "doc" in definition:
        out["doc"] = definition["doc"]
    fields = []
    for field in definition["fields"]:
        printed: dict[str, Any] = {"name": field["name"], "type": _java_type(field["type"], seen)}
        if "doc" in field:
            printed["doc"] = field["doc"]
        if "default" in field:
            printed["default"] = field["default"]
        fields.append(printed)
    out["fields"] = fields
    return out


@cache
def avro_schema_json(schema_name: str) -> str:
    """The schema text Hudi's Java writer embeds for ``schema_name`` (byte-compatible)."""
    tree = _java_named(_lookup(schema_name), set(), top=True)
    return json.dumps(tree, separators=(",", ":"), ensure_ascii=False)


def avro_schema(schema_name: str) -> dict[str, Any]:
    """The full, self-contained schema of ``schema_name`` as a parse-ready dict (a fresh copy)."""
    result: dict[str, Any] = json.loads(avro_schema_json(schema_name))
    return result


@cache
def _parsed(schema_name: str) -> Any:
    return fastavro.parse_schema(avro_schema(schema_name))


# ---------------------------------------------------------------------------------------
# Encoding
# ---------------------------------------------------------------------------------------


def _zigzag_long(value: int) -> bytes:
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _avro_bytes(value: bytes) -> bytes:
    return _zigzag_long(len(value)) + value


def _explain_invalid(simple: str, record: Any, exc: Exception) -> AvroModelError:
    detail = str(exc)
    try:
        fastavro.validation.validate(record, _parsed(simple), raise_errors=True, strict=True)
    except Exception as validation_error:  # noqa: BLE001 - fastavro raises several kinds
        detail = str(validation_error)
    return AvroModelError(
        f"record does not fit Hudi schema {full_name(simple)}: {detail}. "
        f"Build it with the helpers in pyhudi.model.avro_models or check field names and types."
    )


def encode_avro_datum(schema_name: str, record: Mapping[str, Any]) -> bytes:
    """Schemaless Avro binary of ``record`` (no container), as in delete log blocks."""
    simple = _lookup(schema_name)
    buf = io.BytesIO()
    try:
        fastavro.schemaless_writer(buf, _parsed(simple), record, strict_allow_default=True)
    except Exception as exc:  # noqa: BLE001 - fastavro raises ValueError/TypeError/KeyError/...
        raise _explain_invalid(simple, record, exc) from exc
    return buf.getvalue()


def decode_avro_datum(schema_name: str, data: bytes, writer_schema: Mapping[str, Any] | None = None) -> dict:
    """Decode one schemaless datum written with ``schema_name`` (or ``writer_schema``, if given).

    With ``writer_schema`` the datum is decoded with that schema and resolved onto ours,
    the way Java reads records written by another Hudi version.
    """
    simple = _lookup(schema_name)
    writer = fastavro.parse_schema(dict(writer_schema)) if writer_schema is not None else _parsed(simple)
    reader = _parsed(simple) if writer_schema is not None else None
    buf = io.BytesIO(data)
    try:
        record = fastavro.schemaless_reader(
            buf, writer, reader, return_record_name=True, return_record_name_override=True
        )
    except Exception as exc:  # noqa: BLE001
        raise CorruptFileError(
            f"cannot decode {len(data)} bytes as an Avro {full_name(simple)} datum: {exc}"
        ) from exc
    if buf.tell() != len(data):
        raise CorruptFileError(
            f"Avro {full_name(simple)} datum is {buf.tell()} bytes but {len(data)} were given; "
            f"the block is corrupt or was written with another schema"
        )
    if not isinstance(record, dict):
        raise CorruptFileError(f"Avro datum of {full_name(simple)} did not decode to a record")
    return record


def write_instant_avro(
    schema_name: str, record: Mapping[str, Any], *, sync_marker: bytes | None = None
) -> bytes:
    """An Avro object container holding ``record``, laid out as Hudi's Java writer does.

    ``sync_marker`` (16 bytes) is random unless given (tests pass a fixed one).
    """
    simple = _lookup(schema_name)
    return container_bytes(avro_schema_json(simple), encode_avro_datum(simple, record), sync_marker)


def container_bytes(schema_text: str, datum: bytes, sync_marker: bytes | None = None) -> bytes:
    """One datum in an Avro object container as Hudi's Java writer lays out every timeline file: a metadata
    map with only `avro.schema` (null codec), the sync marker (random unless given), one block."""
    if sync_marker is None:
        sync_marker = os.urandom(_SYNC_SIZE)
    if len(sync_marker) != _SYNC_SIZE:
        raise AvroModelError(f"sync_marker must be {_SYNC_SIZE} bytes, got {len(sync_marker)}")
    header = (AVRO_MAGIC + _zigzag_long(1) + _avro_bytes(b"avro.schema") + _avro_bytes(schema_text.encode("utf-8"))
              + _zigzag_long(0) + sync_marker)
    return header + _zigzag_long(1) + _zigzag_long(len(datum)) + datum + sync_marker


def _open_container(data: bytes, reader_schema: Any = None) -> Any:
    if not isinstance(data, bytes | bytearray | memoryview):
        raise AvroModelError(f"expected the instant file's bytes, got {type(data).__name__}")
    data = bytes(data)
    if not data:
        raise CorruptFileError(
            "instant file is empty (0 bytes); Hudi leaves some inflight instants empty, read the "
            "matching .requested instant instead"
        )
    if not data.startswith(AVRO_MAGIC):
        raise CorruptFileError(
            f"not an Avro object container: starts with {data[:8]!r} instead of {AVRO_MAGIC!r} "
            f"(a JSON commit file or a truncated write?)"
        )
    try:
        return fastavro.reader(
            io.BytesIO(data),
            reader_schema=reader_schema,
            return_record_name=True,
            return_record_name_override=True,
        )
    except Exception as exc:  # noqa: BLE001
        raise CorruptFileError(f"cannot open Avro container ({len(data)} bytes): {exc}") from exc


def embedded_schema_json(data: bytes) -> str:
    """The writer schema text embedded in an Avro instant file."""
    reader = _open_container(data)
    raw = reader.metadata.get("avro.schema")
    if raw is None:
        raise CorruptFileError("Avro container has no avro.schema metadata")
    return str(raw)


def read_instant_avro(data: bytes, schema_name: str | None = None) -> dict:
    """The record of an Avro instant file, as a plain dict.

    Without ``schema_name`` the record is decoded with the file's own writer schema, so
    fields added or dropped by other Hudi versions come back as written.  With
    ``schema_name`` the record is also resolved onto our schema (missing fields get our
    defaults, unknown fields are dropped), as Java's ``SpecificDatumReader`` does; the
    file's record name must then match.
    """
    reader_schema = _parsed(_lookup(schema_name)) if schema_name is not None else None
    reader = _open_container(data, reader_schema)
    try:
        record = next(iter(reader))
    except StopIteration:
        raise CorruptFileError("Avro instant file holds no record") from None
    except Exception as exc:  # noqa: BLE001
        raise CorruptFileError(f"cannot decode the record of an Avro instant file: {exc}") from exc
    if not isinstance(record, dict):
        raise CorruptFileError("Avro instant file does not hold a record")
    return record


# ---------------------------------------------------------------------------------------
# Hudi 1.x plans (table versions 8 and 9)
# ---------------------------------------------------------------------------------------


@cache
def avro_schema_json_1x(schema_name: str) -> str:
    """The schema text Hudi 1.x embeds for ``schema_name``: the 0.x schema as Java prints it, with the fields
    of ``avro_schemas.ADDED_IN_1X`` appended to the records 1.x extended (byte-compatible with the plans of
    the 1.0/1.1 sample tables). A record 1.x did not change has its 0.x text."""
    tree = avro_schema(schema_name)
    _append_1x_fields(tree)
    return json.dumps(tree, separators=(",", ":"), ensure_ascii=False)


def _append_1x_fields(node: Any) -> None:
    """Append ADDED_IN_1X's fields, printed as Java prints them, to each record of the tree they extend."""
    if isinstance(node, list):
        for branch in node:
            _append_1x_fields(branch)
        return
    if not isinstance(node, dict):
        return
    if node.get("type") == "record":
        for f in node["fields"]:
            _append_1x_fields(f["type"])
        for added in ADDED_IN_1X.get(simple_name(str(node["name"])), []):
            node["fields"].append({"name": added["name"], "type": _java_type(added["type"], set()),
                                   "default": added["default"]})
        return
    for key in ("items", "values"):
        if key in node:
            _append_1x_fields(node[key])


@cache
def _parsed_1x(schema_name: str) -> Any:
    return fastavro.parse_schema(json.loads(avro_schema_json_1x(schema_name)))


def write_instant_avro_1x(schema_name: str, record: Mapping[str, Any], *, sync_marker: bytes | None = None) -> bytes:
    """An Avro instant file as Hudi 1.x writes it for a table of version 8 or 9: the container of
    ``write_instant_avro`` (no codec, one block) around the 1.x schema. Records 1.x did not
    change are written exactly as ``write_instant_avro`` writes them."""
    simple = simple_name(schema_name)
    if simple not in CHANGED_IN_1X:
        return write_instant_avro(simple, record, sync_marker=sync_marker)
    buf = io.BytesIO()
    try:
        fastavro.schemaless_writer(buf, _parsed_1x(simple), record, strict_allow_default=True)
    except Exception as exc:  # noqa: BLE001 - fastavro raises ValueError/TypeError/KeyError/...
        raise AvroModelError(f"record does not fit Hudi 1.x schema {NAMESPACE}.{simple}: {exc}") from exc
    return container_bytes(avro_schema_json_1x(simple), buf.getvalue(), sync_marker)
