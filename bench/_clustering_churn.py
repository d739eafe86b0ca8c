"""Clustering at small targets never churns (issue 19, item 4): part of `bench/clustering.py`, in-process.

    .venv/bin/python bench/_clustering_churn.py [--commits 24] [--rows-per-commit 5000]   (a quick run alone)

A copy-on-write table partitioned by city is built from tiny `insert` commits (one small file per partition
and commit, no auto-sizing), then clustered at the issue's small sizes: 1 MB target, 768 KB small-file limit,
Hudi's default bloom filter (~430 KB of every file's footer), 2 MB per group (so a partition's small files
fill several groups). Per layout (ingestion order, linear, z-order, Hilbert on (customer_id, ts)), on a
fresh copy of the table:

1. the first clustering: its outputs against [small-file limit, 1.1 x target], and how many per partition
   are below the limit (the rule: at most one, the partition's tail);
2. a second clustering right after: the bytes it rewrites (the figure: 0; pyhudi plans nothing);
3. a few more tiny commits, then a third clustering: the bytes it rewrites beyond the new small files and the
   previous tails (0: a well-sized file is never rewritten);
4. hudi-rs reads every copy: the same keys and fares as the generated rows.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
from common import MB, fmt_bytes, format_table  # noqa: E402

KB = 1024
CHURN_LAYOUTS = ("none", "linear", "z-order", "hilbert")
SORT = "customer_id,ts"


def churn_options(target: int, limit: int, group: int, layout: str) -> dict[str, str]:
    opts = {"hoodie.table.name": "churn", "hoodie.datasource.write.recordkey.field": "uuid",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "city",
            "hoodie.datasource.write.operation": "insert", "hoodie.parquet.small.file.limit": "0",
            "hoodie.clustering.plan.strategy.target.file.max.bytes": str(target),
            "hoodie.clustering.plan.strategy.small.file.limit": str(limit),
            "hoodie.clustering.plan.strategy.max.bytes.per.group": str(group),
            "hoodie.clustering.plan.strategy.max.num.groups": "10000"}  # one clustering covers every small file
    if layout != "none":
        opts.update({"hoodie.clustering.plan.strategy.sort.columns": SORT, "hoodie.layout.optimize.strategy": layout})
    return opts


def _commit(path: str, opts: dict[str, str], c: int, rows: int, seed: int) -> pa.Table:
    from clustering import events

    import pyhudi

    t = events(c, 64, rows, seed, 0.02, 2.0)
    pyhudi.write(t, path, opts)
    return t.select(["uuid", "fare"])


def _stats(path: str, instant: str) -> list[Any]:
    from pyhudi.storage import Storage
    from pyhudi.timeline.timeline import ActiveTimeline

    timeline = ActiveTimeline.load(Storage(path))
    return timeline.commit_metadata(timeline.find(instant)).all_stats()  # type: ignore[arg-type]


def _replaced(path: str, instant: str) -> set[tuple[str, str]]:
    from pyhudi.storage import Storage
    from pyhudi.timeline.timeline import ActiveTimeline

    timeline = ActiveTimeline.load(Storage(path))
    meta = timeline.commit_metadata(timeline.find(instant))  # type: ignore[arg-type]
    return {(p, f) for p, ids in (meta.partition_to_replace_file_ids or {}).items() for f in ids}


def _latest(path: str) -> dict[tuple[str, str], int]:
    from pyhudi.model.table_config import load_table_config
    from pyhudi.storage import Storage
    from pyhudi.timeline.timeline import ActiveTimeline
    from pyhudi.view.builder import build_view

    storage = Storage(path)
    view = build_view(storage, load_table_config(storage), ActiveTimeline.load(storage))
    return {(p, s.file_id): s.base_size for p in view.partition_paths for s in view.latest_file_slices(p)}


def _rows_ok(path: str, expected: pa.Table) -> bool:
    from tests.helpers import hudi_rs

    got = hudi_rs(path)
    if got is None or got.num_rows != expected.num_rows:
        return False
    key = ["uuid", "fare"]
    return got.select(key).sort_by("uuid").equals(expected.select(key).sort_by("uuid"))  # type: ignore[no-any-return]


def _one_layout(base: Path, work: Path, layout: str, cfg: dict[str, Any], expected: pa.Table,
                more: list[int]) -> dict[str, Any]:
    import pyhudi

    path = str(work / f"churn-{layout}")
    shutil.rmtree(path, ignore_errors=True)
    shutil.copytree(base, path)
    target, limit = cfg["target_file_bytes"], cfg["small_file_limit"]
    opts = churn_options(target, limit, cfg["group_bytes"], layout)
    t0 = time.perf_counter()
    (first,) = pyhudi.cluster(None, path, opts)
    seconds = time.perf_counter() - t0
    stats = _stats(path, first)
    sizes = [s.file_size_in_bytes for s in stats]
    small_per_part: dict[str, int] = {}
    for s in stats:
        if s.file_size_in_bytes < limit:
            small_per_part[s.partition_path] = small_per_part.get(s.partition_path, 0) + 1
    well = sum(x for x in sizes if limit <= x <= target * 1.1)
    after_first = _latest(path)
    second = pyhudi.cluster(None, path, opts)
    second_bytes = sum(s.total_write_bytes for i in second for s in _stats(path, i))
    tails = {k for k, v in after_first.items() if v < limit}
    added = [_commit(path, churn_options(target, limit, cfg["group_bytes"], "none"), c, cfg["rows_per_commit"],
                     cfg["seed"]) for c in more]
    new_small = set(_latest(path)) - set(after_first)
    third = pyhudi.cluster(None, path, opts)
    rewritten_well = 0
    for i in third:
        for key in _replaced(path, i) - new_small - tails:
            rewritten_well += after_first.get(key, 0)
    full = pa.concat_tables([expected, *added])
    return {"seconds": seconds, "outputs": len(sizes), "output_bytes": sum(sizes), "min": min(sizes),
            "max": max(sizes), "well_sized_pct": 100.0 * well / sum(sizes) if sizes else float("nan"),
            "partitions": len({s.partition_path for s in stats}), "small_outputs": sum(small_per_part.values()),
            "max_small_per_partition": max(small_per_part.values(), default=0),
            "oversized": sum(1 for x in sizes if x > target * 1.1),
            "second_instants": len(second), "second_bytes_rewritten": second_bytes,
            "third_instants": len(third), "third_well_sized_bytes_rewritten": rewritten_well,
            "rows_ok": _rows_ok(path, full)}


def run_churn(work: Path, seed: int, commits: int = 24, rows_per_commit: int = 5000, target: int = MB,
              limit: int = 768 * KB, group: int = 2 * MB, layouts: tuple[str, ...] = CHURN_LAYOUTS) -> dict[str, Any]:
    """Build the table once, then every layout on its own copy; returns the figures and problems."""
    sys.path.insert(0, str(common.REPO_DIR))
    cfg = {"commits": commits, "rows_per_commit": rows_per_commit, "target_file_bytes": target,
           "small_file_limit": limit, "group_bytes": group, "seed": seed, "layouts": list(layouts)}
    base = work / "churn-base"
    shutil.rmtree(base, ignore_errors=True)
    opts = churn_options(target, limit, group, "none")
    expected = pa.concat_tables([_commit(str(base), opts, c, rows_per_commit, seed) for c in range(commits)])
    files = _latest(str(base))
    cfg.update({"files_before": len(files), "bytes_before": sum(files.values())})
    res = {lay: _one_layout(base, work, lay, cfg, expected, [commits, commits + 1, commits + 2]) for lay in layouts}
    problems = [f"churn {lay}: {what}" for lay, r in res.items() for what, bad in (
        ("second clustering rewrote bytes", r["second_bytes_rewritten"] > 0),
        ("more than one small output in a partition", r["max_small_per_partition"] > 1),
        ("an output above 1.1 x target", r["oversized"] > 0),
        ("third clustering rewrote well-sized files", r["third_well_sized_bytes_rewritten"] > 0),
        ("hudi-rs rows differ from the generated rows", not r["rows_ok"])) if bad]
    return {"config": cfg, "layouts": res, "problems": problems}


def churn_targets(churn: dict[str, Any]) -> list[dict[str, Any]]:
    """Published to bench/targets.py: issue 19's 'a second clustering rewrites 0 bytes'."""
    res = churn["layouts"]
    if not res:
        return []
    second = max(r["second_bytes_rewritten"] for r in res.values())
    well = min(r["well_sized_pct"] for r in res.values())
    c = churn["config"]
    where = f"{fmt_bytes(c['target_file_bytes'])} target, {fmt_bytes(c['small_file_limit'])} limit"
    return [{"target": f"Clustering at {where}: a second clustering rewrites 0 bytes", "measured":
             f"{second:,} B ({', '.join(res)})", "met": second == 0},
            {"target": f"(info) Clustering at {where}: bytes of its outputs well sized (lowest layout)",
             "measured": f"{well:.1f}%", "met": None}]


