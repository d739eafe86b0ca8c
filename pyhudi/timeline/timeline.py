"""The active timeline: instants in `.hoodie/`, their details, and atomic transitions.

`Timeline` is an immutable, sorted view with Hudi's usual filters; every
service asks it questions ("last completed commit", "pending compactions").
`ActiveTimeline` adds loading and the only code allowed to change the
timeline. Each transition creates one new file, atomically and exclusively
(`Storage.create_exclusive`: link(2) locally, a conditional PUT on object
stores), so a concurrent reader sees the old state or the new one, and of two
processes completing one instant only one succeeds: the other cannot
overwrite its commit. A transition whose file is already there with the same
bytes is the caller's own earlier attempt (a retried PUT whose answer was
lost after it took effect) and counts as done.
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from pyhudi.errors import (
    InstantAlreadyCompletedError,
    InstantNotFoundError,
    InstantTimeTakenError,
    TimelineError,
)
from pyhudi.faults import fault_point
from pyhudi.model.commit_metadata import (
    CommitMetadata,
    replaced_file_ids,
    stamped_totals,
    top_level_value,
)
from pyhudi.model.instant_time import ms_to_instant, new_instant_time, zone
from pyhudi.model.metadata_table import drop_metadata_table
from pyhudi.model.replaced_ids import ReplacedIds
from pyhudi.storage import FileInfo, Storage
from pyhudi.timeline.commit_totals import NotScannable, json_totals, scan_totals
from pyhudi.timeline.instant import (
    WRITE_ACTIONS,
    Action,
    Instant,
    State,
    instant_file_names,
    parse_instant_file,
)
from pyhudi.timeline.layout import LAYOUT_1, META_DIR, TimelineLayout, layout_of

__all__ = ["META_DIR", "ActiveTimeline", "Timeline", "instant_files"]


# A completed instant's file is kept by the timeline that read it if at most this big (a commit that names
# every partition of a big table is not), and at most this many per timeline.
_CACHED_DETAILS_MAX_BYTES = 1 << 20
_CACHED_DETAILS_MAX_FILES = 256
# A completed commit larger than this is first read from its tail for top-level values (`top_level`).
_TAIL_READ_ABOVE = 256 << 10
_AVRO_MAGIC = b"Obj\x01"


class _SharedDetails:
    """Completed instant files read from an object store, kept across operations of this process by
    (table, path, ETag): a streaming writer's record-size walk and schema lookup read the same commits on
    every write. A key is one version of one object (every store gives each write of a key a new ETag), and
    a timeline asks by the ETag its own listing showed, so it gets exactly the bytes that listing saw; an
    entry is stored under the ETag of the GET that returned it. Bounded (least recently used goes first)."""

    MAX_BYTES = 32 << 20

    def __init__(self) -> None:
        self._entries: OrderedDict[tuple[str, str, str], bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str, str]) -> bytes | None:
        with self._lock:
            data = self._entries.get(key)
            if data is not None:
                self._entries.move_to_end(key)
            return data

    def put(self, key: tuple[str, str, str], data: bytes) -> None:
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = data
            self._bytes += len(data)
            while self._bytes > self.MAX_BYTES:
                _, dropped = self._entries.popitem(last=False)
                self._bytes -= len(dropped)


_SHARED_DETAILS = _SharedDetails()


class Timeline:
    """Sorted instants, one per timestamp, each in its latest state."""

    def __init__(self, instants: Iterable[Instant], compaction_commits: frozenset[str] = frozenset()) -> None:
        self.instants: tuple[Instant, ...] = tuple(sorted(instants, key=lambda i: i.timestamp))
        self._timestamps = [i.timestamp for i in self.instants]
        # Completed commits that were compactions (their `.compaction.requested` is still there).
        self.compaction_commits = compaction_commits

    def __iter__(self) -> Iterator[Instant]:
        return iter(self.instants)

    def __len__(self) -> int:
        return len(self.instants)

    def __bool__(self) -> bool:
        return bool(self.instants)

    def __repr__(self) -> str:
        return f"Timeline({', '.join(str(i) for i in self.instants)})"

    def _filter(self, pred: Callable[[Instant], bool]) -> Timeline:
        return Timeline([i for i in self.instants if pred(i)], self.compaction_commits)

    # -- filters ------------------------------------------------------------------------
    def completed(self) -> Timeline:
        return self._filter(lambda i: i.is_completed)

    def pending(self) -> Timeline:
        return self._filter(lambda i: i.is_pending)

    def actions(self, *actions: Action) -> Timeline:
        wanted = set(actions)
        return self._filter(lambda i: i.action in wanted)

    def commits(self) -> Timeline:
        """Hudi's commits timeline: commit, deltacommit, replacecommit (any state)."""
        return self._filter(lambda i: i.action in WRITE_ACTIONS)

    def write_timeline(self) -> Timeline:
        """Commits plus pending compaction/log compaction (and layout 2's pending clustering): everything
        that writes data files."""
        return self._filter(lambda i: i.action in WRITE_ACTIONS
                            or i.action in (Action.COMPACTION, Action.LOG_COMPACTION, Action.CLUSTERING))

    def before_or_on(self, ts: str) -> Timeline:
        return self._filter(lambda i: i.timestamp <= ts)

    def before(self, ts: str) -> Timeline:
        return self._filter(lambda i: i.timestamp < ts)

    def after(self, ts: str) -> Timeline:
        return self._filter(lambda i: i.timestamp > ts)

    def between(self, start_exclusive: str, end_inclusive: str) -> Timeline:
        return self._filter(lambda i: start_exclusive < i.timestamp <= end_inclusive)

    # -- lookups ------------------------------------------------------------------------
    def last(self) -> Instant | None:
        return self.instants[-1] if self.instants else None

    def first(self) -> Instant | None:
        return self.instants[0] if self.instants else None

    def find(self, ts: str) -> Instant | None:
        idx = bisect.bisect_left(self._timestamps, ts)
        if idx < len(self._timestamps) and self._timestamps[idx] == ts:
            return self.instants[idx]
        return None

    def contains(self, ts: str) -> bool:
        return self.find(ts) is not None

    def timestamps(self) -> list[str]:
        return list(self._timestamps)

    def is_compaction_commit(self, instant: Instant) -> bool:
        return instant.action is Action.COMMIT and instant.timestamp in self.compaction_commits


