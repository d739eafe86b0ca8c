"""Object-store faults through the fault proxy: throttling, server errors, resets, slow answers, lost
answers to conditional creates, and stores without conditional writes."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pytest

from pyhudi.errors import ConditionalWriteUnsupportedError, StorageError
from pyhudi.storage import Storage
from pyhudi.storage.retry import RetryPolicy, is_transient

if TYPE_CHECKING:
    from tests.support.s3_fixtures import S3Bucket

pytest_plugins = ["tests.support.s3_fixtures"]  # the s3 and s3_session fixtures

FAST = {"pyhudi.retry.base_delay_ms": "1", "pyhudi.retry.max_delay_ms": "20"}


def _direct(s3: S3Bucket) -> Storage:
    """The same table reached without the proxy (another writer, or a check of what is stored)."""
    return Storage(s3.uri, storage_options={**s3.storage_options, "aws_endpoint": s3.direct_endpoint})


def _workload(storage: Storage) -> None:
    for i in range(6):
        rel = f".hoodie/2024010100000{i}.commit"
        assert storage.create_exclusive(rel, f"c{i}".encode())
        assert not storage.create_exclusive(rel, b"again")
        storage.write_atomic(f"p/{i}/f.parquet", b"x" * i)
    assert {i.name for i in storage.list_dir(".hoodie")} == {f"2024010100000{i}.commit" for i in range(6)}
    assert [storage.read_bytes(f".hoodie/2024010100000{i}.commit") for i in range(6)] == \
        [f"c{i}".encode() for i in range(6)]
    assert storage.delete("p/3/f.parquet") and not storage.exists("p/3/f.parquet")


@pytest.mark.parametrize("status", [503, 500])
def test_every_third_request_fails(s3: S3Bucket, status: int) -> None:
    rule = s3.proxy.add("status", status=status, every=3)
    _workload(Storage(s3.uri, storage_options=FAST))
    assert rule.fired >= 5, rule  # faults were injected and absorbed by retries
    assert sum(s3.proxy.counts.values()) > rule.fired


def test_connection_resets_and_slow_answers(s3: S3Bucket) -> None:
    reset = s3.proxy.add("reset", every=4)
    slow = s3.proxy.add("delay", delay_s=0.05, every=2)
    start = time.monotonic()
    _workload(Storage(s3.uri, storage_options=FAST))
    assert reset.fired >= 3 and slow.fired >= 5
    assert time.monotonic() - start >= 0.05 * slow.fired


def test_lost_answer_to_a_conditional_create_is_a_success(s3: S3Bucket) -> None:
    """The PUT took effect but its 200 never arrived: the retry gets 412, reads the object's create
    token back, and recognises its own create (neither a failed nor a doubled commit)."""
    storage = Storage(s3.uri, storage_options=FAST)
    lost = s3.proxy.add("lost", op="PUT", path_contains=".hoodie/", conditional_only=True, limit=1)
    assert storage.create_exclusive(".hoodie/20240101000000000.commit", b"mine")
    assert lost.fired == 1
    assert _direct(s3).read_bytes(".hoodie/20240101000000000.commit") == b"mine"
    assert not storage.create_exclusive(".hoodie/20240101000000000.commit", b"again")  # still exclusive
    lost_new = s3.proxy.add("lost", op="PUT", path_contains="log.1", conditional_only=True, limit=1)
    assert storage.write_new("p/.f1_1.log.1_0-1-0", b"log")  # write_new is a conditional create too
    assert lost_new.fired == 1


def test_lost_attempt_then_another_writer_wins(s3: S3Bucket) -> None:
    """Our first PUT never reached the store and meanwhile another writer created the file: the retry's
    412 carries someone else's token, so we lost."""
    storage = Storage(s3.uri, storage_options=FAST)
    assert _direct(s3).create_exclusive(".hoodie/20240101000000001.commit", b"theirs")
    reset = s3.proxy.add("reset", op="PUT", conditional_only=True, limit=1)
    assert not storage.create_exclusive(".hoodie/20240101000000001.commit", b"mine")
    assert reset.fired == 1
    assert storage.read_bytes(".hoodie/20240101000000001.commit") == b"theirs"


def test_persistent_failure_is_a_storage_error(s3: S3Bucket) -> None:
    storage = Storage(s3.uri, storage_options={**FAST, "pyhudi.retry.max_attempts": "3"})
    s3.proxy.add("status", status=503)
    with pytest.raises(StorageError) as info:
        storage.write_atomic(".hoodie/hoodie.properties", b"x")
    message = str(info.value)
    assert f"s3://{s3.bucket}/table/.hoodie/hoodie.properties" in message and "PUT" in message
    assert "3 attempts" in message and "pyhudi.retry.max_attempts" in message
    assert s3.proxy.counts["PUT"] == 3
    with pytest.raises(StorageError, match="GET of"):
        storage.read_bytes(".hoodie/hoodie.properties")


