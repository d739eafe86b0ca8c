"""The storage contract, on local disk, on a local S3 server (moto), on a local Azure Blob server
(Azurite) and on a local GCS XML-API server (ours: no PyPI emulator speaks the API obstore uses, see
tests/support/gcs_server.py), with the same assertions: reads, writes, listing, deletes, exclusive
creates raced by separate processes, compare-and-swap."""

from __future__ import annotations

import multiprocessing
import pickle
from typing import TYPE_CHECKING

import pytest

from pyhudi.errors import ConditionalWriteUnsupportedError, HudiError, StorageError
from pyhudi.storage import Storage
from pyhudi.storage.storage import TEMP_DIR

if TYPE_CHECKING:
    from tests.support.azure_fixtures import AzureContainer
    from tests.support.gcs_fixtures import GcsBucket
    from tests.support.s3_fixtures import S3Bucket

pytest_plugins = ["tests.support.s3_fixtures", "tests.support.azure_fixtures", "tests.support.gcs_fixtures"]


@pytest.fixture(params=["local", "s3", "azure", "gcs"])
def storage(request: pytest.FixtureRequest, tmp_path) -> Storage:
    if request.param == "local":
        return Storage(str(tmp_path / "table"))
    bucket: S3Bucket | AzureContainer | GcsBucket = request.getfixturevalue(request.param)
    return Storage(bucket.uri)


def test_reads_writes_and_listing(storage: Storage) -> None:
    assert storage.list_dir("") == [] and not storage.exists("a") and storage.mtime_ms("nope") is None
    storage.write_atomic(".hoodie/hoodie.properties", b"hoodie.table.name=t\n")
    storage.write_bytes("p=1/2024/f1.parquet", b"12345")
    storage.write_bytes("p=1/2024/\u00e9t\u00e9 x.parquet", b"")  # unicode, space, empty file
    storage.write_atomic("p=1/2024/f1.parquet", b"67")  # replace
    assert storage.read_bytes("p=1/2024/f1.parquet") == b"67"
    assert storage.size("p=1/2024/f1.parquet") == 2 and storage.size("p=1/2024/\u00e9t\u00e9 x.parquet") == 0
    assert storage.exists("p=1") and storage.is_dir("p=1") and storage.is_dir("p=1/2024")
    assert storage.exists("p=1/2024/f1.parquet") and not storage.is_dir("p=1/2024/f1.parquet")
    assert not storage.exists("p=1/20") and not storage.exists("p=1/2024/f1")  # prefixes are not entries
    assert storage.mtime_ms("p=1/2024/f1.parquet") > 0
    top = {(i.name, i.is_dir) for i in storage.list_dir("")}
    assert top == {(".hoodie", True), ("p=1", True)}
    files = {i.path: i.size for i in storage.list_dir("p=1/2024")}
    assert files == {"p=1/2024/f1.parquet": 2, "p=1/2024/\u00e9t\u00e9 x.parquet": 0}
    assert [i.path for i in storage.list_dir("p=1")] == ["p=1/2024"]
    assert storage.list_dir("missing/dir") == []
    with pytest.raises(FileNotFoundError):
        storage.read_bytes("p=1/2024/none")


def test_streams_and_deletes(storage: Storage) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"k": ["a", None, "\u00fc/1"], "v": [1.5, None, 3.0]})
    with storage.open_output_stream("part/x.parquet") as sink:
        pq.write_table(table, sink)
    with storage.open_input_file("part/x.parquet") as f:
        assert pq.read_table(f).equals(table)
    assert storage.delete("part/x.parquet") is True
    assert not storage.exists("part/x.parquet")
    storage.delete("part/x.parquet")  # idempotent
    for i in range(3):
        storage.write_bytes(f"d/sub/{i}", b"x")
    storage.delete_dir("d")
    assert not storage.exists("d") and storage.list_dir("d") == []
    storage.delete_dir("d")  # idempotent


def test_listing_never_shows_temp_files(storage: Storage) -> None:
    for i in range(5):
        assert storage.create_exclusive(f".hoodie/00{i}.commit", b"{}")
        storage.write_atomic(f".hoodie/00{i}.commit.meta", b"{}")
    names = {i.name for i in storage.list_dir(".hoodie") if not i.is_dir}  # .aux is Hudi's own folder
    assert names == {f"00{i}.commit" for i in range(5)} | {f"00{i}.commit.meta" for i in range(5)}
    leftovers = [i for i in storage.list_dir(TEMP_DIR) if not i.is_dir]
    assert leftovers == []


