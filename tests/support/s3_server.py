"""A local S3-compatible server for tests: moto's server mode on loopback, on a free port, in a child
process (`python -m tests.support.s3_server` prints its port; `MotoS3Server.start_in_thread` runs it here).

moto 5.x honours `If-None-Match: *` and `If-Match` on PutObject and `If-Match` on DeleteObject (412
PreconditionFailed), but its check-then-store is not atomic under its threaded server: two racing
conditional PUTs could both pass the check. Real S3 serializes them, so the server wraps moto's WSGI
application and runs every request carrying a precondition under one lock; everything else stays
concurrent.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from tests.support.child_server import LoopbackServer, put_request, serve_until_parent_exits

ACCESS_KEY = "pyhudi-test-key"
SECRET_KEY = "pyhudi-test-secret"
REGION = "us-east-1"

_CONDITIONAL = ("HTTP_IF_NONE_MATCH", "HTTP_IF_MATCH")


class _SerializedConditionals:
    """WSGI middleware: requests with a precondition run one at a time (S3's atomic check-and-put)."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not any(h in environ for h in _CONDITIONAL):
            return self.app(environ, start_response)
        with self.lock:
            return list(self.app(environ, start_response))


def moto_server(wrap: Callable[[Any], Any]) -> Any:
    """A quiet, threaded werkzeug server on 127.0.0.1 and a free port for moto's WSGI application wrapped
    in `wrap` (a middleware: S3's serialized conditionals, Glue's stricter limits)."""
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    class QuietHandler(MotoRequestHandler):
        def log_request(self, *args: Any, **kwargs: Any) -> None:
            pass

    app = wrap(DomainDispatcherApplication(create_backend_app))
    return make_server("127.0.0.1", 0, app, threaded=True, request_handler=QuietHandler)


class MotoS3Server(LoopbackServer):
    """moto's S3 on 127.0.0.1 and a free port, in a child process (so the server does not compete with
    the code under test for this process's GIL); `stop()` ends it."""

    module = "tests.support.s3_server"
    what = "the moto S3 server"

    def start_in_thread(self) -> MotoS3Server:
        return self._serve(moto_server(_SerializedConditionals), "moto-s3")


def s3_env(endpoint: str) -> dict[str, str]:
    """The standard AWS environment a user would set for an S3-compatible endpoint over plain HTTP."""
    return {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ALLOW_HTTP": "true",  # object_store (obstore, hudi-rs) refuses http:// endpoints without it
        "AWS_EC2_METADATA_DISABLED": "true",  # no IMDS probing (a 1 s timeout per client) on a laptop
    }


def create_bucket(endpoint: str, name: str) -> None:
    """Create a bucket with one plain signed-less request (moto does not check signatures)."""
    put_request(endpoint, f"/{name}", f"bucket {name}")


def _serve_forever() -> None:
    serve_until_parent_exits(MotoS3Server().start_in_thread())


if __name__ == "__main__":
    _serve_forever()
