"""The table lock (pyhudi.transaction.lock): mutual exclusion, lease expiry and stealing, pluggable providers.

Threads stand in for processes: every acquisition uses a provider instance of its own (its own owner
token), exactly as separate writers do. Nothing here depends on how long anything takes: timeouts are
only used where the lock must *not* be obtained.
"""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

from pyhudi.config.registry import Options
from pyhudi.errors import CommitConflictError, HudiError, InvalidConfigError
from pyhudi.storage import Storage
from pyhudi.transaction.lock import (
    LOCK_DIR,
    FileSystemLockProvider,
    LockSettings,
    LockTimeoutError,
    make_lock,
    table_lock,
)
from pyhudi.writer.config import lock_settings

LOCK = f"{LOCK_DIR}/table.lock"
STEAL = f"{LOCK}.steal"
HOUR_MS = 3600 * 1000


def now_ms() -> int:
    return int(time.time() * 1000)


@pytest.fixture
def storage(tmp_path):
    return Storage(str(tmp_path))


def lock_path(tmp_path, rel: str = LOCK) -> str:
    return os.path.join(str(tmp_path), rel)


def plant(tmp_path, rel: str, owner: str, expires_ms: int) -> bytes:
    """Write a lock (or steal token) file as another process would have left it."""
    data = json.dumps({"owner": owner, "acquired_ms": expires_ms - 60_000, "expires_ms": expires_ms}).encode()
    path = lock_path(tmp_path, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return data


def holder(tmp_path) -> str | None:
    try:
        with open(lock_path(tmp_path)) as f:
            return json.load(f).get("owner")
    except FileNotFoundError:
        return None


def run_threads(n: int, target) -> list[BaseException]:  # type: ignore[no-untyped-def]
    errors: list[BaseException] = []
    start = threading.Barrier(n)

    def wrapped(i: int) -> None:
        try:
            start.wait()
            target(i)
        except BaseException as exc:  # reported by the caller
            errors.append(exc)

    threads = [threading.Thread(target=wrapped, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


class Counter:
    """A shared counter updated non-atomically (read, yield, write) and a record of overlapping holders."""

    def __init__(self) -> None:
        self.value = 0
        self.inside = 0
        self.max_inside = 0
        self.guard = threading.Lock()  # only protects the overlap bookkeeping, not `value`

    def critical_section(self) -> None:
        with self.guard:
            self.inside += 1
            self.max_inside = max(self.max_inside, self.inside)
        v = self.value
        time.sleep(0.001)  # give every other thread the chance to interleave here
        self.value = v + 1
        with self.guard:
            self.inside -= 1


# --------------------------------------------------------------------------- mutual exclusion
def test_mutual_exclusion_under_contention_from_8_threads(tmp_path, storage):
    counter = Counter()
    rounds = 25

    def worker(_: int) -> None:
        for _ in range(rounds):
            with table_lock(storage, LockSettings(wait_ms=600_000)):
                counter.critical_section()

    assert run_threads(8, worker) == []
    assert counter.value == 8 * rounds, "an increment was lost: two holders were inside the lock at once"
    assert counter.max_inside == 1
    assert not os.path.exists(lock_path(tmp_path)), "the last holder released the lock"
    assert not os.path.exists(lock_path(tmp_path, STEAL))


def test_mutual_exclusion_when_8_threads_race_to_steal_an_expired_lock(tmp_path, storage):
    """A crashed holder's expired lock: every thread tries to steal it at once, yet only one holds it
    at a time (the `.steal` token serialises the steal)."""
    plant(tmp_path, LOCK, "crashed-host:1:1:dead", now_ms() - 1000)
    counter = Counter()
    rounds = 10

    def worker(_: int) -> None:
        for _ in range(rounds):
            with table_lock(storage, LockSettings(wait_ms=600_000)):
                counter.critical_section()

    assert run_threads(8, worker) == []
    assert counter.value == 8 * rounds
    assert counter.max_inside == 1
    assert not os.path.exists(lock_path(tmp_path))
    assert not os.path.exists(lock_path(tmp_path, STEAL))


def test_lock_is_released_when_the_critical_section_raises(tmp_path, storage):
    with pytest.raises(RuntimeError, match="boom"), table_lock(storage, LockSettings()):
        assert holder(tmp_path) is not None
        raise RuntimeError("boom")
    assert holder(tmp_path) is None
    with table_lock(storage, LockSettings(wait_ms=1000)):  # free again at once
        pass


# --------------------------------------------------------------------------- timeout
def test_timeout_raises_lock_timeout_error_naming_the_holder(tmp_path, storage):
    first = FileSystemLockProvider(storage, LockSettings())
    first.acquire(5)
    try:
        second = FileSystemLockProvider(storage, LockSettings())
        with pytest.raises(LockTimeoutError) as info:
            second.acquire(0.3)
        message = str(info.value)
        assert first.owner in message, "the error names who holds the lock"
        assert storage.uri(LOCK) in message, "the error names the lock file"
        assert "hoodie.write.lock.wait_time_ms" in message, "the error says how to wait longer"
        assert isinstance(info.value, CommitConflictError) and isinstance(info.value, HudiError)
        assert holder(tmp_path) == first.owner, "a failed acquire leaves the holder's lock alone"
    finally:
        first.release()
    second.acquire(5)  # released: the waiter gets it
    assert holder(tmp_path) == second.owner
    second.release()
    assert holder(tmp_path) is None


def test_table_lock_timeout_uses_wait_time_ms(tmp_path, storage):
    plant(tmp_path, LOCK, "busy-host:7:7:live", now_ms() + HOUR_MS)
    with pytest.raises(LockTimeoutError, match="busy-host:7:7:live"), \
            table_lock(storage, LockSettings(wait_ms=200)):
        pytest.fail("must not enter the critical section while another live writer holds the lock")


# --------------------------------------------------------------------------- leases and stealing
def test_expired_lock_is_stolen(tmp_path, storage):
    plant(tmp_path, LOCK, "crashed-host:1:1:dead", now_ms() - 1000)
    p = FileSystemLockProvider(storage, LockSettings(lease_seconds=60))
    p.acquire(30)
    with open(lock_path(tmp_path)) as f:
        content = json.load(f)
    assert content["owner"] == p.owner
    assert content["expires_ms"] > now_ms(), "the stealer writes a fresh lease"
    assert not os.path.exists(lock_path(tmp_path, STEAL)), "the steal token is removed after the steal"
    p.release()
    assert holder(tmp_path) is None


def test_live_lock_is_never_stolen(tmp_path, storage):
    planted = plant(tmp_path, LOCK, "live-host:2:2:alive", now_ms() + HOUR_MS)
    contenders = [FileSystemLockProvider(storage, LockSettings()) for _ in range(4)]

    def contend(i: int) -> None:
        with pytest.raises(LockTimeoutError, match="live-host:2:2:alive"):
            contenders[i].acquire(0.3)

    assert run_threads(4, contend) == []
    with open(lock_path(tmp_path), "rb") as f:
        assert f.read() == planted, "a live lock is left exactly as it was"
    assert not os.path.exists(lock_path(tmp_path, STEAL))
    for c in contenders:
        c.release()  # never held: releasing must not delete the other writer's lock
    assert holder(tmp_path) == "live-host:2:2:alive"


def test_crashed_stealers_expired_steal_token_is_cleaned_up(tmp_path, storage):
    """A stealer died between taking `.steal` and finishing: once its token expires, the next
    contender removes it and the (expired) lock is stolen."""
    plant(tmp_path, LOCK, "crashed-host:1:1:dead", now_ms() - 5000)
    plant(tmp_path, STEAL, "crashed-stealer:3:3:dead", now_ms() - 1000)
    p = FileSystemLockProvider(storage, LockSettings())
    p.acquire(30)
    assert holder(tmp_path) == p.owner
    assert not os.path.exists(lock_path(tmp_path, STEAL)), "the stale steal token is gone"
    p.release()
    assert holder(tmp_path) is None


def test_live_steal_token_holds_off_other_stealers(tmp_path, storage):
    """While another process is stealing (its token is live), nobody else steals the expired lock."""
    plant(tmp_path, LOCK, "crashed-host:1:1:dead", now_ms() - 5000)
    token = plant(tmp_path, STEAL, "busy-stealer:4:4:alive", now_ms() + HOUR_MS)
    with pytest.raises(LockTimeoutError):
        FileSystemLockProvider(storage, LockSettings()).acquire(0.3)
    assert holder(tmp_path) == "crashed-host:1:1:dead"
    with open(lock_path(tmp_path, STEAL), "rb") as f:
        assert f.read() == token


@pytest.mark.parametrize("torn", [LOCK, STEAL], ids=["lock_file", "steal_token"])
def test_torn_file_of_a_crashed_process_does_not_block_the_table_forever(tmp_path, storage, torn):
    """A process killed between the exclusive create and writing the content leaves an *empty* lock file
    (or steal token). Once that file is older than the lease it must be treated as expired, as the
    module's own comment says ("expired only if its file is older than a lease"); otherwise every
    writer times out on this table until someone deletes the file by hand."""
    plant(tmp_path, LOCK, "crashed-host:1:1:dead", now_ms() - 5000)
    torn_path = lock_path(tmp_path, torn)
    with open(torn_path, "wb"):
        pass  # zero bytes: created with O_EXCL, killed before the write
    long_ago = time.time() - 3600
    os.utime(torn_path, (long_ago, long_ago))
    p = FileSystemLockProvider(storage, LockSettings(lease_seconds=1))
    try:
        p.acquire(5)
    except LockTimeoutError as exc:
        pytest.fail(f"an empty {torn} file an hour older than the 1 s lease blocks the lock forever: {exc}")
    assert holder(tmp_path) == p.owner
    p.release()
    assert holder(tmp_path) is None


# --------------------------------------------------------------------------- release
def test_release_only_deletes_our_own_lock(tmp_path, storage):
    a = FileSystemLockProvider(storage, LockSettings())
    a.acquire(5)
    # a's process stalls past its lease: simulate by letting its lock expire on disk.
    with open(lock_path(tmp_path)) as f:
        content = json.load(f)
    content["expires_ms"] = now_ms() - 1000
    with open(lock_path(tmp_path), "w") as f:
        json.dump(content, f)
    b = FileSystemLockProvider(storage, LockSettings())
    b.acquire(30)  # steals the expired lock
    assert holder(tmp_path) == b.owner
    a.release()  # a wakes up and releases: it must not delete b's lock
    assert holder(tmp_path) == b.owner
    c = FileSystemLockProvider(storage, LockSettings())
    c.release()  # never acquired: a no-op
    assert holder(tmp_path) == b.owner
    with pytest.raises(LockTimeoutError, match=b.owner):
        c.acquire(0.2)  # b still holds it
    b.release()
    assert holder(tmp_path) is None
    b.release()  # releasing twice is harmless
    assert holder(tmp_path) is None


def test_lock_directory_is_configurable(tmp_path, storage):
    settings = lock_settings(Options.parse({"hoodie.write.lock.filesystem.path": ".hoodie/.custom_locks",
                                            "hoodie.write.lock.wait_time_ms": "1500",
                                            "hoodie.write.lock.filesystem.expire": "7"}))
    # minutes, as Hudi's key (a Hudi user's 7 is not 7 seconds)
    assert (settings.directory, settings.wait_ms, settings.lease_seconds) == (".hoodie/.custom_locks", 1500, 420)
    with table_lock(storage, settings):
        with open(os.path.join(str(tmp_path), ".hoodie/.custom_locks/table.lock")) as f:
            content = json.load(f)
        assert content["expires_ms"] - content["acquired_ms"] == 420_000
        assert not os.path.exists(lock_path(tmp_path))
    assert not os.path.exists(os.path.join(str(tmp_path), ".hoodie/.custom_locks/table.lock"))


# --------------------------------------------------------------------------- pluggable providers
class RecordingLock:
    """A custom provider, loaded by dotted path from hoodie.write.lock.provider."""

    events: list[tuple[str, object]] = []

    def __init__(self, storage: Storage, settings: LockSettings) -> None:
        self.storage = storage
        self.settings = settings
        RecordingLock.events.append(("init", settings.provider))

    def acquire(self, timeout_s: float) -> None:
        RecordingLock.events.append(("acquire", timeout_s))

    def release(self) -> None:
        RecordingLock.events.append(("release", None))


PROVIDER = f"{__name__}.RecordingLock"


def test_pluggable_provider_by_dotted_path(tmp_path, storage):
    RecordingLock.events.clear()
    settings = lock_settings(Options.parse({"hoodie.write.lock.provider": PROVIDER,
                                            "hoodie.write.lock.wait_time_ms": "2500"}))
    assert settings.provider == PROVIDER
    lock = make_lock(storage, settings)
    assert isinstance(lock, RecordingLock) and lock.storage is storage and lock.settings is settings
    RecordingLock.events.clear()
    with pytest.raises(RuntimeError), table_lock(storage, settings):
        RecordingLock.events.append(("inside", None))
        raise RuntimeError("released even on failure")
    assert RecordingLock.events == [("init", PROVIDER), ("acquire", 2.5), ("inside", None), ("release", None)]
    assert not os.path.exists(lock_path(tmp_path)), "the custom provider is used instead of the file lock"


@pytest.mark.parametrize("name", [
    None,
    "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider",
    "org.apache.hudi.client.transaction.lock.InProcessLockProvider",
    "pyhudi.transaction.lock.FileSystemLockProvider",
])
def test_hudi_provider_names_map_to_the_file_system_lock(storage, name):
    assert isinstance(make_lock(storage, LockSettings(provider=name)), FileSystemLockProvider)


@pytest.mark.parametrize("name", [
    "org.apache.hudi.client.transaction.lock.ZookeeperBasedLockProvider",  # a Hudi class pyhudi cannot load
    "com.example.locks.NoSuchProvider",
    f"{__name__}.NoSuchClass",  # module exists, class does not
    "NoDotsAtAll",
])
def test_unknown_provider_is_a_clear_config_error(storage, name):
    with pytest.raises(InvalidConfigError) as info:
        make_lock(storage, LockSettings(provider=name))
    message = str(info.value)
    assert "hoodie.write.lock.provider" in message and repr(name) in message
    assert "FileSystemBasedLockProvider" in message, "the error names a provider that works"


def test_lease_zero_never_expires(tmp_path, storage):
    """hoodie.write.lock.filesystem.expire=0 (Hudi's default): a holder's lock is never taken over, however
    old; a waiter times out naming the fix."""
    settings = lock_settings(Options.parse({"hoodie.write.lock.filesystem.expire": "0",
                                            "hoodie.write.lock.wait_time_ms": "300"}))
    holder_lock = make_lock(storage, settings)
    holder_lock.acquire(1)
    path = os.path.join(str(tmp_path), ".hoodie/.locks/table.lock")
    old = time.time() - 10 * 365 * 86400
    os.utime(path, (old, old))  # ten years old: still held
    waiter = make_lock(storage, settings)
    with pytest.raises(LockTimeoutError, match="filesystem.expire minutes"):
        waiter.acquire(0.3)
    holder_lock.release()
    waiter.acquire(1)
    waiter.release()


def test_a_holder_whose_lease_lapsed_or_was_stolen_is_told_before_it_commits(storage):
    """ensure_held on the file-system lock: a holder paused past its lease must not commit (before, the
    provider had no check, so ensure_held did nothing and two holders could both complete)."""
    from pyhudi.transaction.lock import ensure_held
    from pyhudi.transaction.lock_types import LockLostError

    first = FileSystemLockProvider(storage, LockSettings(lease_seconds=0.2))
    first.acquire(5)
    ensure_held(first)  # fresh lease: fine
    time.sleep(0.3)
    with pytest.raises(LockLostError, match="lapsed"):
        ensure_held(first)  # nobody stole it yet, but anyone may now
    second = FileSystemLockProvider(storage, LockSettings(lease_seconds=60))
    second.acquire(5)  # steals the lapsed lock
    with pytest.raises(LockLostError, match="took it over") as err:
        ensure_held(first)
    assert isinstance(err.value, CommitConflictError)
    ensure_held(second)
    with pytest.raises(LockLostError, match="no longer safely held"):
        ensure_held(second, min_remaining_s=120)
    first.release()  # does not delete the new holder's lock
    ensure_held(second)
    second.release()
