"""DIRECT markers: one empty file per data file, created before the data file.

A marker says "this instant may have created this file". Commit uses them to
delete files of failed or speculative task attempts that no write stat
names; rollback uses them to find every file a crashed write may have left.
"""

from __future__ import annotations

from pyhudi.faults import fault_point
from pyhudi.model.file_names import join_path
from pyhudi.storage import Storage

MARKER_ROOT = ".hoodie/.temp"
MARKER_SUFFIX = ".marker."


def marker_dir(instant: str) -> str:
    return f"{MARKER_ROOT}/{instant}"


def create_marker(storage: Storage, instant: str, partition: str, file_name: str, io_type: str) -> None:
    rel = f"{marker_dir(instant)}/{join_path(partition, file_name)}{MARKER_SUFFIX}{io_type}"
    storage.write_bytes(rel, b"")
    fault_point("write.after_marker")


def list_marked_files(storage: Storage, instant: str) -> list[str]:
    """Data file paths (relative to the base path) that markers of `instant` name."""
    root = marker_dir(instant)
    out: list[str] = []
    pending = [root]
    while pending:
        current = pending.pop()
        for info in storage.list_dir(current):
            if info.is_dir:
                pending.append(info.path)
                continue
            if MARKER_SUFFIX not in info.name:
                continue
            data_rel = info.path[len(root) + 1:]
            out.append(data_rel[: data_rel.rindex(MARKER_SUFFIX)])
    return sorted(out)


def delete_markers(storage: Storage, instant: str) -> None:
    storage.delete_dir(marker_dir(instant))


def undo_marked_files(storage: Storage, instant: str) -> None:
    """Delete every file an earlier, dead attempt of `instant` marked, and its markers: a re-executed
    table service starts from nothing."""
    for rel in list_marked_files(storage, instant):
        storage.delete(rel)
    delete_markers(storage, instant)


def delete_unreported_files(storage: Storage, instant: str, reported_paths: set[str | None]) -> None:
    """Hudi's finalizeWrite: files that have a marker but no write stat (failed or retried task
    attempts) must not survive the commit."""
    for rel in list_marked_files(storage, instant):
        if rel not in reported_paths:
            storage.delete(rel)
