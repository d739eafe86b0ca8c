"""Writes touch what they write (issue 19, item 1), beyond the one-partition upsert of
test_write_cost_scope.py: delete_partition, insert_overwrite and a BUCKET upsert list only the partitions
they name or write; a write lists `.hoodie` and reads hoodie.properties no more often than it must; a
spread upsert over adversarial partitions (digits, '/', unicode) with decimal keys stays exactly the
model's rows (hudi-rs).

No Spark: the local engine, small data.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.storage import Storage
from tests.helpers import hudi_rs

PARTS = ["7", "2024/01/02", "é ü", "日本", "007", "x=1"] + [f"p{i}" for i in range(14)]
SCHEMA = pa.schema([("id", pa.decimal128(12, 3)), ("part", pa.string()), ("ts", pa.int64()),
                    ("note", pa.string())])
Model = dict[str, tuple[str, int]]
SCALE = Decimal("0.001")


def _k(key: Decimal) -> str:
    """A key as the table stores it (decimal(12, 3)) and hudi-rs returns it."""
    return str(key.quantize(SCALE))


def _opts(operation: str = "upsert", **extra: str) -> dict[str, str]:
    return {"hoodie.table.name": "touch", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.operation": operation,
            **extra}


def _key(i: int, part: str) -> Decimal:
    return Decimal(f"{i}.{PARTS.index(part):03d}") if part in PARTS else Decimal(i)


def _batch(rows: list[tuple[Decimal, str]], ts: int) -> pa.Table:
    return pa.Table.from_pylist([{"id": k, "part": p, "ts": ts, "note": None if ts % 2 else f"n{ts} ✓"}
                                 for k, p in rows], schema=SCHEMA)


def _write(path: str, rows: list[tuple[Decimal, str]], ts: int, model: Model, **opts: str) -> None:
    pyhudi.write(_batch(rows, ts), path, _opts(**opts))
    model.update({_k(k): (p, ts) for k, p in rows})


def _check(path: str, model: Model) -> None:
    t = hudi_rs(path)
    assert t is not None
    got = {str(r["id"]): (r["part"], r["ts"]) for r in t.select(["id", "part", "ts"]).to_pylist()}
    assert got == model
    assert t.num_rows == len(model), "a key stored twice (an update the index missed)"


def _table(path: str, model: Model, **opts: str) -> None:
    _write(path, [(_key(i, p), p) for p in PARTS for i in range(3)], 1, model, **opts)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, str]]]:
    """(call, path) of every directory listing and whole-file read, relative to the table."""
    out: list[tuple[str, str]] = []
    for name in ("list_dir", "read_bytes"):
        original = getattr(Storage, name)

        def spy(self: Storage, rel: str, *args: Any, _orig: Any = original, _name: str = name, **kw: Any) -> Any:
            out.append((_name, rel))
            return _orig(self, rel, *args, **kw)

        monkeypatch.setattr(Storage, name, spy)
    yield out


def _data_dirs(calls: list[tuple[str, str]]) -> list[str]:
    return sorted({rel for call, rel in calls if call == "list_dir" and rel and not rel.startswith(".hoodie")})


def test_delete_partition_lists_the_named_partitions_only(tmp_path: Path, calls: list[tuple[str, str]]) -> None:
    path = str(tmp_path / "t")
    model: Model = {}
    _table(path, model)
    calls.clear()
    pyhudi.write(_batch([], 2), path, _opts("delete_partition", **{
        "hoodie.datasource.write.partitions.to.delete": "2024/01/02,é ü,missing"}))
    assert _data_dirs(calls) == sorted(["2024/01/02", "é ü", "missing"])
    model = {k: v for k, v in model.items() if v[0] not in ("2024/01/02", "é ü")}
    _check(path, model)


def test_insert_overwrite_lists_the_written_partitions_only(tmp_path: Path, calls: list[tuple[str, str]]) -> None:
    path = str(tmp_path / "t")
    model: Model = {}
    _table(path, model)
    calls.clear()
    rows = [(Decimal("99.5"), "日本"), (Decimal("-0.001"), "7")]
    model = {k: v for k, v in model.items() if v[0] not in ("日本", "7")}
    _write(path, rows, 3, model, operation="insert_overwrite")
    assert _data_dirs(calls) == ["7", "日本"]
    _check(path, model)


@pytest.mark.parametrize("operation, rows", [
    ("upsert", [(_key(1, "007"), "007"), (Decimal("5E+3"), "007")]),
    # an in-memory bulk_insert checks the bucket layout of its own partitions, not the table's
    ("bulk_insert", [(Decimal("7.25"), "new/ü"), (Decimal("-3"), "new/ü")]),
])
def test_bucket_write_lists_the_written_partition_only(tmp_path: Path, calls: list[tuple[str, str]], operation: str,
                                                       rows: list[tuple[Decimal, str]]) -> None:
    path = str(tmp_path / "t")
    model: Model = {}
    bucket = {"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "2"}
    _table(path, model, **bucket)
    calls.clear()
    _write(path, rows, 4, model, operation=operation, **bucket)
    assert _data_dirs(calls) == [rows[0][1]]
    _check(path, model)


def test_a_write_lists_the_timeline_and_reads_the_properties_sparingly(tmp_path: Path,
                                                                      calls: list[tuple[str, str]]) -> None:
    """One upsert (no table service due): the timeline listed at the start, for the new instant's
    time, and under the commit lock; hoodie.properties read for the config, the version check and the
    metadata-table check at completion. Before: 5 listings and 4 reads."""
    path = str(tmp_path / "t")
    model: Model = {}
    _table(path, model, **{"hoodie.clean.automatic": "false", "hoodie.archive.automatic": "false"})
    calls.clear()
    _write(path, [(_key(2, "p3"), "p3"), (Decimal("1E+2"), "p3")], 5, model,
           **{"hoodie.clean.automatic": "false", "hoodie.archive.automatic": "false"})
    timeline_lists = sum(1 for call, rel in calls if call == "list_dir" and rel == ".hoodie")
    props_reads = sum(1 for call, rel in calls if call == "read_bytes" and rel.endswith("hoodie.properties"))
    assert timeline_lists <= 3, calls
    assert props_reads <= 3, calls
    _check(path, model)


@pytest.mark.parametrize("index", ["SIMPLE", "BLOOM", "GLOBAL_BLOOM"])
def test_spread_upsert_over_adversarial_partitions(tmp_path: Path, index: str) -> None:
    """Every partition gets updates and inserts (merges into small files); the write reuses the view its
    records were tagged with, and the BLOOM lookup reads each footer once. Deletes of known and unknown
    keys ride along."""
    path = str(tmp_path / "t")
    model: Model = {}
    opts = {"hoodie.index.type": index}
    _table(path, model, **opts)
    rows = [(_key(i, p), p) for p in PARTS for i in (1, 7)]
    _write(path, rows, 6, model, **opts)
    _check(path, model)
    gone = [(_key(0, p), p) for p in PARTS[:4]] + [(Decimal("123456.789"), "7")]
    pyhudi.write(_batch(gone, 7), path, _opts("delete", **opts))
    for k, _ in gone:
        model.pop(_k(k), None)
    _check(path, model)
