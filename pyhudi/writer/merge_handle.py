"""The merge handle (copy-on-write): a file group's base file rewritten as a new version with the batch's
updates applied, its deletes removed and its topped-up inserts appended; it never splits (as Hudi's
HoodieMergeHandle). Old records keep their commit time and sequence number; only the file name changes.

A file version holds each key once, as Hudi's merge handle keys its incoming records by record key
(`keyToNewRecords`), whether or not the batch was combined (hoodie.combine.before.upsert / .insert): without
combining, two incoming records of one key are still reduced to one here. Hudi keeps the last one its
iterator yields, comparing no ordering values; on Spark that is the shuffle's arrival order, so Hudi's own
outcome is arbitrary. pyhudi keeps the one `dedupe` keeps, so the outcome does not depend on the engine or
the arrival order: the greatest precombine value, ties (and tables without a precombine field) to the last
received, which in-process is input order (Hudi's rule) and on Spark the arrival order. Only an insert into
a small file with hoodie.merge.allow.duplicate.on.inserts (Hudi's HoodieConcatHandle) keeps every record.

A task merges its update buckets a batch of files at a time. A write spread over hundreds of partitions
rewrites hundreds of small files with a few incoming records each, where a file's share of Arrow calls
(matching keys, meta columns, row order; some thirty calls of ~10-20 us each whatever the row count) cost
more than its data. A batch makes those calls once for all its files, on (file, key) pairs; only reading
the old file and writing the new one stay per file. A batch closes once its old records reach
MERGE_BATCH_BYTES (Arrow bytes), so a large file is merged alone, as before.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pyhudi.errors import WriteRolledBackError
from pyhudi.index.bloom_filter import MAX_KEY_FOOTER, MIN_KEY_FOOTER, BloomFilter, FooterFilter
from pyhudi.index.key_cache import keys_of, remember_batch, remember_written
from pyhudi.index.key_order import java_min_max, java_min_max_by_range
from pyhudi.index.murmur import key_positions
from pyhudi.io.base_file import (
    WHOLE_READ_MAX_BYTES,
    bloom_shape,
    encode_file,
    extended_bloom,
    filter_extends,
    fresh_bloom,
    fresh_blooms,
    keys_of_files,
    read_open_parquet,
    read_parquet,
    write_base_file,
)
from pyhudi.io.column_encoding import hazards_by_range
from pyhudi.io.lance_file import is_lance_file
from pyhudi.io.process_cache import pooled_table
from pyhudi.io.schema import conform_table, has_column
from pyhudi.io.splice import append_row_groups, file_name_chunks, may_append
from pyhudi.io.write_pool import WRITE_POOL
from pyhudi.io.written_tables import written_table
from pyhudi.model.file_names import base_file_name, join_path
from pyhudi.model.write_stat import RuntimeStats, WriteStat
from pyhudi.storage import Storage
from pyhudi.writer.handles import (
    DELETE_FLAG,
    FILE_NAME,
    RECORD_KEY,
    HandleContext,
    constant_dictionary,
    constant_strings,
    data_only,
    dedupe,
    is_delete,
    meta_table,
)
from pyhudi.writer.markers import create_marker
from pyhudi.writer.operation import WriteOperation
from pyhudi.writer.partitioner import Bucket

# Old records (Arrow bytes) at which a batch closes: hundreds of small files, while a large file (which
# gains nothing from batching) is merged alone; a batch's memory is about three times this at most.
MERGE_BATCH_BYTES = 64 * 1024 * 1024
# Largest file whose fresh bloom filter a batch builds with its other files' (a bigger file's own pass
# amortizes its fixed cost, and its filter, ~43 bytes a key until packed, is built when the file is
# written instead of living with the batch's), and the most inserted keys one hashing pass for extended
# filters holds: its (hashes, keys) int64 matrix is 240 bytes a key at Hudi's 30 hashes, 15.7 MB at
# 65,536 keys.
FRESH_HASHED_MAX = 16384
HASH_PASS_KEYS = 65536
# Smallest old file a top-up appends row groups to (`_append`): splicing costs ~6-10 ms of Python a file
# (three footers parsed, one written), which re-encoding the old records costs at ~13,000 rows of the
# benchmarks' trips (~2 MB); below twice that, rewriting is as fast (measured: 30 partitions of ~400 KB
# files took 1.50 s spliced against 0.66 s rewritten).
APPEND_MIN_BYTES = 4 * 1024 * 1024
_FILE = "__pyhudi_file"
_T = TypeVar("_T")
_KEY = "__pyhudi_key"
_SRC = "__pyhudi_src"  # an incoming row's number in the task's records


@dataclass(frozen=True)
class MergeItem:
    """One update bucket of a task: the row numbers of its incoming records (None: all of them), and the
    write token and partition id its new base file is named and numbered with."""

    bucket: Bucket
    rows: np.ndarray | None
    token: str
    pid: int


@dataclass(frozen=True)
class _Old:
    item: MergeItem
    table: pa.Table  # the old base file's records in the writer's schema
    footer: dict[bytes, bytes] | None


def merge_handles(ctx: HandleContext, storage: Storage, records: pa.Table, items: Iterable[MergeItem]
                  ) -> list[WriteStat]:
    """One write stat per item, in order: each item's rows of `records` merged into its bucket's base file."""
    stats: dict[int, WriteStat] = {}
    batch: list[tuple[int, _Old]] = []

    def merge() -> None:
        stats.update(zip((j for j, _ in batch), _merge_batch(ctx, storage, records, [o for _, o in batch])))
        batch.clear()

    held = 0
    for i, item in enumerate(items):
        old = _appended_or_old(ctx, storage, records, item)
        if isinstance(old, WriteStat):
            stats[i] = old
            continue
        table, footer, nbytes = old
        batch.append((i, _Old(item, table, footer)))
        held += nbytes
        if held >= MERGE_BATCH_BYTES:
            merge()
            held = 0
    if batch:
        merge()
    return [stats[i] for i in range(len(stats))]


def merge_handle(ctx: HandleContext, storage: Storage, bucket: Bucket, incoming: pa.Table, token: str,
                 pid: int) -> WriteStat:
    return merge_handles(ctx, storage, incoming, [MergeItem(bucket, None, token, pid)])[0]


@dataclass
class _Merge:
    """A batch's merge decided, over the concatenated old rows and incoming rows (each tagged with its
    file's position in the batch): which old rows go, which incoming rows are written, in what order."""

    out_order: np.ndarray  # rows of [old rows; fresh rows] in output order, files one after another
    out_file: np.ndarray  # file of each output row
    fresh_rows: np.ndarray  # incoming rows written (replacements, then inserts, per file)
    fresh_file: np.ndarray
    fresh_seq: np.ndarray  # a fresh row's number among its file's fresh rows (its sequence number)
    inserts: np.ndarray  # incoming rows inserted (ascending, so grouped by file)
    deleted_file: np.ndarray  # file of each deleted old row
    replaced_file: np.ndarray  # file of each replaced old row


