"""Text and markdown rendering of bench/small_batches.py's results (kept apart so the benchmark module
stays readable; render_docs.py imports small_batches, which re-exports these)."""

from __future__ import annotations

from typing import Any

import common  # noqa: E402 - bench/ is on sys.path
from common import fmt_bytes, format_table, ratio  # noqa: E402

NAME = "small_batches"
TITLE = "Streaming small batches"
_PHASE_LABELS = ["prepare", "count", "view", "index+profile", "rollback check", "plan", "instant", "write files",
                 "markers", "commit", "clustering", "compaction", "clean", "archive", "other"]


def _x(v: float, digits: int = 2) -> str:
    return "n/a" if v != v else f"{v:.{digits}f}x"  # NaN-safe


def _ingest_rows(r: dict[str, Any]) -> list[list[str]]:
    rows = []
    delta_e2e = r["systems"].get("delta", {}).get("end_to_end_seconds", float("nan"))
    for s in r["systems"].values():
        i, u = s["ingest"]["insert"], s["ingest"]["upsert"]
        rows.append([s["label"], f"{i['seconds']:.1f}", _x(i["ratio_vs_spark"]), f"{u['seconds']:.1f}",
                     _x(u["ratio_vs_spark"]), f"{i['median_seconds']:.2f} / {u['median_seconds']:.2f}",
                     f"{s['maintenance']['seconds']:.1f}", f"{s['end_to_end_seconds']:.1f}",
                     _x(ratio(s["end_to_end_seconds"], delta_e2e)), f"{s['spark_jobs_per_batch']:g}"])
    return rows


_INGEST_HEADERS = ["system", "insert s", "vs Spark", "upsert s", "vs Spark", "median batch s (ins / ups)",
                   "maintenance s", "end-to-end s", "vs delta-rs", "Spark jobs/batch"]


def _file_rows(r: dict[str, Any]) -> list[list[str]]:
    rows = []
    for s in r["systems"].values():
        a, f = s["after_ingest"], s["final_files"]
        logs = f" + {a['log_files']} logs" if a["log_files"] else ""
        rows.append([s["label"], f"{a['files']['files']}{logs}", str(f["files"]), str(f["ideal_files"]),
                     " / ".join(fmt_bytes(f[p]) for p in ("p10", "p50", "p90", "max")),
                     str(f["small_files"]), f"{f['well_sized_pct']:.1f}%", fmt_bytes(f["total"]),
                     fmt_bytes(s["bytes_written"]), f"{s['write_amplification']:.2f}",
                     f"{s['bytes_written_over_input']:.2f}"])
    return rows


_FILE_HEADERS = ["system", "files after ingest", "final files", "ideal", "p10 / p50 / p90 / max", "small",
                 "bytes well sized", "final bytes", "bytes written", "WA", "written / input"]


