"""Clustering plans (Hudi's SparkSizeBasedClusteringPlanStrategy), with the reasons for every decision.

Per selected partition: the latest slices whose base file is below the
clustering small-file limit and that are not under pending compaction or
clustering nor hold log files of a pending write, largest first (a slice
without a base file counts as a max-size file), packed into groups of at most
`max.bytes.per.group`; each group writes ceil(bytes / target) files; at most
`max.num.groups` groups overall.

A pending write's log files join committed slices before that write completes. Should it
fail, its rollback deletes them, and a plan naming them could never execute (its file groups
would stay blocked for writers); so groups a pending write has log files in (found through its
markers, with the pending writes read after the files were listed) wait for the next plan. (A
pending write's base files are new, uncommitted versions that no plan names.) Should a write's log
file still slip into a plan, the write fails its commit check (a clustering planned after it started
takes its group) and the clustering its own (the group's files changed), so neither drops the other.

Which partitions are looked at (`clustering_scope`, `plan_scope`): as Hudi 1.x's incremental table
services, those written since the last completed clustering plus those it left out on purpose
(filtered, cut by max.num.groups, holding blocked slices, or a small slice beside a planned group); a
full scan for the first plan, changed settings, archived history, a restore or RECENT_DAYS. The last
clustering's own outputs count only where it left more than one small file in a partition (Hudi skips
that instant altogether); a lone small output is never planned alone.

One deliberate improvement over Hudi: a group of a single slice that would be
rewritten unchanged is skipped, because rewriting it only costs IO (a waste Hudi
users report: hudi#8234, #14086/PR #14087). Unchanged means no log files to merge
and either no sort columns or a base file a completed clustering already wrote in
the same order (same sort columns and layout, read from that clustering's plan).
Hudi plans such a group whenever sort columns are set
(`shouldClusteringSingleGroup`), so every run re-sorts the same small tail file
the previous run left; here a clustering over a table it has just clustered plans
nothing. For the same reason such a slice, when it is the partition's trailing group
after others, joins the group before it rather than staying out (`partition_bins`):
left out, it and that group's small last file would be two small files for the next
clustering to join; the executor leaves at most one small file per partition
(`clustering._stitch_tails`).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from pyhudi.errors import UnsupportedTableError
from pyhudi.index.bucket import bucket_of_file_id
from pyhudi.model import avro_models as am
from pyhudi.model.file_names import parse_log_file
from pyhudi.model.write_stat import WriteStat
from pyhudi.services.plan_scope import RECHECK, PlanScope, incremental_scope, last_clustering, settings_key
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action, Instant, State
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.file_system_view import FileSlice, FileSystemView
from pyhudi.writer.binpack import pack_sequential
from pyhudi.writer.config import ClusteringConfig
from pyhudi.writer.markers import list_marked_files

MB = 1024 * 1024
SORT_COLUMNS_KEY = "hoodie.clustering.plan.strategy.sort.columns"
LAYOUT_KEY = "hoodie.layout.optimize.strategy"


@dataclass(frozen=True)
class SliceDecision:
    partition: str
    file_id: str
    size: int
    chosen: bool
    reason: str
    group: int | None = None


@dataclass
class PlannedGroup:
    slices: list[FileSlice]
    num_output_file_groups: int

    @property
    def bytes(self) -> int:
        return sum(_size(s, 0) for s in self.slices)


@dataclass
class ClusteringPlanDraft:
    groups: list[PlannedGroup] = field(default_factory=list)
    decisions: list[SliceDecision] = field(default_factory=list)
    partitions_considered: list[str] = field(default_factory=list)
    partitions_skipped: dict[str, str] = field(default_factory=dict)
    scope: PlanScope | None = None  # which partitions were listed, and why (incremental or a full scan)
    missing: list[str] = field(default_factory=list)  # left out on purpose: the next plan looks again

    @property
    def empty(self) -> bool:
        return not self.groups


def _size(s: FileSlice, default_base: int) -> int:
    """A slice's weight for grouping: its base file, or a max-size file for a log-only slice."""
    return s.base_size if s.base_file is not None else default_base