def _merge_batch(ctx: HandleContext, storage: Storage, records: pa.Table, batch: Sequence[_Old]) -> list[WriteStat]:
    start = time.monotonic()
    k = len(batch)
    old = _concat([o.table for o in batch])
    old_file = np.repeat(np.arange(k), [o.table.num_rows for o in batch])
    incoming, in_file = _incoming(ctx, records, [o.item.rows for o in batch])
    distinct = None  # whether the batch's incoming keys are known to be distinct (None: not yet asked)
    if ctx.combine or not _concatenates(ctx):
        if k > 1:
            distinct = _distinct(incoming.column(RECORD_KEY))
        incoming, in_file = _dedupe_per_file(incoming, in_file, k, ctx.precombine_field, distinct)
    m = _decide(ctx, old, old_file, incoming, in_file, k, distinct)
    names = [base_file_name(o.item.bucket.file_id, o.item.token, ctx.instant) for o in batch]
    out = _merged(ctx, old, records, incoming.column(_SRC).to_numpy(), m, [o.item.pid for o in batch],
                  np.bincount(old_file, minlength=k))
    inserted_keys = incoming.column(RECORD_KEY).take(pa.array(m.inserts, type=pa.int64()))
    counts = [np.bincount(f, minlength=k) for f in (m.out_file, in_file[m.inserts], m.deleted_file, m.replaced_file)]
    out_at, ins_at = (np.concatenate([[0], np.cumsum(c)]) for c in counts[:2])
    bounds = java_min_max_by_range(out.column(RECORD_KEY), out_at) if k > 1 else [None]
    blooms = _blooms(ctx, [o.footer for o in batch], out.column(RECORD_KEY), out_at, inserted_keys, ins_at)
    hazards = hazards_by_range(out, out_at) if k > 1 else None
    shared = (time.monotonic() - start) / k
    stats = []
    written = []
    for i, o in enumerate(batch):
        began = time.monotonic()
        bucket = o.item.bucket
        rows = _named(out.slice(out_at[i], out_at[i + 1] - out_at[i]), ctx, names[i])
        bloom = blooms[i]
        create_marker(storage, ctx.instant, bucket.partition, names[i], "MERGE", ctx.marking)
        path = join_path(bucket.partition, names[i])
        size, footer = write_base_file(storage, path, rows, ctx.avro_schema_with_meta, ctx.parquet,
                                       mid_write_fault="write.mid_file", bloom=bloom, key_bounds=bounds[i],
                                       hazards=None if hazards is None else hazards[i])
        written.append((path, int(out_at[i]), rows.num_rows, footer, size))
        stats.append(WriteStat(
            file_id=bucket.file_id, path=path, partition_path=bucket.partition,
            prev_commit=bucket.base_instant or "null", num_writes=rows.num_rows,
            num_deletes=int(counts[2][i]), num_update_writes=int(counts[3][i]), num_inserts=int(counts[1][i]),
            total_write_bytes=size, file_size_in_bytes=size,
            runtime_stats=RuntimeStats(total_upsert_time=int((shared + time.monotonic() - began) * 1000)),
        ))
    # the next write need not read them back, nor look up what they replaced
    remember_batch(storage, out, written, ctx.keep_tables, [_base_file(o.item.bucket) for o in batch])
    return stats


