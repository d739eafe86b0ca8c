"""Bucket assignment: Hudi's UpsertPartitioner, planned on the driver from counts only.

Every file group receiving updates gets an UPDATE bucket. Inserts first top
up small files (joining that file's UPDATE bucket, since topping up rewrites
the file as a new version), then go to new INSERT buckets of max/avg records,
the last taking the remainder. Inserts reach a bucket by the MD5 of their key
against cumulative weights, so a retried task routes every record the same way.
"""

from __future__ import annotations

import bisect
import hashlib
from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyhudi.model.file_names import new_file_id_prefix
from pyhudi.writer.binpack import fill_open_bins, split_evenly_capped
from pyhudi.writer.config import SizingConfig
from pyhudi.writer.key_md5 import md5_prefixes
from pyhudi.writer.profile import WorkloadProfile

Column: TypeAlias = "pa.Array | pa.ChunkedArray"


class BucketKind(str, Enum):
    UPDATE = "UPDATE"  # merge handle: rewrite the file group's base file
    INSERT = "INSERT"  # create handle: new file group(s) with base files
    APPEND = "APPEND"  # append handle (MOR): new log file for an existing file group
    INSERT_LOG = "INSERT_LOG"  # append handle (MOR, log-aware index): a new, log-only file group


@dataclass(frozen=True)
class SmallFile:
    """A file slice that may take inserts, with its current size in bytes."""

    partition: str
    file_id: str
    base_instant: str
    size: int
    base_file: str | None = None  # relative path of the base file, None for log-only slices


class UpdateBase(NamedTuple):
    """The base file an updated file group's bucket rewrites (None: a log-only slice) and its size in bytes
    (0 where the planner does not know it): what the in-process task split weighs the bucket by."""

    path: str | None
    size: int = 0


@dataclass
class Bucket:
    number: int
    kind: BucketKind
    partition: str
    file_id: str  # UPDATE: existing file id; INSERT: new file id prefix (file id = prefix-N)
    base_instant: str | None = None
    base_file: str | None = None
    expected_inserts: int = 0
    expected_updates: int = 0
    log_base_instant: str | None = None  # APPEND: base instant the new log file is named with
    log_version: int = 1  # APPEND: version of the new log file (never append to an existing one)
    fixed_file_id: bool = False  # BUCKET index: the file id is the bucket's, no rollover
    record_size: int = 0  # INSERT: the bytes a record the planner sized this bucket with (0: not sized)
    base_size: int = 0  # UPDATE: the bytes of the base file it rewrites, where the planner knows them

    @property
    def writes_logs(self) -> bool:
        return self.kind in (BucketKind.APPEND, BucketKind.INSERT_LOG)


