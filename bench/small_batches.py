"""Streaming small batches: the small-files problem, and what auto-sizing and clustering buy against
plain Spark appends and delta-rs.

    .venv/bin/python bench/small_batches.py [--scale 1] [--rows-per-batch 20000] [--update-fraction 0.1]

1. Data: K1 insert-only batches, then K2 batches of which a fraction f are updates of existing keys
   (drawn from the keys inserted in the last W batches, late updates as in a trip or order stream; W=0:
   any key) and the rest new keys. Every batch is one hour of event time (`ts`), staged once as parquet;
   every system reads the same staged files.
2. Systems, each batch into all of them in a rotating order (so load drift hits all alike):
   (a) plain Spark `df.write.mode("append").parquet` - the small-files baseline (updates are appended
       as duplicates: plain parquet cannot update);
   (b) pyhudi copy-on-write with auto-sizing (`insert`, then `upsert`);
   (c) pyhudi merge-on-read (same operations; one `pyhudi.compact` at the end);
   (d) pyhudi copy-on-write with auto-sizing off (`hoodie.parquet.small.file.limit=0`) and inline
       clustering every N commits (one more `pyhudi.cluster` at the end);
   (e) delta-rs: `write_deltalake(mode="append")`, then `merge` for batches with updates, and
       `optimize.compact(target_size=max file size)` at the end.
   Ingest time per batch (wall time of the call), maintenance time, bytes written (pyhudi: commit
   `totalWriteBytes` of every instant incl. clustering and compaction; delta: add actions in the log;
   Spark: the files), live files and their sizes against the small-file limit and max size.
3. Queries through ONE Spark session reading each table's current files as plain parquet
   (`spark.read.parquet(*files)`): a full-scan aggregate and a selective `ts` range, several runs
   interleaved, medians; ratios against pyhudi COW.
4. Correctness: pyhudi tables and delta hold exactly the expected keys at their latest versions
   (count, distinct keys, checksum of (uuid, ts)); hudi-rs reads the pyhudi tables' row counts.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _ingest  # noqa: E402
import _tables  # noqa: E402
import common  # noqa: E402
from _ingest import PHASE_INSERT, PHASE_UPSERT, Batch  # noqa: E402
from _small_batches_report import NAME, TITLE, render_markdown, render_text  # noqa: E402,F401
from common import MB, fmt_bytes, median, ratio  # noqa: E402

DEFAULT_BATCHES = 16  # per phase at --scale 1
HOUR_MS = 3_600_000
SYSTEMS = ("spark", "cow", "mor", "cow_cluster", "mor_services", "delta")
PYHUDI = ("cow", "mor", "cow_cluster", "mor_services")
LABELS = {"spark": "Spark parquet append", "cow": "pyhudi COW auto-sized", "mor": "pyhudi MOR",
          "cow_cluster": "pyhudi COW + clustering", "mor_services": "pyhudi MOR + inline compaction + clustering",
          "delta": "delta-rs append/merge + optimize"}
MOR_KEYS = ("mor", "mor_services")
MAINTENANCE = {"cow": None, "mor": "compact", "cow_cluster": "cluster", "mor_services": None}
PROFILE_PHASES = common.WRITE_STEPS


# --------------------------------------------------------------------------- data


def _hour(t: pa.Table, b: int, rng: np.random.Generator) -> pa.Table:
    """Give batch b's rows event times inside its hour, ascending (arrival order)."""
    ts = common.TS_START + (b - 1) * HOUR_MS + np.sort(rng.integers(0, HOUR_MS, t.num_rows))
    return t.set_column(t.schema.get_field_index("ts"), "ts", pa.array(ts, pa.int64()))


