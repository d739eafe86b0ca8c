"""The in-process engine on Arrow input (issue 17, item 5): pyhudi with no SparkSession against delta-rs
and against a raw pyarrow parquet write of the same data, all ratios from one run.

    .venv/bin/python bench/arrow_engine.py [--scale 1] [--runs 2] [--workloads stream,load,merge,memory]

Every measured write runs in a fresh child process (`bench/_arrow_child.py`) that first loads its input
into memory as an Arrow table (not measured), so each write's peak memory is its own (RSS high-water
mark reset before the write, and Arrow's allocator sampled every 5 ms). Between runs the previous
output is flushed to disk (`common.settle`), outside the timing. Workloads:

1. stream: the small-batches workload of `bench/small_batches.py` (same generator and flags: 16 insert
   batches, then 16 with 10 % updates, 20k rows each, max file 8 MB), each batch read from its staged
   parquet with pyarrow inside the timed region and written by every system in rotating order, in one
   long-lived process (after an unmeasured tiny stream): pyhudi COW with auto-sizing, pyhudi MOR (+ a
   final `pyhudi.compact(None, ...)`), pyhudi COW with inline clustering (+ a final
   `pyhudi.cluster(None, ...)`), pyhudi MOR with the default SIMPLE index, auto-sizing, inline compaction
   and inline clustering (issue 19: no maintenance at the end; its log bytes count as not well sized), and
   delta-rs (`write_deltalake` append, then `merge`, +
   `optimize.compact(target_size)`). End-to-end = ingest + maintenance; final files against the
   small-file limit and 1.1 x max.
2. load: the large load of `bench/large_load.py` (2M generated trips, partitioned by city, staged as 8
   parquet files), as an Arrow table in memory, into: raw `pyarrow.parquet.write_table` (split by city,
   snappy, 1 MB pages, at most max-size worth of rows per file in one row group; on the local engine's
   number of threads, and on one; and of the same content as pyhudi's files, the five meta columns built
   before the timing: the Hudi-format limit), delta-rs `write_deltalake` (partitioned by city,
   `target_file_size` = the max file size), pyhudi bulk_insert (also with
   `hoodie.populate.meta.fields=false`), insert (auto-sizing) and upsert into a new table (issue 31).
3. merge: an upsert batch (100k rows, 10 % of them updates of random existing keys, the rest new) into a
   1M-row table partitioned by city (pyhudi: built by bulk_insert; delta-rs: by write_deltalake), pyhudi
   upsert vs delta-rs `merge(...).when_matched_update_all().when_not_matched_insert_all()`; each run on a
   fresh copy of the table.
4. memory: the same 1,000-row upsert (half updates, half inserts, all in partition p000) into a table of
   4 partitions and into one of 20 (the first 4 identical): the write's peak memory and time should
   follow the file groups it touches, not the table.

Correctness: every pyhudi table is read back with hudi-rs and compared (keys and versions) with the
expected rows; delta-rs tables with delta-rs; raw outputs by row count.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _tables  # noqa: E402
import common  # noqa: E402
import small_batches  # noqa: E402
from _arrow_engine_report import NAME, TITLE, headline, render_markdown, render_text  # noqa: E402
from common import MB, fmt_bytes, median  # noqa: E402

CHILD = Path(__file__).resolve().parent / "_arrow_child.py"
WORKLOADS = ("load", "merge", "memory", "stream")
STREAM_SYSTEMS = ("cow", "mor", "cow_cluster", "mor_services", "delta")
LOAD_SYSTEMS = ("raw", "raw_1", "raw_meta", "delta", "bulk_insert", "bulk_insert_nometa", "insert", "upsert")
LOAD_LABELS = {"raw": "raw pyarrow write_table ({t} threads)", "raw_1": "raw pyarrow write_table (1 thread)",
               "raw_meta": "raw pyarrow write_table ({t} threads) of the same columns as pyhudi's files "
                           "(the 5 meta columns built before the timing)",
               "delta": "delta-rs write_deltalake (partitioned by city, target_file_size = max file size)",
               "bulk_insert": "pyhudi bulk_insert",
               "bulk_insert_nometa": "pyhudi bulk_insert, hoodie.populate.meta.fields=false",
               "insert": "pyhudi insert (auto-sized)",
               "upsert": "pyhudi upsert (new table)"}
STREAM_LABELS = {"cow": "pyhudi COW auto-sized", "mor": "pyhudi MOR + compact", "cow_cluster":
                 "pyhudi COW + clustering", "mor_services": "pyhudi MOR + inline compaction + clustering",
                 "delta": "delta-rs append/merge + optimize"}
STREAM_WHAT = {"cow": "none (auto-sizing at write time)", "mor": "pyhudi.compact(None, ...)",
               "cow_cluster": "inline clustering + one pyhudi.cluster(None, ...)",
               "mor_services": "none (inline compaction and clustering)"}


# --------------------------------------------------------------------------- child processes


class Children:
    """Runs `_arrow_child.py` specs; with a profile directory, pyhudi writes run under py-spy."""

    def __init__(self, work: Path, profile_dir: str | None) -> None:
        self.specs = work / "specs"
        self.specs.mkdir(parents=True, exist_ok=True)
        self.profile_dir = profile_dir
        self.count = 0

    def run(self, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        self.count += 1
        spec_file = self.specs / f"{self.count:03d}-{name}.json"
        result_file = self.specs / f"{self.count:03d}-{name}.result.json"
        spec_file.write_text(json.dumps({**spec, "result": str(result_file)}))
        cmd = [sys.executable, str(CHILD), str(spec_file)]
        if self.profile_dir and spec["kind"] in ("pyhudi", "stream"):
            out = Path(self.profile_dir) / f"{self.count:03d}-{name}.txt"
            cmd = [str(Path(sys.executable).parent / "py-spy"), "record", "--format", "raw", "--rate", "200",
                   "--threads", "-o", str(out), "--", *cmd]
        proc = subprocess.run(cmd, capture_output=spec["kind"] != "stream", text=True, timeout=3600)
        if not result_file.exists():
            raise RuntimeError(f"child {name} wrote no result (rc {proc.returncode}): {proc.stderr[-3000:]}")
        result: dict[str, Any] = json.loads(result_file.read_text())
        if "error" in result:
            print(f"  {name}: ERROR {result['error']}", file=sys.stderr)
            if proc.stderr:
                print(proc.stderr[-3000:], file=sys.stderr)
        return result


def fresh(path: Path) -> str:
    shutil.rmtree(path, ignore_errors=True)
    return str(path)


def copy_table(src: Path, dst: Path) -> str:
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    return str(dst)


def hudi_options(args: Any, table: str, operation: str, partition: str, max_file_size: int) -> dict[str, str]:
    opts = {
        "hoodie.table.name": table,
        "hoodie.datasource.write.recordkey.field": "uuid",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": partition,
        "hoodie.datasource.write.operation": operation,
        "hoodie.parquet.max.file.size": str(max_file_size),
    }
    if args.parallelism:
        opts["hoodie.pyhudi.engine.local.parallelism"] = str(args.parallelism)
    return {**opts, **common.hudi_extra_options(args)}


def local_threads(args: Any) -> int:
    """The local engine's pool size: the option, else the cores capped at 8 (pyhudi's default)."""
    return int(args.parallelism) or min(os.cpu_count() or 1, 8)


# --------------------------------------------------------------------------- correctness


def keys_of(t: pa.Table | None) -> pa.Table:
    if t is None:
        return pa.table({"uuid": pa.array([], pa.string()), "ts": pa.array([], pa.int64())})
    out = pa.table({"uuid": t.column("uuid").cast(pa.string()), "ts": t.column("ts").cast(pa.int64())})
    return out.sort_by([("uuid", "ascending")])


def check_keys(name: str, got: pa.Table | None, expected: pa.Table, problems: list[str]) -> bool:
    """`got` holds exactly `expected`'s (uuid, ts) rows (each key once, at its latest version)."""
    g, e = keys_of(got), keys_of(expected)
    ok = g.num_rows == e.num_rows and g.equals(e)
    if not ok:
        problems.append(f"{name}: {g.num_rows} rows read, expected {e.num_rows} (keys/versions differ)")
    return ok


