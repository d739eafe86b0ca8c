"""Writes touch what they write (issue 19): an in-process upsert into one partition of a many-partition
table lists that partition only, automatic clean included (Hudi's incremental cleaning mode), once
the table has a clean behind it; the table stays exactly the model's rows (hudi-rs).

No Spark: the local engine, small data.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action
from pyhudi.timeline.timeline import ActiveTimeline
from tests.helpers import hudi_rs

# Adversarial partition values: digits only, a '/', unicode, a space, and a leading zero.
PARTS = ["7", "2024/01/02", "é ü", "a b", "007"] + [f"p{i}" for i in range(25)]
SCHEMA = pa.schema([("id", pa.string()), ("part", pa.string()), ("ts", pa.int64()),
                    ("amount", pa.decimal128(10, 2)), ("note", pa.string())])
Model = dict[str, tuple[str, int]]


def _opts() -> dict[str, str]:
    return {"hoodie.table.name": "scope", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.operation": "upsert",
            "hoodie.cleaner.commits.retained": "1"}


def _batch(keys: list[tuple[str, str]], ts: int) -> pa.Table:
    return pa.Table.from_pylist([{"id": k, "part": p, "ts": ts, "amount": Decimal("1.50") if ts % 2 else None,
                                  "note": None if ts % 3 else f"n{ts} ✓"} for k, p in keys], schema=SCHEMA)


def _write(path: str, keys: list[tuple[str, str]], ts: int, model: Model) -> None:
    pyhudi.write(_batch(keys, ts), path, _opts())
    model.update({k: (p, ts) for k, p in keys})


def _check(path: str, model: Model) -> None:
    t = hudi_rs(path)
    assert t is not None
    got = {r["id"]: (r["part"], r["ts"]) for r in t.select(["id", "part", "ts"]).to_pylist()}
    assert got == model


@pytest.fixture
def listed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every directory Storage lists, relative to the table."""
    out: list[str] = []
    original = Storage.list_dir

    def spy(self: Storage, rel: str) -> Any:
        out.append(rel)
        return original(self, rel)

    monkeypatch.setattr(Storage, "list_dir", spy)
    return out


def test_one_partition_upsert_lists_one_partition(tmp_path: Path, listed: list[str]) -> None:
    path = str(tmp_path / "t")
    model: Model = {}
    _write(path, [(f"k-{i}-{p}", p) for i, p in enumerate(PARTS)], 1, model)
    hot = "2024/01/02"
    for ts in (2, 3):  # versions in the hot partition; the second lets the cleaner delete the first
        _write(path, [(f"k-1-{hot}", hot), (f"new-{ts}", hot)], ts, model)
    cleans = ActiveTimeline.load(Storage(path)).completed().actions(Action.CLEAN).instants
    assert cleans, "the table has a clean behind it"
    listed.clear()
    _write(path, [(f"k-1-{hot}", hot), ("new-4", hot)], 4, model)
    data_dirs = sorted({rel for rel in listed if rel and not rel.startswith(".hoodie")})
    assert data_dirs == [hot], f"an upsert into {hot!r} listed {data_dirs}"
    _check(path, model)
    # An empty batch writes nothing; its clean looks only where the previous write left versions.
    listed.clear()
    pyhudi.write(_batch([], 5), path, _opts())
    assert {rel for rel in listed if rel and not rel.startswith(".hoodie")} <= {hot}
    _check(path, model)
