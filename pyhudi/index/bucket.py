"""BUCKET index: a fixed number of file groups per partition, chosen by hash of the key.

Hudi 0.14's `BucketIdentifier.getBucketId`: the hash keys are taken back out of
the record key string, hashed as a Java `List<String>`, masked to non-negative,
modulo `hoodie.bucket.index.num.buckets`. How the record key is taken apart
(`getHashKeys` + `KeyGenUtils.extractRecordKeysByFields`, 0.13-0.15, before
HUDI-8403 changed it in 1.0) decides the bucket, so it is followed exactly,
quirks included:

* a key without `:` is hashed whole, as a one-element list;
* otherwise it is split on every `,` (Java `String.split`: trailing empty parts
  dropped), and each part on its first `:`; a part without `:` is kept as a value
  (so a value holding `,` adds values), a `field:value` part only when the field
  is a hash field, in record-key order (not hash-field order);
* `__null__` becomes null (hash 0) and `__empty__` the empty string.

A bucket's file id is a UUID whose first 8 characters are the zero-padded bucket
number, plus `-0` (`BucketIdentifier.newBucketFileIdPrefix`). There is no
small-file logic: every record goes to its bucket. Hudi parses the bucket number
out of every live file id of a partition it writes (`bucketIdFromFileId`), so a
table whose file groups are not bucket-named cannot take a BUCKET write:
`check_layout` refuses it before anything is written.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import pyarrow as pa

from pyhudi.errors import InvalidConfigError, UnsupportedTableError
from pyhudi.view.file_system_view import FileSlice, FileSystemView

_INT_MASK = 0xFFFFFFFF
NULL_KEY = "__null__"  # KeyGenUtils.NULL_RECORDKEY_PLACEHOLDER
EMPTY_KEY = "__empty__"  # KeyGenUtils.EMPTY_RECORDKEY_PLACEHOLDER
NUM_BUCKETS_KEY = "hoodie.bucket.index.num.buckets"
HASH_FIELD_KEY = "hoodie.bucket.index.hash.field"


def java_string_hash(text: str) -> int:
    """`String.hashCode` (over UTF-16 code units) as an unsigned 32-bit value."""
    h = 0
    for unit in _utf16_units(text):
        h = (31 * h + unit) & _INT_MASK
    return h


def _utf16_units(text: str) -> list[int]:
    data = text.encode("utf-16-be", "surrogatepass")
    return [int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2)]


def java_list_hash(values: Sequence[str | None]) -> int:
    """`List.hashCode`: 31 * h + element hash, null elements hashing to 0, starting at 1."""
    h = 1
    for v in values:
        h = (31 * h + (java_string_hash(v) if v is not None else 0)) & _INT_MASK
    return h


def java_split(text: str, sep: str) -> list[str]:
    """Java's `String.split(sep)` for a one-character literal separator: trailing empty strings dropped."""
    if sep not in text:
        return [text]
    parts = text.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def hash_values(record_key: str, hash_fields: Sequence[str]) -> list[str | None]:
    """Hudi 0.14's `BucketIdentifier.getHashKeys(recordKey, indexKeyFields)` (see the module docstring)."""
    if ":" not in record_key:
        return [record_key]
    out: list[str | None] = []
    for part in java_split(record_key, ","):
        pair = part.split(":", 1)
        if len(pair) == 1:
            out.append(pair[0])
        elif not hash_fields or pair[0] in hash_fields:
            value = pair[1]
            out.append(None if value == NULL_KEY else "" if value == EMPTY_KEY else value)
    return out


def bucket_id(record_key: str, hash_fields: Sequence[str], num_buckets: int) -> int:
    return (java_list_hash(hash_values(record_key, hash_fields)) & 0x7FFFFFFF) % num_buckets


def bucket_ids(keys: pa.Array, hash_fields: Sequence[str], num_buckets: int) -> pa.Array:
    return pa.array([bucket_id(k, hash_fields, num_buckets) for k in keys.to_pylist()], type=pa.int32())


def bucket_of_file_id(file_id: str) -> int | None:
    head = file_id[:8]
    return int(head) if len(head) == 8 and head.isdigit() else None


def new_bucket_file_id(bucket: int) -> str:
    return f"{bucket:08d}{str(uuid.uuid4())[8:]}-0"


def _live_file_ids(view: FileSystemView, partition: str) -> list[str]:
    return [g.file_id for g in view.live_groups(partition) if view._latest_slice(g, None) is not None]