def hudi_rs_table(path: str) -> pa.Table | None:
    sys.path.insert(0, str(common.REPO_DIR))
    from tests.helpers import hudi_rs

    return hudi_rs(path)


def delta_table(path: str) -> pa.Table:
    from deltalake import DeltaTable

    return DeltaTable(path).to_pyarrow_dataset().to_table(columns=["uuid", "ts"])


def file_summary(path: str, kind: str, small_limit: int, max_size: int) -> dict[str, Any]:
    files = (_tables.hudi_live_files(path)["base"] if kind == "hudi" else
             _tables.delta_live_files(path) if kind == "delta" else _tables.parquet_files(path))
    return _tables.size_summary(files, path, small_limit, max_size)


def well_sized_with_logs(files: dict[str, Any]) -> float:
    """Share of bytes well sized when the live log files count as bytes not (yet) in well-sized base files:
    a merge-on-read table is well sized only once its logs are compacted."""
    total = files.get("total", 0) + files.get("log_bytes", 0)
    return 100.0 * files.get("well_sized_bytes", 0) / total if total else float("nan")


# --------------------------------------------------------------------------- probe: no pyspark


def run_probe(args: Any, work: Path, children: Children) -> dict[str, Any]:
    """Tiny in-process writes of each operation, compaction and clustering in a child with nothing else
    loaded: the measured children time pyhudi's steps by wrapping them, which imports their modules."""
    staged = common.write_staging(common.trips(2000, args.seed + 5), work / "probe" / "input", files=1)

    def opts(op: str, table_type: str = "COPY_ON_WRITE", **extra: str) -> dict[str, str]:
        return {**hudi_options(args, "probe", op, "city", 8 * MB),
                "hoodie.datasource.write.table.type": table_type, **extra}

    writes = [("cow", opts("insert"), None), ("cow", opts("upsert"), None), ("bulk", opts("bulk_insert"), None),
              ("mor", opts("upsert", "MERGE_ON_READ"), None), ("mor", opts("upsert", "MERGE_ON_READ"), "compact"),
              ("clu", opts("insert", **{"hoodie.parquet.small.file.limit": "0"}), None),
              ("clu", opts("insert", **{"hoodie.parquet.small.file.limit": "0"}), "cluster")]
    res = children.run("probe", {"kind": "probe", "input": staged, "out": fresh(work / "probe" / "tables"),
                                 "writes": writes})
    print(f"probe: pyspark imported: {res.get('pyspark_imported')}; writes {res.get('writes')}")
    if res.get("first_import"):
        print("  first pyspark import from: " + " <- ".join(reversed(res["first_import"])))
    return res


