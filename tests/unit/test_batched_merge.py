"""The merge handle merges a task's update buckets in batches (writer/merge_handle.py): one set of Arrow calls
over (file, key) pairs for many files. A batch must write exactly what merging each file alone writes, on
inputs built to break a batch: the same key in every partition (two files of one batch), partition values
and keys that are digits (the batch's `<file>\\0<key>` match keys), a NUL inside a key, unicode, duplicate
keys in the batch (combine), deletes, updates that lose to the stored record (event-time ordering), and a
file that only loses rows. No Spark: in-process writes, read back with pyhudi and hudi-rs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi.writer import merge_handle
from tests.helpers import arrow_read, hudi_rs, in_process_read_available, spy_create_filled

PARTS = ["1", "10", "p/1", "ü", "0", "01", "x y", "2024-01-01"]
KEYS = ["dup", "1", "11", "1\0" + "1", "é", "k", "10", "a\0b", "\uff21", "🙂"]
PAYLOADS = {"latest": "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload",
            "event_time": "org.apache.hudi.common.model.DefaultHoodieRecordPayload"}


def _options(payload: str) -> dict[str, str]:
    return {"hoodie.table.name": "t", "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
            "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "p",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.payload.class": payload,
            "hoodie.pyhudi.engine.local.parallelism": "1", "hoodie.clean.automatic": "false"}


def _rows(rows: list[tuple[str, str, int, str, bool]]) -> pa.Table:
    return pa.table({"id": [r[0] for r in rows], "p": [r[1] for r in rows], "ts": pa.array([r[2] for r in rows], pa.int64()),
                     "v": [r[3] for r in rows], "_hoodie_is_deleted": [r[4] for r in rows]})


def _first() -> pa.Table:
    return _rows([(k, p, 10, f"old {p} {k}", False) for p in PARTS for k in KEYS])


def _upsert() -> pa.Table:
    rows = []
    for i, p in enumerate(PARTS):
        if p == "0":  # this file only loses rows
            rows += [("dup", p, 20, "", True), ("a\0b", p, 20, "", True)]
            continue
        rows += [("dup", p, 20 + i, f"new {p}", False),  # the same key in every file of the batch
                 ("1", p, 5, f"older {p}", False),  # loses to the stored ts=10 under event-time ordering
                 ("1\0" + "1", p, 30, f"nul {p}", False),
                 ("k", p, 30, "", True),  # delete
                 (f"new-{i}", p, 30, f"insert {p}", False),
                 (f"new-{i}", p, 31, f"insert again {p}", False),  # a duplicate: combine keeps ts=31
                 ("11", p, 40, f"twice {p}", False), ("11", p, 39, f"twice lower {p}", False)]
    return _rows(rows)


def _normalized(path: Path, instant: str) -> dict[tuple[str, str], tuple[list[dict[str, Any]], dict[bytes, bytes]]]:
    """Each base file the instant wrote, by (partition, file id): its rows in file order with the instant's
    names taken out of the meta columns, and its footer."""
    files = {}
    for f in path.rglob(f"*_{instant}.parquet"):
        table = pq.read_table(f)
        rows = table.to_pylist()
        for r in rows:
            r["_hoodie_file_name"] = r["_hoodie_file_name"].split("_")[0]
            r["_hoodie_commit_seqno"] = r["_hoodie_commit_seqno"].replace(instant, "NOW")
            r["_hoodie_commit_time"] = r["_hoodie_commit_time"].replace(instant, "NOW")
        footer = dict(pq.ParquetFile(f).metadata.metadata)
        files[(str(f.parent.relative_to(path)), f.name.split("_")[0])] = (rows, footer)
    return files


def _stats(path: Path, instant: str) -> dict[str, tuple[int, int, int, int]]:
    meta = json.loads((path / ".hoodie" / f"{instant}.commit").read_text())
    return {s["fileId"]: (s["numWrites"], s["numDeletes"], s["numUpdateWrites"], s["numInserts"])
            for stats in meta["partitionToWriteStats"].values() for s in stats}


def _upserted(tmp_path: Path, name: str, payload: str, batch_bytes: int, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / name
    shutil.copytree(tmp_path / "base", path)
    monkeypatch.setattr(merge_handle, "MERGE_BATCH_BYTES", batch_bytes)
    pyhudi.write(_upsert(), str(path), {**_options(payload), "hoodie.datasource.write.operation": "upsert"})
    return path


def _model(payload: str) -> dict[tuple[str, str], tuple[int, str]]:
    state = {(r["p"], r["id"]): (r["ts"], r["v"]) for r in _first().to_pylist()}
    incoming: dict[tuple[str, str], dict[str, Any]] = {}
    for r in _upsert().to_pylist():  # combine: the greatest ts of a key wins
        key = (r["p"], r["id"])
        if key not in incoming or r["ts"] >= incoming[key]["ts"]:
            incoming[key] = r
    for key, r in incoming.items():
        if payload == "event_time" and key in state and state[key][0] > r["ts"]:
            continue
        if r["_hoodie_is_deleted"]:
            state.pop(key, None)
        else:
            state[key] = (r["ts"], r["v"])
    return state


@pytest.mark.parametrize("payload", sorted(PAYLOADS))
def test_a_batch_writes_what_each_file_merged_alone_writes(tmp_path, payload, monkeypatch):
    pyhudi.write(_first(), str(tmp_path / "base"), {**_options(PAYLOADS[payload]),
                                                      "hoodie.datasource.write.operation": "insert"})
    batched = _upserted(tmp_path, "batched", PAYLOADS[payload], merge_handle.MERGE_BATCH_BYTES, monkeypatch)
    alone = _upserted(tmp_path, "alone", PAYLOADS[payload], 1, monkeypatch)
    instants = {p: sorted(f.name.split(".")[0] for f in (p / ".hoodie").glob("*.commit"))[-1] for p in (batched, alone)}
    got, want = _normalized(batched, instants[batched]), _normalized(alone, instants[alone])
    assert len(want) == len(PARTS), "one rewritten base file per partition"
    assert got.keys() == want.keys()
    for where in want:
        assert got[where][0] == want[where][0], f"rows of {where} differ between a batch and a lone merge"
        assert got[where][1] == want[where][1], f"footer of {where} differs between a batch and a lone merge"
    assert _stats(batched, instants[batched]) == _stats(alone, instants[alone])

    model = _model(payload)
    assert any(k == ("1", "1") and v[1] == "old 1 1" for k, v in model.items()) == (payload == "event_time")
    for path in (batched, alone):
        if in_process_read_available():
            mine = arrow_read(str(path))
            assert {(r["p"], r["id"]): (r["ts"], r["v"]) for r in mine.to_pylist()} == model
        theirs = hudi_rs(path)
        assert theirs is not None
        assert {(r["p"], r["id"]): (r["ts"], r["v"]) for r in theirs.to_pylist()} == model


def test_a_batch_bound_splits_a_task_into_several_batches(tmp_path, monkeypatch):
    """With a bound below two files' records, a task's eight merges run as several batches; the result is
    still each file's own merge, and each batch reads only its files."""
    pyhudi.write(_first(), str(tmp_path / "base"), {**_options(PAYLOADS["latest"]),
                                                      "hoodie.datasource.write.operation": "insert"})
    sizes: list[int] = []
    real = merge_handle._merge_batch

    def counting(ctx, storage, records, batch):  # type: ignore[no-untyped-def]
        sizes.append(len(batch))
        return real(ctx, storage, records, batch)

    monkeypatch.setattr(merge_handle, "_merge_batch", counting)
    # A batch holds old records without their file name column (every merge writes its own).
    one = pq.read_table(next((tmp_path / "base").rglob("*.parquet"))).drop_columns(["_hoodie_file_name"]).nbytes
    path = _upserted(tmp_path, "split", PAYLOADS["latest"], int(one * 2.5), monkeypatch)
    assert sum(sizes) == len(PARTS) and len(sizes) >= 3 and max(sizes) <= 3, sizes
    theirs = hudi_rs(path)
    assert theirs is not None
    assert {(r["p"], r["id"]): (r["ts"], r["v"]) for r in theirs.to_pylist()} == _model("latest")


