"""Spark's Murmur3 hashInt and the bucket -> Spark partition salts."""

from __future__ import annotations

import pyarrow as pa
import pytest

from pyhudi.writer.config import SizingConfig
from pyhudi.writer.partitioner import SmallFile, plan_buckets
from pyhudi.writer.profile import WorkloadProfile
from pyhudi.writer.routing import bucket_salts, make_router, partition_salts, spark_hash_int


@pytest.mark.parametrize("value, expected", [
    (0, 933211791), (1, -559580957), (2, 1765031574), (-5, 1369497261), (123456, 1905992991),
])
def test_spark_hash_int_known_values(value, expected):
    """Values of Spark SQL `hash(CAST(v AS INT))` (Murmur3_x86_32.hashInt, seed 42)."""
    assert spark_hash_int(value) == expected


def test_spark_hash_int_range_and_wraparound():
    for v in (-(2 ** 31), 2 ** 31 - 1, 7, -1):
        h = spark_hash_int(v)
        assert -(2 ** 31) <= h < 2 ** 31
    # the input is a 32-bit int: 2^32 + v hashes like v
    assert spark_hash_int(2 ** 32 + 5) == spark_hash_int(5)
    assert spark_hash_int(-1) == spark_hash_int(2 ** 32 - 1)
    assert spark_hash_int(0, seed=0) != spark_hash_int(0)


def test_partition_salts_map_bucket_b_to_partition_b():
    for n in range(1, 301):
        salts = partition_salts(n)
        assert len(salts) == n, n
        assert len(set(salts)) == n, n
        wrong = [(b, salt) for b, salt in enumerate(salts) if spark_hash_int(salt) % n != b]  # pmod(hash, n)
        assert wrong == [], (n, wrong)
        assert all(0 <= salt < 2 ** 31 for salt in salts)


def test_salts_are_the_smallest_candidates():
    salts = partition_salts(7)
    for b, salt in enumerate(salts):
        assert all(spark_hash_int(c) % 7 != b for c in range(salt))


def test_router_maps_rows_to_bucket_salts():
    sizing = SizingConfig(max_file_size=1000)
    wp = WorkloadProfile()
    wp.partition("p").num_inserts = 10
    wp.partition("p").updates["u-0"] = ("20250101000000001", 2)
    wp.partition("q").num_inserts = 4
    small = {"p": [SmallFile("p", "s-0", "20250101000000001", 400)]}
    plan = plan_buckets(wp, small, {}, sizing, 100)
    salts = partition_salts(plan.num_buckets)
    route = make_router(plan, salts)
    keys = [f"k{i}" for i in range(50)] + ["x", "y"]
    parts = ["p"] * 25 + ["q"] * 25 + ["p", "p"]
    fids = [None] * 50 + ["u-0", "s-0"]
    out = route(pa.array(keys), pa.array(parts), pa.array(fids, type=pa.string()))
    assert out.type == pa.int32()
    got = out.to_pylist()
    for k, p, f, salt in zip(keys, parts, fids, got, strict=True):
        bucket = plan.bucket_for_update(p, f) if f is not None else plan.bucket_for_insert(p, k)
        assert salt == salts[bucket]
        assert spark_hash_int(salt) % plan.num_buckets == bucket
    assert route(pa.array([], pa.string()), pa.array([], pa.string()), pa.array([], pa.string())).to_pylist() == []


def test_bucket_salts_send_each_bucket_to_its_task():
    """Several buckets per task: distinct salts, each landing in its bucket's task's partition."""
    for tasks in (1, 2, 3, 8):
        task_of = [(b * 7) % tasks for b in range(53)]
        salts = bucket_salts(task_of, tasks)
        assert len(set(salts)) == len(task_of)
        assert [spark_hash_int(s) % tasks for s in salts] == task_of
    assert bucket_salts([], 4) == []
    assert bucket_salts(list(range(9)), 9) == partition_salts(9)
    with pytest.raises(ValueError, match="bucket tasks must be in"):
        bucket_salts([0, 3], 3)


def test_bucket_tasks_group_small_buckets_and_split_large_ones():
    from pyhudi.writer.dispatch import FILE_COST_ROWS, bucket_tasks
    from pyhudi.writer.partitioner import Bucket, BucketKind

    small = [Bucket(i, BucketKind.UPDATE, f"p{i}", f"f{i}", expected_updates=2) for i in range(420)]
    task_of, tasks = bucket_tasks(small, workers=2, record_bytes=100, task_bytes=1 << 20)
    assert tasks == 8  # a few tasks per worker, not a task per bucket
    assert sorted(set(task_of)) == list(range(8))
    loads = [sum(2 + FILE_COST_ROWS for t in task_of if t == k) for k in range(tasks)]
    assert max(loads) - min(loads) <= 2 + FILE_COST_ROWS  # balanced within one bucket's cost
    large = [Bucket(i, BucketKind.INSERT, "p", f"n{i}", expected_inserts=100_000) for i in range(20)]
    task_of, tasks = bucket_tasks(large, workers=2, record_bytes=1000, task_bytes=100_000_000)
    assert tasks == 20 and sorted(task_of) == list(range(20))  # a task holds about one file's worth
    assert bucket_tasks(small[:3], workers=2, record_bytes=100, task_bytes=1 << 20) == ([0, 1, 2], 3)
