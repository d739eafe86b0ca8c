"""`pyhudi streamer`: continuous ingest from a landing directory (Hudi's HoodieStreamer, for files).

Without `--master` it runs in-process (pyhudi/streamer/local.py): each round reads the files that
landed since the last commit with pyarrow and writes them as one commit; the commit's extraMetadata
records the landing files it ingested, so a round replayed after a crash is skipped. Bad input fails the
round; the error table needs Spark.

With `--master`, each round is one Structured Streaming run with a one-shot trigger over Spark's file
source: every file that landed since the last round becomes one commit (through `pyhudi.write_stream`'s
sink, so a round replayed after a crash is skipped). Malformed records fail the round or, with
`hoodie.errortable.enable=true`, go to the error table (pyhudi/streamer/). Spark's checkpoint (under
`<target>/.hoodie/.aux/streamer/`, or `--checkpoint-dir`: Spark writes it with its own file system, so a
target on an object store Spark has no connector for needs a local or HDFS one) makes the next start
resume where this one stopped. The two checkpoints are separate: keep one table on one of the two paths.

Either way the table services configured in the properties run as for any write; between rounds,
`--continuous` waits `--min-sync-interval-seconds`. SIGTERM or Ctrl-C only sets a flag: the round in
flight finishes and commits, background table services finish, then the job exits 0.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from typing import Any

from pyhudi.cli import progress
from pyhudi.cli.common import add_master_argument, non_negative_int, require_spark
from pyhudi.errors import HudiError

FORMATS = ("json", "csv", "parquet")


def register(sub: Any) -> None:
    p = sub.add_parser("streamer", help="ingest new files from a landing directory, once or continuously",
                       description="Hudi's HoodieStreamer for files: one commit per round of new files.")
    p.add_argument("--source-dir", required=True, metavar="DIR", help="landing directory")
    p.add_argument("--source-format", required=True, choices=FORMATS)
    p.add_argument("--target", required=True, metavar="PATH", help="Hudi table base path")
    p.add_argument("--props", required=True, metavar="FILE", help="properties file with hoodie.* keys")
    p.add_argument("--continuous", action="store_true", help="keep ingesting until SIGTERM / Ctrl-C")
    p.add_argument("--min-sync-interval-seconds", type=non_negative_int, default=0, metavar="N",
                   help="continuous mode: wait at least N seconds between rounds")
    p.add_argument("--checkpoint-dir", metavar="DIR",
                   help="with --master: where Spark keeps the streaming checkpoint (default: "
                        "<target>/.hoodie/.aux/streamer/checkpoint); give a local or HDFS folder when the target "
                        "is on an object store Spark has no connector for")
    add_master_argument(p)
    progress.add_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pyhudi.model.properties import parse_properties

    with open(args.props, encoding="utf-8") as fh:
        props = parse_properties(fh.read())
    stop = threading.Event()

    def request_stop(signum: int, _frame: Any) -> None:
        print(f"streamer: {signal.Signals(signum).name} received; finishing the batch in flight",
              file=sys.stderr, flush=True)
        stop.set()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        _run_rounds(args, props, stop)
    finally:  # a caller's own handlers (a test runner, an embedding program) come back
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print("streamer: stopped", flush=True)
    return 0


def _run_rounds(args: argparse.Namespace, props: dict[str, str], stop: threading.Event) -> None:
    """On Spark with --master, else in-process; then background table services finish."""
    if args.master:
        require_spark(args.master)
        from pyhudi.spark_env import create_session

        streamer = Streamer(create_session(args.master, "pyhudi-streamer"), args.source_dir, args.source_format,
                            args.target, props, args.checkpoint_dir)
        streamer.show_progress = progress.wanted(args)  # Spark stages: the Spark path only
        streamer.run(args.continuous, args.min_sync_interval_seconds, stop)
    else:
        from pyhudi.streamer.local import LocalStreamer

        LocalStreamer(args.source_dir, args.source_format, args.target, props, _report).run(
            args.continuous, args.min_sync_interval_seconds, stop)
    _finish_table_services(args.target)


class Streamer:
    show_progress = False  # the CLI turns the per-round status line on

    def __init__(self, spark: Any, source_dir: str, source_format: str, target: str, props: dict[str, str],
                 checkpoint: str | None = None) -> None:
        if source_format not in FORMATS:
            raise HudiError(f"--source-format {source_format!r} is not one of {', '.join(FORMATS)}")
        self.spark, self.source_dir, self.fmt = spark, source_dir, source_format
        self.target, self.props = target, props
        self.checkpoint = checkpoint or f"{target.rstrip('/')}/.hoodie/.aux/streamer/checkpoint"
        self._schema_cache: Any = None  # inferred once: every round would otherwise re-read the landing dir

    def run(self, continuous: bool, interval: int, stop: threading.Event) -> None:
        while not stop.is_set():
            started = time.monotonic()
            with progress.status("pyhudi streamer round", enabled=self.show_progress, quiet_if_idle=True):
                self.run_round()
            if not continuous:
                return
            stop.wait(max(0.0, interval - (time.monotonic() - started)) or 1.0)

    def run_round(self) -> None:
        schema = self._schema()
        if schema is None:
            return  # nothing has landed yet
        from pyhudi.engine.spark.streamer_sink import StreamerSink, await_round
        from pyhudi.engine.spark.streamer_source import read_landing
        from pyhudi.engine.spark.streaming import start_stream

        sink = StreamerSink(self.target, self.props, self.checkpoint, _report, self.fmt, schema)
        query = start_stream(read_landing(self.spark, self.fmt, self.source_dir, schema), sink, self.checkpoint,
                             trigger={"once": True})
        await_round(query, sink)

    def _schema(self) -> Any:
        if self._schema_cache is None:
            from pyhudi.engine.spark.streamer_source import landing_schema

            self._schema_cache = landing_schema(self.spark, self.fmt, self.source_dir, self.target)
        return self._schema_cache


def _finish_table_services(target: str) -> None:
    """Let background compaction/clustering started by the rounds finish before the session stops (a plan
    cut short would only be resumed by the next start)."""
    from pyhudi.api import wait_for_table_services

    errors = wait_for_table_services(target)
    if errors:
        print(f"streamer: {len(errors)} background table service run(s) failed (logged; their plans stay "
              f"pending and are retried on the next start): {errors[-1]}", file=sys.stderr, flush=True)


def _report(line: str) -> None:
    print(line, flush=True)
