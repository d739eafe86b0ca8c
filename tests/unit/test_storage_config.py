"""Where a table lives and how storage is configured: schemes, AWS environment and profiles, explicit
storage_options (which travel with a pickled Storage), retry settings. No server needed."""

from __future__ import annotations

import pickle

import pytest

from pyhudi.errors import InvalidConfigError, StorageError
from pyhudi.storage import Storage
from pyhudi.storage.config import Location, parse_location, resolve_options

AWS_VARS = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ALLOW_HTTP")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    for var in AWS_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))


@pytest.mark.parametrize(("uri", "expected"), [
    ("s3://bkt/warehouse/t1", Location("s3", "bkt", "warehouse/t1")),
    ("s3a://bkt/warehouse/t1", Location("s3", "bkt", "warehouse/t1")),
    ("s3://bkt", Location("s3", "bkt", "")),
    ("s3://bkt/a/p=2024%2F01/\u00e9", Location("s3", "bkt", "a/p=2024%2F01/\u00e9")),
    ("gs://gbkt/t", Location("gs", "gbkt", "t")),
    ("abfss://cont@acct.dfs.core.windows.net/dir/t", Location("az", "cont", "dir/t", "acct")),
    ("abfs://cont@acct.dfs.core.windows.net/t", Location("az", "cont", "t", "acct")),
    ("file:///tmp/x", Location("local", "", "/tmp/x")),
    ("/tmp/x", Location("local", "", "/tmp/x")),
    ("hdfs://nn:8020/t", Location("other", "", "hdfs://nn:8020/t")),
])
def test_parse_location(uri: str, expected: Location) -> None:
    assert parse_location(uri) == expected


def test_missing_bucket_is_named() -> None:
    with pytest.raises(InvalidConfigError, match=r"no bucket in 's3:///t'.*s3://bucket/path"):
        parse_location("s3:///t")


def test_environment_then_explicit_options(monkeypatch: pytest.MonkeyPatch) -> None:
    s3 = parse_location("s3://b/t")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://generic:1")
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://s3-specific:2")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_REGION", "eu-central-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "env-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    opts = resolve_options(s3, None)
    assert opts["aws_endpoint"] == "http://s3-specific:2" and opts["aws_region"] == "eu-central-1"
    assert opts["aws_access_key_id"] == "env-key" and opts["aws_allow_http"] == "true"
    explicit = resolve_options(s3, {"AWS_ENDPOINT_URL": "https://x.example", "region": "us-west-2",
                                    "aws_access_key_id": "k2"})
    assert explicit["aws_endpoint"] == "https://x.example" and explicit["aws_region"] == "us-west-2"
    assert explicit["aws_access_key_id"] == "k2" and explicit["aws_secret_access_key"] == "env-secret"
    assert resolve_options(parse_location("gs://b/t"), {"google_service_account": "/k.json"}) == \
        {"google_service_account": "/k.json"}


def test_aws_profile(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    (tmp_path / "credentials").write_text("[dev]\naws_access_key_id = pk\naws_secret_access_key = ps\n")
    (tmp_path / "config").write_text("[profile dev]\nregion = ap-south-1\nendpoint_url = http://minio:9000\n")
    monkeypatch.setenv("AWS_PROFILE", "dev")
    opts = resolve_options(parse_location("s3://b/t"), None)
    assert (opts["aws_access_key_id"], opts["aws_secret_access_key"]) == ("pk", "ps")
    assert opts["aws_region"] == "ap-south-1" and opts["aws_endpoint"] == "http://minio:9000"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "env-wins")
    assert resolve_options(parse_location("s3://b/t"), None)["aws_access_key_id"] == "env-wins"


def test_storage_options_travel_with_pickles() -> None:
    options = {"aws_endpoint": "http://127.0.0.1:9", "aws_region": "us-east-1"}
    s = Storage("s3a://bkt/t/", storage_options=options)
    clone = pickle.loads(pickle.dumps(s))
    assert clone.base_uri == "s3a://bkt/t" and clone.storage_options == options
    assert not clone.is_local and clone.uri("p/f.parquet") == "s3a://bkt/t/p/f.parquet"
    assert clone.full_path("p/f") == "bkt/t/p/f"


def test_bad_options_are_named() -> None:
    with pytest.raises(InvalidConfigError, match=r"pyhudi.retry.max_attempts='many'"):
        Storage("s3://b/t", storage_options={"pyhudi.retry.max_attempts": "many"}).exists("x")
    with pytest.raises(StorageError, match=r"pyhudi.conditional_writes='maybe'"):
        Storage("s3://b/t", storage_options={"pyhudi.conditional_writes": "maybe"}).exists("x")


@pytest.mark.parametrize(("uri", "options", "store"), [
    ("gs://bkt/t", {"google_skip_signature": "true"}, "GCSStore"),
    ("abfss://cont@acct.dfs.core.windows.net/t", {"azure_storage_account_key": "a2V5"}, "AzureStore"),
])
def test_gcs_and_azure_backends_are_built(uri: str, options: dict[str, str], store: str) -> None:
    """No GCS/Azure emulator runs here: this checks the stores are configured from the URI and options
    (the contract tests run on S3)."""
    backend = Storage(uri, storage_options=options)._object
    assert backend is not None and type(backend.store).__name__ == store
