"""The targets of issue 6, judged from the latest saved run of every benchmark.

    .venv/bin/python bench/targets.py            # print the table and refresh docs/benchmarks.md
    .venv/bin/python bench/targets.py --no-save  # print only

Every target is a ratio between two systems measured in the same run, so it is judged inside one
results file (`bench/results/<benchmark>-latest.json`); the table names that run, its command and
whether the machine was loaded. A benchmark that has not been run yet shows as "not measured". The
rendered table becomes the first section of docs/benchmarks.md. A benchmark may also publish its own
targets as a list `targets: [{"target", "measured", "met"}]` in its results; they are appended.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
from common import format_table, ratio  # noqa: E402

TITLE = "Targets"
BENCHMARKS = ("small_batches", "large_load", "mor_vs_cow", "clustering", "streaming_services", "arrow_engine", "scale",
              "stream_grid", "object_store", "scale_spark")


@dataclass
class Row:
    target: str
    benchmark: str
    measured: str
    met: bool | None  # None: not measured, or informational
    note: str = ""
    kind: str = ""  # key into LIMITS: what limits this target when it is missed


def _nan(v: float) -> bool:
    return v != v


def _judge(value: float, ok: Callable[[float], bool]) -> bool | None:
    return None if _nan(value) else ok(value)


# --------------------------------------------------------------------------- per benchmark


def small_batches_rows(r: dict[str, Any]) -> list[Row]:
    h, s, cfg = r["headline"].get("cow", {}), r["systems"], r["config"]
    name = "small_batches"
    if not h:
        return [Row("pyhudi COW in the streaming workload", name, "COW not run", None)]
    f = s["cow"]["final_files"]
    rows = [
        Row("Auto-sizing: >= 95% of bytes in files between the small-file limit and 1.1 x max", name,
            f"{h['well_sized_pct']:.1f}%", _judge(h["well_sized_pct"], lambda v: v >= 95.0),
            f"{f['files']} files, {f['small_files']} below the limit (the stream's open file among them)", "sizing"),
        Row("Auto-sizing: file count within 10% of total bytes / max size", name,
            f"{f['files']} files vs {f['ideal_files_global']} ({h['files_over_ideal_global']:.2f}x)",
            _judge(h["files_over_ideal_global"], lambda v: v <= 1.10),
            f"per-partition ideal {f['ideal_files']}" if cfg["partitioned"] else "", "sizing"),
        Row("COW insert with auto-sizing <= 1.3 x plain Spark append of the same batches", name,
            f"{h['insert_vs_spark']:.2f}x", _judge(h["insert_vs_spark"], lambda v: v <= 1.3),
            f"{cfg['insert_batches']} batches of {cfg['rows_per_batch']:,} rows", "insert"),
        Row(f"COW upsert with {cfg['update_fraction']:.0%} updates <= 2 x plain Spark append", name,
            f"{h['upsert_vs_spark']:.2f}x",
            _judge(h["upsert_vs_spark"], lambda v: v <= 2.0) if abs(cfg["update_fraction"] - 0.10) < 1e-9 else None,
            "the target is stated for 10% updates" if abs(cfg["update_fraction"] - 0.10) >= 1e-9 else
            f"updates drawn from the last {cfg['update_window'] or 'all'} batches", "upsert"),
    ]
    for q, v in h["spark_query_over_this"].items():
        rows.append(Row(f"Query ({q}) on the auto-sized table >= 3 x faster than on the small-files table", name,
                        f"{v:.2f}x faster", _judge(v, lambda x: x >= 3.0),
                        f"{s['spark']['final_files']['files']} vs {f['files']} files", "query_small"))
    for q, v in h["query_over_delta"].items():
        rows.append(Row(f"Query ({q}) within 10% of a freshly compacted delta-rs table", name,
                        f"{v:.2f}x delta-rs's time", _judge(v, lambda x: x <= 1.10),
                        "same Spark session, spark.read.parquet of each table's files", "query_delta"))
    rows.append(Row("End-to-end (ingest + maintenance) no slower than delta-rs append/merge + optimize", name,
                    f"{h['end_to_end_over_delta']:.2f}x delta-rs's time",
                    _judge(h["end_to_end_over_delta"], lambda v: v <= 1.0),
                    f"{s['cow']['end_to_end_seconds']:.1f} s vs {s['delta']['end_to_end_seconds']:.1f} s"
                    if "delta" in s else "", "end_to_end"))
    for k in ("cow_cluster", "mor", "mor_services"):
        hk = r["headline"].get(k)
        if hk:
            rows.append(Row(f"(info) {s[k]['label']}: end-to-end vs delta-rs; bytes well sized", name,
                            f"{hk['end_to_end_over_delta']:.2f}x; {hk['well_sized_pct']:.1f}%", None))
    return rows


def large_load_rows(r: dict[str, Any]) -> list[Row]:
    h = r["headline"]
    rows = []
    for k, label in (("bulk_insert", "bulk_insert"), ("insert", "insert (auto-sized)")):
        if k in h:
            v = h[k]["throughput_vs_pyarrow"]
            rows.append(Row(f"Large load ({label}) >= 60% of raw pyarrow throughput", "large_load",
                            f"{v:.0%}", _judge(v, lambda x: x >= 0.6) if k == "bulk_insert" else None,
                            f"{h[k]['throughput_vs_spark']:.2f}x Spark's parquet write"
                            + ("" if k == "bulk_insert" else "; informational, bulk_insert is the load path"),
                            "load" if k == "bulk_insert" else ""))
    return rows


def clustering_rows(r: dict[str, Any]) -> list[Row]:
    rows = []
    for layout, c in r["clustering"].items():
        v = ratio(c["pyhudi_mb_per_s"], c["baseline_mb_per_s"])
        q = next((x["tables"][layout].get("speedup") for x in r.get("queries", [])
                  if layout in x.get("tables", {})), None)
        rows.append(Row(f"Clustering ({layout}) >= 70% of the raw pyarrow read-sort-write rate", "clustering",
                        f"{v:.0%}", _judge(v, lambda x: x >= 0.7),
                        f"{c['pyhudi_mb_per_s']:.1f} vs {c['baseline_mb_per_s']:.1f} MB/s"
                        + (f"; first query {q:.1f}x faster after" if isinstance(q, (int, float)) else ""),
                        "clustering"))
    return rows


def mor_vs_cow_rows(r: dict[str, Any]) -> list[Row]:
    c, u = r["compaction"], r["updates"]
    v = ratio(c["pyhudi_mb_per_s"], c["baseline_mb_per_s"])
    return [
        Row("(info) Compaction throughput vs a raw pyarrow read-merge-write", "mor_vs_cow", f"{v:.0%}", None,
            f"{c['pyhudi_mb_per_s']:.1f} vs {c['baseline_mb_per_s']:.1f} MB/s"),
        Row("(info) Update latency MOR / COW", "mor_vs_cow", f"{u['mor_cow_ratio_median']:.2f}x", None,
            f"{r['config']['update_fraction']:.0%} of keys per batch"),
    ]


def streaming_services_rows(r: dict[str, Any]) -> list[Row]:
    rows = []
    target = float(r.get("target_ratio", 1.5))
    for run, rat in (r.get("ratios") or {}).items():
        if run == "cow+sizing":
            continue
        v = float(rat["add_batch_median"])
        rows.append(Row(f"Streaming micro-batch latency {run} <= {target:g} x {rat['baseline']}",
                        "streaming_services", f"{v:.2f}x", _judge(v, lambda x: x <= target),
                        f"p90 {float(rat['add_batch_p90']):.2f}x"))
    return rows


READERS: dict[str, Callable[[dict[str, Any]], list[Row]]] = {
    "small_batches": small_batches_rows, "large_load": large_load_rows, "mor_vs_cow": mor_vs_cow_rows,
    "clustering": clustering_rows, "streaming_services": streaming_services_rows,
    "arrow_engine": lambda r: [],  # issue 17's targets: published by the benchmark itself (`targets`)
    "scale": lambda r: [],  # issue 19's targets: published by bench/scale.py itself (`targets`)
    "scale_spark": lambda r: [],  # issue 31 item 1 (Spark spread upsert <= 5x, <= 3x in-process): published too
    "stream_grid": lambda r: [],  # issue 31 item 2's targets: published by bench/stream_grid.py itself
    "object_store": lambda r: object_store_rows(r),
}


def object_store_rows(r: dict[str, Any]) -> list[Row]:
    """Issue 31 item 3: object-store requests per write no more than delta-rs's (medians per phase, and the
    run's total), counted by the proxy in front of the S3 server."""
    s, name = r["summary"], "object_store"
    cow, delta = s["cow"], s["delta"]
    rows = []
    for phase in ("insert", "upsert"):
        c = cow["phases"].get(phase, {}).get("median_requests", float("nan"))
        d = delta["phases"].get(phase, {}).get("median_requests", float("nan"))
        rows.append(Row(f"Object-store requests per {phase} <= delta-rs (median)", name, f"{c:g} vs {d:g}",
                        _judge(ratio(c, d), lambda v: v <= 1.0), "", "requests"))
    c, d = cow["total_requests"], delta["total_requests"]
    rows.append(Row("Object-store requests of the whole stream <= delta-rs", name, f"{c} vs {d}",
                    _judge(ratio(c, d), lambda v: v <= 1.0), "", "requests"))
    return rows


