"""Partition pruning with adversarial partition values, against Spark's filter semantics.

For every filter, three answers must agree: `pyhudi.read(filters=...)` (pruned), the same table
read unpruned and filtered in Python with Spark's semantics, and a plain-Python model of the rows
written. hudi-rs reads each table unfiltered and must return the model's rows. Pruning must also
prune: every partition the pruned read lists either holds a matching row or is the default
partition (which may hold nulls or, for strings, '' values).
"""

from __future__ import annotations

import datetime as dt
import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import pyhudi
from pyhudi.engine.spark.read import plan_and_read
from tests.helpers import hudi_rs

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc
OPS = ("=", "!=", "<", "<=", ">", ">=", "in", "not in")


def _options(name: str, part: str | list[str], *, hive: bool = False, urlencode: bool = False) -> dict[str, str]:
    fields = part if isinstance(part, str) else ",".join(part)
    return {"hoodie.table.name": name, "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": fields,
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.hive_style_partitioning": str(hive).lower(),
            "hoodie.datasource.write.partitionpath.urlencode": str(urlencode).lower()}


# -- the model: Spark's three-valued comparison of a column with F.lit(value) ----------------------

def _cmp(a: Any, b: Any) -> int | None:
    if a is None or b is None:
        return None
    a, b = _norm(a), _norm(b)
    return (a > b) - (a < b)


