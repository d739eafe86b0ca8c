"""BUCKET index: a fixed number of file groups per partition, chosen by hash of the key.

Hudi's BucketIdentifier: the hash fields' values (taken from the record key,
which for complex keys is `f1:v1,f2:v2`) hashed as a Java `List<String>`,
masked to non-negative, modulo `hoodie.bucket.index.num.buckets`. A bucket's
file id is a UUID whose first 8 characters are the zero-padded bucket number,
plus `-0`. There is no small-file logic: every record goes to its bucket.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import pyarrow as pa

from pyhudi.view.file_system_view import FileSystemView

_INT_MASK = 0xFFFFFFFF


def java_string_hash(text: str) -> int:
    h = 0
    for unit in _utf16_units(text):
        h = (31 * h + unit) & _INT_MASK
    return h


def _utf16_units(text: str) -> list[int]:
    data = text.encode("utf-16-be", "surrogatepass")
    return [int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2)]


def java_list_hash(values: Sequence[str | None]) -> int:
    h = 1
    for v in values:
        h = (31 * h + (java_string_hash(v) if v is not None else 0)) & _INT_MASK
    return h


def hash_values(record_key: str, hash_fields: Sequence[str]) -> list[str | None]:
    if ":" not in record_key:
        return [record_key]
    pairs = dict(p.split(":", 1) for p in record_key.split(",") if ":" in p)
    return [pairs.get(f) for f in hash_fields]


def bucket_id(record_key: str, hash_fields: Sequence[str], num_buckets: int) -> int:
    return (java_list_hash(hash_values(record_key, hash_fields)) & 0x7FFFFFFF) % num_buckets


def bucket_ids(keys: pa.Array, hash_fields: Sequence[str], num_buckets: int) -> pa.Array:
    return pa.array([bucket_id(k, hash_fields, num_buckets) for k in keys.to_pylist()], type=pa.int32())


def bucket_of_file_id(file_id: str) -> int | None:
    head = file_id[:8]
    return int(head) if len(head) == 8 and head.isdigit() else None


def new_bucket_file_id(bucket: int) -> str:
    return f"{bucket:08d}{str(uuid.uuid4())[8:]}-0"


def existing_buckets(view: FileSystemView, partitions: Sequence[str]) -> dict[tuple[str, int], str]:
    """(partition, bucket) -> file id of the live file group that owns it."""
    out: dict[tuple[str, int], str] = {}
    for p in partitions:
        for group in view.live_groups(p):
            b = bucket_of_file_id(group.file_id)
            if b is not None and view._latest_slice(group, None) is not None:
                out[(p, b)] = group.file_id
    return out
