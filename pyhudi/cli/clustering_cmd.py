"""`pyhudi clustering PATH show|schedule|run`: clustering (small-file rewrite) from the command line.

`show` and `schedule` only list storage and read or write `.hoodie/` (no data
file is opened, Spark is never started): `show` lists pending clustering
plans group by group, completed clusterings from their replacecommit
metadata, and what a plan made now would choose; `schedule` writes a plan
now. With `--explain`, both print every latest file slice of the selected
partitions with whether a plan made now chooses it and why (the planner's own
reasons), and the partitions left out and why. `run` executes pending plans
(scheduling one first if none is pending) through `pyhudi.cluster`: in-process
(no Java) unless `--master` asks for Spark. A clustering rolled back because a write
slipped into one of its file groups exits with code 3, apart from usage and
configuration errors (2), so scripts can simply retry it.

Planning and execution are the clustering service's; this module only checks
preconditions early and formats.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pyhudi.cli import progress, render, request_cost
from pyhudi.cli.common import (
    OpenTable,
    add_master_argument,
    add_option_argument,
    guarded,
    open_table,
    parse_options,
    require_spark,
    spark_session,
    table_header,
)
from pyhudi.errors import CommitConflictError, HudiError, InvalidConfigError
from pyhudi.model import avro_models as am
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action, Instant, State
from pyhudi.timeline.timeline import ActiveTimeline

if TYPE_CHECKING:
    from pyhudi.config.registry import Options
    from pyhudi.services.clustering_plan import ClusteringPlanDraft
    from pyhudi.view.file_system_view import FileSlice, FileSystemView
    from pyhudi.writer.config import ClusteringConfig

PROG = "pyhudi clustering"
ROOT_LABEL = "(table root)"
NOTHING_TO_CLUSTER = "nothing to cluster"
EXIT_CONFLICT = 3
SORT_COLUMNS_PARAM = "hoodie.clustering.plan.strategy.sort.columns"
LAYOUT_PARAM = "hoodie.layout.optimize.strategy"
TARGET_PARAM = "hoodie.clustering.plan.strategy.target.file.max.bytes"
META_COLUMNS = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
                "_hoodie_file_name")


def register(sub: Any) -> None:
    p = sub.add_parser("clustering", help="show, schedule or run clustering (rewrite small files)",
                       description="Clustering rewrites small file slices into fewer, well-sized (optionally "
                                   "sorted) file groups: `show` pending and completed clusterings, `schedule` a "
                                   "plan now, `run` pending plans (in-process; on Spark with --master).")
    add_arguments(p)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", help="table base path")
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True

    show = actions.add_parser("show", help="pending and completed clusterings, and what would be chosen next",
                              description="Pending clustering plans (one line per group), completed clusterings "
                                          "and what a plan made now would choose. Reads only .hoodie/ and file "
                                          "listings; does not start Spark.")
    _option_argument(show)
    show.add_argument("--explain", action="store_true",
                      help="every file slice a plan made now would consider, chosen or not, and why")
    show.add_argument("--json", action="store_true", help="machine-readable JSON")
    show.set_defaults(func=run_show)

    schedule = actions.add_parser("schedule", help="write a clustering plan now (does not start Spark)",
                                  description="Schedule a clustering of the small file slices now, without "
                                              "waiting for an inline or async trigger. Does not start Spark.")
    _option_argument(schedule)
    schedule.add_argument("--explain", action="store_true",
                          help="also print every file slice considered, chosen or not, and why, and the "
                               "object-store requests the run made")
    schedule.add_argument("--json", action="store_true", help="machine-readable JSON")
    schedule.set_defaults(func=run_schedule)

    execute = actions.add_parser("run", help="execute pending clusterings (in-process, or on Spark with --master)",
                                 description="Execute the pending clustering --instant TS, or every pending "
                                             "clustering (scheduling one first if none is pending). Runs "
                                             "in-process (hoodie.pyhudi.engine.local.parallelism threads) unless "
                                             "--master asks for Spark. Exits 3 if a clustering was rolled back because a write "
                                             "reached one of its file groups meanwhile.")
    execute.add_argument("--instant", default=None, metavar="TS", help="only this pending clustering")
    _option_argument(execute)
    add_master_argument(execute)
    execute.add_argument("--json", action="store_true", help="machine-readable JSON")
    progress.add_argument(execute)
    request_cost.add_argument(execute)
    execute.set_defaults(func=run_execute)


def _option_argument(p: argparse.ArgumentParser) -> None:
    add_option_argument(p, "hoodie.clustering.plan.strategy.sort.columns=id or "
                           "hoodie.parquet.max.file.size=134217728")


def main(argv: Sequence[str] | None = None) -> int:
    """`pyhudi clustering ...` without the dispatcher."""
    parser = argparse.ArgumentParser(prog=PROG)
    add_arguments(parser)
    args = parser.parse_args(argv)
    return guarded(args.func, args, PROG)


# --------------------------------------------------------------------------- options


def clustering_config(parsed: Options) -> ClusteringConfig:
    """Only the clustering settings: planning must not depend on unrelated write options."""
    from pyhudi.writer.config import ClusteringConfig

    return ClusteringConfig.from_options(parsed)


def max_file_size(parsed: Options) -> int:
    """hoodie.parquet.max.file.size: the weight of a slice without a base file when planning."""
    from pyhudi.config import keys

    return int(parsed.get(keys.PARQUET_MAX_FILE_SIZE))


def table_columns(t: OpenTable) -> list[str] | None:
    """Top-level columns of the table (meta columns included), from the newest completed write's schema
    or the create schema; None if the table has no schema yet."""
    from pyhudi.timeline.instant import WRITE_ACTIONS

    texts = []
    for inst in reversed(t.timeline.completed().actions(*WRITE_ACTIONS).instants):
        try:
            texts.append(t.timeline.commit_metadata(inst).schema)
        except HudiError:
            continue
        if texts[-1]:
            break
    texts.append(t.config.create_schema)
    for text in texts:
        if not text:
            continue
        try:
            fields = json.loads(text).get("fields") or []
        except (ValueError, AttributeError):
            continue
        names = [str(f.get("name")) for f in fields if isinstance(f, dict)]
        return [*(m for m in META_COLUMNS if m not in names), *names]
    return None


def check_sort_columns(t: OpenTable, cfg: ClusteringConfig) -> None:
    """A plan stores its sort columns: a misspelt one would make every execution of it fail in the
    executors, so refuse it before the plan is written."""
    if not cfg.sort_columns:
        return
    columns = table_columns(t)
    if columns is None:
        return
    missing = [c for c in cfg.sort_columns if c not in columns]
    if missing:
        shown = ", ".join(c for c in columns if c not in META_COLUMNS)
        raise InvalidConfigError(f"{SORT_COLUMNS_PARAM} names {', '.join(missing)}, which the table does not have "
                                 f"(columns: {shown})")


# --------------------------------------------------------------------------- pending plans
class _Sizes:
    """File sizes by partition, one listing per partition (no data file is opened)."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self._by_partition: dict[str, dict[str, int]] = {}

    def size(self, partition: str, path: str | None) -> int | None:
        """Size of a file named in a plan (full URI or relative path) in `partition`; None if it is gone."""
        if not path:
            return None
        if partition not in self._by_partition:
            try:
                infos = self.storage.list_dir(partition)
            except OSError:
                infos = []
            self._by_partition[partition] = {i.name: int(i.size or 0) for i in infos if not i.is_dir}
        return self._by_partition[partition].get(os.path.basename(path.rstrip("/")))