# --------------------------------------------------------------------------- workload: stream


def stream_args(args: Any) -> argparse.Namespace:
    """small_batches.py's flags, so the batches are the same as the Spark benchmark's."""
    ns = argparse.Namespace(**vars(args))
    ns.partitioned = args.partitioned
    return ns


def stream_systems(args: Any, keys: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for key in keys:
        if key == "delta":
            out[key] = {"kind": "delta", "label": STREAM_LABELS[key], "target_size": args.max_file_size,
                        "partition_by": "city" if args.partitioned else None,
                        "what": "optimize.compact(target_size=max file size)"}
            continue
        opts = small_batches.hudi_options(key, args)
        if args.parallelism:
            opts["hoodie.pyhudi.engine.local.parallelism"] = str(args.parallelism)
        out[key] = {"kind": "pyhudi", "label": STREAM_LABELS[key], "options": opts, "what": STREAM_WHAT[key],
                    "maintenance": small_batches.MAINTENANCE[key]}
    return out


def run_stream(args: Any, work: Path, children: Children, problems: list[str]) -> dict[str, Any]:
    sargs = stream_args(args)
    batches, expected = small_batches.generate(sargs, work / "stream")
    tiny = argparse.Namespace(**{**vars(sargs), "rows_per_batch": 2000, "insert_batches": 2, "upsert_batches": 2,
                                 "cluster_every": 2})
    warm, _ = small_batches.generate(tiny, work / "stream-warm")
    keys = [k for k in args.stream_systems.split(",") if k]
    spec = {"kind": "stream", "systems": stream_systems(sargs, keys), "root": fresh(work / "stream" / "tables"),
            "warm_root": fresh(work / "stream-warm" / "tables"),
            "batches": [vars(b) for b in batches], "warm": [vars(b) for b in warm],
            "input": "", "out": ""}
    k_ins, k_upd = small_batches.phase_batches(sargs)
    print(f"stream: {k_ins} insert + {k_upd} upsert batches of {args.rows_per_batch:,} rows into {', '.join(keys)}")
    res = children.run("stream", spec)
    root = spec["root"]
    systems: dict[str, Any] = {}
    for key in keys:
        path = os.path.join(root, key)
        err = (res.get("errors") or {}).get(key) or res.get("error")
        cells = [b["systems"][key] for b in res.get("batches", []) if key in b["systems"]]
        s: dict[str, Any] = {"label": STREAM_LABELS[key], "error": err}
        for phase in ("insert", "upsert"):
            sel = [b["systems"][key] for b in res.get("batches", []) if b["phase"] == phase and key in b["systems"]]
            s[phase] = {"batches": len(sel), "seconds": sum(c["seconds"] for c in sel),
                        "median_seconds": median([c["seconds"] for c in sel]),
                        "median_rss_peak_delta": median([c["rss_peak_delta"] for c in sel]),
                        "max_rss_peak": max([c["rss_peak"] for c in sel], default=0),
                        "bytes_written": sum(c.get("bytes_written", 0) for c in sel)}
        m = (res.get("maintenance") or {}).get(key, {})
        s["maintenance"] = {"seconds": m.get("seconds", 0.0) if m.get("ran") else 0.0, "what": spec["systems"][key]["what"],
                            "ran": bool(m.get("ran"))}
        s["ingest_seconds"] = s["insert"]["seconds"] + s["upsert"]["seconds"]
        s["end_to_end_seconds"] = s["ingest_seconds"] + s["maintenance"]["seconds"]
        s["phases"] = {ph: _median_phases([b["systems"][key] for b in res.get("batches", [])
                                           if b["phase"] == ph and key in b["systems"]]) for ph in ("insert", "upsert")}
        if not err and os.path.exists(path):
            s["final_files"] = file_summary(path, "delta" if key == "delta" else "hudi", args.small_file_limit,
                                            args.max_file_size)
            logs = [] if key == "delta" else _tables.hudi_live_files(path)["log"]
            s["log_files"] = len(logs)
            s["final_files"]["log_bytes"] = sum(size for _, size in logs)
            s["final_files"]["well_sized_pct_with_logs"] = well_sized_with_logs(s["final_files"])
            got = delta_table(path) if key == "delta" else hudi_rs_table(path)
            s["keys_ok"] = check_keys(f"stream {key}", got, expected, problems)
            s["bytes_written"] = (res.get("bytes_written") or {}).get(key, {})
        elif err:
            problems.append(f"stream {key}: {err}")
        s["batches_done"] = len(cells)
        systems[key] = s
    return {"systems": systems,
            "phase_targets_missing": res.get("phase_targets_missing"),
            "batches": res.get("batches"), "config": {
                "insert_batches": k_ins, "upsert_batches": k_upd, "rows_per_batch": args.rows_per_batch,
                "update_fraction": args.update_fraction, "update_window": args.update_window,
                "max_file_size": args.max_file_size, "small_file_limit": args.small_file_limit,
                "cluster_every": args.cluster_every, "cluster_group_bytes": args.cluster_group_bytes,
                "compact_every": args.compact_every,
                "partitioned": args.partitioned, "final_keys": expected.num_rows,
                "staged_bytes": sum(b.staged_bytes for b in batches)}}


def _median_phases(cells: list[dict[str, Any]]) -> dict[str, float]:
    sel = [c["phases"] for c in cells if "phases" in c]
    labels = list(dict.fromkeys(lbl for p in sel for lbl in p))
    return {lbl: median([p.get(lbl, 0.0) for p in sel]) for lbl in labels}


# --------------------------------------------------------------------------- workload: large load


def run_load(args: Any, work: Path, children: Children, problems: list[str]) -> dict[str, Any]:
    n = common.rows_for(args.scale, args.load_rows)
    staged = common.write_staging(common.trips(n, args.seed), work / "load" / "input", files=8)
    staged_bytes = common.dir_bytes(staged)
    rows_per_file = max(1000, int(args.load_max_file_size / (staged_bytes / n)))
    threads = local_threads(args)
    _tables.warm_page_cache(staged)
    print(f"load: {n:,} rows ({fmt_bytes(staged_bytes)} staged), raw rows per file {rows_per_file:,}, "
          f"{threads} threads")
    keys = [k for k in args.load_systems.split(",") if k]

    def spec(key: str, out: str) -> dict[str, Any]:
        if key.startswith("raw"):
            return {"kind": "raw", "input": staged, "out": out, "partition": "city", "rows_per_file": rows_per_file,
                    "threads": 1 if key == "raw_1" else threads, "page_size": 1 << 20,
                    "with_meta": key == "raw_meta"}
        if key == "delta":  # the other table format a user would pick, on the same Arrow table
            return {"kind": "delta_write", "input": staged, "out": out, "partition_by": ["city"],
                    "target_file_size": args.load_max_file_size}
        if key == "bulk_insert_nometa":  # what the meta columns and the bloom filter cost
            return {"kind": "pyhudi", "input": staged, "out": out, "phases": True,
                    "options": {**hudi_options(args, "trips_load", "bulk_insert", "city", args.load_max_file_size),
                                "hoodie.populate.meta.fields": "false"}}
        return {"kind": "pyhudi", "input": staged, "out": out, "phases": True,
                "options": hudi_options(args, "trips_load", key, "city", args.load_max_file_size)}

    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in keys}
    for r in range(args.runs):
        order = keys[r % len(keys):] + keys[: r % len(keys)]
        for key in order:
            out = fresh(work / "load" / "out" / key)
            common.settle()
            cell = children.run(f"load-{key}-{r + 1}", spec(key, out))
            runs[key].append(cell)
            if "error" in cell:
                problems.append(f"load {key}: {cell['error']}")
                continue
            print(f"  run {r + 1} {key}: {cell['seconds']:.2f} s, {n / cell['seconds']:,.0f} rows/s, "
                  f"peak RSS +{fmt_bytes(cell['rss_peak_delta'])}, Arrow peak +{fmt_bytes(cell['arrow_peak_delta'])}")
    systems: dict[str, Any] = {}
    for key in keys:
        out = str(work / "load" / "out" / key)
        ok_runs = [c for c in runs[key] if "error" not in c]
        s = summarize_runs(ok_runs, n, staged_bytes)
        s["label"] = LOAD_LABELS[key].format(t=threads)
        s["errors"] = [c["error"] for c in runs[key] if "error" in c]
        if ok_runs and os.path.exists(out):
            if key == "delta":
                got = delta_table(out)
                s["rows_verified"] = got.num_rows
                s["keys_ok"] = _distinct_ok(f"load {key}", got, n, problems, reader="delta-rs")
                s["output"] = file_summary(out, "delta", 0, args.load_max_file_size)
            elif key.startswith("raw"):
                import pyarrow.dataset as ds

                s["rows_verified"] = ds.dataset(out, format="parquet").count_rows()
                if s["rows_verified"] != n:
                    problems.append(f"load {key}: {s['rows_verified']} rows, expected {n}")
                s["output"] = file_summary(out, "parquet", 0, args.load_max_file_size)
            else:
                got = hudi_rs_table(out)
                s["rows_verified"] = got.num_rows if got is not None else 0
                s["keys_ok"] = _distinct_ok(f"load {key}", got, n, problems)
                s["output"] = file_summary(out, "hudi", 0, args.load_max_file_size)
        systems[key] = s
    return {"systems": systems, "config": {"rows": n, "staged_bytes": staged_bytes, "raw_rows_per_file": rows_per_file,
                                           "threads": threads, "max_file_size": args.load_max_file_size},
            "runs": runs}


