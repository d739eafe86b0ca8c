"""Large load: one big pyhudi bulk_insert / insert against a plain Spark parquet write and against a raw
pyarrow parquet write of the same data (the physical limit of this machine).

    .venv/bin/python bench/large_load.py [--scale 1] [--runs 3]

1. N generated trips rows, partitioned by city (4 values), staged once as snappy parquet files; every
   system reads the same staged files (from the page cache: they are read once before the first run).
2. Systems, each writing a fresh output directory per run, rotating the order between runs:
   (i)   raw pyarrow: `pyarrow.dataset.write_dataset` of the staged dataset, threads on, directory
         partitioning by city like Hudi's, snappy, one row group per file, and at most as many rows per
         file as fit the max file size at the staged bytes per row;
   (ii)  Spark: `spark.read.parquet(staged).write.partitionBy("city").parquet(out)`;
   (iii) pyhudi `bulk_insert` (`hoodie.bulkinsert.sort.mode` NONE, Hudi's default);
   (iv)  pyhudi `insert` (the auto-sizing path: counts, workload profile, bucket plan, handles).
   Before every timed run the previous run's output is flushed to disk and garbage is collected
   (`common.settle`), outside the timing. Throughput = input rows/s and staged MB/s; also bytes written
   and CPU seconds of the whole process tree (driver, JVM, Python workers, pyarrow threads). Headline: pyhudi / pyarrow and pyhudi / Spark
   throughput, and pyhudi's time split by write step (and by Spark job, from Spark's status store).
3. Correctness: every output holds N rows; the pyhudi tables hold N distinct keys (pyhudi.read) and
   hudi-rs reads N rows from them.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _tables  # noqa: E402
import common  # noqa: E402
from common import MB, fmt_bytes, format_table, median, ratio  # noqa: E402

NAME = "large_load"
TITLE = "Large load"
DEFAULT_ROWS = 2_000_000
SYSTEMS = ("pyarrow", "spark", "bulk_insert", "insert")
LABELS = {"pyarrow": "raw pyarrow write_dataset", "spark": "Spark parquet write",
          "bulk_insert": "pyhudi bulk_insert", "insert": "pyhudi insert (auto-sized)"}


def hudi_options(args: Any, operation: str) -> dict[str, str]:
    return {
        "hoodie.table.name": "trips_load",
        "hoodie.datasource.write.recordkey.field": "uuid",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.operation": operation,
        "hoodie.parquet.max.file.size": str(args.max_file_size),
        **common.hudi_extra_options(args),
    }


# --------------------------------------------------------------------------- the systems


def pyarrow_write(staged: str, out: str, rows_per_file: int) -> None:
    """The physical limit: Arrow's multi-threaded dataset writer, no Spark, no table format."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    src = ds.dataset(staged, format="parquet")
    fmt = ds.ParquetFileFormat()
    ds.write_dataset(src, out, format="parquet", partitioning=ds.partitioning(pa.schema([("city", pa.string())])),
                     file_options=fmt.make_write_options(compression="snappy"), use_threads=True,
                     max_rows_per_file=rows_per_file, max_rows_per_group=rows_per_file,
                     min_rows_per_group=min(rows_per_file, 1 << 20), existing_data_behavior="overwrite_or_ignore",
                     basename_template="part-{i}.parquet")


def run_system(spark: Any, key: str, staged: str, out: str, args: Any, rows_per_file: int) -> None:
    if key == "pyarrow":
        pyarrow_write(staged, out, rows_per_file)
    elif key == "spark":
        spark.read.parquet(staged).write.partitionBy("city").parquet(out)
    else:
        import pyhudi

        pyhudi.write(spark.read.parquet(staged), out, hudi_options(args, key))


def output_files(key: str, out: str) -> list[tuple[str, int]]:
    if key in ("bulk_insert", "insert"):
        return _tables.hudi_live_files(out)["base"]
    return _tables.parquet_files(out)


# --------------------------------------------------------------------------- run


