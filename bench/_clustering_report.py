"""Rendering of the clustering benchmark's results as text and markdown (split from clustering.py so that
stays readable; render_docs.py imports clustering, which re-exports these)."""

from __future__ import annotations

import json
from typing import Any

import common  # noqa: E402 - bench/ is on sys.path
from _clustering_churn import render_churn  # noqa: E402
from common import MB, fmt_bytes, format_table, ratio  # noqa: E402

NAME = "clustering"
TITLE = "Clustering"


def _mb(n: float) -> str:
    return f"{n / MB:.1f}"


def _query_rows(r: dict[str, Any]) -> list[list[str]]:
    rows = []
    for q in r["queries"]:
        for t, c in q["tables"].items():
            f = c["footer"]
            scan = c.get("spark_scan") or {}
            rows.append([
                q["name"], t, f"{f['files']}", f"{f['row_groups_read']}/{f['row_groups']}",
                f"{scan['numOutputRows']:,}" if scan else "n/a",
                _mb(f["footer_bytes"]), _mb(f["column_bytes_read"]), _mb(f["bytes_to_read"]),
                f"{c['seconds']:.2f}",
                f"{c['bytes_reduction']:.1f}x" if "bytes_reduction" in c else "",
                f"{c['speedup']:.2f}x" if "speedup" in c else "",
            ])
    return rows


_QUERY_HEADERS = ["query", "table", "files", "row groups read", "Spark scan rows",
                  "footers MB", "chunks MB", "must read MB", "median s", "bytes before/after",
                  "speed-up"]


def _cluster_rows(r: dict[str, Any]) -> list[list[str]]:
    rows = []
    for layout in r["config"]["layouts"]:
        c = r["clustering"][layout]
        if "pyhudi_seconds" not in c:
            continue
        o = c["output"]
        bo = c["baseline_output"]
        rows.append([layout, f"{c['groups']}", ", ".join(f"{x['seconds']:.2f}" for x in c["pyhudi_runs"]),
                     f"{c['pyhudi_mb_per_s']:.1f}", f"{c['pyhudi_cores_used']:.2f}", f"{c['pyhudi_mb_per_cpu_s']:.1f}",
                     ", ".join(f"{x['seconds']:.2f}" for x in c["baseline_runs"]), f"{c['baseline_mb_per_s']:.1f}",
                     f"{c['baseline_cores_used']:.2f}", f"{c['baseline_mb_per_cpu_s']:.1f}",
                     f"{c['baseline_over_pyhudi_throughput']:.2f}",
                     f"{o['files']} ({c['output_row_groups']} row groups)",
                     f"{fmt_bytes(o['min'])} / {fmt_bytes(o['median'])} / {fmt_bytes(o['max'])}",
                     f"{bo.get('files', 0)}, median {fmt_bytes(bo.get('median', 0))}"])
    return rows


_CLUSTER_HEADERS = ["layout", "groups", "pyhudi runs (s)", "pyhudi MB/s", "pyhudi cores", "pyhudi MB/CPU-s",
                    "pyarrow runs (s)", "pyarrow MB/s", "pyarrow cores", "pyarrow MB/CPU-s", "pyarrow/pyhudi MB/s",
                    "pyhudi files out", "pyhudi size min / median / max", "pyarrow files out"]


def _phases_text(c: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v:.2f} s" for k, v in c.get("pyhudi_phases", {}).items())


def _cell(r: dict[str, Any], query: str, table: str) -> dict[str, Any] | None:
    for q in r["queries"]:
        if q["name"] == query:
            return q["tables"].get(table)
    return None


def _scan_rows(c: dict[str, Any]) -> int:
    scan = c.get("spark_scan")
    return int(scan["numOutputRows"]) if scan else int(c["footer"]["rows_in_row_groups_read"])


