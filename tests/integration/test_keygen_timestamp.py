"""Tables written through pyhudi's Spark path with TimestampBasedKeyGenerator and CustomKeyGenerator:
the stored `_hoodie_partition_path` / `_hoodie_record_key` are the strings Hudi 0.14 writes (Hudi's
TestTimestampBasedKeyGenerator / TestCustomKeyGenerator values), the directory layout follows the output
format (`yyyy/MM/dd`: three directory levels for one partition field), and upserting the same keys lands in
the same file groups without duplicates.

The base files are also read directly (latest file per file group), so that the key generator's strings
are checked independently of the partition listing (pyhudi/view/partitions.py)."""

from __future__ import annotations

import json
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi.errors import HudiError, InvalidConfigError, InvalidRecordError
from pyhudi.keygen.spec import PARTITION_COL, RECORD_KEY_COL
from pyhudi.model.properties import parse_properties
from tests.helpers import hudi_rs

pytestmark = pytest.mark.spark
TB = "hoodie.keygen.timebased."


def _latest_rows(root: pathlib.Path) -> pa.Table:
    """Rows of the newest base file of every file group (the table's snapshot for a COW table)."""
    newest: dict[str, pathlib.Path] = {}
    for f in root.rglob("*.parquet"):
        if ".hoodie" in f.parts:
            continue
        file_id, instant = f.name.split("_")[0], f.stem.split("_")[-1]
        if file_id not in newest or instant > newest[file_id].stem.split("_")[-1]:
            newest[file_id] = f
    return pa.concat_tables([pq.read_table(p) for p in newest.values()])


def _file_groups(root: pathlib.Path) -> dict[str, str]:
    """file id -> partition directory (relative), over all base files."""
    out = {}
    for f in root.rglob("*.parquet"):
        if ".hoodie" not in f.parts:
            out[f.name.split("_")[0]] = str(f.parent.relative_to(root))
    return out


def _partition_dirs(root: pathlib.Path) -> set[str]:
    return {str(p.parent.relative_to(root)) for p in root.rglob(".hoodie_partition_metadata")}


def _ts_opts(**extra: str) -> dict[str, str]:
    return {"hoodie.table.name": "tsk", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "createTime",
            "hoodie.datasource.write.precombine.field": "v",
            "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
            TB + "timestamp.type": "EPOCHMILLISECONDS", TB + "output.dateformat": "yyyy/MM/dd",
            TB + "timezone": "GMT+8:00", **extra}


ROWS = [(1, 1578283932000, "a", 1), (2, 1578283932000 + 16 * 3600_000, "b", 1), (3, None, "c", 1)]
ROW_SCHEMA = "id long, createTime long, name string, v int"


def _write_epoch_table(spark, path: pathlib.Path) -> dict[str, str]:
    pyhudi.write(spark.createDataFrame(ROWS, ROW_SCHEMA), str(path), _ts_opts())
    return _file_groups(path)


def _upsert_same_keys(spark, path: pathlib.Path) -> None:
    df = spark.createDataFrame([(i, t, n + "2", 2) for i, t, n, _ in ROWS], ROW_SCHEMA)
    pyhudi.write(df, str(path), _ts_opts())


def test_epoch_millis_yyyy_mm_dd_three_levels_and_upsert(spark, tmp_path):
    # 1578283932000 is 2020-01-06 12:12 at GMT+8 (TestTimestampBasedKeyGenerator); +16 h crosses midnight.
    path = tmp_path / "t"
    groups = _write_epoch_table(spark, path)
    table = _latest_rows(path)
    got = {r["id"]: (r[RECORD_KEY_COL], r[PARTITION_COL]) for r in table.to_pylist()}
    # A null value is 1 ms after the epoch (Hudi's getDefaultPartitionVal): 1970-01-01 08:00 at GMT+8.
    assert got == {1: ("1", "2020/01/06"), 2: ("2", "2020/01/07"), 3: ("3", "1970/01/01")}
    assert _partition_dirs(path) == {"2020/01/06", "2020/01/07", "1970/01/01"}
    assert "partitionDepth=3" in (path / "2020/01/06/.hoodie_partition_metadata").read_text()

    # The same keys again (with a new value): updates in the same file groups, no duplicate keys.
    _upsert_same_keys(spark, path)
    after = _latest_rows(path)
    assert sorted(after.column("id").to_pylist()) == [1, 2, 3]
    assert {r["id"]: r["name"] for r in after.to_pylist()} == {1: "a2", 2: "b2", 3: "c2"}
    assert _file_groups(path) == groups
    commits = sorted((path / ".hoodie").glob("*.commit"))
    last = json.loads(commits[-1].read_text())
    assert set(last["partitionToWriteStats"]) == {"2020/01/06", "2020/01/07", "1970/01/01"}
    # Read back through pyhudi (partition discovery at any depth) and the independent hudi-rs reader.
    ours = {r["id"]: (r["name"], r[PARTITION_COL]) for r in pyhudi.read(spark, str(path)).toArrow().to_pylist()}
    assert ours == {1: ("a2", "2020/01/06"), 2: ("b2", "2020/01/07"), 3: ("c2", "1970/01/01")}
    theirs = hudi_rs(path)
    assert theirs is not None
    assert {r["id"]: (r["name"], r[PARTITION_COL]) for r in theirs.to_pylist()} == ours


