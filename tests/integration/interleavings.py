"""The interleaving matrix's parts: operations with their pause points, start tables, and one cell's run.

A cell is (A, point, B, table type, index, concurrency mode): A runs in a thread until it reaches its
point (`pyhudi.faults.pause_at`: the thread that gets there blocks, a LocalEngine pool thread included),
B runs to completion, then A is released. Everything runs in-process on tiny tables copied from a
prebuilt start table, so a cell costs about a second.

What a pause inside the table lock means: B waits for the lock, as it would for a second process (Hudi's
lock providers block until the wait time). A cell sees B blocked on the lock (or on the cleaner's
per-process turn, an in-process stand-in for the same wait) and releases A then, so such a cell checks
that B, once it gets the lock after A, still does the right thing with a table that changed under it.
The lock's lease (an expired holder taken over) is not modelled: the default lease is a minute.

Allowed outcomes: the rows of one of the two serial orders (each computed on a fresh copy of the start
table: the serial run IS the model), or one side failing with a HudiError and the rows equal to the
other side alone (nothing of the loser visible). The serial single runs are also checked against a
plain-Python model of the operation. Afterwards the table must stay writable and compactable: a
follow-up upsert (after finishing a pending clustering), then compaction on merge-on-read, and both
readers (pyhudi and hudi-rs) must return the accepted outcome with the follow-up applied.
"""

from __future__ import annotations

import dataclasses
import shutil
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

import pyhudi
from pyhudi import faults
from pyhudi.errors import HudiError
from pyhudi.services import clean as cleaner
from pyhudi.services import clustering, compaction
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action
from pyhudi.timeline.timeline import ActiveTimeline
from tests.helpers import hudi_rs, rows_by_key

Rows = dict[int, tuple[str, str, int]]  # id -> (name, part, ts)
COLUMNS = ["name", "part", "ts"]
SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("part", pa.string()), ("ts", pa.int64())])
TABLE_TYPES = ("COPY_ON_WRITE", "MERGE_ON_READ")
INDEXES = ("SIMPLE", "BLOOM", "GLOBAL_SIMPLE", "GLOBAL_BLOOM", "BUCKET", "INMEMORY")
MODES = ("SINGLE_WRITER", "OCC")
OP_TS = 10  # every matrix operation writes ts 10: equal ordering values, so the later commit wins in
FOLLOW_TS = 100  # every reader and merge order (finding 8 stays out of the picture)
WAIT_S = 60.0  # A reaching its point, B finishing, A finishing: generous, a hang fails the cell
BLOCKED_GRACE_S = 4.0  # B neither done nor seen waiting on a lock: release A anyway


def row(i: int, name: str, ts: int) -> tuple[int, str, str, int]:
    return i, name, f"p{i % 3}", ts


def arrow(rows: list[tuple[int, str, str, int]]) -> pa.Table:
    cols = list(zip(*rows)) if rows else [[], [], [], []]
    return pa.Table.from_arrays([pa.array(c, t.type) for c, t in zip(cols, SCHEMA)], schema=SCHEMA)


@dataclasses.dataclass(frozen=True)
class Axes:
    table_type: str
    index: str
    mode: str
    version: int = 6  # the table version the start table is created at (8 and 9: Hudi 1.x, timeline layout 2)

    def options(self, **extra: str) -> dict[str, str]:
        """The table's options as every operation of a cell passes them. Writers clean and archive nothing
        by themselves (clean and archival are operations of their own here)."""
        o = {"hoodie.table.name": "mx", "hoodie.datasource.write.recordkey.field": "id",
             "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
             "hoodie.datasource.write.table.type": self.table_type, "hoodie.index.type": self.index,
             "hoodie.parquet.small.file.limit": "0", "hoodie.clean.automatic": "false",
             "hoodie.archive.automatic": "false", "hoodie.pyhudi.engine.local.parallelism": "2"}
        if self.index == "BUCKET":
            o["hoodie.bucket.index.num.buckets"] = "2"
        if self.mode == "OCC":
            o["hoodie.write.concurrency.mode"] = "OPTIMISTIC_CONCURRENCY_CONTROL"
            o["hoodie.cleaner.policy.failed.writes"] = "LAZY"
        if self.version != 6:
            o["hoodie.write.table.version"] = str(self.version)
        return {**o, **extra}


