"""Global indexes on merge-on-read: a record that moved partition leaves a dead copy in its old group's base file
(deleted by a log block until compaction). Tagging must locate keys in the merged view (base + logs, deletes
applied), as Hudi 0.14's global index does (`HoodieIndexUtils.mergeForPartitionUpdates` with
`HoodieMergedReadHandle`); otherwise moving the record back leaves two live rows, a delete reaches the dead
copy and the live row survives, and with update.partition.path=false the dead copy is revived.

Each scenario runs on both engines (in-process Arrow data; Spark DataFrames) and after every step compares
pyhudi's and hudi-rs's reads with a model: key -> (stored partition path, data partition column, ts).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

import pyhudi
from tests.helpers import arrow_read, hudi_rs, rows_by_key

COLS = ["_hoodie_partition_path", "part", "ts"]
Model = dict[str, tuple[str, str, int]]
# Spark runs each scenario in tens of seconds: one default Spark case, the rest with -m extended.
SPARK = pytest.param("spark", marks=pytest.mark.spark)
ENGINES = ["local", SPARK]
ENGINES_EXTENDED = ["local", pytest.param("spark", marks=[pytest.mark.spark, pytest.mark.extended])]


def _options(index: str, **extra: str) -> dict[str, str]:
    return {"hoodie.table.name": "gmor", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.table.type": "MERGE_ON_READ", "hoodie.index.type": index, **extra}


class Table:
    """A table written by one engine, checked against its model after every step."""

    def __init__(self, request: pytest.FixtureRequest, path: str, engine: str, index: str) -> None:
        self.request, self.path, self.index = request, path, index
        self.spark = request.getfixturevalue("spark") if engine == "spark" else None
        self.model: Model = {}

    def write(self, rows: list[tuple[str, str, int]], op: str = "upsert", **extra: str) -> None:
        data: Any = pa.table({"id": [r[0] for r in rows], "part": [r[1] for r in rows],
                              "ts": pa.array([r[2] for r in rows], pa.int64())})
        if self.spark is not None:
            data = self.spark.createDataFrame(data.to_pandas())
        pyhudi.write(data, self.path, _options(self.index, **{"hoodie.datasource.write.operation": op}, **extra))

    def compact(self) -> None:
        assert pyhudi.compact(self.spark, self.path, _options(self.index)), "nothing was compacted"

    def check(self, step: str) -> None:
        ours = rows_by_key(arrow_read(self.path, None, lambda: self.request.getfixturevalue("spark")), "id", COLS)
        assert ours == self.model, f"{step}: pyhudi read {ours}, model {self.model}"
        assert rows_by_key(hudi_rs(self.path), "id", COLS) == self.model, f"{step}: hudi-rs differs from the model"


@pytest.mark.parametrize("index", ["GLOBAL_SIMPLE", "GLOBAL_BLOOM"])
@pytest.mark.parametrize("engine", ENGINES_EXTENDED)
def test_move_back_compact_move_again_delete(request, tmp_path, engine, index):
    """update.partition.path=true: `a` moves x -> y, back to x (one live `a`, in x), compaction, to y again,
    then a delete that names the stale partition x removes it wherever it lives."""
    t = Table(request, str(tmp_path / "t"), engine, index)
    t.write([("a", "x", 1), ("b", "x", 1), ("c", "y", 1)])
    t.model = {"a": ("x", "x", 1), "b": ("x", "x", 1), "c": ("y", "y", 1)}
    t.check("insert")
    t.write([("a", "y", 2)])
    t.model["a"] = ("y", "y", 2)
    t.check("move x -> y")
    t.write([("a", "x", 3), ("b", "x", 3)])
    t.model.update({"a": ("x", "x", 3), "b": ("x", "x", 3)})
    t.check("move back y -> x")
    t.compact()
    t.check("compaction")
    t.write([("a", "y", 4)])
    t.model["a"] = ("y", "y", 4)
    t.check("move x -> y after compaction")
    t.write([("a", "x", 5)], op="delete")
    del t.model["a"]
    t.check("delete")


@pytest.mark.parametrize("index", ["GLOBAL_SIMPLE", pytest.param("GLOBAL_BLOOM", marks=pytest.mark.extended)])
@pytest.mark.parametrize("engine", ENGINES)
def test_delete_after_move_reaches_the_live_row(request, tmp_path, engine, index):
    """After x -> y -> x, the key is in three base files, two of them dead copies: the delete finds the live one."""
    t = Table(request, str(tmp_path / "t"), engine, index)
    t.write([("a", "x", 1), ("b", "x", 1)])
    t.write([("a", "y", 2)])
    t.write([("a", "x", 3)])
    t.model = {"a": ("x", "x", 3), "b": ("x", "x", 1)}
    t.check("x -> y -> x")
    t.write([("a", "y", 4)], op="delete")
    del t.model["a"]
    t.check("delete")


@pytest.mark.parametrize("index", ["GLOBAL_SIMPLE", "GLOBAL_BLOOM"])
@pytest.mark.parametrize("engine", ENGINES_EXTENDED)
def test_no_partition_update_goes_to_the_live_copy(request, tmp_path, engine, index):
    """update.partition.path=false after a move: the record updates the live copy in y (its data column keeps
    the partition value it came with), never the dead copy in x, which stays deleted."""
    t = Table(request, str(tmp_path / "t"), engine, index)
    t.write([("a", "x", 1), ("b", "x", 1)])
    t.write([("a", "y", 2)])
    t.write([("a", "x", 3)], **{"hoodie.simple.index.update.partition.path": "false"})
    t.model = {"a": ("y", "x", 3), "b": ("x", "x", 1)}
    t.check("update without partition move")
    t.write([("a", "z", 4)], **{"hoodie.bloom.index.update.partition.path": "false"})
    t.model["a"] = ("y", "z", 4)
    t.check("second update without partition move")
