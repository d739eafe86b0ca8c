"""Routing records to buckets, and buckets to the Spark partitions (tasks) chosen for them.

`DataFrame.repartition(n, col)` places a row in partition
pmod(murmur3(col, seed 42), n), so two buckets can collide and another
partition stay empty. We instead give each bucket a "salt": a distinct
integer whose Spark hash lands in the partition of the task that bucket was
given (`bucket_salts`). Repartitioning on the salt then puts each bucket's
rows in exactly its task, and the task tells its buckets apart by salt.
`partition_salts(n)` is the one-bucket-per-task case: bucket b in partition b.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa

from pyhudi.writer.partitioner import BucketPlan

_MASK = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def spark_hash_int(value: int, seed: int = 42) -> int:
    """Spark's Murmur3_x86_32.hashInt (what `hash(int_col)` and HashPartitioning compute), signed."""
    k1 = (value & _MASK) * 0xCC9E2D51 & _MASK
    k1 = _rotl(k1, 15) * 0x1B873593 & _MASK
    h1 = (seed & _MASK) ^ k1
    h1 = (_rotl(h1, 13) * 5 + 0xE6546B64) & _MASK
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & _MASK
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & _MASK
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def partition_salts(num_partitions: int) -> list[int]:
    """salts[b] is an int that `repartition(num_partitions, salt)` sends to partition b."""
    return bucket_salts(list(range(num_partitions)), num_partitions)


def bucket_salts(task_of: Sequence[int], num_tasks: int) -> list[int]:
    """salts[b]: a distinct int (the smallest free ones, in order) that `repartition(num_tasks, salt)` sends
    to partition `task_of[b]`, so that a task gets exactly its buckets' rows and knows each row's bucket."""
    if any(not 0 <= t < num_tasks for t in task_of):
        raise ValueError(f"bucket tasks must be in [0, {num_tasks}): {sorted(set(task_of))[:10]}")
    waiting: dict[int, list[int]] = {}
    for b in reversed(range(len(task_of))):
        waiting.setdefault(task_of[b], []).append(b)  # popped in bucket order
    salts = [0] * len(task_of)
    missing, candidate = len(task_of), 0
    while missing:
        pending = waiting.get(spark_hash_int(candidate) % num_tasks)
        if pending:
            salts[pending.pop()] = candidate
            missing -= 1
        candidate += 1
    return salts


def make_router(plan: BucketPlan, salts: list[int]) -> Callable[[pa.Array, pa.Array, pa.Array], pa.Array]:
    """An Arrow UDF body mapping (record key, partition path, located fileId) to the bucket's salt."""

    salt_of = np.asarray(salts, dtype=np.int32)

    def route(keys: pa.Array, partitions: pa.Array, file_ids: pa.Array) -> pa.Array:
        return pa.array(salt_of[plan.buckets_for(partitions, keys, file_ids)])

    return route
