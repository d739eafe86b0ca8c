"""Shared helpers for pyhudi's benchmarks: flags, timing, load monitoring, data, results and docs.

Benchmarks are programs (``python bench/<name>.py``), not tests. Each one measures two systems in
the same run and reports their ratio, because the machine they run on is shared and absolute times
move by tens of percent from one run to the next. Results go to ``bench/results/<name>-<ts>.json``
and ``bench/results/<name>-latest.json``; ``docs/benchmarks.md`` is regenerated from the latest JSON
of each benchmark (``python bench/render_docs.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import threading
import time
import uuid as uuid_mod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"
DOCS_FILE = REPO_DIR / "docs" / "benchmarks.md"
MB = 1024 * 1024

# --------------------------------------------------------------------------- flags


def base_parser(description: str, default_rows: int) -> argparse.ArgumentParser:
    """Flags every benchmark shares; `--scale` multiplies the benchmark's default row count."""
    p = argparse.ArgumentParser(description=description,
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--scale", type=float, default=1.0,
                   help=f"multiplies the default size ({default_rows:,} rows); 10 = a large run")
    p.add_argument("--seed", type=int, default=42, help="seed of the generated data")
    p.add_argument("--work-dir", default=None,
                   help="where tables and staging files go (default: a fresh temporary directory)")
    p.add_argument("--keep", action="store_true", help="keep the work directory afterwards")
    p.add_argument("--master", default="local[2]", help="Spark master")
    p.add_argument("--driver-memory", default=None,
                   help="spark.driver.memory (local mode: the executors' heap too); default: Spark's "
                        "(1g) up to --scale 2, 4g above (caching a 2M-row input OOMs in 1g)")
    p.add_argument("--no-save", action="store_true",
                   help="do not write bench/results/*.json or docs/benchmarks.md")
    return p


def add_hudi_option_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--hudi-option", action="append", default=[], metavar="KEY=VALUE",
                   help="extra option for every pyhudi write (repeatable), e.g. "
                        "hoodie.copyonwrite.record.size.estimate=180")


def hudi_extra_options(args: argparse.Namespace) -> dict[str, str]:
    out = {}
    for kv in args.hudi_option or []:
        key, sep, value = kv.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"--hudi-option expects KEY=VALUE, got {kv!r}")
        out[key.strip()] = value.strip()
    return out


def spark_conf(args: argparse.Namespace) -> dict[str, str]:
    memory = args.driver_memory or ("4g" if args.scale > 2 else None)
    return {"spark.driver.memory": memory} if memory else {}


def rows_for(scale: float, default_rows: int, minimum: int = 1000) -> int:
    return max(minimum, int(round(default_rows * scale)))


# --------------------------------------------------------------------------- timing and stats


@contextmanager
def timed() -> Iterator[list[float]]:
    """``with timed() as t: ...`` then ``t[0]`` is the wall time in seconds."""
    out: list[float] = []
    start = time.perf_counter()
    try:
        yield out
    finally:
        out.append(time.perf_counter() - start)


def settle(spark: Any | None = None) -> None:
    """Between two timed systems, outside the timing: flush dirty pages to disk and collect garbage in
    the JVM and here, so no system pays for the write-back or the heap of the one before it."""
    import gc

    os.sync()
    gc.collect()
    if spark is not None:
        spark.sparkContext._jvm.System.gc()
    time.sleep(0.5)


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


