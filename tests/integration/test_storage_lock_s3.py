"""The storage-based table lock on a local S3 server (moto) behind the fault proxy: separate processes
contending (also with every 5th PUT answered 503 and lost answers to conditional PUTs), a SIGKILLed
holder, renewals that fail or find the object replaced, a store that ignores conditional headers, and
two processes writing one table with optimistic concurrency through the default lock (read back with
hudi-rs and pyhudi against a model). Leases are 2 s, renewals every 0.4 s."""

from __future__ import annotations

import json
import os
import signal
import time
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import ConditionalWriteUnsupportedError
from pyhudi.storage import Storage
from pyhudi.transaction.lock import (
    FileSystemLockProvider,
    LockLostError,
    LockSettings,
    StorageBasedLockProvider,
    ensure_held,
    make_lock,
    table_lock,
)
from pyhudi.transaction.storage_lock import CLOCK_DRIFT_S, LOCK_FILE, LockData
from tests.integration.storage_lock_worker import assert_disjoint, run_contenders, run_writers, start_holder

if TYPE_CHECKING:
    from tests.support.s3_fixtures import S3Bucket

pytest_plugins = ["tests.support.s3_fixtures"]  # the s3 and s3_session fixtures

FAST: dict[str, Any] = {"validity_s": 2.0, "renew_interval_s": 0.4}
RETRY = {"pyhudi.retry.base_delay_ms": "1", "pyhudi.retry.max_delay_ms": "20"}
HUDI_CLASS = "org.apache.hudi.client.transaction.lock.StorageBasedLockProvider"


def _options(s3: S3Bucket, **extra: str) -> dict[str, str]:
    return {**s3.storage_options, **RETRY, **extra}


def _direct(s3: S3Bucket) -> Storage:
    """The bucket without the proxy: another writer, or a look at what is stored."""
    return Storage(s3.uri, storage_options={**s3.storage_options, "aws_endpoint": s3.direct_endpoint})


def _stored(s3: S3Bucket) -> dict[str, Any]:
    return json.loads(_direct(s3).read_bytes(LOCK_FILE))


def test_processes_exclude_each_other_on_a_bucket(s3: S3Bucket, tmp_path) -> None:
    intervals = run_contenders(s3.uri, _options(s3), FAST, str(tmp_path), processes=3, rounds=4, hold_s=0.02)
    assert_disjoint(intervals)
    final = _stored(s3)
    assert list(final) == ["expired", "validUntil", "owner"] and final["expired"] is True
    assert s3.proxy.counts["PUT"] >= 2 * 3 * 4  # an acquire and a release per round, at least


def test_mutual_exclusion_survives_throttling_and_lost_answers(s3: S3Bucket, tmp_path) -> None:
    slow = s3.proxy.add("status", status=503, every=5, op="PUT")
    lost = s3.proxy.add("lost", every=3, op="PUT", conditional_only=True, path_contains="table_lock.json", limit=8)
    reset = s3.proxy.add("reset", every=9, op="GET")
    intervals = run_contenders(s3.uri, _options(s3), FAST, str(tmp_path), processes=3, rounds=4, hold_s=0.02)
    assert_disjoint(intervals)
    assert slow.fired >= 3 and lost.fired >= 3 and reset.fired >= 1, (slow, lost, reset)
    assert _stored(s3)["expired"] is True, "the last release landed"


def test_a_killed_holder_blocks_others_for_about_one_lease_on_a_bucket(s3: S3Bucket, tmp_path) -> None:
    proc, owner = start_holder(s3.uri, _options(s3), FAST, str(tmp_path))
    try:
        time.sleep(3 * FAST["renew_interval_s"])
        os.kill(proc.pid, signal.SIGKILL)
        killed = time.monotonic()
        proc.join(10)
        last = _stored(s3)
        lock = StorageBasedLockProvider(Storage(s3.uri, storage_options=_options(s3)), LockSettings(**FAST))
        lock.acquire(10 * FAST["validity_s"])
        waited, taken_ms = time.monotonic() - killed, int(time.time() * 1000)
        lock.release()
    finally:
        if proc.is_alive():
            proc.kill()
    assert last["owner"] == owner and last["expired"] is False
    assert taken_ms >= last["validUntil"] + CLOCK_DRIFT_S * 1000, "taken only after the dead holder's lease"
    assert waited < 3 * FAST["validity_s"], f"held up {waited:.1f}s by a dead holder"


def test_renewals_failing_at_the_store_refuse_the_commit(s3: S3Bucket) -> None:
    storage = Storage(s3.uri, storage_options=_options(s3, **{"pyhudi.retry.max_attempts": "2"}))
    with table_lock(storage, LockSettings(provider=HUDI_CLASS, validity_s=1.2, renew_interval_s=0.3)) as lock:
        ensure_held(lock)
        failing = s3.proxy.add("status", status=503, op="PUT", path_contains="table_lock.json")
        deadline = time.monotonic() + 5
        while lock.still_held() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not lock.still_held() and failing.fired >= 2
        with pytest.raises(LockLostError, match="lease lapsed"):
            ensure_held(lock)
            storage.create_exclusive(".hoodie/20240101000000000.commit", b"{}")
        s3.proxy.clear()
    assert not _direct(s3).exists(".hoodie/20240101000000000.commit")
    assert _stored(s3)["expired"] is True, "released once the store answers again"


