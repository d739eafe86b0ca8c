"""Headline, targets and tables of `bench/stream_grid.py` (Arrow streams vs delta-rs on every shape)."""

from __future__ import annotations

from typing import Any

from common import fmt_bytes, format_table, median

NAME = "stream_grid"
TITLE = "Arrow streams vs delta-rs on every shape"
LIMITS = {1: 1.5}  # ratio limit per file size (MB); every other size: 1.0
SIZING_PCT, OPEN_SMALL_MAX = 95.0, 1


def limit(size_mb: int) -> float:
    return LIMITS.get(size_mb, 1.0)


def _nan(v: Any) -> bool:
    return not isinstance(v, (int, float)) or v != v


def _ok(c: dict[str, Any]) -> bool:
    return not _nan(c["ratio"])


def top_steps(c: dict[str, Any], n: int = 3) -> str:
    """pyhudi's largest write steps in the cell, as shares of its end-to-end time."""
    steps = dict(c["pyhudi"].get("steps") or {})
    total = c["pyhudi"]["end_to_end_seconds"] or 1.0
    steps["other"] = max(0.0, total - sum(steps.values()))
    best = sorted(steps.items(), key=lambda kv: -kv[1])[:n]
    return ", ".join(f"{k} {v / total:.0%}" for k, v in best)


