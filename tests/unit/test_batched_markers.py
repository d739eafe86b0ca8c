"""pyhudi's batched markers (Hudi's TIMELINE_SERVER_BASED layout, written by the tasks themselves): a task
writes the markers of every file it will create in one MARKERS<n> file before creating any, and Hudi's
readers find them all. Also the task split that decides how many such files a write makes."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import pyhudi
from pyhudi.storage import Storage
from pyhudi.writer import client as writer_client
from pyhudi.writer.dispatch import (
    FILE_COST_ROWS,
    ONE_TASK_PER_WORKER_FROM,
    THREAD_TASKS_PER_WORKER,
    bucket_chunks,
)
from pyhudi.writer.markers import (
    MARKER_ROOT,
    Marking,
    begin_markers,
    create_marker,
    list_marked_files,
    premark,
    remove_marker,
)
from pyhudi.writer.partitioner import Bucket, BucketKind
from tests.helpers import hudi_rs, marked_files

I1 = "20240101000000000"
BASE = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.operation": "upsert", "hoodie.pyhudi.engine.local.parallelism": "1",
        "hoodie.clean.automatic": "false", "hoodie.archive.automatic": "false",
        "hoodie.parquet.small.file.limit": "0"}  # inserts make new file groups: creates beside merges


def _batches(n: int, ts: int, start: int = 0) -> pa.Table:
    keys = range(start, start + n)
    return pa.table({"id": [f"k/{i}.0-ü" for i in keys], "ts": [ts] * n, "p": [f"2024/0{i % 3}" for i in keys]})


def _written(path: Path, instant: str) -> list[str]:
    """The data files the completed instant's commit names."""
    (commit,) = [p for p in (path / ".hoodie").iterdir() if p.name.split(".")[0] == instant
                 and p.suffix in (".commit", ".deltacommit")]
    stats = json.loads(commit.read_text())["partitionToWriteStats"]
    return sorted(s["path"] for group in stats.values() for s in group)


def _marker_files(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.name.startswith("MARKERS") and p.name != "MARKERS.type")


