"""Shared by the bucket scenarios (test_s3_services.py, test_s3_spark.py, test_s3_cli.py): the table's
options, adversarial rows (unicode and decimal keys, partition values `2024/01` and `007`, nulls) and a
plain-Python model that every read of the table is compared with."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pyarrow as pa

import pyhudi

SCHEMA = pa.schema([("k", pa.string()), ("d", pa.decimal128(20, 4)), ("part", pa.string()),
                    ("name", pa.string()), ("ts", pa.int64())])
KEYS = ["ü/ß", "日本", "a,b", "plain", "007", "x y", "0", "Ω-1"]
DECIMALS = [Decimal("0.0000"), Decimal("1.5000"), Decimal("-2.2500")]
PARTS = ["2024/01", "007", "a b", "p"]
Key = tuple[str, str]  # (_hoodie_record_key, _hoodie_partition_path)
Model = dict[Key, tuple[Any, int]]


def options(table_type: str, **extra: str) -> dict[str, str]:
    """Complex keys (string + decimal), one partition column; cleaning and archival kept small so a short
    scenario exercises both."""
    return {"hoodie.table.name": "s3svc", "hoodie.datasource.write.recordkey.field": "k,d",
            "hoodie.datasource.write.partitionpath.field": "part",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.table.type": table_type,
            "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
            "hoodie.datasource.write.operation": "upsert", "hoodie.parquet.small.file.limit": "0", **extra}


def record_key(k: str, d: Decimal) -> str:
    return f"k:{k},d:{d}"


def part_of(k: str) -> str:
    """A key stays in one partition (non-global index)."""
    return PARTS[KEYS.index(k) % len(PARTS)]


def rows_for(keys: list[tuple[str, Decimal]], ts: int, name: str | None = "n") -> list[dict[str, Any]]:
    """One row per key; every third name is null."""
    return [{"k": k, "d": d, "part": part_of(k), "name": None if i % 3 == 2 else f"{name}{i}", "ts": ts}
            for i, (k, d) in enumerate(keys)]


def all_keys() -> list[tuple[str, Decimal]]:
    return [(k, d) for k in KEYS for d in DECIMALS]


def arrow(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def apply(model: Model, rows: list[dict[str, Any]], op: str) -> None:
    """The effect of one write on the model: upsert/insert set rows, delete drops them, insert_overwrite
    first empties every partition the batch touches."""
    if op == "insert_overwrite":
        parts = {r["part"] for r in rows}
        for key in [key for key in model if key[1] in parts]:
            del model[key]
    for r in rows:
        key = (record_key(r["k"], r["d"]), r["part"])
        if op == "delete":
            model.pop(key, None)
        else:
            model[key] = (r["name"], r["ts"])


def as_model(table: pa.Table | None) -> Model:
    out: Model = {}
    for r in ([] if table is None else table.to_pylist()):
        key = (r["_hoodie_record_key"], r["_hoodie_partition_path"])
        assert key not in out, f"duplicate record {key}"
        out[key] = (r["name"], r["ts"])
    return out


def read_arrow(uri: str) -> pa.Table:
    result = pyhudi.read(uri)
    return result.read_all() if isinstance(result, pa.RecordBatchReader) else result


def check(s3: Any, model: Model, step: str, uri: str | None = None) -> None:
    """The table on the bucket read in-process and by hudi-rs, both equal to the model."""
    uri = uri or s3.uri
    assert as_model(read_arrow(uri)) == model, f"{step}: pyhudi.read differs from the model"
    assert as_model(s3.hudi_rs(uri)) == model, f"{step}: hudi-rs differs from the model"


def log_files(uri: str) -> list[str]:
    """The MOR log files in the table's partitions (to prove a read merged logs)."""
    from pyhudi.storage import Storage

    storage = Storage(uri)
    return [e.name for part in PARTS for e in storage.list_dir(part) if ".log." in e.name]
