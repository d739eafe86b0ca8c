"""Crash points on the in-process engine: SIGKILL a writer or service that runs with no SparkSession (Arrow
data, `pyhudi.compact(None, ...)`...) at each kill point of test_crash.py, then recover in-process and check.

The rows of test_crash.KILL_POINTS are reused (all but the `mor_failed` base, which test_crash builds by
patching the Spark write client): the same faults, evidence, recovery operations and final checks.
Here the base tables are written in-process, each child is `engine_worker.py` on the local engine (no
JVM, and no `java` on its PATH, so a child takes a second or two), every point must fire in the child's own process (tasks run on
its thread pool, not in Spark's Python workers), and after the kill:

1. pyhudi (the Arrow reader) and hudi-rs return exactly the committed data (the killed write only if
   its commit completed);
2. the recovery operations, again in-process, succeed and both readers return the model with their
   batches applied; nothing is pending, no lock, no markers of an instant that did not complete;
3. after a clean keeping one file version, the data files are exactly the latest slices of the live
   file groups, each named by a completed commit's write stats.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

import pyhudi
from pyhudi.storage import Storage
from pyhudi.storage.storage import TEMP_DIR
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.transaction.lock import LOCK_DIR
from pyhudi.writer.markers import MARKER_ROOT
from tests.helpers import REPO, arrow_read, hudi_rs, plant_metadata_table, rows_by_key
from tests.integration import engine_worker
from tests.integration.crash_worker import COLUMNS, apply_batch, table_options
from tests.integration.test_crash import (
    FINAL_CLEAN,
    KILL_POINTS,
    Base,
    KillPoint,
    available,
    completed_writes,
    evidence_holds,
    metadata_partitions,
    pending_instants,
    table_name,
    wait_session_gone,
)
from tests.integration.test_crash import assert_no_orphans as _assert_no_orphans

WORKER = pathlib.Path(engine_worker.__file__)
SEED = 7
CHILD_LIMIT = 300.0
Model = dict[int, tuple[Any, ...]]

# A quick set for every run (one point per phase); the rest run with -m slow.
QUICK = {"write.before_commit:new:upsert", "write.mid_file:cow:upsert", "write.after_commit:cow:upsert",
         "write.mid_log_file:mor:upsert", "compaction.before_commit:mor:upsert",
         "clustering.mid_execute:cow:cluster", "metadata_table.after_properties:cow_mdt:upsert"}
POINTS = [p for p in KILL_POINTS if p.base != "mor_failed"]


def local_spec(path: str, op: str, options: dict[str, str], step: int | None = None) -> dict[str, Any]:
    return {"path": path, "op": op, "seed": SEED, "step": step, "options": options, "engine": "local",
            "repo": str(REPO)}


def local_run(path: str, op: str, options: dict[str, str], step: int | None = None) -> Any:
    """An operation in this process, on the in-process engine."""
    return engine_worker.run(local_spec(path, op, options, step), None)


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Base]:
    """The base tables of test_crash (new, cow, mor, cow_mdt), written in-process."""
    root = tmp_path_factory.mktemp("engine_crash_bases")
    new = root / "new"
    new.mkdir()
    out = {"new": Base(str(new), "COPY_ON_WRITE", {}, 0, ())}
    plans = {"cow": ("COPY_ON_WRITE", ["upsert", "upsert", "upsert", "delete"]),
             "mor": ("MERGE_ON_READ", ["upsert", "upsert", "upsert"])}
    for name, (table_type, kinds) in plans.items():
        path = str(root / name)
        model: Model = {}
        for step, kind in enumerate(kinds):
            local_run(path, kind, table_options(name, table_type), step)
            model = apply_batch(model, SEED, step, kind)
        out[name] = Base(path, table_type, model, len(kinds), completed_writes(path))
    path = str(root / "cow_mdt")
    shutil.copytree(out["cow"].path, path)
    plant_metadata_table(pathlib.Path(path))
    out["cow_mdt"] = Base(path, out["cow"].table_type, out["cow"].model, out["cow"].next_step, out["cow"].completed)
    return out


def run_child(point: KillPoint, base: Base, work: pathlib.Path) -> dict[str, Any]:
    path = str(work / point.base)
    shutil.copytree(base.path, path)
    step = base.next_step if point.writes else None
    options = {**table_options(table_name(point.base), base.table_type), **dict(point.options)}
    (work / "spec.json").write_text(json.dumps(local_spec(path, point.op, options, step)))
    report = work / "report.txt"
    env = dict(os.environ, PYHUDI_FAULT_POINT=point.fault, PYHUDI_FAULT_OWN_GROUP="1",
               PYHUDI_FAULT_REPORT=str(report),
               PYTHONPATH=os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
    env.pop("HUDI_CONF_DIR", None)
    # No Java for the child: the in-process path must not need a JVM (a Spark start would fail here).
    env["JAVA_HOME"] = str(work / "no-java")
    env["PATH"] = os.pathsep.join(d for d in env.get("PATH", "").split(os.pathsep)
                                  if d and not os.path.exists(os.path.join(d, "java")))
    with open(work / "stdout", "wb") as out, open(work / "stderr", "wb") as err:
        proc = subprocess.Popen([sys.executable, str(WORKER), str(work / "spec.json")], stdout=out, stderr=err,
                                cwd=str(work), env=env, start_new_session=True)
        try:
            proc.wait(timeout=CHILD_LIMIT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    lines = report.read_text().splitlines() if report.exists() else []
    return {"path": path, "step": step, "returncode": proc.returncode, "pid": proc.pid,
            "survivors": wait_session_gone(proc.pid),
            "reported": [(name, int(pid)) for name, pid in (line.split() for line in lines)],
            "stdout": (work / "stdout").read_text(errors="replace"),
            "stderr": "\n".join((work / "stderr").read_text(errors="replace").splitlines()[-30:])}


def assert_reads(request: pytest.FixtureRequest, path: str, model: Model, when: str) -> None:
    expected = {k: tuple(v) for k, v in model.items()}
    table = arrow_read(path, None, lambda: request.getfixturevalue("spark"))
    ours = rows_by_key(table if table.num_rows else None, "id", COLUMNS)  # no commit yet: no columns
    for name, got in (("pyhudi", ours), ("hudi-rs", rows_by_key(hudi_rs(path), "id", COLUMNS))):
        diff = sorted(k for k in got.keys() | expected.keys() if got.get(k) != expected.get(k))
        assert got == expected, f"{when}: {name} reads {len(got)} keys, the model has {len(expected)}; " \
                                f"differing keys: {diff[:10]}"


def recover(point: KillPoint, base: Base, path: str, model: Model, step: int) -> Model:
    options = {**table_options(table_name(point.base), base.table_type), **dict(point.options)}
    for op in point.recover:
        if op == "upsert":
            local_run(path, "upsert", options, step)
            model = apply_batch(model, SEED, step, "upsert")
            step += 1
        elif op == "rollback":
            from pyhudi.services.rollback import rollback_failed_writes

            storage = Storage(path)
            rollback_failed_writes(storage, ActiveTimeline.load(storage))
        else:
            local_run(path, op, options)
    return model


def _params() -> list[Any]:
    out = []
    for p in POINTS:
        marks = [] if p.id in QUICK else [pytest.mark.slow]
        if not available(p):
            marks.append(pytest.mark.skip(reason=f"{p.requires} does not exist yet"))
        out.append(pytest.param(p, id=p.id, marks=marks))
    return out


@pytest.mark.parametrize("point", _params())
def test_kill_point_local_engine(request: pytest.FixtureRequest, bases: dict[str, Base], tmp_path: pathlib.Path,
                                 point: KillPoint) -> None:
    base = bases[point.base]
    started = time.monotonic()
    child = run_child(point, base, tmp_path)
    path = child["path"]
    assert child["returncode"] != 0, f"{point.fault} was never reached: the child finished its {point.op}: " \
                                     f"{child['stdout'][-500:]}"
    assert child["returncode"] == -signal.SIGKILL, \
        f"the child exited with {child['returncode']}, not by SIGKILL at {point.fault}:\n{child['stderr']}"
    name = point.fault.split("@")[0]
    reporters = [pid for reported, pid in child["reported"] if reported == name]
    assert reporters, f"{point.fault} did not report; reports: {child['reported']}"
    # In-process: every point, the task ones included, fires in the child itself (no Spark worker).
    assert set(reporters) == {child["pid"]}, f"{name} fired in {reporters}, the child is {child['pid']}"
    assert not child["survivors"], f"processes of the killed child survived: {child['survivors']}"
    for kind in point.evidence:
        assert evidence_holds(kind, path, base), f"after the kill at {point.fault}: no evidence {kind!r} " \
                                                 f"(pending: {pending_instants(path)})"

    model = dict(base.model)
    done = completed_writes(path)
    if point.writes or point.visible:
        expected_new = 1 if point.visible else 0
        assert len(done) == len(base.completed) + expected_new, \
            f"completed writes after the kill: {done}, before: {base.completed} (visible={point.visible})"
        if point.visible:
            model = apply_batch(model, SEED, child["step"], point.op)
    elif point.op != "archive":
        assert set(base.completed) <= set(done), "the kill lost a completed commit"
    assert_reads(request, path, model, f"after the kill at {point.fault}")

    step = (child["step"] + 1) if child["step"] is not None else base.next_step
    model = recover(point, base, path, model, step)
    assert_reads(request, path, model, f"after recovering from {point.fault} with {point.recover}")
    assert pending_instants(path) == [], f"still pending after recovery: {pending_instants(path)}"
    assert not metadata_partitions(path) and not os.path.exists(os.path.join(path, ".hoodie", "metadata"))
    locks = os.path.join(path, LOCK_DIR)
    assert not (os.path.isdir(locks) and os.listdir(locks)), f"lock files left: {os.listdir(locks)}"
    completed = {i.timestamp for i in ActiveTimeline.load(Storage(path)).completed()}
    markers = os.path.join(path, MARKER_ROOT)
    stale = [d for d in (os.listdir(markers) if os.path.isdir(markers) else []) if d not in completed]
    assert not stale, f"markers of instants that never completed: {stale}"

    temp = os.path.join(path, TEMP_DIR)
    for leftover in os.listdir(temp) if os.path.isdir(temp) else []:
        os.utime(os.path.join(temp, leftover), (time.time() - 7200, time.time() - 7200))
    pyhudi.clean(None, path, {**table_options(table_name(point.base), base.table_type), **FINAL_CLEAN})
    assert pending_instants(path) == []
    _assert_no_orphans(path)
    assert_reads(request, path, model, "after the final clean")
    assert time.monotonic() - started < 120, "an in-process kill point should take seconds, not minutes"
