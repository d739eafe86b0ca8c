"""Write handles: the code that runs in Spark executors and writes base files.

One Spark partition is one bucket (see routing.py). An UPDATE bucket runs a
merge handle: it rewrites its file group's base file as a new version with
updates applied, deletes removed and topped-up inserts appended, and never
splits (as in Hudi). An INSERT bucket runs a create handle, which rolls over
to `<prefix>-1`, `<prefix>-2`, ... whenever the next file would pass the max
size. Every data file gets its marker first. Only write stats leave the task.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyhudi.index.key_cache import remember_written
from pyhudi.io.base_file import (
    ParquetSettings,
    bloom_overhead,
    estimate_bytes_per_row,
    every_nth,
    proportional,
    write_within,
)
from pyhudi.io.schema import conform_table, has_column
from pyhudi.io.write_pool import WRITE_POOL
from pyhudi.model.file_names import base_file_name, file_id, join_path
from pyhudi.model.write_stat import RuntimeStats, WriteStat
from pyhudi.storage import Storage
from pyhudi.writer.config import SizingConfig
from pyhudi.writer.markers import Marking, create_marker
from pyhudi.writer.operation import WriteOperation
from pyhudi.writer.partitioner import Bucket

COMMIT_TIME = "_hoodie_commit_time"
SEQNO = "_hoodie_commit_seqno"
RECORD_KEY = "_hoodie_record_key"
PARTITION = "_hoodie_partition_path"
FILE_NAME = "_hoodie_file_name"
META_COLUMNS = (COMMIT_TIME, SEQNO, RECORD_KEY, PARTITION, FILE_NAME)
DELETE_FLAG = "_pyhudi_delete"
SALT = "_pyhudi_salt"
IS_UPDATE = "_pyhudi_is_update"  # the index located the key in this file group
STAT_SCHEMA = pa.schema([("stat", pa.string())])
ROLLOVER_TARGET = 0.97
# Rows a create handle encodes to learn how well its records compress, before rolling over.
PROBE_ROWS = 5000
# Arrow bytes of a bucket the planner sized as one file up to which the create handle skips the probe.
PLANNED_ARROW_MAX = 4
# How far past the max size, by estimate, a file may get when a small remainder is spread over the full
# files instead of rolling over into a file of its own; also the slack of the written size over the max.
SPREAD_MAX = 1.05


@dataclass(frozen=True)
class HandleContext:
    """Everything a task needs, shipped once in the closure; small and picklable (the storage pickles as
    its URI and explicit storage options, so executors reach the same store the same way)."""

    storage: Storage
    instant: str
    operation: WriteOperation
    file_schema: pa.Schema  # meta columns + data columns, as written
    avro_schema_with_meta: str
    populate_meta: bool
    precombine_field: str | None
    event_time_ordering: bool
    combine: bool
    allow_duplicate_on_inserts: bool
    sizing: SizingConfig
    parquet: ParquetSettings
    buckets: tuple[Bucket, ...]
    salts: tuple[int, ...]
    # Every record needs a non-null precombine value (writer/prepare.ordering_required); the one-task
    # write checks it in its task, the distributed write in its count job.
    require_ordering: bool = False
    marking: Marking = Marking()  # hoodie.write.markers.type, and the markers a task wrote ahead
    # Timeline layout 2 (Hudi 1.x): a log file is named by the delta commit that writes it, not by its
    # slice's base instant (which its write stat still records as prevCommit).
    logs_named_by_commit: bool = False
    # The in-process engine keeps the tables of the base files it writes for its next merge
    # (io/written_tables); a Spark Python worker's memory is the executor's.
    keep_tables: bool = False

    @property
    def base_uri(self) -> str:
        return self.storage.base_uri


# --------------------------------------------------------------------------- record prep
def dedupe(records: pa.Table, precombine: str | None) -> pa.Table:
    """Keep one record per key: the one with the greatest precombine value (input order breaks ties)."""
    if records.num_rows <= 1:
        return records
    keys = records.column(RECORD_KEY)
    # Usually every key is distinct: one hash pass (pc.unique is cheaper than count_distinct) says so.
    if not keys.null_count and len(pc.unique(keys)) == records.num_rows:
        return records
    order = [(RECORD_KEY, "ascending")]
    if precombine and has_column(records, precombine):
        order.append((precombine, "ascending"))
    positions = pa.array(np.arange(records.num_rows), type=pa.int64())
    with_pos = records.append_column("__pos", positions)
    order.append(("__pos", "ascending"))
    ordered = with_pos.take(_sort_indices_nulls_first(with_pos, order))
    k = ordered.column(RECORD_KEY).combine_chunks()
    last = pc.not_equal(k.slice(1), k.slice(0, len(k) - 1))
    keep = pa.concat_arrays([last.cast(pa.bool_()), pa.array([True])])
    return ordered.filter(keep).drop_columns(["__pos"])


def _sort_indices_nulls_first(table: pa.Table, order: list[tuple[str, str]]) -> pa.Array:
    """Nulls sort first (a null precombine value loses); pyarrow >= 25 takes that per sort key."""
    if int(pa.__version__.split(".")[0]) >= 25:
        return pc.sort_indices(table, sort_keys=[(c, d, "at_start") for c, d in order])
    return pc.sort_indices(table, sort_keys=order, null_placement="at_start")


def is_delete(records: pa.Table) -> np.ndarray:
    if not has_column(records, DELETE_FLAG):
        return np.zeros(records.num_rows, dtype=bool)
    return np.asarray(records.column(DELETE_FLAG).fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)


def without_deletes(records: pa.Table) -> pa.Table:
    """`records` minus delete markers; the table itself (no copy) when there are none."""
    deleting = is_delete(records)
    return records.filter(pa.array(~deleting)) if deleting.any() else records


def with_meta(ctx: HandleContext, records: pa.Table, file_name: str, pid: int, seq_start: int) -> pa.Table:
    """Records in file layout: fresh meta columns for a new write (one file), then the data columns."""
    n = records.num_rows
    return meta_table(ctx, records, constant_strings(file_name, n), f"{ctx.instant}_{pid}_",
                      np.arange(seq_start, seq_start + n, dtype=np.int64))


def file_layout(ctx: HandleContext, records: pa.Table, file_name: str, pid: int, seq_start: int) -> pa.Table:
    """`with_meta` for the parquet encoder only: the commit time and the file name, the same in every row,
    as one-entry dictionary columns. The encoder writes them as it writes a string column it dictionary
    encodes (same schema, dictionary page, RLE indices, statistics: the file's bytes are the same),
    without n copies of the strings to build and hash (measured: the file name column of a 500k-row file
    takes 4.6 instead of 12.6 ms to encode, and 2 MB of indices instead of 35 MB of strings)."""
    n = records.num_rows
    return meta_table(ctx, records, constant_dictionary(file_name, n), f"{ctx.instant}_{pid}_",
                      np.arange(seq_start, seq_start + n, dtype=np.int64), constants=constant_dictionary)


def meta_table(ctx: HandleContext, records: pa.Table, file_names: pa.Array, seq_prefixes: str | pa.Array,
               numbers: np.ndarray, constants: Callable[[str, int], pa.Array] | None = None) -> pa.Table:
    """`with_meta` with a file name and sequence number prefix (`<instant>_<pid>_`) per row, so one call
    lays out the rows of many files (the batched merge). `constants` builds the commit time column
    (`constant_strings` unless given); a column of another type than the file schema's keeps its type."""
    n = records.num_rows
    if ctx.populate_meta:
        meta = {
            COMMIT_TIME: (constants or constant_strings)(ctx.instant, n),
            SEQNO: pc.binary_join_element_wise(
                seq_prefixes, pc.cast(pa.array(numbers, pa.int64()), pa.string(), memory_pool=WRITE_POOL), "",
                memory_pool=WRITE_POOL),
            RECORD_KEY: records.column(RECORD_KEY), PARTITION: records.column(PARTITION),
        }
    else:
        meta = {c: pa.nulls(n, type=pa.string()) for c in (COMMIT_TIME, SEQNO, RECORD_KEY, PARTITION)}
    meta[FILE_NAME] = file_names
    cols = dict(meta)
    data_schema = pa.schema([f for f in ctx.file_schema if f.name not in META_COLUMNS])
    data = _conformed(records.select([c for c in records.schema.names if data_schema.get_field_index(c) >= 0]),
                      data_schema)
    for name in data_schema.names:
        cols[name] = data.column(name)
    schema = ctx.file_schema
    for name in (COMMIT_TIME, FILE_NAME):
        typ = cols[name].type
        if typ != schema.field(name).type:
            schema = schema.set(schema.get_field_index(name), schema.field(name).with_type(typ))
    return pa.table(cols, schema=schema)


def _conformed(table: pa.Table, target: pa.Schema) -> pa.Table:
    """`conform_table`, skipped when it could change nothing (a merge handle conforms a few rows per file,
    thousands of times on a spread write): same schema, flat columns, no null in a required one."""
    if table.schema.equals(target) and not any(pa.types.is_nested(f.type) for f in target) and \
            all(f.nullable or not table.column(f.name).null_count for f in target):
        return table
    return conform_table(table, target)


def constant_strings(value: str, n: int) -> pa.Array:
    """`n` copies of `value` as an Arrow string column, without a Python list of n references."""
    return pa.repeat(pa.scalar(value, pa.string()), n, memory_pool=WRITE_POOL)


def constant_dictionary(value: str, n: int) -> pa.DictionaryArray:
    """`n` copies of `value` as a one-entry dictionary column (indices all 0): see `file_layout`. The
    indices are a slice of one shared array of zeros (immutable), not a new array per file."""
    return pa.DictionaryArray.from_arrays(_zeros(n), pa.array([value], pa.string()))


_ZEROS = pa.array(np.zeros(1 << 16, dtype=np.int32))  # numpy's buffer, no Arrow pool's


def _zeros(n: int) -> pa.Array:
    return _ZEROS.slice(0, n) if n <= len(_ZEROS) else pa.array(np.zeros(n, dtype=np.int32))


def data_only(records: pa.Table) -> pa.Table:
    drop = [c for c in (DELETE_FLAG, SALT, IS_UPDATE) if has_column(records, c)]
    return records.drop_columns(drop)


# --------------------------------------------------------------------------- create handle
def create_handle(ctx: HandleContext, storage: Storage, bucket: Bucket, records: pa.Table, token: str,
                  pid: int, first_rollover: int = 0, keep_tail: bool = False) -> tuple[list[WriteStat], pa.Table | None]:
    """Write `records` as new file groups `<prefix>-N`, rolling over before a file passes the max size.

    With `keep_tail`, a last partial file is not written but returned, so a streaming caller
    (bulk_insert) can top it up with later rows.
    """
    start = time.monotonic()
    if ctx.combine:
        records = dedupe(records, ctx.precombine_field)
    records = data_only(without_deletes(records))
    if records.num_rows == 0:
        return [], None
    bound = _uncompressed_bytes_per_row(ctx, records, pid)
    per_row: float | None = bound
    if records.num_rows * bound > rollover_chunks_budget(ctx.sizing.max_file_size, records.num_rows, ctx.parquet):
        # It may need more than one file: measure how well it compresses to know where to roll over.
        planned = not keep_tail and _planned_one_file(ctx, bucket, records)
        per_row = None if planned else _probe(ctx, records, pid)
    stats: list[WriteStat] = []
    offset = 0
    i = 0
    while offset < records.num_rows:
        remaining = records.num_rows - offset
        if bucket.fixed_file_id or per_row is None:
            rows = remaining
        else:
            rows = rollover_chunks(remaining, per_row, ctx.sizing.max_file_size, ctx.parquet,
                                   ctx.sizing.small_file_limit)[0]
        if keep_tail and per_row is not None and rows == remaining and \
                remaining * per_row < ctx.sizing.max_file_size - file_overhead(remaining, ctx.parquet):
            return stats, records.slice(offset)  # not a full file yet: the caller tops it up later
        fid = created_file_id(bucket, first_rollover + i)
        name = base_file_name(fid, token, ctx.instant)
        path = join_path(bucket.partition, name)
        limit = 1 << 62 if bucket.fixed_file_id else int(size_limit(ctx.sizing.max_file_size, rows, ctx.parquet)
                                                         * SPREAD_MAX)

        def make(n: int, start: int = offset, fname: str = name) -> pa.Table:
            return file_layout(ctx, records.slice(start, n), fname, pid, start)

        create_marker(storage, ctx.instant, bucket.partition, name, "CREATE", ctx.marking)
        size, rows, written, footer = write_within(storage, path, make, rows, limit, ctx.avro_schema_with_meta,
                                                   ctx.parquet, per_row or bucket.record_size,
                                                   mid_write_fault="write.mid_file", shrink=_resplit(ctx, remaining))
        remember_written(storage, path, written, footer if ctx.keep_tables else None, size)
        stats.append(WriteStat(
            file_id=fid, path=path, partition_path=bucket.partition, num_writes=rows, num_inserts=rows,
            total_write_bytes=size, file_size_in_bytes=size,
            runtime_stats=RuntimeStats(total_create_time=int((time.monotonic() - start) * 1000)),
        ))
        # A sample of a few thousand rows compresses worse than a whole file; learn from the real file.
        per_row = max(1.0, (size - file_overhead(rows, ctx.parquet)) / rows)
        offset += rows
        i += 1
    return stats, None


def _planned_one_file(ctx: HandleContext, bucket: Bucket, records: pa.Table) -> bool:
    """Whether the planner sized this bucket as one file (`Bucket.record_size`: at most max / record size
    records, routing's variance aside) and its data's Arrow bytes stay within a few files: the create
    handle then skips the probe and encodes the file straight away, re-splitting only if it comes out too
    big (the planner's record size, from earlier commits' bytes and records or the first write's sample,
    includes each file's footer share, so a file rarely does). At 1 MB files the probe encoded about half
    a file. The Arrow bound keeps a planner size far too low (Hudi's 1,024-byte default on wide records)
    from encoding many files' worth to learn it."""
    max_size = ctx.sizing.max_file_size
    return bucket.record_size > 0 and records.num_rows * bucket.record_size <= max_size * SPREAD_MAX \
        and records.nbytes <= max_size * PLANNED_ARROW_MAX


def _probe(ctx: HandleContext, records: pa.Table, pid: int) -> float:
    """Bytes a row of `records` takes in a file, from an evenly spread sample encoded as the file's
    columns: encoding the first 20,000 rows cost as much as the file itself at 1-8 MB."""
    k = min(records.num_rows, PROBE_ROWS)
    probe = file_layout(ctx, every_nth(records, records.num_rows / k, k), "x" * 80, pid, 0)
    return estimate_bytes_per_row(probe, ctx.parquet, sample_rows=k)


def _resplit(ctx: HandleContext, remaining: int) -> Callable[[int, int, int], int]:
    """The rows a create handle retries a too-big file with, `remaining` rows being left to write: the
    first chunk of `rollover_chunks` at the size per row the attempt measured (so a remainder spreads as
    a probed plan would spread it), never more than proportionally fewer rows."""
    def shrink(rows: int, size: int, limit: int) -> int:
        per_row = max(1.0, (size - file_overhead(rows, ctx.parquet)) / rows)
        chunk = rollover_chunks(remaining, per_row, ctx.sizing.max_file_size, ctx.parquet,
                                ctx.sizing.small_file_limit)[0]
        return min(chunk, proportional(rows, size, limit))
    return shrink


def created_file_id(bucket: Bucket, rollover: int) -> str:
    """The file group id of a create handle's `rollover`-th file (a fixed id, as BUCKET's, never rolls)."""
    return bucket.file_id if bucket.fixed_file_id else file_id(bucket.file_id, rollover)


def file_overhead(n: int, settings: ParquetSettings) -> int:
    """Bytes of a file that do not grow with its rows: the bloom filter and the footer."""
    return bloom_overhead(min(n, settings.bloom_num_entries + 1), settings) + 4096


def size_limit(max_file_size: int, n: int, settings: ParquetSettings) -> int:
    """The hard size limit of a rolled file: the max, unless the fixed footer (mostly the bloom filter)
    leaves less than half of it for data; then footer + half the max, so files never degenerate into
    one-record files (shrink hoodie.index.bloom.num_entries for small files instead)."""
    overhead = file_overhead(n, settings)
    if overhead > max_file_size // 2:
        _warn_overhead(max_file_size, overhead)
        return overhead + max_file_size // 2
    return max_file_size


def _warn_overhead(max_file_size: int, overhead: int) -> None:
    import warnings

    warnings.warn(
        f"the file footer ({overhead} B, mostly the bloom filter of hoodie.index.bloom.num_entries) is more than "
        f"half of the max file size {max_file_size} B; files will hold about half that in data. Lower "
        "hoodie.index.bloom.num_entries or raise the max file size.", UserWarning, stacklevel=3)


def rollover_chunks_budget(max_file_size: int, n: int, settings: ParquetSettings) -> float:
    """Data bytes a rolled file aims for. Sizes are estimates (compression varies along a file): aim a
    little below the max, but leave at least half of it for data however large the footer is."""
    return max(max_file_size * ROLLOVER_TARGET - file_overhead(n, settings), max_file_size * 0.5)


def _uncompressed_bytes_per_row(ctx: HandleContext, records: pa.Table, pid: int) -> float:
    """An upper bound of a row's encoded size: its Arrow bytes plus the meta columns still to add.
    When even this fits one file, the records need no sample encoding to plan rollover."""
    meta = len(ctx.instant) * 2 + len(str(pid)) + 12 + 100  # commit time, seqno, file name
    return records.nbytes / max(1, records.num_rows) + meta


def rollover_chunks(n: int, bytes_per_row: float, max_file_size: int, settings: ParquetSettings,
                    small_file_limit: int = 0) -> list[int]:
    """Rows per file so that no file passes the max size; the last file takes the remainder.

    A remainder that would make a small file is spread over the full files instead when they stay
    within `SPREAD_MAX` of the max with it. The planner sizes an insert bucket as max size / record size
    (Hudi's rule), so about half its buckets (records are routed by key hash, and sizes are estimates)
    land a little past the max: Hudi's create handle, and this one before, rolled over there into a file
    of a few dozen records beside every full one (a deliberate difference: files up to 5% over the max
    instead of a small file each)."""
    budget = rollover_chunks_budget(max_file_size, n, settings)
    fits = int(budget / max(bytes_per_row, 1.0))
    per_file = max(1, fits)
    if n <= per_file:
        return [n]
    full, rest = divmod(n, per_file)
    if rest and rest * bytes_per_row < small_file_limit:
        even = -(-n // full)
        if even * bytes_per_row + file_overhead(even, settings) <= max_file_size * SPREAD_MAX:
            return [even] * (n // even) + ([n % even] if n % even else [])
    return [per_file] * full + ([rest] if rest else [])