def test_lock_taken_over_behind_the_holders_back_is_lost(s3: S3Bucket) -> None:
    storage = Storage(s3.uri, storage_options=_options(s3))
    lock = make_lock(storage, LockSettings(provider=HUDI_CLASS, **FAST))
    lock.acquire(5)
    _direct(s3).write_atomic(LOCK_FILE, LockData(False, int(time.time() * 1000) + 60_000, "hudi-java").to_bytes())
    deadline = time.monotonic() + 3 * FAST["renew_interval_s"]
    while lock.still_held() and time.monotonic() < deadline:  # type: ignore[attr-defined]
        time.sleep(0.02)
    with pytest.raises(LockLostError, match="replaced"):
        ensure_held(lock)
    lock.release()
    assert _stored(s3)["owner"] == "hudi-java"


def test_store_ignoring_conditional_writes_is_refused_for_concurrent_writers(s3: S3Bucket) -> None:
    s3.proxy.add("strip_conditional")
    storage = Storage(s3.uri, storage_options=_options(s3))
    with pytest.raises(ConditionalWriteUnsupportedError) as info:
        make_lock(storage, LockSettings(provider=HUDI_CLASS))
    assert f"s3://{s3.bucket}/table" in str(info.value) and "SINGLE_WRITER" in str(info.value)
    with pytest.raises(ConditionalWriteUnsupportedError, match="OPTIMISTIC_CONCURRENCY_CONTROL"):
        make_lock(storage, LockSettings(occ=True))
    assert isinstance(make_lock(storage, LockSettings()), FileSystemLockProvider), "a single writer may go on"
    assert not _direct(s3).exists(LOCK_FILE)


def test_default_lock_on_a_bucket_is_the_storage_lock(s3: S3Bucket) -> None:
    lock = make_lock(Storage(s3.uri, storage_options=_options(s3)), LockSettings(occ=True))
    assert isinstance(lock, StorageBasedLockProvider)


# --------------------------------------------------------------------------- writers through the lock
def _rows(writer: int, step: int) -> list[dict[str, Any]]:
    part = ["2024/01", "007"][writer]  # each writer its own partition: no conflicts, only the lock
    return [{"k": f"ü-{writer}-{i}", "d": Decimal(f"{i}.5000"), "part": part,
             "name": None if i == 1 else f"名前{step}", "ts": step} for i in range(3 - step % 2)]


def test_two_processes_write_one_table_under_the_default_lock(s3: S3Bucket, tmp_path) -> None:
    options = {"hoodie.table.name": "locked", "hoodie.datasource.write.recordkey.field": "k,d",
               "hoodie.datasource.write.partitionpath.field": "part",
               "hoodie.datasource.write.precombine.field": "ts",
               "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
               "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
               "hoodie.write.lock.storage.validity.timeout.secs": "2",
               "hoodie.write.lock.storage.renew.interval.secs": "0.4"}
    schema = pa.schema([("k", pa.string()), ("d", pa.decimal128(10, 4)), ("part", pa.string()),
                        ("name", pa.string()), ("ts", pa.int64())])
    first = [{"k": "seed", "d": Decimal("0.0000"), "part": "p", "name": None, "ts": 0}]
    pyhudi.write(pa.Table.from_pylist(first, schema=schema), s3.uri, options)  # the table exists first
    per_writer = [[_rows(w, step) for step in range(1, 4)] for w in range(2)]
    results = run_writers(s3.uri, options, per_writer, str(tmp_path))
    assert results == [["ok"] * 3] * 2, results
    model: dict[tuple[str, str], tuple[Any, int]] = {("k:seed,d:0.0000", "p"): (None, 0)}
    for batches in per_writer:
        for rows in batches:
            for r in rows:
                model[(f"k:{r['k']},d:{r['d']}", r["part"])] = (r["name"], r["ts"])

    def as_model(table: pa.Table | None) -> dict[tuple[str, str], tuple[Any, int]]:
        rows = [] if table is None else table.to_pylist()
        return {(r["_hoodie_record_key"], r["_hoodie_partition_path"]): (r["name"], r["ts"]) for r in rows}

    got = pyhudi.read(s3.uri)
    got = got.read_all() if isinstance(got, pa.RecordBatchReader) else got
    assert as_model(got) == model
    assert as_model(s3.hudi_rs()) == model
    lock_object = _stored(s3)
    assert lock_object["expired"] is True, "the commits went through the storage-based lock"
    assert len([i for i in _direct(s3).list_dir(".hoodie") if i.name.endswith(".commit")]) == 7