def main() -> int:
    p = common.base_parser(__doc__.split("\n\n")[0], DEFAULT_ROWS)
    p.add_argument("--runs", type=int, default=3, help="runs of every system (order rotates; median reported)")
    p.add_argument("--max-file-size", type=int, default=120 * MB,
                   help="hoodie.parquet.max.file.size (Hudi's default); pyarrow's rows per file follow it")
    p.add_argument("--staged-files", type=int, default=8, help="parquet files the input is staged as")
    p.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated subset of " + ",".join(SYSTEMS))
    common.add_hudi_option_flag(p)
    args = p.parse_args()
    keys = [s for s in args.systems.split(",") if s]
    if any(k not in SYSTEMS for k in keys):
        p.error(f"--systems must be a subset of {','.join(SYSTEMS)}")
    if args.driver_memory is None and args.scale <= 2:
        # pyhudi `insert` caches its input (MEMORY_AND_DISK); 2M rows OOM Spark's default 1g heap.
        args.driver_memory = "2g"
    n = common.rows_for(args.scale, DEFAULT_ROWS)
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="pyhudi-bench-load-"))
    for d in ("staging", "out", "warm"):
        shutil.rmtree(work / d, ignore_errors=True)

    monitor = common.LoadMonitor().start()
    started = common.now_utc()
    print(f"pyhudi bench {NAME}: {n:,} rows, max file {fmt_bytes(args.max_file_size)}, {args.runs} run(s), "
          f"work dir {work}")
    with monitor.phase("generate"):
        staged = common.write_staging(common.trips(n, args.seed), work / "staging" / "input", files=args.staged_files)
    staged_bytes = common.dir_bytes(staged)
    rows_per_file = max(1000, int(args.max_file_size / (staged_bytes / n)))
    print(f"staged {fmt_bytes(staged_bytes)} in {args.staged_files} files ({staged_bytes / n:.0f} B/row); "
          f"pyarrow rows per file {rows_per_file:,}")

    from pyhudi.spark_env import create_session

    conf = common.spark_conf(args)
    spark: Any = create_session(master=args.master, app_name="pyhudi-bench-large-load", conf=conf)
    with monitor.phase("warm-up"):
        warm = common.write_staging(common.trips(5000, args.seed + 1), work / "warm" / "input", files=2)
        for k in keys:
            run_system(spark, k, warm, str(work / "warm" / k), args, 2000)
        shutil.rmtree(work / "warm", ignore_errors=True)
        _tables.warm_page_cache(staged)

    phases = common.PhaseTimer(common.WRITE_STEPS)
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in keys}
    with monitor.phase("load"):
        for r in range(args.runs):
            order = keys[r % len(keys):] + keys[: r % len(keys)]
            for k in order:
                out = str(work / "out" / k)
                shutil.rmtree(out, ignore_errors=True)
                common.settle(spark)
                phases.take()
                cpu0 = common.tree_cpu_seconds()
                with common.spark_job_group(spark, f"{k}-{r}", details=True) as jobs, common.timed() as tm:
                    run_system(spark, k, staged, out, args, rows_per_file)
                cpu = common.tree_cpu_seconds() - cpu0
                split = phases.take()
                files = output_files(k, out)
                cell: dict[str, Any] = {"run": r + 1, "seconds": tm[0], "cpu_seconds": cpu, "spark": dict(jobs),
                                        "files": _tables.size_summary(files, out, 0, args.max_file_size)}
                if split:
                    split["other"] = tm[0] - sum(split.values())
                    cell["phases"] = split
                runs[k].append(cell)
                print(f"  run {r + 1} {k}: {tm[0]:.2f} s, {n / tm[0]:,.0f} rows/s, {staged_bytes / MB / tm[0]:.1f} MB/s, "
                      f"{len(files)} files {fmt_bytes(sum(s for _, s in files))}, {cpu:.1f} CPU s")
    phases.close()

    with monitor.phase("verify"):
        counts, problems = verify(spark, keys, work, n)
    monitor.stop()
    systems = {k: summarize(runs[k], n, staged_bytes) for k in keys}
    for k in keys:
        systems[k]["label"] = LABELS[k]
        systems[k]["rows_verified"] = counts.get(k)
    results: dict[str, Any] = {
        "benchmark": NAME, "started": started, "finished": common.now_utc(), "command": common.command_line(),
        "machine": common.machine_info(), "load": monitor.report(),
        "config": {"scale": args.scale, "rows": n, "runs": args.runs, "max_file_size": args.max_file_size,
                   "staged_files": args.staged_files, "pyarrow_rows_per_file": rows_per_file,
                   "spark_master": args.master, "spark_conf": conf, "seed": args.seed, "schema": common.TRIPS_COLUMNS,
                   "hudi_options": {k: hudi_options(args, k) for k in keys if k in ("bulk_insert", "insert")}},
        "input": {"rows": n, "staged_bytes": staged_bytes, "bytes_per_row": staged_bytes / n},
        "systems": systems, "headline": headline(systems),
        "verification": {"counts": counts, "ok": not problems, "problems": problems},
    }
    spark.stop()
    return common.finish(NAME, TITLE, results, render_text, render_markdown, args, work, problems)