def test_date_string_list_hive_style_and_old_option_names(spark, tmp_path):
    # TestTimestampBasedKeyGenerator ISO-8601 cases, with the old hoodie.deltastreamer.keygen.* names.
    old = "hoodie.deltastreamer.keygen.timebased."
    opts = {"hoodie.table.name": "tsd", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "s", "hoodie.datasource.write.precombine.field": "id",
            "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.TimestampBasedAvroKeyGenerator",
            "hoodie.datasource.write.hive_style_partitioning": "true",
            old + "timestamp.type": "DATE_STRING",
            old + "input.dateformat": "yyyy-MM-dd'T'HH:mm:ssZ,yyyy-MM-dd'T'HH:mm:ss.SSSZ",
            old + "output.dateformat": "yyyyMMddHH", old + "output.timezone": "UTC"}
    rows = [(1, "2020-04-01T13:01:33.428Z"), (2, "2020-04-01T13:01:33Z"), (3, "2020-04-01T13:01:33-05:00")]
    path = tmp_path / "t"
    pyhudi.write(spark.createDataFrame(rows, "id long, s string"), str(path), opts)
    got = {r["id"]: r[PARTITION_COL] for r in _latest_rows(path).to_pylist()}
    assert got == {1: "s=2020040113", 2: "s=2020040113", 3: "s=2020040118"}
    assert _partition_dirs(path) == {"s=2020040113", "s=2020040118"}


def test_unparseable_date_string_fails_before_any_commit(spark, tmp_path):
    opts = _ts_opts(**{TB + "timestamp.type": "DATE_STRING", TB + "input.dateformat": "yyyy-MM-dd"})
    df = spark.createDataFrame([(1, "2020-04-01", 1), (2, "01/04/2020", 1)], "id long, createTime string, v int")
    path = tmp_path / "t"
    with pytest.raises(InvalidRecordError, match="01/04/2020"):  # raised in a task, re-raised as itself
        pyhudi.write(df, str(path), opts)
    assert not list((path / ".hoodie").glob("*.commit")) if (path / ".hoodie").exists() else True


def test_string_column_with_numeric_type_is_refused(spark, tmp_path):
    df = spark.createDataFrame([(1, "2020-04-01", 1)], "id long, createTime string, v int")
    with pytest.raises(HudiError, match="expects a number"):
        pyhudi.write(df, str(tmp_path / "t"), _ts_opts())


def test_custom_keygen_simple_and_timestamp_with_complex_key(spark, tmp_path):
    # TestCustomKeyGenerator#testComplexRecordKeysWithComplexPartitionPath: record key "_row_key:key1,pii_col:pi",
    # partition "timestamp=4357686/ts_ms=20200321" (hive style; ts_ms DATE_STRING yyyy-MM-dd -> yyyyMMdd).
    old = "hoodie.deltastreamer.keygen.timebased."
    opts = {"hoodie.table.name": "ck", "hoodie.datasource.write.recordkey.field": "_row_key, pii_col",
            "hoodie.datasource.write.partitionpath.field": "timestamp:simple,ts_ms:timestamp",
            "hoodie.datasource.write.precombine.field": "v",
            "hoodie.datasource.write.keygenerator.type": "CUSTOM",
            "hoodie.datasource.write.hive_style_partitioning": "true",
            old + "timestamp.type": "DATE_STRING", old + "input.dateformat": "yyyy-MM-dd",
            old + "output.dateformat": "yyyyMMdd"}
    schema = "_row_key string, pii_col string, timestamp long, ts_ms string, v int"
    path = tmp_path / "t"
    pyhudi.write(spark.createDataFrame([("key1", "pi", 4357686, "2020-03-21", 1)], schema), str(path), opts)
    got = [(r[RECORD_KEY_COL], r[PARTITION_COL]) for r in _latest_rows(path).to_pylist()]
    assert got == [("_row_key:key1,pii_col:pi", "timestamp=4357686/ts_ms=20200321")]
    props = (path / ".hoodie" / "hoodie.properties").read_text()
    assert "hoodie.table.partition.fields=timestamp,ts_ms" in props
    assert "hoodie.table.keygenerator.class=org.apache.hudi.keygen.CustomKeyGenerator" in props
    groups = _file_groups(path)

    pyhudi.write(spark.createDataFrame([("key1", "pi", 4357686, "2020-03-21", 2)], schema), str(path), opts)
    after = _latest_rows(path)
    assert after.num_rows == 1 and after.column("v").to_pylist() == [2]
    assert _file_groups(path) == groups

    # Without the field types, the write is refused (Hudi: "Unable to find field names for partition path
    # in proper format"): the types are not in hoodie.properties for table version 6.
    untyped = {**opts, "hoodie.datasource.write.partitionpath.field": "timestamp,ts_ms"}
    with pytest.raises(InvalidConfigError):
        pyhudi.write(spark.createDataFrame([("key1", "pi", 4357686, "2020-03-21", 3)], schema), str(path), untyped)


