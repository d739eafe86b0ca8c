"""pytest fixtures for tables on a local GCS XML-API server (tests/support/gcs_server.py). Load them:

    pytest_plugins = ["tests.support.gcs_fixtures"]  # the gcs and gcs_session fixtures

`gcs_session` starts the server once per session in a child process; `gcs` (per test) creates a fresh
bucket, sets `GOOGLE_SERVICE_ACCOUNT_KEY` (a key whose `gcs_base_url` is the server) as a GCS user sets
their key, and gives `gs://<bucket>/table`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.child_server import use_env
from tests.support.gcs_server import GcsXmlServer, create_bucket, gcs_env

_CLEARED = ("GOOGLE_SERVICE_ACCOUNT", "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_BUCKET", "GOOGLE_BUCKET_NAME")


@dataclass
class GcsBucket:
    bucket: str
    uri: str
    endpoint: str
    env: dict[str, str]

    @property
    def storage_options(self) -> dict[str, str]:
        return {"google_service_account_key": self.env["GOOGLE_SERVICE_ACCOUNT_KEY"], "allow_http": "true"}

    def hudi_rs(self, uri: str | None = None) -> Any:
        """The table read by hudi-rs (None when empty), with explicit storage options."""
        import pyarrow as pa
        from hudi import HudiTableBuilder

        table = HudiTableBuilder.from_base_uri(uri or self.uri).with_storage_options(self.storage_options).build()
        batches = table.read()
        return pa.Table.from_batches(batches) if batches else None


@pytest.fixture(scope="session")
def gcs_session() -> Iterator[GcsXmlServer]:
    server = GcsXmlServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def gcs(gcs_session: GcsXmlServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[GcsBucket]:
    bucket = f"pyhudi-{uuid.uuid4().hex[:12]}"
    create_bucket(gcs_session.endpoint, bucket)
    env = gcs_env(gcs_session.endpoint)
    use_env(monkeypatch, env, _CLEARED)
    yield GcsBucket(bucket, f"gs://{bucket}/table", gcs_session.endpoint, env)
