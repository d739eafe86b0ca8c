"""Table services while streaming: micro-batch latency with background clustering/compaction vs without,
and the file sizes the stream leaves.

    .venv/bin/python bench/streaming_services.py [--scale 1] [--rows-per-file 2000] [--scheduler FIFO|FAIR]

1. A landing directory receives K tiny parquet files of generated trips (append-only, 4 city partitions;
   K = 40 x scale, `--rows-per-file` rows each). A feeder drops one file at a time (write to a hidden name,
   then rename) and drives the streaming query (`pyhudi.write_stream`, `maxFilesPerTrigger` 1, default
   trigger) with `processAllAvailable()`, so every file is one micro-batch and micro-batches follow each
   other back to back: the worst case for a background service competing for the 2 cores.
2. The same K files are streamed five ways into fresh tables (operation insert, index as stated):
   A `cow`: copy-on-write, auto-sizing off (`hoodie.parquet.small.file.limit=0`), no services (baseline of B);
   B `cow+clustering`: as A plus `hoodie.clustering.async.enabled` every `--clustering-commits` commits;
   C `cow+sizing`: copy-on-write with auto-sizing (small-file limit 5/6 of the max), no services;
   D `mor`: merge-on-read, INMEMORY index (inserts go to log files of small file groups), async compaction
     off (`hoodie.datasource.compaction.async.enable=false`) (baseline of E);
   E `mor+compaction`: as D with async compaction (the streaming default) every `--compaction-commits`
     delta commits.
   Cleaning and archival run as by default (automatic, inline) in every run. Before the measured runs, three
   tiny files go through every run's configuration once (JVM, Python workers, code paths; not measured).
3. Per micro-batch latency from the query's progress reports (`durationMs.addBatch`, the pyhudi write, and
   `durationMs.triggerExecution`, the whole trigger): median and p90; the ratio of B to A and of E to D
   (target <= 1.5). After the stream stops and `pyhudi.wait_for_table_services` returns: the latest base
   files' sizes against the small-file limit and the max file size (% of bytes in files between the limit
   and 1.1 x max), log bytes not compacted yet, commits and services completed, total time.
4. Correctness: every table holds exactly the input's keys once (pyhudi and hudi-rs row counts, distinct
   keys through pyhudi).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
from common import MB, fmt_bytes, format_table, median, ratio  # noqa: E402

NAME = "streaming_services"
TITLE = "Table services while streaming"
DEFAULT_FILES = 40
RUNS = ("cow", "cow+clustering", "cow+sizing", "mor", "mor+compaction")
BASELINE = {"cow+clustering": "cow", "mor+compaction": "mor", "cow+sizing": "cow"}
TARGET_RATIO = 1.5


# --------------------------------------------------------------------------- options


def run_options(run: str, args: Any) -> dict[str, str]:
    limit = args.max_file_size * 5 // 6
    o = {"hoodie.table.name": f"trips_{run.replace('+', '_')}", "hoodie.datasource.write.recordkey.field": "uuid",
         "hoodie.datasource.write.partitionpath.field": "city", "hoodie.datasource.write.precombine.field": "ts",
         "hoodie.datasource.write.operation": "insert",
         "hoodie.parquet.max.file.size": str(args.max_file_size), "hoodie.parquet.small.file.limit": "0",
         "hoodie.index.bloom.num_entries": str(args.bloom_entries),
         "hoodie.copyonwrite.record.size.estimate": "200"}
    if run.startswith("mor"):
        o.update({"hoodie.datasource.write.table.type": "MERGE_ON_READ", "hoodie.index.type": "INMEMORY",
                  "hoodie.parquet.small.file.limit": str(limit),
                  # parquet log blocks are about as large as the base file they become (Hudi's 0.35 is for Avro)
                  "hoodie.logfile.to.parquet.compression.ratio": "1.0",
                  "hoodie.datasource.compaction.async.enable": str(run == "mor+compaction").lower(),
                  "hoodie.compact.inline.max.delta.commits": str(args.compaction_commits)})
    if run == "cow+sizing":
        o["hoodie.parquet.small.file.limit"] = str(limit)
    if run == "cow+clustering":
        o.update({"hoodie.clustering.async.enabled": "true",
                  "hoodie.clustering.async.max.commits": str(args.clustering_commits),
                  "hoodie.clustering.plan.strategy.small.file.limit": str(limit),
                  "hoodie.clustering.plan.strategy.target.file.max.bytes": str(args.max_file_size)})
    return o


# --------------------------------------------------------------------------- the stream


class ServiceClock:
    """Wall-clock intervals of background compaction/clustering executions, by wrapping the services'
    execute functions while the benchmark runs (pyhudi's code is not changed)."""

    def __init__(self) -> None:
        import dataclasses

        from pyhudi.services import table_services as ts

        self.intervals: list[tuple[str, float, float]] = []
        self._ts = ts
        self._saved = (ts.CLUSTERING, ts.COMPACTION)
        ts.CLUSTERING = dataclasses.replace(ts.CLUSTERING, execute=self._wrap("clustering", ts.CLUSTERING.execute))
        ts.COMPACTION = dataclasses.replace(ts.COMPACTION, execute=self._wrap("compaction", ts.COMPACTION.execute))

    def _wrap(self, kind: str, fn: Any) -> Any:
        def timed(*a: Any) -> Any:
            start = time.time()
            try:
                return fn(*a)
            finally:
                self.intervals.append((kind, start, time.time()))
        return timed

    def take(self) -> list[tuple[str, float, float]]:
        out, self.intervals = self.intervals, []
        return out

    def close(self) -> None:
        self._ts.CLUSTERING, self._ts.COMPACTION = self._saved


def _epoch(iso: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def feed_and_stream(spark: Any, files: list[Path], work: Path, run: str, opts: dict[str, str],
                    schema: Any) -> dict[str, Any]:
    """Drop the files one by one into a fresh landing directory; one micro-batch each; collect progress."""
    import pyhudi

    landing, table, ckpt = work / run / "landing", work / run / "table", work / run / "checkpoint"
    for d in (landing, table, ckpt):
        shutil.rmtree(d, ignore_errors=True)
    landing.mkdir(parents=True)
    stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(landing))
    progress: dict[int, dict[str, Any]] = {}
    start = time.perf_counter()
    query = pyhudi.write_stream(stream, str(table), opts, str(ckpt))
    try:
        for i, f in enumerate(files):
            hidden = landing / f".{f.name}.tmp"
            shutil.copyfile(f, hidden)
            os.replace(hidden, landing / f"part-{i:05d}.parquet")
            query.processAllAvailable()
            for p in query.recentProgress:
                if p.numInputRows > 0:
                    progress[p.batchId] = {"batch": p.batchId, "rows": p.numInputRows,
                                           "add_batch_ms": p.durationMs.get("addBatch", 0),
                                           "trigger_ms": p.durationMs.get("triggerExecution", 0),
                                           "start": _epoch(p.timestamp)}
        stream_s = time.perf_counter() - start
    finally:
        query.stop()
    wait_start = time.perf_counter()
    errors = pyhudi.wait_for_table_services(str(table))
    return {"table": str(table), "stream_seconds": stream_s, "wait_seconds": time.perf_counter() - wait_start,
            "total_seconds": time.perf_counter() - start, "service_errors": [repr(e) for e in errors],
            "batches": [progress[b] for b in sorted(progress)]}


# --------------------------------------------------------------------------- results of a run


def p90(values: list[float]) -> float:
    return float(np.percentile(values, 90)) if values else float("nan")


def latency_summary(batches: list[dict[str, Any]], skip: int,
                    services: list[tuple[str, float, float]]) -> dict[str, float]:
    """Median and p90 of addBatch / triggerExecution, skipping the first `skip` micro-batches (table
    creation, first-use compilation); and the median of the micro-batches that overlapped a background
    service execution vs the others (a same-run comparison, immune to the machine's load drifting)."""
    sel = batches[skip:] or batches
    add = [b["add_batch_ms"] / 1000 for b in sel]
    trig = [b["trigger_ms"] / 1000 for b in sel]

    def overlaps(b: dict[str, Any]) -> bool:
        end = b["start"] + b["trigger_ms"] / 1000
        return any(s < end and b["start"] < e for _, s, e in services)

    hit = [b["add_batch_ms"] / 1000 for b in sel if overlaps(b)]
    free = [b["add_batch_ms"] / 1000 for b in sel if not overlaps(b)]
    return {"batches": len(sel), "add_batch_median": median(add), "add_batch_p90": p90(add),
            "trigger_median": median(trig), "trigger_p90": p90(trig), "add_batch_sum": float(sum(add)),
            "overlapping_batches": len(hit), "overlapping_median": median(hit), "other_median": median(free),
            "service_seconds": float(sum(e - s for _, s, e in services))}


def table_state(path: str, max_file: int, limit: int) -> dict[str, Any]:
    """Latest base files and log bytes (pyhudi's file-system view), timeline counts."""
    from pyhudi.model.table_config import load_table_config
    from pyhudi.storage import Storage
    from pyhudi.timeline.archived import ArchivedTimeline
    from pyhudi.timeline.timeline import ActiveTimeline
    from pyhudi.view.builder import build_view

    storage = Storage(path)
    timeline = ActiveTimeline.load(storage)
    view = build_view(storage, load_table_config(storage), timeline)
    slices = view.all_latest_file_slices()
    sizes = sorted(s.base_file.size for s in slices if s.base_file is not None)
    log_bytes = sum(s.log_size for s in slices)
    total = sum(sizes)
    in_range = sum(s for s in sizes if limit <= s <= 1.1 * max_file)
    counts: dict[str, int] = {}
    archived = ArchivedTimeline.load(storage).timeline
    for tl in (archived, timeline):  # archival moved the oldest instants out of .hoodie/
        for inst in tl.completed():
            kind = inst.action.value
            if kind == "commit" and tl.is_compaction_commit(inst):
                kind = "compaction"
            counts[kind] = counts.get(kind, 0) + 1
    return {"base_files": len(sizes), "base_bytes": total, "log_bytes": log_bytes,
            "slices_with_logs": sum(1 for s in slices if s.log_files),
            "small_files": sum(1 for s in sizes if s < limit), "over_max": sum(1 for s in sizes if s > 1.1 * max_file),
            "pct_bytes_in_range": 100.0 * in_range / total if total else 0.0,
            "min": sizes[0] if sizes else 0, "median": median([float(s) for s in sizes]) if sizes else 0.0,
            "max": sizes[-1] if sizes else 0,
            "completed": counts,
            "pending": sorted(f"{i.timestamp}.{i.action.value}" for i in timeline.pending())}


def verify(spark: Any, path: str, expected_rows: int) -> dict[str, Any]:
    from hudi import HudiReadOptions, HudiTableBuilder
    from pyspark.sql import functions as F

    import pyhudi

    r = pyhudi.read(spark, path).agg(F.count(F.lit(1)).alias("n"), F.countDistinct("uuid").alias("k")).collect()[0]
    rs = HudiTableBuilder.from_base_uri(os.path.abspath(path)).build().read(HudiReadOptions())
    rs_rows = sum(b.num_rows for b in rs)
    ok = int(r["n"]) == int(r["k"]) == rs_rows == expected_rows
    return {"pyhudi_rows": int(r["n"]), "pyhudi_keys": int(r["k"]), "hudi_rs_rows": rs_rows, "ok": ok}


# --------------------------------------------------------------------------- main


def main() -> int:
    p = common.base_parser(__doc__.split("\n\n")[0], DEFAULT_FILES * 2000)
    p.add_argument("--rows-per-file", type=int, default=2000, help="rows in each landed file")
    p.add_argument("--max-file-size", type=int, default=1 * MB, help="hoodie.parquet.max.file.size (and "
                   "clustering target); small-file limits are 5/6 of it")
    p.add_argument("--bloom-entries", type=int, default=10000, help="hoodie.index.bloom.num_entries")
    p.add_argument("--clustering-commits", type=int, default=4, help="hoodie.clustering.async.max.commits")
    p.add_argument("--compaction-commits", type=int, default=5, help="hoodie.compact.inline.max.delta.commits")
    p.add_argument("--scheduler", choices=("FIFO", "FAIR"), default="FAIR",
                   help="spark.scheduler.mode (pyhudi.spark_env.create_session's default is FAIR)")
    p.add_argument("--runs", default=",".join(RUNS), help=f"comma-separated subset of {','.join(RUNS)}")
    p.add_argument("--skip-batches", type=int, default=2, help="first micro-batches left out of the latency stats")
    args = p.parse_args()
    runs = [r for r in args.runs.split(",") if r]
    unknown = set(runs) - set(RUNS)
    if unknown:
        p.error(f"unknown runs {sorted(unknown)}")

    k = max(4, int(round(DEFAULT_FILES * args.scale)))
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="pyhudi-bench-stream-"))
    work.mkdir(parents=True, exist_ok=True)
    monitor = common.LoadMonitor().start()
    started = common.now_utc()
    limit = args.max_file_size * 5 // 6
    print(f"pyhudi bench {NAME}: {k} files x {args.rows_per_file:,} rows, max file {fmt_bytes(args.max_file_size)}, "
          f"small-file limit {fmt_bytes(limit)}, scheduler {args.scheduler}, runs {', '.join(runs)}, work dir {work}")

    with monitor.phase("generate"):
        staging = work / "staging"
        staging.mkdir(exist_ok=True)
        files = []
        for i in range(k):
            t = common.trips(args.rows_per_file, args.seed * 100_003 + i)
            f = staging / f"f-{i:05d}.parquet"
            pq.write_table(t, f, compression="snappy")
            files.append(f)
        warm = staging / "warm"
        warm.mkdir(exist_ok=True)
        warm_files = []
        for i in range(3):
            f = warm / f"w-{i}.parquet"
            pq.write_table(common.trips(200, args.seed + 77 + i), f)
            warm_files.append(f)

    from pyhudi.spark_env import create_session

    conf = {**common.spark_conf(args), "spark.scheduler.mode": args.scheduler}
    spark: Any = create_session(master=args.master, app_name="pyhudi-bench-streaming-services", conf=conf)
    schema = spark.read.parquet(str(files[0])).schema

    with monitor.phase("warm-up"):  # JVM, Python workers and every run's code paths once (not measured)
        for run in runs:
            o = {**run_options(run, args), "hoodie.clustering.async.max.commits": "2",
                 "hoodie.compact.inline.max.delta.commits": "2"}
            feed_and_stream(spark, warm_files, work / "warm", run, o, schema)

    results_runs: dict[str, Any] = {}
    clock = ServiceClock()
    for run in runs:
        opts = run_options(run, args)
        clock.take()
        with monitor.phase(run):
            out = feed_and_stream(spark, files, work, run, opts, schema)
        services = clock.take()
        state = table_state(out["table"], args.max_file_size, limit)
        check = verify(spark, out["table"], k * args.rows_per_file)
        lat = latency_summary(out["batches"], args.skip_batches, services)
        results_runs[run] = {**{x: out[x] for x in ("stream_seconds", "wait_seconds", "total_seconds",
                                                     "service_errors", "batches")},
                             "services": [{"kind": kd, "start": st, "seconds": e - st} for kd, st, e in services],
                             "latency": lat, "files": state, "verification": check, "options": opts}
        print(f"  {run}: median micro-batch {lat['add_batch_median']:.2f} s (p90 {lat['add_batch_p90']:.2f}), "
              f"stream {out['stream_seconds']:.1f} s + wait {out['wait_seconds']:.1f} s; {state['base_files']} base "
              f"files, {state['pct_bytes_in_range']:.0f}% of bytes in range, completed {state['completed']}; "
              f"{'OK' if check['ok'] else 'MISMATCH ' + str(check)}")
        shutil.rmtree(work / run / "landing", ignore_errors=True)
    clock.close()
    spark.stop()
    monitor.stop()

    ratios = {}
    for run, base in BASELINE.items():
        if run in results_runs and base in results_runs:
            a, b = results_runs[run]["latency"], results_runs[base]["latency"]
            ratios[run] = {"baseline": base,
                           "add_batch_median": ratio(a["add_batch_median"], b["add_batch_median"]),
                           "add_batch_p90": ratio(a["add_batch_p90"], b["add_batch_p90"]),
                           "trigger_median": ratio(a["trigger_median"], b["trigger_median"])}
    results: dict[str, Any] = {
        "benchmark": NAME, "started": started, "finished": common.now_utc(), "command": common.command_line(),
        "machine": common.machine_info(), "load": monitor.report(),
        "config": {"scale": args.scale, "files": k, "rows_per_file": args.rows_per_file, "rows": k * args.rows_per_file,
                   "max_file_size": args.max_file_size, "small_file_limit": limit, "bloom_entries": args.bloom_entries,
                   "clustering_commits": args.clustering_commits, "compaction_commits": args.compaction_commits,
                   "scheduler": args.scheduler, "spark_master": args.master, "spark_conf": conf, "seed": args.seed,
                   "skip_batches": args.skip_batches, "schema": common.TRIPS_COLUMNS, "runs": runs},
        "runs": results_runs, "ratios": ratios, "target_ratio": TARGET_RATIO,
    }
    problems = [f"{name}: {'a background service failed' if r['verification']['ok'] else 'wrong table'}"
                for name, r in results_runs.items() if not r["verification"]["ok"] or r["service_errors"]]
    return common.finish(NAME, TITLE, results, render_text, render_markdown, args, work, problems)


