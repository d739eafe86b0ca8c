"""Tables on Azure Blob storage (Azurite on loopback) and on GCS (our XML-API stand-in,
tests/support/gcs_server.py: no PyPI emulator speaks the API obstore uses), in-process (no Spark):
`pyhudi.write` of Arrow data to `abfss://container@devstoreaccount1.dfs.core.windows.net/table` or
`gs://bucket/table`, configured only through the standard variables (AZURE_STORAGE_ACCOUNT_NAME/_KEY/
_ENDPOINT; GOOGLE_SERVICE_ACCOUNT_KEY), then `pyhudi.read` and the independent hudi-rs reader, both
against a model. COW and MOR, one upsert after the first write and one delete, adversarial keys and
partition values, nulls and an empty batch; a conditional create whose answer was lost;
conditional-write detection. The storage contract on both is in tests/unit/test_storage_contract.py.
"""

from __future__ import annotations

import pathlib
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.storage import Storage
from tests.integration.s3_model import as_model, read_arrow

if TYPE_CHECKING:
    from tests.support.azure_fixtures import AzureContainer
    from tests.support.gcs_fixtures import GcsBucket

pytest_plugins = ["tests.support.azure_fixtures", "tests.support.gcs_fixtures"]

SCHEMA = pa.schema([("k", pa.string()), ("d", pa.decimal128(20, 4)), ("part", pa.string()),
                    ("name", pa.string()), ("ts", pa.int64())])
Model = dict[tuple[str, str], tuple[Any, int]]
Row = tuple[str, str, str, "str | None"]

# (key, decimal, partition, name): unicode and `/` in keys, digits and `/` and spaces in partition values
FIRST: list[Row] = [("ü/ß", "0.0000", "2024/01", None), ("日本", "1.5000", "007", "名前"), ("a,b", "-2.2500", "a b", "n"),
         ("plain", "0.0000", "p", ""), ("007", "1.5000", "007", None)]
UPSERT: list[Row] = [("ü/ß", "0.0000", "2024/01", "changed"), ("x y", "-2.2500", "p", "new"), ("日本", "1.5000", "007", None)]
DELETE: list[Row] = [("a,b", "-2.2500", "a b", None), ("nope", "0.0000", "p", None)]  # the second key never existed


def _opts(table_type: str, op: str) -> dict[str, str]:
    return {"hoodie.table.name": "azt", "hoodie.datasource.write.recordkey.field": "k,d",
            "hoodie.datasource.write.partitionpath.field": "part",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.table.type": table_type,
            "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
            "hoodie.datasource.write.operation": op}


def _table(rows: list[Row], ts: int) -> pa.Table:
    return pa.Table.from_pylist([{"k": k, "d": Decimal(d), "part": p, "name": n, "ts": ts} for k, d, p, n in rows],
                                schema=SCHEMA)


def _apply(model: Model, rows: list[Row], ts: int, op: str) -> None:
    for k, d, p, n in rows:
        key = (f"k:{k},d:{Decimal(d)}", p)
        if op == "delete":
            model.pop(key, None)
        else:
            model[key] = (n, ts)


@pytest.fixture(params=["azure", "gcs"])
def cloud(request: pytest.FixtureRequest) -> AzureContainer | GcsBucket:
    """A fresh container (Azurite) or bucket (GCS stand-in) with the standard variables set."""
    return request.getfixturevalue(request.param)  # type: ignore[no-any-return]


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_write_upsert_delete_andread_arrow(cloud: AzureContainer | GcsBucket, table_type: str) -> None:
    model: Model = {}
    steps: list[tuple[list[Row], str]] = [(FIRST, "upsert"), (UPSERT, "upsert"), (DELETE, "delete")]
    for ts, (rows, op) in enumerate(steps, start=1):
        pyhudi.write(_table(rows, ts), cloud.uri, _opts(table_type, op))
        _apply(model, rows, ts, op)
        assert as_model(read_arrow(cloud.uri)) == model, f"{op} {ts}: pyhudi.read"
        assert as_model(cloud.hudi_rs()) == model, f"{op} {ts}: hudi-rs"
    pyhudi.write(SCHEMA.empty_table(), cloud.uri, _opts(table_type, "upsert"))  # an empty batch changes nothing
    assert as_model(read_arrow(cloud.uri)) == model and as_model(cloud.hudi_rs()) == model
    storage = Storage(cloud.uri)
    assert storage.supports_conditional_create()
    completed = [i.name for i in storage.list_dir(".hoodie") if i.name.endswith((".commit", ".deltacommit"))]
    assert len(completed) == 4, completed
    assert {r["_hoodie_partition_path"] for r in cloud.hudi_rs().to_pylist()} == {"2024/01", "007", "p"}