def model_holds(row_value: Any, op: str, value: Any) -> bool:
    """True when Spark's filter `col <op> lit(value)` keeps a row (null counts as not kept)."""
    if op in ("in", "not in"):
        answers = [_cmp(row_value, v) for v in value]
        if 0 in answers:
            return op == "in"
        if row_value is None or None in answers:
            return False
        return op == "not in"
    c = _cmp(row_value, value)
    if c is None:
        return False
    return {"=": c == 0, "!=": c != 0, "<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0}[op]


def _norm(v: Any) -> Any:
    """Spark returns timestamps as aware UTC datetimes through Arrow; compare them as such."""
    if isinstance(v, dt.datetime):
        return v.astimezone(UTC)  # naive: local time, as PySpark converts a datetime literal
    return v


def _rows(table: Any, cols: list[str]) -> set[tuple[Any, ...]]:
    if table is None:
        return set()
    return {tuple(_norm(r[c]) for c in ["id", *cols]) for r in table.select(["id", *cols]).to_pylist()}


def _write(spark: Any, path: str, schema: str, rows: list[tuple[Any, ...]], options: dict[str, str]) -> None:
    """Write rows (id, partition values...) with ts = id."""
    frame = spark.createDataFrame([(*r, r[0]) for r in rows], f"{schema}, ts long")
    pyhudi.write(frame, path, {**options, "hoodie.datasource.write.operation": "insert"})


def check_filters(spark: Any, path: str, cols: list[str], model: list[tuple[Any, ...]],
                  filters: list[list[tuple[str, str, Any]]]) -> None:
    """Every filter: pruned read == unpruned read filtered by the model == the model."""
    everything = _rows(pyhudi.read(spark, path).toArrow(), cols)
    assert everything == set(model), "unfiltered pyhudi read differs from the rows written"
    theirs = _rows(hudi_rs(path), cols)
    assert theirs == set(model), "hudi-rs read differs from the rows written"
    index = {c: i + 1 for i, c in enumerate(cols)}
    for flt in filters:
        expected = {r for r in model if all(model_holds(r[index[c]], op, v) for c, op, v in flt)}
        unpruned = {r for r in everything if all(model_holds(r[index[c]], op, v) for c, op, v in flt)}
        df, plan = plan_and_read(spark, path, None, flt)
        ours = _rows(df.toArrow(), cols)
        assert unpruned == expected
        assert ours == expected, f"filter {flt!r}: pruned read returned {len(ours)} rows, expected {len(expected)}"
        _assert_pruned(path, plan.files, expected, model)


def _assert_pruned(path: str, files: list[str], expected: set[tuple[Any, ...]], model: list[tuple[Any, ...]]) -> None:
    """A partition read by the pruned plan holds a matching row, or is (under) the default partition."""
    read_partitions = {f.rsplit("/", 1)[0] for f in files}
    wanted = _partitions_of(path, expected)
    for p in read_partitions - wanted:
        assert "__HIVE_DEFAULT_PARTITION__" in p, f"partition {p!r} was listed though no row of it matches"


def _partitions_of(path: str, rows: set[tuple[Any, ...]]) -> set[str]:
    import pyarrow.parquet as pq

    from tests.integration.table_checks import all_data_files

    ids = {r[0] for r in rows}
    out = set()
    for rel in all_data_files(path):
        if rel.endswith(".parquet"):
            keys = pq.read_table(f"{path}/{rel}", columns=["id"]).column("id").to_pylist()
            if ids.intersection(keys):
                out.add(rel.rsplit("/", 1)[0])
    return out


# -- the findings, as reported -----------------------------------------------------------------------

def test_string_partition_values_compare_as_text(spark, tmp_path):
    """Finding 12: `part < "9"` over "9","10","100","2" keeps "10","100","2" (text order), 30 rows."""
    path = str(tmp_path / "t")
    rows = [(i, v) for i, v in enumerate(["9", "10", "100", "2"] * 10)]
    _write(spark, path, "id long, part string", rows, _options("strings", "part"))
    assert pyhudi.read(spark, path, filters=[("part", "<", "9")]).count() == 30
    assert pyhudi.read(spark, path, filters=[("part", ">", "10")]).count() == 30  # "100", "2", "9"
    assert pyhudi.read(spark, path, filters=[("part", "<=", "100")]).count() == 20  # "10", "100"


def test_timestamp_partition_values(spark, tmp_path):
    """Finding 13: directories hold epoch microseconds; `evt >= datetime(2024,1,3)` keeps 9 of 15 rows."""
    path = str(tmp_path / "t")
    days = [dt.datetime(2024, 1, d, tzinfo=UTC) for d in range(1, 6)]
    rows = [(i, days[i % 5]) for i in range(15)]
    _write(spark, path, "id long, evt timestamp", rows, _options("stamps", "evt"))
    assert pyhudi.read(spark, path, filters=[("evt", ">=", dt.datetime(2024, 1, 3, tzinfo=UTC))]).count() == 9
    assert pyhudi.read(spark, path, filters=[("evt", "=", days[1])]).count() == 3
    assert pyhudi.read(spark, path, filters=[("evt", "in", [days[0], days[4]])]).count() == 6


def test_pruning_merge_on_read_with_logs(spark, tmp_path):
    """MOR snapshot reads prune the same way; updated rows come from log files of kept partitions."""
    path = str(tmp_path / "t")
    options = {**_options("mor", "part", hive=True), "hoodie.datasource.write.table.type": "MERGE_ON_READ"}
    rows = [(i, v) for i, v in enumerate(["9", "10", "100", "2", ""] * 2)]
    _write(spark, path, "id long, part string", rows, options)
    frame = spark.createDataFrame([(i, v, 100 + i) for i, v in rows[:5]], "id long, part string, ts long")
    pyhudi.write(frame, path, {**options, "hoodie.datasource.write.operation": "upsert"})
    for flt, ids in [([("part", "<", "9")], {1, 2, 3, 4, 6, 7, 8, 9}), ([("part", "=", "")], {4, 9}),
                     ([("part", ">", "10"), ("part", "!=", "9")], {2, 3, 7, 8})]:
        got = {r.id: r.ts for r in pyhudi.read(spark, path, filters=flt).collect()}
        assert got == {i: (100 + i if i < 5 else i) for i in ids}, flt


# -- properties: generated value sets, one table per set, many generated filters ---------------------

_TEXT = st.one_of(
    st.sampled_from(["", "9", "10", "100", "2", "-1", "-10", "007", "1e3", "a b", "a%20b", "x=y", "%", "+",
                     "default", "__HIVE_DEFAULT_PARTITION__", "\U0001F600", "\u00e9", "e\u0301", "Z", "a"]),
    st.text(st.characters(blacklist_categories=["Cs", "Cc"], blacklist_characters="/\\"), max_size=3),
)
_INTS = st.integers(min_value=-(2**31), max_value=2**31 - 1) | st.sampled_from([0, -1, 9, 10, 100])
_STAMPS = st.datetimes(min_value=dt.datetime(1970, 1, 2), max_value=dt.datetime(2100, 1, 1),
                       timezones=st.just(UTC))

# With URL-encoding a '/' stays inside one directory name; without, it makes nested directories
# (issue 16, tested below on its own).
_SLASHED = st.sampled_from(["a/b", "/", "a/", "/b", "%2F", "a/b/c"]) | st.text("ab/%+ ", min_size=1, max_size=4)
_CASES = {"string": ("string", _TEXT), "int": ("int", _INTS), "timestamp": ("timestamp", _STAMPS)}
# Filter literals: naive datetimes too (PySpark reads them in the process's local time zone).
_LITERALS = {**_CASES, "timestamp": ("timestamp", _STAMPS | _STAMPS.map(lambda d: d.replace(tzinfo=None)))}


def _filters(values: st.SearchStrategy, column: str) -> st.SearchStrategy:
    single = st.tuples(st.just(column), st.sampled_from(OPS[:6]), values)
    listed = st.tuples(st.just(column), st.sampled_from(OPS[6:]), st.lists(values, min_size=1, max_size=3))
    return st.lists(single | listed, min_size=1, max_size=2)


@st.composite
def _table_case(draw: st.DrawFn, kind: str) -> tuple[list[Any], bool, bool, list[list[tuple[str, str, Any]]]]:
    values = _CASES[kind][1]
    hive, urlencode = draw(st.booleans()), draw(st.booleans())
    if kind == "string" and urlencode:
        values = values | _SLASHED
    vals = draw(st.lists(values, min_size=1, max_size=5, unique=True))
    with_null = draw(st.booleans())
    pool = st.sampled_from(vals) | _LITERALS[kind][1]
    filters = draw(st.lists(_filters(pool, "part"), min_size=6, max_size=6))
    return vals + ([None] if with_null else []), hive, urlencode, filters


_counter = itertools.count()
# Spark examples are slow: no shrinking (a failure prints the generated case as is).
_SPARK_SETTINGS = {"deadline": None, "derandomize": True, "suppress_health_check": list(HealthCheck),
                   "phases": [Phase.explicit, Phase.generate]}


@pytest.mark.parametrize("kind", sorted(_CASES))
def test_pruning_matches_spark_semantics(spark, tmp_path_factory, kind):
    spark_type = _CASES[kind][0]

    @settings(max_examples=4, **_SPARK_SETTINGS)
    @given(case=_table_case(kind))
    def prop(case: tuple[list[Any], bool, bool, list[list[tuple[str, str, Any]]]]) -> None:
        vals, hive, urlencode, filters = case
        path = str(tmp_path_factory.mktemp("prune") / f"t{next(_counter)}")
        rows = [(i, v) for i, v in enumerate(vals * 2)]
        _write(spark, path, f"id long, part {spark_type}", rows,
               _options("props", "part", hive=hive, urlencode=urlencode))
        check_filters(spark, path, ["part"], rows, filters)

    prop()


@settings(max_examples=6, **_SPARK_SETTINGS)
@given(a=st.lists(_TEXT, min_size=1, max_size=3, unique=True), b=st.lists(_INTS, min_size=1, max_size=3, unique=True),
       hive=st.booleans(), urlencode=st.booleans(), data=st.data())
def test_multi_field_pruning(spark, tmp_path_factory, a, b, hive, urlencode, data):
    path = str(tmp_path_factory.mktemp("prune2") / f"t{next(_counter)}")
    rows = [(i, x, y) for i, (x, y) in enumerate(itertools.product(a + [None], b))]
    _write(spark, path, "id long, p1 string, p2 int", rows,
           _options("multi", ["p1", "p2"], hive=hive, urlencode=urlencode))
    f1 = _filters(st.sampled_from(a) | _TEXT, "p1")
    f2 = _filters(st.sampled_from(b) | _INTS, "p2")
    filters = [data.draw(st.tuples(f1, f2).map(lambda t: t[0] + t[1])) for _ in range(5)]
    check_filters(spark, path, ["p1", "p2"], rows, filters)


# -- issue 16: values with '/' and no URL-encoding ------------------------------------------------

_SLASH_VALUES = ["a/b", "a", "c/d/e", "x"]
_SLASH_FILTERS = [[("part", "=", "a/b")], [("part", "=", "a")], [("part", ">=", "b")],
                  [("part", "in", ["c/d/e", "x"])], [("part", "!=", "x")], [("part", "<", "c/d/e")]]


@pytest.fixture(scope="module", params=[False, True], ids=["plain", "hive"])
def slash_table(spark, tmp_path_factory, request):
    path = str(tmp_path_factory.mktemp("slash") / "t")
    rows = [(i, v) for i, v in enumerate(_SLASH_VALUES)]
    _write(spark, path, "id long, part string", rows, _options("slash", "part", hive=request.param))
    return path, rows


def test_slash_values_pruning_no_worse_than_listing(spark, slash_table):
    """A '/' in a value nests directories (issue 16); pruning must not lose more than the listing does."""
    path, _ = slash_table
    everything = _rows(pyhudi.read(spark, path).toArrow(), ["part"])
    for flt in _SLASH_FILTERS:
        expected = {r for r in everything if all(model_holds(r[1], op, v) for _, op, v in flt)}
        assert _rows(pyhudi.read(spark, path, filters=flt).toArrow(), ["part"]) == expected, flt


def test_slash_values_are_read(spark, slash_table):
    """Issue 16: partitions are found at any depth (directories holding .hoodie_partition_metadata)."""
    path, rows = slash_table
    assert _rows(pyhudi.read(spark, path).toArrow(), ["part"]) == set(rows)