def _distinct_ok(name: str, got: pa.Table | None, n: int, problems: list[str], reader: str = "hudi-rs") -> bool:
    import pyarrow.compute as pc

    rows = got.num_rows if got is not None else 0
    distinct = pc.count_distinct(got.column("uuid")).as_py() if got is not None else 0
    if rows != n or distinct != n:
        problems.append(f"{name}: {reader} read {rows} rows, {distinct} distinct keys, expected {n}")
        return False
    return True


def summarize_runs(runs: list[dict[str, Any]], n: int, staged_bytes: int) -> dict[str, Any]:
    if not runs:
        return {"seconds": float("nan"), "seconds_runs": []}
    secs = median([c["seconds"] for c in runs])
    out: dict[str, Any] = {
        "seconds_runs": [c["seconds"] for c in runs], "seconds": secs, "rows_per_s": n / secs,
        "mb_per_s": staged_bytes / MB / secs, "cores_used": median([c["cpu_seconds"] / c["seconds"] for c in runs]),
        "rss_peak_delta": max(c["rss_peak_delta"] for c in runs), "rss_peak": max(c["rss_peak"] for c in runs),
        "arrow_peak_delta": max(c["arrow_peak_delta"] for c in runs),
        "input_bytes_in_memory": runs[0].get("input_bytes_in_memory"),
    }
    phased = [c["phases"] for c in runs if "phases" in c]
    if phased:
        labels = list(dict.fromkeys(lbl for p in phased for lbl in p))
        out["phases"] = {lbl: median([p.get(lbl, 0.0) for p in phased]) for lbl in labels}
    return out


