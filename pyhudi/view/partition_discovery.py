"""Finding a table's partitions as Hudi does: the directories holding `.hoodie_partition_metadata`.

A partition path is not one directory level per partition field: a value may contain `/` (dates
formatted `yyyy/MM/dd`, path-like categories) and, without URL-encoding, Hudi writes it as nested
directories. So, like Hudi's file-system-backed listing (`FileSystemBackedTableMetadata` in 0.14,
which `FSUtils.getAllPartitionPaths` uses without the metadata table), the walk lists the table's
directories level by level and reports every directory that contains a file named
`.hoodie_partition_metadata*`, skipping any directory named `.hoodie`.

One deliberate difference: Hudi stops descending at a partition, so with the values `a` and `a/b`
it never finds `a/b` (its rows silently disappear from reads). pyhudi keeps walking below a
partition, so both are found; a partition's files are only the files directly in its directory.

Each directory is listed once per walk; a level with many directories is listed on a few threads
(the listing calls release the GIL). The listings of the partitions found are returned, so the
file-system view does not list them again.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from pyhudi.model.file_names import PARTITION_METAFILE
from pyhudi.storage import FileInfo, Storage
from pyhudi.storage.metrics import bind

META_FOLDER = ".hoodie"
_PARALLEL_FROM = 4  # directories on one level before threads pay for themselves
_MAX_THREADS = 8


def discover_partitions(storage: Storage, descend: Callable[[str], bool] | None = None
                        ) -> dict[str, list[FileInfo]]:
    """Relative partition path -> the files directly in it, for every directory under the table
    that holds a partition metafile. `descend(path)` may refuse a directory before it is listed
    (pruning while walking); it must only refuse directories whose whole subtree can be skipped."""
    found: dict[str, list[FileInfo]] = {}
    level = [""]
    with ThreadPoolExecutor(max_workers=_MAX_THREADS) as pool:
        while level:
            listings = _list_all(storage, level, pool)
            nxt: list[str] = []
            for directory, infos in zip(level, listings):
                files = [i for i in infos if not i.is_dir]
                if any(f.name.startswith(PARTITION_METAFILE) for f in files):
                    found[directory] = files
                nxt.extend(i.path for i in infos if i.is_dir and i.name != META_FOLDER
                           and (descend is None or descend(i.path)))
            level = nxt
    return found


def _list_all(storage: Storage, dirs: list[str], pool: ThreadPoolExecutor) -> list[list[FileInfo]]:
    if len(dirs) < _PARALLEL_FROM:
        return [storage.list_dir(d) for d in dirs]
    return list(pool.map(bind(storage.list_dir), dirs))
