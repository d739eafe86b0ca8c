"""Faults, for real: killed writers, retried tasks, executors in other processes, bad input.

Writers that get killed or need a SparkSession of their own run `fault_writer.py` in a subprocess
started in a session of its own; a kill SIGKILLs every process group under it (driver, JVMs and
PySpark's daemons with their workers) at once. All subprocesses start together in the module fixture
`fleet`, so their Spark start-ups overlap with each other and with the tests that only need the
shared session.

Nothing here relies on a hook inside pyhudi: the moment of a kill is found by watching the table on
disk (or /proc), or is held by a gate in the *user's* input pipeline (see fault_writer.py); task
failures come from SIGKILLing the Python worker that is writing a task's files.

Speculative execution cannot be exercised on one machine: Spark disables it for `local[...]` masters
and never places a speculative copy on a host that already runs an attempt of the task (all
`local-cluster` executors share one host). The local-cluster session below runs with speculation
switched on anyway; the retried-task tests produce the same on-disk situation (two attempts writing
the same file group under different write tokens) by killing a worker instead.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import pyhudi
from tests.helpers import marked_files
from tests.integration.fault_writer import data_files_of, inflight_instants, model_rows, rows_frame
from tests.integration.table_checks import (
    all_data_files,
    assert_files_match_commits,
    assert_table,
    completed_commits,
    hoodie_names,
    opts,
    read_avro,
    split_name,
    uri_to_rel,
)

pytestmark = pytest.mark.spark
SCRIPT = pathlib.Path(__file__).with_name("fault_writer.py")
WAIT_LIMIT = 900.0  # only bounds a hang; no assertion depends on how long anything took
MB = 1024 * 1024


# --------------------------------------------------------------------------- subprocess writers
def _proc_table() -> list[tuple[int, int, int, str]]:
    """(pid, ppid, pgrp, state) of every process."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = pathlib.Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        out.append((int(entry), int(fields[1]), int(fields[2]), fields[0]))
    return out


def process_tree(root: int) -> list[tuple[int, int, int, str]]:
    """The live processes descending from root (root included), as (pid, ppid, pgrp, state)."""
    table = [p for p in _proc_table() if p[3] not in ("Z", "X")]
    children: dict[int, list[tuple[int, int, int, str]]] = collections.defaultdict(list)
    for p in table:
        children[p[1]].append(p)
    out = [p for p in table if p[0] == root]
    todo = list(out)
    while todo:
        for child in children[todo.pop()[0]]:
            out.append(child)
            todo.append(child)
    return out


def live_group_members(groups: set[int]) -> list[int]:
    return [pid for pid, _, grp, state in _proc_table() if grp in groups and state not in ("Z", "X")]


def _cmdline(pid: int) -> str:
    try:
        return pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def python_workers(root: int) -> list[int]:
    """PySpark Python workers under root: forked children of a `pyspark.daemon` (which runs in a
    process group of its own)."""
    procs = process_tree(root)
    daemons = {pid for pid, _, _, _ in procs if "pyspark.daemon" in _cmdline(pid)}
    return [pid for pid, ppid, _, _ in procs if pid in daemons and ppid in daemons]


def cpu_time(pid: int) -> int:
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return -1
    fields = stat[stat.rindex(")") + 2:].split()
    return int(fields[11]) + int(fields[12])  # utime + stime, in clock ticks


def open_files_under(pid: int, root: str) -> list[str]:
    out: list[str] = []
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return out
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith(root + "/"):
            out.append(os.path.relpath(target, root))
    return out