def test_a_batch_hashes_its_files_keys_together_and_writes_each_files_own_filter(tmp_path, monkeypatch):
    """Filters are sized to each file's records (a power of two), so in one batch some files extend their
    old filter by their inserts and others cross a power of two and get a fresh filter of every key; the
    batch hashes the extending group's inserts in one pass and sets the crossing group's bits in one pass
    (`_blooms`). Files of both groups, two of each shape and one alone in its shape: every footer equals the lone merge's, and a crossing file's filter is the one a
    fresh build of its keys in file order gives."""
    from pyhudi.io.base_file import ParquetSettings, fresh_bloom

    sizes = {"extend-a": 100, "extend-b": 101, "cross-a": 126, "cross-b": 127, "alone": 300}
    first = _rows([(f"{p}-{i}", p, 1, "old", False) for p, n in sizes.items() for i in range(n)])
    opts = {**_options(PAYLOADS["latest"]), "hoodie.index.bloom.num_entries": "60000"}
    pyhudi.write(first, str(tmp_path / "base"), {**opts, "hoodie.datasource.write.operation": "insert"})
    upsert = _rows([(f"{p}-new-{i}", p, 2, "new", False) for p in sizes for i in range(5)]
                   + [(f"{p}-{i}", p, 2, "upd", False) for p in sizes for i in range(0, 40, 7)])
    calls: list[int] = []
    real = merge_handle.key_positions

    def counting(keys, rounds, bits):  # type: ignore[no-untyped-def]
        calls.append(len(keys))
        return real(keys, rounds, bits)

    monkeypatch.setattr(merge_handle, "key_positions", counting)
    filled = spy_create_filled(monkeypatch)
    paths = {}
    for name, bound in (("batched", merge_handle.MERGE_BATCH_BYTES), ("alone", 1)):
        paths[name] = tmp_path / name
        shutil.copytree(tmp_path / "base", paths[name])
        monkeypatch.setattr(merge_handle, "MERGE_BATCH_BYTES", bound)
        pyhudi.write(upsert, str(paths[name]), {**opts, "hoodie.datasource.write.operation": "upsert"})
        if name == "batched":
            assert calls == [10], "one hashing pass for the extending pair's inserts"
            # (in the batch's order: largest old file first, and the first write's encoding of the two
            # files depends on whether the 300-row file had set the table's encoding choice before them)
            assert [sorted(runs) for runs in filled] == [[126 + 5, 127 + 5]], "one filling pass for the crossing pair"
    instants = {n: sorted(f.name.split(".")[0] for f in (p / ".hoodie").glob("*.commit"))[-1] for n, p in paths.items()}
    got, want = _normalized(paths["batched"], instants["batched"]), _normalized(paths["alone"], instants["alone"])
    assert got.keys() == want.keys() and len(got) == len(sizes)
    for where in want:
        assert got[where] == want[where], where
    for (part, _), (rows, footer) in got.items():
        if part.startswith("cross"):
            keys = pa.array([r["_hoodie_record_key"] for r in rows])
            assert len(keys) > 128
            expected = fresh_bloom(ParquetSettings(), keys).footer_raw()
            assert {k: bytes(v) for k, v in expected.items()}.items() <= footer.items(), part
    theirs = hudi_rs(paths["batched"])
    assert theirs is not None and theirs.num_rows == sum(sizes.values()) + 5 * len(sizes)


