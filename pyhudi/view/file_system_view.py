"""The file-system view: which files make up the table as of an instant.

Built from a storage listing plus the timeline, never from file contents.
Everything that reads or writes asks this view, so the visibility rules live
in exactly one place:

* a base file counts only if its instant is a completed write (commit,
  deltacommit, replacecommit, or compaction completed as commit) at or before
  the view's instant, or is older than the active timeline (archived);
* file groups named by a completed replacecommit are hidden whole;
* slices of a pending compaction and groups of a pending clustering are
  first-class, because sizing, compaction, clustering and the cleaner must
  all treat them specially.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

from pyhudi.model.file_names import PARTITION_METAFILE, join_path, parse_base_file, parse_log_file
from pyhudi.model.replaced_ids import ReplacedIds
from pyhudi.model.table_config import TableConfig
from pyhudi.storage import FileInfo, Storage
from pyhudi.timeline.instant import Action
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.partitions import PartitionFilter, list_partition_files

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BaseFile:
    partition: str
    name: str
    file_id: str
    write_token: str
    instant: str
    size: int

    @property
    def path(self) -> str:
        return join_path(self.partition, self.name)


@dataclass(frozen=True)
class LogFile:
    partition: str
    name: str
    file_id: str
    base_instant: str
    version: int
    write_token: str
    size: int

    @property
    def path(self) -> str:
        return join_path(self.partition, self.name)


@dataclass
class FileSlice:
    partition: str
    file_id: str
    base_instant: str
    base_file: BaseFile | None = None
    log_files: list[LogFile] = field(default_factory=list)

    @property
    def log_size(self) -> int:
        return sum(lf.size for lf in self.log_files)

    @property
    def base_size(self) -> int:
        return self.base_file.size if self.base_file else 0

    @property
    def has_logs(self) -> bool:
        return bool(self.log_files)

    def estimated_parquet_size(self, log_to_parquet_ratio: float) -> int:
        """Hudi's estimate of this slice's size once compacted (base + logs x ratio)."""
        logs = sum(lf.size for lf in self.log_files if lf.size > 0)
        return self.base_size + int(logs * log_to_parquet_ratio)

    def all_paths(self) -> list[str]:
        paths = [lf.path for lf in self.log_files]
        if self.base_file:
            paths.insert(0, self.base_file.path)
        return paths


@dataclass
class FileGroup:
    partition: str
    file_id: str
    slices: list[FileSlice] = field(default_factory=list)  # ascending base instant

    def latest_slice(self, before_or_on: str | None = None) -> FileSlice | None:
        for s in reversed(self.slices):
            if before_or_on is None or s.base_instant <= before_or_on:
                return s
        return None


@dataclass(frozen=True)
class PendingCompaction:
    instant: str
    partition: str
    file_id: str


def _add_base(slices: dict[tuple[str, str], FileSlice], bf: BaseFile, info: FileInfo) -> None:
    sl = slices.setdefault((bf.file_id, bf.instant), FileSlice(bf.partition, bf.file_id, bf.instant))
    if sl.base_file is not None:
        log.warning("two base files for file group %s at %s in %r: %s and %s; keeping the first (a leftover "
                    "of a failed task attempt)", bf.file_id, bf.instant, bf.partition, sl.base_file.name, info.name)
        return
    sl.base_file = bf


def _log_order(lf: LogFile) -> tuple[str, int, str]:
    """Hudi's log-file order (HoodieLogFile's comparator), in both layouts: the instant in the name, the
    version, the write token. On layout 2 the instant is the writing commit's requested time, so two
    overlapping commits' logs apply in the order they started, not completed (hudi-rs differs)."""
    return lf.base_instant, lf.version, lf.write_token


