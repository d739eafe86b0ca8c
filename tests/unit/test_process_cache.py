"""What a process keeps between writes (pyhudi/io/process_cache.py): the per-schema memo answers from the
schema it was asked about, derives once per schema seen, and forgets the oldest beyond its size."""

from __future__ import annotations

import pyarrow as pa

from pyhudi.io.process_cache import SchemaMemo


def test_schema_memo_derives_once_per_schema_and_keeps_the_last_few():
    asked: list[list[str]] = []

    def derive(schema: pa.Schema) -> list[str]:
        asked.append(schema.names)
        return schema.names

    memo = SchemaMemo(derive, size=2)
    a, b, c = (pa.schema([(name, pa.int64())]) for name in "abc")
    assert memo(a) == ["a"] and memo(pa.schema([("a", pa.int64())])) == ["a"]  # an equal schema: no new derive
    assert memo(b) == ["b"] and memo(a) == ["a"]
    assert asked == [["a"], ["b"]]
    assert memo(c) == ["c"] and memo(a) == ["a"]  # a was the oldest of two: derived again
    assert asked == [["a"], ["b"], ["c"], ["a"]]
    assert memo(pa.schema([("a", pa.int32())])) == ["a"] and len(asked) == 5  # same names, other type
