"""Named kill points for crash tests: proving recovery needs real crashes at exact places.

A crash test starts a writer in a new process group (`start_new_session=True`) with
`PYHUDI_FAULT_POINT=<name>` (or `<name>@<n>` to fire on the n-th hit in a process) and
`PYHUDI_FAULT_OWN_GROUP=1`. When code reaches `fault_point(<name>)`, the whole process group
(driver, JVM, Python workers) is SIGKILLed, just as a machine loss would stop it. Without the variable a fault point costs one
environment lookup.
"""

from __future__ import annotations

import os
import signal

ENV = "PYHUDI_FAULT_POINT"
_hits: dict[str, int] = {}


def _target() -> tuple[str, int] | None:
    spec = os.environ.get(ENV)
    if not spec:
        return None
    name, _, nth = spec.partition("@")
    return name, int(nth) if nth else 1


def fault_point(name: str) -> None:
    target = _target()
    if target is None or target[0] != name:
        return
    _hits[name] = _hits.get(name, 0) + 1
    if _hits[name] < target[1]:
        return
    if os.environ.get("PYHUDI_FAULT_OWN_GROUP") != "1":
        # The caller did not promise a process group of its own: killing it could take the test
        # runner down too, so only this process dies.
        os.kill(os.getpid(), signal.SIGKILL)
    os.killpg(os.getpgid(0), signal.SIGKILL)
