"""Every Spark-written sample table reads through pyhudi equal to Apache Hudi's own (gold) result."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

import pyhudi
from tests.helpers import SAMPLES, extract_sample, hudi_rs, manifest, same_rows

pytestmark = pytest.mark.spark
TABLES = {t["name"]: t for t in manifest()}
COW = sorted(n for n, t in TABLES.items() if t["table_type"] == "COPY_ON_WRITE")


def _gold(name: str):
    return pq.read_table(SAMPLES / TABLES[name]["gold"]["snapshot"])


@pytest.mark.parametrize("name", COW)
def test_cow_sample_snapshot_equals_gold(spark, tmp_path, name):
    root = extract_sample(TABLES[name]["zip"].split("/")[-1], tmp_path)
    actual = pyhudi.read(spark, str(root)).toArrow()
    gold = _gold(name)
    assert actual.num_rows == TABLES[name]["snapshot_rows"]
    assert sorted(actual.column_names) == sorted(gold.column_names)
    assert same_rows(actual, gold), f"{name}: pyhudi rows differ from Apache Hudi's gold result"


@pytest.mark.parametrize("name", COW)
def test_cow_sample_time_travel_and_incremental_counts(spark, tmp_path, name):
    t = TABLES[name]
    root = extract_sample(t["zip"].split("/")[-1], tmp_path)
    if not t["completed_instants"]:
        assert pyhudi.read(spark, str(root)).count() == 0
        return
    first = t["completed_instants"][0]["instant"]
    assert pyhudi.read(spark, str(root), {"as.of.instant": first}).count() == t["as_of_first_instant_rows"]
    if t["populate_meta_fields"]:
        incr = pyhudi.read(spark, str(root), {"hoodie.datasource.query.type": "incremental",
                                              "hoodie.datasource.read.begin.instanttime": "000"})
        assert incr.count() == t["incremental_all_rows"]


@pytest.mark.parametrize("name", COW)
def test_cow_sample_agrees_with_hudi_rs(spark, tmp_path, name):
    root = extract_sample(TABLES[name]["zip"].split("/")[-1], tmp_path)
    ours = pyhudi.read(spark, str(root)).toArrow()
    theirs = hudi_rs(root)
    if theirs is None:
        assert ours.num_rows == 0
        return
    cols = [c for c in ours.column_names if c in theirs.column_names]
    assert same_rows(ours, theirs, cols)
