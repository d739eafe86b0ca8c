"""BUCKET index hashing against Hudi 0.14's BucketIdentifier, computed by hand from the Java spec.

Oracle: Hudi 0.14 `BucketIdentifier.getBucketId(recordKey, indexKeyFields, n)` =
`(getHashKeys(recordKey, fields).hashCode() & Integer.MAX_VALUE) % n`, where `getHashKeys` returns
`[recordKey]` for a key without ':' and otherwise `KeyGenUtils.extractRecordKeysByFields` (0.13-0.15):
`recordKey.split(",")` (Java: trailing empty strings dropped), each part `split(":", 2)`, a part without
':' kept as is, a `field:value` part kept only when `field` is a hash field (record-key order), with
`__null__` -> null and `__empty__` -> "". The hash-key lists below were derived from that by hand; the
hashes are recomputed here with Java's signed 32-bit arithmetic, independently of pyhudi's code.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyhudi.errors import InvalidConfigError, UnsupportedTableError
from pyhudi.index.bucket import (
    bucket_id,
    bucket_of_file_id,
    check_layout,
    hash_values,
    java_list_hash,
    java_string_hash,
)
from pyhudi.model.table_config import TableConfig
from pyhudi.writer.config import IndexConfig, check_bucket_num


def _int32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >= 1 << 31 else x


def _java_string_hash(s: str) -> int:
    """String.hashCode: s[0]*31^(n-1) + ... + s[n-1] over UTF-16 chars, as a signed int."""
    units = [u for ch in s for u in ([ord(ch)] if ord(ch) < 0x10000 else
                                      [0xD800 + ((ord(ch) - 0x10000) >> 10), 0xDC00 + ((ord(ch) - 0x10000) & 0x3FF)])]
    n = len(units)
    return _int32(sum(u * pow(31, n - 1 - i) for i, u in enumerate(units)))


def _java_list_hash(values: list[str | None]) -> int:
    h = 1
    for v in values:
        h = _int32(31 * h + (0 if v is None else _java_string_hash(v)))
    return h


def _java_bucket(values: list[str | None], n: int) -> int:
    return (_java_list_hash(values) & 0x7FFFFFFF) % n


# (record key, hash fields, the List<String> Hudi 0.14 hashes)
ORACLE = [
    ("abc", ("id",), ["abc"]),                          # simple key: hashed whole
    ("a,b", ("id",), ["a,b"]),                          # no ':' -> whole, even with ','
    ("x:y", ("id",), []),                               # simple key holding ':': "x" is no hash field
    ("id:x:y", ("id",), ["x:y"]),                       # split on the first ':' only
    ("id:a,b,name:d", ("id", "name"), ["a", "b", "d"]),  # a ',' in a value adds a value
    ("id:__null__,name:x", ("id", "name"), [None, "x"]),
    ("id:__empty__,name:", ("id", "name"), ["", ""]),
    ("id:1,name:a,,", ("id", "name"), ["1", "a"]),      # trailing empty parts dropped by String.split
    ("id:,,name:x", ("id", "name"), ["", "", "x"]),     # an inner empty part is kept
    ("id:1,name:a", ("name", "id"), ["1", "a"]),        # record-key order, not hash-field order
    ("id:1,name:a", ("name",), ["a"]),                  # hash fields a subset of the key fields
    ("id:é😀,name:z", ("id", "name"), ["é😀", "z"]),    # non-BMP: two UTF-16 chars
]


def test_java_string_hash_known_values():
    # Values printed by Java: "abc".hashCode() == 96354, "Aa" and "BB" collide at 2112,
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE.
    assert java_string_hash("abc") == 96354
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_string_hash("polygenelubricants") == 0x80000000
    assert java_list_hash([]) == 1 and java_list_hash([None]) == 31
    assert java_list_hash(["abc"]) == 31 + 96354


def test_hash_keys_match_hudi_014():
    for key, fields, expected in ORACLE:
        assert hash_values(key, fields) == expected, key


def test_bucket_ids_match_java_oracle():
    for key, fields, expected in ORACLE:
        for n in (1, 4, 7, 256):
            assert bucket_id(key, fields, n) == _java_bucket(expected, n), (key, n)
    # Literal buckets, from the lists above by hand with the Java formulas (n = 256):
    # [] -> 1 % 256 = 1;  ["x:y"]: "x:y".hashCode() = 120*31^2 + 58*31 + 121 = 117239,
    # list hash 31*1 + 117239 = 117270, 117270 % 256 = 22.
    assert bucket_id("x:y", ("id",), 256) == 1
    assert bucket_id("id:x:y", ("id",), 256) == 22


def _reference(key: str, fields: tuple[str, ...]) -> list[str | None]:
    """An independent reading of the Java code: regex split, then the same filters."""
    if ":" not in key:
        return [key]
    parts = re.split(",", key)
    while parts and parts[-1] == "":
        parts.pop()
    out: list[str | None] = []
    for p in parts:
        m = re.match(r"([^:]*):(.*)\Z", p, re.S)
        if m is None:
            out.append(p)
        elif m.group(1) in fields:
            out.append({"__null__": None, "__empty__": ""}.get(m.group(2), m.group(2)))
    return out


_VALUE = st.one_of(st.text(alphabet=st.sampled_from(list("ab:,_é😀")), max_size=6),
                   st.sampled_from(["__null__", "__empty__", "", ":", ","]))


@settings(max_examples=300, deadline=None)
@given(values=st.lists(_VALUE, min_size=1, max_size=3), n=st.integers(1, 300), simple=st.booleans())
def test_bucket_id_matches_reference(values, n, simple):
    fields = tuple(f"f{i}" for i in range(len(values)))
    key = values[0] if simple else ",".join(f"{f}:{v}" for f, v in zip(fields, values))
    hash_fields = fields[:1] if simple else fields
    expected = _reference(key, hash_fields)
    assert hash_values(key, hash_fields) == expected
    assert bucket_id(key, hash_fields, n) == _java_bucket(expected, n)


def test_bucket_of_file_id():
    assert bucket_of_file_id("00000012-1234-5678-9abc-def012345678-0") == 12
    assert bucket_of_file_id("3f2a9c1e-1234-5678-9abc-def012345678-0") is None


class _Group:
    def __init__(self, file_id: str) -> None:
        self.file_id = file_id


class _View:
    """The view methods check_layout uses, over {partition: [file ids]}."""

    def __init__(self, groups: dict[str, list[str]]) -> None:
        self.groups = groups
        self.partition_paths = list(groups)

    def partitions_of(self, candidates):
        return self.partition_paths if candidates is None else [p for p in self.groups if p in set(candidates)]

    def live_groups(self, partition):
        return [_Group(f) for f in self.groups[partition]]

    def _latest_slice(self, group, as_of):
        return object()


def test_check_layout_refuses_tables_the_bucket_index_cannot_serve():
    ok = {"p0": ["00000000-aaaa-bbbb-cccc-dddddddddddd-0", "00000003-aaaa-bbbb-cccc-dddddddddddd-0"],
          "p1": ["00000001-aaaa-bbbb-cccc-dddddddddddd-0"]}
    check_layout(_View(ok), 4)  # type: ignore[arg-type]
    with pytest.raises(InvalidConfigError, match="bucket 3"):
        check_layout(_View(ok), 3)  # type: ignore[arg-type]
    simple = {"p0": ["3f2a9c1e-aaaa-bbbb-cccc-dddddddddddd-0"]}
    with pytest.raises(UnsupportedTableError, match="not a bucket file group"):
        check_layout(_View(simple), 4)  # type: ignore[arg-type]
    twice = {"p0": ["00000002-aaaa-bbbb-cccc-dddddddddddd-0", "00000002-eeee-bbbb-cccc-dddddddddddd-0"]}
    with pytest.raises(UnsupportedTableError, match="two file groups for bucket 2"):
        check_layout(_View(twice), 4)  # type: ignore[arg-type]


def test_stored_bucket_count_must_match():
    table = TableConfig.from_properties({"hoodie.table.name": "t", "hoodie.table.type": "COPY_ON_WRITE",
                                         "hoodie.table.version": "6", "hoodie.bucket.index.num.buckets": "8"})
    assert table.bucket_num == 8
    assert check_bucket_num(IndexConfig(type="BUCKET", bucket_num=8), table, True).bucket_num == 8
    # Not given: the table's count, not the option's default of 256.
    assert check_bucket_num(IndexConfig(type="BUCKET", bucket_num=256), table, False).bucket_num == 8
    # No stored count: the file ids (and footer keys) are checked instead.
    assert check_bucket_num(IndexConfig(type="BUCKET", bucket_num=4), TableConfig(name="t"), True).bucket_num == 4
    with pytest.raises(InvalidConfigError, match="hoodie.bucket.index.num.buckets=4 conflicts"):
        check_bucket_num(IndexConfig(type="BUCKET", bucket_num=4), table, True)
    assert "hoodie.bucket.index.num.buckets" not in TableConfig(name="t").to_properties()
    assert table.to_properties()["hoodie.bucket.index.num.buckets"] == "8"
