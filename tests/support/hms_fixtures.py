"""pytest fixtures for a real Hive Metastore. Load them in a test module:

    pytest_plugins = ["tests.support.hms_fixtures"]

    def test_x(hive_metastore, hms_database):
        options = hive_metastore.options()   # hoodie.datasource.hive_sync.metastore.uris -> the server
        ...

`hive_metastore` starts one metastore per session (tests/support/hms_server.py; ~10 s) and stops it at the
end; the whole session is skipped, with the reason, when there is no Java 17+ or no `thrift` package.
`hms_database` gives each test a fresh database name (not created: creating it is part of what a sync does).
"""

from __future__ import annotations

import itertools
import pathlib
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.hms_server import HiveMetastoreServer


class HiveMetastore:
    """The running metastore as the tests see it."""

    def __init__(self, server: HiveMetastoreServer) -> None:
        self.server = server
        self.uri = server.uri
        self.startup_s = server.startup_s

    def options(self, **extra: str) -> dict[str, str]:
        """The sync options that reach this metastore (and fail fast when it is down)."""
        return {"hoodie.datasource.hive_sync.metastore.uris": self.uri,
                "hive.metastore.connect.retries": "1", "hive.metastore.client.connect.retry.delay": "200ms",
                **extra}

    def client(self, **extra: str) -> Any:
        from pyhudi.sync.hms import connect

        return connect(self.options(**extra))

    def log_tail(self, lines: int = 60) -> str:
        return self.server.log_tail(lines)


@pytest.fixture(scope="session")
def hive_metastore(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HiveMetastore]:
    pytest.importorskip("thrift", reason="the `hive` extra (thrift) is not installed")
    pytest.importorskip("pyspark", reason="the metastore runs from the Hive jars pyspark ships")
    from pyhudi.errors import JavaNotFoundError
    from pyhudi.spark_env import check_java, java_executable

    try:
        check_java()
    except JavaNotFoundError as exc:
        pytest.skip(f"no Hive Metastore without Java: {exc}")
    workdir = pathlib.Path(tmp_path_factory.mktemp("hive-metastore"))
    server = HiveMetastoreServer(workdir, java=java_executable() or "java").start()
    try:
        yield HiveMetastore(server)
    finally:
        server.stop()


_NAMES = itertools.count()


@pytest.fixture
def hms_database(request: pytest.FixtureRequest) -> str:
    """A database name no other test of the session uses."""
    stem = "".join(c if c.isalnum() else "_" for c in request.node.name.lower())[:40]
    return f"{stem}_{next(_NAMES)}"
