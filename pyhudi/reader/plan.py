"""Read planning, shared by both engines: which files (or file slices) make up the table for a query.

A read is planned on the driver from the timeline and the file-system view only: snapshot and
read-optimized (latest base files or merged slices, optionally as of `as.of.instant`), time travel
(refused for cleaned instants, `time_travel.check_readable`), and incremental (the range from
`incremental.resolve`; files whose slices may hold rows of the range). Partition filters prune
directories before they are listed, typed by the schema rows are read with; an incremental read lists
only the partitions its range's commits wrote, and a time travel checks only the selected partitions'
files, against the view's listing (issue 19: a read costs what it selects). The loaders turn a plan
into rows: `engine/spark/read.py` with Spark, `reader/arrow_read.py` in-process. Nothing here imports
pyspark.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from pyhudi.config import keys as K
from pyhudi.config.registry import Options
from pyhudi.errors import InstantNotFoundError, InvalidConfigError
from pyhudi.io import schema as S
from pyhudi.model.instant_time import INIT_INSTANT, normalize_instant
from pyhudi.model.table_config import TableConfig, load_table_config
from pyhudi.reader import incremental
from pyhudi.reader.log_merge import MergeSpec, table_merge_rules
from pyhudi.reader.time_travel import check_readable, format_query_instant
from pyhudi.storage import Storage
from pyhudi.timeline.table_schema import table_schema as schema_as_of
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.builder import build_view
from pyhudi.view.file_system_view import FileSlice, FileSystemView
from pyhudi.view.partitions import PartitionFilter, partition_accepted, prunable_fields

COMMIT_TIME = "_hoodie_commit_time"
log = logging.getLogger(__name__)


@dataclass
class ReadPlan:
    """What a read resolved to: useful for explain-style tooling and tests."""

    query_type: str
    as_of: str | None
    begin: str | None
    end: str | None
    files: list[str]
    schema: pa.Schema  # the read schema (meta fields first), as Arrow
    slices: list[FileSlice] | None = None  # merge-on-read slices to merge (None for base-file reads)
    avro: dict[str, Any] | None = None
    # Completion-time incremental reads: exactly these commits' rows (None: the range (begin, end]).
    instants: tuple[str, ...] | None = None


@dataclass
class PlannedRead:
    """A plan plus what loading it needs (the table, its timeline and view, the row filter)."""

    storage: Storage
    config: TableConfig
    view: FileSystemView
    plan: ReadPlan
    pfilter: PartitionFilter | None
    options: Options

    @property
    def incremental(self) -> bool:
        return self.plan.query_type == "incremental"


def meta_names() -> list[str]:
    return [f["name"] if isinstance(f, dict) else str(f) for f in S.META_FIELDS]


def plan_read(path: str | os.PathLike[str], options: dict[str, Any] | None,
              filters: Sequence[Sequence[Any]] | None, storage_options: Mapping[str, str] | None = None) -> PlannedRead:
    """Plan a read of the table at `path`; `filters` are (column, op, value) tuples."""
    opts = Options.parse(options)
    storage = Storage(os.fspath(path), storage_options=dict(storage_options or {}))
    config = load_table_config(storage)
    timeline = ActiveTimeline.load(storage)
    pfilter = PartitionFilter.from_tuples(filters)
    view = build_view(storage, config, timeline)
    query = opts.get(K.QUERY_TYPE)
    if query == "incremental":
        plan = _incremental_plan(opts, config, timeline, view, pfilter)
    else:
        plan = _snapshot_plan(opts, config, timeline, view, query, pfilter)
    return PlannedRead(storage, config, view, plan, pfilter, opts)


def _avro(config: TableConfig, timeline: ActiveTimeline, as_of: str | None) -> dict[str, Any]:
    avro = schema_as_of(timeline, config, as_of) or schema_as_of(timeline, config, None)
    return avro or {"type": "record", "name": f"{config.name}_record", "fields": []}


def read_schema(avro: dict[str, Any]) -> pa.Schema:
    """The Arrow schema rows are read with: meta fields, then the table's columns."""
    return S.avro_to_arrow(S.with_meta_fields(avro))


def _prune(view: FileSystemView, config: TableConfig, pfilter: PartitionFilter | None, schema: pa.Schema) -> None:
    """Give the view the partition filter typed by the schema rows are read with, before it lists
    anything: pruning must agree with the row filter applied to those rows."""
    assert "partition_paths" not in view.__dict__, "the view listed partitions before the filter was set"
    view.partition_filter = pfilter.bind(schema, config.partition_fields) if pfilter is not None else None