class Writer:
    """fault_writer.py in its own session/process group; stdout carries JSON events."""

    def __init__(self, workdir: pathlib.Path, name: str, spec: dict[str, Any]) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.spec_path = workdir / f"{name}.spec.json"
        self.spec_path.write_text(json.dumps(spec))
        self.out = workdir / f"{name}.out"
        self.err = workdir / f"{name}.err"
        env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
        env.pop("HUDI_CONF_DIR", None)
        with open(self.out, "w") as out, open(self.err, "w") as err:
            self.proc = subprocess.Popen([sys.executable, str(SCRIPT), str(self.spec_path)], stdout=out, stderr=err,
                                         cwd=str(workdir), env=env, start_new_session=True)
        self.pgid = self.proc.pid

    def events(self) -> list[dict[str, Any]]:
        lines = self.out.read_text().splitlines()
        return [json.loads(line) for line in lines if line.startswith("{") and line.endswith("}")]

    def instants(self) -> dict[int, str]:
        return {e["job"]: e["instant"] for e in self.events() if e["event"] == "written"}

    def job_started(self, job: int) -> bool:
        return any(e["event"] == "job_start" and e["job"] == job for e in self.events())

    def stderr_tail(self) -> str:
        return "\n".join(self.err.read_text(errors="replace").splitlines()[-40:])

    def wait_until(self, cond: Callable[[], Any], what: str, poll: float = 0.05) -> Any:
        deadline = time.monotonic() + WAIT_LIMIT
        while True:
            value = cond()
            if value:
                return value
            if self.proc.poll() is not None:
                value = cond()
                if value:
                    return value
                raise AssertionError(f"{self.name} exited with {self.proc.returncode} before {what}:\n"
                                     f"{self.stderr_tail()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name}: gave up waiting for {what}")
            time.sleep(poll)

    def kill(self) -> None:
        """SIGKILL the driver, its JVMs and every Python daemon and worker at once, and wait until all are
        gone. PySpark's daemon puts itself and its workers in a process group of their own, so each
        group found under the driver is killed, not only the driver's."""
        groups = {self.pgid} | {grp for _, _, grp, _ in process_tree(self.proc.pid)}
        while True:
            for grp in groups:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(grp, signal.SIGKILL)
            if not live_group_members(groups):
                break
            time.sleep(0.01)
        self.proc.wait()

    def finish(self) -> None:
        rc = self.proc.wait(timeout=WAIT_LIMIT)
        assert rc == 0, f"{self.name} failed with exit code {rc}:\n{self.stderr_tail()}"