def select_partitions(partitions: list[str], cfg: ClusteringConfig) -> tuple[list[str], dict[str, str]]:
    """Apply partition.selected / regex, then the filter mode; return kept and skipped (with reasons)."""
    skipped: dict[str, str] = {}
    kept = list(partitions)
    if cfg.partition_selected:
        wanted = set(cfg.partition_selected)
        skipped.update({p: "not in hoodie.clustering.plan.strategy.partition.selected" for p in kept
                        if p not in wanted})
        kept = [p for p in kept if p in wanted]
    if cfg.partition_regex:
        rx = re.compile(cfg.partition_regex)
        skipped.update({p: f"does not match partition.regex.pattern {cfg.partition_regex!r}" for p in kept
                        if not rx.fullmatch(p)})
        kept = [p for p in kept if rx.fullmatch(p)]
    if cfg.filter_mode == "RECENT_DAYS":
        ordered = sorted(kept, reverse=True)
        lookback = cfg.lookback_partitions if cfg.lookback_partitions > 0 else len(ordered)
        recent = ordered[cfg.skip_latest_partitions: cfg.skip_latest_partitions + lookback]
        skipped.update({p: "outside the RECENT_DAYS window" for p in kept if p not in recent})
        kept = [p for p in kept if p in recent]
    elif cfg.filter_mode == "SELECTED_PARTITIONS":
        lo, hi = cfg.begin_partition or "", cfg.end_partition
        inside = [p for p in kept if p >= lo and (hi is None or p <= hi)]
        skipped.update({p: f"outside SELECTED_PARTITIONS [{lo}, {hi or ''}]" for p in kept if p not in inside})
        kept = inside
    return kept, skipped


def groups_with_pending_logs(view: FileSystemView, partitions: list[str]) -> dict[tuple[str, str], str]:
    """(partition, fileId) -> pending write instant that has (or may have) written a log file in that group.

    The view's timeline was loaded before its files were listed, so a write that started in between
    (instant, marker, log file, in that order) would be missing from it while its log file is listed:
    the partitions are listed first and the pending writes taken from a timeline loaded afterwards.
    """
    for p in partitions:
        view.file_groups(p)
    timeline = ActiveTimeline.load(view.storage)
    clustering = set(view.pending_clustering_file_ids().values())
    out: dict[tuple[str, str], str] = {}
    for inst in timeline.pending().actions(Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT):
        if inst.timestamp in clustering:
            continue
        for rel in list_marked_files(view.storage, inst.timestamp):
            part, _, name = rel.rpartition("/")
            parsed = parse_log_file(name)
            if parsed is not None:
                out[(part, parsed.file_id)] = inst.timestamp
    return out


def clustering_settings(cfg: ClusteringConfig, max_file_size: int) -> str:
    """The settings that decide for good whether a slice is planned (a change means a full scan)."""
    return settings_key({
        "small.file.limit": cfg.small_file_limit, "max.bytes.per.group": cfg.max_bytes_per_group,
        "target.file.max.bytes": cfg.target_file_max_bytes, "single.group": cfg.single_group_enabled,
        "sort.columns": list(cfg.sort_columns), "layout": cfg.layout, "parquet.max.file.size": max_file_size,
        "recent.days": cfg.filter_mode == "RECENT_DAYS"})


def clustering_scope(view: FileSystemView, cfg: ClusteringConfig, max_file_size: int) -> PlanScope:
    """Which partitions a clustering plan looks at (plan_scope: incremental, as Hudi 1.x's RFC-83).

    RECENT_DAYS keeps the newest partitions of the whole table, so it needs every partition's name: a
    full scan (Hudi 1.x ranks only the incremental partitions, which keeps a different set)."""
    if cfg.incremental and cfg.filter_mode == "RECENT_DAYS":
        return PlanScope(None, "full scan: partition.filter.mode=RECENT_DAYS ranks every partition of the table")
    timeline = view.timeline
    anchor = last_clustering(timeline)

    def written(inst: Instant, meta: dict[str, Any] | None) -> set[str] | None:
        if anchor is None or inst.timestamp != anchor.instant:
            return None
        if RECHECK in anchor.extra:  # recorded at its commit
            return {str(p) for p in json.loads(anchor.extra[RECHECK])}
        if meta is None:
            return None
        # The last clustering's own outputs: a lone small one is never planned alone (a single slice with
        # nothing to merge or sort); two small ones in a partition may be packed together. A small slice
        # it left beside its outputs made the partition "missing" (`_pack_partition`).
        return {str(p) for p, stats in (meta.get("partitionToWriteStats") or {}).items()
                if sum(int(st.get("fileSizeInBytes") or 0) < cfg.small_file_limit for st in stats or []) > 1}

    return incremental_scope(timeline, "clustering", anchor, cfg.incremental,
                             clustering_settings(cfg, max_file_size), written)


