"""The streamed insert's pieces without a table: which records the first chunk sends where, and the stream's
rest after the first chunk."""

from __future__ import annotations

import pyarrow as pa

from pyhudi.index.locations import LOC_FILE_ID, LOC_INSTANT
from pyhudi.keygen.spec import PARTITION_COL, RECORD_KEY_COL
from pyhudi.writer.config import SizingConfig
from pyhudi.writer.local_stream import _peeked, _split_by_plan
from pyhudi.writer.partitioner import BucketKind, SmallFile, plan_buckets
from pyhudi.writer.profile import WorkloadProfile

PARTS = ["2024/01", "ü日本", "007"]


def _tagged(n: int) -> pa.Table:
    keys = [f"ключ-{i}" if i % 2 else f"{i}.5" for i in range(n)]
    parts = [PARTS[i % 3] for i in range(n)]
    none = pa.nulls(n, pa.string())
    return pa.table({RECORD_KEY_COL: keys, PARTITION_COL: parts, "v": list(range(n)),
                     LOC_FILE_ID: none, LOC_INSTANT: none})


def test_small_file_rows_go_to_their_bucket_and_the_rest_to_the_rolling_writer():
    tagged = _tagged(3000)
    profile = WorkloadProfile(operation_type="INSERT")
    for part in PARTS:
        profile.count(part, None, None, 1000)
    small = {"2024/01": [SmallFile("2024/01", "sf-0", "001", 60_000, "2024/01/sf-0_1-0-1_001.parquet")]}
    plan = plan_buckets(profile, small, {}, SizingConfig(max_file_size=100_000, small_file_limit=80_000), 100)
    pending, head = _split_by_plan(tagged, plan)
    (number,) = pending
    bucket, rows = pending[number]
    assert bucket.kind is BucketKind.UPDATE and bucket.file_id == "sf-0"
    assert set(rows.column(PARTITION_COL).to_pylist()) == {"2024/01"}
    assert 300 <= rows.num_rows <= 500, "about the room the planner gave the small file (400 records)"
    assert LOC_FILE_ID not in rows.column_names and LOC_FILE_ID not in head.column_names
    assert sorted(rows.column("v").to_pylist() + head.column("v").to_pylist()) == list(range(3000)), \
        "every record exactly once"


def test_without_small_files_the_whole_chunk_streams_uncopied():
    tagged = _tagged(10)
    profile = WorkloadProfile(operation_type="INSERT")
    for part in PARTS:
        profile.count(part, None, None, 4 if part == PARTS[0] else 3)
    plan = plan_buckets(profile, {}, {}, SizingConfig(max_file_size=100), 10)
    pending, head = _split_by_plan(tagged, plan)
    assert pending == {} and head.num_rows == 10
    empty = tagged.slice(0, 0)
    assert _split_by_plan(empty, plan_buckets(WorkloadProfile(), {}, {}, SizingConfig(), 10))[1].num_rows == 0


def test_peeked_skips_empty_batches_and_knows_when_the_stream_ended():
    schema = pa.schema([("a", pa.int64())])
    empty = pa.record_batch([pa.array([], pa.int64())], schema=schema)
    full = pa.record_batch([pa.array([1, 2], pa.int64())], schema=schema)
    assert _peeked(iter([empty, empty])) is None
    assert _peeked(iter([])) is None
    rest = _peeked(iter([empty, full, empty, full]))
    assert rest is not None and [b.num_rows for b in rest] == [2, 0, 2]