def test_lost_answer_of_a_conditional_create_is_a_win(cloud: AzureContainer | GcsBucket,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The first conditional PUT takes effect but its answer is lost (a connection reset): the retry gets
    412, reads the object's create token (object metadata: `pyhudi_create_token` on Azure, whose
    metadata names must be identifiers; `pyhudi-create-token` elsewhere) and knows it won; a second
    creator still loses."""
    import obstore

    from pyhudi.storage import object_store

    real_put, calls = obstore.put, []

    def put_then_reset(store: Any, path: str, data: Any, **kw: Any) -> Any:
        result = real_put(store, path, data, **kw)
        calls.append(path)
        if len(calls) == 1:
            raise ConnectionResetError("connection reset by peer after the blob was stored")
        return result

    storage = Storage(cloud.uri, storage_options={"pyhudi.retry.base_delay_ms": "1"})
    monkeypatch.setattr(object_store.obstore, "put", put_then_reset)
    assert storage.create_exclusive(".hoodie/20240101000000000.commit", b"mine")
    monkeypatch.setattr(object_store.obstore, "put", real_put)
    assert len(calls) == 1  # the retry was answered 412 (AlreadyExists) before storing anything
    assert not Storage(cloud.uri).create_exclusive(".hoodie/20240101000000000.commit", b"theirs")
    assert storage.read_bytes(".hoodie/20240101000000000.commit") == b"mine"


def test_conditional_writes_detected_and_overridable(cloud: AzureContainer | GcsBucket) -> None:
    """Both honour conditional creates (Azurite `If-None-Match: *`, GCS `x-goog-if-generation-match: 0`),
    so the probe says yes (and leaves no probe object behind);
    `pyhudi.conditional_writes=false` forces check-then-put."""
    storage = Storage(cloud.uri)
    assert storage.supports_conditional_create()
    assert not storage.exists(".hoodie/.aux/.pyhudi-probe")
    forced = Storage(cloud.uri, storage_options={"pyhudi.conditional_writes": "false"})
    assert not forced.supports_conditional_create()
    assert forced.create_exclusive("x", b"1") and not forced.create_exclusive("x", b"2")
    assert storage.read_bytes("x") == b"1"


def test_azure_storage_fs_reaches_the_emulator(azure: AzureContainer) -> None:
    """`Storage.fs` (pyarrow's AzureFileSystem) is configured from the same endpoint: it reads what
    Storage wrote."""
    storage = Storage(azure.uri)
    storage.write_bytes("p=1/x.bin", b"\x00abc")
    with storage.fs.open_input_stream(storage.full_path("p=1/x.bin")) as f:
        assert f.read() == b"\x00abc"


# -- configuration, no server -----------------------------------------------------------------------------
def test_gcs_and_azure_variables_are_resolved_and_travel(monkeypatch: pytest.MonkeyPatch) -> None:
    """The standard GCS and Azure variables are resolved like the AWS_* ones: explicit options win, and a
    pickled Storage carries them to a process that never saw the variables (Spark's executors)."""
    import pickle

    from pyhudi.storage.config import parse_location, resolve_options

    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_NAME", "acct")
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_KEY", "a2V5")
    monkeypatch.setenv("AZURE_STORAGE_ENDPOINT", "http://127.0.0.1:1/acct")
    monkeypatch.setenv("GOOGLE_SERVICE_ACCOUNT_KEY", '{"gcs_base_url": "http://127.0.0.1:2"}')
    az = parse_location("abfss://c@acct.dfs.core.windows.net/t")
    assert resolve_options(az, {"azure_storage_account_key": "b3RoZXI="}) == {
        "azure_storage_account_name": "acct", "azure_storage_account_key": "b3RoZXI=",
        "azure_storage_endpoint": "http://127.0.0.1:1/acct"}
    assert resolve_options(parse_location("gs://b/t"), None) == {
        "google_service_account_key": '{"gcs_base_url": "http://127.0.0.1:2"}'}
    state = pickle.dumps(Storage("abfss://c@acct.dfs.core.windows.net/t"))
    for var in ("AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_ENDPOINT"):
        monkeypatch.delenv(var)
    shipped = pickle.loads(state)
    assert shipped._resolved()["azure_storage_endpoint"] == "http://127.0.0.1:1/acct"


@pytest.mark.parametrize(("options", "plain_http"), [
    ({"azure_storage_endpoint": "http://127.0.0.1:1/acct"}, True),
    ({"azure_storage_endpoint": "https://acct.blob.core.windows.net"}, False),
    ({"google_service_account_key": '{"gcs_base_url": "http://127.0.0.1:2", "disable_oauth": true}'}, True),
    ({"google_service_account_key": "/path/to/key.json"}, False),
    ({"google_allow_http": "true"}, True),
    ({"aws_allow_http": "false", "allow_http": "true"}, False),  # S3: as before, aws_allow_http decides
])
def test_plain_http_follows_the_endpoint(options: dict[str, str], plain_http: bool) -> None:
    from pyhudi.storage.object_store import _allow_http

    conf = dict(options)
    assert _allow_http(conf) is plain_http
    assert not any(k.endswith("allow_http") for k in conf)  # a client option, never passed as a store key


def test_a_gcs_bucket_ignoring_preconditions_is_detected(gcs: GcsBucket) -> None:
    """A store that ignores `x-goog-if-generation-match` (the stand-in's `ignore-preconditions-*` buckets)
    is reported as without conditional writes; exclusive creates fall back to check-then-put (safe for a
    single writer only) and still refuse an existing object."""
    from tests.support.gcs_server import IGNORING_PRECONDITIONS, create_bucket

    name = IGNORING_PRECONDITIONS + gcs.bucket
    create_bucket(gcs.endpoint, name)
    storage = Storage(f"gs://{name}/table")
    assert not storage.supports_conditional_create()
    assert not storage.exists(".hoodie/.aux/.pyhudi-probe")  # the probe object was deleted
    assert storage.create_exclusive(".hoodie/1.commit", b"a")
    assert not storage.create_exclusive(".hoodie/1.commit", b"b")
    assert storage.read_bytes(".hoodie/1.commit") == b"a"
    assert Storage(gcs.uri).supports_conditional_create()  # the honest bucket next to it


def test_table_lock_on_the_store(cloud: AzureContainer | GcsBucket, tmp_path: pathlib.Path) -> None:
    """Hudi's storage-based lock (RFC-91) on the container/bucket itself: one holder at a time, released by
    writing an expired lock (compare-and-swap: ETag on Azure, generation on GCS); then processes
    contending hold it in disjoint intervals."""
    import json

    from pyhudi.transaction.lock import LockSettings, StorageBasedLockProvider
    from pyhudi.transaction.storage_lock import LOCK_FILE
    from tests.integration.storage_lock_worker import assert_disjoint, run_contenders

    fast: dict[str, Any] = {"validity_s": 2.0, "renew_interval_s": 0.4}
    storage = Storage(cloud.uri)
    settings = LockSettings(validity_s=fast["validity_s"], renew_interval_s=fast["renew_interval_s"])
    first, second = (StorageBasedLockProvider(storage, settings) for _ in range(2))
    first.acquire(5)
    assert not second.try_acquire()
    assert json.loads(storage.read_bytes(LOCK_FILE))["owner"] == first.owner
    first.release()
    assert json.loads(storage.read_bytes(LOCK_FILE))["expired"] is True
    assert second.try_acquire()
    second.release()
    intervals = run_contenders(cloud.uri, None, fast, str(tmp_path), processes=2, rounds=3, hold_s=0.05)
    assert len(intervals) == 6
    assert_disjoint(intervals)


def test_a_large_object_is_a_multipart_upload_read_back_whole(cloud: AzureContainer | GcsBucket) -> None:
    """Above obstore's part size a PUT becomes a multipart upload (GCS: XML multipart; Azure: blocks, then
    a block list): it appears whole, and ranged reads see the right bytes."""
    body = bytes(range(256)) * (11 * 4096)  # 11 MiB
    storage = Storage(cloud.uri)
    storage.write_bytes("p=1/big.bin", pa.py_buffer(body))
    assert storage.size("p=1/big.bin") == len(body)
    with storage.open_input_file("p=1/big.bin") as f:
        f.seek(len(body) - 300)
        assert f.read(300) == body[-300:]
    assert storage.read_bytes("p=1/big.bin") == body