def _scope(config: TableConfig, pfilter: PartitionFilter | None, schema: pa.Schema) -> Callable[[str], bool] | None:
    """The partitions a read selects, as a predicate on partition paths (None: all): the same test the
    listing prunes with, so a time travel checks the files of exactly the partitions it reads."""
    if pfilter is None or not config.is_partitioned:
        return None
    bound, prunable = pfilter.bind(schema, config.partition_fields), prunable_fields(config)
    return lambda partition: partition_accepted(bound, config, partition, prunable)


def _listed(view: FileSystemView) -> Callable[[str], bool]:
    """Whether a file exists, from the view's listing of its partition (made once, kept for the read):
    a time travel's check costs no request per file."""
    names: dict[str, set[str]] = {}

    def exists(path: str) -> bool:
        partition, _, name = path.rpartition("/")
        if partition not in names:
            names[partition] = {i.name for i in view.listing(partition)}
        return name in names[partition]

    return exists


def _snapshot_plan(opts: Options, config: TableConfig, timeline: ActiveTimeline, view: FileSystemView,
                   query: str, pfilter: PartitionFilter | None) -> ReadPlan:
    as_of = as_of_instant(opts)
    avro = _avro(config, timeline, as_of)
    schema = read_schema(avro)
    _prune(view, config, pfilter, schema)
    if as_of is not None:
        check_readable(view.storage, timeline, as_of, _scope(config, pfilter, schema), _listed(view))
    if config.is_mor and query == "snapshot":
        slices = view.all_latest_merged_file_slices(as_of)
        return ReadPlan(query, as_of, None, None, [], schema, slices, avro)
    files = [bf.path for bf in view.all_latest_base_files(as_of)]
    return ReadPlan(query, as_of, None, None, files, schema, None, avro)


def as_of_instant(opts: Options) -> str | None:
    """`as.of.instant` as an inclusive 17-digit bound (Hudi's formats); an empty value is refused, since
    reading the latest snapshot instead would silently answer a different question."""
    if not opts.is_set(K.AS_OF_INSTANT):
        return None
    return format_query_instant(opts.get(K.AS_OF_INSTANT))


def _incremental_plan(opts: Options, config: TableConfig, timeline: ActiveTimeline,
                      view: FileSystemView, pfilter: PartitionFilter | None) -> ReadPlan:
    begin = _check_incremental(opts, config)
    end_opt = opts.get(K.END_INSTANT)
    rng = incremental.resolve(opts, view.storage, timeline, config, begin,
                              normalize_instant(end_opt) if end_opt else None)
    scope = _scope(config, pfilter, read_schema(_avro(config, timeline, rng.snapshot_at)))
    at = _readable_snapshot(opts, view, timeline, rng, scope)
    avro = _avro(config, timeline, at)
    schema = read_schema(avro)
    partitions = _range_partitions(view, config, timeline, rng, _scope(config, pfilter, schema))
    if partitions is None:
        _prune(view, config, pfilter, schema)
        partitions = view.partition_paths
    # A file can only hold rows committed in the range if it was written at or after the range's first commit.
    floor = rng.instants[0] if rng.instants else None

    def fresh(instant: str) -> bool:
        return instant >= floor if floor is not None else instant > begin

    if config.is_mor:
        # A slice can only hold rows committed after `begin` if it was created after it or has logs.
        slices = [] if rng.instants == () else [
            s for p in partitions for s in view.latest_merged_file_slices(p, at) if fresh(s.base_instant) or s.log_files]
        return ReadPlan("incremental", at, begin, rng.end, [], schema, slices, avro, rng.instants)
    files = [] if rng.instants == () else [
        bf.path for p in partitions for bf in view.latest_base_files(p, at) if fresh(bf.instant)]
    return ReadPlan("incremental", None, begin, rng.end, files, schema, None, avro, rng.instants)


