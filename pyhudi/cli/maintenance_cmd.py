"""`pyhudi clean`, `pyhudi rollback`, `pyhudi savepoint`: table maintenance without Spark.

All three only list, read small metadata files and delete or write a few files, so they run in
the CLI's own process; the same functions are pyhudi.clean / rollback / savepoint / restore.
"""

from __future__ import annotations

import argparse
import datetime as dt
from typing import Any

from pyhudi.cli import render, request_cost
from pyhudi.cli.common import add_option_argument, open_table, parse_options


def register(sub: Any) -> None:
    c = sub.add_parser("clean", help="delete file versions the retention policy no longer needs",
                       description="Resumes an interrupted clean, then plans and runs a new one "
                                   "(hoodie.cleaner.* options apply).")
    c.add_argument("path", help="table base path")
    c.add_argument("--dry-run", action="store_true", help="list what would be deleted and why; delete nothing")
    add_option_argument(c, "hoodie.cleaner.commits.retained=5")
    c.add_argument("--json", action="store_true", help="machine-readable JSON")
    request_cost.add_argument(c)
    c.set_defaults(func=run_clean)

    r = sub.add_parser("rollback", help="undo the latest completed write or a failed one",
                       description="Hudi's rollback: files the instant wrote are deleted (on merge-on-read, "
                                   "appended log blocks get a rollback command block).")
    r.add_argument("path", help="table base path")
    r.add_argument("instant", help="instant time to roll back")
    add_option_argument(r, "hoodie.write.concurrency.mode=optimistic_concurrency_control")
    r.set_defaults(func=run_rollback)

    s = sub.add_parser("savepoint", help="create, list, delete savepoints; restore the table to one")
    s.add_argument("path", help="table base path")
    ops = s.add_subparsers(dest="op", metavar="ACTION")
    ops.required = True
    create = ops.add_parser("create", help="savepoint an instant (default: the latest commit)")
    create.add_argument("--instant", default=None, metavar="TS")
    create.add_argument("--user", default=None)
    create.add_argument("--comments", default="")
    ops.add_parser("list", help="list savepoints").add_argument("--json", action="store_true")
    ops.add_parser("delete", help="delete a savepoint").add_argument("instant", metavar="TS")
    ops.add_parser("restore", help="roll back every write after a savepoint").add_argument("instant", metavar="TS")
    s.set_defaults(func=run_savepoint)


def run_clean(args: argparse.Namespace) -> int:
    import pyhudi

    open_table(args.path)  # a clear error for a path that is not a table
    options, _ = parse_options(args.options, "pyhudi clean")
    if args.dry_run:
        draft = pyhudi.clean(None, args.path, options, dry_run=True)
        data = {"dry_run": True, "policy": draft.policy,
                "earliest_commit_to_retain": draft.earliest_to_retain.timestamp if draft.earliest_to_retain else None,
                "files": [{"partition": f.partition, "path": f.path, "reason": f.reason} for f in draft.files]}
        lines = [f"policy {draft.policy}, earliest commit to retain: {data['earliest_commit_to_retain'] or 'none'}",
                 f"would delete {len(draft.files)} file(s)"]
        lines += [f"  {f.path}: {f.reason}" for f in draft.files]
    else:
        results = pyhudi.clean(None, args.path, options)
        data = {"dry_run": False, "cleans": [{"instant": r.instant, "deleted": r.deleted, "failed": r.failed,
                                              "earliest_commit_to_retain": r.earliest_retained} for r in results]}
        lines = [f"clean {r.instant}: {r.deleted} file(s) deleted, {r.failed} failed" for r in results] or \
            ["nothing to clean"]
    if args.json:
        render.emit_json(data)
    else:
        render.emit(lines)
    return 0


def run_rollback(args: argparse.Namespace) -> int:
    import pyhudi

    open_table(args.path)
    options, _ = parse_options(args.options, "pyhudi rollback")
    result = pyhudi.rollback(None, args.path, args.instant, options)
    render.emit([f"rolled back {result.target} with rollback {result.rollback_instant} "
                 f"({len(result.deleted_files)} file(s) deleted)"])
    return 0


def run_savepoint(args: argparse.Namespace) -> int:
    import pyhudi
    from pyhudi.services import restore as rs

    t = open_table(args.path)
    if args.op == "create":
        ts = pyhudi.savepoint(None, args.path, args.instant, args.user, args.comments)
        render.emit([f"savepoint {ts} created"])
    elif args.op == "list":
        infos = rs.list_savepoints(t.storage)
        if args.json:
            render.emit_json([vars(i) for i in infos])
        else:
            render.emit([f"{i.instant}  by {i.savepointed_by or '-'}  at {_when(i.savepointed_at)}  {i.files} file(s)"
                         f"{'  ' + i.comments if i.comments else ''}" for i in infos] or ["no savepoints"])
    elif args.op == "delete":
        rs.delete_savepoint(t.storage, args.instant)
        render.emit([f"savepoint {args.instant} deleted"])
    else:
        ts = pyhudi.restore(None, args.path, args.instant)
        render.emit([f"restored to savepoint {args.instant} with restore {ts}"])
    return 0


def _when(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC") if ms else "-"