def read_signal(path: pathlib.Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def task_ends(event_dir: pathlib.Path) -> list[dict[str, Any]]:
    """TaskEnd events of the (single) Spark event log in event_dir."""
    (log,) = [p for p in event_dir.iterdir() if not p.name.startswith(".")]
    out = []
    for line in log.read_text().splitlines():
        event = json.loads(line)
        if event["Event"] != "SparkListenerTaskEnd":
            continue
        info = event["Task Info"]
        out.append({"stage": event["Stage ID"], "index": info["Index"], "task_id": info["Task ID"],
                    "attempt": info["Attempt"], "speculative": info["Speculative"],
                    "executor": info["Executor ID"], "reason": event["Task End Reason"]["Reason"],
                    "failed": info["Failed"]})
    return out


# --------------------------------------------------------------------------- the fleet of subprocesses
KILL_A = {"start": 100, "stop": 600, "version": 3}
KILL_B1 = {"start": 100_000, "stop": 140_000, "version": 3, "slices": 2, "city": "pnew"}
KILL_B2 = {"start": 0, "stop": 240_000, "version": 3}
C1 = {"start": 0, "stop": 300, "version": 1}
RECOVERY = {"start": 250, "stop": 350, "version": 5}
C2 = {"start": 200, "stop": 400, "version": 2}
CL = [{"start": 0, "stop": 3000, "version": 1}, {"start": 2000, "stop": 5000, "version": 2},
      {"start": 0, "stop": 1000, "version": 3}]
RETRY_BULK = {"start": 0, "stop": 100_000, "version": 1, "slices": 1, "partitions": 60}
RETRY_INSERT = {"start": 0, "stop": 300_000, "version": 1, "slices": 2, "city": "p0"}
# Small files so one task writes many of them, one after the other.
MANY_FILES = {"hoodie.parquet.max.file.size": str(MB), "hoodie.parquet.small.file.limit": "0",
              "hoodie.copyonwrite.insert.auto.split": "false", "hoodie.copyonwrite.insert.split.size": "1000000"}
RECOMPUTE_INPUT = {"hoodie.write.tagged.record.storage.level": "NONE"}
SPECULATION = {"spark.speculation": "true", "spark.speculation.multiplier": "1", "spark.speculation.quantile": "0.1",
               "spark.speculation.minTaskRuntime": "0", "spark.speculation.interval": "50ms"}


def event_log_conf(directory: pathlib.Path) -> dict[str, str]:
    directory.mkdir(parents=True, exist_ok=True)
    return {"spark.eventLog.enabled": "true", "spark.eventLog.dir": f"file:{directory}",
            "spark.eventLog.compress": "false", "spark.eventLog.rolling.enabled": "false"}


class Fleet:
    """Starts every subprocess writer at once; tests claim their results."""

    def __init__(self, root: pathlib.Path) -> None:
        self.root = root
        self.threads: list[threading.Thread] = []
        self.results: dict[str, Any] = {}
        self.errors: dict[str, BaseException] = {}
        self.writers: dict[str, Writer] = {}
        self._killed: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._start_kills()
        self._start_kill_rollback()
        self._start_cluster()

    def table(self, name: str) -> str:
        return str(self.root / "tables" / name)

    def _writer(self, name: str, master: str, jobs: list[dict[str, Any]], conf: dict[str, str] | None = None) -> Writer:
        w = Writer(self.root / "procs", name, {"master": master, "app": name, "jobs": jobs, "conf": {
            "spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "4", **(conf or {})}})
        self.writers[name] = w
        return w

    def _thread(self, name: str, fn: Callable[[], Any]) -> None:
        def run() -> None:
            try:
                self.results[name] = fn()
            except BaseException as exc:  # reported by the test that claims the result
                self.errors[name] = exc
        t = threading.Thread(target=run, name=name, daemon=True)
        t.start()
        self.threads.append(t)

    def result(self, name: str) -> Any:
        for t in self.threads:
            if t.name == name:
                t.join(WAIT_LIMIT)
        if name in self.errors:
            raise self.errors[name]
        return self.results[name]

    # One driver runs three doomed writes at once (local[8], so held tasks leave free slots):
    # (a) an upsert held by its input gate once `.inflight` exists, before any data file;
    # (b1) a bulk_insert of which one task wrote its data files while the other task's input is held;
    # (b2) an upsert (merge handles rewriting existing file groups, insert handles writing many files),
    #      started once (a) and (b1) are held; the whole process is SIGKILLed as soon as (b2)'s first
    #      data file shows up, while its other handle tasks are still running.
    def _start_kills(self) -> None:
        a, b1, b2 = self.table("kill_a"), self.table("kill_b1"), self.table("kill_b2")
        sig_a, sig_b1 = str(self.root / "kill_a.signal"), str(self.root / "kill_b1.signal")
        jobs = [
            {"thread": "a", "path": a, "rows": C1, "options": opts("kill_a")},
            {"thread": "a", "path": a, "rows": C2, "options": opts("kill_a")},
            {"thread": "a", "path": a, "rows": KILL_A, "options": {**opts("kill_a"), **RECOMPUTE_INPUT},
             "gate": "block_on_inflight", "signal": sig_a},
            {"thread": "b1", "path": b1, "rows": C1, "options": opts("kill_b1")},
            {"thread": "b1", "path": b1, "rows": KILL_B1, "gate": "hold_until_data_file", "signal": sig_b1,
             "options": {**opts("kill_b1"), **RECOMPUTE_INPUT, "hoodie.datasource.write.operation": "bulk_insert"}},
            {"thread": "b2", "path": b2, "rows": C1, "options": opts("kill_b2")},
            {"thread": "b2", "path": b2, "rows": KILL_B2, "options": {**opts("kill_b2"), **MANY_FILES},
             "wait_for": [sig_a, sig_b1]},
        ]
        self.jobs_of = {"kill_a": [0, 1, 2], "kill_b1": [3, 4], "kill_b2": [5, 6]}
        w = self._writer("kills", "local[8]", jobs)

        def watch() -> dict[str, Any]:
            w.wait_until(lambda: w.job_started(6), "the doomed upsert (b2) to start")

            def first_files() -> list[str] | None:
                pending = inflight_instants(b2)
                return data_files_of(b2, pending) if pending else None

            files = w.wait_until(first_files, "a data file of the upsert (b2)", poll=0.003)
            w.kill()
            return {"kill_b2": {"files_seen": files}, "kill_a": read_signal(pathlib.Path(sig_a)),
                    "kill_b1": read_signal(pathlib.Path(sig_b1))}

        self._thread("kills", watch)

    # A recovery write, started once the test has prepared its table (a killed write with many markers).
    def _start_kill_rollback(self) -> None:
        self._writer("kill_rb", "local[2]", [
            {"path": self.table("kill_rb"), "rows": RECOVERY,  # killed in its rollback, under the lock: short lease
             "options": opts("kill_b1", hoodie__write__lock__filesystem__expire=str(3 / 60)),
             "wait_for": [str(self.root / "kill_rb.go")]}])

    # Executors in separate JVMs (local-cluster): three commits, then a bulk_insert and an insert whose
    # writing Python worker is killed after it finished one data file and while it writes the next.
    def _start_cluster(self) -> None:
        events = self.root / "cluster-events"
        cl, bulk, ins = self.table("cluster"), self.table("retry_bulk"), self.table("retry_insert")
        w = self._writer("cluster", "local-cluster[2,1,1024]", [
            {"path": cl, "rows": CL[0], "options": opts("cluster")},
            {"path": cl, "rows": CL[1], "options": opts("cluster")},
            {"path": cl, "rows": CL[2], "options": opts("cluster", hoodie__datasource__write__operation="delete")},
            {"path": bulk, "rows": RETRY_BULK,
             "options": {**opts("retry_bulk"), "hoodie.datasource.write.operation": "bulk_insert"}},
            {"path": ins, "rows": RETRY_INSERT,
             "options": {**opts("retry_insert"), **MANY_FILES, "hoodie.datasource.write.operation": "insert"}},
        ], conf={**event_log_conf(events), **SPECULATION})
        self._kill_worker_mid_write("retry_bulk_kill", w, 3, bulk)
        self._kill_worker_mid_write("retry_insert_kill", w, 4, ins)

    def _kill_worker_mid_write(self, name: str, w: Writer, job: int, table: str) -> None:
        """Once job `job` has a data file on disk, SIGKILL the Python worker still writing that task.

        The worker is the one holding a data file of `table` open, or else the only Python worker that
        is using CPU (a write task is CPU-bound; idle workers sleep on their socket).
        """
        def kill() -> dict[str, Any]:
            w.wait_until(lambda: w.job_started(job), f"job {job} to start")
            cpu_then: dict[int, int] = {}
            sampled = 0.0

            def writing_worker() -> dict[str, Any] | None:
                nonlocal cpu_then, sampled
                files = all_data_files(table)
                workers = python_workers(w.proc.pid)
                open_by = {pid: [r for r in open_files_under(pid, table) if r.endswith(".parquet")] for pid in workers}
                complete = [f for f in files if not any(f in rels for rels in open_by.values())]
                if complete:  # at least one data file of the task is fully written
                    for pid, rels in open_by.items():
                        if rels:  # ... and this worker is writing the next one
                            os.kill(pid, signal.SIGKILL)
                            token = split_name(rels[0])[1]
                            mine = {f for f in files if split_name(f)[1] == token} | set(rels)
                            return {"pid": pid, "how": f"had {rels[0]} open", "token": token,
                                    "files_of_attempt": sorted(mine)}
                    tokens = {split_name(f)[1] for f in files}
                    busy = [pid for pid in workers if pid in cpu_then and cpu_time(pid) > cpu_then[pid]]
                    if len(busy) == 1 and len(tokens) == 1:  # ... and its worker is still at work
                        os.kill(busy[0], signal.SIGKILL)
                        return {"pid": busy[0], "how": "busy", "token": tokens.pop(), "files_of_attempt": files}
                if time.monotonic() - sampled > 0.03:
                    cpu_then, sampled = {pid: cpu_time(pid) for pid in workers}, time.monotonic()
                return None

            return w.wait_until(writing_worker, f"job {job}: a Python worker writing data files", poll=0.003)

        self._thread(name, kill)

    # -- claiming a kill ------------------------------------------------------------------
    def killed(self, name: str) -> dict[str, Any]:
        """The state kill scenario `name` was left in (the kill happens once); keeps a pristine copy."""
        with self._lock:
            if name in self._killed:
                return self._killed[name]
            seen = self.result("kills")[name]
            assert seen is not None, f"{name} was not held at its point when the process was killed"
            path = self.table(name)
            instants = self.writers["kills"].instants()
            info = {**seen, "path": path, "pending": sorted(inflight_instants(path)),
                    "setup": [instants.get(i) for i in self.jobs_of[name][:-1]],
                    "doomed_written": self.jobs_of[name][-1] in instants}
            pristine = self.root / "pristine" / name
            shutil.copytree(path, pristine)
            info["pristine"] = str(pristine)
            self._killed[name] = info
            return info

    def close(self) -> None:
        for w in self.writers.values():
            if w.proc.poll() is None:
                w.kill()
        for t in self.threads:
            t.join(5)


@pytest.fixture(scope="module", autouse=True)
def _start_fleet_first(request):
    """Start the subprocesses before this module's first test when any selected test needs them, so
    their Spark start-ups overlap with the tests that use the shared session (which run first)."""
    if any("fleet" in item.fixturenames for item in request.session.items if item.module is request.module):
        request.getfixturevalue("fleet")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    f = Fleet(tmp_path_factory.mktemp("fleet"))
    try:
        yield f
    finally:
        f.close()


# --------------------------------------------------------------------------- (1) killed writes
def assert_pending_state(info: dict[str, Any]) -> str:
    path = info["path"]
    assert None not in info["setup"], "the setup commits did not all complete"
    assert not info["doomed_written"], "the doomed write returned before the kill"
    (pending,) = info["pending"]
    names = hoodie_names(path)
    assert f"{pending}.commit.requested" in names and f"{pending}.inflight" in names
    assert f"{pending}.commit" not in names, "the write completed before it was killed"
    assert completed_commits(path) == info["setup"]
    assert pending > info["setup"][-1]
    return pending


def recover_and_check(spark, info: dict[str, Any], pending: str, orphans: list[str], model: dict[int, tuple],
                      name: str) -> None:
    """The next write rolls the pending instant back first, then commits; everything is as it should be."""
    path = info["path"]
    instant = pyhudi.write(rows_frame(spark, RECOVERY), path, opts(name))
    model = {**model, **model_rows(RECOVERY)}
    names = hoodie_names(path)
    assert not [n for n in names if n.startswith(pending + ".")], f"pending instant {pending} still on the timeline"
    assert not os.path.exists(os.path.join(path, ".hoodie", ".temp", pending)), "markers of the failed write remain"
    for rel in orphans:
        assert not os.path.exists(os.path.join(path, rel)), f"orphan {rel} of the failed write was not deleted"
    assert not [f for f in all_data_files(path) if split_name(f)[2] == pending]
    rollbacks = [n.split(".")[0] for n in names if n.endswith(".rollback")]
    assert len(rollbacks) == 1, names
    (rb,) = rollbacks
    assert pending < rb < instant
    meta_dir = pathlib.Path(path, ".hoodie")
    assert f"{rb}.rollback.requested" in names and f"{rb}.rollback.inflight" in names
    plan = read_avro(meta_dir / f"{rb}.rollback.requested")
    assert plan["instantToRollback"] == {"commitTime": pending, "action": "commit"}
    planned = {os.path.basename(f) for r in plan["RollbackRequests"] for f in r["filesToBeDeleted"]}
    assert {os.path.basename(o) for o in orphans} <= planned
    meta = read_avro(meta_dir / f"{rb}.rollback")
    assert meta["commitsRollback"] == [pending]
    assert meta["instantsRollback"] == [{"commitTime": pending, "action": "commit"}]
    deleted = {os.path.basename(f) for p in meta["partitionMetadata"].values() for f in p["successDeleteFiles"]}
    failed = [f for p in meta["partitionMetadata"].values() for f in p["failedDeleteFiles"]]
    assert {os.path.basename(o) for o in orphans} <= deleted and not failed
    assert meta["totalFilesDeleted"] == len(deleted)
    assert completed_commits(path)[-1] == instant
    assert_files_match_commits(path)
    assert_table(spark, path, model)


@pytest.mark.extended  # ~40 s; the crash test kills writes at write.before_commit and mid-file on both versions
@pytest.mark.slow
def test_write_killed_after_inflight_before_data_files(spark, fleet):
    info = fleet.killed("kill_a")
    pending = assert_pending_state(info)
    assert info["pending"] == [pending] and info["files"] == []
    path = info["path"]
    assert data_files_of(path, {pending}) == [], "the gate held the input, so no data file can exist"
    model = {**model_rows(C1), **model_rows(C2)}
    assert_table(spark, path, model)
    assert_table(spark, path, model, as_of=pending)
    recover_and_check(spark, info, pending, [], model, "kill_a")


@pytest.mark.extended  # ~48 s; the crash test kills bulk_insert mid-file (and every write kind) on versions 6 and 8
@pytest.mark.slow
def test_bulk_insert_killed_after_writing_data_files(spark, fleet):
    info = fleet.killed("kill_b1")
    pending = assert_pending_state(info)
    path = info["path"]
    orphans = data_files_of(path, {pending})
    assert info["files"] and set(info["files"]) <= set(orphans), "the gate saw data files of the pending write"
    assert all(f.startswith("pnew/") for f in orphans)
    marked = marked_files(path, pending)
    assert set(orphans) <= set(marked), "every data file has its marker"
    model = model_rows(C1)
    assert_table(spark, path, model)
    assert_table(spark, path, model, as_of=pending)
    recover_and_check(spark, info, pending, orphans, model, "kill_b1")


@pytest.mark.slow
@pytest.mark.extended  # the crash test kills upserts mid-file on COW and MOR in the default run
def test_upsert_killed_while_handles_write(spark, fleet):
    info = fleet.killed("kill_b2")
    pending = assert_pending_state(info)
    path = info["path"]
    orphans = data_files_of(path, {pending})
    assert orphans, "the kill left data files of the pending write"
    model = model_rows(C1)
    assert_table(spark, path, model)
    assert_table(spark, path, model, as_of=pending)
    recover_and_check(spark, info, pending, orphans, model, "kill_b2")


def _crash_rollback_at(path: str, point: str) -> tuple[str, str, list[str]]:
    """Leave the table as a crash inside `rollback_pending_write` at `point` would.

    Built with the same pyhudi steps the rollback takes, stopped part-way (a SIGKILL lands in a
    window of milliseconds, which no test can hit on purpose).
    """
    from pyhudi.model import avro_models as am
    from pyhudi.model.instant_time import new_instant_time
    from pyhudi.services.rollback import plan_rollback
    from pyhudi.storage import Storage
    from pyhudi.timeline.instant import Action, Instant, State
    from pyhudi.timeline.timeline import ActiveTimeline

    storage = Storage(path)
    timeline = ActiveTimeline.load(storage)
    (target,) = list(timeline.pending())
    last = timeline.last()
    assert last is not None
    rb = new_instant_time(after=last.timestamp)
    plan: Any = plan_rollback(storage, target)
    timeline.create_requested(Instant(rb, Action.ROLLBACK, State.REQUESTED),
                              am.write_instant_avro("HoodieRollbackPlan", plan))
    files = [uri_to_rel(f, path) for r in plan["RollbackRequests"] for f in r["filesToBeDeleted"]]
    if point == "planned":
        return rb, target.timestamp, files
    timeline.transition_to_inflight(Instant(rb, Action.ROLLBACK, State.REQUESTED), b"")
    doomed = files[: len(files) // 2] if point == "half_deleted" else files
    for rel in doomed:
        pathlib.Path(path, rel).unlink(missing_ok=True)
    if point == "before_complete":
        for name in hoodie_names(path):
            if name.startswith(target.timestamp + "."):
                os.remove(os.path.join(path, ".hoodie", name))
        shutil.rmtree(os.path.join(path, ".hoodie", ".temp", target.timestamp))
    return rb, target.timestamp, files


@pytest.mark.slow
@pytest.mark.parametrize("point", ["planned", "half_deleted", "before_complete"])
def test_interrupted_rollback_is_resumed_by_next_write(spark, fleet, tmp_path, point):
    info = fleet.killed("kill_b1")
    path = str(tmp_path / "t")
    shutil.copytree(info["pristine"], path)
    rb, target, files = _crash_rollback_at(path, point)
    assert files, "the failed write had data files to roll back"
    model = model_rows(C1)
    assert_table(spark, path, model)
    instant = pyhudi.write(rows_frame(spark, RECOVERY), path, opts("kill_b1"))
    model = {**model, **model_rows(RECOVERY)}
    names = hoodie_names(path)
    assert [n for n in names if ".rollback" in n] == [f"{rb}.rollback", f"{rb}.rollback.inflight",
                                                      f"{rb}.rollback.requested"], \
        "the pending rollback was completed, and no second rollback was started"
    assert not [n for n in names if n.startswith(target + ".")]
    assert not os.path.exists(os.path.join(path, ".hoodie", ".temp", target))
    for rel in files:
        assert not os.path.exists(os.path.join(path, rel))
    meta = read_avro(pathlib.Path(path, ".hoodie", f"{rb}.rollback"))
    assert meta["commitsRollback"] == [target]
    assert completed_commits(path)[-1] == instant
    assert_files_match_commits(path)
    assert_table(spark, path, model)


@pytest.mark.slow
def test_write_killed_during_rollback_is_resumed(spark, fleet):
    """SIGKILL a writer while it rolls back an earlier failed write; the next write finishes that rollback."""
    info = fleet.killed("kill_b1")
    path = fleet.table("kill_rb")
    shutil.copytree(info["pristine"], path)
    (target,) = info["pending"]
    orphans = data_files_of(path, {target})
    # Markers of files whose tasks died before creating them: legal, and they keep the rollback busy
    # long enough (thousands of deletes) for a kill to land inside it.
    marker_dir = pathlib.Path(path, ".hoodie", ".temp", target)
    assert (marker_dir / "MARKERS.type").read_text() == "TIMELINE_SERVER_BASED"  # the writer's (default) layout
    prefix = "00000000-0000-0000-0000-"
    (marker_dir / "MARKERS7").write_text("".join(
        f"pnew/{prefix}{i:012d}-0_9-9-{i}_{target}.parquet.marker.CREATE\n" for i in range(50_000)))
    w = fleet.writers["kill_rb"]
    pathlib.Path(fleet.root, "kill_rb.go").touch()

    def rollback_inflight() -> str | None:
        names = [n for n in os.listdir(os.path.join(path, ".hoodie")) if n.endswith(".rollback.inflight")]
        return names[0].split(".")[0] if names else None

    rb = w.wait_until(rollback_inflight, "the rollback to start", poll=0.002)
    w.kill()
    names = hoodie_names(path)
    assert f"{rb}.rollback.requested" in names and f"{rb}.rollback" not in names, \
        "the kill landed inside the rollback"
    plan = read_avro(pathlib.Path(path, ".hoodie", f"{rb}.rollback.requested"))
    assert plan["instantToRollback"]["commitTime"] == target
    assert sum(len(r["filesToBeDeleted"]) for r in plan["RollbackRequests"]) == 50_000 + len(orphans)
    assert completed_commits(path) == info["setup"], "the recovery write did not commit"
    model = model_rows(C1)
    assert_table(spark, path, model)
    instant = pyhudi.write(rows_frame(spark, RECOVERY), path, opts("kill_b1"))
    model = {**model, **model_rows(RECOVERY)}
    names = hoodie_names(path)
    assert [n for n in names if ".rollback" in n] == [f"{rb}.rollback", f"{rb}.rollback.inflight",
                                                      f"{rb}.rollback.requested"]
    assert not [n for n in names if n.startswith(target + ".")]
    assert not os.path.exists(os.path.join(path, ".hoodie", ".temp", target))
    for rel in orphans:
        assert not os.path.exists(os.path.join(path, rel))
    assert read_avro(pathlib.Path(path, ".hoodie", f"{rb}.rollback"))["commitsRollback"] == [target]
    assert completed_commits(path)[-1] == instant
    assert_files_match_commits(path)
    assert_table(spark, path, model)


# --------------------------------------------------------------------------- (2) task retries
def check_retried_write(spark, fleet, kill_name: str, table: str, job: int, rows: dict[str, Any],
                        same_file_groups: bool) -> None:
    """A write task's Python worker was SIGKILLed after the task had fully written at least one data file;
    Spark retried the task (new attempt, new write token). The commit must keep only the retry's files."""
    kill = fleet.result(kill_name)
    w = fleet.writers["cluster"]
    w.finish()
    path = fleet.table(table)
    instant = w.instants()[job]
    killed_token = kill["token"]
    assert kill["files_of_attempt"], "the killed attempt had written data files"
    assert all(split_name(f)[2] == instant for f in kill["files_of_attempt"])
    files = all_data_files(path)
    leftovers = [f for f in files if split_name(f)[1] == killed_token]
    assert not leftovers, f"files of the killed attempt survived the commit: {leftovers}"
    if same_file_groups:
        # insert buckets are planned on the driver: the retry rewrites the same file ids.
        tokens = {split_name(f)[0]: split_name(f)[1] for f in files}
        for rel in kill["files_of_attempt"]:
            assert tokens.get(split_name(rel)[0], killed_token) != killed_token, rel
    assert_files_match_commits(path)
    assert_table(spark, path, model_rows(rows))
    # Spark's own record: the killed attempt failed and a later attempt of the same task succeeded.
    ends = task_ends(fleet.root / "cluster-events")
    partition, stage, task_id = (int(x) for x in killed_token.split("-"))  # Hudi's write token
    (failed,) = [e for e in ends if e["task_id"] == task_id]
    assert failed["reason"] != "Success" and failed["stage"] == stage and failed["index"] == partition
    winners = {int(split_name(f)[1].split("-")[2]) for f in files}
    retried = [e for e in ends if e["task_id"] in winners]
    assert retried and all(e["reason"] == "Success" and e["stage"] == stage and e["index"] == partition
                           and e["attempt"] > failed["attempt"] for e in retried)


@pytest.mark.slow
def test_bulk_insert_task_retry_leaves_no_orphan_file_groups(spark, fleet):
    """bulk_insert names file groups in the task, so the killed attempt's files are whole extra file
    groups of a completed instant; left on disk they would be read as duplicates."""
    check_retried_write(spark, fleet, "retry_bulk_kill", "retry_bulk", 3, RETRY_BULK, same_file_groups=False)


@pytest.mark.slow
def test_insert_task_retry_leaves_one_file_per_file_group(spark, fleet):
    """insert: the retry writes the same file ids under a new write token; one file per (fileId, instant)."""
    check_retried_write(spark, fleet, "retry_insert_kill", "retry_insert", 4, RETRY_INSERT, same_file_groups=True)


# --------------------------------------------------------------------------- (3) executors elsewhere
@pytest.mark.slow
def test_local_cluster_executors_write_upserts_and_deletes(spark, fleet):
    w = fleet.writers["cluster"]
    w.wait_until(lambda: {0, 1, 2} <= set(w.instants()), "three commits on the local cluster")
    path = fleet.table("cluster")
    instants = [w.instants()[i] for i in range(3)]
    assert instants == sorted(instants) == completed_commits(path)
    states = []
    model: dict[int, tuple] = {}
    model.update(model_rows(CL[0]))
    states.append(dict(model))
    model.update(model_rows(CL[1]))
    states.append(dict(model))
    for k in model_rows(CL[2]):
        model.pop(k, None)
    states.append(dict(model))
    assert_table(spark, path, model)
    for instant, state in zip(instants, states):
        assert_table(spark, path, state, as_of=instant)
    assert_files_match_commits(path)
    w.finish()
    ends = task_ends(fleet.root / "cluster-events")
    executors = {e["executor"] for e in ends}
    assert executors and "driver" not in executors, executors
