"""A merged file version holds each key once, even when the batch was not combined.

Hudi's HoodieMergeHandle keys its incoming records by record key (`keyToNewRecords`), so with
hoodie.combine.before.upsert=false (or an insert without combine.before.insert and without
hoodie.merge.allow.duplicate.on.inserts) two incoming records of a stored key still become one row. pyhudi keeps
the record `dedupe` keeps (greatest precombine value, ties to the last in input order), the same on both
engines (writer/merge_handle.py). Copy-on-write and merge-on-read with the batch merged into a small file.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

import pyhudi
from tests.helpers import arrow_read, hudi_rs, rows_by_key

COLS = ["name", "ts"]
CASES = [("COPY_ON_WRITE", "local"), ("MERGE_ON_READ", "local"),
         pytest.param("COPY_ON_WRITE", "spark", marks=[pytest.mark.spark, pytest.mark.extended]),
         pytest.param("MERGE_ON_READ", "spark", marks=pytest.mark.spark)]


def _options(table_type: str, op: str, **extra: str) -> dict[str, str]:
    return {"hoodie.table.name": "dups", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.table.type": table_type, "hoodie.datasource.write.operation": op, **extra}


def _write(spark: Any, path: str, rows: list[tuple[str, str, int]], options: dict[str, str]) -> None:
    data: Any = pa.table({"id": [r[0] for r in rows], "part": ["x"] * len(rows), "name": [r[1] for r in rows],
                          "ts": pa.array([r[2] for r in rows], pa.int64())})
    pyhudi.write(data if spark is None else spark.createDataFrame(data.to_pandas()), path, options)


def _check(request: pytest.FixtureRequest, path: str, model: dict[str, tuple[str, int]]) -> None:
    ours = rows_by_key(arrow_read(path, None, lambda: request.getfixturevalue("spark")), "id", COLS)
    assert ours == model, f"pyhudi read {ours}, model {model}"
    assert rows_by_key(hudi_rs(path), "id", COLS) == model, "hudi-rs differs from the model"


@pytest.mark.parametrize("table_type,engine", CASES)
def test_upsert_without_combine_writes_a_key_once(request, tmp_path, table_type, engine):
    """Two records of the stored key `a` and a new key `c` (which sends the batch into the small file on MOR
    too): one `a`, the greater ts, whichever comes last."""
    spark = request.getfixturevalue("spark") if engine == "spark" else None
    path = str(tmp_path / "t")
    _write(spark, path, [("a", "a1", 1), ("b", "b1", 1)], _options(table_type, "upsert"))
    off = {"hoodie.combine.before.upsert": "false"}
    _write(spark, path, [("a", "a3", 3), ("a", "a2", 2), ("c", "c1", 1)], _options(table_type, "upsert", **off))
    _check(request, path, {"a": ("a3", 3), "b": ("b1", 1), "c": ("c1", 1)})


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_equal_ordering_values_last_in_input_wins(request, tmp_path, table_type):
    """In-process, the input order is known: among equal precombine values the last record wins, as Hudi's
    keyToNewRecords.put keeps the last one it reads."""
    path = str(tmp_path / "t")
    _write(None, path, [("a", "a1", 1), ("b", "b1", 1)], _options(table_type, "upsert"))
    off = {"hoodie.combine.before.upsert": "false"}
    _write(None, path, [("a", "p", 5), ("a", "q", 5), ("c", "c1", 1)], _options(table_type, "upsert", **off))
    _check(request, path, {"a": ("q", 5), "b": ("b1", 1), "c": ("c1", 1)})


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_insert_into_small_file_without_duplicates_allowed(request, tmp_path, table_type):
    """An insert that is merged (hoodie.merge.allow.duplicate.on.inserts=false), not concatenated, and not
    combined: one row per key as well."""
    path = str(tmp_path / "t")
    _write(None, path, [("a", "a1", 1), ("b", "b1", 1)], _options(table_type, "insert"))
    opts = {"hoodie.combine.before.insert": "false", "hoodie.merge.allow.duplicate.on.inserts": "false"}
    _write(None, path, [("a", "a6", 6), ("a", "a4", 4), ("d", "d1", 1)], _options(table_type, "insert", **opts))
    _check(request, path, {"a": ("a6", 6), "b": ("b1", 1), "d": ("d1", 1)})
