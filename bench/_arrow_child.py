"""One measurement of `bench/arrow_engine.py`, run in a fresh child process.

    .venv/bin/python bench/_arrow_child.py SPEC.json   (writes the result to spec["result"])

Every measured write runs in its own process so that its peak memory is its own: the child loads its
input into memory first (outside the measurement), resets the kernel's RSS high-water mark
(`/proc/self/clear_refs`), then times the write while a thread samples Arrow's allocator
(`arrow_allocated`: the default pool and the system pool). The child never imports pyspark itself; whether the measured code did is
reported (`pyspark_imported`), since the in-process path must not need it.

Kinds (`spec["kind"]`):
  "pyhudi"       `pyhudi.write(table, out, options)` of the staged input (an Arrow table in memory);
  "raw"          `pyarrow.parquet.write_table` of the same data, split by the partition column, files of at
                 most `rows_per_file` rows in one row group, snappy, on `threads` threads;
  "delta_write"  `deltalake.write_deltalake(out, table, partition_by=..., target_file_size=...)` (the large
                 load's delta-rs peer; builds delta tables);
  "delta_merge"  `DeltaTable(out).merge(table, uuid = uuid).when_matched_update_all()
                 .when_not_matched_insert_all().execute()`;
  "stream"       the small-batches workload: every batch into every system, order rotating per batch,
                 then each system's maintenance (see `run_stream`).
"""

from __future__ import annotations

import gc
import json
import os
import resource
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))

# --------------------------------------------------------------------------- memory and CPU


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _reset_hwm() -> bool:
    """Reset VmHWM (peak RSS) to the current RSS (Linux >= 4.0); False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def arrow_allocated() -> int:
    """Bytes held in Arrow's default pool plus its system-allocator pool (pyhudi's writer allocates its
    large short-lived buffers there: pyhudi/io/write_pool.py), so both count in "Arrow peak"."""
    default, system = pa.default_memory_pool(), pa.system_memory_pool()
    extra = system.bytes_allocated() if system.backend_name != default.backend_name else 0
    return int(default.bytes_allocated()) + int(extra)


class ArrowPeak:
    """High-water mark of Arrow's memory pools (`arrow_allocated`), sampled every 5 ms on a thread."""

    def __init__(self) -> None:
        self.peak = arrow_allocated()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, arrow_allocated())

    def __enter__(self) -> ArrowPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, arrow_allocated())


def measure(fn: Callable[[], Any], collect: bool = True) -> dict[str, Any]:
    """Time `fn()` and record the memory it took beyond what the process held before (its input).

    `collect`: a full garbage collection first (outside the timing). The stream passes False: a
    long-lived writer pays its own garbage collections, so they stay inside the timed writes."""
    if collect:
        gc.collect()
    rss_before, arrow_before = _status_kb("VmRSS"), arrow_allocated()
    reset = _reset_hwm()
    cpu0 = _cpu()
    with ArrowPeak() as ap:
        t0 = time.perf_counter()
        value = fn()
        seconds = time.perf_counter() - t0
    cpu = _cpu() - cpu0
    hwm = _status_kb("VmHWM") if reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"seconds": seconds, "cpu_seconds": cpu, "rss_before": rss_before, "rss_peak": hwm,
            "rss_peak_delta": hwm - rss_before, "hwm_reset": reset, "arrow_before": arrow_before,
            "arrow_peak": ap.peak, "arrow_peak_delta": ap.peak - arrow_before,
            "pyspark_imported": "pyspark" in sys.modules, "value": value}


class PysparkTrap:
    """A meta-path finder that records who imports pyspark first (it does not block the import)."""

    def __init__(self) -> None:
        self.first: list[str] | None = None

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if self.first is None and name.split(".")[0] == "pyspark":
            import traceback

            self.first = [f"{f.filename.split('/work/main/')[-1]}:{f.lineno} {f.name}"
                          for f in traceback.extract_stack()[:-1] if "importlib" not in f.filename][-8:]
        return None


def probe(spec: dict[str, Any]) -> dict[str, Any]:
    """Tiny in-process writes of every kind the benchmark measures, plus compaction and clustering, with
    nothing else loaded (no step timer): does the in-process path import pyspark, and from where?"""
    import pyhudi

    trap = PysparkTrap()
    sys.meta_path.insert(0, trap)
    table = pq.read_table(spec["input"])
    done: dict[str, str] = {}
    for name, opts, then in spec["writes"]:
        try:
            pyhudi.write(table, os.path.join(spec["out"], name), opts)
            if then == "compact":
                pyhudi.compact(None, os.path.join(spec["out"], name), opts)
            elif then == "cluster":
                pyhudi.cluster(None, os.path.join(spec["out"], name), opts)
            done[name] = "ok"
        except Exception as exc:  # noqa: BLE001 - reported
            import traceback

            where = [f"{f.filename.split('/work/main/')[-1]}:{f.lineno}" for f in traceback.extract_tb(exc.__traceback__)]
            done[name] = f"{type(exc).__name__}: {exc} (at {' <- '.join(reversed(where[-4:]))})"
    return {"writes": done, "pyspark_imported": "pyspark" in sys.modules, "first_import": trap.first}


