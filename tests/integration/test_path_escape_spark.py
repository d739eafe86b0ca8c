"""The Spark expression of Hudi's partition path escaping equals the Python one (tests/unit/test_path_escape.py)."""

from __future__ import annotations

import pytest

from pyhudi.engine.spark.keygen import escape_path_name_column
from pyhudi.keygen.path_escape import escape_path_name

pytestmark = pytest.mark.spark


def test_spark_expression_matches(spark) -> None:  # type: ignore[no-untyped-def]
    values = ["2021/03/08", "a b+c", "100%", "%2F", "k=v:w", "\t\x01\x7f", "\"#'*?\\{[]^}", "é中\U0001F600", ""]
    df = spark.createDataFrame([(v,) for v in values], "v string")
    got = [r[0] for r in df.select(escape_path_name_column(df["v"])).collect()]
    assert got == [escape_path_name(v) for v in values]