def test_exclusive_create_and_pickling(storage: Storage) -> None:
    assert storage.create_exclusive(".hoodie/1.commit", b"first")
    assert not storage.create_exclusive(".hoodie/1.commit", b"second")
    assert storage.read_bytes(".hoodie/1.commit") == b"first"
    assert storage.write_new(".hoodie/log.1", b"L1") and not storage.write_new(".hoodie/log.1", b"L2")
    assert storage.read_bytes(".hoodie/log.1") == b"L1"
    assert storage.supports_conditional_create()
    copy = pickle.loads(pickle.dumps(storage))
    assert copy.read_bytes(".hoodie/1.commit") == b"first" and copy.base_uri == storage.base_uri


def test_compare_and_swap(storage: Storage) -> None:
    storage.write_atomic(".hoodie/.locks/lock.json", b'{"owner": "a"}')
    data, etag = storage.read_with_etag(".hoodie/.locks/lock.json")
    assert data == b'{"owner": "a"}'
    new_etag = storage.put_if_match(".hoodie/.locks/lock.json", b'{"owner": "b"}', etag)
    assert new_etag is not None and new_etag != etag
    assert storage.put_if_match(".hoodie/.locks/lock.json", b'{"owner": "c"}', etag) is None  # stale
    assert storage.read_bytes(".hoodie/.locks/lock.json") == b'{"owner": "b"}'
    if storage.base_uri.startswith("gs://"):  # obstore cannot send a conditional DELETE to GCS (it signs
        with pytest.raises(ConditionalWriteUnsupportedError):  # URLs only with a real service account)
            storage.delete_if_match(".hoodie/.locks/lock.json", new_etag)
        assert storage.exists(".hoodie/.locks/lock.json")
        storage.delete(".hoodie/.locks/lock.json")
    else:
        assert storage.delete_if_match(".hoodie/.locks/lock.json", etag) is False
        assert storage.exists(".hoodie/.locks/lock.json")
        assert storage.delete_if_match(".hoodie/.locks/lock.json", new_etag) is True
    assert not storage.exists(".hoodie/.locks/lock.json")
    assert storage.put_if_match(".hoodie/.locks/lock.json", b"x", new_etag) is None  # gone
    with pytest.raises(FileNotFoundError):
        storage.read_with_etag(".hoodie/.locks/lock.json")


def _race(uri: str, rels: list[str], me: int, barrier, results) -> None:  # type: ignore[no-untyped-def]
    storage = Storage(uri)  # rebuilt in the child from the URI and the AWS_* environment
    storage.exists(rels[0])  # connect before the start line
    for rel in rels:
        barrier.wait()
        results.put((rel, me, storage.create_exclusive(rel, f"writer-{me}".encode())))


def test_exclusive_create_raced_by_processes(storage: Storage) -> None:
    """N processes create the same instant files at once, round after round: exactly one wins each
    round, and its content is what is stored."""
    ctx = multiprocessing.get_context("spawn")
    n, rels = 4, [f".hoodie/2024010100000{r}.commit" for r in range(5)]
    barrier, results = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=_race, args=(storage.base_uri, rels, i, barrier, results)) for i in range(n)]
    for p in procs:
        p.start()
    outcome = [results.get(timeout=60) for _ in range(n * len(rels))]
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    for rel in rels:
        winners = [me for r, me, won in outcome if r == rel and won]
        assert len(winners) == 1, (rel, outcome)
        assert storage.read_bytes(rel) == f"writer-{winners[0]}".encode()


def _increment(uri: str, rel: str, times: int, barrier) -> None:  # type: ignore[no-untyped-def]
    storage = Storage(uri)
    barrier.wait()
    done = 0
    while done < times:
        data, etag = storage.read_with_etag(rel)
        if storage.put_if_match(rel, str(int(data) + 1).encode(), etag) is not None:
            done += 1


def test_compare_and_swap_raced_by_processes(storage: Storage) -> None:
    """Processes increment one counter by read + put_if_match: no increment is lost (each swap saw the
    version it replaced)."""
    ctx = multiprocessing.get_context("spawn")
    storage.write_atomic(".hoodie/.locks/counter", b"0")
    n, times = 3, 8
    barrier = ctx.Barrier(n)
    procs = [ctx.Process(target=_increment, args=(storage.base_uri, ".hoodie/.locks/counter", times, barrier))
             for _ in range(n)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    assert storage.read_bytes(".hoodie/.locks/counter") == str(n * times).encode()


def test_storage_error_is_hudi_and_os_error() -> None:
    assert issubclass(StorageError, HudiError) and issubclass(StorageError, OSError)
