"""A local AWS Glue Data Catalog for tests: moto's server mode on loopback (a thread here, so that a test can
read what it received), behind a middleware that makes it stricter where moto 5.2 is lenient:

- Glue's batch limits: BatchCreatePartition / BatchUpdatePartition take at most 100 entries and
  BatchDeletePartition 25; moto takes any number, so a client that forgot to chunk would pass. Over the
  limit the middleware answers 400 InvalidInputException, as Glue does;
- GetPartitions pages: moto returns every partition in one response and ignores NextToken/MaxResults; the
  middleware cuts its answer into pages of `page_size` with a NextToken, so a client that reads only the
  first page misses partitions;
- injected errors (`fail`): the next N calls of an operation answer a given AWS error (throttling, access
  denied) before reaching moto.

Every Glue request body is recorded by operation (`requests`), e.g. to check SkipArchive or batch sizes,
which moto does not honour or check.
"""

from __future__ import annotations

import io
import json
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from tests.support.child_server import LoopbackServer

ACCESS_KEY = "pyhudi-glue-key"
SECRET_KEY = "pyhudi-glue-secret"
REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's default account

BATCH_LIMITS = {"BatchCreatePartition": ("PartitionInputList", 100), "BatchUpdatePartition": ("Entries", 100),
                "BatchDeletePartition": ("PartitionsToDelete", 25)}


class _StrictGlue:
    """WSGI middleware over moto's application (see the module docstring)."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self.lock = threading.Lock()
        self.page_size = 100
        self.requests: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.failures: dict[str, list[tuple[str, int]]] = defaultdict(list)

    def reset(self) -> None:
        with self.lock:
            self.requests.clear()
            self.failures.clear()
            self.page_size = 100

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        length = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(raw)
        operation = target.split(".", 1)[1] if target.startswith("AWSGlue.") else _query_action(raw)
        body = _json(raw) if target else {}
        with self.lock:
            self.requests[operation].append(body)
            injected = self.failures[operation].pop(0) if self.failures[operation] else None
        if injected is not None:
            return _error(start_response, injected[1], injected[0], f"injected {injected[0]}")
        if operation in BATCH_LIMITS:
            key, limit = BATCH_LIMITS[operation]
            if len(body.get(key, [])) > limit:
                return _error(start_response, 400, "InvalidInputException",
                              f"{key} has {len(body[key])} entries, more than {limit}")
        if operation == "GetPartitions":
            return self._paged(environ, start_response, body)
        return self.app(environ, start_response)

    def _paged(self, environ: dict[str, Any], start_response: Callable[..., Any],
               body: dict[str, Any]) -> Iterable[bytes]:
        captured: dict[str, Any] = {}

        def capture(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[..., Any]:
            captured["status"], captured["headers"] = status, headers
            return lambda data: None

        answer = b"".join(self.app(environ, capture))
        if not captured["status"].startswith("200"):
            start_response(captured["status"], captured["headers"])
            return [answer]
        doc = json.loads(answer)
        start = int(body.get("NextToken") or 0)
        size = min(self.page_size, int(body.get("MaxResults") or self.page_size))
        partitions = doc.get("Partitions", [])
        doc["Partitions"] = partitions[start:start + size]
        if start + size < len(partitions):
            doc["NextToken"] = str(start + size)
        out = json.dumps(doc, default=str).encode()
        headers = [(k, v) for k, v in captured["headers"] if k.lower() != "content-length"]
        start_response(captured["status"], headers + [("Content-Length", str(len(out)))])
        return [out]


def _json(raw: bytes) -> dict[str, Any]:
    try:
        doc = json.loads(raw or b"{}")
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def _query_action(raw: bytes) -> str:
    """The Action of a query-protocol request (STS: AssumeRole, GetCallerIdentity)."""
    from urllib.parse import parse_qs

    return parse_qs(raw.decode(errors="replace")).get("Action", [""])[0]


def _error(start_response: Callable[..., Any], status: int, code: str, message: str) -> list[bytes]:
    body = json.dumps({"__type": code, "Message": message}).encode()
    reason = {400: "Bad Request", 403: "Forbidden", 500: "Internal Server Error", 503: "Service Unavailable"}
    start_response(f"{status} {reason.get(status, 'Error')}",
                   [("Content-Type", "application/x-amz-json-1.1"), ("Content-Length", str(len(body))),
                    ("x-amzn-ErrorType", code)])
    return [body]


class MotoGlueServer(LoopbackServer):
    """moto (every service; the tests use Glue and STS) on 127.0.0.1 and a free port, in a thread here."""

    what = "the moto Glue server"

    def __init__(self) -> None:
        super().__init__()
        self.strict: _StrictGlue | None = None

    def start_in_thread(self) -> MotoGlueServer:
        from tests.support.s3_server import moto_server

        server = moto_server(_StrictGlue)
        self.strict = server.app
        return self._serve(server, "moto-glue")

    def fail(self, operation: str, code: str, times: int = 1, status: int = 400) -> None:
        """The next `times` calls of `operation` (e.g. "GetTable") answer `code` without reaching moto."""
        assert self.strict is not None
        with self.strict.lock:
            self.strict.failures[operation].extend([(code, status)] * times)

    def requests(self, operation: str) -> list[dict[str, Any]]:
        """The bodies of the `operation` requests received since the last reset."""
        assert self.strict is not None
        with self.strict.lock:
            return list(self.strict.requests.get(operation, []))

    def set_page_size(self, size: int) -> None:
        assert self.strict is not None
        self.strict.page_size = size

    def reset(self) -> None:
        assert self.strict is not None
        self.strict.reset()


def glue_options(endpoint: str) -> dict[str, str]:
    """Hudi's own keys pointing the Glue sync at the server (no AWS_* environment needed)."""
    return {"hoodie.aws.glue.endpoint": endpoint, "hoodie.aws.glue.region": REGION,
            "hoodie.aws.access.key": ACCESS_KEY, "hoodie.aws.secret.key": SECRET_KEY}
