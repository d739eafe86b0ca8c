"""A status line on stderr while a long Spark-backed CLI operation runs.

Clustering, compaction, a streamer round or a large write can run for
minutes with nothing on screen, which reads as a hang. `status()` wraps such
an operation: a daemon thread polls Spark's public StatusTracker every half
second and renders one line (operation, elapsed time, the running stage(s)
with a tasks-done bar). On a terminal the line is redrawn in place with `\\r`;
anywhere else (CI logs, pipes) at most one plain line every 30 s is printed,
so logs never flood. Every operation ends with one summary line (done or
failed, elapsed, the Spark stages and tasks it ran). `--no-progress` or
`PYHUDI_NO_PROGRESS=1` turns all of it off.

Nothing here starts Spark or holds a session: the poller asks pyspark for
the active SparkContext on every tick, so the line can say "starting Spark"
while the session comes up and keeps quiet after it stops. Under Spark Connect
(`--master sc://...`) there is no SparkContext: the stages come from the
progress reports the Connect server sends while an operation runs
(engine/spark/session.py's ConnectStages). Rendering is
pure functions of `StageStatus` values, so it is tested without Spark.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TextIO

from pyhudi.cli.render import plural

ENV_DISABLE = "PYHUDI_NO_PROGRESS"
POLL_SECONDS = 0.5
PLAIN_EVERY_SECONDS = 30.0
BAR_WIDTH = 20
CLEAR_LINE = "\r\x1b[K"
_SCAN_LIMIT = 200  # stage ids probed per tick: bounds the py4j calls of one tick

#: the Progress objects currently running, so `settle_active()` can count their stages before Spark stops
_ACTIVE: list[Progress] = []
#: the highest stage id an earlier operation in this process counted, per SparkContext (by identity)
_LAST_STAGE: dict[int, int] = {}


@dataclass(frozen=True)
class StageStatus:
    """What the status line needs of one Spark stage (pyspark's SparkStageInfo, minus the rest)."""

    stage_id: int
    name: str
    num_tasks: int
    num_completed: int
    num_active: int = 0
    num_failed: int = 0


# --------------------------------------------------------------------------- rendering (pure)
def short_name(name: str) -> str:
    """`collect at /x/pyhudi/writer/client.py:120` -> `collect`: the call site is noise on one line."""
    head = name.split(" at ", 1)[0].strip()
    return head or "stage"


def format_elapsed(seconds: float) -> str:
    """m:ss below an hour, h:mm:ss above: a clock reads faster than `734.2s`."""
    total = max(0, int(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def text_bar(done: int, total: int, width: int = BAR_WIDTH) -> str:
    """`[#####...............]`; an unknown total (0) shows an empty bar rather than dividing by zero."""
    filled = 0 if total <= 0 else min(width, (max(0, done) * width) // total)
    return "[" + "#" * filled + "." * (width - filled) + "]"


def render_line(operation: str, elapsed: float, stages: list[StageStatus] | None, width: int | None = None,
                no_context: str = "starting Spark") -> str:
    """The live line. `stages` None means there is no SparkContext (`no_context` says why: starting or
    stopping); an empty list means the driver is working between stages (listing, planning, committing)."""
    head = f"{operation}  {format_elapsed(elapsed)}"
    if stages is None:
        text = f"{head}  {no_context}"
    elif not stages:
        text = f"{head}  driver work (no Spark stage running)"
    else:
        ordered = sorted(stages, key=lambda s: s.stage_id)
        first = ordered[0]
        text = (f"{head}  stage {first.stage_id} {short_name(first.name)} "
                f"{text_bar(first.num_completed, first.num_tasks)} {first.num_completed}/{first.num_tasks} tasks")
        if first.num_failed:
            text += f" ({first.num_failed} failed)"
        if len(ordered) > 1:
            text += f" (+{plural(len(ordered) - 1, 'more stage')})"
    if width is not None and width > 0 and len(text) > width:
        text = text[: max(0, width - 3)] + "..."
    return text


def render_summary(operation: str, elapsed: float, outcome: str, stages: int, tasks: int) -> str:
    """The last line of every operation; `outcome` is `done`, `failed` or `interrupted`."""
    verb = "done in" if outcome == "done" else f"{outcome} after"
    seconds = f"{elapsed:.1f}s" if elapsed < 60 else format_elapsed(elapsed)
    spark = f" ({plural(stages, 'Spark stage')}, {plural(tasks, 'task')})" if stages else ""
    return f"{operation}: {verb} {seconds}{spark}"


# --------------------------------------------------------------------------- switches
def add_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-progress", action="store_true",
                   help=f"no status line on stderr (also when {ENV_DISABLE}=1)")


def wanted(args: argparse.Namespace | None = None, environ: Any = None) -> bool:
    """False with --no-progress or PYHUDI_NO_PROGRESS set to anything but empty/0/false/no."""
    env = os.environ if environ is None else environ
    if str(env.get(ENV_DISABLE, "")).strip().lower() not in ("", "0", "false", "no"):
        return False
    return not bool(getattr(args, "no_progress", False))


# --------------------------------------------------------------------------- Spark polling
def _active_context() -> Any:
    """The running SparkContext, else the active Spark Connect session's stage tracker (the stages its
    server reports, every 2 s by default; shown as "stage N on Spark Connect"), else None; the Spark engine's module is the one
    that imports pyspark, and only once a command asked for Spark (the status line is shown on the
    --master path only)."""
    from pyhudi.engine.spark.session import active_context

    return active_context()


class StageTally:
    """Stages of one operation, discovered by id (Spark numbers stages 0, 1, 2, ... per context).

    Each tick probes ids upward from the last one known until Spark has none, and re-reads the
    stages that are running or not finished, so a stage that starts and ends between two ticks is
    still counted. `settle()` re-reads everything once more; called while the context is alive, the
    totals are exact.
    """

    def __init__(self, first_id: int | None) -> None:
        self.next_id = first_id  # None: the context existed before us; start at the first stage seen
        self.stages: dict[int, StageStatus] = {}
        self._quiet_ticks: dict[int, int] = {}

    def tick(self, tracker: Any) -> list[StageStatus]:
        active_ids = sorted(int(i) for i in tracker.getActiveStageIds())
        if self.next_id is None:
            self.next_id = active_ids[0] if active_ids else None
        if self.next_id is not None:
            self._discover(tracker)
        watched = {sid for sid, s in self.stages.items()
                   if s.num_completed < s.num_tasks and self._quiet_ticks.get(sid, 0) < 3}
        for sid in sorted(watched | set(active_ids)):
            self._read(tracker, sid, sid in active_ids)
        return [self.stages[sid] for sid in active_ids if sid in self.stages]

    def settle(self, tracker: Any) -> None:
        self.tick(tracker)
        for sid in list(self.stages):
            self._read(tracker, sid, True)

    def _discover(self, tracker: Any) -> None:
        assert self.next_id is not None
        for _ in range(_SCAN_LIMIT):
            if not self._read(tracker, self.next_id, True):
                return
            self.next_id += 1

    def _read(self, tracker: Any, sid: int, active: bool) -> bool:
        info = tracker.getStageInfo(sid)
        if info is None:
            return False
        new = StageStatus(int(info.stageId), str(info.name), int(info.numTasks), int(info.numCompletedTasks),
                          int(info.numActiveTasks), int(info.numFailedTasks))
        changed = self.stages.get(sid) != new
        self.stages[sid] = new
        self._quiet_ticks[sid] = 0 if (changed or active) else self._quiet_ticks.get(sid, 0) + 1
        return True

    @property
    def highest(self) -> int | None:
        return max(self.stages, default=None)

    def totals(self) -> tuple[int, int]:
        """(stages that ran a task, tasks completed); skipped stages (shuffle reused) do not count."""
        ran = [s for s in self.stages.values() if s.num_completed > 0]
        return len(ran), sum(s.num_completed for s in ran)


class _ClearingStream:
    """Stands in for sys.stdout while a live line is on the terminal: other output first erases the
    status line, so a commit summary printed mid-operation does not end up glued to it."""

    def __init__(self, inner: TextIO, progress: Progress) -> None:
        self._inner, self._progress = inner, progress

    def write(self, text: str) -> int:
        self._progress.erase()
        return self._inner.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class Progress:
    """The status line for one operation; use through `status()`."""

    def __init__(self, operation: str, *, stream: TextIO | None = None, tty: bool | None = None,
                 context: Callable[[], Any] = _active_context, clock: Callable[[], float] = time.monotonic,
                 interval: float = POLL_SECONDS, plain_every: float = PLAIN_EVERY_SECONDS,
                 summary: bool = True, quiet_if_idle: bool = False) -> None:
        self.operation = operation
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(tty if tty is not None else getattr(self.stream, "isatty", lambda: False)())
        self._context, self._clock = context, clock
        self.interval, self.plain_every = interval, plain_every
        self.summary, self.quiet_if_idle = summary, quiet_if_idle
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._shown = False
        self._started = clock()
        self._last_plain = self._started
        self._tally: StageTally | None = None
        self._tally_ctx: Any = None
        self._saved_stdout: Any = None
        self._saw_context = False

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        self._started = self._last_plain = self._clock()
        self._tally_ctx = self._safe_context()
        self._tally = StageTally(0 if self._tally_ctx is None else _first_new_stage(self._tally_ctx))
        _ACTIVE.append(self)
        if self.tty and getattr(sys.stdout, "isatty", lambda: False)():
            self._saved_stdout = sys.stdout
            sys.stdout = _ClearingStream(sys.stdout, self)  # type: ignore[assignment]
        self._thread = threading.Thread(target=self._run, name=f"pyhudi-progress:{self.operation}", daemon=True)
        self._thread.start()

    def finish(self, outcome: str) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        self.settle()
        if self in _ACTIVE:
            _ACTIVE.remove(self)
        if self._saved_stdout is not None and isinstance(sys.stdout, _ClearingStream):
            sys.stdout = self._saved_stdout
        stages, tasks = self._tally.totals() if self._tally else (0, 0)
        if self._tally is not None and self._tally.highest is not None and self._tally_ctx is not None:
            _LAST_STAGE[id(self._tally_ctx)] = max(self._tally.highest, _LAST_STAGE.get(id(self._tally_ctx), -1))
        elapsed = self._clock() - self._started
        with self._lock:
            self.erase()
            if self.summary and not (self.quiet_if_idle and outcome == "done" and not stages):
                self._write(render_summary(self.operation, elapsed, outcome, stages, tasks) + "\n")

    def settle(self) -> None:
        """Count every stage of the operation while Spark still answers (before `spark.stop()`)."""
        tracker = self._tracker()
        if tracker is not None and self._tally is not None:
            try:
                with self._lock:
                    self._tally.settle(tracker)
            except Exception:  # noqa: BLE001 - a stopping context must never break the operation
                pass

    # -- drawing -----------------------------------------------------------------------------
    def erase(self) -> None:
        with self._lock:
            if self._shown:
                self._write(CLEAR_LINE)
                self._shown = False

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # closed pipe or stream: the operation matters more than its line
            pass

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.tick()

    def tick(self) -> None:
        """Poll once and draw (TTY) or print a plain line when one is due (elsewhere)."""
        stages = self._poll()
        now = self._clock()
        with self._lock:
            if self._stop.is_set() and self._thread is not None and threading.current_thread() is self._thread:
                return
            if self.tty:
                width = shutil.get_terminal_size((100, 20)).columns - 1
                self._write(CLEAR_LINE + render_line(self.operation, now - self._started, stages, width,
                                                     self._no_context()))
                self._shown = True
            elif now - self._last_plain >= self.plain_every:
                self._last_plain = now
                self._write(render_line(self.operation, now - self._started, stages, None,
                                        self._no_context()) + "\n")

    # -- Spark -------------------------------------------------------------------------------
    def _no_context(self) -> str:
        return "stopping Spark" if self._saw_context else "starting Spark"

    def _safe_context(self) -> Any:
        try:
            return self._context()
        except Exception:  # noqa: BLE001 - pyspark missing or half-initialised: report "starting Spark"
            return None

    def _tracker(self) -> Any:
        ctx = self._safe_context()  # a live SparkContext, or a Connect session's ConnectStages
        if ctx is None:
            return None
        self._saw_context = True
        if self._tally is not None and ctx is not self._tally_ctx:
            # A context started (or restarted) during the operation numbers its stages from 0.
            self._tally, self._tally_ctx = StageTally(0), ctx
        return ctx.statusTracker()

    def _poll(self) -> list[StageStatus] | None:
        try:
            tracker = self._tracker()
            if tracker is None or self._tally is None:
                return None
            with self._lock:
                return self._tally.tick(tracker)
        except Exception:  # noqa: BLE001 - the context may be stopping under us; try again next tick
            return []


def _first_new_stage(ctx: Any) -> int | None:
    """The first stage id an operation starting now can own, in a context that already ran work: past the
    stages of the newest job without a job group, and past what an earlier operation here counted (a
    streamer round's jobs carry the stream's job group). None if Spark cannot tell."""
    best = _LAST_STAGE.get(id(ctx), -1)
    try:
        tracker = ctx.statusTracker()
        jobs = tracker.getJobIdsForGroup()
        info = tracker.getJobInfo(max(jobs)) if jobs else None
        if info is not None:
            best = max([best, *(int(s) for s in info.stageIds)])
    except Exception:  # noqa: BLE001 - no baseline: count from the first stage seen running
        pass
    return best + 1 if best >= 0 else None


def settle_active() -> None:
    """Called by CLI helpers just before they stop a session they started, so the summary is exact."""
    for p in list(_ACTIVE):
        p.settle()


@contextmanager
def status(operation: str, enabled: bool = True, **kw: Any) -> Iterator[Progress | None]:
    """Show the status line while the block runs; always one summary line at the end (when enabled)."""
    if not enabled:
        yield None
        return
    p = Progress(operation, **kw)
    p.start()
    outcome = "failed"
    try:
        yield p
        outcome = "done"
    except KeyboardInterrupt:
        outcome = "interrupted"
        raise
    finally:
        p.finish(outcome)
