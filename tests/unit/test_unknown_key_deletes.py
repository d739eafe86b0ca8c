"""Deletes of keys the table does not hold are dropped at tagging (Hudi's index tags them as inserts and
its write handles skip them): they write nothing, not even their partition's directory and metadata file.
Tagging skips its filter when no record is such a delete, so both paths are checked, in one batch with
known and unknown keys mixed and in batches of one kind only."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

import pyhudi
from tests.helpers import hudi_rs

OPTS = {"hoodie.table.name": "dk", "hoodie.datasource.write.recordkey.field": "k",
        "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p"}


def _write(path: Path, rows: dict[str, list[object]], operation: str = "upsert") -> None:
    pyhudi.write(pa.table(rows), str(path), {**OPTS, "hoodie.datasource.write.operation": operation})


def _state(path: Path) -> dict[str, int]:
    got = pyhudi.read(str(path))
    assert got is not None
    rows = {r["k"]: r["v"] for r in got.select(["k", "v"]).to_pylist()}
    other = hudi_rs(path)
    assert other is not None
    assert {r["k"]: r["v"] for r in other.select(["k", "v"]).to_pylist()} == rows
    return rows


def _partitions(path: Path) -> set[str]:
    return {p.name for p in path.iterdir() if not p.name.startswith(".")}


@pytest.mark.parametrize("mixed", [True, False])
def test_deletes_of_unknown_keys_write_nothing(tmp_path: Path, mixed: bool) -> None:
    table = tmp_path / "t"
    _write(table, {"k": ["a", "b", "c"], "ts": [1, 1, 1], "p": ["x", "x", "x"], "v": [1, 2, 3]})
    if mixed:  # a known key deleted, an unknown one in a new partition, an update
        _write(table, {"k": ["a", "zz", "b"], "ts": [2, 2, 2], "p": ["x", "y", "x"], "v": [0, 0, 20],
                       "_hoodie_is_deleted": [True, True, False]})
        assert _state(table) == {"b": 20, "c": 3}
    else:  # only deletes of unknown keys, then only known ones: nothing to filter
        _write(table, {"k": ["zz"], "ts": [2], "p": ["y"], "v": [0], "_hoodie_is_deleted": [True]})
        assert _state(table) == {"a": 1, "b": 2, "c": 3}
        _write(table, {"k": ["a", "b"], "ts": [3, 3], "p": ["x", "x"], "v": [0, 20],
                       "_hoodie_is_deleted": [True, False]})
        assert _state(table) == {"b": 20, "c": 3}
    _write(table, {"k": ["q"], "ts": [4], "p": ["z"], "v": [0]}, operation="delete")
    assert _state(table) == {"b": 20, "c": 3}
    assert _partitions(table) == {"x"}, "a delete of an unknown key made its partition"
    commits = sorted((table / ".hoodie").glob("*.commit"))
    written = [json.loads(c.read_text())["partitionToWriteStats"] for c in commits]
    assert all(set(stats) <= {"x"} for stats in written), written
