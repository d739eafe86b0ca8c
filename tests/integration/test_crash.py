"""Crash safety, for real: SIGKILL a writer at every kill point, recover, and check the table.

Every row of KILL_POINTS (fault point, base table, operation, ...) runs `crash_worker.py` on a copy
of a prepared base table, in a session of its own, with the point armed (see pyhudi/faults.py):
when the code reaches it, every process of the child (driver, JVM, PySpark daemon and workers) is
SIGKILLed at once. Then, in this process (the shared Spark session):

1. the child died by SIGKILL at that very point (return code -9, and the point reported itself; a
   child that exits normally never reached it and fails the test), and the point's evidence is on
   storage (a torn data file, a marker without its file, a requested-only instant, a held lock...);
2. both readers (pyhudi and hudi-rs) return exactly the committed data: the base table's model,
   plus the killed write only if its commit file was completed (`visible`); nothing uncommitted;
3. the next operations (`recover`: another write, or the interrupted service run again) succeed,
   both readers return the model with their batches applied, nothing is left pending, no lock is
   held and no markers of an instant that did not complete remain;
4. after `pyhudi.clean` keeping one file version, the data files on storage are exactly the latest
   file slices of the live file groups, and each is named by a completed commit's write stats: no
   file of the failed operation survived.

Children run two at a time in a background thread, started once the base tables exist, while this
process recovers and checks the kill points in table order. The last test reports (and asserts)
how many kill points were tried and recovered.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib.util import find_spec
from typing import Any

import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi.io.log_format import CorruptBlock, read_blocks
from pyhudi.model import avro_models as am
from pyhudi.model.file_names import parse_base_file, parse_log_file
from pyhudi.model.metadata_table import listed_partitions
from pyhudi.model.properties import parse_properties
from pyhudi.model.table_config import load_table_config
from pyhudi.storage import Storage
from pyhudi.storage.storage import TEMP_DIR
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.transaction.lock import LOCK_DIR
from pyhudi.view.builder import build_view
from pyhudi.writer.markers import MARKER_ROOT, list_marked_files
from tests.helpers import REPO, hudi_rs, plant_metadata_table, rows_by_key
from tests.integration.crash_worker import COLUMNS, SCHEMA, apply_batch, batch_rows, run, table_options

pytestmark = [pytest.mark.spark, pytest.mark.slow]
WORKER = pathlib.Path(__file__).with_name("crash_worker.py")
SEED = 7
SLOTS = 2  # children at a time
CHILD_LIMIT = 900.0  # only bounds a hang
KB = 1024
Model = dict[int, tuple[Any, ...]]

CLUSTER = (("hoodie.clustering.plan.strategy.small.file.limit", str(64 * KB)),
           ("hoodie.clustering.plan.strategy.target.file.max.bytes", str(40 * KB)),
           ("hoodie.clustering.plan.strategy.max.bytes.per.group", str(80 * KB)))
RETAIN_ONE_COMMIT = (("hoodie.cleaner.commits.retained", "1"),)
INLINE_COMPACTION = (("hoodie.compact.inline", "true"), ("hoodie.compact.inline.max.delta.commits", "1"))
ARCHIVE = (("hoodie.keep.min.commits", "2"), ("hoodie.keep.max.commits", "3"), *RETAIN_ONE_COMMIT)
ONE_VERSION = (("hoodie.cleaner.policy", "KEEP_LATEST_FILE_VERSIONS"), ("hoodie.cleaner.fileversions.retained", "1"))
FINAL_CLEAN = dict(ONE_VERSION)


@dataclass(frozen=True)
class KillPoint:
    fault: str  # PYHUDI_FAULT_POINT of the child: `<name>` or `<name>@<n>` (n-th hit in a process)
    base: str  # base table: new (none yet), cow, mor, mor_failed (mor plus a write that failed before its commit)
    op: str  # the child's operation (crash_worker.run)
    evidence: tuple[str, ...]  # what the kill must have left on storage (see evidence_holds)
    recover: tuple[str, ...] = ("upsert",)  # the next operations, run here
    visible: bool = False  # the child's write completed its commit before the kill
    options: tuple[tuple[str, str], ...] = ()  # for the child's operation and the recovery
    requires: str | None = None  # module the point lives in; skipped until it exists

    @property
    def id(self) -> str:
        return f"{self.fault}:{self.base}:{self.op}"

    @property
    def writes(self) -> bool:
        return self.op in ("upsert", "delete", "bulk_insert", "overwrite")


KILL_POINTS: tuple[KillPoint, ...] = (
    # -- writes: requested -> inflight, markers, data files, the commit file
    KillPoint("write.before_commit", "new", "upsert", ("pending:commit", "lock_held")),
    KillPoint("timeline.before_inflight", "cow", "upsert", ("requested_only",)),
    KillPoint("write.after_marker", "cow", "upsert", ("marker_without_file",)),
    KillPoint("write.mid_file", "cow", "upsert", ("torn_base_file",), recover=("clean", "upsert"),
              options=ONE_VERSION),
    KillPoint("write.mid_file", "cow", "bulk_insert", ("torn_base_file",)),
    KillPoint("write.mid_file", "cow", "overwrite", ("torn_base_file", "pending:replacecommit")),
    KillPoint("write.before_commit", "cow", "delete", ("pending:commit", "lock_held")),
    # the 4th exclusive create of an upsert is its commit file (requested, inflight, table lock, commit)
    KillPoint("storage.before_link@4", "cow", "upsert", ("pending:commit", "torn_commit"),
              recover=("cluster", "upsert"), options=CLUSTER),
    KillPoint("write.after_commit", "cow", "upsert", ("lock_held",), visible=True),
    KillPoint("write.mid_log_file", "mor", "upsert", ("torn_log_file",), recover=("compact", "upsert")),
    KillPoint("write.mid_file", "mor", "upsert", ("torn_base_file",)),
    KillPoint("write.before_commit", "mor", "delete", ("pending:deltacommit", "lock_held"),
              recover=("cluster", "upsert"), options=CLUSTER),
    # -- compaction (merge-on-read): after scheduling, between base files, before completing (inline)
    KillPoint("compaction.after_schedule", "mor", "compact", ("pending:compaction",), recover=("compact", "upsert")),
    KillPoint("compaction.mid_execute", "mor", "compact", ("pending:compaction", "files_of_pending"),
              recover=("clean", "upsert", "compact"), options=ONE_VERSION),
    KillPoint("compaction.before_commit", "mor", "upsert", ("pending:compaction", "files_of_pending"),
              visible=True, options=INLINE_COMPACTION),
    # -- clustering
    KillPoint("clustering.after_schedule", "cow", "cluster", ("pending:replacecommit",),
              recover=("cluster", "upsert"), options=CLUSTER),
    KillPoint("clustering.mid_execute", "cow", "cluster", ("pending:replacecommit", "files_of_pending"),
              recover=("clean", "cluster", "upsert"), options=CLUSTER + ONE_VERSION),
    KillPoint("clustering.after_schedule", "mor_failed", "cluster", ("pending:replacecommit", "pending:deltacommit"),
              recover=("rollback", "cluster", "upsert"), options=CLUSTER),
    KillPoint("clustering.before_commit", "mor", "cluster", ("pending:replacecommit", "files_of_pending"),
              recover=("cluster", "upsert"), options=CLUSTER),
    # -- clean: after the plan, between deletes, before completing (a writer's automatic clean)
    KillPoint("clean.after_plan", "cow", "clean", ("pending:clean",), options=RETAIN_ONE_COMMIT),
    KillPoint("clean.mid_delete@2", "cow", "clean", ("pending:clean", "partly_deleted:clean"), recover=("clean",),
              options=RETAIN_ONE_COMMIT),
    KillPoint("clean.before_commit", "cow", "upsert", ("pending:clean",), visible=True, options=RETAIN_ONE_COMMIT),
    # -- rollback of a failed write: after the plan, between deletes, after removing the failed instant
    KillPoint("rollback.after_plan", "mor_failed", "rollback", ("pending:rollback", "pending:deltacommit")),
    KillPoint("rollback.mid_delete@2", "mor_failed", "rollback",
              ("pending:rollback", "pending:deltacommit", "partly_deleted:rollback"),
              recover=("rollback", "upsert")),
    KillPoint("rollback.before_complete", "mor_failed", "rollback",
              ("pending:rollback", "all_deleted:rollback", "target_removed")),
    # -- Hudi's metadata table, removed before the first pyhudi instant completes: partitions cleared in
    # hoodie.properties, then .hoodie/metadata deleted entry by entry
    KillPoint("metadata_table.after_properties", "cow_mdt", "upsert",
              ("mdt_cleared_folder_left", "pending:commit", "lock_held")),
    KillPoint("metadata_table.mid_delete", "cow_mdt", "clean", ("mdt_cleared_folder_left", "pending:clean"),
              options=RETAIN_ONE_COMMIT),
    # -- archival (pyhudi.services.archival): run automatically once that module exists
    KillPoint("archival.after_archive_file", "cow", "archive", (), recover=("archive", "upsert"), options=ARCHIVE,
              requires="pyhudi.services.archival"),
    KillPoint("archival.mid_delete", "cow", "archive", (), recover=("archive", "upsert"), options=ARCHIVE,
              requires="pyhudi.services.archival"),
)


# Points reached in Spark's Python workers (the fault variables reach them through the environment the
# child's driver inherited); the others are reached in the driver.
EXECUTOR_POINTS = frozenset({"write.after_marker", "write.mid_file", "write.mid_log_file", "compaction.mid_execute",
                             "clustering.mid_execute"})


def available(point: KillPoint) -> bool:
    return point.requires is None or find_spec(point.requires) is not None


# --------------------------------------------------------------------------- base tables
@dataclass(frozen=True)
class Base:
    path: str
    table_type: str
    model: Model
    next_step: int  # the first batch number not yet used
    completed: tuple[str, ...]  # completed write instants


def table_name(base: str) -> str:
    """hoodie.table.name of a base table: a copy keeps its origin's name (Hudi refuses another name)."""
    return {"cow_mdt": "cow", "mor_failed": "mor"}.get(base, base)


