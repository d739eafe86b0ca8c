"""MOR vs COW: update latency and bytes written, and compaction throughput against plain pyarrow.

    .venv/bin/python bench/mor_vs_cow.py [--scale 1] [--batches 5] [--update-fraction 0.1]

1. The same generated trips table (N rows, 4 city partitions) is bulk-inserted twice: as a
   copy-on-write and as a merge-on-read table.
2. K batches each update a random fraction f of the existing keys (the same keys and values for both
   tables). Every `pyhudi.write` upsert is timed; batches alternate which table goes first. Reported:
   per-batch latency of both, the MOR/COW ratio, bytes written (the commit's `totalWriteBytes`) and write
   amplification = bytes written / stored bytes of the updated records.
3. `pyhudi.compact` merges the MOR table's base + log files; throughput = input bytes (base + logs of the
   compacted slices) per second. Baseline on the same files: a single-process pyarrow read-merge-write
   per file group (read base parquet, decode the log's parquet data blocks, merge by key with
   pyarrow.compute, write one parquet file), run before and after pyhudi's compaction.
4. Correctness: COW, MOR and the expected rows agree (count, distinct keys, checksum of key/ts) after
   the updates; MOR and the baseline's output still agree after compaction.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
from common import MB, fmt_bytes, format_table, median, ratio  # noqa: E402

NAME = "mor_vs_cow"
TITLE = "MOR vs COW updates and compaction"
DEFAULT_ROWS = 400_000
RECORD_KEY = "_hoodie_record_key"
COMPACT_PHASES = [
    ("pyhudi.services.compaction", "schedule", "plan"),
    ("pyhudi.services.compaction", "execute", "execute (Spark job + commit)"),
]


# --------------------------------------------------------------------------- options


def hudi_options(table_type: str, args: Any) -> dict[str, str]:
    return {
        "hoodie.table.name": f"trips_{table_type.lower()}",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.recordkey.field": "uuid",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.index.type": args.index,
        "hoodie.parquet.max.file.size": str(args.max_file_size),
        "hoodie.parquet.small.file.limit": str(args.small_file_limit),
    }


# --------------------------------------------------------------------------- timeline helpers


def commit_json(table_path: str, instant: str) -> dict[str, Any]:
    hoodie = Path(table_path) / ".hoodie"
    for action in ("commit", "deltacommit", "replacecommit"):
        f = hoodie / f"{instant}.{action}"
        if f.exists():
            return json.loads(f.read_text())
    raise FileNotFoundError(f"no completed instant {instant} in {hoodie}")


def write_stats(meta: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for stats in (meta.get("partitionToWriteStats") or {}).values() for s in stats or []]


def stat_sum(meta: dict[str, Any], key: str) -> int:
    return int(sum(int(s.get(key) or 0) for s in write_stats(meta)))


_LOG_RE = re.compile(r"^\.(?P<fid>.+)_(?P<base>\d+)\.log\.(?P<ver>\d+)_(?P<token>[^.]+)$")


def file_slices(table_path: str) -> list[dict[str, Any]]:
    """Latest base file + its log files per file group, from a directory listing (all commits are complete)."""
    root = Path(table_path)
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for part_dir in sorted(p for p in root.iterdir() if p.is_dir() and p.name != ".hoodie"):
        for f in part_dir.iterdir():
            name = f.name
            if name.endswith(".parquet"):
                fid, _token, inst = name[: -len(".parquet")].split("_")
                g = groups.setdefault((part_dir.name, fid), {"partition": part_dir.name, "file_id": fid,
                                                             "base": None, "base_instant": "", "logs": []})
                if inst > g["base_instant"]:
                    g["base"], g["base_instant"] = str(f), inst
            elif m := _LOG_RE.match(name):
                g = groups.setdefault((part_dir.name, m["fid"]), {"partition": part_dir.name, "file_id": m["fid"],
                                                                  "base": None, "base_instant": "", "logs": []})
                g["logs"].append((m["base"], int(m["ver"]), m["token"], str(f)))
    out = []
    for g in groups.values():
        logs = sorted(lg for lg in g["logs"] if lg[0] == g["base_instant"])
        if logs:
            out.append({**g, "logs": [lg[3] for lg in logs]})
    return sorted(out, key=lambda g: (g["partition"], g["file_id"]))


def slice_bytes(slices: list[dict[str, Any]]) -> tuple[int, int]:
    base = sum(os.path.getsize(s["base"]) for s in slices if s["base"])
    logs = sum(os.path.getsize(lg) for s in slices for lg in s["logs"])
    return base, logs


def warm_cache(paths: list[str]) -> None:
    """Read files once so both compaction runs start from the page cache."""
    for p in paths:
        with open(p, "rb") as fh:
            while fh.read(8 * MB):
                pass


# --------------------------------------------------------------------------- baseline compaction


def pyarrow_compact(slices: list[dict[str, Any]], committed: set[str], out_dir: Path) -> dict[str, Any]:
    """Plain single-process read-merge-write of each file slice with pyarrow (no Spark, no Hudi metadata).

    Per file group: read the base parquet; decode the log files' PARQUET_DATA blocks (committed instants
    only); keep the last version of each key among the log rows (later blocks have later ts); drop base
    rows whose key was updated (index_in/is_in + filter); concat; write one snappy parquet file with the
    same page size and dictionary settings as pyhudi's base files (but no bloom filter or Avro footer).
    """
    from pyhudi.io.log_blocks import parquet_block_to_arrow
    from pyhudi.io.log_format import BlockType, HeaderKey, LogBlock, read_blocks

    out_dir.mkdir(parents=True, exist_ok=True)
    rows_out = bytes_out = updated = 0
    start, cpu0 = time.perf_counter(), time.process_time()
    for s in slices:
        base = pq.read_table(s["base"])
        parts = []
        for log_path in s["logs"]:
            with open(log_path, "rb") as fh:
                data = fh.read()
            for block in read_blocks(data):
                if not isinstance(block, LogBlock):
                    raise RuntimeError(f"corrupt block in {log_path}")
                if block.block_type != BlockType.PARQUET_DATA_BLOCK:
                    raise RuntimeError(f"unexpected {block.block_type.name} in {log_path}")
                if block.header.get(HeaderKey.INSTANT_TIME) in committed:
                    parts.append(parquet_block_to_arrow(block))
        logs = pa.concat_tables(parts).select(base.column_names).cast(base.schema)
        # last occurrence of every key among the log rows (blocks are in commit order)
        logs = logs.append_column("__pos", pa.array(np.arange(logs.num_rows, dtype=np.int64)))
        last = logs.group_by(RECORD_KEY, use_threads=False).aggregate([("__pos", "max")])
        latest = logs.take(last.column("__pos_max")).drop_columns(["__pos"])
        hit = pc.is_in(base.column(RECORD_KEY), value_set=latest.column(RECORD_KEY))
        updated += int(pc.sum(hit.cast(pa.int64())).as_py() or 0)
        merged = pa.concat_tables([base.filter(pc.invert(hit)), latest])
        path = out_dir / f"{s['file_id']}.parquet"
        pq.write_table(merged, path, compression="snappy", data_page_size=MB, use_dictionary=True,
                       write_statistics=True, store_schema=False, row_group_size=max(1000, merged.num_rows))
        rows_out += merged.num_rows
        bytes_out += os.path.getsize(path)
    return {"seconds": time.perf_counter() - start, "cpu_seconds": time.process_time() - cpu0, "rows_out": rows_out, "bytes_out": bytes_out,
            "updated_records": updated}


# --------------------------------------------------------------------------- checks


def checksum(df: Any) -> tuple[int, int, str]:
    """(rows, distinct keys, sum of xxhash64(uuid, ts)) - order independent."""
    from pyspark.sql import functions as F

    r = df.agg(F.count(F.lit(1)).alias("n"), F.countDistinct("uuid").alias("keys"),
               F.sum(F.xxhash64("uuid", "ts").cast("decimal(38,0)")).alias("h")).collect()[0]
    return int(r["n"]), int(r["keys"]), str(r["h"])


# --------------------------------------------------------------------------- run


def main() -> int:
    p = common.base_parser(__doc__.split("\n\n")[0], DEFAULT_ROWS)
    p.add_argument("--batches", type=int, default=5, help="update batches (K)")
    p.add_argument("--update-fraction", type=float, default=0.10, help="fraction of keys each batch updates (f)")
    p.add_argument("--index", default="SIMPLE", help="hoodie.index.type for both tables")
    p.add_argument("--compaction-runs", type=int, default=3,
                   help="pyhudi compactions (on copies of the MOR table); the baseline runs one more time")
    p.add_argument("--max-file-size", type=int, default=16 * MB, help="hoodie.parquet.max.file.size")
    p.add_argument("--small-file-limit", type=int, default=13 * MB, help="hoodie.parquet.small.file.limit")
    args = p.parse_args()

    n = common.rows_for(args.scale, DEFAULT_ROWS)
    n_upd = max(1, int(round(n * args.update_fraction)))
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="pyhudi-bench-mor-"))
    work.mkdir(parents=True, exist_ok=True)
    cow_path, mor_path = str(work / "cow"), str(work / "mor")
    for d in (cow_path, mor_path, work / "staging", work / "baseline", work / "warm"):
        shutil.rmtree(d, ignore_errors=True)

    monitor = common.LoadMonitor().start()
    started = common.now_utc()
    print(f"pyhudi bench {NAME}: {n:,} rows, {args.batches} update batches of {args.update_fraction:.0%} "
          f"({n_upd:,} rows), index {args.index}, max file {fmt_bytes(args.max_file_size)}, work dir {work}")

    # ---- data (same for both tables)
    with monitor.phase("generate"):
        current = common.trips(n, args.seed)
        base_dir = common.write_staging(current, work / "staging" / "base", files=2)
        rng = np.random.default_rng(args.seed + 1)
        batch_dirs = []
        for b in range(args.batches):
            rows = np.sort(rng.choice(current.num_rows, size=n_upd, replace=False))
            new = common.updated_trips(current, rows, b, args.seed)
            batch_dirs.append(common.write_staging(new, work / "staging" / f"update-{b}", files=2))
            current = common.apply_updates(current, rows, new)
        expected_dir = common.write_staging(current.select(["uuid", "ts"]), work / "staging" / "expected", files=1)
    del current

    import pyhudi
    from pyhudi.spark_env import create_session

    conf = common.spark_conf(args)
    spark: Any = create_session(master=args.master, app_name="pyhudi-bench-mor-vs-cow", conf=conf)
    paths = {"COW": cow_path, "MOR": mor_path}
    opts = {t: hudi_options(t, args) for t in ("COW", "MOR")}
    ttype = {"COW": "COPY_ON_WRITE", "MOR": "MERGE_ON_READ"}
    for t in ("COW", "MOR"):
        opts[t]["hoodie.datasource.write.table.type"] = ttype[t]

    # ---- warm-up: JVM, Python workers and every code path once, on a tiny table (not measured)
    with monitor.phase("warm-up"):
        warm = common.trips(2000, args.seed + 7)
        warm_dir = common.write_staging(warm, work / "staging" / "warm", files=2)
        warm_upd = common.write_staging(common.updated_trips(warm, np.arange(0, 2000, 10), 0, args.seed),
                                        work / "staging" / "warm-upd", files=2)
        for t in ("COW", "MOR"):
            wpath = str(work / "warm" / t.lower())
            pyhudi.write(spark.read.parquet(warm_dir), wpath,
                         {**opts[t], "hoodie.datasource.write.operation": "bulk_insert"})
            pyhudi.write(spark.read.parquet(warm_upd), wpath, {**opts[t], "hoodie.datasource.write.operation": "upsert"})
            checksum(pyhudi.read(spark, wpath))
        pyhudi.compact(spark, str(work / "warm" / "mor"))
        shutil.rmtree(work / "warm", ignore_errors=True)

    # ---- base tables
    base_load: dict[str, dict[str, Any]] = {}
    with monitor.phase("base load"):
        for t in ("COW", "MOR"):
            o = {**opts[t], "hoodie.datasource.write.operation": "bulk_insert"}
            with common.timed() as tm:
                inst = pyhudi.write(spark.read.parquet(base_dir), paths[t], o)
            meta = commit_json(paths[t], inst)
            base_load[t] = {"seconds": tm[0], "instant": inst, "bytes": stat_sum(meta, "totalWriteBytes"),
                            "records": stat_sum(meta, "numWrites"), "files": len(write_stats(meta))}
    stored_bytes_per_record = base_load["COW"]["bytes"] / max(1, base_load["COW"]["records"])
    print(f"base load (bulk_insert): COW {base_load['COW']['seconds']:.1f} s, MOR {base_load['MOR']['seconds']:.1f} s; "
          f"{base_load['COW']['files']} file groups, {fmt_bytes(base_load['COW']['bytes'])} "
          f"({stored_bytes_per_record:.0f} B/record stored)")

    # ---- update batches
    batches: list[dict[str, Any]] = []
    phases = common.PhaseTimer(common.WRITE_PHASES)
    with monitor.phase("updates"):
        for b, bdir in enumerate(batch_dirs):
            order = ("COW", "MOR") if b % 2 == 0 else ("MOR", "COW")
            batch_bytes = common.dir_bytes(bdir)
            row: dict[str, Any] = {"batch": b + 1, "first": order[0], "update_input_bytes": batch_bytes}
            for t in order:
                o = {**opts[t], "hoodie.datasource.write.operation": "upsert"}
                phases.take()
                with common.spark_job_group(spark, f"{t}-{b + 1}") as jobs, common.timed() as tm:
                    inst = pyhudi.write(spark.read.parquet(bdir), paths[t], o)
                split = phases.take()
                split["other"] = tm[0] - sum(split.values())
                meta = commit_json(paths[t], inst)
                written = stat_sum(meta, "totalWriteBytes")
                updates = stat_sum(meta, "numUpdateWrites")
                row[t] = {"seconds": tm[0], "instant": inst, "bytes_written": written,
                          "updated_records": updates, "inserted_records": stat_sum(meta, "numInserts"),
                          "files_written": len(write_stats(meta)),
                          "write_amplification": written / max(1, batch_bytes),
                          "phases": split, "spark": jobs}
            row["mor_cow_ratio"] = ratio(row["MOR"]["seconds"], row["COW"]["seconds"])
            batches.append(row)
            print(f"  batch {b + 1}: COW {row['COW']['seconds']:.2f} s ({fmt_bytes(row['COW']['bytes_written'])}), "
                  f"MOR {row['MOR']['seconds']:.2f} s ({fmt_bytes(row['MOR']['bytes_written'])}), "
                  f"MOR/COW {row['mor_cow_ratio']:.2f}")

    phases.close()

    # ---- correctness after updates (and snapshot read cost, for context)
    with monitor.phase("verify updates"):
        expected = checksum(spark.read.parquet(expected_dir))
        reads: dict[str, float] = {}
        sums: dict[str, tuple[int, int, str]] = {}
        for t in ("COW", "MOR"):
            with common.timed() as tm:
                sums[t] = checksum(pyhudi.read(spark, paths[t]))
            reads[t] = tm[0]
    ok_updates = sums["COW"] == sums["MOR"] == expected
    print(f"verify after updates: expected {expected}, COW {sums['COW']}, MOR {sums['MOR']} -> "
          f"{'OK' if ok_updates else 'MISMATCH'}; snapshot read COW {reads['COW']:.2f} s, MOR {reads['MOR']:.2f} s")

    # ---- compaction: pyhudi vs pyarrow baseline on the same file slices
    slices = file_slices(mor_path)
    in_base, in_logs = slice_bytes(slices)
    in_bytes = in_base + in_logs
    committed = {b["MOR"]["instant"] for b in batches}
    # Compaction runs once per table state, so repeat it on byte-identical copies of the MOR table
    # (Hudi paths are relative); baseline runs are interleaved with pyhudi's, all on page-cached inputs.
    copies = [mor_path]
    for i in range(1, args.compaction_runs):
        shutil.copytree(mor_path, f"{mor_path}-copy{i}")
        copies.append(f"{mor_path}-copy{i}")
    warm_cache([s["base"] for s in slices if s["base"]] + [lg for s in slices for lg in s["logs"]])
    pyhudi_runs: list[float] = []
    pyhudi_cpu: list[float] = []
    baseline_runs: list[dict[str, Any]] = []
    compacted: list[str] = []
    compact_phases = common.PhaseTimer(COMPACT_PHASES)
    compact_splits: list[dict[str, float]] = []
    with monitor.phase("compaction"):
        for i, table_copy in enumerate(copies):
            shutil.rmtree(work / "baseline", ignore_errors=True)
            baseline_runs.append(pyarrow_compact(slices, committed, work / "baseline"))
            compact_phases.take()
            cpu0 = common.tree_cpu_seconds()
            with common.timed() as tm:
                done = pyhudi.compact(spark, table_copy)
            pyhudi_cpu.append(common.tree_cpu_seconds() - cpu0)
            pyhudi_runs.append(tm[0])
            split = compact_phases.take()
            split["other"] = tm[0] - sum(split.values())
            compact_splits.append(split)
            if i == 0:
                compacted = done
        shutil.rmtree(work / "baseline", ignore_errors=True)
        baseline_runs.append(pyarrow_compact(slices, committed, work / "baseline"))
    compact_phases.close()
    for table_copy in copies[1:]:
        shutil.rmtree(table_copy, ignore_errors=True)
    pyhudi_seconds = median(pyhudi_runs)
    cmeta = commit_json(mor_path, compacted[-1]) if compacted else {}
    cstats = write_stats(cmeta)
    plan_groups = {(s["partitionPath"], s["fileId"]) for s in cstats}
    same_slices = plan_groups == {(s["partition"], s["file_id"]) for s in slices}
    log_compacted = stat_sum(cmeta, "totalLogSizeCompacted")
    baseline_seconds = median([r["seconds"] for r in baseline_runs])

    with monitor.phase("verify compaction"):
        with common.timed() as tm:
            after = checksum(pyhudi.read(spark, mor_path))
        read_after = tm[0]
        base_out = checksum(spark.read.parquet(str(work / "baseline")))
    problem = None
    if not same_slices:
        problem = "compaction plan covered different file groups than the baseline"
    ok_compaction = after == expected and same_slices and len(compacted) == 1
    # the baseline output holds only the compacted groups; with every group compacted it is the whole table
    ok_baseline = base_out == expected
    print(f"verify after compaction: MOR {after}, baseline output {base_out} -> "
          f"{'OK' if ok_compaction and ok_baseline else 'MISMATCH'}")

    monitor.stop()
    load = monitor.report()

    cow_s = [b["COW"]["seconds"] for b in batches]
    mor_s = [b["MOR"]["seconds"] for b in batches]
    results: dict[str, Any] = {
        "benchmark": NAME, "started": started, "finished": common.now_utc(), "command": common.command_line(),
        "machine": common.machine_info(), "load": load,
        "config": {"scale": args.scale, "rows": n, "batches": args.batches, "update_fraction": args.update_fraction,
                   "updated_rows_per_batch": n_upd, "index": args.index, "max_file_size": args.max_file_size,
                   "small_file_limit": args.small_file_limit, "spark_master": args.master, "spark_conf": conf, "seed": args.seed,
                   "schema": common.TRIPS_COLUMNS, "base_load_operation": "bulk_insert",
                   "log_block_format": "parquet (pyhudi default)", "parquet_codec": "snappy"},
        "base_load": base_load, "stored_bytes_per_record": stored_bytes_per_record,
        "updates": {
            "batches": batches,
            "cow_median_seconds": median(cow_s), "mor_median_seconds": median(mor_s),
            "mor_cow_ratio_median": median([b["mor_cow_ratio"] for b in batches]),
            "cow_bytes_per_batch_median": median([b["COW"]["bytes_written"] for b in batches]),
            "mor_bytes_per_batch_median": median([b["MOR"]["bytes_written"] for b in batches]),
            "cow_write_amplification_median": median([b["COW"]["write_amplification"] for b in batches]),
            "mor_write_amplification_median": median([b["MOR"]["write_amplification"] for b in batches]),
        },
        "snapshot_read_after_updates": {"COW_seconds": reads["COW"], "MOR_seconds": reads["MOR"],
                                        "mor_cow_ratio": ratio(reads["MOR"], reads["COW"]),
                                        "what": "pyhudi.read + count/distinct/checksum aggregate"},
        "compaction": {
            "file_groups": len(slices), "log_files": sum(len(s["logs"]) for s in slices),
            "input_base_bytes": in_base, "input_log_bytes": in_logs, "input_bytes": in_bytes,
            "log_bytes_from_commit": log_compacted, "output_bytes": stat_sum(cmeta, "totalWriteBytes"),
            "records_out": stat_sum(cmeta, "numWrites"),
            "updated_records": stat_sum(cmeta, "totalUpdatedRecordsCompacted"),
            "pyhudi_seconds_runs": pyhudi_runs, "pyhudi_seconds": pyhudi_seconds,
            "pyhudi_phases_runs": compact_splits,
            "pyhudi_cpu_seconds_runs": pyhudi_cpu, "pyhudi_cores_used": median(
                [c / w for c, w in zip(pyhudi_cpu, pyhudi_runs)]),
            "baseline_cpu_seconds_runs": [r["cpu_seconds"] for r in baseline_runs],
            "baseline_cores_used": median([r["cpu_seconds"] / r["seconds"] for r in baseline_runs]),
            "pyhudi_mb_per_cpu_s": in_bytes / MB / median(pyhudi_cpu),
            "baseline_mb_per_cpu_s": in_bytes / MB / median([r["cpu_seconds"] for r in baseline_runs]), "pyhudi_mb_per_s": in_bytes / MB / pyhudi_seconds,
            "baseline_seconds_runs": [r["seconds"] for r in baseline_runs],
            "baseline_seconds": baseline_seconds, "baseline_mb_per_s": in_bytes / MB / baseline_seconds,
            "baseline_output_bytes": baseline_runs[-1]["bytes_out"],
            "baseline_over_pyhudi_throughput": ratio(pyhudi_seconds, baseline_seconds),
            "instants": compacted,
            "pyhudi_includes": "planning (file listing, Avro plan), one Spark job with a task per file group "
                               "(read base + logs, log merge, parquet write with bloom filter and Avro "
                               "footer, markers), commit",
            "baseline_includes": "read base parquet, decode the logs' parquet blocks, key merge "
                                 "(group_by/is_in/filter/concat), write snappy parquet, file group after "
                                 "file group; no planning, no Spark, no bloom filter, no timeline",
        },
        "read_after_compaction_seconds": read_after,
        "verification": {"expected": list(expected), "cow": list(sums["COW"]), "mor": list(sums["MOR"]),
                         "mor_after_compaction": list(after), "baseline_output": list(base_out),
                         "updates_ok": ok_updates, "compaction_ok": ok_compaction, "baseline_ok": ok_baseline,
                         "problem": problem},
    }
    spark.stop()

    problems = [what for what, ok in (("updates", ok_updates), ("compaction", ok_compaction),
                                      ("baseline output", ok_baseline)) if not ok]
    return common.finish(NAME, TITLE, results, render_text, render_markdown, args, work, problems)


# --------------------------------------------------------------------------- rendering

_PHASE_ORDER = ["count", "index+profile", "write files", "other"]


def _median_phases(batches: list[dict[str, Any]], t: str) -> dict[str, float]:
    labels = [p for p in _PHASE_ORDER if any(p in b[t]["phases"] for b in batches)]
    return {p: median([b[t]["phases"].get(p, 0.0) for b in batches]) for p in labels}


def _update_rows(r: dict[str, Any]) -> list[list[str]]:
    rows = []
    for b in r["updates"]["batches"]:
        rows.append([str(b["batch"]), b["first"], f"{b['COW']['seconds']:.2f}", f"{b['MOR']['seconds']:.2f}",
                     f"{b['mor_cow_ratio']:.2f}", fmt_bytes(b["COW"]["bytes_written"]),
                     fmt_bytes(b["MOR"]["bytes_written"]), f"{b['COW']['write_amplification']:.1f}",
                     f"{b['MOR']['write_amplification']:.2f}"])
    u = r["updates"]
    rows.append(["median", "", f"{u['cow_median_seconds']:.2f}", f"{u['mor_median_seconds']:.2f}",
                 f"{u['mor_cow_ratio_median']:.2f}", fmt_bytes(u["cow_bytes_per_batch_median"]),
                 fmt_bytes(u["mor_bytes_per_batch_median"]), f"{u['cow_write_amplification_median']:.1f}",
                 f"{u['mor_write_amplification_median']:.2f}"])
    return rows


_UPDATE_HEADERS = ["batch", "first", "COW s", "MOR s", "MOR/COW", "COW written", "MOR written", "COW WA",
                   "MOR WA"]


def _phase_rows(r: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    batches = r["updates"]["batches"]
    per = {t: _median_phases(batches, t) for t in ("COW", "MOR")}
    labels = [p for p in _PHASE_ORDER if p in per["COW"] or p in per["MOR"]]
    rows = []
    for t in ("COW", "MOR"):
        spark = batches[-1][t].get("spark") or {}
        rows.append([t, *(f"{per[t].get(p, 0.0):.2f}" for p in labels),
                     f"{median([b[t]['seconds'] for b in batches]):.2f}",
                     f"{spark.get('jobs', '?')}/{spark.get('stages', '?')}/{spark.get('tasks', '?')}"])
    rows.append(["MOR/COW", *(f"{ratio(per['MOR'].get(p, 0.0), per['COW'].get(p, 0.0)):.2f}" for p in labels),
                 f"{r['updates']['mor_cow_ratio_median']:.2f}", ""])
    headers = ["table", *(f"{p} s" for p in labels), "total s", "Spark jobs/stages/tasks"]
    return headers, rows


def _compaction_rows(r: dict[str, Any]) -> list[list[str]]:
    c = r["compaction"]
    runs_p = ", ".join(f"{x:.2f}" for x in c["pyhudi_seconds_runs"])
    runs_b = ", ".join(f"{x:.2f}" for x in c["baseline_seconds_runs"])
    return [
        ["pyhudi.compact (Spark local[2])", runs_p, f"{c['pyhudi_seconds']:.2f}", f"{c['pyhudi_mb_per_s']:.1f}",
         "1.00", f"{c['pyhudi_cores_used']:.2f}", f"{c['pyhudi_mb_per_cpu_s']:.1f}"],
        ["pyarrow read-merge-write (1 process)", runs_b, f"{c['baseline_seconds']:.2f}",
         f"{c['baseline_mb_per_s']:.1f}", f"{c['baseline_over_pyhudi_throughput']:.2f}",
         f"{c['baseline_cores_used']:.2f}", f"{c['baseline_mb_per_cpu_s']:.1f}"],
    ]


_COMPACTION_HEADERS = ["system", "runs (s)", "median s", "MB/s", "throughput vs pyhudi", "cores used",
                       "MB per CPU-s"]


def _compaction_phases(r: dict[str, Any]) -> str:
    runs = r["compaction"].get("pyhudi_phases_runs") or []
    if not runs:
        return ""
    labels = list(runs[0])
    return ", ".join(f"{p} {median([x.get(p, 0.0) for x in runs]):.3f} s" for p in labels)


def _headline(r: dict[str, Any]) -> list[str]:
    u, c, cfg = r["updates"], r["compaction"], r["config"]
    return [
        f"Update latency, MOR/COW (median of per-batch ratios): **{u['mor_cow_ratio_median']:.2f}** "
        f"({cfg['rows']:,} rows, {cfg['batches']} batches x {cfg['update_fraction']:.0%} of keys updated; "
        f"median {u['cow_median_seconds']:.2f} s COW vs {u['mor_median_seconds']:.2f} s MOR)",
        f"Bytes written per batch, COW/MOR: **{ratio(u['cow_bytes_per_batch_median'], u['mor_bytes_per_batch_median']):.1f}x** "
        f"(write amplification COW {u['cow_write_amplification_median']:.1f}, "
        f"MOR {u['mor_write_amplification_median']:.2f})",
        f"Compaction throughput, pyarrow baseline / pyhudi: **{c['baseline_over_pyhudi_throughput']:.2f}** "
        f"({c['pyhudi_mb_per_s']:.1f} MB/s pyhudi on Spark local[2] vs {c['baseline_mb_per_s']:.1f} MB/s "
        f"single-process pyarrow, base+log input bytes)",
        f"Snapshot read + aggregate after the updates, MOR/COW: "
        f"**{r['snapshot_read_after_updates']['mor_cow_ratio']:.2f}**",
    ]


def _verdict(r: dict[str, Any]) -> str:
    v = r["verification"]
    return (f"updates {'OK' if v['updates_ok'] else 'FAILED'}, compaction {'OK' if v['compaction_ok'] else 'FAILED'}, "
            f"baseline output {'OK' if v['baseline_ok'] else 'FAILED'}")


def _history(r: dict[str, Any]) -> str:
    """Other saved runs of this benchmark (bench/results/mor_vs_cow-<ts>.json), newest first."""
    rows = []
    for path in sorted(common.RESULTS_DIR.glob(f"{NAME}-2*.json"), reverse=True):
        try:
            h = json.loads(path.read_text())
            cfg, u, c = h["config"], h["updates"], h["compaction"]
            rows.append([h["finished"][:16], f"{cfg['scale']:g}", f"{cfg['rows']:,}",
                         f"{u['mor_cow_ratio_median']:.2f}",
                         f"{ratio(u['cow_bytes_per_batch_median'], u['mor_bytes_per_batch_median']):.1f}",
                         f"{h['snapshot_read_after_updates']['mor_cow_ratio']:.2f}",
                         f"{c['baseline_over_pyhudi_throughput']:.2f}", f"{c['pyhudi_mb_per_s']:.1f}",
                         f"{h['load']['overall']['foreign_cores']:.2f}"])
        except (KeyError, ValueError, TypeError):
            continue
    if len(rows) < 2:
        return ""
    headers = ["run (UTC)", "scale", "rows", "update MOR/COW", "bytes COW/MOR", "read MOR/COW",
               "compaction pyarrow/pyhudi", "pyhudi MB/s", "foreign cores"]
    return ("**All saved runs** (`bench/results/`, newest first; the ratios are comparable across runs, the "
            "absolute MB/s only roughly):\n\n" + format_table(headers, rows, markdown=True) + "\n\n")


def render_text(r: dict[str, Any]) -> str:
    c, cfg, m = r["compaction"], r["config"], r["machine"]
    ph, prow = _phase_rows(r)
    lines = [f"== {TITLE} ==",
             f"machine: {m['cores']} cores ({m['cpu']}), Python {m['python']}, PySpark {m['pyspark']}, "
             f"pyarrow {m['pyarrow']}; {r['load']['note']}",
             f"table: {cfg['rows']:,} rows, {r['base_load']['COW']['files']} file groups, "
             f"{fmt_bytes(r['base_load']['COW']['bytes'])} ({r['stored_bytes_per_record']:.0f} B/record); "
             f"index {cfg['index']}; max file {fmt_bytes(cfg['max_file_size'])}",
             "", "Updates (pyhudi.write upsert; WA = bytes written / bytes of the update batch as snappy parquet):",
             format_table(_UPDATE_HEADERS, _update_rows(r)), "",
             "Where an upsert's time goes (median over batches; Spark counts of the last batch):",
             format_table(ph, prow), "",
             f"Compaction of {c['file_groups']} file groups ({c['log_files']} log files): input "
             f"{fmt_bytes(c['input_bytes'])} (base {fmt_bytes(c['input_base_bytes'])} + logs "
             f"{fmt_bytes(c['input_log_bytes'])}), output {fmt_bytes(c['output_bytes'])}",
             format_table(_COMPACTION_HEADERS, _compaction_rows(r)),
             f"  pyhudi phases (median): {_compaction_phases(r)}",
             f"  pyhudi includes: {c['pyhudi_includes']}",
             f"  baseline includes: {c['baseline_includes']}", "",
             *(h.replace("**", "") for h in _headline(r)),
             f"verification: {_verdict(r)}"]
    return "\n".join(lines)


def render_markdown(r: dict[str, Any]) -> str:
    c, cfg, u = r["compaction"], r["config"], r["updates"]
    headline = "\n".join(f"* {h}" for h in _headline(r))
    ph, prow = _phase_rows(r)
    mor_ph = _median_phases(u["batches"], "MOR")
    cow_ph = _median_phases(u["batches"], "COW")
    fixed_mor = mor_ph.get("count", 0.0) + mor_ph.get("index+profile", 0.0) + mor_ph.get("other", 0.0)
    reads = r["snapshot_read_after_updates"]
    return f"""\
