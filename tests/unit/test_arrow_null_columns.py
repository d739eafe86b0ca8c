"""pandas gives a column of only None Arrow's null type: it takes the table's type where the table has the
column, and is refused (naming it) where it would be a new column."""

from __future__ import annotations

import pandas as pd
import pytest

import pyhudi
from pyhudi.errors import SchemaMismatchError
from tests.helpers import hudi_rs

OPTS = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.operation": "upsert"}


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_all_none_column_takes_the_table_type(tmp_path, table_type):
    path = str(tmp_path / "t")
    opts = {**OPTS, "hoodie.datasource.write.table.type": table_type}
    pyhudi.write(pd.DataFrame({"id": [1, 2], "part": ["a", "b"], "ts": [1, 1], "v": ["x", "y"],
                               "s": [{"k": 1}, {"k": 2}]}), path, opts)
    pyhudi.write(pd.DataFrame({"id": [2, 3], "part": ["b", "a"], "ts": [2, 2], "v": [None, None],
                               "s": [None, None]}), path, opts)
    want = {1: ("x", {"k": 1}), 2: (None, None), 3: (None, None)}
    got = pyhudi.read(path, columns=["id", "v", "s"]).to_pylist()
    assert {r["id"]: (r["v"], r["s"]) for r in got} == want
    rs = hudi_rs(path).to_pylist()
    assert {r["id"]: (r["v"], r["s"]) for r in rs} == want


def test_all_none_new_column_is_refused_naming_it(tmp_path):
    path = str(tmp_path / "t")
    pyhudi.write(pd.DataFrame({"id": [1], "part": ["a"], "ts": [1]}), path, OPTS)
    with pytest.raises(SchemaMismatchError, match="'w'"):
        pyhudi.write(pd.DataFrame({"id": [2], "part": ["a"], "ts": [2], "w": [None]}), path, OPTS)
    assert [r["id"] for r in pyhudi.read(path).to_pylist()] == [1]