CLUSTER_OPTS = {"hoodie.clustering.plan.strategy.partition.selected": "p2"}
# A MOR start table's upserts only append logs, so its clean has nothing to delete: with Hudi's default
# (hoodie.write.empty.clean.create.duration.ms=-1) no clean would be planned at all. An empty clean (Hudi's
# option, set to 1 ms) still records the earliest retained commit, so every start table has a pending clean.
CLEAN_OPTS = {"hoodie.cleaner.commits.retained": "1", "hoodie.write.empty.clean.create.duration.ms": "1"}
ARCHIVE_OPTS = {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.cleaner.commits.retained": "1"}


@dataclasses.dataclass
class Start:
    """A prebuilt start table and what the operations need to know about it."""

    path: Path
    rows: Rows
    before_last: Rows  # rows before the last write (the rollback target)
    at_savepoint: Rows
    last_write: str
    savepoint: str | None
    compaction_plan: str | None
    clustering_plan: str | None
    clean_plan: str | None


# ----------------------------------------------------------------------------------- operations
Batch = Callable[[str], list[tuple[int, str, str, int]]]  # side ("A"/"B") -> rows


def batch(updated: tuple[int, ...], new: tuple[int, ...], tag: str) -> Batch:
    """Rows of an operation: `updated` keys are shared by both sides (they overlap on purpose), `new` keys
    are the side's own (side B's are 3000 higher, same partition: two inserts of one key would be duplicates by design,
    hoodie.merge.allow.duplicate.on.inserts); the name tells whose value won."""
    return lambda side: [row(i, f"{tag}-{side}", OP_TS) for i in updated] + \
        [row(i + (3000 if side == "B" else 0), f"{tag}-{side}", OP_TS) for i in new]


def _write(rows: Batch, operation: str, mode: str = "append", **extra: str) -> Callable[[Start, Axes, str, str], Any]:
    def run(start: Start, axes: Axes, path: str, side: str) -> Any:
        opts = axes.options(**{"hoodie.datasource.write.operation": operation, **extra})
        return pyhudi.write(arrow(rows(side)), path, opts, mode=mode)
    return run


def _service_cfg(path: str, axes: Axes, extra: dict[str, str]) -> Any:
    from pyhudi.api import _service_config
    return _service_config(path, axes.options(**extra), upgrade=True)


def _compact_schedule(start: Start, axes: Axes, path: str, side: str = "A") -> Any:
    storage, cfg = _service_cfg(path, axes, {})
    return compaction.schedule(storage, cfg.table, cfg.compaction, force=True, max_file_size=cfg.sizing.max_file_size)


def _compact_execute(start: Start, axes: Axes, path: str, side: str = "A") -> Any:
    return pyhudi.compact(None, path, axes.options(), instant=start.compaction_plan)


def _cluster_schedule(start: Start, axes: Axes, path: str, side: str = "A") -> Any:
    storage, cfg = _service_cfg(path, axes, CLUSTER_OPTS)
    return clustering.schedule(storage, cfg.table, cfg.clustering, cfg.sizing.max_file_size, cfg.lock)


def _cluster_execute(start: Start, axes: Axes, path: str, side: str = "A") -> Any:
    return pyhudi.cluster(None, path, axes.options(**CLUSTER_OPTS), instant=start.clustering_plan)


def _clean_schedule(start: Start, axes: Axes, path: str, side: str = "A") -> Any:
    storage, cfg = _service_cfg(path, axes, CLEAN_OPTS)
    return cleaner.schedule(storage, cfg.table, cfg.clean, cfg.lock)


def _clean_execute(start: Start, axes: Axes, path: str, side: str = "A") -> Any:
    assert start.clean_plan is not None
    return cleaner.execute(Storage(path), start.clean_plan)


def _rollback(start: Start, axes: Axes, path: str, side: str = "A") -> Any:
    return pyhudi.rollback(None, path, start.last_write, axes.options())


def _archive(start: Start, axes: Axes, path: str, side: str = "A") -> Any:
    return pyhudi.archive(None, path, axes.options(**ARCHIVE_OPTS))


def _restore(start: Start, axes: Axes, path: str, side: str = "A") -> Any:
    assert start.savepoint is not None
    return pyhudi.restore(None, path, start.savepoint, axes.options())


def _savepoint(start: Start, axes: Axes, path: str, side: str = "A") -> Any:
    return pyhudi.savepoint(None, path, options=axes.options())


Model = Callable[[Start, Rows, str], Rows]  # start, rows before, side -> rows after


def _keep(start: Start, rows: Rows, side: str) -> Rows:
    return dict(rows)


def _plus(new: Batch, replace_all: bool = False) -> Model:
    return lambda start, rows, side: {**({} if replace_all else rows), **{i: (n, p, t) for i, n, p, t in new(side)}}


def _minus(ids: list[int]) -> Model:
    return lambda start, rows, side: {k: v for k, v in rows.items() if k not in ids}


def _replace_partition(part: str, new: Batch) -> Model:
    def model(start: Start, rows: Rows, side: str) -> Rows:
        kept = {k: v for k, v in rows.items() if v[1] != part}
        return {**kept, **{i: (n, p, t) for i, n, p, t in new(side)}}
    return model


@dataclasses.dataclass(frozen=True)
class Op:
    name: str
    run: Callable[[Start, Axes, str, str], Any]  # start, axes, path, side
    model: Model  # plain-Python effect on the rows (when the operation succeeds)
    points: tuple[str, ...]  # `name` or `name@n`
    needs: frozenset[str] = frozenset()  # what the start table must hold: savepoint, compaction/clustering/clean plan
    mor_only: bool = False


INSERT = batch((), (100, 101, 102), "ins")
UPSERT = batch((0, 1, 2, 30), (110, 111), "ups")
DELETE = batch((0, 31), (), "del")
BULK = batch((), (120, 121, 122), "bulk")
OVERWRITE_P1 = batch((), (130, 133), "iow")  # partition p1 only
OVERWRITE_TABLE = batch((), (140, 141, 142), "iowt")
OVERWRITE_MODE = batch((), (150, 151, 152), "ovw")
NO_ROWS = batch((), (), "")
FOLLOW_UP = [row(i, "fu", FOLLOW_TS) for i in (1, 4, 5, 200, 201, 202)]

WRITE_POINTS = ("write.after_tagging", "write.before_instant", "timeline.before_inflight", "write.after_marker",
                "write.before_commit", "write.after_commit")
UNTAGGED_POINTS = tuple(p for p in WRITE_POINTS if p != "write.after_tagging")  # bulk_insert, delete_partition

OPS: dict[str, Op] = {op.name: op for op in (
    Op("insert", _write(INSERT, "insert"), _plus(INSERT), WRITE_POINTS),
    Op("upsert", _write(UPSERT, "upsert"), _plus(UPSERT), WRITE_POINTS),
    Op("delete", _write(DELETE, "delete"), _minus([0, 31]), WRITE_POINTS),
    Op("bulk_insert", _write(BULK, "bulk_insert"), _plus(BULK), UNTAGGED_POINTS),
    Op("insert_overwrite", _write(OVERWRITE_P1, "insert_overwrite"), _replace_partition("p1", OVERWRITE_P1),
       WRITE_POINTS),
    Op("insert_overwrite_table", _write(OVERWRITE_TABLE, "insert_overwrite_table"), _plus(OVERWRITE_TABLE, True),
       WRITE_POINTS),
    Op("overwrite", _write(OVERWRITE_MODE, "upsert", mode="overwrite"), _plus(OVERWRITE_MODE, True), WRITE_POINTS),
    Op("delete_partition", _write(NO_ROWS, "delete_partition", **{"hoodie.datasource.write.partitions.to.delete": "p0"}),
       _replace_partition("p0", NO_ROWS), tuple(p for p in UNTAGGED_POINTS if p != "write.after_marker")),
    Op("compact_schedule", _compact_schedule, _keep, ("compaction.after_timeline", "compaction.after_schedule"),
       mor_only=True),
    Op("compact_execute", _compact_execute, _keep,
       ("timeline.before_inflight", "compaction.mid_execute", "compaction.before_commit"),
       needs=frozenset({"compaction_plan"}), mor_only=True),
    Op("cluster_schedule", _cluster_schedule, _keep, ("clustering.after_timeline", "clustering.after_schedule")),
    Op("cluster_execute", _cluster_execute, _keep,
       ("timeline.before_inflight", "clustering.mid_execute", "clustering.before_commit"),
       needs=frozenset({"clustering_plan"})),
    Op("clean_schedule", _clean_schedule, _keep, ("clean.after_timeline", "clean.after_plan")),
    Op("clean_execute", _clean_execute, _keep, ("timeline.before_inflight", "clean.mid_delete", "clean.before_commit"),
       needs=frozenset({"clean_plan"})),
    Op("rollback", _rollback, lambda s, r, side: dict(s.before_last),
       ("rollback.after_plan", "rollback.mid_delete", "rollback.before_complete")),
    Op("archive", _archive, _keep, ("archival.after_plan", "archival.after_archive_file", "archival.mid_delete")),
    Op("restore", _restore, lambda s, r, side: dict(s.at_savepoint),
       ("restore.after_plan", "rollback.mid_delete", "restore.mid_rollback", "restore.before_complete"),
       needs=frozenset({"savepoint"})),
    Op("savepoint", _savepoint, _keep, ("savepoint.after_timeline", "savepoint.before_complete")),
)}
IN_LOCK_POINTS = frozenset({
    "write.before_commit", "write.after_commit", "clustering.after_timeline", "clean.after_timeline",
    "rollback.after_plan", "rollback.mid_delete", "rollback.before_complete", "archival.after_plan",
    "archival.after_archive_file", "archival.mid_delete", "restore.after_plan", "restore.mid_rollback",
    "restore.before_complete", "savepoint.after_timeline", "savepoint.before_complete",
})


@dataclasses.dataclass(frozen=True)
class Cell:
    a: str
    point: str
    b: str
    axes: Axes

    @property
    def id(self) -> str:
        ax = self.axes
        version = f"|v{ax.version}" if ax.version != 6 else ""
        return f"{self.a}@{self.point}|{self.b}|{ax.table_type[:3]}|{ax.index}|{ax.mode}{version}"


def all_cells() -> list[Cell]:
    """The full product: A x its points x B x table type x index x concurrency mode."""
    out = []
    for tt in TABLE_TYPES:
        ops = [o for o in OPS.values() if tt == "MERGE_ON_READ" or not o.mor_only]
        for index in INDEXES:
            for mode in MODES:
                axes = Axes(tt, index, mode)
                out.extend(Cell(a.name, p, b.name, axes) for a in ops for p in a.points for b in ops)
    return out


# ----------------------------------------------------------------------------------- start tables
class StartTables:
    """Start tables built once per (axes, needs) under `root` and copied for every run."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._built: dict[tuple[Axes, frozenset[str]], Start] = {}
        self._lock = threading.Lock()

    def get(self, axes: Axes, needs: frozenset[str]) -> Start:
        key = (axes, needs)
        with self._lock:
            if key not in self._built:
                name = f"{axes.table_type[:3]}-{axes.index}-{axes.mode}-v{axes.version}-" \
                    f"{'-'.join(sorted(needs)) or 'plain'}"
                self._built[key] = build_start(self.root / name, axes, needs)
            return self._built[key]

    def copy(self, start: Start, dest: Path) -> Start:
        shutil.copytree(start.path, dest)
        return dataclasses.replace(start, path=dest)


def build_start(path: Path, axes: Axes, needs: frozenset[str]) -> Start:
    """Two inserts (two file groups per partition), an upsert and a delete (log files on merge-on-read),
    the pending plans `needs` asks for, then a last upsert of p0/p1 (the rollback target)."""
    p = str(path)
    rows: Rows = {}

    def write(batch: list[tuple[int, str, str, int]], op: str) -> str:
        instant = pyhudi.write(arrow(batch), p, axes.options(**{"hoodie.datasource.write.operation": op}))
        if op == "delete":
            for i, *_ in batch:
                rows.pop(i, None)
        else:
            rows.update({i: (n, q, t) for i, n, q, t in batch})
        return str(instant)

    write([row(i, "c1", 1) for i in range(30)], "insert")
    c2 = write([row(i, "c2", 2) for i in range(30, 45)], "insert")
    at_savepoint = dict(rows)
    savepoint = pyhudi.savepoint(None, p, c2, options=axes.options()) if "savepoint" in needs else None
    write([row(i, "c3", 3) for i in (0, 1, 2, 3, 4, 5, 30, 31, 32)], "upsert")
    write([row(i, "c4", 4) for i in (6, 7)], "delete")
    # A BUCKET table is never clustered (clustering_plan refuses it): cluster_execute then schedules
    # itself, is refused with a HudiError, and the cell checks that nothing else changed.
    bucket = axes.index == "BUCKET"
    cluster = _cluster_schedule(_dummy(path), axes, p) if "clustering_plan" in needs and not bucket else None
    compact = _compact_schedule(_dummy(path), axes, p) if "compaction_plan" in needs else None
    clean = _clean_schedule(_dummy(path), axes, p) if "clean_plan" in needs else None
    for need, made in (("clustering_plan", cluster), ("compaction_plan", compact), ("clean_plan", clean)):
        assert need not in needs or made or (bucket and need == "clustering_plan"), \
            f"start table {path.name}: no {need} could be scheduled"
    before_last = dict(rows)
    last = write([row(i, "c5", 5) for i in (9, 10, 12, 13)], "upsert")
    return Start(path, rows, before_last, at_savepoint, last, savepoint, compact, cluster, clean)


def _dummy(path: Path) -> Start:
    return Start(path, {}, {}, {}, "", None, None, None, None)


# ----------------------------------------------------------------------------------- one run
@dataclasses.dataclass
class Outcome:
    rows: Rows | None = None
    errors: dict[str, str] = dataclasses.field(default_factory=dict)  # op side ("A"/"B") -> error text
    bad: list[str] = dataclasses.field(default_factory=list)  # non-HudiError failures, hangs


def read_rows(path: str | Path) -> Rows:
    t = pyhudi.read(str(path), columns=["id", *COLUMNS])
    return {int(k): v for k, v in rows_by_key(t, "id", COLUMNS).items()}


def rs_rows(path: str | Path) -> Rows:
    return {int(k): v for k, v in rows_by_key(hudi_rs(path), "id", COLUMNS).items()}


def _call(side: str, fn: Callable[[], Any], out: Outcome) -> None:
    try:
        fn()
    except HudiError as exc:
        out.errors[side] = f"{type(exc).__name__}: {exc}"
    except BaseException as exc:  # noqa: BLE001 - a crash of either side is the cell's finding
        out.bad.append(f"{side} raised {type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}")


def serial(start: Start, axes: Axes, steps: tuple[tuple[str, str], ...], dest: Path, tables: StartTables) -> Outcome:
    """The (side, operation) steps one after the other on a fresh copy of the start table."""
    copy = tables.copy(start, dest)
    out = Outcome()
    for side, name in steps:
        _call(side, lambda n=name, sd=side: OPS[n].run(copy, axes, str(copy.path), sd), out)
    if not out.bad:
        try:
            out.rows = read_rows(copy.path)
        except BaseException as exc:  # noqa: BLE001
            out.bad.append(f"read after {steps} raised {type(exc).__name__}: {exc}")
    return out


class _Side(threading.Thread):
    def __init__(self, side: str, fn: Callable[[], Any], out: Outcome) -> None:
        super().__init__(name=f"matrix-{side}", daemon=True)
        self.fn, self.out, self.side = fn, out, side

    def run(self) -> None:
        _call(self.side, self.fn, self.out)


def _waiting_on_lock(thread: threading.Thread) -> bool:
    """Whether `thread` is waiting for the table lock (or the cleaner's per-process turn)."""
    frame = sys._current_frames().get(thread.ident or -1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "acquire" and code.co_filename.endswith(("lock.py", "storage_lock.py")):
            return True
        if code.co_name == "clean" and code.co_filename.endswith("clean.py") and "_process_lock" in (
                _line(code.co_filename, frame.f_lineno)):
            return True
        frame = frame.f_back
    return False


def _line(filename: str, lineno: int) -> str:
    import linecache
    return linecache.getline(filename, lineno)


@dataclasses.dataclass
class PausedRun:
    outcome: Outcome
    reached: bool
    b_waited: bool


def paused(start: Start, cell: Cell, dest: Path, tables: StartTables) -> PausedRun:
    """A until its point, B to completion (or until it waits on A's lock), then A resumes."""
    copy = tables.copy(start, dest)
    out = Outcome()
    name, _, nth = cell.point.partition("@")
    pause = faults.pause_at(name, int(nth) if nth else 1)
    a = _Side("A", lambda: OPS[cell.a].run(copy, cell.axes, str(copy.path), "A"), out)
    b_waited = False
    try:
        a.start()
        deadline = time.monotonic() + WAIT_S
        while not pause.wait_reached(0.02) and a.is_alive() and time.monotonic() < deadline:
            pass
        if not pause.reached:
            pause.release()
            a.join(WAIT_S)
            if a.is_alive():
                out.bad.append(f"A neither reached {cell.point} nor finished within {WAIT_S}s")
            return PausedRun(out, False, False)
        b = _Side("B", lambda: OPS[cell.b].run(copy, cell.axes, str(copy.path), "B"), out)
        b.start()
        waited_since = time.monotonic()
        while b.is_alive():
            b.join(0.02)
            if _waiting_on_lock(b) or time.monotonic() - waited_since > BLOCKED_GRACE_S:
                b_waited = True
                break
        pause.release()
        for side, t in (("A", a), ("B", b)):
            t.join(WAIT_S)
            if t.is_alive():
                out.bad.append(f"{side} did not finish within {WAIT_S}s after A was released")
    finally:
        pause.release()
    if not out.bad:
        try:
            out.rows = read_rows(copy.path)
        except BaseException as exc:  # noqa: BLE001
            out.bad.append(f"read after the paused run raised {type(exc).__name__}: {exc}")
    return PausedRun(out, True, b_waited)


# ----------------------------------------------------------------------------------- the check
@dataclasses.dataclass
class CellResult:
    cell: Cell
    status: str  # "ok", "unreached" (A never reaches the point on this table), "fail"
    reason: str = ""
    seconds: float = 0.0
    b_waited: bool = False


class Matrix:
    """Runs cells; the serial outcomes of each pair are computed once and shared by its points."""

    def __init__(self, root: Path) -> None:
        self.tables = StartTables(root / "start")
        self.work = root / "runs"
        self._serial: dict[tuple[Any, ...], Outcome] = {}
        self._n = 0

    def _dest(self) -> Path:
        self._n += 1
        return self.work / f"r{self._n}"

    def serial(self, start: Start, axes: Axes, needs: frozenset[str], *steps: tuple[str, str]) -> Outcome:
        key = (axes, needs, steps)
        if key not in self._serial:
            self._serial[key] = serial(start, axes, steps, self._dest(), self.tables)
        return self._serial[key]

    def run(self, cell: Cell) -> CellResult:
        began = time.monotonic()
        result = self._run(cell)
        result.seconds = time.monotonic() - began
        return result

    def _run(self, cell: Cell) -> CellResult:
        needs = OPS[cell.a].needs | OPS[cell.b].needs
        start = self.tables.get(cell.axes, needs)
        a, b = ("A", cell.a), ("B", cell.b)
        alone = {"A": self.serial(start, cell.axes, needs, a), "B": self.serial(start, cell.axes, needs, b)}
        orders = {"A then B": self.serial(start, cell.axes, needs, a, b),
                  "B then A": self.serial(start, cell.axes, needs, b, a)}
        problems = [f"serial {k}: {b}" for k, o in {**orders, **alone}.items() for b in o.bad]
        for side, name in (("A", cell.a), ("B", cell.b)):
            o = alone[side]
            want = OPS[name].model(start, start.rows, side)
            if o.rows is not None and not o.errors and o.rows != want:
                problems.append(f"{name} alone disagrees with the Python model: {_diff(want, o.rows)}")
        dest = self._dest()
        run = paused(start, cell, dest, self.tables)
        if not run.reached and not run.outcome.bad:
            return CellResult(cell, "unreached", f"A ({cell.a}) never reached {cell.point}")
        problems.extend(run.outcome.bad)
        if problems:
            return CellResult(cell, "fail", "; ".join(problems), b_waited=run.b_waited)
        got = run.outcome
        assert got.rows is not None
        allowed = _allowed(got, orders, alone, start)
        if got.rows not in allowed.values():
            return CellResult(cell, "fail", _not_allowed(got, allowed), b_waited=run.b_waited)
        expected = next(k for k, v in allowed.items() if v == got.rows)
        problems = follow_up(str(dest), cell.axes, got.rows)
        if problems:
            return CellResult(cell, "fail", f"outcome {expected!r} accepted, then: " + "; ".join(problems),
                              b_waited=run.b_waited)
        shutil.rmtree(dest, ignore_errors=True)
        errors = "; ".join(f"{k} failed: {v[:160]}" for k, v in sorted(got.errors.items()))
        return CellResult(cell, "ok", f"{expected}{' (' + errors + ')' if errors else ''}", b_waited=run.b_waited)


def _allowed(got: Outcome, orders: dict[str, Outcome], alone: dict[str, Outcome], start: Start) -> dict[str, Rows]:
    """A serial order whose errors agree with the run's (a side that failed must have failed there too,
    or nothing of it may be visible), or the other side alone when one failed."""
    failed = set(got.errors)
    allowed = {k: o.rows for k, o in orders.items() if o.rows is not None and failed <= set(o.errors)}
    if failed == {"A"} and alone["B"].rows is not None:
        allowed["B alone (A failed)"] = alone["B"].rows
    if failed == {"B"} and alone["A"].rows is not None:
        allowed["A alone (B failed)"] = alone["A"].rows
    if failed == {"A", "B"}:
        allowed["neither (both failed)"] = start.rows
    return allowed


def _diff(want: Rows, got: Rows) -> str:
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    changed = {k: (want[k], got[k]) for k in sorted(set(want) & set(got)) if want[k] != got[k]}
    return f"missing {missing}, unexpected {[(k, got[k]) for k in extra]}, changed (want, got) {changed}"


def _not_allowed(got: Outcome, allowed: dict[str, Rows]) -> str:
    assert got.rows is not None
    errors = "; ".join(f"{s} failed: {e}" for s, e in sorted(got.errors.items())) or "both succeeded"
    near = min(allowed.items(), key=lambda kv: len(set(kv[1].items()) ^ set(got.rows.items())), default=None)  # type: ignore[union-attr]
    closest = f"; closest allowed {near[0]!r}: {_diff(near[1], got.rows)}" if near else "; no outcome allowed"
    return f"outcome of no serial order ({errors}){closest}"


def follow_up(path: str, axes: Axes, rows: Rows) -> list[str]:
    """The table stays writable and compactable: finish a pending clustering (a plan left by the pair
    rejects updates to its groups), upsert, compact (merge-on-read); both readers return the model."""
    problems: list[str] = []
    storage = Storage(path)
    try:
        if clustering.pending_clusterings(storage):
            pyhudi.cluster(None, path, axes.options(**CLUSTER_OPTS))
        pyhudi.write(arrow(FOLLOW_UP), path, axes.options(**{"hoodie.datasource.write.operation": "upsert"}))
        if axes.table_type == "MERGE_ON_READ":
            pyhudi.compact(None, path, axes.options())
            left = [i.timestamp for i in ActiveTimeline.load(storage).actions(Action.COMPACTION).pending()]
            if left:
                problems.append(f"compaction left pending: {left}")
    except BaseException as exc:  # noqa: BLE001
        return [f"follow-up failed: {type(exc).__name__}: {exc}"]
    model = {**rows, **{i: (n, p, t) for i, n, p, t in FOLLOW_UP}}
    for reader, read in (("pyhudi", read_rows), ("hudi-rs", rs_rows)):
        try:
            got = read(path)
        except BaseException as exc:  # noqa: BLE001
            problems.append(f"{reader} read failed after the follow-up: {type(exc).__name__}: {exc}")
            continue
        if got != model:
            problems.append(f"{reader} after the follow-up: {_diff(model, got)}")
    return problems
