"""`pyhudi compaction PATH show|schedule|run`: merge-on-read compaction from the command line.

`show` and `schedule` only list storage and read or write `.hoodie/` (no data
file is opened, Spark is never started): `show` lists pending compaction
plans operation by operation, completed compactions from their commit
metadata, and what a compaction scheduled now would pick; `schedule` writes a
plan now (an explicit request does not wait for the inline trigger). `run`
executes pending plans (scheduling one first if none is pending) through
`pyhudi.compact` and reports what each compaction wrote: in-process (no Java)
unless `--master` asks for Spark. Planning and execution are the compaction service's; this
module only checks preconditions early and formats.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
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
from pyhudi.errors import HudiError
from pyhudi.model import avro_models as am
from pyhudi.timeline.instant import Action, Instant, State
from pyhudi.timeline.timeline import ActiveTimeline

if TYPE_CHECKING:
    from pyhudi.config.registry import Options
    from pyhudi.view.file_system_view import FileSystemView
    from pyhudi.writer.config import CompactionConfig

ROOT_LABEL = "(table root)"
MIB = 1024.0 * 1024.0
NOTHING_TO_COMPACT = "nothing to compact"


def register(sub: Any) -> None:
    p = sub.add_parser("compaction", help="show, schedule or run compaction of a merge-on-read table",
                       description="Compaction of a merge-on-read table: `show` pending and completed "
                                   "compactions, `schedule` a plan now, `run` pending plans (in-process; on Spark with --master).")
    add_arguments(p)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", help="table base path")
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True

    show = actions.add_parser("show", help="pending and completed compactions, and what would be picked next",
                              description="Pending compaction plans (one line per file slice), completed "
                                          "compactions and what a compaction scheduled now would pick. "
                                          "Reads only .hoodie/ and file names; does not start Spark.")
    _option_argument(show)
    show.add_argument("--json", action="store_true", help="machine-readable JSON")
    show.set_defaults(func=run_show)

    schedule = actions.add_parser("schedule", help="write a compaction plan now (does not start Spark)",
                                  description="Schedule a compaction of the latest file slices with log files, "
                                              "without waiting for the inline trigger. Does not start Spark.")
    _option_argument(schedule)
    schedule.add_argument("--json", action="store_true", help="machine-readable JSON")
    request_cost.add_argument(schedule)
    schedule.set_defaults(func=run_schedule)

    execute = actions.add_parser("run", help="execute pending compactions (in-process, or on Spark with --master)",
                                 description="Execute the pending compaction --instant TS, or every pending "
                                             "compaction (scheduling one first if none is pending). Runs "
                                             "in-process on a thread pool (hoodie.pyhudi.engine.local.parallelism)"
                                             " unless --master asks for Spark.")
    execute.add_argument("--instant", default=None, metavar="TS", help="only this pending compaction")
    _option_argument(execute)
    add_master_argument(execute)
    execute.add_argument("--json", action="store_true", help="machine-readable JSON")
    progress.add_argument(execute)
    request_cost.add_argument(execute)
    execute.set_defaults(func=run_execute)


def _option_argument(p: argparse.ArgumentParser) -> None:
    add_option_argument(p, "hoodie.compaction.logfile.size.threshold=1048576")




def main(argv: Sequence[str] | None = None) -> int:
    """`pyhudi compaction ...` without the dispatcher."""
    parser = argparse.ArgumentParser(prog="pyhudi compaction")
    add_arguments(parser)
    args = parser.parse_args(argv)
    return guarded(args.func, args, "pyhudi compaction")


# --------------------------------------------------------------------------- shared helpers
def require_mor(t: OpenTable) -> None:
    """The compaction service's wording, so every action refuses copy-on-write tables alike."""
    if not t.config.is_mor:
        raise HudiError(f"{t.storage.base_uri} is a {t.config.table_type} table; "
                        "only merge-on-read tables compact")




def compaction_config(parsed: Options) -> CompactionConfig:
    """Only the compaction settings: planning must not depend on unrelated write options (index, operation)."""
    from pyhudi.writer.config import CompactionConfig

    return CompactionConfig.from_options(parsed)


def _max_file_size(parsed: Options) -> int:
    from pyhudi.config import keys

    return int(parsed.get(keys.PARQUET_MAX_FILE_SIZE))


