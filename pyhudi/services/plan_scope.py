"""Which partitions a table service plans from: incremental table services (Hudi 1.x's RFC-83).

A compaction or clustering plan only needs the partitions whose file slices can have changed since
the last completed plan of the same service, plus those that plan left out on purpose ("missing
partitions": filtered out, cut by max groups or the IO budget, or holding slices another pending
operation blocked). Everything else was examined then and nothing has been written to it since, so a
full scan would plan nothing there either. Listing and building only those partitions makes a plan
cost what was written, not what the table holds.

The window. Hudi 1.x selects the instants whose *completion time* falls in [last plan, new plan);
table version 6 has no completion time, and a write that was inflight while the last plan was made
completes later with an older instant time. So each plan records a watermark in its
extraMetadata: the earliest of (a) the instant time taken just before its timeline was loaded and
(b) every write then pending (commit, deltacommit, replacecommit; a pending clustering is not
needed: the slices it holds made their partitions "missing"). A write that completes after the plan
either was pending then (instant >= watermark) or started after the timeline was loaded (instant >=
(a)); the next plan takes every completed commit, deltacommit, replacecommit and compaction commit
at or after the watermark, and every rollback (its partitions: a rollback changes log files). (The
one assumption, as in Hudi's v6 conflict checks: a writer's instant time is taken from the clock just
before its instant file is created, with clocks in step.)

Full scans: the first plan (no completed plan of the service in the active timeline), a plan that
recorded no watermark (Hudi or an older pyhudi wrote it), history since the watermark possibly
archived, a restore since then, planning settings that changed since the last plan (a slice skipped
for good under the old settings may qualify now), or hoodie.table.services.incremental.enabled=false.

The clean (`clean_plan.clean_scope`) takes the same window shape over [previous earliest retained
commit, new earliest retained commit) through `partitions_written`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pyhudi.errors import HudiError
from pyhudi.model import avro_models as am
from pyhudi.model.commit_metadata import CommitMetadata
from pyhudi.timeline.instant import WRITE_ACTIONS, Action, Instant
from pyhudi.timeline.timeline import ActiveTimeline, Timeline

INCREMENTAL_KEY = "hoodie.table.services.incremental.enabled"
WATERMARK = "pyhudi.incremental.watermark"
MISSING = "pyhudi.incremental.missingSchedulePartitions"
SETTINGS = "pyhudi.incremental.settings"
RECHECK = "pyhudi.incremental.recheckPartitions"  # a clustering's partitions with more than one small output


@dataclass(frozen=True)
class PlanScope:
    """The partitions a plan looks at (None: every partition) and, for `--explain`, why."""

    partitions: list[str] | None
    reason: str
    anchor: str | None = None  # the last completed plan of the service the window starts from
    since: str | None = None  # its watermark
    written: int = 0  # partitions written in the window
    carried: int = 0  # missing partitions carried over from the anchor's plan

    @property
    def incremental(self) -> bool:
        return self.partitions is not None

    def to_dict(self) -> dict[str, Any]:
        return {"mode": "incremental" if self.incremental else "full scan", "reason": self.reason,
                "partitions": None if self.partitions is None else len(self.partitions),
                "last_plan": self.anchor, "since": self.since, "written": self.written, "carried": self.carried}


@dataclass
class Anchor:
    """The last completed plan of a service: its instant and its plan's extraMetadata."""

    instant: str
    extra: dict[str, str] = field(default_factory=dict)


WriteFilter = Callable[[Instant, dict[str, Any] | None], "set[str] | None"]


def partitions_written(timeline: Timeline | ActiveTimeline, lo: str, hi: str | None = None,
                       only: WriteFilter | None = None) -> set[str]:
    """Partitions named by completed commits, deltacommits and replacecommits (compactions complete as
    commits) with lo <= instant < hi: their write stats and replaced file groups.

    `only(instant, None)` is asked first: a set (often empty) decides without reading the commit; None
    reads it (plain JSON, no write-stat objects: a clustering or bulk load names every partition) and
    asks `only(instant, json)`, whose None means all of its partitions."""
    assert isinstance(timeline, ActiveTimeline)
    out: set[str] = set()
    for inst in timeline.completed():
        if inst.action not in WRITE_ACTIONS or inst.timestamp < lo or (hi is not None and inst.timestamp >= hi):
            continue
        decided = only(inst, None) if only is not None else None
        if decided is not None:
            out.update(decided)
            continue
        meta = commit_json(timeline, inst)
        narrowed = only(inst, meta) if only is not None else None
        out.update(narrowed if narrowed is not None else
                   set(meta.get("partitionToWriteStats") or {}) | set(meta.get("partitionToReplaceFileIds") or {}))
    return out


def commit_json(timeline: ActiveTimeline, inst: Instant) -> dict[str, Any]:
    """A completed commit's metadata as plain JSON ({} when empty or not an object)."""
    data = timeline.details(inst)
    if not data.strip():
        return {}
    try:
        parsed = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return CommitMetadata.from_bytes(data, inst.file_name).to_json()  # raises the usual CorruptFileError
    return parsed if isinstance(parsed, dict) else {}


def partitions_rolled_back(timeline: ActiveTimeline, lo: str) -> set[str] | None:
    """Partitions of completed rollbacks at or after `lo` (None: one is unreadable)."""
    out: set[str] = set()
    for inst in timeline.completed().actions(Action.ROLLBACK):
        if inst.timestamp < lo:
            continue
        try:
            meta = am.read_instant_avro(timeline.details(inst))
        except HudiError:
            return None
        out.update(str(p) for p in (meta.get("partitionMetadata") or {}))
    return out