def generate(args: Any, work: Path) -> tuple[list[Batch], pa.Table]:
    """Stage every batch once; return the batches and the expected final (uuid, ts) of every key."""
    k_ins, k_upd = phase_batches(args)
    n = args.rows_per_batch
    current: pa.Table | None = None  # latest version of every key
    origin = np.zeros(0, dtype=np.int64)  # batch that first inserted each row of `current`
    batches = []
    for b in range(1, k_ins + k_upd + 1):
        rng = np.random.default_rng([args.seed, b])
        phase = PHASE_INSERT if b <= k_ins else PHASE_UPSERT
        n_upd = int(round(n * args.update_fraction)) if phase == PHASE_UPSERT and current is not None else 0
        fresh = common.trips(n - n_upd, args.seed * 100_003 + b)
        parts = [fresh.append_column("__origin", pa.array(np.full(fresh.num_rows, b), pa.int64()))]
        if n_upd:
            assert current is not None
            eligible = (np.flatnonzero(origin > b - 1 - args.update_window) if args.update_window
                        else np.arange(current.num_rows))
            rows = np.sort(rng.choice(eligible, size=min(n_upd, len(eligible)), replace=False))
            upd = common.updated_trips(current, rows, b, args.seed)
            parts.append(upd.append_column("__origin", pa.array(origin[rows], pa.int64())))
            kept = np.ones(current.num_rows, dtype=bool)
            kept[rows] = False
            current, origin = current.filter(pa.array(kept)), origin[kept]
        batch = _hour(pa.concat_tables(parts), b, rng).sort_by("ts")
        batch_origin = batch.column("__origin").to_numpy()
        batch = batch.drop_columns(["__origin"])
        staged = common.write_staging(batch, work / "staging" / f"batch-{b:03d}", files=2)
        current = batch if current is None else pa.concat_tables([current, batch])
        origin = np.concatenate([origin, batch_origin])
        batches.append(Batch(b, phase, staged, batch.num_rows, n_upd, common.dir_bytes(staged)))
    assert current is not None
    return batches, current.select(["uuid", "ts"])


def phase_batches(args: Any) -> tuple[int, int]:
    k = max(2, int(round(DEFAULT_BATCHES * args.scale)))
    return (args.insert_batches if args.insert_batches is not None else k,
            args.upsert_batches if args.upsert_batches is not None else k)


# --------------------------------------------------------------------------- systems


def hudi_options(key: str, args: Any) -> dict[str, str]:
    opts = {
        "hoodie.table.name": f"trips_{key}",
        "hoodie.datasource.write.recordkey.field": "uuid",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "city" if args.partitioned else "",
        "hoodie.parquet.max.file.size": str(args.max_file_size),
        "hoodie.parquet.small.file.limit": str(args.small_file_limit),
        "hoodie.datasource.write.table.type": "MERGE_ON_READ" if key in MOR_KEYS else "COPY_ON_WRITE",
    }
    if not args.partitioned:
        opts["hoodie.datasource.write.keygenerator.class"] = "org.apache.hudi.keygen.NonpartitionedKeyGenerator"
    if key == "cow_cluster":
        opts.update({
            "hoodie.parquet.small.file.limit": "0",
            "hoodie.clustering.inline": "true",
            "hoodie.clustering.inline.max.commits": str(args.cluster_every),
            "hoodie.clustering.plan.strategy.small.file.limit": str(args.small_file_limit),
            "hoodie.clustering.plan.strategy.target.file.max.bytes": str(args.max_file_size),
            "hoodie.clustering.plan.strategy.max.bytes.per.group": str(args.cluster_group_bytes),
        })
    if key == "mor_services":  # issue 19: default SIMPLE index, auto-sizing, inline compaction and clustering
        opts.update({
            "hoodie.compact.inline": "true",
            "hoodie.compact.inline.max.delta.commits": str(args.compact_every),
            "hoodie.clustering.inline": "true",
            "hoodie.clustering.inline.max.commits": str(args.cluster_every),
            "hoodie.clustering.plan.strategy.small.file.limit": str(args.small_file_limit),
            "hoodie.clustering.plan.strategy.target.file.max.bytes": str(args.max_file_size),
            "hoodie.clustering.plan.strategy.max.bytes.per.group": str(args.cluster_group_bytes),
        })
    return {**opts, **common.hudi_extra_options(args)}


