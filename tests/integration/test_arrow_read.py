"""`pyhudi.read(path, ...)` (in-process, Arrow) against `pyhudi.read(spark, path, ...)`, a model and hudi-rs.

Tables are written by the Spark path; every query is answered by both loaders and compared as sets of
rows including the meta columns, and with a plain-Python model of the rows written. The samples Hudi
itself wrote are compared with their gold results without Spark.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import HollowCommitError, InstantNotFoundError, InvalidConfigError
from pyhudi.model.instant_time import instant_to_ms, ms_to_instant
from pyhudi.reader.arrow_read import plan_job
from pyhudi.reader.plan import plan_read
from tests.helpers import hudi_rs, rows_by_key, same_rows

pytestmark = pytest.mark.spark

QUERY = "hoodie.datasource.query.type"
BEGIN = "hoodie.datasource.read.begin.instanttime"
END = "hoodie.datasource.read.end.instanttime"
COLS = ["name", "part", "ts", "amount"]
SCHEMA = "id string, name string, part string, ts long, amount decimal(10,2)"
# Adversarial keys and partition values: unicode, digits compared as text, '/' (nested directories), null.
PARTS = ["9", "10", "100", "2", "a/b", "ü", None]


def _opts(name: str, table_type: str, **extra: str) -> dict[str, str]:
    return {"hoodie.table.name": name, "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.table.type": table_type, **extra}


def _row(i: int, ts: int, tag: str = "n") -> tuple[Any, ...]:
    return (f"k{i}-ключ", f"{tag}{i}" if i % 5 else None, PARTS[i % len(PARTS)], ts, Decimal(i) / 4)


def _write(spark, path: str, rows: list[tuple[Any, ...]], options: dict[str, str], op: str) -> str:
    df = spark.createDataFrame(rows, SCHEMA)
    return pyhudi.write(df, path, {**options, "hoodie.datasource.write.operation": op})


def _apply(model: dict[str, tuple], rows: list[tuple[Any, ...]], delete: bool = False) -> dict[str, tuple]:
    out = dict(model)
    for r in rows:
        if delete:
            out.pop(r[0], None)
        else:
            out[r[0]] = tuple(r[1:])
    return out


@pytest.fixture(scope="module", params=["COPY_ON_WRITE", "MERGE_ON_READ", "MERGE_ON_READ/INMEMORY"])
def table(spark, tmp_path_factory, request):
    """Insert, upsert (MOR: into logs; with the log-aware INMEMORY index inserts start log-only file
    groups), delete, upsert: the instants and the model after each."""
    path = str(tmp_path_factory.mktemp("arrow_read") / "t")
    table_type, _, index = request.param.partition("/")
    options = _opts("ar", table_type, **({"hoodie.index.type": index} if index else {}))
    history: list[tuple[str, dict[str, tuple]]] = []
    model: dict[str, tuple] = {}
    steps = [([_row(i, 1) for i in range(28)], "insert", False),
             ([_row(i, 5, "u") for i in range(0, 28, 3)], "upsert", False),
             ([_row(i, 9) for i in range(1, 28, 4)], "delete", False),
             ([_row(i, 7, "w") for i in range(20, 35)], "upsert", False)]
    for rows, op, _ in steps:
        instant = _write(spark, path, rows, options, op)
        model = _apply(model, rows, delete=op == "delete")
        history.append((instant, model))
        time.sleep(0.01)
    return path, table_type, history


def assert_same(spark, path: str, options: dict[str, Any] | None = None,
                filters: list[tuple[str, str, Any]] | None = None, columns: list[str] | None = None) -> pa.Table:
    """The in-process read equals the Spark read (same columns, same rows incl. meta columns)."""
    ours = pyhudi.read(path, options, filters, columns)
    theirs = pyhudi.read(spark, path, options, filters).toArrow()
    if columns is not None:
        theirs = theirs.select(columns)
    assert ours.column_names == theirs.column_names
    assert same_rows(ours, theirs), f"in-process read differs from Spark's ({options}, {filters}, {columns})"
    return ours


def test_snapshot_and_read_optimized(spark, table):
    path, table_type, history = table
    ours = assert_same(spark, path)
    assert rows_by_key(ours, "id", COLS) == rows_by_key_model(history[-1][1])
    assert rows_by_key(hudi_rs(path), "id", COLS) == rows_by_key_model(history[-1][1])
    ro = assert_same(spark, path, {QUERY: "read_optimized"})
    units = plan_job(plan_read(path, None, None), None).units
    if table_type == "COPY_ON_WRITE":
        assert same_rows(ro, ours)
    else:  # the merge paths are exercised: slices with logs (and, INMEMORY, without a base file)
        assert any(u.logs for u in units)


def rows_by_key_model(model: dict[str, tuple]) -> dict[str, tuple]:
    from tests.helpers import _norm

    return {k: tuple(_norm(x) for x in v) for k, v in model.items()}


def test_time_travel_every_format(spark, table):
    path, _, history = table
    for instant, model in history:
        ours = assert_same(spark, path, {"as.of.instant": instant})
        assert rows_by_key(ours, "id", COLS) == rows_by_key_model(model), instant
        second = f"{instant[:4]}-{instant[4:6]}-{instant[6:8]} {instant[8:10]}:{instant[10:12]}:{instant[12:14]}"
        # (text, inclusive bound): that millisecond; the end of that second; the last millisecond before it.
        for text, bound in ((f"{second}.{instant[14:]}", instant), (second, instant[:14] + "999"),
                            (instant[:14], instant[:14])):
            if instant == history[-1][0]:  # the same plan code as Spark's: compare with Spark once
                assert_same(spark, path, {"as.of.instant": text})
            states = [m for i, m in history if i <= bound]
            got = rows_by_key(pyhudi.read(path, {"as.of.instant": text}), "id", COLS)
            assert got == rows_by_key_model(states[-1] if states else {}), text
    first = history[0][0]
    assert pyhudi.read(path, {"as.of.instant": f"{first[:4]}-{first[4:6]}-{first[6:8]}"}).num_rows == 0
    with pytest.raises(InvalidConfigError, match="yesterday"):
        pyhudi.read(path, {"as.of.instant": "yesterday"})


def test_incremental_ranges(spark, table):
    path, _, history = table
    instants = [i for i, _ in history]
    for begin, end in [("000", None), (instants[0], None), (instants[0], instants[2]), (instants[1], instants[1]),
                       (instants[-1], None)]:
        options = {QUERY: "incremental", BEGIN: begin, **({END: end} if end else {})}
        ours = assert_same(spark, path, options)
        assert all(begin < t <= (end or instants[-1]) for t in ours.column("_hoodie_commit_time").to_pylist())


def test_filters_prune_and_match_spark(spark, table):
    path, _, history = table
    model = history[-1][1]
    cases: list[list[tuple[str, str, Any]]] = [
        [("part", "<", "9")], [("part", ">", "10")], [("part", "<=", "100")], [("part", "=", "a/b")],
        [("part", "in", ["ü", "2", None])], [("part", "not in", ["9", "10"])], [("part", "!=", "ü")],
        [("part", "=", None)], [("ts", ">", 4), ("part", ">=", "2")], [("amount", "<", Decimal("3.5"))],
        [("amount", ">=", 2)], [("name", "in", ["u3", "w21", "nope"])], [("id", "=", "k4-ключ")],
        [("ts", "in", [])],
    ]
    for flt in cases:
        ours = assert_same(spark, path, filters=flt)
        expected = {k for k, v in model.items() if all(_holds(dict(zip(["id", *COLS], (k, *v))), f) for f in flt)}
        assert set(ours.column("id").to_pylist()) == expected, flt


def _holds(row: dict[str, Any], flt: tuple[str, str, Any]) -> bool:
    col, op, value = flt
    v = row[col]
    if op in ("in", "not in"):
        hit = v is not None and v in [x for x in value if x is not None]
        if op == "in":
            return hit
        return v is not None and not hit and None not in value
    if v is None or value is None:
        return False
    return {"=": v == value, "!=": v != value, "<": v < value, "<=": v <= value, ">": v > value,
            ">=": v >= value}[op]


def test_partition_filter_prunes_listing(spark, table):
    path, table_type, _ = table
    job = plan_job(plan_read(path, None, [("part", "<", "9")]), None)
    # the default partition stays: it may hold '' (< "9"), which Hudi writes there too
    assert {u.partition for u in job.units} == {"10", "100", "2", "__HIVE_DEFAULT_PARTITION__"}
    job = plan_job(plan_read(path, None, [("part", "=", "a/b")]), None)
    assert {u.partition for u in job.units} == {"a/b"}


def test_projection_and_batches(spark, table):
    path, table_type, history = table
    for cols in (["id", "name"], ["amount", "_hoodie_commit_time", "id"], ["part"]):
        assert_same(spark, path, columns=cols)
        assert_same(spark, path, filters=[("ts", ">=", 5)], columns=cols)
    job = plan_job(plan_read(path, None, [("ts", ">", 1)]), ["name"])
    if table_type == "COPY_ON_WRITE":  # base files decode only what the query needs
        assert job.read_schema.names == ["name", "ts"]
    else:  # merges also need the meta, key and ordering columns
        assert {"_hoodie_record_key", "ts", "name", "id"} <= set(job.read_schema.names)
        assert "amount" not in job.read_schema.names
    whole = pyhudi.read(path)
    reader = pyhudi.read(path, batches=True)
    assert isinstance(reader, pa.RecordBatchReader)
    streamed = reader.read_all()
    assert streamed.schema == whole.schema
    assert streamed.equals(whole), "batches and table read differ"
    one = pyhudi.read(path, {"hoodie.pyhudi.engine.local.parallelism": "1"})
    assert one.equals(whole), "result order depends on parallelism"
    keys = [(u.partition, u.file_id) for u in plan_job(plan_read(path, None, None), None).units]
    assert keys == sorted(keys)
    assert pyhudi.read(path).to_pandas().shape == (whole.num_rows, whole.num_columns)


def test_errors_name_the_value(table):
    path, _, history = table
    with pytest.raises(InvalidConfigError, match="nope"):
        pyhudi.read(path, columns=["id", "nope"])
    with pytest.raises(InvalidConfigError, match="zz"):
        pyhudi.read(path, filters=[("zz", "=", 1)])
    with pytest.raises(InvalidConfigError, match="like"):
        pyhudi.read(path, filters=[("part", "like", "1%")])
    with pytest.raises(InvalidConfigError, match="name"):
        pyhudi.read(path, filters=[("name", "<", 3)])
    with pytest.raises(InvalidConfigError, match="begin"):
        pyhudi.read(path, {QUERY: "incremental"})


def test_hollow_commit_policies(spark, tmp_path):
    path = str(tmp_path / "h")
    options = _opts("hollow", "MERGE_ON_READ")
    c1 = _write(spark, path, [_row(i, 1) for i in range(4)], options, "insert")
    time.sleep(0.01)
    c2 = _write(spark, path, [_row(i, 2, "u") for i in range(2, 6)], options, "upsert")
    p = ms_to_instant(instant_to_ms(c1) + 1)
    for name in (f"{p}.deltacommit.requested", f"{p}.deltacommit.inflight"):
        open(os.path.join(path, ".hoodie", name), "wb").close()
    with pytest.raises(HollowCommitError, match=p):
        pyhudi.read(path, {QUERY: "incremental", BEGIN: "000"})
    policy = "hoodie.read.timeline.holes.resolution.policy"
    for mode, end in (("BLOCK", None), ("BLOCK", c2), ("USE_TRANSITION_TIME", None)):
        options = {QUERY: "incremental", BEGIN: "000", policy: mode, **({END: end} if end else {})}
        assert_same(spark, path, options)
    got = pyhudi.read(path, {QUERY: "incremental", BEGIN: "000", policy: "BLOCK"})
    assert set(got.column("_hoodie_commit_time").to_pylist()) == {c1}


def test_cleaned_instant_is_refused(spark, tmp_path):
    path = str(tmp_path / "c")
    options = _opts("cleaned", "COPY_ON_WRITE", **{"hoodie.cleaner.commits.retained": "1",
                                                   "hoodie.datasource.write.partitionpath.field": ""})
    first = _write(spark, path, [_row(i, 1) for i in range(3)], options, "insert")
    for ts in (2, 3, 4):
        _write(spark, path, [_row(i, ts) for i in range(3)], options, "upsert")
    with pytest.raises(InstantNotFoundError) as spark_err:
        pyhudi.read(spark, path, {"as.of.instant": first}).collect()
    with pytest.raises(InstantNotFoundError) as ours:
        pyhudi.read(path, {"as.of.instant": first})
    assert str(ours.value) == str(spark_err.value)


def test_schema_evolution_conforms_old_files(spark, tmp_path):
    """Older files lack a column (null) and hold a narrower type (int -> double, read by pyarrow)."""
    for table_type in ("COPY_ON_WRITE", "MERGE_ON_READ"):
        path = str(tmp_path / table_type)
        options = _opts("evo", table_type, **{"hoodie.datasource.write.partitionpath.field": "p"})
        v1 = spark.createDataFrame([(f"k{i}", "x" if i % 2 else "y", i, i * 10) for i in range(6)],
                                   "id string, p string, ts long, v int")
        pyhudi.write(v1, path, options)
        v2 = spark.createDataFrame([(f"k{i}", "y", i + 10, i * 0.5, "new") for i in range(0, 6, 2)],
                                   "id string, p string, ts long, v double, extra string")
        pyhudi.write(v2, path, {**options, "hoodie.datasource.write.operation": "upsert"})
        ours = assert_same(spark, path)
        assert ours.schema.field("v").type == pa.float64()
        got = rows_by_key(ours, "id", ["v", "extra", "p"])
        assert got == {f"k{i}": ((i * 0.5, "new", "y") if i % 2 == 0 else (float(i * 10), None, "x"))
                       for i in range(6)}
        assert_same(spark, path, filters=[("v", ">", 1.0)], columns=["id", "extra"])
        assert rows_by_key(hudi_rs(path), "id", ["extra"]) == rows_by_key(ours, "id", ["extra"])


def test_virtual_keys_drop_meta_columns(spark, tmp_path):
    for table_type in ("COPY_ON_WRITE", "MERGE_ON_READ"):
        path = str(tmp_path / table_type)
        options = _opts("virt", table_type, **{"hoodie.populate.meta.fields": "false"})
        _write(spark, path, [_row(i, 1) for i in range(10)], options, "insert")
        if table_type == "MERGE_ON_READ":  # inserts only: virtual keys take no updates (pyhudi refuses them)
            _write(spark, path, [_row(i, 1) for i in range(10, 14)], options, "insert")
        ours = assert_same(spark, path)
        assert not any(c.startswith("_hoodie") for c in ours.column_names)
        assert set(ours.column("id").to_pylist()) == {_row(i, 1)[0] for i in range(14 if table_type[0] == "M" else 10)}
        assert_same(spark, path, filters=[("part", "<", "9")], columns=["id"])


@pytest.mark.parametrize("hive,urlencode", [(True, False), (False, True)])
def test_typed_partitions_hive_and_urlencoded(spark, tmp_path, hive, urlencode):
    """Partition columns stored typed (int, date) and string with '/', hive-style or URL-encoded."""
    path = str(tmp_path / "t")
    options = {"hoodie.table.name": "typed", "hoodie.datasource.write.recordkey.field": "id",
               "hoodie.datasource.write.partitionpath.field": "n,d,s", "hoodie.datasource.write.precombine.field": "ts",
               "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
               "hoodie.datasource.write.hive_style_partitioning": str(hive).lower(),
               "hoodie.datasource.write.partitionpath.urlencode": str(urlencode).lower()}
    days = [dt.date(2024, 1, d) for d in (1, 2, 30)]
    rows = [(i, [9, 10, 100, -2][i % 4], days[i % 3], ["a/b", "x y", "ü%"][i % 3] if urlencode else "s", i)
            for i in range(24)]
    pyhudi.write(spark.createDataFrame(rows, "id long, n int, d date, s string, ts long"), path, options)
    filters = [[("n", "<", 10)], [("n", "in", [9, 100])], [("d", ">=", days[1])], [("d", "=", days[2]), ("n", "!=", 9)],
               [("s", "=", "a/b")], [("n", ">", 9), ("s", "<", "x")]]
    for flt in filters:
        ours = assert_same(spark, path, filters=flt)
        index = {"n": 1, "d": 2, "s": 3}
        expected = {r[0] for r in rows if all(_holds({c: r[index[c]]}, f) for f in flt for c in [f[0]])}
        assert set(ours.column("id").to_pylist()) == expected, flt
    job = plan_job(plan_read(path, None, [("n", "<", 10)]), None)
    assert all(("n=100" not in u.partition and not u.partition.startswith("100/")) for u in job.units)
    assert rows_by_key(hudi_rs(path), "id", ["n", "s"]) == rows_by_key(pyhudi.read(path), "id", ["n", "s"])


def test_empty_table_and_empty_range(spark, tmp_path):
    path = str(tmp_path / "e")
    options = _opts("empty", "MERGE_ON_READ")
    c1 = _write(spark, path, [_row(1, 1)], options, "insert")
    _write(spark, path, [_row(1, 2)], options, "delete")
    assert pyhudi.read(path).num_rows == 0
    assert_same(spark, path)
    got = pyhudi.read(path, {QUERY: "incremental", BEGIN: "99990101000000000"})
    assert got.num_rows == 0 and "_hoodie_commit_time" in got.column_names
    assert pyhudi.read(path, {"as.of.instant": c1}).num_rows == 1


def test_decimal_keys_merge_on_read(spark, tmp_path):
    """Decimal record keys (rendered as Java's BigDecimal.toString) merged from logs by event time
    (DefaultHoodieRecordPayload: a late update with a lower ordering value loses), with a null value."""
    path = str(tmp_path / "d")
    options = {**_opts("deckey", "MERGE_ON_READ"), "hoodie.datasource.write.recordkey.field": "k",
               "hoodie.datasource.write.partitionpath.field": "p",
               "hoodie.datasource.write.payload.class": "org.apache.hudi.common.model.DefaultHoodieRecordPayload"}
    schema = "k decimal(12,3), p int, ts long, v string"
    keys = [Decimal("0.001"), Decimal("-12.500"), Decimal("100.000"), Decimal("7.000")]
    rows = [(k, i % 2, 1, f"v{i}") for i, k in enumerate(keys)]
    pyhudi.write(spark.createDataFrame(rows, schema), path, {**options, "hoodie.datasource.write.operation": "insert"})
    updates = [(keys[1], 1, 2, None), (keys[2], 0, 2, "u2"), (keys[3], 1, 0, "late")]
    pyhudi.write(spark.createDataFrame(updates, schema), path, {**options, "hoodie.datasource.write.operation": "upsert"})
    ours = assert_same(spark, path)
    assert rows_by_key(ours, "k", ["v"]) == {keys[0]: ("v0",), keys[1]: (None,), keys[2]: ("u2",), keys[3]: ("v3",)}
    assert sorted(ours.column("_hoodie_record_key").to_pylist()) == sorted(["0.001", "-12.500", "100.000", "7.000"])
    assert_same(spark, path, filters=[("k", ">", Decimal("0.5")), ("p", "in", [0, 1])], columns=["k", "v"])
    assert "ts" in plan_job(plan_read(path, None, None), ["v"]).read_schema.names  # the merge orders by it
    assert rows_by_key(hudi_rs(path), "k", ["v"]) == rows_by_key(ours, "k", ["v"])