def pending_writes(timeline: ActiveTimeline) -> list[Instant]:
    """Writes that keep the service from scheduling (same rule as compaction.schedule)."""
    from pyhudi.services.rollback import is_clustering

    return [i for i in timeline.pending() if i.action in (Action.DELTA_COMMIT, Action.COMMIT)
            or (i.action is Action.REPLACE_COMMIT and not is_clustering(timeline, i))]


def _blocked_message(blockers: list[Instant]) -> str:
    b = blockers[0]
    more = f" (and {len(blockers) - 1} more)" if len(blockers) > 1 else ""
    return (f"cannot schedule a compaction while write {b.timestamp} ({b.action.value}, {b.state.value}) "
            f"is pending{more}; let it finish or roll it back first")


def _name(path: str | None) -> str | None:
    """Plan version 2 stores file names, version 1 full paths: show names either way."""
    return os.path.basename(path) if path else None


def describe_operation(op: dict[str, Any]) -> dict[str, Any]:
    metrics = op.get("metrics") or {}
    logs = [n for n in (_name(p) for p in op.get("deltaFilePaths") or []) if n]
    log_size = metrics.get("TOTAL_LOG_FILES_SIZE")
    io_mb = metrics.get("TOTAL_IO_MB")
    return {
        "partition": str(op.get("partitionPath") or ""), "file_id": op.get("fileId"),
        "base_instant": op.get("baseInstantTime"), "base_file": _name(op.get("dataFilePath")),
        "log_files": logs, "log_file_count": len(logs),
        "log_bytes": int(log_size) if log_size is not None else None,
        "io_mb": round(float(io_mb), 3) if io_mb is not None else None,
    }


def describe_pending(tl: ActiveTimeline, inst: Instant) -> dict[str, Any]:
    row: dict[str, Any] = {"instant": inst.timestamp, "state": inst.state.value, "operations": [],
                           "note": None}
    try:
        plan = am.read_instant_avro(tl.requested_details(inst))
    except HudiError as exc:
        row["note"] = "unreadable plan: " + " ".join(str(exc).split())
        return row
    ops = [describe_operation(op) for op in plan.get("operations") or []]
    row["operations"] = ops
    row["file_slices"] = len(ops)
    row["log_files"] = sum(o["log_file_count"] for o in ops)
    row["log_bytes"] = sum(o["log_bytes"] or 0 for o in ops)
    row["io_mb"] = round(sum(o["io_mb"] or 0.0 for o in ops), 3)
    return row


def describe_completed(tl: ActiveTimeline, inst: Instant) -> dict[str, Any] | None:
    """A completed compaction from its commit metadata; None if the commit is not a compaction."""
    try:
        meta = tl.commit_metadata(inst)
    except HudiError as exc:
        if not tl.is_compaction_commit(inst):
            return None
        return {"instant": inst.timestamp, "file_groups": None, "groups": [],
                "note": "unreadable: " + " ".join(str(exc).split())}
    if not (tl.is_compaction_commit(inst) or meta.compacted or meta.operation_type == "COMPACT"):
        return None
    groups = [{
        "partition": s.partition_path or "", "file_id": s.file_id, "base_file": _name(s.path),
        "previous_base_instant": None if s.prev_commit in (None, "null") else s.prev_commit,
        "records": s.num_writes, "updates": s.num_update_writes, "deletes": s.num_deletes,
        "bytes_written": s.total_write_bytes, "log_files_compacted": s.total_log_files_compacted,
        "log_bytes_compacted": s.total_log_size_compacted,
    } for s in meta.all_stats()]
    return {
        "instant": inst.timestamp, "operation": meta.operation_type, "file_groups": len(groups),
        "records": sum(g["records"] for g in groups), "bytes_written": sum(g["bytes_written"] for g in groups),
        "log_files_compacted": sum(g["log_files_compacted"] for g in groups),
        "log_bytes_compacted": sum(g["log_bytes_compacted"] for g in groups), "groups": groups, "note": None,
    }


