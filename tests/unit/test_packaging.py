"""Packaging (issue 17, item 7): the base install writes and reads tables without Java, so pyspark (and
matplotlib, only `files --plot OUT.png` needs it) are extras, and the base dependencies cover every
third-party module the in-process code imports."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tests.unit.test_import_graph import all_modules, imported_names

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the project's venv is 3.11
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[2]
#: import name -> distribution name, where they differ or matter
DISTRIBUTION = {"pyarrow": "pyarrow", "fastavro": "fastavro", "numpy": "numpy", "pandas": "pandas",
                "pyspark": "pyspark", "py4j": "pyspark", "matplotlib": "matplotlib", "lance": "pylance",
                "thrift": "thrift", "boto3": "boto3", "botocore": "boto3"}
#: optional modules: imported only on a path that asks for them (and says which extra to install)
OPTIONAL = {"pyspark": "spark", "py4j": "spark", "matplotlib": "plot", "lance": "lance", "thrift": "hive",
            "boto3": "glue", "botocore": "glue"}


def project() -> dict:  # type: ignore[type-arg]
    with open(ROOT / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)["project"]  # type: ignore[no-any-return]


def names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].strip().lower() for r in requirements}


def test_pyspark_and_matplotlib_are_extras_only() -> None:
    meta = project()
    base = names(meta["dependencies"])
    extras = {k: names(v) for k, v in meta["optional-dependencies"].items()}
    assert {"pyarrow", "fastavro", "numpy", "pandas"} <= base
    assert "pyspark" not in base and "matplotlib" not in base, base
    assert "pyspark" in extras["spark"] and "matplotlib" in extras["plot"]
    assert meta["scripts"]["pyhudi"] == "pyhudi.cli.main:entry"  # leaves with os._exit: see entry()


def test_base_dependencies_cover_every_import() -> None:
    """Every third-party module pyhudi imports is a base dependency, or an optional one that only its own
    path imports (pyspark: the Spark engine; matplotlib: the PNG plot)."""
    base = names(project()["dependencies"])
    missing: dict[str, list[str]] = {}
    for module, path in all_modules().items():
        for name in imported_names(module, path):
            top = name.split(".")[0]
            if top == "pyhudi" or top in sys.stdlib_module_names or top == "__future__":
                continue
            if top in OPTIONAL:
                continue
            if DISTRIBUTION.get(top, top) not in base:
                missing.setdefault(top, []).append(module)
    assert not missing, f"imported but not a base dependency: {missing}"


def test_bootstrap_installs_what_demo_and_tests_need() -> None:
    """scripts/*.sh install the spark, plot and test extras (Spark tests, PNG plots, pytest/hudi-rs)."""
    for script in ("demo.sh", "test.sh"):
        text = (ROOT / "scripts" / script).read_text()
        (extras,) = re.findall(r'ensure_venv "([^"]+)"', text)
        assert {"spark", "plot", "test"} <= set(extras.split(",")), (script, extras)
        assert set(extras.split(",")) <= set(project()["optional-dependencies"])
