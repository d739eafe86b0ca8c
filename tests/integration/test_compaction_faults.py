"""Compaction killed for real: SIGKILL while executors write the new base files, and after scheduling.

One subprocess (`fault_writer.py`, its own session and process groups) builds a merge-on-read table
A with six partitions (an insert, then two upserts, so every file group has two log files), copies it to
B, schedules a compaction on each, and then runs `pyhudi.compact(spark, A)`. The test polls A's
partitions and SIGKILLs every process group of the subprocess (driver, JVM, PySpark daemon and its
workers) as soon as a base file named with A's compaction instant exists. Then:

- A is killed mid-execution: `.compaction.inflight`, some base files of the instant (maybe
  half-written), their markers, no `.commit`;
- B is killed between scheduling and execution: `.compaction.requested` only.

The next `pyhudi.compact` must finish exactly those instants (no new plan), remove what the killed
attempt left, and both readers (pyhudi and hudi-rs) must return the model before and after.

No hook inside pyhudi chooses the moment of the kill, so the kill is not gated: compaction reads no
user input where a gate could hold it. It lands in the intended window because the window is wide:
the plan has one task per file group (at least six, on `local[2]`), so after the first base file
appears the remaining merges and the driver's commit still take several task durations, while the
watcher polls every 2 ms. `killed` asserts the window (a base file of the instant exists, the
instant is inflight, no `.commit`), so a late kill fails loudly instead of passing vacuously.
"""

from __future__ import annotations

import collections
import json
import os
import pathlib
from typing import Any

import fastavro
import pytest

import pyhudi
from tests.helpers import hudi_rs, marked_files, rows_by_key
from tests.integration.fault_writer import data_files_of, model_rows
from tests.integration.table_checks import COLS, assert_table, hoodie_names, opts, split_name
from tests.integration.test_faults import Writer

pytestmark = [pytest.mark.spark, pytest.mark.slow]

PARTS = 6
# Upserts of existing keys only: an upsert that also inserts would route the inserts to these small
# file groups, and Hudi (so pyhudi) then rewrites their base files instead of appending log files.
BUILD = [
    {"start": 0, "stop": 12_000, "version": 1, "partitions": PARTS},
    {"start": 2_000, "stop": 9_000, "version": 2, "partitions": PARTS},  # a log file in every file group
    {"start": 6_000, "stop": 12_000, "version": 3, "partitions": PARTS},  # a second one, overlapping
]


def mor_opts() -> dict[str, str]:
    return {**opts("compaction_kill"), "hoodie.datasource.write.table.type": "MERGE_ON_READ"}


def model() -> dict[int, tuple]:
    out: dict[int, tuple] = {}
    for rows in BUILD:
        out.update(model_rows(rows))
    return out


def plan_of(path: str, instant: str) -> list[dict[str, Any]]:
    with open(os.path.join(path, ".hoodie", f"{instant}.compaction.requested"), "rb") as f:
        (record,) = list(fastavro.reader(f))
    assert isinstance(record, dict)
    return list(record["operations"])




def log_files(path: str) -> list[str]:
    out = []
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if d != ".hoodie"]
        out += [os.path.relpath(os.path.join(root, f), path) for f in files if ".log." in f]
    return sorted(out)