def _merged(ctx: HandleContext, old: pa.Table, records: pa.Table, src: np.ndarray, m: _Merge, pids: list[int],
            old_counts: np.ndarray) -> pa.Table:
    """The batch's new files' rows, one file after another, without the file name column (`_named` adds
    each file's): old records carried over, fresh records (`records` rows `src[m.fresh_rows]`) laid out
    with new meta columns, in `m.out_order`. A file name column built for the batch's rows would be a
    string per row to copy, reorder and hash again in the encoder, to say one value per file.
    `old_counts`: each file's old rows (`old` holds them one file after another). Where the files' tables
    are kept (`ctx.keep_tables`), the rows are one table of their own in pyhudi's pool, which the kept
    tables slice (`key_cache.remember_batch`)."""
    if len(m.fresh_rows):
        n = len(m.fresh_rows)
        picked = pa.array(src[m.fresh_rows], type=pa.int64())
        fresh = meta_table(ctx, data_only(records).take(picked), pa.nulls(n, pa.string()),
                           _per_row([f"{ctx.instant}_{pid}_" for pid in pids], m.fresh_file), m.fresh_seq)
    else:  # pure deletes carry key columns only; nothing new is written
        fresh = ctx.file_schema.empty_table()
    fresh = fresh.drop_columns([FILE_NAME]).cast(old.schema)
    if not len(m.deleted_file) and not len(m.replaced_file):
        out = _topped_up(old, fresh, old_counts, np.bincount(m.fresh_file, minlength=len(pids)))
        return pooled_table(out) if ctx.keep_tables else out
    return pc.take(pa.concat_tables([old, fresh]), pa.array(m.out_order, type=pa.int64()), memory_pool=WRITE_POOL)


def _topped_up(old: pa.Table, inserts: pa.Table, old_counts: np.ndarray, insert_counts: np.ndarray) -> pa.Table:
    """`m.out_order` of a batch whose files only gain inserts (no old row replaced or deleted): each
    file's old rows as they were, then its inserts, laid out from slices of the two tables without a copy.
    An insert stream tops its small files up this way on every write, and the take copied every old row."""
    pieces = []
    o = i = 0
    for n_old, n_new in zip(old_counts.tolist(), insert_counts.tolist()):
        pieces += [old.slice(o, n_old), inserts.slice(i, n_new)]
        o, i = o + n_old, i + n_new
    return pa.concat_tables(pieces)