def completed_writes(path: str) -> tuple[str, ...]:
    if not os.path.exists(os.path.join(path, ".hoodie")):
        return ()
    timeline = ActiveTimeline.load(Storage(path))
    return tuple(i.timestamp for i in timeline.write_timeline().completed())


def write_batch(spark: Any, path: str, table_type: str, step: int, kind: str, extra: dict[str, str]) -> None:
    run(spark, {"op": kind, "path": path, "seed": SEED, "step": step,
                "options": {**table_options(os.path.basename(path), table_type), **extra}})


def build_bases(spark: Any, root: pathlib.Path, ready: Callable[[str, Base], None]) -> None:
    """Build every base table, handing each to `ready` as soon as it exists."""
    from pyhudi.writer.client import WriteClient

    new = root / "new"
    new.mkdir(parents=True)
    bases: dict[str, Base] = {"new": Base(str(new), "COPY_ON_WRITE", {}, 0, ())}
    ready("new", bases["new"])
    plans = {"cow": ("COPY_ON_WRITE", ["upsert", "upsert", "upsert", "delete"]),
             "mor": ("MERGE_ON_READ", ["upsert", "upsert", "upsert"])}
    for name, (table_type, kinds) in plans.items():
        path = str(root / name)
        model: Model = {}
        for step, kind in enumerate(kinds):
            write_batch(spark, path, table_type, step, kind, {})
            model = apply_batch(model, SEED, step, kind)
        bases[name] = Base(path, table_type, model, len(kinds), completed_writes(path))
        ready(name, bases[name])
    # cow_mdt: the cow table as a Hudi writer with the metadata table on would leave it
    path = str(root / "cow_mdt")
    shutil.copytree(bases["cow"].path, path)
    plant_metadata_table(pathlib.Path(path))
    bases["cow_mdt"] = dataclasses.replace(bases["cow"], path=path)
    ready("cow_mdt", bases["cow_mdt"])
    # mor_failed: a write (updates and inserts in partition p0 only) that died after writing its data
    # files, before its commit (the driver's own clean-up after the failure skipped as well), left for
    # the next writer to roll back. Partitions p1 and p2 have no files of it, so table services can plan
    # work there while it is pending.
    mor = bases["mor"]
    path = str(root / "mor_failed")
    shutil.copytree(mor.path, path)
    rows = [r for r in batch_rows(SEED, mor.next_step, "upsert") if r[2] == "p0"]
    options = {**table_options(table_name("mor_failed"), mor.table_type), "hoodie.datasource.write.operation": "upsert"}

    def crash(*_: Any, **__: Any) -> None:
        raise RuntimeError("simulated crash before the commit file")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(WriteClient, "_complete", crash)
        mp.setattr(WriteClient, "_rollback_own", lambda *_: None)
        with pytest.raises(RuntimeError, match="simulated crash"):
            pyhudi.write(spark.createDataFrame(rows, SCHEMA), path, options)
    timeline = ActiveTimeline.load(Storage(path))
    (failed,) = list(timeline.pending())
    assert list_marked_files(Storage(path), failed.timestamp), "the failed write left data files"
    ready("mor_failed", Base(path, mor.table_type, mor.model, mor.next_step + 1, mor.completed))