@pytest.fixture(scope="module")
def killed(request, tmp_path_factory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("compaction_kill")
    a, b = str(root / "tables" / "a"), str(root / "tables" / "b")
    o = mor_opts()
    jobs: list[dict[str, Any]] = [{"path": a, "rows": rows, "options": o} for rows in BUILD]
    jobs += [{"kind": "copy_table", "path": a, "to": b},
             {"kind": "schedule_compaction", "path": a},
             {"kind": "schedule_compaction", "path": b},
             {"kind": "compact", "path": a, "options": o}]
    sched_a, sched_b, compact_a = len(BUILD) + 1, len(BUILD) + 2, len(BUILD) + 3
    w = Writer(root / "procs", "compactor", {"master": "local[2]", "app": "compaction-kill", "jobs": jobs,
                                             "conf": {"spark.sql.shuffle.partitions": "4",
                                                      "spark.default.parallelism": "4"}})
    request.getfixturevalue("spark")  # start the test's own session while the subprocess works

    def first_base_files() -> list[str] | None:
        instant = w.instants().get(sched_a)
        return data_files_of(a, {instant}) if instant and w.job_started(compact_a) else None

    try:
        seen = w.wait_until(first_base_files, "a base file of the compaction of A", poll=0.002)
    finally:
        w.kill()
    instants = w.instants()
    assert compact_a not in instants, "pyhudi.compact returned before the kill"
    c_a, c_b = instants[sched_a], instants[sched_b]
    assert c_a and c_b and c_a < c_b
    return {"a": a, "b": b, "c_a": c_a, "c_b": c_b, "seen": seen, "left": data_files_of(a, {c_a}),
            "marked": marked_files(a, c_a), "names_a": hoodie_names(a), "names_b": hoodie_names(b)}


def check_completed(spark, path: str, instant: str, leftovers: list[str]) -> None:
    """`instant` completed as Hudi completes a compaction; one base file per planned file group; the
    killed attempt's files are gone; no new compaction was planned; both readers return the model."""
    names = hoodie_names(path)
    assert {f"{instant}.compaction.requested", f"{instant}.compaction.inflight", f"{instant}.commit"} <= set(names)
    assert [n for n in names if n.endswith(".compaction.requested")] == [f"{instant}.compaction.requested"], \
        "the pending compaction was executed, not a new one planned"
    done = {n.split(".")[0] for n in names if n.count(".") == 1}
    pending = {n.split(".")[0] for n in names if n.endswith((".inflight", ".requested"))} - done
    assert not pending, f"instants left pending: {sorted(pending)}"
    meta = json.loads(pathlib.Path(path, ".hoodie", f"{instant}.commit").read_text())
    assert meta["compacted"] is True and meta["operationType"] == "COMPACT"
    stats = [s for lst in meta["partitionToWriteStats"].values() for s in lst]
    named = sorted(s["path"] for s in stats)
    on_disk = data_files_of(path, {instant})
    assert named == on_disk, f"write stats name {named}, disk has {on_disk}"
    per_group = collections.Counter(split_name(f)[0] for f in on_disk)
    assert all(n == 1 for n in per_group.values()), f"more than one base file per (fileId, {instant}): {per_group}"
    planned = {(o["partitionPath"], o["fileId"]) for o in plan_of(path, instant)}
    assert {(s["partitionPath"], s["fileId"]) for s in stats} == planned
    for rel in leftovers:
        assert rel in named or not os.path.exists(os.path.join(path, rel)), f"{rel} of the killed attempt survived"
    assert not os.path.exists(os.path.join(path, ".hoodie", ".temp", instant)), "markers remain"
    expected = model()
    assert_table(spark, path, expected)
    # Every log was folded in: the base files alone (read-optimized) already hold the model.
    assert rows_by_key(hudi_rs(path, read_optimized=True), "id", COLS) == expected


def test_compaction_killed_while_writing_base_files_is_completed_by_next_compact(killed, spark):
    a, c = killed["a"], killed["c_a"]
    names = killed["names_a"]
    # The kill landed inside execution: inflight, base files of the instant exist, no commit.
    assert f"{c}.compaction.requested" in names and f"{c}.compaction.inflight" in names
    assert f"{c}.commit" not in names, "the kill landed after the compaction committed"
    assert killed["seen"] and set(killed["seen"]) <= set(killed["left"]), killed
    assert set(killed["left"]) <= set(killed["marked"]), "every base file of the killed attempt has its marker"
    plan = plan_of(a, c)
    assert len(plan) >= PARTS and {o["partitionPath"] for o in plan} == {f"p{i}" for i in range(PARTS)}
    assert all(o["deltaFilePaths"] for o in plan)
    assert len(killed["left"]) <= len(plan)
    logs_before = log_files(a)
    expected = model()
    assert_table(spark, a, expected)  # the half-done compaction is invisible to both readers
    assert pyhudi.compact(spark, a) == [c]
    check_completed(spark, a, c, killed["left"])
    assert log_files(a) == logs_before, "compaction never deletes log files (the cleaner does)"
    # Nothing left to do: the next call plans nothing.
    assert pyhudi.compact(spark, a) == []


def test_compaction_killed_after_scheduling_is_run_by_next_compact(killed, spark):
    b, c = killed["b"], killed["c_b"]
    names = killed["names_b"]
    assert f"{c}.compaction.requested" in names
    assert f"{c}.compaction.inflight" not in names and f"{c}.commit" not in names
    assert data_files_of(b, {c}) == [] and not os.path.exists(os.path.join(b, ".hoodie", ".temp", c))
    assert killed["c_a"] not in "".join(names), "B is a copy of A from before A's compaction was scheduled"
    plan = plan_of(b, c)
    assert {(o["partitionPath"], o["fileId"]) for o in plan} == \
        {(o["partitionPath"], o["fileId"]) for o in plan_of(killed["a"], killed["c_a"])}
    assert_table(spark, b, model())
    assert pyhudi.compact(spark, b) == [c]
    check_completed(spark, b, c, [])