def _strategy(plan: dict[str, Any]) -> dict[str, Any]:
    params = (plan.get("strategy") or {}).get("strategyParams") or {}
    sort_columns = [c.strip() for c in str(params.get(SORT_COLUMNS_PARAM) or "").split(",") if c.strip()]
    target = params.get(TARGET_PARAM)
    try:
        target_bytes = int(target) if target not in (None, "") else None
    except ValueError:
        target_bytes = None
    return {"sort_columns": sort_columns, "layout": params.get(LAYOUT_PARAM) or None,
            "target_file_max_bytes": target_bytes,
            "strategy_class": (plan.get("strategy") or {}).get("strategyClassName")}


def describe_group(index: int, group: dict[str, Any], sizes: _Sizes) -> dict[str, Any]:
    slices = []
    for sl in group.get("slices") or []:
        part = str(sl.get("partitionPath") or "")
        base = str(sl.get("dataFilePath") or "") or None
        logs = [str(p) for p in sl.get("deltaFilePaths") or [] if p]
        base_size = sizes.size(part, base)
        log_sizes = [sizes.size(part, p) for p in logs]
        slices.append({
            "partition": part, "file_id": sl.get("fileId"),
            "base_file": os.path.basename(base) if base else None, "base_bytes": base_size,
            "log_files": [os.path.basename(p) for p in logs], "log_bytes": sum(s or 0 for s in log_sizes),
            "missing_files": (base is not None and base_size is None) + sum(s is None for s in log_sizes),
        })
    partitions = sorted({s["partition"] for s in slices})
    return {
        "group": index, "partition": partitions[0] if len(partitions) == 1 else ",".join(partitions),
        "file_slices": len(slices), "log_files": sum(len(s["log_files"]) for s in slices),
        "input_bytes": sum((s["base_bytes"] or 0) + s["log_bytes"] for s in slices),
        "num_output_file_groups": group.get("numOutputFileGroups"),
        "missing_files": sum(s["missing_files"] for s in slices), "slices": slices,
    }