def next_compaction(view: FileSystemView, cfg: CompactionConfig, max_file_size: int = 125829120) -> dict[str, Any]:
    """What schedule would pick now, and why nothing if nothing."""
    from pyhudi.services import compaction

    chosen = compaction.candidates(view, cfg, max_file_size)
    blockers = pending_writes(view.timeline)
    return {
        "file_slices": len(chosen), "log_files": sum(len(c.slice.log_files) for c in chosen),
        "log_bytes": sum(c.log_bytes for c in chosen), "io_mb": sum(c.io_mb for c in chosen),
        "slices": [{"partition": c.slice.partition, "file_id": c.slice.file_id,
                    "base_instant": c.slice.base_instant, "log_files": len(c.slice.log_files),
                    "log_bytes": c.log_bytes} for c in chosen],
        "reason": None if chosen else why_nothing(view, cfg),
        "blocked_by": blockers[0].timestamp if blockers else None,
    }


def why_nothing(view: FileSystemView, cfg: CompactionConfig) -> str:
    pending = view.pending_compaction_file_ids()
    clustering = view.pending_clustering_file_ids()
    with_logs = [s for p in view.partition_paths for s in view.latest_file_slices(p) if s.log_files]
    if not with_logs:
        return "no file slice has log files"
    free = [s for s in with_logs if (s.partition, s.file_id) not in pending]
    if not free:
        return "every file slice with log files is already in a pending compaction"
    free = [s for s in free if (s.partition, s.file_id) not in clustering]
    if not free:
        return "every file slice with log files is in a pending compaction or clustering"
    return (f"no file slice has at least hoodie.compaction.logfile.size.threshold="
            f"{cfg.log_size_threshold} bytes of log files")


def plan_scope(view: FileSystemView, cfg: CompactionConfig) -> dict[str, Any]:
    """For --explain: which partitions a compaction planned now looks at (incremental, from which plan and
    watermark, how many partitions) or a full scan, and why."""
    from pyhudi.services import compaction

    return compaction.compaction_scope(view, cfg).to_dict()


def scope_line(scope: dict[str, Any]) -> str:
    return f"plan: compaction: {scope['reason']}"


def trigger_status(tl: ActiveTimeline, cfg: CompactionConfig, local_tz: bool) -> dict[str, Any]:
    from pyhudi.services import compaction

    count, last = compaction.deltas_since_last_compaction(tl)
    return {"strategy": cfg.trigger, "delta_commits_since_last_compaction": count,
            "max_delta_commits": cfg.max_delta_commits, "max_delta_seconds": cfg.max_delta_seconds,
            "last_compaction": last, "fired": compaction.trigger_fired(tl, cfg, local_tz)}


# --------------------------------------------------------------------------- show
def collect_show(t: OpenTable, cfg: CompactionConfig, max_file_size: int = 125829120) -> dict[str, Any]:
    from pyhudi.view.builder import build_view

    require_mor(t)
    tl = t.timeline
    pending = [describe_pending(tl, i) for i in tl.actions(Action.COMPACTION).pending()]
    completed = [c for i in tl.completed().actions(Action.COMMIT) if (c := describe_completed(tl, i))]
    view = build_view(t.storage, t.config, tl)
    return {"table": table_header(t), "pending": pending, "completed": completed,
            "next": next_compaction(view, cfg, max_file_size), "trigger": trigger_status(tl, cfg, t.config.local_timezone)}


def run_show(args: argparse.Namespace) -> int:
    t = open_table(args.path)
    _, parsed = parse_options(args.options, "pyhudi compaction")
    data = collect_show(t, compaction_config(parsed), _max_file_size(parsed))
    if args.json:
        render.emit_json(data)
    else:
        render.emit(render_show(data))
    return 0


# --------------------------------------------------------------------------- schedule
def run_schedule(args: argparse.Namespace) -> int:
    from pyhudi.services import compaction
    from pyhudi.view.builder import build_view
    from pyhudi.writer.config import lock_settings

    t = open_table(args.path)
    _, parsed = parse_options(args.options, "pyhudi compaction")
    cfg = compaction_config(parsed)
    require_mor(t)
    blockers = pending_writes(t.timeline)
    if blockers:
        raise HudiError(_blocked_message(blockers))
    scope = plan_scope(build_view(t.storage, t.config, t.timeline), cfg) if args.explain else None
    instant = compaction.schedule(t.storage, t.config, cfg, force=True,
                                   max_file_size=_max_file_size(parsed), lock=lock_settings(parsed))
    data: dict[str, Any] = {"table": table_header(t), "scheduled": instant, "compaction": None, "reason": None}
    if scope is not None:
        data["scope"] = scope
    if instant is None:
        data["reason"] = why_nothing(build_view(t.storage, t.config, t.timeline), cfg)
    else:
        tl = ActiveTimeline.load(t.storage)
        data["compaction"] = describe_pending(tl, Instant(instant, Action.COMPACTION, State.REQUESTED))
    if args.json:
        render.emit_json(data)
    else:
        render.emit(render_schedule(data))
    return 0


