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
from collections.abc import Sequence
from typing import Any

from pyhudi.cli import files_plot, render
from pyhudi.cli.common import (
    OpenTable,
    add_option_argument,
    guarded,
    open_table,
    parse_options,
    parse_size,
)
from pyhudi.cli.files_collect import BUCKET_LABELS, ROOT_LABEL, Limits, bucket_of, collect, histogram
from pyhudi.config import keys
from pyhudi.errors import InvalidConfigError

__all__ = ["BUCKET_LABELS", "Limits", "add_arguments", "bucket_of", "collect", "histogram", "main", "register", "run"]


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
