"""The `hudi` Spark data source (issue 30, item 4): `spark.read.format("hudi")` returns the rows
`pyhudi.read(spark, path)` and hudi-rs return, for snapshot, projection, filters (pushed to pyhudi's
partition and statistics pruning), time travel, incremental and read-optimized queries, on COW and MOR tables;
every sample table read through it equals its gold rows."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql.datasource import EqualTo, GreaterThan, In, IsNotNull, LessThan, Not

import pyhudi
import pyhudi.spark
from pyhudi.engine.spark.datasource_read import HudiReader, SliceGroup, SourceOptions, table_schema
from tests.helpers import (
    SAMPLES,
    SAMPLES_1X,
    extract_sample,
    extract_sample_1x,
    hudi_rs,
    manifest,
    same_rows,
    samples_1x,
)

pytestmark = pytest.mark.spark
BEGIN = "hoodie.datasource.read.begin.instanttime"
END = "hoodie.datasource.read.end.instanttime"
QUERY = "hoodie.datasource.query.type"


def _opts(name: str, table_type: str) -> dict[str, str]:
    return {"hoodie.table.name": name, "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "p", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.table.type": table_type}


def _rows(ids: range, ts: int, value: float) -> pa.Table:
    return pa.table({"id": [f"k{i:03d}" for i in ids], "p": [f"p{i % 4}" for i in ids],
                     "ts": [ts] * len(ids), "v": [value + i for i in ids], "n": list(ids)})


@pytest.fixture(scope="module", params=["COPY_ON_WRITE", "MERGE_ON_READ"])
def table(request, tmp_path_factory):
    """Three commits: an insert, an upsert of a third of the keys, a delete of a few: (path, instants)."""
    path = str(tmp_path_factory.mktemp("ds") / request.param.lower())
    opts = _opts("ds_" + request.param.lower(), request.param)
    instants = [pyhudi.write(_rows(range(120), 1, 0.0), path, opts)]
    instants.append(pyhudi.write(_rows(range(0, 120, 3), 2, 1000.0), path,
                                 {**opts, "hoodie.datasource.write.operation": "upsert"}))
    instants.append(pyhudi.write(_rows(range(0, 20), 3, 0.0), path,
                                 {**opts, "hoodie.datasource.write.operation": "delete"}))
    return path, instants


@pytest.fixture(scope="module")
def hudi_spark(spark):
    pyhudi.spark.register(spark)
    pyhudi.spark.register(spark)  # idempotent
    return spark


def _load(spark, path: str, options: dict[str, str] | None = None):
    return spark.read.format("hudi").options(**(options or {})).load(path)


def test_snapshot_equals_pyhudi_and_hudi_rs(hudi_spark, table):
    path, _ = table
    ours = _load(hudi_spark, path).toArrow()
    assert ours.num_rows == 100
    assert same_rows(ours, pyhudi.read(hudi_spark, path).toArrow())
    theirs = hudi_rs(path)
    assert theirs is not None
    assert same_rows(ours, theirs, [c for c in ours.column_names if c in theirs.column_names])
    assert _load(hudi_spark, path).schema == pyhudi.read(hudi_spark, path).schema


def test_path_option_and_projection(hudi_spark, table):
    path, _ = table
    df = hudi_spark.read.format("hudi").option("path", path).load().select("id", "v")
    got = df.toArrow()
    assert got.column_names == ["id", "v"]
    assert same_rows(got, pyhudi.read(hudi_spark, path).select("id", "v").toArrow())


@pytest.mark.parametrize("where", ["p = 'p1'", "p in ('p1', 'p2') and n >= 50", "p <> 'p0' and id < 'k070'",
                                   "v > 1000 or p = 'p3'", "n = 61", "not (p = 'p2')"])
def test_filters_equal_pyhudi(hudi_spark, table, where):
    path, _ = table
    got = _load(hudi_spark, path).filter(where).toArrow()
    want = pyhudi.read(hudi_spark, path).filter(where).toArrow()
    assert got.num_rows > 0 and same_rows(got, want)


def test_filters_reach_pyhudi_pruning(hudi_spark, table):
    """A partition filter is taken by pushFilters (Spark does not re-apply it) and plans fewer slices; a
    filter pyhudi does not model exactly is handed back to Spark untouched."""
    path, _ = table
    opts = SourceOptions.parse({"path": path})
    schema = table_schema(opts)
    everything = HudiReader(opts, schema)
    all_units = sum(len(p.units) for p in everything.partitions() if isinstance(p, SliceGroup))
    pruned = HudiReader(opts, schema)
    p1, kept = EqualTo(("p",), "p1"), IsNotNull(("p",))
    floats = LessThan(("v",), 5.0)
    assert list(pruned.pushFilters([p1, kept, floats])) == [kept, floats]
    groups = [p for p in pruned.partitions() if isinstance(p, SliceGroup)]
    units = [u for g in groups for u in g.units]
    assert 0 < len(units) < all_units and {u.partition for u in units} == {"p1"}
    rows = pa.Table.from_batches([b for g in groups for b in pruned.read(g)])
    assert set(rows.column("p").to_pylist()) == {"p1"}
    # Every other filter form pyhudi takes: none of them is returned to Spark.
    more = HudiReader(opts, schema)
    taken = [In(("p",), ("p1", "p2")), Not(EqualTo(("p",), "p0")), GreaterThan(("n",), 10)]
    assert list(more.pushFilters(taken)) == []
    plan = _load(hudi_spark, path).filter("p = 'p1'")._jdf.queryExecution().executedPlan().toString()
    assert "BatchScan hudi" in plan and "p1" not in plan.split("BatchScan")[0]


def test_time_travel(hudi_spark, table):
    path, instants = table
    for inst in instants[:2]:
        got = _load(hudi_spark, path, {"as.of.instant": inst}).toArrow()
        want = pyhudi.read(hudi_spark, path, {"as.of.instant": inst}).toArrow()
        assert got.num_rows == 120 and same_rows(got, want)
        theirs = hudi_rs(path, as_of=inst)
        assert theirs is not None and same_rows(got, theirs, [c for c in got.column_names if c in theirs.column_names])


def test_incremental(hudi_spark, table):
    path, instants = table
    for begin, end in (("000", instants[0]), (instants[0], instants[1]), (instants[0], None)):
        options = {QUERY: "incremental", BEGIN: begin, **({END: end} if end else {})}
        got = _load(hudi_spark, path, options).toArrow()
        want = pyhudi.read(hudi_spark, path, options).toArrow()
        assert same_rows(got, want), (begin, end)
    second = _load(hudi_spark, path, {QUERY: "incremental", BEGIN: instants[0], END: instants[1]}).toArrow()
    assert set(second.column("_hoodie_commit_time").to_pylist()) == {instants[1]} and second.num_rows == 40


def test_read_optimized(hudi_spark, table):
    path, _ = table
    options = {QUERY: "read_optimized"}
    got = _load(hudi_spark, path, options).toArrow()
    assert same_rows(got, pyhudi.read(hudi_spark, path, options).toArrow())
    theirs = hudi_rs(path, read_optimized=True)
    assert theirs is not None and same_rows(got, theirs, [c for c in got.column_names if c in theirs.column_names])


def test_missing_path_is_refused(hudi_spark):
    with pytest.raises(Exception, match="no options|base path"):
        hudi_spark.read.format("hudi").load().count()


SAMPLE_TABLES = {t["name"]: t for t in manifest()}


@pytest.mark.parametrize("name", sorted(SAMPLE_TABLES))
def test_samples_equal_gold(hudi_spark, tmp_path, name):
    t = SAMPLE_TABLES[name]
    root = extract_sample(t["zip"].split("/")[-1], tmp_path)
    actual = _load(hudi_spark, str(root)).toArrow()
    gold = pq.read_table(SAMPLES / t["gold"]["snapshot"])
    assert actual.num_rows == t["snapshot_rows"]
    assert sorted(actual.column_names) == sorted(gold.column_names)
    assert same_rows(actual, gold)


SAMPLES_1X_TABLES = samples_1x()


@pytest.mark.parametrize("name", sorted(SAMPLES_1X_TABLES))
def test_samples_1x_equal_gold(hudi_spark, tmp_path, name):
    root = extract_sample_1x(name, tmp_path)
    actual = _load(hudi_spark, str(root)).toArrow()
    gold = pq.read_table(SAMPLES_1X / "gold" / f"{name}.parquet")
    assert actual.num_rows == SAMPLES_1X_TABLES[name]["hudi_rs_rows"]
    assert same_rows(actual, gold)


# -- pushdown against Spark's own filter: adversarial partition values ------------------------------

_TEXT_VALUES = ["", "9", "10", "100", "2", "-1", "007", "a b", "a%20b", "x=y", "%", "default", "\u00e9",
                "e\u0301", "Z", "a", None]
_INT_VALUES = [-10, -1, 0, 2, 9, 10, 100, 2**31 - 1, None]


def _adversarial(spark, path: str, spark_type: str, values: list, hive: bool) -> None:
    rows = [(i, v, i * 7 % 11) for i, v in enumerate(values * 2)]
    frame = spark.createDataFrame(rows, f"id long, part {spark_type}, n int").selectExpr("*", "id as ts")
    pyhudi.write(frame, path, {"hoodie.table.name": "adv", "hoodie.datasource.write.recordkey.field": "id",
                               "hoodie.datasource.write.partitionpath.field": "part",
                               "hoodie.datasource.write.precombine.field": "ts",
                               "hoodie.datasource.write.hive_style_partitioning": str(hive).lower(),
                               "hoodie.datasource.write.partitionpath.urlencode": "true",
                               "hoodie.datasource.write.operation": "insert"})


@pytest.mark.parametrize(("spark_type", "values", "literals"), [
    ("string", _TEXT_VALUES, ["10", "", "\u00e9", "__HIVE_DEFAULT_PARTITION__"]),
    ("int", _INT_VALUES, [0, 10, 2**31 - 1]),
])
def test_pushdown_equals_spark_filtering(hudi_spark, tmp_path, spark_type, values, literals):
    """Every comparison Spark pushes (=, <>, <, <=, >, >=, IN, NOT IN) on adversarial partition values, with
    and without hive-style paths, and on a data column (row-group statistics): the data source's rows equal
    Spark filtering pyhudi's unfiltered rows itself."""
    from pyspark.sql import functions as F

    for hive in (False, True):
        path = str(tmp_path / f"t_{hive}")
        _adversarial(hudi_spark, path, spark_type, values, hive)
        base = pyhudi.read(hudi_spark, path)
        ops = [lambda c, v: c == v, lambda c, v: c != v, lambda c, v: c < v, lambda c, v: c <= v,
               lambda c, v: c > v, lambda c, v: c >= v]
        conditions = [op(F.col("part"), F.lit(v)) for op in ops for v in literals]
        conditions += [F.col("part").isin(literals[:2]), ~F.col("part").isin(literals[1:3]),
                       (F.col("part") >= F.lit(literals[0])) & (F.col("n") < 5), F.col("n") == 3]
        truth = base.select("id", *[c.alias(f"c{i}") for i, c in enumerate(conditions)]).toArrow().to_pylist()
        for i, cond in enumerate(conditions):
            got = _load(hudi_spark, path).filter(cond).select("id").toArrow().column("id").to_pylist()
            assert sorted(got) == sorted(r["id"] for r in truth if r[f"c{i}"]), (hive, str(cond))