def headline(r: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    cells = r.get("cells") or []
    h: dict[str, Any] = {"sizes": {}}
    targets: list[dict[str, Any]] = []
    for size in sorted({c["size_mb"] for c in cells}):
        sel = [c for c in cells if c["size_mb"] == size and _ok(c)]
        if not sel:
            continue
        worst = max(sel, key=lambda c: c["ratio"])
        lim = limit(size)
        missed = [c["id"] for c in sel if c["ratio"] > lim]
        floored = [c["id"] for c in sel if c["ratio"] > lim and not _nan(floor_ratio(c)) and floor_ratio(c) > lim]
        h["sizes"][str(size)] = {"worst": worst["ratio"], "worst_cell": worst["id"], "limit": lim,
                                 "median": median([c["ratio"] for c in sel]), "cells": len(sel), "missed": missed,
                                 "missed_floor_above_limit": floored}
        targets.append({"target": f"Arrow stream grid, {size} MB files: every cell <= {lim:g} x delta-rs merge + "
                                  "optimize.compact (end-to-end)",
                        "measured": f"worst {worst['ratio']:.2f}x ({worst['id']}), median "
                                    f"{h['sizes'][str(size)]['median']:.2f}x, {len(sel) - len(missed)}/{len(sel)} "
                                    f"cells met; of the {len(missed)} missed, {len(floored)} have a format floor "
                                    "above the limit",
                        "met": not missed})
    sized = [c for c in cells if not _nan(c["sizing"].get("well_sized_pct"))]
    if sized:
        worst = min(sized, key=lambda c: c["sizing"]["well_sized_pct"])
        v = worst["sizing"]["well_sized_pct"]
        h["sizing_worst"] = {"pct": v, "cell": worst["id"]}
        targets.append({"target": f"Arrow stream grid: >= {SIZING_PCT:g}% of pyhudi's bytes well sized in every "
                                  "cell (each partition's one open file aside; live log bytes count as not well sized)",
                        "measured": f"worst {v:.1f}% ({worst['id']}), {len(sized)} cells with a full file",
                        "met": v >= SIZING_PCT})
    opened = [c for c in cells if "open_small_max" in c["sizing"]]
    if opened:
        worst = max(opened, key=lambda c: c["sizing"]["open_small_max"])
        v = worst["sizing"]["open_small_max"]
        h["open_small_worst"] = {"files": v, "cell": worst["id"]}
        targets.append({"target": f"Arrow stream grid: at most {OPEN_SMALL_MAX} open small file per partition",
                        "measured": f"at most {v} ({worst['id']})", "met": v <= OPEN_SMALL_MAX})
    return h, targets


# --------------------------------------------------------------------------- tables


def _ratio_cell(c: dict[str, Any] | None, markdown: bool) -> str:
    if c is None:
        return "-"
    if _nan(c["ratio"]):
        return "error"
    text = f"{c['ratio']:.2f}"
    return f"**{text}**" if markdown and c["ratio"] > limit(c["size_mb"]) else text


def ratio_table(r: dict[str, Any], markdown: bool) -> str:
    cells = r.get("cells") or []
    by = {(c["partitions"], c["update_fraction"], c["window"], c["size_mb"], c["type"]): c for c in cells}
    cols = [(t, s) for t in ("cow", "mor") for s in sorted({c["size_mb"] for c in cells})
            if any(c["type"] == t and c["size_mb"] == s for c in cells)]
    shapes = sorted({(c["partitions"], c["update_fraction"], c["window"]) for c in cells})
    rows = [[str(p), f"{u:.0%}", w] + [_ratio_cell(by.get((p, u, w, s, t)), markdown) for t, s in cols]
            for p, u, w in shapes]
    return format_table(["partitions", "updates", "keys"] + [f"{t.upper()} {s} MB" for t, s in cols], rows,
                        markdown=markdown)


def missed_table(r: dict[str, Any], markdown: bool) -> str:
    cells = [c for c in r.get("cells") or [] if _ok(c) and c["ratio"] > limit(c["size_mb"])]
    rows = [[c["id"], f"{c['ratio']:.2f}", f"{c['pyhudi']['end_to_end_seconds']:.2f}",
             f"{c['delta']['ingest_seconds']:.2f} + {c['delta']['maintenance_seconds']:.2f}", _written(c),
             _x(rows_ratio(c)), _per_row(c), _x(per_byte_ratio(c)), _floor(c), top_steps(c), cause(c)]
            for c in sorted(cells, key=lambda c: -c["ratio"])]
    return format_table(["cell", "ratio", "pyhudi s", "delta-rs s (writes + optimize)",
                         "written: pyhudi / delta-rs (files)", "rows written vs delta-rs",
                         "bytes per row vs delta-rs (Hudi's meta columns + bloom footer)",
                         "time per byte written vs delta-rs",
                         "format floor vs delta-rs (pyhudi vs floor)", "pyhudi's largest steps (share of its time)",
                         "what dominates"], rows,
                        markdown=markdown) if rows else "(no cell missed its limit)"


def _floor(c: dict[str, Any]) -> str:
    f, o = floor_ratio(c), over_floor(c)
    return "-" if _nan(f) else f"{f:.2f}x ({o:.2f}x)"


def _written_of(c: dict[str, Any], what: str) -> float:
    p, d = c["pyhudi"].get("written") or {}, c["delta"].get("written") or {}
    return p[what] / d[what] if p.get(what) and d.get(what) else float("nan")


def written_ratio(c: dict[str, Any]) -> float:
    """Bytes pyhudi wrote over the stream against delta-rs: rows_ratio x bytes_per_row_ratio."""
    return _written_of(c, "bytes")


def rows_ratio(c: dict[str, Any]) -> float:
    """Rows pyhudi wrote (every commit's numWrites, compaction included) against delta-rs (every add
    action's numRecords, optimize included): the rewriting each system's file sizing costs."""
    return _written_of(c, "rows")


def bytes_per_row_ratio(c: dict[str, Any]) -> float:
    return written_ratio(c) / rows_ratio(c)


def per_byte_ratio(c: dict[str, Any]) -> float:
    """The ratio with the bytes written divided out: pyhudi's time per byte written against delta-rs'."""
    return c["ratio"] / written_ratio(c)


def format_share(c: dict[str, Any]) -> float:
    """Share of pyhudi's live base-file bytes in the Hudi format's own parts (meta columns, bloom footer)."""
    return float(c["sizing"].get("format_bytes_share", float("nan")))


def floor_ratio(c: dict[str, Any]) -> float:
    """The Hudi-format floor (raw pyarrow writing the files pyhudi's table holds, `_format_floor`) against
    delta-rs' end-to-end time: above the cell's limit, no writer of the format on pyarrow meets it."""
    floor = c["pyhudi"].get("floor") or {}
    d = c["delta"]["end_to_end_seconds"]
    return floor["seconds"] / d if floor.get("seconds") and d else float("nan")


def over_floor(c: dict[str, Any]) -> float:
    """pyhudi's end-to-end time against the floor: what pyhudi itself adds to writing the format's files."""
    f = floor_ratio(c)
    return c["ratio"] / f if not _nan(f) and f else float("nan")


def cpu_ratio(c: dict[str, Any]) -> float:
    """CPU seconds pyhudi's stream used (every thread of the process) against delta-rs': the work, whatever
    the cores it ran on (runs saved before the bench measured CPU have none)."""
    p, d = c["pyhudi"].get("cpu_seconds"), c["delta"].get("cpu_seconds")
    return p / d if p and d else float("nan")


def cores(run: dict[str, Any]) -> float:
    """CPU seconds over wall seconds of a system's stream: how many of the cores its work kept busy."""
    cpu, wall = run.get("cpu_seconds"), run.get("end_to_end_seconds")
    return cpu / wall if cpu and wall else float("nan")


def factor_table(r: dict[str, Any], markdown: bool) -> str:
    """Per (partitions, file size), the medians of the ratio's three factors and of the format's share."""
    cells = [c for c in r.get("cells") or [] if _ok(c) and not _nan(rows_ratio(c))]
    rows = []
    for p, s in sorted({(c["partitions"], c["size_mb"]) for c in cells}):
        sel = [c for c in cells if c["partitions"] == p and c["size_mb"] == s]
        shares = [format_share(c) for c in sel if not _nan(format_share(c))]
        data = [bytes_per_row_ratio(c) * (1 - format_share(c)) for c in sel if not _nan(format_share(c))]
        met = sum(c["ratio"] <= limit(s) for c in sel)
        rows.append([str(p), f"{s} MB", str(len(sel)), f"{median([c['ratio'] for c in sel]):.2f}",
                     f"{median([rows_ratio(c) for c in sel]):.2f}", f"{median([bytes_per_row_ratio(c) for c in sel]):.2f}",
                     f"{median(shares):.0%}" if shares else "-", f"{median(data):.2f}" if data else "-",
                     f"{median([per_byte_ratio(c) for c in sel]):.2f}", _median_x([floor_ratio(c) for c in sel]),
                     _median_x([over_floor(c) for c in sel]), _median_x([cpu_ratio(c) for c in sel]),
                     _cores(sel), f"{met}/{len(sel)}"])
    return format_table(["partitions", "file size", "cells", "ratio", "rows written", "bytes per row",
                         "Hudi format's share of pyhudi's bytes", "data columns alone: bytes per row",
                         "time per byte written", "format floor vs delta-rs", "pyhudi vs floor",
                         "CPU seconds vs delta-rs", "cores busy: pyhudi / delta-rs", "cells met"],
                        rows, markdown=markdown)


def _cores(cells: list[dict[str, Any]]) -> str:
    p, d = _median_x([cores(c["pyhudi"]) for c in cells]), _median_x([cores(c["delta"]) for c in cells])
    return "-" if p == "-" or d == "-" else f"{p} / {d}"


def _median_x(values: list[float]) -> str:
    values = [v for v in values if not _nan(v)]
    return f"{median(values):.2f}" if values else "-"


def _x(v: float) -> str:
    return "-" if _nan(v) else f"{v:.2f}x"


def _per_row(c: dict[str, Any]) -> str:
    """Bytes per row against delta-rs, the Hudi format's share of pyhudi's bytes, and what the rest (the
    data columns alone) weighs per row against delta-rs."""
    bpr, share = bytes_per_row_ratio(c), format_share(c)
    if _nan(bpr):
        return "-"
    return f"{bpr:.2f}x" if _nan(share) else f"{bpr:.2f}x ({share:.0%}; data alone {bpr * (1 - share):.2f}x)"


def cause(c: dict[str, Any]) -> str:
    """What dominates a missed cell, from its own figures (the rules follow the profiles in the text)."""
    steps = dict(c["pyhudi"].get("steps") or {})
    total = c["pyhudi"]["end_to_end_seconds"] or 1.0
    out = []
    if c["size_mb"] == 1:
        out.append("per-file fixed costs (encoder set-up, footer, marker, commit entry) of ~1 MB files")
    rr, bpr, share = rows_ratio(c), bytes_per_row_ratio(c), format_share(c)
    if not _nan(bpr) and bpr >= 1.15:
        out.append(f"{bpr:.2f}x delta-rs' bytes per row: the Hudi format's meta columns and bloom footer"
                   + ("" if _nan(share) else f" ({share:.0%} of pyhudi's bytes)"))
    if not _nan(rr) and rr >= 1.15:
        out.append(f"{rr:.2f}x delta-rs' rows written (write-time top-ups rewrite the open file"
                   + (", compaction rewrites the slices" if c["type"] == "mor" else "")
                   + "; delta-rs rewrites once in optimize)")
    pb = per_byte_ratio(c)
    if c["partitions"] >= 30 and not _nan(pb) and pb > 1.0:
        out.append(f"{c['partitions']} partitions: per-file costs of small files ({pb:.2f}x delta-rs' time per byte)")
    if steps.get("compaction", 0.0) / total >= 0.2:
        out.append(f"inline compaction {steps['compaction'] / total:.0%}")
    fixed = sum(steps.get(k, 0.0) for k in ("commit", "clean", "archive", "view", "rollback check", "instant",
                                            "markers")) + max(0.0, total - sum(steps.values()))
    if not out or fixed / total >= 0.3:
        out.append(f"per-write fixed cost (timeline, commit, clean) {fixed / total:.0%}")
    return "; ".join(out)


def _amplification(r: dict[str, Any], size: int) -> str:
    """Medians over a size class of the three factors of the ratio: rows written, bytes per row, time per byte."""
    sel = [c for c in r.get("cells") or [] if c["size_mb"] == size and _ok(c) and not _nan(written_ratio(c))]
    if not sel:
        return ""
    wr = median([written_ratio(c) for c in sel])
    pb = median([per_byte_ratio(c) for c in sel])
    rows = [c for c in sel if not _nan(rows_ratio(c))]
    if not rows:
        return f" (median {wr:.1f}x delta-rs' bytes written, {pb:.2f}x its time per byte written)"
    return (f" (medians against delta-rs: {median([rows_ratio(c) for c in rows]):.2f}x rows written x "
            f"{median([bytes_per_row_ratio(c) for c in rows]):.2f}x bytes per row = {wr:.2f}x bytes written; "
            f"{pb:.2f}x time per byte written)")


def _written(c: dict[str, Any]) -> str:
    """Bytes (and files) each system wrote over the stream: pyhudi's write amplification against delta-rs'."""
    p, d = c["pyhudi"].get("written"), c["delta"].get("written")
    if not p or not d:
        return "-"
    return (f"{fmt_bytes(p['bytes'])} ({p['files']}) / {fmt_bytes(d['bytes'])} ({d['files']}) = "
            f"{p['bytes'] / d['bytes']:.1f}x" if d["bytes"] else "-")


def sizing_table(r: dict[str, Any], markdown: bool) -> str:
    cells = [c for c in r.get("cells") or [] if c["sizing"]]
    rows = []
    for c in sorted(cells, key=lambda c: c["sizing"].get("well_sized_pct", 101.0)
                    if not _nan(c["sizing"].get("well_sized_pct")) else 101.0)[:12]:
        s = c["sizing"]
        pct = s.get("well_sized_pct")
        rows.append([c["id"], "n/a" if _nan(pct) else f"{pct:.1f}%", f"{s.get('well_sized_pct_raw', float('nan')):.1f}%",
                     str(s.get("files")), fmt_bytes(s.get("total", 0)), str(s.get("log_files")),
                     fmt_bytes(s.get("open_bytes", 0)), str(s.get("open_small_max"))])
    return format_table(["cell", "% well sized (open files aside)", "% well sized (all bytes)", "base files",
                         "base bytes", "log files", "open-file bytes", "max small files in a partition"], rows,
                        markdown=markdown)


def _run_line(r: dict[str, Any]) -> str:
    cfg, m, load = r["config"], r["machine"], r["load"]
    return (f"Run {r['finished']} on {m['cores']} cores ({m['cpu']}), Python {m['python']}, pyarrow {m['pyarrow']}, "
            f"pyhudi {m['pyhudi_commit']}; {len(r.get('cells') or [])} cells, {cfg['batches']} batches of "
            f"{cfg['rows_per_batch']:,} rows per stream, MOR compaction every {cfg['compact_every']} deltacommits, "
            f"delta-rs optimize {'every ' + str(cfg['delta_optimize_every']) + ' batches and ' if cfg['delta_optimize_every'] else ''}"
            f"at the end; {_passes(cfg.get('passes', 1))}. Load: {load['note']}.")


def _passes(n: int) -> str:
    if n <= 1:
        return "one pass"
    return (f"{n} passes over the groups, every other one in reverse order, each system's fastest pass "
            "counting (delta-rs' time for the same 300-partition stream moved between 1.3 and 3.0 s with its "
            "place in a long run)")


def _sections(r: dict[str, Any], markdown: bool) -> list[str]:
    h = r.get("headline") or {}
    summary = [f"{s} MB files: worst {v['worst']:.2f}x ({v['worst_cell']}), median {v['median']:.2f}x, "
               f"{v['cells'] - len(v['missed'])}/{v['cells']} cells <= {v['limit']:g}x{_amplification(r, int(s))}"
               for s, v in (h.get("sizes") or {}).items()]
    return [
        "Ratios pyhudi end-to-end / delta-rs end-to-end (lower is better; target <= 1.0 at 8 MB and up, "
        "<= 1.5 at 1 MB" + ("; missed cells in bold" if markdown else "") + "):",
        ratio_table(r, markdown),
        "Per size class: " + "; ".join(summary) + ".",
        "The ratio's three factors, medians per group against delta-rs (ratio = rows written x bytes per row x "
        "time per byte written; the format's share is read from pyhudi's live files' footers: the `_hoodie_*` "
        "meta columns, the bloom filter and key range):",
        factor_table(r, markdown),
        "Missed cells, and where pyhudi's time goes in them (step wall times from wrapping pyhudi's write steps):",
        missed_table(r, markdown),
        "pyhudi's sizing, worst cells first (cells where no partition holds more than its open file are `n/a`):",
        sizing_table(r, markdown),
    ]


LIMITS_TEXT = """\
What limits the missed cells. The ratio is the product of three factors, given per missed cell and as group
medians in the factor table: the rows pyhudi writes against delta-rs, the bytes a row costs, and the time a
byte written costs. Profiles: py-spy on single cells (`--cells X --profile FILE --no-save`, quiet machine;
shares of all samples of the bench process).

The run above has its own group medians in the factor table and what dominates each of its missed cells in
the missed-cells table; the figures below are from earlier runs, each named by its commit. On `67ef8d7`,
thread CPU time per step of a 300-partition upsert stream (p300-u20-all-s8MB-cow in-process, each step
wrapped with `time.thread_time`, so waits for the GIL do not count; 2.94 s of CPU and 1.98 s a stream on two
threads, 1,500 files): pyarrow's `write_table` 25 % (494 us a file), the writer's set-up and close 11 %
(211 us), footer entries 5.7 % (112 us), opening the output file 4.2 %, the batch's bloom filters and merged
rows 3.1-3.3 % each, taking the kept old table 3.2 %, encoding choices 3.1 %, the file name column 2.1 %,
keeping the written tables and keys 1.9 %. On `4b83355` (3.25 s of CPU a stream) keeping them took 7.6 %,
207 us a file: each file was copied into the pool and freed on its own; since `67ef8d7` a merge batch's
files are slices of one copy (`io/written_tables.keep_batch`).

* **Bytes per row: the Hudi format's own bytes, 1.3-1.4x delta-rs' in every group.** Every base file
  carries Hudi's five meta columns, which Hudi's readers, incremental queries and merges read:
  `_hoodie_record_key` repeats the key (here a 36-character uuid, as wide as the key column itself),
  `_hoodie_commit_seqno` is unique per row, and `_hoodie_commit_time`, `_hoodie_file_name` and
  `_hoodie_partition_path` are constant per file. The footer holds the bloom filter Hudi's bloom index reads
  (base64, as Hudi writes it, sized to the file's records where Hudi sizes every file's for `num_entries`,
  431 KB at its defaults) and the key range. Read from the live files' footers, these are 27-35 % of
  pyhudi's bytes (the meta columns 23-28 %, the footer's entries 5-8 %). Without them the data columns
  weigh 0.94-0.97x delta-rs' bytes per row, and 0.96x at 300 partitions, where each ~40 KB file's footer
  also holds its schema. `hoodie.populate.meta.fields=false` drops the meta columns: bulk_insert then runs
  at 1.43x delta-rs' throughput (`bench/arrow_engine.py`, the run recorded here). But pyhudi supports only inserts on such
  tables, so the grid keeps Hudi's default.
* **Rows written: equal, except where Hudi's write-time sizing rewrites more.** With updates spread over
  the keys, delta-rs' merge rewrites every file holding a matched key, and OPTIMIZE rewrites again. So
  both systems write the same rows (1.00x), and the whole byte gap is per row. (Earlier runs' notes put
  the 1.34-1.41x bytes on small-file top-ups; this split shows they were the format.) Insert-only cells
  differ:
  * delta-rs appends each batch once and rewrites it once in OPTIMIZE;
  * pyhudi's top-ups rewrite a partition's open file at every batch until it is full: 1.50x delta-rs'
    rows (15 batch-writes against 10) where the open file takes all 5 batches. That is 18 of the 24
    insert-only cells: every size at 30-300 partitions, 8-128 MB at 3, 128 MB at 1.

  Where files fill within the stream, pyhudi writes fewer rows than delta-rs (0.61-0.98x). A full file is
  not rewritten again, and merge-on-read sends updates to log files until the compaction.
* **Time per byte: below delta-rs' on 1-3 partitions with 8-128 MB files (group medians 0.51-0.54x in
  the run on `8d8fe03`), 0.75-0.77x at 30 partitions, 0.86-0.95x at 1 MB on 1-3 partitions, and 1.19-1.25x at
  300 partitions.** That is pyhudi's own cost per file and per write, and at 300 partitions the cost of
  creating files (below). (The run on `e6628c3`, before the compiled murmur kernel and the per-table
  dictionary memo of `478e1de` and `82f8592`: 0.70-0.85x, 1.02-1.08x and 1.30x; the run on `1d5fb4d`:
  1.09-1.18x at 30-300 partitions; the run on `789be9d`: 0.55-0.59x, 0.86-0.89x, 0.97-0.99x and
  1.16-1.18x; the run on `e6d1a4a`: 0.55-0.58x, 0.79-0.83x, 0.95-0.99x and 1.21-1.31x; the run on `3c291db`: 0.50-0.57x,
  0.82-0.88x, 0.91-0.97x and 1.26-1.32x; the run on `830a8d8`: 0.52-0.54x, 0.83-0.91x, 0.92-1.03x and
  1.40-1.46x; the run on `0738e8f`: 0.52-0.55x, 0.79-0.82x, 0.92-0.97x and 1.30-1.40x; the run on `1bb1418`:
  0.50-0.57x, 0.77-0.79x, 0.94-0.96x and 1.26-1.36x; the run on `d88b735`: 0.53-0.55x, 0.78-0.81x,
  0.90-0.95x and 1.27-1.38x; the run on `d753ff3`: 0.54-0.55x, 0.72-0.82x, 0.92-0.94x and 1.25-1.28x; the run on `3391531`:
  0.51-0.57x, 0.73-0.80x, 0.87-0.89x and 1.19-1.27x.)
  * **300 partitions.** A 20,000-row batch adds ~67 rows to each partition, so every batch merges 300
    files of ~30-65 KB, as delta-rs' merge rewrites 300 files. Raw pyarrow reading and writing the final
    65 KB files takes 1.7 ms a file here (0.7 read, 1.0 write). pyhudi's stream takes 1.5-2.3 ms a file
    all-in (index, merge, bloom, commit), delta-rs' 0.8-1.7 ms (p300-u10-all-s8MB-cow, 1,500 files each:
    3.15 against 1.67 s in one run on `1d5fb4d`, 2.43 against 1.55 s in the run on `830a8d8`, 2.23
    against 1.20 s in the run on `0738e8f`, 2.03 against 1.21 s in the run on `1bb1418`, 2.21 against
    1.20 s in the run on `d88b735`, 2.05 against 1.23 s in the run on `d753ff3`, 2.22 against 1.39 s in the
    run on `3391531`, 1.94 against 1.15 s in the run on `8d8fe03`). At ~320 rows a
    file the encoder's cost is per column chunk, not per byte: one of these files takes 0.49 ms to encode
    in memory with its 23 columns and 0.39 ms with the 18 data columns alone (pyarrow, one thread, 300
    files of one stream), so Hudi's five meta columns add ~28 % to every file's encoding here.
    * p300-u10-all-s8MB-cow (1,348 samples, on `1cd4b71`): write tasks 69 %, merge handles 44 % (reading
      the old files 9 %), new files 15 %;
    * encoding and writing the files (both kinds) 35 %, the first batch's 300 partition metadata files 7 %
      (mostly their fsync: ~0.6 ms each while the disk holds the batch's dirty data files; since `e6f4d44`
      a partition metafile is written atomically without fsync, as Hudi does: 682 fsyncs in a COW + MOR
      cell pair became 76, 0.435 s of fsync became 0.030 s, and pyhudi's time over four 300-partition
      groups fell by ~3 % in three alternating A/B runs);
    * the commit 4 %, the index lookup 2 %, keeping the written keys 2.5 %.
  * **30 partitions.** p30-u10-recent-s8MB-cow with 15 batches (1,044 samples, on `1d5fb4d`): merge
    handles 51 %, of which writing the files 21 %, reading the old ones 9 %, the bloom filters 6 % (murmur
    hashing 4.5 %) and merging 4 %; the index lookup 2 %.
  * **1 MB files: per-file fixed costs.** Each ~1 MB file pays the encoder's set-up, a fresh bloom filter
    of all its keys, its footer, marker and commit entry. Since `478e1de` the filter's murmur rounds (Hudi's
    30 per key at its default fpp) run in a compiled kernel, vectorised across keys with the GIL released
    (0.56 against numpy's 2.9 ms for 20,000 uuid keys); since `82f8592` the dictionary columns sampled
    from a file are kept for the table's later writes (sampling 22 columns afresh each write cost 1.7 ms,
    2.2 times a write). On p1-u0-none-s1MB-cow's stream, in-process with its input read outside the timing
    (5 x 20,000 rows, 40 repetitions), the two took pyhudi from 197-210 to 151-161 ms against delta-rs'
    75-80 ms. What is left per write outside its write tasks is ~7.5 ms (the commit 1.7 with its lock 0.8,
    the instant 1.0, planning 1.0, preparing 1.0, the index 0.9 ms), against delta-rs' ~15 ms for a whole
    20,000-row append; in the write tasks, pyarrow's encoding is 77 % of writing a file, the bloom filter
    9 %, and routing the inserts to their files hashes each key with MD5 as Hudi does (~2.3 ms a batch).
  * Reading a merge's old file is 14 % of a one-partition stream at 8 MB (30 batches). Since `36ceafc`,
    files from 2 MB up are read with Arrow's thread pools: 1.5-1.8x faster reads of 2-8 MB files on an
    idle core. The 5-batch cells here read files of 2-3 MB, and their times did not move beyond the
    noise (two A/B runs each way over the 56 cells of 1-3 partitions at 8-128 MB).

* **The format floor (`_format_floor.py`, since `4649b3a`): what the Hudi format's files cost alone.**
  After each group's first pass, raw pyarrow reads the stream's inputs and writes again every file the
  pyhudi table holds: each base file version re-encoded with its own encoding choices, after reading the
  version a merge keeps (a spliced top-up: the old bytes copied, the new row groups encoded), the log,
  partition metadata and timeline files copied; on two threads, from content prepared outside the
  timing. It leaves out what pyhudi decides (planning, the index lookup, merging, bloom filters, markers,
  the commit protocol), so it is a lower bound for a writer of the format on pyarrow. Group medians in the
  run on `8d8fe03` (the floor writes its parquet files through a 1 MB buffer, as pyhudi's local output streams
  do):
  * 1-3 partitions: floor 0.45-0.54x delta-rs, pyhudi 1.37-1.90x its floor;
  * 30 partitions: floor 0.64-0.73x delta-rs, pyhudi 1.51-1.69x its floor;
  * 300 partitions: floor 1.02-1.05x delta-rs, pyhudi 1.58-1.62x its floor.

  The run on `3391531`: 0.45-0.60x and 1.28-2.19x, 0.73-0.77x and 1.35-1.40x, 0.96-0.98x and 1.62-1.77x.
  The run on `d753ff3`: 0.33-0.54x and 1.50-2.59x, 0.74-0.79x and 1.41-1.56x, 0.98-1.01x and 1.69-1.74x.
  The run on `d88b735` (before the Java-safety scan once per merge batch of `5093e64`): 0.37-0.53x and
  1.48-2.22x, 0.74-0.77x and 1.47-1.56x, 1.00-1.11x and 1.63-1.79x. The run on `1bb1418` (before the
  review mend of `afe8475`, which only copies fewer footer bytes): 0.37-0.56x and 1.47-2.24x, 0.66-0.78x and 1.49-1.60x, 1.02-1.05x and 1.72-1.77x. The
  run on `0738e8f` (that code but the write split below): 0.36-0.50x and 1.67-2.52x,
  0.68-0.70x and 1.60-1.65x, 0.96-1.01x and 1.74-1.78x. The run on `830a8d8`, before the four
  changes the run on `1bb1418` measured: 0.34-0.49x and 1.98-2.32x, 0.70-0.74x and 1.64-1.83x, 0.97-1.01x and 1.87-1.93x.

  Both ratios move together from run to run: at 300 partitions the run on `3c291db` had the floor at
  1.18-1.22x delta-rs and pyhudi at 1.41-1.44x it, the run on `e6d1a4a` 1.07-1.15x and 1.53-1.59x, with
  pyhudi's own time against delta-rs' 1.70-1.79x in the one and 1.63-1.78x in the other. A code change's
  effect is measured in paired runs instead. The code of the run on `1bb1418` against `006d952` (the run
  on `830a8d8`'s code): buffered local output streams (the parquet writer's ~94 small writes a file became one or
  two) and a merge that no longer opens a file this process wrote and kept, together 0.948x the time on
  p300-u10-all-s8MB-cow and 0.963x on p30-u20-all-s8MB-cow (alternating processes, 6 and 12 pairs); the
  index lookup in one pass over the cached keys of every file, 0.983x more on the 30-partition stream
  (16 pairs in one process); the write split that counts the base file a bucket rewrites and takes one
  task per worker from 8 buckets a worker up, 0.959x more on that stream (14 pairs). The code of the run on `830a8d8` against `6ff844c`: 0.943x and 0.964x.
  The code of the run on `8d8fe03` against the run on `3391531`'s (`7f72280`): a kept table copied into the pool in one
  call (`eb93739`), a batched merge's footer key ranges from a compiled kernel and the key cache sharing
  the kept table's key column (`9d580d1`). Paired in one process on p30-u20-all-s8MB-cow: 0.970x and
  0.996x for the first (16 and 24 pairs), 0.962x, 0.994x and 0.993x for the other two (24, 24 and 20
  pairs); on p300-u10-all-s8MB-cow 0.944x and 0.991x (6 and 8 pairs): each within the noise.
  The code of the run on `d753ff3` (the run on `3391531`'s, but for a review mend no benchmark reaches) against
  `afe8475` (the Java-safety scan once per merge batch and each schema's leaf
  paths kept, `5093e64`): 0.940x on p300-u10-all-s8MB-cow (8 pairs of alternating processes) and 0.977x
  and 1.001x on p30-u20-all-s8MB-cow (two runs of 10 pairs); in one process, 0.969x and 0.976x on the
  30-partition stream for its two parts (16 pairs each).

  At 300 partitions the floor moves with this VM's cost of creating files: 1.21-1.28x delta-rs in the run
  on `a5a8078`, 0.82-0.87x in the run on `789be9d`, 1.07-1.15x in the run on `e6d1a4a`, 1.18-1.22x in the
  run on `3c291db` (above the 1.0 target in 21 of the 28 cells at 8-128 MB), 0.97-1.01x in the run on
  `830a8d8` (12 of 28), 0.96-1.01x in the run on `0738e8f` (14 of 28), 1.02-1.05x in the run on
  `1bb1418` (20 of 28), 1.00-1.11x in the run on `d88b735` (18 of 28), 0.98-1.01x in the run on `d753ff3`
  (13 of 28), 0.96-0.98x in the run on `3391531` (9 of 28) and 1.02-1.05x in the run on `8d8fe03` (21 of 28). The stream leaves 1,500 base file versions and 300 partition
  metadata files in 300 directories. What a creation costs here depends on how many files were deleted in
  the minute before: this VM's ext4 skips inodes freed within the last minute when it allocates one
  (`find_inode_bit` -> `recently_deleted`, which looks each skipped inode up in the inode table). Under
  `perf` (`cpu-clock`, kernel symbols), a 30-partition upsert stream run over and over (each repetition
  deleting the last one's table) spent 18 % of its CPU there (`find_get_block_common` 7.2 %,
  `recently_deleted` 6.0 %, `ext4_get_group_desc` 2.5 %, `find_inode_bit` 2.1 %); empty files created in a
  fresh directory took 0.012-0.019 ms each on a quiet file system and 0.085 ms after 9,000 deletes in the
  minute before, and 0.3-0.5 ms right after a series of benchmark runs (earlier notes measured 0.36-0.65 ms
  and put it on the directories). Since the run on `e6d1a4a` the grid no longer deletes an earlier group's tables
  before the next group (`Deletes` above); each system's own deletes still count in its cell, and
  pyhudi's writes delete about a dozen working files each (markers, temporary timeline files, the lock and
  the heartbeat), where delta-rs renames its temporary files into place. delta-rs writes as many files (its merges rewrite the 1,500 files, its
  OPTIMIZE 300 more) in less time, natively. That cost also moves from run to run: the floor of the six
  insert-only 300-partition cells, whose tables hold the same files (1,816 files, 65-68 MB), ranged
  1.13-1.21 s in the run on `8d8fe03` (1.19-1.63 s, 1.18-1.33 s, 1.26-1.67 s, 1.07-1.55 s, 1.22-1.29 s, 1.21-1.72 s,
  1.29-1.51 s and 1.39-2.27 s in eight earlier ones). Elsewhere the floor is
  below the target, and what is left is pyhudi's own work per file and per write. A profile of a
  300-partition upsert stream on one thread (py-spy, 500 Hz, 8,923 samples of pyhudi's writes; 4 upserts
  of 20,000 rows into 300 partitions):
  * creating files 27% (data files 17%, the first batch's partition metadata files 8%);
  * pyarrow encoding 24% and reading the old files 8%;
  * Arrow compute kernels 9.5% and numpy 2.4%;
  * Python 29%, spread over ~40 functions, none above 2.5%: gathering each file's rows, the meta columns,
    each file's encoding choices and Java-safety scan, the key cache, the commit metadata.

  `4649b3a` cut what that profile showed per file: the encoding memo finds its schema with `equals`
  (24 to 1 us a file), the Java-safety scan keeps its float columns per schema (48 to 23 us), and two
  name lists were rebuilt per column. Together, 2-3% less CPU on that stream (three alternating runs).
* **Sizing is met on every cell.** Two pyhudi choices make it so at these small batch sizes:
  * every base file's bloom filter is sized to its records (`hoodie.pyhudi.index.bloom.size.to.records`);
  * where Hudi's record-size walk finds no commit above its threshold, pyhudi estimates from the newest
    commits together or, on a first write, from an encoded sample of the records
    (`hoodie.pyhudi.record.size.estimate.auto`). Hudi assumes 1,024 B: a 20,000-row stream at 8 MB then
    planned 1.5 MB files, small from birth.

**What stays on pyhudi's side:**
* the per-file and per-write costs: pyhudi takes 1.4-1.9x the format floor in every group of the run
  on `8d8fe03` (group medians). At 300 partitions the floor itself is above the target in that run
  (1.02-1.05x), just under it in the run on `3391531` (0.96-0.98x), at it in the run on `d753ff3`
  (0.98-1.01x), at or above it in the runs on `d88b735` (1.00-1.11x) and `1bb1418` (1.02-1.05x), at it in the runs on
  `830a8d8` and `0738e8f`,
  above it in the runs on `a5a8078`, `e6d1a4a` and `3c291db`, below it in the run on `789be9d`. On two cores the part that does not shrink is Python: on
  a 30-partition upsert stream (one thread 0.66 s, two threads 0.50 s of time and 0.82 s of CPU, delta-rs
  0.39 s and 0.61 s), some thread holds the GIL 38 % of the time, and two one-thread copies of the stream
  run at once each take 20 % more CPU than alone. Most of that extra CPU is the kernel's: over ten such
  streams, two threads took 5-10 % more user time than one and about twice the system time, with 16,000-
  22,000 voluntary context switches against 1,400-2,000 (each GIL hand-over between the write threads
  wakes the other thread). Since `d586023` a write's buckets go to two tasks per thread instead of four
  (a task costs a marker file and a merge batch's fixed passes): 0.92x time on that stream (paired runs). Since `dc77e77` a merge of a file this process wrote takes its rows
  from the table the file was encoded from (`io/written_tables.py`, footer read only): 11 % less time on
  one thread, 4-5 % less CPU on two, where the reads it saves had overlapped the other thread's Python
  and the time did not move beyond the noise. Since the code of the run on `1bb1418` it does not open the file at all (its
  footer entries and size are kept with the table: on an object store that saves a GET a merge).
* **CPU work, not cores.** Since the run on `3391531` the grid measures each system's CPU seconds (every
  thread's user and system time over its writes and delta-rs' OPTIMIZE). Group medians in the run on `8d8fe03`
  (the run on `3391531` in brackets):
  * pyhudi used 1.02-1.09x delta-rs' CPU seconds at 30 partitions (1.09-1.15x), 1.62-1.68x at 300
    (1.58-1.68x), and 0.70-0.99x on 1-3 partitions (0.72-0.97x); p30-u20-all-s8MB-cow: 0.66 against
    0.61 s (0.73 against 0.63 s);
  * both kept about 1.5 of the 2 cores busy: pyhudi 1.51-1.52 at 30 partitions against delta-rs'
    1.49-1.50 (1.53-1.54 against 1.45-1.47), and 1.48-1.49 against 1.49-1.53 at 300 (1.47-1.49 against
    1.50-1.55).

  So where the grid misses its target, pyhudi does more work than delta-rs; it does not use the cores
  worse. At 30 partitions it writes 1.38x delta-rs' bytes per row with 1.02-1.10x its CPU. Where that CPU goes
  (`perf`, cpu-clock, 6,098 samples of the bench process running p30-u20-all-s8MB-cow's stream in-process
  over and over, on `7f72280`): the kernel 19 % (copying the files' data into the page cache 5 %,
  zeroing new pages 2 %, creating files), libarrow 19 % (snappy 6 %,
  take 1.3 %), libc 19 % (memmove 6 %, malloc and free about 9 %), CPython 16 % (3 % of it the full garbage
  collection the bench runs between streams, outside the timing), libparquet 15 % (the encoders), Arrow's compute library 3 %, numpy 2 %. With call stacks
  (`--call-graph dwarf`, 892 samples): a third of the memmove is the merge's take of string columns, a
  quarter the concatenations (the copies into the write pool, `combine_chunks`). Three process-wide settings changed nothing beyond the noise there: the GIL's switch
  interval at 0.5 instead of 5 ms, glibc's malloc without trimming or mmap (`MALLOC_TRIM_THRESHOLD_`,
  `MALLOC_MMAP_THRESHOLD_`), and the garbage collector off (a stream runs 7 young collections, 1 ms).
* What bounds the 30-partition stream on two threads is the time some thread holds the GIL, not the
  encoder's work nor how the work is split (p30-u20-all-s8MB-cow in-process, on `afe8475`, pairs in one
  process):
  * 0.3 ms of pure Python added to each merged file (120 files a stream) took the stream 1.126x the time
    (IQR 1.091-1.152, 10 pairs): about 1.5x the time added. The same 0.3 ms spent with the GIL released
    (a sleep) took it 1.054x (IQR 1.030-1.109): 0.6x the time added.
  * A write's two tasks ended 4.7 ms apart on average (up to 16 ms of a 60 ms stage). Letting an idle
    thread write the other task's remaining files ended them within 0.5 ms of each other but took 1.014x
    the time (IQR 0.975-1.057, 14 pairs), so it was not kept: a thread running alone gets the GIL to itself.
  * On one thread a merged file costs 3.2 ms: pyarrow's encoding 1.5 ms; the merge's take 0.38 ms; keeping
    the table for the next merge 0.35 ms; its bloom filter 0.31 ms; its encoding choices and Java-safety
    scan 0.16 ms; its footer entries 0.11 ms.
  * Outside the write tasks a write spends 14.6-17 ms of its 74-83 ms: the index lookup and profile
    4.8-5.7 ms, the commit 2.3-2.7 ms, the instant 1.0-1.7 ms, routing and the tasks' set-up 2.4 ms,
    preparing the records 1.4 ms.
* The other two factors are Hudi's format and Hudi's small-file handling: top-ups rewrite files at write
  time, so a reader never sees the small files delta-rs leaves until its OPTIMIZE.

Short streams (5 batches) weigh the first batches. The Arrow-engine stream (16 + 16 batches, one
partition, 8 MB) is the long-stream figure.
"""


def render_text(r: dict[str, Any]) -> str:
    return "\n\n".join([f"{TITLE}", _run_line(r), *_sections(r, False)])


def render_markdown(r: dict[str, Any]) -> str:
    doc = (__import__("stream_grid").__doc__ or "").split("\n\n")
    method = "\n\n".join(doc[1:])
    problems = r["verification"]["problems"]
    verdict = ("Every table read back equal to the generator's keys and versions." if not problems else
               "**Correctness problems:** " + "; ".join(problems))
    return "\n\n".join([f"`{r['command']}`", _run_line(r), method.strip(), verdict, *_sections(r, True),
                        LIMITS_TEXT.strip()])