def verify(spark: Any, keys: list[str], work: Path, n: int) -> tuple[dict[str, Any], list[str]]:
    """Row counts of every output; distinct keys via pyhudi.read and hudi-rs row counts for pyhudi's."""
    import pyarrow.dataset as ds

    counts: dict[str, Any] = {}
    problems = []
    for k in keys:
        out = str(work / "out" / k)
        if k == "pyarrow":
            counts[k] = {"rows": ds.dataset(out, format="parquet").count_rows()}
        elif k == "spark":
            counts[k] = {"rows": spark.read.parquet(out).count()}
        else:
            import pyhudi

            rows, distinct, _ = _tables.checksum(pyhudi.read(spark, out))
            counts[k] = {"rows": rows, "keys": distinct, "hudi_rs_rows": _tables.hudi_rs_counts({k: out})[k]}
        bad = [f"{field} {v}" for field, v in counts[k].items() if v != n]
        if bad:
            problems.append(f"{k}: " + ", ".join(bad) + f" (expected {n})")
    print("verify: " + ", ".join(f"{k} {v}" for k, v in counts.items()) + (" -> OK" if not problems else ""))
    return counts, problems


def summarize(runs: list[dict[str, Any]], n: int, staged_bytes: int) -> dict[str, Any]:
    secs = median([r["seconds"] for r in runs])
    last = runs[-1]
    out: dict[str, Any] = {
        "seconds_runs": [r["seconds"] for r in runs], "seconds": secs,
        "rows_per_s": n / secs, "mb_per_s": staged_bytes / MB / secs,
        "cpu_seconds": median([r["cpu_seconds"] for r in runs]),
        "cores_used": median([r["cpu_seconds"] / r["seconds"] for r in runs]),
        "output": last["files"], "spark_jobs": last["spark"],
    }
    if "phases" in last:
        labels = list(dict.fromkeys(lbl for r in runs for lbl in r["phases"]))
        out["phases"] = {lbl: median([r["phases"].get(lbl, 0.0) for r in runs]) for lbl in labels}
    return out


