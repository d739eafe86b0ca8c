"""Record keys and partition paths of typed columns, as Hudi 0.14 writes them (pyhudi/keygen/java_text.py).

Each expected string is Java's `toString` of the value Hudi's Avro key path holds, written out by hand:
decimals as `BigDecimal.toString` at the column's scale (decimal(38,18) 1E-18 has unscaled value 1 and
adjusted exponent -18 < -6, so "1E-18"; decimal(10,10) 1E-8 is unscaled 100 -> "1.00E-8"; zero at scale 10
-> "0E-10"), floats/doubles as `Float/Double.toString` ("1.0E10", "1.0E-5", "100.0", "NaN", "Infinity"),
timestamps as epoch microseconds (`Long.toString`), dates as `LocalDate.toString`, booleans "true"/"false".
Tables are written through Spark's row path and through the direct parquet (Arrow) path, and read back
with pyhudi and hudi-rs.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi.config.registry import Options
from pyhudi.engine.spark import direct as spark_direct
from pyhudi.engine.spark.prepare import prepare_batch
from pyhudi.keygen.spec import PARTITION_COL, RECORD_KEY_COL
from pyhudi.writer.config import build_write_config, resolve_table_config
from tests.helpers import hudi_rs

pytestmark = pytest.mark.spark
UTC = dt.timezone.utc
SCHEMA = pa.schema([("id", pa.int64()), ("dec", pa.decimal128(38, 18)), ("dec2", pa.decimal128(10, 10)),
                    ("f", pa.float32()), ("d", pa.float64()), ("ts", pa.timestamp("us", tz="UTC")),
                    ("dt", pa.date32()), ("b", pa.bool_())])
ROWS = [
    (1, Decimal("1E-18"), Decimal("1E-8"), 1e10, 1e-5, dt.datetime(2024, 3, 1, 0, 0, 0, 1, tzinfo=UTC),
     dt.date(2024, 2, 29), True),
    (2, Decimal("0"), Decimal("0"), 100.0, float("nan"), dt.datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC),
     dt.date(1, 1, 1), False),
    (3, Decimal("-12.5"), Decimal("0.5"), 0.1, float("inf"), dt.datetime(1970, 1, 1, tzinfo=UTC),
     dt.date(9999, 12, 31), True),
]
# (record key, partition path) Hudi writes for each row; key fields dec,f,d,ts,dt,b, partition field dec2.
EXPECTED = {
    1: ("dec:1E-18,f:1.0E10,d:1.0E-5,ts:1709251200000001,dt:2024-02-29,b:true", "1.00E-8"),
    2: ("dec:0E-18,f:100.0,d:NaN,ts:-1000000,dt:0001-01-01,b:false", "0E-10"),
    3: ("dec:-12.500000000000000000,f:0.1,d:Infinity,ts:0,dt:9999-12-31,b:true", "0.5000000000"),
}
KEY_FIELDS = "dec,f,d,ts,dt,b"


def _opts(**extra: str) -> dict[str, str]:
    return {"hoodie.table.name": "k", "hoodie.datasource.write.recordkey.field": KEY_FIELDS,
            "hoodie.datasource.write.partitionpath.field": "dec2", "hoodie.datasource.write.precombine.field": "id",
            "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator", **extra}


def _table() -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in ROWS], SCHEMA)


def _keys(table: pa.Table | None) -> dict[int, tuple[str, str]]:
    assert table is not None
    return {r["id"]: (r[RECORD_KEY_COL], r[PARTITION_COL]) for r in table.to_pylist()}


def _check(spark, path: str) -> None:
    assert _keys(pyhudi.read(spark, path).toArrow()) == EXPECTED
    assert _keys(hudi_rs(path)) == EXPECTED


def test_spark_row_path_writes_java_strings(spark, tmp_path):
    path = str(tmp_path / "t")
    df = spark.createDataFrame(ROWS, "id long, dec decimal(38,18), dec2 decimal(10,10), f float, "
                               "d double, ts timestamp, dt date, b boolean")
    pyhudi.write(df, path, _opts())
    _check(spark, path)
    # Upserting the same rows finds every key again: 3 rows, not 6.
    pyhudi.write(df, path, _opts())
    assert pyhudi.read(spark, path).count() == 3


def test_direct_parquet_path_writes_java_strings(spark, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    pq.write_table(_table().select(["id", "dec", "dec2", "dt", "b", "ts"]), str(src / "a.parquet"))
    df = spark.read.parquet(str(src))
    opts = _opts(**{"hoodie.datasource.write.recordkey.field": "dec,ts,dt,b",
                    "hoodie.datasource.write.operation": "bulk_insert"})
    o = Options.parse(opts)
    cfg = build_write_config(o, resolve_table_config(o, None))
    batch = prepare_batch(df, cfg, None)
    direct = spark_direct.detect(df, cfg, batch.avro_schema)
    assert direct is not None, "decimal, date, timestamp and boolean keys are read by the Arrow path"
    got = pa.concat_tables(direct.read_prepared(direct.units)).select(["id", RECORD_KEY_COL, PARTITION_COL])
    want = batch.df.select("id", RECORD_KEY_COL, PARTITION_COL).toArrow()
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == sorted(want.to_pylist(), key=lambda r: r["id"])
    path = str(tmp_path / "t")
    pyhudi.write(df, path, opts)
    expected = {i: (k.replace(",f:1.0E10,d:1.0E-5", "").replace(",f:100.0,d:NaN", "").replace(",f:0.1,d:Infinity", ""), p)
                for i, (k, p) in EXPECTED.items()}
    assert _keys(pyhudi.read(spark, path).toArrow()) == expected
    assert _keys(hudi_rs(path)) == expected


def test_timestamp_ntz_key_ignores_session_time_zone(spark, tmp_path):
    """TIMESTAMP_NTZ is Avro local-timestamp-micros: the wall clock's microseconds since 1970-01-01T00:00,
    whatever the session time zone (2024-03-01T12:00 -> 19783 days * 86400e6 + 12 h = 1709294400000000)."""
    path = str(tmp_path / "t")
    old = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        df = spark.sql("select 1L as id, timestamp_ntz'2024-03-01 12:00:00.000007' as n, 'x' as p")
        pyhudi.write(df, path, {"hoodie.table.name": "n", "hoodie.datasource.write.recordkey.field": "n",
                                "hoodie.datasource.write.partitionpath.field": "p",
                                "hoodie.datasource.write.precombine.field": "id"})
    finally:
        spark.conf.set("spark.sql.session.timeZone", old)
    # hudi-rs cannot read TIMESTAMP_NTZ columns yet: read the key column from the base file itself.
    files = [str(f) for f in (tmp_path / "t" / "x").iterdir() if f.suffix == ".parquet"]
    assert [pq.read_table(f, columns=[RECORD_KEY_COL]).column(0)[0].as_py() for f in files] == ["1709294400000007"]
    assert [r[RECORD_KEY_COL] for r in pyhudi.read(spark, path).select(RECORD_KEY_COL).collect()] == \
        ["1709294400000007"]


@pytest.mark.parametrize("precision,scale", [(38, 18), (10, 10), (20, 7), (9, 6), (5, 0)])
def test_spark_decimal_text_matches_java_for_random_values(spark, precision, scale):
    """The Spark expression for BigDecimal.toString against java_text.java_decimal (checked against the
    Javadoc table in tests/unit/test_keys_text.py), over values of every magnitude the type holds."""
    import random

    from pyspark.sql.types import DecimalType, LongType, StructField, StructType

    from pyhudi.engine.spark.keygen import KeyGenerator
    from pyhudi.keygen.java_text import java_decimal

    rng = random.Random(precision * 100 + scale)
    unscaled = [0, 1, -1, 10**precision - 1, -(10**precision - 1)]
    unscaled += [rng.choice([-1, 1]) * rng.randrange(10 ** rng.randint(0, precision)) for _ in range(300)]
    schema = StructType([StructField("i", LongType()), StructField("k", DecimalType(precision, scale))])
    df = spark.createDataFrame([(i, Decimal(f"{u}E{-scale}")) for i, u in enumerate(unscaled)], schema)
    kg = KeyGenerator(("k",), (), "org.apache.hudi.keygen.NonpartitionedKeyGenerator", False, False)
    got = {r["i"]: r["t"] for r in df.select("i", kg.record_key(schema).alias("t")).collect()}
    assert got == {i: java_decimal(u, scale) for i, u in enumerate(unscaled)}
