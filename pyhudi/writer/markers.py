"""DIRECT markers: one empty file per data file, created before the data file (pyhudi writes these;
it reads Hudi's TIMELINE_SERVER_BASED `MARKERS<n>` files too, see `list_marked_files`).

A marker says "this instant may have created this file". Commit uses them to
delete files of failed or speculative task attempts that no write stat
names; rollback uses them to find every file a crashed write may have left.

"May have" matters for log files: their name carries the slice's base
instant, not the writer's, and two writers of one slice can pick the same
name (the loser of the exclusive create rolls over, but a crash can leave its
marker for the winner's file). So before deleting a marked file,
`instant_wrote` checks that the instant really wrote it: a base file's name
carries its instant; a log file's blocks carry theirs in the INSTANT_TIME
header.
"""

from __future__ import annotations

import enum
import logging

from pyhudi.faults import fault_point
from pyhudi.io.log_format import LogBlock, iter_blocks
from pyhudi.model.file_names import join_path, parse_base_file, parse_log_file
from pyhudi.storage import Storage

log = logging.getLogger(__name__)
MARKER_ROOT = ".hoodie/.temp"
MARKER_SUFFIX = ".marker."
IO_TYPES = ("CREATE", "MERGE", "APPEND")
MARKERS_FILE_PREFIX = "MARKERS"  # Hudi's timeline-server-based markers: MARKERS0, MARKERS1, ...
MARKER_TYPE_FILE = "MARKERS.type"


def marker_dir(instant: str) -> str:
    return f"{MARKER_ROOT}/{instant}"


def marker_path(instant: str, data_rel: str, io_type: str) -> str:
    """The marker of data file `data_rel` (relative to the base path) written by `instant`."""
    return f"{marker_dir(instant)}/{data_rel}{MARKER_SUFFIX}{io_type}"


def create_marker(storage: Storage, instant: str, partition: str, file_name: str, io_type: str) -> None:
    storage.write_bytes(marker_path(instant, join_path(partition, file_name), io_type), b"")
    fault_point("write.after_marker")


def remove_marker(storage: Storage, instant: str, partition: str, file_name: str, io_type: str) -> None:
    """Withdraw a marker whose file this instant did not get to create (another writer had the name)."""
    storage.delete(marker_path(instant, join_path(partition, file_name), io_type))


class LogOwner(enum.Enum):
    """Who wrote a log file's blocks, as seen from one instant."""

    SELF = "self"  # every complete block is the instant's
    OTHERS = "others"  # no block of the instant
    SHARED = "shared"  # blocks of the instant and of others (a writer that appends, such as Hudi on HDFS)
    NO_BLOCK = "no_block"  # no complete block yet: empty, torn, or being written right now
    MISSING = "missing"


def log_file_owner(storage: Storage, rel: str, instant: str) -> LogOwner:
    """Classify log file `rel` by the INSTANT_TIME headers of its complete blocks (contents unread)."""
    try:
        with storage.open_input_file(rel) as f:
            writers = {b.instant_time for b in iter_blocks(f, load_content=False) if isinstance(b, LogBlock)}
    except FileNotFoundError:
        return LogOwner.MISSING
    if not writers:
        return LogOwner.NO_BLOCK
    if writers == {instant}:
        return LogOwner.SELF
    return LogOwner.SHARED if instant in writers else LogOwner.OTHERS


def marked_by_others(storage: Storage, rel: str, instant: str) -> list[str]:
    """Instants other than `instant` whose markers name data file `rel`."""
    others = [i.name for i in storage.list_dir(MARKER_ROOT) if i.is_dir and i.name != instant]
    return [o for o in others if any(storage.exists(marker_path(o, rel, t)) for t in IO_TYPES)]


def instant_wrote(storage: Storage, instant: str, rel: str) -> bool:
    """Whether `instant`, whose marker names data file `rel`, wrote it (and so may delete it).

    A log file without a complete block is the instant's unless another instant's marker names it
    too: every writer marks a file before creating it and keeps the marker until it commits or is
    rolled back, so a file being written by a live writer always has that writer's marker, and once
    that writer is done the file has its blocks (hence the second look)."""
    name = rel.rsplit("/", 1)[-1]
    base = parse_base_file(name)
    if base is not None:
        return base.instant == instant
    if parse_log_file(name) is None:
        return True  # not a data file kind that several instants can name alike
    owner = log_file_owner(storage, rel, instant)
    if owner is LogOwner.NO_BLOCK:
        claimed = marked_by_others(storage, rel, instant)
        if claimed:
            log.warning("keeping %s: no complete block yet and also marked by %s", rel, claimed)
            return False
        owner = log_file_owner(storage, rel, instant)
        return owner in (LogOwner.NO_BLOCK, LogOwner.SELF)
    if owner in (LogOwner.OTHERS, LogOwner.SHARED):
        log.info("keeping %s: marked by %s but written (%s) by other instants", rel, instant, owner.value)
    return owner is LogOwner.SELF


def list_marked_files(storage: Storage, instant: str) -> list[str]:
    """Data file paths (relative to the base path) that markers of `instant` name: DIRECT markers (one
    file each, in partition directories) and the TIMELINE_SERVER_BASED ones Hudi's Spark writers make
    by default (`MARKERS<n>` files in the instant's marker directory, one marker name per line)."""
    root = marker_dir(instant)
    out: list[str] = []
    pending = [root]
    while pending:
        current = pending.pop()
        for info in storage.list_dir(current):
            if info.is_dir:
                pending.append(info.path)
            elif current == root and info.name.startswith(MARKERS_FILE_PREFIX) and info.name != MARKER_TYPE_FILE:
                out.extend(_marked(line) for line in _lines(storage, info.path) if MARKER_SUFFIX in line)
            elif MARKER_SUFFIX in info.name:
                out.append(_marked(info.path[len(root) + 1:]))
    return sorted(set(out))


def _marked(marker: str) -> str:
    return marker[: marker.rindex(MARKER_SUFFIX)]


def _lines(storage: Storage, rel: str) -> list[str]:
    try:
        text = storage.read_bytes(rel).decode("utf-8")
    except FileNotFoundError:
        return []  # deleted by its writer's commit or rollback since the listing
    return [line.strip() for line in text.splitlines() if line.strip()]


def delete_markers(storage: Storage, instant: str) -> None:
    storage.delete_dir(marker_dir(instant))


def undo_marked_files(storage: Storage, instant: str) -> None:
    """Delete every file an earlier, dead attempt of `instant` marked (and wrote), and its markers: a
    re-executed table service starts from nothing."""
    for rel in list_marked_files(storage, instant):
        if instant_wrote(storage, instant, rel):
            storage.delete(rel)
    delete_markers(storage, instant)


def unreported_files(storage: Storage, instant: str, reported_paths: set[str | None]) -> list[str]:
    """Files `instant` marked and wrote that no write stat names (failed or retried task attempts)."""
    return [rel for rel in list_marked_files(storage, instant)
            if rel not in reported_paths and storage.exists(rel) and instant_wrote(storage, instant, rel)]


def delete_unreported_files(storage: Storage, instant: str, reported_paths: set[str | None]) -> None:
    """Hudi's finalizeWrite: files that have a marker but no write stat (failed or retried task
    attempts) must not survive the commit."""
    for rel in unreported_files(storage, instant, reported_paths):
        storage.delete(rel)