def _float_chunks(path: Path, instant: str) -> dict[str, tuple[bool, bool]]:
    """Each base file the instant wrote, by partition: whether its float column `f` has statistics and
    whether it is dictionary encoded."""
    out = {}
    for f in path.rglob(f"*_{instant}.parquet"):
        meta = pq.ParquetFile(f).metadata
        names = [meta.schema.column(i).path for i in range(meta.num_columns)]
        chunk = meta.row_group(0).column(names.index("f"))
        stats = chunk.statistics is not None and chunk.statistics.has_min_max
        out[str(f.parent.relative_to(path))] = (stats, any("DICT" in e for e in chunk.encodings))
    return out


def test_a_batch_tells_each_file_the_java_safety_its_own_rows_call_for(tmp_path, monkeypatch):
    """A batch scans its output's float columns once for NaN and zeros and hands each file its own
    finding (`column_encoding.hazards_by_range`): the file whose rows hold a NaN is written without the
    column's statistics, the one holding -0.0 without its dictionary, a file holding a NaN only in a row
    that was deleted, and the others, with both; each file exactly as a lone merge writes it."""
    parts = ["nan", "zero", "clean", "nan-gone", "both"]
    first = pa.table({"id": [f"{p}-{i}" for p in parts for i in range(6)], "p": [p for p in parts for _ in range(6)],
                      "ts": pa.array([1] * 30, pa.int64()), "f": [1.5 + i for _ in parts for i in range(6)],
                      "_hoodie_is_deleted": [False] * 30})
    opts = _options(PAYLOADS["latest"])
    pyhudi.write(first, str(tmp_path / "base"), {**opts, "hoodie.datasource.write.operation": "insert"})
    nan = float("nan")
    upsert = pa.table({"id": ["nan-1", "zero-2", "clean-3", "nan-gone-4", "both-0", "both-5"],
                       "p": ["nan", "zero", "clean", "nan-gone", "both", "both"],
                       "ts": pa.array([2] * 6, pa.int64()), "f": [nan, -0.0, 9.5, nan, nan, 0.0],
                       "_hoodie_is_deleted": [False, False, False, True, False, False]})
    calls: list[int] = []
    real = merge_handle.hazards_by_range

    def counting(table, bounds):  # type: ignore[no-untyped-def]
        calls.append(len(bounds) - 1)
        return real(table, bounds)

    monkeypatch.setattr(merge_handle, "hazards_by_range", counting)
    found = {}
    for name, bound in (("batched", merge_handle.MERGE_BATCH_BYTES), ("alone", 1)):
        path = tmp_path / name
        shutil.copytree(tmp_path / "base", path)
        monkeypatch.setattr(merge_handle, "MERGE_BATCH_BYTES", bound)
        pyhudi.write(upsert, str(path), {**opts, "hoodie.datasource.write.operation": "upsert"})
        instant = sorted(f.name.split(".")[0] for f in (path / ".hoodie").glob("*.commit"))[-1]
        found[name] = _float_chunks(path, instant)
        if name == "batched":
            assert calls == [len(parts)], "one scan for the batch of five files"
    assert found["batched"] == found["alone"] == {
        "nan": (False, True), "zero": (True, False), "clean": (True, True), "nan-gone": (True, True),
        "both": (False, False)}
    theirs = hudi_rs(tmp_path / "batched")
    assert theirs is not None and theirs.num_rows == 29