# --------------------------------------------------------------------------- run
def run_execute(args: argparse.Namespace) -> int:
    """Check everything that can fail before any engine runs; run an engine only when there is work."""
    from pyhudi.services import compaction
    from pyhudi.view.builder import build_view
    from pyhudi.writer.config import build_write_config

    t = open_table(args.path)
    require_mor(t)
    options, parsed = parse_options(args.options, "pyhudi compaction")
    if not t.config.populate_meta_fields and "hoodie.datasource.write.operation" not in options:
        # Workaround: build_write_config rejects the default upsert (index tagging) on tables without meta
        # fields, although compaction never tags; the operation plays no part in compaction.
        options["hoodie.datasource.write.operation"] = "insert"
        parsed = type(parsed).parse(options, warn_unknown=False)
    build_write_config(parsed, t.config)  # invalid options fail here, before Spark starts
    tl = t.timeline
    pending = [i.timestamp for i in tl.actions(Action.COMPACTION).pending()]
    if args.instant is not None:
        if args.instant not in pending:
            shown = ", ".join(pending) or "none"
            raise HudiError(f"{args.instant} is not a pending compaction on {t.storage.base_uri}; "
                            f"pending compactions: {shown}")
    elif not pending:
        blockers = pending_writes(tl)
        if blockers:
            raise HudiError(_blocked_message(blockers))
        view = build_view(t.storage, t.config, tl)
        if args.explain:
            print(scope_line(plan_scope(view, compaction_config(parsed))), file=sys.stderr)
        if not compaction.candidates(view, compaction_config(parsed), _max_file_size(parsed)):
            return _report_run(args, t, [], [], 0.0, why_nothing(view, compaction_config(parsed)))
    todo = [args.instant] if args.instant else pending
    what = ", ".join(todo) if todo else "a new compaction"
    if args.master:
        require_spark(args.master)
    verb = f"starting Spark ({args.master}) to run" if args.master else "running"
    print(f"pyhudi compaction: {verb} {what}" + ("" if args.master else " in-process"), file=sys.stderr)
    start = time.monotonic()
    if args.master:
        with progress.status("pyhudi compaction run", enabled=progress.wanted(args)):  # Spark stages only
            done = _compact_with_spark(args.master, args.path, options, args.instant)
    else:
        done = _compact_in_process(args.path, options, args.instant)
    elapsed = time.monotonic() - start
    return _report_run(args, t, done, [i for i in done if i not in pending], elapsed, None)


def _compact_in_process(path: str, options: dict[str, str], instant: str | None) -> list[str]:
    """pyhudi.compact without a session: the in-process engine, no Java and no pyspark."""
    import pyhudi

    return list(pyhudi.compact(None, path, options, instant))


def _compact_with_spark(master: str, path: str, options: dict[str, str], instant: str | None) -> list[str]:
    """Spark only with --master; a session we started is stopped, one that already existed is kept."""
    import pyhudi

    with spark_session(master, "pyhudi-compaction") as spark:
        return list(pyhudi.compact(spark, path, options, instant))


def _report_run(args: argparse.Namespace, t: OpenTable, done: list[str], scheduled: list[str],
                elapsed: float, reason: str | None) -> int:
    tl = ActiveTimeline.load(t.storage)
    results = []
    for ts in done:
        inst = tl.find(ts)
        if inst is None or not inst.is_completed:
            raise HudiError(f"compaction {ts} did not complete on {t.storage.base_uri}")
        entry = describe_completed(tl, inst)
        if entry is not None:
            results.append(entry)
    data = {"table": table_header(t), "completed": results, "scheduled": scheduled,
            "seconds": round(elapsed, 1), "reason": reason}
    if args.json:
        render.emit_json(data)
    else:
        render.emit(render_run(data))
    return 0


