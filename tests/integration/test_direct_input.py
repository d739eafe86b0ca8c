"""Direct parquet input (writer/direct_input.py): executors read `spark.read.parquet` inputs with pyarrow.

The direct path must give exactly what Spark's row path gives: the same prepared records (keys,
partition paths, delete flags, data columns) for every supported key type and key generator, the
same tables after bulk_insert and one-task writes (through pyhudi and hudi-rs), the same refusal of
null keys, and Spark's row path whenever it cannot read an input the way Spark would.
"""

from __future__ import annotations

import datetime as dt
import logging
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi.config.registry import Options
from pyhudi.engine.spark import direct as spark_direct
from pyhudi.engine.spark.prepare import prepare_batch
from pyhudi.errors import InvalidRecordError
from pyhudi.keygen.spec import PARTITION_COL, RECORD_KEY_COL
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.writer.config import build_write_config, resolve_table_config
from pyhudi.writer.prepare import BAD_KEY, DELETE_FLAG
from tests.helpers import hudi_rs

pytestmark = [pytest.mark.spark]
UTC = dt.timezone.utc


def _typed_rows() -> pa.Table:
    """Every supported key type, with nulls and empty strings where keys can hold them."""
    n = 40
    return pa.table({
        "rid": pa.array(range(n), pa.int64()),
        "s": pa.array([None if i % 11 == 3 else ("" if i % 13 == 5 else f"k{i % 17}") for i in range(n)]),
        "i": pa.array([None if i % 9 == 4 else i * 7 - 100 for i in range(n)], pa.int32()),
        "l": pa.array([i * 10**12 - 5 for i in range(n)], pa.int64()),
        "b": pa.array([None if i % 10 == 0 else i % 3 == 0 for i in range(n)]),
        "d": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=37 * i) for i in range(n)]),
        "t": pa.array([dt.datetime(2024, 3, 1, tzinfo=UTC) + dt.timedelta(seconds=i * 3601, microseconds=i)
                       for i in range(n)], pa.timestamp("us", tz="UTC")),
        "tn": pa.array([None if i % 7 == 1 else dt.datetime(2023, 1, 1, tzinfo=UTC) + dt.timedelta(hours=i)
                        for i in range(n)], pa.timestamp("ms", tz="UTC")),  # ms in the file: Spark reads us
        "v": pa.array([float(i) / 3 for i in range(n)]),
        "_hoodie_is_deleted": pa.array([None if i % 5 == 0 else i % 4 == 0 for i in range(n)]),
    })


KEYGENS = [
    {"hoodie.datasource.write.recordkey.field": "rid", "hoodie.datasource.write.partitionpath.field": "s"},
    {"hoodie.datasource.write.recordkey.field": "s", "hoodie.datasource.write.partitionpath.field": "i"},
    {"hoodie.datasource.write.recordkey.field": "s,i", "hoodie.datasource.write.partitionpath.field": "b,d",
     "hoodie.datasource.write.hive_style_partitioning": "true"},
    {"hoodie.datasource.write.recordkey.field": "t", "hoodie.datasource.write.partitionpath.field": "tn"},
    {"hoodie.datasource.write.recordkey.field": "d,b,l", "hoodie.datasource.write.partitionpath.field": ""},
    {"hoodie.datasource.write.recordkey.field": "i", "hoodie.datasource.write.partitionpath.field": "l",
     "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator"},
    {"hoodie.datasource.write.recordkey.field": "b", "hoodie.datasource.write.partitionpath.field": "d,s"},
]


def _config(extra: dict[str, str], operation: str = "upsert"):
    o = Options.parse({"hoodie.table.name": "d", "hoodie.datasource.write.precombine.field": "l",
                       "hoodie.datasource.write.operation": operation, **extra})
    return build_write_config(o, resolve_table_config(o, None))


@pytest.mark.parametrize("keys", KEYGENS, ids=lambda k: k["hoodie.datasource.write.recordkey.field"])
@pytest.mark.parametrize("operation", ["upsert", "delete"])
def test_prepared_records_equal_spark_row_path(spark, tmp_path, keys, operation):
    pq.write_table(_typed_rows(), str(tmp_path / "a.parquet"), row_group_size=15)
    df = spark.read.parquet(str(tmp_path))
    cfg = _config(keys, operation)
    batch = prepare_batch(df, cfg, None)
    direct = spark_direct.detect(df, cfg, batch.avro_schema)
    assert direct is not None, "a plain parquet scan with supported key types reads directly"
    got = pa.concat_tables(direct.read_prepared(direct.units))
    want = batch.df.toArrow()
    assert got.column_names == want.column_names
    internal = [RECORD_KEY_COL, PARTITION_COL, DELETE_FLAG, BAD_KEY]
    assert got.select(internal).to_pylist() == want.select(internal).to_pylist()
    data = [c for c in want.column_names if c not in internal]
    if data:  # Spark's Arrow timestamps carry the session zone; the values are what matter
        assert got.select(data).cast(want.select(data).schema).to_pylist() == want.select(data).to_pylist()
    assert any(got.column(BAD_KEY).to_pylist()) == (keys["hoodie.datasource.write.recordkey.field"]
                                                     in ("s", "i", "b", "s,i"))


