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
        h["sizes"][str(size)] = {"worst": worst["ratio"], "worst_cell": worst["id"], "limit": lim,
                                 "median": median([c["ratio"] for c in sel]), "cells": len(sel), "missed": missed}
        targets.append({"target": f"Arrow stream grid, {size} MB files: every cell <= {lim:g} x delta-rs merge + "
                                  "optimize.compact (end-to-end)",
                        "measured": f"worst {worst['ratio']:.2f}x ({worst['id']}), median "
                                    f"{h['sizes'][str(size)]['median']:.2f}x, {len(sel) - len(missed)}/{len(sel)} "
                                    "cells met",
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
             _x(rows_ratio(c)), _per_row(c), _per_byte(c), top_steps(c), cause(c)]
            for c in sorted(cells, key=lambda c: -c["ratio"])]
    return format_table(["cell", "ratio", "pyhudi s", "delta-rs s (writes + optimize)",
                         "written: pyhudi / delta-rs (files)", "rows written vs delta-rs",
                         "bytes per row vs delta-rs (Hudi's meta columns + bloom footer)",
                         "time per byte written vs delta-rs", "pyhudi's largest steps (share of its time)",
                         "what dominates"], rows,
                        markdown=markdown) if rows else "(no cell missed its limit)"


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


def format_share(c: dict[str, Any]) -> float:
    """Share of pyhudi's live base-file bytes in the Hudi format's own parts (meta columns, bloom footer)."""
    return float(c["sizing"].get("format_bytes_share", float("nan")))


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
    pb = c["ratio"] / written_ratio(c) if not _nan(written_ratio(c)) else float("nan")
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
    pb = median([c["ratio"] / written_ratio(c) for c in sel])
    rows = [c for c in sel if not _nan(rows_ratio(c))]
    if not rows:
        return f" (median {wr:.1f}x delta-rs' bytes written, {pb:.2f}x its time per byte written)"
    return (f" (medians against delta-rs: {median([rows_ratio(c) for c in rows]):.2f}x rows written x "
            f"{median([bytes_per_row_ratio(c) for c in rows]):.2f}x bytes per row = {wr:.2f}x bytes written; "
            f"{pb:.2f}x time per byte written)")


def _per_byte(c: dict[str, Any]) -> str:
    """The ratio with write amplification divided out: what pyhudi's writing costs per byte against delta-rs'."""
    wr = written_ratio(c)
    return "-" if _nan(wr) else f"{c['ratio'] / wr:.2f}x"


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
            f"at the end. Load: {load['note']}.")


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
        "Missed cells, and where pyhudi's time goes in them (step wall times from wrapping pyhudi's write steps):",
        missed_table(r, markdown),
        "pyhudi's sizing, worst cells first (cells where no partition holds more than its open file are `n/a`):",
        sizing_table(r, markdown),
    ]


LIMITS_TEXT = """\
What limits the missed cells. Two factors multiply, and the missed-cells table gives both per cell: the bytes
pyhudi writes against delta-rs (Hudi's small-file handling rewrites the open file of every partition a batch
reaches) and its time per byte written (the ratio with that amplification divided out). Profiles: py-spy on
single cells (`--cells X --profile FILE --no-save`, quiet machine; shares of all samples of the bench
process).

* **Sizing is met on every cell.** Every base file's bloom filter is sized to its records
  (`hoodie.pyhudi.index.bloom.size.to.records`; Hudi sizes every file's for `num_entries`, 431 KB of footer at
  its defaults), and where Hudi's record-size walk finds no commit above the threshold pyhudi estimates from
  the newest commits together or, on a first write, from an encoded sample of the records
  (`hoodie.pyhudi.record.size.estimate.auto`; Hudi assumes 1,024 B, so a 20,000-row stream at 8 MB planned
  1.5 MB files, small from birth, and at 1 MB merge-on-read kept 26-42 small files in a partition). A planned
  file a little past the max is written whole instead of rolling a few dozen records into a small file.
* **30 and 300 partitions: a file rewritten per partition per batch.** A 20,000-row batch over 300
  partitions adds ~67 rows to each; small-file handling routes them into each partition's open file, so every
  batch reads, merges and re-encodes 300 files (merge-on-read too: a slice without log files below the
  small-file limit takes inserts and updates by merge, as Hudi's delta-commit executor does for small file
  ids), where delta-rs appends 300 files and rewrites them once in OPTIMIZE: 1.37-1.41x its bytes. The per-file
  costs that made pyhudi's time per byte 1.31-1.56x delta-rs' are cut to 1.19-1.33x (2026-11-29, after
  `0ed8055`): one operation's files share the sampled dictionary-column choice (it sampled every file: 7 %
  of p30-u10-recent-s8MB-cow), a batched merge hashes its files' bloom keys one pass per filter shape,
  fresh filters of files that crossed a power of two included (bloom work fell from 12 % to 6 %), and the
  Java-safety scan of float columns reads their buffers with numpy. In that cell's profile now (quiet
  machine, 349 samples, shares of all): merge handles 34 % (writing the files 12 %, bloom hashing 6 %,
  reading the old files 5 %, merging 6 %), new files 6 % (their fresh filters 5 %), the index lookup 2 %. What is left is
  per-key hashing (Hudi's 30 murmur rounds a key, in numpy) and the encoder. At 300 partitions the files are
  ~30 KB and per-file costs lead: p300-u10-all-s8MB-cow (1,299 samples, after `ae558b5`) spends 67 % in the
  write tasks: merge handles 47 % (writing the files 34 %, reading the old ones 10 %), new files 11 %, the
  first batch's 300 partition metadata files 6 % (a new directory and file cost ~1 ms on this disk, as
  delta-rs' first batch pays too), the index lookup 6 %, the commit 4 %. Writing a 30 KB file into an
  existing directory takes ~0.75 ms here whether pyarrow or plain Python writes it. The index lookup's key
  reads are since cut (`74816e5`: the files a write creates or merges put their keys in the per-process key
  cache, so the next write does not read them back). The same cell's profile after it (1,348 samples, on
  `1cd4b71`): write tasks 69 %, merge handles 44 % (reading the old files 9 %), new files 15 %, encoding
  and writing the files (both kinds) 35 %, partition metadata 7 %, the commit 4 %, the index lookup 2 % and keeping the written keys 2.5 %:
  about 1 % saved in all, inside this machine's run-to-run noise (the cell took 3.45-4.39 s over six runs).
* **1 MB files: per-file fixed costs.** Each ~1 MB file pays the encoder's set-up, its footer, its marker and
  its commit entry. A create handle whose bucket the planner sized as one file now writes it without first
  encoding a 5,000-row probe (about half a 1 MB file), and re-splits only an attempt that comes out too big.
  Per byte written pyhudi took 1.07x delta-rs' time at 1 MB in one partition, 1.23-1.29x at 3-300, in the
  run after these cuts (29 of 56 cells within 1.5x, 10 before; the run above gives its own count).
* **128 MB copy-on-write: write-time sizing.** No partition reaches 128 MB in a short stream, so each batch's
  inserts top up the one open file, which is the whole partition: batch k rewrites k batches' rows, where
  delta-rs appends and its one `optimize.compact` rewrites every row once. Merge-on-read defers it to compaction.

None of these is removable on pyhudi's side without giving up Hudi's write-time small-file handling (top-ups
rewrite files at write time, so a reader never sees the small files delta-rs leaves until its OPTIMIZE).
Short streams (5 batches) weigh the first batches; the Arrow-engine stream (16 + 16 batches, one partition,
8 MB) is the long-stream figure.
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