def limit_requests(r: dict[str, Any]) -> str:
    calls = r["summary"]["cow"].get("median_by_call_insert", {})
    listed = ", ".join(f"{c} {v:g}" for c, v in calls.items() if v)
    return ("delta-rs's append is a LIST of its log, a GET per commit since its last checkpoint, the data PUT and "
            "one conditional PUT of the commit. A Hudi write also keeps crash and concurrency safety on the "
            "store: a heartbeat file (PUT, DELETE), requested and inflight instant files (conditional PUTs) and a "
            "LIST after creating them, markers (one DIRECT marker for a write of one or two files, else the type "
            "file and one batch per task; deleted at commit), the "
            "storage-based table lock (take, renew right before the commit to prove no takeover, release) around "
            "a fresh LIST of the timeline for the conflict check, and a batch delete of the markers and heartbeat; "
            "the inline cleaner and archival's check start from the timeline the commit left (no request when "
            "nothing is to clean). Each of these is one request a delta-rs append does not send; its cost grows "
            f"instead with the commits since its last checkpoint. Median requests per insert by storage call: {listed}.")


def published_rows(name: str, r: dict[str, Any]) -> list[Row]:
    return [Row(str(t.get("target")), name, str(t.get("measured")), t.get("met")) for t in r.get("targets") or []]