def test_store_ignoring_if_none_match_is_detected(s3: S3Bucket) -> None:
    s3.proxy.add("strip_conditional")
    storage = Storage(s3.uri)
    assert storage.supports_conditional_create() is False
    assert storage.list_dir(".hoodie/.aux/.pyhudi-probe") == []  # the probe cleans up
    # single-writer fallback: check-then-put still refuses an existing file
    assert storage.create_exclusive(".hoodie/1.commit", b"a") and not storage.create_exclusive(".hoodie/1.commit", b"b")
    assert storage.read_bytes(".hoodie/1.commit") == b"a"


def test_store_answering_not_implemented_is_detected(s3: S3Bucket, caplog: pytest.LogCaptureFixture) -> None:
    s3.proxy.add("not_implemented")
    storage = Storage(s3.uri)
    assert storage.create_exclusive(".hoodie/1.commit", b"a")  # falls back, with a warning
    assert "does not support conditional writes" in caplog.text
    assert not storage.create_exclusive(".hoodie/1.commit", b"b")
    assert storage.supports_conditional_create() is False
    data, etag = storage.read_with_etag(".hoodie/1.commit")
    with pytest.raises(ConditionalWriteUnsupportedError, match="does not support conditional writes"):
        storage.put_if_match(".hoodie/1.commit", b"c", etag)


def test_conditional_writes_option(s3: S3Bucket) -> None:
    assert Storage(s3.uri, storage_options={"pyhudi.conditional_writes": "false"}).supports_conditional_create() \
        is False
    s3.proxy.add("not_implemented")
    forced = Storage(s3.uri, storage_options={"pyhudi.conditional_writes": "true", **FAST})
    with pytest.raises(StorageError):
        forced.create_exclusive(".hoodie/1.commit", b"a")  # told the store has them: no silent fallback


def test_transient_classification() -> None:
    flush = OSError("AWS Error INTERNAL_FAILURE during GetObject operation: Failed to flush response stream")
    assert is_transient(flush) and is_transient(ConnectionResetError()) and is_transient(TimeoutError())
    assert is_transient(OSError("AWS Error SLOW_DOWN during PutObject operation: Please reduce your rate"))
    assert not is_transient(FileNotFoundError("x")) and not is_transient(PermissionError("x"))
    assert not is_transient(OSError("412 Precondition Failed")) and not is_transient(StorageError("503 Service Unavailable"))
    # a timing inside an error text is not a status code
    assert is_transient(OSError("PUT in 501.9us - Server returned non-2xx status code: 500 Internal Server Error"))
    assert not is_transient(OSError("PUT in 503.1us - Server returned non-2xx status code: 403 Forbidden"))
    policy = RetryPolicy(max_attempts=4, base_delay_s=0.1, max_delay_s=0.3)
    assert all(0 <= policy.delay(k) <= 0.3 for k in range(10) for _ in range(20))


def test_parquet_streams_survive_throttling(s3: S3Bucket) -> None:
    """pyarrow's own S3 reader does not retry a throttled HeadObject/GetObject (measured in
    tests/support/measure_s3.py); Storage's streams retry each ranged GET and the PUT at close."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    storage = Storage(s3.uri, storage_options=FAST)
    table = pa.table({"k": [f"k{i}" for i in range(5000)], "v": list(range(5000))})
    rule = s3.proxy.add("status", status=503, every=2)
    with storage.open_output_stream("p/f.parquet") as sink:
        pq.write_table(table, sink, row_group_size=1000)
    for _ in range(3):
        with storage.open_input_file("p/f.parquet") as f:
            assert pq.read_table(f).equals(table)
            assert pq.ParquetFile(f).metadata.num_row_groups == 5
    assert rule.fired >= 4


def test_interrupted_stream_leaves_no_object(s3: S3Bucket) -> None:
    storage = Storage(s3.uri)
    with pytest.raises(RuntimeError, match="writer died"), storage.open_output_stream("p/torn.parquet") as sink:
        sink.write(b"PAR1" + b"x" * 1000)
        raise RuntimeError("writer died")
    assert not storage.exists("p/torn.parquet") and storage.list_dir("p") == []
    with pytest.raises(FileNotFoundError):
        storage.open_input_file("p/torn.parquet")