# --------------------------------------------------------------------------- rendering

_HEADERS = ["run", "median s", "p90 s", "trigger median s", "vs baseline", "overlapping / other", "stream s",
            "wait s", "base files", "small", "% bytes in range", "median file", "log bytes", "services done",
            "rows ok"]


def _services(c: dict[str, int]) -> str:
    parts = [f"{c[k]} {k}" for k in ("replacecommit", "compaction", "clean") if c.get(k)]
    return ", ".join(parts) or "-"


def _overlap(lat: dict[str, Any]) -> str:
    n = lat.get("overlapping_batches", 0)
    if not n:
        return ""
    return f"{lat['overlapping_median']:.2f} ({n}) / {lat['other_median']:.2f}"


def _rows(r: dict[str, Any]) -> list[list[str]]:
    rows = []
    for run in r["config"]["runs"]:
        x = r["runs"][run]
        lat, f = x["latency"], x["files"]
        rat = r["ratios"].get(run)
        rows.append([run, f"{lat['add_batch_median']:.2f}", f"{lat['add_batch_p90']:.2f}",
                     f"{lat['trigger_median']:.2f}",
                     f"{rat['add_batch_median']:.2f}x {rat['baseline']}" if rat else "", _overlap(lat),
                     f"{x['stream_seconds']:.1f}",
                     f"{x['wait_seconds']:.1f}", str(f["base_files"]), str(f["small_files"]),
                     f"{f['pct_bytes_in_range']:.0f}%", fmt_bytes(f["median"]), fmt_bytes(f["log_bytes"]),
                     _services(f["completed"]), "yes" if x["verification"]["ok"] else "NO"])
    return rows


