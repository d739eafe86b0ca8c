"""One small storage interface over `pyarrow.fs`, used by the driver and the executors.

The storage contract the timeline relies on (also in docs/architecture.md):

* `write_atomic(path, data)`: readers see either no file / the old content, or
  the complete new content, never a prefix. On a local or POSIX file system
  this is "write a temp file in the same file system, then rename(2)". On
  object stores (S3, GCS, ABFS) a single PUT is already atomic.
* `create_exclusive(path, data)`: succeeds for exactly one caller when several
  race to create the same path. Local file systems use O_CREAT|O_EXCL. Object
  stores without conditional PUT get check-then-put, which is only safe with a
  single writer; that limitation is documented for OCC users. Object stores with conditional PUT
  (S3 `If-None-Match: *`, GCS generation preconditions, Azure `If-None-Match`) create exclusively
  with one conditional PUT (`storage/object_store.py`); `supports_conditional_create()` says which.
* `read_with_etag` / `put_if_match` / `delete_if_match`: compare-and-swap on one object (ETag on
  object stores; inode, mtime and size under a lock file locally), for the lock provider.
* `delete` is idempotent; listing never returns temp files.
* A process killed inside `write_atomic`/`create_exclusive` leaves its temp file behind (never the
  target); `purge_temp_files` (run by the cleaner) deletes temp files older than an hour.

Paths handed to this class are relative to the table's base path and use `/`.
Instances are picklable (the URI, the explicit `storage_options` and, on object stores, the settings the
pickling process resolved from its AWS_* variables and profile travel) so executors rebuild them.
Object stores fail transiently: their requests are retried with backoff (`storage/retry.py`) and
what still fails is a `StorageError`.
"""

from __future__ import annotations

import os
import posixpath
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa
import pyarrow.fs as pafs

from pyhudi.errors import ConditionalWriteUnsupportedError, StorageError
from pyhudi.faults import armed, fault_point
from pyhudi.storage import local_cas
from pyhudi.storage.config import Location, parse_location, resolve_options

if TYPE_CHECKING:
    from pyhudi.storage.object_store import ObjectBackend

T = TypeVar("T")
TEMP_DIR = ".hoodie/.aux/.pyhudi-tmp"
_LISTED_MAX = 500_000  # data-file sizes kept per Storage object (`known_size`), about 100 bytes each
TEMP_FILE_MAX_AGE_S = 3600  # a temp file lives for one write_atomic call; an older one was left by a crash


@dataclass(frozen=True)
class FileInfo:
    """One listed entry, relative to the listed directory's table base path."""

    path: str
    name: str
    size: int
    is_dir: bool
    mtime_ns: int = 0
    etag: str | None = None  # object stores: the listed version's ETag (changes with every write of the key)


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


_DIR_RACE_ATTEMPTS = 3  # a directory deleted between its mkdir and the create inside it is made again
# A local output stream's buffer: the parquet writer hands its stream each page header, page and footer part
# separately (~94 writes for a file of 23 columns), and an unbuffered local file makes each a syscall.
# Measured on a 30-partition stream's files: 0.2-0.3 ms a file of ~2 ms. Larger writes bypass the buffer.
_LOCAL_WRITE_BUFFER = 1 << 20


def _in_dir(create: Callable[[], T], make_dir: Callable[[], None], retry: Callable[[], bool] = lambda: True) -> T:
    """`create()` a file, making its directory only when the create finds it missing: the directory
    usually exists (a partition's next file), so no recursive mkdir per file. A directory deleted between
    the mkdir and the create (a rollback removing the marker directory of a write it took for dead) is made
    again, so the write goes on to its commit, which then says it was rolled back. `retry` says whether a
    missing file is worth another attempt at all."""
    for attempt in range(_DIR_RACE_ATTEMPTS + 1):
        try:
            return create()
        except FileNotFoundError:
            if attempt == _DIR_RACE_ATTEMPTS or not retry():
                raise
        make_dir()
    raise AssertionError("not reached")


