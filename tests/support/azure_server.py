"""A local Azure Blob server for tests: Azurite (npm `azurite`) in blob mode on loopback, in memory, on a
port the OS picks, with its well-known development account `devstoreaccount1`.

`scripts/bootstrap.sh` installs Azurite into `.cache/azurite` when npm exists (`azurite_binary` also
finds `azurite-blob` on PATH or at `$PYHUDI_AZURITE`); without it the Azure tests skip, naming what is
missing. Azurite honours `If-None-Match: *` and `If-Match` on Put Blob and `If-Match` on Delete Blob
(412 ConditionNotMet), serialized per blob as Azure does.
"""

from __future__ import annotations

import base64
import email.utils
import hashlib
import hmac
import os
import pathlib
import re
import shutil
import subprocess
import threading
import urllib.parse

from tests.support.child_server import put_request, stop_process

ACCOUNT = "devstoreaccount1"
# Azurite's documented development key (public, the same in every installation).
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
ROOT = pathlib.Path(__file__).resolve().parents[2]
_LISTENING = re.compile(r"listens on (http://\S+)")


def azurite_binary() -> str | None:
    """`azurite-blob`: `$PYHUDI_AZURITE`, the project-local install of scripts/bootstrap.sh, then PATH."""
    for candidate in (os.environ.get("PYHUDI_AZURITE", ""),
                      str(ROOT / ".cache" / "azurite" / "node_modules" / ".bin" / "azurite-blob")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("azurite-blob")


def missing_reason() -> str | None:
    """Why the Azure tests cannot run here (None when they can)."""
    if azurite_binary() is not None:
        return None
    if shutil.which("npm") is None:
        return "Azurite is not installed and npm is missing: install Node.js 18+ and npm, then run " \
               "scripts/test.sh (scripts/bootstrap.sh installs Azurite into .cache/azurite)"
    return "Azurite is not installed: run scripts/test.sh, or `npm install --prefix .cache/azurite azurite@3.35.0`"


class AzuriteServer:
    """Azurite's blob service in a child process; `endpoint` is the account URL
    (`http://127.0.0.1:<port>/devstoreaccount1`); `stop()` ends it."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[str] | None = None
        self.url = ""

    def start(self, timeout_s: float = 60.0) -> AzuriteServer:
        binary = azurite_binary()
        if binary is None:
            raise RuntimeError(missing_reason() or "Azurite is missing")
        self._proc = subprocess.Popen(
            [binary, "--blobHost", "127.0.0.1", "--blobPort", "0", "--inMemoryPersistence",
             "--extentMemoryLimit", "256", "--skipApiVersionCheck", "--loose", "--disableTelemetry", "--silent"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
        seen = self._wait_listening(timeout_s)
        if not self.url:
            self.stop()
            raise RuntimeError(f"Azurite did not start: {''.join(seen)[-500:]!r}")
        return self

    def _wait_listening(self, timeout_s: float) -> list[str]:
        """Reads Azurite's start-up lines until it names its port, then drains the rest in a thread."""
        assert self._proc is not None and self._proc.stdout is not None
        out = self._proc.stdout
        seen: list[str] = []
        timer = threading.Timer(timeout_s, self._proc.kill)
        timer.start()
        try:
            for line in out:
                seen.append(line)
                match = _LISTENING.search(line)
                if match:
                    self.url = match.group(1).rstrip("/")
                    break
        finally:
            timer.cancel()
        threading.Thread(target=lambda: [None for _ in out], daemon=True).start()
        return seen

    @property
    def endpoint(self) -> str:
        return f"{self.url}/{ACCOUNT}"

    def stop(self) -> None:
        stop_process(self._proc)
        self._proc = None


def azure_env(endpoint: str) -> dict[str, str]:
    """The standard Azure variables a user would set for this account and endpoint."""
    return {"AZURE_STORAGE_ACCOUNT_NAME": ACCOUNT, "AZURE_STORAGE_ACCOUNT_KEY": ACCOUNT_KEY,
            "AZURE_STORAGE_ENDPOINT": endpoint}


def create_container(endpoint: str, name: str) -> None:
    """Create a container with one request signed by Shared Key (Azurite, like Azure, refuses anonymous
    container creation)."""
    url = urllib.parse.urlparse(endpoint)
    date, version = email.utils.formatdate(usegmt=True), "2021-08-06"
    # Shared Key string to sign: the verb, 11 empty standard headers (a zero Content-Length is empty),
    # the x-ms-* headers, then /<account><path> and the query parameters.
    to_sign = ("PUT" + "\n" * 12 + f"x-ms-date:{date}\nx-ms-version:{version}\n"
               + f"/{ACCOUNT}{url.path}/{name}\nrestype:container")
    digest = hmac.new(base64.b64decode(ACCOUNT_KEY), to_sign.encode(), hashlib.sha256).digest()
    headers = {"x-ms-date": date, "x-ms-version": version, "Content-Length": "0",
               "Authorization": f"SharedKey {ACCOUNT}:{base64.b64encode(digest).decode()}"}
    put_request(endpoint, f"{url.path}/{name}?restype=container", f"container {name}", headers, ok=(201,))