# --------------------------------------------------------------------------- one task, one marker file
@pytest.mark.parametrize("options", [
    {"hoodie.datasource.write.table.type": "COPY_ON_WRITE"},
    {"hoodie.datasource.write.table.type": "MERGE_ON_READ"},
    {"hoodie.datasource.write.table.type": "COPY_ON_WRITE", "hoodie.index.type": "BUCKET",
     "hoodie.bucket.index.num.buckets": "2"},
    {"hoodie.datasource.write.table.type": "MERGE_ON_READ", "hoodie.index.type": "BUCKET",
     "hoodie.bucket.index.num.buckets": "2"},
], ids=["cow", "mor", "cow-bucket", "mor-bucket"])
def test_a_task_marks_every_file_it_creates_in_one_file_written_ahead(tmp_path: Path, options: dict[str, str],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t"
    opts = {**BASE, **options}
    pyhudi.write(_batches(30, 1), str(path), opts)
    kept: list[str] = []
    monkeypatch.setattr(writer_client, "delete_markers", lambda storage, instant, **_: kept.append(instant))
    # Updates of every file group and new keys in every partition: merges (or appends) and creates.
    pyhudi.write(pa.concat_tables([_batches(30, 2), _batches(12, 2, start=100)]), str(path), opts)
    (instant,) = kept
    root = path / MARKER_ROOT / instant
    written = _written(path, instant)
    assert len(written) >= 6
    # One task (parallelism 1): every file it created was known ahead, so one MARKERS file names them all.
    assert len(_marker_files(root)) == 1, [p.name for p in _marker_files(root)]
    assert marked_files(path, instant) == written
    assert list_marked_files(Storage(str(path)), instant) == written
    got = hudi_rs(path)
    assert got is not None and got.num_rows == 42


def test_many_tasks_write_few_marker_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t"
    opts = {**BASE, "hoodie.pyhudi.engine.local.parallelism": "2"}
    parts = [f"p{i:03d}" for i in range(40)]
    first = pa.table({"id": [f"k{i}" for i in range(80)], "ts": [1] * 80, "p": [parts[i % 40] for i in range(80)]})
    pyhudi.write(first, str(path), opts)
    kept: list[str] = []
    monkeypatch.setattr(writer_client, "delete_markers", lambda storage, instant, **_: kept.append(instant))
    pyhudi.write(first.set_column(1, "ts", pa.array([2] * 80, pa.int64())), str(path), opts)
    root = path / MARKER_ROOT / kept[0]
    written = _written(path, kept[0])
    assert len(written) == 40
    assert 1 < len(_marker_files(root)) <= 8  # at most 4 tasks per worker, not one per file
    assert not [p for p in root.iterdir() if p.is_dir()]
    assert marked_files(path, kept[0]) == written


# --------------------------------------------------------------------------- the marker primitives
def test_premarked_names_are_not_written_again_and_others_get_their_own_file(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    root = tmp_path / MARKER_ROOT / I1
    marking = begin_markers(storage, I1, "TIMELINE_SERVER_BASED")
    assert marking.typed and (root / "MARKERS.type").read_text() == "TIMELINE_SERVER_BASED"
    marking = premark(storage, I1, [("a/b", "f1.parquet", "MERGE"), ("", "f2.parquet", "CREATE")], marking)
    (ahead,) = _marker_files(root)
    assert ahead.read_text() == "a/b/f1.parquet.marker.MERGE\nf2.parquet.marker.CREATE\n"
    assert create_marker(storage, I1, "a/b", "f1.parquet", "MERGE", marking) is None
    assert _marker_files(root) == [ahead]
    own = create_marker(storage, I1, "a/b", ".f3_1.log.2_0-1-1", "APPEND", marking)
    assert own is not None and len(_marker_files(root)) == 2
    remove_marker(storage, own)  # withdrawn: another writer had the name
    assert _marker_files(root) == [ahead]
    remove_marker(storage, None)  # a marker written ahead with others stays
    assert list_marked_files(storage, I1) == ["a/b/f1.parquet", "f2.parquet"]


def test_the_batched_layout_is_used_only_where_it_saves_requests(tmp_path: Path) -> None:
    """Hudi without its timeline server marks DIRECT; pyhudi writes the server's layout only when a task
    will name several files in one MARKERS<n> file: more files than tasks + 1. Unknown counts keep the
    configured layout; DIRECT stays DIRECT."""
    storage = Storage(str(tmp_path))
    cases = [("20240101000000001", "TIMELINE_SERVER_BASED", {"files": 1}, False),
             ("20240101000000002", "TIMELINE_SERVER_BASED", {"files": 2}, False),
             ("20240101000000003", "TIMELINE_SERVER_BASED", {"files": 3}, True),
             ("20240101000000004", "TIMELINE_SERVER_BASED", {"files": 6, "tasks": 6}, False),
             ("20240101000000005", "TIMELINE_SERVER_BASED", {"files": 8, "tasks": 6}, True),
             ("20240101000000006", "TIMELINE_SERVER_BASED", {}, True),
             ("20240101000000007", "DIRECT", {"files": 40}, False)]
    for instant, kind, counts, batched in cases:
        marking = begin_markers(storage, instant, kind, **counts)
        assert marking.batched is batched, (instant, kind, counts)
        assert (tmp_path / MARKER_ROOT / instant / "MARKERS.type").exists() is batched, instant


def test_a_one_file_write_marks_its_file_directly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An upsert into a one-file table: one DIRECT marker (`<partition>/<file>.marker.MERGE`, no type
    file: Hudi's rollback then reads the directory as DIRECT) naming exactly the file the commit names."""
    path = tmp_path / "t"
    opts = {**BASE, "hoodie.datasource.write.partitionpath.field": ""}
    pyhudi.write(_batches(5, 1), str(path), opts)
    kept: list[str] = []
    monkeypatch.setattr(writer_client, "delete_markers", lambda storage, instant, **_: kept.append(instant))
    pyhudi.write(_batches(2, 2), str(path), opts)
    (instant,) = kept
    root = path / MARKER_ROOT / instant
    written = _written(path, instant)
    assert len(written) == 1
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) == \
        [f"{written[0]}.marker.MERGE"]
    assert marked_files(path, instant) == list_marked_files(Storage(str(path)), instant) == written
    got = hudi_rs(path)
    assert got is not None and sorted(zip(got["id"].to_pylist(), got["ts"].to_pylist())) == \
        sorted([(f"k/{i}.0-ü", 2 if i < 2 else 1) for i in range(5)])


def test_direct_markers_are_one_file_each(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    marking = begin_markers(storage, I1, "DIRECT")
    assert premark(storage, I1, [("a", "f1.parquet", "CREATE")], marking) == marking  # nothing ahead
    written = create_marker(storage, I1, "a", "f1.parquet", "CREATE", marking)
    assert written == f"{MARKER_ROOT}/{I1}/a/f1.parquet.marker.CREATE"
    assert not (tmp_path / MARKER_ROOT / I1 / "MARKERS.type").exists()
    assert marked_files(tmp_path, I1) == list_marked_files(storage, I1) == ["a/f1.parquet"]


def test_a_marking_not_known_typed_writes_the_type_file_itself(tmp_path: Path) -> None:
    """A task whose driver did not write MARKERS.type still leaves markers Hudi reads."""
    storage = Storage(str(tmp_path))
    create_marker(storage, I1, "a", "f1.parquet", "CREATE", Marking())
    assert (tmp_path / MARKER_ROOT / I1 / "MARKERS.type").read_text() == "TIMELINE_SERVER_BASED"


def test_hudi_server_names_of_a_non_partitioned_table_are_read(tmp_path: Path) -> None:
    """Hudi's timeline server writes `<partition>/<file>` even for the empty partition: `/<file>`."""
    root = tmp_path / MARKER_ROOT / I1
    root.mkdir(parents=True)
    (root / "MARKERS.type").write_text("TIMELINE_SERVER_BASED")
    (root / "MARKERS0").write_text("/f1_0-1-1_x.parquet.marker.CREATE\n/.f2_x.log.1_0-1-1.marker.APPEND\n")
    assert list_marked_files(Storage(str(tmp_path)), I1) == [".f2_x.log.1_0-1-1", "f1_0-1-1_x.parquet"]


# --------------------------------------------------------------------------- the task split
def _work(sizes: list[int]) -> list[tuple[Bucket, np.ndarray]]:
    return [(Bucket(i, BucketKind.UPDATE, "p", f"f{i}"), np.arange(n)) for i, n in enumerate(sizes)]


@pytest.mark.parametrize("workers", [1, 2, 3, 8])
def test_bucket_chunks_keep_every_bucket_once_and_balance_the_cost(workers: int) -> None:
    rng = np.random.default_rng(workers)
    sizes = [int(x) for x in rng.integers(1, 20000, 300)] + [500000]
    chunks = bucket_chunks(_work(sizes), workers)
    numbers = sorted(b.number for chunk in chunks for b, _ in chunk)
    assert numbers == list(range(len(sizes)))
    assert len(chunks) == workers  # hundreds of buckets: one task per worker, balanced by the bin-packer
    costs = [sum(len(rows) + FILE_COST_ROWS for _, rows in chunk) for chunk in chunks]
    biggest = 500000 + FILE_COST_ROWS
    assert max(costs) <= max(biggest, sum(costs) / len(costs) + 20000 + FILE_COST_ROWS)


@pytest.mark.parametrize("workers", [2, 3])
def test_bucket_chunks_of_a_few_buckets_a_worker_are_two_tasks_a_worker(workers: int) -> None:
    few = ONE_TASK_PER_WORKER_FROM * workers - 1
    assert len(bucket_chunks(_work([100] * few), workers)) == workers * THREAD_TASKS_PER_WORKER
    assert len(bucket_chunks(_work([100] * (few + 1)), workers)) == workers


def test_bucket_chunks_count_the_base_file_a_bucket_rewrites() -> None:
    """A bucket that rewrites a large base file for a few incoming rows costs the file's rows: with one
    task per worker it gets a task nearly to itself; a MOR bucket appending logs does not count it."""
    work = _work([100] * 20)
    big = dataclasses.replace(work[0][0], base_size=4_000_000)  # 40,000 rows at 100 bytes a record
    work[0] = (big, work[0][1])

    def with_big(chunks: list[list[tuple[Bucket, np.ndarray]]]) -> list[tuple[Bucket, np.ndarray]]:
        return next(c for c in chunks if any(b.number == 0 for b, _ in c))

    assert len(with_big(bucket_chunks(work, 2, record_bytes=100))) <= 2
    assert len(with_big(bucket_chunks(work, 2))) >= 9  # sizes unknown: rows alone
    logs = dataclasses.replace(big, kind=BucketKind.APPEND)
    assert len(with_big(bucket_chunks([(logs, work[0][1]), *work[1:]], 2, record_bytes=100))) >= 9


def test_bucket_chunks_of_few_buckets_are_one_each() -> None:
    chunks = bucket_chunks(_work([5, 3, 9]), 2)
    assert sorted(len(c) for c in chunks) == [1, 1, 1]
    assert bucket_chunks([], 2) == []


# --------------------------------------------------------------------------- the index lookup's runs
def test_lookup_runs_keep_the_files_order_and_cover_each_once() -> None:
    from pyhudi.engine.base import TASKS_PER_WORKER
    from pyhudi.writer.local_tagging import KeyFile, _runs

    files = [KeyFile(f"p{i % 7}", f"f{i}", I1, f"p{i % 7}/f{i}.parquet") for i in range(601)]
    for workers in (1, 2, 8):
        runs = _runs(files, workers)
        assert [kf for run in runs for kf in run] == files  # `_assign` follows this order
        assert len(runs) == (1 if workers == 1 else workers * TASKS_PER_WORKER)
    assert _runs(files[:3], 2) == [files[0:1], files[1:2], files[2:3]]
    assert _runs([], 2) == []