# --------------------------------------------------------------------------- children
def session_members(sid: int) -> list[tuple[int, int, str]]:
    """(pid, process group, state) of every process in session `sid`."""
    out = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[3]) == sid:
            out.append((int(pid), int(fields[2]), fields[0]))
    return out


def kill_session(sid: int) -> None:
    for _, group, _ in session_members(sid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)


def wait_session_gone(sid: int, limit: float = 30.0) -> list[tuple[int, int, str]]:
    """Wait until no live (non-zombie) process of the session is left; returns the survivors."""
    deadline = time.monotonic() + limit
    while True:
        alive = [m for m in session_members(sid) if m[2] != "Z"]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


@dataclass
class ChildRun:
    point: KillPoint
    path: str
    step: int | None
    returncode: int | None = None
    driver_pid: int = 0
    reported: list[tuple[str, int]] = field(default_factory=list)  # (point, pid) of every report
    survivors: list[tuple[int, int, str]] = field(default_factory=list)
    stdout: str = ""
    stderr_tail: str = ""
    seconds: float = 0.0


class Runner:
    """Runs every kill point's child, SLOTS at a time, in table order, each once its base table exists."""

    def __init__(self, root: pathlib.Path, points: list[KillPoint]) -> None:
        self.root = root
        self.bases: dict[str, Base] = {}
        self.ready = {p.base: threading.Event() for p in points} | {"new": threading.Event()}
        self.closing = False
        self.pool = ThreadPoolExecutor(SLOTS, thread_name_prefix="crash-child")
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.futures: dict[str, Future[ChildRun]] = {p.id: self.pool.submit(self._run, i, p)
                                                      for i, p in enumerate(points)}

    def result(self, point: KillPoint) -> ChildRun:
        return self.futures[point.id].result(timeout=CHILD_LIMIT)

    def add_base(self, name: str, base: Base) -> None:
        self.bases[name] = base
        self.ready.setdefault(name, threading.Event()).set()

    def _run(self, index: int, point: KillPoint) -> ChildRun:
        self.ready[point.base].wait(CHILD_LIMIT)
        if self.closing or point.base not in self.bases:
            raise RuntimeError(f"base table {point.base} was never built")
        base = self.bases[point.base]
        work = self.root / f"k{index:02d}"
        work.mkdir()
        path = str(work / point.base)
        shutil.copytree(base.path, path)
        step = base.next_step if point.writes else None
        spec = {"path": path, "op": point.op, "seed": SEED, "step": step, "master": "local[1]",
                "conf": {"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2",
                         # JVM start-up dominates a child's run: C1 only and the serial GC start faster.
                         "spark.driver.extraJavaOptions": "-Duser.timezone=UTC -XX:TieredStopAtLevel=1 "
                                                          "-XX:+UseSerialGC"},
                "options": {**table_options(table_name(point.base), base.table_type), **dict(point.options)}}
        (work / "spec.json").write_text(json.dumps(spec))
        report = work / "report.txt"
        env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
                   PYHUDI_FAULT_POINT=point.fault, PYHUDI_FAULT_OWN_GROUP="1", PYHUDI_FAULT_REPORT=str(report),
                   PYTHONPATH=os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
        env.pop("HUDI_CONF_DIR", None)
        started = time.monotonic()
        with open(work / "stdout", "wb") as out, open(work / "stderr", "wb") as err:
            proc = subprocess.Popen([sys.executable, str(WORKER), str(work / "spec.json")], stdout=out, stderr=err,
                                    cwd=str(work), env=env, start_new_session=True)
            self.procs[point.id] = proc
            try:
                proc.wait(timeout=CHILD_LIMIT)
            except subprocess.TimeoutExpired:
                kill_session(proc.pid)
                proc.wait()
        run_ = ChildRun(point, path, step, returncode=proc.returncode, driver_pid=proc.pid,
                        seconds=time.monotonic() - started)
        # Nothing of the child may still be writing while the test recovers the table.
        run_.survivors = wait_session_gone(proc.pid)
        lines = report.read_text().splitlines() if report.exists() else []
        run_.reported = [(name, int(pid)) for name, pid in (line.split() for line in lines)]
        run_.stdout = (work / "stdout").read_text(errors="replace")
        run_.stderr_tail = "\n".join((work / "stderr").read_text(errors="replace").splitlines()[-30:])
        return run_

    def close(self) -> None:
        self.closing = True
        for event in self.ready.values():
            event.set()
        for fut in self.futures.values():
            fut.cancel()
        for proc in self.procs.values():
            if proc.poll() is None:
                kill_session(proc.pid)
        self.pool.shutdown(wait=True)


