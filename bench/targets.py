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
BENCHMARKS = ("small_batches", "large_load", "mor_vs_cow", "clustering", "streaming_services")


@dataclass
class Row:
    target: str
    benchmark: str
    measured: str
    met: bool | None  # None: not measured, or informational
    note: str = ""


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
            f"{f['files']} files, {f['small_files']} below the limit (the stream's open file among them)"),
        Row("Auto-sizing: file count within 10% of total bytes / max size", name,
            f"{f['files']} files vs {f['ideal_files_global']} ({h['files_over_ideal_global']:.2f}x)",
            _judge(h["files_over_ideal_global"], lambda v: v <= 1.10),
            f"per-partition ideal {f['ideal_files']}" if cfg["partitioned"] else ""),
        Row("COW insert with auto-sizing <= 1.3 x plain Spark append of the same batches", name,
            f"{h['insert_vs_spark']:.2f}x", _judge(h["insert_vs_spark"], lambda v: v <= 1.3),
            f"{cfg['insert_batches']} batches of {cfg['rows_per_batch']:,} rows"),
        Row(f"COW upsert with {cfg['update_fraction']:.0%} updates <= 2 x plain Spark append", name,
            f"{h['upsert_vs_spark']:.2f}x",
            _judge(h["upsert_vs_spark"], lambda v: v <= 2.0) if abs(cfg["update_fraction"] - 0.10) < 1e-9 else None,
            "the target is stated for 10% updates" if abs(cfg["update_fraction"] - 0.10) >= 1e-9 else
            f"updates drawn from the last {cfg['update_window'] or 'all'} batches"),
    ]
    for q, v in h["spark_query_over_this"].items():
        rows.append(Row(f"Query ({q}) on the auto-sized table >= 3 x faster than on the small-files table", name,
                        f"{v:.2f}x faster", _judge(v, lambda x: x >= 3.0),
                        f"{s['spark']['final_files']['files']} vs {f['files']} files"))
    for q, v in h["query_over_delta"].items():
        rows.append(Row(f"Query ({q}) within 10% of a freshly compacted delta-rs table", name,
                        f"{v:.2f}x delta-rs's time", _judge(v, lambda x: x <= 1.10),
                        "same Spark session, spark.read.parquet of each table's files"))
    rows.append(Row("End-to-end (ingest + maintenance) no slower than delta-rs append/merge + optimize", name,
                    f"{h['end_to_end_over_delta']:.2f}x delta-rs's time",
                    _judge(h["end_to_end_over_delta"], lambda v: v <= 1.0),
                    f"{s['cow']['end_to_end_seconds']:.1f} s vs {s['delta']['end_to_end_seconds']:.1f} s"
                    if "delta" in s else ""))
    for k in ("cow_cluster", "mor"):
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
                            + ("" if k == "bulk_insert" else "; informational, bulk_insert is the load path")))
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
                        + (f"; first query {q:.1f}x faster after" if isinstance(q, (int, float)) else "")))
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
}


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
Issue 6's targets, each a ratio between two systems measured in the same run, judged from the latest
saved run of each benchmark (`.venv/bin/python bench/targets.py` rebuilds this table from
`bench/results/*-latest.json`). **{met} met, {missed} missed**; `-` rows are context without a target.
The sections below give the method, the full numbers and, for missed targets, what limits them.

{table}

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