class FileSystemView:
    """File groups of a table, filtered by the timeline's committed instants."""

    def __init__(
        self,
        storage: Storage,
        config: TableConfig,
        timeline: ActiveTimeline,
        *,
        pending_compactions: Iterable[PendingCompaction] = (),
        pending_clustering: dict[tuple[str, str], str] | None = None,
        partition_filter: PartitionFilter | None = None,
    ) -> None:
        self.storage = storage
        self.config = config
        self.timeline = timeline
        self.partition_filter = partition_filter
        self._pending_compactions = list(pending_compactions)
        self._pending_clustering = dict(pending_clustering or {})
        self._listing: dict[str, list[FileInfo]] = {}
        self._groups: dict[str, list[FileGroup]] = {}
        self._replaced_by_partition: dict[str, frozenset[str]] = {}

    # -- timeline-derived facts --------------------------------------------------------
    @cached_property
    def committed_instants(self) -> frozenset[str]:
        return frozenset(i.timestamp for i in self.timeline.write_timeline().completed())

    @cached_property
    def _first_active(self) -> str | None:
        """Start of the active write timeline; older data instants were archived (Hudi's
        containsOrBeforeTimelineStarts). Cleans and rollbacks are archived on their own schedule,
        so they must not move this cutoff."""
        first = self.timeline.write_timeline().first()
        return first.timestamp if first else None

    @cached_property
    def pending_compaction_instants(self) -> frozenset[str]:
        return frozenset(i.timestamp for i in self.timeline.actions(Action.COMPACTION).pending())

    def is_committed(self, instant: str, as_of: str | None = None) -> bool:
        if as_of is not None and instant > as_of:
            return False
        if instant in self.committed_instants:
            return True
        # Older than everything on the active timeline: archived, hence committed.
        return self._first_active is not None and instant < self._first_active and \
            not self.timeline.contains(instant)

    def replaced_file_ids(self, as_of: str | None = None) -> set[tuple[str, str]]:
        """(partition, fileId) replaced by completed replacecommits at or before `as_of`, in every partition
        (listings of the whole table; a query of some partitions asks `replaced_in`)."""
        return {(partition, fid) for ids in self._replace_maps(as_of)
                for partition, fids in ids.items() for fid in fids}

    def replaced_in(self, partition: str, as_of: str | None = None) -> frozenset[str]:
        """File ids of `partition` replaced at or before `as_of`: one lookup per replacecommit, so a view
        of one partition costs no set of every partition a whole-table clustering replaced."""
        if as_of is None and partition in self._replaced_by_partition:
            return self._replaced_by_partition[partition]
        out = frozenset(fid for ids in self._replace_maps(as_of) for fid in ids.get(partition))
        if as_of is None:
            self._replaced_by_partition[partition] = out
        return out

    def _replace_maps(self, as_of: str | None) -> list[ReplacedIds]:
        """Each completed replacecommit's replaced ids (at or before `as_of`), as the timeline decoded them."""
        return [self.timeline.replaced_ids(inst) for inst in self.timeline.actions(Action.REPLACE_COMMIT).completed()
                if as_of is None or inst.timestamp <= as_of]

    def pending_compaction_file_ids(self) -> dict[tuple[str, str], str]:
        return {(p.partition, p.file_id): p.instant for p in self._pending_compactions}

    def pending_clustering_file_ids(self) -> dict[tuple[str, str], str]:
        return dict(self._pending_clustering)

    # -- listing -------------------------------------------------------------------------
    @cached_property
    def partition_paths(self) -> list[str]:
        """Partitions as Hudi finds them (directories with a partition metafile, at any depth),
        discovered once per view; the walk's listings of them are kept for `_list`."""
        found = list_partition_files(self.storage, self.config, self.partition_filter)
        for partition, files in found.items():
            if files is not None:
                self._listing.setdefault(partition, files)
        return sorted(found)

    def existing_partitions(self, candidates: Iterable[str]) -> list[str]:
        """Those of `candidates` that are partitions of the table, listing only them (one LIST each,
        kept for `file_groups`) unless the whole table was discovered already: a write touching a few
        partitions costs requests for those, not for the whole table (Hudi's index lookup also takes
        only the incoming records' partitions)."""
        wanted = sorted(set(candidates))
        if "partition_paths" in self.__dict__ or self.partition_filter is not None or not self.config.is_partitioned:
            known = set(self.partition_paths)
            return [p for p in wanted if p in known]
        return [p for p in wanted if p and any(i.name.startswith(PARTITION_METAFILE) for i in self._list(p))]

    def partitions_of(self, candidates: Iterable[str] | None) -> list[str]:
        """The partitions an operation over `candidates` touches (`existing_partitions`); None: every
        partition of the table (a global index, a whole-table service, a stream not read yet)."""
        return self.partition_paths if candidates is None else self.existing_partitions(candidates)

    def listing(self, partition: str) -> list[FileInfo]:
        """The files (not directories) of one partition as this view listed them, listed on first use."""
        return self._list(partition)

    def _list(self, partition: str) -> list[FileInfo]:
        if partition not in self._listing:
            self._listing[partition] = [i for i in self.storage.list_dir(partition) if not i.is_dir]
        return self._listing[partition]

    def file_groups(self, partition: str) -> list[FileGroup]:
        """All file groups of a partition (replaced ones included), slices built from visible files."""
        if partition not in self._groups:
            self._groups[partition] = self._build_groups(partition)
        return self._groups[partition]

    def _build_groups(self, partition: str) -> list[FileGroup]:
        if self.timeline.layout.is_v2:
            slices = self._slices_by_completion(partition)
        else:
            slices = self._slices_by_base_instant(partition)
        groups: dict[str, FileGroup] = {}
        for (fid, _), sl in sorted(slices.items(), key=lambda kv: kv[0]):
            sl.log_files.sort(key=_log_order)
            groups.setdefault(fid, FileGroup(partition, fid)).slices.append(sl)
        return list(groups.values())

    def _parsed(self, partition: str) -> tuple[list[tuple[FileInfo, BaseFile]], list[LogFile]]:
        bases: list[tuple[FileInfo, BaseFile]] = []
        logs: list[LogFile] = []
        for info in self._list(partition):
            base = parse_base_file(info.name)
            if base is not None:
                bases.append((info, BaseFile(partition, info.name, base.file_id, base.write_token, base.instant,
                                             info.size)))
                continue
            lf = parse_log_file(info.name)
            if lf is not None:
                logs.append(LogFile(partition, info.name, lf.file_id, lf.base_instant, lf.version,
                                    lf.write_token or "", info.size))
        return bases, logs

    def _slices_by_base_instant(self, partition: str) -> dict[tuple[str, str], FileSlice]:
        """Layout 1: a file's slice is the base instant in its name. A log attaches to a slice whose base
        instant is committed (including a log-only slice started by a completed deltacommit) or is a
        pending compaction; uncommitted blocks inside visible logs are dropped later, block by block."""
        bases, logs = self._parsed(partition)
        slices: dict[tuple[str, str], FileSlice] = {}
        for info, bf in bases:
            if self.is_committed(bf.instant):
                _add_base(slices, bf, info)
        for lf in logs:
            if self.is_committed(lf.base_instant) or lf.base_instant in self.pending_compaction_instants:
                slices.setdefault((lf.file_id, lf.base_instant),
                                  FileSlice(partition, lf.file_id, lf.base_instant)).log_files.append(lf)
        return slices

    def _slices_by_completion(self, partition: str) -> dict[tuple[str, str], FileSlice]:
        """Timeline layout 2, as Hudi 1.x's AbstractTableFileSystemView#buildFileGroups and
        HoodieFileGroup#getBaseInstantTime build slices. Every base file (committed or not) and every
        pending compaction opens a slice; logs are then added in log-file order, each naming the delta
        commit that wrote it: it joins the slice of the latest start at or before that commit's
        completion time, or opens a log-only slice at its own instant when there is none; a log whose
        commit has not completed joins the group's latest slice. Files of uncommitted instants, and
        slices opened by uncommitted base files, are then dropped (filterUncommittedFiles,
        isFileSliceCommitted). Logs written before the table's upgrade name their slice's base instant,
        which completed after it: the same rule keeps them in their slice."""
        bases, logs = self._parsed(partition)
        starts: dict[str, set[str]] = {}
        for _, bf in bases:
            starts.setdefault(bf.file_id, set()).add(bf.instant)
        for (part, fid), instant in self.pending_compaction_file_ids().items():
            if part == partition:
                starts.setdefault(fid, set()).add(instant)
        placed: list[tuple[str, LogFile]] = []
        for lf in sorted(logs, key=_log_order):
            keys = starts.setdefault(lf.file_id, set())
            key = self._log_slice(lf.base_instant, keys)
            keys.add(key)
            placed.append((key, lf))
        slices: dict[tuple[str, str], FileSlice] = {}
        for info, bf in bases:
            if self.is_committed(bf.instant):
                _add_base(slices, bf, info)
        for key, lf in placed:
            opened = self.is_committed(key) or key in self.pending_compaction_instants
            if opened and self.is_committed(lf.base_instant):
                slices.setdefault((lf.file_id, key), FileSlice(partition, lf.file_id, key)).log_files.append(lf)
        return slices

    def _log_slice(self, instant: str, keys: set[str]) -> str:
        """The start of the slice a log written by `instant` joins, among a group's slice starts."""
        if not keys:
            return instant
        latest = max(keys)
        done = self.completion_of(instant)
        if done is None:
            return latest  # a pending log "always belongs to the latest file slice"
        if len(done) != len(latest):
            done = instant  # Hudi's legacy fix: completion and instant times of different precision
        earlier = [k for k in keys if k <= done]
        return max(earlier) if earlier else instant

    def completion_of(self, instant: str) -> str | None:
        """When a completed instant completed (layout 2); None if it has not, or is unknown. An instant
        older than the active timeline takes its time from the LSM history, as Hudi's
        CompletionTimeQueryViewV2 loads it."""
        found = self.timeline.completion_time(instant)
        if found is not None or self._first_active is None or instant >= self._first_active:
            return found
        return self._archived_completion.get(instant)

    @cached_property
    def _archived_completion(self) -> dict[str, str]:
        """Completion times of the instants before the active timeline: only those are looked up here,
        so only the history files below its start are read."""
        from pyhudi.timeline.history import history_completion_times

        return history_completion_times(self.storage, self.timeline.layout.history_dir, end=self._first_active)

    # -- queries ---------------------------------------------------------------------------
    def live_groups(self, partition: str, as_of: str | None = None) -> list[FileGroup]:
        replaced = self.replaced_in(partition, as_of)
        return [g for g in self.file_groups(partition) if g.file_id not in replaced]

    def latest_base_files(self, partition: str, as_of: str | None = None) -> list[BaseFile]:
        """Latest committed base file of each live group, as a COW reader sees the table."""
        out = []
        for group in self.live_groups(partition, as_of):
            for sl in reversed(group.slices):
                if sl.base_file is not None and self.is_committed(sl.base_instant, as_of):
                    out.append(sl.base_file)
                    break
        return out

    def latest_file_slices(self, partition: str, as_of: str | None = None,
                           include_pending_compaction: bool = True) -> list[FileSlice]:
        """Latest slice of each live group at `as_of`.

        With `include_pending_compaction=False` every group with a pending compaction is dropped,
        which is what Hudi's MOR small-file selection does.
        """
        pending = self.pending_compaction_file_ids()
        out = []
        for group in self.live_groups(partition, as_of):
            if not include_pending_compaction and (partition, group.file_id) in pending:
                continue
            sl = self._latest_slice(group, as_of)
            if sl is not None:
                out.append(sl)
        return out

    def _latest_slice(self, group: FileGroup, as_of: str | None) -> FileSlice | None:
        for sl in reversed(group.slices):
            if as_of is not None and sl.base_instant > as_of:
                continue
            if sl.base_file is None and not sl.log_files:
                continue
            return sl
        return None

    def latest_merged_file_slices(self, partition: str, as_of: str | None = None) -> list[FileSlice]:
        """Latest slice of each live group as a reader must merge it.

        While a compaction C is pending, new logs are written against C, forming a slice with no
        base file yet; readers merge those logs onto the previous slice (Hudi's merged file slice).
        """
        pending = self.pending_compaction_instants
        out = []
        for group in self.live_groups(partition, as_of):
            sl = self._latest_slice(group, as_of)
            if sl is None:
                continue
            if sl.base_file is None and sl.base_instant in pending:
                prev = next((s for s in reversed(group.slices) if s.base_instant < sl.base_instant
                             and (s.base_file is not None or s.log_files)), None)
                if prev is not None:
                    sl = FileSlice(partition, group.file_id, prev.base_instant, prev.base_file,
                                   [*prev.log_files, *sl.log_files])
            out.append(sl)
        return out

    def log_target(self, partition: str, file_id: str) -> tuple[str, int]:
        """(base instant, next version) for a new log file of a group: the pending compaction's instant
        if there is one, else the latest slice's base instant; versions are never reused. On layout 2 the
        name carries the writing commit instead (writer/append_handle.log_name_instant)."""
        group = next((g for g in self.file_groups(partition) if g.file_id == file_id), None)
        pending = self.pending_compaction_file_ids().get((partition, file_id))
        if group is None:
            return pending or "", 1
        if pending is not None:
            base = pending
        else:
            latest = self._latest_slice(group, None)
            base = latest.base_instant if latest else ""
        if self.timeline.layout.is_v2:
            # Layout 2 names a log by its own commit (the slice is found by completion time); the version
            # continues the slice's latest, as Hudi 1.1's HoodieWriteHandle#createLogWriter numbers it.
            versions = [lf.version for s in group.slices if s.base_instant == base for lf in s.log_files]
        else:
            versions = [lf.version for s in group.slices for lf in s.log_files if lf.base_instant == base]
        return base, max(versions, default=0) + 1

    def all_latest_merged_file_slices(self, as_of: str | None = None) -> list[FileSlice]:
        return [sl for p in self.partition_paths for sl in self.latest_merged_file_slices(p, as_of)]

    def all_latest_base_files(self, as_of: str | None = None) -> list[BaseFile]:
        return [bf for p in self.partition_paths for bf in self.latest_base_files(p, as_of)]

    def all_latest_file_slices(self, as_of: str | None = None) -> list[FileSlice]:
        return [sl for p in self.partition_paths for sl in self.latest_file_slices(p, as_of)]