@dataclass
class CrashEnv:
    runner: Runner
    outcomes: dict[str, str] = field(default_factory=dict)  # point id -> "recovered" or what failed


def selected_points(session: pytest.Session) -> set[str]:
    return {item.callspec.id for item in session.items
            if getattr(item, "originalname", None) == "test_kill_point" and hasattr(item, "callspec")}


@pytest.fixture(scope="module")
def crash_env(spark: Any, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[CrashEnv]:
    root = tmp_path_factory.mktemp("crash")
    selected = selected_points(request.session)
    runner = Runner(root, [p for p in KILL_POINTS if available(p) and p.id in selected])
    try:
        build_bases(spark, root / "bases", runner.add_base)  # children start while later bases are built
        yield CrashEnv(runner)
    finally:
        runner.close()


# --------------------------------------------------------------------------- storage inspection
def data_files(path: str) -> set[str]:
    """Every base and log file under the table (outside .hoodie), relative to the base path."""
    out = set()
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not d.startswith(".hoodie")]
        for name in files:
            if parse_base_file(name) or parse_log_file(name):
                out.add(os.path.relpath(os.path.join(root, name), path))
    return out


def pending_instants(path: str) -> list[tuple[str, str, str]]:
    """(timestamp, action, state) of every instant that is not completed."""
    timeline = ActiveTimeline.load(Storage(path))
    return [(i.timestamp, i.action.value, i.state.value) for i in timeline.pending()]