def draft_plan(view: FileSystemView, cfg: ClusteringConfig, max_file_size: int,
               scope: PlanScope | None = None) -> ClusteringPlanDraft:
    """Plan from the partitions of `scope` (default: `clustering_scope`); only those are listed. The
    partitions left out on purpose (filtered, cut by max.num.groups, or holding slices a pending
    operation blocks) are the draft's `missing`."""
    refuse_bucket_table(view, cfg)
    scope = scope or clustering_scope(view, cfg, max_file_size)
    draft = ClusteringPlanDraft(scope=scope)
    # Filters read names only: an incremental plan lists just the partitions they keep.
    names = view.partition_paths if scope.partitions is None else scope.partitions
    partitions, draft.partitions_skipped = select_partitions(names, cfg)
    if scope.partitions is not None:
        partitions = view.existing_partitions(partitions)
    draft.partitions_considered = partitions
    missing = set() if cfg.filter_mode == "RECENT_DAYS" else set(draft.partitions_skipped)
    compacting = view.pending_compaction_file_ids()
    clustering = view.pending_clustering_file_ids()
    writing = groups_with_pending_logs(view, partitions)
    orders = ClusteredOrders(view.timeline)
    for p in partitions:
        eligible: list[FileSlice] = []
        for s in view.latest_file_slices(p):
            size = _size(s, max_file_size)
            reason = None
            if (p, s.file_id) in compacting:
                reason = "under pending compaction"
            elif (p, s.file_id) in clustering:
                reason = f"already in pending clustering {clustering[(p, s.file_id)]}"
            elif (p, s.file_id) in writing:
                reason = f"has log files of pending write {writing[(p, s.file_id)]} (clustered once that " \
                         "write completes or is rolled back)"
            if reason:
                missing.add(p)  # blocked for now: looked at again by the next plan
            elif s.base_file is not None and s.base_size >= cfg.small_file_limit:
                reason = f"base file {s.base_size} B is not below the clustering small-file limit " \
                         f"{cfg.small_file_limit} B"
            if reason:
                draft.decisions.append(SliceDecision(p, s.file_id, size, False, reason))
            else:
                eligible.append(s)
        if _pack_partition(draft, p, eligible, cfg, max_file_size, orders):
            missing.add(p)
    draft.missing = sorted(missing)
    if cfg.index_type is None:
        refuse_bucket_groups(draft)
    return draft


BUCKET_REFUSAL = ("clustering rewrites file groups into new ones that are not bucket file groups, after which the "
                  "simple bucket index cannot write the table (Hudi clusters only CONSISTENT_HASHING bucket "
                  "tables, which pyhudi does not support); a bucket table's files are sized by "
                  "hoodie.bucket.index.num.buckets")


def refuse_bucket_table(view: FileSystemView, cfg: ClusteringConfig) -> None:
    """A BUCKET table (as the options say, or as its hoodie.properties record) is never clustered."""
    if cfg.index_type == "BUCKET" or (cfg.index_type is None and view.config.bucket_num is not None):
        raise UnsupportedTableError(f"cannot cluster a table with hoodie.index.type=BUCKET: {BUCKET_REFUSAL}")


PLAUSIBLE_BUCKETS = 10_000  # hoodie.bucket.index.num.buckets of real tables is far below this


def refuse_bucket_groups(draft: ClusteringPlanDraft) -> None:
    """A table that does not record its bucket index (Hudi 0.14 does not), clustered without options: when
    every file group the plan would rewrite is bucket-named, the plan is refused. Bucket-named is the
    bucket number zero-padded to 8 digits, then the UUID's rest; 2% of random UUIDs start with 8 digits,
    so only bucket numbers below 10,000 count (the first four digits zeros: about 2 in a million random
    UUIDs), and two or more such groups are a bucket table's."""
    ids = [s.file_id for g in draft.groups for s in g.slices]
    if len(ids) >= 2 and all((b := bucket_of_file_id(f)) is not None and b < PLAUSIBLE_BUCKETS for f in ids):
        raise UnsupportedTableError(
            f"cannot cluster this table: its file groups are bucket file groups (e.g. {ids[0]!r}), so it is "
            f"written with hoodie.index.type=BUCKET, and {BUCKET_REFUSAL}. If the table does not use a bucket "
            "index, pass hoodie.index.type with the index it uses")


