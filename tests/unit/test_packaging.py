"""Packaging (issue 17, item 7): the base install writes and reads tables without Java, so pyspark (and
matplotlib, only `files --plot OUT.png` needs it) are extras, and the base dependencies cover every
third-party module the in-process code imports."""

from __future__ import annotations

import re
import subprocess
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


def _extras(script: str, args: str = "") -> set[str]:
    """The extras scripts/<script> installs when called with `args`: the script runs up to its install step
    (bootstrap.sh's `ensure_venv`, replaced by an echo), so its own argument handling is what is tested."""
    shim = (f'source() {{ ensure_venv() {{ echo "EXTRAS=$1"; exit 0; }}; check_java() {{ :; }}; }}; '
            f'set -- {args}; . "{ROOT / "scripts" / script}"')
    out = subprocess.run(["bash", "-c", shim], capture_output=True, text=True, check=True).stdout
    (extras,) = re.findall(r"EXTRAS=(.*)", out)
    return set(filter(None, extras.split(",")))


def test_bootstrap_installs_what_demo_and_tests_need() -> None:
    """test.sh installs the spark, plot and test extras (Spark tests, PNG plots, pytest, hudi-rs, the local
    object-store servers); demo.sh only what its main job needs: the base install (in-process), plus the
    spark extra when `--master` asks for Spark (issue 31, item 4)."""
    declared = set(project()["optional-dependencies"])
    assert {"spark", "plot", "test"} <= _extras("test.sh") <= declared
    assert _extras("demo.sh") == set()
    assert _extras("demo.sh", "--batches 2 --master 'local[2]'") == {"spark"}
    assert _extras("demo.sh", "--master=local[2]") == {"spark"}


#: what the base install lacks: the extras' and the test tools' top-level modules
NOT_IN_BASE = ("pyspark", "py4j", "matplotlib", "moto", "boto3", "botocore", "thrift", "lance", "hudi", "pytest",
               "hypothesis", "deltalake")


def test_demo_main_job_runs_on_the_base_install(tmp_path: Path) -> None:
    """The demo's main job, as demo.sh runs it, with every module outside the base install made unimportable:
    what demo.sh installs is enough (a fresh venv per test run would cost minutes)."""
    blocker = (
        "import sys\n"
        "class _Block:\n"
        f"    names = {NOT_IN_BASE!r}\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in self.names:\n"
        "            raise ModuleNotFoundError(f'{name} is not in the base install', name=name)\n"
        "        return None\n"
        "sys.meta_path.insert(0, _Block())\n"
        "from pyhudi.cli.main import main\n"
        "sys.exit(main(sys.argv[1:]))\n")
    args = ["demo", "--path", str(tmp_path / "trips"), "--batches", "3", "--rows-per-batch", "2000",
            "--max-file-size", str(256 * 1024)]
    done = subprocess.run([sys.executable, "-c", blocker, *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    # 3 batches of 2,000, the second and third with 20% updates: 5,200 distinct trips
    assert "table has 5,200 records (expected 5,200 distinct trips): OK" in done.stdout, done.stdout
