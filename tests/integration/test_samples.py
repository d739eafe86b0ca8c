"""Every Spark-written sample table reads through pyhudi equal to Apache Hudi's own (gold) result."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

import pyhudi
from tests.helpers import SAMPLES, extract_sample, hudi_rs, manifest, same_rows

pytestmark = pytest.mark.spark
TABLES = {t["name"]: t for t in manifest()}
ALL = sorted(TABLES)
TRIPS = "trips_mor_avro__v6_trips_8i1u"


def _root(name: str, tmp_path):
    return str(extract_sample(TABLES[name]["zip"].split("/")[-1], tmp_path))


def _gold(path: str):
    return pq.read_table(SAMPLES / path)


@pytest.mark.parametrize("name", ALL)
def test_sample_snapshot_equals_gold(spark, tmp_path, name):
    actual = pyhudi.read(spark, _root(name, tmp_path)).toArrow()
    gold = _gold(TABLES[name]["gold"]["snapshot"])
    assert actual.num_rows == TABLES[name]["snapshot_rows"]
    assert sorted(actual.column_names) == sorted(gold.column_names)
    assert same_rows(actual, gold), f"{name}: pyhudi rows differ from Apache Hudi's gold result"


@pytest.mark.parametrize("name", ALL)
def test_sample_time_travel_incremental_read_optimized_counts(spark, tmp_path, name):
    t = TABLES[name]
    root = _root(name, tmp_path)
    if not t["completed_instants"]:
        assert pyhudi.read(spark, root).count() == 0
        return
    first = t["completed_instants"][0]["instant"]
    assert pyhudi.read(spark, root, {"as.of.instant": first}).count() == t["as_of_first_instant_rows"]
    if t["populate_meta_fields"]:
        incr = pyhudi.read(spark, root, {"hoodie.datasource.query.type": "incremental",
                                         "hoodie.datasource.read.begin.instanttime": "000"})
        assert incr.count() == t["incremental_all_rows"]
    if t["table_type"] == "MERGE_ON_READ":
        ro = pyhudi.read(spark, root, {"hoodie.datasource.query.type": "read_optimized"})
        assert ro.count() == t["read_optimized_rows"]


@pytest.mark.parametrize("name", ALL)
def test_sample_agrees_with_hudi_rs(spark, tmp_path, name):
    root = _root(name, tmp_path)
    ours = pyhudi.read(spark, root).toArrow()
    theirs = hudi_rs(root)
    if theirs is None:
        assert ours.num_rows == 0
        return
    cols = [c for c in ours.column_names if c in theirs.column_names]
    assert same_rows(ours, theirs, cols)


@pytest.mark.parametrize("case", sorted(TABLES[TRIPS]["gold"]["options"]))
def test_trips_option_cases(spark, tmp_path, case):
    spec = TABLES[TRIPS]["gold"]["options"][case]
    root = _root(TRIPS, tmp_path)
    options: dict[str, str] = {}
    if spec.get("read_optimized"):
        options["hoodie.datasource.query.type"] = "read_optimized"
    if "start_timestamp" in spec:
        options.update({"hoodie.datasource.query.type": "incremental",
                        "hoodie.datasource.read.begin.instanttime": spec["start_timestamp"],
                        "hoodie.datasource.read.end.instanttime": spec["end_timestamp"]})
    df = pyhudi.read(spark, root, options)
    if spec.get("projection"):
        df = df.select(*spec["projection"])
    gold = _gold(spec["path"])
    actual = df.toArrow()
    if spec.get("projection"):
        assert actual.column_names == spec["projection"]
    assert actual.num_rows == spec["rows"]
    assert same_rows(actual, gold, gold.column_names)
