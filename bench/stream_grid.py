"""Arrow streams against delta-rs on every shape (issue 31, item 2): a grid of stream shapes, pyhudi's
in-process engine and delta-rs on the same batches, interleaved, in one run.

    .venv/bin/python bench/stream_grid.py [--quick] [--cells 'p300-*-s1MB-*'] [--rows-per-batch 20000]

Grid (168 cells by default): partitions 1, 3, 30, 300 x updates per batch 0 %, 10 %, 20 %, 50 %, drawn
from recent keys (the last 4 batches) or from all keys (0 % is one shape, not two) x target file size
1 MB, 8 MB, 128 MB x pyhudi copy-on-write (auto-sizing) and merge-on-read with inline compaction
(`hoodie.compact.inline.max.delta.commits`, Hudi's default 5).

Per (partitions, updates, window, size) group, one stream of `--batches` (5) batches of `--rows-per-batch` (20,000)
rows (small_batches.py's generator; `_stream_grid_data.py` adds the `part` column) goes into pyhudi COW,
pyhudi MOR and delta-rs, batch by batch in rotating order, all in this one process (no Spark; an
unmeasured small streams warm every system's code paths first: `warm_up`). Every batch is read from its staged parquet with
pyarrow inside the timed region by every system. pyhudi: `insert` for a batch without updates, `upsert`
otherwise, `hoodie.parquet.max.file.size` = size, `hoodie.parquet.small.file.limit` = 100/120 of it
(as the other stream benchmarks), Hudi's defaults for the rest (index, bloom filter, inline cleaner).
delta-rs: `write_deltalake` append for a batch without updates, `merge` (update all when matched, insert
all when not) otherwise, `target_file_size` and `delta.targetFileSize` = size, and
`optimize.compact(target_size=size)` once at the end (`--delta-optimize-every N`: also every N batches)
- its cheapest cadence, like the Arrow-engine stream's figure. End-to-end time = the sum of the writes
+ maintenance (delta's optimize; pyhudi's compaction and cleaning run inside its writes). Ratio =
pyhudi end-to-end / delta-rs end-to-end of the same group.

Sizing: pyhudi's live base files against the small-file limit and 1.1 x max (live log bytes count as not
well sized); the largest small file of each partition is its one open file and is left out of the
denominator, since a partition holding less than one full file cannot be well sized; `open small
files per partition` = the most small base files any partition holds. With 128 MB files (and with
8 MB files over many partitions) no partition reaches one full file in a run this short: those cells
measure write cost only, their sizing is `n/a`.

Passes: every group runs `--passes` (2) times, the second pass in reverse order, and each system's
fastest pass counts (delta-rs' time for the same 300-partition stream moved between 1.3 and 3.0 s with its
place in a long run).

Deletes: an earlier group's tables, the floor's scratch files and staging copies no later group uses are
moved aside and deleted when the run ends (`discard`). Deleted before the next group, they slowed its file
creations: this VM's ext4 skips inodes freed in the last minute when it allocates one, so a file creation
took 0.09-0.8 ms after thousands of deletes against 0.012 ms without. The price is disk: a full run holds
its tables, 20-30 GB, until it ends.

Format floor (`_format_floor.py`): after a group's first pass, raw pyarrow reads the stream's inputs and
writes the files each pyhudi table holds again (each base file version re-encoded with its own encoding
choices after reading the version a merge keeps, the other files copied), on two threads: the cost of the
Hudi format's bytes and files alone, without anything pyhudi decides. A missed cell whose floor is above
its limit is stopped by the format on pyarrow; below it, by pyhudi.

Correctness: after every group each table is read back (pyhudi tables with hudi-rs, delta-rs with
delta-rs) and compared with the generator's (uuid, ts) of every key.
"""

from __future__ import annotations

