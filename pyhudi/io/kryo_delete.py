"""Delete blocks of log-block versions 1 and 2: Kryo-serialized `HoodieKey[]` and `DeleteRecord[]`.

Hudi before 0.11 wrote delete block contents with `SerializationUtils.serialize`: Kryo 4 with
`registrationRequired=false`, references on (Kryo's default) and `writeClassAndObject`. Tables of version
4/5, and version-6 tables upgraded from them, still hold such blocks, and Hudi 0.14 reads them
(`HoodieDeleteBlock.deserialize`), so pyhudi decodes exactly that layout:

* a class is a varint: 0 null, 1 "by name" (then a varint name id; a new id is followed by the class
  name), n >= 2 the default registration n-2 (0 int, 1 String, 2 float, 3 boolean, 4 byte, 5 char,
  6 short, 7 long, 8 double; a boxed value uses its primitive's registration);
* every object but a boxed primitive starts with a reference varint: 0 null, 1 new (it takes the next
  id, counted in the order objects start), n >= 2 the object read n-2 ids earlier on;
* arrays (`ObjectArraySerializer`): varint length+1, then each element by `writeClassAndObject`
  (`HoodieKey` and `DeleteRecord` are not final);
* `FieldSerializer` writes non-static, non-transient fields sorted by name: `HoodieKey` is
  (partitionPath, recordKey), two Strings (final: reference varint, then the string); `DeleteRecord`
  is (hoodieKey, orderingVal), both by `writeClassAndObject`;
* strings: ASCII of 2..63 characters as bytes with the last one's high bit set; otherwise a UTF-8
  length varint (char count + 1; 0 null, 1 empty) and the UTF-16 units in Java's modified UTF-8.

The layout was checked against bytes that Kryo 4.0.3 (Spark's copy; Hudi used 4.0.2, the same format)
wrote for stand-ins with Hudi 0.14's field layout of both classes (the frozen layout of HUDI-5760);
tests/unit/test_old_versions.py keeps those bytes. Ordering values of another class (Hudi only
produced the ones below from Avro records) are refused with an error naming the file, never skipped.
"""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal
from typing import Any

from pyhudi.errors import CorruptFileError, UnsupportedTableError

KEY_CLASS = "org.apache.hudi.common.model.HoodieKey"
RECORD_CLASS = "org.apache.hudi.common.model.DeleteRecord"
_ARRAYS = {f"[L{KEY_CLASS};": KEY_CLASS, f"[L{RECORD_CLASS};": RECORD_CLASS}
# Kryo's default registrations (id -> name), in Kryo 4's order; boxed values share their primitive's id.
_REGISTERED = ("int", "String", "float", "boolean", "byte", "char", "short", "long", "double", "void")
# Java class of an ordering value -> the Avro wrapper name v3 blocks use for it (HoodieAvroUtils).
WRAPPER_OF = {"int": "IntWrapper", "long": "LongWrapper", "float": "FloatWrapper", "double": "DoubleWrapper",
              "boolean": "BooleanWrapper", "String": "StringWrapper", "java.math.BigDecimal": "DecimalWrapper",
              "java.time.LocalDate": "DateWrapper"}
_EPOCH_DATE = dt.date(1970, 1, 1)
_NEW = object()  # marks a reference id taken by an object still being read


class _Reader:
    def __init__(self, data: bytes, where: str) -> None:
        self.data = data
        self.pos = 0
        self.where = where
        self.names: dict[int, str] = {}
        self.refs: list[Any] = []

    def fail(self, what: str) -> CorruptFileError:
        return CorruptFileError(f"{self.where}: Kryo delete block is malformed at byte {self.pos}: {what}")

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise self.fail("unexpected end of data")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise self.fail(f"{n} bytes overrun the content")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def varint(self, zigzag: bool = False, bits: int = 32) -> int:
        """Kryo's variable-length int/long: 7 bits a byte, low first (a long's 9th byte carries 8)."""
        result = shift = 0
        for i in range(5 if bits == 32 else 9):
            b = self.byte()
            if i == 8:
                result |= b << 56
                break
            result |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        result &= (1 << bits) - 1
        if zigzag:
            return (result >> 1) ^ -(result & 1)
        return result - (1 << bits) if result >= 1 << (bits - 1) else result

    def string(self) -> str | None:
        first = self.byte()
        if not first & 0x80:  # ASCII, last byte flagged
            start = self.pos - 1
            while not self.byte() & 0x80:
                pass
            raw = bytearray(self.data[start:self.pos])
            raw[-1] &= 0x7F
            return raw.decode("ascii")
        count = first & 0x3F
        if first & 0x40:
            shift = 6
            while True:
                b = self.byte()
                count |= (b & 0x7F) << shift
                shift += 7
                if not b & 0x80 or shift > 27:
                    break
        if count == 0:
            return None
        return self._utf16_units(count - 1)

    def _utf16_units(self, count: int) -> str:
        units = []
        for _ in range(count):
            b = self.byte()
            if b >> 4 in (12, 13):
                b = (b & 0x1F) << 6 | self.byte() & 0x3F
            elif b >> 4 == 14:
                b = (b & 0x0F) << 12 | (self.byte() & 0x3F) << 6 | self.byte() & 0x3F
            units.append(b)
        return b"".join(u.to_bytes(2, "big") for u in units).decode("utf-16-be", "surrogatepass")

    def class_name(self) -> str | None:
        tag = self.varint()
        if tag == 0:
            return None
        if tag >= 2:
            if tag - 2 >= len(_REGISTERED):
                raise self.fail(f"class registration {tag - 2} is not one of Kryo's defaults")
            return _REGISTERED[tag - 2]
        name_id = self.varint()
        if name_id not in self.names:
            name = self.string()
            if not name:
                raise self.fail("empty class name")
            self.names[name_id] = name
        return self.names[name_id]

    def reference(self) -> tuple[bool, Any]:
        """(True, object) for null or a back-reference; (False, id) when a new object follows."""
        tag = self.varint()
        if tag == 0:
            return True, None
        if tag == 1:
            self.refs.append(_NEW)
            return False, len(self.refs) - 1
        if tag - 2 >= len(self.refs) or self.refs[tag - 2] is _NEW:
            raise self.fail(f"reference {tag - 2} to an object not read yet")
        return True, self.refs[tag - 2]

    def ref_string(self) -> str | None:
        done, value = self.reference()
        if done:
            return value  # type: ignore[no-any-return]
        self.refs[value] = text = self.string()
        return text