def _pack_partition(draft: ClusteringPlanDraft, p: str, eligible: list[FileSlice], cfg: ClusteringConfig,
                    max_file_size: int, orders: ClusteredOrders) -> bool:
    """Pack a partition's eligible slices into groups of the draft. True when the next plan must look at
    the partition again: max.num.groups cut a group, or a small slice stays beside a planned group (its
    small output may pack with that slice then)."""
    cut = single = planned = False
    bins = partition_bins(eligible, cfg, max_file_size, orders)
    for pos, bin_ in enumerate(bins):
        group_bytes = sum(_size(s, max_file_size) for s in bin_)
        n_out = max(1, math.ceil(group_bytes / cfg.target_file_max_bytes))
        if len(bin_) == 1:
            why = _single_slice_skip(bin_[0], n_out, pos == len(bins) - 1, cfg, orders)
            if why:
                draft.decisions.append(SliceDecision(p, bin_[0].file_id, group_bytes, False, why))
                single = True
                continue
        if len(draft.groups) >= cfg.max_num_groups:
            cut = True
            for s in bin_:
                draft.decisions.append(SliceDecision(p, s.file_id, _size(s, max_file_size), False,
                                                     f"plan already has max.num.groups={cfg.max_num_groups}"))
            continue
        draft.groups.append(PlannedGroup(list(bin_), n_out))
        planned = True
        for s in bin_:
            draft.decisions.append(SliceDecision(
                p, s.file_id, _size(s, max_file_size), True,
                f"small file (below {cfg.small_file_limit} B), packed into group {len(draft.groups) - 1} "
                f"({group_bytes} B -> {n_out} file(s))", len(draft.groups) - 1))
    return cut or (single and planned)


def partition_bins(eligible: list[FileSlice], cfg: ClusteringConfig, max_file_size: int,
                   orders: ClusteredOrders) -> list[list[FileSlice]]:
    """A partition's groups: Hudi's (largest first, a group closes when the next slice would pass
    max.bytes.per.group), except that a trailing one-slice group the planner would skip as unchanged joins
    the group before it (a trailing slice single.group.clustering.enabled=false drops stays dropped, as the
    user asked).

    Hudi leaves that last small file out; beside the tail the group before it may leave, the partition
    would then hold two small files, and the next clustering would rewrite that tail to join them. The
    slice is below the small-file limit, so the group passes max.bytes.per.group by less than that limit.
    """
    eligible = sorted(eligible, key=lambda s: _size(s, max_file_size), reverse=True)
    bins = pack_sequential(eligible, lambda s: _size(s, max_file_size), cfg.max_bytes_per_group)
    if len(bins) > 1 and len(bins[-1]) == 1:
        (last,) = bins[-1]
        n_out = max(1, math.ceil(_size(last, max_file_size) / cfg.target_file_max_bytes))
        if _unchanged_alone(last, n_out, cfg, orders):
            bins[-2].append(bins.pop()[0])
    return bins


def _single_slice_skip(only: FileSlice, n_out: int, trailing: bool, cfg: ClusteringConfig,
                       orders: ClusteredOrders) -> str | None:
    """Why a one-slice group is left out, or None to keep it.

    Hudi drops only a partition's trailing one-slice group, and only when neither sort columns nor
    single.group.clustering.enabled ask for it. pyhudi also drops any one-slice group that would be
    rewritten unchanged: nothing to merge (no logs), a single output file, and nothing to sort (no
    sort columns, or the base file is a clustering's output in this very order).
    """
    unchanged = _unchanged_alone(only, n_out, cfg, orders)
    if unchanged:
        return unchanged
    if trailing and not (cfg.single_group_enabled or cfg.sort_columns):
        return "single-slice groups are disabled (plan.strategy.single.group.clustering.enabled=false)"
    return None


def _unchanged_alone(only: FileSlice, n_out: int, cfg: ClusteringConfig, orders: ClusteredOrders) -> str | None:
    """Why rewriting this slice alone would change nothing (no logs to merge, one output file, nothing to
    sort or already in the plan's order), or None."""
    if only.log_files or only.base_file is None or n_out != 1:
        return None
    if not cfg.sort_columns:
        return "a single file group with nothing to merge or sort would be rewritten unchanged"
    by = orders.order_of(only.base_instant)
    if by is not None and by == plan_order(cfg.sort_columns, cfg.layout):
        return (f"a single file group already sorted by {','.join(cfg.sort_columns)} (written by clustering "
                f"{only.base_instant}) would be rewritten unchanged")
    return None


def plan_order(sort_columns: tuple[str, ...], layout: str | None) -> tuple[tuple[str, ...], str]:
    """A clustering's record order as (sort columns, layout); one column sorts alike under every layout."""
    if not sort_columns:
        return (), "none"
    return tuple(sort_columns), (layout or "linear") if len(sort_columns) > 1 else "linear"


