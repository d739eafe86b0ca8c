"""Row filters on Arrow with Spark's semantics (reader/arrow_filter.py), the pushdown subset, and partition
kinds bound from Arrow schemas (view/partition_values.kind_of) agreeing with the Spark types."""

from __future__ import annotations

import datetime as dt
import math
import time
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyhudi.engine.spark.schema import avro_to_spark
from pyhudi.errors import InvalidConfigError
from pyhudi.io import schema as S
from pyhudi.reader import arrow_filter as AF
from pyhudi.view.partition_values import Kind, kind_of, kind_of_spark, literal
from pyhudi.view.partitions import Condition, PartitionFilter, column_kind

UTC = dt.timezone.utc
OPS = ("=", "!=", "<", "<=", ">", ">=")


def _spark_cmp(a: Any, b: Any) -> int | None:
    """Spark's ordering of two non-null values: NaN equals NaN and sorts above every number."""
    if isinstance(a, float) and isinstance(b, (int, float)) or isinstance(b, float) and isinstance(a, (int, float)):
        a_nan, b_nan = isinstance(a, float) and math.isnan(a), isinstance(b, float) and math.isnan(b)
        if a_nan or b_nan:
            return int(a_nan) - int(b_nan)
    return (a > b) - (a < b)


def spark_keeps(v: Any, op: str, lit: Any) -> bool:
    if op in ("in", "not in") and not lit:
        return op == "not in"  # Spark 4: `x IN ()` is false even for a null x, so NOT IN () keeps it
    if op in ("in", "not in"):
        answers = [None if (v is None or x is None) else _spark_cmp(v, x) for x in lit]
        if 0 in answers:
            return op == "in"
        if v is None or None in answers:
            return False
        return op == "not in"
    if v is None or lit is None:
        return False
    c = _spark_cmp(v, lit)
    return {"=": c == 0, "!=": c != 0, "<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0}[op]


def _kept(values: list[Any], dtype: pa.DataType, op: str, lit: Any) -> list[bool]:
    table = pa.table({"c": pa.array(values, dtype)})
    return AF.row_mask(table, [Condition("c", op, lit)]).to_pylist()


_DOUBLES = st.sampled_from([math.nan, -0.0, 0.0, 1.5, -2.0, math.inf, -math.inf]) | st.floats(-10, 10)


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.none() | _DOUBLES, max_size=6), op=st.sampled_from(OPS + ("in", "not in")),
       lit=st.none() | _DOUBLES | st.integers(-5, 5), listed=st.lists(st.none() | _DOUBLES, max_size=3))
def test_doubles_follow_spark_nan_and_null_rules(values, op, lit, listed):
    literal_value = listed if op in ("in", "not in") else lit
    assert _kept(values, pa.float64(), op, literal_value) == [spark_keeps(v, op, literal_value) for v in values]


@settings(max_examples=150, deadline=None)
@given(values=st.lists(st.none() | st.text(max_size=3), max_size=6), op=st.sampled_from(OPS + ("in", "not in")),
       lit=st.text(max_size=3), listed=st.lists(st.none() | st.text(max_size=2), max_size=3))
def test_strings_compare_as_utf8_bytes(values, op, lit, listed):
    literal_value = listed if op in ("in", "not in") else lit
    expected = [spark_keeps(None if v is None else v.encode(), op,
                            [None if x is None else x.encode() for x in literal_value] if isinstance(literal_value, list)
                            else literal_value.encode()) for v in values]
    assert _kept(values, pa.string(), op, literal_value) == expected


def test_digits_as_text_and_numbers():
    parts = ["9", "10", "100", "2", None]
    assert _kept(parts, pa.string(), "<", "9") == [False, True, True, True, False]
    assert _kept([9, 10, 100, 2, None], pa.int32(), "<", "9") == [False, False, False, True, False]
    assert _kept([9, 10], pa.int64(), "=", "10") == [False, True]
    with pytest.raises(InvalidConfigError, match="'x'"):
        _kept([1], pa.int64(), "=", "x")
    with pytest.raises(InvalidConfigError, match="str"):
        _kept([1], pa.int64(), "<", "1.5")
    with pytest.raises(InvalidConfigError, match="column 'c'"):
        _kept(["a"], pa.string(), "<", 3)


