"""A fault-injecting HTTP proxy on loopback, in front of the local S3 server.

Clients use the proxy's URL as their S3 endpoint. A test adds rules at runtime; each rule matches
requests by operation (GET/PUT/HEAD/LIST/DELETE/POST), path substring and whether the request carries
a precondition, and acts on every Nth match (at most `limit` times):

* ``status``: answer 503 SlowDown / 500 InternalError (or any code) without forwarding;
* ``delay``: sleep `delay_s` before forwarding (a slow store);
* ``reset``: reset the connection without forwarding (the request never took effect);
* ``lost``: forward, let the store act, then reset the connection (the answer is lost);
* ``strip_conditional``: drop If-None-Match / If-Match before forwarding (a store that ignores them);
* ``not_implemented``: answer 501 NotImplemented to requests with a precondition.

`counts` holds requests per operation, so tests and benches can report request costs.
"""

from __future__ import annotations

import collections
import contextlib
import http.client
import http.server
import socket
import struct
import threading
import time
import urllib.parse
from dataclasses import dataclass, field

OPS = ("GET", "PUT", "HEAD", "LIST", "DELETE", "POST")
_HOP = {"connection", "keep-alive", "transfer-encoding", "expect", "proxy-connection", "te", "upgrade"}
_ERROR_CODES = {500: "InternalError", 501: "NotImplemented", 503: "SlowDown"}


@dataclass
class Rule:
    kind: str
    every: int = 1
    op: str | None = None
    path_contains: str | None = None
    path_endswith: str | None = None  # the object key's end (no query string), e.g. ".commit"
    conditional_only: bool = False
    status: int = 503
    delay_s: float = 0.0
    limit: int | None = None
    seen: int = 0
    fired: int = 0

    def matches(self, op: str, path: str, conditional: bool) -> bool:
        return ((self.op is None or self.op == op)
                and (self.path_contains is None or self.path_contains in urllib.parse.unquote(path))
                and (self.path_endswith is None
                     or urllib.parse.unquote(path.split("?", 1)[0]).endswith(self.path_endswith))
                and (conditional or not self.conditional_only))


@dataclass
class _State:
    rules: list[Rule] = field(default_factory=list)
    counts: collections.Counter[str] = field(default_factory=collections.Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)


def classify(method: str, path: str) -> str:
    """GET/PUT/HEAD/LIST/DELETE/POST; a GET of a bucket (no key) or with `list-type` is a LIST."""
    url = urllib.parse.urlsplit(path)
    if method == "GET":
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        no_key = url.path.strip("/").count("/") == 0
        if "list-type" in query or (no_key and "uploads" not in query and "location" not in query):
            return "LIST"
    return method if method in OPS else "GET"


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _ProxyServer

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet
        pass

    def setup(self) -> None:
        super().setup()
        # headers and body leave in separate sends: without NODELAY, Nagle + delayed ACK add ~40 ms
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _pick(self, op: str, conditional: bool) -> list[Rule]:
        state = self.server.state
        fired = []
        with state.lock:
            state.counts[op] += 1
            for rule in state.rules:
                if not rule.matches(op, self.path, conditional):
                    continue
                if rule.limit is not None and rule.fired >= rule.limit:
                    continue
                rule.seen += 1
                if rule.seen % rule.every == 0:
                    rule.fired += 1
                    fired.append(rule)
        return fired

    def _reset(self) -> None:
        """Close the connection with a TCP RST and no answer."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.rfile.close()
            self.connection.close()
        except OSError:
            pass

    def _error(self, status: int) -> None:
        code = _ERROR_CODES.get(status, "InternalError")
        body = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
                f"<Message>injected by the fault proxy</Message></Error>").encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _forward(self, body: bytes, strip: bool) -> tuple[int, list[tuple[str, str]], bytes]:
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
        if strip:
            headers = {k: v for k, v in headers.items() if k.lower() not in ("if-none-match", "if-match")}
        if body or self.command in ("PUT", "POST"):
            headers["Content-Length"] = str(len(body))
        conn = http.client.HTTPConnection("127.0.0.1", self.server.upstream_port, timeout=60)
        try:
            conn.connect()
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.request(self.command, self.path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, resp.getheaders(), data
        finally:
            conn.close()

    def _handle(self) -> None:
        body = self._body()
        conditional = "If-None-Match" in self.headers or "If-Match" in self.headers
        fired = self._pick(classify(self.command, self.path), conditional)
        kinds = {r.kind: r for r in fired}
        if "delay" in kinds:
            time.sleep(kinds["delay"].delay_s)
        if "reset" in kinds:
            return self._reset()
        if "status" in kinds:
            return self._error(kinds["status"].status)
        if "not_implemented" in kinds and conditional:
            return self._error(501)
        status, headers, data = self._forward(body, strip="strip_conditional" in kinds)
        if "lost" in kinds:
            return self._reset()
        self.send_response(status)
        for k, v in headers:
            if k.lower() not in _HOP and k.lower() != "content-length":
                self.send_header(k, v)
        length = next((v for k, v in headers if k.lower() == "content-length"), None)
        self.send_header("Content-Length", length if self.command == "HEAD" and length else str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = _handle

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()


class _ProxyServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    state: _State
    upstream_port: int

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # resets we caused ourselves, clients hanging up


class FaultProxy:
    """The proxy: `url` is the endpoint to give clients; add rules with `add`, clear with `clear`."""

    def __init__(self, upstream_endpoint: str) -> None:
        port = urllib.parse.urlparse(upstream_endpoint).port
        assert port is not None, upstream_endpoint
        self._server = _ProxyServer(("127.0.0.1", 0), _Handler)
        self._server.state = _State()
        self._server.upstream_port = port
        self._thread = threading.Thread(target=self._server.serve_forever, name="fault-proxy", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def add(self, kind: str, **kw: object) -> Rule:
        rule = Rule(kind=kind, **kw)  # type: ignore[arg-type]
        with self._server.state.lock:
            self._server.state.rules.append(rule)
        return rule

    def clear(self) -> None:
        with self._server.state.lock:
            self._server.state.rules.clear()
            self._server.state.counts.clear()

    @property
    def counts(self) -> dict[str, int]:
        with self._server.state.lock:
            return {op: self._server.state.counts.get(op, 0) for op in OPS}

    def reset_counts(self) -> None:
        with self._server.state.lock:
            self._server.state.counts.clear()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