class ClusteredOrders:
    """The record order completed clusterings wrote their files in, read from their plans on demand.

    Only a completed replacecommit in the active timeline with a clustering plan counts; anything else
    (an insert overwrite, an archived or unreadable instant) is None: not known to be sorted.
    """

    def __init__(self, timeline: ActiveTimeline) -> None:
        self.timeline = timeline
        self._cache: dict[str, tuple[tuple[str, ...], str] | None] = {}

    def order_of(self, instant: str | None) -> tuple[tuple[str, ...], str] | None:
        if instant is None:
            return None
        if instant not in self._cache:
            self._cache[instant] = self._read(instant)
        return self._cache[instant]

    def _read(self, instant: str) -> tuple[tuple[str, ...], str] | None:
        found = self.timeline.find(instant)
        if found is None or found.action is not Action.REPLACE_COMMIT or not found.is_completed:
            return None
        try:
            meta = am.read_instant_avro(self.timeline.requested_details(
                Instant(instant, Action.REPLACE_COMMIT, State.REQUESTED)))
        except Exception:  # an empty or unreadable plan file: not known to be sorted  # noqa: BLE001
            return None
        plan = meta.get("clusteringPlan") or {}
        if not plan:
            return None
        params = (plan.get("strategy") or {}).get("strategyParams") or {}
        columns = tuple(c for c in str(params.get(SORT_COLUMNS_KEY) or "").split(",") if c)
        return plan_order(columns, params.get(LAYOUT_KEY))


def recheck_partitions(stats: list[WriteStat], small_file_limit: int) -> list[str]:
    """Partitions where a clustering wrote more than one file below the small-file limit: the next
    plan looks at them again (two small outputs may pack together); recorded in its commit."""
    small: dict[str, int] = {}
    for st in stats:
        if st.file_size_in_bytes < small_file_limit:
            part = st.partition_path or ""
            small[part] = small.get(part, 0) + 1
    return sorted(p for p, n in small.items() if n > 1)


def to_avro_plan(draft: ClusteringPlanDraft, storage: Storage, cfg: ClusteringConfig,
                 max_file_size: int, extra: dict[str, str] | None = None, hudi_1x: bool = False) -> dict[str, object]:
    """HoodieRequestedReplaceMetadata of the draft, slices named by full paths as Hudi writes them. A plan of a
    Hudi 1.x table (`hudi_1x`, written with `avro_models.write_instant_avro_1x`) also lists the partitions it
    left out on purpose in 1.x's missingSchedulePartitions, where Hudi's next incremental plan reads them
    (BaseTableServicePlanActionExecutor#fetchMissingPartitions); pyhudi reads its own copy in `extra`."""
    groups = []
    for g in draft.groups:
        slices = [am.slice_info(file_id=s.file_id, partition_path=s.partition,
                                data_file_path=storage.uri(s.base_file.path) if s.base_file else "",
                                delta_file_paths=[storage.uri(lf.path) for lf in s.log_files]) for s in g.slices]
        read = sum(s.base_size + s.log_size for s in g.slices) // MB
        write = sum(_size(s, max_file_size) for s in g.slices) // MB
        metrics = {"TOTAL_IO_READ_MB": read, "TOTAL_IO_WRITE_MB": write, "TOTAL_IO_MB": read + write,
                   "TOTAL_LOG_FILES_SIZE": sum(s.log_size for s in g.slices),
                   "TOTAL_LOG_FILES": sum(len(s.log_files) for s in g.slices)}
        groups.append(am.clustering_group(slices=slices, num_output_file_groups=g.num_output_file_groups,
                                          metrics=metrics))
    params = {SORT_COLUMNS_KEY: ",".join(cfg.sort_columns), LAYOUT_KEY: cfg.layout,
              "hoodie.clustering.plan.strategy.target.file.max.bytes": str(cfg.target_file_max_bytes),
              "hoodie.clustering.plan.strategy.small.file.limit": str(cfg.small_file_limit)}
    strategy = am.clustering_strategy(strategy_params={k: v for k, v in params.items() if v})
    plan = am.clustering_plan(input_groups=groups, strategy=strategy, preserve_hoodie_metadata=True,
                              extra_metadata=extra, missing_schedule_partitions=draft.missing if hudi_1x else None)
    return am.requested_replace_metadata(clustering_plan=plan, operation_type="CLUSTER")