def _open_new(path: str) -> int | None:
    """A new file opened with O_CREAT|O_EXCL (its directory made if missing); None when it exists."""
    def create() -> int | None:
        try:
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return None
    return _in_dir(create, lambda: os.makedirs(os.path.dirname(path), exist_ok=True))


def _link_new(src: str, path: str) -> bool:
    """link(2) `src` to `path` (its directory made if missing); False if it exists."""
    def create() -> bool:
        try:
            os.link(src, path)
            return True
        except FileExistsError:
            return False
    return _in_dir(create, lambda: os.makedirs(os.path.dirname(path), exist_ok=True),
                   retry=lambda: os.path.exists(src))


def _normalize_uri(uri: str) -> str:
    if "://" in uri or uri.startswith("file:"):
        if uri.startswith("file:") and not uri.startswith("file://"):
            uri = "file://" + uri[len("file:"):]
        return uri.rstrip("/")
    return os.path.abspath(uri).rstrip("/") or "/"


class Storage:
    """File access rooted at a table's base path."""

    def __init__(self, base_uri: str, filesystem: pafs.FileSystem | None = None,
                 storage_options: dict[str, str] | None = None) -> None:
        self.base_uri = _normalize_uri(base_uri)
        self.storage_options = dict(storage_options or {})
        self._shipped: dict[str, str] = {}  # resolved settings of the process that pickled this object
        self._loc: Location = parse_location(self.base_uri)
        self._obj: ObjectBackend | None = None
        # Object-store data files (outside .hoodie/) this Storage object listed, with their sizes: a data
        # file is written once under its name, so its size opens it without a HEAD (`known_size`).
        self._listed: dict[str, int] = {}
        self._explicit_fs = filesystem is not None
        if filesystem is not None:
            self._fs: pafs.FileSystem | None = filesystem
            self._root = self.base_uri.split("://", 1)[-1] if "://" in self.base_uri else self.base_uri
        else:
            self._fs = None
            self._root = ""

    # -- pickling: executors rebuild the clients from the URI and the options ----------------
    def __getstate__(self) -> dict[str, Any]:
        state: dict[str, Any] = {"base_uri": self.base_uri}
        if self.storage_options:
            state["storage_options"] = self.storage_options
        if self._loc.is_object_store:  # the settings resolved here (AWS_* variables, profile) travel too:
            # Spark's executors never see variables the driver set, as Hadoop ships its configuration to them.
            state["resolved_options"] = self._resolved()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["base_uri"], storage_options=state.get("storage_options"))  # type: ignore[misc]
        self._shipped = state.get("resolved_options", {})

    def _resolved(self) -> dict[str, str]:
        """Explicit options over the settings shipped from the driver over this process's environment."""
        return resolve_options(self._loc, {**self._shipped, **self.storage_options})

    @property
    def fs(self) -> pafs.FileSystem:
        """pyarrow's file system for callers that want one (configured from the same options on object
        stores, where Storage's own requests and streams go through obstore: see object_store.py)."""
        if self._fs is None:
            if self._loc.is_object_store:
                from pyhudi.storage.object_store import build_arrow_fs

                fs, root = build_arrow_fs(self._loc, self._resolved())
            elif "://" in self.base_uri:
                fs, root = pafs.FileSystem.from_uri(self.base_uri)
            else:
                fs, root = pafs.LocalFileSystem(), self.base_uri
            self._fs, self._root = fs, root.rstrip("/") or "/"
        return self._fs

    @property
    def _object(self) -> ObjectBackend | None:
        """The object-store backend (None for local paths and for an explicitly given file system)."""
        if self._obj is None and self._loc.is_object_store and not self._explicit_fs:
            from pyhudi.storage.object_store import ObjectBackend

            self._obj = ObjectBackend(self._loc, self._resolved())
        return self._obj

    @property
    def is_object_store(self) -> bool:
        """Whether requests go to an object store through obstore (S3, GCS, Azure), where a folder is
        only the prefix of its objects."""
        return self._object is not None

    @property
    def is_local(self) -> bool:
        if self._fs is None and self._loc.is_object_store:
            return False
        return isinstance(self.fs, pafs.LocalFileSystem)

    def full_path(self, rel: str) -> str:
        """Path as the pyarrow filesystem sees it."""
        _ = self.fs
        rel = rel.strip("/")
        return f"{self._root}/{rel}" if rel else self._root

    def uri(self, rel: str) -> str:
        """Path as Spark sees it (`file:/...` or `s3a://...`)."""
        rel = rel.strip("/")
        if "://" in self.base_uri:
            base = self.base_uri
            if base.startswith("s3://"):
                base = "s3a://" + base[len("s3://"):]
            return f"{base}/{rel}" if rel else base
        path = f"{self.base_uri}/{rel}" if rel else self.base_uri
        return "file://" + path

    # -- reads -------------------------------------------------------------------------
    def exists(self, rel: str) -> bool:
        if self._object is not None:
            return self._object.head(rel) is not None or self._object.has_children(rel)
        return self.fs.get_file_info(self.full_path(rel)).type != pafs.FileType.NotFound

    def is_dir(self, rel: str) -> bool:
        if self._object is not None:
            return self._object.head(rel) is None and self._object.has_children(rel)
        return self.fs.get_file_info(self.full_path(rel)).type == pafs.FileType.Directory

    def folder_exists(self, rel: str) -> bool:
        """Whether the folder `rel` exists (one LIST on an object store, where a
        folder exists only as the prefix of its objects; `is_dir` also HEADs `rel` as a file)."""
        if self._object is not None:
            return self._object.has_children(rel)
        return self.fs.get_file_info(self.full_path(rel)).type == pafs.FileType.Directory

    def size(self, rel: str) -> int:
        if self._object is not None:
            meta = self._object.head(rel)
            return int(meta["size"]) if meta else 0
        info = self.fs.get_file_info(self.full_path(rel))
        return int(info.size or 0)

    def mtime_ms(self, rel: str) -> int | None:
        if self._object is not None:
            meta = self._object.head(rel)
            return int(meta["last_modified"].timestamp() * 1000) if meta else None
        info = self.fs.get_file_info(self.full_path(rel))
        if info.type == pafs.FileType.NotFound or info.mtime_ns is None:
            return None
        return int(info.mtime_ns // 1_000_000)

    def read_bytes(self, rel: str) -> bytes:
        if self._object is not None:
            return self._object.read(rel)[0]
        with self.fs.open_input_stream(self.full_path(rel)) as f:
            return bytes(f.read())

    def read_range(self, rel: str, start: int, end: int) -> bytes:
        """Bytes [start, end) of `rel` (one ranged GET on an object store): the part of a large file a
        reader needs, such as the tail of a commit that names every partition."""
        if self._object is not None:
            return self._object.read_range(rel, start, end)
        with self.fs.open_input_file(self.full_path(rel)) as f:
            f.seek(start)
            return bytes(f.read(end - start))

    def open_input_file(self, rel: str, whole_below: int = 0) -> pa.NativeFile:
        """A random-access file; on an object store a Python file object (see `is_native_file`), or,
        for a file of at most `whole_below` bytes that the caller reads whole anyway, its content fetched
        by one GET into a native `pa.BufferReader` (`is_native_file` tells which)."""
        if self._object is not None:
            from pyhudi.storage.object_files import open_input_file

            return open_input_file(self._object, rel, whole_below, self.known_size(rel))
        return self.fs.open_input_file(self.full_path(rel))

    def known_size(self, rel: str) -> int | None:
        """The size of data file `rel` (outside `.hoodie/`) as a listing through this object found it, on
        an object store; None when not listed (or not an object store). Data files are written once under
        their names (a base file's name carries its write token and instant, a log file on an object
        store is never appended to), so the listing stands for a HEAD: opening a listed file costs no
        HEAD, and a listed `.hoodie_partition_metadata` is known to exist. A file deleted since is still
        a FileNotFoundError at its first read."""
        return self._listed.get(rel.strip("/"))

    @staticmethod
    def is_native_file(f: pa.NativeFile) -> bool:
        """Whether Arrow's own thread pools may read `f` (`use_threads`, `pre_buffer`): local files and
        whole objects held in memory, never a Python file object over ranged GETs. An Arrow pool thread
        still inside Python at interpreter exit aborts the process after a run that succeeded (SIGABRT,
        "terminate called without an active exception"; apache/arrow#34314, #50482); such files are read
        in parallel by the engine's tasks instead."""
        return not isinstance(f, pa.PythonFile)

    def list_dir(self, rel: str) -> list[FileInfo]:
        """Direct children of a directory; a missing directory lists as empty."""
        if self._object is not None:
            return self._list_objects(rel)
        base = self.full_path(rel)
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(base, allow_not_found=True, recursive=False))
        except (FileNotFoundError, NotADirectoryError):
            return []
        prefix = rel.strip("/")
        out = []
        for info in infos:
            name = info.base_name
            child = f"{prefix}/{name}" if prefix else name
            out.append(FileInfo(
                path=child, name=name, size=int(info.size or 0),
                is_dir=info.type == pafs.FileType.Directory, mtime_ns=int(info.mtime_ns or 0),
            ))
        return out

    def _list_objects(self, rel: str) -> list[FileInfo]:
        assert self._object is not None
        objects, dirs = self._object.list_dir(rel)
        out = [FileInfo(path=d, name=posixpath.basename(d), size=0, is_dir=True) for d in dirs]
        for o in objects:
            path = str(o["path"])
            if path == rel.strip("/"):
                continue  # a directory marker object written by another tool
            out.append(FileInfo(path=path, name=posixpath.basename(path), size=int(o["size"]), is_dir=False,
                                mtime_ns=int(o["last_modified"].timestamp() * 1_000_000) * 1000,
                                etag=o.get("e_tag")))
            if not path.startswith(".hoodie/"):
                if len(self._listed) >= _LISTED_MAX:  # a long-lived Storage object: start over
                    self._listed.clear()
                self._listed[path] = int(o["size"])
        return out

    # -- writes ------------------------------------------------------------------------
    def makedirs(self, rel: str) -> None:
        if self._object is not None:
            return  # object stores have no directories; a key's prefix is its directory
        self.fs.create_dir(self.full_path(rel), recursive=True)

    def open_output_stream(self, rel: str) -> pa.NativeFile:
        """A stream whose content is visible once closed (object stores: one PUT at a clean close;
        leaving the `with` block by an exception stores nothing)."""
        if self._object is not None:
            from pyhudi.storage.object_files import open_output_file

            return open_output_file(self._object, rel)
        path, parent = self.full_path(rel), posixpath.dirname(rel.strip("/"))
        return _in_dir(lambda: self.fs.open_output_stream(path, buffer_size=_LOCAL_WRITE_BUFFER),
                       lambda: self.makedirs(parent), retry=lambda: bool(parent))

    def write_bytes(self, rel: str, data: bytes | pa.Buffer, mid_write_fault: str | None = None) -> None:
        """Plain write; only for files that nobody reads until a commit names them.

        `mid_write_fault` names a fault point reached once half of `data` is on storage, when a crash
        test armed it (to leave a torn file behind).
        """
        if self._object is not None:
            if mid_write_fault is not None:
                fault_point(mid_write_fault)  # a PUT is all or nothing: a crash leaves no file at all
            self._object.put(rel, data)
            return
        with self.open_output_stream(rel) as f:
            if mid_write_fault is None or not armed(mid_write_fault):
                f.write(data)
                return
            half = len(data) // 2
            f.write(data[:half])
            f.flush()
            fault_point(mid_write_fault)
            f.write(data[half:])

    def write_new(self, rel: str, data: bytes | pa.Buffer, mid_write_fault: str | None = None) -> bool:
        """Create `rel` exclusively and write `data` into it; False (nothing written) if it exists.

        For data files two writers may name alike (log files: the same slice, version and write token
        from two applications): the loser learns it lost and picks another name instead of overwriting.
        Unlike `create_exclusive` the content streams into place (a crash can leave a torn file, as in
        Hudi's log writer); readers only trust it once a commit names it. Object stores without
        conditional PUT get check-then-put, as for `create_exclusive`.
        """
        if self._object is not None:
            if mid_write_fault is not None:
                fault_point(mid_write_fault)
            return self._object.create(rel, data)
        if not self.is_local:
            if self.exists(rel):
                return False
            self.write_bytes(rel, data, mid_write_fault)
            return True
        fd = _open_new(self.full_path(rel))
        if fd is None:
            return False
        try:
            view = memoryview(data)
            if mid_write_fault is not None and armed(mid_write_fault):
                _write_all(fd, view[: len(view) // 2])
                fault_point(mid_write_fault)
                view = view[len(view) // 2:]
            _write_all(fd, view)
        finally:
            os.close(fd)
        return True

    def _temp_file(self, data: bytes, durable: bool = True) -> str:
        """A new local temp file holding `data`, for `write_atomic` to rename and `create_exclusive` to link
        into place; `durable` fsyncs it first, so the name it takes never turns out empty after a power loss.
        An empty file has nothing to lose (a commit's requested instant): no fsync."""
        tmp = self.full_path(f"{TEMP_DIR}/{uuid.uuid4().hex}")
        fd = _open_new(tmp)
        if fd is None:
            raise FileExistsError(tmp)  # a fresh uuid4 name: never expected
        try:
            _write_all(fd, data)
            if durable and data:
                os.fsync(fd)
        finally:
            os.close(fd)
        return tmp

    def write_atomic(self, rel: str, data: bytes, durable: bool = True) -> None:
        """Readers see the old or the complete new content. Locally `durable` also fsyncs the content
        before the rename, so that a power loss cannot leave the new name on an empty file; only a file
        whose loss or emptiness is harmless passes False (`.hoodie_partition_metadata`: see
        `ensure_partition_metadata`)."""
        if self._object is not None:
            self._object.put(rel, data)  # one PUT: visible whole or not at all
            return
        if not self.is_local:
            self.write_bytes(rel, data)
            return
        tmp = self._temp_file(data, durable)
        parent = posixpath.dirname(rel.strip("/"))
        if parent:
            self.makedirs(parent)
        fault_point("storage.before_rename")
        os.replace(tmp, self.full_path(rel))

    def create_exclusive(self, rel: str, data: bytes = b"") -> bool:
        """Create `rel` only if absent; returns False when someone else got there first."""
        if self._object is not None:
            return self._object.create(rel, data)
        if self.is_local:
            # Write the content to a temp file first, then link(2) it into place: the link fails if the
            # target exists (exclusive) and makes the complete content appear at once (atomic).
            tmp = self._temp_file(data)
            fault_point("storage.before_link")
            try:
                return _link_new(tmp, self.full_path(rel))
            finally:
                os.unlink(tmp)
        if self.exists(rel):
            return False
        self.write_bytes(rel, data)
        return True

    def create_exclusive_tagged(self, rel: str, data: bytes) -> tuple[bool, str | None]:
        """`create_exclusive`, and on an object store the created object's ETag when the store answered
        it (None otherwise, and on other file systems)."""
        if self._object is not None:
            return self._object.create_tagged(rel, data)
        return self.create_exclusive(rel, data), None

    def delete(self, rel: str) -> bool:
        """Delete a file; False if it did not exist. On object stores True means "gone": S3's
        DeleteObject does not say whether the key existed, and asking first would double the requests
        of every clean and rollback."""
        if self._object is not None:
            self._object.delete(rel)
            return True
        try:
            self.fs.delete_file(self.full_path(rel))
            return True
        except FileNotFoundError:
            return False
        except OSError:
            if not self.exists(rel):
                return False
            raise

    def delete_files(self, rels: list[str]) -> None:
        """Delete the given files (missing ones are not an error): on an object store in batches of 1000
        keys per request, without listing anything first."""
        if self._object is not None:
            if rels:
                self._object.delete_many(rels)
            return
        for rel in rels:
            self.delete(rel)

    def delete_dir(self, rel: str) -> None:
        if self._object is not None:
            self._object.delete_many(self._object.list_recursive(rel))
            return
        try:
            self.fs.delete_dir(self.full_path(rel))
        except FileNotFoundError:
            pass
        except OSError:
            if self.exists(rel):
                raise

    def purge_temp_files(self, older_than_s: float = TEMP_FILE_MAX_AGE_S) -> int:
        """Delete temp files of `write_atomic`/`create_exclusive` older than `older_than_s` (left by
        crashed processes); returns how many were deleted."""
        if not self.is_local:
            return 0  # other stores write in place, without temp files
        cutoff_ns = time.time_ns() - int(older_than_s * 1e9)
        stale = [i.path for i in self.list_dir(TEMP_DIR) if not i.is_dir and i.mtime_ns < cutoff_ns]
        return sum(1 for rel in stale if self.delete(rel))

    def rename(self, src: str, dst: str) -> None:
        """Not atomic on object stores (copy, then delete); only for files no reader relies on."""
        if self._object is not None:
            self._object.rename(src, dst)
            return
        self.fs.move(self.full_path(src), self.full_path(dst))

    # -- conditional writes (compare-and-swap), for the lock provider -------------------------
    def supports_conditional_create(self) -> bool:
        """Whether `create_exclusive` is safe with concurrent writers: always locally; on an object
        store, whether it honours `If-None-Match: *` (probed once per bucket and process; the
        `pyhudi.conditional_writes` storage option overrides). Without it, create_exclusive is
        check-then-put, safe only with a single writer."""
        if self._object is not None:
            return self._object.supports_conditional_create()
        return self.is_local

    def read_with_etag(self, rel: str) -> tuple[bytes, str]:
        """Content and the version tag to pass to `put_if_match`/`delete_if_match`; FileNotFoundError
        if absent."""
        if self._object is not None:
            data, etag, _ = self._object.read(rel)
            if etag is None:
                raise StorageError(f"{self._object.describe(rel)} has no ETag; the store cannot do "
                                   "compare-and-swap")
            return data, etag
        self._require_local("read_with_etag")
        return local_cas.read_with_etag(self.full_path(rel))

    def put_if_match(self, rel: str, data: bytes, etag: str) -> str | None:
        """Replace `rel` with `data` only if its version is still `etag`; returns the new ETag, or None
        when someone changed or deleted it first."""
        if self._object is not None:
            return self._object.put_if_match(rel, data, etag)
        self._require_local("put_if_match")
        with local_cas.locked(self.full_path(""), rel):
            if local_cas.etag_of(self.full_path(rel)) != etag:
                return None
            self.write_atomic(rel, data)
            return local_cas.etag_of(self.full_path(rel))

    def delete_if_match(self, rel: str, etag: str) -> bool:
        """Delete `rel` only if its version is still `etag`; False when it changed or is gone."""
        if self._object is not None:
            return self._object.delete_if_match(rel, etag)
        self._require_local("delete_if_match")
        with local_cas.locked(self.full_path(""), rel):
            if local_cas.etag_of(self.full_path(rel)) != etag:
                return False
            return self.delete(rel)

    def _require_local(self, op: str) -> None:
        if not self.is_local:
            raise ConditionalWriteUnsupportedError(
                f"{op} on {self.base_uri}: this file system ({type(self.fs).__name__}) has no "
                "compare-and-swap; use a local path or an s3://, gs:// or abfss:// URI")
