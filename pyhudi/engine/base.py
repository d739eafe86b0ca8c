"""The engine seam: what an engine must do (run tasks, hand back their results) and nothing more."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from pyhudi.model.file_names import write_token

T = TypeVar("T")
R = TypeVar("R")
TASKS_PER_WORKER = 4


def task_count(items: int, workers: int, per_worker: int = TASKS_PER_WORKER) -> int:
    """How many tasks to split `items` small units of work into: a few (`per_worker`) per worker, so each
    task does enough to pay for itself and the workers stay busy to the end (one task when there is one
    worker)."""
    return max(1, min(items, workers * per_worker if workers > 1 else 1))


@dataclass(frozen=True)
class TaskInfo:
    """Who runs a task: Hudi's write token `<partition>-<stage>-<attempt>` is distinct per task attempt, so
    two attempts of one task never write the same file name."""

    partition_id: int
    stage_id: int
    attempt_id: int

    def token(self, partition_id: int | None = None) -> str:
        pid = self.partition_id if partition_id is None else partition_id
        return write_token(pid, self.stage_id, self.attempt_id)


class Engine(Protocol):
    """Runs tasks. A task is a picklable function applied to one item of a list; it returns a list of
    results (write stats, key locations), which come back to the caller in item order."""

    name: str

    @property
    def parallelism(self) -> int:
        """How many tasks run at once by default."""
        ...

    def map_tasks(self, fn: Callable[[T, TaskInfo], list[R]], items: Sequence[T],
                  parallelism: int | None = None, description: str = "") -> list[R]:
        """Apply `fn` to every item (at most `parallelism` at once) and concatenate the results in item
        order. An exception in any task is raised here (a HudiError as itself)."""
        ...

    @property
    def session(self) -> Any:
        """The SparkSession of a Spark engine, else None (for code that still needs Spark itself)."""
        ...