def _headline(r: dict[str, Any]) -> list[str]:
    out = []
    cfg = r["config"]
    for q in r["queries"]:
        b = q["tables"]["before"]
        cells = [(t, q["tables"][t]) for t in cfg["layouts"] if t in q["tables"]]
        if not cells:
            continue
        out.append(
            f"`{q['name']}` ({q['description']}), before/after clustering: bytes to read "
            + ", ".join(f"{t} **{c['bytes_reduction']:.1f}x**" for t, c in cells)
            + "; rows scanned " + ", ".join(f"{t} {ratio(_scan_rows(b), _scan_rows(c)):.2f}x" for t, c in cells)
            + "; speed-up " + ", ".join(f"{t} **{c['speedup']:.2f}x**" for t, c in cells)
            + f" (median {b['seconds']:.2f} s before)")
    tput = [(t, r["clustering"][t]) for t in cfg["layouts"] if "pyhudi_mb_per_s" in r["clustering"][t]]
    if tput:
        out.append("Clustering throughput, pyarrow read-sort-write / pyhudi: " + ", ".join(
            f"{t} **{c['baseline_over_pyhudi_throughput']:.2f}** ({c['pyhudi_mb_per_s']:.1f} vs "
            f"{c['baseline_mb_per_s']:.1f} MB/s)" for t, c in tput)
            + "; per CPU-second: " + ", ".join(
            f"{t} {ratio(c['baseline_mb_per_cpu_s'], c['pyhudi_mb_per_cpu_s']):.2f}" for t, c in tput))
    return out


def _curve_text(r: dict[str, Any], cust: dict[str, Any]) -> str:
    curves = [t for t in ("z-order", "hilbert") if cust.get(t) and "groups" in r["clustering"].get(t, {})]
    if not curves:
        return ""
    c = r["clustering"][curves[0]]
    per_group = c["output_row_groups"] / max(1, c["groups"])
    return (f" With about {per_group:.0f} row groups per group, the space-filling curves cut each group into only a "
            f"few segments, and a segment's min/max box spans a wide range of both columns: the `customer` query "
            f"still overlaps " + ", ".join(f"{t} {cust[t]['footer']['row_groups_read']}" for t in curves)
            + " row groups. Curves pay off with many row groups per group (larger groups or smaller row groups).")


def _sizes_text(r: dict[str, Any]) -> str:
    cfg = r["config"]
    lin = next((r["clustering"][t] for t in cfg["layouts"] if "output" in r["clustering"][t]), None)
    if not lin or not lin["output"].get("files"):
        return ""
    o, target = lin["output"], cfg["target_file_bytes"]
    per_group = o["total"] / max(1, lin["groups"])
    return (f"Output files vs the {fmt_bytes(target)} target: largest {o['max'] / target:.0%}, median "
            f"{o['median'] / target:.0%}, smallest {o['min'] / target:.0%}. Each group rolls over at the target "
            f"(aiming a little below it), so its ~{fmt_bytes(per_group)} of output becomes full files plus a "
            f"remainder; group sizes count the inputs' bloom-filter footers, which the output does not repeat.")


