"""Table locks for the commit critical section, with a lease so a crashed holder cannot block forever.

The default provider needs no service: the lock is a file created with
exclusive create (O_EXCL) under `.hoodie/.locks/`, holding its owner and
lease expiry. An expired lock is stolen through a second exclusive file
(`.steal`), so two processes can never both steal the same stale lock; the
steal file itself expires, should a stealer crash mid-steal.

Other providers plug in through `hoodie.write.lock.provider`: Hudi's class
name for the file-system lock, Hudi's `StorageBasedLockProvider` (the lock
object with conditional writes and a renewed lease, `storage_lock.py`), or
`some.module.ClassName` of a class implementing `LockProvider`. With no
provider named, a table on an object store gets the storage-based lock (see
`default_lock`), a local table the file-system lock.
"""

from __future__ import annotations

import importlib
import json
import os
import socket
import threading
import time
import uuid
from contextlib import contextmanager
from typing import Any

from pyhudi.errors import InvalidConfigError
from pyhudi.storage import Storage
from pyhudi.transaction.lock_types import LockLostError, LockProvider, LockSettings, LockTimeoutError
from pyhudi.transaction.storage_lock import (
    STORAGE_LOCK_CLASSES,
    StorageBasedLockProvider,
    check_settings,
    require_conditional_writes,
)

__all__ = ["LOCK_DIR", "FileSystemLockProvider", "LockLostError", "LockProvider", "LockSettings",
           "LockTimeoutError", "StorageBasedLockProvider", "check_lock_usable", "ensure_held", "make_lock", "table_lock"]

LOCK_DIR = ".hoodie/.locks"
NEVER_MS = 1 << 50  # a lease that outlives any writer (about 35,000 years)
HUDI_FS_LOCK_CLASSES = frozenset({
    "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider",
    "org.apache.hudi.client.transaction.lock.InProcessLockProvider",
    "pyhudi.transaction.lock.FileSystemLockProvider",
})