# --------------------------------------------------------------------------- text
def _header(tbl: dict[str, Any]) -> str:
    return f"table {tbl['name']}  ({tbl['type']}, version {tbl['version']})  {tbl['path']}"


def _mb(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _pending_lines(p: dict[str, Any]) -> list[str]:
    hb = render.human_bytes
    if p["note"]:
        return [f"  {p['instant']}  {p['state']}  {p['note']}"]
    lines = [f"  {p['instant']}  {p['state']}: {render.plural(p['file_slices'], 'file slice')}, "
             f"{render.plural(p['log_files'], 'log file')} ({hb(p['log_bytes'])}), IO {_mb(p['io_mb'])} MB"]
    rows = [[o["partition"] or ROOT_LABEL, o["file_id"], o["base_instant"], o["base_file"] or "-",
             o["log_file_count"], hb(o["log_bytes"]), _mb(o["io_mb"])] for o in p["operations"]]
    if rows:
        lines += render.table(["PARTITION", "FILE ID", "BASE INSTANT", "BASE FILE", "LOGS", "LOG SIZE", "IO MB"],
                              rows, right=[4, 5, 6], indent="    ")
    return lines


def _completed_lines(c: dict[str, Any], verb: str = "") -> list[str]:
    hb = render.human_bytes
    if c["note"]:
        return [f"  {c['instant']}  {c['note']}"]
    lines = [f"  {c['instant']}{verb}: {render.plural(c['file_groups'], 'file group')}, "
             f"{render.plural(c['log_files_compacted'], 'log file')} ({hb(c['log_bytes_compacted'])}) compacted; "
             f"wrote {hb(c['bytes_written'])}, {render.number(c['records'])} records"]
    rows = [[g["partition"] or ROOT_LABEL, g["file_id"], g["base_file"] or "-", render.number(g["records"]),
             hb(g["bytes_written"]), g["log_files_compacted"]] for g in c["groups"]]
    if rows:
        lines += render.table(["PARTITION", "FILE ID", "NEW BASE FILE", "RECORDS", "BYTES", "LOGS COMPACTED"],
                              rows, right=[3, 4, 5], indent="    ")
    return lines


def next_line(n: dict[str, Any]) -> str:
    text = (f"next compaction would pick {render.plural(n['file_slices'], 'file slice')} "
            f"({render.human_bytes(n['log_bytes'])} of logs)")
    if n["reason"]:
        text += f": {n['reason']}"
    if n["blocked_by"]:
        text += f"; scheduling waits for pending write {n['blocked_by']}"
    return text


def render_show(data: dict[str, Any]) -> list[str]:
    lines = [_header(data["table"]), "", f"pending compactions: {len(data['pending'])}"]
    for p in data["pending"]:
        lines += _pending_lines(p)
    lines += ["", f"completed compactions: {len(data['completed'])}"]
    for c in data["completed"]:
        lines += _completed_lines(c)
    trig = data["trigger"]
    lines += ["", next_line(data["next"]),
              f"inline trigger {trig['strategy']}: {trig['delta_commits_since_last_compaction']} of "
              f"{trig['max_delta_commits']} delta commits since the last compaction"
              + (" (would fire)" if trig["fired"] else "")]
    return lines


def render_schedule(data: dict[str, Any]) -> list[str]:
    lines = [_header(data["table"])] + ([scope_line(data["scope"])] if "scope" in data else [])
    if data["scheduled"] is None:
        return lines + [f"{NOTHING_TO_COMPACT}: {data['reason']}"]
    return lines + [f"scheduled compaction {data['scheduled']}"] + _pending_lines(data["compaction"])


def render_run(data: dict[str, Any]) -> list[str]:
    lines = [_header(data["table"])]
    if not data["completed"]:
        return lines + [f"{NOTHING_TO_COMPACT}" + (f": {data['reason']}" if data["reason"] else "")]
    lines.append(f"completed {render.plural(len(data['completed']), 'compaction')} in {data['seconds']:.1f}s")
    for c in data["completed"]:
        lines += _completed_lines(c, " (scheduled now)" if c["instant"] in data["scheduled"] else "")
    return lines
