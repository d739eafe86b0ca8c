"""`pyhudi files PATH --plot OUT.png|OUT.html [--as-of INSTANT ...]`: file sizes as a picture.

One panel per `--as-of` instant (before/after a clustering, a week of
ingest ...), each a histogram of the latest base files of live file groups
by size, with the small-file limit and max file size drawn as lines and the
well-sized band [limit, 1.1 x max] shaded. Bars are stacked bytes (base, and
log bytes of the same file groups on merge-on-read tables), labelled with the
number of base files, so both "how many small files" and "where do the bytes
sit" read off one chart; the headline number is the share of bytes in
well-sized files, the same one `pyhudi files` prints.

The numbers come from `files_collect.collect`, so a plot and `pyhudi files
--json --as-of X` always agree. Files are binned (at most MAX_BINS bins,
shared by all panels so they compare), never drawn one bar per file, so a
table with millions of files plots as fast as one with ten. PNG needs
matplotlib (imported only here, Agg canvas, no pyplot state); HTML is a
self-contained page with inline SVG written by plot_html.py, no network and
no matplotlib needed.
"""

from __future__ import annotations

import math
import os
from typing import Any

from pyhudi.cli import render
from pyhudi.cli.common import OpenTable, table_header
from pyhudi.cli.files_collect import Limits, collect
from pyhudi.cli.plot_labels import panel_subtitle, panel_title
from pyhudi.errors import InstantNotFoundError, InvalidConfigError

PLOT_FORMATS = {".png": "png", ".html": "html", ".htm": "html"}
MAX_PANELS = 6
MAX_BINS = 60
LATEST = "latest"


def plot_format(path: str) -> str:
    """`png` or `html` from the output's extension; anything else is refused before any work is done."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in PLOT_FORMATS:
        shown = ext or "no extension"
        raise InvalidConfigError(f"--plot {path!r}: cannot write {shown}; give a file name ending in "
                                 f"{', '.join(PLOT_FORMATS)} (PNG image, or a self-contained HTML page)")
    return PLOT_FORMATS[ext]


def parse_as_of(values: list[str]) -> list[str | None]:
    """Repeated and comma-separated `--as-of` values, in order; `latest` is None (the current table)."""
    from pyhudi.model.instant_time import normalize_instant

    items = [item for value in values for item in (v.strip() for v in value.split(",")) if item]
    if len(items) > MAX_PANELS:
        raise InvalidConfigError(f"{len(items)} --as-of instants given; at most {MAX_PANELS} panels fit in one "
                                 "plot, give fewer instants or make several plots")
    return [None if item.lower() == LATEST else normalize_instant(item) for item in items]


def resolve_as_of(t: OpenTable, value: str | None) -> str | None:
    """Check that a reader at `value` can see the table: some completed write at or before it, and
    its files not cleaned (time travel's own check, so the error names the earliest readable instant)."""
    if value is None:
        return None
    from pyhudi.reader.time_travel import check_readable

    check_readable(t.storage, t.timeline, value)
    writes = [i.timestamp for i in t.timeline.write_timeline().completed()]
    if not any(w <= value for w in writes):
        first = f"the first completed write is {writes[0]}" if writes else "the table has no completed write yet"
        raise InstantNotFoundError(f"no completed write at or before {value} in {t.storage.base_uri}; {first}. "
                                   "Give an instant from `pyhudi timeline PATH`, or 'latest'")
    return value


def last_write(t: OpenTable, value: str | None) -> str | None:
    """The newest completed write a reader at `value` sees (the instant a panel really shows)."""
    writes = [i.timestamp for i in t.timeline.write_timeline().completed() if value is None or i.timestamp <= value]
    return writes[-1] if writes else None


def size_edges(max_size: int, largest: int, small_file_limit: int = 0) -> list[int]:
    """Bin edges in bytes: max/20 wide (so the limits fall near edges), widened so that at most MAX_BINS
    bins reach past 1.25 x max, the small-file limit (even a misconfigured one above max) and the largest
    file."""
    upper = max(largest + 1, math.ceil(max_size * 1.25), math.ceil(small_file_limit * 1.05), 1)
    width = max(1, math.ceil(max_size / 20), math.ceil(upper / MAX_BINS))
    count = math.ceil(upper / width)
    return [i * width for i in range(count + 1)]


def bin_rows(rows: list[tuple[int | None, int]], edges: list[int]) -> list[dict[str, int]]:
    """(base size or None, log bytes) per live file group -> per bin: base files, base bytes, log bytes.
    A group without a base file (log-only) adds its log bytes to the first bin: its base is 0 bytes."""
    width, count = edges[1] - edges[0], len(edges) - 1
    bins = [{"lo": edges[i], "hi": edges[i + 1], "files": 0, "base_bytes": 0, "log_bytes": 0} for i in range(count)]
    for base, logs in rows:
        b = bins[min((base or 0) // width, count - 1)]
        if base is not None:
            b["files"] += 1
            b["base_bytes"] += base
        b["log_bytes"] += logs
    return bins


def _live_rows(data: dict[str, Any]) -> list[tuple[int | None, int]]:
    return [(r["base_size"] if r["base_file"] is not None else None, int(r["log_bytes"]))
            for part in data["partitions"] for r in part["file_groups"] if not r["replaced"]]


def build_model(t: OpenTable, limits: Limits, as_ofs: list[str | None], partition: str | None) -> dict[str, Any]:
    """Everything both renderers draw, in plain numbers (also what `--plot ... --json` prints)."""
    panels, rows = [], []
    for value in as_ofs:
        at = resolve_as_of(t, value)
        data = collect(t, limits.small_file_limit, limits.max_file_size, partition, at)
        rows.append(_live_rows(data))
        panels.append({"label": value or LATEST, "as_of": at, "instant": last_write(t, at),
                       "totals": data["totals"], "histogram": data["histogram"]})
    largest = max((b or 0 for panel_rows in rows for b, _ in panel_rows), default=0)
    edges = size_edges(limits.max_file_size, largest, limits.small_file_limit)
    for panel, panel_rows in zip(panels, rows, strict=True):
        panel["bins"] = bin_rows(panel_rows, edges)
    return {
        "table": table_header(t), "partition": partition,
        "limits": {"small_file_limit": limits.small_file_limit, "max_file_size": limits.max_file_size,
                   "small_file_limit_source": limits.limit_source, "max_file_size_source": limits.max_source},
        "edges": edges, "panels": panels,
    }


def plot(t: OpenTable, limits: Limits, as_ofs: list[str | None], partition: str | None, out: str,
         fmt: str, as_json: bool = False) -> int:
    """Build the model, write OUT, and say what was written (one line per panel)."""
    model = build_model(t, limits, as_ofs, partition)
    if fmt == "png":
        from pyhudi.cli import plot_png

        plot_png.write(model, out)
    else:
        from pyhudi.cli import plot_html

        plot_html.write(model, out)
    if as_json:
        render.emit_json({"plot": out, **model})
        return 0
    lines = [f"wrote {out}: {model['table']['name']}, {render.plural(len(model['panels']), 'panel')}"]
    lines += [f"  {panel_title(p)}: {panel_subtitle(p)}" for p in model["panels"]]
    render.emit(lines)
    return 0