def marked_of_pending(path: str) -> list[str]:
    storage = Storage(path)
    return [rel for ts, _, _ in pending_instants(path) for rel in list_marked_files(storage, ts)]


def parquet_readable(full: str) -> bool:
    try:
        return pq.ParquetFile(full).metadata.num_rows >= 0
    except Exception:
        return False


def has_corrupt_block(full: str) -> bool:
    with open(full, "rb") as f:
        return any(isinstance(b, CorruptBlock) for b in read_blocks(f.read(), load_content=False))


def planned_deletes(path: str, action: str) -> list[str]:
    """Local paths of the files the pending clean or rollback's plan deletes."""
    timeline = ActiveTimeline.load(Storage(path))
    (inst,) = [i for i in timeline.pending() if i.action.value == action]
    plan = am.read_instant_avro(timeline.requested_details(inst))
    if action == "clean":
        uris = [str(i["filePath"]) for infos in plan["filePathsToBeDeletedPerPartition"].values() for i in infos]
    else:
        uris = [str(f) for r in plan["RollbackRequests"] for f in r["filesToBeDeleted"]]
    return ["/" + uri.split(":", 1)[1].lstrip("/") for uri in uris]


def evidence_holds(kind: str, path: str, base: Base) -> bool:
    """What a kill at the point must have left behind (proof the kill landed where it should)."""
    pending = pending_instants(path)
    if kind.startswith("pending:"):
        wanted = kind.split(":", 1)[1]
        # A pending clustering is a `clustering` instant on Hudi 1.x tables (layout 2).
        return any(action == wanted or (wanted, action) == ("replacecommit", "clustering") for _, action, _ in pending)
    if kind == "requested_only":
        return any(state == "requested" for ts, _, state in pending if ts > max(base.completed, default=""))
    if kind == "marker_without_file":
        return any(not os.path.exists(os.path.join(path, rel)) for rel in marked_of_pending(path))
    if kind == "torn_base_file":
        return any(rel.endswith(".parquet") and os.path.exists(os.path.join(path, rel))
                   and not parquet_readable(os.path.join(path, rel)) for rel in marked_of_pending(path))
    if kind == "torn_log_file":
        return any(".log." in rel and os.path.exists(os.path.join(path, rel))
                   and has_corrupt_block(os.path.join(path, rel)) for rel in marked_of_pending(path))
    if kind == "files_of_pending":
        return any(os.path.exists(os.path.join(path, rel)) for rel in marked_of_pending(path))
    if kind == "lock_held":
        return os.path.isdir(os.path.join(path, LOCK_DIR)) and bool(os.listdir(os.path.join(path, LOCK_DIR)))
    if kind == "torn_commit":
        tmp = os.path.join(path, TEMP_DIR)
        return os.path.isdir(tmp) and bool(os.listdir(tmp)) and any(s == "inflight" for _, _, s in pending)
    if kind.startswith(("partly_deleted:", "all_deleted:")):
        planned = planned_deletes(path, kind.split(":", 1)[1])
        gone = [f for f in planned if not os.path.exists(f)]
        return bool(gone) and (len(gone) < len(planned)) == kind.startswith("partly")
    if kind == "mdt_cleared_folder_left":
        return not metadata_partitions(path) and os.path.isdir(os.path.join(path, ".hoodie", "metadata"))
    if kind == "target_removed":
        return not any(a == "deltacommit" for _, a, _ in pending)
    raise ValueError(f"unknown evidence {kind!r}")


