"""What is on disk after a benchmark wrote a table: live files, sizes against the sizing limits, bytes
written, and queries through one Spark session over each table's current files.

Shared by `small_batches.py` and `large_load.py`. "Live files" means what a reader of the latest
snapshot opens: for a pyhudi table the latest file slices of the file-system view (base files, plus log
files on merge-on-read), for a delta-rs table the add actions of the current version, for a plain
Spark parquet directory every parquet file under it.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from common import MB, REPO_DIR, median  # noqa: E402 - bench/ is on sys.path

# --------------------------------------------------------------------------- live files


def local_path(uri: str) -> str:
    return unquote(urlparse(uri).path) if "://" in uri else uri


def hudi_live_files(path: str) -> dict[str, list[tuple[str, int]]]:
    """{"base": [(absolute path, bytes)], "log": [...]} of the latest file slices (pyhudi's own view)."""
    from pyhudi.model.table_config import load_table_config
    from pyhudi.storage import Storage
    from pyhudi.timeline.timeline import ActiveTimeline
    from pyhudi.view.builder import build_view

    storage = Storage(path)
    view = build_view(storage, load_table_config(storage), ActiveTimeline.load(storage))
    base, logs = [], []
    for sl in view.all_latest_merged_file_slices():
        if sl.base_file is not None:
            base.append((os.path.join(path, sl.base_file.path), sl.base_file.size))
        logs.extend((os.path.join(path, lf.path), lf.size) for lf in sl.log_files)
    return {"base": sorted(base), "log": sorted(logs)}


def delta_live_files(path: str) -> list[tuple[str, int]]:
    """Current files of a delta-rs table (the add actions of its latest version)."""
    from deltalake import DeltaTable

    dt = DeltaTable(path)
    sizes = pa.table(dt.get_add_actions(flatten=True)).to_pydict()
    by_rel = dict(zip(sizes["path"], sizes["size_bytes"], strict=True))
    out = []
    for uri in dt.file_uris():
        p = local_path(uri)
        rel = os.path.relpath(p, path)
        out.append((p, int(by_rel.get(rel, by_rel.get(unquote(rel), os.path.getsize(p))))))
    return sorted(out)


def parquet_files(path: str) -> list[tuple[str, int]]:
    """Every data parquet file under `path` (a plain Spark or pyarrow output directory)."""
    out = []
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
        out.extend((os.path.join(root, f), os.path.getsize(os.path.join(root, f)))
                   for f in files if f.endswith(".parquet") and not f.startswith((".", "_")))
    return sorted(out)


# --------------------------------------------------------------------------- sizes against the limits


def size_summary(files: Sequence[tuple[str, int]], root: str, small_file_limit: int,
                 max_file_size: int) -> dict[str, Any]:
    """Count, percentiles and how well the files are sized.

    `well_sized_pct` = share of bytes in files between the small-file limit and 1.1 x max size (the
    `pyhudi files` band). `ideal_files` = sum over partitions (parent directories) of
    ceil(partition bytes / max size): the fewest files that respect the max size; `ideal_files_global`
    ignores partitions (the target's literal "total bytes / max size").
    """
    sizes = np.array([s for _, s in files], dtype=np.int64)
    if not len(sizes):
        return {"files": 0, "total": 0}
    per_part: dict[str, int] = {}
    for p, s in files:
        key = os.path.relpath(os.path.dirname(p), root)
        per_part[key] = per_part.get(key, 0) + s
    total = int(sizes.sum())
    well = int(sizes[(sizes >= small_file_limit) & (sizes * 10 <= max_file_size * 11)].sum())
    ideal = sum(math.ceil(b / max_file_size) for b in per_part.values())
    return {
        "files": int(len(sizes)), "total": total, "partitions": len(per_part),
        "min": int(sizes.min()), "p10": int(np.percentile(sizes, 10)), "p50": int(np.percentile(sizes, 50)),
        "p90": int(np.percentile(sizes, 90)), "max": int(sizes.max()), "mean": float(sizes.mean()),
        "small_files": int((sizes < small_file_limit).sum()),
        "oversized_files": int((sizes * 10 > max_file_size * 11).sum()),
        "well_sized_bytes": well, "well_sized_pct": 100.0 * well / total if total else float("nan"),
        "ideal_files": ideal, "ideal_files_global": math.ceil(total / max_file_size),
        "files_over_ideal": len(sizes) / ideal if ideal else float("nan"),
    }


# --------------------------------------------------------------------------- bytes written


_COMPLETED = (".commit", ".deltacommit", ".replacecommit")


def hudi_completed_instants(path: str) -> dict[str, str]:
    """{instant: action} of the completed write-like instants in .hoodie/ (active timeline only)."""
    out = {}
    for f in os.listdir(Path(path) / ".hoodie"):
        for suffix in _COMPLETED:
            stem = f[: -len(suffix)]
            if f.endswith(suffix) and stem.isdigit():
                out[stem] = suffix[1:]
    return out


def hudi_instant_bytes(path: str, instant: str, action: str) -> dict[str, Any]:
    """totalWriteBytes, records written and files written of one completed instant."""
    meta = json.loads((Path(path) / ".hoodie" / f"{instant}.{action}").read_text())
    stats = [s for v in (meta.get("partitionToWriteStats") or {}).values() for s in v or []]
    kind = action
    if action == "commit" and (meta.get("operationType") == "COMPACT" or meta.get("compacted") in (True, "true")):
        kind = "compaction"
    elif action == "replacecommit" and meta.get("operationType") == "CLUSTER":
        kind = "clustering"
    return {"instant": instant, "kind": kind, "bytes": int(sum(int(s.get("totalWriteBytes") or 0) for s in stats)),
            "records": int(sum(int(s.get("numWrites") or 0) for s in stats)), "files": len(stats)}


class HudiWriteLedger:
    """Bytes written by every completed instant of a table, read as soon as it completes.

    Archival moves old commit files out of .hoodie/, so the ledger is updated after every write
    (the newest instants are never archived)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.instants: dict[str, dict[str, Any]] = {}

    def update(self) -> list[dict[str, Any]]:
        """New instants since the last call, oldest first."""
        if not (Path(self.path) / ".hoodie").exists():
            return []
        new = []
        for instant, action in sorted(hudi_completed_instants(self.path).items()):
            if instant not in self.instants:
                self.instants[instant] = hudi_instant_bytes(self.path, instant, action)
                new.append(self.instants[instant])
        return new

    def total(self, kind: str | None = None) -> int:
        return sum(i["bytes"] for i in self.instants.values() if kind is None or i["kind"] == kind)

    def by_kind(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for i in self.instants.values():
            k = out.setdefault(i["kind"], {"instants": 0, "bytes": 0})
            k["instants"] += 1
            k["bytes"] += i["bytes"]
        return out


def delta_bytes_written(path: str) -> dict[str, Any]:
    """Sum of the sizes of every add action in the delta log (every file any commit wrote), per operation."""
    log_dir = Path(path) / "_delta_log"
    total, rows, per_op = 0, 0, {}
    for f in sorted(log_dir.glob("*.json")):
        op, added = "?", 0
        for line in f.read_text().splitlines():
            if not line.strip():
                continue
            action = json.loads(line)
            if "add" in action:
                added += int(action["add"].get("size") or 0)
                rows += int(json.loads(action["add"].get("stats") or "{}").get("numRecords") or 0)
            elif "commitInfo" in action:
                op = str(action["commitInfo"].get("operation") or "?")
        total += added
        k = per_op.setdefault(op, {"commits": 0, "bytes": 0})
        k["commits"] += 1
        k["bytes"] += added
    return {"bytes": total, "rows": rows, "by_operation": per_op}


HUDI_FOOTER_KEYS = ("org.apache.hudi.bloomfilter", "hoodie_min_record_key", "hoodie_max_record_key",
                    "hoodie_bloom_filter_type_code")


def hudi_meta_bytes(files: list[tuple[str, int]]) -> dict[str, int]:
    """Of these base files' bytes, how many the Hudi format itself adds: the five `_hoodie_*` meta columns'
    column chunks and the footer's bloom filter and record-key range (read from each file's footer)."""
    total = meta = footer = 0
    for f, size in files:
        md = pq.ParquetFile(f).metadata
        total += size
        for rg in range(md.num_row_groups):
            g = md.row_group(rg)
            meta += sum(g.column(c).total_compressed_size for c in range(g.num_columns)
                        if g.column(c).path_in_schema.startswith("_hoodie_"))
        kv = md.metadata or {}
        footer += sum(len(k) + len(kv[k]) for k in kv if k.decode() in HUDI_FOOTER_KEYS)
    return {"bytes": total, "meta_column_bytes": meta, "footer_bytes": footer}


# --------------------------------------------------------------------------- queries and checks


def checksum(df: Any) -> tuple[int, int, str]:
    """(rows, distinct keys, sum of xxhash64(uuid, ts)): order independent, and equal for two tables
    only if they hold the same keys at the same versions."""
    from pyspark.sql import functions as F

    r = df.agg(F.count(F.lit(1)).alias("n"), F.countDistinct("uuid").alias("keys"),
               F.sum(F.xxhash64("uuid", "ts").cast("decimal(38,0)")).alias("h")).collect()[0]
    return int(r["n"]), int(r["keys"]), str(r["h"])


def read_files(spark: Any, files: Sequence[tuple[str, int]] | Sequence[str]) -> Any:
    """Plain Spark parquet read of exactly these files (the same engine for every table format)."""
    paths = [f if isinstance(f, str) else f[0] for f in files]
    return spark.read.parquet(*paths)


def run_interleaved(systems: Sequence[str], queries: dict[str, Callable[[str], Any]], runs: int,
                    timer: Callable[[], Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """Each query `runs` times on every system, rotating the system order per round; the answer of the
    last run and the median wall time are kept. `queries[q](system)` runs the query and returns its answer."""
    out: dict[str, dict[str, dict[str, Any]]] = {q: {s: {"seconds_runs": []} for s in systems} for q in queries}
    for r in range(runs):
        order = list(systems[r % len(systems):]) + list(systems[: r % len(systems)])
        for q, fn in queries.items():
            for s in order:
                with timer() as t:
                    answer = fn(s)
                cell = out[q][s]
                cell["seconds_runs"].append(t[0])
                cell["answer"] = answer
    for q in out:
        for s in out[q]:
            out[q][s]["seconds"] = median(out[q][s]["seconds_runs"])
    return out


def mb(n: float) -> float:
    return n / MB


def warm_page_cache(path: str) -> None:
    """Read every file under `path` once, so every system reads its input from memory."""
    for root, _dirs, files in os.walk(path):
        for f in files:
            with open(os.path.join(root, f), "rb") as fh:
                while fh.read(8 * MB):
                    pass


def hudi_rs_counts(paths: dict[str, str]) -> dict[str, int | None]:
    sys.path.insert(0, str(REPO_DIR))
    from tests.helpers import hudi_rs

    out: dict[str, int | None] = {}
    for k, path in paths.items():
        try:
            t = hudi_rs(path)
            out[k] = t.num_rows if t is not None else 0
        except Exception as e:  # noqa: BLE001 - reported as a problem, not a crash
            print(f"hudi-rs could not read {k}: {type(e).__name__}: {e}")
            out[k] = None
    return out