def collect() -> tuple[list[Row], dict[str, dict[str, Any]]]:
    rows: list[Row] = []
    runs: dict[str, dict[str, Any]] = {}
    for name in BENCHMARKS:
        r = common.load_latest(name)
        if r is None:
            if name != "streaming_services":
                rows.append(Row(f"(all {name} targets)", name, "not measured", None, f"run bench/{name}.py"))
            continue
        runs[name] = r
        try:
            rows.extend(READERS[name](r))
        except (KeyError, TypeError, ValueError) as exc:
            rows.append(Row(f"(all {name} targets)", name, "unreadable results", None, f"{type(exc).__name__}: {exc}"))
        rows.extend(published_rows(name, r))
    return rows, runs


# --------------------------------------------------------------------------- what limits a missed target


def _fmt_mb(n: float) -> str:
    return f"{n / (1 << 20):.1f} MB"


def _steps(prof: dict[str, float], top: int = 4) -> str:
    items = sorted(((k, v) for k, v in prof.items() if v >= 0.005), key=lambda kv: -kv[1])[:top]
    return ", ".join(f"{k} {v:.2f} s" for k, v in items)


def _jobs(r: dict[str, Any], key: str, phase: str) -> str:
    sj = ((r.get("spark_jobs") or {}).get(key) or {}).get(phase) or {}
    return f"{sj['jobs']:g} Spark jobs" if sj else "? Spark jobs"