def _query_rows(r: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    systems = r["systems"]
    names = list(next(iter(systems.values()))["queries"])
    ref = systems.get("cow")
    rows = []
    for s in systems.values():
        row = [s["label"], str(s["final_files"]["files"])]
        for q in names:
            sec = s["queries"][q]["seconds"]
            row += [f"{sec:.3f}", _x(ratio(sec, ref["queries"][q]["seconds"])) if ref else "n/a"]
        rows.append(row)
    headers = ["system", "files"]
    for q in names:
        headers += [f"{q} s", "vs pyhudi COW"]
    return headers, rows


def _profile_rows(r: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    prof = r["profile"]
    cols = [(k, ph) for k in prof for ph in ("insert", "upsert") if prof[k].get(ph)]
    labels = [lbl for lbl in _PHASE_LABELS if any(prof[k][ph].get(lbl, 0.0) > 0.0005 for k, ph in cols)]
    rows = []
    for lbl in labels:
        rows.append([lbl, *(f"{prof[k][ph].get(lbl, 0.0):.3f}" for k, ph in cols)])
    spark = r["systems"]["spark"]["ingest"]
    rows.append(["Spark append (whole batch)",
                 *(f"{spark[ph]['median_seconds']:.3f}" for _, ph in cols)])
    headers = ["step (median s per batch)", *(f"{r['systems'][k]['label']} {ph}" for k, ph in cols)]
    return headers, rows


def _spark_rows(r: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Spark jobs per batch by call site (median count and summed job seconds), from the status store."""
    sj = r.get("spark_jobs") or {}
    cols = [(k, ph) for k in ("cow", "spark") if k in sj for ph in ("insert", "upsert") if sj[k].get(ph)]
    if not cols:
        return [], []
    sites = sorted({site for k, ph in cols for site in sj[k][ph]["by_site"]})

    def cell(k: str, ph: str, site: str) -> str:
        c = sj[k][ph]["by_site"].get(site)
        return f"{c['jobs']:g} / {c['job_seconds']:.2f}" if c and c["jobs"] else ""

    rows = [[site, *(cell(k, ph, site) for k, ph in cols)] for site in sites]
    rows.append(["all jobs: count / summed job s",
                 *(f"{sj[k][ph]['jobs']:g} / {sj[k][ph]['job_seconds']:.2f}" for k, ph in cols)])
    rows.append(["wall time outside Spark jobs s", *(f"{sj[k][ph]['wall_outside_jobs_seconds']:.2f}" for k, ph in cols)])
    headers = ["call site (jobs / s, median per batch)", *(f"{r['systems'][k]['label']} {ph}" for k, ph in cols)]
    return headers, rows


def _by_kind(r: dict[str, Any]) -> str:
    parts = []
    for s in r["systems"].values():
        kinds = s.get("bytes_written_by_kind") or {}
        if isinstance(next(iter(kinds.values()), None), dict):
            inner = ", ".join(f"{k} {fmt_bytes(v['bytes'])} ({v.get('instants', v.get('commits', '?'))})"
                              for k, v in kinds.items())
            parts.append(f"{s['label']}: {inner}")
    return "; ".join(parts) or "n/a"


def _curve(r: dict[str, Any]) -> str:
    batches = r["batches"]
    n = len(batches)
    picks = sorted({0, n // 4, n // 2 - 1, n // 2, 3 * n // 4, n - 1} & set(range(n)))
    headers = ["after batch", *(str(batches[i]["batch"]) for i in picks)]
    rows = [[s["label"], *(str(batches[i]["systems"][k]["live_files"]) for i in picks)]
            for k, s in r["systems"].items()]
    return format_table(headers, rows, markdown=True)


def _headline(r: dict[str, Any]) -> list[str]:
    h, s, cfg = r["headline"], r["systems"], r["config"]
    out = []
    if "cow" in h:
        c = h["cow"]
        q = c["spark_query_over_this"]
        qd = c["query_over_delta"]
        out += [
            f"pyhudi COW insert (auto-sized) vs plain Spark append, same batches: **{_x(c['insert_vs_spark'])}** "
            f"the time; upsert with {cfg['update_fraction']:.0%} updates: **{_x(c['upsert_vs_spark'])}** "
            "(the append baseline just appends the updates)",
            f"Auto-sizing quality: **{c['well_sized_pct']:.1f}%** of bytes in files between the small-file limit "
            f"and 1.1 x max; **{s['cow']['final_files']['files']}** files for "
            f"{s['cow']['final_files']['ideal_files']} ideal (ratio {c['files_over_ideal']:.2f})",
            "Queries on the small-files table vs pyhudi COW (speed-up): "
            + ", ".join(f"{k} **{_x(v)}**" for k, v in q.items()),
            "pyhudi COW query time vs compacted delta-rs: " + ", ".join(f"{k} **{_x(v)}**" for k, v in qd.items()),
            f"End-to-end (ingest + maintenance), pyhudi COW / delta-rs: **{_x(c['end_to_end_over_delta'])}**",
        ]
    for k in ("mor", "cow_cluster", "mor_services"):
        if k in h:
            c = h[k]
            out.append(f"{s[k]['label']}: insert {_x(c['insert_vs_spark'])}, upsert {_x(c['upsert_vs_spark'])} "
                       f"of Spark append; end-to-end {_x(c['end_to_end_over_delta'])} of delta-rs; "
                       f"{c['well_sized_pct']:.1f}% of bytes well sized")
    return out


def _verdict(r: dict[str, Any]) -> str:
    v = r["verification"]
    if v["ok"]:
        return (f"OK - every deduplicating system holds {v['expected'][1]:,} keys at their latest versions "
                f"(count, distinct keys and (uuid, ts) checksum equal to the generated data); hudi-rs reads "
                + ", ".join(f"{k} {n:,}" for k, n in v["hudi_rs_rows"].items() if n is not None)
                + " rows; query answers agree")
    return "FAILED: " + "; ".join(v["problems"])


def _setup(r: dict[str, Any]) -> str:
    cfg, i = r["config"], r["input"]
    window = f"the last {cfg['update_window']} batches" if cfg["update_window"] else "any existing key"
    return (f"{cfg['insert_batches']} insert-only batches, then {cfg['upsert_batches']} batches of which "
            f"{cfg['update_fraction']:.0%} are updates (keys drawn from {window}) and the rest new keys; "
            f"{cfg['rows_per_batch']:,} rows per batch (~{fmt_bytes(i['staged_bytes_per_batch'])} of snappy parquet, "
            f"one hour of event time), {i['rows']:,} rows ({i['final_keys']:,} keys) and "
            f"{fmt_bytes(i['staged_bytes'])} staged in all. {'Partitioned by city.' if cfg['partitioned'] else 'One partition (a stream whose inserts all land in the current partition).'} "
            f"Max file size {fmt_bytes(cfg['max_file_size'])} (`hoodie.parquet.max.file.size`, delta's "
            f"`target_size`), small-file limit {fmt_bytes(cfg['small_file_limit'])}; (d) clusters inline every "
            f"{cfg['cluster_every']} commits with groups of {fmt_bytes(cfg['cluster_group_bytes'])}.")


def render_text(r: dict[str, Any]) -> str:
    m = r["machine"]
    qh, qrows = _query_rows(r)
    ph, prows = _profile_rows(r)
    sh, srows = _spark_rows(r)
    return "\n".join([
        f"== {TITLE} ==",
        f"machine: {m['cores']} cores ({m['cpu']}), PySpark {m['pyspark']}, pyarrow {m['pyarrow']}; {r['load']['note']}",
        _setup(r), "", "Ingest (wall seconds; ratios against the Spark append of the same batches):",
        format_table(_INGEST_HEADERS, _ingest_rows(r)), "", "Files (final = after maintenance):",
        format_table(_FILE_HEADERS, _file_rows(r)), "", "Queries (median s, same Spark session, plain parquet read):",
        format_table(qh, qrows), "", "Where pyhudi's per-batch time goes (median s):", format_table(ph, prows), "",
        "Spark jobs per batch by call site (jobs / summed job s, median):",
        format_table(sh, srows) if srows else "(none)", "",
        *(x.replace("**", "") for x in _headline(r)), f"verification: {_verdict(r)}",
    ])


def render_markdown(r: dict[str, Any]) -> str:
    cfg = r["config"]
    qh, qrows = _query_rows(r)
    ph, prows = _profile_rows(r)
    headline = "\n".join(f"* {h}" for h in _headline(r))
    maint = "; ".join(f"{s['label']}: {s['maintenance']['what']}" for s in r["systems"].values())
    return f"""\
What it answers: a stream of small batches, written the way a user would otherwise write it (plain Spark
appends, delta-rs appends/merges plus OPTIMIZE) and with pyhudi (COW with auto-sizing, MOR, COW with
clustering instead of auto-sizing): what does each cost to ingest and maintain, what files does it leave,
how many bytes does it write, and how fast are queries on the result.

```bash
{r['command']}
```

{common.run_paragraph(r)}

**Headline (ratios, same run):**

{headline}

**Setup.** {_setup(r)} Each batch goes into every system in a rotating order, after an unmeasured warm-up
of all of them on a tiny table. Maintenance at the end: {maint}.

**Ingest** (sum of per-batch wall times; `vs Spark` = this system's time / the Spark append's time for
the same batches; end-to-end = ingest + maintenance):

{format_table(_INGEST_HEADERS, _ingest_rows(r), markdown=True)}

**Files** (live files: pyhudi's latest file slices, delta-rs's current add actions, every parquet file of the
append directory; `ideal` = ceil(bytes / max size) per partition; `bytes well sized` = share of bytes in
files between the small-file limit and 1.1 x max; bytes written = every file any commit, compaction,
clustering or OPTIMIZE wrote; WA = bytes written / final bytes; written / input = bytes written / staged
batch bytes):

{format_table(_FILE_HEADERS, _file_rows(r), markdown=True)}

Bytes written by kind of commit: {_by_kind(r)}.

Live files over the run:

{_curve(r)}

**Queries** through one Spark session reading each table's final files with `spark.read.parquet(*files)`
(full scan: count, sum(fare), sum(tip), max(ts); selective: half an hour of `ts`), {cfg['query_runs']}
runs each, interleaved, median seconds. The Spark append table holds every update as an extra row, so its
answers differ by design.

{format_table(qh, qrows, markdown=True)}

**Where pyhudi's per-batch time goes** (median seconds of each step of `pyhudi.write`, measured by
wrapping `writer/client.py`'s steps; `other` = timeline loads, schema checks and the rest):

{format_table(ph, prows, markdown=True)}

{_spark_section(r)}**Correctness** (checked in the run): {_verdict(r)}.
"""


def _spark_section(r: dict[str, Any]) -> str:
    sh, srows = _spark_rows(r)
    if not srows:
        return ""
    return ("The same batches seen from Spark (jobs each call site started and their summed wall time, from\n"
            "Spark's status store; AQE splits a shuffle into several jobs; the `parquet at ...` job is\n"
            "`spark.read.parquet` inferring the staged batch's schema, paid by both):\n\n"
            + format_table(sh, srows, markdown=True) + "\n\n")
