"""Headline, targets and tables of `bench/arrow_engine.py` (the in-process engine on Arrow input)."""

from __future__ import annotations

import math
from typing import Any

from common import fmt_bytes, format_table, median, ratio

NAME = "arrow_engine"
TITLE = "In-process engine (Arrow input)"
MEMORY_RATIO_LIMIT = 1.25  # "follows the file groups touched": a 5x larger table may cost at most this much more


def _nan(v: float) -> bool:
    return v != v


def _judge(v: float, ok: bool) -> bool | None:
    return None if _nan(v) else ok


def _get(d: dict[str, Any], *path: str) -> Any:
    for p in path:
        if not isinstance(d, dict) or p not in d:
            return float("nan")
        d = d[p]
    return d


def paired(runs: dict[str, list[dict[str, Any]]], num: str, den: str) -> float:
    """Median over rounds of num's time / den's time in the same round (the two ran minutes apart at
    most, so a load change between rounds cancels out); NaN when a round failed."""
    a, b = runs.get(num) or [], runs.get(den) or []
    pairs = [x["seconds"] / y["seconds"] for x, y in zip(a, b, strict=False)
             if "seconds" in x and "seconds" in y and y["seconds"]]
    return float(median(pairs)) if pairs and len(pairs) == len(a) else float("nan")


LOAD_VS_RAW_META = (("bulk_insert", 1.0), ("insert", 0.9), ("upsert", 0.9))  # issue 31: the Hudi-format limit
LOAD_VS_DELTA = (("bulk_insert", 0.6), ("bulk_insert_nometa", 1.0))  # issue 31: throughput vs delta-rs


def _load_targets(h: dict[str, Any], ld: dict[str, Any], runs: dict[str, list[dict[str, Any]]],
                  target: Any) -> None:
    """Issue 31's large-load targets: pyhudi against raw pyarrow writing the same content (the data plus
    the five meta columns, built before the timing), and against delta-rs writing the same Arrow table;
    throughput ratios of the median times, with the per-round medians beside them. The plain raw write
    (no meta columns) stays as context."""
    raw, raw_meta, delta = (_get(ld, k, "seconds") for k in ("raw", "raw_meta", "delta"))
    for k in ("bulk_insert", "bulk_insert_nometa", "insert", "upsert", "raw_meta", "delta"):
        if k in ld:
            h[f"load_{k}"] = {"throughput_vs_raw": ratio(raw, _get(ld, k, "seconds")),
                              "throughput_vs_raw_1_thread": ratio(_get(ld, "raw_1", "seconds"), _get(ld, k, "seconds")),
                              "throughput_vs_raw_per_round_median": paired(runs, "raw", k)}
    if "raw_meta" in ld:
        for k, goal in LOAD_VS_RAW_META:
            if k in ld:
                v, per_round = ratio(raw_meta, _get(ld, k, "seconds")), paired(runs, "raw_meta", k)
                h[f"load_{k}"]["throughput_vs_raw_meta"] = v
                target(f"Arrow large load, pyhudi {k} >= {goal:.0%} of the throughput of raw pyarrow writing the "
                       "same content (data + the 5 meta columns)", f"{v:.0%} (per-round median {per_round:.0%})",
                       _judge(v, v >= goal))
    if "delta" in ld:
        for k, goal in LOAD_VS_DELTA:
            if k in ld:
                v, per_round = ratio(delta, _get(ld, k, "seconds")), paired(runs, "delta", k)
                h[f"load_{k}"]["throughput_vs_delta"] = v
                label = "bulk_insert" if k == "bulk_insert" else "bulk_insert, hoodie.populate.meta.fields=false"
                target(f"Arrow large load: pyhudi {label} >= {goal:.1f}x delta-rs write_deltalake throughput",
                       f"{v:.2f}x (per-round median {per_round:.2f}x)", _judge(v, v >= goal))
    for k in ("raw_meta", "delta", "bulk_insert", "bulk_insert_nometa", "insert", "upsert"):
        if k in ld and "raw" in ld:  # context: the old targets (85% / 50% of a raw write of the data alone) became these rows
            v = h[f"load_{k}"]["throughput_vs_raw"]
            target(f"(info) Arrow large load, {ld[k].get('label', k)}: throughput vs raw pyarrow writing the data "
                   "alone", f"{v:.0%} (per-round median {h[f'load_{k}']['throughput_vs_raw_per_round_median']:.0%})",
                   None)