def _per_batch(ingest: dict[str, Any]) -> float:
    return float(ingest.get("bytes_written", 0)) / max(1, int(ingest.get("batches", 1)))


def limit_insert(r: dict[str, Any]) -> str:
    s, prof = r["systems"], r["profile"]["cow"]["insert"]
    cow, sp = s["cow"]["ingest"]["insert"], s["spark"]["ingest"]["insert"]
    return (f"A small insert batch into an existing table is one Spark job whose one task reads the batch's "
            f"parquet files itself, tags, plans and writes (`hoodie.pyhudi.write.single.task.max.bytes`, "
            f"`hoodie.pyhudi.write.direct.parquet.input`): median {cow['median_seconds']:.2f} s per batch "
            f"({_jobs(r, 'cow', 'insert')}, one of them `spark.read.parquet` inferring the batch's schema, which "
            f"the append pays too; steps: {_steps(prof)}) against {sp['median_seconds']:.2f} s for the append "
            f"({_jobs(r, 'spark', 'insert')}, one read-and-write stage). The task writes "
            f"{_fmt_mb(_per_batch(cow))} per batch against the append's {_fmt_mb(_per_batch(sp))}: COW auto-sizing "
            "tops up the open small file by rewriting it whole (Hudi's design). What would remove the rest: a "
            "top-up that copies the old file's row groups as they are instead of decoding and re-encoding them.")


def limit_upsert(r: dict[str, Any]) -> str:
    s, prof = r["systems"], r["profile"]["cow"]["upsert"]
    cow_up = s["cow"]["ingest"]["upsert"]
    mor = s.get("mor", {}).get("ingest", {}).get("upsert", {})
    mor_txt = (f" MOR ({mor['ratio_vs_spark']:.1f}x the append) writes its updates to log files instead of "
               f"rewriting base files ({_fmt_mb(_per_batch(mor))} per batch)." if mor else "")
    return (f"Per upsert batch pyhudi spends {_steps(prof)} ({_jobs(r, 'cow', 'upsert')}). In its one task the "
            "SIMPLE index reads the key column of every latest base file of the partition (cached per Python "
            "worker, since base files never change, so only new files are read), and copy-on-write rewrites "
            f"each file an update touches ({_fmt_mb(_per_batch(cow_up))} written per batch for a "
            f"{_fmt_mb(r['input']['staged_bytes_per_batch'])} batch); the append baseline writes the batch once "
            f"and updates nothing.{mor_txt} What would remove it: fewer files touched per update batch (updates "
            "concentrated in recent files, or MOR with compaction), and the insert limits above.")


def limit_sizing(r: dict[str, Any]) -> str:
    f = r["systems"]["cow"]["final_files"]
    return (f"{f['small_files']} of {f['files']} files are below the small-file limit; the one a stream is "
            "still filling always is, so the share of well-sized bytes depends on how many max-size files the "
            "table holds (the default run has about a dozen; `--scale 2` or more gives the open file less "
            "weight). Under Hudi's record-size rule early files also fill slowly while the estimate is still the "
            "1024-byte default; pyhudi estimates from the stream's own records instead "
            "(`hoodie.pyhudi.record.size.estimate.auto`, since this benchmark's saved run if it predates it).")


def limit_query_small(r: dict[str, Any]) -> str:
    sp, cow = r["systems"]["spark"]["final_files"], r["systems"]["cow"]["final_files"]
    return (f"The small-files table has {sp['files']} files of {_fmt_mb(sp['p50'])}: Spark packs small files "
            "into shared splits (`spark.sql.files.openCostInBytes`), so each costs an open and a footer read, "
            f"against {cow['files']} files for pyhudi. A selective `ts` range prunes by footer min/max on both (each "
            "append file holds exactly one hour), so the gap there is smaller than for a full scan. It grows "
            "with the number of batches (`--scale`).")