# --------------------------------------------------------------------------- workload: merge


def _upsert_batch(base: pa.Table, rows: int, update_fraction: float, seed: int,
                  mask: np.ndarray | None = None) -> tuple[pa.Table, pa.Table]:
    """`rows` rows: `update_fraction` of them new versions of random keys of `base` (only rows where
    `mask` holds, if given), the rest new keys (in the same partitions as the updates when masked).
    Returns (batch, expected table after the upsert)."""
    rng = np.random.default_rng([seed, 17])
    n_upd = int(round(rows * update_fraction))
    eligible = np.flatnonzero(mask) if mask is not None else np.arange(base.num_rows)
    picked = np.sort(rng.choice(eligible, size=n_upd, replace=False))
    upd = common.updated_trips(base, picked, 1, seed)
    new = common.trips(rows - n_upd, seed * 7 + 3)
    if "part" in base.column_names:
        part = base.column("part")[int(picked[0])].as_py() if n_upd else base.column("part")[0].as_py()
        new = new.append_column("part", pa.array([part] * new.num_rows, pa.string()))
    batch = pa.concat_tables([upd, new.select(upd.column_names)])
    expected = pa.concat_tables([common.apply_updates(base, picked, upd), new.select(upd.column_names)])
    return batch, expected


def run_merge(args: Any, work: Path, children: Children, problems: list[str]) -> dict[str, Any]:
    n = common.rows_for(args.scale, args.merge_base_rows)
    b = common.rows_for(args.scale, args.merge_batch_rows, minimum=100)
    base = common.trips(n, args.seed + 11)
    batch, expected = _upsert_batch(base, b, args.merge_update_fraction, args.seed)
    base_dir = common.write_staging(base, work / "merge" / "base-input", files=4)
    batch_dir = common.write_staging(batch, work / "merge" / "batch-input", files=1)
    print(f"merge: {b:,}-row batch ({args.merge_update_fraction:.0%} updates) into {n:,} rows")
    opts = hudi_options(args, "trips_merge", "bulk_insert", "city", args.load_max_file_size)
    built = {"hudi": children.run("merge-build-hudi", {"kind": "pyhudi", "input": base_dir, "options": opts,
                                                        "out": fresh(work / "merge" / "hudi-base")}),
             "delta": children.run("merge-build-delta", {"kind": "delta_write", "input": base_dir,
                                                          "partition_by": ["city"],
                                                          "out": fresh(work / "merge" / "delta-base")})}
    for k, c in built.items():
        if "error" in c:
            problems.append(f"merge: building the {k} table failed: {c['error']}")
            return {"error": c["error"]}
    keys = ["pyhudi", "delta"]
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in keys}
    upsert = {**opts, "hoodie.datasource.write.operation": "upsert"}
    for r in range(args.runs):
        for key in keys if r % 2 == 0 else keys[::-1]:
            if key == "pyhudi":
                out = copy_table(work / "merge" / "hudi-base", work / "merge" / "hudi-run")
                spec = {"kind": "pyhudi", "input": batch_dir, "out": out, "options": upsert, "phases": True}
            else:
                out = copy_table(work / "merge" / "delta-base", work / "merge" / "delta-run")
                spec = {"kind": "delta_merge", "input": batch_dir, "out": out}
            common.settle()
            cell = children.run(f"merge-{key}-{r + 1}", spec)
            runs[key].append(cell)
            if "error" in cell:
                problems.append(f"merge {key}: {cell['error']}")
                continue
            print(f"  run {r + 1} {key}: {cell['seconds']:.2f} s, peak RSS +{fmt_bytes(cell['rss_peak_delta'])}")
    systems = {k: summarize_runs([c for c in runs[k] if "error" not in c], b, common.dir_bytes(batch_dir))
               for k in keys}
    if runs["pyhudi"] and "error" not in runs["pyhudi"][-1]:
        systems["pyhudi"]["keys_ok"] = check_keys("merge pyhudi", hudi_rs_table(str(work / "merge" / "hudi-run")),
                                                  expected, problems)
        systems["pyhudi"]["files"] = file_summary(str(work / "merge" / "hudi-run"), "hudi", 0, args.load_max_file_size)
    if runs["delta"] and "error" not in runs["delta"][-1]:
        systems["delta"]["keys_ok"] = check_keys("merge delta", delta_table(str(work / "merge" / "delta-run")),
                                                 expected, problems)
        systems["delta"]["files"] = file_summary(str(work / "merge" / "delta-run"), "delta", 0, args.load_max_file_size)
    systems["pyhudi"]["label"], systems["delta"]["label"] = "pyhudi upsert", "delta-rs merge"
    return {"systems": systems, "runs": runs, "config": {
        "base_rows": n, "batch_rows": b, "update_fraction": args.merge_update_fraction,
        "base_files": {"hudi": file_summary(str(work / "merge" / "hudi-base"), "hudi", 0, args.load_max_file_size),
                       "delta": file_summary(str(work / "merge" / "delta-base"), "delta", 0, args.load_max_file_size)}}}


