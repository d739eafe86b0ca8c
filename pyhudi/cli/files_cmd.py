"""`pyhudi files PATH`: file groups per partition and how well they are sized.

The point of pyhudi is Hudi's file sizing, so this command answers "are my
files the right size?": a listing of file groups (from the same
FileSystemView the writer uses, so it agrees with what the writer sees) and a
histogram of the latest base files of live groups against the small-file
limit and max file size. Only names and sizes are read; no data file is
opened and Spark is never started. `--as-of` shows the table as a reader at
that instant saw it; `--plot` draws the same numbers (files_plot.py).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyhudi.cli import render
from pyhudi.cli.common import (
    OpenTable,
    add_option_argument,
    guarded,
    open_table,
    parse_options,
    parse_size,
    table_header,
)
from pyhudi.config import keys
from pyhudi.errors import HudiError, InvalidConfigError
from pyhudi.view.builder import build_view
from pyhudi.view.file_system_view import FileGroup, FileSystemView

BUCKET_LABELS = ("< 10% of limit", "10-50% of limit", "50-100% of limit (small)", "limit .. max",
                 "max .. 1.1x max", "> 1.1x max")
ROOT_LABEL = "(table root)"


def register(sub: Any) -> None:
    p = sub.add_parser("files", help="list file groups and a file size histogram",
                       description="File groups per partition, then latest base file sizes of live groups "
                                   "against the small-file limit and max file size.")
    add_arguments(p)
    p.set_defaults(func=run)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", help="table base path")
    p.add_argument("--partition", default=None, metavar="P", help="only this partition path (e.g. city=sf)")
    p.add_argument("--small-file-limit", type=parse_size, default=None, metavar="BYTES",
                   help=f"hoodie.parquet.small.file.limit (default {keys.PARQUET_SMALL_FILE_LIMIT.default})")
    p.add_argument("--max-file-size", type=parse_size, default=None, metavar="BYTES",
                   help=f"hoodie.parquet.max.file.size (default {keys.PARQUET_MAX_FILE_SIZE.default})")
    add_option_argument(p, "hoodie.parquet.max.file.size=134217728")
    p.add_argument("--as-of", dest="as_of", action="append", default=[], metavar="INSTANT",
                   help="the table as of this instant (or 'latest'); repeat it, or give a comma list, for "
                        "side-by-side --plot panels (at most 6)")
    p.add_argument("--plot", default=None, metavar="OUT.png|OUT.html",
                   help="draw the base file size distribution against the limits, one panel per --as-of")
    p.add_argument("--json", action="store_true", help="machine-readable JSON")


def main(argv: Sequence[str] | None = None) -> int:
    """`pyhudi files ...` without the dispatcher, for callers such as pyhudi.demo."""
    parser = argparse.ArgumentParser(prog="pyhudi files")
    add_arguments(parser)
    args = parser.parse_args(argv)
    return guarded(run, args, "pyhudi files")


def run(args: argparse.Namespace) -> int:
    from pyhudi.cli import files_plot

    fmt = files_plot.plot_format(args.plot) if args.plot else None  # a bad extension fails before any work
    as_of = files_plot.parse_as_of(args.as_of)
    if fmt is None and len(as_of) > 1:
        raise InvalidConfigError(f"{len(as_of)} --as-of values given without --plot; the listing shows one "
                                 "instant, give several only with --plot OUT.png|OUT.html")
    t = open_table(args.path)
    limits = effective_limits(args, t)
    if fmt is not None:
        return files_plot.plot(t, limits, as_of or [None], args.partition, args.plot, fmt, args.json)
    at = files_plot.resolve_as_of(t, as_of[0]) if as_of else None
    data = collect(t, limits.small_file_limit, limits.max_file_size, args.partition, at)
    data["limit_sources"] = {"small_file_limit": limits.limit_source, "max_file_size": limits.max_source}
    if args.json:
        render.emit_json(data)
    else:
        render.emit(render_text(data))
    return 0


@dataclass(frozen=True)
class Limits:
    """The sizes files are judged against, and where each came from (shown in output and plot legends)."""

    small_file_limit: int
    max_file_size: int
    limit_source: str = "default"
    max_source: str = "default"


def effective_limits(args: argparse.Namespace, t: OpenTable) -> Limits:
    """Flag, else `-o hoodie.parquet.*`, else the key in hoodie.properties (Hudi does not persist write
    configs there, but a table created by other tools may carry them), else the registry default.
    Writers' options are not recorded in commits, so nothing more specific can be read from the table."""
    _, parsed = parse_options(getattr(args, "options", []) or [], "pyhudi files")

    def pick(flag: int | None, flag_name: str, prop: Any) -> tuple[int, str]:
        if flag is not None:
            return int(flag), flag_name
        if parsed.is_set(prop):
            return int(parsed.get(prop)), f"-o {prop.key}"
        if prop.key in t.config.raw:
            return int(prop.parse(t.config.raw[prop.key])), "hoodie.properties"
        return int(prop.default), "default"

    limit, limit_src = pick(args.small_file_limit, "--small-file-limit", keys.PARQUET_SMALL_FILE_LIMIT)
    max_size, max_src = pick(args.max_file_size, "--max-file-size", keys.PARQUET_MAX_FILE_SIZE)
    if max_size <= 0:
        raise InvalidConfigError(f"max file size ({max_src}) must be positive, got {max_size}")
    return Limits(max(0, limit), max_size, limit_src, max_src)


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


