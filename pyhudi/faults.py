"""Named kill points for crash tests: proving recovery needs real crashes at exact places.

A crash test starts a writer in a session of its own (`subprocess.Popen(..., start_new_session=True)`)
with `PYHUDI_FAULT_POINT=<name>` (or `<name>@<n>` to fire on the n-th hit in a process) and
`PYHUDI_FAULT_OWN_GROUP=1`. When code reaches `fault_point(<name>)`, every process of that session
(driver, JVM, PySpark daemon and Python workers) is SIGKILLed, just as a machine loss would stop it.
A session, not a process group: PySpark's daemon moves itself and its workers into a process group
of their own, so a point reached in an executor must kill the driver's group too.

With `PYHUDI_FAULT_REPORT=<file>`, the process that fires appends `<name> <pid>` to that file first,
so a test can tell that the point was reached (and not some other crash).

`PYHUDI_FAULT_RAISE=<name>[@<n>][+]` makes a point raise `InjectedFault` (a RuntimeError) instead of
killing: on its n-th hit in a process (default the first), or with `+` on every hit from the n-th on.
It tests how failures (not crashes) are handled, e.g. a background table service that must be logged
and retried while ingestion goes on. `reset()` forgets the hits counted so far.

Without the variables a fault point costs two environment lookups.

`pause_at(<name>, nth)` (tests in one process: the interleaving matrix) makes the n-th hit of a point
block the thread that reaches it, whichever thread that is (a LocalEngine pool thread included), until
the test releases it: the test can then run a second operation to completion "inside" the first one.
It fires once; later hits pass through, so the second operation is never paused. Unarmed, it costs one
dict truth test.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading

ENV = "PYHUDI_FAULT_POINT"
RAISE_ENV = "PYHUDI_FAULT_RAISE"
REPORT_ENV = "PYHUDI_FAULT_REPORT"
_hits: dict[str, int] = {}
_raise_hits: dict[str, int] = {}
_lock = threading.Lock()  # points inside thread pools (the cleaner's deletes) count every hit once


PAUSE_SAFETY_S = 300.0  # a paused thread whose test died resumes by itself; never hangs the process
_pauses: dict[str, Pause] = {}


class Pause:
    """One armed pause (see `pause_at`): `wait_reached` in the test, then `release`."""

    def __init__(self, name: str, nth: int = 1) -> None:
        self.name, self.nth = name, nth
        self.hits = 0
        self.fired = False
        self.thread: str | None = None  # name of the thread that paused
        self._reached = threading.Event()
        self._released = threading.Event()

    def wait_reached(self, timeout: float) -> bool:
        """Whether the point was reached within `timeout` seconds (the paused thread is then blocked)."""
        return self._reached.wait(timeout)

    @property
    def reached(self) -> bool:
        return self._reached.is_set()

    def release(self) -> None:
        """Let the paused thread go on (also when it has not arrived yet: it will not pause then)."""
        self._released.set()
        with _lock:
            if _pauses.get(self.name) is self:
                del _pauses[self.name]

    def _hit(self) -> bool:
        """Count one hit (under _lock); True when this hit must pause."""
        self.hits += 1
        if self.fired or self._released.is_set() or self.hits != self.nth:
            return False
        self.fired = True
        return True

    def _block(self) -> None:
        self.thread = threading.current_thread().name
        self._reached.set()
        self._released.wait(PAUSE_SAFETY_S)

    def __enter__(self) -> Pause:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def pause_at(name: str, nth: int = 1) -> Pause:
    """Arm a pause at the n-th hit of `name` in this process (one pause per point at a time)."""
    pause = Pause(name, nth)
    with _lock:
        if name in _pauses:
            raise RuntimeError(f"a pause at {name} is already armed")
        _pauses[name] = pause
    return pause


def _maybe_pause(name: str) -> None:
    with _lock:
        pause = _pauses.get(name)
        fire = pause is not None and pause._hit()
    if fire:
        assert pause is not None
        pause._block()


class InjectedFault(RuntimeError):
    """Raised at a fault point armed by PYHUDI_FAULT_RAISE."""


def reset() -> None:
    """Forget the hits counted so far (tests arming the same point twice in one process)."""
    with _lock:
        _hits.clear()
        _raise_hits.clear()


def _raise_target() -> tuple[str, int, bool] | None:
    spec = os.environ.get(RAISE_ENV)
    if not spec:
        return None
    every = spec.endswith("+")
    name, _, nth = spec.rstrip("+").partition("@")
    return name, int(nth) if nth else 1, every


def _maybe_raise(name: str) -> None:
    target = _raise_target()
    if target is None or target[0] != name:
        return
    with _lock:
        _raise_hits[name] = hit = _raise_hits.get(name, 0) + 1
    if hit == target[1] or (target[2] and hit > target[1]):
        _report(name)
        raise InjectedFault(f"injected fault at {name} (hit {hit}, {RAISE_ENV}={os.environ.get(RAISE_ENV)})")


def _target() -> tuple[str, int] | None:
    spec = os.environ.get(ENV)
    if not spec:
        return None
    name, _, nth = spec.partition("@")
    return name, int(nth) if nth else 1


def _report(name: str) -> None:
    path = os.environ.get(REPORT_ENV)
    if not path:
        return
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, f"{name} {os.getpid()}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def _session_groups(sid: int) -> set[int]:
    """Process groups of every process in session `sid` (Linux /proc; empty elsewhere)."""
    groups: set[int] = set()
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return groups
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # state ppid pgrp session ...
        if int(fields[3]) == sid:
            groups.add(int(fields[2]))
    return groups


def _kill_session() -> None:
    own = os.getpgid(0)
    sid = os.getsid(0)
    for group in sorted((_session_groups(sid) | {sid}) - {own}):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)
    os.killpg(own, signal.SIGKILL)


def armed(name: str) -> bool:
    """Whether a crash test armed `name` in this process (for code that must prepare the crash, such as
    writing half a file first)."""
    target = _target()
    return target is not None and target[0] == name


def fault_point(name: str) -> None:
    if _pauses:
        _maybe_pause(name)
    _maybe_raise(name)
    target = _target()
    if target is None or target[0] != name:
        return
    with _lock:
        _hits[name] = hit = _hits.get(name, 0) + 1
    if hit != target[1]:
        return
    _report(name)
    if os.environ.get("PYHUDI_FAULT_OWN_GROUP") != "1":
        # The caller did not promise a session of its own: killing it could take the test runner
        # down too, so only this process dies.
        os.kill(os.getpid(), signal.SIGKILL)
    _kill_session()
