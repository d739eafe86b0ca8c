"""Heartbeats: how writers and table services tell a live pending instant from a crashed one.

Every write (in every concurrency mode) and every clustering execution beats a heartbeat file,
`.hoodie/.heartbeat/<instant>`. Nothing rolls back or re-executes another process's pending
instant unless its owner is gone: its heartbeat has not been refreshed for
(hoodie.client.heartbeat.tolerable.misses + 1) x hoodie.client.heartbeat.interval_in_ms, or the
file names an owner process on this host that no longer exists (a crashed single writer is thus
recovered by the very next write, not minutes later). A write's heartbeat starts before its instant
is created, so a live write is never without one.

The file holds the beat time in epoch ms on its first line (Hudi itself writes an empty file and
uses its modification time, which is read when the content is empty) and the owner
(`host:pid:process start`) on the second.
"""

from __future__ import annotations

import contextlib
import functools
import os
import socket
import threading
import time

from pyhudi.storage import Storage

HEARTBEAT_DIR = ".hoodie/.heartbeat"


def _process_start(pid: int) -> str:
    """The process's start time in clock ticks since boot (Linux), so a reused pid is not mistaken
    for the owner; "0" where /proc is not available."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return "0"


def owner_token() -> str:
    return _token_of(os.getpid())


@functools.cache
def _token_of(pid: int) -> str:
    """host:pid:start of this process, read once per pid (a forked child is another pid): reading
    /proc/self/stat took ~2% of a small write's time, at every heartbeat started."""
    return f"{socket.gethostname()}:{pid}:{_process_start(pid)}"


def _process_gone(owner: str) -> bool:
    """True only when the owner certainly no longer runs: same host, and its pid is gone (or reused)."""
    host, _, rest = owner.partition(":")
    pid_text, _, start = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return start not in ("", "0") and _process_start(pid) not in ("0", start)


class Heartbeat:
    def __init__(self, storage: Storage, instant: str, interval_ms: int) -> None:
        self.storage = storage
        self.path = f"{HEARTBEAT_DIR}/{instant}"
        self.interval = interval_ms / 1000.0
        self.owner = owner_token()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _beat(self) -> None:
        # A plain overwrite, as Hudi's heartbeat client does: no temp file and rename per beat. A reader
        # that catches it half-written falls back to the file's modification time (see `_read`).
        self.storage.write_bytes(self.path, f"{int(time.time() * 1000)}\n{self.owner}".encode())

    def start(self) -> Heartbeat:
        self._beat()
        self._thread = threading.Thread(target=self._run, name=f"pyhudi-heartbeat-{self.path}", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            with contextlib.suppress(OSError):  # a missed beat is tolerated; too many look dead, which is safe
                self._beat()

    def stop(self, delete: bool = True) -> None:
        """Stop beating and delete the file; `delete=False` leaves the file to the caller, which deletes it
        with others in one request (a committed write: its heartbeat and markers go in one batch delete)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if delete:
            self.storage.delete(self.path)


def _read(storage: Storage, instant: str) -> tuple[int, str] | None:
    """(last beat ms, owner) of an instant's heartbeat file, or None without one."""
    rel = f"{HEARTBEAT_DIR}/{instant}"
    try:
        text = storage.read_bytes(rel).decode(errors="replace").strip()
    except FileNotFoundError:
        return None
    first, _, owner = text.partition("\n")
    if first.strip().isdigit() and owner.strip().count(":") == 2:
        return int(first.strip()), owner.strip()
    # Hudi's empty heartbeat file, or one caught mid-write: the modification time is the beat.
    mtime = storage.mtime_ms(rel)
    return (mtime, "") if mtime is not None else None


def is_expired(storage: Storage, instant: str, interval_ms: int, tolerable_misses: int) -> bool:
    """Whether the instant's owner is gone: no heartbeat, a stale one, or an owner process that died."""
    info = _read(storage, instant)
    if info is None:
        return True
    beat, owner = info
    if int(time.time() * 1000) - beat > (tolerable_misses + 1) * interval_ms:
        return True
    return bool(owner) and _process_gone(owner)


def owner_is_gone(storage: Storage, instant: str, interval_ms: int, tolerable_misses: int,
                  created_ms: int | None) -> bool:
    """For an instant whose heartbeat may start just after the instant (a table service's plan): a
    missing heartbeat means "gone" only once the instant itself (created at `created_ms`) is older
    than the expiry window, so a plan that was just scheduled is not taken from its owner."""
    if _read(storage, instant) is None:
        window = (tolerable_misses + 1) * interval_ms
        return created_ms is None or int(time.time() * 1000) - created_ms > window
    return is_expired(storage, instant, interval_ms, tolerable_misses)