_HEADERS = ["layout", "s", "outputs", "output bytes", "min / max", "% well sized", "small (max per partition)",
            "2nd run: bytes rewritten", "3rd run: well-sized bytes rewritten", "hudi-rs"]


def churn_rows(churn: dict[str, Any]) -> list[list[str]]:
    return [[lay, f"{r['seconds']:.2f}", str(r["outputs"]), fmt_bytes(r["output_bytes"]),
             f"{fmt_bytes(r['min'])} / {fmt_bytes(r['max'])}", f"{r['well_sized_pct']:.1f}%",
             f"{r['small_outputs']} ({r['max_small_per_partition']})", f"{r['second_bytes_rewritten']:,} B",
             f"{r['third_well_sized_bytes_rewritten']:,} B", "OK" if r["rows_ok"] else "DIFFERS"]
            for lay, r in churn["layouts"].items()]


def render_churn(churn: dict[str, Any] | None, markdown: bool) -> str:
    if not churn:
        return ""
    c = churn["config"]
    head = (f"**Clustering at small targets** (in-process; a table partitioned by city from {c['commits']} tiny "
            f"inserts of {c['rows_per_commit']:,} rows: {c['files_before']} files, {fmt_bytes(c['bytes_before'])}; "
            f"target {fmt_bytes(c['target_file_bytes'])}, small-file limit {fmt_bytes(c['small_file_limit'])}, "
            f"{fmt_bytes(c['group_bytes'])} per group, Hudi's default bloom filter; sort columns {SORT} unless "
            "`none`; each layout on a fresh copy: cluster, cluster again, 3 more tiny inserts, cluster again):")
    return "\n".join([head if markdown else head.replace("**", ""), "",
                      format_table(_HEADERS, churn_rows(churn), markdown), ""])


def main() -> int:
    import argparse
    import tempfile

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--commits", type=int, default=24)
    p.add_argument("--rows-per-commit", type=int, default=5000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--layouts", default=",".join(CHURN_LAYOUTS))
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="pyhudi-bench-churn-"))
    try:
        churn = run_churn(work, args.seed, args.commits, args.rows_per_commit,
                          layouts=tuple(x for x in args.layouts.split(",") if x))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(render_churn(churn, markdown=False))
    for t in churn_targets(churn):
        print(f"{t['target']}: {t['measured']} ({'met' if t['met'] else 'missed' if t['met'] is False else '-'})")
    for problem in churn["problems"]:
        print("PROBLEM:", problem, file=sys.stderr)
    return 1 if churn["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
