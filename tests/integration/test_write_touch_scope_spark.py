"""Writes through Spark touch what they write (issue 19, item 1): an upsert into one partition of a table
of many lists that partition only, with the SIMPLE, BLOOM and BUCKET indexes (the driver's tagging and the
bucket layout check used to discover every partition). Tables are read with hudi-rs against a model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pyhudi
from pyhudi.storage import Storage
from tests.helpers import hudi_rs

pytestmark = pytest.mark.spark
PARTS = ["2024/01/02", "ü", "007"] + [f"p{i}" for i in range(12)]
SCHEMA = "id string, part string, ts long"


def _opts(operation: str, extra: dict[str, str]) -> dict[str, str]:
    return {"hoodie.table.name": "touch", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.operation": operation, **extra}


@pytest.fixture
def listed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    out: list[str] = []
    original = Storage.list_dir

    def spy(self: Storage, rel: str, *args: Any, **kw: Any) -> Any:
        out.append(rel)
        return original(self, rel, *args, **kw)

    monkeypatch.setattr(Storage, "list_dir", spy)
    yield out


@pytest.mark.parametrize("index", ["SIMPLE", "BLOOM", "BUCKET"])
def test_spark_upsert_lists_the_written_partition_only(spark: Any, tmp_path: Path, listed: list[str],
                                                       index: str) -> None:
    path = str(tmp_path / "t")
    extra = {"hoodie.index.type": index, "hoodie.bucket.index.num.buckets": "2"}
    rows = [(f"{i}.5-{p}", p, 1) for p in PARTS for i in range(3)]
    pyhudi.write(spark.createDataFrame(rows, SCHEMA), path, _opts("insert", extra))
    model = {k: (p, ts) for k, p, ts in rows}
    listed.clear()
    upd = [("0.5-ü", "ü", 2), ("new-ü", "ü", 2)]
    pyhudi.write(spark.createDataFrame(upd, SCHEMA), path, _opts("upsert", extra))
    model.update({k: (p, ts) for k, p, ts in upd})
    data_dirs = sorted({rel for rel in listed if rel and not rel.startswith(".hoodie")})
    assert data_dirs == ["ü"], data_dirs
    got = hudi_rs(path)
    assert got is not None
    assert {r["id"]: (r["part"], r["ts"]) for r in got.to_pylist()} == model
