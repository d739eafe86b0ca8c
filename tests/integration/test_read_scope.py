"""Reads plan from what is selected (issue 19, item 3) and counts read no column data, in-process.

* `pyhudi.read(path, columns=[]).num_rows` is a count: equal to a model of the rows written on COW and
  on MOR with log files, delete blocks and a pending compaction (whose logs fold onto the previous
  slice), with and without filters, as a table and as batches; the rows themselves equal the model and
  hudi-rs;
* a filtered read lists only the partitions the filter selects (nested `a/b/c` values included) and
  opens only their files; a time travel with a filter checks only the selected partitions' files.

No Spark: in-process writes and reads, small data.
"""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi.errors import InstantNotFoundError
from pyhudi.reader.plan import plan_read
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action
from pyhudi.timeline.timeline import ActiveTimeline
from tests.helpers import hudi_rs

# Adversarial partition values: digits only (and a leading zero), nested '/', unicode, a space.
PARTS = ["7", "007", "2024/01/02", "é ü", "a b", "x"]
SCHEMA = pa.schema([("id", pa.string()), ("part", pa.string()), ("ts", pa.int64()),
                    ("amount", pa.decimal128(10, 2)), ("note", pa.string())])
Model = dict[str, tuple[str, int]]


def _opts(table_type: str = "COPY_ON_WRITE", op: str = "upsert", **extra: str) -> dict[str, str]:
    return {"hoodie.table.name": "scope", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.table.type": table_type, "hoodie.datasource.write.operation": op, **extra}


def _batch(keys: list[tuple[str, str]], ts: int) -> pa.Table:
    return pa.Table.from_pylist([{"id": k, "part": p, "ts": ts, "amount": Decimal(ts) / 4 if ts % 2 else None,
                                  "note": None if ts % 3 else f"n{ts} ✓"} for k, p in keys], schema=SCHEMA)


def _keys(n: int, tag: str) -> list[tuple[str, str]]:
    return [(f"{tag}-{i}-ключ", PARTS[i % len(PARTS)]) for i in range(n)]


def _write(path: str, keys: list[tuple[str, str]], ts: int, model: Model, table_type: str = "COPY_ON_WRITE",
           op: str = "upsert", **extra: str) -> None:
    pyhudi.write(_batch(keys, ts), path, _opts(table_type, op, **extra))
    if op == "delete":
        for k, _ in keys:
            model.pop(k, None)
    else:
        model.update({k: (p, ts) for k, p in keys})


def _rows(table: pa.Table | None) -> Model:
    if table is None:
        return {}
    return {r["id"]: (r["part"], r["ts"]) for r in table.select(["id", "part", "ts"]).to_pylist()}


def _check_counts(path: str, model: Model, with_hudi_rs: bool = True) -> None:
    """Counts (no columns) of the whole table and of each partition equal the model's; the rows equal
    the model and hudi-rs (which drops logs written against a pending compaction: not compared then)."""
    assert pyhudi.read(path, columns=[]).num_rows == len(model)
    assert pyhudi.read(path, columns=[], batches=True).read_all().num_rows == len(model)
    per_part = Counter(p for p, _ in model.values())
    for part in PARTS:
        got = pyhudi.read(path, columns=[], filters=[("part", "=", part)]).num_rows
        assert got == per_part[part], f"count of partition {part!r}"
    odd = sum(1 for _, ts in model.values() if ts % 2)
    assert pyhudi.read(path, columns=[], filters=[("amount", "!=", Decimal(0))]).num_rows == odd
    assert _rows(pyhudi.read(path)) == model
    if with_hudi_rs:
        assert _rows(hudi_rs(path)) == model


def test_count_cow_equals_model(tmp_path: Path) -> None:
    path = str(tmp_path / "cow")
    model: Model = {}
    _write(path, _keys(30, "a"), 1, model, op="bulk_insert")
    _write(path, _keys(12, "a") + _keys(5, "b"), 2, model)
    _write(path, _keys(4, "a"), 3, model, op="delete")
    _check_counts(path, model)
    assert pyhudi.read(path, columns=[], filters=[("part", "=", "nowhere")]).num_rows == 0


def test_count_mor_logs_deletes_and_pending_compaction(tmp_path: Path) -> None:
    path = str(tmp_path / "mor")
    mor = "MERGE_ON_READ"
    model: Model = {}
    _write(path, _keys(30, "a"), 1, model, mor, "bulk_insert")
    _write(path, _keys(10, "a") + _keys(3, "b"), 2, model, mor)  # updates into log files, inserts
    _write(path, _keys(6, "a")[3:], 3, model, mor, "delete")  # delete blocks
    _check_counts(path, model)
    # Schedule (not run) a compaction, then write logs against it: readers fold them onto the old slice.
    _write(path, _keys(2, "a"), 5, model, mor, **{"hoodie.compact.schedule.inline": "true",
                                                  "hoodie.compact.inline.max.delta.commits": "1"})
    pending = ActiveTimeline.load(Storage(path)).actions(Action.COMPACTION).pending().instants
    assert pending, "a compaction is pending"
    _write(path, _keys(8, "a")[4:], 7, model, mor)
    _write(path, [_keys(8, "a")[7]], 9, model, mor, "delete")
    planned = plan_read(path, None, None)
    slices = planned.plan.slices or []
    assert any(s.log_files for s in slices) and any(not s.log_files for s in slices)
    _check_counts(path, model, with_hudi_rs=False)
    assert pyhudi.compact(None, path) == [p.timestamp for p in pending]
    _check_counts(path, model)


def test_count_of_empty_results(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    model: Model = {}
    _write(path, _keys(6, "a"), 1, model)
    _write(path, _keys(6, "a"), 2, model, op="delete")
    assert model == {}
    assert pyhudi.read(path, columns=[]).num_rows == 0
    assert pyhudi.read(path).num_rows == 0
    last = ActiveTimeline.load(Storage(path)).completed().last()
    assert last is not None
    empty_range = {"hoodie.datasource.query.type": "incremental",
                   "hoodie.datasource.read.begin.instanttime": last.timestamp}
    assert pyhudi.read(path, empty_range, columns=[]).num_rows == 0


@pytest.fixture
def spied(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Every directory Storage lists and every file it opens or checks, relative to the table."""
    out: dict[str, list[str]] = {"list": [], "open": [], "exists": []}
    list_dir, open_input, exists = Storage.list_dir, Storage.open_input_file, Storage.exists

    def spy_list(self: Storage, rel: str) -> Any:
        out["list"].append(rel)
        return list_dir(self, rel)

    def spy_open(self: Storage, rel: str, **kwargs: Any) -> Any:
        out["open"].append(rel)
        return open_input(self, rel, **kwargs)

    def spy_exists(self: Storage, rel: str) -> Any:
        out["exists"].append(rel)
        return exists(self, rel)

    monkeypatch.setattr(Storage, "list_dir", spy_list)
    monkeypatch.setattr(Storage, "open_input_file", spy_open)
    monkeypatch.setattr(Storage, "exists", spy_exists)
    return out


def _data(paths: list[str]) -> list[str]:
    return sorted({p for p in paths if p and not p.startswith(".hoodie")})


def _wide(tmp_path: Path, n: int = 40) -> tuple[str, Model, list[str]]:
    """A table of PARTS plus `n` more partitions (digits, nested), two commits."""
    path = str(tmp_path / "wide")
    parts = PARTS + [f"{i}" for i in range(n // 2)] + [f"n/{i}" for i in range(n // 2)]
    model: Model = {}
    keys = [(f"k{i}-{p}", p) for i, p in enumerate(parts)]
    _write(path, keys, 1, model, op="bulk_insert")
    _write(path, keys[::3], 2, model)
    return path, model, parts


def test_filtered_read_lists_only_selected_partitions(tmp_path: Path, spied: dict[str, list[str]]) -> None:
    path, model, parts = _wide(tmp_path)
    for wanted in (["2024/01/02"], ["7", "é ü"], ["n/3"], ["007"]):
        spied["list"].clear()
        spied["open"].clear()
        f = [("part", "in", wanted)] if len(wanted) > 1 else [("part", "=", wanted[0])]
        got = _rows(pyhudi.read(path, filters=f))
        assert got == {k: v for k, v in model.items() if v[0] in wanted}
        assert pyhudi.read(path, columns=[], filters=f).num_rows == len(got)
        # The root, then only the directories leading to the selected partitions.
        ancestors = {"/".join(w.split("/")[:i]) for w in wanted for i in range(1, w.count("/") + 2)}
        assert set(_data(spied["list"])) <= ancestors, f"{wanted}: listed {_data(spied['list'])}"
        opened = {p.rpartition("/")[0] for p in _data(spied["open"])}
        assert opened == set(wanted), f"{wanted}: opened files of {opened}"
    # A range on a string lists every partition (a directory may hold longer values), but opens only
    # the selected partitions' files.
    spied["open"].clear()
    f = [("part", ">=", "x")]
    assert _rows(pyhudi.read(path, filters=f)) == {k: v for k, v in model.items() if v[0] >= "x"}
    assert {p.rpartition("/")[0] for p in _data(spied["open"])} == {p for p in parts if p >= "x"}
    assert _rows(hudi_rs(path)) == model


def test_filtered_time_travel_checks_only_selected_partitions(tmp_path: Path, spied: dict[str, list[str]]
                                                              ) -> None:
    path = str(tmp_path / "tt")
    model: Model = {}
    keys = [(f"k{i}-{p}", p) for i, p in enumerate(PARTS)]
    opts = {"hoodie.cleaner.commits.retained": "2"}
    _write(path, keys, 1, model, op="bulk_insert", **opts)
    snapshots = []
    for ts in range(2, 6):  # rewrite every partition; the cleaner keeps two versions
        _write(path, keys, ts, model, **opts)
        last = ActiveTimeline.load(Storage(path)).commits().completed().last()
        assert last is not None
        snapshots.append((last.timestamp, dict(model)))
    assert ActiveTimeline.load(Storage(path)).completed().actions(Action.CLEAN).instants
    as_of, expected = snapshots[-2]
    wanted = "2024/01/02"
    spied["list"].clear()
    spied["exists"].clear()
    got = _rows(pyhudi.read(path, {"as.of.instant": as_of}, filters=[("part", "=", wanted)]))
    assert got == {k: v for k, v in expected.items() if v[0] == wanted}
    assert _data(spied["exists"]) == [], "files are checked against the view's listing, not one by one"
    assert set(_data(spied["list"])) <= {"2024", "2024/01", wanted}
    assert _rows(hudi_rs(path, as_of=as_of)) == expected
    # The oldest version of the selected partition was cleaned: still refused, naming a readable instant.
    with pytest.raises(InstantNotFoundError, match="earliest instant still readable is"):
        pyhudi.read(path, {"as.of.instant": snapshots[0][0]}, filters=[("part", "=", wanted)])
    assert _rows(pyhudi.read(path, {"as.of.instant": as_of})) == expected


def test_count_decodes_no_column_and_reads_push_projection_and_filters(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "t")
    model: Model = {}
    _write(path, _keys(24, "a"), 1, model, op="bulk_insert")
    _write(path, [k for k in _keys(24, "a") if k[1] in ("7", "x")], 2, model)  # ts=2 files in two partitions
    calls: list[tuple[str, Any]] = []
    read, read_groups = pq.ParquetFile.read, pq.ParquetFile.read_row_groups

    def spy_read(self: pq.ParquetFile, *args: Any, **kwargs: Any) -> Any:
        calls.append(("read", kwargs.get("columns")))
        return read(self, *args, **kwargs)

    def spy_groups(self: pq.ParquetFile, groups: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(("groups", kwargs.get("columns")))
        return read_groups(self, groups, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read", spy_read)
    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", spy_groups)
    assert pyhudi.read(path, columns=[]).num_rows == len(model)
    assert calls == [], "a count decodes no column: row counts come from the footers"
    got = pyhudi.read(path, columns=["id"], filters=[("ts", "=", 2)])
    assert sorted(got.column("id").to_pylist()) == sorted(k for k, (_, ts) in model.items() if ts == 2)
    # Only the two rewritten files' row groups pass the statistics; only the projected and filter columns.
    assert len(calls) == 2 and all(sorted(cols) == ["id", "ts"] for _, cols in calls), calls


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_incremental_lists_only_partitions_the_range_wrote(tmp_path: Path, spied: dict[str, list[str]],
                                                           table_type: str) -> None:
    path = str(tmp_path / "inc")
    model: Model = {}
    parts = PARTS + [f"n/{i}" for i in range(10)]
    keys = [(f"k{i}-{p}", p) for i, p in enumerate(parts)]
    _write(path, keys, 1, model, table_type, "bulk_insert")
    begin = ActiveTimeline.load(Storage(path)).commits().completed().last()
    assert begin is not None
    touched = [k for k in keys if k[1] in ("2024/01/02", "7", "n/3")]
    _write(path, touched[:2], 2, model, table_type)
    _write(path, touched[2:] + [("new-ü", "7")], 3, model, table_type)
    inc = {"hoodie.datasource.query.type": "incremental",
           "hoodie.datasource.read.begin.instanttime": begin.timestamp}
    expected = {k: v for k, v in model.items() if v[1] > 1}
    for flt, want in ((None, expected), ([("part", "in", ["7", "x"])], {k: v for k, v in expected.items()
                                                                        if v[0] in ("7", "x")})):
        spied["list"].clear()
        assert _rows(pyhudi.read(path, inc, filters=flt)) == want
        assert pyhudi.read(path, inc, filters=flt, columns=[]).num_rows == len(want)
        allowed = {"2024/01/02", "7", "n/3"} if flt is None else {"7"}
        assert set(_data(spied["list"])) <= allowed, f"{flt}: listed {_data(spied['list'])}"
    assert _rows(hudi_rs(path, start=begin.timestamp)) == expected
    # A range from before the first commit may include archived commits: every partition is listed.
    spied["list"].clear()
    everything = {**inc, "hoodie.datasource.read.begin.instanttime": "000"}
    assert _rows(pyhudi.read(path, everything)) == model
    assert set(_data(spied["list"])) >= set(parts)