def describe_pending(tl: ActiveTimeline, inst: Instant, sizes: _Sizes) -> dict[str, Any]:
    row: dict[str, Any] = {"instant": inst.timestamp, "state": inst.state.value, "groups": [], "note": None}
    try:
        meta = am.read_instant_avro(tl.requested_details(Instant(inst.timestamp, inst.action, State.REQUESTED)))
    except HudiError as exc:
        row["note"] = "unreadable plan: " + " ".join(str(exc).split())
        return row
    plan = meta.get("clusteringPlan") or {}
    groups = [describe_group(i, g, sizes) for i, g in enumerate(plan.get("inputGroups") or [])]
    row.update(_strategy(plan))
    row["groups"] = groups
    row["file_slices"] = sum(g["file_slices"] for g in groups)
    row["input_bytes"] = sum(g["input_bytes"] for g in groups)
    row["num_output_file_groups"] = sum(int(g["num_output_file_groups"] or 0) for g in groups)
    return row


def pending_instants(tl: ActiveTimeline) -> list[Instant]:
    """Pending clusterings: Hudi 1.x's `clustering` action, or replacecommits that carry a clustering plan
    (an insert overwrite is not a clustering)."""
    from pyhudi.services.clustering import is_pending_clustering

    return [i for i in tl.actions(Action.REPLACE_COMMIT, Action.CLUSTERING).pending() if is_pending_clustering(tl, i)]


# --------------------------------------------------------------------------- completed clusterings
def describe_completed(tl: ActiveTimeline, inst: Instant) -> dict[str, Any] | None:
    """A completed clustering from its replacecommit metadata; None for other replacecommits."""
    try:
        meta = tl.commit_metadata(inst)
    except HudiError as exc:
        return {"instant": inst.timestamp, "note": "unreadable: " + " ".join(str(exc).split()),
                "file_groups_replaced": None, "files_written": None, "partitions": [], "files": []}
    if meta.operation_type != "CLUSTER":
        return None
    replaced = {p: list(ids) for p, ids in (meta.partition_to_replace_file_ids or {}).items()}
    files: list[dict[str, Any]] = [{"partition": s.partition_path or "", "file_id": s.file_id, "file": os.path.basename(s.path or ""),
              "records": s.num_writes, "bytes": s.total_write_bytes} for s in meta.all_stats()]
    partitions = []
    for p in sorted(set(replaced) | {str(f["partition"]) for f in files}):
        mine = [f for f in files if f["partition"] == p]
        partitions.append({"partition": p, "file_groups_replaced": len(replaced.get(p, [])),
                           "files_written": len(mine), "records": sum(f["records"] for f in mine),
                           "bytes_written": sum(f["bytes"] for f in mine)})
    row: dict[str, Any] = {
        "instant": inst.timestamp, "note": None,
        "file_groups_replaced": sum(len(ids) for ids in replaced.values()),
        "files_written": len(files), "records": sum(f["records"] for f in files),
        "bytes_written": sum(f["bytes"] for f in files), "partitions": partitions, "files": files,
        "sort_columns": [], "layout": None,
    }
    try:
        from pyhudi.services.clustering import read_plan

        strategy = _strategy(read_plan(tl, inst.timestamp))
        row["sort_columns"], row["layout"] = strategy["sort_columns"], strategy["layout"]
    except HudiError:
        pass  # the plan may have been archived or be unreadable; the commit metadata is what counts
    return row


def completed_clusterings(tl: ActiveTimeline) -> list[dict[str, Any]]:
    return [c for i in tl.completed().actions(Action.REPLACE_COMMIT) if (c := describe_completed(tl, i))]


