"""Which keys a merge-on-read file group still holds once its logs are merged: a global index's locations.

A global index (GLOBAL_SIMPLE, GLOBAL_BLOOM) finds keys in base files only. On a merge-on-read table a base
file may keep a key its logs have deleted since: when a record moves partition (update.partition.path) the old
group gets a delete block and the base row stays until compaction. Taken as a location, that dead copy
would receive the key's next write: an upsert moving the record back would leave two live rows, and a
delete would go to the dead copy and leave the live row. Hudi 0.14 guards against it on MOR
(`mayContainDuplicateLookup`): `HoodieIndexUtils.mergeForPartitionUpdates` reads the candidate file groups
merged with their logs (`HoodieMergedReadHandle`), and a key that merged read does not return is no
location (the record is tagged as new).

pyhudi does the same with `reader/log_merge.merge_file_slice`, on the keys a base file lookup found, and
only for file groups that have log files (a base-only group's base file is its merged view). Only the key
(plus the ordering field and `_hoodie_is_deleted`, which decide whether a delete wins) is read from the base
file; the logs are decoded whole, as any merged read does. A key that lives only in a log is not a location
either way, as in Hudi (an index blind to logs never puts new keys there).

The same merged read gives a moving record's stored ordering value (`stored_values`): under
DefaultHoodieRecordPayload Hudi merges a record that would move partition with the stored one first, and a
stored record with a greater ordering value wins and stays where it is.

Deliberate difference: Hudi confirms against the merged view only when `update.partition.path` is on; with
it off, a MOR key found in a dead copy is tagged to that copy, so its next upsert revives it there (next to
the live row if the record had moved). pyhudi confirms either way, so a MOR table tags as a COW table would.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import replace

import pyarrow as pa
import pyarrow.compute as pc

from pyhudi.index import locations as loc
from pyhudi.io.base_file import read_parquet
from pyhudi.model.table_config import TableConfig
from pyhudi.reader.log_merge import MergeSpec, merge_file_slice
from pyhudi.reader.plan import merge_spec
from pyhudi.storage import Storage
from pyhudi.timeline.table_schema import table_schema
from pyhudi.view.file_system_view import FileSlice, FileSystemView

# A Spark task's input: one file group with logs per row (its logs as a JSON list).
SLICES_SCHEMA = "m_part string, m_file_id string, m_instant string, m_base string, m_logs string"


def liveness_spec(view: FileSystemView, table: TableConfig, columns: Sequence[str] = ()) -> MergeSpec:
    """How a slice is merged to tell live keys from dead ones: exactly as a snapshot read merges it
    (`reader/plan.merge_spec`: committed blocks only, rollbacks honoured, the table's ordering), so a key is a
    location when a read returns it; narrowed to the columns that decide it (key, ordering, is-deleted) and
    `columns` (top-level fields of `a.b` paths) the caller reads."""
    avro = table_schema(view.timeline, table) or {"type": "record", "name": "empty", "fields": []}
    spec = merge_spec(view, table, avro, None)
    full = spec.target_schema
    wanted = [loc.RECORD_KEY, *spec.merge_columns, *(f.split(".")[0] for f in (*spec.record_key_fields, *columns) if f)]
    fields = [full.field(n) for n in dict.fromkeys(wanted) if n in full.names]
    if loc.RECORD_KEY not in full.names:
        fields.insert(0, pa.field(loc.RECORD_KEY, pa.string()))
    return replace(spec, target_schema=pa.schema(fields))


def live_among(storage: Storage, file_id: str, base_path: str, log_paths: Sequence[str], spec: MergeSpec,
               keys: pa.Array) -> pa.Array:
    """The keys of `keys` the file slice (base + logs) still holds after its logs are merged."""
    if not len(keys):
        return keys
    merged, _ = merge_file_slice(storage, file_id, base_path, list(log_paths), spec)
    return keys.filter(pc.is_in(keys, value_set=merged.column(loc.RECORD_KEY).combine_chunks()))


def stored_values(storage: Storage, file_id: str, base_path: str, log_paths: Sequence[str], spec: MergeSpec,
                  keys: pa.Array, field: str) -> pa.Array:
    """The value of `field` (`a.b` for a nested one) each key has in the file slice, merged with its logs when
    it has any; null where the slice does not hold the key or the table has no such field."""
    merged, _ = merge_file_slice(storage, file_id, base_path, list(log_paths), spec)
    head, *rest = field.split(".")
    if head not in merged.column_names:
        return pa.nulls(len(keys))
    values = merged.column(head).combine_chunks()
    for name in rest:
        values = pc.struct_field(values, name)
    return values.take(pc.index_in(keys, value_set=merged.column(loc.RECORD_KEY).combine_chunks()))


def outranked(stored: pa.Array, incoming: pa.Array) -> pa.Array:
    """DefaultHoodieRecordPayload: the stored record wins when its ordering value is greater (null: it does
    not); the merge handle's `_stored_wins` rule, for a whole column."""
    if pa.types.is_null(stored.type):
        return pa.repeat(pa.scalar(False), len(stored))
    return pc.fill_null(pc.greater(stored, incoming.cast(stored.type)), False)


def slice_rows(slices: Sequence[FileSlice]) -> list[tuple[str, str, str, str, str]]:
    """SLICES_SCHEMA rows of the file groups whose base keys need a merged read (base file and logs)."""
    return [(s.partition, s.file_id, s.base_instant, s.base_file.path, json.dumps([lf.path for lf in s.log_files]))
            for s in slices if s.base_file is not None and s.log_files]


def live_base_keys_batches(storage: Storage, spec: MergeSpec, batches: Iterator[pa.RecordBatch]
                           ) -> Iterator[pa.RecordBatch]:
    """(key, partition, fileId, instant) of the base keys each slice (SLICES_SCHEMA rows) still holds: an
    engine task that runs where the files are read (log_index.KEYS_SCHEMA), so keys never reach the driver."""
    for batch in batches:
        for part, fid, inst, base, logs in zip(*(batch.column(i).to_pylist() for i in range(5))):
            stored = read_parquet(storage, base, columns=[loc.RECORD_KEY]).column(0)
            live = live_among(storage, fid, base, json.loads(logs), spec, stored.combine_chunks())
            n = len(live)
            if n:
                yield pa.RecordBatch.from_arrays(
                    [live.cast(pa.string()), *(pa.repeat(pa.scalar(v, pa.string()), n) for v in (part, fid, inst))],
                    names=["_loc_key", loc.LOC_PARTITION, loc.LOC_FILE_ID, loc.LOC_INSTANT])
