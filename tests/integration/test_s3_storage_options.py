"""Explicit `storage_options` (no AWS_* environment at all) reach every step: the in-process write, read and
services, and Spark's executors, which get the options inside the Storage object pickled into their tasks.

Spark here has no S3 connector: its writes and reads of s3:// run on the executors through pyhudi's Storage.
"""

from __future__ import annotations

import os
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

import pyhudi

if TYPE_CHECKING:
    from tests.support.s3_fixtures import S3Bucket

pytest_plugins = ["tests.support.s3_fixtures"]

AWS_VARS = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_ALLOW_HTTP")


def _options(table_type: str) -> dict[str, str]:
    return {
        "hoodie.table.name": "opts_t",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "part",
        "hoodie.datasource.write.operation": "upsert",
    }


def _batch(ids: list[str], ts: int) -> pa.Table:
    parts = ["2024/01", "007", "ü x"]
    return pa.table({"id": ids, "ts": [ts] * len(ids),
                     "part": [parts[sum(map(ord, k)) % 3] for k in ids],  # a key keeps its partition
                     "amount": [Decimal(f"{i}.{ts:02d}") if i % 4 else None for i in range(len(ids))]},
                    schema=pa.schema([("id", pa.string()), ("ts", pa.int64()), ("part", pa.string()),
                                      ("amount", pa.decimal128(10, 2))]))


def _as_model(rows: list[dict[str, Any]]) -> dict[str, tuple[Any, ...]]:
    return {r["id"]: (r["ts"], r["part"], r["amount"]) for r in rows}


@pytest.fixture
def no_aws_env(s3: S3Bucket, monkeypatch: pytest.MonkeyPatch) -> S3Bucket:
    for var in AWS_VARS:
        monkeypatch.delenv(var, raising=False)
    return s3


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_in_process_with_explicit_storage_options(no_aws_env: S3Bucket, table_type: str) -> None:
    s3 = no_aws_env
    so = s3.storage_options
    model: dict[str, tuple[Any, ...]] = {}
    for ts, ids in ((1, [f"k{i}" for i in range(12)]), (2, ["k1", "k5", "ü-key", "k11"])):
        batch = _batch(ids, ts)
        pyhudi.write(batch, s3.uri, _options(table_type), storage_options=so)
        model.update(_as_model(batch.to_pylist()))
        assert _as_model(pyhudi.read(s3.uri, storage_options=so).to_pylist()) == model
    if table_type == "MERGE_ON_READ":
        assert pyhudi.compact(None, s3.uri, storage_options=so)
    pyhudi.cluster(None, s3.uri, {"hoodie.clustering.plan.strategy.small.file.limit": str(64 << 20)},
                   storage_options=so)
    pyhudi.clean(None, s3.uri, storage_options=so)
    assert _as_model(pyhudi.read(s3.uri, storage_options=so).to_pylist()) == model
    assert _as_model(s3.hudi_rs().to_pylist()) == model
    # Without the options (and no environment) the store cannot be reached: a clear error, not a wrong answer.
    with pytest.raises(pyhudi.HudiError):
        pyhudi.read(s3.uri)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_spark_executors_get_the_storage_options(spark: Any, no_aws_env: S3Bucket, table_type: str) -> None:
    s3 = no_aws_env
    so = s3.storage_options
    assert not any(v in os.environ for v in AWS_VARS)
    first = _batch([f"s{i}" for i in range(20)], 1)
    second = _batch(["s1", "s7", "日本", "s19"], 2)
    model: dict[str, tuple[Any, ...]] = {}
    for batch in (first, second):
        df = spark.createDataFrame(batch.to_pandas())
        pyhudi.write(df, s3.uri, _options(table_type), storage_options=so)
        model.update(_as_model(batch.to_pylist()))
    got = pyhudi.read(spark, s3.uri, storage_options=so).select("id", "ts", "part", "amount").collect()
    assert _as_model([r.asDict() for r in got]) == model
    assert _as_model(pyhudi.read(s3.uri, storage_options=so).to_pylist()) == model
    assert _as_model(s3.hudi_rs().to_pylist()) == model
