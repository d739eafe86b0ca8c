"""A global index moving a record under DefaultHoodieRecordPayload: Hudi 0.14 merges the moving record with the
stored one first (`HoodieIndexUtils.mergeForPartitionUpdates`), so a stored record with a greater ordering value
wins and stays in its partition; only a record that wins the merge moves (a delete in the old partition, an
insert in the new one). Before, pyhudi moved it anyway: the old copy survived its delete (the stored record
outranks it) next to the inserted one, two live rows on copy-on-write.

Both engines, COW and MOR (where the stored value comes from the group merged with its logs), checked with
pyhudi's and hudi-rs's reads against a model: key -> (stored partition path, ts).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

import pyhudi
from tests.helpers import arrow_read, hudi_rs, rows_by_key

COLS = ["_hoodie_partition_path", "ts"]
CASES = [("COPY_ON_WRITE", "local"), ("MERGE_ON_READ", "local"),
         pytest.param("COPY_ON_WRITE", "spark", marks=[pytest.mark.spark, pytest.mark.extended]),
         pytest.param("MERGE_ON_READ", "spark", marks=pytest.mark.spark)]


def _options(table_type: str) -> dict[str, str]:
    return {"hoodie.table.name": "gord", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.table.type": table_type, "hoodie.index.type": "GLOBAL_SIMPLE",
            "hoodie.datasource.write.payload.class": "org.apache.hudi.common.model.DefaultHoodieRecordPayload",
            "hoodie.datasource.write.operation": "upsert"}


@pytest.mark.parametrize("table_type,engine", CASES)
def test_outranked_record_does_not_move(request, tmp_path, table_type, engine):
    spark = request.getfixturevalue("spark") if engine == "spark" else None
    path = str(tmp_path / "t")
    model: dict[str, tuple[str, int]] = {}

    def write(rows: list[tuple[str, str, int]]) -> None:
        data: Any = pa.table({"id": [r[0] for r in rows], "part": [r[1] for r in rows],
                              "ts": pa.array([r[2] for r in rows], pa.int64())})
        pyhudi.write(data if spark is None else spark.createDataFrame(data.to_pandas()), path, _options(table_type))
        ours = rows_by_key(arrow_read(path, None, lambda: request.getfixturevalue("spark")), "id", COLS)
        assert ours == model, f"after {rows}: pyhudi read {ours}, model {model}"
        assert rows_by_key(hudi_rs(path), "id", COLS) == model, f"after {rows}: hudi-rs differs from the model"

    steps: list[tuple[list[tuple[str, str, int]], dict[str, tuple[str, int]]]] = [
        ([("a", "x", 5), ("b", "x", 1)], {"a": ("x", 5), "b": ("x", 1)}),
        ([("a", "y", 1), ("b", "x", 2)], {"a": ("x", 5), "b": ("x", 2)}),  # stored ts 5 wins: a stays in x
        ([("a", "x", 9)], {"a": ("x", 9)}),  # same partition (on MOR: into x's log)
        ([("a", "y", 7)], {"a": ("x", 9)}),  # outranked by 9 (on MOR only x's merged slice holds 9)
        ([("a", "y", 10)], {"a": ("y", 10)}),  # wins the merge: moves
        ([("a", "x", 6)], {"a": ("y", 10)}),
    ]
    for rows, changes in steps if spark is None else steps[:4]:  # Spark: up to the merged-slice comparison
        model.update(changes)
        write(rows)
