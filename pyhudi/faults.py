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
