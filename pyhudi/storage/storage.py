"""One small storage interface over `pyarrow.fs`, used by the driver and the executors.

The storage contract the timeline relies on (also in docs/architecture.md):

* `write_atomic(path, data)`: readers see either no file / the old content, or
  the complete new content, never a prefix. On a local or POSIX file system
  this is "write a temp file in the same file system, then rename(2)". On
  object stores (S3, GCS, ABFS) a single PUT is already atomic.
* `create_exclusive(path, data)`: succeeds for exactly one caller when several
  race to create the same path. Local file systems use O_CREAT|O_EXCL. Object
  stores without conditional PUT get check-then-put, which is only safe with a
  single writer; that limitation is documented for OCC users.
* `delete` is idempotent; listing never returns temp files.
* A process killed inside `write_atomic`/`create_exclusive` leaves its temp file behind (never the
  target); `purge_temp_files` (run by the cleaner) deletes temp files older than an hour.

Paths handed to this class are relative to the table's base path and use `/`.
Instances are picklable (only the URI travels) so executors rebuild them.
"""

from __future__ import annotations

import os
import posixpath
import time
import uuid
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from pyhudi.faults import armed, fault_point

TEMP_DIR = ".hoodie/.aux/.pyhudi-tmp"
TEMP_FILE_MAX_AGE_S = 3600  # a temp file lives for one write_atomic call; an older one was left by a crash


@dataclass(frozen=True)
class FileInfo:
    """One listed entry, relative to the listed directory's table base path."""

    path: str
    name: str
    size: int
    is_dir: bool
    mtime_ns: int = 0


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _normalize_uri(uri: str) -> str:
    if "://" in uri or uri.startswith("file:"):
        if uri.startswith("file:") and not uri.startswith("file://"):
            uri = "file://" + uri[len("file:"):]
        return uri.rstrip("/")
    return os.path.abspath(uri).rstrip("/") or "/"


class Storage:
    """File access rooted at a table's base path."""

    def __init__(self, base_uri: str, filesystem: pafs.FileSystem | None = None) -> None:
        self.base_uri = _normalize_uri(base_uri)
        if filesystem is not None:
            self._fs: pafs.FileSystem | None = filesystem
            self._root = self.base_uri.split("://", 1)[-1] if "://" in self.base_uri else self.base_uri
        else:
            self._fs = None
            self._root = ""

    # -- pickling: executors rebuild the filesystem from the URI -------------------------
    def __getstate__(self) -> dict[str, Any]:
        return {"base_uri": self.base_uri}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.base_uri = state["base_uri"]
        self._fs = None
        self._root = ""

    @property
    def fs(self) -> pafs.FileSystem:
        if self._fs is None:
            if "://" in self.base_uri:
                fs, root = pafs.FileSystem.from_uri(self.base_uri)
            else:
                fs, root = pafs.LocalFileSystem(), self.base_uri
            self._fs, self._root = fs, root.rstrip("/") or "/"
        return self._fs

    @property
    def is_local(self) -> bool:
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
        return self.fs.get_file_info(self.full_path(rel)).type != pafs.FileType.NotFound

    def is_dir(self, rel: str) -> bool:
        return self.fs.get_file_info(self.full_path(rel)).type == pafs.FileType.Directory

    def size(self, rel: str) -> int:
        info = self.fs.get_file_info(self.full_path(rel))
        return int(info.size or 0)

    def mtime_ms(self, rel: str) -> int | None:
        info = self.fs.get_file_info(self.full_path(rel))
        if info.type == pafs.FileType.NotFound or info.mtime_ns is None:
            return None
        return int(info.mtime_ns // 1_000_000)

    def read_bytes(self, rel: str) -> bytes:
        with self.fs.open_input_stream(self.full_path(rel)) as f:
            return bytes(f.read())

    def open_input_file(self, rel: str) -> pa.NativeFile:
        return self.fs.open_input_file(self.full_path(rel))

    def list_dir(self, rel: str) -> list[FileInfo]:
        """Direct children of a directory; a missing directory lists as empty."""
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

    # -- writes ------------------------------------------------------------------------
    def makedirs(self, rel: str) -> None:
        self.fs.create_dir(self.full_path(rel), recursive=True)

    def open_output_stream(self, rel: str) -> pa.NativeFile:
        parent = posixpath.dirname(rel.strip("/"))
        if parent:
            self.makedirs(parent)
        return self.fs.open_output_stream(self.full_path(rel))

    def write_bytes(self, rel: str, data: bytes | pa.Buffer, mid_write_fault: str | None = None) -> None:
        """Plain write; only for files that nobody reads until a commit names them.

        `mid_write_fault` names a fault point reached once half of `data` is on storage, when a crash
        test armed it (to leave a torn file behind).
        """
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
        if not self.is_local:
            if self.exists(rel):
                return False
            self.write_bytes(rel, data, mid_write_fault)
            return True
        path = self.full_path(rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
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

    def write_atomic(self, rel: str, data: bytes) -> None:
        if not self.is_local:
            self.write_bytes(rel, data)
            return
        tmp = self.full_path(f"{TEMP_DIR}/{uuid.uuid4().hex}")
        os.makedirs(os.path.dirname(tmp), exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            _write_all(fd, data)
            os.fsync(fd)  # the renamed file must never turn out empty after a power loss
        finally:
            os.close(fd)
        parent = posixpath.dirname(rel.strip("/"))
        if parent:
            self.makedirs(parent)
        fault_point("storage.before_rename")
        os.replace(tmp, self.full_path(rel))

    def create_exclusive(self, rel: str, data: bytes = b"") -> bool:
        """Create `rel` only if absent; returns False when someone else got there first."""
        if self.is_local:
            # Write the content to a temp file first, then link(2) it into place: the link fails if the
            # target exists (exclusive) and makes the complete content appear at once (atomic).
            path = self.full_path(rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = self.full_path(f"{TEMP_DIR}/{uuid.uuid4().hex}")
            os.makedirs(os.path.dirname(tmp), exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                _write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            fault_point("storage.before_link")
            try:
                os.link(tmp, path)
            except FileExistsError:
                return False
            finally:
                os.unlink(tmp)
            return True
        if self.exists(rel):
            return False
        self.write_bytes(rel, data)
        return True

    def delete(self, rel: str) -> bool:
        try:
            self.fs.delete_file(self.full_path(rel))
            return True
        except FileNotFoundError:
            return False
        except OSError:
            if not self.exists(rel):
                return False
            raise

    def delete_dir(self, rel: str) -> None:
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
        self.fs.move(self.full_path(src), self.full_path(dst))