def test_decimals_and_mixed_numbers():
    values = [Decimal("1.50"), None, Decimal("-3.25"), Decimal("2.00")]
    assert _kept(values, pa.decimal128(10, 2), ">=", 2) == [False, False, False, True]
    assert _kept(values, pa.decimal128(10, 2), "=", Decimal("1.5")) == [True, False, False, False]
    assert _kept(values, pa.decimal128(10, 2), "<", 1.75) == [True, False, True, False]
    assert _kept([1, 2, 3], pa.int32(), "in", [2, 3.0, None]) == [False, True, True]
    assert _kept([1, 2, None], pa.int32(), "not in", [2]) == [True, False, False]
    assert _kept([1, 2], pa.int32(), "not in", [2, None]) == [False, False]  # null in the list: unknown


def test_timestamps_as_pyspark_types_literals():
    stamps = [dt.datetime(2024, 1, d, tzinfo=UTC) for d in (1, 2, 3)]
    assert _kept(stamps, pa.timestamp("us", tz="UTC"), ">=", dt.datetime(2024, 1, 2, tzinfo=UTC)) == [False, True, True]
    assert _kept(stamps, pa.timestamp("ms", tz="UTC"), "=", stamps[0]) == [True, False, False]
    naive = dt.datetime(2024, 1, 2)  # local time, as PySpark converts it
    micros = int(time.mktime(naive.timetuple())) * 1_000_000
    expected = [int(s.timestamp() * 1_000_000) < micros for s in stamps]
    assert _kept(stamps, pa.timestamp("us", tz="UTC"), "<", naive) == expected
    assert literal(naive) == ("timestamp", micros)
    days = [dt.date(2024, 1, 1), dt.date(2024, 2, 1), None]
    assert _kept(days, pa.date32(), ">", dt.date(2024, 1, 15)) == [False, True, False]


def test_nested_columns_and_missing_columns():
    table = pa.table({"s": pa.array([{"a": 1}, {"a": 5}, None], pa.struct([("a", pa.int32())]))})
    assert AF.row_mask(table, [Condition("s.a", ">", 2)]).to_pylist() == [False, True, False]
    with pytest.raises(InvalidConfigError, match="'nope'"):
        AF.row_mask(table, [Condition("nope", "=", 1)])
    with pytest.raises(InvalidConfigError, match="'b'"):
        AF.row_mask(table, [Condition("s.b", "=", 1)])


def test_pushdown_only_where_parquet_order_is_sparks(tmp_path):
    schema = pa.schema([("s", pa.string()), ("i", pa.int32()), ("f", pa.float64()), ("d", pa.decimal128(5, 2)),
                        ("t", pa.timestamp("ms", tz="UTC"))])

    def push(conds: list[Condition]) -> list[AF.Pushed]:
        return AF.pushdown(schema, conds)

    assert push([Condition("f", ">", 1.0)]) == []  # NaN ordering differs
    assert push([Condition("i", "not in", [1])]) == []
    assert push([Condition("i", "in", [1, None])]) == []
    assert push([Condition("i", "<", 2**40)]) == []  # not an int32: not pushed
    assert push([Condition("s", "<", 3)]) == []
    assert push([Condition("missing", "=", 1)]) == []
    assert push([Condition("d", "=", Decimal("1.005"))]) == []  # more scale than the column
    assert push([Condition("t", "=", dt.datetime(2024, 1, 1, 0, 0, 0, 1500, tzinfo=UTC))]) == []
    assert len(push([Condition("s", "<", "9"), Condition("i", "in", [1, 2])])) == 2