def _named(rows: pa.Table, ctx: HandleContext, name: str) -> pa.Table:
    """A file's rows with its file name column back in its place, as the one-entry dictionary column the
    create handle writes (`handles.file_layout`: the encoder writes the same bytes as for strings)."""
    idx = ctx.file_schema.get_field_index(FILE_NAME)
    column = constant_dictionary(name, rows.num_rows)
    return rows.add_column(idx, ctx.file_schema.field(idx).with_type(column.type), column)


def _decide(ctx: HandleContext, old: pa.Table, old_file: np.ndarray, incoming: pa.Table, in_file: np.ndarray,
            k: int, distinct: bool | None = None) -> _Merge:
    deletes_mask = is_delete(incoming)
    if _concatenates(ctx):  # HoodieConcatHandle: no incoming record replaces a stored one
        idx = np.full(old.num_rows, -1, dtype=np.int64)
    else:
        idx = _matches(old.column(RECORD_KEY), old_file, incoming.column(RECORD_KEY), in_file, k, distinct)
    matched = idx >= 0
    deleted_old = np.zeros(old.num_rows, dtype=bool)
    replaced_old = np.zeros(old.num_rows, dtype=bool)
    if matched.any():
        hit = np.nonzero(matched)[0]
        is_del = deletes_mask[idx[hit]]
        keep_old = _stored_wins(ctx, old, incoming, hit, idx[hit]) & ~(
            is_del & (ctx.operation is WriteOperation.DELETE))
        deleted_old[hit[is_del & ~keep_old]] = True
        replaced_old[hit[~is_del & ~keep_old]] = True
    used_incoming = np.zeros(incoming.num_rows, dtype=bool)
    used_incoming[idx[matched]] = True
    inserts = np.nonzero(~used_incoming & ~deletes_mask)[0]
    replaced = np.nonzero(replaced_old)[0]
    # A file's fresh rows: its replacements (in old row order), then its inserts (in incoming order).
    fresh_rows = np.concatenate([idx[replaced], inserts]).astype(np.int64)
    owners = np.concatenate([old_file[replaced], in_file[inserts]])
    by_file = np.argsort(owners, kind="stable")
    fresh_rows, fresh_file = fresh_rows[by_file], owners[by_file]
    fresh_at = np.empty(len(by_file), dtype=np.int64)
    fresh_at[by_file] = np.arange(len(by_file))  # where each replacement / insert landed among fresh rows
    firsts = np.searchsorted(fresh_file, np.arange(k))
    fresh_seq = np.arange(len(fresh_rows)) - firsts[fresh_file]
    # Output: a file's old rows in file order (replaced ones in place, deleted ones gone), then its inserts.
    n_old = old.num_rows
    order = np.arange(n_old, dtype=np.int64)
    order[replaced] = n_old + fresh_at[:len(replaced)]
    kept = ~deleted_old
    out_order = np.concatenate([order[kept], n_old + fresh_at[len(replaced):]])
    out_file = np.concatenate([old_file[kept], in_file[inserts]])
    grouped = np.argsort(out_file, kind="stable")
    return _Merge(out_order[grouped], out_file[grouped], fresh_rows, fresh_file, fresh_seq, inserts,
                  old_file[deleted_old], old_file[replaced_old])


def _concatenates(ctx: HandleContext) -> bool:
    """Hudi's HoodieConcatHandle: an insert with hoodie.merge.allow.duplicate.on.inserts appends its records to
    the old ones, duplicate keys and all."""
    return ctx.operation in (WriteOperation.INSERT, WriteOperation.BULK_INSERT) and ctx.allow_duplicate_on_inserts