def metadata_partitions(path: str) -> dict[str, str]:
    props = parse_properties(pathlib.Path(path, ".hoodie", "hoodie.properties").read_text())
    return listed_partitions(props)


def assert_reads(spark: Any, path: str, model: Model, when: str) -> None:
    expected = {k: tuple(v) for k, v in model.items()}
    table = pyhudi.read(spark, path).toArrow()
    ours = rows_by_key(table if table.num_rows else None, "id", COLUMNS)  # no commit yet: no data columns
    assert ours == expected, f"{when}: pyhudi reads {len(ours)} keys, the model has {len(expected)}; " \
        f"differing keys: {sorted(k for k in ours.keys() | expected.keys() if ours.get(k) != expected.get(k))[:10]}"
    theirs = rows_by_key(hudi_rs(path), "id", COLUMNS)
    assert theirs == expected, f"{when}: hudi-rs reads {len(theirs)} keys, the model has {len(expected)}; " \
        f"differing keys: {sorted(k for k in theirs.keys() | expected.keys() if theirs.get(k) != expected.get(k))[:10]}"


def files_named_by_commits(path: str) -> tuple[set[str], str | None]:
    """Paths in the write stats of every completed write on the active timeline, and its first instant."""
    timeline = ActiveTimeline.load(Storage(path))
    named: set[str] = set()
    for inst in timeline.write_timeline().completed():
        named.update(s.path for s in timeline.commit_metadata(inst).all_stats() if s.path)
    first = timeline.write_timeline().first()
    return named, first.timestamp if first else None


def assert_no_orphans(path: str) -> None:
    """Every data file on storage belongs to the latest slice of a live file group (which is all a
    one-version retention keeps) and was named by a completed commit; every such slice file exists."""
    storage = Storage(path)
    view = build_view(storage, load_table_config(storage), ActiveTimeline.load(storage))
    retained = {p for part in view.partition_paths for sl in view.latest_file_slices(part) for p in sl.all_paths()}
    on_disk = data_files(path)
    assert on_disk == retained, (f"orphans on storage: {sorted(on_disk - retained)}; "
                                 f"missing files of retained slices: {sorted(retained - on_disk)}")
    named, first = files_named_by_commits(path)
    unnamed = []
    for rel in on_disk:
        name = os.path.basename(rel)
        base, log = parse_base_file(name), parse_log_file(name)
        instant = base.instant if base else log.base_instant if log else ""
        if rel not in named and (first is None or instant >= first):  # older instants were archived
            unnamed.append(rel)
    assert not unnamed, f"data files no completed commit names: {sorted(unnamed)}"


# --------------------------------------------------------------------------- the test
def recover(spark: Any, point: KillPoint, base: Base, path: str, model: Model, step: int) -> Model:
    options = {**table_options(table_name(point.base), base.table_type), **dict(point.options)}
    for op in point.recover:
        if op == "upsert":
            run(spark, {"op": "upsert", "path": path, "seed": SEED, "step": step, "options": options})
            model = apply_batch(model, SEED, step, "upsert")
            step += 1
        else:
            run(spark, {"op": op, "path": path, "options": options})
    return model