def make_sinks(root: Path, args: Any, systems: tuple[str, ...] = SYSTEMS) -> dict[str, _ingest.Sink]:
    part = "city" if args.partitioned else None
    sinks: dict[str, _ingest.Sink] = {}
    for key in systems:
        path = str(root / key)
        if key == "spark":
            sinks[key] = _ingest.SparkAppendSink(key, LABELS[key], path, partition_by=part)
        elif key == "delta":
            sinks[key] = _ingest.DeltaSink(key, LABELS[key], path, uses_spark=False,
                                           maintenance_what="optimize.compact(target_size=max file size)",
                                           partition_by=part, target_size=args.max_file_size)
        else:
            maint = MAINTENANCE[key]
            what = {"cow": "none (auto-sizing at write time; the cleaner runs inline)",
                    "mor": "pyhudi.compact of every file slice with logs",
                    "cow_cluster": "one pyhudi.cluster for files inline clustering has not reached",
                    "mor_services": "none (inline compaction and clustering)"}[key]
            sinks[key] = _ingest.PyhudiSink(key, LABELS[key], path, maintenance_what=what,
                                            options=hudi_options(key, args), maintenance=maint)
    return sinks


# --------------------------------------------------------------------------- queries


def queries(spark: Any, files: dict[str, list[tuple[str, int]]], lo: int, hi: int) -> dict[str, Any]:
    from pyspark.sql import functions as F

    def full(key: str) -> list[Any]:
        df = _tables.read_files(spark, files[key])
        r = df.agg(F.count(F.lit(1)), F.sum("fare"), F.sum("tip"), F.max("ts")).collect()[0]
        return [int(r[0]), round(float(r[1]), 2), round(float(r[2]), 2), int(r[3])]

    def selective(key: str) -> list[Any]:
        df = _tables.read_files(spark, files[key]).filter((F.col("ts") >= lo) & (F.col("ts") < hi))
        r = df.agg(F.count(F.lit(1)), F.sum("fare")).collect()[0]
        return [int(r[0]), round(float(r[1] or 0.0), 2)]

    return {"full scan": full, "selective ts range": selective}


# --------------------------------------------------------------------------- run


def ingest(spark: Any, sinks: dict[str, _ingest.Sink], batches: list[Batch], phases: common.PhaseTimer | None,
           quiet: bool = False) -> list[dict[str, Any]]:
    """Every batch into every sink, rotating the order per batch; returns per-batch records."""
    keys = list(sinks)
    out = []
    for i, batch in enumerate(batches):
        order = keys[i % len(keys):] + keys[: i % len(keys)]
        row: dict[str, Any] = {"batch": batch.index, "phase": batch.phase, "order": order, "rows": batch.rows,
                               "updates": batch.updates, "staged_bytes": batch.staged_bytes, "systems": {}}
        for key in order:
            sink = sinks[key]
            if phases is not None:
                phases.take()
            with common.spark_job_group(spark, f"{key}-{batch.index}", details=True) as jobs, common.timed() as tm:
                sink.write(spark, batch)
            cell: dict[str, Any] = {"seconds": tm[0], **sink.after_write()}
            if isinstance(sink, _ingest.PyhudiSink) and phases is not None:
                split = phases.take()
                split["other"] = tm[0] - sum(split.values())
                cell["phases"] = split
            if sink.uses_spark:
                cell["spark"] = jobs
            cell["live_files"] = len(sink.live_files()) + len(sink.log_files())
            row["systems"][key] = cell
        out.append(row)
        if not quiet:
            print(f"  batch {batch.index:3d} ({batch.phase}): " + ", ".join(
                f"{k} {row['systems'][k]['seconds']:.2f} s/{row['systems'][k]['live_files']} files" for k in keys))
    return out