def _blooms(ctx: HandleContext, footers: Sequence[dict[bytes, bytes] | None], out_keys: pa.ChunkedArray,
            out_at: np.ndarray, inserted: pa.ChunkedArray, ins_at: np.ndarray
            ) -> list[BloomFilter | FooterFilter | None]:
    """Each new file's bloom filter: the old filter extended by the file's inserted keys where its shape
    still fits the file (`extended_bloom`), else a fresh filter of all its keys; None leaves it to the
    writer. Keys are hashed one pass per filter shape for the whole batch: a hashing pass costs ~0.5 ms
    of numpy calls however few its keys, and a batch of a spread write holds hundreds of small files,
    each gaining a few keys or crossing its filter's power of two (a fresh build of its every key)."""
    k = len(footers)
    if not ctx.parquet.with_bloom:
        return [None] * k
    sizes = np.diff(out_at)
    extends = [i for i in range(k) if filter_extends(footers[i], ctx.parquet, int(sizes[i]))]
    hashed = _hash_by_shape(ctx, inserted, ins_at, extends, sizes)
    blooms: list[BloomFilter | FooterFilter | None] = [None] * k
    for i in extends:
        blooms[i] = extended_bloom(footers[i], inserted.slice(ins_at[i], ins_at[i + 1] - ins_at[i]), ctx.parquet,
                                   int(sizes[i]), hashed.get(i))
    if out_keys.null_count:
        return blooms
    fresh = [i for i in range(k) if blooms[i] is None and 0 < sizes[i] <= FRESH_HASHED_MAX]
    for i, bloom in fresh_blooms(ctx.parquet, out_keys, out_at, fresh).items():
        blooms[i] = bloom
    return blooms


def _hash_by_shape(ctx: HandleContext, keys: pa.ChunkedArray, at: np.ndarray, files: list[int],
                   sizes: np.ndarray) -> dict[int, np.ndarray]:
    """`key_positions` of each file's keys (`keys[at[i]:at[i + 1]]`), for the filter shape its size
    gives it, hashed together with the other files of that shape, at most HASH_PASS_KEYS a pass. A
    file alone in its shape is left out (its filter hashes its keys as cheaply itself)."""
    groups: dict[tuple[int, int], list[int]] = {}
    for i in files:
        if at[i + 1] > at[i]:
            groups.setdefault(bloom_shape(ctx.parquet, int(sizes[i])), []).append(i)
    out: dict[int, np.ndarray] = {}
    for (bits, rounds), members in groups.items():
        while len(members) > 1:
            take = np.cumsum([at[i + 1] - at[i] for i in members]) <= HASH_PASS_KEYS
            part = members[:max(1, int(take.sum()))]
            members = members[len(part):]
            positions = key_positions(keys_of_files(keys, at, part), rounds, bits)
            lo = 0
            for i in part:
                n = int(at[i + 1] - at[i])
                out[i] = positions[:, lo:lo + n]
                lo += n
    return out


def _incoming(ctx: HandleContext, records: pa.Table, rows: list[np.ndarray | None]) -> tuple[pa.Table, np.ndarray]:
    """The columns a merge decides on (key, ordering value, delete flag) of the batch's incoming records,
    grouped by file (one take), each with its row number in `records` (`_SRC`), and each one's file. Only
    the rows written are taken whole, once, by `_merged`: taking every column here too copied each
    incoming row's strings twice."""
    names = dict.fromkeys(c for c in (RECORD_KEY, ctx.precombine_field, DELETE_FLAG) if c and has_column(records, c))
    narrow = records.select(list(names)).append_column(_SRC, pa.array(np.arange(records.num_rows), pa.int64()))
    if len(rows) == 1 and rows[0] is None:
        return narrow, np.zeros(records.num_rows, dtype=np.int64)
    picked = [np.arange(records.num_rows) if r is None else r for r in rows]
    in_file = np.repeat(np.arange(len(rows)), [len(r) for r in picked])
    return narrow.take(pa.array(np.concatenate(picked), type=pa.int64())), in_file


def _concat(tables: list[pa.Table]) -> pa.Table:
    """The batch's old records, one chunk a file: the merge's take reads the chunks in place (pyarrow's
    chunked take), so combining them first would copy every old row once more."""
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables)


def _per_row(values: list[str], file_of_row: np.ndarray) -> pa.Array:
    """Each row's file's value: one Arrow take over the batch (a constant column for one file)."""
    if len(values) == 1:
        return constant_strings(values[0], len(file_of_row))
    return pa.array(values, pa.string()).take(pa.array(file_of_row, type=pa.int64()))