# Kill points reached in the driver whose in-process twin (test_engines_crash, the same row of KILL_POINTS) runs
# by default: the driver's commit, service planning and completion are the engine-neutral client's. On Spark
# they run under -m extended; the default run keeps every point reached in a Spark worker, every point without
# an in-process twin, and the driver points of a new table, the timeline, the commit file and the metadata table.
EXTENDED_ON_SPARK = frozenset({
    "write.before_commit:cow:delete", "write.after_commit:cow:upsert", "write.before_commit:mor:delete",
    "compaction.after_schedule:mor:compact", "compaction.before_commit:mor:upsert",
    "clustering.before_commit:mor:cluster", "clean.before_commit:cow:upsert"})


def _point_marks(p: KillPoint) -> list[pytest.MarkDecorator]:
    marks = [] if available(p) else [pytest.mark.skip(reason=f"{p.requires} does not exist yet")]
    return marks + ([pytest.mark.extended] if p.id in EXTENDED_ON_SPARK else [])


@pytest.mark.parametrize("point", [pytest.param(p, id=p.id, marks=_point_marks(p)) for p in KILL_POINTS])
def test_kill_point(spark: Any, crash_env: CrashEnv, point: KillPoint) -> None:
    crash_env.outcomes[point.id] = "tried"
    base = crash_env.runner.bases[point.base]
    child = crash_env.runner.result(point)
    path = child.path
    assert child.returncode != 0, f"{point.fault} was never reached: the child finished its {point.op} normally"
    assert child.returncode == -signal.SIGKILL, \
        f"the child exited with {child.returncode}, not by SIGKILL at {point.fault}:\n{child.stderr_tail}"
    name = point.fault.split("@")[0]
    reporters = [pid for reported, pid in child.reported if reported == name]
    assert reporters, f"{point.fault} did not report; reports: {child.reported}"
    in_executor = name in EXECUTOR_POINTS
    assert all((pid != child.driver_pid) == in_executor for pid in reporters), \
        f"{name} fired in {reporters}, the driver is {child.driver_pid}; expected it in " \
        f"{'a Python worker' if in_executor else 'the driver'}"
    assert not child.survivors, f"processes of the killed child survived: {child.survivors}"
    assert '"event": "done"' not in child.stdout
    for kind in point.evidence:
        assert evidence_holds(kind, path, base), f"after the kill at {point.fault}: no evidence {kind!r} on storage " \
            f"(pending: {pending_instants(path)})"

    # What is committed, and only that, is visible.
    model = dict(base.model)
    done = completed_writes(path)
    if point.writes or point.visible:
        assert child.step is not None
        expected_new = 1 if point.visible else 0
        assert len(done) == len(base.completed) + expected_new, \
            f"completed writes after the kill: {done}, before: {base.completed} (visible={point.visible})"
        if point.visible:
            model = apply_batch(model, SEED, child.step, point.op)
    elif point.op != "archive":  # archiving moves completed instants off the active timeline
        assert set(base.completed) <= set(done), "the kill lost a completed commit"
    assert_reads(spark, path, model, f"after the kill at {point.fault}")

    # The next operations recover.
    step = (child.step + 1) if child.step is not None else base.next_step
    model = recover(spark, point, base, path, model, step)
    assert_reads(spark, path, model, f"after recovering from {point.fault} with {point.recover}")
    assert pending_instants(path) == [], f"still pending after recovery: {pending_instants(path)}"
    assert not metadata_partitions(path) and not os.path.exists(os.path.join(path, ".hoodie", "metadata")), \
        "a metadata table survived a completed pyhudi instant"
    locks = os.path.join(path, LOCK_DIR)
    assert not (os.path.isdir(locks) and os.listdir(locks)), f"lock files left: {os.listdir(locks)}"
    completed = {i.timestamp for i in ActiveTimeline.load(Storage(path)).completed()}
    markers = os.path.join(path, MARKER_ROOT)
    stale = [d for d in (os.listdir(markers) if os.path.isdir(markers) else []) if d not in completed]
    assert not stale, f"markers of instants that never completed: {stale}"

    # No file of the failed operation survives the next clean (temp files of a torn write_atomic go once
    # they are an hour old: age them as if that hour had passed).
    temp = os.path.join(path, TEMP_DIR)
    leftovers = os.listdir(temp) if os.path.isdir(temp) else []
    for name in leftovers:
        os.utime(os.path.join(temp, name), (time.time() - 7200, time.time() - 7200))
    options = {**table_options(table_name(point.base), base.table_type), **FINAL_CLEAN}
    pyhudi.clean(spark, path, options)
    assert pending_instants(path) == []
    assert_no_orphans(path)
    assert not (os.path.isdir(temp) and os.listdir(temp)), f"temp files left: {os.listdir(temp)}"
    assert_reads(spark, path, model, "after the final clean")
    crash_env.outcomes[point.id] = "recovered"


