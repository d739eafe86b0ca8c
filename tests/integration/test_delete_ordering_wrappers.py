"""The ordering value of a `_hoodie_is_deleted` upsert goes into a MOR delete block in the wrapper Hudi's
`HoodieAvroUtils.wrapValueIntoAvro` picks from the field's Java type: a `long` field gives a LongWrapper even
for small values. Hudi 0.14's log scanner compares a delete's ordering value with a record's only when their
classes match, so an IntWrapper for a long field would make every such delete win (in-process engine)."""

from __future__ import annotations

import glob
import os

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.io.log_blocks import delete_records
from pyhudi.io.log_format import BlockType, read_blocks


@pytest.mark.parametrize(("arrow_type", "wrapper"), [(pa.int64(), "LongWrapper"), (pa.int32(), "IntWrapper"),
                                                     (pa.float64(), "DoubleWrapper"),
                                                     (pa.float32(), "FloatWrapper")])
def test_delete_block_ordering_wrapper_follows_the_field_type(tmp_path, arrow_type, wrapper):
    path = str(tmp_path / "t")
    schema = pa.schema([("id", pa.string()), ("part", pa.string()), ("ts", arrow_type),
                        ("_hoodie_is_deleted", pa.bool_())])
    opts = {"hoodie.table.name": "d", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.table.type": "MERGE_ON_READ", "hoodie.index.type": "INMEMORY"}
    pyhudi.write(pa.table({"id": ["a", "b"], "part": ["x", "x"], "ts": [1, 1], "_hoodie_is_deleted": [False] * 2},
                          schema=schema), path, opts)
    pyhudi.write(pa.table({"id": ["a"], "part": ["x"], "ts": [7], "_hoodie_is_deleted": [True]}, schema=schema),
                 path, opts)
    found = []
    for log in glob.glob(os.path.join(path, "x", ".*.log.*")):
        with open(log, "rb") as f:
            blocks = read_blocks(f.read())
        for block in blocks:
            if getattr(block, "block_type", None) == BlockType.DELETE_BLOCK:
                found += delete_records(block)
    assert [(k, w, v) for k, _, w, v in found] == [("a", wrapper, 7)]
    assert [r["id"] for r in pyhudi.read(path).to_pylist()] == ["b"]