# --------------------------------------------------------------------------- what a plan made now would do
def draft_now(view: FileSystemView, cfg: ClusteringConfig, max_size: int) -> ClusteringPlanDraft:
    """What `clustering.explain` computes, on a view we keep to show the slices' files."""
    from pyhudi.services.clustering_plan import draft_plan

    return draft_plan(view, cfg, max_size)


def _normalised_reason(reason: str) -> str:
    """Reasons without the per-slice numbers, so equal causes add up in a summary."""
    reason = re.sub(r"^base file \d+ B ", "base file ", reason)
    reason = re.sub(r"pending clustering \d+", "a pending clustering", reason)
    return reason


def why_nothing(draft: ClusteringPlanDraft) -> str:
    """A one-line summary of why a plan made now would be empty."""
    parts = []
    counts = Counter(_normalised_reason(d.reason) for d in draft.decisions if not d.chosen)
    for reason, n in counts.most_common():
        parts.append(f"{render.plural(n, 'file slice')}: {reason}")
    if draft.partitions_skipped:
        skipped = Counter(draft.partitions_skipped.values())
        parts += [f"{render.plural(n, 'partition')} skipped: {r}" for r, n in skipped.most_common()]
    if not draft.partitions_considered and draft.scope is not None and draft.scope.incremental \
            and not draft.scope.partitions:
        parts.insert(0, f"no partition written since the last clustering {draft.scope.anchor} needs a look "
                        "(incremental planning; hoodie.table.services.incremental.enabled=false scans every "
                        "partition)")
    elif not draft.partitions_considered:
        parts.insert(0, "no partition selected")
    elif not draft.decisions:
        parts.insert(0, "no file slices in the selected partitions")
    return "; ".join(parts)


def _slice_detail(s: FileSlice) -> dict[str, Any]:
    return {"base_file": s.base_file.name if s.base_file else None, "base_bytes": s.base_size if s.base_file else None,
            "log_files": len(s.log_files), "log_bytes": s.log_size}


def describe_draft(view: FileSystemView, draft: ClusteringPlanDraft, explain: bool) -> dict[str, Any]:
    """The plan a schedule would write now (summary), and with `explain` every slice decision."""
    by_key = {(s.partition, s.file_id): s for p in draft.partitions_considered for s in view.latest_file_slices(p)}
    groups = [{"group": i, "partition": g.slices[0].partition if g.slices else "",
               "file_slices": len(g.slices), "log_files": sum(len(s.log_files) for s in g.slices),
               "input_bytes": sum(s.base_size + s.log_size for s in g.slices),
               "num_output_file_groups": g.num_output_file_groups,
               "file_ids": [s.file_id for s in g.slices]} for i, g in enumerate(draft.groups)]
    out: dict[str, Any] = {
        "groups": len(groups), "file_slices": sum(g["file_slices"] for g in groups),
        "input_bytes": sum(g["input_bytes"] for g in groups),
        "num_output_file_groups": sum(g["num_output_file_groups"] for g in groups),
        "plan": groups, "reason": None if groups else why_nothing(draft),
    }
    if explain:
        decisions = []
        for d in draft.decisions:
            row = {"partition": d.partition, "file_id": d.file_id, "size": d.size, "chosen": d.chosen,
                   "group": d.group, "reason": d.reason}
            sl = by_key.get((d.partition, d.file_id))
            row.update(_slice_detail(sl) if sl is not None else
                       {"base_file": None, "base_bytes": None, "log_files": None, "log_bytes": None})
            decisions.append(row)
        out["explain"] = {"scope": draft.scope.to_dict() if draft.scope else None,
                          "partitions_considered": list(draft.partitions_considered),
                          "partitions_skipped": dict(draft.partitions_skipped), "decisions": decisions}
    return out


def trigger_status(tl: ActiveTimeline, cfg: ClusteringConfig) -> dict[str, Any]:
    from pyhudi.services.clustering import commits_since_last_clustering

    return {"commits_since_last_clustering": commits_since_last_clustering(tl),
            "inline": cfg.inline, "inline_max_commits": cfg.inline_max_commits,
            "schedule_inline": cfg.schedule_inline, "async_enabled": cfg.async_enabled,
            "async_max_commits": cfg.async_max_commits}