What it answers: how much cheaper is an update batch on a merge-on-read table than on copy-on-write, what
does it cost in bytes written, and how fast is pyhudi's compaction compared with doing the same merge by
hand with pyarrow.

```bash
{r['command']}
```

{common.run_paragraph(r)}

**Headline (ratios, same run):**

{headline}

**Setup.** {cfg['rows']:,} generated trips ({cfg['schema']}), bulk-inserted once as COW and once as MOR:
{r['base_load']['COW']['files']} file groups, {fmt_bytes(r['base_load']['COW']['bytes'])}, \
{r['stored_bytes_per_record']:.0f} bytes per stored record (bloom filter footers included).
`hoodie.parquet.max.file.size` {fmt_bytes(cfg['max_file_size'])}, small-file limit
{fmt_bytes(cfg['small_file_limit'])}, index {cfg['index']}, snappy, MOR log data blocks in parquet. Then
{cfg['batches']} upsert batches, each updating {cfg['updated_rows_per_batch']:,} random existing keys
({cfg['update_fraction']:.0%}), identical for both tables; batches alternate which table is written first,
after an unmeasured warm-up on a tiny table.

**Update batches** (`pyhudi.write` wall time; written = the commit's `totalWriteBytes`; WA = write
amplification = bytes written / bytes of the batch's new record versions as snappy parquet without Hudi's
meta columns, {fmt_bytes(u['batches'][0]['update_input_bytes'])} per batch):