# --------------------------------------------------------------------------- workload: memory


def run_memory(args: Any, work: Path, children: Children, problems: list[str]) -> dict[str, Any]:
    per = common.rows_for(args.scale, args.memory_partition_rows)
    k_small, factor = 4, 5
    big = common.trips(per * k_small * factor, args.seed + 23)
    big = big.append_column("part", pa.array([f"p{i // per:03d}" for i in range(big.num_rows)], pa.string()))
    tables = {"small": big.slice(0, per * k_small), "large": big}
    mask = np.zeros(per * k_small, dtype=bool)
    mask[:per] = True  # partition p000
    opts = hudi_options(args, "trips_mem", "bulk_insert", "part", args.load_max_file_size)
    built: dict[str, pa.Table] = {}
    for name, t in tables.items():
        batch, expected = _upsert_batch(t, args.memory_batch_rows, 0.5, args.seed,
                                        np.pad(mask, (0, t.num_rows - len(mask))))
        built[name] = expected
        staged = common.write_staging(t, work / "memory" / f"{name}-input", files=4)
        c = children.run(f"memory-build-{name}", {"kind": "pyhudi", "input": staged, "options": opts,
                                                  "out": fresh(work / "memory" / f"{name}-base")})
        if "error" in c:
            problems.append(f"memory: building the {name} table failed: {c['error']}")
            return {"error": c["error"]}
        common.write_staging(batch, work / "memory" / f"batch-{name}", files=1)
    print(f"memory: {args.memory_batch_rows:,}-row upsert into partition p000 of {k_small} vs "
          f"{k_small * factor} partitions of {per:,} rows")
    upsert = {**opts, "hoodie.datasource.write.operation": "upsert"}
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in tables}
    for r in range(args.runs):
        for name in ("small", "large") if r % 2 == 0 else ("large", "small"):
            out = copy_table(work / "memory" / f"{name}-base", work / "memory" / f"{name}-run")
            common.settle()
            cell = children.run(f"memory-{name}-{r + 1}", {"kind": "pyhudi", "input": str(work / "memory" / f"batch-{name}"),
                                                           "out": out, "options": upsert, "phases": True})
            runs[name].append(cell)
            if "error" in cell:
                problems.append(f"memory {name}: {cell['error']}")
                continue
            print(f"  run {r + 1} {name}: {cell['seconds']:.2f} s, peak RSS +{fmt_bytes(cell['rss_peak_delta'])}, "
                  f"Arrow peak +{fmt_bytes(cell['arrow_peak_delta'])}")
    systems: dict[str, Any] = {}
    for name, t in tables.items():
        ok = [c for c in runs[name] if "error" not in c]
        s = summarize_runs(ok, args.memory_batch_rows, 1)
        s["table_rows"], s["partitions"] = t.num_rows, t.num_rows // per
        if ok:
            s["keys_ok"] = check_keys(f"memory {name}", hudi_rs_table(str(work / "memory" / f"{name}-run")),
                                      built[name], problems)
            s["table_files"] = file_summary(str(work / "memory" / f"{name}-base"), "hudi", 0, args.load_max_file_size)
        systems[name] = s
    return {"systems": systems, "runs": runs, "config": {"partition_rows": per, "batch_rows": args.memory_batch_rows,
                                                         "small_partitions": k_small, "factor": factor}}