@pytest.mark.parametrize("update_one", [False, True])
def test_a_batch_of_top_ups_keeps_each_files_old_rows_then_its_inserts(tmp_path, update_one, monkeypatch):
    """Files that only gain inserts are laid out from slices (`_topped_up`), not taken: each new file holds
    its old rows in their old order, then its inserts in input order, as a lone merge writes it. With one
    file of the batch also updated, the batch takes its rows as before, in the same layout."""
    options = {**_options(PAYLOADS["latest"]), "hoodie.datasource.write.operation": "upsert"}
    pyhudi.write(_first(), str(tmp_path / "base"), {**options, "hoodie.datasource.write.operation": "insert"})
    old_order = {p: [r["id"] for r in pq.read_table(f).to_pylist()]
                 for f in (tmp_path / "base").rglob("*.parquet")
                 for p in [str(f.parent.relative_to(tmp_path / "base"))]}
    rows = [(f"z-{i}-{j}", p, 50, f"top-up {p} {j}", False) for i, p in enumerate(PARTS) for j in (2, 0, 1)]
    if update_one:
        rows.append((KEYS[3], PARTS[2], 60, "updated", False))
    laid_out = []
    topped_up = merge_handle._topped_up
    monkeypatch.setattr(merge_handle, "_topped_up", lambda old, *a: laid_out.append(len(a[1])) or topped_up(old, *a))
    written = {}
    for name, batch_bytes in (("batched", merge_handle.MERGE_BATCH_BYTES), ("alone", 1)):
        path = tmp_path / name
        shutil.copytree(tmp_path / "base", path)
        monkeypatch.setattr(merge_handle, "MERGE_BATCH_BYTES", batch_bytes)
        pyhudi.write(_rows(rows), str(path), options)
        instant = sorted(f.name.split(".")[0] for f in (path / ".hoodie").glob("*.commit"))[-1]
        written[name] = _normalized(path, instant)
        assert len(written[name]) == len(PARTS), "every partition's file topped up, none created"
        for (part, _), (got, _) in written[name].items():
            i = PARTS.index(part)
            assert [r["id"] for r in got] == old_order[part] + [f"z-{i}-{j}" for j in (2, 0, 1)]
            for r in got:
                want = "updated" if update_one and (r["p"], r["id"]) == (PARTS[2], KEYS[3]) else (
                    f"top-up {part} {r['id'][-1]}" if r["id"].startswith("z-") else f"old {part} {r['id']}")
                assert r["v"] == want
        theirs = hudi_rs(path)
        assert theirs is not None and theirs.num_rows == len(PARTS) * (len(KEYS) + 3)
    assert written["batched"] == written["alone"]
    # batched: one layout of all 8 files, unless a file's update sends the batch to the take; alone: 8 of 1
    assert laid_out == ([] if update_one else [len(PARTS)]) + [1] * (len(PARTS) - update_one)
