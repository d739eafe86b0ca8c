"""Key and partition-path text of typed values, against Java's toString as Hudi 0.14 prints them.

Oracle values are written out literally:
* BigDecimal.toString: the [unscaled, scale] -> string table of the `BigDecimal.toString()` Javadoc
  (123/0, -123/0, 123/-1, 123/-3, 123/1, 123/5, 123/10, -123/12), plus Hudi keys reported from
  decimal(38,18) / decimal(10,10) columns (`1E-18`, `0E-18`, `1.00E-8`);
* LocalDate.toString: ISO `uuuu-MM-dd`, with '+' before years above 9999 and '-' and 4 digits at least
  for negative years (LocalDate Javadoc: "years outside 0000 to 9999 have a prefix").
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.types import DateType, DecimalType, StructField, StructType

from pyhudi.engine.spark.keygen import KeyGenerator
from pyhudi.keygen.arrow_keys import ArrowKeys, supports
from pyhudi.keygen.java_text import java_decimal, java_local_date

JAVADOC_BIGDECIMAL = [
    (123, 0, "123"), (-123, 0, "-123"), (123, -1, "1.23E+3"), (123, -3, "1.23E+5"), (123, 1, "12.3"),
    (123, 5, "0.00123"), (123, 10, "1.23E-8"), (-123, 12, "-1.23E-10"),
    # decimal(38,18) 1E-18 and 0; decimal(10,10) 1E-8 (unscaled 100); the edge of plain notation.
    (1, 18, "1E-18"), (0, 18, "0E-18"), (100, 10, "1.00E-8"), (1, 6, "0.000001"), (1, 7, "1E-7"),
    (0, 6, "0.000000"), (-5, 0, "-5"), (123456789, 2, "1234567.89"), (-1, 20, "-1E-20"),
]

EPOCH = dt.date(1970, 1, 1)


def test_java_decimal_oracle():
    for unscaled, scale, text in JAVADOC_BIGDECIMAL:
        assert java_decimal(unscaled, scale) == text, (unscaled, scale)


def test_java_local_date_oracle():
    assert java_local_date(0) == "1970-01-01"
    assert java_local_date((dt.date(2024, 2, 29) - EPOCH).days) == "2024-02-29"
    assert java_local_date((dt.date(1, 1, 1) - EPOCH).days) == "0001-01-01"
    assert java_local_date((dt.date(9999, 12, 31) - EPOCH).days) == "9999-12-31"
    assert java_local_date((dt.date(9999, 12, 31) - EPOCH).days + 1) == "+10000-01-01"
    assert java_local_date((dt.date(1, 1, 1) - EPOCH).days - 366) == "0000-01-01"  # year 0 is a leap year
    assert java_local_date((dt.date(1, 1, 1) - EPOCH).days - 367) == "-0001-12-31"


@settings(max_examples=300, deadline=None)
@given(days=st.integers((dt.date(1, 1, 1) - EPOCH).days, (dt.date(9999, 12, 31) - EPOCH).days))
def test_java_local_date_matches_iso_within_range(days):
    assert java_local_date(days) == (EPOCH + dt.timedelta(days=days)).isoformat()


@settings(max_examples=300, deadline=None)
@given(unscaled=st.integers(-(10**38) + 1, 10**38 - 1), scale=st.integers(0, 38))
def test_java_decimal_matches_decimal_spec(unscaled, scale):
    # Java's BigDecimal.toString and Python's Decimal.__str__ both implement the General Decimal
    # Arithmetic "to-scientific-string"; Arrow's decimal cast must agree with both.
    expected = java_decimal(unscaled, scale)
    value = Decimal(f"{unscaled}E{-scale}")  # exact: no context rounding
    assert str(value) == expected
    precision = max(scale, len(str(abs(unscaled))), 1)
    if precision <= 38:
        arr = pa.array([value], pa.decimal128(precision, scale))
        assert pa.compute.cast(arr, pa.string()).to_pylist() == [expected]


def _arrow_keys(fields: list[StructField], key: str, partition: str) -> tuple[ArrowKeys, KeyGenerator]:
    from pyhudi.engine.spark.direct import arrow_schema  # the Spark caller's boundary into Arrow types

    schema = arrow_schema(StructType(fields))
    kg = KeyGenerator((key,), (partition,), "org.apache.hudi.keygen.SimpleKeyGenerator", False, False)
    assert supports(kg, schema)
    return ArrowKeys(kg, schema), kg


def test_arrow_path_decimal_and_date_text():
    keys, _ = _arrow_keys([StructField("k", DecimalType(38, 18)), StructField("d", DateType())], "k", "d")
    days = [0, (dt.date(9999, 12, 31) - EPOCH).days + 1, None]
    table = pa.table({
        "k": pa.array([Decimal("1E-18"), Decimal("0"), Decimal("-12.5")], pa.decimal128(38, 18)),
        "d": pa.array(days, pa.int32()).cast(pa.date32()),
    })
    assert keys.record_key(table).to_pylist() == ["1E-18", "0E-18", "-12.500000000000000000"]
    assert keys.partition_path(table).to_pylist() == ["1970-01-01", "+10000-01-01", "__HIVE_DEFAULT_PARTITION__"]