def _settings(cfg: ClusteringConfig, max_size: int) -> dict[str, Any]:
    """The planning settings in force, so a reader can tell which limits the reasons refer to."""
    return {"small_file_limit": cfg.small_file_limit, "max_bytes_per_group": cfg.max_bytes_per_group,
            "target_file_max_bytes": cfg.target_file_max_bytes, "max_num_groups": cfg.max_num_groups,
            "single_group_clustering_enabled": cfg.single_group_enabled, "sort_columns": list(cfg.sort_columns),
            "layout": cfg.layout, "partition_filter_mode": cfg.filter_mode, "parquet_max_file_size": max_size}


# --------------------------------------------------------------------------- show
def collect_show(t: OpenTable, cfg: ClusteringConfig, max_size: int, explain: bool = False) -> dict[str, Any]:
    from pyhudi.view.builder import build_view

    tl = t.timeline
    sizes = _Sizes(t.storage)
    pending = [describe_pending(tl, i, sizes) for i in pending_instants(tl)]
    view = build_view(t.storage, t.config, tl)
    return {"table": table_header(t), "settings": _settings(cfg, max_size), "pending": pending,
            "completed": completed_clusterings(tl), "next": describe_draft(view, draft_now(view, cfg, max_size), explain),
            "trigger": trigger_status(tl, cfg)}


def run_show(args: argparse.Namespace) -> int:
    t = open_table(args.path)
    _, parsed = parse_options(args.options, PROG)
    data = collect_show(t, clustering_config(parsed), max_file_size(parsed), args.explain)
    if args.json:
        render.emit_json(data)
    else:
        render.emit(render_show(data))
    return 0


# --------------------------------------------------------------------------- schedule
def run_schedule(args: argparse.Namespace) -> int:
    from pyhudi.services import clustering
    from pyhudi.view.builder import build_view
    from pyhudi.writer.config import lock_settings

    t = open_table(args.path)
    _, parsed = parse_options(args.options, PROG)
    cfg = clustering_config(parsed)
    max_size = max_file_size(parsed)
    lock = lock_settings(parsed)
    check_sort_columns(t, cfg)
    # Explained before scheduling: afterwards every chosen slice would read "already in pending clustering".
    view = build_view(t.storage, t.config, t.timeline)
    before = describe_draft(view, draft_now(view, cfg, max_size), args.explain)
    instant = clustering.schedule(t.storage, t.config, cfg, max_size, lock)
    data: dict[str, Any] = {"table": table_header(t), "settings": _settings(cfg, max_size), "scheduled": instant,
                            "clustering": None, "reason": None}
    if instant is None:
        data["reason"] = before["reason"] or "the planner chose no file group"
    else:
        tl = ActiveTimeline.load(t.storage)
        data["clustering"] = describe_pending(tl, Instant(instant, tl.clustering_action, State.REQUESTED),
                                              _Sizes(t.storage))
    if args.explain:
        data["explain"] = before["explain"]
    if args.json:
        render.emit_json(data)
    else:
        render.emit(render_schedule(data))
    return 0


# --------------------------------------------------------------------------- run
def run_execute(args: argparse.Namespace) -> int:
    """Check everything that can fail before any engine runs; run an engine only when there is work."""
    from pyhudi.view.builder import build_view
    from pyhudi.writer.config import build_write_config
    from pyhudi.writer.operation import WriteOperation

    t = open_table(args.path)
    options, parsed = parse_options(args.options, PROG)
    build_write_config(parsed, t.config, WriteOperation.INSERT)  # what pyhudi.cluster builds: fail before Spark
    tl = t.timeline
    pending = [i.timestamp for i in pending_instants(tl)]
    if args.instant is not None:
        if args.instant not in pending:
            shown = ", ".join(pending) or "none"
            raise HudiError(f"{args.instant} is not a pending clustering on {t.storage.base_uri}; "
                            f"pending clusterings: {shown}")
    elif not pending:
        cfg = clustering_config(parsed)
        check_sort_columns(t, cfg)
        view = build_view(t.storage, t.config, tl)
        draft = draft_now(view, cfg, max_file_size(parsed))
        if args.explain and draft.scope is not None:
            print(f"{PROG}: plan: clustering: {draft.scope.reason}", file=sys.stderr)
        if draft.empty:
            return _report_run(args, t, [], [], 0.0, why_nothing(draft), None)
    todo = [args.instant] if args.instant else pending
    what = ", ".join(todo) if todo else "a new clustering"
    if args.master:
        require_spark(args.master)
    verb = f"starting Spark ({args.master}) to run" if args.master else "running"
    print(f"{PROG}: {verb} {what}" + ("" if args.master else " in-process"), file=sys.stderr)
    done_before = {c["instant"] for c in completed_clusterings(tl)}
    start = time.monotonic()
    conflict: str | None = None
    try:
        if args.master:
            with progress.status(PROG + " run", enabled=progress.wanted(args)):  # Spark stages only
                done = _cluster_with_spark(args.master, args.path, options, args.instant)
        else:
            done = _cluster_in_process(args.path, options, args.instant)
    except CommitConflictError as exc:
        conflict = " ".join(str(exc).split())
        # Clusterings completed before the conflicting one are still reported.
        done = [c["instant"] for c in completed_clusterings(ActiveTimeline.load(t.storage))
                if c["instant"] not in done_before]
    elapsed = time.monotonic() - start
    code = _report_run(args, t, done, [i for i in done if i not in pending], elapsed, None, conflict)
    if conflict is not None:
        print(f"{PROG}: error: {conflict}", file=sys.stderr)
        return EXIT_CONFLICT
    return code