# --------------------------------------------------------------------------- the systems


def with_meta_columns(table: pa.Table, key: str, partition: str) -> pa.Table:
    """The table with the five `_hoodie_*` columns pyhudi's files carry (commit time, sequence number, record
    key, partition path, file name), in front: a raw write of it is a raw write of the same content."""
    import numpy as np

    n = table.num_rows
    instant = "20261126000000000"
    seqno = pc.binary_join_element_wise(f"{instant}_0_", pc.cast(pa.array(np.arange(n)), pa.string()), "")
    meta = {"_hoodie_commit_time": pa.repeat(pa.scalar(instant), n), "_hoodie_commit_seqno": seqno,
            "_hoodie_record_key": table.column(key), "_hoodie_partition_path": table.column(partition),
            "_hoodie_file_name": pa.repeat(pa.scalar("f" * 36 + "-0_0-0-0_" + instant + ".parquet"), n)}
    return pa.table({**meta, **{c: table.column(c) for c in table.column_names}})


def raw_write(table: pa.Table, out: str, partition: str, rows_per_file: int, threads: int,
              page_size: int) -> int:
    """The reference: split by partition value, then plain `pq.write_table` per file on `threads` threads."""
    jobs: list[tuple[str, pa.Table]] = []
    for value in pc.unique(table.column(partition)).to_pylist():
        part = table.filter(pc.equal(table.column(partition), value))
        for i, start in enumerate(range(0, part.num_rows, rows_per_file)):
            jobs.append((os.path.join(out, str(value), f"part-{i:04d}.parquet"), part.slice(start, rows_per_file)))

    def one(job: tuple[str, pa.Table]) -> None:
        path, data = job
        os.makedirs(os.path.dirname(path), exist_ok=True)
        pq.write_table(data, path, compression="snappy", data_page_size=page_size, row_group_size=rows_per_file)

    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        list(pool.map(one, jobs))
    return len(jobs)


def _delta_merge(out: str, table: pa.Table) -> None:
    from deltalake import DeltaTable

    (DeltaTable(out).merge(table, predicate="t.uuid = s.uuid", source_alias="s", target_alias="t")
     .when_matched_update_all().when_not_matched_insert_all().execute())


def step_timer() -> Any:
    import common

    shared = [step for step in common.WRITE_STEPS if ".spark" not in step[0]]  # never import pyspark here
    return common.PhaseTimer([*shared, *common.LOCAL_STEPS])


def run_one(spec: dict[str, Any]) -> dict[str, Any]:
    """Load the input (not measured), then measure the one write the spec names."""
    table = pq.read_table(spec["input"])
    if spec.get("combine_chunks"):
        table = table.combine_chunks()
    kind, out = spec["kind"], spec["out"]
    if kind == "pyhudi":

        import pyhudi

        phases = step_timer() if spec.get("phases") else None
        result = measure(lambda: pyhudi.write(table, out, spec["options"], spec.get("mode", "append")))
        if phases is not None:
            split = phases.take()
            split["other"] = result["seconds"] - sum(split.values())
            result["phases"] = split
            phases.close()
    elif kind == "raw":
        if spec.get("with_meta"):
            table = with_meta_columns(table, "uuid", spec["partition"])
        result = measure(lambda: raw_write(table, out, spec["partition"], spec["rows_per_file"], spec["threads"],
                                           spec["page_size"]))
    elif kind == "delta_write":
        from deltalake import write_deltalake

        result = measure(lambda: write_deltalake(out, table, partition_by=spec.get("partition_by"),
                                                 mode=spec.get("mode", "append"),
                                                 target_file_size=spec.get("target_file_size")))
    elif kind == "delta_merge":
        result = measure(lambda: _delta_merge(out, table))
    else:
        raise SystemExit(f"unknown kind {kind!r}")
    if not isinstance(result.get("value"), (str, int)):
        result["value"] = None
    result["input_rows"], result["input_bytes_in_memory"] = table.num_rows, table.nbytes
    return result


# --------------------------------------------------------------------------- the small-batches stream


