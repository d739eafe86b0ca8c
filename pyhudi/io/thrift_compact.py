"""Thrift's compact protocol, read into a generic tree and written back byte for byte: enough to edit a
parquet footer (offsets of copied column chunks) without its IDL. A struct is a list of
`Field(id, type, value)` in wire order; fields this module never looks at survive a round trip unchanged.

Types and values: BOOL -> bool, BYTE/I16/I32/I64 -> int, DOUBLE -> float, BINARY -> bytes,
LIST/SET -> `Seq(elem_type, [values])`, MAP -> `Map(key_type, value_type, [(k, v)])`, STRUCT -> list[Field].
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from pyhudi.errors import CorruptFileError

STOP, BOOL, BOOL_FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(13)
_MAX_DEPTH = 64


class Field:
    """One field of a struct: id, compact type (BOOL for either boolean), value."""

    __slots__ = ("id", "type", "value")

    def __init__(self, id: int, type: int, value: Any) -> None:  # noqa: A002 - thrift's names
        self.id, self.type, self.value = id, type, value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Field) and (self.id, self.type, self.value) == (other.id, other.type, other.value)

    def __repr__(self) -> str:
        return f"Field({self.id}, {self.type}, {self.value!r})"


@dataclass
class Seq:
    elem_type: int
    items: list[Any]


@dataclass
class Map:
    key_type: int
    value_type: int
    items: list[tuple[Any, Any]]


class _Reader:
    """Reads from `bytes` (indexing a bytes object is several times cheaper than a memoryview's)."""

    def __init__(self, data: bytes | memoryview) -> None:
        self.data = bytes(data)
        self.pos = 0

    def varint(self) -> int:
        data, pos = self.data, self.pos
        shift = result = 0
        try:
            while True:
                b = data[pos]
                pos += 1
                result |= (b & 0x7F) << shift
                if not b & 0x80:
                    self.pos = pos
                    return result
                shift += 7
                if shift > 70:
                    raise CorruptFileError("thrift: varint too long")
        except IndexError:
            raise CorruptFileError("thrift: truncated footer") from None

    def byte(self) -> int:
        try:
            b = self.data[self.pos]
        except IndexError:
            raise CorruptFileError("thrift: truncated footer") from None
        self.pos += 1
        return b

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise CorruptFileError("thrift: truncated footer")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def value(self, ttype: int, depth: int) -> Any:
        if ttype in (I16, I32, I64):
            n = self.varint()
            return (n >> 1) ^ -(n & 1)
        if ttype == BINARY:
            return self.take(self.varint())
        if ttype == STRUCT:
            return self.struct(depth + 1)
        if ttype in (LIST, SET):
            head = self.byte()
            size, elem = head >> 4, head & 0x0F
            if size == 15:
                size = self.varint()
            if depth > _MAX_DEPTH or size > len(self.data):
                raise CorruptFileError("thrift: nesting too deep or list too long")
            return Seq(elem, [self.value(elem, depth + 1) for _ in range(size)])
        if ttype in (BOOL, BOOL_FALSE):
            return self.byte() == BOOL
        if ttype == BYTE:
            b = self.byte()
            return b - 256 if b > 127 else b
        if ttype == DOUBLE:
            return struct.unpack("<d", self.take(8))[0]
        if ttype == MAP:
            size = self.varint()
            if not size:
                return Map(0, 0, [])
            kinds = self.byte()
            k, v = kinds >> 4, kinds & 0x0F
            if depth > _MAX_DEPTH or size > len(self.data):
                raise CorruptFileError("thrift: nesting too deep or map too long")
            return Map(k, v, [(self.value(k, depth + 1), self.value(v, depth + 1)) for _ in range(size)])
        raise CorruptFileError(f"thrift: unknown type {ttype}")

    def struct(self, depth: int = 0) -> list[Field]:
        if depth > _MAX_DEPTH:
            raise CorruptFileError("thrift: nesting too deep")
        fields: list[Field] = []
        last = 0
        while True:
            head = self.byte()
            if head == STOP:
                return fields
            ttype, delta = head & 0x0F, head >> 4
            fid = last + delta if delta else self.zigzag()
            if ttype in (BOOL, BOOL_FALSE):
                fields.append(Field(fid, BOOL, ttype == BOOL))
            else:
                fields.append(Field(fid, ttype, self.value(ttype, depth)))
            last = fid


def read_struct(data: bytes | memoryview) -> list[Field]:
    """The struct serialized at the start of `data`."""
    return _Reader(data).struct()


class _Writer:
    def __init__(self) -> None:
        self.out = bytearray()

    def varint(self, n: int) -> None:
        while n > 0x7F:
            self.out.append((n & 0x7F) | 0x80)
            n >>= 7
        self.out.append(n)

    def zigzag(self, n: int) -> None:
        self.varint((n << 1) ^ (n >> 63))

    def value(self, ttype: int, v: Any) -> None:
        if ttype in (BOOL, BOOL_FALSE):
            self.out.append(BOOL if v else BOOL_FALSE)
        elif ttype == BYTE:
            self.out.append(v & 0xFF)
        elif ttype in (I16, I32, I64):
            self.zigzag(v)
        elif ttype == DOUBLE:
            self.out += struct.pack("<d", v)
        elif ttype == BINARY:
            self.varint(len(v))
            self.out += v
        elif ttype in (LIST, SET):
            n = len(v.items)
            self.out.append((n << 4 | v.elem_type) if n < 15 else (0xF0 | v.elem_type))
            if n >= 15:
                self.varint(n)
            for item in v.items:
                self.value(v.elem_type, item)
        elif ttype == MAP:
            self.varint(len(v.items))
            if v.items:
                self.out.append(v.key_type << 4 | v.value_type)
                for k, item in v.items:
                    self.value(v.key_type, k)
                    self.value(v.value_type, item)
        elif ttype == STRUCT:
            self.struct(v)
        else:
            raise ValueError(f"thrift: unknown type {ttype}")

    def struct(self, fields: list[Field]) -> None:
        last = 0
        for f in fields:
            ttype = (BOOL if f.value else BOOL_FALSE) if f.type == BOOL else f.type
            delta = f.id - last
            if 0 < delta <= 15:
                self.out.append(delta << 4 | ttype)
            else:
                self.out.append(ttype)
                self.zigzag(f.id)
            if f.type != BOOL:
                self.value(f.type, f.value)
            last = f.id
        self.out.append(STOP)


def write_struct(fields: list[Field]) -> bytes:
    w = _Writer()
    w.struct(fields)
    return bytes(w.out)


def get(fields: list[Field], fid: int, default: Any = None) -> Any:
    """The value of field `fid`, or `default`."""
    return next((f.value for f in fields if f.id == fid), default)


def put(fields: list[Field], fid: int, ttype: int, value: Any) -> None:
    """Set field `fid` (added in id order if absent)."""
    for f in fields:
        if f.id == fid:
            f.type, f.value = ttype, value
            return
    fields.append(Field(fid, ttype, value))
    fields.sort(key=lambda f: f.id)
