"""Which handle writes a bucket: merge (rewrite a base file), append (MOR logs) or create.

Its own module so handles.py and append_handle.py (which uses handles' record helpers) do not import
each other; every engine's write tasks call `run_handle`.
"""

from __future__ import annotations

import pyarrow as pa

from pyhudi.model.write_stat import WriteStat
from pyhudi.storage import Storage
from pyhudi.writer.append_handle import append_handle
from pyhudi.writer.handles import HandleContext, create_handle, merge_handle
from pyhudi.writer.partition_meta import ensure_partition_metadata
from pyhudi.writer.partitioner import Bucket, BucketKind


def run_handle(ctx: HandleContext, storage: Storage, bucket: Bucket, records: pa.Table, token: str,
               pid: int) -> list[WriteStat]:
    """The handle a bucket's kind calls for: merge (rewrite a base file), append (MOR logs) or create."""
    ensure_partition_metadata(storage, bucket.partition, ctx.instant)
    if bucket.kind is BucketKind.UPDATE:
        return [merge_handle(ctx, storage, bucket, records, token, pid)]
    if bucket.writes_logs:
        return append_handle(ctx, storage, bucket, records, token, pid)
    return create_handle(ctx, storage, bucket, records, token, pid)[0]
