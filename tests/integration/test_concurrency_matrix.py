"""The concurrency matrix: writers and table services racing in separate processes (each a JVM of its own).

Every scenario starts from a table of 200 keys in partitions p0/p1 (one file group each), then races a
write of writer A against writer B's write or table service, in one of these ways:

- `stale`: A has loaded its timeline (its input gate fired) when B's write completes; then A goes on.
  This is the "second writer commits in between" case: A's view of the table is out of date.
- `together`: both have loaded their timelines before either goes on; both are released at once.
- `paused`: A is frozen (SIGSTOP of its whole process session: driver, JVM, Python workers) while B
  writes twice; under optimistic concurrency B waits until A's heartbeat has expired, so B may roll A's
  instant back as a failed write. Then A is thawed and goes on.
- `killed`: A is SIGKILLed at its gate; B writes twice afterwards.
- `compact` / `cluster` / `clean`: B runs the table service while A is held at its gate.

A and B write disjoint keys, in the same file group (`same`: both in p0) or in different ones (`apart`:
A in p0, B in p1), so the model does not depend on commit order: after every scenario the table (read by
pyhudi and by hudi-rs) holds the initial rows plus exactly the rows of every acknowledged write, and none
of a failed one. Every failure must be a `HudiError` saying what happened. Combinations: COW and MOR,
the default single-writer mode and optimistic concurrency (OCC).
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import queue
import signal
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

import pyhudi
from pyhudi.faults import _session_groups
from tests.helpers import hudi_rs, rows_by_key

pytestmark = [pytest.mark.spark, pytest.mark.slow]
WORKER = pathlib.Path(__file__).with_name("matrix_worker.py")
REPLY_LIMIT = 240.0
COLS = ["name", "part", "ts"]
HEARTBEAT_MS = 400  # OCC: a writer frozen for (misses + 1) x this is presumed dead
OCC = {"hoodie.write.concurrency.mode": "optimistic_concurrency_control",
       "hoodie.cleaner.policy.failed.writes": "LAZY",
       "hoodie.client.heartbeat.interval_in_ms": str(HEARTBEAT_MS),
       "hoodie.client.heartbeat.tolerable.misses": "1"}


class Worker:
    """matrix_worker.py in a process session of its own, driven over stdin/stdout."""

    def __init__(self, workdir: pathlib.Path, name: str) -> None:
        self.name = name
        env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
        env.pop("HUDI_CONF_DIR", None)
        self.err_path = workdir / f"{name}.err"
        self._err = open(self.err_path, "w")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen([sys.executable, str(WORKER), "local[1]"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._err, cwd=str(workdir), env=env,
                                     text=True, start_new_session=True)
        self._replies: queue.Queue[dict[str, Any]] = queue.Queue()
        self._early: dict[str, dict[str, Any]] = {}
        threading.Thread(target=self._pump, daemon=True).start()
        self._next = 0
        self.reply("ready")

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                self._replies.put(json.loads(line))

    def submit(self, **cmd: Any) -> str:
        self._next += 1
        cmd["id"] = f"{self.name}-{self._next}"
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return cmd["id"]

    def reply(self, cid: str) -> dict[str, Any]:
        deadline = time.monotonic() + REPLY_LIMIT
        while cid not in self._early:
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                raise AssertionError(f"worker {self.name} gave no reply to {cid}: {self.stderr_tail()}")
            try:
                r = self._replies.get(timeout=min(left, 1.0))
            except queue.Empty:
                continue
            self._early[r["id"]] = r
        return self._early.pop(cid)

    def call(self, **cmd: Any) -> dict[str, Any]:
        return self.reply(self.submit(**cmd))

    def signal_all(self, sig: int) -> None:
        """Every process of the worker's session (PySpark's daemon runs in a process group of its own)."""
        for group in _session_groups(self.proc.pid) | {self.proc.pid}:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, sig)

    def stderr_tail(self) -> str:
        self._err.flush()
        return self.err_path.read_text()[-3000:]

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        if self.alive():
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(json.dumps({"op": "exit"}) + "\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self.signal_all(signal.SIGKILL)
        self._err.close()


class Pool:
    def __init__(self, workdir: pathlib.Path) -> None:
        self.workdir = workdir
        self.workers: dict[str, Worker] = {}

    def get(self, name: str) -> Worker:
        w = self.workers.get(name)
        if w is None or not w.alive():
            w = self.workers[name] = Worker(self.workdir, f"{name}{int(time.time() * 1000)}")
        return w

    def close(self) -> None:
        for w in self.workers.values():
            w.close()


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    p = Pool(tmp_path_factory.mktemp("matrix-workers"))
    # Both JVMs start side by side.
    threads = [threading.Thread(target=p.get, args=(n,)) for n in ("A", "B")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    yield p
    p.close()


# --------------------------------------------------------------------------- data and model
def rows(ids: list[int], tag: str, ts: int) -> list[list[Any]]:
    return [[i, f"{tag}-{i}", f"p{i % 2}", ts] for i in ids]


def writer_ids(writer: str, placement: str, round_: int) -> list[int]:
    """Disjoint keys per writer and round: 10 updates of initial keys plus 3 inserts."""
    if placement == "same":  # both in p0 (even ids)
        base = {"A": 0, "B": 100}[writer] + round_ * 20
        updates = [base + 2 * k for k in range(10)]
        inserts = [1000 + {"A": 0, "B": 500}[writer] + round_ * 10 + 2 * k for k in range(3)]
    else:  # A in p0, B in p1
        parity = {"A": 0, "B": 1}[writer]
        updates = [round_ * 40 + 2 * k + parity for k in range(10)]
        inserts = [1000 + round_ * 10 + 2 * k + parity for k in range(3)]
    return updates + inserts


def options(name: str, table_type: str, mode: str) -> dict[str, str]:
    base = {"hoodie.table.name": name, "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part",
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.operation": "upsert",
            "hoodie.datasource.write.table.type": table_type,
            # services only when asked: every commit's outcome is the race's, not an inline service's
            "hoodie.clean.automatic": "false", "hoodie.archive.automatic": "false",
            "hoodie.clustering.plan.strategy.sort.columns": "name",
            "hoodie.compact.inline.max.delta.commits": "1"}
    return {**base, **(OCC if mode == "occ" else {})}


class Scenario:
    def __init__(self, pool: Pool, root: pathlib.Path, table_type: str, mode: str, placement: str) -> None:
        self.pool, self.root = pool, root
        self.path = str(root / "table")
        self.placement = placement
        self.opts = options("matrix", table_type, mode)
        self.model: dict[int, tuple[Any, ...]] = {}
        self.outcomes: list[tuple[str, dict[str, Any]]] = []
        self.n = 0
        init = rows(list(range(200)), "init", 0)
        self.apply("init", self.pool.get("B").call(op="write", path=self.path, rows=init, options=self.opts), init)

    def apply(self, what: str, reply: dict[str, Any], written: list[list[Any]]) -> None:
        self.outcomes.append((what, reply))
        if reply["ok"]:
            for i, name, part, ts in written:
                self.model[i] = (name, part, ts)
        else:
            err = reply["error"]
            assert err["hudi"], f"{what} failed with a non-HudiError {err['type']}: {err['message']}"

    def batch(self, writer: str, round_: int) -> list[list[Any]]:
        self.n += 1
        return rows(writer_ids(writer, self.placement, round_), f"{writer}{round_}", self.n)

    def gated(self, writer: str, round_: int) -> tuple[str, list[list[Any]], str, str]:
        signal_file = str(self.root / f"{writer}{round_}.signal")
        release = str(self.root / f"{writer}{round_}.release")
        data = self.batch(writer, round_)
        cid = self.pool.get(writer).submit(op="write", path=self.path, rows=data, options=self.opts,
                                           gate={"signal": signal_file, "release": release})
        return cid, data, signal_file, release

    def check(self, spark) -> None:
        ours = rows_by_key(pyhudi.read(spark, self.path).toArrow(), "id", COLS)
        theirs = rows_by_key(hudi_rs(self.path), "id", COLS)
        story = "; ".join(f"{w}: {'ok ' + str(r.get('result')) if r['ok'] else r['error']['type']}"
                          for w, r in self.outcomes)
        for name, got in (("pyhudi", ours), ("hudi-rs", theirs)):
            missing = sorted(k for k in self.model if got.get(k) != self.model[k])
            extra = sorted(set(got) - set(self.model))
            assert not missing and not extra, (
                f"{name} read differs from the acknowledged writes ({story}): wrong or missing "
                f"{[(k, got.get(k), self.model[k]) for k in missing[:5]]}, unexpected {extra[:5]}")


def wait_file(path: str, worker: Worker) -> None:
    deadline = time.monotonic() + REPLY_LIMIT
    while not os.path.exists(path):
        assert worker.alive(), f"worker died before {path}: {worker.stderr_tail()}"
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def release(path: str) -> None:
    pathlib.Path(path).touch()


# --------------------------------------------------------------------------- races
def race_stale(s: Scenario) -> None:
    a, b = s.pool.get("A"), s.pool.get("B")
    cid, data, sig, rel = s.gated("A", 0)
    wait_file(sig, a)
    b_rows = s.batch("B", 0)
    s.apply("B0", b.call(op="write", path=s.path, rows=b_rows, options=s.opts), b_rows)
    release(rel)
    s.apply("A0", a.reply(cid), data)


def race_together(s: Scenario) -> None:
    a = s.pool.get("A")
    b = s.pool.get("B")
    ca, da, sa, ra = s.gated("A", 0)
    cb, db, sb, rb = s.gated("B", 0)
    wait_file(sa, a)
    wait_file(sb, b)
    release(ra)
    release(rb)
    s.apply("A0", a.reply(ca), da)
    s.apply("B0", b.reply(cb), db)


def race_paused(s: Scenario) -> None:
    a, b = s.pool.get("A"), s.pool.get("B")
    cid, data, sig, rel = s.gated("A", 0)
    wait_file(sig, a)
    a.signal_all(signal.SIGSTOP)
    try:
        if "hoodie.write.concurrency.mode" in s.opts:  # let A's heartbeat expire: B may roll A back
            time.sleep(HEARTBEAT_MS * 3 / 1000)
        for r in (0, 1):
            b_rows = s.batch("B", r)
            s.apply(f"B{r}", b.call(op="write", path=s.path, rows=b_rows, options=s.opts), b_rows)
    finally:
        a.signal_all(signal.SIGCONT)
    release(rel)
    s.apply("A0 (paused)", a.reply(cid), data)


def race_killed(s: Scenario) -> None:
    a, b = s.pool.get("A"), s.pool.get("B")
    cid, data, sig, rel = s.gated("A", 0)
    wait_file(sig, a)
    a.signal_all(signal.SIGKILL)
    a.proc.wait(timeout=60)
    if "hoodie.write.concurrency.mode" in s.opts:
        time.sleep(HEARTBEAT_MS * 3 / 1000)
    for r in (0, 1):
        b_rows = s.batch("B", r)
        s.apply(f"B{r}", b.call(op="write", path=s.path, rows=b_rows, options=s.opts), b_rows)
    s.outcomes.append(("A0 (killed)", {"ok": False, "error": {"type": "SIGKILL"}}))


def race_service(op: str):  # type: ignore[no-untyped-def]
    def race(s: Scenario) -> None:
        a, b = s.pool.get("A"), s.pool.get("B")
        if op == "compact":  # something to compact: a committed log file
            b_rows = s.batch("B", 1)
            s.apply("B1", b.call(op="write", path=s.path, rows=b_rows, options=s.opts), b_rows)
        cid, data, sig, rel = s.gated("A", 0)
        wait_file(sig, a)
        reply = b.call(op=op, path=s.path, options=s.opts)
        s.outcomes.append((op, reply))
        if not reply["ok"]:
            assert reply["error"]["hudi"], f"{op} failed with a non-HudiError: {reply['error']}"
        release(rel)
        s.apply("A0", a.reply(cid), data)
        b_rows = s.batch("B", 2)  # the table takes writes afterwards
        s.apply("B2", b.call(op="write", path=s.path, rows=b_rows, options=s.opts), b_rows)

    return race


RACES = {"stale": race_stale, "together": race_together, "paused": race_paused, "killed": race_killed,
         "compact": race_service("compact"), "cluster": race_service("cluster"), "clean": race_service("clean")}

CASES = [(t, m, p, r) for t in ("COPY_ON_WRITE", "MERGE_ON_READ") for m in ("single", "occ")
         for p in ("same", "apart") for r in ("stale", "together")]
CASES += [(t, m, "same", r) for t in ("COPY_ON_WRITE", "MERGE_ON_READ") for m in ("single", "occ")
          for r in ("paused", "cluster", "clean")]
CASES += [("MERGE_ON_READ", m, "same", "compact") for m in ("single", "occ")]
CASES += [(t, "single", "same", "killed") for t in ("COPY_ON_WRITE", "MERGE_ON_READ")]


# Writers in different file groups ("apart"), and single-writer stale/together races, run under -m extended:
# the in-process interleaving matrix (test_interleavings.py) pairs every write kind at every pause point on
# disjoint and shared groups in both modes, on version 6 and 8 tables.
def _extended(case: tuple[str, str, str, str]) -> bool:
    _, mode, placement, race = case
    return placement == "apart" or (mode == "single" and race in ("stale", "together"))


@pytest.mark.parametrize("table_type,mode,placement,race",
                         [pytest.param(*c, marks=pytest.mark.extended) if _extended(c) else c for c in CASES],
                         ids=[f"{t[:3]}-{m}-{p}-{r}" for t, m, p, r in CASES])
def test_every_acknowledged_write_survives(spark, pool, tmp_path, table_type, mode, placement, race):
    s = Scenario(pool, tmp_path, table_type, mode, placement)
    RACES[race](s)
    s.check(spark)
    failed = {w: r["error"]["type"] for w, r in s.outcomes if not r["ok"]}
    if placement == "apart" and race in ("stale", "together"):
        assert not failed, f"writes to different file groups must both commit: {s.outcomes}"
    if placement == "same" and race in ("stale", "together"):
        # Two writes of one file group that both saw the same table: the second to commit must fail
        # with a conflict (Hudi's overlapping-file-group rule), in every mode.
        assert list(failed.values()) == ["CommitConflictError"], f"expected one conflict: {s.outcomes}"
    if race == "paused":
        # B committed to A's file group while A was frozen: A cannot commit over it.
        assert "A0 (paused)" in failed and not set(failed) - {"A0 (paused)"}, s.outcomes
