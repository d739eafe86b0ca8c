"""Writer heartbeats: how concurrent writers tell a live pending write from a crashed one.

Under optimistic concurrency control (failed-writes policy LAZY), a writer never rolls
back another writer's pending instant unless that instant's heartbeat file,
`.hoodie/.heartbeat/<instant>`, has not been refreshed for
(hoodie.client.heartbeat.tolerable.misses + 1) x hoodie.client.heartbeat.interval_in_ms.
The heartbeat starts before the instant is created, so a live write is never without one.
"""

from __future__ import annotations

import contextlib
import threading
import time

from pyhudi.storage import Storage

HEARTBEAT_DIR = ".hoodie/.heartbeat"


class Heartbeat:
    def __init__(self, storage: Storage, instant: str, interval_ms: int) -> None:
        self.storage = storage
        self.path = f"{HEARTBEAT_DIR}/{instant}"
        self.interval = interval_ms / 1000.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _beat(self) -> None:
        self.storage.write_atomic(self.path, str(int(time.time() * 1000)).encode())

    def start(self) -> Heartbeat:
        self._beat()
        self._thread = threading.Thread(target=self._run, name=f"pyhudi-heartbeat-{self.path}", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            with contextlib.suppress(OSError):  # a missed beat is tolerated; too many look dead, which is safe
                self._beat()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.storage.delete(self.path)


def last_beat_ms(storage: Storage, instant: str) -> int | None:
    try:
        return int(storage.read_bytes(f"{HEARTBEAT_DIR}/{instant}").decode().strip() or 0)
    except (FileNotFoundError, ValueError):
        return None


def is_expired(storage: Storage, instant: str, interval_ms: int, tolerable_misses: int) -> bool:
    beat = last_beat_ms(storage, instant)
    if beat is None:
        return True
    return int(time.time() * 1000) - beat > (tolerable_misses + 1) * interval_ms
