"""Merge one merge-on-read file slice (base file + log files) into its current records.

Snapshot reads, incremental reads and compaction all need the same answer to
"what does this file slice hold as of instant X", so it lives here as one pure,
executor-side function over a :class:`~pyhudi.storage.Storage`.

Which blocks count (Hudi 0.14 ``AbstractHoodieLogRecordReader.scanInternalV1``,
the two-traversal scan):

* log files are read in order (base instant, version, write token); corrupt
  ranges are skipped (and counted);
* a data or delete block counts only when its ``INSTANT_TIME`` is a completed
  write instant (or older than the active timeline) and is ``<= as_of``;
* a ROLLBACK command block whose own instant is ``<= as_of`` voids every block
  of its ``TARGET_INSTANT_TIME``, before or after it in the slice. The rollback
  instant is not a write instant, so it need not be in ``committed``. (hudi-rs
  0.5.0 only voids blocks read before the command block; Spark's rollbacks
  always put it after them, where both agree.)

How records combine depends on the table (``MergeSpec.mode``; ``table_merge_mode``
reads it from ``hoodie.properties``). Log records are always merged among
themselves first, in block order, and the result is then merged with the base
record. A record whose ``_hoodie_is_deleted`` is true is a delete once chosen.

Version-6 tables without ``hoodie.record.merge.mode`` follow Hudi 0.14/0.15
(``HoodieMergedLogRecordScanner`` with the payload's ``preCombine``, then the
payload's ``combineAndGetUpdateValue`` against the base row, as the Spark
snapshot read and compaction's ``HoodieMergeHandle`` both do):

* among log records (both payloads): a data record replaces a delete (or
  nothing) whatever its ordering value; against a data record the greater
  ordering value wins, ties to the later record. A delete-block record
  replaces the current one unless its ordering value is non-default, of the
  same Java class as the record's (``ReflectionUtils.isSameClass``: an
  ``IntWrapper`` against an ``int`` column, a ``LongWrapper`` against a
  ``long``; never for strings, dates or decimals, which unwrap to another
  class than the Avro record holds) and lower. ``IntWrapper(0)`` and null
  are default: such a delete always applies;
* ``OverwriteWithLatestAvroPayload``: the merged log record replaces the base
  row whatever the ordering values;
* ``DefaultHoodieRecordPayload``: a delete-block delete removes the base row
  whatever the ordering values; a data record replaces it when its ordering
  value is ``>=`` the base row's (or the base row's is null).

So on MOR the greater ordering value wins among log records, while a COW
upsert (and the log-vs-base step with OverwriteWithLatestAvroPayload) simply
replaces the stored row: the same upserts can leave different rows on COW
and MOR, and on MOR the result of later upserts depends on whether a
compaction came between them (it turns the merged record into the base row).
Where Hudi 0.14 fails (a null ordering value in a comparison throws), pyhudi
ranks nulls as below; a delete's value is compared with the column's as
stored (a ``LongWrapper`` against a millisecond timestamp compares millis).

Tables recording a Hudi 1.x merge mode follow it (hudi-rs 0.5.0
``reader_v2/record_merger.rs``, mirroring Hudi's ``BufferedRecordMergerFactory``;
checked case by case against the installed ``hudi`` reader, see
``tests/unit/test_log_merge.py``); ``mode=None`` infers one of them from
``event_time_field``, as hudi-rs does for a version-6 table:

* ``COMMIT_TIME_ORDERING``: the latest record or delete wins;
* ``EVENT_TIME_ORDERING``: the greater ordering value wins, ties to the later
  record; a delete whose value is lower than the current record's is ignored.
  A delete whose ordering value is null or ``IntWrapper(0)`` (what Spark SQL
  DELETE writes) always wins, absorbs later deletes, and is overridden by the
  next data record whatever its value; but the base record is then still
  compared by value with the surviving log record.

Hudi 1.1 tables may compare several ordering fields (``MergeSpec.ordering_fields``):
field by field, the first difference deciding (``ArrayComparable``), each
field's null ranking as a single field's does; their deletes carry an
``ArrayWrapper``. A delete marker (``MergeSpec.delete_marker``) makes a chosen
record whose field holds the marker a delete, as ``_hoodie_is_deleted`` does.
``table_merge_rules`` reads all of it from ``hoodie.properties``.

Vectorized form: per key, log records before the last delete that applies are
irrelevant; the winner among the rest is the maximum by (ordering value,
position) - one lexsort over (key, tier, ordering rank, position) in numpy.
Which delete applies last is found in one pass over the keys that have
deletes (by event time 1.x: the last default-ordering one).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from decimal import Decimal
from enum import Enum
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pyhudi.errors import InvalidConfigError, UnsupportedTableError
from pyhudi.io.lance_file import is_lance_file, read_lance_base_file
from pyhudi.io.log_blocks import (
    avro_block_to_arrow,
    parquet_block_to_arrow,
)
from pyhudi.io.log_format import (
    BlockType,
    CorruptBlock,
    LogBlock,
    LogFileName,
    iter_blocks,
    read_block_content,
)
from pyhudi.io.schema import conform_table
from pyhudi.model.table_features import resolve_merge
from pyhudi.reader.log_deletes import delete_events
from pyhudi.storage import Storage

if TYPE_CHECKING:
    from pyhudi.model.table_config import TableConfig

RECORD_KEY = "_hoodie_record_key"
FILE_NAME = "_hoodie_file_name"
IS_DELETED = "_hoodie_is_deleted"
_DATA_BLOCKS = (BlockType.AVRO_DATA_BLOCK, BlockType.PARQUET_DATA_BLOCK)
_NULL_KEY, _EMPTY_KEY = "__null__", "__empty__"


class MergeMode(Enum):
    """How records of one key combine (see the module docstring).

    The two payload modes are Hudi 0.14/0.15's rules for a version-6 table;
    the two orderings are Hudi 1.x's ``hoodie.record.merge.mode`` values.
    """

    OVERWRITE_PAYLOAD = "OverwriteWithLatestAvroPayload"
    DEFAULT_PAYLOAD = "DefaultHoodieRecordPayload"
    COMMIT_TIME_ORDERING = "COMMIT_TIME_ORDERING"
    EVENT_TIME_ORDERING = "EVENT_TIME_ORDERING"

    @property
    def precombines(self) -> bool:
        """Hudi 0.14's log scanner: log records combine by the payload's preCombine."""
        return self in (MergeMode.OVERWRITE_PAYLOAD, MergeMode.DEFAULT_PAYLOAD)


@dataclass(frozen=True)
class MergeRules:
    """A table's merge: the mode, the fields an event-time merge compares (in order), and the custom
    delete marker (field, value) - a record whose field equals the value is a delete (Hudi 1.1's
    ``hoodie.record.merge.property.hoodie.payload.delete.field`` / ``.marker``).

    ``table_merge_rules`` reads them from ``hoodie.properties``; ``spec_options`` are the matching
    ``MergeSpec`` keyword arguments.
    """

    mode: MergeMode
    ordering_fields: tuple[str, ...] = ()
    delete_marker: tuple[str, str] | None = None

    @property
    def compared_fields(self) -> tuple[str, ...]:
        """The fields merges compare: none by 1.x commit time (Hudi 0.14's payloads compare the
        precombine field among log records whatever the payload)."""
        return () if self.mode is MergeMode.COMMIT_TIME_ORDERING else self.ordering_fields

    def spec_options(self) -> dict[str, Any]:
        """``MergeSpec(committed, as_of, target_schema=..., **rules.spec_options())``."""
        compared = self.compared_fields
        return {"mode": self.mode, "event_time_field": compared[0] if compared else None,
                "ordering_fields": compared, "delete_marker": self.delete_marker}


def table_merge_rules(config: TableConfig) -> MergeRules:
    """How the table's records combine, by Hudi's rules for its version (``table_features.resolve_merge``:
    Hudi 1.x's inference for versions 8 and 9, 0.14/0.15's payload classes for 4-6 unless the table
    records 1.x merge settings). CUSTOM modes, partial updates and the like are refused naming the
    property. The table's own settings count, not a write's: Hudi's log scanner and compaction take them
    from ``hoodie.properties`` too.
    """
    props = dict(config.raw)
    if config.payload_class and "hoodie.compaction.payload.class" not in props:
        props["hoodie.compaction.payload.class"] = config.payload_class
    merge = resolve_merge(props, f"table {config.name!r}", config.version, config.ordering_fields)
    return MergeRules(MergeMode(merge.mode), merge.ordering_fields, merge.delete_marker)


def table_merge_mode(config: TableConfig) -> tuple[MergeMode, str | None]:
    """The table's merge mode and the one ordering field its merges compare (None: none to compare).

    For callers building a ``MergeSpec`` from ``event_time_field`` alone: a table whose merge needs more
    (several ordering fields, a delete marker) is refused here rather than merged by half its rules;
    ``table_merge_rules(config).spec_options()`` carries all of them.
    """
    rules = table_merge_rules(config)
    compared = rules.compared_fields
    where = f"table {config.name!r}"
    if len(compared) > 1:
        raise UnsupportedTableError(
            f"{where}: event-time ordering over several fields (hoodie.table.ordering.fields="
            f"{','.join(compared)}) needs a merge given all of them (log_merge.table_merge_rules); this "
            "operation compares one field; read the table with Apache Hudi")
    if rules.delete_marker is not None:
        raise UnsupportedTableError(
            f"{where}: the delete marker (hoodie.record.merge.property.hoodie.payload.delete.field="
            f"{rules.delete_marker[0]}) needs a merge given it (log_merge.table_merge_rules); this operation "
            "does not apply it; read the table with Apache Hudi")
    return rules.mode, compared[0] if compared else None


@dataclass(frozen=True)
class MergeSpec:
    """What the merge may see and how records combine.

    ``record_key_fields`` is only needed when meta fields are not populated
    (virtual keys): keys are then rebuilt from data columns the way Hudi's
    simple/complex key generators render them. ``committed_before`` treats
    block instants older than the active timeline as committed (archived),
    as Hudi's ``containsOrBeforeTimelineStarts`` does. ``ordering_fields``
    (1.x event time only) are all the fields compared, lexicographically, the
    first being ``event_time_field``; ``delete_marker`` makes a record whose
    field equals the value a delete. ``merge_columns`` are the columns the
    target schema must hold for them.
    """

    committed: frozenset[str]
    as_of: str | None
    event_time_field: str | None
    target_schema: pa.Schema
    populate_meta: bool = True
    record_key_fields: tuple[str, ...] = ()
    committed_before: str | None = None
    # None: a Hudi 1.x ordering inferred from event_time_field, as hudi-rs infers it for a version-6
    # table (COMMIT_TIME_ORDERING without one); table_merge_rules gives the table's own.
    mode: MergeMode | None = None
    ordering_fields: tuple[str, ...] = ()
    delete_marker: tuple[str, str] | None = None
    # Every column is wanted (compaction): on an object store a base file up to WHOLE_READ_MAX_BYTES comes
    # in one GET, not a footer read plus a GET per column chunk.
    whole_base: bool = False

    def __post_init__(self) -> None:
        if not self.ordering_fields:
            return
        if self.event_time_field not in (None, self.ordering_fields[0]):
            raise InvalidConfigError(f"event_time_field={self.event_time_field!r} is not the first of "
                                     f"ordering_fields={self.ordering_fields!r}")
        if len(self.ordering_fields) > 1 and self.merge_mode.precombines:
            raise InvalidConfigError(f"{self.merge_mode.value} compares one ordering field (Hudi 0.14/0.15), "
                                     f"not {','.join(self.ordering_fields)}")

    @property
    def merge_mode(self) -> MergeMode:
        if self.mode is not None:
            return self.mode
        return MergeMode.COMMIT_TIME_ORDERING if self.event_time_field is None and not self.ordering_fields \
            else MergeMode.EVENT_TIME_ORDERING

    @property
    def compared_fields(self) -> tuple[str, ...]:
        """The fields merges compare, in order: none when the mode orders by commit time."""
        if self.merge_mode is MergeMode.COMMIT_TIME_ORDERING:
            return ()
        if self.ordering_fields:
            return self.ordering_fields
        return (self.event_time_field,) if self.event_time_field else ()

    @property
    def ordering_field(self) -> str | None:
        """The first field merges compare: ``event_time_field``, unless the mode orders by commit time."""
        compared = self.compared_fields
        return compared[0] if compared else None

    @property
    def merge_columns(self) -> tuple[str, ...]:
        """Top-level columns the merge reads besides the record key: the compared fields', the delete
        marker's and ``_hoodie_is_deleted``. A projected read's target schema must keep those the table has."""
        names = [f.split(".")[0] for f in self.compared_fields]
        if self.delete_marker is not None:
            names.append(self.delete_marker[0].split(".")[0])
        names.append(IS_DELETED)
        return tuple(dict.fromkeys(names))

    def block_visible(self, instant: str | None) -> bool:
        """A data/delete block counts only for a completed write instant at or before ``as_of``."""
        if instant is None or (self.as_of is not None and instant > self.as_of):
            return False
        return instant in self.committed or (self.committed_before is not None and instant < self.committed_before)


@dataclass
class MergeStats:
    """Counters Hudi reports for a log scan / compaction (``HoodieWriteStat`` compaction fields)."""

    total_log_records: int = 0  # data records in valid blocks
    total_log_blocks: int = 0  # every block and corrupt range read
    total_corrupt_blocks: int = 0
    total_rollback_blocks: int = 0  # rollback command blocks honoured (instant <= as_of)
    total_deletes: int = 0  # delete records in valid delete blocks
    updated_records: int = 0  # base keys whose surviving row came from a log
    deleted_records: int = 0  # base keys with no surviving row
    log_files_read: int = 0
    log_bytes_read: int = 0


@dataclass
class _Events:
    """Keys, row sources and ordering values of every record, in merge order (base rows first).

    ``src`` indexes the concatenated data rows (-1 for a delete); ``reset``
    marks records that win the log-vs-log merge unconditionally.
    """

    keys: list[pa.Array] = field(default_factory=list)
    src: list[np.ndarray] = field(default_factory=list)
    ordering: list[pa.Array] = field(default_factory=list)
    reset: list[np.ndarray] = field(default_factory=list)

    def add(self, keys: pa.Array, src: np.ndarray, ordering: pa.Array | None, reset: np.ndarray) -> None:
        self.keys.append(keys.cast(pa.string()))
        self.src.append(src)
        if ordering is not None:
            self.ordering.append(ordering)
        self.reset.append(reset)


def merge_file_slice(
    storage: Storage, file_id: str, base_path: str | None, log_paths: list[str], spec: MergeSpec
) -> tuple[pa.Table, MergeStats]:
    """Merged records of one file slice, conformed to ``spec.target_schema``.

    Untouched base rows come back unchanged (``_hoodie_file_name`` = base file
    name); rows that won from a log keep their stored meta values except
    ``_hoodie_file_name``, which becomes the file id, as Hudi's readers show
    it. Rows are in base-file order with updates in place, then new keys in
    log order (the order Hudi's merge handle writes a compacted file).
    """
    stats = MergeStats()
    target = spec.target_schema
    mode = spec.merge_mode
    ord_type = _ordering_type(spec)
    blocks = _valid_blocks(storage, _sorted_logs(log_paths), spec, stats)
    raw_base = _read_base(storage, base_path, target, spec.whole_base) if base_path else target.empty_table()
    base = _conform(raw_base, target)
    if not blocks:  # nothing to merge: the base file is the answer (Hudi does not dedupe it either)
        return base, stats

    parts: list[pa.Table] = [base]
    events = _Events()
    n_base = n_rows = base.num_rows
    data_reset = ord_type is None and not mode.precombines  # 1.x commit time: every record resets
    events.add(_keys(raw_base, base, spec), np.arange(n_base, dtype=np.int64), _ordering(base, spec),
               np.full(n_base, data_reset))
    for block in blocks:
        if block.block_type == BlockType.DELETE_BLOCK:
            keys, ordering, reset = delete_events(block, ord_type, same_class=mode.precombines)
            stats.total_deletes += len(keys)
            events.add(keys, np.full(len(keys), -1, dtype=np.int64), ordering, reset)
            continue
        raw = avro_block_to_arrow(block) if block.block_type == BlockType.AVRO_DATA_BLOCK \
            else parquet_block_to_arrow(block)
        table = _conform(raw, target)
        if spec.populate_meta and FILE_NAME in target.names:
            idx = target.get_field_index(FILE_NAME)
            name = pa.repeat(pa.scalar(file_id, target.field(idx).type), table.num_rows)
            table = table.set_column(idx, target.field(idx), name)
        stats.total_log_records += table.num_rows
        parts.append(table)
        events.add(_keys(raw, table, spec), np.arange(n_rows, n_rows + table.num_rows, dtype=np.int64),
                   _ordering(table, spec), np.full(table.num_rows, data_reset))
        n_rows += table.num_rows

    data = pa.concat_tables(parts)
    src, has_base, position = _merge(events, n_base, ord_type, mode)
    keep = src >= 0
    if keep.any():  # a record flagged deleted is a delete once chosen (Hudi payloads, 1.x's DeleteContext)
        keep &= ~_flagged_deleted(data, np.where(keep, src, 0), spec)
    stats.updated_records = int(np.count_nonzero(keep & has_base & (src >= n_base)))
    stats.deleted_records = _distinct_base_keys(events, n_base) - int(np.count_nonzero(keep & has_base))
    order = np.argsort(position[keep], kind="stable")
    return data.take(pa.array(src[keep][order])), stats


def _read_base(storage: Storage, base_path: str, target: pa.Schema, whole: bool = False) -> pa.Table:
    """The base file's columns the target schema knows (plus the stored record key): a projected read
    (`spec.target_schema` narrowed to what a query needs) decodes only those; `whole`: see
    `MergeSpec.whole_base`. Lance base files: Hudi 1.2."""
    if is_lance_file(base_path):
        return read_lance_base_file(storage, base_path, list(dict.fromkeys([*target.names, RECORD_KEY])))
    from pyhudi.io.base_file import WHOLE_READ_MAX_BYTES

    with storage.open_input_file(base_path, whole_below=WHOLE_READ_MAX_BYTES if whole else 0) as f:
        pf = pq.ParquetFile(f)
        present = set(pf.schema_arrow.names)
        columns = [n for n in target.names if n in present]
        if RECORD_KEY in present and RECORD_KEY not in columns:
            columns.append(RECORD_KEY)
        return pf.read(columns=columns, use_threads=storage.is_native_file(f))


# ----------------------------------------------------------------------------- block selection

def _sorted_logs(log_paths: list[str]) -> list[str]:
    """Hudi's log file order: base instant, version, write token (unparseable names keep the given order)."""
    names = [LogFileName.parse(p.rsplit("/", 1)[-1]) for p in log_paths]
    keys = [(n.base_instant, n.version, n.write_token or "") for n in names if n is not None]
    if len(keys) != len(log_paths):
        return list(log_paths)
    return [log_paths[i] for i in sorted(range(len(log_paths)), key=keys.__getitem__)]


LOG_WHOLE_READ_MAX_BYTES = 16 * 1024 * 1024


def _valid_blocks(storage: Storage, log_paths: list[str], spec: MergeSpec, stats: MergeStats) -> list[LogBlock]:
    """Two passes: locate every block (headers only) and collect rollback targets, then load survivors.

    Rollbacks are applied after the whole slice is scanned, because a retried
    or late rollback may sit before or after the blocks it voids.
    """
    located: list[tuple[str, LogBlock]] = []
    rolled_back: set[str] = set()
    held: dict[str, pa.Buffer] = {}  # log files fetched whole (object stores): the second pass reads these
    for path in log_paths:
        stats.log_files_read += 1
        # A log file is read header by header (a ranged GET each on an object store, ~15 for one block):
        # one up to LOG_WHOLE_READ_MAX_BYTES is fetched whole, by one GET, and kept for the second pass.
        with storage.open_input_file(path, whole_below=LOG_WHOLE_READ_MAX_BYTES) as fh:
            if isinstance(fh, pa.BufferReader):
                held[path] = fh.read_buffer()
                fh.seek(0)
            stats.log_bytes_read += int(fh.size())
            for block in iter_blocks(fh, load_content=False, where=path):
                stats.total_log_blocks += 1
                if isinstance(block, CorruptBlock):
                    stats.total_corrupt_blocks += 1
                    continue
                if block.block_type == BlockType.COMMAND_BLOCK:
                    instant = block.instant_time
                    if block.is_rollback and block.target_instant_time and \
                            (spec.as_of is None or instant is None or instant <= spec.as_of):
                        stats.total_rollback_blocks += 1
                        rolled_back.add(block.target_instant_time)
                    continue
                if spec.block_visible(block.instant_time):
                    located.append((path, block))
    out: list[LogBlock] = []
    for path, group in _by_path([(p, b) for p, b in located if b.instant_time not in rolled_back]):
        with (pa.BufferReader(held[path]) if path in held else storage.open_input_file(path)) as fh:
            for block in group:
                if block.block_type not in _DATA_BLOCKS and block.block_type != BlockType.DELETE_BLOCK:
                    raise UnsupportedTableError(
                        f"log file {path} holds a {block.block_type.name} at offset {block.offset}; only Avro/parquet "
                        "data and delete blocks can be merged (HFile blocks belong to the metadata table)")
                out.append(replace(block, content=read_block_content(fh, block), source=path))
    return out


def _by_path(items: list[tuple[str, LogBlock]]) -> Iterator[tuple[str, list[LogBlock]]]:
    """Consecutive blocks of the same file, so each file is opened once and block order is kept."""
    current: str | None = None
    group: list[LogBlock] = []
    for path, block in items:
        if path != current and group:
            yield current or "", group
            group = []
        current = path
        group.append(block)
    if group:
        yield current or "", group


# ----------------------------------------------------------------------------- per-table columns

def _conform(table: pa.Table, target: pa.Schema) -> pa.Table:
    """Older blocks have fewer/narrower columns; columns the read schema does not know are dropped."""
    keep = [n for n in table.column_names if n in target.names]
    return conform_table(table.select(keep), target)


def _keys(raw: pa.Table, conformed: pa.Table, spec: MergeSpec) -> pa.Array:
    """Record keys: the stored meta column, or (virtual keys) rebuilt from the key fields."""
    if spec.populate_meta and RECORD_KEY in raw.column_names:
        return raw.column(RECORD_KEY).combine_chunks().cast(pa.string())
    if not spec.record_key_fields:
        raise InvalidConfigError("cannot merge log records: meta fields are not populated and no "
                                 "record_key_fields were given to rebuild the record keys")
    return _virtual_keys(conformed, spec.record_key_fields)


def _virtual_keys(table: pa.Table, fields: tuple[str, ...]) -> pa.Array:
    """Keys as Hudi's key generators render them (simple: the value; complex: ``f:v,f:v``)."""
    parts = []
    for name in fields:
        col = _column(table, name)
        if pa.types.is_timestamp(col.type):  # Hudi renders timestamps as epoch micros
            col = col.cast(pa.timestamp("us", col.type.tz)).cast(pa.int64())
        text = col.cast(pa.string())
        if len(fields) == 1:
            return text
        text = pc.if_else(pc.equal(text, ""), _EMPTY_KEY, pc.fill_null(text, _NULL_KEY))
        parts.append(pc.binary_join_element_wise(f"{name}:", text, ""))
    return pc.binary_join_element_wise(*parts, ",")


def _column(table: pa.Table, dotted: str) -> pa.Array:
    """A top-level or nested (``a.b``) column as one array."""
    head, *rest = dotted.split(".")
    if head not in table.column_names:
        raise InvalidConfigError(f"column {dotted!r} is not in the read schema")
    arr = table.column(head).combine_chunks()
    for part in rest:
        arr = pc.struct_field(arr, part)
    return arr


def _ordering_type(spec: MergeSpec) -> pa.DataType | None:
    """The compared field's type; several fields compare as a struct of theirs (``f0``, ``f1``, ...)."""
    fields = spec.compared_fields
    if not fields:
        return None
    empty = spec.target_schema.empty_table()
    types = [_column(empty, f).type for f in fields]
    return types[0] if len(types) == 1 else pa.struct([pa.field(f"f{i}", t) for i, t in enumerate(types)])


def _ordering(table: pa.Table, spec: MergeSpec) -> pa.Array | None:
    fields = spec.compared_fields
    if not fields:
        return None
    if len(fields) == 1:
        return _column(table, fields[0])
    return pa.StructArray.from_arrays([_column(table, f) for f in fields], names=[f"f{i}" for i in range(len(fields))])


def _flagged_deleted(data: pa.Table, rows: np.ndarray, spec: MergeSpec) -> np.ndarray:
    """Whether each chosen row is a delete: ``_hoodie_is_deleted`` is true (Hudi payloads), or the delete
    marker's field holds the marker (Hudi 1.1's DeleteContext compares the value's text with it)."""
    idx = pa.array(rows)
    flags = np.zeros(len(rows), dtype=bool)
    if IS_DELETED in spec.target_schema.names:
        flag = pc.fill_null(data.column(IS_DELETED).take(idx), False)
        flags |= np.asarray(flag.to_numpy(zero_copy_only=False), dtype=bool)
    if spec.delete_marker is not None:
        field, marker = spec.delete_marker
        if field.split(".")[0] not in data.column_names:
            raise InvalidConfigError(f"the delete marker's column {field!r} is not in the merge's read schema; a "
                                     "projected read must keep MergeSpec.merge_columns")
        text = _column(data, field).take(idx).cast(pa.string())
        flags |= np.asarray(pc.fill_null(pc.equal(text, marker), False).to_numpy(zero_copy_only=False), dtype=bool)
    return flags


# ----------------------------------------------------------------------------- the merge itself

def _codes(keys: pa.Array) -> np.ndarray:
    """Integer code per key; rows without a key get codes of their own (they cannot be matched)."""
    encoded = pc.dictionary_encode(keys)
    codes = np.asarray(pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
    nulls = codes < 0
    codes[nulls] = len(encoded.dictionary) + np.arange(int(nulls.sum()), dtype=np.int64)
    return codes


def _distinct_base_keys(events: _Events, n_base: int) -> int:
    return int(pc.count_distinct(events.keys[0]).as_py()) if n_base else 0


def _ranks(events: _Events, ord_type: pa.DataType | None, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Dense ranks of the ordering values (all 0 without an ordering field), and which values are null.

    Several compared fields (a struct) rank lexicographically: by the first
    field, ties by the second, and so on (Java ``ArrayComparable.compareTo``),
    each field's nulls ranking as a single field's do (1.x's reader turns a
    null field into the default ordering value).
    """
    if ord_type is None:
        return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
    ordering = pa.concat_arrays([o.cast(ord_type) for o in events.ordering])
    if not pa.types.is_struct(ord_type):
        return _field_ranks(ordering, ord_type)
    parts = [_field_ranks(child, ord_type.field(i).type) for i, child in enumerate(ordering.flatten())]
    return _lexicographic([rank for rank, _ in parts]), np.any([nulls for _, nulls in parts], axis=0)


def _field_ranks(ordering: pa.Array, ord_type: pa.DataType) -> tuple[np.ndarray, np.ndarray]:
    """Dense ranks of one field's values, and which are null.

    A null ordering value becomes Java's default ``Integer(0)``, which hudi-rs
    compares as 0 against numbers (a log record with a null ``ts`` loses to a
    base record with ``ts`` 5 but beats one with ``ts`` -1); for other types it
    ranks lowest. (Hudi 0.14 fails on a null in a comparison, except a base
    row's null, which any update replaces.)
    """
    nulls = np.asarray(pc.is_null(ordering).to_numpy(zero_copy_only=False), dtype=bool)
    numeric = pa.types.is_integer(ord_type) or pa.types.is_floating(ord_type) or pa.types.is_decimal(ord_type)
    if numeric:
        zero = Decimal(0) if pa.types.is_decimal(ord_type) else 0
        ordering = pc.fill_null(ordering, pa.scalar(zero, ord_type))
    rank = np.asarray(pc.rank(ordering, sort_keys="ascending", tiebreaker="dense").to_numpy(), dtype=np.int64)
    rank[np.asarray(pc.is_null(ordering).to_numpy(zero_copy_only=False), dtype=bool)] = 0
    return rank, nulls


def _lexicographic(ranks: list[np.ndarray]) -> np.ndarray:
    """Dense ranks of the tuples of per-field ranks, compared field by field."""
    order = np.lexsort(ranks[::-1])  # lexsort's last key sorts first
    stacked = np.stack(ranks, axis=1)[order]
    step = np.any(stacked[1:] != stacked[:-1], axis=1)
    dense = np.empty(len(order), dtype=np.int64)
    dense[order] = np.concatenate(([0], np.cumsum(step))).astype(np.int64)
    return dense


def _last_per_key(codes: np.ndarray, rank: np.ndarray, reset: np.ndarray, is_data: np.ndarray,
                  precombine: bool) -> np.ndarray:
    """Index of the record that wins the log-vs-log merge of each key.

    Per key, records before the cutoff (the last delete that applies) are
    irrelevant; the cutoff is tier 0, the records after it tier 1, and the
    winner is the last record after sorting by (key, tier, ordering rank,
    position). Hudi 0.14 (``precombine``): the cutoff is found by
    ``_last_applied_deletes``, and no delete after it applied, so only data
    records follow it. Hudi 1.x: the cutoff is the last reset (a
    default-ordering delete), later deletes are absorbed by it (Hudi's
    ``deltaMergeDeleteRecord`` keeps an existing commit-time delete) until a
    data record arrives, which wins unconditionally; from there on, deletes
    compete by ordering value.
    """
    seq = np.arange(len(codes), dtype=np.int64)
    size = int(codes.max(initial=-1)) + 1
    if precombine:
        cutoff = _last_applied_deletes(codes, rank, reset, is_data, size)[codes]
        keep = (seq == cutoff) | (is_data & (seq > cutoff))
    else:
        last_reset = np.full(size, -1, dtype=np.int64)
        np.maximum.at(last_reset, codes[reset], seq[reset])
        cutoff = last_reset[codes]
        after = is_data & (seq > cutoff) & (cutoff >= 0)
        first_data = np.full(size, len(codes), dtype=np.int64)
        np.minimum.at(first_data, codes[after], seq[after])
        keep = np.where(cutoff >= 0, (seq == cutoff) | (seq >= first_data[codes]), True)
    codes, rank, seq = codes[keep], rank[keep], seq[keep]
    order = np.lexsort((seq, rank, (seq != cutoff[keep]).astype(np.int8), codes))
    sorted_codes = codes[order]
    last = np.ones(len(order), dtype=bool)
    last[:-1] = sorted_codes[1:] != sorted_codes[:-1]
    return np.asarray(seq[order][last])


def _last_applied_deletes(codes: np.ndarray, rank: np.ndarray, reset: np.ndarray, is_data: np.ndarray,
                          size: int) -> np.ndarray:
    """Per key code, the position of the last delete Hudi 0.14's scanner applies (-1: none).

    ``processNextDeletedRecord`` keeps the current record only when it is a
    data record with a greater ordering value than a comparable delete
    (``reset`` false); that record is the greatest data record since the
    delete before, because the payload's ``preCombine`` keeps the greater
    value among data records and lets a data record replace a delete. This
    depends on the order of events, so it is one pass in Python over the
    events of the keys that have a delete (most keys have none).
    """
    out = np.full(size, -1, dtype=np.int64)
    deletes = ~is_data
    if not deletes.any():
        return out
    involved = np.zeros(size, dtype=bool)
    involved[codes[deletes]] = True
    idx = np.flatnonzero(involved[codes])
    idx = idx[np.argsort(codes[idx], kind="stable")]  # by key, then position
    applied: dict[int, int] = {}
    current, top = -1, -1  # top: greatest data rank since the last applied delete; -1: none (rank >= 0)
    for code, pos, data, r, always in zip(codes[idx].tolist(), idx.tolist(), is_data[idx].tolist(),
                                          rank[idx].tolist(), reset[idx].tolist()):
        if code != current:
            current, top = code, -1
        if data:
            top = max(top, r)
        elif top < 0 or always or top <= r:
            top, applied[code] = -1, pos
    out[list(applied)] = list(applied.values())
    return out


def _merge(events: _Events, n_base: int, ord_type: pa.DataType | None, mode: MergeMode) -> tuple[np.ndarray, ...]:
    """(src, key has a base row, output position) of each surviving record; src -1 = deleted.

    Like Hudi's readers, log records are first merged among themselves and the
    result is then merged with the base record (``finalMerge``, Hudi 0.14's
    ``combineAndGetUpdateValue``), so a base record can outlive a commit-time
    delete whose key was re-inserted with a lower ordering value.
    """
    codes = _codes(pa.concat_arrays(events.keys))
    src, reset = np.concatenate(events.src), np.concatenate(events.reset)
    rank, nulls = _ranks(events, ord_type, len(codes))
    win = n_base + _last_per_key(codes[n_base:], rank[n_base:], reset[n_base:], src[n_base:] >= 0, mode.precombines)
    base_of = np.full(int(codes.max(initial=-1)) + 1, -1, dtype=np.int64)
    base_of[codes[:n_base]] = np.arange(n_base, dtype=np.int64)
    bidx = base_of[codes[win]]
    has_base = bidx >= 0
    b = np.where(has_base, bidx, 0)
    if not n_base or mode in (MergeMode.OVERWRITE_PAYLOAD, MergeMode.COMMIT_TIME_ORDERING):
        log_wins = np.ones(len(win), dtype=bool)  # the log record replaces the base row
    elif mode is MergeMode.DEFAULT_PAYLOAD:  # a delete-block delete always applies (empty payload)
        log_wins = ~has_base | (src[win] < 0) | nulls[b] | (rank[win] >= rank[b])
    else:  # 1.x event time: a default-ordering delete wins, else the greater value, ties to the log record
        log_wins = ~has_base | reset[win] | (rank[win] >= rank[b])
    beaten = np.zeros(n_base, dtype=bool)
    beaten[bidx[log_wins & has_base]] = True
    base_rows = np.flatnonzero(~beaten)
    out_src = np.concatenate([base_rows, src[win][log_wins]])
    out_base = np.concatenate([np.ones(len(base_rows), dtype=bool), has_base[log_wins]])
    out_pos = np.concatenate([base_rows, np.where(has_base, bidx, win)[log_wins]])
    return out_src, out_base, out_pos
