"""Spark's pushed data source filters (pyspark.sql.datasource.Filter, Spark 4.1+) as pyhudi read conditions.

A filter becomes a `(column, op, value)` Condition only on a top-level column of a type whose comparison
pyhudi reproduces exactly as Spark evaluates it (reader/arrow_filter.py: strings by UTF-8 bytes, integers,
booleans, dates, decimals), with a literal of that kind: such a condition prunes partitions
(view/partitions.py: only partitions no row of which can pass), prunes parquet row groups by their
min/max statistics (arrow_filter.pushdown), and is applied to the rows read, so Spark need not apply it
again. Anything else (floats and timestamps, nested columns, null tests, LIKE patterns, null literals) is
handed back to Spark untouched and does not reach pyhudi at all: a filter pyhudi would evaluate
differently from Spark could otherwise drop rows Spark keeps.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from pyspark.sql import types as T
from pyspark.sql.datasource import (
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
    Not,
)

from pyhudi.view.partitions import Condition

_OPS: dict[type, str] = {EqualTo: "=", GreaterThan: ">", GreaterThanOrEqual: ">=", LessThan: "<",
                         LessThanOrEqual: "<="}
# Spark column type -> the Python literal types whose comparison pyhudi evaluates exactly as Spark.
_EXACT: tuple[tuple[type, tuple[type, ...]], ...] = (
    (T.StringType, (str,)),
    (T.ByteType, (int,)), (T.ShortType, (int,)), (T.IntegerType, (int,)), (T.LongType, (int,)),
    (T.BooleanType, (bool,)),
    (T.DateType, (dt.date,)),
    (T.DecimalType, (Decimal,)),
)


def to_condition(spark_filter: Filter, schema: T.StructType) -> Condition | None:
    """The condition pyhudi applies exactly for `spark_filter`, or None (Spark applies it)."""
    negated = isinstance(spark_filter, Not)
    inner = spark_filter.child if isinstance(spark_filter, Not) else spark_filter
    column = _column(inner, schema)
    if column is None:
        return None
    name, dtype = column
    if isinstance(inner, In):
        values = tuple(inner.value)
        if not values or not all(_exact(dtype, v) for v in values):
            return None
        return Condition(name, "not in" if negated else "in", list(values))
    op = _OPS.get(type(inner))
    value = getattr(inner, "value", None)
    if op is None or not _exact(dtype, value):
        return None
    if negated:
        if op != "=":
            return None  # NOT (a < 1) etc.: Spark rewrites these itself; not modelled
        op = "!="
    return Condition(name, op, value)


def split(filters: Iterable[Filter], schema: T.StructType) -> tuple[list[Condition], list[Filter]]:
    """(conditions pyhudi applies, filters Spark must still apply: the very objects it passed)."""
    conditions: list[Condition] = []
    rest: list[Filter] = []
    for f in filters:
        cond = to_condition(f, schema)
        if cond is None:
            rest.append(f)
        else:
            conditions.append(cond)
    return conditions, rest


def _column(f: Filter, schema: T.StructType) -> tuple[str, T.DataType] | None:
    attribute: tuple[str, ...] = getattr(f, "attribute", ())
    if len(attribute) != 1 or attribute[0] not in schema.fieldNames():
        return None
    return attribute[0], schema[attribute[0]].dataType


def _exact(dtype: T.DataType, value: Any) -> bool:
    if value is None:
        return False
    for spark_type, python_types in _EXACT:
        if isinstance(dtype, spark_type):
            if isinstance(value, bool) and not isinstance(dtype, T.BooleanType):
                return False  # bool is an int in Python: never compare a number column with True
            if isinstance(value, dt.datetime):
                return False  # a datetime is a date in Python: a timestamp literal is not a date
            return isinstance(value, python_types)
    return False


__all__ = ["split", "to_condition"]