{format_table(_UPDATE_HEADERS, _update_rows(r), markdown=True)}

Where an upsert's time goes (median seconds per phase of `pyhudi.write`, measured by wrapping
`writer/client.py`'s steps; `count` = the per-partition count aggregation, `index+profile` = index lookup
and workload profile, `write files` = routing, shuffle and the write handles, `one-task write` = all of those
in one Spark task (a batch within `hoodie.pyhudi.write.single.task.max.bytes`), `other` = schema checks,
listing, planning, timeline and commit; Spark jobs/stages/tasks of the last batch):

{format_table(ph, prow, markdown=True)}

COW rewrites every file group an update touches (with {cfg['update_fraction']:.0%} random keys that is every
file group, so each batch rewrites the whole table); MOR appends one log file per touched file group holding
only the new record versions. Everything outside `write files` costs the same for both table types:
{fixed_mor:.2f} s of MOR's median {u['mor_median_seconds']:.2f} s (`write files`: {cow_ph.get('write files', 0.0):.2f} s
COW vs {mor_ph.get('write files', 0.0):.2f} s MOR). The largest shared part is the {cfg['index']} index
lookup, which reads the record keys of every base file in the touched partitions, so it grows with the
table, not with the batch. That is why the latency ratio stays far closer to 1 than the bytes ratio.
Reads pay the other side: reading the MOR table after {cfg['batches']} batches (merging
{cfg['batches']} log files per file group) took {reads['MOR_seconds']:.2f} s vs {reads['COW_seconds']:.2f} s
for COW, and {r['read_after_compaction_seconds']:.2f} s after compaction.