def _flags(r: dict[str, Any]) -> str:
    flags = []
    if r["replaced"]:
        flags.append("replaced")
    if r["pending_compaction"]:
        flags.append(f"compaction@{r['pending_compaction']}")
    if r["pending_clustering"]:
        flags.append(f"clustering@{r['pending_clustering']}")
    return ",".join(flags)


def _source(source: str | None) -> str:
    """Where a limit came from, unless the user just typed it as a flag."""
    return f" ({source})" if source and not source.startswith("--") else ""


def render_text(data: dict[str, Any]) -> list[str]:
    tbl, hb = data["table"], render.human_bytes
    mor = tbl["type"] == "MERGE_ON_READ"
    src = data.get("limit_sources") or {}
    lines = [f"table {tbl['name']}  ({tbl['type']}, version {tbl['version']})  {tbl['path']}"
             + (f"  as of {data['as_of']}" if data.get("as_of") else ""),
             f"small-file limit {hb(data['small_file_limit'])}{_source(src.get('small_file_limit'))}, "
             f"max file size {hb(data['max_file_size'])}{_source(src.get('max_file_size'))}"]
    for part in data["partitions"]:
        s = part["summary"]
        text = (f"partition {part['partition'] or ROOT_LABEL}: {render.plural(s['file_groups'], 'file group')} "
                f"({s['live']} live" + (f", {s['replaced']} replaced" if s["replaced"] else "")
                + f"), {hb(s['base_bytes'])} in live base files")
        if mor:
            text += f", {render.plural(s['log_files'], 'log file')} ({hb(s['log_bytes'])})"
        lines += ["", text + f", {s['small_files']} small"]
        headers = ["FILE ID", "BASE SIZE", "BASE INSTANT", "VERSIONS"] + (["LOGS", "LOG SIZE"] if mor else [])
        rows = []
        for r in part["file_groups"]:
            row = [r["file_id"], hb(r["base_size"]) if r["base_file"] else "-", r["base_instant"] or "-",
                   r["versions"]] + ([r["log_files"], hb(r["log_bytes"])] if mor else [])
            rows.append(row + [_flags(r)])
        if rows:
            right = [1, 3] + ([4, 5] if mor else [])
            lines += render.table(headers + ["FLAGS"], rows, right=right, indent="  ")
    if not data["partitions"]:
        lines += ["", "(no partitions)"]
    lines += ["", "latest base files of live file groups:"]
    tot = data["totals"]
    most = max((b["files"] for b in data["histogram"]), default=0)
    rows = [[b["label"], b["range"], b["files"], hb(b["bytes"]), render.percent(b["bytes"], tot["bytes"]),
             render.bar(b["files"], most)] for b in data["histogram"]]
    lines += render.table(["BUCKET", "RANGE", "FILES", "BYTES", "% BYTES", ""], rows, right=[2, 3, 4],
                          indent="  ")
    well = "-" if tot["well_sized_pct"] is None else f"{tot['well_sized_pct']:.1f}%"
    lines += ["", f"live file groups: {tot['live_file_groups']} ({tot['base_files']} with a base file, "
                  f"{tot['small_files']} small)",
              f"total base bytes: {hb(tot['bytes'])}" + (f", log bytes: {hb(tot['log_bytes'])}" if mor else ""),
              f"ideal file count: {tot['ideal_file_count']} (ceil(total / max file size))",
              f"bytes in well-sized files [limit, 1.1x max]: {well}"]
    if tot["small_files"] and tot["max_small_files_per_partition"] <= 1:
        lines.append("(each small file is the only one in its partition: the newest file group, still filling; "
                     "the next commit with inserts tops it up)")
    return lines
