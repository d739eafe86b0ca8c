"""What `pyhudi files` and `pyhudi files --plot` report: file groups per partition and a size histogram.

Kept apart from the command (files_cmd.py) and the plot (files_plot.py) so both import the numbers from
here and neither imports the other: the listing and the plot always agree because they share this code.
Only names and sizes are read; no data file is opened.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pyhudi.cli import render
from pyhudi.cli.common import OpenTable, table_header
from pyhudi.errors import HudiError
from pyhudi.view.builder import build_view
from pyhudi.view.file_system_view import FileGroup, FileSystemView

BUCKET_LABELS = ("< 10% of limit", "10-50% of limit", "50-100% of limit (small)", "limit .. max",
                 "max .. 1.1x max", "> 1.1x max")
ROOT_LABEL = "(table root)"


@dataclass(frozen=True)
class Limits:
    """The sizes files are judged against, and where each came from (shown in output and plot legends)."""

    small_file_limit: int
    max_file_size: int
    limit_source: str = "default"
    max_source: str = "default"


def bucket_of(size: int, limit: int, max_size: int) -> int:
    """Index into BUCKET_LABELS; integer arithmetic so boundaries are exact (small = strictly < limit,
    as in Hudi; [limit, 1.1 x max] is the well-sized band)."""
    if size * 10 < limit:
        return 0
    if size * 2 < limit:
        return 1
    if size < limit:
        return 2
    if size <= max_size:
        return 3
    if size * 10 <= max_size * 11:
        return 4
    return 5


def bucket_ranges(limit: int, max_size: int) -> list[str]:
    """Byte ranges of the buckets, for the reader who does not want to do the arithmetic."""
    hb = render.human_bytes
    return [f"< {hb(limit // 10)}", f"{hb(limit // 10)} .. {hb(limit // 2)}", f"{hb(limit // 2)} .. {hb(limit)}",
            f"{hb(limit)} .. {hb(max_size)}", f"{hb(max_size)} .. {hb(max_size * 11 // 10)}",
            f"> {hb(max_size * 11 // 10)}"]


def histogram(sizes: list[int], limit: int, max_size: int) -> dict[str, Any]:
    """Buckets (count, bytes) plus the totals the command prints under them."""
    counts, totals = [0] * len(BUCKET_LABELS), [0] * len(BUCKET_LABELS)
    for size in sizes:
        b = bucket_of(size, limit, max_size)
        counts[b] += 1
        totals[b] += size
    total = sum(sizes)
    well = sum(s for s in sizes if limit <= s and s * 10 <= max_size * 11)
    return {
        "buckets": [{"label": label, "range": rng, "files": c, "bytes": b}
                    for label, rng, c, b in zip(BUCKET_LABELS, bucket_ranges(limit, max_size), counts, totals, strict=True)],
        "files": len(sizes),
        "bytes": total,
        "small_files": sum(1 for s in sizes if s < limit),
        "ideal_file_count": math.ceil(total / max_size) if total else 0,
        "well_sized_bytes": well,
        "well_sized_pct": round(100.0 * well / total, 1) if total else None,
    }


def collect(t: OpenTable, limit: int, max_size: int, partition: str | None = None,
            as_of: str | None = None) -> dict[str, Any]:
    """The listing and histogram; with `as_of`, as a reader at that instant saw the table (slices and
    replacements up to it, log files written by later delta commits left out, plans pending then)."""
    view = build_view(t.storage, t.config, t.timeline)
    partitions = _select_partitions(view, partition)
    replaced = view.replaced_file_ids(as_of)
    compacting = _pending_at(view.pending_compaction_file_ids(), as_of)
    clustering = _pending_at(view.pending_clustering_file_ids(), as_of)
    later_logs = logs_written_after(t, as_of) if as_of is not None else set()
    out_parts, live_sizes, live_groups, log_bytes = [], [], 0, 0
    for p in partitions:
        rows = [r for g in view.file_groups(p)
                if (r := _group_row(g, replaced, compacting, clustering, as_of, later_logs)) is not None]
        if as_of is not None and not rows:
            continue  # the partition did not exist yet
        live = [r for r in rows if not r["replaced"]]
        sizes = [r["base_size"] for r in live if r["base_file"] is not None]
        live_sizes.extend(sizes)
        live_groups += len(live)
        log_bytes += sum(r["log_bytes"] for r in live)
        out_parts.append({"partition": p, "file_groups": rows, "summary": {
            "file_groups": len(rows), "live": len(live), "replaced": len(rows) - len(live),
            "base_bytes": sum(sizes), "log_files": sum(r["log_files"] for r in live),
            "log_bytes": sum(r["log_bytes"] for r in live), "small_files": sum(1 for s in sizes if s < limit),
        }})
    hist = histogram(live_sizes, limit, max_size)
    return {
        "table": table_header(t), "as_of": as_of, "small_file_limit": limit, "max_file_size": max_size,
        "partitions": out_parts, "histogram": hist["buckets"],
        "totals": {"live_file_groups": live_groups, "base_files": hist["files"], "bytes": hist["bytes"],
                   "log_bytes": log_bytes, "small_files": hist["small_files"],
                   "ideal_file_count": hist["ideal_file_count"], "well_sized_bytes": hist["well_sized_bytes"],
                   "well_sized_pct": hist["well_sized_pct"],
                   "max_small_files_per_partition": max(
                       (int(pp["summary"]["small_files"]) for pp in out_parts), default=0)},  # type: ignore[index]
    }


def _select_partitions(view: FileSystemView, partition: str | None) -> list[str]:
    paths = view.partition_paths
    if partition is None:
        return paths
    wanted = partition.strip("/")
    if wanted not in paths:
        shown = ", ".join(p or ROOT_LABEL for p in paths[:10]) + (", ..." if len(paths) > 10 else "")
        raise HudiError(f"partition {partition!r} not found in {view.storage.base_uri}; partitions: "
                        f"{shown or 'none'}")
    return [wanted]


def _pending_at(pending: dict[tuple[str, str], str], as_of: str | None) -> dict[tuple[str, str], str]:
    """Plans pending now were pending at `as_of` too if they were scheduled by then."""
    return {k: ts for k, ts in pending.items() if as_of is None or ts <= as_of}


def logs_written_after(t: OpenTable, as_of: str) -> set[str]:
    """Paths of log files first written by a delta commit after `as_of`: their base instant can be older,
    so only the write stats tell that a reader at `as_of` did not see them. (A log file another engine
    appended to later still counts at its current size.)"""
    from pyhudi.timeline.instant import WRITE_ACTIONS

    before: set[str] = set()
    after: set[str] = set()
    for inst in t.timeline.completed():
        if inst.action not in WRITE_ACTIONS:
            continue
        paths = {s.path for s in t.timeline.commit_metadata(inst).all_stats() if s.path and s.is_delta}
        (before if inst.timestamp <= as_of else after).update(paths)
    return after - before


def _group_row(g: FileGroup, replaced: set[tuple[str, str]], compacting: dict[tuple[str, str], str],
               clustering: dict[tuple[str, str], str], as_of: str | None = None,
               later_logs: set[str] | frozenset[str] = frozenset()) -> dict[str, Any] | None:
    """One file group's row; None when the group had no file yet at `as_of`."""
    key = (g.partition, g.file_id)
    slices = []
    for s in g.slices:
        if as_of is not None and s.base_instant > as_of:
            continue
        logs_then = [lf for lf in s.log_files if lf.path not in later_logs]
        if s.base_file is not None or logs_then:
            slices.append((s, logs_then))
    if not slices:
        return None
    base = next((s.base_file for s, _ in reversed(slices) if s.base_file is not None), None)
    logs = slices[-1][1]
    return {
        "file_id": g.file_id, "base_file": base.name if base else None, "base_size": base.size if base else 0,
        "base_instant": base.instant if base else None, "versions": len(slices),
        "log_files": len(logs), "log_bytes": sum(lf.size for lf in logs),
        "replaced": key in replaced, "pending_compaction": compacting.get(key),
        "pending_clustering": clustering.get(key),
    }
