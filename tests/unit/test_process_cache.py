"""What a process keeps between writes (pyhudi/io/process_cache.py): the per-schema memo answers from the
schema it was asked about, derives once per schema seen, and forgets the oldest beyond its size; a kept
table is a copy that owns its buffers."""

from __future__ import annotations

import pyarrow as pa
import pytest

from pyhudi.io import process_cache
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


def _addresses(table: pa.Table) -> set[int]:
    return {b.address for col in table.columns for ch in col.chunks for b in ch.buffers() if b is not None}


@pytest.mark.parametrize("one_call", [True, False])
def test_pooled_table_copies_every_column_from_the_pool(monkeypatch, one_call):
    """A kept table must own its buffers (a slice of a merge batch would pin the whole batch, and a buffer
    of a caller's short-lived pool would be freed after the pool): the copy holds the same rows, schema
    and field metadata in buffers of its own, whether pyarrow copies all columns in one call or not."""
    if not one_call:
        monkeypatch.setattr(process_cache, "_CONCAT_BATCHES", None)
    schema = pa.schema([pa.field("k", pa.string(), nullable=False, metadata={b"doc": b"key"}),
                        ("v", pa.float64()), ("n", pa.int32())], metadata={b"t": b"1"})
    whole = pa.table({"k": [f"key{i}" for i in range(500)], "v": [None if i % 7 == 0 else i / 3 for i in range(500)],
                      "n": list(range(500))}, schema=schema)
    for table in (whole.slice(120, 250), pa.concat_tables([whole.slice(0, 5), whole.slice(400, 30)]),
                  whole.slice(0, 0)):
        copy = process_cache.pooled_table(table)
        assert copy.equals(table) and copy.schema.equals(table.schema, check_metadata=True)
        assert not _addresses(copy) & _addresses(whole)
        assert copy.get_total_buffer_size() <= table.nbytes + 64 * len(table.columns)  # the slice, not the batch