def _reading(r: dict[str, Any]) -> str:
    """The numbers behind the ratios, in words (generated, so they follow the run)."""
    cfg = r["config"]
    parts = []
    cust: dict[str, Any] = {t: _cell(r, "customer", t) for t in ["before", *cfg["layouts"]]}
    day: dict[str, Any] = {t: _cell(r, "day", t) for t in ["before", *cfg["layouts"]]}
    b = cust["before"]
    if b:
        f = b["footer"]
        parts.append(
            f"**Footers.** Every query reads the footer of every file in the snapshot. Before clustering that is "
            f"{f['files']} footers, {_mb(f['footer_bytes'])} MB, {ratio(f['footer_bytes'], f['bytes_to_read']):.0%} of "
            f"what the `customer` query must read"
            + (f"; after linear clustering {cust['linear']['footer']['files']} footers, "
               f"{_mb(cust['linear']['footer']['footer_bytes'])} MB" if cust.get("linear") else "")
            + ". Most of a footer is the bloom filter Hudi keeps there for its index, so much of the bytes "
              "reduction comes from having fewer files, not only from skipping row groups.")
    lin = cust.get("linear")
    groups = r["clustering"].get("linear", {}).get("groups")
    if lin and groups:
        parts.append(
            f"**Groups.** The plan has {groups} clustering group(s) and each is sorted on its own, so a narrow "
            f"`customer_id` range still overlaps about one row group per group: after linear clustering the "
            f"`customer` query reads {lin['footer']['row_groups_read']} of {lin['footer']['row_groups']} row groups "
            f"(before: {b['footer']['row_groups_read']} of {b['footer']['row_groups']}). Larger groups "
            f"(`max.bytes.per.group`) sort more data together but give Spark fewer tasks."
            + _curve_text(r, cust))
    if day.get("before") and all(day.get(t) for t in cfg["layouts"]):
        d0 = day["before"]
        parts.append(
            f"**The order the data already had.** The tiny commits arrive in `ts` order, so before clustering the "
            f"`day` query already skips most files: {d0['footer']['row_groups_read']} of "
            f"{d0['footer']['row_groups']} row groups, {_scan_rows(d0):,} rows scanned. Clustering on "
            f"(customer_id, ts) trades that away: "
            + ", ".join(f"{t} {day[t]['footer']['row_groups_read']} of {day[t]['footer']['row_groups']} row groups "
                        f"({_scan_rows(day[t]):,} rows)" for t in cfg["layouts"])
            + ". Z-order and Hilbert keep part of the `ts` order; linear keeps none of it. Bytes can still go "
              "down, because the footers saved outweigh the extra column chunks.")
    pairs = [(q["name"], t, c) for q in r["queries"] for t, c in q["tables"].items()]
    same = sum(1 for _, _, c in pairs if c.get("spark_scan")
               and c["spark_scan"]["numOutputRows"] == c["footer"]["rows_in_row_groups_read"])
    fewer = [f"{n}/{t}" for n, t, c in pairs if c.get("spark_scan")
             and c["spark_scan"]["numOutputRows"] < c["footer"]["rows_in_row_groups_read"]]
    parts.append(
        f"**Cross-check.** Spark's scan produced exactly the rows of the row groups the footer statistics say it "
        f"must read in {same} of {len(pairs)} query/table pairs"
        + (f"; fewer (dictionary filtering) in {', '.join(fewer)}" if fewer else "")
        + ". Spark's task input-bytes metric is kept in the JSON (`spark_input_bytes`) but not shown: with "
          "parquet-mr's vectored reads (on by default) it misses column-chunk bytes (a `max(ts)` over a clustered "
          "copy reported exactly its footer bytes; with `parquet.hadoop.vectored.io.enabled=false` it reported "
          "footers + ts chunks to the byte), and it counts a footer once per split when Spark splits a file.")
    return "\n\n".join(parts)


def _verdict(r: dict[str, Any]) -> str:
    v = r["verification"]
    if v["ok"]:
        rs = ", ".join(f"{t} {n:,}" for t, n in v["hudi_rs_rows"].items())
        return f"OK (rows and checksum identical on every table; hudi-rs rows: {rs})"
    return "FAILED: " + "; ".join(v["problems"])


