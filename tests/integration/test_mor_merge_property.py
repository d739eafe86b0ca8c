"""The MOR merge property: random upserts and deletes with random ordering values, written in-process to a
merge-on-read table (base files and several log files), read back as Hudi 0.14/0.15 would read them, before
and after compaction.

The model is plain Python, written from Hudi 0.14's code rather than from pyhudi's: per key, the log records
since the file slice's base file are combined in order the way ``HoodieMergedLogRecordScanner`` does
(``OverwriteWithLatestAvroPayload.preCombine``: the greater ordering value wins, ties to the later record, a
data record replaces a delete; ``processNextDeletedRecord``: a delete is dropped only when the current record
is data with a greater ordering value and the delete's value is not ``IntWrapper(0)``); the result is then
combined with the base row by the payload's ``combineAndGetUpdateValue`` (Overwrite: the log record replaces
the row; Default: a delete-block delete always removes it, a data record replaces it when its ordering value
is ``>=`` the row's). Compaction writes what a snapshot read returns and starts new slices.

The write side is kept simple so the model can follow it: a SIMPLE index, no small-file handling (inserts
create base files, updates and deletes of stored keys go to log files), unique keys per batch, deletes as
``_hoodie_is_deleted`` upserts (their ordering value goes into the delete block, an ``IntWrapper`` for this
``int`` column, as Hudi writes it).

hudi-rs 0.5 merges logs by commit time for ``OverwriteWithLatestAvroPayload`` (Hudi 1.x's
COMMIT_TIME_ORDERING) and by 1.x's event-time rules for DefaultHoodieRecordPayload, so it is compared only
where no file slice has log files: right after a compaction, where both read base files alone.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import pyhudi
from tests.helpers import hudi_rs

ARROW = pa.schema([("id", pa.string()), ("ts", pa.int32()), ("v", pa.string()),
                   ("_hoodie_is_deleted", pa.bool_())])
OVERWRITE = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
DEFAULT = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
_BASE = re.compile(r"^(?P<fid>[^_]+)_[^_]+_(?P<ts>\d+)\.parquet$")
_LOG = re.compile(r"^\.(?P<fid>[^_]+)_(?P<ts>\d+)\.log\.")

Row = tuple[int, str]  # (ts, v)


def _opts(payload: str) -> dict[str, str]:
    return {
        "hoodie.table.name": "mor_merge", "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
        "hoodie.datasource.write.payload.class": payload, "hoodie.index.type": "SIMPLE",
        "hoodie.parquet.small.file.limit": "0", "hoodie.parquet.max.file.size": str(16 * 1024),
        "hoodie.record.size.estimation.threshold": "0.1", "hoodie.copyonwrite.record.size.estimate": "4000",
        "hoodie.logfile.data.block.max.size": "400", "hoodie.compact.inline": "false",
        "hoodie.index.bloom.num_entries": "200",
    }


@dataclass
class Key:
    """One record key as Hudi 0.14 holds it: the row in its file slice's base file, and the log since."""

    base: Row | None = None
    logs: list[tuple[str, int, str]] = field(default_factory=list)  # ("data"|"delete", ts, v)


def scan_logs(logs: list[tuple[str, int, str]]) -> tuple[str, int, str] | None:
    """HoodieMergedLogRecordScanner over one key's log records (processNextRecord/processNextDeletedRecord)."""
    cur: tuple[str, int, str] | None = None
    for rec in logs:
        kind, ts, _ = rec
        if kind == "data":
            # OverwriteWithLatestAvroPayload.preCombine: an empty (deleted) old value loses; else the old one
            # stays only when its ordering value is greater.
            if cur is None or cur[0] == "delete" or not cur[1] > ts:
                cur = rec
        elif not (cur is not None and cur[0] == "data" and ts != 0 and cur[1] > ts):
            cur = rec  # the delete is not obsolete: IntWrapper(0) is natural order, ties go to the delete
    return cur


