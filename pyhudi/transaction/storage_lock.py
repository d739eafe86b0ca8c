"""A table lock kept on the table's own storage with conditional writes: Hudi's storage-based lock
provider (RFC-91, `org.apache.hudi.client.transaction.lock.StorageBasedLockProvider`, Hudi 1.0.2+).

No lock service: the lock is one small JSON object, `<base>/.hoodie/.locks/table_lock.json`, the same
path and the same fields Hudi writes (`StorageLockData`: `{"expired":false,"validUntil":<epoch ms>,
"owner":"<uuid>"}`), so pyhudi writers and Hudi writers using that provider exclude each other.

* **Acquire**: read the object with its ETag. Absent: create it with `If-None-Match: *`. Present and
  free (`expired` true, or `validUntil` more than a clock-drift buffer in the past: its holder died):
  overwrite it with `If-Match: <etag>`. Valid and someone else's: wait and poll. Of several racing
  writers exactly one conditional write succeeds.
* **Renew**: while held, a heartbeat thread overwrites the object every `renew_interval_s` with
  `If-Match` on the ETag of our last write, moving `validUntil` to now + `validity_s`.
* **Release**: overwrite with `expired: true` (If-Match), as Hudi does; nothing is deleted.
* **Lost**: a renewal answered "precondition failed" means someone else replaced the object; a renewal
  that keeps failing lets the lease lapse. Either way `still_held()` turns false before any other writer
  may take the lock (the holder measures its lease on the monotonic clock from *before* each write and
  stops trusting it a drift buffer early), and `check()` raises `LockLostError`: the commit path calls
  it right before its final write (`lock.ensure_held`).

A retried conditional PUT whose first answer was lost is answered 412 although it took effect: every
"precondition failed" is therefore followed by one read, and an object holding exactly the bytes we
wrote is ours.

The provider needs conditional writes (`Storage.supports_conditional_create()`); on a store without
them it refuses at construction, naming the store and the fix.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
import uuid
from dataclasses import dataclass

from pyhudi.errors import ConditionalWriteUnsupportedError, CorruptFileError, InvalidConfigError, StorageError
from pyhudi.storage import Storage
from pyhudi.transaction.lock_types import LockLostError, LockSettings, LockTimeoutError

log = logging.getLogger(__name__)

LOCK_FILE = ".hoodie/.locks/table_lock.json"  # Hudi: LOCKS_FOLDER_NAME + DEFAULT_TABLE_LOCK_FILE_NAME
STORAGE_LOCK_CLASSES = frozenset({
    "org.apache.hudi.client.transaction.lock.StorageBasedLockProvider",
    "pyhudi.transaction.storage_lock.StorageBasedLockProvider",
})
CLOCK_DRIFT_S = 0.5  # Hudi's CLOCK_DRIFT_BUFFER_MS: a lock is dangling only this long after validUntil
MIN_RENEW_INTERVAL_S = 0.1
MIN_VALIDITY_S = 1.0
VALIDITY_KEY = "hoodie.write.lock.storage.validity.timeout.secs"
RENEW_KEY = "hoodie.write.lock.storage.renew.interval.secs"


@dataclass(frozen=True)
class LockData:
    """The lock object's content, Hudi's `StorageLockData` (Jackson writes creator properties first,
    in the creator's order, with no spaces: `{"expired":..,"validUntil":..,"owner":..}`)."""

    expired: bool
    valid_until_ms: int
    owner: str

    def to_bytes(self) -> bytes:
        return json.dumps({"expired": self.expired, "validUntil": self.valid_until_ms, "owner": self.owner},
                          separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    @classmethod
    def from_bytes(cls, data: bytes, where: str) -> LockData:
        """Parse as Hudi does: the three properties are required (not null), others are ignored."""
        try:
            raw = json.loads(data.decode("utf-8"))
            expired, valid_until, owner = raw["expired"], raw["validUntil"], raw["owner"]
            if not isinstance(expired, bool) or isinstance(valid_until, bool) or not isinstance(valid_until, int):
                raise TypeError("expired must be a boolean and validUntil an integer")
            return cls(expired, valid_until, str(owner) if owner is not None else "")
        except (ValueError, UnicodeDecodeError, KeyError, TypeError) as exc:
            raise CorruptFileError(
                f"the table lock {where} is not a storage lock object ({type(exc).__name__}: {exc}); with no "
                "writer running, delete it and retry") from None

    def is_free(self, now_ms: int) -> bool:
        """Released, or dangling: its holder stopped renewing and the lease (plus drift) is over."""
        return self.expired or now_ms > self.valid_until_ms + CLOCK_DRIFT_S * 1000


# The ETag of the lock object as this process last released it, per lock file. An If-Match write on that
# ETag succeeds only while the object is still exactly our released (expired) lock, that is while nobody
# took the lock since, so a process taking the lock again (a streaming writer: every commit and clean) tries
# that write first and skips the read; any other answer sends it the usual way (read, then write).
_RELEASED: dict[str, str] = {}
_RELEASED_LOCK = threading.Lock()


def check_settings(settings: LockSettings) -> None:
    """Hudi demands validity >= 10x the renew interval (>= 10 s); pyhudi needs validity >= 3x, so at
    least two renewals may fail before the lease lapses (see docs/architecture.md, "Table lock")."""
    validity, renew = settings.validity_s, settings.renew_interval_s
    if renew < MIN_RENEW_INTERVAL_S:
        raise InvalidConfigError(f"{RENEW_KEY}={renew} is too small; use at least {MIN_RENEW_INTERVAL_S}")
    if validity < MIN_VALIDITY_S:
        raise InvalidConfigError(f"{VALIDITY_KEY}={validity} is too small; use at least {MIN_VALIDITY_S:g} "
                                 "(the holder stops trusting a lease 0.5 s before it ends)")
    if validity < 3 * renew:
        raise InvalidConfigError(
            f"{VALIDITY_KEY}={validity} must be at least 3x {RENEW_KEY}={renew}; raise the validity to "
            f"{3 * renew:g} or renew more often")


def require_conditional_writes(storage: Storage, why: str) -> None:
    """Refuse a store whose creates are check-then-put: two writers could both think they hold the lock."""
    if storage.supports_conditional_create():
        return
    raise ConditionalWriteUnsupportedError(
        f"{why} needs conditional writes (If-None-Match / If-Match), but {storage.base_uri} does not support "
        "them, so concurrent writers cannot exclude each other there. Write with a single writer "
        "(hoodie.write.concurrency.mode=SINGLE_WRITER), or use a lock service through "
        "hoodie.write.lock.provider (a 'module.Class' implementing pyhudi.transaction.lock.LockProvider, e.g. "
        "backed by DynamoDB or ZooKeeper as Hudi's DynamoDBBasedLockProvider / ZookeeperBasedLockProvider are)")


class StorageBasedLockProvider:
    """The storage-based table lock (see the module docstring). One instance per acquisition."""

    def __init__(self, storage: Storage, settings: LockSettings) -> None:
        check_settings(settings)
        require_conditional_writes(storage, "hoodie.write.lock.provider=StorageBasedLockProvider")
        self.storage = storage
        self.validity_s = float(settings.validity_s)
        self.renew_s = float(settings.renew_interval_s)
        self.owner = str(uuid.uuid4())  # as Hudi: a random UUID per provider
        self.uri = storage.uri(LOCK_FILE)
        self._io = threading.Lock()  # one conditional write at a time (heartbeat vs release/check)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._etag: str | None = None
        self._data: LockData | None = None
        self._deadline = 0.0  # monotonic time until which we trust the lease
        self._lost: str | None = None
        self._replaced = False
        self._last_holder = ""
        self._last_error = ""

    # -- the object ----------------------------------------------------------------------------
    def _read(self) -> tuple[LockData, str] | None:
        try:
            data, etag = self.storage.read_with_etag(LOCK_FILE)
        except FileNotFoundError:
            return None
        return LockData.from_bytes(data, self.uri), etag

    def _write(self, data: LockData, etag: str | None) -> str | None:
        """Conditional create (etag None) or overwrite; our new ETag, or None if someone else won."""
        payload = data.to_bytes()
        if etag is None:
            if not self.storage.create_exclusive(LOCK_FILE, payload):
                return None
            return self._ours(payload)
        new = self.storage.put_if_match(LOCK_FILE, payload, etag)
        return new if new is not None else self._ours(payload)

    def _ours(self, payload: bytes) -> str | None:
        """The object's ETag if it holds exactly what we wrote (a lost answer to our own write, or the
        read after a create, which returns no ETag)."""
        try:
            data, etag = self.storage.read_with_etag(LOCK_FILE)
        except FileNotFoundError:
            return None
        return etag if data == payload else None

    def _new_data(self, expired: bool = False) -> tuple[LockData, float]:
        start = time.monotonic()
        return LockData(expired, int(time.time() * 1000 + self.validity_s * 1000), self.owner), start

    def _take(self, data: LockData, etag: str, start: float) -> None:
        self._data, self._etag, self._lost, self._replaced = data, etag, None, False
        self._deadline = start + self.validity_s - CLOCK_DRIFT_S

    # -- acquire ---------------------------------------------------------------------------------
    def try_acquire(self) -> bool:
        """One attempt: read, and if the lock is absent or free, take it with one conditional write (or,
        when this process released it last, first one conditional write on that release's ETag, no read:
        see `_RELEASED`)."""
        if self.still_held():
            return True  # reentrant, as Hudi's tryLock
        data, start = self._new_data()
        etag = self._take_released(data)
        current = self._read() if etag is None else None
        if current is not None and current[0] == data:
            etag = current[1]  # that write took effect, its answer was lost (a retry got 412)
        elif etag is None:
            if current is not None and not current[0].is_free(int(time.time() * 1000)):
                self._last_holder = f"{current[0].owner} until {current[0].valid_until_ms}"
                return False
            data, start = self._new_data()
            etag = self._write(data, None if current is None else current[1])
            if etag is None:
                return False
        self._take(data, etag, start)
        self._start_heartbeat()
        return True

    def _take_released(self, data: LockData) -> str | None:
        """Our new ETag if the lock object is still exactly what this process released last (one If-Match
        PUT); None otherwise (nothing released here, or taken since: the caller reads it). A retried PUT
        answered 412 although it took effect is not told apart here: the caller's read then finds our own
        bytes (`try_acquire`)."""
        with _RELEASED_LOCK:
            released = _RELEASED.pop(self.uri, None)
        if released is None:
            return None
        payload = data.to_bytes()
        try:
            return self.storage.put_if_match(LOCK_FILE, payload, released)
        except ConditionalWriteUnsupportedError:
            raise
        except StorageError:
            return None  # the usual way decides (and reports) it

    def acquire(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        delay = 0.02
        while True:
            try:
                if self.try_acquire():
                    return
            except StorageError as exc:
                if isinstance(exc, ConditionalWriteUnsupportedError):
                    raise
                self._last_error = str(exc)  # the store failed even after retries: try again until the deadline
            if time.monotonic() >= deadline:
                raise LockTimeoutError(
                    f"could not acquire the table lock {self.uri} within {timeout_s:.0f}s (held by "
                    f"{self._last_holder or 'unknown'}{'; last error: ' + self._last_error if self._last_error else ''})"
                    f"; raise hoodie.write.lock.wait_time_ms or check for a stuck writer (a dead holder's lease "
                    f"ends after its {VALIDITY_KEY})")
            time.sleep(min(delay * random.uniform(0.5, 1.0), max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 0.5)  # each poll is a GET: back off, but a commit section is short

    # -- heartbeat ---------------------------------------------------------------------------------
    def _start_heartbeat(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._beat, name=f"pyhudi-lock-{self.owner[:8]}", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.renew_s):
            with self._io:
                if self._stop.is_set() or self._etag is None or self._lost is not None:
                    return
                if time.monotonic() >= self._deadline:
                    # Hudi would still try (and "revive" an untaken lock); a holder that has told its
                    # caller the lock is gone must not hold it again behind its back.
                    self._lost = "the lease lapsed: renewals failed"
                    log.error("table lock %s lost: %s", self.uri, self._lost)
                    return
                self._renew()

    def _renew(self) -> None:
        """One renewal (under `_io`). A store failure leaves the lease as it was (the next beat tries
        again, as Hudi's UNKNOWN_ERROR); a lost precondition means the lock is gone for good."""
        assert self._etag is not None
        data, start = self._new_data()
        try:
            etag = self._write(data, self._etag)
        except ConditionalWriteUnsupportedError as exc:
            self._lost = f"the store refused the renewal: {exc}"
            return
        except StorageError as exc:
            log.warning("renewing the table lock %s failed (%s); %.1fs of its lease left", self.uri, exc,
                        self._deadline - time.monotonic())
            return
        if etag is None:
            self._lost, self._replaced = "another writer replaced the lock object", True
            log.error("table lock %s lost: %s", self.uri, self._lost)
            return
        self._take(data, etag, start)

    # -- state -----------------------------------------------------------------------------------
    def still_held(self) -> bool:
        """Whether we may still act under the lock: acquired, never lost, lease not lapsed."""
        return self._etag is not None and self._lost is None and time.monotonic() < self._deadline

    def remaining_s(self) -> float:
        return max(0.0, self._deadline - time.monotonic()) if self.still_held() else 0.0

    def check(self, min_remaining_s: float | None = None) -> None:
        """Raise LockLostError unless the lock is held with at least `min_remaining_s` (default: one
        renew interval) of its lease left. The lease is renewed here first, once: that conditional write
        (If-Match on our ETag) is what proves nobody took the object over while we were paused, which the
        lease arithmetic alone cannot see; it costs one PUT per commit."""
        need = self.renew_s if min_remaining_s is None else min_remaining_s
        with self._io:
            if self.still_held():
                self._renew()
        if self.remaining_s() >= need:
            return
        reason = self._lost or ("the lease lapsed: renewals failed" if self._etag is not None else "not acquired")
        raise LockLostError(
            f"the table lock {self.uri} is no longer safely held ({reason}); nothing was committed under it. "
            f"Retry the write; if this recurs, raise {VALIDITY_KEY} (now {self.validity_s:g}) or check the "
            "store's latency and errors")

    # -- release ---------------------------------------------------------------------------------
    def release(self) -> None:
        """Mark the object expired (If-Match), keeping its validUntil, as Hudi's unlock does. A failure is
        logged, not raised: the commit is already decided, and the lease ends by itself."""
        if self._etag is None:
            return
        self._stop.set()
        with self._io:
            if not self._replaced and self._data is not None and self._etag is not None:
                self._expire()  # also after a lapse: the If-Match write frees it at once if still untaken
            self._etag, self._data = None, None
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=self.validity_s)
        self._thread = None

    def _expire(self) -> None:
        assert self._data is not None and self._etag is not None
        done = LockData(True, self._data.valid_until_ms, self.owner)
        try:
            etag = self._write(done, self._etag)
            if etag is None:
                log.warning("table lock %s: another writer replaced it before our release", self.uri)
            else:
                with _RELEASED_LOCK:
                    _RELEASED[self.uri] = etag
        except StorageError as exc:
            log.warning("could not release the table lock %s (%s); it frees itself after %s", self.uri, exc,
                        VALIDITY_KEY)
