"""The append handle (merge-on-read): updates, deletes and log-routed inserts go to a new log file.

A write never appends to an existing log file: each handle creates the next
version (`.<fileId>_<baseInstant>.log.<N+1>_<token>`), so a crash can only
leave a torn tail in a file nobody has committed. The file is created
exclusively: another application writing the same slice at the same time
plans the same version and, Spark's write token being `<partition>-<stage>-
<attempt>`, possibly the same token; whoever comes second rolls over to the
next free version (as Hudi's log writer does) instead of overwriting it. Data becomes data blocks
(parquet by default, avro on request) of at most
`hoodie.logfile.data.block.max.size` (estimated); deletes become a delete
block; a file rolls to the next version past `hoodie.logfile.max.size`.
"""

from __future__ import annotations

import logging
import time

import pyarrow as pa
import pyarrow.compute as pc

from pyhudi.io.log_blocks import (
    Ordering,
    encode_avro_data_block,
    encode_delete_block,
    encode_parquet_data_block,
)
from pyhudi.model.file_names import file_id, join_path, log_file_name
from pyhudi.model.write_stat import RuntimeStats, WriteStat
from pyhudi.storage import Storage
from pyhudi.writer.handles import (
    IS_UPDATE,
    PARTITION,
    RECORD_KEY,
    HandleContext,
    data_only,
    dedupe,
    is_delete,
    with_meta,
)
from pyhudi.writer.markers import Marking, create_marker, remove_marker
from pyhudi.writer.partitioner import Bucket, BucketKind

log = logging.getLogger(__name__)


def _blocks(ctx: HandleContext, data: pa.Table, deletes: pa.Table) -> list[bytes]:
    """Encoded blocks: data split at the block size estimate, then one delete block."""
    blocks: list[bytes] = []
    if data.num_rows:
        per_row = max(1.0, data.nbytes / data.num_rows)
        rows_per_block = max(1, int(ctx.sizing.log_block_max_size / per_row))
        for start in range(0, data.num_rows, rows_per_block):
            chunk = data.slice(start, rows_per_block)
            if ctx.sizing.log_block_format == "avro":
                blocks.append(encode_avro_data_block(chunk, ctx.avro_schema_with_meta, ctx.instant))
            else:
                blocks.append(encode_parquet_data_block(chunk, ctx.avro_schema_with_meta, ctx.instant,
                                                        compression=ctx.parquet.codec,
                                                        raw_columns=ctx.parquet.column_choice(chunk).raw))
    if deletes.num_rows:
        keys = deletes.column(RECORD_KEY).to_pylist()
        parts = deletes.column(PARTITION).to_pylist()
        field = ctx.precombine_field
        if field and field in deletes.column_names:
            column = deletes.column(field)
            wrapper = _JAVA_WRAPPERS.get(column.type)
            order = [0 if v is None else Ordering(wrapper, v) if wrapper else v for v in column.to_pylist()]
        else:
            order = [0] * deletes.num_rows
        blocks.append(encode_delete_block(list(zip(keys, parts, order)), ctx.instant,
                                          ctx.avro_schema_with_meta))
    return blocks


# The wrapper Hudi's wrapValueIntoAvro picks from the field's Java type: a `long` ordering value is a
# LongWrapper even when it is small (Python's one int would otherwise pick IntWrapper), and 0.14's log
# scanner compares a delete's ordering value with a record's only when their classes match.
_JAVA_WRAPPERS = {pa.int64(): "LongWrapper", pa.int32(): "IntWrapper", pa.float64(): "DoubleWrapper",
                  pa.float32(): "FloatWrapper"}


def _files(blocks: list[bytes], max_size: int) -> list[list[bytes]]:
    """Group blocks into log files, rolling to a new file once the next block would pass the max size."""
    files: list[list[bytes]] = []
    current: list[bytes] = []
    size = 0
    for block in blocks:
        if current and size + len(block) > max_size:
            files.append(current)
            current, size = [], 0
        current.append(block)
        size += len(block)
    if current:
        files.append(current)
    return files