def watermark(timeline: ActiveTimeline, started: str, ignore: Iterable[str] = ()) -> str:
    """What the next plan's window starts at: `started` (taken before `timeline` was loaded) or the
    earliest write pending in it, whichever is earlier (`ignore`: pending clusterings)."""
    skip = set(ignore)
    pending = [i.timestamp for i in timeline.pending() if i.action in WRITE_ACTIONS and i.timestamp not in skip]
    return min([started, *pending])


def plan_extra(started: str | None, timeline: ActiveTimeline, missing: Iterable[str], settings: str,
               ignore: Iterable[str] = ()) -> dict[str, str]:
    """What a plan records in its extraMetadata for the next plan ({} without a start time)."""
    if started is None:
        return {}
    return {WATERMARK: watermark(timeline, started, ignore), MISSING: json.dumps(sorted(set(missing))),
            SETTINGS: settings}


def settings_key(values: dict[str, Any]) -> str:
    return json.dumps(values, sort_keys=True, separators=(",", ":"))


def incremental_scope(timeline: ActiveTimeline, service: str, anchor: Anchor | None, enabled: bool,
                      settings: str, only: WriteFilter | None = None) -> PlanScope:
    """The partitions a plan of `service` must look at (None: all), with the reason. `only` narrows
    what a written instant contributes (a service's own outputs that can never qualify again)."""
    if not enabled:
        return PlanScope(None, f"full scan: {INCREMENTAL_KEY}=false")
    if anchor is None:
        return PlanScope(None, f"full scan: no completed {service} in the active timeline (first plan, or the "
                               "last one was archived)")
    since = anchor.extra.get(WATERMARK)
    if not since:
        return PlanScope(None, f"full scan: the last {service} {anchor.instant} recorded no watermark (planned by "
                               "Hudi or an earlier pyhudi)", anchor.instant)
    if anchor.extra.get(SETTINGS) != settings:
        return PlanScope(None, f"full scan: the {service} planning settings changed since {anchor.instant}",
                         anchor.instant)
    first = timeline.write_timeline().first()
    if first is None or since < first.timestamp:
        return PlanScope(None, f"full scan: instants since the watermark {since} of {service} {anchor.instant} may "
                               f"be archived (the active timeline starts at {first.timestamp if first else '-'})",
                         anchor.instant)
    restores = [i.timestamp for i in timeline.actions(Action.RESTORE) if i.timestamp >= since]
    if restores:
        return PlanScope(None, f"full scan: restore {restores[0]} since {since}", anchor.instant)
    rolled = partitions_rolled_back(timeline, since)
    if rolled is None:
        return PlanScope(None, f"full scan: a rollback since {since} is unreadable", anchor.instant)
    written = partitions_written(timeline, since, only=only) | rolled
    try:
        carried = {str(p) for p in json.loads(anchor.extra.get(MISSING) or "[]")}
    except ValueError:
        return PlanScope(None, f"full scan: the missing partitions of {service} {anchor.instant} are unreadable",
                         anchor.instant)
    scope = sorted(written | carried)
    return PlanScope(scope, f"incremental: {len(scope)} partition(s): {len(written)} written since {since} "
                            f"(watermark of {service} {anchor.instant}), {len(carried)} left out by it",
                     anchor.instant, since, len(written), len(carried))


def carried_over(plan_extra_metadata: dict[str, Any] | None) -> dict[str, str]:
    """The plan's scope keys, copied into its completed commit's extraMetadata, so the next plan reads
    them from that JSON instead of decoding the whole Avro plan."""
    return {str(k): str(v) for k, v in (plan_extra_metadata or {}).items() if str(k).startswith("pyhudi.incremental.")}


def _commit_extra(timeline: ActiveTimeline, inst: Instant) -> dict[str, str] | None:
    extra = timeline.top_level(inst, "extraMetadata", dict)
    return {str(k): str(v) for k, v in extra.items()} if extra is not None else None


def last_compaction(timeline: ActiveTimeline) -> Anchor | None:
    """The last completed compaction and its scope keys (Hudi: the last completed commit action, which
    on a merge-on-read table is a compaction)."""
    from pyhudi.view.builder import compaction_plan_bytes

    done = [i for i in timeline.completed().actions(Action.COMMIT) if i.timestamp in timeline.compaction_commits]
    if not done:
        return None
    last = done[-1]
    try:
        extra = _commit_extra(timeline, last)
        if extra is not None and WATERMARK in extra:
            return Anchor(last.timestamp, extra)
        plan = am.read_instant_avro(compaction_plan_bytes(timeline, Instant(last.timestamp, Action.COMPACTION)))
    except HudiError:
        return Anchor(last.timestamp)
    return Anchor(last.timestamp, {str(k): str(v) for k, v in (plan.get("extraMetadata") or {}).items()})


def last_clustering(timeline: ActiveTimeline) -> Anchor | None:
    """The last completed clustering (a replacecommit of operation CLUSTER; insert overwrites and
    delete_partition are replacecommits too) and its scope keys."""
    for inst in reversed(list(timeline.completed().actions(Action.REPLACE_COMMIT))):
        try:
            extra = _commit_extra(timeline, inst)
            op = timeline.top_level(inst, "operationType", str)
            if op is None:
                op = timeline.commit_metadata(inst).operation_type
            if op != "CLUSTER":
                continue
            if extra is not None and WATERMARK in extra:
                return Anchor(inst.timestamp, extra)
            meta = am.read_instant_avro(timeline.requested_details(inst))
        except HudiError:
            return Anchor(inst.timestamp)
        plan = (meta.get("clusteringPlan") if isinstance(meta, dict) else None) or {}
        return Anchor(inst.timestamp, {str(k): str(v) for k, v in (plan.get("extraMetadata") or {}).items()})
    return None
