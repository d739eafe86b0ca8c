"""What the local object-store servers of the tests share: stopping their child process, creating a
bucket with one plain request, and a child's entry point that serves until its parent goes away."""

from __future__ import annotations

import http.client
import subprocess
import sys
import urllib.parse
from typing import Any


def stop_process(proc: subprocess.Popen[Any] | None) -> None:
    """Terminate a server's child process, killing it if it does not stop within 10 s."""
    if proc is None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def put_request(endpoint: str, path: str, what: str, headers: dict[str, str] | None = None,
                ok: tuple[int, ...] = (200,)) -> None:
    """One PUT (e.g. create a bucket) to a loopback server; anything but `ok` is an error naming `what`."""
    url = urllib.parse.urlsplit(endpoint)
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=10)
    try:
        conn.request("PUT", path, headers={"Content-Length": "0", **(headers or {})})
        resp = conn.getresponse()
        body = resp.read()
        if resp.status not in ok:
            raise RuntimeError(f"creating {what}: {resp.status} {body[:200]!r}")
    finally:
        conn.close()


def serve_until_parent_exits(server: Any) -> None:
    """Child-process entry: print the started server's port, serve until the parent closes our stdin."""
    print(server.port, flush=True)
    try:
        sys.stdin.read()  # returns when the parent goes away and closes our stdin
    finally:
        server.stop()
