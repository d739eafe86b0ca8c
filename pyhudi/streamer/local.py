"""The streamer without Spark: rounds over new landing files, one commit each, exactly once.

Each round lists the landing directory (arrow_source's rules: the files directly in it, hidden and empty
ones skipped), leaves out the files already ingested, reads the rest with pyarrow and writes them with
`pyhudi.write` (streaming defaults: async services on MOR tables, as the Spark sink does).

Exactly once without a Spark checkpoint: the commit itself records what it ingested, in its
extraMetadata (written atomically with the commit, so a crash before the commit ingests nothing and a
crash after it never ingests a file twice):
- `_pyhudi_streamer_files`: the landing file names of this round (JSON list);
- `_pyhudi_streamer_checkpoint`: the newest modification time (ms) of every file ingested so far,
  cumulative, like the last-modified checkpoint of Hudi's DFS sources.
A file counts as ingested when an active commit lists its name, or when its modification time is not
after the checkpoint of the oldest active commit that carries one (archived commits' lists are gone, but
every file they listed is covered by that checkpoint). As with Hudi's DFS sources, a file that lands later
with an older modification time than that checkpoint (e.g. moved in with `mv -p`) is not picked up.

Bad input fails the round, naming the file (MalformedRecordError): nothing is committed, and the next
round retries the same files once they are fixed or removed. The error table
(`hoodie.errortable.enable=true`) is not available in-process yet: it is refused up front with a hint to
use --master.
"""

from __future__ import annotations

import json
import posixpath
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pyhudi.errors import InvalidConfigError
from pyhudi.storage import Storage
from pyhudi.streamer import arrow_source
from pyhudi.streamer.commits import commit_summary
from pyhudi.timeline.instant import WRITE_ACTIONS
from pyhudi.timeline.timeline import ActiveTimeline

FILES_KEY = "_pyhudi_streamer_files"
CHECKPOINT_KEY = "_pyhudi_streamer_checkpoint"
ERROR_TABLE_KEY = "hoodie.errortable.enable"


@dataclass(frozen=True)
class Ingested:
    """What the table's active commits say was ingested: names, and the checkpoints (ms)."""

    names: frozenset[str]
    floor_ms: int  # the oldest active checkpoint: files not newer than this were ingested before
    latest_ms: int  # the newest checkpoint: the next commit's checkpoint starts from it


def ingested(target: str) -> Ingested:
    storage = Storage(target)
    if not storage.exists(".hoodie/hoodie.properties"):
        return Ingested(frozenset(), -1, -1)
    timeline = ActiveTimeline.load(storage)
    names: set[str] = set()
    checkpoints: list[int] = []
    for inst in timeline.completed().instants:
        if inst.action not in WRITE_ACTIONS:
            continue
        extra = timeline.commit_metadata(inst).extra_metadata
        if CHECKPOINT_KEY not in extra:
            continue
        checkpoints.append(int(extra[CHECKPOINT_KEY]))
        names.update(json.loads(extra.get(FILES_KEY) or "[]"))
    if not checkpoints:
        return Ingested(frozenset(names), -1, -1)
    return Ingested(frozenset(names), _floor(storage, checkpoints), max(checkpoints))


def _floor(storage: Storage, checkpoints: list[int]) -> int:
    """The modification time rule is needed only once commits were archived (their lists are gone);
    until then every ingested file is listed by name."""
    from pyhudi.timeline.archived import archive_folder, archive_version

    folder = archive_folder(storage)
    if not storage.exists(folder):
        return -1
    archived = [e for e in storage.list_dir(folder) if archive_version(e.name) is not None]
    return checkpoints[0] if archived else -1


def mtime_ms(path: str) -> int:
    return arrow_source.mtime_ms(path)


def new_files(source_dir: str, fmt: str, done: Ingested) -> list[str]:
    """Landing files not yet ingested, oldest first (modification time, then name); local, or on an
    object store (s3://...: one LIST gives names and times)."""
    return [p for _, p in new_entries(source_dir, fmt, done)]


def new_entries(source_dir: str, fmt: str, done: Ingested) -> list[tuple[int, str]]:
    files = arrow_source.list_entries(source_dir, fmt)
    fresh = [(m, p) for m, p in files if posixpath.basename(p) not in done.names and m > done.floor_ms]
    return sorted(fresh)


class LocalStreamer:
    """One commit per round of new files, in this process (see the module doc)."""

    def __init__(self, source_dir: str, fmt: str, target: str, props: Mapping[str, str],
                 report: Callable[[str], None]) -> None:
        arrow_source.check_format(fmt)
        if str(props.get(ERROR_TABLE_KEY, "false")).strip().lower() == "true":
            raise InvalidConfigError(f"{ERROR_TABLE_KEY}=true: the error table is written by the Spark streamer "
                                     "only; give --master local[2] (pip install 'pyhudi[spark]', Java 17+) or "
                                     f"set {ERROR_TABLE_KEY}=false to fail rounds on bad input")
        self.source_dir, self.fmt, self.target = source_dir, fmt, target
        self.props, self.report = dict(props), report

    def run(self, continuous: bool, interval: int, stop: threading.Event) -> None:
        while not stop.is_set():
            started = time.monotonic()
            self.run_round()
            if not continuous:
                return
            stop.wait(max(0.0, interval - (time.monotonic() - started)) or 1.0)

    def run_round(self) -> str | None:
        """Ingest the files that landed since the last commit; returns the instant, None if none landed."""
        from pyhudi.writer.entry import write_table

        done = ingested(self.target)
        entries = new_entries(self.source_dir, self.fmt, done)
        paths = [p for _, p in entries]
        if not paths:
            return None
        table = arrow_source.read_files(paths, self.fmt)
        if table is None:
            return None
        table = arrow_source.type_null_columns(table, arrow_source.table_schema(self.target))
        names = [posixpath.basename(p) for p in paths]
        checkpoint = max([done.latest_ms, *(m for m, _ in entries)])
        options = {**self.props, FILES_KEY: json.dumps(names, ensure_ascii=False), CHECKPOINT_KEY: str(checkpoint)}
        started = time.monotonic()
        instant = write_table(table, self.target, options, streaming=True)
        if instant is not None:
            self.report(commit_summary(self.target, instant, None, time.monotonic() - started, self.props)
                        + f" ({len(names)} landing file{'s' if len(names) != 1 else ''})")
        return instant
