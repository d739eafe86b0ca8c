"""Archival on tables pyhudi writes with Spark: automatic after each commit, reads unchanged through
pyhudi and hudi-rs, time travel and incremental reads across the archived range, and real crashes
(SIGKILL at the archiver's fault points) recovered by the next run.

Small keep limits (hoodie.keep.max.commits=3, .min=2, cleaner retaining 1 commit) make every commit
after the third archive something, so a few tiny writes cover the whole path.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import pyhudi
from pyhudi.errors import InstantNotFoundError
from pyhudi.storage import Storage
from pyhudi.timeline.archived import ArchivedTimeline
from pyhudi.timeline.instant import WRITE_ACTIONS
from pyhudi.timeline.timeline import ActiveTimeline
from tests.helpers import REPO, hudi_rs, rows_by_key, time_travel

pytestmark = pytest.mark.spark
COLS = ["name", "city", "ts"]


def options(name: str, table_type: str = "COPY_ON_WRITE", **extra: str) -> dict[str, str]:
    out = {"hoodie.table.name": name, "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.partitionpath.field": "city", "hoodie.datasource.write.precombine.field": "ts",
           "hoodie.datasource.write.table.type": table_type, "hoodie.cleaner.commits.retained": "1",
           "hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3"}
    out.update({k.replace("__", "."): v for k, v in extra.items()})
    return out


class Model:
    """id -> (name, city, ts) and the instant that last wrote it, with the state after every commit."""

    def __init__(self) -> None:
        self.rows: dict[int, tuple[str, str, int]] = {}
        self.written_at: dict[int, str] = {}
        self.history: list[tuple[str, dict[int, tuple[str, str, int]]]] = []

    def write(self, spark: Any, path: str, opts: dict[str, str], ids: range, version: int) -> str:
        df = spark.range(ids.start, ids.stop, 1, 2).selectExpr(
            "id", f"concat('v{version}-', cast(id as string)) as name",
            "concat('p', cast(id % 2 as string)) as city", f"cast({version} as bigint) as ts")
        instant = pyhudi.write(df, path, opts)
        assert instant is not None
        for i in ids:
            self.rows[i] = (f"v{version}-{i}", f"p{i % 2}", version)
            self.written_at[i] = instant
        self.history.append((instant, dict(self.rows)))
        return instant


def assert_reads(spark: Any, path: str, expected: dict[int, tuple[str, str, int]]) -> None:
    want = {k: tuple(v) for k, v in expected.items()}
    assert rows_by_key(pyhudi.read(spark, path).toArrow(), "id", COLS) == want, "pyhudi differs"
    assert rows_by_key(hudi_rs(path), "id", COLS) == want, "hudi-rs differs"


def timelines(path: str) -> tuple[ArchivedTimeline, ActiveTimeline]:
    storage = Storage(path)
    return ArchivedTimeline.load(storage), ActiveTimeline.load(storage)


def writes(arch: ArchivedTimeline, active: ActiveTimeline) -> set[str]:
    """Completed write instants in either timeline."""
    return {i.timestamp for i in arch.completed_writes()} | \
        {i.timestamp for i in active.completed() if i.action in WRITE_ACTIONS}


def write_history(spark: Any, path: str, opts: dict[str, str], model: Model, versions: int) -> None:
    model.write(spark, path, opts, range(0, 20), 0)
    for v in range(1, versions):
        model.write(spark, path, opts, range(v, v + 3), v)  # id v stays as written by version v for a while


def test_cow_archives_after_each_commit_and_reads_stay_identical(spark: Any, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "cow")
    opts = options("arch_cow")
    model = Model()
    write_history(spark, path, opts, model, 7)
    arch, active = timelines(path)
    commits = [i for i in active.completed() if i.action in WRITE_ACTIONS]
    assert len(commits) <= 3 and arch.completed_writes(), "automatic archival ran"
    archived_ts = [i.timestamp for i in arch.instants]
    assert max(archived_ts) < min(i.timestamp for i in active)  # the archive is a prefix of the timeline
    assert writes(arch, active) == {ts for ts, _ in model.history}  # no commit lost from both timelines
    assert arch.duplicates == 0 and any(i.action.value == "clean" for i in arch.instants)
    assert_reads(spark, path, model.rows)

    # Time travel into the archived range: a clear error naming the earliest readable instant.
    first = model.history[0][0]
    table, earliest = time_travel(spark, path, first)
    assert table is None and earliest is not None and earliest >= commits[0].timestamp
    got, _ = time_travel(spark, path, earliest)
    state = next(s for ts, s in model.history if ts == earliest)
    assert got is not None and rows_by_key(got, "id", COLS) == {k: tuple(v) for k, v in state.items()}
    # An incremental read starting in the archived range: everything changed since, as written last.
    begin = model.history[1][0]
    incr = pyhudi.read(spark, path, {"hoodie.datasource.query.type": "incremental",
                                     "hoodie.datasource.read.begin.instanttime": begin}).toArrow()
    want = {k: tuple(v) for k, v in model.rows.items() if model.written_at[k] > begin}
    assert rows_by_key(incr, "id", COLS) == want
    # With the window's end in the archived range, the read is refused rather than wrong.
    with pytest.raises(InstantNotFoundError, match="earliest instant still readable"):
        pyhudi.read(spark, path, {"hoodie.datasource.query.type": "incremental",
                                  "hoodie.datasource.read.begin.instanttime": first,
                                  "hoodie.datasource.read.end.instanttime": begin}).toArrow()

    from pyhudi.cli.main import main as cli

    assert cli(["timeline", path, "--archived", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["instants"]
    assert [r["timestamp"] for r in rows if r["archived"]] == archived_ts
    assert rows[0]["archived"] and rows[0]["records"] == 20 and not rows[-1]["archived"]


def test_mor_log_blocks_of_archived_delta_commits_stay_visible(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "mor")
    opts = options("arch_mor", "MERGE_ON_READ", hoodie__compact__inline__max__delta__commits="2")
    model = Model()
    write_history(spark, path, opts, model, 6)
    arch, active = timelines(path)
    assert arch.completed_writes(), "delta commits were archived"
    # id 1 was last written by the second delta commit, into a log file: that commit is archived now.
    assert model.written_at[1] == model.history[1][0] and arch.timeline.contains(model.written_at[1])
    assert_reads(spark, path, model.rows)
    assert pyhudi.compact(spark, path, opts)  # the compaction merges blocks of archived commits too
    assert_reads(spark, path, model.rows)
    model.write(spark, path, opts, range(10, 12), 9)
    assert_reads(spark, path, model.rows)


def _archive_until_killed(path: str, opts: dict[str, str], point: str) -> None:
    code = "import json, sys, pyhudi; pyhudi.archive(None, sys.argv[1], json.loads(sys.argv[2]))"
    env = {**os.environ, "PYHUDI_FAULT_POINT": point, "PYHUDI_FAULT_OWN_GROUP": "1",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", code, path, json.dumps(opts)], env=env, start_new_session=True,
                          timeout=600, capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]


@pytest.mark.parametrize("point", ["archival.after_archive_file", "archival.mid_delete"])
def test_a_killed_archiver_is_finished_by_the_next_run(spark: Any, tmp_path: Path, point: str) -> None:
    path = str(tmp_path / "t")
    # A short lock lease: the next run waits out the killed archiver's lock (what is tested is the archive).
    opts = options("arch_kill", hoodie__archive__automatic="false", hoodie__write__lock__filesystem__expire=str(3 / 60))  # minutes: a 3 s lease
    model = Model()
    write_history(spark, path, opts, model, 6)
    every = {ts for ts, _ in model.history}
    plan = pyhudi.archive(None, path, opts, dry_run=True)
    assert plan.commits_archived == 4 and not plan.leftovers

    _archive_until_killed(path, opts, point)
    arch, active = timelines(path)
    assert len(arch.completed_writes()) == 4  # the archive file was complete before anything was deleted
    assert writes(arch, active) == every
    assert not [i for i in active.pending() if i.action in WRITE_ACTIONS]  # nothing looks like a failed write
    assert_reads(spark, path, model.rows)  # the half-archived table reads exactly as before

    result = pyhudi.archive(None, path, opts)
    assert result is not None and result.archive_file is None and result.recovered
    arch, active = timelines(path)
    assert arch.duplicates == 0 and len(arch.files) == 1
    assert writes(arch, active) == every
    assert max(i.timestamp for i in arch.instants) < min(i.timestamp for i in active)
    assert pyhudi.archive(None, path, opts) is None  # and a further run has nothing to do
    assert_reads(spark, path, model.rows)
    shutil.rmtree(path)