def warm_up(spark: Any, args: Any, work: Path) -> None:
    """JVM, Python workers, delta-rs and every code path once on a tiny table (not measured)."""
    import argparse

    tiny = argparse.Namespace(**{**vars(args), "rows_per_batch": 2000, "insert_batches": 2, "upsert_batches": 2,
                                 "cluster_every": 2})
    batches, _ = generate(tiny, work / "warm")
    sinks = make_sinks(work / "warm", tiny)
    ingest(spark, sinks, batches, None, quiet=True)
    files = {}
    for key, sink in sinks.items():
        sink.maintain(spark)
        files[key] = sink.live_files()
    for fn in queries(spark, files, common.TS_START, common.TS_START + HOUR_MS).values():
        for key in sinks:
            fn(key)
    shutil.rmtree(work / "warm", ignore_errors=True)


def summarize_ingest(batches: list[dict[str, Any]], keys: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for key in keys:
        s: dict[str, Any] = {}
        for phase in (PHASE_INSERT, PHASE_UPSERT):
            sel = [b for b in batches if b["phase"] == phase]
            secs = [b["systems"][key]["seconds"] for b in sel]
            base = [b["systems"]["spark"]["seconds"] for b in sel] if "spark" in keys else []
            s[phase] = {"batches": len(sel), "seconds": sum(secs), "median_seconds": median(secs),
                        "ratio_vs_spark": ratio(sum(secs), sum(base)) if base else float("nan"),
                        "median_batch_ratio_vs_spark": median([ratio(a, b) for a, b in zip(secs, base)]) if base
                        else float("nan"),
                        "bytes_written": sum(b["systems"][key].get("bytes_written", 0) for b in sel)}
        s["seconds"] = s[PHASE_INSERT]["seconds"] + s[PHASE_UPSERT]["seconds"]
        out[key] = s
    return out


def spark_profile(batches: list[dict[str, Any]], key: str, phase: str) -> dict[str, Any]:
    """Median Spark jobs, summed job wall time and executor run time per batch, total and per call site."""
    cells = [b["systems"][key]["spark"] for b in batches if b["phase"] == phase and "spark" in b["systems"][key]]
    cells = [c for c in cells if "job_ms" in c]
    if not cells:
        return {}
    sites = sorted({site for c in cells for site in c["by_site"]})
    return {
        "jobs": median([c["jobs"] for c in cells]), "tasks": median([c["tasks"] for c in cells]),
        "job_seconds": median([c["job_ms"] / 1000 for c in cells]),
        "run_seconds": median([c["run_ms"] / 1000 for c in cells]),
        "wall_outside_jobs_seconds": median([b["systems"][key]["seconds"] - b["systems"][key]["spark"]["job_ms"] / 1000
                                             for b in batches if b["phase"] == phase
                                             and "job_ms" in b["systems"][key].get("spark", {})]),
        "by_site": {site: {"jobs": median([c["by_site"].get(site, {}).get("jobs", 0) for c in cells]),
                           "job_seconds": median([c["by_site"].get(site, {}).get("job_ms", 0.0) / 1000 for c in cells])}
                    for site in sites},
    }


def median_phases(batches: list[dict[str, Any]], key: str, phase: str) -> dict[str, float]:
    sel = [b["systems"][key]["phases"] for b in batches if b["phase"] == phase and "phases" in b["systems"][key]]
    labels = [lbl for _, _, lbl in PROFILE_PHASES if any(lbl in p for p in sel)] + ["other"]
    labels = list(dict.fromkeys(labels))
    return {lbl: median([p.get(lbl, 0.0) for p in sel]) for lbl in labels} if sel else {}


def main() -> int:
    p = common.base_parser(__doc__.split("\n\n")[0], DEFAULT_BATCHES * 2 * 20000)
    p.add_argument("--rows-per-batch", type=int, default=20000,
                   help="rows per batch (~2.3 MB of snappy parquet staged, ~3 MB in a Hudi file)")
    p.add_argument("--insert-batches", type=int, default=None,
                   help=f"insert-only batches (default {DEFAULT_BATCHES} x scale)")
    p.add_argument("--upsert-batches", type=int, default=None,
                   help=f"batches with updates (default {DEFAULT_BATCHES} x scale)")
    p.add_argument("--update-fraction", type=float, default=0.10, help="share of each upsert batch that are updates")
    p.add_argument("--update-window", type=int, default=4,
                   help="updates pick keys inserted in the last W batches (0 = any existing key)")
    p.add_argument("--max-file-size", type=int, default=8 * MB, help="hoodie.parquet.max.file.size (and delta's target)")
    p.add_argument("--small-file-limit", type=int, default=None,
                   help="hoodie.parquet.small.file.limit (default 100/120 of the max size, Hudi's proportion)")
    p.add_argument("--cluster-every", type=int, default=4, help="(d): hoodie.clustering.inline.max.commits")
    p.add_argument("--compact-every", type=int, default=5,
                   help="MOR + services: hoodie.compact.inline.max.delta.commits (Hudi's default 5)")
    p.add_argument("--cluster-group-bytes", type=int, default=None,
                   help="(d): clustering max.bytes.per.group (default 2 x max file size, Hudi's proportion)")
    p.add_argument("--partitioned", action="store_true",
                   help="partition every table by city (4 values); default: one partition, like a stream "
                        "whose inserts all land in the current day's partition")
    common.add_hudi_option_flag(p)
    p.add_argument("--query-runs", type=int, default=11,
                   help="runs of each query per system (median reported; single runs of these ~0.15 s queries vary by 30%%)")
    p.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated subset of " + ",".join(SYSTEMS))
    args = p.parse_args()
    if args.small_file_limit is None:
        args.small_file_limit = args.max_file_size * 100 // 120
    if args.cluster_group_bytes is None:
        args.cluster_group_bytes = 2 * args.max_file_size
    systems = tuple(s for s in args.systems.split(",") if s)
    if "spark" not in systems or any(s not in SYSTEMS for s in systems):
        p.error(f"--systems must include spark and be a subset of {','.join(SYSTEMS)}")
    k_ins, k_upd = phase_batches(args)
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="pyhudi-bench-small-"))
    for d in (*systems, "staging", "warm"):
        shutil.rmtree(work / d, ignore_errors=True)

    monitor = common.LoadMonitor().start()
    started = common.now_utc()
    print(f"pyhudi bench {NAME}: {k_ins} insert batches + {k_upd} batches with {args.update_fraction:.0%} updates "
          f"(window {args.update_window or 'all'}), {args.rows_per_batch:,} rows each; max file "
          f"{fmt_bytes(args.max_file_size)}, small-file limit {fmt_bytes(args.small_file_limit)}; work dir {work}")
    with monitor.phase("generate"):
        batches, expected_keys = generate(args, work)
    staged_total = sum(b.staged_bytes for b in batches)

    from pyhudi.spark_env import create_session

    conf = common.spark_conf(args)
    spark: Any = create_session(master=args.master, app_name="pyhudi-bench-small-batches", conf=conf)
    with monitor.phase("warm-up"):
        warm_up(spark, args, work)

    sinks = make_sinks(work, args, systems)
    keys = list(sinks)
    phases = common.PhaseTimer(PROFILE_PHASES)
    with monitor.phase("ingest"):
        per_batch = ingest(spark, sinks, batches, phases)
    phases.close()
    after_ingest = {k: {"files": _tables.size_summary(s.live_files(), s.path, args.small_file_limit,
                                                      args.max_file_size),
                        "log_files": len(s.log_files())} for k, s in sinks.items()}

    maintenance: dict[str, Any] = {}
    with monitor.phase("maintenance"):
        for key, sink in sinks.items():
            with common.timed() as tm:
                m = sink.maintain(spark)
            maintenance[key] = {"seconds": tm[0] if m is not None else 0.0, "what": sink.maintenance_what,
                                **(m or {})}
            if m is not None:
                print(f"  maintenance {key}: {tm[0]:.2f} s")

    final_files = {k: s.live_files() for k, s in sinks.items()}
    leftover_logs = {k: len(s.log_files()) for k, s in sinks.items()}
    final = {k: _tables.size_summary(final_files[k], sinks[k].path, args.small_file_limit, args.max_file_size)
             for k in keys}
    written = {k: s.bytes_written() for k, s in sinks.items()}

    # ---- correctness: expected keys and versions; hudi-rs row counts
    with monitor.phase("verify"):
        exp_dir = common.write_staging(expected_keys, work / "staging" / "expected", files=1)
        expected = _tables.checksum(spark.read.parquet(exp_dir))
        sums: dict[str, tuple[int, int, str]] = {}
        for k in keys:
            if leftover_logs[k]:
                import pyhudi

                sums[k] = _tables.checksum(pyhudi.read(spark, sinks[k].path))
            else:
                sums[k] = _tables.checksum(_tables.read_files(spark, final_files[k]))
        rs_rows = _tables.hudi_rs_counts({k: sinks[k].path for k in keys if k in PYHUDI})
    problems = [f"{k}: {sums[k]} != expected {expected}" for k in keys if k != "spark" and sums[k] != expected]
    problems += [f"hudi-rs read {n} rows of {k}, expected {expected[0]}" for k, n in rs_rows.items() if n != expected[0]]
    if "spark" in sums and (sums["spark"][0] != sum(b.rows for b in batches) or sums["spark"][1] != expected[1]):
        problems.append(f"spark append holds {sums['spark']}, expected every staged row and {expected[1]} keys")
    print(f"verify: expected {expected}; " + ", ".join(f"{k} {sums[k][:2]}" for k in keys)
          + f"; hudi-rs {rs_rows} -> {'OK' if not problems else 'PROBLEMS: ' + '; '.join(problems)}")

    # ---- queries
    mid = (k_ins + k_upd) // 2
    lo = common.TS_START + mid * HOUR_MS
    hi = lo + HOUR_MS // 2
    qfns = queries(spark, final_files, lo, hi)
    with monitor.phase("queries"):
        qres = _tables.run_interleaved(keys, qfns, args.query_runs, common.timed)
    for q, cells in qres.items():
        print(f"  query {q}: " + ", ".join(f"{k} {c['seconds']:.3f} s" for k, c in cells.items()))
    q_answers_ok = all(cells[k]["answer"] == cells[keys[1]]["answer"] for cells in qres.values()
                       for k in keys if k != "spark")
    if not q_answers_ok:
        problems.append("query answers differ between the deduplicating systems")

    monitor.stop()
    summary = summarize_ingest(per_batch, keys)
    systems_out: dict[str, Any] = {}
    for k in keys:
        m = maintenance[k]
        bw = written[k]
        systems_out[k] = {
            "label": LABELS[k], "ingest": summary[k], "maintenance": m,
            "end_to_end_seconds": summary[k]["seconds"] + m["seconds"],
            "after_ingest": after_ingest[k], "final_files": final[k], "leftover_log_files": leftover_logs[k],
            "bytes_written": bw["bytes"], "bytes_written_by_kind": bw["by_kind"],
            "write_amplification": ratio(bw["bytes"], final[k]["total"]),
            "bytes_written_over_input": ratio(bw["bytes"], staged_total),
            "queries": {q: {"seconds": cells[k]["seconds"], "seconds_runs": cells[k]["seconds_runs"],
                            "answer": cells[k]["answer"]} for q, cells in qres.items()},
            "query_source": ("pyhudi.read snapshot (log files remained)" if leftover_logs[k] else
                             "spark.read.parquet of the live files"),
            "spark_jobs_per_batch": median([b["systems"][k]["spark"]["jobs"] for b in per_batch
                                            if "spark" in b["systems"][k]]) if sinks[k].uses_spark else 0,
            "options": getattr(sinks[k], "options", None),
        }
    profile = {k: {ph: median_phases(per_batch, k, ph) for ph in (PHASE_INSERT, PHASE_UPSERT)} for k in keys
               if k in PYHUDI}
    spark_jobs = {k: {ph: spark_profile(per_batch, k, ph) for ph in (PHASE_INSERT, PHASE_UPSERT)} for k in keys
                  if sinks[k].uses_spark}
    results: dict[str, Any] = {
        "benchmark": NAME, "started": started, "finished": common.now_utc(), "command": common.command_line(),
        "machine": common.machine_info(), "load": monitor.report(),
        "config": {"scale": args.scale, "insert_batches": k_ins, "upsert_batches": k_upd,
                   "rows_per_batch": args.rows_per_batch, "update_fraction": args.update_fraction,
                   "update_window": args.update_window, "max_file_size": args.max_file_size,
                   "small_file_limit": args.small_file_limit, "cluster_every": args.cluster_every,
                   "cluster_group_bytes": args.cluster_group_bytes, "partitioned": args.partitioned,
                   "query_runs": args.query_runs, "systems": keys, "spark_master": args.master,
                   "spark_conf": conf, "seed": args.seed, "schema": common.TRIPS_COLUMNS,
                   "selective_range": [lo, hi]},
        "input": {"rows": sum(b.rows for b in batches), "updates": sum(b.updates for b in batches),
                  "final_keys": expected[1], "staged_bytes": staged_total,
                  "staged_bytes_per_batch": median([b.staged_bytes for b in batches])},
        "batches": per_batch, "systems": systems_out, "profile": profile, "spark_jobs": spark_jobs,
        "headline": headline(systems_out, keys),
        "verification": {"expected": list(expected), "checksums": {k: list(v) for k, v in sums.items()},
                         "hudi_rs_rows": rs_rows, "query_answers_agree": q_answers_ok,
                         "ok": not problems, "problems": problems},
    }
    spark.stop()
    return common.finish(NAME, TITLE, results, render_text, render_markdown, args, work, problems)