# --------------------------------------------------------------------------- main


def parse_args() -> argparse.Namespace:
    p = common.base_parser(__doc__.split("\n\n")[0], 2_000_000)
    p.add_argument("--workloads", default=",".join(WORKLOADS), help="subset of " + ",".join(WORKLOADS))
    p.add_argument("--runs", type=int, default=2, help="runs of every load/merge/memory measurement (median)")
    p.add_argument("--parallelism", type=int, default=0,
                   help="hoodie.pyhudi.engine.local.parallelism (0 = pyhudi's default: cores capped at 8); "
                        "raw pyarrow uses as many threads")
    p.add_argument("--profile-dir", default=None,
                   help="run every pyhudi write under `py-spy record --format raw` into this directory "
                        "(distorts the times: use with --no-save)")
    # stream (small_batches.py's flags and defaults)
    p.add_argument("--rows-per-batch", type=int, default=20000)
    p.add_argument("--insert-batches", type=int, default=None)
    p.add_argument("--upsert-batches", type=int, default=None)
    p.add_argument("--update-fraction", type=float, default=0.10)
    p.add_argument("--update-window", type=int, default=4)
    p.add_argument("--max-file-size", type=int, default=8 * MB, help="stream: max file size (and delta's target)")
    p.add_argument("--small-file-limit", type=int, default=None, help="stream: default 100/120 of the max size")
    p.add_argument("--cluster-every", type=int, default=4)
    p.add_argument("--compact-every", type=int, default=5, help="MOR + services: inline compaction every N deltacommits")
    p.add_argument("--cluster-group-bytes", type=int, default=None)
    p.add_argument("--partitioned", action="store_true")
    p.add_argument("--stream-systems", default=",".join(STREAM_SYSTEMS))
    # load / merge / memory
    p.add_argument("--load-rows", type=int, default=2_000_000, help="large load rows at --scale 1 (large_load.py's)")
    p.add_argument("--load-max-file-size", type=int, default=120 * MB, help="max file size of load/merge/memory")
    p.add_argument("--load-systems", default=",".join(LOAD_SYSTEMS))
    p.add_argument("--merge-base-rows", type=int, default=1_000_000)
    p.add_argument("--merge-batch-rows", type=int, default=100_000)
    p.add_argument("--merge-update-fraction", type=float, default=0.10)
    p.add_argument("--memory-partition-rows", type=int, default=50_000)
    p.add_argument("--memory-batch-rows", type=int, default=1000)
    common.add_hudi_option_flag(p)
    args = p.parse_args()
    if args.small_file_limit is None:
        args.small_file_limit = args.max_file_size * 100 // 120
    if args.cluster_group_bytes is None:
        args.cluster_group_bytes = 2 * args.max_file_size
    return args


