"""Test helpers for tables of versions 4/5: Kryo delete-block contents (log-block versions 1 and 2) and
turning a version-6 table into the version-4/5 form the upgrade handlers undo.

`kryo_delete_content` writes the Kryo 4 layout of Hudi's `SerializationUtils.serialize(HoodieKey[])` /
`(DeleteRecord[])`; tests/unit/test_old_versions.py checks it byte for byte against bytes real Kryo wrote,
so tables built with it hold what Hudi 0.10 wrote.
"""

from __future__ import annotations

import pathlib
import struct
from typing import Any

from pyhudi.io.log_format import BlockType, HeaderKey, encode_block
from pyhudi.model.properties import format_properties, parse_properties

KEY = "org.apache.hudi.common.model.HoodieKey"
RECORD = "org.apache.hudi.common.model.DeleteRecord"
_IDS = {"int": 0, "string": 1, "float": 2, "boolean": 3, "long": 7, "double": 8}


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _zigzag(n: int, bits: int) -> int:
    return ((n << 1) ^ (n >> (bits - 1))) & ((1 << bits) - 1)


def _utf8_length(n: int) -> bytes:
    if n >> 6 == 0:
        return bytes([n | 0x80])
    return bytes([(n & 0x3F) | 0xC0]) + _varint(n >> 6)


def kryo_string(s: str | None) -> bytes:
    if s is None:
        return b"\x80"
    if s == "":
        return b"\x81"
    if 1 < len(s) < 64 and s.isascii():
        raw = bytearray(s.encode("ascii"))
        raw[-1] |= 0x80
        return bytes(raw)
    units = s.encode("utf-16-be", "surrogatepass")
    out = bytearray(_utf8_length(len(units) // 2 + 1))
    for i in range(0, len(units), 2):
        c = int.from_bytes(units[i:i + 2], "big")
        if c <= 0x7F:
            out.append(c)
        elif c <= 0x7FF:
            out += bytes([0xC0 | c >> 6 & 0x1F, 0x80 | c & 0x3F])
        else:
            out += bytes([0xE0 | c >> 12 & 0x0F, 0x80 | c >> 6 & 0x3F, 0x80 | c & 0x3F])
    return bytes(out)


class _Writer:
    def __init__(self) -> None:
        self.names: dict[str, int] = {}
        self.strings: dict[str, int] = {}  # equal strings are one (interned) Java object
        self.next_id = 0
        self.out = bytearray()

    def class_name(self, name: str) -> None:
        if name in self.names:
            self.out += b"\x01" + _varint(self.names[name])
            return
        self.names[name] = len(self.names)
        self.out += b"\x01" + _varint(self.names[name]) + kryo_string(name)

    def new_object(self) -> None:
        self.next_id += 1
        self.out += b"\x01"

    def string(self, s: str | None) -> None:
        if s is None:
            self.out += b"\x00"
        elif s in self.strings:
            self.out += _varint(self.strings[s] + 2)
        else:
            self.strings[s] = self.next_id
            self.new_object()
            self.out += kryo_string(s)

    def key(self, record_key: str | None, partition: str | None) -> None:
        self.class_name(KEY)
        self.new_object()
        self.string(partition)  # FieldSerializer: fields by name
        self.string(record_key)

    def ordering(self, value: tuple[str, Any] | None) -> None:
        if value is None:
            self.out += b"\x00"
            return
        kind, v = value
        self.out += _varint(_IDS[kind] + 2)
        if kind in ("int", "long"):
            self.out += _varint(_zigzag(v, 32 if kind == "int" else 64))
        elif kind == "float":
            self.out += struct.pack(">f", v)
        elif kind == "double":
            self.out += struct.pack(">d", v)
        elif kind == "boolean":
            self.out += b"\x01" if v else b"\x00"
        else:
            self.string(v)


def kryo_deletes(version: int, records: list[tuple[str | None, str | None, tuple[str, Any] | None]]) -> bytes:
    """`SerializationUtils.serialize` of `HoodieKey[]` (version 1; orderings ignored) or `DeleteRecord[]`
    (version 2); each record is (key, partition, ordering) with ordering ("int"|"long"|..., value)."""
    w = _Writer()
    w.class_name(f"[L{KEY if version == 1 else RECORD};")
    w.new_object()
    w.out += _varint(len(records) + 1)
    for key, partition, ordering in records:
        if version == 1:
            w.key(key, partition)
            continue
        w.class_name(RECORD)
        w.new_object()
        w.key(key, partition)
        w.ordering(ordering)
    return bytes(w.out)


def legacy_delete_block(version: int, records: list[tuple[str | None, str | None, tuple[str, Any] | None]],
                        instant: str) -> bytes:
    """A complete DELETE block whose content has log-block version 1 or 2."""
    data = kryo_deletes(version, records)
    content = struct.pack(">ii", version, len(data)) + data
    return encode_block(BlockType.DELETE_BLOCK, {HeaderKey.INSTANT_TIME: instant}, content)


def set_version(root: pathlib.Path, version: int, drop_checksum: bool = True) -> dict[str, str]:
    """Rewrite hoodie.properties as a table of `version` has it (Hudi 0.11-0.13 wrote a checksum too;
    dropping it makes the upgrade's checksum step observable)."""
    path = root / ".hoodie" / "hoodie.properties"
    props = parse_properties(path.read_text())
    props["hoodie.table.version"] = str(version)
    if drop_checksum:
        props.pop("hoodie.table.checksum", None)
    path.write_text(format_properties(props, comments=["test: older table version"]))
    return props


def copy_plans_to_aux(root: pathlib.Path) -> list[str]:
    """Put a copy of each requested compaction plan under .hoodie/.aux, as Hudi 0.11-0.13 did."""
    aux = root / ".hoodie" / ".aux"
    aux.mkdir(parents=True, exist_ok=True)
    names = []
    for f in sorted((root / ".hoodie").glob("*.compaction.requested")):
        (aux / f.name).write_bytes(f.read_bytes())
        names.append(f.name)
    return names
