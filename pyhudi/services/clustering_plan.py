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

One deliberate improvement over Hudi: a group of a single slice that would be
rewritten unchanged is skipped, because rewriting it only costs IO (a waste Hudi
users report: hudi#8234, #14086/PR #14087). Unchanged means no log files to merge
and either no sort columns or a base file a completed clustering already wrote in
the same order (same sort columns and layout, read from that clustering's plan).
Hudi plans such a group whenever sort columns are set
(`shouldClusteringSingleGroup`), so every run re-sorts the same small tail file
the previous run left; here a clustering over a table it has just clustered plans
nothing.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from pyhudi.model import avro_models as am
from pyhudi.model.file_names import parse_log_file
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


def draft_plan(view: FileSystemView, cfg: ClusteringConfig, max_file_size: int) -> ClusteringPlanDraft:
    draft = ClusteringPlanDraft()
    partitions, draft.partitions_skipped = select_partitions(view.partition_paths, cfg)
    draft.partitions_considered = partitions
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
            elif s.base_file is not None and s.base_size >= cfg.small_file_limit:
                reason = f"base file {s.base_size} B is not below the clustering small-file limit " \
                         f"{cfg.small_file_limit} B"
            if reason:
                draft.decisions.append(SliceDecision(p, s.file_id, size, False, reason))
            else:
                eligible.append(s)
        eligible.sort(key=lambda s: _size(s, max_file_size), reverse=True)
        bins = pack_sequential(eligible, lambda s: _size(s, max_file_size), cfg.max_bytes_per_group)
        for pos, bin_ in enumerate(bins):
            group_bytes = sum(_size(s, max_file_size) for s in bin_)
            n_out = max(1, math.ceil(group_bytes / cfg.target_file_max_bytes))
            if len(bin_) == 1:
                why = _single_slice_skip(bin_[0], n_out, pos == len(bins) - 1, cfg, orders)
                if why:
                    draft.decisions.append(SliceDecision(p, bin_[0].file_id, group_bytes, False, why))
                    continue
            if len(draft.groups) >= cfg.max_num_groups:
                for s in bin_:
                    draft.decisions.append(SliceDecision(p, s.file_id, _size(s, max_file_size), False,
                                                         f"plan already has max.num.groups={cfg.max_num_groups}"))
                continue
            draft.groups.append(PlannedGroup(list(bin_), n_out))
            for s in bin_:
                draft.decisions.append(SliceDecision(
                    p, s.file_id, _size(s, max_file_size), True,
                    f"small file (below {cfg.small_file_limit} B), packed into group {len(draft.groups) - 1} "
                    f"({group_bytes} B -> {n_out} file(s))", len(draft.groups) - 1))
    return draft


def _single_slice_skip(only: FileSlice, n_out: int, trailing: bool, cfg: ClusteringConfig,
                       orders: ClusteredOrders) -> str | None:
    """Why a one-slice group is left out, or None to keep it.

    Hudi drops only a partition's trailing one-slice group, and only when neither sort columns nor
    single.group.clustering.enabled ask for it. pyhudi also drops any one-slice group that would be
    rewritten unchanged: nothing to merge (no logs), a single output file, and nothing to sort (no
    sort columns, or the base file is a clustering's output in this very order).
    """
    if not only.log_files and only.base_file is not None and n_out == 1:
        if not cfg.sort_columns:
            return "a single file group with nothing to merge or sort would be rewritten unchanged"
        by = orders.order_of(only.base_instant)
        if by is not None and by == plan_order(cfg.sort_columns, cfg.layout):
            return (f"a single file group already sorted by {','.join(cfg.sort_columns)} (written by clustering "
                    f"{only.base_instant}) would be rewritten unchanged")
    if trailing and not (cfg.single_group_enabled or cfg.sort_columns):
        return "single-slice groups are disabled (plan.strategy.single.group.clustering.enabled=false)"
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


def to_avro_plan(draft: ClusteringPlanDraft, storage: Storage, cfg: ClusteringConfig,
                 max_file_size: int) -> dict[str, object]:
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
    plan = am.clustering_plan(input_groups=groups, strategy=strategy, preserve_hoodie_metadata=True)
    return am.requested_replace_metadata(clustering_plan=plan, operation_type="CLUSTER")