def _headline(r: dict[str, Any]) -> list[str]:
    out = []
    for run in ("cow+clustering", "mor+compaction"):
        rat = r["ratios"].get(run)
        if rat:
            verdict = "within" if rat["add_batch_median"] <= r["target_ratio"] else "MISSES"
            lat = r["runs"][run]["latency"]
            same_run = ratio(lat["overlapping_median"], lat["other_median"]) if lat.get("overlapping_batches") else None
            overlap = (f"; within the run, micro-batches overlapping a background {run.split('+')[1]} took "
                       f"{same_run:.2f}x the others" if same_run else "")
            out.append(f"Micro-batch latency {run} / {rat['baseline']} (median addBatch): "
                       f"**{rat['add_batch_median']:.2f}x** (p90 {rat['add_batch_p90']:.2f}x; {verdict} the "
                       f"{r['target_ratio']}x target{overlap})")
    for run in ("cow", "cow+clustering", "cow+sizing", "mor+compaction"):
        if run in r["runs"]:
            f = r["runs"][run]["files"]
            out.append(f"{run}: {f['base_files']} base files, {f['small_files']} below the small-file limit, "
                       f"{f['pct_bytes_in_range']:.0f}% of base-file bytes between the limit and 1.1x max")
    return out


def render_text(r: dict[str, Any]) -> str:
    cfg, m = r["config"], r["machine"]
    return "\n".join([
        f"== {TITLE} ==",
        f"machine: {m['cores']} cores ({m['cpu']}), PySpark {m['pyspark']}; {r['load']['note']}",
        f"{cfg['files']} files x {cfg['rows_per_file']:,} rows; max file {fmt_bytes(cfg['max_file_size'])}, limit "
        f"{fmt_bytes(cfg['small_file_limit'])}; scheduler {cfg['scheduler']}; latency over micro-batches "
        f"{cfg['skip_batches'] + 1}..{cfg['files']}",
        format_table(_HEADERS, _rows(r)), "", *(h.replace("**", "") for h in _headline(r))])


