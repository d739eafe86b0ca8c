"""The CLI status line (pyhudi/cli/progress.py) without Spark: fake stage infos, a fake StatusTracker,
a fake clock and a StringIO standing in for stderr (as a terminal or as a log)."""

from __future__ import annotations

import io
import sys
from collections import namedtuple
from typing import Any

import pytest

from pyhudi.cli import progress
from pyhudi.cli.progress import Progress, StageStatus, StageTally, render_line, render_summary

JobInfo = namedtuple("JobInfo", "jobId stageIds status")
Info = namedtuple("Info", "stageId currentAttemptId submissionTime name numTasks numActiveTasks "
                          "numCompletedTasks numFailedTasks")


class FakeTracker:
    """Spark's StatusTracker as pyspark exposes it: active stage ids, and stage infos by id."""

    def __init__(self) -> None:
        self.stages: dict[int, Info] = {}
        self.active: list[int] = []
        self.jobs: dict[int, list[int]] = {}  # jobs without a job group: id -> stage ids

    def set(self, sid: int, tasks: int, done: int, active: bool = True, name: str = "collect at x.py:1",
            failed: int = 0) -> None:
        self.stages[sid] = Info(sid, 0, 0, name, tasks, 1 if active else 0, done, failed)
        if active and sid not in self.active:
            self.active.append(sid)
        if not active and sid in self.active:
            self.active.remove(sid)

    def getActiveStageIds(self) -> list[int]:
        return list(self.active)

    def getStageInfo(self, sid: int) -> Info | None:
        return self.stages.get(sid)

    def getJobIdsForGroup(self, group: str | None = None) -> list[int]:
        return list(self.jobs)

    def getJobInfo(self, job_id: int) -> Any:
        return JobInfo(job_id, self.jobs[job_id], "SUCCEEDED")


class FakeContext:
    _jsc = object()

    def __init__(self, tracker: FakeTracker) -> None:
        self.tracker = tracker

    def statusTracker(self) -> FakeTracker:
        return self.tracker


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(tty: bool, ctx: Any, clock: Clock, **kw: Any) -> tuple[Progress, io.StringIO]:
    stream = io.StringIO()
    p = Progress("pyhudi clustering run", stream=stream, tty=tty, context=lambda: ctx, clock=clock,
                 interval=3600.0, **kw)  # the thread never ticks on its own: the test calls tick()
    return p, stream


# --------------------------------------------------------------------------- rendering
def test_render_line() -> None:
    stages = [StageStatus(9, "parquet at client.py:88", 40, 40), StageStatus(7, "collect at client.py:120", 40, 10,
                                                                             num_failed=2)]
    line = render_line("pyhudi compaction run", 75.4, stages)
    assert line == ("pyhudi compaction run  1:15  stage 7 collect [#####...............] 10/40 tasks (2 failed) "
                    "(+1 more stage)")
    assert render_line("op", 3, None) == "op  0:03  starting Spark"
    assert render_line("op", 3, None, no_context="stopping Spark") == "op  0:03  stopping Spark"
    assert render_line("op", 3725, []) == "op  1:02:05  driver work (no Spark stage running)"
    assert render_line("op", 0, [StageStatus(1, "", 0, 0)]).endswith("stage 1 stage [....................] 0/0 tasks")
    cut = render_line("pyhudi compaction run", 1, stages, width=30)
    assert len(cut) == 30 and cut.endswith("...")


def test_render_summary_and_bar() -> None:
    assert render_summary("op", 12.34, "done", 3, 17) == "op: done in 12.3s (3 Spark stages, 17 tasks)"
    assert render_summary("op", 75, "failed", 1, 1) == "op: failed after 1:15 (1 Spark stage, 1 task)"
    assert render_summary("op", 0.2, "interrupted", 0, 0) == "op: interrupted after 0.2s"
    assert progress.text_bar(3, 4, 8) == "[######..]" and progress.text_bar(9, 4, 4) == "[####]"