@dataclass
class BucketPlan:
    buckets: list[Bucket] = field(default_factory=list)
    # partition -> (bucket numbers, cumulative weights, total inserts of the partition)
    insert_routes: dict[str, tuple[list[int], list[float], int]] = field(default_factory=dict)
    update_buckets: dict[tuple[str, str], int] = field(default_factory=dict)
    average_record_size: int = 1024
    # BUCKET index: inserts go by (partition, bucket number of the key) instead of by weights.
    bucket_index: tuple[tuple[str, ...], int] | None = None  # (hash fields, number of buckets)
    bucket_routes: dict[tuple[str, int], int] = field(default_factory=dict)

    @property
    def num_buckets(self) -> int:
        return len(self.buckets)

    def bucket_for(self, partition: str, record_key: str, located_file_id: str | None) -> int:
        """A located record goes to its file group's bucket, an insert by its key."""
        if located_file_id is not None:
            return self.bucket_for_update(partition, located_file_id)
        return self.bucket_for_insert(partition, record_key)

    def bucket_for_update(self, partition: str, file_id: str) -> int:
        return self.update_buckets[(partition, file_id)]

    def bucket_for_insert(self, partition: str, record_key: str) -> int:
        if self.bucket_index is not None:
            from pyhudi.index.bucket import bucket_id

            fields, n = self.bucket_index
            return self.bucket_routes[(partition, bucket_id(record_key, fields, n))]
        numbers, weights, total = self.insert_routes[partition]
        r = (key_hash(record_key) % max(1, total)) / max(1, total)
        idx = bisect.bisect_left(weights, r)
        return numbers[idx] if idx < len(numbers) else numbers[0]

    def buckets_for(self, partitions: Column, record_keys: Column, located_file_ids: Column) -> np.ndarray:
        """`bucket_for` of every record at once: a small batch spent more time routing its records one by
        one than encoding them. Same rule, same buckets (tests/unit/test_partitioner.py compares them)."""
        partitions, record_keys = _one_array(partitions), _one_array(record_keys)
        out = np.empty(len(record_keys), dtype=np.int64)
        located = pc.is_valid(located_file_ids).to_numpy(zero_copy_only=False)
        rows = np.nonzero(located)[0]
        if len(rows):  # one hash lookup of "partition\x01fileId" per record, not a Python loop
            where = pa.array(rows)
            probe = pc.binary_join_element_wise(partitions.take(where), _one_array(located_file_ids).take(where),
                                                "\u0001")
            groups = list(self.update_buckets.items())
            names = pa.array([f"{p}\u0001{f}" for (p, f), _ in groups], pa.string())
            found = pc.index_in(probe, value_set=names)
            if found.null_count:
                missing = probe.filter(pc.is_null(found))[0].as_py().split("\u0001")
                raise KeyError(tuple(missing))
            out[rows] = np.asarray([b for _, b in groups], dtype=np.int64)[found.to_numpy(zero_copy_only=False)]
        rows = np.nonzero(~located)[0]
        if not len(rows):
            return out
        where = pa.array(rows)
        if self.bucket_index is not None:
            out[rows] = [self.bucket_for_insert(p, k) for p, k in zip(
                partitions.take(where).to_pylist(), record_keys.take(where).to_pylist())]
            return out
        everything = len(rows) == len(record_keys)  # all inserts (a new table): no gathers
        encoded = pc.dictionary_encode(partitions if everything else partitions.take(where))
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        names = encoded.dictionary.to_pylist()
        hashes = None
        if any(len(self.insert_routes[p][0]) > 1 for p in names):  # one pass over all keys, no gathers
            hashes = key_hashes(record_keys if everything else record_keys.take(where))
        order, bounds = grouped(codes, len(names))  # rows by partition: one sort, not a scan per partition
        for code, partition in enumerate(names):
            mine = order[bounds[code]:bounds[code + 1]]
            out[rows[mine]] = self._insert_buckets(partition, None if hashes is None else hashes[mine])
        return out

    def _insert_buckets(self, partition: str, hashes: np.ndarray | None) -> np.ndarray | int:
        """The insert buckets of one partition's new records, from their keys' MD5 prefixes (`key_hashes`);
        None when the partition has a single insert bucket (nothing to hash)."""
        numbers, weights, total = self.insert_routes[partition]
        if len(numbers) == 1 or hashes is None:
            return numbers[0]
        total = max(1, total)
        # numpy's % floors like Python's, and both divide exactly-converted integers below 2**53
        r = (hashes % total) / total
        idx = np.searchsorted(np.asarray(weights, dtype=np.float64), r, side="left")
        chosen = np.asarray(numbers, dtype=np.int64)[np.minimum(idx, len(numbers) - 1)]
        return np.where(idx < len(numbers), chosen, numbers[0])