def check_layout(view: FileSystemView, num_buckets: int, partitions: Sequence[str] | None = None,
                 hash_fields: Sequence[str] | None = None) -> None:
    """Refuse, before anything is written, a table whose live file groups cannot serve a BUCKET write with
    `num_buckets` buckets: a file id that is not bucket-named (the table was written with another index, or
    by a bulk_insert that ignored the bucket index), two file groups for one bucket, or a bucket number the
    configured count cannot produce (the table was written with more buckets). Hudi 0.14 keeps no bucket
    count in hoodie.properties (pyhudi records it when it creates a bucket table, writer/config.py): on a
    table without the record, `hash_fields` given, the record keys of a few base files are hashed with
    `num_buckets` (check_bucket_keys), which catches a count larger than the table's too. With
    `partitions`, only those (the write's) are checked, as Hudi's bucket index loads (and checks) the
    bucket-to-file-group mapping of the records' partitions only."""
    for partition in view.partitions_of(partitions):
        owners: dict[int, str] = {}
        for fid in _live_file_ids(view, partition):
            b = bucket_of_file_id(fid)
            # A random UUID file id (another index) starts with 8 digits about once in 43; read as a bucket it
            # is one no real bucket count reaches (Hudi pads ids below 10^7 with zeros): not a bucket file group.
            if b is None or (b >= num_buckets and b >= _MAX_PLAUSIBLE_BUCKETS):
                raise UnsupportedTableError(
                    f"hoodie.index.type=BUCKET cannot write this table: file group {fid!r} of partition "
                    f"{partition!r} is not a bucket file group (its file id does not start with an 8-digit "
                    "bucket number), so the table was written with another index; keep writing it with that "
                    "index, or rewrite it into a new table with hoodie.index.type=BUCKET")
            if b >= num_buckets:
                raise InvalidConfigError(
                    f"{NUM_BUCKETS_KEY}={num_buckets} does not match the table: file group {fid!r} of "
                    f"partition {partition!r} is named as bucket {b}, which {num_buckets} buckets cannot "
                    f"produce; set {NUM_BUCKETS_KEY} to the count the table was written with (if the table "
                    "was written with another index, keep writing it with that index)")
            if b in owners:
                raise UnsupportedTableError(
                    f"hoodie.index.type=BUCKET cannot write this table: partition {partition!r} has two file "
                    f"groups for bucket {b} ({owners[b]!r} and {fid!r}); it was not written with one bucket "
                    "count and hash field consistently")
            owners[b] = fid
    if hash_fields is not None and view.config.bucket_num is None:
        check_bucket_keys(view, num_buckets, hash_fields, view.partitions_of(partitions))


_MAX_PLAUSIBLE_BUCKETS = 1_000_000
KEY_CHECK_FILES = 4
"""Files whose record keys check the bucket count of a table that does not record it: with a wrong count,
about half of a file's keys or more land in another bucket (4 -> 8 moves half of them), so one file of a
few records already tells."""


def check_bucket_keys(view: FileSystemView, num_buckets: int, hash_fields: Sequence[str],
                      partitions: Sequence[str]) -> None:
    """Refuse `num_buckets` when stored record keys hash to other buckets than the file groups holding them:
    the table was written with another count, and this write would put keys beside their old rows in
    another bucket (duplicates). Reads the keys of at most KEY_CHECK_FILES files: a slice's base file, or
    its first log file when it has none (MOR bucket groups start as logs)."""
    if not view.config.populate_meta_fields:
        return  # virtual keys: no stored key column to check
    checked = 0
    for partition in partitions:
        for sl in view.latest_file_slices(partition):
            b = bucket_of_file_id(sl.file_id)
            if b is None or checked >= KEY_CHECK_FILES:
                continue
            checked += 1
            path, keys = _stored_keys(view, sl)
            for key in keys:
                if key is not None and bucket_id(key, hash_fields, num_buckets) != b:
                    raise InvalidConfigError(
                        f"{NUM_BUCKETS_KEY}={num_buckets} does not match the table: record key {key!r} is stored "
                        f"in bucket {b} ({path}) but hashes to bucket {bucket_id(key, hash_fields, num_buckets)} "
                        f"with {num_buckets} buckets, so the table was written with another bucket count (or "
                        f"another {HASH_FIELD_KEY}); set both to what the table was written with (the table does "
                        "not record them in hoodie.properties)")


def _stored_keys(view: FileSystemView, sl: FileSlice) -> tuple[str, list[str | None]]:
    from pyhudi.index.log_index import log_file_keys  # reads log blocks: io, loaded only when needed
    from pyhudi.io.base_file import read_parquet

    if sl.base_file is not None:
        path = sl.base_file.path
        return path, read_parquet(view.storage, path, columns=["_hoodie_record_key"]).column(0).to_pylist()
    if not sl.log_files:
        return "", []
    path = sl.log_files[0].path
    return path, list(log_file_keys(view.storage, path))


def existing_buckets(view: FileSystemView, partitions: Sequence[str]) -> dict[tuple[str, int], str]:
    """(partition, bucket) -> file id of the live file group that owns it (after `check_layout`)."""
    out: dict[tuple[str, int], str] = {}
    for p in partitions:
        for fid in _live_file_ids(view, p):
            b = bucket_of_file_id(fid)
            if b is not None:
                out[(p, b)] = fid
    return out


def refuse_taken_buckets(taken: Sequence[tuple[str, int]], existing: dict[tuple[str, int], str]) -> None:
    """bulk_insert creates bucket file groups; one for a bucket that already has a group would give the
    bucket two groups, which the index cannot serve (both engines refuse it before writing)."""
    if taken:
        part, b = taken[0]
        raise UnsupportedTableError(
            f"bulk_insert with hoodie.index.type=BUCKET would write a second file group for bucket {b} of "
            f"partition {part!r} (file group {existing[(part, b)]!r} has it; {len(taken)} bucket(s) in all), "
            "which breaks the bucket index; write these records with operation insert or upsert")