def test_switches(monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    p = argparse.ArgumentParser()
    progress.add_argument(p)
    assert progress.wanted(p.parse_args([]), environ={})
    assert not progress.wanted(p.parse_args(["--no-progress"]), environ={})
    assert not progress.wanted(None, environ={"PYHUDI_NO_PROGRESS": "1"})
    assert progress.wanted(None, environ={"PYHUDI_NO_PROGRESS": "0"})
    monkeypatch.setenv("PYHUDI_NO_PROGRESS", "true")
    assert not progress.wanted(p.parse_args([]))
    stream = io.StringIO()
    with progress.status("op", enabled=False, stream=stream) as handle:
        assert handle is None
    assert stream.getvalue() == ""


# --------------------------------------------------------------------------- stage accounting
def test_tally_counts_stages_that_ran_between_ticks() -> None:
    t = FakeTracker()
    tally = StageTally(0)
    t.set(0, 4, 1)
    assert [s.stage_id for s in tally.tick(t)] == [0]
    t.set(0, 4, 4, active=False)
    t.set(1, 2, 2, active=False)   # started and finished between two ticks
    t.set(2, 8, 0, active=False)   # skipped (its shuffle output was reused): never runs a task
    t.set(3, 3, 1)
    assert [s.stage_id for s in tally.tick(t)] == [3]
    t.set(3, 3, 3, active=False)
    t.set(4, 5, 5, active=False)
    tally.settle(t)
    assert tally.totals() == (4, 4 + 2 + 3 + 5)


def test_tally_of_a_context_that_existed_before_starts_at_the_first_stage_seen() -> None:
    t = FakeTracker()
    for sid in range(5):
        t.set(sid, 1, 1, active=False)  # earlier work in the same session: not ours
    tally = StageTally(None)
    assert tally.tick(t) == []
    t.set(5, 2, 1)
    tally.tick(t)
    t.set(5, 2, 2, active=False)
    t.set(6, 1, 1, active=False)
    tally.settle(t)
    assert tally.totals() == (2, 3)


def test_operation_in_a_running_context_counts_only_its_own_stages() -> None:
    """Earlier work of the session (its newest job ends at stage 4) is not counted; a stage that ran
    entirely between two ticks is; the next operation starts after what this one counted."""
    t, clock = FakeTracker(), Clock()
    for sid in range(5):
        t.set(sid, 1, 1, active=False)
    t.jobs = {0: [0, 1], 1: [2, 3, 4]}
    ctx = FakeContext(t)
    p, out = make(False, ctx, clock)
    p.start()
    t.set(5, 2, 2, active=False)
    p.finish("done")
    assert out.getvalue() == "pyhudi clustering run: done in 0.0s (1 Spark stage, 2 tasks)\n"
    t.jobs = {}  # e.g. the stages above belonged to a streaming query's job group
    p, out = make(False, ctx, clock)
    p.start()
    t.set(6, 3, 3, active=False)
    p.finish("done")
    assert out.getvalue() == "pyhudi clustering run: done in 0.0s (1 Spark stage, 3 tasks)\n"


# --------------------------------------------------------------------------- the line on a terminal / in a log
def test_terminal_line_is_redrawn_in_place_and_ends_with_a_summary() -> None:
    t, clock = FakeTracker(), Clock()
    p, out = make(True, FakeContext(t), clock)
    p.start()
    t.set(0, 10, 3)
    clock.now += 2
    p.tick()
    t.set(0, 10, 10, active=False)
    clock.now += 1
    p.tick()
    clock.now += 0.5
    p.finish("done")
    text = out.getvalue()
    assert text.count("\n") == 1 and text.endswith("\n")
    frames = text.split("\r\x1b[K")
    assert frames[1].startswith("pyhudi clustering run  0:02  stage 0 collect [######..............] 3/10 tasks")
    assert frames[2] == "pyhudi clustering run  0:03  driver work (no Spark stage running)"
    assert frames[-1] == "pyhudi clustering run: done in 3.5s (1 Spark stage, 10 tasks)\n"


def test_log_gets_a_plain_line_at_most_every_interval() -> None:
    t, clock = FakeTracker(), Clock()
    p, out = make(False, FakeContext(t), clock, plain_every=30.0)
    p.start()
    t.set(0, 100, 1)
    for _ in range(59):  # 29.5 s of ticks: nothing yet
        clock.now += 0.5
        p.tick()
    assert out.getvalue() == ""
    for _ in range(200):  # 100 s more (129.5 s in all): a line at 30, 60, 90 and 120 s, not 200
        clock.now += 0.5
        t.set(0, 100, min(100, t.stages[0].numCompletedTasks + 1))
        p.tick()
    lines = out.getvalue().splitlines()
    assert len(lines) == 4 and "\r" not in out.getvalue()
    assert lines[0].startswith("pyhudi clustering run  0:30  stage 0 collect")
    p.finish("failed")
    assert out.getvalue().splitlines()[-1] == "pyhudi clustering run: failed after 2:09 (1 Spark stage, 100 tasks)"


def test_status_context_reports_failure_and_spark_starting(monkeypatch: pytest.MonkeyPatch) -> None:
    clock, stream = Clock(), io.StringIO()
    ctx: list[Any] = [None]
    with pytest.raises(RuntimeError), progress.status("op", stream=stream, tty=True, context=lambda: ctx[0],
                                                        clock=clock, interval=3600.0) as p:
        assert p is not None
        p.tick()
        ctx[0] = FakeContext(FakeTracker())
        p.tick()
        ctx[0] = None
        p.tick()
        raise RuntimeError("boom")
    frames = stream.getvalue().split("\r\x1b[K")
    assert frames[1] == "op  0:00  starting Spark"
    assert frames[2] == "op  0:00  driver work (no Spark stage running)"
    assert frames[3] == "op  0:00  stopping Spark"
    assert frames[-1] == "op: failed after 0.0s\n"


def test_quiet_if_idle_and_no_summary() -> None:
    clock = Clock()
    p, out = make(False, None, clock, quiet_if_idle=True)
    p.start()
    p.finish("done")
    assert out.getvalue() == ""  # a streamer round that found no new files
    p, out = make(True, None, clock, summary=False)
    p.start()
    p.tick()
    p.finish("done")
    assert out.getvalue() == "\r\x1b[Kop  0:00  starting Spark\r\x1b[K".replace("op", "pyhudi clustering run")


def test_stdout_written_mid_operation_erases_the_line_first(monkeypatch: pytest.MonkeyPatch) -> None:
    class TTYBuffer(io.StringIO):
        def isatty(self) -> bool:
            return True

    term = TTYBuffer()  # stdout and stderr on the same terminal
    monkeypatch.setattr(sys, "stdout", term)
    clock = Clock()
    p = Progress("op", stream=term, tty=True, context=lambda: None, clock=clock, interval=3600.0)
    p.start()
    p.tick()
    print("commit 1: 10 records in")
    p.tick()
    p.finish("done")
    assert sys.stdout is term
    assert term.getvalue() == ("\r\x1b[Kop  0:00  starting Spark\r\x1b[Kcommit 1: 10 records in\n"
                               "\r\x1b[Kop  0:00  starting Spark\r\x1b[Kop: done in 0.0s\n")