@pytest.mark.parametrize("column,values,flt,groups", [
    ("i", list(range(100)), [Condition("i", ">=", 95), Condition("i", "!=", 97)], [9]),
    ("i", list(range(100)), [Condition("i", "in", [5, 55])], [0, 5]),
    ("i", list(range(100)), [Condition("i", "!=", 3)], list(range(10))),
    ("s", [f"{i:03d}" for i in range(100)], [Condition("s", "<", "015")], [0, 1]),
    ("s", ["é" * (i % 3) + "z" for i in range(100)], [Condition("s", ">", "ée")], list(range(10))),
    ("t", [dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(hours=i) for i in range(100)],
     [Condition("t", "<", dt.datetime(2024, 1, 1, 10, tzinfo=UTC))], [0]),
    ("d", [dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(100)],
     [Condition("d", "=", dt.date(2024, 1, 21))], [2]),
    ("x", [Decimal(i) / 4 for i in range(100)], [Condition("x", ">", Decimal("24.5"))], [9]),
    ("b", [i >= 50 for i in range(100)], [Condition("b", "=", True)], [5, 6, 7, 8, 9]),
])
def test_row_groups_kept_by_statistics(tmp_path, column, values, flt, groups):
    """Row groups are skipped only when their min/max exclude a pushed condition; the rows the exact filter
    keeps all lie in the kept groups."""
    types = {"i": pa.int32(), "s": pa.string(), "t": pa.timestamp("us", tz="UTC"), "d": pa.date32(),
             "x": pa.decimal128(10, 2), "b": pa.bool_()}
    table = pa.table({column: pa.array(values, types[column])})
    path = str(tmp_path / "f.parquet")
    pq.write_table(table, path, row_group_size=10)
    pf = pq.ParquetFile(path)
    kept = AF.row_groups(pf.metadata, pf.schema_arrow, AF.pushdown(pf.schema_arrow, flt))
    assert kept == groups
    wanted = {i // 10 for i, ok in enumerate(AF.row_mask(table, flt).to_pylist()) if ok}
    assert wanted <= set(kept)


_AVRO_TYPES = ["int", "long", "float", "double", "string", "boolean", "bytes",
               {"type": "enum", "name": "E", "symbols": ["A"]}, {"type": "int", "logicalType": "date"},
               {"type": "long", "logicalType": "timestamp-micros"}, {"type": "long", "logicalType": "timestamp-millis"},
               {"type": "long", "logicalType": "local-timestamp-micros"}, {"type": "int", "logicalType": "time-millis"},
               {"type": "long", "logicalType": "time-micros"},
               {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3},
               {"type": "fixed", "name": "F", "size": 8, "logicalType": "decimal", "precision": 18, "scale": 0}]


@pytest.mark.parametrize("avro_type", _AVRO_TYPES, ids=lambda t: t if isinstance(t, str) else str(t.get("logicalType", t["type"])))
def test_arrow_kind_equals_spark_kind(avro_type):
    """Pruning typed from the Arrow read schema decides as it did typed from the Spark schema."""
    pytest.importorskip("pyspark")
    avro = {"type": "record", "name": "r", "fields": [{"name": "c", "type": ["null", avro_type], "default": None}]}
    arrow_kind = column_kind(S.avro_to_arrow(avro), "c")
    spark_kind = column_kind(avro_to_spark(avro), "c")
    assert arrow_kind == spark_kind


def test_bind_nested_and_absent_fields():
    schema = pa.schema([("a", pa.struct([("b", pa.int64())])), ("s", pa.string())])
    assert column_kind(schema, "a.b") == Kind("integral", 20)
    assert column_kind(schema, "a.c") is None and column_kind(schema, "x") is None
    bound = PartitionFilter.from_tuples([("s", "=", "x")]).bind(schema, ["s", "a.b"])  # type: ignore[union-attr]
    assert bound.kinds == {"s": Kind("string"), "a.b": Kind("integral", 20)}
    assert kind_of(pa.timestamp("us")) is None  # TIMESTAMP_NTZ: not modelled
    assert kind_of(pa.uint32()) is None
    assert kind_of_spark(None) is None
