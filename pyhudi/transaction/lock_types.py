"""What every table-lock provider shares: its settings, its protocol and its errors.

Kept apart from `lock.py` (which picks a provider) so that providers in their own modules
(`storage_lock.py`) import these without importing the module that imports them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from pyhudi.errors import CommitConflictError

# Hudi 1.x's defaults are 300 s / 30 s. pyhudi holds the lock only around a commit's critical section
# (conflict check + instant transition, well under a second), so the lease only matters when a holder
# dies: a short one lets the others go on after seconds instead of minutes (see storage_lock.py).
DEFAULT_VALIDITY_S = 15.0
DEFAULT_RENEW_INTERVAL_S = 3.0


class LockTimeoutError(CommitConflictError):
    """The table lock could not be acquired in time."""


class LockLostError(CommitConflictError):
    """The table lock was lost while held (its lease lapsed or another writer took it over): whatever
    the holder was about to commit must not be committed."""


class LockProvider(Protocol):
    def acquire(self, timeout_s: float) -> None: ...

    def release(self) -> None: ...


@dataclass(frozen=True)
class LockSettings:
    """Lock options as parsed from `hoodie.write.lock.*` (see `writer/config.lock_settings`).

    `lease_seconds` is the file-system lock's lease (0: it never expires); `validity_s` / `renew_interval_s` are the
    storage-based lock's (Hudi's `hoodie.write.lock.storage.*`). `occ` says whether concurrent writers
    are expected (optimistic concurrency control): on an object store without conditional writes the
    default lock then refuses instead of falling back to a lock only safe for one writer.
    """

    provider: str | None = None
    directory: str | None = None
    lease_seconds: float = 60
    wait_ms: int = 60000
    validity_s: float = DEFAULT_VALIDITY_S
    renew_interval_s: float = DEFAULT_RENEW_INTERVAL_S
    occ: bool = False