class FileSystemLockProvider:
    """Exclusive-create lock file with a lease (see module docstring)."""

    def __init__(self, storage: Storage, settings: LockSettings) -> None:
        self.storage = storage
        self.dir = settings.directory or LOCK_DIR
        self.path = f"{self.dir}/table.lock"
        # 0: never expires (Hudi's hoodie.write.lock.filesystem.expire=0); far future keeps the file's format
        self.lease_ms = int(settings.lease_seconds * 1000) or NEVER_MS
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}:{uuid.uuid4().hex[:8]}"
        self._held = False

    def _content(self) -> bytes:
        now = int(time.time() * 1000)
        return json.dumps({"owner": self.owner, "acquired_ms": now, "expires_ms": now + self.lease_ms}).encode()

    def _read(self, rel: str) -> dict[str, Any] | None:
        try:
            data = json.loads(self.storage.read_bytes(rel).decode())
        except (FileNotFoundError, ValueError, UnicodeDecodeError):
            return None
        return data if isinstance(data, dict) else None

    def _expired(self, rel: str) -> dict[str, Any] | None:
        """The file's content if it has expired, else None.

        A file a crashed process left empty or torn has no readable lease; it expires once its
        modification time is older than a lease (reported as {"unreadable": mtime}).
        """
        now = int(time.time() * 1000)
        info = self._read(rel)
        if info is None:
            mtime = self.storage.mtime_ms(rel)
            if mtime is not None and mtime + self.lease_ms < now:
                return {"unreadable": mtime}
            return None
        return info if int(info.get("expires_ms", 0)) < now else None

    def _try_steal(self) -> bool:
        stale = self._expired(self.path)
        if stale is None:
            return False
        steal = f"{self.path}.steal"
        if not self.storage.create_exclusive(steal, self._content()):
            if self._expired(steal) is not None:
                self.storage.delete(steal)  # a stealer crashed mid-steal; its token has expired
            return False
        try:
            current = self._read(self.path)
            same_torn = current is None and "unreadable" in stale and \
                self.storage.mtime_ms(self.path) == stale["unreadable"]
            same_lease = current is not None and current.get("owner") == stale.get("owner") and \
                current.get("acquired_ms") == stale.get("acquired_ms")
            if same_torn or same_lease:
                self.storage.delete(self.path)
            return self.storage.create_exclusive(self.path, self._content())
        finally:
            self.storage.delete(steal)

    def acquire(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        delay = 0.01
        while True:
            if self.storage.create_exclusive(self.path, self._content()) or self._try_steal():
                self._held = True
                return
            if time.monotonic() >= deadline:
                holder = self._read(self.path) or {}
                raise LockTimeoutError(
                    f"could not acquire the table lock {self.storage.uri(self.path)} within {timeout_s:.0f}s "
                    f"(held by {holder.get('owner', 'unknown')}); raise hoodie.write.lock.wait_time_ms or check "
                    "for a stuck writer (its lease expires after hoodie.write.lock.filesystem.expire minutes)")
            time.sleep(delay)
            # Short critical sections (a commit, a clean plan of a background service): poll often enough
            # that a writer waiting on one is not held up long after it ends.
            delay = min(delay * 2, 0.1)

    def check(self, min_remaining_s: float | None = None) -> None:
        """Raise LockLostError unless the lock file still names this holder and its lease has not lapsed:
        a holder paused past its lease (GC, SIGSTOP, a slow store) may have had the lock stolen, and then
        another process is in the critical section too. `min_remaining_s` (default 0) is the lease that
        must be left. Costs one read of the lock file, once per commit."""
        current = self._read(self.path) if self._held else None
        now = int(time.time() * 1000)
        need = int((min_remaining_s or 0) * 1000)
        if current is not None and current.get("owner") == self.owner and \
                int(current.get("expires_ms", 0)) - now >= need:
            return
        if not self._held:
            why = "it was not acquired"
        elif current is None or current.get("owner") != self.owner:
            why = f"another process took it over ({(current or {}).get('owner', 'lock file gone')})"
        else:
            why = f"its lease (hoodie.write.lock.filesystem.expire) lapsed {max(0, now - int(current['expires_ms']))} ms ago"
        raise LockLostError(
            f"the table lock {self.storage.uri(self.path)} is no longer safely held: {why}; nothing was committed. "
            "Retry; if the holder pauses this long, raise hoodie.write.lock.filesystem.expire")

    def release(self) -> None:
        if not self._held:
            return
        current = self._read(self.path)
        if current is not None and current.get("owner") == self.owner:
            self.storage.delete(self.path)
        self._held = False


def default_lock(storage: Storage, settings: LockSettings) -> LockProvider:
    """No provider named: a local table keeps the file-system lock. A table on an object store gets the
    storage-based lock when the store has conditional writes (a dead holder blocks others for seconds,
    and Hudi writers using that provider are excluded too); without them, concurrent writers (OCC) are
    refused, while a single writer keeps the file-system lock (its exclusive create is check-then-put
    there, which only a single writer can afford)."""
    if storage.is_local:
        return FileSystemLockProvider(storage, settings)
    if storage.supports_conditional_create():
        return StorageBasedLockProvider(storage, settings)
    if settings.occ:
        require_conditional_writes(storage, "hoodie.write.concurrency.mode=OPTIMISTIC_CONCURRENCY_CONTROL")
    return FileSystemLockProvider(storage, settings)


def make_lock(storage: Storage, settings: LockSettings) -> LockProvider:
    name = settings.provider
    if name is None:
        return default_lock(storage, settings)
    if name in HUDI_FS_LOCK_CLASSES:
        return FileSystemLockProvider(storage, settings)
    if name in STORAGE_LOCK_CLASSES:
        return StorageBasedLockProvider(storage, settings)
    module_name, _, cls_name = name.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module_name), cls_name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise InvalidConfigError(
            f"hoodie.write.lock.provider={name!r} cannot be loaded ({exc}); use "
            "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider, "
            "org.apache.hudi.client.transaction.lock.StorageBasedLockProvider or a 'module.Class' implementing "
            "pyhudi.transaction.lock.LockProvider") from exc
    return cls(storage, settings)  # type: ignore[no-any-return]


def check_lock_usable(storage: Storage, settings: LockSettings) -> None:
    """Refuse before a write starts, not at its commit, a lock that cannot work: the storage-based lock
    (named, or the default for concurrent writers on an object store) on a store without conditional
    writes, or with unsafe timings. Costs nothing locally; on an object store, the store's cached probe."""
    name = settings.provider
    if name in STORAGE_LOCK_CLASSES:
        check_settings(settings)
        require_conditional_writes(storage, f"hoodie.write.lock.provider={name}")
    elif name is None and not storage.is_local:
        check_settings(settings)
        if settings.occ:
            require_conditional_writes(storage, "hoodie.write.concurrency.mode=OPTIMISTIC_CONCURRENCY_CONTROL")


def ensure_held(lock: LockProvider, min_remaining_s: float | None = None) -> None:
    """Raise LockLostError if a provider that can lose its lock (a lease renewed by heartbeat) no longer
    safely holds it. The commit path calls this right before its final write, inside `table_lock`."""
    check = getattr(lock, "check", None)
    if callable(check):
        check(min_remaining_s)


@contextmanager
def table_lock(storage: Storage, settings: LockSettings):  # type: ignore[no-untyped-def]
    """Hold the table lock for a critical section (conflict check + timeline transition)."""
    lock = make_lock(storage, settings)
    lock.acquire(settings.wait_ms / 1000.0)
    try:
        yield lock
    finally:
        lock.release()