def render_markdown(r: dict[str, Any]) -> str:
    cfg, m, load = r["config"], r["machine"], r["load"]
    headline = "\n".join(f"* {h}" for h in _headline(r))
    return f"""\
What it answers: does a streaming query over a landing directory of tiny files keep its micro-batch latency
when compaction or clustering run in the background (target: within {r['target_ratio']}x of the same stream
without them), and what file sizes does it end with.

```bash
{r['command']}
```

Run {r['finished']} on {m['cores']} cores ({m['cpu']}), Python {m['python']}, PySpark {m['pyspark']}
(`{cfg['spark_master']}`, `spark.scheduler.mode={cfg['scheduler']}`), pyhudi {m['pyhudi_commit']}.
Load: {load['note']}.

**Headline:**

{headline}

**Setup.** {cfg['files']} parquet files of {cfg['rows_per_file']:,} generated trips each ({cfg['schema']}) are
dropped one at a time into a landing directory; each is one micro-batch of `pyhudi.write_stream`
(operation insert), driven back to back with `processAllAvailable()`. Runs: `cow` (auto-sizing off, no
services), `cow+clustering` (the same plus async clustering every {cfg['clustering_commits']} commits, target
{fmt_bytes(cfg['max_file_size'])}), `cow+sizing` (auto-sizing with small-file limit
{fmt_bytes(cfg['small_file_limit'])}), `mor` (INMEMORY index, so inserts go to log files, async compaction off)
and `mor+compaction` (async compaction every {cfg['compaction_commits']} delta commits). Max file size
{fmt_bytes(cfg['max_file_size'])}, bloom filter {cfg['bloom_entries']:,} entries; cleaning and archival
automatic; an unmeasured warm-up streams three tiny files through every configuration first. Latency: the
query's `durationMs.addBatch` (the pyhudi write) per micro-batch, leaving out the first {cfg['skip_batches']};
"overlapping / other" = median of the micro-batches that overlapped a background compaction/clustering
execution (count) / of the others, in the same run; "wait" is `pyhudi.wait_for_table_services` after the
stream stopped. File sizes: latest base files; "in range" = between the small-file limit and 1.1x the max.
The five runs follow each other in one session, so a slower machine moment hits one run and not the other:
read the ratios with the load figure above.

{format_table(_HEADERS, _rows(r), markdown=True)}

**Findings when this benchmark was written** (several runs on the shared 2-core machine, FIFO and FAIR
alternating): the median latency ratios stayed below 1.5x in every run (0.7x-1.3x); without services the
sizing-off COW stream gets slower as its file count grows (160 files), which clustering avoids, so
`cow+clustering` is often faster than `cow` overall. Micro-batches overlapping a background service took
1.04x-1.20x the others under FAIR and 1.12x-1.35x under FIFO, so `create_session` sets FAIR. A profile
(py-spy) of the driver shows the micro-batch thread waiting on its own Spark jobs; the slowdown is executor
CPU shared with the service's tasks on 2 cores, plus the lock a background clean or commit holds briefly
(the lock now polls every 100 ms at most). p90 can pass 1.5x on MOR: a micro-batch that lands on a whole
compaction. Async compaction also leaves more small base files than the stream would like: groups under a
pending compaction take no inserts, so inserts arriving meanwhile open new file groups (as in Hudi).
"""


if __name__ == "__main__":
    sys.exit(main())
