"""Markers: a marker says "this instant may have created this file", and exists before the file does.
Commit uses them to delete files of failed or speculative task attempts that no write stat names;
rollback uses them to find every file a crashed write may have left.

Both of Hudi's layouts (`hoodie.write.markers.type`), read and written:
* DIRECT: one empty file per data file, `<instant>/<partition>/<file>.marker.<IO type>`;
* TIMELINE_SERVER_BASED (Hudi's default): `MARKERS.type` and `MARKERS<n>` files in the instant's
  marker directory, holding marker names (`<partition>/<file>.marker.<IO type>`), one per line. Hudi's
  timeline server batches its executors' requests into these files; pyhudi has no timeline server, so
  each task writes its own: one file naming every file the task knows it will create, before it creates
  any (`premark`), and one more file for each file it did not know of. A Hudi rollback reads them all
  (it reads every `MARKERS*` file but the type file). Every marker write of an instant uses the layout
  the type file names; DIRECT markers in a directory that has one would be ignored by Hudi.

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
import random
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

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
BATCHED = "TIMELINE_SERVER_BASED"
DEFAULT_MARKER_TYPE = BATCHED  # hoodie.write.markers.type, as in Hudi
# Hudi's timeline server numbers its files from 0 up to its thread count; files pyhudi's tasks write take
# random numbers above those (Hudi parses the number as a Java int when its server re-opens a directory).
_FIRST_TASK_INDEX, _LAST_INDEX = 1 << 20, (1 << 31) - 1


@dataclass
class _Written:
    """The marker files this process wrote for one instant, and the data files they name."""

    files: set[str] = field(default_factory=set)
    marked: set[str] = field(default_factory=set)
    names: dict[str, list[str]] = field(default_factory=dict)  # marker file -> the data files it names


# Per (table base URI, instant): what this process's marker writes left. When every task of an instant ran
# in this process (the in-process engine), this is everything its marker directory holds, so the commit's
# reconcile and marker cleanup need not LIST and GET it back (`in_process` below); a Spark write's tasks
# write theirs on the executors, and a rollback or restore lists what any process left.
_HERE: dict[tuple[str, str], _Written] = {}
_HERE_LOCK = threading.Lock()


def _note(storage: Storage, instant: str, file: str, marked: Iterable[str] = (), withdrawn: bool = False) -> None:
    """Note a marker file this process writes (before the write: a write whose answer is lost may have
    created it all the same), or withdraw one it deleted (the data files only it named are unmarked)."""
    with _HERE_LOCK:
        entry = _HERE.setdefault((storage.base_uri, instant), _Written())
        if withdrawn:
            entry.files.discard(file)
            gone = set(entry.names.pop(file, ()))
            entry.marked -= gone - {n for names in entry.names.values() for n in names}
        else:
            entry.files.add(file)
            entry.names[file] = [*entry.names.get(file, ()), *marked]
            entry.marked.update(marked)


def _written_here(storage: Storage, instant: str) -> _Written | None:
    with _HERE_LOCK:
        entry = _HERE.get((storage.base_uri, instant))
        return _Written(set(entry.files), set(entry.marked), dict(entry.names)) if entry is not None else None


@dataclass(frozen=True)
class Marking:
    """How a task marks the files it creates: in Hudi's batched layout or DIRECT, and which markers it
    already wrote ahead of its files (`premark`)."""

    batched: bool = True
    premarked: frozenset[str] = frozenset()
    typed: bool = False  # the instant's MARKERS.type file is known to exist (`begin_markers`)

    @classmethod
    def of(cls, marker_type: str) -> Marking:
        return cls(batched=marker_type == BATCHED)


def begin_markers(storage: Storage, instant: str, marker_type: str, files: int | None = None,
                  tasks: int | None = None) -> Marking:
    """The marking of an instant's tasks, its `MARKERS.type` file written first (the driver, once: Hudi
    reads `MARKERS<n>` files only when the type file names their layout; tasks of a marking that is not
    `typed` write it themselves).

    `files` and `tasks`, when the caller's plan knows them: the data files the instant will create and
    the tasks that create them. Hudi without its timeline server (pyhudi has none) always marks DIRECT;
    pyhudi emulates the server's batched layout only where it saves requests, which it does when tasks
    name several files each in one `MARKERS<n>` file: batched costs the type file plus a file per task,
    DIRECT a file per data file. So an instant of at most `tasks + 1` files marks DIRECT (one write of a
    single file: one request instead of two). Either layout is read back by pyhudi's and Hudi's rollback
    (`MarkerBasedRollbackUtils` takes a directory without a type file for DIRECT)."""
    marking = Marking.of(marker_type)
    if not marking.batched:
        return marking
    if files is not None and files <= (tasks or 1) + 1:
        return Marking(batched=False)
    _write_type(storage, instant)
    return replace(marking, typed=True)


def _write_type(storage: Storage, instant: str) -> None:
    rel = f"{marker_dir(instant)}/{MARKER_TYPE_FILE}"
    _note(storage, instant, rel)  # noted first: a write whose answer is lost may still have created it
    storage.write_new(rel, BATCHED.encode())  # False if it exists


def marker_dir(instant: str) -> str:
    return f"{MARKER_ROOT}/{instant}"


def marker_path(instant: str, data_rel: str, io_type: str) -> str:
    """The marker of data file `data_rel` (relative to the base path) written by `instant`."""
    return f"{marker_dir(instant)}/{data_rel}{MARKER_SUFFIX}{io_type}"


def marker_name(partition: str, file_name: str, io_type: str) -> str:
    """A marker's name relative to its instant's marker directory (a line of a `MARKERS<n>` file)."""
    return f"{join_path(partition, file_name)}{MARKER_SUFFIX}{io_type}"


def premark(storage: Storage, instant: str, files: Iterable[tuple[str, str, str]], marking: Marking) -> Marking:
    """Write the markers of `files` ((partition, file name, IO type) each) in one go, before any of them is
    created; the returned marking knows them, so `create_marker` does not write them again. DIRECT markers
    are one file each anyway: they are written as the files are created."""
    if not marking.batched:
        return marking
    names = [marker_name(*f) for f in files]
    if not names:
        return marking
    _write_batch(storage, instant, names, marking.typed)
    return replace(marking, premarked=marking.premarked | frozenset(names), typed=True)


def create_marker(storage: Storage, instant: str, partition: str, file_name: str, io_type: str,
                  marking: Marking) -> str | None:
    """Mark a file before creating it. Returns the storage file that holds only this marker (to delete to
    withdraw it), or None when the marker shares its file with others (written ahead by `premark`)."""
    name = marker_name(partition, file_name, io_type)
    written: str | None = None
    if not marking.batched:
        written = f"{marker_dir(instant)}/{name}"
        _note(storage, instant, written, [_marked(name)])
        storage.write_bytes(written, b"")
    elif name not in marking.premarked:
        written = _write_batch(storage, instant, [name], marking.typed)
    fault_point("write.after_marker")
    return written


def remove_marker(storage: Storage, written: str | None) -> None:
    """Withdraw a marker whose file this instant did not get to create (another writer had the name).
    A marker written ahead with others stays: `instant_wrote` reads the file's blocks before anything
    deletes it for this instant, as it must for a marker left by a crash between marker and file."""
    if written is not None:
        storage.delete(written)
        _note(storage, written[len(MARKER_ROOT) + 1:].split("/", 1)[0], written, withdrawn=True)


def _write_batch(storage: Storage, instant: str, names: list[str], typed: bool) -> str:
    """A new `MARKERS<n>` file holding `names` (after the type file, so Hudi reads it); its path. Created
    exclusively: tasks of other processes write their own files in the same directory."""
    root = marker_dir(instant)
    if not typed:
        _write_type(storage, instant)
    data = "".join(f"{n}\n" for n in names).encode("utf-8")
    marked = [_marked(n) for n in names]
    while True:
        rel = f"{root}/{MARKERS_FILE_PREFIX}{random.randint(_FIRST_TASK_INDEX, _LAST_INDEX)}"
        _note(storage, instant, rel, marked)  # before the write: a failed write may have created it all the same
        if storage.write_new(rel, data):
            return rel
        _note(storage, instant, rel, withdrawn=True)  # another process's file: not ours to name or delete


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
    """Instants other than `instant` whose markers (of either layout) name data file `rel`."""
    others = [i.name for i in storage.list_dir(MARKER_ROOT) if i.is_dir and i.name != instant]
    return [o for o in others if any(storage.exists(marker_path(o, rel, t)) for t in IO_TYPES)
            or rel in _batched_marked(storage, o)]


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


def list_marked_files(storage: Storage, instant: str, in_process: bool = False) -> list[str]:
    """Data file paths (relative to the base path) that markers of `instant` name, in either layout:
    DIRECT markers (one file each, in partition directories) and batched ones (`MARKERS<n>` files in
    the instant's marker directory, one marker name per line), whoever wrote them. `in_process`: every
    task of the instant ran in this process (the in-process engine), so what this process's marker
    writes noted is the whole directory, known without listing and reading it."""
    here = _written_here(storage, instant) if in_process else None
    if here is not None:
        return sorted(here.marked)
    root = marker_dir(instant)
    out: list[str] = []
    pending = [root]
    while pending:
        current = pending.pop()
        for info in storage.list_dir(current):
            if info.is_dir:
                pending.append(info.path)
            elif current == root and _is_batch(info.name):
                out.extend(_batch_marked(storage, info.path))
            elif MARKER_SUFFIX in info.name:
                out.append(_marked(info.path[len(root) + 1:]))
    return sorted(set(out))


def _batched_marked(storage: Storage, instant: str) -> set[str]:
    """The data files the instant's `MARKERS<n>` files name (its DIRECT markers left out)."""
    return {rel for info in storage.list_dir(marker_dir(instant)) if not info.is_dir and _is_batch(info.name)
            for rel in _batch_marked(storage, info.path)}


def _batch_marked(storage: Storage, rel: str) -> list[str]:
    """The data files one `MARKERS<n>` file names (a torn last line without its suffix is no marker)."""
    return [_marked(line) for line in _lines(storage, rel) if MARKER_SUFFIX in line]


def _is_batch(name: str) -> bool:
    return name.startswith(MARKERS_FILE_PREFIX) and name != MARKER_TYPE_FILE


def _marked(marker: str) -> str:
    """The data file a marker names; Hudi's server writes `/<file>` for a non-partitioned table."""
    return marker[: marker.rindex(MARKER_SUFFIX)].lstrip("/")


def _lines(storage: Storage, rel: str) -> list[str]:
    try:
        text = storage.read_bytes(rel).decode("utf-8")
    except FileNotFoundError:
        return []  # deleted by its writer's commit or rollback since the listing
    return [line.strip() for line in text.splitlines() if line.strip()]


def delete_markers(storage: Storage, instant: str, in_process: bool = False, also: Iterable[str] = ()) -> None:
    """Delete the instant's marker directory; `in_process` (see `list_marked_files`): on an object store,
    the marker files this process wrote, without listing them first, and the files `also` names (a
    committed write's heartbeat) in the same batch delete."""
    here = _written_here(storage, instant) if in_process and storage.is_object_store else None
    if here is not None:
        storage.delete_files([*sorted(here.files), *also])
    else:
        storage.delete_dir(marker_dir(instant))
        for rel in also:
            storage.delete(rel)
    with _HERE_LOCK:
        _HERE.pop((storage.base_uri, instant), None)


def undo_marked_files(storage: Storage, instant: str) -> None:
    """Delete every file an earlier, dead attempt of `instant` marked (and wrote), and its markers: a
    re-executed table service starts from nothing."""
    for rel in list_marked_files(storage, instant):
        if instant_wrote(storage, instant, rel):
            storage.delete(rel)
    delete_markers(storage, instant)


def unreported_files(storage: Storage, instant: str, reported_paths: set[str | None],
                     in_process: bool = False) -> list[str]:
    """Files `instant` marked and wrote that no write stat names (failed or retried task attempts);
    `in_process` as for `list_marked_files`."""
    return [rel for rel in list_marked_files(storage, instant, in_process)
            if rel not in reported_paths and storage.exists(rel) and instant_wrote(storage, instant, rel)]


def delete_unreported_files(storage: Storage, instant: str, reported_paths: set[str | None]) -> None:
    """Hudi's finalizeWrite: files that have a marker but no write stat (failed or retried task
    attempts) must not survive the commit."""
    for rel in unreported_files(storage, instant, reported_paths):
        storage.delete(rel)