def _matches(old_keys: pa.ChunkedArray | pa.Array, old_file: np.ndarray, new_keys: pa.ChunkedArray | pa.Array,
             in_file: np.ndarray, k: int, distinct: bool | None = None) -> np.ndarray:
    """For each old row, the incoming row of its own file carrying the same key, or -1. `distinct`: what
    `_distinct(new_keys)` says, when the caller asked it already (a hash pass over the batch's keys).

    When every incoming key is distinct (the usual batch), a key alone finds the one incoming row that can
    match, kept only if it belongs to the old row's file: the same answer as matching `<file>\\0<key>`
    pairs, without building those strings for every old row of the batch's files."""
    if k > 1 and (_distinct(new_keys) if distinct is None else distinct):
        idx = pc.fill_null(pc.index_in(old_keys, value_set=new_keys), -1).to_numpy(zero_copy_only=False)
        idx = idx.astype(np.int64)
        hit = np.nonzero(idx >= 0)[0]
        idx[hit[in_file[idx[hit]] != old_file[hit]]] = -1
        return idx
    match = pc.index_in(_match_keys(old_keys, old_file, k), value_set=_match_keys(new_keys, in_file, k))
    return pc.fill_null(match, -1).to_numpy(zero_copy_only=False).astype(np.int64)


def _distinct(keys: pa.ChunkedArray | pa.Array) -> bool:
    """No null and no repeated key (one hash pass)."""
    return not keys.null_count and len(pc.unique(keys)) == len(keys)


def _match_keys(keys: pa.ChunkedArray | pa.Array, file_of_row: np.ndarray, k: int) -> pa.ChunkedArray | pa.Array:
    """Keys a batch matches on: `<file>\\0<key>`, since two partitions (two files) may hold the same key
    under a non-global index. A null key stays null, as a lone file's would."""
    if k == 1:
        return keys
    return pc.binary_join_element_wise(_per_row([f"{i}\0" for i in range(k)], file_of_row), keys, "")


def _dedupe_per_file(incoming: pa.Table, in_file: np.ndarray, k: int, precombine: str | None,
                     distinct: bool | None = None) -> tuple[pa.Table, np.ndarray]:
    """`dedupe` within each file's records; rows stay grouped by file, in file order. `distinct`: as
    `_matches` takes it."""
    if k == 1:
        out = dedupe(incoming, precombine)
        return out, in_file[:out.num_rows]
    if _distinct(incoming.column(RECORD_KEY)) if distinct is None else distinct:  # every key once in the batch
        return incoming, in_file
    at = incoming.schema.get_field_index(RECORD_KEY)
    keyed = incoming.set_column(at, RECORD_KEY, _match_keys(incoming.column(RECORD_KEY), in_file, k)) \
        .append_column(_KEY, incoming.column(RECORD_KEY)).append_column(_FILE, pa.array(in_file, pa.int64()))
    kept = dedupe(keyed, precombine)
    if kept is keyed:  # every (file, key) distinct
        return incoming, in_file
    kept = kept.take(pc.sort_indices(kept.column(_FILE)))  # stable: a file's rows keep dedupe's order
    out = kept.set_column(at, incoming.schema.field(at), kept.column(_KEY)).drop_columns([_KEY, _FILE])
    return out, kept.column(_FILE).to_numpy()


def _read_old(ctx: HandleContext, storage: Storage, bucket: Bucket, splice: bool = False
              ) -> tuple[pa.Table | bytes, int | None]:
    """The old base file's records (its footer metadata as the schema's), or with `splice` and a file of at
    least APPEND_MIN_BYTES its bytes; and for a kept table the bytes it holds, its share of its holding
    (its buffers' size is the holding's; `Table.nbytes` measures a slice, at ~45 us a table of 23 columns),
    else None. A file this process wrote and kept (`io/written_tables`: the same
    columns, footer entries and size a read gives) is not opened, unless its bytes are to be spliced: on an
    object store that saves a GET a merge. A base file deleted since the write was planned is then found
    by the commit's conflict check instead (`transaction/conflicts._check_bases_live`: only a rollback or
    restore deletes a latest base file). Other files are opened once: the size decides, then the file is
    read whole as bytes or as a table (as `read_parquet` reads it, Arrow's threads included)."""
    path = _base_file(bucket)
    kept = written_table(storage.uri(path)) if ctx.keep_tables and not is_lance_file(path) else None
    if kept is not None and not (splice and kept.size >= APPEND_MIN_BYTES):
        return kept.table.replace_schema_metadata(kept.footer), kept.nbytes

    def read() -> pa.Table | bytes:
        if is_lance_file(path):
            return read_parquet(storage, path)
        with storage.open_input_file(path, whole_below=WHOLE_READ_MAX_BYTES) as f:
            if splice and f.size() >= APPEND_MIN_BYTES:
                return f.read()
            return read_open_parquet(storage, f)

    return _with_missing_file(storage, bucket, read), None