def create_log_file(storage: Storage, instant: str, partition: str, fid: str, base_instant: str, version: int,
                    token: str, payload: bytes, marking: Marking) -> tuple[str, int]:
    """Write `payload` as a new log file named with `base_instant` (see `log_name_instant`) at `version`,
    or at the next version no one has
    taken; returns its name and version. Never overwrites: the file is created exclusively, after its
    marker. A name taken by another writer keeps its file, and this instant's marker for it goes
    (a rollback or commit of this instant must not think it wrote that file)."""
    while True:
        name = log_file_name(fid, base_instant, version, token)
        marker = create_marker(storage, instant, partition, name, "APPEND", marking)
        if storage.write_new(join_path(partition, name), payload, mid_write_fault="write.mid_log_file"):
            return name, version
        remove_marker(storage, marker)
        log.info("log file %s already exists (another writer); rolling over to version %d", name, version + 1)
        version += 1


def log_start(instant: str, bucket: Bucket) -> tuple[str, str, int]:
    """The file id, base instant and first log version a bucket's appends take (known before they run)."""
    if bucket.kind is BucketKind.INSERT_LOG:
        return (bucket.file_id if bucket.fixed_file_id else file_id(bucket.file_id, 0)), instant, 1
    return bucket.file_id, bucket.log_base_instant or instant, bucket.log_version


def log_name_instant(ctx: HandleContext, base_instant: str) -> str:
    """The instant a new log file's name carries: its slice's base instant (layout 1), or the writing
    delta commit (layout 2, Hudi 1.x's HoodieLogFormat writer for table version 8 and later)."""
    return ctx.instant if ctx.logs_named_by_commit else base_instant


def append_handle(ctx: HandleContext, storage: Storage, bucket: Bucket, records: pa.Table, token: str,
                  pid: int) -> list[WriteStat]:
    start = time.monotonic()
    if ctx.combine:
        records = dedupe(records, ctx.precombine_field)
    deleting = is_delete(records)
    new_group = bucket.kind is BucketKind.INSERT_LOG
    fid, base_instant, version = log_start(ctx.instant, bucket)
    upserts = records.filter(pa.array(~deleting))
    updated = pc.sum(upserts.column(IS_UPDATE).cast(pa.int64())).as_py() or 0 \
        if IS_UPDATE in upserts.column_names and upserts.num_rows else 0
    data = with_meta(ctx, data_only(upserts), fid, pid, 0) if upserts.num_rows else ctx.file_schema.empty_table()
    deletes = records.filter(pa.array(deleting))
    blocks = _blocks(ctx, data, deletes)
    stats: list[WriteStat] = []
    remaining_rows, remaining_deletes = data.num_rows, deletes.num_rows
    for i, file_blocks in enumerate(_files(blocks, ctx.sizing.log_max_size)):
        payload = b"".join(file_blocks)
        name, written_version = create_log_file(storage, ctx.instant, bucket.partition, fid,
                                                log_name_instant(ctx, base_instant), version, token, payload,
                                                ctx.marking)
        version = written_version + 1
        path = join_path(bucket.partition, name)
        first = i == 0  # counts are attributed to the first file of a rolled-over write
        stats.append(WriteStat(
            file_id=fid, path=path, partition_path=bucket.partition, prev_commit=base_instant,
            num_writes=remaining_rows if first else 0, num_deletes=remaining_deletes if first else 0,
            num_update_writes=int(updated) if first else 0,
            num_inserts=(remaining_rows - int(updated)) if first else 0,
            total_write_bytes=len(payload), file_size_in_bytes=len(payload),
            runtime_stats=RuntimeStats(total_upsert_time=int((time.monotonic() - start) * 1000)),
            log_version=written_version, log_offset=0,
            base_file=bucket.base_file.rsplit("/", 1)[-1] if bucket.base_file and not new_group else "",
            log_files=[name],
        ))
    return stats