def grouped(codes: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows grouped by code (0 <= code < groups), stably: group g's rows are `order[bounds[g]:bounds[g+1]]`.
    Codes are sorted as 16-bit integers where they fit, which numpy radix-sorts (several times faster)."""
    small = codes.astype(np.int16) if groups < (1 << 15) else codes
    order = np.argsort(small, kind="stable")
    return order, np.searchsorted(codes[order], np.arange(groups + 1))


def _one_array(column: Column) -> pa.Array:
    """Arrow's dictionary encoding of a chunked column is per chunk; the routing wants one dictionary."""
    if isinstance(column, pa.ChunkedArray):
        return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    return column


def key_hashes(record_keys: list[str] | pa.Array | pa.ChunkedArray) -> np.ndarray:
    """`key_hash` of many keys, without building a Python int per key. An Arrow column (UTF-8 already) is
    hashed by numpy over all keys at once (key_md5.py: same digests, several times faster than a loop)."""
    if isinstance(record_keys, (pa.Array, pa.ChunkedArray)):
        return md5_prefixes(record_keys)
    md5 = hashlib.md5
    return np.frombuffer(b"".join([md5(k.encode("utf-8")).digest()[:8] for k in record_keys]), dtype="<i8")


def key_hash(record_key: str) -> int:
    """Hudi's NumericUtils.getMessageDigestHash("MD5", key): first 8 digest bytes, little-endian, signed."""
    digest = hashlib.md5(record_key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little", signed=True)


def records_per_new_file(sizing: SizingConfig, avg_record_size: int) -> int:
    if sizing.auto_split:
        return max(1, sizing.max_file_size // max(1, avg_record_size))
    return sizing.insert_split_size


_NO_BASE = UpdateBase(None)


class UpsertPartitioner:
    """Plans buckets for one write from its workload profile and the small-file candidates."""

    def __init__(self, sizing: SizingConfig, avg_record_size: int) -> None:
        self.sizing = sizing
        self.avg = max(1, avg_record_size)
        self.plan = BucketPlan(average_record_size=self.avg)

    def _add_update_bucket(self, partition: str, file_id: str, base_instant: str | None,
                           base_file: str | None, base_size: int = 0) -> Bucket:
        key = (partition, file_id)
        if key in self.plan.update_buckets:
            return self.plan.buckets[self.plan.update_buckets[key]]
        bucket = Bucket(len(self.plan.buckets), BucketKind.UPDATE, partition, file_id, base_instant, base_file,
                        base_size=base_size)
        self.plan.buckets.append(bucket)
        self.plan.update_buckets[key] = bucket.number
        return bucket

    def assign_updates(self, profile: WorkloadProfile, bases: dict[tuple[str, str], UpdateBase]) -> None:
        for partition, prof in profile.partitions.items():
            for file_id, (base_instant, count) in prof.updates.items():
                base = bases.get((partition, file_id), _NO_BASE)
                bucket = self._add_update_bucket(partition, file_id, base_instant, base.path, base.size)
                bucket.expected_updates += count

    def assign_inserts(self, profile: WorkloadProfile, small_files: dict[str, list[SmallFile]]) -> None:
        per_new_file = records_per_new_file(self.sizing, self.avg)
        for partition, prof in profile.partitions.items():
            if prof.num_inserts <= 0:
                continue
            # Small files this write rewrites for its updates anyway take inserts first: on copy-on-write a
            # partition then rewrites one file group, not two (Hudi's order is the view's, unspecified).
            candidates = sorted(small_files.get(partition, []),
                                key=lambda sf: (partition, sf.file_id) not in self.plan.update_buckets)
            room = [(sf, (self.sizing.max_file_size - sf.size) // self.avg) for sf in candidates]
            allocations, remaining = fill_open_bins(room, prof.num_inserts)
            numbers: list[int] = []
            counts: list[int] = []
            for sf, n in allocations:
                bucket = self._add_update_bucket(partition, sf.file_id, sf.base_instant, sf.base_file, sf.size)
                bucket.expected_inserts += n
                numbers.append(bucket.number)
                counts.append(n)
            for n in split_evenly_capped(remaining, per_new_file):
                bucket = Bucket(len(self.plan.buckets), BucketKind.INSERT, partition, new_file_id_prefix(),
                                expected_inserts=n, record_size=self.avg if self.sizing.auto_split else 0)
                self.plan.buckets.append(bucket)
                numbers.append(bucket.number)
                counts.append(n)
            cumulative: list[float] = []
            acc = 0.0
            for n in counts:
                acc += n / prof.num_inserts
                cumulative.append(acc)
            self.plan.insert_routes[partition] = (numbers, cumulative, prof.num_inserts)


@dataclass(frozen=True)
class LogTarget:
    """Where the next log file of a file group goes: its slice's base instant and the next version."""

    base_instant: str
    next_version: int


@dataclass(frozen=True)
class MergeOnRead:
    """How a merge-on-read write treats buckets (Hudi's SparkUpsertDeltaCommitPartitioner)."""

    log_aware_index: bool
    log_targets: dict[tuple[str, str], LogTarget]


def plan_buckets(profile: WorkloadProfile, small_files: dict[str, list[SmallFile]],
                 bases: dict[tuple[str, str], UpdateBase], sizing: SizingConfig,
                 avg_record_size: int, mor: MergeOnRead | None = None) -> BucketPlan:
    partitioner = UpsertPartitioner(sizing, avg_record_size)
    partitioner.assign_updates(profile, bases)
    partitioner.assign_inserts(profile, small_files)
    if mor is not None:
        _apply_merge_on_read(partitioner.plan, small_files, mor)
    return partitioner.plan


def _apply_merge_on_read(plan: BucketPlan, small_files: dict[str, list[SmallFile]], mor: MergeOnRead) -> None:
    """Updates go to logs, except into a small file that is being rewritten anyway (index cannot see logs);
    with an index that sees logs, inserts go to logs too and new file groups start log-only."""
    rewritten = {(p, sf.file_id) for p, files in small_files.items() for sf in files} \
        if not mor.log_aware_index else set()
    for bucket in plan.buckets:
        key = (bucket.partition, bucket.file_id)
        if bucket.kind is BucketKind.UPDATE and key not in rewritten:
            target = mor.log_targets.get(key)
            bucket.kind = BucketKind.APPEND
            bucket.log_base_instant = target.base_instant if target else bucket.base_instant
            bucket.log_version = target.next_version if target else 1
        elif bucket.kind is BucketKind.INSERT and mor.log_aware_index:
            bucket.kind = BucketKind.INSERT_LOG


def plan_bucket_index(profile: WorkloadProfile, bases: dict[tuple[str, str], UpdateBase],
                      hash_fields: tuple[str, ...], num_buckets: int, mor: MergeOnRead | None,
                      avg_record_size: int) -> BucketPlan:
    """BUCKET index: one bucket per touched file group, existing (update) or new (fixed file id)."""
    from pyhudi.index.bucket import new_bucket_file_id

    plan = BucketPlan(average_record_size=avg_record_size, bucket_index=(hash_fields, num_buckets))
    for partition, prof in sorted(profile.partitions.items()):
        for fid, (base_instant, count) in sorted(prof.updates.items()):
            base = bases.get((partition, fid), _NO_BASE)
            bucket = Bucket(len(plan.buckets), BucketKind.UPDATE, partition, fid, base_instant, base.path,
                            expected_updates=count, fixed_file_id=True, base_size=base.size)
            if mor is not None:
                target = mor.log_targets.get((partition, fid))
                bucket.kind = BucketKind.APPEND
                bucket.log_base_instant = target.base_instant if target else base_instant
                bucket.log_version = target.next_version if target else 1
            plan.buckets.append(bucket)
            plan.update_buckets[(partition, fid)] = bucket.number
        for bid, count in sorted(prof.bucket_inserts.items()):
            kind = BucketKind.INSERT_LOG if mor is not None else BucketKind.INSERT
            bucket = Bucket(len(plan.buckets), kind, partition, new_bucket_file_id(bid), expected_inserts=count,
                            fixed_file_id=True)
            plan.buckets.append(bucket)
            plan.bucket_routes[(partition, bid)] = bucket.number
    return plan
