"""The storage-based table lock (Hudi's StorageBasedLockProvider, RFC-91) on a local table: the lock
object's format and path as Hudi writes them, acquire / renew / release / take-over of dead holders,
losing the lock, separate processes contending, a SIGKILLed holder, and stores without conditional
writes. The same scenarios on a local S3 server: tests/integration/test_storage_lock_s3.py.

Leases are short (validity 2 s, renewals every 0.4 s) so that lease expiry costs seconds; bounds are
asserted in lease units, not as wall-clock targets.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from typing import Any

import pytest

from pyhudi.config.registry import Options
from pyhudi.errors import (
    CommitConflictError,
    ConditionalWriteUnsupportedError,
    CorruptFileError,
    HudiError,
    InvalidConfigError,
    StorageError,
)
from pyhudi.storage import Storage
from pyhudi.transaction import storage_lock
from pyhudi.transaction.lock import (
    FileSystemLockProvider,
    LockLostError,
    LockSettings,
    LockTimeoutError,
    StorageBasedLockProvider,
    check_lock_usable,
    ensure_held,
    make_lock,
    table_lock,
)
from pyhudi.transaction.storage_lock import CLOCK_DRIFT_S, LOCK_FILE, LockData
from pyhudi.writer.config import lock_settings
from tests.integration.storage_lock_worker import assert_disjoint, run_contenders, start_holder

FAST: dict[str, Any] = {"validity_s": 2.0, "renew_interval_s": 0.4}
HUDI_CLASS = "org.apache.hudi.client.transaction.lock.StorageBasedLockProvider"
# What Hudi 1.x's StorageLockFile.toByteArray writes (Jackson, creator property order, no spaces).
HUDI_JSON = b'{"expired":false,"validUntil":1732646400123,"owner":"8d7c1f52-3b0e-4a55-9a43-2f1f0c6e9b1d"}'


@pytest.fixture
def storage(tmp_path) -> Storage:
    return Storage(str(tmp_path / "table"))


def provider(storage: Storage, **kw: Any) -> StorageBasedLockProvider:
    return StorageBasedLockProvider(storage, LockSettings(**{**FAST, **kw}))


def stored(storage: Storage) -> dict[str, Any]:
    return json.loads(storage.read_bytes(LOCK_FILE))


def plant(storage: Storage, expired: bool, valid_until_ms: int, owner: str = "hudi-writer-☃") -> None:
    storage.makedirs(".hoodie/.locks")
    storage.write_atomic(LOCK_FILE, LockData(expired, valid_until_ms, owner).to_bytes())


def now_ms() -> int:
    return int(time.time() * 1000)


# --------------------------------------------------------------------------- format
def test_lock_object_round_trips_hudis_json() -> None:
    data = LockData.from_bytes(HUDI_JSON, "x")
    assert data == LockData(False, 1732646400123, "8d7c1f52-3b0e-4a55-9a43-2f1f0c6e9b1d")
    assert data.to_bytes() == HUDI_JSON
    released = LockData(True, 1732646400123, data.owner).to_bytes()
    assert released == HUDI_JSON.replace(b'"expired":false', b'"expired":true')
    # Hudi ignores unknown properties (FAIL_ON_UNKNOWN_PROPERTIES off); so do we
    extra = b'{"owner":"o","validUntil":5,"expired":true,"auditId":"x"}'
    assert LockData.from_bytes(extra, "x") == LockData(True, 5, "o")
    assert LockData(False, 7, "ünï-κey/1").to_bytes().decode() == '{"expired":false,"validUntil":7,"owner":"ünï-κey/1"}'


@pytest.mark.parametrize("bad", [b"", b"{", b"[]", b'{"expired":false,"owner":"o"}',
                                 b'{"expired":null,"validUntil":1,"owner":"o"}',
                                 b'{"expired":false,"validUntil":"soon","owner":"o"}', b"\xff\xfe"])
def test_corrupt_lock_object_is_a_clear_error(storage: Storage, bad: bytes) -> None:
    storage.makedirs(".hoodie/.locks")
    storage.write_atomic(LOCK_FILE, bad)
    with pytest.raises(CorruptFileError, match="table_lock.json.*delete it"):
        provider(storage).acquire(1)


def test_acquire_writes_hudis_object_at_hudis_path_and_release_expires_it(storage: Storage) -> None:
    lock = provider(storage)
    before = now_ms()
    lock.acquire(5)
    try:
        content = stored(storage)
        assert list(content) == ["expired", "validUntil", "owner"]
        assert content["expired"] is False and content["owner"] == lock.owner
        assert before + 2000 <= content["validUntil"] <= now_ms() + 2000
        assert lock.still_held() and lock.remaining_s() > 1.0
        assert storage.exists(".hoodie/.locks/table_lock.json")
    finally:
        lock.release()
    after = stored(storage)
    assert after == {**content, "expired": True}, "release marks it expired, keeping validUntil and owner"
    assert not lock.still_held()
    with pytest.raises(LockLostError, match="not acquired"):
        lock.check()


# --------------------------------------------------------------------------- another writer's object
def test_a_valid_lock_of_another_writer_blocks(storage: Storage) -> None:
    plant(storage, False, now_ms() + 60_000, owner="hudi-java-writer")
    with pytest.raises(LockTimeoutError, match="hudi-java-writer") as info:
        provider(storage).acquire(0.3)
    assert isinstance(info.value, CommitConflictError) and isinstance(info.value, HudiError)
    assert stored(storage)["owner"] == "hudi-java-writer"


@pytest.mark.parametrize("expired,valid_in_ms", [(True, 60_000), (False, -int(CLOCK_DRIFT_S * 1000) - 1000)])
def test_released_or_dangling_lock_is_taken_over(storage: Storage, expired: bool, valid_in_ms: int) -> None:
    plant(storage, expired, now_ms() + valid_in_ms)
    lock = provider(storage)
    lock.acquire(2)
    assert stored(storage)["owner"] == lock.owner and stored(storage)["expired"] is False
    lock.release()


def test_a_lock_just_past_valid_until_is_not_taken_within_the_drift_buffer(storage: Storage) -> None:
    plant(storage, False, now_ms() - 100)  # expired 0.1 s ago on our clock: within Hudi's 0.5 s buffer
    lock = provider(storage)
    assert not lock.try_acquire()
    lock.acquire(3)  # and taken once the buffer has passed
    lock.release()


# --------------------------------------------------------------------------- renewal
def test_renewal_keeps_the_lock_beyond_its_validity(storage: Storage) -> None:
    holder = provider(storage)
    holder.acquire(5)
    first = stored(storage)["validUntil"]
    other = provider(storage)
    start = time.monotonic()
    while time.monotonic() - start < 2 * holder.validity_s:
        assert not other.try_acquire(), "taken while renewed"
        assert holder.still_held()
        time.sleep(0.05)
    assert stored(storage)["validUntil"] >= first + 2000 and stored(storage)["owner"] == holder.owner
    holder.check()
    holder.release()
    other.acquire(2)  # free at once after release
    other.release()


def test_lock_replaced_by_another_writer_is_lost_and_the_commit_refused(storage: Storage) -> None:
    with table_lock(storage, LockSettings(provider=HUDI_CLASS, **FAST)) as lock:
        assert isinstance(lock, StorageBasedLockProvider)
        ensure_held(lock)
        plant(storage, False, now_ms() + 60_000, owner="intruder")  # someone replaced our object
        deadline = time.monotonic() + 3 * lock.renew_s
        while lock.still_held() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not lock.still_held(), "the next renewal sees the object changed"
        with pytest.raises(LockLostError, match="replaced the lock object") as info:
            ensure_held(lock)
            storage.create_exclusive(".hoodie/20240101000000000.commit", b"{}")  # the commit's final write
        assert isinstance(info.value, CommitConflictError)
    assert not storage.exists(".hoodie/20240101000000000.commit")
    assert stored(storage)["owner"] == "intruder", "release leaves the new holder's object alone"


def test_failing_renewals_let_the_lease_lapse_before_anyone_else_may_take_it(storage: Storage,
                                                                               monkeypatch) -> None:
    lock = provider(storage, validity_s=1.2, renew_interval_s=0.3)
    lock.acquire(5)
    valid_until = stored(storage)["validUntil"]

    def failing_put(rel: str, data: bytes, etag: str) -> str | None:
        raise StorageError(f"PUT if-match of {rel} failed after 8 attempts: 503 SlowDown")

    monkeypatch.setattr(storage, "put_if_match", failing_put)
    lapse_seen = None
    while lapse_seen is None:
        if not lock.still_held():
            lapse_seen = now_ms()
        time.sleep(0.01)
        assert now_ms() < valid_until + 5000
    # the holder stops trusting its lease before another writer may consider the object dangling
    assert lapse_seen <= valid_until + CLOCK_DRIFT_S * 1000
    with pytest.raises(LockLostError, match="lease lapsed"):
        lock.check()  # tries one renewal itself, which fails too
    monkeypatch.undo()
    other = provider(storage)
    other.acquire(5)  # takes it over once dangling
    assert now_ms() > valid_until + CLOCK_DRIFT_S * 1000
    other.release()
    lock.release()  # finds it replaced: logged, not raised
    assert stored(storage)["owner"] == other.owner


class SteppedClock:
    """The lock module's clock, moved only by the test: a renewal's own duration (which on a loaded
    CI machine can exceed any margin a real clock leaves) does not eat into the lease being checked."""

    def __init__(self) -> None:
        self.mono, self.wall = time.monotonic(), time.time()

    def monotonic(self) -> float:
        return self.mono

    def time(self) -> float:
        return self.wall

    def sleep(self, seconds: float) -> None:
        self.mono += seconds
        self.wall += seconds


def test_check_renews_a_short_lease_itself(storage: Storage, monkeypatch) -> None:
    clock = SteppedClock()
    monkeypatch.setattr(storage_lock, "time", clock)
    lock = provider(storage, validity_s=3.0, renew_interval_s=1.0)
    lock.acquire(5)
    lock._stop.set()  # no heartbeat: the lease runs down
    clock.sleep(0.6)
    before = stored(storage)["validUntil"]
    assert lock.remaining_s() == pytest.approx(3.0 - CLOCK_DRIFT_S - 0.6)
    lock.check(min_remaining_s=2.2)  # more than is left: renewed synchronously
    assert lock.remaining_s() == pytest.approx(3.0 - CLOCK_DRIFT_S)
    assert abs(stored(storage)["validUntil"] - (before + 600)) <= 1  # whole ms
    lock.release()


# --------------------------------------------------------------------------- processes
def test_processes_exclude_each_other(storage: Storage, tmp_path) -> None:
    intervals = run_contenders(storage.base_uri, None, FAST, str(tmp_path), processes=4, rounds=5, hold_s=0.02)
    assert_disjoint(intervals)


def test_a_killed_holder_blocks_others_for_about_one_lease(storage: Storage, tmp_path) -> None:
    proc, owner = start_holder(storage.base_uri, None, FAST, str(tmp_path))
    try:
        time.sleep(3 * FAST["renew_interval_s"])  # renewals happen meanwhile
        assert stored(storage)["owner"] == owner and proc.is_alive()
        os.kill(proc.pid, signal.SIGKILL)
        killed = time.monotonic()
        proc.join(10)
        last = stored(storage)  # no more renewals from here
        lock = provider(storage)
        lock.acquire(10 * FAST["validity_s"])
        waited, taken_ms = time.monotonic() - killed, now_ms()
        lock.release()
    finally:
        if proc.is_alive():
            proc.kill()
    assert last["owner"] == owner and last["expired"] is False
    assert taken_ms >= last["validUntil"] + CLOCK_DRIFT_S * 1000, "taken only after the dead holder's lease"
    assert waited < 3 * FAST["validity_s"], f"held up {waited:.1f}s by a dead holder"


# --------------------------------------------------------------------------- stores and options
def test_store_without_conditional_writes_is_refused(storage: Storage, monkeypatch) -> None:
    monkeypatch.setattr(storage, "supports_conditional_create", lambda: False)
    with pytest.raises(ConditionalWriteUnsupportedError) as info:
        make_lock(storage, LockSettings(provider=HUDI_CLASS))
    message = str(info.value)
    assert storage.base_uri in message and "SINGLE_WRITER" in message and "DynamoDB" in message
    assert not storage.exists(LOCK_FILE)


def test_options_reach_the_provider_with_hudis_keys(storage: Storage) -> None:
    settings = lock_settings(Options.parse({"hoodie.write.lock.provider": HUDI_CLASS,
                                            "hoodie.write.lock.storage.validity.timeout.secs": "30",
                                            "hoodie.write.lock.storage.heartbeat.poll.secs": "3"}))
    assert (settings.validity_s, settings.renew_interval_s, settings.occ) == (30.0, 3.0, False)
    lock = make_lock(storage, settings)
    assert isinstance(lock, StorageBasedLockProvider) and lock.validity_s == 30.0 and lock.renew_s == 3.0
    defaults = lock_settings(Options.parse({"hoodie.write.concurrency.mode": "optimistic_concurrency_control"}))
    assert (defaults.validity_s, defaults.renew_interval_s, defaults.occ) == (15.0, 3.0, True)
    file_lock = make_lock(storage, defaults)
    assert isinstance(file_lock, FileSystemLockProvider), "local tables keep the file lock"
    file_lock.acquire(5)
    ensure_held(file_lock)  # held, lease fresh (test_lock.py covers a lapsed or stolen one)
    file_lock.release()
    with pytest.raises(InvalidConfigError, match="keep one"):
        Options.parse({"hoodie.write.lock.storage.renew.interval.secs": "3",
                       "hoodie.write.lock.storage.heartbeat.poll.secs": "4"})


@pytest.mark.parametrize("validity,renew", [(5, 2), (2, 0.01), (0.9, 0.2)])
def test_unsafe_timings_are_refused(storage: Storage, validity: float, renew: float) -> None:
    with pytest.raises(InvalidConfigError, match="hoodie.write.lock.storage"):
        make_lock(storage, LockSettings(provider=HUDI_CLASS, validity_s=validity, renew_interval_s=renew))


def test_threads_with_their_own_providers_exclude_each_other(storage: Storage) -> None:
    inside, overlaps, done = [0], [], []

    def work() -> None:
        for _ in range(4):
            lock = provider(storage)
            lock.acquire(30)
            inside[0] += 1
            overlaps.append(inside[0])
            time.sleep(0.005)
            inside[0] -= 1
            lock.release()
        done.append(1)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(done) == 3 and max(overlaps) == 1


def test_check_lock_usable_refuses_before_a_write_starts(storage: Storage, monkeypatch) -> None:
    check_lock_usable(storage, LockSettings(provider=HUDI_CLASS))  # local: conditional writes work
    check_lock_usable(storage, LockSettings(occ=True))
    with pytest.raises(InvalidConfigError, match="at least 3x"):
        check_lock_usable(storage, LockSettings(provider=HUDI_CLASS, validity_s=4, renew_interval_s=2))
    monkeypatch.setattr(storage, "supports_conditional_create", lambda: False)
    with pytest.raises(ConditionalWriteUnsupportedError, match=HUDI_CLASS):
        check_lock_usable(storage, LockSettings(provider=HUDI_CLASS))
    check_lock_usable(storage, LockSettings(occ=True))  # a local table keeps the file lock
    monkeypatch.setattr(Storage, "is_local", property(lambda self: False))  # as on an object store
    with pytest.raises(ConditionalWriteUnsupportedError, match="OPTIMISTIC_CONCURRENCY_CONTROL"):
        check_lock_usable(storage, LockSettings(occ=True))
    check_lock_usable(storage, LockSettings())  # a single writer may proceed
    assert not storage.exists(LOCK_FILE)


def test_retaking_a_lock_this_process_released_skips_the_read_unless_someone_took_it(
        storage: Storage, monkeypatch: pytest.MonkeyPatch) -> None:
    """After a release the next acquisition overwrites by If-Match on the released ETag without reading the
    object; once another writer took the lock since, that write fails and the usual read decides (the
    lock is refused while the other holds it)."""
    reads: list[str] = []
    original = storage.read_with_etag

    def counting(rel: str) -> tuple[bytes, str]:
        reads.append(rel)
        return original(rel)

    monkeypatch.setattr(storage, "read_with_etag", counting)
    first = provider(storage)
    first.acquire(5)
    first.release()
    reads.clear()
    again = provider(storage)
    again.acquire(5)
    assert reads == [], "retaken by one conditional write"
    held = json.loads(storage.read_bytes(LOCK_FILE))
    assert held["owner"] == again.owner and not held["expired"]
    again.release()
    other = provider(storage)
    other._take_released = lambda data: None  # type: ignore[method-assign]  # another process: nothing released there
    assert other.try_acquire()
    reads.clear()
    blocked = provider(storage)
    assert not blocked.try_acquire(), "the released ETag is stale: the other holder's lock is seen and respected"
    assert reads, "the failed If-Match sent it to read the object"
    other.release()
    assert blocked.try_acquire()
    blocked.release()