class ActiveTimeline(Timeline):
    """The timeline as stored in `.hoodie/`, with details and transitions."""

    def __init__(self, storage: Storage, instants: Iterable[Instant],
                 compaction_commits: frozenset[str], files: dict[str, set[str]],
                 sizes: dict[str, int] | None = None, layout: TimelineLayout = LAYOUT_1,
                 completion_times: dict[str, str] | None = None) -> None:
        super().__init__(instants, compaction_commits)
        self.storage = storage
        self.layout = layout
        # Layout 2: each completed instant's completion time (from its name, or a legacy name's mtime).
        self._completion = dict(completion_times or {})
        self._files = files
        self._sizes = dict(sizes or {})  # file name -> size, from the listing that found it
        self._etags: dict[str, str] = {}  # file name -> ETag, from an object store's listing
        self._completed_details: dict[str, bytes] = {}  # see `details`
        self._replaced: dict[str, ReplacedIds] = {}  # see `replaced_ids`
        self._tails: dict[str, bytes] = {}  # see `top_level`
        # Sub-folders the listing showed (layout 1 lists `.hoodie` itself: `metadata`, `.bucket_index`, ...);
        # None when the listing could not show them (layout 2 lists `.hoodie/timeline`).
        self.listed_dirs: frozenset[str] | None = None

    @classmethod
    def load(cls, storage: Storage, reuse_listing: bool = False) -> ActiveTimeline:
        """The timeline as listed now. `reuse_listing`: a write's first load, right after it loaded the
        table's properties, takes the `.hoodie` listing that load took (layout 1), if any, instead of
        listing again: it is as fresh as the start of the write, which is what that load stands for (what
        completes later is checked under the lock at commit, on a listing of its own)."""
        layout, listing = _layout_and_listing(storage, reuse_listing)
        by_ts: dict[str, list[Instant]] = {}
        files: dict[str, set[str]] = {}
        sizes: dict[str, int] = {}
        completion: dict[str, str] = {}
        etags: dict[str, str] = {}
        tz = zone(True)  # Java formats a legacy file's mtime in the JVM's zone, whatever the table's
        for info in listing:
            inst = None if info.is_dir else parse_instant_file(info.name)
            if inst is None:
                continue
            by_ts.setdefault(inst.timestamp, []).append(inst)
            files.setdefault(inst.timestamp, set()).add(info.name)
            sizes[info.name] = info.size
            if info.etag:
                etags[info.name] = info.etag
            if layout.is_v2 and inst.is_completed and inst.action is not Action.SAVEPOINT:
                # A legacy completed name (no `_`) completes at its file's modification time, as Hudi
                # 1.x's InstantGeneratorV2 takes it.
                completion[inst.timestamp] = inst.completion or ms_to_instant(info.mtime_ns // 1_000_000, tz)
        latest: list[Instant] = []
        compactions: set[str] = set()
        for ts, found in by_ts.items():
            latest.append(_latest_state(found))
            if any(i.action is Action.COMPACTION for i in found):
                compactions.add(ts)
        loaded = cls(storage, latest, frozenset(compactions), files, sizes, layout, completion)
        loaded._etags = etags
        if layout.timeline_dir == META_DIR:
            loaded.listed_dirs = frozenset(info.name for info in listing if info.is_dir)
        return loaded

    def reload(self) -> ActiveTimeline:
        return ActiveTimeline.load(self.storage)

    # -- layout 2 ---------------------------------------------------------------------------
    def completion_time(self, ts: str) -> str | None:
        """When the completed instant `ts` completed (layout 2); None for a pending or unknown one, and
        on layout 1, where only file modification times tell (reader/incremental.completion_times)."""
        return self._completion.get(ts)

    def completion_times(self) -> dict[str, str]:
        return dict(self._completion)

    def _path(self, instant: Instant) -> str:
        """The instant's file: a completed layout-2 instant is found by the name it was listed under
        (its completion time is in the name, which an `Instant(ts, action)` a caller builds lacks)."""
        name = instant.file_name
        if self.layout.is_v2 and instant.is_completed and instant.completion is None:
            listed = self._files.get(instant.timestamp, set())
            prefix, suffix = f"{instant.timestamp}_", f".{instant.action.value}"
            name = next((n for n in listed if n.startswith(prefix) and n.endswith(suffix)), name)
        return f"{self.layout.timeline_dir}/{name}"

    def as_timeline(self) -> Timeline:
        return Timeline(self.instants, self.compaction_commits)

    # -- details ------------------------------------------------------------------------
    def details(self, instant: Instant) -> bytes:
        """The instant file's bytes. A completed instant's file never changes, and one operation asks for
        the same commits several times (record-size walk, schema, clean window, conflict check), so small
        ones are kept for this timeline's life: one read each (a GET on an object store)."""
        path = self._path(instant)
        cached = self._completed_details.get(path)
        if cached is not None:
            return cached
        shared = self._shared_key(instant, path, self._etags.get(path.rsplit("/", 1)[-1]))
        if shared is not None:
            cached = _SHARED_DETAILS.get(shared)
            if cached is not None:
                self._keep(instant, path, cached)
                return cached
        try:
            if shared is not None:  # the GET's own ETag names the version it returned
                data, etag = self.storage.read_with_etag(path)
                shared = self._shared_key(instant, path, etag)
            else:
                data = self.storage.read_bytes(path)
        except FileNotFoundError as exc:
            raise InstantNotFoundError(
                f"instant {instant} has no file {path} in {self.storage.base_uri}; "
                "it was archived, rolled back or never existed"
            ) from exc
        if data.startswith(_AVRO_MAGIC) and instant.action in WRITE_ACTIONS and instant.state is not State.REQUESTED:
            # Hudi 1.x writes commit metadata as Avro; everything downstream reads Hudi's JSON form.
            from pyhudi.model.commit_avro import commit_json_bytes

            data = commit_json_bytes(data, path)
        self._keep(instant, path, data)
        if shared is not None and len(data) <= _CACHED_DETAILS_MAX_BYTES:
            _SHARED_DETAILS.put(shared, data)
        return data

    def _keep(self, instant: Instant, path: str, data: bytes) -> None:
        if instant.is_completed and len(data) <= _CACHED_DETAILS_MAX_BYTES \
                and len(self._completed_details) < _CACHED_DETAILS_MAX_FILES:
            self._completed_details[path] = data

    def _shared_key(self, instant: Instant, path: str, etag: str | None) -> tuple[str, str, str] | None:
        """The process-wide cache's key for a completed instant's file on an object store (`_SharedDetails`);
        None when it does not apply (a local table, a pending instant, no ETag)."""
        if not etag or not instant.is_completed or not self.storage.is_object_store:
            return None
        return (self.storage.base_uri, path, etag)

    def replaced_ids(self, instant: Instant) -> ReplacedIds:
        """A completed replacecommit's replaced file ids, found once per timeline (views, the clean plan
        and conflict checks all ask), from the file's tail when it is large (see `top_level`)."""
        name = instant.file_name
        if name not in self._replaced:
            tail = self._tail(instant, share=8)  # the ids are about a tenth of a clustering's commit
            found = ReplacedIds.locate(tail, tail=True) if tail is not None else None
            self._replaced[name] = found or replaced_file_ids(self.details(instant), name)
        return self._replaced[name]

    def top_level(self, instant: Instant, key: str, kind: type) -> Any | None:
        """A top-level value of a completed commit's JSON (`model.commit_metadata.top_level_value`). A
        large file is read from its tail first: the keys other than partitionToWriteStats come last, and
        the write stats before them grow with the partitions the commit wrote, so a view of one partition
        after a whole-table clustering reads a few hundred KB instead of megabytes."""
        searched = 0
        for share in (0, 8):  # a few KB from the end; in a replacecommit, before its replaced ids
            tail = self._tail(instant, share)
            if tail is None:
                break
            if len(tail) > searched:  # a small file's wider tail is the same bytes: searched already
                found = top_level_value(tail, key, kind, tail=True)
                if found is not None:
                    return found
                searched = len(tail)
        return top_level_value(self.details(instant), key, kind)

    def _tail(self, instant: Instant, share: int = 0) -> bytes | None:
        """The last bytes of a large completed instant file: `_TAIL_READ_ABOVE` of them, or with `share`
        at least 1/share of the file (None when it is small or already read whole). extraMetadata and
        operationType are a few KB before the end whatever the commit's size; a 600 MB bulk load of 640k
        partitions costs its record-size reader 256 KB, not the file."""
        name = instant.file_name
        size = self._sizes.get(name, 0)
        if self.layout.is_v2 or self._path(instant) in self._completed_details or size <= _TAIL_READ_ABOVE:
            return None  # layout 2's Avro commits cannot be searched from their tail
        wanted = max(_TAIL_READ_ABOVE, size // share if share else 0)
        if len(self._tails.get(name, b"")) < wanted:
            self._tails[name] = self.storage.read_range(f"{META_DIR}/{name}", size - wanted, size)
        return self._tails[name]

    def commit_metadata(self, instant: Instant) -> CommitMetadata:
        return CommitMetadata.from_bytes(self.details(instant), what=f"{instant.file_name}")

    def write_totals(self, instant: Instant, base_files_only: bool = False) -> tuple[int, int]:
        """(totalWriteBytes, numWrites) summed over a commit's write stats, without building them: the
        record-size estimate walks commits whose metadata grows with the partitions they wrote (a
        bulk load of 10,000 partitions is megabytes of JSON), and needs only these two sums.
        `base_files_only` counts the stats of parquet files (a deltacommit's base files)."""
        if self._tail(instant) is not None:  # a wide commit; pyhudi's carry their totals near the end
            stamped = stamped_totals(self.top_level(instant, "extraMetadata", dict), instant.timestamp, base_files_only)
            if stamped is not None:  # a wide commit pyhudi wrote: its tail has them
                return stamped
        data = self.details(instant)
        if not data.strip():
            return 0, 0
        try:  # exact, and without parsing the whole file (see commit_totals.py)
            return scan_totals(data, base_files_only)
        except NotScannable:
            return json_totals(data, base_files_only, instant.file_name)

    def requested_details(self, instant: Instant) -> bytes:
        action = instant.action
        if action is Action.REPLACE_COMMIT and self.layout.is_v2:
            action = self._pending_action(instant)  # a clustering's plan is in `<ts>.clustering.requested`
        return self.details(Instant(instant.timestamp, action, State.REQUESTED))

    def instant_files(self, ts: str) -> set[str]:
        return set(self._files.get(ts, set()))

    def with_completed(self, done: Instant) -> ActiveTimeline:
        """This timeline once `done` (an instant it lists pending) completed through its `complete`: what a
        writer's post-commit cleaner and archival check start from instead of listing the folder again. As
        fresh as this listing (taken under the commit's lock); what other writers did since is the next run's."""
        files = {ts: set(names) for ts, names in self._files.items()}
        files.setdefault(done.timestamp, set()).add(done.file_name)
        found = self.find(done.timestamp)
        compactions = self.compaction_commits | (
            {done.timestamp} if found is not None and found.action is Action.COMPACTION else set())
        out = ActiveTimeline(self.storage, [done if i.timestamp == done.timestamp else i for i in self.instants],
                             frozenset(compactions), files, self._sizes, self.layout, self._completion)
        out._etags = dict(self._etags)
        out.listed_dirs = self.listed_dirs
        return out

    def savepoints(self) -> list[Instant]:
        """Completed savepoints, oldest first. A savepoint shares its timestamp with the commit it
        protects, so it never shows as that timestamp's instant and is looked up by file name."""
        return sorted(Instant(ts, Action.SAVEPOINT) for ts, names in self._files.items()
                      if any(_is_completed_savepoint(ts, n) for n in names))

    # -- transitions ----------------------------------------------------------------------
    def _rel(self, name: str) -> str:
        return f"{self.layout.timeline_dir}/{name}"

    @property
    def clustering_action(self) -> Action:
        """The action a pending clustering is written under: `replacecommit` on layout 1, Hudi 1.x's
        `clustering` on layout 2 (both complete as a replacecommit)."""
        return Action.CLUSTERING if self.layout.is_v2 else Action.REPLACE_COMMIT

    def create_requested(self, instant: Instant, content: bytes = b"", check_time: bool = True) -> Instant:
        """Start an instant; fails if any file of this timestamp already exists. `check_time=False`: the
        caller goes straight on to `transition_to_inflight(..., check_time=True)`, whose one listing does
        the look below too."""
        if instant.state is not State.REQUESTED:
            raise TimelineError(f"can only create a requested instant, got {instant}")
        # The names this timeline listed when it was loaded: a time taken since is caught by the listing
        # after the create below, so the check before it needs no listing of its own (one LIST per
        # instant started, which on an object store is a request).
        if instant.timestamp in self._files:
            raise TimelineError(f"instant time {instant.timestamp} is already used on the timeline")
        if not self.storage.create_exclusive(self._rel(instant.file_name), content):
            raise InstantTimeTakenError(f"instant {instant} already exists (another writer took this instant time)")
        # Exclusive creation only guards this action's file name: another process may have taken the same
        # time for another action between the check above and the create. Whoever sees the other after
        # its own create gives the time up, so at least one side always does (both may; both retry).
        if check_time and self._time_shared(instant, self._existing_names()):
            self.storage.delete(self._rel(instant.file_name))
            raise _time_taken(instant)
        return instant

    @staticmethod
    def _time_shared(instant: Instant, names: Iterable[str]) -> bool:
        """Whether a listing shows another instant of `instant`'s time (its own files aside)."""
        ours = {instant.file_name, instant.with_state(State.INFLIGHT).file_name}
        return any(_same_time(n, instant.timestamp) and n not in ours for n in names)

    def create_new_requested(self, action: Action, content: bytes = b"", local: bool = False) -> Instant:
        """Start an instant of `action` at a fresh time after the timeline's last, taking the next time
        when another writer took it first."""
        # After the last instant and (layout 2) every completion: Hudi's time generator is monotonic.
        after = max([*self._timestamps[-1:], *self._completion.values()], default=None)
        for _ in range(20):
            ts = new_instant_time(after=after, local=local)
            try:
                return self.create_requested(Instant(ts, action, State.REQUESTED), content)
            except TimelineError:
                after = ts
        raise TimelineError("could not take a new instant time after 20 attempts; is the clock or the "
                            "storage misbehaving?")

    def transition_to_inflight(self, instant: Instant, content: bytes = b"", check_time: bool = False) -> Instant:
        """requested -> inflight. The requested file is looked for once, after the inflight file is created
        (a HEAD): missing then, it was missing before too or was rolled back meanwhile, and either way the
        inflight file is withdrawn; a check before the create as well would cost a second HEAD and tell
        nothing the one after does not.

        `check_time`: the requested file was created with `check_time=False`, so a listing after the
        inflight create replaces both the HEAD and the requested create's own look for another instant of
        the same time (InstantTimeTakenError, both files withdrawn). That a side of a same-time race always
        gives up holds as before: each lists after its own creates."""
        requested = Instant(instant.timestamp, instant.action, State.REQUESTED)
        inflight = requested.with_state(State.INFLIGHT)
        fault_point("timeline.before_inflight")
        if not self._create_once(inflight, self._encoded(inflight, content)):
            raise TimelineError(
                f"cannot move {instant} to inflight: {inflight.file_name} already exists with other content "
                f"in {self.storage.base_uri}/{self.layout.timeline_dir} (another process started this "
                "instant); let that process finish, or roll the instant back")
        if check_time:
            names = self._existing_names()
            if self._time_shared(requested, names):
                self.storage.delete(self._rel(inflight.file_name))
                self.storage.delete(self._rel(requested.file_name))
                raise _time_taken(requested)
            present = requested.file_name in names
        else:
            present = self.storage.exists(self._rel(requested.file_name))
        if not present:
            # Never requested, or a rollback or restore removed the instant before or since the create: the
            # inflight file would be an orphan that later readers and writers take for a live instant.
            self.storage.delete(self._rel(inflight.file_name))
            raise TimelineError(f"cannot move {instant} to inflight: {requested.file_name} is missing (never "
                                "requested, or rolled back meanwhile)")
        return inflight

    def complete(self, instant: Instant, content: bytes, listed_under_lock: bool = False) -> Instant:
        """inflight -> completed. `listed_under_lock`: this timeline was loaded under the table lock the
        caller still holds, and the caller checked from it that the instant is inflight (rollbacks and
        restores of other writers run under that lock, so nothing removed it since): the listing then
        stands for the HEAD of the inflight file, and on layout 1 (where the listing of `.hoodie` shows
        its `metadata` folder) for the LIST of the metadata table's folder too."""
        inflight = Instant(instant.timestamp, instant.action, State.INFLIGHT)
        listed = listed_under_lock and (found := self.find(instant.timestamp)) is not None \
            and found.state is State.INFLIGHT and found.action is instant.action
        if not listed and not self.storage.exists(self._rel(inflight.file_name)):
            raise TimelineError(f"cannot complete {instant}: {inflight.file_name} is missing")
        done = inflight.with_state(State.COMPLETED)
        # Hudi's writers must never trust a metadata table without it
        folder = None if not listed or self.listed_dirs is None else "metadata" in self.listed_dirs
        drop_metadata_table(self.storage, folder_listed=folder)
        body = self._encoded(done, content)
        created = self._complete_v2(done, body) if self.layout.is_v2 else \
            (done if self._create_once(done, body, keep=True) else None)
        if created is None:
            name = done.file_name if not self.layout.is_v2 else f"{done.timestamp}_*.{done.action.value}"
            raise InstantAlreadyCompletedError(
                f"cannot complete {instant}: {name} already exists with other content in "
                f"{self.storage.base_uri}/{self.layout.timeline_dir} (another process completed this instant "
                "first); this attempt's files are not part of the table and the instant must not be rolled back")
        return created

    def _encoded(self, instant: Instant, content: bytes) -> bytes:
        """What the instant's file holds: the content as given on layout 1; on layout 2 a write's commit
        metadata (completed, or an inflight's workload profile) in Hudi 1.x's Avro form. The Avro sync
        marker is derived from the instant, so a retried completion writes the same bytes."""
        if not (self.layout.is_v2 and content.strip() and instant.action in WRITE_ACTIONS
                and instant.state is not State.REQUESTED) or content.startswith(_AVRO_MAGIC):
            return content
        import hashlib
        import json

        from pyhudi.model.commit_avro import commit_avro_bytes

        marker = hashlib.md5(f"{instant.timestamp}.{instant.action.value}".encode()).digest()
        replace = instant.is_completed and instant.action is Action.REPLACE_COMMIT
        return commit_avro_bytes(json.loads(content), replace, sync_marker=marker)

    def _complete_v2(self, done: Instant, body: bytes) -> Instant | None:
        """Layout 2 names a completed instant by its completion time, so exclusive creation cannot stop
        a second completion under another name: completion runs under the writer's lock, and a check
        before and after the create settles a race without one (the earliest name stays, the other side
        removes its own file and fails). A retry finding its own bytes already there counts as done."""
        existing = self._completed_names(done)
        if existing:
            name = existing[0]
            same = self._read_or_none(self._rel(name)) == body
            return parse_instant_file(name) if same else None
        after = max([done.timestamp, *self._completion.values()])
        mine = Instant(done.timestamp, done.action, State.COMPLETED, new_instant_time(after=after))
        if not self.storage.create_exclusive(self._rel(mine.file_name), body):
            return None
        others = self._completed_names(done)
        if others and others[0] != mine.file_name:
            self.storage.delete(self._rel(mine.file_name))
            return None
        self._completion[done.timestamp] = mine.completion or ""
        self._files.setdefault(done.timestamp, set()).add(mine.file_name)
        return mine

    def _completed_names(self, done: Instant) -> list[str]:
        return sorted(n for n in self._existing_names()
                      if (i := parse_instant_file(n)) is not None and i.timestamp == done.timestamp
                      and i.is_completed and i.action is done.action)

    def _read_or_none(self, rel: str) -> bytes | None:
        try:
            return self.storage.read_bytes(rel)
        except FileNotFoundError:
            return None

    def _create_once(self, instant: Instant, content: bytes, keep: bool = False) -> bool:
        """Create the instant's file exclusively; True when created, or when it already holds exactly
        `content` (this caller's own earlier attempt, e.g. a PUT that took effect but whose answer was
        lost, retried by a caller), False when it holds anything else (someone else's). `keep`: a completed
        instant's file (layout 1: its bytes are what `details` returns) goes into the process's kept
        details under the ETag the store answered, so the next operation's schema and record-size lookups
        do not read back what this one wrote."""
        rel = self._rel(instant.file_name)
        created, etag = self.storage.create_exclusive_tagged(rel, content)
        if created:
            as_read = not (content.startswith(_AVRO_MAGIC) and instant.action in WRITE_ACTIONS)  # see `details`
            shared = self._shared_key(instant, rel, etag) if keep and as_read else None
            if shared is not None and len(content) <= _CACHED_DETAILS_MAX_BYTES:
                _SHARED_DETAILS.put(shared, content)
            if keep and etag:  # `with_completed` asks the kept details by it, as a listing would
                self._etags[instant.file_name] = etag
                self._sizes[instant.file_name] = len(content)
            return True
        return self._read_or_none(rel) == content  # None: deleted again since (a rollback), not ours

    def delete_pending(self, instant: Instant) -> None:
        """Remove every file of a pending instant, inflight first so it never looks requested-only
        with a half-finished write behind it; the requested file goes last."""
        names = instant_file_names(instant.timestamp, instant.action)
        completed = Instant(instant.timestamp, instant.action, State.REQUESTED).with_state(State.COMPLETED)
        for name in reversed(names):
            if name == completed.file_name:
                continue
            self.storage.delete(self._rel(name))

    def delete_completed(self, instant: Instant) -> None:
        """Remove a completed instant's files, completed file first (used by rollback/restore)."""
        self.storage.delete(self._path(instant))
        for name in reversed(instant_file_names(instant.timestamp, self._pending_action(instant))):
            self.storage.delete(self._rel(name))

    def revert_to_inflight(self, instant: Instant) -> None:
        """Hide a completed instant from readers in one step (delete its completed file) before a
        rollback touches its files; its requested/inflight files keep it on the timeline as pending."""
        inflight = Instant(instant.timestamp, self._pending_action(instant), State.INFLIGHT)
        drop_metadata_table(self.storage)  # the rollback deletes files a metadata table would still list
        self.storage.create_exclusive(self._rel(inflight.file_name), b"")  # kept when already there
        self.storage.delete(self._path(instant))

    def _pending_action(self, instant: Instant) -> Action:
        """The action a completed instant was pending under: compaction for a compaction's commit, and on
        layout 2 clustering for a clustering's replacecommit."""
        if self.is_compaction_commit(instant):
            return Action.COMPACTION
        if instant.action is Action.REPLACE_COMMIT and self.layout.is_v2 and \
                f"{instant.timestamp}.{Action.CLUSTERING.value}.requested" in self._files.get(instant.timestamp, ()):
            return Action.CLUSTERING
        return instant.action

    def _existing_names(self) -> list[str]:
        return [i.name for i in self.storage.list_dir(self.layout.timeline_dir) if not i.is_dir]


def _time_taken(instant: Instant) -> InstantTimeTakenError:
    return InstantTimeTakenError(f"instant time {instant.timestamp} was taken at the same moment by another writer")


def _same_time(name: str, ts: str) -> bool:
    """Whether a timeline file belongs to instant time `ts` (`<ts>.…`, or layout 2's `<ts>_<completion>.…`)."""
    return name.startswith((ts + ".", ts + "_"))


def _layout_and_listing(storage: Storage, reuse: bool = False) -> tuple[TimelineLayout, list[FileInfo]]:
    """The table's layout and the listing of its timeline folder: one LIST when the operation has
    loaded the table's properties (layout_of); otherwise `.hoodie` is listed first to tell. `reuse`: see
    `ActiveTimeline.load`."""
    from pyhudi.model.metadata_table import loaded_properties, take_listing

    props = loaded_properties(storage)
    taken = take_listing(storage, reuse)
    if props is not None:
        layout = TimelineLayout.of(props)
        if taken is not None and layout.timeline_dir == META_DIR:
            return layout, taken
    else:
        meta = storage.list_dir(META_DIR)
        layout = layout_of(storage, meta)
        if not layout.is_v2:
            return layout, meta
    return layout, storage.list_dir(layout.timeline_dir)


def instant_files(storage: Storage) -> Iterator[tuple[Instant, FileInfo]]:
    """Every instant file of the active timeline, with its listing entry (name, size, mtime)."""
    _, listing = _layout_and_listing(storage)
    for info in listing:
        if info.is_dir:
            continue
        inst = parse_instant_file(info.name)
        if inst is not None:
            yield inst, info


def _is_completed_savepoint(ts: str, name: str) -> bool:
    inst = parse_instant_file(name)
    return inst is not None and inst.timestamp == ts and inst.action is Action.SAVEPOINT and inst.is_completed


def _latest_state(found: list[Instant]) -> Instant:
    for state in (State.COMPLETED, State.INFLIGHT, State.REQUESTED):
        matching = [i for i in found if i.state is state]
        if matching:
            # A completed compaction shows as COMMIT; prefer the data action over anything else.
            matching.sort(key=lambda i: i.action in WRITE_ACTIONS, reverse=True)
            return matching[0]
    return found[0]
