"""`pyhudi timeline PATH`: what happened to a table, one line per instant.

Reads only `.hoodie/` (commit JSON and Avro plans), never data files and
never Spark, so it answers in well under a second even on large tables. Each
instant is summarised on its own and an unreadable instant file becomes a
note on its line instead of aborting the whole listing.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from typing import Any

from pyhudi.cli import render
from pyhudi.cli.common import OpenTable, guarded, non_negative_int, open_table, table_header
from pyhudi.errors import HudiError
from pyhudi.model import avro_models as am
from pyhudi.model.commit_metadata import CommitMetadata
from pyhudi.timeline.archived import ArchivedTimeline
from pyhudi.timeline.instant import WRITE_ACTIONS, Action, Instant, State
from pyhudi.timeline.timeline import ActiveTimeline, Timeline


def register(sub: Any) -> None:
    p = sub.add_parser("timeline", help="list the instants of a table's active timeline",
                       description="One line per instant, oldest first, with what each write did.")
    add_arguments(p)
    p.set_defaults(func=run)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", help="table base path")
    p.add_argument("--limit", type=non_negative_int, default=None, metavar="N",
                   help="show only the newest N instants")
    p.add_argument("--json", action="store_true", help="machine-readable JSON")
    p.add_argument("--archived", action="store_true",
                   help="also show the archived timeline (.hoodie/archived/, or the LSM history of a Hudi 1.x "
                        "table), before the active instants")


def main(argv: Sequence[str] | None = None) -> int:
    """`pyhudi timeline ...` without the dispatcher, for callers such as pyhudi.demo."""
    parser = argparse.ArgumentParser(prog="pyhudi timeline")
    add_arguments(parser)
    args = parser.parse_args(argv)
    return guarded(run, args, "pyhudi timeline")


def run(args: argparse.Namespace) -> int:
    t = open_table(args.path)
    if args.archived and t.timeline.layout.is_v2:
        data = _with_history(collect(t, None, None), history_rows(t), args.limit)
    else:
        archived = ArchivedTimeline.load(t.storage, t.config.archive_folder) if args.archived else None
        if archived is not None and archived.corrupt_blocks:
            # On stderr, so --json output stays parseable.
            print(f"archived timeline: skipped {archived.corrupt_blocks} unreadable block(s): "
                  f"{'; '.join(archived.problems[:3])}", file=sys.stderr)
        data = collect(t, args.limit, archived)
    if args.json:
        render.emit_json(data)
    else:
        render.emit(render_text(data))
    return 0


def collect(t: OpenTable, limit: int | None = None, archived: ArchivedTimeline | None = None) -> dict[str, Any]:
    """Everything the command shows, as JSON-ready values; archived instants (if asked) come first."""
    instants = list(t.timeline.instants)
    actions = Counter(_action_label(t.timeline, i) for i in instants)
    rows = [(True, i) for i in (archived.instants if archived is not None else ())]
    rows += [(False, i) for i in instants]
    shown = rows if limit is None else rows[max(0, len(rows) - limit):]
    counts: dict[str, Any] = {
        "instants": len(instants),
        "completed": sum(1 for i in instants if i.is_completed),
        "pending": sum(1 for i in instants if i.is_pending),
        "by_action": dict(sorted(actions.items())),
        "shown": len(shown),
    }
    data: dict[str, Any] = {"table": table_header(t), "counts": counts}
    if archived is not None:
        arch_actions = Counter(_action_label(archived.timeline, i) for i in archived.instants)
        counts["archived"] = len(archived.instants)
        data["archive"] = {
            "files": list(archived.files), "instants": len(archived.instants), "records": len(archived.entries),
            "by_action": dict(sorted(arch_actions.items())), "corrupt_blocks": archived.corrupt_blocks,
            "duplicate_records": archived.duplicates,
        }
    data["instants"] = [describe_archived(archived, i) if old and archived is not None
                        else describe_instant(t.timeline, i) for old, i in shown]
    return data


def _with_history(data: dict[str, Any], history: list[dict[str, Any]], limit: int | None) -> dict[str, Any]:
    """The active timeline's rows after the history's, the newest `limit` of them shown."""
    rows = history + data["instants"]
    data["instants"] = rows if limit is None else rows[max(0, len(rows) - limit):]
    data["counts"].update(archived=len(history), shown=len(data["instants"]))
    return data


def history_rows(t: OpenTable) -> list[dict[str, Any]]:
    """The instants of a layout-2 table's LSM history (timeline/history.py), summarised from the metadata
    each row keeps (Avro commit metadata, clean and rollback metadata)."""
    from pyhudi.model.commit_avro import commit_json_bytes
    from pyhudi.timeline.history import read_history

    rows = []
    empty = Timeline([])
    for h in read_history(t.storage, t.timeline.layout.history_dir):
        try:
            inst = Instant(h.instant_time, Action(h.action), completion=h.completion_time)
        except ValueError:
            continue
        row = _row(empty, inst, True)
        row["completed_at"] = h.completion_time
        try:
            if inst.action in WRITE_ACTIONS and h.metadata:
                _fill_commit_row(CommitMetadata.from_bytes(commit_json_bytes(h.metadata, h.instant_time)), row)
            elif inst.action is Action.CLEAN and h.metadata:
                row["summary"] = clean_summary(am.read_instant_avro(h.metadata))
            elif inst.action is Action.ROLLBACK and h.metadata:
                row["summary"] = rollback_summary(am.read_instant_avro(h.metadata))
        except (HudiError, ValueError, TypeError, AttributeError) as exc:
            row["summary"] = "unreadable: " + " ".join(str(exc).split())
        rows.append(row)
    return rows


def _action_label(tl: Timeline, inst: Instant) -> str:
    return "compaction" if tl.is_compaction_commit(inst) else inst.action.value


def _row(tl: Timeline, inst: Instant, archived: bool) -> dict[str, Any]:
    return {
        "timestamp": inst.timestamp, "action": inst.action.value, "state": inst.state.value,
        "archived": archived, "compaction": tl.is_compaction_commit(inst), "operation": None, "records": None,
        "inserts": None, "updates": None, "deletes": None, "bytes": None, "files": None,
        "replaced_file_groups": None, "summary": "",
    }


def describe_archived(arch: ArchivedTimeline, inst: Instant) -> dict[str, Any]:
    """An archived instant, summarised from the HoodieArchivedMetaEntry records kept for it."""
    row = _row(arch.timeline, inst, True)
    try:
        if inst.action in WRITE_ACTIONS and inst.is_completed:
            meta = arch.commit_metadata(inst)
            if meta is None:
                row["summary"] = "no metadata archived"
            else:
                _fill_commit_row(meta, row)
        elif inst.action in (Action.COMPACTION, Action.LOG_COMPACTION):
            entry = arch.requested_entry(inst)
            plan = entry.record.get("hoodieCompactionPlan") if entry else None
            row["summary"] = compaction_summary(plan) if plan else ""
        elif inst.is_completed and (payload := arch.payload(inst)) is not None:
            if inst.action is Action.CLEAN:
                row["summary"] = clean_summary(payload)
            elif inst.action is Action.ROLLBACK:
                row["summary"] = rollback_summary(payload)
            elif inst.action is Action.SAVEPOINT:
                row["summary"] = savepoint_summary(payload)
    except (HudiError, ValueError, TypeError, AttributeError) as exc:
        row["summary"] = "unreadable: " + " ".join(str(exc).split())
    return row


def describe_instant(tl: ActiveTimeline, inst: Instant) -> dict[str, Any]:
    row = _row(tl, inst, False)
    try:
        if inst.action in WRITE_ACTIONS and inst.is_completed:
            _commit_stats(tl, inst, row)
        elif inst.action in WRITE_ACTIONS:
            _pending_write(tl, inst, row)
        elif inst.action in (Action.COMPACTION, Action.LOG_COMPACTION):
            row["summary"] = compaction_summary(am.read_instant_avro(tl.requested_details(inst)))
        elif inst.action is Action.CLEAN:
            row["summary"] = (clean_summary(am.read_instant_avro(tl.details(inst))) if inst.is_completed
                              else clean_plan_summary(am.read_instant_avro(tl.requested_details(inst))))
        elif inst.action is Action.ROLLBACK:
            row["summary"] = (rollback_summary(am.read_instant_avro(tl.details(inst))) if inst.is_completed
                              else rollback_plan_summary(am.read_instant_avro(tl.requested_details(inst))))
        elif inst.action is Action.RESTORE:
            data = am.read_instant_avro(tl.details(inst) if inst.is_completed else tl.requested_details(inst))
            row["summary"] = restore_summary(data, inst.is_completed)
        elif inst.action is Action.SAVEPOINT and inst.is_completed:
            row["summary"] = savepoint_summary(am.read_instant_avro(tl.details(inst)))
    except HudiError as exc:
        row["summary"] = "unreadable: " + " ".join(str(exc).split())
    return row


def _commit_stats(tl: ActiveTimeline, inst: Instant, row: dict[str, Any]) -> None:
    _fill_commit_row(tl.commit_metadata(inst), row)


def _fill_commit_row(meta: CommitMetadata, row: dict[str, Any]) -> None:
    stats = meta.all_stats()
    row.update(
        operation=meta.operation_type, records=sum(s.num_writes for s in stats),
        inserts=sum(s.num_inserts for s in stats), updates=sum(s.num_update_writes for s in stats),
        deletes=sum(s.num_deletes for s in stats), bytes=sum(s.total_write_bytes for s in stats),
        files=sum(1 for s in stats if s.path),
    )
    if meta.partition_to_replace_file_ids is not None:
        row["replaced_file_groups"] = sum(len(ids) for ids in meta.partition_to_replace_file_ids.values())
    if row["compaction"]:
        compacted = sum(s.total_log_files_compacted for s in stats)
        row["summary"] = f"compaction of {len(stats)} file groups, {compacted} log files compacted"


def _pending_write(tl: ActiveTimeline, inst: Instant, row: dict[str, Any]) -> None:
    """Pending replacecommits carry an Avro request; other pending writes an inflight profile (JSON)."""
    notes = []
    if inst.action is Action.REPLACE_COMMIT:
        request = tl.requested_details(inst)
        notes.append(replace_request_summary(am.read_instant_avro(request)) if request else "no plan")
    if inst.state is State.INFLIGHT:
        try:
            stats = (profile := tl.commit_metadata(inst)).all_stats()
        except HudiError:  # not every inflight file is a JSON profile (clustering may write Avro)
            stats = []
        if stats:
            row["operation"] = profile.operation_type
            ins = sum(s.num_inserts for s in stats)
            upd = sum(s.num_update_writes for s in stats)
            notes.append(f"planned {ins:,} inserts, {upd:,} updates")
    row["summary"] = "; ".join(n for n in notes if n)


# -- Avro plan/metadata summaries (dicts as read_instant_avro returns them) --------------------
def compaction_summary(plan: dict[str, Any]) -> str:
    ops = plan.get("operations") or []
    partitions = {op.get("partitionPath") for op in ops}
    logs = sum(len(op.get("deltaFilePaths") or []) for op in ops)
    return f"plan: compact {len(ops)} file groups in {len(partitions)} partitions ({logs} log files)"


def clean_plan_summary(plan: dict[str, Any]) -> str:
    per_part = plan.get("filePathsToBeDeletedPerPartition") or plan.get("filesToBeDeletedPerPartition") or {}
    files = sum(len(v or []) for v in per_part.values())
    retain = (plan.get("earliestInstantToRetain") or {}).get("timestamp")
    text = f"plan: delete {files} files in {len(per_part)} partitions ({plan.get('policy') or '?'}"
    text += f", retain from {retain})" if retain else ")"
    dropped = plan.get("partitionsToBeDeleted") or []
    return text + (f", drop {len(dropped)} partitions" if dropped else "")


def clean_summary(meta: dict[str, Any]) -> str:
    parts = meta.get("partitionMetadata") or {}
    retain = meta.get("earliestCommitToRetain") or "-"
    return (f"deleted {meta.get('totalFilesDeleted', 0)} files in {len(parts)} partitions, "
            f"earliest retained {retain}")


def savepoint_summary(data: dict[str, Any]) -> str:
    return f"savepoint by {data.get('savepointedBy') or '?'} of {len(data.get('partitionMetadata') or {})} partitions"


def rollback_plan_summary(plan: dict[str, Any]) -> str:
    target = plan.get("instantToRollback") or {}
    reqs = plan.get("RollbackRequests") or []
    files = sum(len(r.get("filesToBeDeleted") or []) for r in reqs)
    logs = sum(len(r.get("logBlocksToBeDeleted") or {}) for r in reqs)
    return (f"plan: roll back {target.get('commitTime', '?')} ({target.get('action', '?')}): "
            f"delete {files} files, {logs} log files")


def rollback_summary(meta: dict[str, Any]) -> str:
    commits = ", ".join(meta.get("commitsRollback") or []) or "?"
    return f"rolled back {commits}: {meta.get('totalFilesDeleted', 0)} files deleted"


def restore_summary(data: dict[str, Any], completed: bool) -> str:
    if completed:
        return "restored: rolled back " + (", ".join(data.get("instantsToRollback") or []) or "nothing")
    instants = data.get("instantsToRollback") or []
    target = data.get("savepointToRestoreTimestamp")
    return f"plan: roll back {len(instants)} instants" + (f" to savepoint {target}" if target else "")


def replace_request_summary(req: dict[str, Any]) -> str:
    plan = req.get("clusteringPlan")
    if not plan:
        op = req.get("operationType")
        return f"requested {op}" if op else "requested insert overwrite / delete partition (no plan)"
    groups = plan.get("inputGroups") or []
    slices = sum(len(g.get("slices") or []) for g in groups)
    outputs = sum(int(g.get("numOutputFileGroups") or 0) for g in groups)
    return f"plan: cluster {slices} file slices in {len(groups)} groups into {outputs} file groups"


# -- text -----------------------------------------------------------------------------------
def render_text(data: dict[str, Any]) -> list[str]:
    tbl, counts = data["table"], data["counts"]
    by_action = ", ".join(f"{a} {n}" for a, n in counts["by_action"].items())
    summary = f"instants: {counts['instants']}"
    if counts["instants"]:
        summary += f" ({counts['completed']} completed, {counts['pending']} pending); {by_action}"
    lines = [f"table {tbl['name']}  ({tbl['type']}, version {tbl['version']})  {tbl['path']}", summary]
    if "archive" in data:
        arch = data["archive"]
        by = ", ".join(f"{a} {n}" for a, n in arch["by_action"].items())
        text = f"archived: {arch['instants']} instants in {len(arch['files'])} file(s)" + (f"; {by}" if by else "")
        if arch["corrupt_blocks"]:
            text += f" ({arch['corrupt_blocks']} unreadable block(s) skipped)"
        lines.append(text)
    total = counts["instants"] + counts.get("archived", 0)
    if counts["shown"] < total:
        lines.append(f"showing the newest {counts['shown']}")
    if not data["instants"]:
        lines.append("(no instants)" if total == 0 else "")
        return [ln for ln in lines if ln]
    rows = []
    for r in data["instants"]:
        action = r["action"] + (" (compaction)" if r["compaction"] else "")
        rows.append([
            r["timestamp"], action, ("archived" if r["state"] == "completed" else f"archived {r['state']}")
            if r.get("archived") else r["state"], r["operation"] or "-", render.number(r["records"]),
            render.number(r["inserts"]), render.number(r["updates"]), render.number(r["deletes"]),
            render.human_bytes(r["bytes"]), render.number(r["files"]),
            render.number(r["replaced_file_groups"]), r["summary"],
        ])
    headers = ["INSTANT", "ACTION", "STATE", "OPERATION", "RECORDS", "INSERTS", "UPDATES", "DELETES",
               "BYTES", "FILES", "REPLACED", "NOTE"]
    lines.append("")
    lines.extend(render.table(headers, rows, right=range(4, 11)))
    return lines
