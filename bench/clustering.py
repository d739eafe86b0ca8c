"""Clustering: what selective queries must read, and how fast they run, before and after clustering;
clustering throughput against a plain pyarrow read-sort-write of the same files.

    .venv/bin/python bench/clustering.py [--scale 1] [--rows-per-commit 10000] [--cluster-runs 2]

1. A non-partitioned copy-on-write events table (the trips columns plus `customer_id`) is built from many
   tiny `bulk_insert` commits, one ~2 MB file each (no auto-sizing). Rows arrive in event-time order: each
   commit covers the next slice of a 30-day `ts` range, plus a few late events up to 2 days old;
   `customer_id` is uniform and unrelated to arrival.
2. Selective queries through Spark (`pyhudi.read(...).filter(...).agg(...)`): a customer_id range (0.1 %
   of the ids), one day of ts, and a box (5 % of the ids x 7 days). For each, from the parquet footers of
   the snapshot's files: the row groups whose min/max on the filter columns overlap the predicate (the
   ones Spark's parquet reader cannot skip) and the bytes it must read (every file's footer plus the
   filter/aggregate column chunks of those row groups); from Spark: rows the scan produced (SQL metric)
   and bytes its tasks read (input metrics); and the median wall time over several interleaved runs.
3. `pyhudi.cluster` with sort columns (customer_id, ts) under each layout (linear, z-order, Hilbert), on
   fresh copies of the table, timed; MB/s = bytes of the replaced files / wall time. Baseline in the same
   run, interleaved: one Python process reads the same files with pyarrow, orders them with the same
   `order()` function and writes snappy parquet files of the same target size.
4. The same queries on each clustered copy: row groups, bytes, wall time, and the ratios to before.
5. Clustering at small targets never churns (issue 19; `bench/_clustering_churn.py`, in-process): 1 MB target,
   768 KB limit; the bytes a second clustering rewrites (0), outputs per partition below the limit.
6. Correctness: every clustered copy has the same row count and checksum as the table before (and as the
   generated input) through pyhudi, every query returns the same answer on every copy, and hudi-rs
   reads the same row count.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
from _clustering_churn import churn_targets  # noqa: E402
from _clustering_report import NAME, TITLE, render_markdown, render_text  # noqa: E402
from common import MB, fmt_bytes, median, ratio  # noqa: E402

DEFAULT_ROWS = 600_000
LAYOUTS = ("linear", "z-order", "hilbert")
SORT_COLUMNS = ("customer_id", "ts")
AGG_COLUMNS = ("fare", "tip")
CUSTOMERS = 1_000_000
DAY_MS = 86_400_000
SPAN_DAYS = 30
SCHEMA_TEXT = (common.TRIPS_COLUMNS.replace("; city: partition (4 values)", "; city: string (not a partition)")
               + "; customer_id: long (uniform over 1M ids); ts: event time, arrival-ordered with late events")
CLUSTER_PHASES = [
    ("pyhudi.services.clustering", "schedule", "plan"),
    ("pyhudi.services.clustering", "_run", "rewrite (Spark job)"),
    ("pyhudi.services.clustering", "_commit", "commit"),
]

# --------------------------------------------------------------------------- data and options


def events(commit: int, commits: int, rows: int, seed: int, late_fraction: float, late_days: float) -> pa.Table:
    """One commit's rows: trips columns, `customer_id`, and `ts` in this commit's slice of the time range."""
    t = common.trips(rows, seed * 1_000_003 + commit)
    rng = np.random.default_rng([seed, commit])
    window = SPAN_DAYS * DAY_MS / commits
    start = common.TS_START + commit * window
    ts = start + rng.uniform(0, window, rows)
    late = rng.random(rows) < late_fraction
    ts[late] = start - rng.uniform(0, late_days * DAY_MS, int(late.sum()))
    t = t.set_column(t.schema.get_field_index("ts"), "ts", pa.array(ts.astype(np.int64), pa.int64()))
    return t.append_column("customer_id", pa.array(rng.integers(0, CUSTOMERS, rows), pa.int64()))


def table_options(args: Any) -> dict[str, str]:
    return {
        "hoodie.table.name": "events",
        "hoodie.datasource.write.recordkey.field": "uuid",
        "hoodie.datasource.write.partitionpath.field": "",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.operation": "bulk_insert",
        "hoodie.bulkinsert.shuffle.parallelism": "1",
        "hoodie.parquet.block.size": str(args.row_group_bytes),
        "hoodie.clustering.plan.strategy.small.file.limit": str(args.small_file_limit),
        "hoodie.clustering.plan.strategy.target.file.max.bytes": str(args.target_file_bytes),
        "hoodie.clustering.plan.strategy.max.bytes.per.group": str(args.group_bytes),
        "hoodie.clustering.plan.strategy.sort.columns": ",".join(SORT_COLUMNS),
    }


# --------------------------------------------------------------------------- queries


@dataclass(frozen=True)
class Query:
    name: str
    description: str
    ranges: tuple[tuple[str, int, int], ...]  # (column, low, high), inclusive

    def condition(self) -> Any:
        from pyspark.sql import functions as F

        cond = F.lit(True)
        for col, lo, hi in self.ranges:
            cond = cond & F.col(col).between(lo, hi)
        return cond

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys([c for c, _, _ in self.ranges] + list(AGG_COLUMNS)))


def make_queries(seed: int) -> list[Query]:
    rng = np.random.default_rng([seed, 99])
    c1 = int(rng.integers(0, int(CUSTOMERS * 0.99)))
    c2 = int(rng.integers(0, int(CUSTOMERS * 0.95)))
    day = int(rng.integers(3, SPAN_DAYS - 1))
    week = int(rng.integers(3, SPAN_DAYS - 7))
    t0 = common.TS_START
    return [
        Query("customer", "customer_id in a range of 0.1 % of the ids",
              (("customer_id", c1, c1 + CUSTOMERS // 1000 - 1),)),
        Query("day", "ts in one day (1/30 of the time range)",
              (("ts", t0 + day * DAY_MS, t0 + (day + 1) * DAY_MS - 1),)),
        Query("box", "customer_id in 5 % of the ids and ts in 7 days",
              (("customer_id", c2, c2 + CUSTOMERS // 20 - 1), ("ts", t0 + week * DAY_MS, t0 + (week + 7) * DAY_MS - 1))),
    ]


def run_query(spark: Any, path: str, q: Query, group: str, want_files: bool = False) -> tuple[Any, list[str], float]:
    """(the query's answer, the files its scan lists if asked, wall seconds of read + filter + aggregate)."""
    from pyspark.sql import functions as F

    import pyhudi

    spark.sparkContext.setJobGroup(group, group)
    try:
        with common.timed() as tm:
            df = (pyhudi.read(spark, path).filter(q.condition())
                  .agg(F.count(F.lit(1)).alias("n"), F.sum("fare").alias("fare"), F.max("tip").alias("tip")))
            row = df.collect()[0]
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    files = list(pyhudi.read(spark, path).inputFiles()) if want_files else []
    return (int(row["n"]), float(row["fare"] or 0.0), float(row["tip"] or 0.0), df), files, tm[0]


def spark_scan_metrics(df: Any) -> dict[str, int] | None:
    """SQL metrics of the query's parquet scan (rows it produced, files), via the executed plan (py4j)."""
    try:
        found: list[dict[str, int]] = []

        def walk(node: Any) -> None:
            name = node.getClass().getSimpleName()
            if name == "AdaptiveSparkPlanExec":
                walk(node.executedPlan())
                return
            if name.endswith("QueryStageExec"):
                walk(node.plan())
                return
            if name.startswith("FileSourceScan"):
                metrics = node.metrics()
                found.append({k: int(metrics.get(k).get().value()) for k in ("numOutputRows", "numFiles")})
            children = node.children()
            for i in range(children.size()):
                walk(children.apply(i))

        walk(df._jdf.queryExecution().executedPlan())
        return found[0] if len(found) == 1 else None
    except Exception:  # noqa: BLE001 - internal API; the footer analysis does not depend on it
        return None


def spark_input_bytes(spark: Any, group: str) -> int | None:
    """Bytes the job group's tasks read from files (task input metrics, summed over its stages)."""
    try:
        sc = spark.sparkContext
        tracker, store = sc.statusTracker(), sc._jsc.sc().statusStore()
        total = 0
        for job in tracker.getJobIdsForGroup(group):
            info = tracker.getJobInfo(job)
            for stage in info.stageIds if info else []:
                total += int(store.lastStageAttempt(stage).inputBytes())
        return total
    except Exception:  # noqa: BLE001 - internal API
        return None


# --------------------------------------------------------------------------- parquet footers


def local_path(uri: str) -> str:
    return unquote(urlparse(uri).path) if uri.startswith("file:") else uri


class Footers:
    """Row-group statistics of parquet files (read once per file)."""

    def __init__(self, columns: tuple[str, ...]) -> None:
        self.columns = columns
        self._cache: dict[str, dict[str, Any]] = {}

    def get(self, path: str) -> dict[str, Any]:
        if path not in self._cache:
            md = pq.ParquetFile(path).metadata
            names = [md.schema.column(i).path for i in range(md.num_columns)]
            groups = []
            for g in range(md.num_row_groups):
                rg = md.row_group(g)
                cols: dict[str, tuple[Any, Any, int]] = {}
                for c in self.columns:
                    chunk = rg.column(names.index(c))
                    st = chunk.statistics
                    ok = st is not None and st.has_min_max
                    cols[c] = (st.min if ok else None, st.max if ok else None, chunk.total_compressed_size)
                groups.append({"rows": rg.num_rows, "bytes": rg.total_byte_size, "cols": cols})
            self._cache[path] = {"size": os.path.getsize(path), "footer": md.serialized_size + 8,
                                 "rows": md.num_rows, "row_groups": groups}
        return self._cache[path]

    def analyse(self, files: list[str], q: Query) -> dict[str, Any]:
        """What Spark's parquet reader must read for `q`: footers of all files + the query's column chunks of
        the row groups whose min/max overlap every range (a row group without statistics is read)."""
        out = {"files": len(files), "files_with_row_groups_read": 0, "row_groups": 0, "row_groups_read": 0,
               "rows": 0, "rows_in_row_groups_read": 0, "table_bytes": 0, "footer_bytes": 0,
               "column_bytes_all": 0, "column_bytes_read": 0}
        for f in files:
            info = self.get(f)
            out["table_bytes"] += info["size"]
            out["footer_bytes"] += info["footer"]
            out["rows"] += info["rows"]
            hit_file = False
            for rg in info["row_groups"]:
                out["row_groups"] += 1
                chunk_bytes = sum(rg["cols"][c][2] for c in q.columns)
                out["column_bytes_all"] += chunk_bytes
                overlap = all(rg["cols"][c][0] is None or not (rg["cols"][c][1] < lo or rg["cols"][c][0] > hi)
                              for c, lo, hi in q.ranges)
                if overlap:
                    hit_file = True
                    out["row_groups_read"] += 1
                    out["rows_in_row_groups_read"] += rg["rows"]
                    out["column_bytes_read"] += chunk_bytes
            out["files_with_row_groups_read"] += int(hit_file)
        out["bytes_to_read"] = out["footer_bytes"] + out["column_bytes_read"]
        return out


def size_summary(sizes: list[int]) -> dict[str, Any]:
    if not sizes:
        return {"files": 0}
    a = np.array(sorted(sizes))
    return {"files": len(sizes), "total": int(a.sum()), "min": int(a[0]), "p10": int(np.percentile(a, 10)),
            "median": int(np.median(a)), "p90": int(np.percentile(a, 90)), "max": int(a[-1])}


# --------------------------------------------------------------------------- the table on disk


def snapshot_files(spark: Any, path: str) -> list[str]:
    import pyhudi

    return sorted(local_path(u) for u in pyhudi.read(spark, path).inputFiles())


def replacecommit(path: str, instant: str) -> dict[str, Any]:
    return json.loads((Path(path) / ".hoodie" / f"{instant}.replacecommit").read_text())


def file_id_of(path: str) -> str:
    return Path(path).name.split("_")[0]


def checksum(df: Any) -> tuple[int, int, str]:
    """(rows, distinct keys, sum of xxhash64 over every column but _hoodie_file_name) - order independent."""
    from pyspark.sql import functions as F

    cols = [c for c in df.columns if c != "_hoodie_file_name"]
    r = df.agg(F.count(F.lit(1)).alias("n"), F.countDistinct("uuid").alias("keys"),
               F.sum(F.xxhash64(*cols).cast("decimal(38,0)")).alias("h")).collect()[0]
    return int(r["n"]), int(r["keys"]), str(r["h"])


def data_checksum(df: Any, columns: list[str]) -> tuple[int, str]:
    from pyspark.sql import functions as F

    r = df.agg(F.count(F.lit(1)).alias("n"), F.sum(F.xxhash64(*columns).cast("decimal(38,0)")).alias("h")).collect()[0]
    return int(r["n"]), str(r["h"])


# --------------------------------------------------------------------------- baseline


def compressed_bytes(md: Any) -> int:
    """Compressed column-chunk bytes of a parquet file (its data, without the footer)."""
    return sum(md.row_group(g).column(c).total_compressed_size
               for g in range(md.num_row_groups) for c in range(md.num_columns))


def pyarrow_cluster(files: list[str], layout: str, target: int, row_group_bytes: int, out_dir: Path) -> dict[str, Any]:
    """Single-process read-order-write with pyarrow: read every input file, concatenate, order the rows with
    pyhudi's `order()` (pyarrow sort_by for linear; numpy z-order/Hilbert keys + argsort + take), write snappy
    parquet files of about `target` bytes with row groups of about `row_group_bytes`. No Spark, no planning,
    no bloom filter, no Avro footer, no markers, no timeline."""
    from pyhudi.services.layout import order

    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    start, cpu0 = time.perf_counter(), time.process_time()
    table = pa.concat_tables([pq.read_table(f) for f in files]).replace_schema_metadata(None)
    data_bytes = sum(compressed_bytes(pq.ParquetFile(f).metadata) for f in files)
    ordered = order(table, SORT_COLUMNS, layout)
    per_row = max(1.0, data_bytes / max(1, table.num_rows))
    per_file = max(1000, int(target * 0.95 / per_row))
    per_group = max(1000, int(row_group_bytes / per_row))
    sizes = []
    for i, offset in enumerate(range(0, ordered.num_rows, per_file)):
        path = out_dir / f"part-{i:04d}.parquet"
        pq.write_table(ordered.slice(offset, per_file), path, compression="snappy", data_page_size=MB,
                       row_group_size=per_group, store_schema=False)
        sizes.append(os.path.getsize(path))
    return {"seconds": time.perf_counter() - start, "cpu_seconds": time.process_time() - cpu0,
            "rows_out": ordered.num_rows, "files_out": len(sizes), "bytes_out": sum(sizes), "sizes": sizes}


# --------------------------------------------------------------------------- run


def main() -> int:
    p = common.base_parser(__doc__.split("\n\n")[0], DEFAULT_ROWS)
    p.add_argument("--rows-per-commit", type=int, default=10_000,
                   help="rows per tiny commit (one file each); --scale changes the number of commits")
    p.add_argument("--target-file-bytes", type=int, default=16 * MB,
                   help="hoodie.clustering.plan.strategy.target.file.max.bytes")
    p.add_argument("--group-bytes", type=int, default=32 * MB,
                   help="hoodie.clustering.plan.strategy.max.bytes.per.group (each group is sorted on its own)")
    p.add_argument("--small-file-limit", type=int, default=12 * MB,
                   help="hoodie.clustering.plan.strategy.small.file.limit")
    p.add_argument("--row-group-bytes", type=int, default=4 * MB, help="hoodie.parquet.block.size (row group)")
    p.add_argument("--late-fraction", type=float, default=0.02, help="share of rows arriving late")
    p.add_argument("--late-days", type=float, default=2.0, help="how late a late row is, at most")
    p.add_argument("--layouts", default=",".join(LAYOUTS), help="hoodie.layout.optimize.strategy values to run")
    p.add_argument("--cluster-runs", type=int, default=3,
                   help="pyhudi clusterings per layout (each on a fresh copy); the baseline runs as often")
    p.add_argument("--query-runs", type=int, default=5, help="timed runs of every query on every table")
    p.add_argument("--no-churn", action="store_true",
                   help="skip the small-target churn check (bench/_clustering_churn.py, in-process, ~10 s)")
    args = p.parse_args()
    layouts = [x.strip() for x in args.layouts.split(",") if x.strip()]

    rows = common.rows_for(args.scale, DEFAULT_ROWS)
    commits = max(4, round(rows / args.rows_per_commit))
    rows = commits * args.rows_per_commit
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="pyhudi-bench-clustering-"))
    work.mkdir(parents=True, exist_ok=True)
    before_path = str(work / "before")
    for d in [work / "before", work / "staging", work / "baseline", *work.glob("warm*"),
              *(work / f"{lay}-{r}" for lay in layouts for r in range(args.cluster_runs))]:
        shutil.rmtree(d, ignore_errors=True)

    monitor = common.LoadMonitor().start()
    started = common.now_utc()
    print(f"pyhudi bench {NAME}: {rows:,} rows in {commits} bulk_insert commits of {args.rows_per_commit:,}; "
          f"layouts {', '.join(layouts)} on ({', '.join(SORT_COLUMNS)}); target file "
          f"{fmt_bytes(args.target_file_bytes)}, group {fmt_bytes(args.group_bytes)}, row group "
          f"{fmt_bytes(args.row_group_bytes)}; work dir {work}")

    with monitor.phase("generate"):
        staged = [common.write_staging(events(c, commits, args.rows_per_commit, args.seed, args.late_fraction,
                                              args.late_days), work / "staging" / f"c{c:04d}", files=1)
                  for c in range(commits)]

    import pyhudi
    from pyhudi.spark_env import create_session

    conf = common.spark_conf(args)
    spark: Any = create_session(master=args.master, app_name="pyhudi-bench-clustering", conf=conf)
    opts = table_options(args)
    queries = make_queries(args.seed)
    footers = Footers(tuple(dict.fromkeys([*SORT_COLUMNS, *AGG_COLUMNS])))

    # ---- warm-up: JVM, Python workers, every layout and query once on a tiny table (not measured)
    with monitor.phase("warm-up"):
        for c in range(3):
            wdir = common.write_staging(events(c, 3, 2000, args.seed + 7, args.late_fraction, args.late_days),
                                        work / "staging" / f"warm{c}", files=1)
            pyhudi.write(spark.read.parquet(wdir), str(work / "warm"), opts)
        for layout in layouts:
            shutil.copytree(work / "warm", work / f"warm-{layout}")
            pyhudi.cluster(spark, str(work / f"warm-{layout}"), {**opts, "hoodie.layout.optimize.strategy": layout})
            for q in queries:
                run_query(spark, str(work / f"warm-{layout}"), q, f"warm-{layout}-{q.name}")
            pyarrow_cluster(snapshot_files(spark, str(work / "warm")), layout, args.target_file_bytes,
                            args.row_group_bytes, work / "warm-baseline")
        checksum(pyhudi.read(spark, str(work / "warm")))
        for d in work.glob("warm*"):
            shutil.rmtree(d, ignore_errors=True)

    # ---- the table: many tiny commits
    commit_seconds: list[float] = []
    with monitor.phase("tiny commits"):
        for c, sdir in enumerate(staged):
            with common.timed() as tm:
                pyhudi.write(spark.read.parquet(sdir), before_path, opts)
            commit_seconds.append(tm[0])
            if (c + 1) % 20 == 0 or c + 1 == commits:
                print(f"  {c + 1}/{commits} commits, median {median(commit_seconds):.2f} s each")
    before_files = snapshot_files(spark, before_path)
    before_sizes = {f: os.path.getsize(f) for f in before_files}
    before_info = [footers.get(f) for f in before_files]
    table_before = {**size_summary(list(before_sizes.values())),
                    "row_groups": sum(len(i["row_groups"]) for i in before_info),
                    "footer_bytes": sum(i["footer"] for i in before_info), "rows": sum(i["rows"] for i in before_info)}
    print(f"table before: {table_before['files']} files, {fmt_bytes(table_before['total'])}, file size median "
          f"{fmt_bytes(table_before['median'])} (footers {fmt_bytes(table_before['footer_bytes'])})")

    # ---- clustering: pyhudi vs pyarrow baseline, interleaved, each pyhudi run on a fresh copy
    phases = common.PhaseTimer(CLUSTER_PHASES)
    cluster: dict[str, dict[str, Any]] = {lay: {"pyhudi_runs": [], "baseline_runs": []} for lay in layouts}
    tables = {"before": before_path}
    with monitor.phase("clustering"):
        for r in range(args.cluster_runs):
            for layout in layouts:
                copy = str(work / f"{layout}-{r}")
                shutil.copytree(before_path, copy)
                res = cluster[layout]
                steps = ("baseline", "pyhudi") if r % 2 == 0 else ("pyhudi", "baseline")
                for step in steps:
                    if step == "baseline":
                        b = pyarrow_cluster(before_files, layout, args.target_file_bytes, args.row_group_bytes,
                                            work / "baseline")
                        res["baseline_runs"].append({k: v for k, v in b.items() if k != "sizes"})
                        res["baseline_sizes"] = b["sizes"]
                        continue
                    phases.take()
                    cpu0 = common.tree_cpu_seconds()
                    with common.timed() as tm:
                        done = pyhudi.cluster(spark, copy, {**opts, "hoodie.layout.optimize.strategy": layout})
                    cpu = common.tree_cpu_seconds() - cpu0
                    split = phases.take()
                    split["other"] = tm[0] - sum(split.values())
                    res["pyhudi_runs"].append({"seconds": tm[0], "cpu_seconds": cpu, "phases": split,
                                               "instants": done})
                print(f"  {layout} run {r + 1}: pyhudi {res['pyhudi_runs'][-1]['seconds']:.2f} s, "
                      f"pyarrow {res['baseline_runs'][-1]['seconds']:.2f} s")
                if r == 0:
                    tables[layout] = copy
                else:
                    shutil.rmtree(copy, ignore_errors=True)
        shutil.rmtree(work / "baseline", ignore_errors=True)
    phases.close()

    problems: list[str] = []
    for layout in layouts:
        res, path = cluster[layout], tables[layout]
        instants = res["pyhudi_runs"][0]["instants"]
        if len(instants) != 1:
            problems.append(f"{layout}: pyhudi.cluster returned {instants}")
            continue
        meta = replacecommit(path, instants[0])
        replaced = {f for ids in (meta.get("partitionToReplaceFileIds") or {}).values() for f in ids}
        inputs = [f for f in before_files if file_id_of(f) in replaced]
        stats = [s for ss in (meta.get("partitionToWriteStats") or {}).values() for s in ss or []]
        after_files = snapshot_files(spark, path)
        new_sizes = [os.path.getsize(f) for f in after_files if file_id_of(f) not in {file_id_of(x) for x in before_files}]
        in_bytes = sum(before_sizes[f] for f in inputs)
        p_sec = median([x["seconds"] for x in res["pyhudi_runs"]])
        b_sec = median([x["seconds"] for x in res["baseline_runs"]])
        res.update({
            "instant": instants[0], "input_files": len(inputs), "input_bytes": in_bytes,
            "groups": len({s["fileId"].rsplit("-", 1)[0] for s in stats}),
            "output": size_summary(new_sizes), "output_bytes_from_commit": sum(int(s["totalWriteBytes"]) for s in stats),
            "output_row_groups": sum(len(footers.get(f)["row_groups"]) for f in after_files),
            "files_after": len(after_files), "untouched_files": len(after_files) - len(new_sizes),
            "pyhudi_seconds": p_sec, "pyhudi_mb_per_s": in_bytes / MB / p_sec,
            "pyhudi_cores_used": median([x["cpu_seconds"] / x["seconds"] for x in res["pyhudi_runs"]]),
            "pyhudi_mb_per_cpu_s": in_bytes / MB / median([x["cpu_seconds"] for x in res["pyhudi_runs"]]),
            "baseline_mb_per_cpu_s": in_bytes / MB / median([x["cpu_seconds"] for x in res["baseline_runs"]]),
            "pyhudi_phases": {k: median([x["phases"].get(k, 0.0) for x in res["pyhudi_runs"]])
                              for k in res["pyhudi_runs"][0]["phases"]},
            "baseline_seconds": b_sec, "baseline_mb_per_s": in_bytes / MB / b_sec,
            "baseline_cores_used": median([x["cpu_seconds"] / x["seconds"] for x in res["baseline_runs"]]),
            "baseline_output": size_summary(res.pop("baseline_sizes", [])),
            "baseline_over_pyhudi_throughput": ratio(p_sec, b_sec),
        })
        if len(inputs) != len(before_files):
            problems.append(f"{layout}: clustering replaced {len(inputs)} of {len(before_files)} files")

    # ---- queries on every table, interleaved
    names = list(tables)
    qres: dict[str, dict[str, Any]] = {q.name: {t: {"seconds_runs": []} for t in names} for q in queries}
    answers: dict[str, dict[str, tuple[int, float, float]]] = {q.name: {} for q in queries}
    with monitor.phase("queries"):
        for run in range(args.query_runs):
            order_ = names if run % 2 == 0 else list(reversed(names))
            for q in queries:
                for t in order_:
                    group = f"{q.name}-{t}-{run}"
                    (n, fare, tip, df), files, seconds = run_query(spark, tables[t], q, group, want_files=run == 0)
                    cell = qres[q.name][t]
                    cell["seconds_runs"].append(seconds)
                    if run == 0:
                        answers[q.name][t] = (n, fare, tip)
                        cell["answer_rows"] = n
                        cell["footer"] = footers.analyse(sorted(local_path(f) for f in files), q)
                        cell["spark_scan"] = spark_scan_metrics(df)
                        cell["spark_input_bytes"] = spark_input_bytes(spark, group)
    for q in queries:
        base = qres[q.name]["before"]
        for t in names:
            cell = qres[q.name][t]
            cell["seconds"] = median(cell["seconds_runs"])
            if t != "before":
                cell["speedup"] = ratio(base["seconds"], cell["seconds"])
                cell["bytes_reduction"] = ratio(base["footer"]["bytes_to_read"], cell["footer"]["bytes_to_read"])
                cell["row_group_fraction_before"] = ratio(base["footer"]["row_groups_read"], base["footer"]["row_groups"])
                cell["spark_bytes_reduction"] = (ratio(base["spark_input_bytes"], cell["spark_input_bytes"])
                                                 if base["spark_input_bytes"] and cell["spark_input_bytes"] else None)
        for t in names:
            got, ref = answers[q.name][t], answers[q.name]["before"]
            if got[0] != ref[0] or abs(got[1] - ref[1]) > 1e-6 * max(1.0, abs(ref[1])) or got[2] != ref[2]:
                problems.append(f"query {q.name} on {t}: {got} != before {ref}")

    # ---- correctness: pyhudi checksums, generated input, hudi-rs row counts
    with monitor.phase("verify"):
        sys.path.insert(0, str(common.REPO_DIR))
        from tests.helpers import hudi_rs

        data_cols = list(spark.read.parquet(staged[0]).columns)
        expected = data_checksum(spark.read.parquet(*staged), data_cols)
        sums = {t: checksum(pyhudi.read(spark, tables[t])) for t in names}
        input_sum = data_checksum(pyhudi.read(spark, before_path), data_cols)
        rs_rows: dict[str, int | None] = {}
        for t in names:
            try:
                rs_table = hudi_rs(tables[t])
                rs_rows[t] = rs_table.num_rows if rs_table is not None else 0
            except Exception as e:  # noqa: BLE001 - report, do not crash the benchmark
                rs_rows[t] = None
                problems.append(f"hudi-rs could not read {t}: {type(e).__name__}: {e}")
    ok_input = input_sum == expected
    ok_sums = all(sums[t] == sums["before"] for t in names) and sums["before"][0] == rows == sums["before"][1]
    ok_rs = all(v == rows for v in rs_rows.values())
    if not ok_input:
        problems.append(f"table before {input_sum} != generated input {expected}")
    if not ok_sums:
        problems.append(f"checksums differ: {sums}")
    if not ok_rs:
        problems.append(f"hudi-rs row counts {rs_rows} != {rows}")
    print(f"verify: checksums {'OK' if ok_sums else 'MISMATCH'}, input {'OK' if ok_input else 'MISMATCH'}, "
          f"hudi-rs {'OK' if ok_rs else 'MISMATCH'}")

    # ---- issue 19: clustering at small targets never churns (in-process, on its own small table)
    churn: dict[str, Any] | None = None
    if not args.no_churn:
        from _clustering_churn import run_churn

        with monitor.phase("churn"):
            churn = run_churn(work, args.seed)
        problems += churn["problems"]

    monitor.stop()
    results: dict[str, Any] = {
        "benchmark": NAME, "started": started, "finished": common.now_utc(), "command": common.command_line(),
        "machine": common.machine_info(), "load": monitor.report(),
        "config": {"scale": args.scale, "rows": rows, "commits": commits, "rows_per_commit": args.rows_per_commit,
                   "target_file_bytes": args.target_file_bytes, "group_bytes": args.group_bytes,
                   "small_file_limit": args.small_file_limit, "row_group_bytes": args.row_group_bytes,
                   "late_fraction": args.late_fraction, "late_days": args.late_days, "layouts": layouts,
                   "sort_columns": list(SORT_COLUMNS), "cluster_runs": args.cluster_runs,
                   "query_runs": args.query_runs, "spark_master": args.master, "spark_conf": conf,
                   "seed": args.seed, "schema": SCHEMA_TEXT, "options": opts},
        "commits": {"median_seconds": median(commit_seconds), "total_seconds": sum(commit_seconds)},
        "table_before": table_before,
        "clustering": cluster,
        "clustering_notes": {
            "pyhudi_includes": "scheduling (file listing, plan, requested instant under the table lock), one Spark "
                               "job with a task per clustering group (read and merge every slice, order, encode "
                               "files in memory at the exact target size, bloom filter and Avro footer, markers, "
                               "write), commit (conflict check under the lock, replacecommit)",
            "baseline_includes": "one Python process: pyarrow reads every input file, concatenates, orders with "
                                 "pyhudi.services.layout.order (one global order, not per group), writes snappy "
                                 "parquet files of about the target size; no Spark, planning, bloom filter, Avro "
                                 "footer, markers or timeline",
            "input_bytes": "sum of the sizes of the replaced files (bloom-filter footers included)",
        },
        "spark_input_bytes_note": "task input metrics; undercounts column chunks read through parquet-mr's "
                                  "vectored IO (default), so the footer analysis is the reference",
        "queries": [{"name": q.name, "description": q.description,
                     "ranges": [list(r) for r in q.ranges], "columns": list(q.columns), "tables": qres[q.name]}
                    for q in queries],
        "verification": {"expected_input": list(expected), "table_before_data": list(input_sum),
                         "checksums": {t: list(v) for t, v in sums.items()}, "hudi_rs_rows": rs_rows,
                         "ok": not problems, "problems": problems},
        "churn": churn,
        "targets": churn_targets(churn) if churn else [],
    }
    spark.stop()

    return common.finish(NAME, TITLE, results, render_text, render_markdown, args, work, problems)



if __name__ == "__main__":
    sys.exit(main())