def fmt_bytes(n: float) -> str:
    for unit, size in (("GB", 1024**3), ("MB", MB), ("KB", 1024)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def fmt_s(seconds: float) -> str:
    return f"{seconds:.2f} s"


# --------------------------------------------------------------------------- machine load


def _proc_stat_busy() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs since boot, from /proc/stat."""
    with open("/proc/stat") as fh:
        parts = [int(x) for x in fh.readline().split()[1:]]
    idle = parts[3] + (parts[4] if len(parts) > 4 else 0)
    total = sum(parts[:8])
    return total - idle, total


def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        ppid = int(stat[stat.rfind(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def _tree_pids(root: int) -> list[int]:
    kids = _children_map()
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, []))
    return out


def _pid_jiffies(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            stat = fh.read()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def tree_cpu_seconds() -> float:
    """CPU seconds used so far by this process, all its threads and its live descendants (JVM, workers)."""
    if not os.path.exists("/proc/self/stat"):
        return time.process_time()
    hz = os.sysconf("SC_CLK_TCK")
    return sum(j for j in (_pid_jiffies(p) for p in _tree_pids(os.getpid())) if j is not None) / hz


@dataclass
class LoadMonitor:
    """Samples, once a second, how much CPU this benchmark's process tree and everything else use.

    "Foreign" CPU (all busy CPU minus this process, its JVM and Spark's Python workers) is what
    other jobs on a shared machine take away from the measurement; it is reported per phase.
    Linux only (reads /proc); elsewhere it records nothing.
    """

    interval: float = 1.0
    samples: list[tuple[float, float, float]] = field(default_factory=list)  # (t, own cores, foreign cores)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _seen: dict[int, int] = field(default_factory=dict)
    phases: list[dict[str, Any]] = field(default_factory=list)

    def start(self) -> LoadMonitor:
        if not os.path.exists("/proc/stat"):
            return self
        self._thread = threading.Thread(target=self._run, name="load-monitor", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _own_jiffies(self) -> int:
        """Cumulative CPU of the tree, keeping the last value of processes that exited."""
        for pid in _tree_pids(os.getpid()):
            j = _pid_jiffies(pid)
            if j is not None:
                self._seen[pid] = max(self._seen.get(pid, 0), j)
        return sum(self._seen.values())

    def _run(self) -> None:
        hz = os.sysconf("SC_CLK_TCK")
        busy0, _ = _proc_stat_busy()
        own0 = self._own_jiffies()
        t0 = time.perf_counter()
        while not self._stop.wait(self.interval):
            busy1, _ = _proc_stat_busy()
            own1 = self._own_jiffies()
            t1 = time.perf_counter()
            dt = t1 - t0
            if dt > 0:
                own = (own1 - own0) / hz / dt
                foreign = max(0.0, (busy1 - busy0) / hz / dt - own)
                self.samples.append((t1, own, foreign))
            busy0, own0, t0 = busy1, own1, t1

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.phases.append({"phase": name, "start": start, "end": time.perf_counter()})

    def summary(self, start: float | None = None, end: float | None = None) -> dict[str, float]:
        sel = [s for s in self.samples if (start is None or s[0] >= start) and (end is None or s[0] <= end + 1)]
        if not sel:
            return {"own_cores": float("nan"), "foreign_cores": float("nan"), "foreign_cores_max": float("nan")}
        return {"own_cores": round(sum(s[1] for s in sel) / len(sel), 2),
                "foreign_cores": round(sum(s[2] for s in sel) / len(sel), 2),
                "foreign_cores_max": round(max(s[2] for s in sel), 2)}

    def report(self) -> dict[str, Any]:
        per_phase = {p["phase"]: self.summary(p["start"], p["end"]) for p in self.phases}
        overall = self.summary()
        cores = os.cpu_count() or 1
        loaded = bool(overall["foreign_cores"] == overall["foreign_cores"]  # not NaN
                      and overall["foreign_cores"] > 0.25 * cores)
        return {"overall": overall, "phases": per_phase, "loaded": loaded,
                "loadavg_end": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
                "note": ("other processes used on average "
                         f"{overall['foreign_cores']:.2f} of {cores} cores during the run"
                         + (" - the machine was LOADED; ratios are still same-run, absolute times are not"
                            if loaded else ""))}


# --------------------------------------------------------------------------- machine info


def _java_version() -> str | None:
    try:
        from pyhudi.spark_env import java_executable

        exe = java_executable()
        if exe is None:
            return None
        out = subprocess.run([exe, "-version"], capture_output=True, text=True, timeout=60)
        first = (out.stderr or out.stdout).strip().splitlines()
        return first[0] if first else None
    except Exception:  # noqa: BLE001 - informational only
        return None


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(REPO_DIR), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=30)
        dirty = subprocess.run(["git", "-C", str(REPO_DIR), "status", "--porcelain", "--", "pyhudi"],
                               capture_output=True, text=True, timeout=30)
        commit = out.stdout.strip() or None
        return f"{commit}{'+dirty' if dirty.stdout.strip() else ''}" if commit else None
    except OSError:
        return None


def _mem_total() -> int | None:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _version(dist: str) -> str | None:
    """An installed distribution's version without importing it (pyspark is optional)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def machine_info() -> dict[str, Any]:
    return {
        "cores": os.cpu_count(), "cpu": _cpu_model(), "memory_bytes": _mem_total(),
        "os": platform.platform(), "python": platform.python_version(),
        "pyspark": _version("pyspark"), "pyarrow": pa.__version__, "numpy": np.__version__,
        "java": _java_version(), "pyhudi_commit": _git_commit(),
    }


def command_line() -> str:
    args = [a for a in sys.argv[1:] if a != "--no-save"]
    script = os.path.relpath(os.path.abspath(sys.argv[0]), REPO_DIR)
    return " ".join([".venv/bin/python", script, *map(shlex.quote, args)])


# --------------------------------------------------------------------------- results


def save_results(name: str, results: dict[str, Any]) -> tuple[Path, Path]:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    text = json.dumps(results, indent=2, sort_keys=False, default=_json_default) + "\n"
    stamped = RESULTS_DIR / f"{name}-{stamp}.json"
    latest = RESULTS_DIR / f"{name}-latest.json"
    stamped.write_text(text)
    latest.write_text(text)
    return stamped, latest


def finish(name: str, title: str, results: dict[str, Any], render_text: Callable[[dict[str, Any]], str],
           render_markdown: Callable[[dict[str, Any]], str], args: argparse.Namespace, work: Path,
           problems: list[str]) -> int:
    """The end every benchmark shares: print the tables, save the results, refresh its docs section and
    the targets table, remove the work directory unless asked to keep it; the exit code says whether the
    run's correctness checks (`problems`) passed."""
    print()
    print(render_text(results))
    if not args.no_save:
        stamped, latest = save_results(name, results)
        update_docs_section(title, render_markdown(results))
        import targets  # bench/targets.py reads every benchmark's latest results

        targets.refresh_docs()
        print(f"\nresults: {stamped.relative_to(REPO_DIR)} (and {latest.name}); "
              f"docs: {DOCS_FILE.relative_to(REPO_DIR)}")
    if not args.keep and not args.work_dir:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    elif args.keep:
        print(f"tables kept in {work}")
    if problems:
        print("CORRECTNESS CHECK FAILED: " + "; ".join(problems), file=sys.stderr)
    return 1 if problems else 0


def spark_conf_text(cfg: dict[str, Any]) -> str:
    conf = cfg.get("spark_conf") or {}
    return ", ".join(f"{k}={v}" for k, v in conf.items()) or "Spark's default memory settings"


def run_paragraph(r: dict[str, Any], with_conf: bool = True) -> str:
    """The docs line every benchmark section opens with: when, on what machine and software, under what load."""
    cfg, m, load = r["config"], r["machine"], r["load"]
    spark = f"`{cfg['spark_master']}`" + (f", {spark_conf_text(cfg)}" if with_conf else "")
    phases = ", ".join(f"{k} {v['foreign_cores']:.2f}" for k, v in load["phases"].items())
    return (f"Run {r['finished']} on {m['cores']} cores ({m['cpu']}), {fmt_bytes(m['memory_bytes'] or 0)} RAM, Python\n"
            f"{m['python']}, PySpark {m['pyspark']} ({spark}), pyarrow {m['pyarrow']}, {m['java']},\n"
            f"pyhudi {m['pyhudi_commit']}. Load: {load['note']} (average foreign cores per phase: {phases}).")


def load_latest(name: str) -> dict[str, Any] | None:
    path = RESULTS_DIR / f"{name}-latest.json"
    return json.loads(path.read_text()) if path.exists() else None


def _json_default(obj: Any) -> Any:
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")


def now_utc() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


# --------------------------------------------------------------------------- tables


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], markdown: bool = False) -> str:
    """A plain-text (or markdown) table; numbers right-aligned."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    numeric = [all(_looks_numeric(r[i]) for r in cells[1:]) for i in range(len(headers))]

    def line(r: Sequence[str]) -> str:
        parts = [c.rjust(w) if num else c.ljust(w) for c, w, num in zip(r, widths, numeric)]
        return ("| " + " | ".join(parts) + " |") if markdown else "  ".join(parts).rstrip()

    out = [line(cells[0])]
    if markdown:
        out.append("|" + "|".join(("-" * (w + 1) + ":") if num else ("-" * (w + 2))
                                  for w, num in zip(widths, numeric)) + "|")
    else:
        out.append("  ".join("-" * w for w in widths))
    out.extend(line(r) for r in cells[1:])
    return "\n".join(out)


def _looks_numeric(s: str) -> bool:
    return bool(re.fullmatch(r"[-+]?[\d,]*\.?\d+(e[-+]?\d+)?\s*(x|s|%|MB/s|MB|KB|GB|B)?", s.strip()))


# --------------------------------------------------------------------------- docs


DOCS_INTRO = """# pyhudi benchmarks

