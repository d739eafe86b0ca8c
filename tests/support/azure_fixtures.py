"""pytest fixtures for tables on a local Azure Blob server (Azurite). Load them in a test module:

    pytest_plugins = ["tests.support.azure_fixtures"]  # the azure and azure_session fixtures

    def test_x(azure):
        storage = Storage(azure.uri)   # the standard AZURE_STORAGE_* variables point at Azurite

`azure_session` starts Azurite once per session (skips with the reason when it is not installed: see
tests/support/azure_server.py); `azure` (per test) creates a fresh container, sets the Azure variables a
user would export (account, key, endpoint) and gives `abfss://<container>@devstoreaccount1.dfs.core.windows.net/table`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.azure_server import (
    ACCOUNT,
    AzuriteServer,
    azure_env,
    create_container,
    missing_reason,
)
from tests.support.child_server import use_env

_CLEARED = ("AZURE_STORAGE_USE_EMULATOR", "AZURE_STORAGE_SAS_TOKEN", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET",
            "AZURE_TENANT_ID", "AZURITE_BLOB_STORAGE_URL")


@dataclass
class AzureContainer:
    """One test's container: `uri` is its table URI; `env` what a user would export; `storage_options`
    the same as explicit options (for hudi-rs or `Storage(..., storage_options=...)`)."""

    container: str
    uri: str
    endpoint: str
    env: dict[str, str]

    @property
    def storage_options(self) -> dict[str, str]:
        return {"azure_storage_account_name": ACCOUNT,
                "azure_storage_account_key": self.env["AZURE_STORAGE_ACCOUNT_KEY"],
                "azure_storage_endpoint": self.endpoint, "azure_allow_http": "true"}

    def hudi_rs(self, uri: str | None = None) -> Any:
        """The table read by the independent hudi-rs reader (None when empty), with explicit options."""
        import pyarrow as pa
        from hudi import HudiTableBuilder

        table = HudiTableBuilder.from_base_uri(uri or self.uri).with_storage_options(self.storage_options).build()
        batches = table.read()
        return pa.Table.from_batches(batches) if batches else None


@pytest.fixture(scope="session")
def azure_session() -> Iterator[AzuriteServer]:
    reason = missing_reason()
    if reason is not None:
        pytest.skip(reason)
    server = AzuriteServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def azure(azure_session: AzuriteServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[AzureContainer]:
    container = f"pyhudi-{uuid.uuid4().hex[:12]}"
    create_container(azure_session.endpoint, container)
    env = azure_env(azure_session.endpoint)
    use_env(monkeypatch, env, _CLEARED)
    yield AzureContainer(container, f"abfss://{container}@{ACCOUNT}.dfs.core.windows.net/table",
                         azure_session.endpoint, env)