def _range_partitions(view: FileSystemView, config: TableConfig, timeline: ActiveTimeline,
                      rng: incremental.IncrementalRange, scope: Callable[[str], bool] | None) -> list[str] | None:
    """The partitions an incremental read lists: those the range's commits wrote (their write stats),
    selected by the filter, as Hudi's incremental relations take the range's files from its commits'
    metadata. A row keeps the commit time of the commit that wrote it into its partition (merges,
    compaction and clustering copy it within the partition), so no other partition holds a row of the
    range. None (list every selected partition) when a commit of the range may be archived, so its
    metadata is not at hand: the range starts before the active timeline's first commit (completion-time
    ranges name active commits only)."""
    if not config.is_partitioned or rng.instants == ():
        return None
    chosen = set(rng.instants) if rng.instants is not None else None  # completion-time mode
    first = timeline.commits().first()
    if chosen is None and (first is None or rng.begin < first.timestamp):
        return None
    if chosen is not None and not all(timeline.contains(ts) for ts in chosen):
        return None  # a layout-2 range reaching into the LSM history: list every selected partition
    written: set[str] = set()
    for inst in timeline.commits().completed():
        if (inst.timestamp in chosen) if chosen is not None else rng.begin < inst.timestamp <= rng.end:
            written.update(timeline.commit_metadata(inst).partition_to_write_stats)
    return view.existing_partitions(p for p in written if scope is None or scope(p))


def _check_incremental(opts: Options, config: TableConfig) -> str:
    """The range's exclusive begin instant, after refusing what an incremental query cannot answer."""
    begin = opts.get(K.BEGIN_INSTANT)
    if not begin:
        raise InvalidConfigError("incremental reads need hoodie.datasource.read.begin.instanttime (exclusive "
                                 f"start; use {INIT_INSTANT} for the beginning)")
    if not config.populate_meta_fields:
        raise InvalidConfigError("incremental reads need _hoodie_commit_time, but this table was written with "
                                 "hoodie.populate.meta.fields=false")
    if opts.is_set(K.AS_OF_INSTANT):
        raise InvalidConfigError(
            f"as.of.instant={opts.get(K.AS_OF_INSTANT)!r} cannot be combined with an incremental query; bound the "
            f"range with {K.END_INSTANT.key} instead, or drop {K.QUERY_TYPE.key}=incremental for a time travel")
    if begin.strip().lower() == "earliest":  # Hudi 1.x's IncrementalQueryAnalyzer.START_COMMIT_EARLIEST
        return "00000000000000000"
    return normalize_instant(begin) if begin.strip("0") else "00000000000000000"


def _readable_snapshot(opts: Options, view: FileSystemView, timeline: ActiveTimeline,
                       rng: incremental.IncrementalRange, scope: Callable[[str], bool] | None) -> str | None:
    """The instant the range's files are read as of; None (the latest snapshot, filtered by commit time:
    Hudi's full table scan) when that instant's files were cleaned or archived and
    hoodie.datasource.read.incr.fallback.fulltablescan.enable is on."""
    last = timeline.commits().completed().last()
    at = rng.snapshot_at
    if at is None or last is None or at >= last.timestamp:
        return at  # the latest snapshot: nothing it needs was cleaned
    try:
        check_readable(view.storage, timeline, at, scope)
    except InstantNotFoundError as exc:
        if not opts.get(K.INCR_FALLBACK_FULL_TABLE_SCAN):
            raise InstantNotFoundError(f"incremental read up to {rng.end}: {exc} (or set "
                                       f"{K.INCR_FALLBACK_FULL_TABLE_SCAN.key}=true to scan the latest snapshot "
                                       "filtered by commit time)") from exc
        log.info("incremental read falls back to a full table scan: %s", exc)
        return None
    return at


def merge_spec(view: FileSystemView, config: TableConfig, avro_schema: dict[str, object],
               as_of: str | None) -> MergeSpec:
    """How a merge-on-read slice is merged for this read (the same for both engines)."""
    first = view.timeline.write_timeline().first()
    return MergeSpec(
        committed=frozenset(view.committed_instants), as_of=as_of,
        target_schema=S.avro_to_arrow(S.with_meta_fields(avro_schema)), populate_meta=config.populate_meta_fields,
        record_key_fields=config.record_key_fields, committed_before=first.timestamp if first else None,
        **table_merge_rules(config).spec_options(),
    )


def planned_merge_spec(read: PlannedRead) -> MergeSpec:
    plan = read.plan
    assert plan.avro is not None
    return merge_spec(read.view, read.config, plan.avro, plan.as_of)


__all__ = ["COMMIT_TIME", "PlannedRead", "ReadPlan", "as_of_instant", "merge_spec",
           "meta_names", "plan_read", "planned_merge_spec", "read_schema", "schema_as_of"]
