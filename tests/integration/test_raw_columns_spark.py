"""Base files whose random-text columns are stored uncompressed (io/column_encoding), written on Spark
executors, read by Spark's own parquet reader (vectorized and not, with pushdown on), by pyhudi's Spark
reader and by hudi-rs; and the codec Hudi calls UNCOMPRESSED written on Spark."""

from __future__ import annotations

import random
import uuid
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import pyhudi
from tests.helpers import hudi_rs, rows_by_key

pytestmark = pytest.mark.spark

ROWS = 6000


def _rows(seed: int, ts: int, count: int, pad: int = 0) -> list[tuple[str, str, int, str]]:
    rng = random.Random(seed)
    return [(str(uuid.UUID(int=rng.getrandbits(128), version=4)),
             f"{i} Main Street" + "".join(rng.choices("abcdefgh", k=pad)), ts, ("sf", "la")[i % 2])
            for i in range(count)]


def _codecs(path: Path, column: str) -> set[str]:
    out = set()
    for f in (p for p in path.rglob("*.parquet") if ".hoodie" not in p.parts):
        group = pq.ParquetFile(f).metadata.row_group(0)
        out |= {group.column(j).compression for j in range(group.num_columns)
                if group.column(j).path_in_schema == column}
    return out


@pytest.mark.parametrize("codec", ["default", "UNCOMPRESSED"])
def test_spark_writes_and_reads_raw_columns(spark: Any, tmp_path: Path, codec: str) -> None:
    path = tmp_path / "t"
    opts = {"hoodie.table.name": "raw", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.operation": "upsert"}
    if codec != "default":
        opts["hoodie.parquet.compression.codec"] = codec
    schema = "id string, addr string, ts long, city string"
    first = _rows(1, 1, ROWS)
    pyhudi.write(spark.createDataFrame(first, schema).coalesce(1), str(path), opts)
    update = [(r[0], r[1] + " (moved)", 2, r[3]) for r in first[::3]]
    pyhudi.write(spark.createDataFrame(update, schema).coalesce(1), str(path), opts)
    model = {r[0]: r[1:] for r in first} | {r[0]: r[1:] for r in update}

    assert _codecs(path, "_hoodie_record_key") == {"UNCOMPRESSED"} == _codecs(path, "id")
    assert _codecs(path, "addr") == ({"SNAPPY"} if codec == "default" else {"UNCOMPRESSED"})
    expected = {k: tuple(v) for k, v in model.items()}
    assert rows_by_key(pyhudi.read(spark, str(path)).toArrow(), "id", ["addr", "ts", "city"]) == expected
    assert rows_by_key(hudi_rs(path), "id", ["addr", "ts", "city"]) == expected
    probe = update[7][0]
    for vectorized in ("true", "false"):
        spark.conf.set("spark.sql.parquet.enableVectorizedReader", vectorized)
        try:
            files = spark.read.parquet(*[str(p) for p in path.rglob("*.parquet") if ".hoodie" not in p.parts])
            hits = files.where(f"id = '{probe}' and _hoodie_record_key = '{probe}'").select("addr").collect()
            assert sorted(r.addr for r in hits) == sorted([first[21][1], first[21][1] + " (moved)"])
        finally:
            spark.conf.unset("spark.sql.parquet.enableVectorizedReader")


def test_spark_tops_up_by_appending_row_groups_and_its_reader_reads_them(spark: Any, tmp_path: Path) -> None:
    """Insert top-ups on executors append row groups (io/splice); Spark's parquet reader, vectorized and
    not, with row-group pruning by statistics, reads the latest file as the model's rows. The executors
    are Spark's local Python workers: the size floor reaches them as an option-free module constant, so
    the files here are made big enough (16,000 rows of ~330 bytes a batch)."""
    path = tmp_path / "t"
    opts = {"hoodie.table.name": "splice", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.operation": "insert"}
    schema = "id string, addr string, ts long, city string"
    model: dict[str, tuple[Any, ...]] = {}
    for batch in range(4):
        rows = _rows(10 + batch, batch, 16000, pad=300)
        pyhudi.write(spark.createDataFrame(rows, schema).coalesce(1), str(path), opts)
        model.update({r[0]: r[1:] for r in rows})
    latest = max((p for p in path.rglob("*.parquet") if ".hoodie" not in p.parts), key=lambda p: p.name.rsplit("_", 1)[1])
    assert pq.ParquetFile(latest).metadata.num_row_groups == 4
    assert rows_by_key(pyhudi.read(spark, str(path)).toArrow(), "id", ["addr", "ts", "city"]) == model
    assert rows_by_key(hudi_rs(path), "id", ["addr", "ts", "city"]) == model
    for vectorized in ("true", "false"):
        spark.conf.set("spark.sql.parquet.enableVectorizedReader", vectorized)
        try:
            df = spark.read.parquet(str(latest))
            got = {r.id: (r.addr, r.ts, r.city) for r in df.collect()}
            assert got == model
            names = {r[0] for r in df.select("_hoodie_file_name").distinct().collect()}
            assert names == {latest.name}
            assert df.where("ts = 2").count() == 16000  # the third row group alone, found by its statistics
        finally:
            spark.conf.unset("spark.sql.parquet.enableVectorizedReader")