def _conformed_old(ctx: HandleContext, old: pa.Table) -> tuple[pa.Table, dict[bytes, bytes] | None]:
    """The old records in the writer's schema without the file name column (every merge writes its own),
    and the old file's footer metadata."""
    # A column the writer schema dropped (allow.auto.evolution.column.drop) is left behind, as Hudi's
    # merge handle rewrites old records into the writer schema.
    target = ctx.file_schema.remove(ctx.file_schema.get_field_index(FILE_NAME))
    names = set(target.names)  # once: `.names` builds a list at every access
    kept = old.select([c for c in old.schema.names if c in names])
    if kept.schema.equals(target):  # parquet keeps required fields non-null: nothing to conform
        return kept.replace_schema_metadata(ctx.file_schema.metadata), old.schema.metadata
    return conform_table(kept, target), old.schema.metadata


def _stored_wins(ctx: HandleContext, old: pa.Table, incoming: pa.Table, old_rows: np.ndarray,
                 new_rows: np.ndarray) -> np.ndarray:
    """DefaultHoodieRecordPayload: the stored record stays when its ordering value is greater."""
    field = ctx.precombine_field
    if not ctx.event_time_ordering or not field or not has_column(old, field) or not has_column(incoming, field):
        return np.zeros(len(old_rows), dtype=bool)
    stored = old.column(field).take(pa.array(old_rows))
    fresh = incoming.column(field).take(pa.array(new_rows)).cast(stored.type)
    greater = pc.greater(stored, fresh).fill_null(False)
    return np.asarray(greater.to_numpy(zero_copy_only=False), dtype=bool)


def _base_file(bucket: Bucket) -> str:
    if not bucket.base_file:
        raise RuntimeError(f"update bucket {bucket.number} for file group {bucket.file_id} has no base file")
    return bucket.base_file


def _with_missing_file(storage: Storage, bucket: Bucket, read: Callable[[], _T]) -> _T:
    try:
        return read()
    except FileNotFoundError as exc:  # listed when the write was planned, deleted since
        raise WriteRolledBackError(
            f"base file {storage.uri(bucket.base_file or '')} was deleted while this write was in flight (a "
            "concurrent rollback or restore of the commit that wrote it, or a clean); the write was rolled "
            "back and nothing of it is visible: retry the write") from exc


# ------------------------------------------------------------------ appending row groups (io/splice)


def _appends(ctx: HandleContext, bucket: Bucket) -> bool:
    """Whether the item's new file may be its old file's row groups plus its records' (`_append`): only
    for HoodieConcatHandle's writes, which keep every old record as it was."""
    return (ctx.parquet.append_row_groups and _concatenates(ctx) and ctx.populate_meta
            and bool(bucket.base_file) and not is_lance_file(bucket.base_file or ""))


def _appended_or_old(ctx: HandleContext, storage: Storage, records: pa.Table, item: MergeItem
                     ) -> WriteStat | tuple[pa.Table, dict[bytes, bytes] | None, int]:
    """The item's file written by appending row groups (`_append`) where it may and pays (`_read_old` gave
    the file's bytes), else the old base file's records to merge, with the bytes they hold."""
    bucket = item.bucket
    old, share = _read_old(ctx, storage, bucket, splice=_appends(ctx, bucket))
    if not isinstance(old, pa.Table):
        appended = _append(ctx, storage, records, item, old)
        if appended is not None:
            return appended
        old = pq.ParquetFile(pa.BufferReader(old)).read()
    return (*_conformed_old(ctx, old), old.get_total_buffer_size() if share is None else share)


