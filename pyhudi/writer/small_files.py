"""Which existing files may take new inserts (Hudi's getSmallFiles)."""

from __future__ import annotations

from collections.abc import Iterable

from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.file_system_view import FileSystemView
from pyhudi.writer.config import SizingConfig, WriteConfig
from pyhudi.writer.partitioner import SmallFile


def cow_small_files(view: FileSystemView, timeline: ActiveTimeline, partitions: Iterable[str],
                    sizing: SizingConfig) -> dict[str, list[SmallFile]]:
    """Latest base files strictly below the small-file limit, in view order, unsorted and uncapped.

    Replaced groups are already hidden by the view; groups under pending clustering are dropped.
    """
    if sizing.small_file_limit <= 0 or not timeline.commits().completed():
        return {}
    clustering = view.pending_clustering_file_ids()
    out: dict[str, list[SmallFile]] = {}
    for partition in partitions:
        files = []
        for bf in view.latest_base_files(partition):
            if (partition, bf.file_id) in clustering or bf.size >= sizing.small_file_limit:
                continue
            files.append(SmallFile(partition, bf.file_id, bf.instant, bf.size, bf.path))
        if files:
            out[partition] = files
    return out


def mor_small_files(view: FileSystemView, timeline: ActiveTimeline, partitions: Iterable[str],
                    sizing: SizingConfig, log_aware_index: bool) -> dict[str, list[SmallFile]]:
    """Hudi's SparkUpsertDeltaCommitPartitioner.getSmallFileCandidates.

    Both branches start from the latest slices *without* file groups under pending compaction, and
    drop groups under pending clustering.

    * Index sees logs: every slice whose estimated size (base + logs x ratio) is below the max file
      size, uncapped, with that estimate as its size; inserts will be appended to its logs.
    * Index cannot see logs: only slices with no log files and a base file below the small-file
      limit, smallest first, at most `hoodie.merge.small.file.group.candidates.limit` per partition.
    """
    if not timeline.commits().completed():
        return {}
    if not log_aware_index and sizing.small_file_limit <= 0:
        return {}
    clustering = view.pending_clustering_file_ids()
    out: dict[str, list[SmallFile]] = {}
    for partition in partitions:
        slices = [s for s in view.latest_file_slices(partition, include_pending_compaction=False)
                  if (partition, s.file_id) not in clustering]
        if log_aware_index:
            files = []
            for s in slices:
                size = s.estimated_parquet_size(sizing.log_to_parquet_ratio)
                if size < sizing.max_file_size:
                    files.append(SmallFile(partition, s.file_id, s.base_instant, size,
                                           s.base_file.path if s.base_file else None))
        else:
            eligible = sorted((s for s in slices if not s.log_files and s.base_file is not None
                               and s.base_size < sizing.small_file_limit), key=lambda s: s.base_size)
            files = [SmallFile(partition, s.file_id, s.base_instant, s.base_size,
                               s.base_file.path if s.base_file else None)
                     for s in eligible[: max(0, sizing.small_file_candidates_limit)]]
        if files:
            out[partition] = files
    return out


def small_file_candidates(cfg: WriteConfig, view: FileSystemView, timeline: ActiveTimeline,
                          partitions: Iterable[str]) -> dict[str, list[SmallFile]]:
    """The small files a write of `cfg`'s operation and table type may top up in `partitions`."""
    if not cfg.operation.uses_small_files:
        return {}
    if cfg.table.is_mor:
        return mor_small_files(view, timeline, partitions, cfg.sizing, cfg.index.can_index_log_files)
    return cow_small_files(view, timeline, partitions, cfg.sizing)
