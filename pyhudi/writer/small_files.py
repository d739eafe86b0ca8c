"""Which existing files may take new inserts (Hudi's getSmallFiles)."""

from __future__ import annotations

from collections.abc import Iterable

from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.file_system_view import FileSystemView
from pyhudi.writer.config import SizingConfig
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