def _cluster_in_process(path: str, options: dict[str, str], instant: str | None) -> list[str]:
    """pyhudi.cluster without a session: the in-process engine, no Java and no pyspark."""
    import pyhudi

    return list(pyhudi.cluster(None, path, options, instant))


def _cluster_with_spark(master: str, path: str, options: dict[str, str], instant: str | None) -> list[str]:
    """Spark only with --master; a session we started is stopped, one that already existed is kept."""
    import pyhudi

    with spark_session(master, "pyhudi-clustering") as spark:
        return list(pyhudi.cluster(spark, path, options, instant))


def _report_run(args: argparse.Namespace, t: OpenTable, done: list[str], scheduled: list[str], elapsed: float,
                reason: str | None, conflict: str | None) -> int:
    tl = ActiveTimeline.load(t.storage)
    results = []
    for ts in done:
        inst = tl.find(ts)
        if inst is None or not inst.is_completed:
            raise HudiError(f"clustering {ts} did not complete on {t.storage.base_uri}")
        entry = describe_completed(tl, inst)
        if entry is not None:
            results.append(entry)
    data = {"table": table_header(t), "completed": results, "scheduled": scheduled, "seconds": round(elapsed, 1),
            "reason": reason, "conflict": conflict}
    if args.json:
        render.emit_json(data)
    else:
        render.emit(render_run(data))
    return 0


# --------------------------------------------------------------------------- text
def _header(tbl: dict[str, Any]) -> str:
    return f"table {tbl['name']}  ({tbl['type']}, version {tbl['version']})  {tbl['path']}"


def _order(sort_columns: list[str], layout: str | None) -> str:
    if not sort_columns:
        return "no sort columns"
    return f"sort by {','.join(sort_columns)} ({layout or 'linear'})"


def _pending_lines(p: dict[str, Any]) -> list[str]:
    hb = render.human_bytes
    if p["note"]:
        return [f"  {p['instant']}  {p['state']}  {p['note']}"]
    target = f", target {hb(p['target_file_max_bytes'])}" if p.get("target_file_max_bytes") else ""
    lines = [f"  {p['instant']}  {p['state']}: {render.plural(len(p['groups']), 'group')}, "
             f"{render.plural(p['file_slices'], 'file slice')} ({hb(p['input_bytes'])}) -> "
             f"{render.plural(p['num_output_file_groups'], 'file group')}; "
             f"{_order(p['sort_columns'], p['layout'])}{target}"]
    rows = [[g["group"], g["partition"] or ROOT_LABEL, g["file_slices"], g["log_files"], hb(g["input_bytes"]),
             g["num_output_file_groups"], f"{g['missing_files']} missing" if g["missing_files"] else ""]
            for g in p["groups"]]
    if rows:
        lines += render.table(["GROUP", "PARTITION", "SLICES", "LOGS", "INPUT", "OUTPUT FILES", ""], rows,
                              right=[0, 2, 3, 4, 5], indent="    ")
    return lines