def limit_query_delta(r: dict[str, Any]) -> str:
    cow, d = r["systems"]["cow"]["final_files"], r["systems"]["delta"]["final_files"]
    return (f"Same rows, different files: pyhudi's {cow['files']} files hold {_fmt_mb(cow['total'])} against "
            f"delta-rs's {d['files']} files and {_fmt_mb(d['total'])}. Hudi's base files carry a copy of the key "
            "(`_hoodie_record_key`, about a fifth of the bytes with UUID keys) and a bloom filter of every key "
            "in the footer (~0.4 MB per 8 MB file), which Spark reads with every footer, so queries that touch "
            "few rows pay relatively more. Measuring `--hudi-option hoodie.populate.meta.fields=false` (no meta "
            "columns) or a smaller `hoodie.index.bloom.num_entries` would show how much of it they remove.")


def limit_end_to_end(r: dict[str, Any]) -> str:
    s = r["systems"]
    append = ratio(s["spark"]["end_to_end_seconds"], s["delta"]["end_to_end_seconds"])
    return (f"Spark's own plain append of the same batches, with no table format and no file sizing, takes "
            f"{append:.2f}x delta-rs's end-to-end time: a writer that runs each batch as a Spark job starts above "
            "this target. "
            f"delta-rs writes each batch inside the Python process, natively (median "
            f"{s['delta']['ingest']['insert']['median_seconds']:.2f} s per insert, "
            f"{s['delta']['ingest']['upsert']['median_seconds']:.2f} s per merge) - faster than even the plain "
            f"Spark append ({s['spark']['ingest']['insert']['median_seconds']:.2f} s). pyhudi runs every batch "
            "as at least one Spark job (one task for a small batch), so its floor is Spark's per-job cost, which "
            "the append pays too, plus the COW top-up that rewrites the open file on every insert batch; delta-rs "
            "appends a new small file instead and pays for it once in OPTIMIZE. Closing the gap would need a path "
            "that writes small batches without Spark, not tuning.")


def limit_load(r: dict[str, Any]) -> str:
    s = r["systems"]
    bulk = s["bulk_insert"]
    sp = s.get("spark")
    spark_txt = (f"Spark's own parquet write reaches {ratio(s['pyarrow']['seconds'], sp['seconds']):.0%} of it: "
                 "the JVM decodes the input into rows and encodes them again. " if sp and "pyarrow" in s else "")
    ins = s.get("insert", {}).get("phases", {})
    ins_txt = (f" `insert` (auto-sized) still takes Spark's rows: it plans buckets from a count job (its `count` "
               f"step took {ins.get('count', float('nan')):.1f} s of {s['insert']['seconds']:.1f} s) and shuffles "
               "records to them." if ins else "")
    return (f"Raw pyarrow writes Arrow data it already holds, with all cores, in one process. {spark_txt}pyhudi's "
            "bulk_insert reads the staged parquet files in its Spark tasks with pyarrow (no rows through the "
            "JVM), and adds Hudi's meta columns (a unique sequence number and a copy of the key per row) and a "
            f"bloom filter of every key in each footer ({_fmt_mb(bulk['output']['total'])} written vs "
            f"{_fmt_mb(s['pyarrow']['output']['total'])}); its steps: {_steps(bulk.get('phases', {}))}.{ins_txt} "
            "What remains is the extra bytes to encode, the bloom hashing (about 30 murmur rounds per key at the "
            "default fpp) and one Spark job's scheduling.")