def test_later_writes_use_stored_or_given_timebased_options(spark, tmp_path):
    """hoodie.properties of a TimestampBasedKeyGenerator table carries its hoodie.keygen.timebased.* options,
    as Hudi's writer stores them (PERSISTED_CONFIG_LIST), so a later write without them reuses them; a table
    whose properties lack them (an older writer) takes them from the write's options. Either way the
    same key lands in the same file group."""
    path = tmp_path / "t"
    schema = "id long, createTime long, name string, v int"
    pyhudi.write(spark.createDataFrame([(1, 1578283932000, "a", 1)], schema), str(path), _ts_opts())
    props_file = path / ".hoodie" / "hoodie.properties"
    props = props_file.read_text()
    stored = parse_properties(props)
    assert stored["hoodie.table.keygenerator.class"] == "org.apache.hudi.keygen.TimestampBasedKeyGenerator"
    assert {k: v for k, v in stored.items() if "timebased" in k} == {k: v for k, v in _ts_opts().items() if k.startswith(TB)}
    groups = _file_groups(path)
    minimal = {"hoodie.table.name": "tsk", "hoodie.datasource.write.recordkey.field": "id",
               "hoodie.datasource.write.precombine.field": "v"}
    pyhudi.write(spark.createDataFrame([(1, 1578283932000, "b", 2)], schema), str(path), minimal)
    assert _file_groups(path) == groups and _latest_rows(path).column("name").to_pylist() == ["b"]

    # The same table without the stored options: the write's options say how to format.
    props_file.write_text("\n".join(line for line in props.splitlines() if "timebased" not in line) + "\n")
    with pytest.raises(InvalidConfigError, match="timestamp.type"):
        pyhudi.write(spark.createDataFrame([(1, 1578283932000, "c", 3)], schema), str(path), minimal)
    later = {**minimal, **{k: v for k, v in _ts_opts().items() if k.startswith(TB)}}
    pyhudi.write(spark.createDataFrame([(1, 1578283932000, "c", 3)], schema), str(path), later)
    assert _file_groups(path) == groups and _latest_rows(path).column("name").to_pylist() == ["c"]


@pytest.mark.parametrize(("ddl", "value", "ts_type", "unit", "expected"), [
    ("float", 1.5e9, "UNIX_TIMESTAMP", None, "2017/07/14"),  # (long) 1.5E9 seconds
    ("double", -0.9, "EPOCHMILLISECONDS", None, "1970/01/01"),  # (long) -0.9 == 0
    ("int", 18736, "SCALAR", "DAYS", "2021/04/19"),  # TestTimestampBasedKeyGenerator#testScalar
    ("date", "2021-04-19", "SCALAR", "DAYS", "2021/04/19"),  # LocalDate.toEpochDay
    ("timestamp", "2021-12-03 06:43:26", "SCALAR", "MICROSECONDS", "2021/12/03"),  # the Avro long of micros
    ("decimal(20,4)", "1578283932000.0001", "EPOCHMILLISECONDS", None, "2020/01/06"),  # BigDecimal.longValue
    ("bigint", None, "EPOCHMILLISECONDS", None, "1970/01/01"),  # null: 1 ms
])
def test_spark_column_types_match_hudis_avro_values(spark, ddl, value, ts_type, unit, expected):
    """Each Spark type reaches the formatter as the Java long Hudi's Avro path holds (key generator only,
    no write)."""
    from pyspark.sql import functions as F

    from pyhudi.engine.spark.keygen import KeyGenerator
    from pyhudi.keygen.timestamp_keygen import settings_from

    props = {TB + "timestamp.type": ts_type, TB + "output.dateformat": "yyyy/MM/dd", TB + "timezone": "UTC"}
    if unit:
        props[TB + "timestamp.scalar.time.unit"] = unit
    keygen = KeyGenerator(("id",), ("p",), "org.apache.hudi.keygen.TimestampBasedKeyGenerator", False, False,
                          ("TIMESTAMP",), settings_from(props))
    old = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "UTC")  # for the timestamp literal only
    try:
        df = spark.createDataFrame([(1, None if value is None else str(value))], "id int, s string") \
            .select("id", F.col("s").cast(ddl).alias("p"))
        assert df.select(keygen.partition_path(df.schema)).collect()[0][0] == expected
    finally:
        spark.conf.set("spark.sql.session.timeZone", old)