**Compaction** of {c['file_groups']} file groups with {c['log_files']} log files: input
{fmt_bytes(c['input_bytes'])} (base {fmt_bytes(c['input_base_bytes'])} + logs {fmt_bytes(c['input_log_bytes'])}),
output {fmt_bytes(c['output_bytes'])}; throughput = input bytes / wall time. pyhudi ran
{len(c['pyhudi_seconds_runs'])} times on byte-identical copies of the MOR table, the baseline before, between
and after them on the same file slices (inputs in the page cache); medians are used.

{format_table(_COMPACTION_HEADERS, _compaction_rows(r), markdown=True)}

The two are deliberately not alike: **pyhudi runs through Spark** (`{cfg['spark_master']}`, 2 executor
threads, one task per file group) and its time includes {c['pyhudi_includes']} (median split:
{_compaction_phases(r)}). **The baseline is one Python process** (pyarrow may still use its
thread pool to decode and encode parquet; `cores used` = CPU time / wall time of each side, for pyhudi
counting the driver, the JVM and the Python workers) that does: {c['baseline_includes']}.

{_history(r)}**Correctness** (checked in the run): after the updates COW, MOR and the expected rows agree on count,
distinct keys and a checksum of (uuid, ts); after compaction the MOR table and the baseline's output still
do: {_verdict(r)}.
"""


if __name__ == "__main__":
    sys.exit(main())
