"""Meta sync: registering a Hudi table, its columns and partitions in a catalog (Hive Metastore, AWS Glue),
as Hudi's HiveSyncTool and AwsGlueCatalogSyncTool do."""

import sys
import types
from collections.abc import Callable, Mapping
from typing import Any


class _CallableSyncPackage(types.ModuleType):
    """`pyhudi.sync(path, options=None, storage_options=None, explain=False, progress=None)`: the package is
    also the on-demand sync (pyhudi.api.sync), so that `pyhudi.sync` stays callable once a submodule of it
    has been imported (which sets the attribute `sync` of `pyhudi` to this package)."""

    def __call__(self, path: str, options: Mapping[str, Any] | None = None,
                 storage_options: Mapping[str, str] | None = None, explain: bool = False,
                 progress: Callable[[str], None] | None = None) -> Any:
        from pyhudi.api import sync as _sync

        return _sync(path, options, storage_options, explain, progress)


sys.modules[__name__].__class__ = _CallableSyncPackage
