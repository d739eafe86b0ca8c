"""A real Hive Metastore for the tests, from the Hive 2.3 jars PySpark ships.

`HiveMetastoreServer(workdir).start()` runs `org.apache.hadoop.hive.metastore.HiveMetaStore` on 127.0.0.1
and a free port with an embedded Derby database and a warehouse under `workdir`, waits until it answers a
Thrift `get_database("default")`, and `stop()` kills its process group. Everything it logs goes to
`workdir/hms.log`, whose tail the start failure and `log_tail()` show.

The settings are the ones the issue found to work: Derby with `datanucleus.schema.autoCreateAll` (no
schematool run), schema verification off, and log4j2's BasicContextSelector (Hive's
log4j2 set-up otherwise spends seconds on context selection). They go in a hive-site.xml on the class path.
"""

from __future__ import annotations

import os
import pathlib
import signal
import socket
import subprocess
import time
from xml.sax.saxutils import escape

STARTUP_TIMEOUT_S = 120.0
MAIN_CLASS = "org.apache.hadoop.hive.metastore.HiveMetaStore"


def pyspark_jars() -> pathlib.Path:
    """The jars directory of the installed pyspark (hive-metastore, libthrift, derby, datanucleus)."""
    import pyspark

    return pathlib.Path(pyspark.__file__).resolve().parent / "jars"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def hive_site(workdir: pathlib.Path) -> str:
    """hive-site.xml for an embedded-Derby metastore whose files all live under `workdir`."""
    props = {
        "javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={workdir / 'metastore_db'};create=true",
        "javax.jdo.option.ConnectionDriverName": "org.apache.derby.jdbc.EmbeddedDriver",
        "datanucleus.schema.autoCreateAll": "true",
        "hive.metastore.schema.verification": "false",
        "hive.metastore.warehouse.dir": f"file:{workdir / 'warehouse'}",
    }
    body = "\n".join(f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>"
                     for k, v in props.items())
    return f'<?xml version="1.0"?>\n<configuration>\n{body}\n</configuration>\n'


def _die_with_parent() -> None:
    """In the child before exec: on Linux, get SIGTERM when the test process dies, even by SIGKILL (a CI
    timeout), so that no metastore JVM outlives its test run."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class HiveMetastoreServer:
    """One metastore process (see the module docstring). `startup_s` is how long it took to answer."""

    def __init__(self, workdir: pathlib.Path, java: str = "java") -> None:
        self.workdir = pathlib.Path(workdir)
        self.java = java
        self.port = 0
        self.startup_s = 0.0
        self.log_path = self.workdir / "hms.log"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    @property
    def warehouse(self) -> pathlib.Path:
        return self.workdir / "warehouse"

    def command(self) -> list[str]:
        conf = self.workdir / "conf"
        return [self.java, "-Xmx512m", "-cp", f"{conf}{os.pathsep}{pyspark_jars()}/*",
                "-Dlog4j2.contextSelector=org.apache.logging.log4j.core.selector.BasicContextSelector",
                "-Dhive.root.logger=console", f"-Dhive.log.dir={self.workdir}",
                f"-Djava.io.tmpdir={self.workdir / 'tmp'}", f"-Dderby.system.home={self.workdir}",
                MAIN_CLASS, "-p", str(self.port)]

    def start(self) -> HiveMetastoreServer:
        (self.workdir / "conf").mkdir(parents=True, exist_ok=True)
        (self.workdir / "tmp").mkdir(exist_ok=True)
        self.warehouse.mkdir(exist_ok=True)
        (self.workdir / "conf" / "hive-site.xml").write_text(hive_site(self.workdir))
        self.port = free_port()
        started = time.monotonic()
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, cwd=str(self.workdir), start_new_session=True,
                                          preexec_fn=_die_with_parent)
        try:
            self._wait_ready(started)
        except BaseException:
            self.stop()
            raise
        self.startup_s = time.monotonic() - started
        return self

    def _wait_ready(self, started: float) -> None:
        """Ready when a Thrift get_database("default") answers: the port opens only after the handler (and
        Derby's schema) exist, but a call also proves the protocol end to end."""
        last = ""
        while time.monotonic() - started < STARTUP_TIMEOUT_S:
            assert self._proc is not None
            if self._proc.poll() is not None:
                raise RuntimeError(f"the Hive Metastore exited with {self._proc.returncode} while starting; "
                                   f"its log ({self.log_path}) ends with:\n{self.log_tail()}")
            try:
                if self._answers():
                    return
            except Exception as exc:  # noqa: BLE001 - not up yet
                last = f"{type(exc).__name__}: {exc}"
            time.sleep(0.25)
        raise RuntimeError(f"the Hive Metastore did not answer on {self.uri} within {STARTUP_TIMEOUT_S:.0f} s "
                           f"(last: {last}); its log ({self.log_path}) ends with:\n{self.log_tail()}")

    def _answers(self) -> bool:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", self.port)) != 0:
                return False
        from pyhudi.sync.hms import connect

        client = connect({"hoodie.datasource.hive_sync.metastore.uris": self.uri,
                          "hive.metastore.connect.retries": "0", "hive.metastore.client.socket.timeout": "30s"})
        try:
            return client.database_exists("default")
        finally:
            client.close()

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """Kill the metastore's process group (the JVM and anything it started)."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        except ProcessLookupError:
            pass


if __name__ == "__main__":  # a metastore to try things by hand: python -m tests.support.hms_server <dir>
    import sys
    import tempfile

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # stop the metastore too (it has its own session)
    server = HiveMetastoreServer(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())).start()
    print(f"{server.uri} up in {server.startup_s:.1f} s, log {server.log_path}", flush=True)
    try:
        signal.pause()
    finally:
        server.stop()
