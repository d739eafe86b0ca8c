"""Save modes as Hudi 0.14's HoodieSparkSqlWriter handles them (handleSaveModes).

Overwrite on an existing table: Hudi deletes the table, then runs the operation on an empty one (except
insert_overwrite_table, which needs no delete). pyhudi writes one insert_overwrite_table replacecommit
instead; the rows must be exactly those of the operation run on an empty table. delete and
delete_partition accept Append only.
"""

from __future__ import annotations

import pytest

import pyhudi
from pyhudi.errors import HudiError, InvalidConfigError
from tests.helpers import hudi_rs

pytestmark = pytest.mark.spark
OLD = [(1, "a", "sf", 1), (2, "b", "ny", 1), (3, "c", "la", 1)]
# Key 7 twice (precombine 5 wins), key 8 twice (precombine 9 wins), key 2 also in the old table.
BATCH = [(7, "x-old", "sf", 3), (7, "x-new", "sf", 5), (8, "y-new", "ny", 9), (8, "y-old", "ny", 2),
         (2, "z", "la", 4)]


def _opts(name: str, operation: str, **extra: str) -> dict[str, str]:
    return {"hoodie.table.name": name, "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "city", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.operation": operation, **extra}


def _frame(spark, rows):
    return spark.createDataFrame(rows, "id long, name string, city string, ts long")


def _rows(spark, path: str) -> list[tuple]:
    return sorted((r["id"], r["name"], r["city"], r["ts"]) for r in pyhudi.read(spark, path).collect())


def _rs_rows(path: str) -> list[tuple]:
    t = hudi_rs(path)
    if t is None:
        return []
    return sorted(zip(*(t.column(c).to_pylist() for c in ("id", "name", "city", "ts"))))


@pytest.mark.parametrize("operation, extra", [
    ("upsert", {}),  # hoodie.combine.before.upsert=true: one row per key, greatest ts
    ("insert", {}),  # combine.before.insert=false: in-batch duplicates stay, as on an empty Hudi table
    ("insert", {"hoodie.combine.before.insert": "true"}),
    ("bulk_insert", {}),
    ("insert_overwrite", {}),
])
def test_overwrite_equals_operation_on_empty_table(spark, tmp_path, operation, extra):
    fresh, path = str(tmp_path / "fresh"), str(tmp_path / "t")
    pyhudi.write(_frame(spark, BATCH), fresh, _opts("t", operation, **extra))  # Hudi: table deleted, then op
    expected = _rows(spark, fresh)
    pyhudi.write(_frame(spark, OLD), path, _opts("t", "insert"))
    pyhudi.write(_frame(spark, BATCH), path, _opts("t", operation, **extra), mode="overwrite")
    assert _rows(spark, path) == expected
    assert _rs_rows(path) == expected
    if operation == "upsert":
        assert expected == [(2, "z", "la", 4), (7, "x-new", "sf", 5), (8, "y-new", "ny", 9)]


@pytest.mark.parametrize("mode", ["overwrite", "error", "errorifexists"])
def test_delete_takes_append_only(spark, tmp_path, mode):
    """(pyhudi has no delete_partition operation; the option parser refuses it before any mode check.)"""
    operation = "delete"
    path = str(tmp_path / "t")
    pyhudi.write(_frame(spark, OLD), path, _opts("t", "insert"))
    before = _rows(spark, path)
    with pytest.raises(InvalidConfigError, match="append is the only save mode"):
        pyhudi.write(_frame(spark, OLD[:1]), path, _opts("t", operation), mode=mode)
    assert _rows(spark, path) == before
    # "ignore" on an existing table does nothing at all (Hudi checks Ignore first).
    assert pyhudi.write(_frame(spark, OLD[:1]), path, _opts("t", operation), mode="ignore") is None
    assert _rows(spark, path) == before


def test_delete_with_overwrite_refused_on_a_new_table(spark, tmp_path):
    path = str(tmp_path / "none")
    with pytest.raises(InvalidConfigError, match="mode='overwrite'"):
        pyhudi.write(_frame(spark, OLD[:1]), path, _opts("t", "delete"), mode="overwrite")


def test_error_and_ignore_modes(spark, tmp_path):
    path = str(tmp_path / "t")
    assert pyhudi.write(_frame(spark, OLD), path, _opts("t", "upsert"), mode="errorifexists") is not None
    with pytest.raises(HudiError, match="already exists"):
        pyhudi.write(_frame(spark, BATCH), path, _opts("t", "upsert"), mode="error")
    assert pyhudi.write(_frame(spark, BATCH), path, _opts("t", "upsert"), mode="ignore") is None
    assert _rows(spark, path) == sorted(OLD)