def headline(s: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    """The same-run ratios the targets are judged on (NaN when a system was not run)."""
    def get(k: str, *path: str) -> float:
        if k not in s:
            return float("nan")
        v: Any = s[k]
        for part in path:
            v = v[part]
        return float(v)

    out: dict[str, Any] = {}
    for k in PYHUDI:
        if k not in s:
            continue
        out[k] = {
            "insert_vs_spark": get(k, "ingest", PHASE_INSERT, "ratio_vs_spark"),
            "upsert_vs_spark": get(k, "ingest", PHASE_UPSERT, "ratio_vs_spark"),
            "well_sized_pct": get(k, "final_files", "well_sized_pct"),
            "files_over_ideal": get(k, "final_files", "files_over_ideal"),
            "files_over_ideal_global": ratio(get(k, "final_files", "files"), get(k, "final_files", "ideal_files_global")),
            "spark_query_over_this": {q: ratio(get("spark", "queries", q, "seconds"), get(k, "queries", q, "seconds"))
                                      for q in s[k]["queries"]},
            "query_over_delta": {q: ratio(get(k, "queries", q, "seconds"), get("delta", "queries", q, "seconds"))
                                 for q in s[k]["queries"]},
            "end_to_end_over_delta": ratio(get(k, "end_to_end_seconds"), get("delta", "end_to_end_seconds")),
            "write_amplification": get(k, "write_amplification"),
        }
    if "delta" in s:
        out["delta"] = {"write_amplification": get("delta", "write_amplification"),
                        "well_sized_pct": get("delta", "final_files", "well_sized_pct"),
                        "insert_vs_spark": get("delta", "ingest", PHASE_INSERT, "ratio_vs_spark"),
                        "upsert_vs_spark": get("delta", "ingest", PHASE_UPSERT, "ratio_vs_spark")}
    return out


if __name__ == "__main__":
    sys.exit(main())
