"""Which commits an incremental read returns: the range, hollow commits, completion times.

A write that is still in flight when a later one has completed is a *hollow commit*: a reader whose
range ends after the later commit and that checkpoints that end would never see the in-flight write's
rows once it completes (its instant time is older than the checkpoint). Hudi 0.14 handles this with
`hoodie.read.timeline.holes.resolution.policy` (first named `hoodie.datasource.read.handle.hollow.commit`,
kept as an alias; `TimelineUtils.handleHollowCommitIfNeeded`), and so do we:

* FAIL (default): refuse the read while any completed write is newer than the earliest pending write;
* BLOCK: only completed writes older than the earliest pending write are visible to the read;
* USE_TRANSITION_TIME: commits are selected by completion time (the completed instant file's
  modification time, which is what Hudi 0.14 uses for table version 6), so begin/end are completion
  times and a late-completing write falls into a later range.

Only writes count (commit, deltacommit, replacecommit): a pending compaction is no write (its action is
`compaction`), and a pending clustering is skipped as Hudi skips it (it adds no new rows).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from pyhudi.config import keys as K
from pyhudi.config.registry import Options
from pyhudi.errors import HollowCommitError
from pyhudi.model.instant_time import ms_to_instant, zone
from pyhudi.model.table_config import TableConfig
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action, Instant
from pyhudi.timeline.timeline import META_DIR, ActiveTimeline, Timeline

log = logging.getLogger(__name__)
FAIL, BLOCK, USE_TRANSITION_TIME = "FAIL", "BLOCK", "USE_TRANSITION_TIME"


@dataclass(frozen=True)
class IncrementalRange:
    """What an incremental read returns.

    Rows whose `_hoodie_commit_time` is in (begin, end], or, when `instants` is set (completion-time
    mode), exactly the rows of those instants; files are taken as of `snapshot_at` (None: latest).
    """

    begin: str
    end: str
    snapshot_at: str | None
    instants: tuple[str, ...] | None = None


def resolve(opts: Options, storage: Storage, timeline: ActiveTimeline, config: TableConfig,
            begin: str, end_opt: str | None) -> IncrementalRange:
    """The incremental range for (begin, end_opt] under the configured hollow-commit handling."""
    mode = str(opts.get(K.INCR_HOLLOW_COMMIT)).upper()
    completed = timeline.commits().completed()
    if mode == USE_TRANSITION_TIME or timeline.layout.is_v2:
        return _by_completion_time(storage, timeline, completed, config, begin, end_opt)
    visible = _handle_hollow(timeline, completed, mode)
    last = visible.last()
    end = end_opt or (last.timestamp if last else begin)
    if mode == BLOCK and len(visible) < len(completed):
        end = min(end, last.timestamp if last else begin)  # nothing at or after the earliest pending write
    return IncrementalRange(begin, end, end)


def first_pending_write(timeline: ActiveTimeline) -> Instant | None:
    """The earliest write still in flight (requested or inflight), clustering excluded as Hudi does."""
    from pyhudi.services.rollback import is_clustering

    for inst in timeline.commits().pending():
        if not is_clustering(timeline, inst):
            return inst
    return None


def _handle_hollow(timeline: ActiveTimeline, completed: Timeline, mode: str) -> Timeline:
    pending = first_pending_write(timeline)
    if pending is None or not completed.after(pending.timestamp):
        return completed
    later = completed.after(pending.timestamp).first()
    assert later is not None
    if mode == FAIL:
        raise HollowCommitError(
            f"incremental read of {timeline.storage.base_uri}: write {pending.timestamp} ({pending.action.value}) "
            f"is still in flight but the later commit {later.timestamp} has completed (a hollow commit); a reader "
            f"that checkpoints past {pending.timestamp} would never see its rows. Retry once it completes or is "
            f"rolled back, or set {K.INCR_HOLLOW_COMMIT.key}=BLOCK (read only up to the pending write) or "
            "USE_TRANSITION_TIME (select commits by completion time)")
    log.warning("hollow commit %s: %s=BLOCK returns nothing at or after it until it completes",
                pending.timestamp, K.INCR_HOLLOW_COMMIT.key)
    return completed.before(pending.timestamp)


def completion_times(storage: Storage, completed: Timeline, config: TableConfig) -> dict[str, str]:
    """Completion ("state transition") time of each completed instant: its completed file's modification
    time, as an instant in the table's timeline zone (Hudi 0.14, table version 6). On timeline layout 2
    (Hudi 1.x) the instant's name records it, and 1.x's incremental queries always select by it."""
    tz = zone(config.local_timezone)
    out: dict[str, str] = {}
    for inst in completed:
        ms = storage.mtime_ms(f"{META_DIR}/{inst.file_name}")
        if ms is not None:
            out[inst.timestamp] = ms_to_instant(ms, tz)
    return out


def _history_completions(storage: Storage, timeline: ActiveTimeline) -> dict[str, str]:
    """Completion times of the writes archived into a layout-2 table's LSM history: Hudi 1.x's
    IncrementalQueryAnalyzer selects those too when the range starts before the active timeline."""
    from pyhudi.timeline.history import read_history

    writes = {a.value for a in (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT)}
    return {h.instant_time: h.completion_time for h in read_history(storage, timeline.layout.history_dir,
                                                                      with_details=False)
            if h.action in writes and h.completion_time}


def _by_completion_time(storage: Storage, timeline: ActiveTimeline, completed: Timeline, config: TableConfig,
                        begin: str, end_opt: str | None) -> IncrementalRange:
    if timeline.layout.is_v2:
        done = {i.timestamp: at for i in completed if (at := timeline.completion_time(i.timestamp)) is not None}
        if not done or begin < min(done.values()):  # the range may reach into the LSM history
            done = {**_history_completions(storage, timeline), **done}
    else:
        done = completion_times(storage, completed, config)
    end = end_opt or (max(done.values()) if done else begin)
    chosen = tuple(sorted(ts for ts, at in done.items() if begin < at <= end))
    return IncrementalRange(begin, end, chosen[-1] if chosen else None, chosen)
