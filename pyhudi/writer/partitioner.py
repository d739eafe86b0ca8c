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

from pyhudi.model.file_names import new_file_id_prefix
from pyhudi.writer.binpack import fill_open_bins, split_evenly_capped
from pyhudi.writer.config import SizingConfig
from pyhudi.writer.profile import WorkloadProfile


class BucketKind(str, Enum):
    UPDATE = "UPDATE"
    INSERT = "INSERT"


@dataclass(frozen=True)
class SmallFile:
    """A file slice that may take inserts, with its current size in bytes."""

    partition: str
    file_id: str
    base_instant: str
    size: int
    base_file: str | None = None  # relative path of the base file, None for log-only slices


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


@dataclass
class BucketPlan:
    buckets: list[Bucket] = field(default_factory=list)
    # partition -> (bucket numbers, cumulative weights, total inserts of the partition)
    insert_routes: dict[str, tuple[list[int], list[float], int]] = field(default_factory=dict)
    update_buckets: dict[tuple[str, str], int] = field(default_factory=dict)
    average_record_size: int = 1024

    @property
    def num_buckets(self) -> int:
        return len(self.buckets)

    def bucket_for_update(self, partition: str, file_id: str) -> int:
        return self.update_buckets[(partition, file_id)]

    def bucket_for_insert(self, partition: str, record_key: str) -> int:
        numbers, weights, total = self.insert_routes[partition]
        r = (key_hash(record_key) % max(1, total)) / max(1, total)
        idx = bisect.bisect_left(weights, r)
        return numbers[idx] if idx < len(numbers) else numbers[0]


def key_hash(record_key: str) -> int:
    """Hudi's NumericUtils.getMessageDigestHash("MD5", key): first 8 digest bytes, little-endian, signed."""
    digest = hashlib.md5(record_key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little", signed=True)


def records_per_new_file(sizing: SizingConfig, avg_record_size: int) -> int:
    if sizing.auto_split:
        return max(1, sizing.max_file_size // max(1, avg_record_size))
    return sizing.insert_split_size


class UpsertPartitioner:
    """Plans buckets for one write from its workload profile and the small-file candidates."""

    def __init__(self, sizing: SizingConfig, avg_record_size: int) -> None:
        self.sizing = sizing
        self.avg = max(1, avg_record_size)
        self.plan = BucketPlan(average_record_size=self.avg)

    def _add_update_bucket(self, partition: str, file_id: str, base_instant: str | None,
                           base_file: str | None) -> Bucket:
        key = (partition, file_id)
        if key in self.plan.update_buckets:
            return self.plan.buckets[self.plan.update_buckets[key]]
        bucket = Bucket(len(self.plan.buckets), BucketKind.UPDATE, partition, file_id, base_instant, base_file)
        self.plan.buckets.append(bucket)
        self.plan.update_buckets[key] = bucket.number
        return bucket

    def assign_updates(self, profile: WorkloadProfile, base_files: dict[tuple[str, str], str | None]) -> None:
        for partition, prof in profile.partitions.items():
            for file_id, (base_instant, count) in prof.updates.items():
                bucket = self._add_update_bucket(partition, file_id, base_instant,
                                                 base_files.get((partition, file_id)))
                bucket.expected_updates += count

    def assign_inserts(self, profile: WorkloadProfile, small_files: dict[str, list[SmallFile]]) -> None:
        per_new_file = records_per_new_file(self.sizing, self.avg)
        for partition, prof in profile.partitions.items():
            if prof.num_inserts <= 0:
                continue
            room = [(sf, (self.sizing.max_file_size - sf.size) // self.avg) for sf in small_files.get(partition, [])]
            allocations, remaining = fill_open_bins(room, prof.num_inserts)
            numbers: list[int] = []
            counts: list[int] = []
            for sf, n in allocations:
                bucket = self._add_update_bucket(partition, sf.file_id, sf.base_instant, sf.base_file)
                bucket.expected_inserts += n
                numbers.append(bucket.number)
                counts.append(n)
            for n in split_evenly_capped(remaining, per_new_file):
                bucket = Bucket(len(self.plan.buckets), BucketKind.INSERT, partition, new_file_id_prefix(),
                                expected_inserts=n)
                self.plan.buckets.append(bucket)
                numbers.append(bucket.number)
                counts.append(n)
            cumulative: list[float] = []
            acc = 0.0
            for n in counts:
                acc += n / prof.num_inserts
                cumulative.append(acc)
            self.plan.insert_routes[partition] = (numbers, cumulative, prof.num_inserts)


def plan_buckets(profile: WorkloadProfile, small_files: dict[str, list[SmallFile]],
                 base_files: dict[tuple[str, str], str | None], sizing: SizingConfig,
                 avg_record_size: int) -> BucketPlan:
    partitioner = UpsertPartitioner(sizing, avg_record_size)
    partitioner.assign_updates(profile, base_files)
    partitioner.assign_inserts(profile, small_files)
    return partitioner.plan