def _completed_lines(c: dict[str, Any], verb: str = "") -> list[str]:
    hb = render.human_bytes
    if c["note"]:
        return [f"  {c['instant']}  {c['note']}"]
    order = f"; {_order(c['sort_columns'], c['layout'])}" if c.get("sort_columns") else ""
    lines = [f"  {c['instant']}{verb}: replaced {render.plural(c['file_groups_replaced'], 'file group')}, "
             f"wrote {render.plural(c['files_written'], 'file')} ({hb(c['bytes_written'])}, "
             f"{render.number(c['records'])} records){order}"]
    rows = [[p["partition"] or ROOT_LABEL, p["file_groups_replaced"], p["files_written"], render.number(p["records"]),
             hb(p["bytes_written"])] for p in c["partitions"]]
    if rows:
        lines += render.table(["PARTITION", "REPLACED", "WRITTEN", "RECORDS", "BYTES"], rows, right=[1, 2, 3, 4],
                              indent="    ")
    return lines


def next_line(n: dict[str, Any]) -> str:
    if not n["groups"]:
        return f"next clustering: {NOTHING_TO_CLUSTER}: {n['reason']}"
    return (f"next clustering would choose {render.plural(n['file_slices'], 'file slice')} "
            f"({render.human_bytes(n['input_bytes'])}) in {render.plural(n['groups'], 'group')} -> "
            f"{render.plural(n['num_output_file_groups'], 'file group')}")


def _logs_cell(count: int | None, size: int | None) -> str:
    if count is None:
        return "-"
    return f"{count} ({render.human_bytes(size)})" if count else "0"


def explain_lines(e: dict[str, Any]) -> list[str]:
    hb = render.human_bytes
    considered = ", ".join(p or ROOT_LABEL for p in e["partitions_considered"]) or "none"
    lines = [f"plan: clustering: {e['scope']['reason']}"] if e.get("scope") else []
    lines.append(f"partitions considered: {considered}")
    if e["partitions_skipped"]:
        lines.append("partitions skipped:")
        lines += render.table(["PARTITION", "REASON"],
                              [[p or ROOT_LABEL, r] for p, r in e["partitions_skipped"].items()], indent="  ")
    if not e["decisions"]:
        return lines + ["no file slices to consider"]
    rows = [[d["partition"] or ROOT_LABEL, d["file_id"], hb(d["base_bytes"]) if d["base_file"] else "-",
             _logs_cell(d["log_files"], d["log_bytes"]), hb(d["size"]), "yes" if d["chosen"] else "no",
             "" if d["group"] is None else d["group"], d["reason"]] for d in e["decisions"]]
    return lines + ["file slices:"] + render.table(
        ["PARTITION", "FILE ID", "BASE", "LOGS", "WEIGHT", "CHOSEN", "GROUP", "REASON"], rows,
        right=[2, 3, 4, 6], indent="  ")


def render_show(data: dict[str, Any]) -> list[str]:
    lines = [_header(data["table"]), "", f"pending clusterings: {len(data['pending'])}"]
    for p in data["pending"]:
        lines += _pending_lines(p)
    lines += ["", f"completed clusterings: {len(data['completed'])}"]
    for c in data["completed"]:
        lines += _completed_lines(c)
    trig = data["trigger"]
    lines += ["", next_line(data["next"]),
              f"{render.plural(trig['commits_since_last_clustering'], 'commit')} since the last clustering "
              f"(inline trigger every {trig['inline_max_commits']}"
              + (", enabled)" if trig["inline"] else ", not enabled)")]
    if "explain" in data["next"]:
        lines += ["", "what a clustering scheduled now would choose:"] + explain_lines(data["next"]["explain"])
    return lines


def render_schedule(data: dict[str, Any]) -> list[str]:
    lines = [_header(data["table"])]
    if data["scheduled"] is None:
        lines.append(f"{NOTHING_TO_CLUSTER}: {data['reason']}")
    else:
        lines += [f"scheduled clustering {data['scheduled']}"] + _pending_lines(data["clustering"])
    if "explain" in data:
        lines += [""] + explain_lines(data["explain"])
    return lines


def render_run(data: dict[str, Any]) -> list[str]:
    lines = [_header(data["table"])]
    if not data["completed"]:
        if data["conflict"]:
            return lines + ["no clustering completed"]
        return lines + [NOTHING_TO_CLUSTER + (f": {data['reason']}" if data["reason"] else "")]
    lines.append(f"completed {render.plural(len(data['completed']), 'clustering')} in {data['seconds']:.1f}s")
    for c in data["completed"]:
        lines += _completed_lines(c, " (scheduled now)" if c["instant"] in data["scheduled"] else "")
    return lines
