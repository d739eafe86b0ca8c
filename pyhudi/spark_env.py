"""Spark set-up that users should not have to think about.

Two failure modes bite first-time PySpark users: a missing or too old Java
(PySpark 4 needs 17+; the JVM error is cryptic), and Python workers started
with a different interpreter than the driver (no pyarrow, no pyhudi there).
We check the first up front with a plain message, and pin the second.

Spark is optional (`pip install 'pyhudi[spark]'`): without a SparkSession everything runs in-process.
When Spark is asked for (`--master`, `create_session`) and pyspark or Java is missing, the error says
which and how to install it. pyspark itself is only imported by `pyhudi.engine.spark.session`.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import shutil
import subprocess
import sys
import weakref

from pyhudi.errors import JavaNotFoundError

log = logging.getLogger(__name__)
MIN_JAVA = 17
# Spark 4.1+ (SPARK-51688): Python workers reach their executor over a Unix domain socket
UDS_KEY = "spark.python.unix.domain.socket.enabled"
INSTALL_HINT = (
    "Install a Java runtime 17 or newer (for example `sudo apt-get install openjdk-17-jre-headless`, "
    "`brew install openjdk@17`, or https://adoptium.net) and make sure `java` is on PATH or JAVA_HOME points to it. "
    "Only Spark needs Java: without --master (or a SparkSession) pyhudi runs in-process."
)


def java_executable() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = os.path.join(home, "bin", "java")
        if os.path.exists(candidate):
            return candidate
    return shutil.which("java")


def java_major_version(executable: str) -> int | None:
    try:
        out = subprocess.run([executable, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    text = out.stderr + out.stdout
    m = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def check_java() -> int:
    """Return the Java major version, or raise with instructions when Spark cannot run."""
    exe = java_executable()
    if exe is None:
        raise JavaNotFoundError(f"Java was not found. PySpark 4 needs Java {MIN_JAVA}+. {INSTALL_HINT}")
    version = java_major_version(exe)
    if version is None:
        raise JavaNotFoundError(f"Could not run `{exe} -version`. {INSTALL_HINT}")
    if version < MIN_JAVA:
        raise JavaNotFoundError(f"Java {version} at {exe} is too old: PySpark 4 needs Java {MIN_JAVA}+. {INSTALL_HINT}")
    return version


def check_pyspark() -> None:
    """pyspark is the optional extra `spark`; say so instead of a ModuleNotFoundError."""
    try:
        found = importlib.util.find_spec("pyspark") is not None
    except (ImportError, ValueError):  # a blocked or half-installed pyspark
        found = False
    if not found:
        raise JavaNotFoundError(
            "Spark was asked for (--master or a SparkSession) but pyspark is not installed: pyhudi's base "
            "install runs in-process without Java. Install the extra with `pip install 'pyhudi[spark]'` "
            f"(PySpark 4 also needs Java {MIN_JAVA}+), or leave out --master to run in-process.")


def check_spark(master: str | None = None) -> int:
    """Everything Spark needs (pyspark, then Java); returns the Java major version. A Spark Connect master
    (`sc://...`) needs no local Java: the server runs the JVM (returns 0)."""
    check_pyspark()
    if master is not None and master.startswith("sc://"):
        return 0
    return check_java()


def pin_python_environment() -> None:
    """Make Spark's Python workers use this interpreter (set before the SparkContext starts)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def ensure_worker_python(spark: object) -> None:
    """For an already running local session, point new Python workers at the driver's interpreter.

    Spark records the worker executable in each Python function it ships, taken
    from `SparkContext.pythonExec`; on local masters that must be this interpreter.
    Classic-only, guarded: a Spark Connect server picks its workers' Python itself
    (`spark.pyspark.python` / PYSPARK_PYTHON where the server starts).
    """
    if type(spark).__module__.startswith("pyspark.sql.connect."):
        return
    sc = getattr(spark, "sparkContext", None)  # a classic session (or a stand-in without one)
    if sc is None:
        return
    master = sc.master or ""
    if master.startswith("local") and getattr(sc, "pythonExec", None) != sys.executable and \
            os.environ.get("PYSPARK_PYTHON") in (None, "", sys.executable):
        sc.pythonExec = sys.executable
    _hint_unix_domain_socket(sc)


# The contexts already hinted, by reference: a set of id()s said nothing to a new context that reused a
# collected one's id (seen as a flaky test, where stand-in contexts come and go).
_HINTED: weakref.WeakSet[object] = weakref.WeakSet()


def _spark_has_uds() -> bool:
    from pyhudi.engine.spark.session import spark_version

    return spark_version() >= (4, 1)


def _hint_unix_domain_socket(sc: object) -> None:
    """Say once per SparkContext when its Python workers talk over loopback TCP: each small write's
    task then waits ~40 ms on its input (delayed ACK), and the setting cannot change once it runs."""
    try:
        if sc in _HINTED:
            return
        _HINTED.add(sc)
    except TypeError:  # not weakly referenceable: hint each time rather than never
        pass
    if not _spark_has_uds():
        return
    try:
        enabled = sc.getConf().get(UDS_KEY, "false")  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - a hint must never break a write
        return
    if str(enabled).lower() != "true":
        log.info("%s is off: every Python task of a small write waits ~40 ms on loopback TCP; set it to true "
                 "when building the SparkSession (pyhudi.spark_env.create_session does)", UDS_KEY)


def create_session(master: str = "local[2]", app_name: str = "pyhudi", conf: dict[str, str] | None = None,
                   quiet: bool = True) -> object:
    """A SparkSession suitable for pyhudi's CLI, demo and tests (settings explained in
    pyhudi.engine.spark.session.build_session). Raises JavaNotFoundError, naming what to install, when
    pyspark or Java is missing. `master="sc://host:port"` connects to a Spark Connect server (no local
    Java needed: the server runs Spark)."""
    if master.startswith("sc://"):
        check_pyspark()
    else:
        check_spark()
        pin_python_environment()
    from pyhudi.engine.spark.session import build_session

    return build_session(master, app_name, dict(conf or {}), quiet, UDS_KEY)