def main() -> int:
    args = parse_args()
    workloads = [w for w in args.workloads.split(",") if w]
    if any(w not in WORKLOADS for w in workloads):
        raise SystemExit(f"--workloads must be a subset of {','.join(WORKLOADS)}")
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="pyhudi-bench-arrow-"))
    if args.profile_dir:
        Path(args.profile_dir).mkdir(parents=True, exist_ok=True)
    children = Children(work, args.profile_dir)
    monitor = common.LoadMonitor().start()
    started = common.now_utc()
    print(f"pyhudi bench {NAME}: workloads {', '.join(workloads)}; work dir {work}")
    problems: list[str] = []
    out: dict[str, Any] = {"probe": run_probe(args, work, children)}
    runners = {"load": run_load, "merge": run_merge, "memory": run_memory, "stream": run_stream}
    for w in workloads:
        with monitor.phase(w):
            out["large_load" if w == "load" else w] = runners[w](args, work, children, problems)
    monitor.stop()
    results: dict[str, Any] = {
        "benchmark": NAME, "started": started, "finished": common.now_utc(), "command": common.command_line(),
        "machine": common.machine_info(), "load": monitor.report(),
        "config": {"scale": args.scale, "runs": args.runs, "seed": args.seed, "workloads": workloads,
                   "local_parallelism": local_threads(args), "spark_master": "none (in-process)",
                   "schema": common.TRIPS_COLUMNS, "hudi_extra_options": common.hudi_extra_options(args)},
        **out,
        "verification": {"ok": not problems, "problems": problems},
    }
    results["headline"], results["targets"] = headline(results)
    return common.finish(NAME, TITLE, results, render_text, render_markdown, args, work, problems)


if __name__ == "__main__":
    sys.exit(main())
