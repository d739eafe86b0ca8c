"""The in-process engine's task runner: results in item order, bounded parallelism, errors raised as
themselves, a distinct write token per task, and `engine_for` picking the engine. No Spark here."""

from __future__ import annotations

import threading
import time

import pytest

from pyhudi.engine import LocalEngine, TaskInfo, engine_for
from pyhudi.engine.local import MAX_DEFAULT_PARALLELISM, default_parallelism
from pyhudi.errors import CommitConflictError, HudiError


class Concurrency:
    """Counts tasks running at once; each task sleeps a little so overlaps really happen."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.max = 0
        self.threads: set[int] = set()

    def task(self, item: int, info: TaskInfo) -> list[tuple[int, int]]:
        with self.lock:
            self.now += 1
            self.max = max(self.max, self.now)
            self.threads.add(threading.get_ident())
        try:
            time.sleep(0.01 * (item % 3))  # uneven durations: completion order differs from item order
            return [(item, info.partition_id)]
        finally:
            with self.lock:
                self.now -= 1


def test_results_keep_item_order_and_concatenate():
    engine = LocalEngine(4)
    out = engine.map_tasks(lambda i, _: [i] * (i % 3), list(range(20)))
    assert out == [i for i in range(20) for _ in range(i % 3)]
    assert engine.map_tasks(lambda i, _: [i], []) == []
    assert engine.map_tasks(lambda i, _: [], [1, 2, 3]) == []


@pytest.mark.parametrize("pool,asked,expected", [(3, None, 3), (4, 2, 2), (2, 16, 2), (1, None, 1)])
def test_parallelism_is_bounded(pool, asked, expected):
    """At most min(pool, asked) tasks at once (asking for more than the pool never grows it), and the
    bound is reached when there is enough work."""
    counter = Concurrency()
    out = LocalEngine(pool).map_tasks(counter.task, list(range(24)), parallelism=asked)
    assert [i for i, _ in out] == list(range(24))
    assert counter.max == expected, f"{counter.max} tasks ran at once, expected {expected}"
    assert counter.now == 0


def test_parallelism_one_runs_in_the_calling_thread():
    counter = Concurrency()
    LocalEngine(1).map_tasks(counter.task, list(range(5)))
    assert counter.threads == {threading.get_ident()}


def test_default_parallelism_is_cores_capped():
    assert 1 <= default_parallelism() <= MAX_DEFAULT_PARALLELISM
    assert LocalEngine().parallelism == default_parallelism()
    assert LocalEngine(0).parallelism == default_parallelism()  # the option's 0 means "cores, at most 8"
    assert LocalEngine(-3).parallelism >= 1  # the option refuses negatives; the engine never runs zero
    assert LocalEngine(5).parallelism == 5


@pytest.mark.parametrize("pool", [1, 3])
def test_exceptions_propagate_as_themselves(pool):
    def fn(i: int, _: TaskInfo) -> list[int]:
        if i == 7:
            raise CommitConflictError(f"task {i} conflicts")
        return [i]

    with pytest.raises(CommitConflictError, match="task 7 conflicts") as info:
        LocalEngine(pool).map_tasks(fn, list(range(12)))
    assert isinstance(info.value, HudiError)

    def boom(i: int, _: TaskInfo) -> list[int]:
        raise ZeroDivisionError(i)

    with pytest.raises(ZeroDivisionError):
        LocalEngine(pool).map_tasks(boom, [1, 2])


def test_tokens_are_distinct_per_task_and_per_stage():
    """Two tasks (or two attempts) never share a write token, within a call or across calls, so their
    files never share a name; the partition id is the item's position."""
    engine = LocalEngine(3)
    first = engine.map_tasks(lambda i, info: [(i, info)], list(range(10)))
    second = engine.map_tasks(lambda i, info: [(i, info)], list(range(10)))
    infos = [info for _, info in first + second]
    assert [info.partition_id for _, info in first] == list(range(10))
    tokens = [info.token() for info in infos]
    assert len(set(tokens)) == len(tokens), tokens
    assert len({info.stage_id for _, info in first}) == 1
    assert {info.stage_id for _, info in first}.isdisjoint({info.stage_id for _, info in second})
    token = first[3][1].token()
    assert token == f"3-{first[3][1].stage_id}-{first[3][1].attempt_id}"
    assert first[3][1].token(partition_id=9).startswith("9-")


def test_engine_for_picks_the_engine():
    local = engine_for(None)
    assert isinstance(local, LocalEngine) and local.name == "local" and local.session is None
    assert engine_for(None, 3).parallelism == 3
    mine = LocalEngine(2)
    assert engine_for(mine) is mine  # an engine passes through as is