def test_unsupported_inputs_take_spark_rows(spark, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    pq.write_table(_typed_rows(), str(src / "a.parquet"))
    df = spark.read.parquet(str(src))
    cfg = _config(KEYGENS[0])

    def direct(frame, c=cfg):
        return spark_direct.detect(frame, c, prepare_batch(frame, c, None).avro_schema)

    assert direct(df) is not None
    assert direct(df.filter("rid > 3")) is None, "a filter is Spark's work"
    assert direct(df.select("rid", "s", "l")) is None, "so is a projection"
    assert direct(df.union(df)) is None
    assert direct(spark.createDataFrame(df.toPandas())) is None, "local rows are not files"
    assert direct(df, _config({**KEYGENS[0], "hoodie.pyhudi.write.direct.parquet.input": "false"})) is None
    assert direct(df, _config({"hoodie.datasource.write.recordkey.field": "v",
                               "hoodie.datasource.write.partitionpath.field": "s"})) is None, "double key"
    assert direct(df, _config({**KEYGENS[0], "hoodie.datasource.write.partitionpath.urlencode": "true"})) is None
    assert direct(spark.read.option("datetimeRebaseMode", "LEGACY").parquet(str(src))) is None, \
        "reader options that change values"
    hive = tmp_path / "hive" / "city=x"
    hive.mkdir(parents=True)
    pq.write_table(_typed_rows(), str(hive / "a.parquet"))
    assert direct(spark.read.parquet(str(tmp_path / "hive"))) is None, "partition discovery columns"
    nested = tmp_path / "nested"
    nested.mkdir()
    pq.write_table(pa.table({"rid": [1], "s": ["a"], "l": [1], "m": [[1, 2]]}), str(nested / "a.parquet"))
    assert direct(spark.read.parquet(str(nested))) is None, "nested columns"


def _trips(n: int, start: int, parts: int = 3) -> pa.Table:
    return pa.table({
        "id": pa.array(range(start, start + n), pa.int64()),
        "name": pa.array([f"n{i % 97}" for i in range(start, start + n)]),
        "part": pa.array([f"p{i % parts}" for i in range(start, start + n)]),
        "ts": pa.array([i // 3 for i in range(start, start + n)], pa.int64()),
    })


def _rows(table: pa.Table | None) -> dict[int, tuple]:
    out: dict[int, tuple] = {}
    for r in ([] if table is None else table.to_pylist()):
        assert r["id"] not in out, f"duplicate record {r['id']}"
        out[r["id"]] = (r["name"], r["part"], r["ts"], r.get("extra"))
    return out


def _direct_writes(caplog) -> int:
    return sum("input file(s) directly" in r.getMessage() for r in caplog.records)


def _opts(table_type: str, **extra: str) -> dict[str, str]:
    return {"hoodie.table.name": "d", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.table.type": table_type,
            "hoodie.parquet.max.file.size": str(256 * 1024), "hoodie.parquet.small.file.limit": str(128 * 1024),
            "hoodie.index.bloom.num_entries": "2000", **extra}


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_bulk_insert_and_one_task_writes_equal_spark_rows(spark, tmp_path, caplog, table_type):
    """bulk_insert over several files (one lacking a column, one split across tasks), then upserts with
    updates, inserts and `_hoodie_is_deleted` deletes: the direct table equals the row-path table and
    the model after every write."""
    caplog.set_level(logging.INFO, logger="pyhudi.writer.client")
    src = tmp_path / "load"
    src.mkdir()
    first = _trips(6000, 0)
    pq.write_table(first.append_column("extra", pa.array([f"e{i}" for i in range(6000)])),
                   str(src / "a.parquet"), row_group_size=1000)  # six row groups
    pq.write_table(_trips(900, 6000), str(src / "b.parquet"))  # no `extra`: null there (mergeSchema)
    pq.write_table(_trips(300, 6900).append_column("extra", pa.nulls(300, pa.string())), str(src / "c.parquet"))
    fast, slow = str(tmp_path / "fast"), str(tmp_path / "slow")
    model = {r["id"]: (r["name"], r["part"], r["ts"], None) for r in _trips(7200, 0).to_pylist()}
    for i in range(6000):
        model[i] = (*model[i][:3], f"e{i}")
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(os.path.getsize(src / "a.parquet") // 3))
    try:
        load = spark.read.option("mergeSchema", "true").parquet(str(src))
        pyhudi.write(load, fast, _opts(table_type, **{"hoodie.datasource.write.operation": "bulk_insert"}))
        assert _direct_writes(caplog) == 1
        pyhudi.write(load, slow, _opts(table_type, **{"hoodie.datasource.write.operation": "bulk_insert",
                                                      "hoodie.pyhudi.write.direct.parquet.input": "false"}))
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    assert _direct_writes(caplog) == 1
    _check(spark, (fast, slow), model, "bulk_insert")

    for step in range(4):
        batch_dir = tmp_path / f"batch{step}"
        batch_dir.mkdir()
        upd = _trips(200, 1000 * step + 17).set_column(3, "ts", pa.array([10**6 + step] * 200, pa.int64()))
        new = _trips(150, 20000 + 150 * step)
        extra = pa.array([None if k % 2 else f"x{step}" for k in range(350)])
        rows = pa.concat_tables([upd, new]).append_column("extra", extra)
        deleted = pa.array([k % 50 == 0 for k in range(350)])
        pq.write_table(rows.append_column("_hoodie_is_deleted", deleted), str(batch_dir / "part-0.parquet"))
        before = _direct_writes(caplog)
        opts = _opts(table_type, **{"hoodie.datasource.write.operation": "upsert"})
        pyhudi.write(spark.read.parquet(str(batch_dir)), fast, opts)
        assert _direct_writes(caplog) == before + 1, "a small upsert into an existing table reads directly"
        pyhudi.write(spark.read.parquet(str(batch_dir)), slow,
                     {**opts, "hoodie.pyhudi.write.direct.parquet.input": "false"})
        for r, gone in zip(rows.to_pylist(), deleted.to_pylist()):
            if gone:
                model.pop(r["id"], None)
            else:
                model[r["id"]] = (r["name"], r["part"], r["ts"], r["extra"])
        _check(spark, (fast, slow), model, f"upsert {step}")


def _check(spark, paths, model, what):
    for path in paths:
        assert _rows(pyhudi.read(spark, path).toArrow()) == model, f"{what}: {path}"
        assert _rows(hudi_rs(path)) == model, f"{what}: {path} through hudi-rs"


@pytest.mark.parametrize("bad_row", [10, 4500], ids=["before-any-file", "after-files-were-written"])
def test_null_keys_in_a_direct_bulk_insert_leave_no_records(spark, tmp_path, caplog, bad_row):
    """A null key found before the task wrote anything withdraws the instant (the timeline is as it
    was); found after files were written (a later row group), the instant is rolled back."""
    caplog.set_level(logging.INFO, logger="pyhudi.writer.client")
    path = str(tmp_path / "t")
    o = _opts("COPY_ON_WRITE", **{"hoodie.datasource.write.operation": "bulk_insert",
                                  "hoodie.parquet.max.file.size": str(16 * 1024)})
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.mkdir()
    bad.mkdir()
    pq.write_table(_trips(100, 0), str(good / "a.parquet"))
    pyhudi.write(spark.read.parquet(str(good)), path, o)
    before = ActiveTimeline.load(Storage(path)).timestamps()
    rows = _trips(5000, 1000)
    ids = pa.array([None if i == bad_row else v for i, v in enumerate(rows.column("id").to_pylist())], pa.int64())
    pq.write_table(rows.set_column(0, "id", ids), str(bad / "a.parquet"), row_group_size=1000)
    with pytest.raises(InvalidRecordError, match="1 record.*null or empty record key"):
        pyhudi.write(spark.read.parquet(str(bad)), path, o)
    assert _direct_writes(caplog) == 2, "both loads took the direct path"
    assert sorted(_rows(hudi_rs(path))) == list(range(100)), "the refused load left no records"
    assert sorted(_rows(pyhudi.read(spark, path).toArrow())) == list(range(100))
    timeline = ActiveTimeline.load(Storage(path))
    assert not timeline.pending(), "no write is left pending"
    rolled_back = bool(timeline.completed().actions(Action.ROLLBACK))
    assert rolled_back == (bad_row > 1000), "withdrawn if nothing was written, else rolled back"
    if not rolled_back:
        assert timeline.timestamps() == before
