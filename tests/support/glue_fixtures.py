"""pytest fixtures for a local AWS Glue Data Catalog (moto, see glue_server.py). Load them in a test module:

    pytest_plugins = ["tests.support.glue_fixtures"]

    def test_x(glue):
        client = pyhudi.sync.glue.connect(glue.options)   # Hudi's hoodie.aws.* keys point at the server
        glue.raw.get_table(DatabaseName=glue.database, Name="t")   # boto3's own Glue client, to check
        glue.server.fail("GetTable", "ThrottlingException", times=2)

`glue_session` starts the server once per session; `glue` (per test) gives a fresh database name, clears the
server's recorded requests and injected failures, and keeps the AWS_* environment of the machine out.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.glue_server import ACCESS_KEY, REGION, SECRET_KEY, MotoGlueServer, glue_options

# Variables that would send boto3 somewhere else than the options say (a developer's profile or endpoint).
CLEARED = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_GLUE", "AWS_ENDPOINT_URL_STS",
           "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
           "AWS_RETRY_MODE", "AWS_MAX_ATTEMPTS", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE")


@dataclass
class GlueCatalog:
    """One test's view of the server: `database` is a fresh name, `options` Hudi's keys for the server,
    `raw` boto3's Glue client on it."""

    server: MotoGlueServer
    database: str
    options: dict[str, str]
    raw: Any

    @property
    def endpoint(self) -> str:
        return self.server.endpoint


@pytest.fixture(scope="session")
def glue_session() -> Iterator[MotoGlueServer]:
    server = MotoGlueServer().start_in_thread()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def glue(glue_session: MotoGlueServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Iterator[GlueCatalog]:
    import boto3

    for var in CLEARED:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    glue_session.reset()
    raw = boto3.session.Session(aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
                                region_name=REGION).client("glue", endpoint_url=glue_session.endpoint)
    yield GlueCatalog(glue_session, f"db_{uuid.uuid4().hex[:10]}", glue_options(glue_session.endpoint), raw)
    glue_session.reset()
