"""Real Hudi 1.x tables (versions 8 and 9, written by Hudi 1.0-1.2) read through pyhudi equal their rows as
the independent reader hudi-rs 0.5 reads them (the gold files), in process and on Spark."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from tests.helpers import SAMPLES_1X, extract_sample_1x, hudi_rs, same_rows, samples_1x

TABLES = samples_1x()
# Lance base files need the optional `lance` extra (pylance).
LANCE = sorted(n for n, t in TABLES.items() if "lance" in n)
PARQUET = sorted(n for n in TABLES if n not in LANCE)


def _gold(name: str) -> pa.Table:
    return pq.read_table(SAMPLES_1X / "gold" / f"{name}.parquet")


def _root(name: str, tmp_path) -> str:
    return str(extract_sample_1x(name, tmp_path))


def _check(actual: pa.Table, name: str) -> None:
    gold = _gold(name)
    assert actual.num_rows == TABLES[name]["hudi_rs_rows"]
    assert sorted(actual.column_names) == sorted(gold.column_names)
    assert same_rows(actual, gold), f"{name}: pyhudi's rows differ from the gold"


@pytest.mark.parametrize("name", PARQUET)
def test_snapshot_in_process_equals_gold(tmp_path, name):
    _check(pyhudi.read(_root(name, tmp_path)), name)


@pytest.mark.spark
@pytest.mark.parametrize("name", PARQUET)
def test_snapshot_on_spark_equals_gold(spark, tmp_path, name):
    _check(pyhudi.read(spark, _root(name, tmp_path)).toArrow(), name)


@pytest.mark.parametrize("name", PARQUET)
def test_projection_and_filter(tmp_path, name):
    """A projected, filtered read returns the gold's matching rows (filters reach the planner and the
    merged rows alike)."""
    root = _root(name, tmp_path)
    gold = _gold(name)
    key = "_hoodie_record_key"
    some = sorted(gold.column(key).to_pylist())[: max(1, gold.num_rows // 2)]
    got = pyhudi.read(root, columns=[key], filters=[(key, "in", some)])
    assert got.column_names == [key]
    assert sorted(got.column(key).to_pylist()) == some


@pytest.mark.parametrize("name", PARQUET)
def test_agrees_with_hudi_rs(tmp_path, name):
    root = _root(name, tmp_path)
    ours, theirs = pyhudi.read(root), hudi_rs(root)
    assert theirs is not None
    assert same_rows(ours, theirs, [c for c in ours.column_names if c in theirs.column_names])