def limit_clustering(r: dict[str, Any]) -> str:
    c = r["clustering"].get("linear") or next(iter(r["clustering"].values()))
    groups = c.get("groups", "?")
    return (f"pyhudi already reads and writes the files with pyarrow inside its Spark tasks (Spark only hands out "
            f"the {groups} clustering groups, one task each; rewrite step "
            f"{c['pyhudi_phases'].get('rewrite (Spark job)', float('nan')):.1f} s of {c['pyhudi_seconds']:.1f} s), "
            f"so the gap is work per byte and parallelism: {c['pyhudi_mb_per_cpu_s']:.0f} MB per CPU-second "
            f"against {c['baseline_mb_per_cpu_s']:.0f} for the single-process pyarrow rewrite, at "
            f"{c['pyhudi_cores_used']:.2f} cores used. The clustering section's profile puts Hudi's bloom filter "
            "(30 hash rounds per key at the default fpp) at about a fifth of task CPU and a size-estimate sample "
            "at 6%, work the baseline does not do. What would remove it: cheaper bloom-filter hashing, no "
            "separate size sample, and groups small enough that every core has a task.")


LIMITS: dict[str, Callable[[dict[str, Any]], str]] = {
    "insert": limit_insert, "upsert": limit_upsert, "sizing": limit_sizing, "query_small": limit_query_small,
    "query_delta": limit_query_delta, "end_to_end": limit_end_to_end, "load": limit_load,
    "clustering": limit_clustering, "requests": limit_requests,
}


def limits_text(rows: list[Row], runs: dict[str, dict[str, Any]]) -> str:
    """One paragraph per kind of missed target: what limits it in the judged run, what would remove it."""
    out = []
    for kind in dict.fromkeys(r.kind for r in rows if r.met is False and r.kind):
        bench = next(r.benchmark for r in rows if r.kind == kind)
        try:
            text = LIMITS[kind](runs[bench])
        except (KeyError, TypeError, ValueError, StopIteration) as exc:
            text = f"(could not explain from the results: {type(exc).__name__}: {exc})"
        names = "; ".join(r.target for r in rows if r.kind == kind and r.met is False)
        out.append(f"* **{names}** - {text}")
    return "\n".join(out)


# --------------------------------------------------------------------------- rendering


def _status(met: bool | None) -> str:
    return {True: "met", False: "**missed**", None: "-"}[met]


def _run_text(name: str, r: dict[str, Any]) -> str:
    load = r.get("load", {})
    loaded = " (machine loaded)" if load.get("loaded") else ""
    return f"`{r.get('command', '?')}` at {r.get('finished', '?')}{loaded}"


def render_markdown(rows: list[Row], runs: dict[str, dict[str, Any]]) -> str:
    table = format_table(["target", "measured", "status", "benchmark", "context"],
                         [[r.target, r.measured, _status(r.met), r.benchmark, r.note] for r in rows], markdown=True)
    met = sum(1 for r in rows if r.met is True)
    missed = sum(1 for r in rows if r.met is False)
    run_lines = "\n".join(f"* {name}: {_run_text(name, r)}" for name, r in runs.items())
    return f"""\
Issue 6's targets (and issue 17's, from `arrow_engine`), each a ratio between two systems measured in the same run, judged from the latest
saved run of each benchmark (`.venv/bin/python bench/targets.py` rebuilds this table from
`bench/results/*-latest.json`). **{met} met, {missed} missed**; `-` rows are context without a target.
The sections below give the method, the full numbers and, for missed targets, what limits them.

{table}

What limits the missed targets in these runs, and what would remove it:

{limits_text(rows, runs) or "(none missed)"}

Runs judged:

{run_lines}
"""


def render_text(rows: list[Row]) -> str:
    return format_table(["target", "measured", "status", "benchmark"],
                        [[r.target, r.measured, _status(r.met).replace("*", ""), r.benchmark] for r in rows])


def refresh_docs() -> None:
    """Rewrite the Targets section (first in docs/benchmarks.md) from the latest results."""
    rows, runs = collect()
    common.update_docs_section(TITLE, render_markdown(rows, runs), first=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--no-save", action="store_true", help="print only; do not rewrite docs/benchmarks.md")
    args = p.parse_args()
    rows, runs = collect()
    print(render_text(rows))
    if not args.no_save:
        common.update_docs_section(TITLE, render_markdown(rows, runs), first=True)
        print(f"\n{common.DOCS_FILE.relative_to(common.REPO_DIR)}: section '{TITLE}' refreshed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