import argparse
import fnmatch
import itertools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _ingest  # noqa: E402
import _tables  # noqa: E402
import common  # noqa: E402
from _format_floor import format_floor  # noqa: E402
from _stream_grid_data import PART, Streams, discard  # noqa: E402
from _stream_grid_report import NAME, TITLE, headline, render_markdown, render_text  # noqa: E402
from common import MB  # noqa: E402

WINDOWS = {"recent": 4, "all": 0}
TYPES = {"cow": "COPY_ON_WRITE", "mor": "MERGE_ON_READ"}


def cell_id(p: int, u: float, w: str, size_mb: int, kind: str) -> str:
    return f"p{p}-u{round(u * 100)}-{w if u else 'none'}-s{size_mb}MB-{kind}"


# --------------------------------------------------------------------------- systems


def hudi_options(kind: str, size: int, args: argparse.Namespace) -> dict[str, str]:
    opts = {
        "hoodie.table.name": f"grid_{kind}",
        "hoodie.datasource.write.recordkey.field": "uuid",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": PART,
        "hoodie.datasource.write.table.type": TYPES[kind],
        "hoodie.parquet.max.file.size": str(size),
        "hoodie.parquet.small.file.limit": str(size * 100 // 120),
    }
    if kind == "mor":
        opts.update({"hoodie.compact.inline": "true",
                     "hoodie.compact.inline.max.delta.commits": str(args.compact_every)})
    return {**opts, **common.hudi_extra_options(args)}


def make_sinks(root: Path, kinds: list[str], size: int, args: argparse.Namespace) -> dict[str, _ingest.Sink]:
    sinks: dict[str, _ingest.Sink] = {}
    for kind in kinds:
        path = str(root / kind)
        if kind == "delta":
            sinks[kind] = _ingest.DeltaSink(kind, "delta-rs", path, uses_spark=False, partition_by=PART,
                                            target_size=size, maintenance_what="optimize.compact")
        else:
            sinks[kind] = _ingest.ArrowPyhudiSink(kind, f"pyhudi {kind.upper()}", path, uses_spark=False,
                                                  options=hudi_options(kind, size, args))
    return sinks


# --------------------------------------------------------------------------- sizing


def sizing(path: str, small_limit: int, max_size: int) -> dict[str, Any]:
    """Well-sized share of pyhudi's live bytes with each partition's one open (largest small) file left
    out, the most small base files in any partition, the plain summary, and the share of the live bytes the
    Hudi format itself adds (the `_hoodie_*` meta columns, the footer's bloom filter and key range)."""
    live = _tables.hudi_live_files(path)
    base, logs = live["base"], live["log"]
    summary = _tables.size_summary(base, path, small_limit, max_size)
    per_part: dict[str, list[int]] = {}
    for p, s in base:
        per_part.setdefault(os.path.dirname(p), []).append(s)
    open_bytes = sum(max((s for s in sizes if s < small_limit), default=0) for sizes in per_part.values())
    small_counts = [sum(1 for s in sizes if s < small_limit) for sizes in per_part.values()]
    log_bytes = sum(s for _, s in logs)
    denom = summary.get("total", 0) + log_bytes - open_bytes
    well = summary.get("well_sized_bytes", 0)
    fmt = _tables.hudi_meta_bytes(base)
    return {"format_bytes_share": (fmt["meta_column_bytes"] + fmt["footer_bytes"]) / fmt["bytes"] if fmt["bytes"] else
            float("nan"), "meta_column_bytes": fmt["meta_column_bytes"], "footer_bytes": fmt["footer_bytes"],
            "files": summary.get("files", 0), "total": summary.get("total", 0), "log_files": len(logs),
            "log_bytes": log_bytes, "partitions": len(per_part),
            "well_sized_pct_raw": summary.get("well_sized_pct", float("nan")),
            "open_bytes": open_bytes, "sizable_bytes": denom,
            "well_sized_pct": 100.0 * well / denom if denom > 0 else float("nan"),
            "open_small_max": max(small_counts, default=0),
            "partitions_with_more_than_one_small": sum(1 for c in small_counts if c > 1)}


def written(kind: str, path: str) -> dict[str, int]:
    """Bytes, rows and files every commit of the table wrote (Hudi: totalWriteBytes of each completed instant,
    compaction included; delta-rs: the add actions of its log, optimize included): write amplification."""
    if kind == "delta":
        d = _tables.delta_bytes_written(path)
        files = sum(1 for f in (Path(path) / "_delta_log").glob("*.json")
                    for line in f.read_text().splitlines() if line.startswith('{"add"'))
        return {"bytes": int(d["bytes"]), "files": files, "rows": int(d["rows"])}
    ledger = _tables.HudiWriteLedger(path)
    ledger.update()
    return {"bytes": ledger.total(), "files": sum(i["files"] for i in ledger.instants.values()),
            "rows": sum(i["records"] for i in ledger.instants.values())}


# --------------------------------------------------------------------------- one group


def run_group(sinks: dict[str, _ingest.Sink], batches: list[_ingest.Batch], args: argparse.Namespace,
              phases: common.PhaseTimer | None) -> dict[str, Any]:
    """Every batch into every sink in rotating order; delta-rs' optimize at its cadence and at the end."""
    keys = list(sinks)
    times: dict[str, list[float]] = {k: [] for k in keys}
    cpu: dict[str, float] = {k: 0.0 for k in keys}  # the process's CPU seconds (every thread) in each system's calls
    steps: dict[str, dict[str, float]] = {k: {} for k in keys}
    maint: dict[str, float] = {k: 0.0 for k in keys}
    errors: dict[str, str] = {}
    for i, batch in enumerate(batches):
        order = keys[i % len(keys):] + keys[: i % len(keys)]
        for key in order:
            if key in errors:
                continue
            if phases is not None:
                phases.take()
            t0, c0 = time.perf_counter(), _cpu()
            optimized = 0.0  # a mid-stream optimize counts as maintenance, not as the batch's write
            try:
                sinks[key].write(None, batch)
                if key == "delta" and args.delta_optimize_every and (i + 1) % args.delta_optimize_every == 0 \
                        and i + 1 < len(batches):
                    t1 = time.perf_counter()
                    sinks[key].maintain(None)
                    optimized = time.perf_counter() - t1
                    maint[key] += optimized
            except Exception as exc:  # noqa: BLE001 - reported; the other systems go on
                errors[key] = f"batch {batch.index}: {type(exc).__name__}: {exc}"
                continue
            times[key].append(time.perf_counter() - t0 - optimized)
            cpu[key] += _cpu() - c0
            if phases is not None:
                for label, secs in phases.take().items():
                    steps[key][label] = steps[key].get(label, 0.0) + secs
    for key in keys:
        if key == "delta" and key not in errors:
            t0, c0 = time.perf_counter(), _cpu()
            try:
                sinks[key].maintain(None)
            except Exception as exc:  # noqa: BLE001
                errors[key] = f"optimize: {type(exc).__name__}: {exc}"
            maint[key] += time.perf_counter() - t0
            cpu[key] += _cpu() - c0
    out = {}
    for key in keys:
        ingest = sum(times[key])
        out[key] = {"ingest_seconds": ingest, "maintenance_seconds": maint[key],
                    "end_to_end_seconds": ingest + maint[key], "batch_seconds": times[key],
                    "cpu_seconds": cpu[key],
                    "steps": steps[key], "error": errors.get(key)}
    return out


def _cpu() -> float:
    """CPU seconds this process has used, every thread's (user and system)."""
    t = os.times()
    return t.user + t.system


def verify(paths: dict[str, str], expected: Any, name: str, problems: list[str]) -> dict[str, bool]:
    import arrow_engine

    ok = {}
    for key, path in paths.items():
        got = arrow_engine.delta_table(path) if key == "delta" else arrow_engine.hudi_rs_table(path)
        ok[key] = arrow_engine.check_keys(f"{name} {key}", got, expected, problems)
    return ok


# --------------------------------------------------------------------------- grid


def groups(args: argparse.Namespace) -> list[tuple[int, float, str, int, list[str]]]:
    """(partitions, fraction, window, size MB, [systems]) of every group with a selected cell."""
    out = []
    kinds = [k for k in args.types.split(",") if k]
    for p, u, w, s in itertools.product(args.partitions, args.updates, args.windows.split(","), args.sizes):
        if u == 0 and w != args.windows.split(",")[0]:
            continue  # no updates: the window does not matter
        chosen = [k for k in kinds if any(fnmatch.fnmatch(cell_id(p, u, w, s, k), pat) for pat in args.cells)]
        if chosen:
            out.append((p, u, w, s, [*chosen, "delta"]))
    return out


def cell_results(key: tuple[int, float, str, int], res: dict[str, Any], sizes: dict[str, Any],
                 ok: dict[str, bool], streams: list[_ingest.Batch]) -> list[dict[str, Any]]:
    p, u, w, s = key
    d = res["delta"]
    cells = []
    for kind in (k for k in res if k != "delta"):
        r = res[kind]
        ratio = (r["end_to_end_seconds"] / d["end_to_end_seconds"]
                 if not r["error"] and not d["error"] and d["end_to_end_seconds"] else float("nan"))
        cells.append({"id": cell_id(p, u, w, s, kind), "partitions": p, "update_fraction": u,
                      "window": w if u else "none", "size_mb": s, "type": kind, "ratio": ratio,
                      "pyhudi": r, "delta": d, "sizing": sizes.get(kind, {}), "keys_ok": ok.get(kind),
                      "delta_keys_ok": ok.get("delta"), "rows": sum(b.rows for b in streams),
                      "updates": sum(b.updates for b in streams),
                      "staged_bytes": sum(b.staged_bytes for b in streams)})
    return cells


def warm_up(work: Path, args: argparse.Namespace) -> None:
    """Unmeasured streams through every system's code paths, so no measured cell pays a process's one-time
    costs (imports, first calls, thread pools and heap that only batches of the grid's size start):
    upserts over 3 partitions, and insert-only batches of `--rows-per-batch` rows into one partition that
    roll over into several 1 MB files and top up the open one. Without the second, the grid's first cell
    (p1-u0-none-s1MB) paid them: 1.9-2.0x run first against 1.4-1.55x run second; with it, 1.5-1.6x first."""
    for fraction, rows, partitions in ((0.5, 500, 3), (0.0, args.rows_per_batch, 1)):
        warm = Streams(work / "warm", 3, rows, args.seed + 1)
        batches, _ = warm.get(fraction, 0, partitions)
        run_group(make_sinks(work / f"warm-tables-{partitions}", ["cow", "mor", "delta"], MB, args), batches, args,
                  None)


TIMING = ("ingest_seconds", "maintenance_seconds", "end_to_end_seconds", "batch_seconds", "steps", "cpu_seconds")


def run_grid(args: argparse.Namespace, work: Path, monitor: common.LoadMonitor,
             problems: list[str]) -> list[dict[str, Any]]:
    """Every group `--passes` times, every other pass in reverse order (a system whose speed drifts over a
    long process, as delta-rs' did at 300 partitions, meets each group early and late); each system's
    fastest pass counts. Sizing, bytes written, the format floor and the read-back checks come from the
    first pass (the batches, and so the files, are the same in every pass)."""
    from _arrow_child import step_timer  # the in-process write's step wrappers (no pyspark)

    streams = Streams(work / "staging", args.batches, args.rows_per_batch, args.seed)
    todo = groups(args)
    warm_up(work, args)
    phases = step_timer()
    spy = _start_profile(args.profile) if args.profile else None
    results: dict[tuple[int, float, str, int], dict[str, Any]] = {}
    extras: dict[tuple[int, float, str, int], tuple[dict[str, Any], dict[str, bool], list[_ingest.Batch]]] = {}
    started = time.perf_counter()
    try:
        for pass_no in range(args.passes):
            order = todo if pass_no % 2 == 0 else todo[::-1]
            for n, (p, u, w, s, kinds) in enumerate(order, 1):
                key = (p, u, w, s)
                batches, expected = streams.get(u, WINDOWS[w], p)
                res = _run_cell(work, key, kinds, batches, args, monitor, phases)
                if key not in results:
                    results[key] = res
                    extras[key] = _first_pass(work, key, res, batches, expected, args, problems)
                else:
                    for k, r in res.items():
                        best = results[key][k]
                        if not r["error"] and not best["error"] and r["end_to_end_seconds"] < best["end_to_end_seconds"]:
                            best.update({f: r[f] for f in TIMING})
                print(f"[pass {pass_no + 1}/{args.passes}, {n}/{len(order)}, {time.perf_counter() - started:.0f} s] "
                      f"{cell_id(p, u, w, s, '*')}: " + ", ".join(f"{k} {r['end_to_end_seconds']:.2f} s"
                                                                  for k, r in res.items()), flush=True)
                if pass_no == args.passes - 1 and not any(q[:3] == (p, u, w) for q in order[n:]):
                    streams.drop(u, WINDOWS[w], p)
    finally:
        phases.close()
        shutil.rmtree(work / "discarded", ignore_errors=True)  # after the last timing (see `discard`)
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait(timeout=120)
    return [c for key in (g[:4] for g in todo) for c in cell_results(key, results[key], *extras[key])]


def _run_cell(work: Path, key: tuple[int, float, str, int], kinds: list[str], batches: list[_ingest.Batch],
              args: argparse.Namespace, monitor: common.LoadMonitor, phases: Any) -> dict[str, Any]:
    p, u, w, s = key
    root = work / "tables"
    discard(root, work)
    sinks = make_sinks(root, kinds, s * MB, args)
    common.settle()
    with monitor.phase(cell_id(p, u, w, s, "*")):
        res = run_group(sinks, batches, args, phases)
    for k, r in res.items():
        r["path"] = sinks[k].path
    return res


def _first_pass(work: Path, key: tuple[int, float, str, int], res: dict[str, Any], batches: list[_ingest.Batch],
                expected: Any, args: argparse.Namespace, problems: list[str]
                ) -> tuple[dict[str, Any], dict[str, bool], list[_ingest.Batch]]:
    """The first pass's tables: sizing, bytes written, the format floor, the read-back check."""
    p, u, w, s = key
    gid = cell_id(p, u, w, s, "*")
    sizes = {k: sizing(r["path"], s * MB * 100 // 120, s * MB) for k, r in res.items()
             if k != "delta" and not r["error"]}
    for k, r in res.items():
        if not r["error"]:
            r["written"] = written(k, r["path"])
            if k != "delta":
                r["floor"] = format_floor(r["path"], work / "floor", [b.staged for b in batches],
                                          discard=lambda path: discard(path, work))
    ok = verify({k: r["path"] for k, r in res.items()}, expected, gid, problems) if not args.no_verify else {}
    for k, r in res.items():
        if r["error"]:
            problems.append(f"{gid} {k}: {r['error']}")
    return sizes, ok, batches


def _start_profile(out: str) -> subprocess.Popen[bytes]:
    """py-spy attached to this process after the warm-up (so imports and the warm-up stay out of it),
    raw format for bench/pyspy_top.py; it samples the read-back checks too (filter on pyhudi/writer)."""
    spy = subprocess.Popen([str(Path(sys.executable).parent / "py-spy"), "record", "--format", "raw", "--rate",
                            "100", "--threads", "--pid", str(os.getpid()), "-o", out],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # attached before the first measured write
    return spy


def parse_args() -> argparse.Namespace:
    p = common.base_parser(__doc__.split("\n\n")[0], 20_000)
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 4 batches of 3,000 rows, compaction every 2 deltacommits (same grid)")
    p.add_argument("--cells", default="*", help="comma-separated fnmatch patterns over cell ids "
                   "p{P}-u{pct}-{recent|all|none}-s{MB}MB-{cow|mor}, e.g. 'p300-*,*-s1MB-mor'")
    p.add_argument("--partitions", default="1,3,30,300")
    p.add_argument("--updates", default="0,0.1,0.2,0.5", help="update fractions per batch")
    p.add_argument("--windows", default="recent,all", help="recent = keys of the last 4 batches, all = any key")
    p.add_argument("--sizes", default="1,8,128", help="target file sizes in MB")
    p.add_argument("--types", default="cow,mor")
    p.add_argument("--batches", type=int, default=5, help="batches per stream (the first inserts only)")
    p.add_argument("--passes", type=int, default=2, help="runs of every group, every other one in reverse "
                   "order; each system's fastest counts")
    p.add_argument("--rows-per-batch", type=int, default=None, help="default 20,000 x --scale")
    p.add_argument("--compact-every", type=int, default=5, help="MOR: hoodie.compact.inline.max.delta.commits")
    p.add_argument("--delta-optimize-every", type=int, default=0,
                   help="delta-rs: also optimize.compact every N batches (0: only at the end)")
    p.add_argument("--profile", default=None, metavar="FILE",
                   help="py-spy this process after the warm-up into FILE (raw; distorts the times: use --no-save)")
    p.add_argument("--no-verify", action="store_true", help="skip the read-back checks")
    common.add_hudi_option_flag(p)
    args = p.parse_args()
    if args.quick:
        args.batches, args.compact_every = 4, 2
        args.rows_per_batch = args.rows_per_batch or 3000
    args.rows_per_batch = args.rows_per_batch or common.rows_for(args.scale, 20_000)
    args.partitions = [int(x) for x in args.partitions.split(",") if x]
    args.updates = [float(x) for x in args.updates.split(",") if x]
    args.sizes = [int(x) for x in args.sizes.split(",") if x]
    args.cells = [c for c in args.cells.split(",") if c]
    return args


def main() -> int:
    args = parse_args()
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="pyhudi-bench-grid-"))
    monitor = common.LoadMonitor().start()
    started = common.now_utc()
    print(f"pyhudi bench {NAME}: {len(groups(args))} groups, {args.batches} batches of {args.rows_per_batch:,} "
          f"rows each; work dir {work}")
    problems: list[str] = []
    cells = run_grid(args, work, monitor, problems)
    monitor.stop()
    results: dict[str, Any] = {
        "benchmark": NAME, "started": started, "finished": common.now_utc(), "command": common.command_line(),
        "machine": common.machine_info(), "load": monitor.report(),
        "config": {"batches": args.batches, "passes": args.passes, "rows_per_batch": args.rows_per_batch,
                   "compact_every": args.compact_every,
                   "delta_optimize_every": args.delta_optimize_every, "partitions": args.partitions,
                   "updates": args.updates, "windows": args.windows, "recent_window_batches": WINDOWS["recent"],
                   "sizes_mb": args.sizes, "types": args.types, "cells": args.cells, "quick": args.quick,
                   "seed": args.seed, "spark_master": "none (in-process)",
                   "hudi_extra_options": common.hudi_extra_options(args)},
        "cells": cells,
        "verification": {"ok": not problems, "problems": problems},
    }
    results["headline"], results["targets"] = headline(results)
    return common.finish(NAME, TITLE, results, render_text, render_markdown, args, work, problems)


if __name__ == "__main__":
    sys.exit(main())