def decode_kryo_deletes(version: int, data: bytes, where: str) -> list[tuple[str | None, str | None, str | None, Any]]:
    """`(record key, partition path, wrapper name, raw value)` of each delete, as v3 blocks give them.

    Version 1 (`HoodieKey[]`) becomes `DeleteRecord.create(key)`: ordering value `Integer(0)`, which
    readers treat as "no ordering value" (`IntWrapper`, 0)."""
    r = _Reader(data, where)
    name = r.class_name()
    expected = KEY_CLASS if version == 1 else RECORD_CLASS
    if name is None or _ARRAYS.get(name) != expected:
        raise UnsupportedTableError(f"{where}: delete block of version {version} holds a Kryo {name!r}, not "
                                    f"{expected}[]; it cannot be read")
    done, _ = r.reference()
    if done:  # a null array
        return []
    n = r.varint() - 1
    out: list[tuple[str | None, str | None, str | None, Any]] = []
    for _ in range(max(n, 0)):
        item = _object(r, expected)
        if item is None:
            raise r.fail("null element in the delete array")
        if version == 1:
            out.append((item[0], item[1], "IntWrapper", 0))
        else:
            out.append(item)
    return out


def _object(r: _Reader, expected: str) -> Any:
    name = r.class_name()
    if name is None:
        return None
    if name != expected:
        raise UnsupportedTableError(f"{r.where}: Kryo delete block holds a {name} where {expected} belongs; "
                                    "it cannot be read")
    done, ref = r.reference()
    if done:
        return ref
    if expected == KEY_CLASS:
        partition = r.ref_string()
        value: Any = (r.ref_string(), partition)
    else:
        key = _object(r, KEY_CLASS)
        wrapper, raw = _ordering(r)
        value = (key[0] if key else None, key[1] if key else None, wrapper, raw)
    r.refs[ref] = value
    return value


def _ordering(r: _Reader) -> tuple[str | None, Any]:
    name = r.class_name()
    if name is None:
        return None, None
    if name in ("int", "long"):
        return WRAPPER_OF[name], r.varint(zigzag=True, bits=32 if name == "int" else 64)
    if name in ("float", "double"):
        raw = r.take(4 if name == "float" else 8)
        return WRAPPER_OF[name], struct.unpack(">f" if name == "float" else ">d", raw)[0]
    if name == "boolean":
        return WRAPPER_OF[name], r.byte() == 1
    if name == "String":
        return WRAPPER_OF[name], r.ref_string()
    if name not in ("java.math.BigDecimal", "java.time.LocalDate"):
        raise UnsupportedTableError(
            f"{r.where}: a delete block of log-block version 2 has an ordering value of Java class {name}, "
            "which pyhudi cannot decode; compact the file group with Hudi 0.14/0.15 first")
    done, ref = r.reference()
    if done:
        return WRAPPER_OF[name], ref
    value: Any = _decimal(r) if name == "java.math.BigDecimal" else _date(r)
    r.refs[ref] = value
    return WRAPPER_OF[name], value


def _decimal(r: _Reader) -> Decimal:
    """Kryo's BigDecimalSerializer: BigInteger (length+1 varint, two's complement bytes), zigzag scale."""
    length = r.varint() - 1
    unscaled = int.from_bytes(r.take(length), "big", signed=True)
    scale = r.varint(zigzag=True)
    return Decimal(f"{unscaled}E{-scale}")  # exact, whatever the digits (scaleb would round to 28)


def _date(r: _Reader) -> int:
    """Kryo's LocalDateSerializer: year varint, month and day bytes; returned as epoch days (DateWrapper)."""
    year = r.varint()
    month, day = r.byte(), r.byte()
    try:
        return (dt.date(year, month, day) - _EPOCH_DATE).days
    except ValueError as exc:
        raise r.fail(f"invalid date {year}-{month}-{day}") from exc