def headline(s: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in ("bulk_insert", "insert"):
        if k in s:
            out[k] = {"throughput_vs_pyarrow": ratio(s["pyarrow"]["seconds"], s[k]["seconds"]) if "pyarrow" in s
                      else float("nan"),
                      "throughput_vs_spark": ratio(s["spark"]["seconds"], s[k]["seconds"]) if "spark" in s
                      else float("nan")}
    if "spark" in s and "pyarrow" in s:
        out["spark"] = {"throughput_vs_pyarrow": ratio(s["pyarrow"]["seconds"], s["spark"]["seconds"])}
    return out


# --------------------------------------------------------------------------- rendering


def _rows(r: dict[str, Any]) -> list[list[str]]:
    s = r["systems"]
    ref_a = s.get("pyarrow", {}).get("seconds", float("nan"))
    ref_s = s.get("spark", {}).get("seconds", float("nan"))
    rows = []
    for c in s.values():
        o = c["output"]
        rows.append([c["label"], ", ".join(f"{x:.1f}" for x in c["seconds_runs"]), f"{c['seconds']:.2f}",
                     f"{c['rows_per_s']:,.0f}", f"{c['mb_per_s']:.1f}", f"{ratio(ref_a, c['seconds']):.2f}",
                     f"{ratio(ref_s, c['seconds']):.2f}", f"{c['cores_used']:.2f}", str(o["files"]),
                     fmt_bytes(o["total"]), f"{fmt_bytes(o['p50'])} / {fmt_bytes(o['max'])}"])
    return rows


_HEADERS = ["system", "runs (s)", "median s", "rows/s", "input MB/s", "throughput vs pyarrow", "vs Spark",
            "cores used", "files", "bytes written", "file p50 / max"]


def _phase_text(r: dict[str, Any]) -> str:
    parts = []
    for k in ("bulk_insert", "insert"):
        c = r["systems"].get(k)
        if not c or "phases" not in c:
            continue
        ph = ", ".join(f"{lbl} {v:.2f} s" for lbl, v in c["phases"].items() if v >= 0.005)
        jobs = c["spark_jobs"]
        sites = "; ".join(f"{site}: {v['jobs']} job(s), {v['job_ms'] / 1000:.2f} s"
                          for site, v in (jobs.get("by_site") or {}).items())
        parts.append(f"* {c['label']} ({c['seconds']:.2f} s): {ph}. Spark: {sites}.")
    return "\n".join(parts)


def _headline(r: dict[str, Any]) -> list[str]:
    h = r["headline"]
    out = []
    for k in ("bulk_insert", "insert"):
        if k in h:
            out.append(f"{LABELS[k]} throughput / raw pyarrow: **{h[k]['throughput_vs_pyarrow']:.2f}**; "
                       f"/ Spark parquet write: **{h[k]['throughput_vs_spark']:.2f}**")
    if "spark" in h:
        out.append(f"Spark parquet write throughput / raw pyarrow: **{h['spark']['throughput_vs_pyarrow']:.2f}**")
    return out


def _verdict(r: dict[str, Any]) -> str:
    v = r["verification"]
    return ("OK - every output holds all rows; the pyhudi tables hold every key once, and hudi-rs reads all rows"
            if v["ok"] else "FAILED: " + "; ".join(v["problems"]))


def render_text(r: dict[str, Any]) -> str:
    cfg, i, m = r["config"], r["input"], r["machine"]
    return "\n".join([
        f"== {TITLE} ==",
        f"machine: {m['cores']} cores ({m['cpu']}), PySpark {m['pyspark']}, pyarrow {m['pyarrow']}; {r['load']['note']}",
        f"input: {cfg['rows']:,} rows, {fmt_bytes(i['staged_bytes'])} staged ({i['bytes_per_row']:.0f} B/row); "
        f"max file {fmt_bytes(cfg['max_file_size'])}",
        format_table(_HEADERS, _rows(r)), "", _phase_text(r).replace("* ", "  "), "",
        *(x.replace("**", "") for x in _headline(r)), f"verification: {_verdict(r)}",
    ])


def render_markdown(r: dict[str, Any]) -> str:
    cfg, i = r["config"], r["input"]
    headline = "\n".join(f"* {h}" for h in _headline(r))
    return f"""\
What it answers: how close does one big pyhudi write come to the fastest way this machine can write the
same Arrow data as parquet, and to a plain Spark parquet write.

```bash
{r['command']}
```

{common.run_paragraph(r)}

**Headline (throughput ratios, same run; above 1 = faster than the reference):**

{headline}

**Setup.** {cfg['rows']:,} generated trips ({cfg['schema']}), staged once as {cfg['staged_files']} snappy
parquet files ({fmt_bytes(i['staged_bytes'])}, {i['bytes_per_row']:.0f} bytes per row), read from the page
cache by every system. All outputs are partitioned by city, snappy, written to a fresh directory per run;
{cfg['runs']} run(s) per system, order rotated between runs, after an unmeasured warm-up of every system on
5,000 rows. Max file size {fmt_bytes(cfg['max_file_size'])} (`hoodie.parquet.max.file.size`); raw pyarrow
writes at most {cfg['pyarrow_rows_per_file']:,} rows per file (the max size at the staged bytes per row) in
one row group, like pyhudi's base files. Throughput = input rows (or staged MB) / wall time; `cores used` =
CPU seconds of the whole process tree (driver, JVM, Python workers, Arrow threads) / wall time.

{format_table(_HEADERS, _rows(r), markdown=True)}

**Where pyhudi's time goes** (steps of `pyhudi.write`, and the Spark jobs by call site from Spark's status
store):

{_phase_text(r)}

pyhudi's files are larger than the others: they carry Hudi's five `_hoodie_*` meta columns, a bloom filter
of the keys and the Avro schema in the footer (and keep the partition column in the data, as Hudi does;
Spark's `partitionBy` moves it into the directory name). `insert` sizes the files of a table's first commit
with Hudi's record-size estimate (`hoodie.copyonwrite.record.size.estimate`, 1024 bytes) because no earlier
commit tells it the real size, so its files hold max size / 1024 records each; `bulk_insert` rolls files
over at the max size by their encoded size. `insert` also caches its input (`count` step) before writing.

**Correctness** (checked in the run): {_verdict(r)}.
"""


if __name__ == "__main__":
    sys.exit(main())
