"""The in-process write's fast paths give exactly what the plain computations give (issue 17 item 5):
numpy MD5 of record keys, the no-delete shortcut, dedupe's distinct check."""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa
import pytest

from pyhudi.errors import InvalidRecordError
from pyhudi.writer.bulk_insert import by_partition
from pyhudi.writer.handles import DELETE_FLAG, RECORD_KEY, dedupe
from pyhudi.writer.key_md5 import md5_prefixes
from pyhudi.writer.local_tagging import _without_deletes
from pyhudi.writer.partitioner import key_hash, key_hashes
from tests.unit.test_partitioner import java_md5_long

ADVERSARIAL = ["", "a", "é/ü", "日本語キー", "🙂", "x" * 55, "y" * 56, "z" * 63, "w" * 64, "v" * 119, "u" * 120,
               "t" * 300, "1.50", "-0E-18", "2024/01/02", "a\u0000b", "city=São Paulo/2024", "\u00ff" * 20]


def _hashlib_prefixes(keys: list[str]) -> list[int]:
    return np.frombuffer(b"".join(hashlib.md5(k.encode()).digest()[:8] for k in keys), "<i8").tolist()


@pytest.mark.parametrize("repeat", [1, 400])  # few keys per length: hashlib; many: the numpy rounds
def test_md5_prefixes_match_hashlib_and_java(repeat: int) -> None:
    keys = [f"{k}{i}" if i else k for k in ADVERSARIAL for i in range(repeat)]
    got = md5_prefixes(pa.array(keys, pa.string())).tolist()
    assert got == _hashlib_prefixes(keys)
    assert got[:len(ADVERSARIAL) * repeat:repeat] == [java_md5_long(k) for k in ADVERSARIAL]


def test_md5_prefixes_of_sliced_chunked_and_large_columns() -> None:
    keys = [f"key-{i:06d}" for i in range(3000)] + ADVERSARIAL
    want = _hashlib_prefixes(keys)
    arr = pa.array(["pad"] + keys, pa.string()).slice(1)  # a non-zero offset
    assert md5_prefixes(arr).tolist() == want
    assert md5_prefixes(pa.chunked_array([keys[:7], keys[7:]], pa.large_string())).tolist() == want
    assert md5_prefixes(pa.array([], pa.string())).tolist() == []
    assert key_hashes(pa.array(keys)).tolist() == key_hashes(keys).tolist() == [key_hash(k) for k in keys]
    with pytest.raises(InvalidRecordError, match="1 record key"):
        md5_prefixes(pa.array(["a", None], pa.string()))


def test_by_partition_keeps_order_and_values() -> None:
    parts = ["b/1", "a", "", "b/1", "2024/01", "a", "2024/01", "é"]
    table = pa.table({"_hoodie_partition_path": pa.array(parts, pa.string()), "i": list(range(len(parts)))})
    model: dict[object, list[int]] = {}
    for i, p in enumerate(parts):
        model.setdefault(p, []).append(i)
    got = [(v, t.column("i").to_pylist()) for v, t in by_partition(table)]
    assert got == sorted(model.items())
    assert list(by_partition(table.slice(0, 0))) == []
    one = pa.table({"_hoodie_partition_path": ["p", "p"], "i": [1, 2]})
    assert [(v, t is one) for v, t in by_partition(one)] == [("p", True)]


def test_without_deletes_copies_only_when_there_are_deletes() -> None:
    table = pa.table({"k": ["a", "b", "c"], DELETE_FLAG: [False, False, False]})
    assert _without_deletes(table) is table
    some = pa.table({"k": ["a", "b", "c"], DELETE_FLAG: [False, True, False]})
    assert _without_deletes(some).column("k").to_pylist() == ["a", "c"]
    empty = table.slice(0, 0)
    assert _without_deletes(empty).num_rows == 0


def test_dedupe_distinct_shortcut_and_duplicates() -> None:
    distinct = pa.table({RECORD_KEY: ["a", "é", "日本"], "ts": [1, 2, 3]})
    assert dedupe(distinct, "ts") is distinct
    dup = pa.table({RECORD_KEY: ["a", "b", "a", "b"], "ts": [2, 1, None, 5]})
    got = {k: ts for k, ts in zip(*(dedupe(dup, "ts").column(c).to_pylist() for c in (RECORD_KEY, "ts")))}
    assert got == {"a": 2, "b": 5}
