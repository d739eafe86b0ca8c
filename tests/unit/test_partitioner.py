"""Hudi's UpsertPartitioner, hand-computed (reference §10.2-10.6), plus property-based checks.

Oracles in this file are written independently of pyhudi: Java's NumericUtils.getMessageDigestHash
(first 8 MD5 bytes, little-endian, signed), Math.floorMod and Collections.binarySearch over the
cumulative weights.
"""

from __future__ import annotations

import hashlib
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyhudi.writer.config import SizingConfig
from pyhudi.writer.partitioner import (
    Bucket,
    BucketKind,
    SmallFile,
    UpdateBase,
    key_hash,
    plan_buckets,
    records_per_new_file,
)
from pyhudi.writer.profile import PartitionProfile, WorkloadProfile

MB = 1024 * 1024
T1 = "20250101000000001"


# ----------------------------------------------------------------------------- independent oracles
def java_md5_long(key: str) -> int:
    digest = hashlib.md5(key.encode("utf-8")).digest()
    value = 0
    for i in range(8):  # NumericUtils.padToLong
        value |= (digest[i] & 0xFF) << (i * 8)
    return value - (1 << 64) if value >= (1 << 63) else value


def oracle_bucket(key: str, numbers: list[int], counts: list[int], total: int) -> int:
    """UpsertPartitioner.getPartition for an insert."""
    cumulative, acc = [], 0.0
    for n in counts:
        acc += (1.0 * n) / total
        cumulative.append(acc)
    t = max(1, total)
    h = java_md5_long(key)
    r = 1.0 * (h - (h // t) * t) / t  # Math.floorMod(h, t): Python's // floors like floorDiv
    lo, hi = 0, len(cumulative) - 1  # Collections.binarySearch
    while lo <= hi:
        mid = (lo + hi) >> 1
        if cumulative[mid] < r:
            lo = mid + 1
        elif cumulative[mid] > r:
            hi = mid - 1
        else:
            return numbers[mid]
    return numbers[lo] if lo < len(numbers) else numbers[0]


def profile(parts: dict[str, tuple[int, dict[str, tuple[str, int]]]], op: str = "UPSERT") -> WorkloadProfile:
    wp = WorkloadProfile(operation_type=op)
    for path, (inserts, updates) in parts.items():
        pp = wp.partition(path)
        pp.num_inserts = inserts
        pp.updates = dict(updates)
    return wp


def sf(partition: str, fid: str, size: int) -> SmallFile:
    return SmallFile(partition, fid, T1, size, f"{partition}/{fid}_0-1-1_{T1}.parquet")


def summary(b: Bucket) -> tuple:
    return (b.number, b.kind, b.partition, b.expected_inserts, b.expected_updates)


# ----------------------------------------------------------------------------- hashing
@pytest.mark.parametrize("key, expected", [
    ("1", -9069201126804239676),             # md5 c4ca4238a0b92382... read little-endian, signed
    ("id:1,name:Alice", 2008216758888434646),  # md5 d60b8891809ede1b...
    ("uuid-0001", 5329625166759275545),
    ("", 338333539836370388),
    ("é", -5572115130754409114),              # UTF-8 bytes, not Latin-1
])
def test_key_hash_known_values(key, expected):
    assert key_hash(key) == expected == java_md5_long(key)


def test_key_hash_matches_oracle_on_many_keys():
    for i in range(2000):
        k = f"key-{i}-ü"
        assert key_hash(k) == java_md5_long(k)


# ----------------------------------------------------------------------------- records per new file
def test_records_per_new_file():
    assert records_per_new_file(SizingConfig(), 1024) == 122880  # 120 MB / 1 KB
    assert records_per_new_file(SizingConfig(), 1000) == 125829
    assert records_per_new_file(SizingConfig(auto_split=False, insert_split_size=500000), 1024) == 500000
    assert records_per_new_file(SizingConfig(max_file_size=1000), 300) == 3


# ----------------------------------------------------------------------------- hand-computed scenarios
def test_default_sizing_two_small_files_then_new_buckets():
    """avg 1024, max 120 MB: f1 at 100 MB - 1 byte has room 20480, f2 at 50 MB has room 71680;
    300000 inserts -> 71680 + 20480 topped up (f2 first: it is rewritten for its updates anyway), 207840
    left -> buckets of 122880 and 84960."""
    sizing = SizingConfig()
    wp = profile({"p": (300000, {"f2": (T1, 5), "g": (T1, 3)})})
    small = {"p": [sf("p", "f1", 100 * MB - 1), sf("p", "f2", 50 * MB)]}
    bases = {("p", "f2"): UpdateBase("p/f2.parquet"), ("p", "g"): UpdateBase("p/g.parquet")}
    plan = plan_buckets(wp, small, bases, sizing, 1024)
    assert plan.average_record_size == 1024
    assert [summary(b) for b in plan.buckets] == [
        (0, BucketKind.UPDATE, "p", 71680, 5),   # f2: update bucket shared with its inserts
        (1, BucketKind.UPDATE, "p", 0, 3),       # g: updates only
        (2, BucketKind.UPDATE, "p", 20480, 0),   # f1: new update bucket for the top-up
        (3, BucketKind.INSERT, "p", 122880, 0),
        (4, BucketKind.INSERT, "p", 84960, 0),
    ]
    assert [b.file_id for b in plan.buckets[:3]] == ["f2", "g", "f1"]
    assert plan.buckets[0].base_file == "p/f2.parquet"
    assert plan.buckets[2].base_file == small["p"][0].base_file and plan.buckets[2].base_instant == T1
    numbers, weights, total = plan.insert_routes["p"]
    assert numbers == [0, 2, 3, 4] and total == 300000
    assert weights == pytest.approx([71680 / 300000, 92160 / 300000, 215040 / 300000, 1.0], abs=1e-12)
    assert plan.bucket_for_update("p", "g") == 1 and plan.bucket_for_update("p", "f1") == 2
    assert plan.num_buckets == 5
    # INSERT buckets get fresh, distinct file id prefixes
    assert len({plan.buckets[3].file_id, plan.buckets[4].file_id}) == 2


def test_tiny_numbers_skip_file_without_room():
    """max 1000, avg 300 -> 3 per new file; rooms (1000-400)//300=2, (1000-990)//300=0, (1000-100)//300=3."""
    sizing = SizingConfig(max_file_size=1000, small_file_limit=800)
    plan = plan_buckets(profile({"p": (10, {})}),
                        {"p": [sf("p", "a", 400), sf("p", "full", 990), sf("p", "b", 100)]}, {}, sizing, 300)
    assert [(b.kind, b.file_id if b.kind is BucketKind.UPDATE else None, b.expected_inserts)
            for b in plan.buckets] == [
        (BucketKind.UPDATE, "a", 2), (BucketKind.UPDATE, "b", 3), (BucketKind.INSERT, None, 3),
        (BucketKind.INSERT, None, 2)]
    numbers, weights, total = plan.insert_routes["p"]
    assert numbers == [0, 1, 2, 3] and total == 10
    assert weights == pytest.approx([0.2, 0.5, 0.8, 1.0])
    assert ("p", "full") not in plan.update_buckets


def test_inserts_go_to_a_small_file_already_rewritten_for_updates():
    """Copy-on-write rewrites an updated file group anyway: its room takes the inserts first, so the
    partition rewrites one file, not two."""
    plan = plan_buckets(profile({"p": (100, {"b": (T1, 3)})}), {"p": [sf("p", "a", 1000), sf("p", "b", 1000)]},
                        {}, SizingConfig(), 1024)
    assert [(b.file_id, b.expected_inserts, b.expected_updates) for b in plan.buckets] == [("b", 100, 3)]


def test_update_buckets_carry_the_size_of_the_base_file_they_rewrite():
    """What the in-process write's task split weighs a bucket by (`dispatch.bucket_chunks`): the updated
    group's base file size as the view listed it, or a small file's size for its top-up."""
    plan = plan_buckets(profile({"p": (100, {"b": (T1, 3)}), "q": (0, {"c": (T1, 2)})}),
                        {"p": [sf("p", "a", 1000)]},
                        {("p", "b"): UpdateBase("p/b.parquet", 5_000_000), ("q", "c"): UpdateBase("q/c.parquet", 7)},
                        SizingConfig(), 1024)
    assert sorted((b.file_id, b.base_size) for b in plan.buckets) == [("a", 1000), ("b", 5_000_000), ("c", 7)]


def test_inserts_fit_in_first_small_file():
    plan = plan_buckets(profile({"p": (100, {})}), {"p": [sf("p", "a", 1000), sf("p", "b", 1000)]}, {},
                        SizingConfig(), 1024)
    assert [summary(b) for b in plan.buckets] == [(0, BucketKind.UPDATE, "p", 100, 0)]
    assert plan.insert_routes["p"] == ([0], [1.0], 100)


def test_file_at_or_over_max_gets_nothing():
    sizing = SizingConfig(max_file_size=10_000, small_file_limit=20_000)
    plan = plan_buckets(profile({"p": (5, {})}), {"p": [sf("p", "big", 12_000), sf("p", "edge", 10_000 - 99)]},
                        {}, sizing, 100)
    assert [b.kind for b in plan.buckets] == [BucketKind.INSERT]
    assert plan.buckets[0].expected_inserts == 5


def test_exact_room_is_used_fully():
    """(max - size) // avg exactly: 10000 - 7000 = 3000 -> 30 records of 100 bytes."""
    sizing = SizingConfig(max_file_size=10_000)
    plan = plan_buckets(profile({"p": (31, {})}), {"p": [sf("p", "a", 7_000)]}, {}, sizing, 100)
    assert [(b.kind, b.expected_inserts) for b in plan.buckets] == [(BucketKind.UPDATE, 30), (BucketKind.INSERT, 1)]


def test_insert_split_size_without_auto_split():
    sizing = SizingConfig(auto_split=False, insert_split_size=1000)
    plan = plan_buckets(profile({"p": (2500, {})}), {}, {}, sizing, 1024)
    assert [(b.kind, b.expected_inserts) for b in plan.buckets] == [(BucketKind.INSERT, 1000)] * 2 + [
        (BucketKind.INSERT, 500)]
    assert plan.insert_routes["p"][1] == pytest.approx([0.4, 0.8, 1.0])


def test_exact_multiple_has_no_remainder_bucket():
    sizing = SizingConfig(max_file_size=1000)
    plan = plan_buckets(profile({"p": (9, {})}), {}, {}, sizing, 100)
    assert [b.expected_inserts for b in plan.buckets] == [9]
    plan = plan_buckets(profile({"p": (20, {})}), {}, {}, sizing, 100)
    assert [b.expected_inserts for b in plan.buckets] == [10, 10]


def test_multiple_partitions_are_independent():
    sizing = SizingConfig(max_file_size=1000)
    wp = profile({"a": (25, {}), "b": (0, {"u": (T1, 4)}), "c": (3, {})})
    plan = plan_buckets(wp, {"a": [sf("a", "s", 600)], "b": [sf("b", "never", 0)]}, {}, sizing, 100)
    assert [summary(b) for b in plan.buckets] == [
        (0, BucketKind.UPDATE, "b", 0, 4),
        (1, BucketKind.UPDATE, "a", 4, 0),   # room (1000 - 600) // 100
        (2, BucketKind.INSERT, "a", 10, 0),
        (3, BucketKind.INSERT, "a", 10, 0),
        (4, BucketKind.INSERT, "a", 1, 0),
        (5, BucketKind.INSERT, "c", 3, 0),
    ]
    assert set(plan.insert_routes) == {"a", "c"}  # no inserts in b: its small file is not touched
    assert plan.insert_routes["c"] == ([5], [1.0], 3)
    for i in range(300):
        assert plan.bucket_for_insert("a", f"k{i}") in (1, 2, 3, 4)
        assert plan.bucket_for_insert("c", f"k{i}") == 5


def test_no_inserts_no_routes():
    plan = plan_buckets(profile({"p": (0, {"f": (T1, 2)})}), {"p": [sf("p", "x", 1)]}, {}, SizingConfig(), 1024)
    assert plan.insert_routes == {}
    assert [summary(b) for b in plan.buckets] == [(0, BucketKind.UPDATE, "p", 0, 2)]


def test_avg_record_size_floor_of_one():
    plan = plan_buckets(profile({"p": (3, {})}), {}, {}, SizingConfig(max_file_size=2), 0)
    assert plan.average_record_size == 1
    assert [b.expected_inserts for b in plan.buckets] == [2, 1]


# ----------------------------------------------------------------------------- routing
def test_routing_matches_java_oracle():
    sizing = SizingConfig(max_file_size=1000)
    plan = plan_buckets(profile({"p": (10, {})}),
                        {"p": [sf("p", "a", 400), sf("p", "full", 990), sf("p", "b", 100)]}, {}, sizing, 300)
    numbers, _, total = plan.insert_routes["p"]
    counts = [plan.buckets[n].expected_inserts for n in numbers]
    for i in range(5000):
        key = f"id:{i},name:user{i}"
        assert plan.bucket_for_insert("p", key) == oracle_bucket(key, numbers, counts, total)


def test_routing_known_assignments():
    """Four buckets with weights 0.2/0.3/0.3/0.2 over 10 inserts: r = floorMod(md5long, 10) / 10."""
    sizing = SizingConfig(max_file_size=1000)
    plan = plan_buckets(profile({"p": (10, {})}), {"p": [sf("p", "a", 400), sf("p", "b", 100)]}, {}, sizing, 300)
    # key "1": md5long -9069201126804239676, floorMod(.., 10) = 4 -> r = 0.4 -> first cumulative >= 0.4 is 0.5
    assert java_md5_long("1") % 10 == 4
    assert plan.bucket_for_insert("p", "1") == 1
    # key "uuid-0001": 5329625166759275545 % 10 = 5 -> r = 0.5 equals cumulative[1] exactly -> bucket 1
    assert plan.bucket_for_insert("p", "uuid-0001") == 1
    # key "": 338333539836370388 % 10 = 8 -> r = 0.8 equals cumulative[2] -> bucket 2
    assert plan.bucket_for_insert("p", "") == 2


def test_routing_is_proportional_to_weights():
    sizing = SizingConfig(max_file_size=1000)
    n = 40_000
    plan = plan_buckets(profile({"p": (n, {})}), {"p": [sf("p", "a", 0)]}, {}, sizing, 1)
    # small file takes 1000, then 39 buckets of 1000
    numbers, weights, total = plan.insert_routes["p"]
    assert len(numbers) == 40
    counts = {b: 0 for b in numbers}
    for i in range(n):
        counts[plan.bucket_for_insert("p", f"rec-{i:06d}")] += 1
    for b in numbers:
        expected = plan.buckets[b].expected_inserts
        assert abs(counts[b] - expected) <= 6 * math.sqrt(expected) + 5, (b, counts[b], expected)


def test_update_routing():
    plan = plan_buckets(profile({"p": (0, {"f": (T1, 2)}), "q": (0, {"f": (T1, 1)})}), {}, {}, SizingConfig(), 1024)
    assert plan.bucket_for_update("p", "f") != plan.bucket_for_update("q", "f")
    with pytest.raises(KeyError):
        plan.bucket_for_update("p", "unknown")


# ----------------------------------------------------------------------------- property-based
@st.composite
def scenarios(draw):
    avg = draw(st.integers(1, 2000))
    per_file = draw(st.integers(1, 3000))
    max_size = per_file * avg + draw(st.integers(0, avg - 1))
    auto = draw(st.booleans())
    split = draw(st.integers(1, 3000))
    n_parts = draw(st.integers(1, 3))
    parts, smalls = {}, {}
    for p in range(n_parts):
        name = f"p{p}"
        eff_per = per_file if auto else split
        inserts = draw(st.integers(0, min(20000, eff_per * 40)))
        n_updates = draw(st.integers(0, 3))
        updates = {f"{name}-u{i}": (T1, draw(st.integers(1, 50))) for i in range(n_updates)}
        sizes = draw(st.lists(st.integers(0, max_size + 3 * avg), max_size=6))
        fids = [f"{name}-u{i}" if i < n_updates and draw(st.booleans()) else f"{name}-s{i}" for i in range(len(sizes))]
        smalls[name] = [sf(name, fid, size) for fid, size in zip(fids, sizes, strict=True)]
        parts[name] = (inserts, updates)
    sizing = SizingConfig(max_file_size=max_size, auto_split=auto, insert_split_size=split)
    return sizing, avg, parts, smalls


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_partitioner_properties(scenario):
    sizing, avg, parts, smalls = scenario
    wp = profile(parts)
    plan = plan_buckets(wp, smalls, {}, sizing, avg)
    per_file = (sizing.max_file_size // avg) if sizing.auto_split else sizing.insert_split_size

    assert [b.number for b in plan.buckets] == list(range(len(plan.buckets)))
    total_assigned = sum(b.expected_inserts for b in plan.buckets)
    assert total_assigned == wp.total_inserts
    assert sum(b.expected_updates for b in plan.buckets) == wp.total_updates

    for name, (inserts, updates) in parts.items():
        mine = [b for b in plan.buckets if b.partition == name]
        assert sum(b.expected_inserts for b in mine) == inserts
        # every updated file group has exactly one UPDATE bucket carrying its updates
        for fid, (_, count) in updates.items():
            assert plan.buckets[plan.bucket_for_update(name, fid)].expected_updates == count

        # greedy top-up: small files with updates first (stable), then the rest in order, min(room,
        # unassigned); never more than the room
        remaining = inserts
        for small in sorted(smalls[name], key=lambda s, u=updates: s.file_id not in u):
            room = (sizing.max_file_size - small.size) // avg
            expected = min(room, remaining) if remaining > 0 and room > 0 else 0
            got = plan.buckets[plan.update_buckets[(name, small.file_id)]].expected_inserts \
                if (name, small.file_id) in plan.update_buckets else 0
            assert got == expected
            assert got <= max(room, 0)
            remaining -= expected

        new = [b for b in mine if b.kind is BucketKind.INSERT]
        assert sum(b.expected_inserts for b in new) == remaining
        assert len(new) == (-(-remaining // per_file) if remaining > 0 else 0)
        assert all(b.expected_inserts == per_file for b in new[:-1])
        if new:
            assert 0 < new[-1].expected_inserts <= per_file
            assert new[-1].number == max(b.number for b in new)

        if inserts == 0:
            assert name not in plan.insert_routes
            continue
        numbers, weights, total = plan.insert_routes[name]
        assert total == inserts
        counts = [plan.buckets[n].expected_inserts for n in numbers]
        assert all(c > 0 for c in counts) and sum(counts) == inserts
        assert all(a < b for a, b in zip(weights, weights[1:], strict=False))
        assert weights[-1] == pytest.approx(1.0, abs=1e-9)

        # routing: deterministic, inside the partition's buckets, equal to the Java oracle
        again = plan_buckets(profile(parts), smalls, {}, sizing, avg)
        n_keys = min(inserts, 2000)
        routed = {n: 0 for n in numbers}
        for i in range(n_keys):
            key = f"{name}-key-{i}"
            b = plan.bucket_for_insert(name, key)
            assert b == again.bucket_for_insert(name, key) == oracle_bucket(key, numbers, counts, total)
            routed[b] += 1
        if n_keys >= 1000:
            for n, c in zip(numbers, counts, strict=True):
                share = c / inserts
                assert abs(routed[n] - n_keys * share) <= 6 * math.sqrt(n_keys * share * (1 - share)) + 3


def test_partition_profile_helpers():
    pp = PartitionProfile(num_inserts=3, updates={"a": (T1, 2), "b": (T1, 5)})
    assert pp.num_updates == 7
    wp = WorkloadProfile(partitions={"x": pp, "y": PartitionProfile(num_inserts=4)})
    assert wp.total_inserts == 7 and wp.total_updates == 7


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 400), st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=4),
       st.integers(0, 2**31), st.booleans())
def test_buckets_for_routes_every_record_like_bucket_for(parts, seed, chunked):
    """The vectorized router gives each record the bucket the per-record rule gives it, in every
    partition (one insert bucket, several, none) and for located records (updates)."""
    import numpy as np
    import pyarrow as pa

    sizing = SizingConfig(max_file_size=1000)
    rng = np.random.default_rng(seed)
    spec, smalls, records = {}, {}, []
    for i, (inserts, n_updated, n_small) in enumerate(parts):
        name = f"p{i}" if i else ""
        updates = {f"u{i}-{j}": (T1, 1 + j) for j in range(n_updated)}
        spec[name] = (inserts, updates)
        smalls[name] = [sf(name, f"s{i}-{j}", int(rng.integers(0, 900))) for j in range(n_small)]
        records += [(name, f"{name}/k{rng.integers(0, 10**9)}", None) for _ in range(inserts)]
        records += [(name, f"{name}/upd{j}", fid) for fid, (_, n) in updates.items() for j in range(n)]
    plan = plan_buckets(profile(spec), smalls, {}, sizing, 100)
    order = rng.permutation(len(records))
    shuffled = [records[k] for k in order]
    parts_col = pa.array([r[0] for r in shuffled], pa.string())
    keys_col = pa.array([r[1] for r in shuffled], pa.string())
    fids_col = pa.array([r[2] for r in shuffled], pa.string())
    if chunked and len(shuffled) > 1:
        half = len(shuffled) // 2
        parts_col, keys_col, fids_col = (pa.chunked_array([c[:half], c[half:]])
                                         for c in (parts_col, keys_col, fids_col))
    got = plan.buckets_for(parts_col, keys_col, fids_col)
    assert got.dtype == np.int64 and len(got) == len(shuffled)
    assert got.tolist() == [plan.bucket_for(p, k, f) for p, k, f in shuffled]


def test_key_hashes_equal_key_hash_and_the_java_oracle():
    from pyhudi.writer.partitioner import key_hashes

    keys = [f"key-{i}" for i in range(500)] + ["", "ü-ñ", "a" * 300]
    assert key_hashes(keys).tolist() == [key_hash(k) for k in keys] == [java_md5_long(k) for k in keys]
