"""Which CatalogClient a sync tool talks to: the Hive Metastore backend (sync/hms.py) for HiveSyncTool, the
Glue backend (sync/glue.py) for AwsGlueCatalogSyncTool, each imported only when used (thrift, boto3).

`override` routes every backend to a catalog of the caller's choosing (the tests' in-memory catalog), for the
whole process: the write path's hook, `pyhudi.sync` and the CLI then all sync into it."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from pyhudi.errors import MetaSyncError
from pyhudi.sync.catalog import CatalogClient

_lock = threading.Lock()
_overrides: dict[str, CatalogClient | BaseException] = {}


@contextmanager
def override(catalog: CatalogClient, backends: tuple[str, ...] = ("hms", "glue"),
             connect_error: BaseException | None = None) -> Iterator[CatalogClient]:
    """Within the block, `connect` returns `catalog` for these backends (a test hook), or raises
    `connect_error` (a catalog that cannot be reached)."""
    with _lock:
        saved = {b: _overrides.get(b) for b in backends}
        _overrides.update({b: catalog if connect_error is None else connect_error for b in backends})
    try:
        yield catalog
    finally:
        with _lock:
            for b, previous in saved.items():
                if previous is None:
                    _overrides.pop(b, None)
                else:
                    _overrides[b] = previous


def connect(backend: str, options: Mapping[str, str]) -> CatalogClient:
    """A connected client of `backend` ("hms" or "glue"); a failure to connect is a MetaSyncError."""
    with _lock:
        chosen = _overrides.get(backend)
    if isinstance(chosen, BaseException):
        raise chosen
    if chosen is not None:
        return chosen
    if backend == "hms":
        from pyhudi.sync import hms

        return hms.connect(options)
    if backend == "glue":
        from pyhudi.sync import glue

        return glue.connect(options)
    raise MetaSyncError(f"no catalog backend {backend!r}")
