"""pytest fixtures for tables on a local S3 server. Load them in a test module:

    pytest_plugins = ["tests.support.s3_fixtures"]  # in the test module: the s3 and s3_session fixtures

    def test_x(s3):
        storage = Storage(s3.uri)             # the standard AWS_* variables point at the server
        s3.proxy.add("status", status=503, every=3, op="PUT")
        ...
        assert s3.proxy.counts["PUT"] == ...

`s3_session` starts moto's S3 server on 127.0.0.1 (a free port, in a child process) and a fault proxy
(in this process) in front of it, once per session; both stop at session end. `s3` (per test) creates a fresh bucket, sets the AWS_*
environment to reach it through the proxy, clears the proxy's rules and counts, and gives the URI.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.child_server import use_env
from tests.support.fault_proxy import FaultProxy
from tests.support.s3_server import MotoS3Server, create_bucket, s3_env


@dataclass
class S3Session:
    server: MotoS3Server
    proxy: FaultProxy


@dataclass
class S3Bucket:
    """One test's bucket: `uri` is `s3://<bucket>/table`; `endpoint` goes through the fault proxy,
    `direct_endpoint` does not; `env` is what a user would export; `storage_options` the same as
    explicit options (for hudi-rs or `Storage(..., storage_options=...)`)."""

    bucket: str
    uri: str
    endpoint: str
    direct_endpoint: str
    proxy: FaultProxy
    env: dict[str, str]

    def hudi_rs(self, uri: str | None = None) -> Any:
        """The table read by the independent hudi-rs reader (None when empty), configured with explicit
        storage options as a hudi-rs user on a custom endpoint would."""
        import pyarrow as pa
        from hudi import HudiTableBuilder

        table = HudiTableBuilder.from_base_uri(uri or self.uri).with_storage_options(self.storage_options).build()
        batches = table.read()
        return pa.Table.from_batches(batches) if batches else None

    @property
    def storage_options(self) -> dict[str, str]:
        return {"aws_endpoint": self.endpoint, "aws_access_key_id": self.env["AWS_ACCESS_KEY_ID"],
                "aws_secret_access_key": self.env["AWS_SECRET_ACCESS_KEY"],
                "aws_region": self.env["AWS_REGION"], "aws_allow_http": "true"}


@pytest.fixture(scope="session")
def s3_session() -> Iterator[S3Session]:
    server = MotoS3Server().start()
    proxy = FaultProxy(server.endpoint)
    try:
        yield S3Session(server, proxy)
    finally:
        proxy.stop()
        server.stop()


@pytest.fixture
def s3(s3_session: S3Session, monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Bucket]:
    bucket = f"pyhudi-{uuid.uuid4().hex[:12]}"
    create_bucket(s3_session.server.endpoint, bucket)
    env = s3_env(s3_session.proxy.url)
    use_env(monkeypatch, env, ("AWS_PROFILE", "AWS_ENDPOINT_URL_S3", "AWS_SESSION_TOKEN"))
    s3_session.proxy.clear()
    yield S3Bucket(bucket, f"s3://{bucket}/table", s3_session.proxy.url, s3_session.server.endpoint,
                   s3_session.proxy, env)
    s3_session.proxy.clear()