def _sinks(spec: dict[str, Any], root: str) -> dict[str, Any]:
    import _ingest

    class ArrowPyhudiSink(_ingest.PyhudiSink):
        """pyhudi with the in-process engine: the staged batch is read with pyarrow inside the timed
        region (as the delta-rs sink does) and written as an Arrow table; maintenance gets no session."""

        def write(self, spark: Any, batch: _ingest.Batch) -> None:
            import pyhudi

            op = "insert" if batch.phase == _ingest.PHASE_INSERT else "upsert"
            pyhudi.write(pq.read_table(batch.staged), self.path,
                         {**self.options, "hoodie.datasource.write.operation": op})

    sinks: dict[str, Any] = {}
    for key, s in spec["systems"].items():
        path = os.path.join(root, key)
        if s["kind"] == "delta":
            sinks[key] = _ingest.DeltaSink(key, s["label"], path, uses_spark=False,
                                           maintenance_what=s["what"], partition_by=s.get("partition_by"),
                                           target_size=s["target_size"])
        else:
            sinks[key] = ArrowPyhudiSink(key, s["label"], path, uses_spark=False, maintenance_what=s["what"],
                                         options=s["options"], maintenance=s.get("maintenance"))
    return sinks


def _stream(spec: dict[str, Any], batches: list[dict[str, Any]], root: str,
            phases: Any | None) -> dict[str, Any]:
    import _ingest

    sinks = _sinks(spec, root)
    keys = list(sinks)
    per_batch: list[dict[str, Any]] = []
    errors: dict[str, str] = {}
    for i, b in enumerate(batches):
        batch = _ingest.Batch(**b)
        order = keys[i % len(keys):] + keys[: i % len(keys)]
        row: dict[str, Any] = {"batch": batch.index, "phase": batch.phase, "order": order, "rows": batch.rows,
                               "updates": batch.updates, "systems": {}}
        for key in order:
            if key in errors:
                continue
            if phases is not None:
                phases.take()
            try:
                cell = measure(lambda k=key, b=batch: sinks[k].write(None, b), collect=False)  # type: ignore[misc]
            except Exception as exc:  # noqa: BLE001 - a failing system is reported, the others go on
                errors[key] = f"batch {batch.index}: {type(exc).__name__}: {exc}"
                print(f"  {key} FAILED at batch {batch.index}: {type(exc).__name__}: {exc}", file=sys.stderr)
                continue
            cell.pop("value", None)
            cell.update(sinks[key].after_write())
            if phases is not None and key != "delta":
                split = phases.take()
                split["other"] = cell["seconds"] - sum(split.values())
                cell["phases"] = split
            row["systems"][key] = cell
        per_batch.append(row)
        if not spec.get("quiet"):
            print(f"  batch {batch.index:3d} ({batch.phase}): " + ", ".join(
                f"{k} {row['systems'][k]['seconds']:.2f} s" for k in keys if k in row["systems"]), flush=True)
    maintenance: dict[str, Any] = {}
    for key, sink in sinks.items():
        if key in errors:
            continue
        try:
            cell = measure(lambda s=sink: s.maintain(None), collect=False)  # type: ignore[misc]
        except Exception as exc:  # noqa: BLE001
            errors[key] = f"maintenance: {type(exc).__name__}: {exc}"
            continue
        detail = cell.pop("value")
        maintenance[key] = {**cell, "what": sink.maintenance_what, "ran": detail is not None, "detail": detail}
        if not spec.get("quiet"):
            print(f"  maintenance {key}: {cell['seconds']:.2f} s", flush=True)
    written = {k: s.bytes_written() for k, s in sinks.items() if k not in errors}
    return {"batches": per_batch, "maintenance": maintenance, "errors": errors, "bytes_written": written,
            "pyspark_imported": "pyspark" in sys.modules}


def run_stream(spec: dict[str, Any]) -> dict[str, Any]:
    """The warm-up stream (not measured), then the measured one, in this one long-lived process."""

    if spec.get("warm"):
        _stream({**spec, "quiet": True}, spec["warm"], spec["warm_root"], None)
    phases = step_timer()
    try:
        out = _stream(spec, spec["batches"], spec["root"], phases)
    finally:
        phases.close()
    out["phase_targets_missing"] = phases.missing
    return out


def main() -> int:
    spec = json.loads(Path(sys.argv[1]).read_text())
    try:
        kinds = {"stream": run_stream, "probe": probe}
        result = kinds.get(spec["kind"], run_one)(spec)
    except Exception as exc:  # noqa: BLE001 - the parent records the failure and goes on
        import traceback

        traceback.print_exc()
        result = {"error": f"{type(exc).__name__}: {exc}", "pyspark_imported": "pyspark" in sys.modules}
    Path(spec["result"]).write_text(json.dumps(result, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
