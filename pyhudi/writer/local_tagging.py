"""Index lookup and workload profile for Arrow records, in-process (the twin of tagging.py).

Reads go through the engine as tasks (one per file whose keys are read); matching is Arrow compute:

* SIMPLE / GLOBAL_SIMPLE: `_hoodie_record_key` of the latest base files of the partitions the batch
  touches (all partitions for a global index), cached per file (`stored_keys`: base files never change);
  the one-task write (single_task.py) looks its keys up with the same `locate_in_files`;
* BLOOM / GLOBAL_BLOOM: a file is read only if one of the batch's keys of its partition lies within its
  footer key range (Java's string order, key_order) and passes its bloom filter; survivors are confirmed
  against the file's keys;
* INMEMORY: keys of base and log files of the latest merged slices (index/log_index.log_file_keys);
* BUCKET: each key's bucket (index/bucket.bucket_ids) and the partition's file group of that bucket.

A global index moves a record whose key lives in another partition: into that partition, or with
`hoodie.*.update.partition.path` a delete there and an insert in the new one (Hudi's global index). On a
merge-on-read table its base file hits in groups with log files are confirmed against the merged slice
(index/merged_keys.py): a copy a log block deleted is no location.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pyhudi.engine.base import Engine, TaskInfo, task_count
from pyhudi.index import bucket as bucket_index
from pyhudi.index import log_index, merged_keys
from pyhudi.index.bloom_filter import MAX_KEY_FOOTER, MIN_KEY_FOOTER, footer_probe
from pyhudi.index.key_cache import KEY_FIELD, cached_keys, keys_of, stored_keys
from pyhudi.index.key_order import utf16_sort_keys
from pyhudi.index.locations import LOC_FILE_ID, LOC_INSTANT
from pyhudi.io.base_file import parallel_read
from pyhudi.keygen.spec import PARTITION_COL, RECORD_KEY_COL
from pyhudi.reader.log_merge import MergeSpec
from pyhudi.storage import Storage
from pyhudi.view.file_system_view import FileSystemView
from pyhudi.writer.config import WriteConfig
from pyhudi.writer.handles import DELETE_FLAG, IS_UPDATE
from pyhudi.writer.operation import WriteOperation
from pyhudi.writer.profile import WorkloadProfile

BUCKET_COL = "_pyhudi_bucket_id"


@dataclass(frozen=True)
class KeyFile:
    """A file whose keys may locate records: its file group, slice instant and the files to read.
    `log_paths` add their keys (INMEMORY); `merge_logs` instead confirm base file hits against the slice
    merged with them (a global index on merge-on-read)."""

    partition: str
    file_id: str
    instant: str
    base_path: str | None
    log_paths: tuple[str, ...] = ()
    merge_logs: tuple[str, ...] = ()


def tag_records(engine: Engine, storage: Storage, cfg: WriteConfig, records: pa.Table,
                view: FileSystemView | None) -> tuple[pa.Table, WorkloadProfile]:
    """Records with IS_UPDATE and their location (LOC_FILE_ID, LOC_INSTANT; null for inserts), deletes of
    unknown keys dropped, and the workload profile."""
    op = cfg.operation
    committed = view is not None and bool(view.committed_instants)
    if cfg.index.type == "BUCKET" and view is not None and not op.is_overwrite:
        bucket_index.check_layout(view, cfg.index.bucket_num, pc.unique(records.column(PARTITION_COL)).to_pylist(),
                                  hash_fields=cfg.bucket_hash_fields)
    if cfg.index.type == "BUCKET" and op is not WriteOperation.BULK_INSERT:
        # An overwrite replaces the partitions' file groups: every record goes to a new bucket file group
        # (Hudi's bucket partitioner with isOverwrite), never into an existing group it then replaces.
        return _tag_bucket(cfg, records, view if committed and not op.is_overwrite else None)
    n = records.num_rows
    if op is WriteOperation.BULK_INSERT or not (op.needs_tagging and committed):
        none = pa.nulls(n, pa.string())
        records = _with_location(records, none, none)
        records = _without_deletes(records)
        return records, profile_of(op, records)
    assert view is not None
    fids, insts, parts = _locate(engine, storage, cfg, records, view)
    records = _with_location(records, fids, insts)
    if cfg.index.is_global:
        records = _stay_where_outranked(engine, storage, cfg, view, records, parts)
        records = _global_moves(records, parts, cfg.index.update_partition_path)
    kept = pc.or_(pc.is_valid(records.column(LOC_FILE_ID)), pc.invert(records.column(DELETE_FLAG)))
    if kept.null_count or not pc.all(kept).as_py():  # no delete of an unknown key: no copy of every column
        records = records.filter(kept)
    return records, profile_of(op, records)


def _without_deletes(records: pa.Table) -> pa.Table:
    """Records minus delete markers; the table itself (no copy of every column) when there are none."""
    flags = records.column(DELETE_FLAG)
    if not flags.null_count and not pc.any(flags).as_py():
        return records
    return records.filter(pc.invert(flags))


def _with_location(records: pa.Table, fids: pa.Array, insts: pa.Array) -> pa.Table:
    return (records.append_column(LOC_FILE_ID, fids).append_column(LOC_INSTANT, insts)
            .append_column(IS_UPDATE, pc.is_valid(fids)))


def profile_of(op: WriteOperation, records: pa.Table) -> WorkloadProfile:
    """Inserts per partition and updates per file group (one group-by)."""
    profile = WorkloadProfile(operation_type=op.operation_type)
    if not records.num_rows:
        return profile
    counts = pa.table({"p": records.column(PARTITION_COL), "f": records.column(LOC_FILE_ID),
                       "i": records.column(LOC_INSTANT)}).group_by(["p", "f", "i"], use_threads=False) \
        .aggregate([([], "count_all")])
    for part, fid, inst, n in zip(*(counts.column(c).to_pylist() for c in ("p", "f", "i", "count_all"))):
        profile.count(part, fid, inst, n)
    return profile


# --------------------------------------------------------------------------- lookup
def _key_files(cfg: WriteConfig, view: FileSystemView, partitions: Sequence[str]) -> list[KeyFile]:
    if cfg.index.type == "INMEMORY":
        return [KeyFile(s.partition, s.file_id, s.base_instant, s.base_file.path if s.base_file else None,
                        tuple(lf.path for lf in s.log_files))
                for p in partitions for s in view.latest_merged_file_slices(p)]
    files = [KeyFile(bf.partition, bf.file_id, bf.instant, bf.path)
             for p in partitions for bf in view.latest_base_files(p)]
    if cfg.index.is_global and cfg.table.is_mor:
        return _with_merge_logs(files, view, partitions)
    return files


def _with_merge_logs(files: list[KeyFile], view: FileSystemView, partitions: Sequence[str]) -> list[KeyFile]:
    """Each base file's group's log files (of its merged slice, pending compaction's logs included), so
    its hits are confirmed against the merged view; base-only groups stay base file lookups."""
    logs: dict[tuple[str, str, str | None], tuple[str, ...]] = {
        (s.partition, s.file_id, s.base_file.path): tuple(lf.path for lf in s.log_files)
        for p in partitions for s in view.latest_merged_file_slices(p) if s.base_file and s.log_files}
    if not logs:
        return files
    return [replace(kf, merge_logs=logs.get((kf.partition, kf.file_id, kf.base_path), ())) for kf in files]


def _locate(engine: Engine, storage: Storage, cfg: WriteConfig, records: pa.Table, view: FileSystemView
            ) -> tuple[pa.Array, pa.Array, pa.Array]:
    """(fileId, instant, partition) where each record's key is stored, null where it is not."""
    touched = view.partitions_of(None if cfg.index.is_global else pc.unique(records.column(PARTITION_COL)).to_pylist())
    files = _key_files(cfg, view, touched)
    spec = merged_keys.liveness_spec(view, cfg.table) \
        if any(kf.merge_logs for kf in files) else None
    return locate_in_files(engine, storage, files, records, global_index=cfg.index.is_global,
                           bloom=cfg.index.type in ("BLOOM", "GLOBAL_BLOOM"),
                           prune_by_ranges=cfg.index.prune_by_ranges, live_spec=spec)


def locate_in_files(engine: Engine, storage: Storage, files: Sequence[KeyFile], records: pa.Table,
                    global_index: bool = False, bloom: bool = False, prune_by_ranges: bool = True,
                    live_spec: MergeSpec | None = None) -> tuple[pa.Array, pa.Array, pa.Array]:
    """(fileId, instant, partition) of the file among `files` storing each record's key (in the record's
    partition unless the index is global), null where none does. A few engine tasks per worker, each a run
    of files (`_runs`); the one-task write passes a sequential engine and its layout's SIMPLE files.
    Hits in a file with `merge_logs` are kept only if its slice merged by `live_spec` still holds them."""
    parts = records.column(PARTITION_COL).combine_chunks()
    keys = records.column(RECORD_KEY_COL).combine_chunks()
    cached = _cached_hits(storage, files, keys) if live_spec is None else None
    if cached is not None:
        return _assign(records.num_rows, parts, keys, *cached, global_index)
    by_part = {} if global_index else _keys_by_partition(parts, keys, {f.partition for f in files})
    all_keys = pc.unique(keys) if global_index else None

    def lookup(kf: KeyFile, _info: TaskInfo) -> list[tuple[KeyFile, pa.Array]]:
        wanted = all_keys if all_keys is not None else by_part.get(kf.partition)
        if wanted is None or not len(wanted):
            return []
        if bloom and kf.base_path is not None:
            found = _bloom_lookup(storage, kf, wanted, prune_by_ranges)
        else:
            found = [(kf, _present(wanted, _file_keys(storage, kf)))]
        if kf.merge_logs and found and len(found[0][1]):
            assert live_spec is not None and kf.base_path is not None
            live = merged_keys.live_among(storage, kf.file_id, kf.base_path, kf.merge_logs, live_spec, found[0][1])
            found = [(kf, live)]
        return found

    def lookup_run(run: Sequence[KeyFile], info: TaskInfo) -> list[tuple[KeyFile, pa.Array]]:
        return [hit for kf in run for hit in lookup(kf, info)]

    found = [(kf, hits) for kf, hits in
             engine.map_tasks(lookup_run, _runs(files, engine.parallelism), description="index lookup") if len(hits)]
    owner = np.repeat(np.arange(len(found)), [len(hits) for _, hits in found])
    hit_keys = pa.chunked_array([hits for _, hits in found], pa.string()).combine_chunks()
    return _assign(records.num_rows, parts, keys, [kf for kf, _ in found], owner, hit_keys, global_index)


def _cached_hits(storage: Storage, files: Sequence[KeyFile], keys: pa.Array
                 ) -> tuple[list[KeyFile], np.ndarray, pa.Array] | None:
    """`_assign`'s hits when this process holds every file's keys (`index/key_cache`: a stream's files,
    written or read by its last writes), found in one pass over them all against the batch's keys instead
    of a lookup per file (a 300-partition stream looks into 300 files a write); a stored key of another
    partition that matches is dropped by `_assign`'s partition-qualified probe. None when a file has log
    files to read or keys not cached: the lookup per file runs then."""
    stored: list[pa.Array] = []
    for kf in files:
        cached = cached_keys(storage.uri(kf.base_path)) if kf.base_path and not kf.log_paths else None
        if cached is None:
            return None
        stored.append(cached)
    if not stored:
        return [], np.zeros(0, np.int64), pa.array([], pa.string())
    column = pa.chunked_array(stored, pa.string())
    hit = pc.is_in(column, value_set=keys).to_numpy(zero_copy_only=False)
    owner = np.repeat(np.arange(len(files)), [len(a) for a in stored])[hit]
    return list(files), owner, column.filter(pa.array(hit)).combine_chunks()


def _runs(files: Sequence[KeyFile], workers: int) -> list[Sequence[KeyFile]]:
    """Consecutive runs of files, a few per worker: a task per file costs more than a small file's lookup
    (a spread write looks into hundreds), and the runs keep the files' order, which `_assign` follows."""
    if not files:
        return []
    size = -(-len(files) // task_count(len(files), workers))
    return [files[i:i + size] for i in range(0, len(files), size)]


def _keys_by_partition(parts: pa.Array, keys: pa.Array, wanted: set[str]) -> dict[str, pa.Array]:
    """The distinct keys of each partition in `wanted`: one group-by over the batch (a filter per
    partition would cost partitions x records on a write spread over many partitions)."""
    grouped = pa.table({"p": parts, "k": keys}).group_by("p", use_threads=False).aggregate([("k", "distinct")])
    lists = grouped.column("k_distinct").combine_chunks()
    return {p: lists[i].values for i, p in enumerate(grouped.column("p").to_pylist()) if p in wanted}


def _bloom_lookup(storage: Storage, kf: KeyFile, wanted: pa.Array, by_ranges: bool
                  ) -> list[tuple[KeyFile, pa.Array]]:
    """BLOOM: the footer read once for the key range and the filter; the key column of the same open
    file read only when candidates survive (and not cached yet), as Hudi's bloom index checks
    candidates against the file's keys. A file whose keys this process holds (it wrote or read them) is
    not opened: the range and the filter only narrow `wanted` to candidates checked against those same
    keys, so matching them directly gives the same hits (a 300-partition stream opened 300 footers a
    write for files it had just written)."""
    assert kf.base_path is not None
    cached = cached_keys(storage.uri(kf.base_path))
    if cached is not None:
        return [(kf, _present(wanted, cached))]
    with storage.open_input_file(kf.base_path) as f:
        threads = parallel_read(storage, f)
        pf = pq.ParquetFile(f, pre_buffer=threads)
        candidates = _bloom_filtered(pf.metadata.metadata or {}, wanted, by_ranges)
        if not len(candidates):
            return []
        stored = keys_of(storage.uri(kf.base_path), lambda: pf.read(columns=[KEY_FIELD], use_threads=threads).column(0))
    return [(kf, _present(candidates, stored))]


def _present(wanted: pa.Array, stored: pa.Array) -> pa.Array:
    """The keys of `wanted` (distinct) that `stored` holds. The hash table is built on the smaller side: a
    micro-batch's few keys against a large file's, or a few stored keys against a large batch."""
    if len(stored) <= len(wanted):
        return wanted.filter(pc.is_in(wanted, value_set=stored))
    return pc.unique(stored.filter(pc.is_in(stored, value_set=wanted)))


def _file_keys(storage: Storage, kf: KeyFile) -> pa.Array:
    arrays = [stored_keys(storage, kf.base_path)] if kf.base_path else []
    for path in kf.log_paths:
        arrays.append(pa.array(log_index.log_file_keys(storage, path), pa.string()))
    if not arrays:
        return pa.array([], pa.string())
    return pa.chunked_array(arrays, pa.string()).combine_chunks() if len(arrays) > 1 else arrays[0]


def _bloom_filtered(meta: dict[bytes, bytes], keys: pa.Array, by_ranges: bool) -> pa.Array:
    """The keys a file may hold: within its footer key range (Java order) and passing its bloom filter."""
    if by_ranges:
        lo, hi = meta.get(MIN_KEY_FOOTER.encode()), meta.get(MAX_KEY_FOOTER.encode())
        if lo is not None and hi is not None:
            order = utf16_sort_keys(keys)
            bounds = utf16_sort_keys(pa.array([lo.decode(), hi.decode()], pa.string()))
            inside = pc.and_(pc.greater_equal(order, bounds[0]), pc.less_equal(order, bounds[1]))
            keys = keys.filter(inside)
    bloom = footer_probe(meta)  # a few keys are probed without decoding the whole (431 KB) filter
    if bloom is not None and len(keys):
        keys = keys.filter(pa.array(bloom.might_contain_many(keys)))
    return keys


def _assign(n: int, parts: pa.Array, keys: pa.Array, files: Sequence[KeyFile], owner: np.ndarray,
            hit_keys: pa.Array, global_index: bool) -> tuple[pa.Array, pa.Array, pa.Array]:
    """Map every record to the file holding its key, given the keys found (`hit_keys`, each of the file
    `files[owner[i]]`, earlier files first where a key is found twice): one hash probe of the batch against
    all hits, not a pass over the batch per file.

    A non-global index wants the first file of the record's own partition. When every record's first
    file holding its key is in its partition (a key stored in no other partition: the usual case), the
    probe by key alone gave that; otherwise the batch is probed again by (partition, key) pairs, the
    partition written as its number among the files' partitions: digits never hold the separator, so
    no partition and key can pass for another pair (a partition value holding it did, as its text)."""
    if not len(hit_keys):
        none = pa.nulls(n, pa.string())
        return none, none, none
    located = _first_owner(keys, hit_keys, owner)
    if not global_index:
        record_code, file_code = _partition_codes(parts, files)
        found = pc.is_valid(located).to_numpy(zero_copy_only=False)
        first = located.fill_null(0).to_numpy(zero_copy_only=False)
        if not np.array_equal(file_code[first[found]], record_code[found]):
            located = _first_owner(_qualified(record_code, keys), _qualified(file_code[owner], hit_keys), owner)
    out = [pa.array([getattr(kf, attr) for kf in files], pa.string()).take(located)
           for attr in ("file_id", "instant", "partition")]
    return out[0], out[1], out[2]


def _first_owner(probe: pa.Array, value_set: pa.Array, owner: np.ndarray) -> pa.Array:
    """The owner of each probe value's first occurrence in `value_set` (null where it has none)."""
    where = pc.index_in(probe, value_set=value_set)
    missing = pc.is_null(where).to_numpy(zero_copy_only=False)
    src = owner[pc.fill_null(where, 0).to_numpy(zero_copy_only=False)]
    return pa.array(src, pa.int64(), mask=missing)


def _partition_codes(parts: pa.Array, files: Sequence[KeyFile]) -> tuple[np.ndarray, np.ndarray]:
    """Each record's and each file's partition as its number among the files' distinct partitions (-1: a
    record's partition holds none of the files)."""
    number = {p: i for i, p in enumerate(dict.fromkeys(kf.partition for kf in files))}
    file_code = np.array([number[kf.partition] for kf in files], dtype=np.int64)
    record_code = pc.fill_null(pc.index_in(parts, value_set=pa.array(list(number), pa.string())), -1)
    return record_code.to_numpy(zero_copy_only=False).astype(np.int64), file_code


def _qualified(codes: np.ndarray, keys: pa.Array) -> pa.Array:
    return pc.binary_join_element_wise(pa.array(codes, pa.int64()).cast(pa.string()), keys, "\u0001")


def _stay_where_outranked(engine: Engine, storage: Storage, cfg: WriteConfig, view: FileSystemView,
                          records: pa.Table, homes: pa.Array) -> pa.Table:
    """Hudi 0.14 merges a record that would move partition with the stored one first
    (`mergeForPartitionUpdates`): under DefaultHoodieRecordPayload a stored record with a greater ordering
    value wins, and the merged record (the stored one) stays where it is. Such records are routed to their
    stored location, as without update.partition.path, where the merge keeps the stored record; the
    stored values are read only for these records' files (merged with their logs, if any)."""
    field = cfg.event_time_field
    if not (cfg.index.update_partition_path and field and field in records.column_names):
        return records
    parts = records.column(PARTITION_COL)
    moving = pc.and_(pc.fill_null(pc.not_equal(homes, parts), False), pc.invert(records.column(DELETE_FLAG)))
    rows = np.nonzero(moving.to_numpy(zero_copy_only=False))[0]
    if not len(rows):
        return records
    fids = records.column(LOC_FILE_ID).take(pa.array(rows)).to_pylist()
    by_file: dict[tuple[str, str], list[int]] = {}
    for row, home, fid in zip(rows.tolist(), homes.take(pa.array(rows)).to_pylist(), fids):
        by_file.setdefault((home, fid), []).append(row)
    files = {(kf.partition, kf.file_id): kf for kf in _key_files(cfg, view, sorted({h for h, _ in by_file}))}
    spec = merged_keys.liveness_spec(view, cfg.table, (field,))
    keys, values = records.column(RECORD_KEY_COL), records.column(field)

    def check(item: tuple[KeyFile, list[int]], _info: TaskInfo) -> list[tuple[list[int], pa.Array]]:
        kf, at = item
        assert kf.base_path is not None
        taken = pa.array(at, pa.int64())
        stored = merged_keys.stored_values(storage, kf.file_id, kf.base_path, kf.merge_logs, spec,
                                           keys.take(taken).combine_chunks(), field)
        return [(at, merged_keys.outranked(stored, values.take(taken).combine_chunks()))]

    stay = np.zeros(records.num_rows, dtype=bool)
    items = [(files[home_fid], at) for home_fid, at in by_file.items() if home_fid in files]
    for at, wins in engine.map_tasks(check, items, description="index: stored ordering of moved records"):
        stay[at] = np.asarray(wins.to_numpy(zero_copy_only=False), dtype=bool)
    if not stay.any():
        return records
    idx = records.schema.get_field_index(PARTITION_COL)
    return records.set_column(idx, PARTITION_COL, pc.if_else(pa.array(stay), homes, parts))


def _global_moves(records: pa.Table, homes: pa.Array, update_partition_path: bool) -> pa.Table:
    """A key found in another partition: the record goes there, or (update.partition.path) a delete
    goes there and the record is inserted where it now belongs."""
    part_idx = records.schema.get_field_index(PARTITION_COL)
    moved = pc.fill_null(pc.not_equal(homes, records.column(PARTITION_COL)), False)
    if not pc.any(moved).as_py():
        return records
    if not update_partition_path:
        return records.set_column(part_idx, PARTITION_COL, pc.if_else(moved, homes, records.column(PARTITION_COL)))
    stay = records.filter(pc.invert(moved))
    old = records.filter(moved)
    old_homes = homes.filter(moved)
    old = old.set_column(part_idx, PARTITION_COL, old_homes)
    del_idx = old.schema.get_field_index(DELETE_FLAG)
    old = old.set_column(del_idx, DELETE_FLAG, pa.repeat(pa.scalar(True), old.num_rows))
    new = records.filter(moved)
    none = pa.nulls(new.num_rows, pa.string())
    for name, value in ((LOC_FILE_ID, none), (LOC_INSTANT, none),
                        (IS_UPDATE, pa.repeat(pa.scalar(False), new.num_rows))):
        new = new.set_column(new.schema.get_field_index(name), name, value)
    return pa.concat_tables([stay, old, new])


# --------------------------------------------------------------------------- BUCKET
def _tag_bucket(cfg: WriteConfig, records: pa.Table, view: FileSystemView | None) -> tuple[pa.Table, WorkloadProfile]:
    fields = cfg.bucket_hash_fields
    bids = bucket_index.bucket_ids(records.column(RECORD_KEY_COL).combine_chunks(), fields, cfg.index.bucket_num)
    parts = records.column(PARTITION_COL).combine_chunks()
    touched = pc.unique(parts).to_pylist()
    existing = bucket_index.existing_buckets(view, touched) if view is not None else {}
    bases: dict[tuple[str, str], str] = {}
    if view is not None:
        for (p, _), fid in existing.items():
            sl = next((s for s in view.latest_file_slices(p) if s.file_id == fid), None)
            bases[(p, fid)] = sl.base_instant if sl else ""
    fids = insts = pa.nulls(records.num_rows, pa.string())
    if existing:
        probe = pc.binary_join_element_wise(parts, pc.cast(bids, pa.string()), "\u0001")
        names = [f"{p}\u0001{b}" for p, b in existing]
        where = pc.index_in(probe, value_set=pa.array(names, pa.string()))
        fids = pa.array([fid for fid in existing.values()], pa.string()).take(where)
        insts = pa.array([bases.get((p, fid), "") for (p, _), fid in existing.items()], pa.string()).take(where)
    records = _with_location(records, fids, insts).append_column(BUCKET_COL, bids)
    located = pc.is_valid(records.column(LOC_FILE_ID))
    records = records.filter(pc.or_(located, pc.invert(records.column(DELETE_FLAG))))
    profile = profile_of(cfg.operation, records)
    inserts = records.filter(pc.invert(records.column(IS_UPDATE)))
    if inserts.num_rows:
        counts = pa.table({"p": inserts.column(PARTITION_COL), "b": inserts.column(BUCKET_COL)}) \
            .group_by(["p", "b"], use_threads=False).aggregate([([], "count_all")])
        for part, b, n in zip(*(counts.column(c).to_pylist() for c in ("p", "b", "count_all"))):
            bucket_inserts = profile.partition(part).bucket_inserts
            bucket_inserts[int(b)] = bucket_inserts.get(int(b), 0) + n
    return records.drop_columns([BUCKET_COL]), profile
