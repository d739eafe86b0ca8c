"""End to end on a local S3 server, in-process (no Spark): `pyhudi.write` of Arrow data to
`s3://bucket/table`, configured only through the standard AWS_* environment, then `pyhudi.read` and the
independent hudi-rs reader on the bucket, both against a model. Adversarial keys and partition values,
nulls, an empty batch, COW and MOR, and one run behind a proxy that throttles every 7th request."""

from __future__ import annotations

import random
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.storage import Storage
from tests.integration.s3_model import as_model, read_arrow

if TYPE_CHECKING:
    from tests.support.s3_fixtures import S3Bucket

pytest_plugins = ["tests.support.s3_fixtures"]  # the s3 and s3_session fixtures

SCHEMA = pa.schema([("k", pa.string()), ("d", pa.decimal128(20, 4)), ("part", pa.string()),
                    ("name", pa.string()), ("ts", pa.int64())])
KEYS = ["ü/ß", "日本", "a,b", "plain", "007", "x y"]
PARTS = ["2024/01", "007", "a b", "p"]
Model = dict[tuple[str, str], tuple[Any, int]]


def _opts(table_type: str) -> dict[str, str]:
    return {"hoodie.table.name": "s3t", "hoodie.datasource.write.recordkey.field": "k,d",
            "hoodie.datasource.write.partitionpath.field": "part",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.table.type": table_type,
            "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
            "hoodie.datasource.write.operation": "upsert"}


def _key(k: str, d: Decimal) -> str:
    return f"k:{k},d:{d}"


def _batch(rng: random.Random, ts: int, n: int) -> list[dict[str, Any]]:
    rows = {}
    for _ in range(n):
        k, d = rng.choice(KEYS), Decimal(rng.choice(["0.0000", "1.5000", "-2.2500"]))
        part = PARTS[KEYS.index(k) % len(PARTS)]  # a key stays in its partition (non-global index)
        rows[(k, d)] = {"k": k, "d": d, "part": part, "name": rng.choice([None, "n", "名前"]), "ts": ts}
    return list(rows.values())


def _run(s3: S3Bucket, table_type: str, steps: int, seed: int) -> dict[str, dict[str, int]]:
    rng, model, costs = random.Random(seed), {}, {}
    for step in range(steps):
        rows = _batch(rng, step + 1, rng.randint(2, 6))
        op = "delete" if step == 2 else "upsert"
        s3.proxy.reset_counts()
        pyhudi.write(pa.Table.from_pylist(rows, schema=SCHEMA), s3.uri,
                     {**_opts(table_type), "hoodie.datasource.write.operation": op})
        costs[f"{op} {step}"] = {k: v for k, v in s3.proxy.counts.items() if v}
        for r in rows:
            key = (_key(r["k"], r["d"]), r["part"])
            if op == "delete":
                model.pop(key, None)
            else:
                model[key] = (r["name"], r["ts"])
        assert as_model(read_arrow(s3.uri)) == model, f"step {step}: pyhudi.read"
        assert as_model(s3.hudi_rs()) == model, f"step {step}: hudi-rs"
    pyhudi.write(SCHEMA.empty_table(), s3.uri, _opts(table_type))  # an empty batch changes nothing
    assert as_model(s3.hudi_rs()) == model
    return costs


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_write_and_read_on_a_bucket(s3: S3Bucket, table_type: str) -> None:
    costs = _run(s3, table_type, steps=4, seed=7)
    print(f"\n{table_type} requests per write: {costs}")
    storage = Storage(s3.uri)
    assert storage.supports_conditional_create()
    names = {i.name for i in storage.list_dir(".hoodie")}
    assert "hoodie.properties" in names and not any(".pyhudi-tmp" in n for n in names)
    partitions = {r["_hoodie_partition_path"] for r in s3.hudi_rs().to_pylist()}
    assert partitions <= set(PARTS) and "2024/01" in partitions or "007" in partitions


def test_write_behind_a_throttling_proxy(s3: S3Bucket) -> None:
    """Every 7th request answered 503 SlowDown: each write still lands, and both readers agree."""
    rule = s3.proxy.add("status", status=503, every=7)
    _run(s3, "COPY_ON_WRITE", steps=3, seed=11)
    assert rule.fired > 5
