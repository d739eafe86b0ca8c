"""The in-process engine: tasks run in the calling process on a bounded thread pool.

pyarrow's parquet and compute kernels release the GIL, so threads give real parallelism for the work
tasks do (decode, merge, encode) on large files. Many small files cost mostly pyarrow's per-file open,
read and write (the merge handle batches the Python around them, writer/merge_handle.py): a spread
upsert rewriting 420 files of 166 rows takes 0.54 s on one thread and 0.42-0.45 s on two (tmpfs, median
of rounds) on a 2-vCPU machine where two processes of pure Python reach 1.4x.
`hoodie.pyhudi.engine.local.parallelism` bounds the pool (default: the machine's cores, at most 8), which
bounds memory too: at most that many tasks hold data at once.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from pyhudi.engine.base import TaskInfo
from pyhudi.storage.metrics import bind

T = TypeVar("T")
R = TypeVar("R")

# Stage and attempt ids are unique within this process, as Spark's are within an application; names
# that must differ between processes carry a random file id (or are created exclusively).
_STAGES = itertools.count(1)
_ATTEMPTS = itertools.count(1)
MAX_DEFAULT_PARALLELISM = 8


def default_parallelism() -> int:
    return max(1, min(os.cpu_count() or 1, MAX_DEFAULT_PARALLELISM))


class LocalEngine:
    """Hudi's HoodieLocalEngineContext: the same tasks the Spark engine ships to executors, run here."""

    name = "local"

    def __init__(self, parallelism: int | None = None) -> None:
        self._parallelism = max(1, parallelism) if parallelism else default_parallelism()

    @property
    def parallelism(self) -> int:
        return self._parallelism

    @property
    def session(self) -> Any:
        return None

    def map_tasks(self, fn: Callable[[T, TaskInfo], list[R]], items: Sequence[T],
                  parallelism: int | None = None, description: str = "") -> list[R]:
        items = list(items)
        if not items:
            return []
        stage = next(_STAGES)
        infos = [TaskInfo(i, stage, next(_ATTEMPTS)) for i in range(len(items))]
        workers = max(1, min(len(items), parallelism or self._parallelism, self._parallelism))
        if workers == 1:
            return [r for item, info in zip(items, infos) for r in fn(item, info)]
        with ThreadPoolExecutor(workers, thread_name_prefix="pyhudi-task") as pool:
            results = list(pool.map(bind(fn), items, infos))  # the caller's request metrics count tasks too
        return [r for rs in results for r in rs]

    def __repr__(self) -> str:
        return f"LocalEngine(parallelism={self._parallelism})"