def snapshot(key: Key, payload: str) -> Row | None:
    """The row a snapshot read (and a compaction) gives: the merged log record against the base row."""
    merged = scan_logs(key.logs)
    if merged is None:
        return key.base
    kind, ts, v = merged
    if kind == "delete":
        return None  # empty payload: combineAndGetUpdateValue is empty for both payloads
    if payload == DEFAULT and key.base is not None and key.base[0] > ts:
        return key.base  # DefaultHoodieRecordPayload.needUpdatingPersistedRecord
    return ts, v


class Model:
    def __init__(self, payload: str) -> None:
        self.payload = payload
        self.keys: dict[str, Key] = {}

    def write(self, batch: list[tuple[str, int, str, bool]]) -> None:
        for k, ts, v, deleted in batch:
            key = self.keys.setdefault(k, Key())
            if key.base is None:  # not located by the SIMPLE index (base files only): an insert, or nothing
                assert not key.logs
                if not deleted:
                    key.base = (ts, v)
            else:
                key.logs.append(("delete" if deleted else "data", ts, v))

    def compact(self) -> None:
        for key in self.keys.values():
            key.base, key.logs = snapshot(key, self.payload), []

    def rows(self) -> dict[str, Row]:
        out = {k: snapshot(key, self.payload) for k, key in self.keys.items()}
        return {k: r for k, r in out.items() if r is not None}


def _rows(table: pa.Table | None) -> dict[str, Row]:
    out: dict[str, Row] = {}
    for r in [] if table is None else table.select(["id", "ts", "v"]).to_pylist():
        assert r["id"] not in out, f"duplicate record {r['id']}"
        out[r["id"]] = (r["ts"], r["v"])
    return out


def uncompacted_logs(path: Path) -> int:
    """Log files of the latest file slices (a log file belongs to the slice of the base instant it names)."""
    latest: dict[str, str] = {}
    logs: list[tuple[str, str]] = []
    for f in path.iterdir():
        if (m := _BASE.match(f.name)) and m["ts"] > latest.get(m["fid"], ""):
            latest[m["fid"]] = m["ts"]
        elif m := _LOG.match(f.name):
            logs.append((m["fid"], m["ts"]))
    return sum(1 for fid, ts in logs if ts >= latest.get(fid, ""))


def _batch(rng: random.Random, step: int, keys: list[str]) -> list[tuple[str, int, str, bool]]:
    chosen = rng.sample(keys, rng.randint(2, 6))
    return [(k, rng.choice([-3, -1, 0, 0, 1, 2, 2, 3, 5, 7]), f"{k}@{step}", rng.random() < 0.25) for k in chosen]


def _write(path: Path, payload: str, batch: list[tuple[str, int, str, bool]]) -> None:
    data = pa.Table.from_pylist([dict(zip(ARROW.names, r)) for r in batch], schema=ARROW)
    pyhudi.write(data, str(path), {**_opts(payload), "hoodie.datasource.write.operation": "upsert"})


def run_sequence(tmp_path: Path, payload: str, seed: int, steps: int) -> dict[str, int]:
    """Write `steps` random batches, compacting now and then; check every state against the model."""
    rng = random.Random(seed)
    path = tmp_path / f"t{seed}"
    keys = [f"k{i}" for i in range(10)]
    model = Model(payload)
    seen = {"compactions": 0, "max_logs": 0}
    for step in range(steps):
        batch = _batch(rng, step, keys)
        _write(path, payload, batch)
        model.write(batch)
        seen["max_logs"] = max(seen["max_logs"], uncompacted_logs(path))
        assert _rows(pyhudi.read(str(path))) == model.rows(), f"seed {seed} step {step}: {batch}"
        if step and rng.random() < 0.3:
            pyhudi.compact(None, str(path), _opts(payload))
            model.compact()
            seen["compactions"] += 1
            assert uncompacted_logs(path) == 0, "the compaction plan left a file slice with logs"
            expected = model.rows()
            assert _rows(pyhudi.read(str(path))) == expected, f"seed {seed} after compaction at step {step}"
            assert _rows(hudi_rs(path)) == expected  # base files only: every reader agrees
    return seen


