"""What the local object-store servers of the tests share: a server run in a child process or in a
thread here (`LoopbackServer`), stopping the child, creating a bucket with one plain request, and a
child's entry point that serves until its parent goes away."""

from __future__ import annotations

import http.client
import pathlib
import subprocess
import sys
import threading
import urllib.parse
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[2]


class LoopbackServer:
    """A server on 127.0.0.1 and a free port: in a child process running `module` (`start`; the server
    then does not compete with the code under test for this process's GIL), or a thread here
    (`_serve`, from a subclass's `start_in_thread`); `stop()` ends either."""

    module = ""  # the child's `python -m` module; it calls serve_until_parent_exits
    what = "the test server"

    def __init__(self) -> None:
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._port = 0

    def start(self) -> Any:
        self._proc = subprocess.Popen([sys.executable, "-m", self.module], stdout=subprocess.PIPE,
                                      stdin=subprocess.PIPE, cwd=str(ROOT))
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline().decode().strip()
        if not line.isdigit():
            self._proc.kill()
            raise RuntimeError(f"{self.what} did not start: {line!r}")
        self._port = int(line)
        return self

    def _serve(self, server: Any, name: str) -> Any:
        """Serve `server` (with serve_forever/shutdown/server_close) on a daemon thread."""
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)
        self._thread.start()
        return self

    @property
    def port(self) -> int:
        return self._port or (int(self._server.server_address[1]) if self._server is not None else 0)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        stop_process(self._proc)
        self._proc = None
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = self._thread = None


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


def use_env(monkeypatch: Any, env: dict[str, str], cleared: tuple[str, ...] = ()) -> None:
    """A test's environment as a user of the store sets it: `env` set, `cleared` (variables that would
    override it, e.g. a profile) unset; monkeypatch restores both."""
    for var in cleared:
        monkeypatch.delenv(var, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)


def serve_until_parent_exits(server: Any) -> None:
    """Child-process entry: print the started server's port, serve until the parent closes our stdin."""
    print(server.port, flush=True)
    try:
        sys.stdin.read()  # returns when the parent goes away and closes our stdin
    finally:
        server.stop()