def test_engine_for_none_does_not_import_pyspark():
    """Choosing the in-process engine must not load pyspark (checked in a fresh interpreter)."""
    import subprocess
    import sys

    code = ("import sys; from pyhudi.engine import engine_for; e = engine_for(None, 2); "
            "assert e.map_tasks(lambda i, t: [i * 2], [1, 2, 3]) == [2, 4, 6]; "
            "assert 'pyspark' not in sys.modules, 'pyspark was imported'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_a_failed_stage_cancels_what_has_not_started_and_waits_for_what_runs():
    """A stage's error goes up only when its running tasks are done and its other tasks will never start:
    a failed write's tasks must not go on writing files while its caller rolls it back."""
    started: list[int] = []
    finished: list[int] = []
    lock = threading.Lock()

    def fn(i: int, _: TaskInfo) -> list[int]:
        with lock:
            started.append(i)
        if i == 0:
            time.sleep(0.05)
            raise CommitConflictError("task 0 conflicts")
        time.sleep(0.2)
        with lock:
            finished.append(i)
        return [i]

    with pytest.raises(CommitConflictError):
        LocalEngine(2).map_tasks(fn, list(range(10)))
    with lock:
        at_error = list(started)
        assert set(at_error) - {0} == set(finished), f"started {at_error}, only {finished} finished"
    assert len(at_error) < 10  # the tasks not started were cancelled
    time.sleep(0.5)
    assert started == at_error, f"tasks started after the stage's error went up: {started[len(at_error):]}"


def test_stages_reuse_threads_and_a_stage_inside_a_task_gets_its_own():
    """Top-level stages share one pool per worker count (no threads started per stage); a stage started
    from inside a task runs on fresh threads, so it never waits on the pool its caller occupies."""
    engine = LocalEngine(2)
    threads = [t for _ in range(10) for t in engine.map_tasks(lambda i, _: [threading.current_thread()], list(range(8)))]
    assert len({id(t) for t in threads}) <= 2, "stages started threads of their own"  # held: no id reused

    def outer(i: int, _: TaskInfo) -> list[int]:
        return engine.map_tasks(lambda j, _: [i * 10 + j], [0, 1, 2])

    assert engine.map_tasks(outer, [1, 2]) == [10, 11, 12, 20, 21, 22]


_FORKED_STAGE = """
import os
from pyhudi.engine import LocalEngine
engine = LocalEngine(2)
assert engine.map_tasks(lambda i, _: [i], [1, 2, 3]) == [1, 2, 3]  # the parent's pool exists now
pid = os.fork()
if pid == 0:
    ok = engine.map_tasks(lambda i, _: [i * 2], [1, 2, 3]) == [2, 4, 6]
    os._exit(0 if ok else 1)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0, "the child's stage failed"
"""


def test_a_forked_child_runs_stages_on_its_own_threads():
    """The parent's pool threads do not exist in a forked child: its stages must start threads of their
    own, not queue work for threads that will never take it (in a fresh interpreter: nothing else forks)."""
    import subprocess
    import sys

    subprocess.run([sys.executable, "-c", _FORKED_STAGE], check=True, timeout=60)


def test_callers_do_not_share_threads_and_a_callers_pool_ends_with_it():
    """A background service's stage (another calling thread) must not queue a write's tasks behind its own:
    each calling thread has its own pool. When the caller ends, its pool's threads exit."""
    engine = LocalEngine(2)
    release = threading.Event()
    blocked = threading.Event()

    def slow(i: int, _: TaskInfo) -> list[int]:
        blocked.set()
        assert release.wait(10)
        return [i]

    background = threading.Thread(target=lambda: engine.map_tasks(slow, [1, 2]))
    background.start()
    assert blocked.wait(10)
    done = []
    foreground = threading.Thread(target=lambda: done.extend(engine.map_tasks(lambda i, _: [i], [3, 4, 5])))
    foreground.start()
    foreground.join(5)
    try:
        assert done == [3, 4, 5], "the foreground stage waited for the background stage's tasks"
    finally:
        release.set()
        background.join(10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(t.name.startswith("pyhudi-task") and t is not threading.current_thread()
                                              for t in threading.enumerate() if t.ident not in _main_pool_idents()):
        time.sleep(0.05)
    assert not [t.name for t in threading.enumerate() if t.name.startswith("pyhudi-task")
                and t.ident not in _main_pool_idents()], "the ended callers' pool threads are still there"


def _main_pool_idents() -> set[int | None]:
    """The pool threads of this (the test's) thread, which stay."""
    from pyhudi.engine import local

    pools = getattr(local._LOCAL, "pools", {})
    return {t.ident for pool in pools.values() for t in pool._threads}