def headline(r: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The same-run ratios, and the issue-17 targets judged on them (published to bench/targets.py)."""
    h: dict[str, Any] = {}
    targets: list[dict[str, Any]] = []

    def target(text: str, measured: str, met: bool | None) -> None:
        targets.append({"target": text, "measured": measured, "met": met})

    st = (r.get("stream") or {}).get("systems") or {}
    delta_e2e = _get(st, "delta", "end_to_end_seconds")
    for k in ("cow", "mor", "cow_cluster", "mor_services"):
        if k not in st:
            continue
        e2e = ratio(_get(st, k, "end_to_end_seconds"), delta_e2e) if not st[k].get("error") else float("nan")
        well = _get(st, k, "final_files", "well_sized_pct_with_logs")
        if not isinstance(well, (int, float)) or math.isnan(well):  # results from before log bytes were counted
            well = _get(st, k, "final_files", "well_sized_pct")
        h[f"stream_{k}"] = {"end_to_end_over_delta": e2e, "well_sized_pct": well}
        target(f"Arrow stream, {st[k]['label']}: end-to-end <= 1.0 x delta-rs", f"{e2e:.2f}x",
               _judge(e2e, e2e <= 1.0))
        target(f"Arrow stream, {st[k]['label']}: >= 95% of bytes well sized", f"{well:.1f}%",
               _judge(well, well >= 95.0))
    if "delta" in st:
        h["stream_delta"] = {"well_sized_pct": _get(st, "delta", "final_files", "well_sized_pct")}
    ld = (r.get("large_load") or {}).get("systems") or {}
    ld_runs = (r.get("large_load") or {}).get("runs") or {}
    _load_targets(h, ld, ld_runs, target)
    mg = (r.get("merge") or {}).get("systems") or {}
    if mg:
        v = ratio(_get(mg, "pyhudi", "seconds"), _get(mg, "delta", "seconds"))
        per_round = paired((r.get("merge") or {}).get("runs") or {}, "pyhudi", "delta")
        h["merge"] = {"pyhudi_over_delta": v, "pyhudi_over_delta_per_round_median": per_round}
        target("Arrow 10%-update upsert batch <= 1.5 x delta-rs merge", f"{v:.2f}x (per-round median {per_round:.2f}x)",
               _judge(v, v <= 1.5))
    if r.get("probe"):
        imported = bool(r["probe"].get("pyspark_imported"))
        target("In-process writes, compaction and clustering import no pyspark",
               "pyspark imported" if imported else "not imported", not imported)
    mem = (r.get("memory") or {}).get("systems") or {}
    if mem:
        rss = ratio(_get(mem, "large", "rss_peak_delta"), _get(mem, "small", "rss_peak_delta"))
        arrow = ratio(_get(mem, "large", "arrow_peak_delta"), _get(mem, "small", "arrow_peak_delta"))
        secs = ratio(_get(mem, "large", "seconds"), _get(mem, "small", "seconds"))
        h["memory"] = {"rss_large_over_small": rss, "arrow_large_over_small": arrow, "seconds_large_over_small": secs}
        target(f"Peak memory of the same upsert into a 5x larger table <= {MEMORY_RATIO_LIMIT} x (follows file "
               "groups, not the table)", f"{rss:.2f}x RSS, {arrow:.2f}x Arrow", _judge(rss, rss <= MEMORY_RATIO_LIMIT))
    return h, targets


# --------------------------------------------------------------------------- tables


def _mb(n: Any) -> str:
    return fmt_bytes(float(n)) if isinstance(n, (int, float)) and not _nan(float(n)) else "-"


def _s(v: Any) -> str:
    return f"{v:.2f}" if isinstance(v, (int, float)) and not _nan(float(v)) else "-"


_STREAM_HEADERS = ["system", "insert s", "upsert s", "maintenance s", "end-to-end s", "vs delta-rs", "files",
                   "logs", "small", "% bytes well sized", "bytes written", "median batch peak RSS +", "error"]


def _stream_rows(r: dict[str, Any]) -> list[list[str]]:
    st = r["stream"]["systems"]
    ref = _get(st, "delta", "end_to_end_seconds")
    rows = []
    for s in st.values():
        f = s.get("final_files") or {}
        rows.append([s["label"], _s(s["insert"]["seconds"]), _s(s["upsert"]["seconds"]),
                     _s(s["maintenance"]["seconds"]), _s(s["end_to_end_seconds"]),
                     f"{ratio(s['end_to_end_seconds'], ref):.2f}x", str(f.get("files", "-")),
                     str(s.get("log_files", "-")), str(f.get("small_files", "-")),
                     f"{f.get('well_sized_pct_with_logs', f.get('well_sized_pct', float('nan'))):.1f}%", _mb((s.get("bytes_written") or {}).get("bytes")),
                     _mb(s["upsert"]["median_rss_peak_delta"]), (s.get("error") or "")[:60]])
    return rows


_LOAD_HEADERS = ["system", "runs (s)", "median s", "rows/s", "input MB/s", "throughput vs raw",
                 "vs raw same content", "vs delta-rs", "cores used", "files", "bytes written", "peak RSS +",
                 "Arrow peak +"]


def _load_rows(r: dict[str, Any]) -> list[list[str]]:
    ld = r["large_load"]["systems"]
    ref, meta, delta = (_get(ld, k, "seconds") for k in ("raw", "raw_meta", "delta"))
    rows = []
    for s in ld.values():
        o = s.get("output") or {}
        rows.append([s["label"], ", ".join(f"{x:.1f}" for x in s.get("seconds_runs", [])), _s(s["seconds"]),
                     f"{s.get('rows_per_s', float('nan')):,.0f}", f"{s.get('mb_per_s', float('nan')):.1f}",
                     f"{ratio(ref, s['seconds']):.2f}", f"{ratio(meta, s['seconds']):.2f}",
                     f"{ratio(delta, s['seconds']):.2f}", _s(s.get("cores_used")), str(o.get("files", "-")),
                     _mb(o.get("total")), _mb(s.get("rss_peak_delta")), _mb(s.get("arrow_peak_delta"))])
    return rows


def _merge_rows(r: dict[str, Any]) -> list[list[str]]:
    mg = r["merge"]["systems"]
    ref = _get(mg, "delta", "seconds")
    return [[s.get("label", k), ", ".join(f"{x:.2f}" for x in s.get("seconds_runs", [])), _s(s["seconds"]),
             f"{ratio(s['seconds'], ref):.2f}x", _s(s.get("cores_used")), _mb(s.get("rss_peak_delta")),
             _mb(s.get("arrow_peak_delta")), str((s.get("files") or {}).get("files", "-"))] for k, s in mg.items()]


def _memory_rows(r: dict[str, Any]) -> list[list[str]]:
    mem = r["memory"]["systems"]
    return [[k, str(s.get("partitions")), f"{s.get('table_rows', 0):,}", str((s.get("table_files") or {}).get("files")),
             ", ".join(f"{x:.2f}" for x in s.get("seconds_runs", [])), _s(s.get("seconds")), _mb(s.get("rss_peak_delta")),
             _mb(s.get("arrow_peak_delta"))] for k, s in mem.items()]


def _phase_lines(r: dict[str, Any]) -> list[str]:
    out = []
    for w, sysd in (("load", (r.get("large_load") or {}).get("systems") or {}),
                    ("merge", (r.get("merge") or {}).get("systems") or {}),
                    ("memory", (r.get("memory") or {}).get("systems") or {})):
        for k, s in sysd.items():
            if s.get("phases"):
                ph = ", ".join(f"{lbl} {v:.2f} s" for lbl, v in s["phases"].items() if v >= 0.005)
                out.append(f"* {w} / {s.get('label', k)} ({_s(s['seconds'])} s): {ph}")
    for s in ((r.get("stream") or {}).get("systems") or {}).values():
        for ph in ("insert", "upsert"):
            p = (s.get("phases") or {}).get(ph)
            if p:
                steps = ", ".join(f"{lbl} {v:.3f} s" for lbl, v in p.items() if v >= 0.0005)
                out.append(f"* stream / {s['label']} ({ph}, median per batch): {steps}")
    return out


def _headline_lines(r: dict[str, Any]) -> list[str]:
    return [f"{t['target']}: **{t['measured']}** ({ {True: 'met', False: 'missed', None: 'not judged'}[t['met']] })"
            for t in r.get("targets", [])]


def _pyspark_note(r: dict[str, Any]) -> str:
    p = r.get("probe") or {}
    if not p:
        return "the no-pyspark probe did not run"
    failed = {k: v for k, v in (p.get("writes") or {}).items() if v != "ok"}
    text = ("the in-process writes (insert, upsert, bulk_insert, MOR upsert + compact, insert + cluster, in a "
            "child with nothing else loaded) imported no pyspark" if not p.get("pyspark_imported") else
            "the in-process writes DID import pyspark (first from "
            + " <- ".join(reversed(p.get("first_import") or ["?"])) + ")")
    return text + (f"; probe writes that failed: {failed}" if failed else "")


def _verdict(r: dict[str, Any]) -> str:
    v = r["verification"]
    return ("OK - every pyhudi table read back with hudi-rs holds exactly the expected keys at their latest "
            "versions (delta-rs tables read with delta-rs; raw outputs by row count)"
            if v["ok"] else "FAILED: " + "; ".join(v["problems"]))


def _sections(r: dict[str, Any], markdown: bool) -> list[str]:
    out = []
    if r.get("stream", {}).get("systems"):
        c = r["stream"]["config"]
        out += [f"**1. Small batches on Arrow input** ({c['insert_batches']} insert + {c['upsert_batches']} upsert "
                f"batches of {c['rows_per_batch']:,} rows, {c['update_fraction']:.0%} updates from the last "
                f"{c['update_window']} batches; max file {fmt_bytes(c['max_file_size'])}, small-file limit "
                f"{fmt_bytes(c['small_file_limit'])}; well sized = base files between the limit and 1.1 x max, live "
                "log bytes counted as not well sized):", "",
                format_table(_STREAM_HEADERS, _stream_rows(r), markdown), ""]
    if r.get("large_load", {}).get("systems"):
        c = r["large_load"]["config"]
        out += [f"**2-3. Large load** ({c['rows']:,} rows, {fmt_bytes(c['staged_bytes'])} as staged parquet, an "
                f"Arrow table in memory; partitioned by city; max file {fmt_bytes(c['max_file_size'])}; raw pyarrow "
                f"files of at most {c['raw_rows_per_file']:,} rows in one row group, snappy, 1 MB pages; "
                f"{c['threads']} threads = the local engine's pool):", "",
                format_table(_LOAD_HEADERS, _load_rows(r), markdown), ""]
    if r.get("merge", {}).get("systems"):
        c = r["merge"]["config"]
        out += [f"**4. Upsert batch into a larger table** ({c['batch_rows']:,} rows, {c['update_fraction']:.0%} of "
                f"them updates of random keys, into {c['base_rows']:,} rows partitioned by city: "
                f"{c['base_files']['hudi'].get('files')} pyhudi base files, {c['base_files']['delta'].get('files')} "
                "delta-rs files; every file is touched):", "",
                format_table(["system", "runs (s)", "median s", "vs delta-rs", "cores used", "peak RSS +",
                              "Arrow peak +", "files after"], _merge_rows(r), markdown), ""]
    if r.get("memory", {}).get("systems"):
        c = r["memory"]["config"]
        out += [f"**5. Memory follows the file groups touched** (the same {c['batch_rows']:,}-row upsert, half "
                f"updates, into partition p000 of a table of {c['small_partitions']} and of "
                f"{c['small_partitions'] * c['factor']} partitions of {c['partition_rows']:,} rows):", "",
                format_table(["table", "partitions", "rows", "base files", "runs (s)", "median s", "peak RSS +",
                              "Arrow peak +"], _memory_rows(r), markdown), ""]
    return out


def render_text(r: dict[str, Any]) -> str:
    m = r["machine"]
    return "\n".join([
        f"== {TITLE} ==",
        f"machine: {m['cores']} cores ({m['cpu']}), pyarrow {m['pyarrow']}; {r['load']['note']}",
        *[x.replace("**", "") for x in _sections(r, False)],
        *[x.replace("**", "") for x in _headline_lines(r)], _pyspark_note(r),
        "steps:", *[x.replace("* ", "  ") for x in _phase_lines(r)],
        f"verification: {_verdict(r)}",
    ])


def render_markdown(r: dict[str, Any]) -> str:
    m, load = r["machine"], r["load"]
    phases = ", ".join(f"{k} {v['foreign_cores']:.2f}" for k, v in load["phases"].items())
    heads = "\n".join(f"* {x}" for x in _headline_lines(r))
    steps = "\n".join(_phase_lines(r))
    body = "\n".join(_sections(r, True))
    return f"""\
What it answers (issue 17, item 5): how pyhudi's in-process engine (no SparkSession, no JVM) compares on
Arrow input with delta-rs, which also writes in-process, and with a raw pyarrow parquet write of the same
data; and whether a write's peak memory follows the file groups it touches rather than the table.

```bash
{r['command']}
```

Run {r['finished']} on {m['cores']} cores ({m['cpu']}), {fmt_bytes(m['memory_bytes'] or 0)} RAM, Python
{m['python']}, pyarrow {m['pyarrow']}, pyhudi {m['pyhudi_commit']}, local engine pool
{r['config']['local_parallelism']} threads. Load: {load['note']} (average foreign cores per phase: {phases}).
Every figure is from this one run; {_pyspark_note(r)}.

**Headline (same-run ratios):**

{heads}

**Method.** Every measured write runs in a fresh child process that first loads its input into memory as
an Arrow table (not timed), so its time is the write alone and its memory its own: "peak RSS +" is the
process's RSS high-water mark during the write (reset just before it through `/proc/self/clear_refs`)
minus the RSS before it, "Arrow peak +" the high-water mark of Arrow's allocator (sampled every 5 ms)
minus its level before. The small-batches stream runs in one long-lived process (like a streaming job),
each batch read from its staged parquet with pyarrow inside the timed call for every system, systems in
rotating order per batch, after an unmeasured tiny stream, with no forced garbage collection between writes
(each system pays its own); its data and flags are `bench/small_batches.py`'s.
Load, merge and memory measurements run {r['config']['runs']} time(s) each, order rotated, on fresh output
directories or fresh copies of the table, with dirty pages flushed between runs outside the timing; the
targets are judged on the ratio of the medians (as `large_load.py` does); "per-round median" is the median
of the ratios within each round (systems of one round run back to back), which a load change between
rounds does not move. Raw pyarrow is `pyarrow.parquet.write_table` per partition file (split with
`Table.filter` per city, timed), pyarrow's default encodings; pyhudi's files also carry the five
`_hoodie_*` meta columns (the record key a second time: about a third more bytes with UUID keys) and a
bloom filter of the keys in the footer; "raw pyarrow ... of the same columns as pyhudi's files" writes
those meta columns too (built before the timing: the Hudi-format limit), and the
`hoodie.populate.meta.fields=false` row shows what they cost. delta-rs `write_deltalake` writes the same
Arrow table, partitioned by city, `target_file_size` = the max file size, its own parquet defaults. A separate profile of these writes (py-spy; `--profile-dir DIR --no-save`, then
`bench/pyspy_top.py`) says where the rest goes.

{body}
**Where pyhudi's time goes** (steps of `pyhudi.write`, median per write; `other` = the rest of the call):

{steps}

**Correctness** (checked in the run): {_verdict(r)}.
"""