def _history() -> str:
    rows = []
    for path in sorted(common.RESULTS_DIR.glob(f"{NAME}-2*.json"), reverse=True):
        try:
            h = json.loads(path.read_text())
            cust = _cell(h, "customer", "linear")
            box = _cell(h, "box", "z-order")
            lin = h["clustering"].get("linear", {})
            rows.append([h["finished"][:16], f"{h['config']['scale']:g}", f"{h['config']['rows']:,}",
                         f"{cust['bytes_reduction']:.1f}" if cust else "", f"{cust['speedup']:.2f}" if cust else "",
                         f"{box['bytes_reduction']:.1f}" if box else "", f"{box['speedup']:.2f}" if box else "",
                         f"{lin.get('pyhudi_mb_per_s', float('nan')):.1f}",
                         f"{lin.get('baseline_over_pyhudi_throughput', float('nan')):.2f}",
                         f"{h['load']['overall']['foreign_cores']:.2f}"])
        except (KeyError, ValueError, TypeError):
            continue
    if len(rows) < 2:
        return ""
    headers = ["run (UTC)", "scale", "rows", "customer bytes (linear)", "customer speed-up (linear)",
               "box bytes (z-order)", "box speed-up (z-order)", "linear pyhudi MB/s", "linear pyarrow/pyhudi",
               "foreign cores"]
    return ("**All saved runs** (`bench/results/`, newest first):\n\n" + format_table(headers, rows, markdown=True)
            + "\n\n")


def render_text(r: dict[str, Any]) -> str:
    cfg, m, tb = r["config"], r["machine"], r["table_before"]
    lines = [f"== {TITLE} ==",
             f"machine: {m['cores']} cores ({m['cpu']}), Python {m['python']}, PySpark {m['pyspark']}, "
             f"pyarrow {m['pyarrow']}; {r['load']['note']}",
             f"table before: {cfg['rows']:,} rows from {cfg['commits']} commits (median {r['commits']['median_seconds']:.2f} s "
             f"each): {tb['files']} files, {fmt_bytes(tb['total'])}, sizes min/median/max {fmt_bytes(tb['min'])} / "
             f"{fmt_bytes(tb['median'])} / {fmt_bytes(tb['max'])}, {tb['row_groups']} row groups, footers "
             f"{fmt_bytes(tb['footer_bytes'])}", "",
             f"Clustering on ({', '.join(cfg['sort_columns'])}), target {fmt_bytes(cfg['target_file_bytes'])}, "
             f"group {fmt_bytes(cfg['group_bytes'])} (input = the replaced files):",
             format_table(_CLUSTER_HEADERS, _cluster_rows(r))]
    for layout in cfg["layouts"]:
        c = r["clustering"][layout]
        if "pyhudi_phases" in c:
            lines.append(f"  {layout}: pyhudi phases (median) {_phases_text(c)}")
    lines += ["", "Queries (must read = footers of every file + query column chunks of row groups whose min/max "
                  "overlap the filter):", format_table(_QUERY_HEADERS, _query_rows(r)), "",
              *(h.replace("**", "") for h in _headline(r)), "", render_churn(r.get("churn"), markdown=False),
              f"verification: {_verdict(r)}"]
    return "\n".join(lines)


