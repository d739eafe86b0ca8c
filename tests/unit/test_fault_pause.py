"""pyhudi.faults.pause_at: the interleaving matrix's pause (a point blocks the thread reaching its n-th hit)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from pyhudi import faults
from pyhudi.faults import fault_point, pause_at


def test_pause_blocks_the_nth_hit_in_a_pool_thread_once() -> None:
    done: list[int] = []

    def task(i: int) -> None:
        fault_point("test.pause")
        done.append(i)

    with pause_at("test.pause", nth=2) as pause, ThreadPoolExecutor(1) as pool:
        first = pool.submit(task, 1)
        first.result(5)
        second = pool.submit(task, 2)
        assert pause.wait_reached(5)
        assert pause.thread is not None and pause.thread != threading.current_thread().name
        fault_point("test.pause")  # a later hit (another thread: the matrix's B) passes through
        assert not second.done() and done == [1]
        pause.release()
        second.result(5)
    assert done == [1, 2]
    assert not faults._pauses  # disarmed: unarmed points cost one dict test


def test_one_pause_per_point() -> None:
    with pause_at("test.twice"), pytest.raises(RuntimeError, match="already armed"):
        pause_at("test.twice")


def test_released_before_reached_never_blocks() -> None:
    pause = pause_at("test.early")
    pause.release()
    fault_point("test.early")
    assert not pause.reached