Benchmarks are programs under `bench/` (see `bench/README.md`), not tests. They run on a small, shared
machine, where absolute times move by tens of percent between runs, so **every headline figure is a ratio
between two systems measured in one run** (same data, same session, interleaved where possible).
Absolute times are given for context only. Each section is regenerated from
`bench/results/<benchmark>-latest.json` by `.venv/bin/python bench/render_docs.py` (the benchmarks do this
themselves at the end of a run).
"""


def update_docs_section(title: str, body: str, path: Path = DOCS_FILE, first: bool = False) -> None:
    """Replace (or append) the `## {title}` section of docs/benchmarks.md, creating the file if needed.

    A new section goes at the end, or with `first` before every other section (the targets summary)."""
    text = path.read_text() if path.exists() else DOCS_INTRO
    heading = f"## {title}"
    section = f"{heading}\n\n{body.strip()}\n"
    pattern = re.compile(rf"^{re.escape(heading)}\n.*?(?=^## |\Z)", re.S | re.M)
    first_heading = re.search(r"^## ", text, re.M)
    if pattern.search(text):
        text = pattern.sub(lambda _m: section + "\n", text, count=1)
    elif first and first_heading:
        text = text[: first_heading.start()] + section + "\n" + text[first_heading.start():]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text.rstrip("\n") + "\n")


# --------------------------------------------------------------------------- data


CITIES = ["san_francisco", "sao_paulo", "chennai", "amsterdam"]
_STREETS = np.array(["Market", "Mission", "Valencia", "Paulista", "Augusta", "Anna Salai", "Mount Road",
                     "Damrak", "Prinsengracht", "Keizersgracht", "Broadway", "Elm", "Oak", "Pine", "Cedar"])
_PAYMENT = np.array(["card", "cash", "wallet", "voucher", "corporate"])
_STATUS = np.array(["completed", "cancelled_by_rider", "cancelled_by_driver", "disputed"])
TS_START = 1_700_000_000_000  # epoch millis

TRIPS_COLUMNS = ("uuid: string key; ts: long (precombine); rider, driver, payment_type, status, "
                 "pickup_address: strings; begin/end lat/lon, distance_km, fare, tip: doubles; "
                 "passengers, duration_s: ints; city: partition (4 values)")


def _uuids(rng: np.random.Generator, n: int) -> list[str]:
    raw = rng.bytes(16 * n)
    return [str(uuid_mod.UUID(bytes=raw[i * 16:(i + 1) * 16], version=4)) for i in range(n)]


def _addresses(rng: np.random.Generator, n: int) -> np.ndarray:
    nums = rng.integers(1, 3000, n).astype(str)
    streets = _STREETS[rng.integers(0, len(_STREETS), n)]
    units = rng.integers(1, 60, n).astype(str)
    return np.char.add(np.char.add(np.char.add(np.char.add(nums, " "), streets), " St, unit "), units)


def trips(n: int, seed: int) -> pa.Table:
    """`n` ride records with a realistic mix of columns (about 150 bytes a row in snappy parquet)."""
    rng = np.random.default_rng(seed)
    lat = rng.uniform(-60, 60, n)
    lon = rng.uniform(-180, 180, n)
    dist = np.round(rng.gamma(2.0, 3.0, n), 3)
    return pa.table({
        "uuid": pa.array(_uuids(rng, n), pa.string()),
        "ts": pa.array(TS_START + np.sort(rng.integers(0, 30 * 86_400_000, n)), pa.int64()),
        "rider": pa.array(np.char.add("rider-", rng.integers(0, 20_000, n).astype(str))),
        "driver": pa.array(np.char.add("driver-", rng.integers(0, 5_000, n).astype(str))),
        "begin_lat": lat, "begin_lon": lon,
        "end_lat": lat + rng.normal(0, 0.05, n), "end_lon": lon + rng.normal(0, 0.05, n),
        "distance_km": dist,
        "fare": np.round(2.5 + dist * rng.uniform(0.8, 2.5, n), 2),
        "tip": np.round(rng.exponential(2.0, n), 2),
        "passengers": pa.array(rng.integers(1, 7, n), pa.int32()),
        "duration_s": pa.array(rng.integers(60, 5400, n), pa.int32()),
        "payment_type": pa.array(_PAYMENT[rng.integers(0, len(_PAYMENT), n)]),
        "status": pa.array(np.full(n, "completed")),
        "pickup_address": pa.array(_addresses(rng, n)),
        "city": pa.array(np.array(CITIES)[rng.integers(0, len(CITIES), n)]),
    })


def updated_trips(current: pa.Table, rows: np.ndarray, batch: int, seed: int) -> pa.Table:
    """New versions of `current`'s rows at positions `rows`: same key and city, later ts, new fare/tip/status."""
    rng = np.random.default_rng([seed, batch])
    n = len(rows)
    old = current.take(pa.array(rows))
    ts_base = TS_START + (40 + batch) * 86_400_000  # after every earlier version
    fare = np.asarray(old.column("fare").to_numpy()) + np.round(rng.uniform(-1, 3, n), 2)
    cols = {name: old.column(name) for name in old.column_names}
    cols["ts"] = pa.array(ts_base + rng.integers(0, 86_400_000, n), pa.int64())
    cols["fare"] = pa.array(fare)
    cols["tip"] = pa.array(np.round(rng.exponential(2.5, n), 2))
    cols["status"] = pa.array(_STATUS[rng.integers(0, len(_STATUS), n)])
    cols["duration_s"] = pa.array(rng.integers(60, 5400, n), pa.int32())
    return pa.table(cols, schema=current.schema)


