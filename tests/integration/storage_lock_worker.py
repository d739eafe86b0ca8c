"""Process bodies for the storage-based lock tests (started with the `spawn` method, so they must live in an
importable module): separate processes, each its own lock owner, as separate writers are."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from pyhudi.storage import Storage
from pyhudi.transaction.lock_types import LockSettings
from pyhudi.transaction.storage_lock import StorageBasedLockProvider


def _storage(uri: str, options: dict[str, str] | None) -> Storage:
    return Storage(uri, storage_options=options or None)


def _dump(path: str, value: Any) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(value, f)
    os.replace(tmp, path)


def hold_loop(uri: str, options: dict[str, str] | None, settings: dict[str, Any], rounds: int, hold_s: float,
              out: str, go: str) -> None:
    """Acquire, hold `hold_s`, release, `rounds` times; write the held intervals (monotonic clock, which
    is one clock for all processes of the host) to `out`."""
    storage = _storage(uri, options)
    while not os.path.exists(go):  # start together
        time.sleep(0.005)
    intervals = []
    for _ in range(rounds):
        lock = StorageBasedLockProvider(storage, LockSettings(**settings))
        lock.acquire(120)
        start = time.monotonic()
        time.sleep(hold_s)
        lock.check(0)  # still ours at the end of the section
        end = time.monotonic()
        lock.release()
        intervals.append([start, end])
    _dump(out, intervals)


def hold_forever(uri: str, options: dict[str, str] | None, settings: dict[str, Any], ready: str) -> None:
    """Acquire, report, and keep the lock (renewed by the heartbeat) until killed."""
    lock = StorageBasedLockProvider(_storage(uri, options), LockSettings(**settings))
    lock.acquire(120)
    _dump(ready, {"owner": lock.owner, "pid": os.getpid()})
    time.sleep(600)


# --------------------------------------------------------------------------- the parent's side
def _ctx() -> Any:
    import multiprocessing

    return multiprocessing.get_context("spawn")  # no fork of a process running servers and runtimes


def run_contenders(uri: str, options: dict[str, str] | None, settings: dict[str, Any], workdir: str,
                   processes: int, rounds: int, hold_s: float) -> list[tuple[float, float]]:
    """`processes` processes contend for the lock `rounds` times each; every one must finish. Returns
    all held intervals, sorted."""
    go = os.path.join(workdir, "go")
    outs = [os.path.join(workdir, f"intervals-{i}.json") for i in range(processes)]
    procs = [_ctx().Process(target=hold_loop, args=(uri, options, settings, rounds, hold_s, out, go))
             for out in outs]
    for p in procs:
        p.start()
    _dump(go, True)
    for p in procs:
        p.join(timeout=180)
    for p in procs:
        if p.is_alive():
            p.kill()
    assert [p.exitcode for p in procs] == [0] * processes, "every contender finishes"
    intervals: list[tuple[float, float]] = []
    for out in outs:
        with open(out) as f:
            intervals += [(a, b) for a, b in json.load(f)]
    assert len(intervals) == processes * rounds
    return sorted(intervals)


def assert_disjoint(intervals: list[tuple[float, float]]) -> None:
    for (s1, e1), (s2, e2) in zip(intervals, intervals[1:]):
        assert s2 >= e1, f"two holders at once: [{s1:.4f}, {e1:.4f}] and [{s2:.4f}, {e2:.4f}]"


def start_holder(uri: str, options: dict[str, str] | None, settings: dict[str, Any], workdir: str) -> Any:
    """A process that acquires the lock and keeps renewing it; returns (process, its owner id)."""
    ready = os.path.join(workdir, "ready.json")
    proc = _ctx().Process(target=hold_forever, args=(uri, options, settings, ready))
    proc.start()
    deadline = time.monotonic() + 60
    while not os.path.exists(ready):
        assert proc.is_alive() and time.monotonic() < deadline, "the holder process did not acquire the lock"
        time.sleep(0.01)
    with open(ready) as f:
        return proc, json.load(f)["owner"]


def write_batches(uri: str, options: dict[str, str], batches: list[list[dict[str, Any]]], out: str, go: str) -> None:
    """pyhudi.write each batch (in-process engine) with optimistic concurrency; record which succeeded."""
    import pyarrow as pa

    import pyhudi
    from pyhudi.errors import CommitConflictError

    while not os.path.exists(go):
        time.sleep(0.005)
    results = []
    for rows in batches:
        try:
            pyhudi.write(pa.Table.from_pylist(rows), uri, options)
            results.append("ok")
        except CommitConflictError as exc:
            results.append(f"conflict: {exc}")
    _dump(out, results)


def run_writers(uri: str, options: dict[str, str], per_writer: list[list[list[dict[str, Any]]]],
                workdir: str) -> list[list[str]]:
    go = os.path.join(workdir, "go-write")
    outs = [os.path.join(workdir, f"writes-{i}.json") for i in range(len(per_writer))]
    procs = [_ctx().Process(target=write_batches, args=(uri, options, batches, out, go))
             for batches, out in zip(per_writer, outs)]
    for p in procs:
        p.start()
    _dump(go, True)
    for p in procs:
        p.join(timeout=300)
    for p in procs:
        if p.is_alive():
            p.kill()
    assert [p.exitcode for p in procs] == [0] * len(procs), "every writer finishes"
    results = []
    for out in outs:
        with open(out) as f:
            results.append(json.load(f))
    return results
