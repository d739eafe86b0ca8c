"""Routing records to buckets, and buckets to Spark partitions one-to-one.

`DataFrame.repartition(n, col)` places a row in partition
pmod(murmur3(col, seed 42), n), so two buckets can collide and another
partition stay empty. We instead give each bucket a "salt": the smallest
integer whose Spark hash lands in that bucket's partition. Repartitioning on
the salt then maps bucket b to partition b exactly, and the write handle
knows its bucket from `TaskContext.partitionId()`.
"""

from __future__ import annotations

from collections.abc import Callable

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
    salts: list[int | None] = [None] * num_partitions
    missing = num_partitions
    candidate = 0
    while missing:
        target = spark_hash_int(candidate) % num_partitions
        if salts[target] is None:
            salts[target] = candidate
            missing -= 1
        candidate += 1
    return [s for s in salts if s is not None]


def make_router(plan: BucketPlan, salts: list[int]) -> Callable[[pa.Array, pa.Array, pa.Array], pa.Array]:
    """An Arrow UDF body mapping (record key, partition path, located fileId) to the bucket's salt."""

    salt_of = np.asarray(salts, dtype=np.int32)

    def route(keys: pa.Array, partitions: pa.Array, file_ids: pa.Array) -> pa.Array:
        return pa.array(salt_of[plan.buckets_for(partitions, keys, file_ids)])

    return route