def _append(ctx: HandleContext, storage: Storage, records: pa.Table, item: MergeItem, data: bytes
            ) -> WriteStat | None:
    """HoodieConcatHandle's file (the old records as they were, under the new file's name, then the
    inserts) written without decoding the old records: their column chunks are copied
    (`io/splice.append_row_groups`); None when splicing declines and the file is rewritten."""
    old_file = pq.ParquetFile(pa.BufferReader(data))
    if not may_append(old_file.metadata):  # before encoding anything: a Hudi-written file, say
        return None
    began = time.monotonic()
    bucket = item.bucket
    incoming, in_file = _incoming(ctx, records, [item.rows])
    if ctx.combine:
        incoming, _ = _dedupe_per_file(incoming, in_file, 1, ctx.precombine_field)
    inserts = incoming.filter(pa.array(~is_delete(incoming))).column(_SRC).to_numpy()
    n = len(inserts)
    if not n:  # nothing to append (the footer's bloom filter and key range come with the appended rows)
        return None
    name = base_file_name(bucket.file_id, item.token, ctx.instant)
    fresh = meta_table(ctx, data_only(records).take(pa.array(inserts, pa.int64())), constant_strings(name, n), f"{ctx.instant}_{item.pid}_",
                       np.arange(n)).cast(ctx.file_schema)
    old_footer = old_file.metadata.metadata
    fresh_keys = fresh.column(RECORD_KEY)
    old_keys = keys_of(storage.uri(_base_file(bucket)),  # kept when this process wrote or read the file
                       lambda: old_file.read(columns=[RECORD_KEY]).column(RECORD_KEY))
    keys = pa.chunked_array([old_keys, *fresh_keys.chunks], pa.string())
    encoded = encode_file(fresh, ctx.avro_schema_with_meta, ctx.parquet,
                          bloom=_spliced_bloom(ctx, old_footer, fresh_keys, keys),
                          key_bounds=_key_bounds(old_footer, fresh_keys, keys))
    names = file_name_chunks(ctx.file_schema, FILE_NAME, name, ctx.parquet.codec)
    spliced = append_row_groups(data, encoded, names, FILE_NAME)
    if spliced is None:
        return None
    create_marker(storage, ctx.instant, bucket.partition, name, "MERGE", ctx.marking)
    path = join_path(bucket.partition, name)
    storage.write_bytes(path, spliced, mid_write_fault="write.mid_file")
    remember_written(storage, path, pa.table({RECORD_KEY: keys}))
    return WriteStat(
        file_id=bucket.file_id, path=path, partition_path=bucket.partition,
        prev_commit=bucket.base_instant or "null", num_writes=len(keys), num_deletes=0, num_update_writes=0,
        num_inserts=n, total_write_bytes=len(spliced), file_size_in_bytes=len(spliced),
        runtime_stats=RuntimeStats(total_upsert_time=int((time.monotonic() - began) * 1000)),
    )


def _spliced_bloom(ctx: HandleContext, old_footer: dict[bytes, bytes] | None, fresh: pa.ChunkedArray,
                   keys: pa.ChunkedArray) -> BloomFilter | FooterFilter | None:
    """The spliced file's bloom filter: the old one extended by the appended keys where its shape still fits
    the file, else a fresh one over every key (the writer would build it from the appended rows alone)."""
    if not ctx.parquet.with_bloom or keys.null_count:
        return None
    extended = extended_bloom(old_footer, fresh, ctx.parquet, len(keys))
    return extended if extended is not None else fresh_bloom(ctx.parquet, keys)


def _key_bounds(old_footer: dict[bytes, bytes] | None, fresh: pa.ChunkedArray, keys: pa.ChunkedArray
                ) -> tuple[str, str] | None:
    """The spliced file's min/max record keys: the old footer's bounds with the fresh keys' (Java's order),
    or every key's when the old footer has none."""
    footer = old_footer or {}
    lo, hi = footer.get(MIN_KEY_FOOTER.encode()), footer.get(MAX_KEY_FOOTER.encode())
    if lo is None or hi is None:
        return java_min_max(keys)
    fresh_bounds = java_min_max(fresh)
    ends = [lo.decode(), hi.decode(), *(fresh_bounds or ())]
    return java_min_max(pa.array(ends, pa.string()))