def render_markdown(r: dict[str, Any]) -> str:
    cfg, tb = r["config"], r["table_before"]
    notes = r["clustering_notes"]
    headline = "\n".join(f"* {h}" for h in _headline(r))
    qtext = "\n".join(f"* `{q['name']}`: {q['description']}, then count, sum(fare), max(tip)" for q in r["queries"])
    first = next((r["clustering"][t] for t in cfg["layouts"] if "output" in r["clustering"][t]), None)
    phase_lines = "\n".join(f"* {t}: {_phases_text(r['clustering'][t])}" for t in cfg["layouts"]
                            if "pyhudi_phases" in r["clustering"][t])
    input_text = (f"{first['input_files']} files, {fmt_bytes(first['input_bytes'])}, in {first['groups']} "
                  f"clustering groups" if first else "n/a")
    return f"""\
What it answers: after many tiny commits, how much less does a query that filters on the clustering
columns have to read, and how much faster does it run, once `pyhudi.cluster` has rewritten the small files
sorted (linear, z-order, Hilbert); and how fast is clustering compared with doing the same read-sort-write
by hand with pyarrow.

```bash
{r['command']}
```

{common.run_paragraph(r, with_conf=False)}

**Headline (ratios, same run):**

{headline}

**Setup.** A non-partitioned copy-on-write table ({cfg['schema']}) built by {cfg['commits']} `bulk_insert`
commits of {cfg['rows_per_commit']:,} rows (one file each, median {r['commits']['median_seconds']:.2f} s per
commit): {tb['files']} files, {fmt_bytes(tb['total'])}, {cfg['rows']:,} rows; file sizes min / median / max
{fmt_bytes(tb['min'])} / {fmt_bytes(tb['median'])} / {fmt_bytes(tb['max'])}; {tb['row_groups']} row groups.
Each commit holds the next 1/{cfg['commits']} of a 30-day event-time range plus {cfg['late_fraction']:.0%} late
events up to {cfg['late_days']:g} days old, so the small files are already roughly ordered by `ts` but not by
`customer_id`. **{fmt_bytes(tb['footer_bytes'])} of the table are parquet footers**, mostly the bloom filter
Hudi stores in every base file's footer (~430 KB each at the default 60,000 entries) - and a query reads every
file's footer. Clustering options: sort columns `{','.join(cfg['sort_columns'])}`, target file
{fmt_bytes(cfg['target_file_bytes'])}, {fmt_bytes(cfg['group_bytes'])} per group, small-file limit
{fmt_bytes(cfg['small_file_limit'])}, row groups (`hoodie.parquet.block.size`) {fmt_bytes(cfg['row_group_bytes'])}.

**Clustering throughput.** Input: {input_text}; MB/s = {notes['input_bytes']} / wall time. pyhudi ran
{cfg['cluster_runs']} times per layout, each on a fresh copy of the table; the baseline as often, interleaved
(inputs in the page cache for both); medians. `cores` = CPU time / wall time (pyhudi: driver, JVM and Python
workers; pyarrow: its process, including pyarrow's threads).

{format_table(_CLUSTER_HEADERS, _cluster_rows(r), markdown=True)}

* pyhudi includes: {notes['pyhudi_includes']}.
* pyarrow baseline includes: {notes['baseline_includes']}. Its files carry no bloom filter, so at the
  same target size they hold more rows (fewer files).

{_sizes_text(r)}

Where pyhudi's CPU goes inside a task, from a py-spy profile of warm linear runs at this configuration
(taken by hand on 2026-11-21 at commit 88120fd, not by this benchmark): parquet encoding 50 %, the bloom
filter 22 % (30 MurmurHash rounds per key at Hudi's default fpp 1e-9), ordering 15 % (mostly the `take`),
the size-estimate sample 6 %, reading the inputs 6 %; each file is encoded once. The bloom filter and the
sample are work the baseline does not do; the rest of the gap is Spark (JVM, task scheduling, workers).

Where pyhudi's time goes (median; `rewrite` is the Spark job, `other` the option parsing and timeline loads
around it):

{phase_lines}

**Queries** ({cfg['query_runs']} runs each, tables interleaved; wall time of `pyhudi.read(...).filter(...)`
plus the aggregate, planning included):

{qtext}

`must read` = every file's footer + the query's column chunks (filter columns, fare, tip) of the row groups
whose min/max overlap the filter, from the files' parquet statistics (what Spark's parquet reader cannot
skip). `Spark scan rows` is the scan's SQL metric `numOutputRows`: the rows Spark actually decoded after
row-group skipping. `bytes before/after` compares `must read`; `speed-up` compares the median wall times.

{format_table(_QUERY_HEADERS, _query_rows(r), markdown=True)}

{_reading(r)}

{render_churn(r.get("churn"), markdown=True)}
{_history()}**Correctness** (checked in the run): {_verdict(r)}. Checksums are order-independent sums of
xxhash64 over every column except `_hoodie_file_name` (clustering keeps commit times and sequence numbers),
and every query returns the same answer on every table.
"""