def apply_updates(current: pa.Table, rows: np.ndarray, new: pa.Table) -> pa.Table:
    """`current` with the rows at positions `rows` replaced by `new` (same order)."""
    mask = np.ones(current.num_rows, dtype=bool)
    mask[rows] = False
    kept = current.filter(pa.array(mask))
    return pa.concat_tables([kept, new])


def write_staging(table: pa.Table, path: Path, files: int = 2) -> str:
    """Write `table` as `files` snappy parquet files under `path` (so Spark reads it with `files` tasks)."""
    path.mkdir(parents=True, exist_ok=True)
    step = -(-table.num_rows // files)
    for i in range(files):
        part = table.slice(i * step, step)
        if part.num_rows:
            pq.write_table(part, path / f"part-{i:03d}.parquet", compression="snappy")
    return str(path)


def dir_bytes(path: str | Path, predicate: Callable[[str], bool] | None = None) -> int:
    total = 0
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if d != ".hoodie"]
        for f in files:
            if predicate is None or predicate(f):
                total += os.path.getsize(os.path.join(root, f))
    return total


# --------------------------------------------------------------------------- where a pyhudi write spends its time


class PhaseTimer:
    """Wall time of named pyhudi internals per measured call, by wrapping them while active.

    `targets` are (module path, attribute path, label), e.g. ("pyhudi.writer.client",
    "WriteClient._run_handles", "write files"). Internals move; a target that no longer exists is
    skipped and listed in `missing`, so the benchmark still runs (without that column).
    Nested targets are fine: each label accumulates its own wall time.
    """

    def __init__(self, targets: Sequence[tuple[str, str, str]]) -> None:
        import importlib

        self.current: dict[str, float] = {}
        self.missing: list[str] = []
        self._patches: list[tuple[Any, str, Any]] = []
        for module_name, attr_path, label in targets:
            try:
                owner: Any = importlib.import_module(module_name)
                *parents, attr = attr_path.split(".")
                for part in parents:
                    owner = getattr(owner, part)
                original = owner.__dict__[attr] if isinstance(owner, type) else getattr(owner, attr)
            except (ImportError, AttributeError, KeyError):
                self.missing.append(f"{module_name}.{attr_path}")
                continue
            self._patches.append((owner, attr, original))
            setattr(owner, attr, self._wrap(original, label))

    def _wrap(self, fn: Any, label: str) -> Any:
        import functools

        timer = self

        @functools.wraps(fn)
        def wrapper(*a: Any, **kw: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                timer.current[label] = timer.current.get(label, 0.0) + time.perf_counter() - start

        return wrapper

    def take(self) -> dict[str, float]:
        """Phase times accumulated since the last call (and reset)."""
        out, self.current = self.current, {}
        return out

    def close(self) -> None:
        for owner, attr, original in reversed(self._patches):
            setattr(owner, attr, original)
        self._patches.clear()


LOCAL_STEPS = [
    ("pyhudi.writer.local_write", "LocalWriteClient._prepared", "prepare"),
    ("pyhudi.writer.local_write", "build_view", "view"),
    ("pyhudi.writer.local_write", "tag_records", "index+profile"),
    ("pyhudi.writer.local_write", "LocalWriteClient._run_handles", "write files"),
    ("pyhudi.writer.local_write", "LocalWriteClient._run_bulk_source", "write files"),
]
"""The in-process write's steps (pyhudi/writer/local_write.py), on top of common.WRITE_STEPS (the shared
WriteClient's commit and services); a step that moved is skipped."""

WRITE_STEPS = [
    ("pyhudi.writer.client", "build_view", "view"),
    ("pyhudi.writer.client", "rollback_failed_writes", "rollback check"),
    ("pyhudi.writer.client", "WriteClient._plan", "plan"),
    ("pyhudi.writer.client", "WriteClient._start_instant", "instant"),
    ("pyhudi.writer.client", "WriteClient._run_handles", "write files"),
    ("pyhudi.writer.client", "WriteClient._run_bulk", "write files"),
    ("pyhudi.writer.client", "WriteClient._reconcile_markers", "markers"),
    ("pyhudi.writer.client", "WriteClient._complete", "commit"),
    ("pyhudi.writer.client", "WriteClient._clustering_service", "clustering"),
    ("pyhudi.writer.client", "WriteClient._compaction_service", "compaction"),
    ("pyhudi.writer.client", "WriteClient._clean_service", "clean"),
    ("pyhudi.writer.client", "WriteClient._archive_service", "archive"),
    # The Spark data path (issue 17 moved it out of WriteClient into SparkWriteClient).
    ("pyhudi.engine.spark.write", "prepare_batch", "prepare"),
    ("pyhudi.engine.spark.write", "SparkWriteClient._partition_counts", "count"),
    ("pyhudi.engine.spark.write", "build_view", "view"),
    ("pyhudi.engine.spark.write", "tag_and_profile", "index+profile"),
    ("pyhudi.engine.spark.write", "SparkWriteClient._run_handles", "write files"),
    ("pyhudi.engine.spark.write", "SparkWriteClient._run_bulk", "write files"),
    ("pyhudi.engine.spark.write", "SparkWriteClient._run_bulk_direct", "write files"),
    ("pyhudi.engine.spark.write", "SparkWriteClient._run_single_task", "one-task write"),
]
"""Finer, disjoint steps of `pyhudi.write` than WRITE_PHASES below (for profiling a batch): none contains
another, so `other` = wall time - their sum (timeline loads, schema checks, heartbeats, marker cleanup)."""


WRITE_PHASES = [step for step in WRITE_STEPS if step[2] in ("count", "index+profile", "write files", "one-task write")]
"""Phases of `pyhudi.write` (writer/client.py): one Spark aggregation for counts, the index lookup
plus workload profile, and the job that routes records and runs the write handles; or, for a small
batch into an existing table, the one Spark job that does all of it in one task. The rest of a
write (schema checks, file listing, planning, timeline transitions, commit) is `other`."""


@contextmanager
def spark_job_group(spark: Any, group: str, details: bool = False) -> Iterator[dict[str, Any]]:
    """Count the Spark jobs, stages and tasks started inside the block (public status tracker API).

    With `details`, also what Spark's UI would show for them (read from the status store after the
    block, so outside any timing inside it): per job its call site and wall time, and per call site the
    summed job time, executor run time and executor CPU time (`by_site`), plus the totals.
    """
    sc = spark.sparkContext
    out: dict[str, Any] = {}
    group = f"{group}#{uuid_mod.uuid4().hex[:8]}"  # unique: a reused name would also return older jobs
    sc.setJobGroup(group, group)
    try:
        yield out
    finally:
        tracker = sc.statusTracker()
        jobs = tracker.getJobIdsForGroup(group)
        stages = tasks = 0
        for j in jobs:
            info = tracker.getJobInfo(j)
            for s in info.stageIds if info else []:
                si = tracker.getStageInfo(s)
                stages += 1
                tasks += si.numTasks if si else 0
        out.update({"jobs": len(jobs), "stages": stages, "tasks": tasks})
        sc.setLocalProperty("spark.jobGroup.id", None)
        if details:
            out.update(_job_details(sc, sorted(jobs)))


def _job_details(sc: Any, job_ids: Sequence[int]) -> dict[str, Any]:
    """Wall, executor run and CPU milliseconds per call site of the given jobs (Spark's status store)."""
    try:
        store = sc._jsc.sc().statusStore()
        by_site: dict[str, dict[str, float]] = {}
        totals = {"job_ms": 0.0, "run_ms": 0.0, "cpu_ms": 0.0}
        for jid in job_ids:
            job = store.job(jid)
            sub, comp = job.submissionTime(), job.completionTime()
            wall = float(comp.get().getTime() - sub.get().getTime()) if sub.isDefined() and comp.isDefined() else 0.0
            run = cpu = 0.0
            for sid in list(job.stageIds()) if hasattr(job.stageIds(), "__iter__") else _scala_ints(job.stageIds()):
                try:
                    st = store.lastStageAttempt(sid)
                except Exception:  # noqa: BLE001 - skipped stages have no attempt
                    continue
                run += float(st.executorRunTime())
                cpu += float(st.executorCpuTime()) / 1e6
            site = _call_site(str(job.name()))
            agg = by_site.setdefault(site, {"jobs": 0, "job_ms": 0.0, "run_ms": 0.0, "cpu_ms": 0.0})
            agg["jobs"] += 1
            for k, v in (("job_ms", wall), ("run_ms", run), ("cpu_ms", cpu)):
                agg[k] += v
                totals[k] += v
        return {**totals, "by_site": by_site}
    except Exception as exc:  # noqa: BLE001 - informational only; Spark internals move
        return {"details_error": f"{type(exc).__name__}: {exc}"}


def _scala_ints(seq: Any) -> list[int]:
    it = seq.iterator()
    out = []
    while it.hasNext():
        out.append(int(it.next()))
    return out


def _call_site(name: str) -> str:
    """'collect at /x/pyhudi/writer/client.py:399' -> 'collect at writer/client.py:399'."""
    action, _, where = name.partition(" at ")
    if "/" in where:
        parts = where.split("/")
        where = "/".join(parts[-2:])
    return f"{action} at {where}" if where else action
