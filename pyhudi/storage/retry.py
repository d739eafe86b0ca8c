"""Bounded retries with exponential backoff and full jitter for transient object-store failures.

Transient: throttling (503 SlowDown), 500/502/504, timeouts, connection resets and refused
connections, and the AWS SDK's `INTERNAL_FAILURE ... Failed to flush response stream` that pyarrow
raises when a response body is cut. Everything else (not found, precondition failed, access denied)
is the answer and is not retried. What still fails after the last attempt becomes a `StorageError`
naming the operation and the path.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from pyhudi.errors import HudiError, StorageError

T = TypeVar("T")

_TRANSIENT_TEXT = (
    "slowdown", "slow down", "slow_down", "500 internal", "internalerror", "internal_failure",
    "502 bad gateway", "503 service unavailable", "503 slow down", "504 gateway", "response code: 50",
    "service unavailable", "failed to flush response stream", "connection reset", "connection refused",
    "connection closed", "connection aborted", "broken pipe", "timed out", "timeout", "error sending request",
    "incompletemessage", "unexpected eof", "network_connection", "request_timeout", "throttl",
    "curlcode: 28", "curlcode: 56", "curlcode: 52", "reset by peer",
)
# Answers, not faults (checked first; a timing such as "in 501.9us" must not match a status code).
_FINAL_TEXT = ("precondition", "alreadyexists", "already exists", "not found", "notfound", "no such",
               "access denied", "accessdenied", "forbidden", "unauthenticated", "notimplemented",
               "not implemented")


def is_transient(exc: BaseException) -> bool:
    """Whether retrying `exc` may succeed."""
    if isinstance(exc, HudiError | FileNotFoundError | FileExistsError | PermissionError):
        return False
    if isinstance(exc, ConnectionError | TimeoutError):
        return True
    text = f"{type(exc).__name__} {exc}".lower()
    if any(t in text for t in _FINAL_TEXT) and "slowdown" not in text and "internal_failure" not in text:
        return False
    return any(t in text for t in _TRANSIENT_TEXT)


@dataclass(frozen=True)
class RetryPolicy:
    """`max_attempts` tries in all; the k-th wait is uniform in [0, min(max_delay, base * 2**k)]."""

    max_attempts: int = 8
    base_delay_s: float = 0.05
    max_delay_s: float = 5.0

    def delay(self, attempt: int) -> float:
        return random.uniform(0.0, min(self.max_delay_s, self.base_delay_s * (2 ** attempt)))


def call(policy: RetryPolicy, operation: str, path: str, fn: Callable[[int], T]) -> T:
    """Run `fn(attempt)` until it succeeds, fails for good, or `policy.max_attempts` are used.

    `fn` gets the attempt number so a non-idempotent operation can tell a first try from a retry.
    """
    attempt = 0
    while True:
        try:
            return fn(attempt)
        except Exception as exc:  # noqa: BLE001 - classified below
            if not is_transient(exc):
                raise
            attempt += 1
            if attempt >= policy.max_attempts:
                raise StorageError(
                    f"{operation} of {path} failed after {attempt} attempts: {first_line(exc)}; the store "
                    f"kept failing (throttling or a network fault). Retry later, or raise "
                    f"pyhudi.retry.max_attempts (now {policy.max_attempts}) in the storage options") from exc
            time.sleep(policy.delay(attempt))


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300] if text else ''}"