def test_orphan_check_finds_leftovers(spark: Any, crash_env: CrashEnv, tmp_path: pathlib.Path) -> None:
    """The final check is not vacuous: it finds a base file of an instant that never completed (which
    the file system view ignores) and a log file in a committed slice that no commit wrote (which the
    view includes)."""
    base = crash_env.runner.bases["mor"]
    path = str(tmp_path / "mor")
    shutil.copytree(base.path, path)
    pyhudi.clean(spark, path, {**table_options("mor", base.table_type), **FINAL_CLEAN})
    assert_no_orphans(path)
    files = sorted(data_files(path))
    a_base = next(f for f in files if f.endswith(".parquet"))
    a_log = next(f for f in files if ".log." in f)
    never = str(int(max(base.completed)) - 1)  # between the commits, never on the timeline
    base_name = parse_base_file(os.path.basename(a_base))
    log_name = parse_log_file(os.path.basename(a_log))
    assert base_name is not None and log_name is not None
    planted = [
        os.path.join(os.path.dirname(a_base), f"{base_name.file_id}_0-99-999_{never}.parquet"),
        os.path.join(os.path.dirname(a_log), log_name.rolled_over("0-99-999").name),
    ]
    for rel in planted:
        shutil.copyfile(os.path.join(path, a_base if rel.endswith(".parquet") else a_log), os.path.join(path, rel))
        with pytest.raises(AssertionError, match=re.escape(os.path.basename(rel))):
            assert_no_orphans(path)
        os.remove(os.path.join(path, rel))
    assert_no_orphans(path)


def test_crash_summary(crash_env: CrashEnv, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]) -> None:
    """The count of kill points tried and recovered (every selected runnable row of KILL_POINTS, each once;
    the default run leaves out EXTENDED_ON_SPARK)."""
    selected = selected_points(request.session)
    if not selected:
        pytest.skip("no kill point was selected")
    runnable = [p for p in KILL_POINTS if available(p) and p.id in selected]
    tried = [p for p in runnable if p.id in crash_env.outcomes]
    recovered = [p for p in tried if crash_env.outcomes[p.id] == "recovered"]
    skipped = [p.fault for p in KILL_POINTS if not available(p)]
    left_out = len(KILL_POINTS) - len(selected)
    times = [crash_env.runner.result(p).seconds for p in tried]
    line = (f"crash test: {len(tried)} kill points tried, {len(recovered)} recovered"
            + (f" ({len(skipped)} not yet available: {', '.join(skipped)})" if skipped else "")
            + (f" ({left_out} not selected, e.g. under -m extended)" if left_out else "")
            + (f"; child runs {sum(times):.0f}s in total" if times else ""))
    with capsys.disabled():
        print("\n" + line)
    failed = [p.id for p in tried if p not in recovered]
    assert len(tried) == len(runnable) > 0, line
    assert not failed, f"{line}; not recovered: {failed}"


@pytest.mark.extended
@pytest.mark.slow
def test_crash_points_on_hudi_1x_tables() -> None:
    """Every kill point again, on tables created at version 8 (Hudi 1.x, timeline layout 2): this module
    run in a child pytest with PYHUDI_CRASH_TABLE_VERSION=8 (its module-wide set-up is per version)."""
    if os.environ.get("PYHUDI_CRASH_TABLE_VERSION", "6") != "6":
        pytest.skip("this is the version-8 run itself")
    env = {**os.environ, "PYHUDI_CRASH_TABLE_VERSION": "8"}
    done = subprocess.run([sys.executable, "-m", "pytest", __file__, "-q", "-p", "no:cacheprovider", "-o", "addopts="],
                          env=env, capture_output=True, text=True, timeout=3600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
