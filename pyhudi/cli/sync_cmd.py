"""`pyhudi sync PATH`: register a Hudi table in its catalogs now, as a write with meta sync enabled does after
its commit (Hudi's `run_sync_tool.sh` / HiveSyncTool's main), for a table written by anyone.

The catalogs and everything registered come from Hudi's own keys given with --option (the same keys a
pipeline's writes carry: hoodie.meta.sync.client.tool.class, hoodie.datasource.hive_sync.*, the Glue keys).
--explain prints what would change (tables created or altered, columns, partitions added, moved or
dropped) and changes nothing. Runs in-process: no Spark or Java.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pyhudi.cli import progress
from pyhudi.cli.common import add_option_argument, parse_options, table_hint
from pyhudi.storage import Storage

PROG = "pyhudi sync"


def register(sub: Any) -> None:
    p = sub.add_parser("sync", help="register the table in the Hive Metastore / AWS Glue (Hudi's meta sync)",
                       description="Hudi's HiveSyncTool / AwsGlueCatalogSyncTool on demand: creates or updates the "
                                   "catalog table(s) (MOR: <table>_ro and <table>_rt), their columns and "
                                   "partitions, and last_commit_time_sync. Incremental from the last sync point "
                                   "when it is still on the active timeline, else a full comparison.")
    p.add_argument("path", help="table base path")
    add_option_argument(p, "hoodie.datasource.hive_sync.metastore.uris=thrift://hms:9083")
    p.add_argument("--explain", dest="dry_run", action="store_true",
                   help="print what the sync would change, and change nothing")
    progress.add_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pyhudi.api import sync

    options, _ = parse_options(args.options, PROG)
    say = _progress_printer() if progress.wanted(args) else None
    with table_hint(Storage(args.path)):  # the sync reads hoodie.properties before any catalog call
        reports = sync(args.path, options, explain=args.dry_run, progress=say)
    for report in reports:
        _print_report(report, args.dry_run)
    return 0


def _progress_printer() -> Any:
    def say(message: str) -> None:
        print(f"{PROG}: {message}", file=sys.stderr, flush=True)

    return say


def _print_report(report: Any, dry_run: bool) -> None:
    tool = report.tool.rsplit(".", 1)[-1]
    lines = report.lines()
    verb = "would change" if dry_run else "changed"
    if not lines:
        print(f"{PROG}: {tool} ({report.backend}): nothing to change", flush=True)
        return
    print(f"{PROG}: {tool} ({report.backend}) {verb}:", flush=True)
    for line in lines:
        print(f"  {line}", flush=True)
    if report.runs > 1:
        print(f"{PROG}: {tool}: {report.runs} runs (another sync or commit ran at the same time)", flush=True)