@pytest.mark.parametrize("payload", [OVERWRITE, DEFAULT], ids=["overwrite", "default"])
@pytest.mark.parametrize("seed", [0, 1])
def test_mor_merge_matches_hudi_014(tmp_path: Path, payload: str, seed: int) -> None:
    seen = run_sequence(tmp_path, payload, seed, steps=10)
    assert seen["compactions"] and seen["max_logs"] >= 2  # the sequence exercised logs and compaction


@pytest.mark.extended
@pytest.mark.parametrize("payload", [OVERWRITE, DEFAULT], ids=["overwrite", "default"])
@pytest.mark.parametrize("seed", range(2, 14))
def test_mor_merge_matches_hudi_014_more_seeds(tmp_path: Path, payload: str, seed: int) -> None:
    run_sequence(tmp_path, payload, seed, steps=18)


def _review_case(path: Path, payload: str = OVERWRITE) -> None:
    """The review's case: base ts=5, then log ts=3 v=10, then log ts=2 v=20."""
    for ts, v in ((5, "base"), (3, "10"), (2, "20")):
        _write(path, payload, [("a", ts, v, False)])


def test_review_case_before_and_after_compaction(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _review_case(path)
    assert _rows(pyhudi.read(str(path))) == {"a": (3, "10")}  # Hudi 0.14; hudi-rs and 1.x give v=20
    pyhudi.compact(None, str(path), _opts(OVERWRITE))
    assert _rows(pyhudi.read(str(path))) == {"a": (3, "10")} == _rows(hudi_rs(path))
    _write(path, OVERWRITE, [("a", 1, "after", False)])  # a new slice: its log replaces the compacted row
    assert _rows(pyhudi.read(str(path))) == {"a": (1, "after")}


def test_review_case_spark_read(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    _review_case(path)
    rows = pyhudi.read(spark, str(path)).select("id", "ts", "v").collect()
    assert [(r["id"], r["ts"], r["v"]) for r in rows] == [("a", 3, "10")]


def _record_merge_mode(path: Path, mode: str) -> None:
    props = path / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text() + f"hoodie.record.merge.mode={mode}\n")


def test_recorded_commit_time_ordering_is_followed(tmp_path: Path) -> None:
    """A table recording Hudi 1.x's COMMIT_TIME_ORDERING: the last write wins, in reads and in compaction;
    the same writes without the mode (0.14's OverwriteWithLatestAvroPayload) keep the greater log value."""
    for mode, expected in (("COMMIT_TIME_ORDERING", {"a": (2, "20")}), (None, {"a": (3, "10")})):
        path = tmp_path / str(mode)
        _write(path, OVERWRITE, [("a", 5, "base", False)])
        if mode:
            _record_merge_mode(path, mode)
        for ts, v in ((3, "10"), (2, "20")):
            _write(path, OVERWRITE, [("a", ts, v, False)])
        assert _rows(pyhudi.read(str(path))) == expected
        pyhudi.compact(None, str(path), _opts(OVERWRITE))
        assert _rows(pyhudi.read(str(path))) == expected == _rows(hudi_rs(path))


def test_recorded_event_time_ordering_is_followed(tmp_path: Path) -> None:
    """EVENT_TIME_ORDERING (1.x) ignores a delete older than the stored row; DefaultHoodieRecordPayload on a
    version-6 table without the mode (0.14) applies a delete-block delete whatever its value."""
    for mode, expected in (("EVENT_TIME_ORDERING", {"a": (5, "base")}), (None, {})):
        path = tmp_path / str(mode)
        _write(path, DEFAULT, [("a", 5, "base", False), ("b", 1, "b", False)])
        if mode:
            _record_merge_mode(path, mode)
        _write(path, DEFAULT, [("a", 3, "gone", True)])
        assert _rows(pyhudi.read(str(path))) == {**expected, "b": (1, "b")}
        pyhudi.compact(None, str(path), _opts(DEFAULT))
        assert _rows(pyhudi.read(str(path))) == {**expected, "b": (1, "b")} == _rows(hudi_rs(path))
