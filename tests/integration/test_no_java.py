"""The CLI where Java cannot start: every command runs in-process (issue 17, items 4 and 7).

Each command runs in a subprocess with JAVA_HOME=/nonexistent, a PATH without `java`, and pyspark
blocked by a `sitecustomize.py` on PYTHONPATH: its import hook refuses any `pyspark` import *and* records
the attempt in a file, so an attempt that some code caught and swallowed still fails the test. The
tables are written, maintained and then read back with the independent hudi-rs reader and compared with
a plain-Python model of the rows. No SparkSession is involved anywhere in this module.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pyhudi.storage import Storage
from pyhudi.timeline.timeline import ActiveTimeline
from tests.helpers import hudi_rs, rows_by_key
from tests.unit._samples import extract_sample

ROOT = Path(__file__).resolve().parents[2]
SITECUSTOMIZE = '''
import importlib.abc, os, sys

class _NoPyspark(importlib.abc.MetaPathFinder):
    """pyspark cannot be imported here; every attempt is written down."""

    def find_spec(self, name, path=None, target=None):
        if name == "pyspark" or name.startswith("pyspark.") or name == "py4j" or name.startswith("py4j."):
            with open(os.environ["NOJAVA_ATTEMPTS"], "a") as fh:
                fh.write(name + "\\n")
            raise ImportError(f"{name} is blocked: this process has no Java (test_no_java)")
        return None

sys.meta_path.insert(0, _NoPyspark())
'''
COLS = ["name", "city", "amount", "ts"]
PROPS = {
    "hoodie.table.name": "nojava",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    "hoodie.parquet.small.file.limit": "0",  # every insert batch opens new file groups: work for clustering
    "hoodie.index.bloom.num_entries": "1000",
}
CLUSTER = ["-o", "hoodie.clustering.plan.strategy.small.file.limit=104857600",
           "-o", "hoodie.clustering.plan.strategy.sort.columns=id"]


class NoJava:
    """Runs `python -m pyhudi.cli.main ...` (or `python -c ...`) where Java cannot start."""

    def __init__(self, tmp: Path) -> None:
        site = tmp / "nojava_site"
        site.mkdir()
        (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
        empty_bin = tmp / "nojava_bin"
        empty_bin.mkdir()
        self.attempts = tmp / "pyspark_attempts.txt"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "SPARK", "JAVA"))}
        self.env.update(JAVA_HOME="/nonexistent", PATH=str(empty_bin), PYTHONPATH=f"{site}{os.pathsep}{ROOT}",
                        NOJAVA_ATTEMPTS=str(self.attempts), PYHUDI_NO_PROGRESS="")
        self.timings: dict[str, float] = {}

    def run(self, *argv: str, code: int = 0, spark_asked: bool = False) -> subprocess.CompletedProcess[str]:
        """A CLI command; unless `spark_asked`, no pyspark import may even be attempted."""
        return self._run([sys.executable, "-m", "pyhudi.cli.main", *argv], " ".join(argv[:1] + argv[2:3]), code,
                         spark_asked)

    def python(self, source: str, spark_asked: bool = False) -> subprocess.CompletedProcess[str]:
        return self._run([sys.executable, "-c", source], "python -c", 0, spark_asked)

    def _run(self, cmd: list[str], label: str, code: int, spark_asked: bool) -> subprocess.CompletedProcess[str]:
        started = time.monotonic()
        done = subprocess.run(cmd, env=self.env, cwd=ROOT, capture_output=True, text=True, timeout=300)
        self.timings[label] = time.monotonic() - started
        assert done.returncode == code, f"{cmd[3:]} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        if not spark_asked:
            assert not self.attempts.exists(), f"pyspark import attempted: {self.attempts.read_text()}\n{done.stderr}"
        return done


@pytest.fixture
def nojava(tmp_path: Path) -> NoJava:
    return NoJava(tmp_path)


def test_the_sandbox_has_no_java_and_no_pyspark(nojava: NoJava) -> None:
    """The checker itself: java is not found, pyspark cannot be imported, and the attempt is recorded."""
    out = nojava.python("import shutil\n"
                        "from pyhudi.spark_env import java_executable\n"
                        "print(java_executable(), shutil.which('java'))\n"
                        "try:\n    import pyspark\nexcept ImportError:\n    print('blocked')\n", spark_asked=True)
    assert out.stdout.split() == ["None", "None", "blocked"]
    assert nojava.attempts.read_text() == "pyspark\n"


def test_import_pyhudi_does_not_import_pyspark(nojava: NoJava) -> None:
    out = nojava.python("import sys\nsys.modules['pyspark'] = None\nimport pyhudi, pyhudi.cli.main\n"
                        "print(sorted(m for m in sys.modules if m.startswith(('pyspark', 'py4j'))))")
    assert out.stdout.strip() == "['pyspark']"  # only the None placeholder set above


def test_spark_asked_for_without_java_names_the_fix(nojava: NoJava, tmp_path: Path) -> None:
    """--master without pyspark/Java: one line naming the extra and the in-process alternative."""
    table = str(extract_sample("mor_parquet__v6_nonpartitioned", tmp_path / "s"))
    before = completed(table)
    err = nojava.run("compaction", table, "run", "--master", "local[1]", code=2, spark_asked=True).stderr
    assert "pip install 'pyhudi[spark]'" in err and "leave out --master" in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert completed(table) == before  # refused before anything was scheduled
    err = nojava.run("streamer", "--source-dir", str(tmp_path), "--source-format", "json", "--target",
                     str(tmp_path / "t"), "--props", os.devnull, "--master", "local[1]", code=2,
                     spark_asked=True).stderr
    assert "pyhudi[spark]" in err and "Traceback" not in err, err


def test_read_only_commands_on_samples(nojava: NoJava, tmp_path: Path) -> None:
    """Every read-only command on tables Hudi wrote; their timings are printed (`-s` shows them)."""
    mor = str(extract_sample("mor_parquet__v6_complexkeygen_hivestyle", tmp_path / "m"))
    cow = str(extract_sample("cow__v6_simplekeygen_nonhivestyle_overwritetable", tmp_path / "c"))
    out = nojava.run("timeline", mor, "--json").stdout
    assert [i["action"] for i in json.loads(out)["instants"]] == ["deltacommit", "deltacommit"]
    assert "replacecommit" in nojava.run("timeline", cow, "--archived").stdout
    assert json.loads(nojava.run("files", cow, "--json").stdout)["totals"]["live_file_groups"] == 1
    assert "next compaction would pick" in nojava.run("compaction", mor, "show").stdout
    nojava.run("clustering", cow, "show", "--explain")
    nojava.run("clustering", mor, "show", "--explain", "--json")
    nojava.run("clean", cow, "--dry-run")
    nojava.run("savepoint", cow, "list")
    print({k: round(v, 2) for k, v in nojava.timings.items()})


# --------------------------------------------------------------------------- a table's life without Java
def model_rows(model: dict[Any, dict[str, Any]]) -> dict[Any, tuple[Any, ...]]:
    return {k: tuple(r[c] for c in COLS) for k, r in model.items()}


def check(path: str, model: dict[Any, dict[str, Any]], read_optimized: bool = False) -> None:
    assert rows_by_key(hudi_rs(path, read_optimized=read_optimized), "id", COLS) == model_rows(model)


def write_json(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def completed(path: str) -> list[tuple[str, str]]:
    return [(i.timestamp, i.action) for i in ActiveTimeline.load(Storage(path)).completed()]


def test_write_compact_cluster_delete_partition_without_java(nojava: NoJava, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    props = tmp_path / "t.properties"
    props.write_text("".join(f"{k}={v}\n" for k, v in PROPS.items()))
    model: dict[Any, dict[str, Any]] = {}

    # Batch 1 (json, insert): unicode keys and names, a partition value with '/' and one of digits, nulls.
    rows = [{"id": k, "name": n, "city": c, "amount": a, "ts": 1} for k, n, c, a in [
        ("k-1", "Zoë", "sf", 1.5), ("ключ-2", None, "sf", None), ("🔑3", "東京", "2024/01", 2.25),
        ("k 4", "", "2024/01", 0.0), ("k-5", "x", "007", -1.0), ("k-6", "y", "sf", 3.0)]]
    (tmp_path / "b1").mkdir()
    write_json(tmp_path / "b1" / "part-0.json", rows[:4])
    write_json(tmp_path / "b1" / "part-1.json", rows[4:])
    (tmp_path / "b1" / "_SUCCESS").write_text("")  # hidden: skipped, as Spark does
    out = nojava.run("write", "--source", str(tmp_path / "b1"), "--source-format", "json", "--target", path,
                     "--props", str(props), "--operation", "insert").stdout
    assert out.startswith("commit ") and "6 records in" in out
    model.update({r["id"]: r for r in rows})
    check(path, model)

    # Batch 2 (csv, upsert): updates become log files of the MOR table; one new key; a later ts wins.
    (tmp_path / "b2.csv").write_text("id,name,city,amount,ts\nk-1,Zoë2,sf,10.5,2\n🔑3,東京2,2024/01,,2\n"
                                     "k-7,new,007,7.0,2\n", encoding="utf-8")
    nojava.run("write", "--source", str(tmp_path / "b2.csv"), "--source-format", "csv", "--target", path,
               "--props", str(props), "--operation", "upsert")
    model["k-1"].update(name="Zoë2", amount=10.5, ts=2)
    model["🔑3"].update(name="東京2", amount=None, ts=2)
    model["k-7"] = {"id": "k-7", "name": "new", "city": "007", "amount": 7.0, "ts": 2}
    check(path, model)

    # Batch 3 (parquet, insert): more small files in 'sf' for clustering.
    pq.write_table(pa.table({"id": ["k-8", "k-9"], "name": ["p", "q"], "city": ["sf", "sf"],
                             "amount": [8.0, 9.0], "ts": pa.array([3, 3], pa.int64())}), tmp_path / "b3.parquet")
    nojava.run("write", "--source", str(tmp_path / "b3.parquet"), "--source-format", "parquet", "--target", path,
               "--props", str(props), "--operation", "insert")
    model.update({k: {"id": k, "name": n, "city": "sf", "amount": a, "ts": 3} for k, n, a in
                  [("k-8", "p", 8.0), ("k-9", "q", 9.0)]})
    check(path, model)

    # An empty source is refused with the reason; nothing is written.
    (tmp_path / "empty.json").write_text("")
    before = completed(path)
    err = nojava.run("write", "--source", str(tmp_path / "empty.json"), "--source-format", "json", "--target",
                     path, "--props", str(props), code=2).stderr
    assert "has no json records" in err and completed(path) == before

    # Compaction merges the logs: the read-optimized view now equals the snapshot.
    out = nojava.run("compaction", path, "run", "--json").stdout
    assert json.loads(out)["completed"], out
    check(path, model)
    check(path, model, read_optimized=True)

    # Clustering rewrites the small files of each partition; the rows stay.
    out = nojava.run("clustering", path, "run", *CLUSTER, "--json").stdout
    assert json.loads(out)["completed"], out
    check(path, model)

    # delete-partition of the partition with '/' in its value.
    out = nojava.run("delete-partition", path, "--partitions", "2024/01").stdout
    assert "deleted partition(s) 2024/01" in out
    model = {k: r for k, r in model.items() if r["city"] != "2024/01"}
    check(path, model)
    actions = [a for _, a in completed(path)]
    assert actions.count("replacecommit") == 2 and "commit" in actions  # clustering + delete, compaction

    for command in (["timeline", path], ["files", path], ["compaction", path, "show"],
                    ["clustering", path, "show"], ["clean", path, "--dry-run"]):
        nojava.run(*command)
    print({k: round(v, 2) for k, v in nojava.timings.items()})


def test_write_decimal_keys_and_overwrite_without_java(nojava: NoJava, tmp_path: Path) -> None:
    """Decimal record keys (Hudi prints them as Java's BigDecimal.toString) from parquet, then
    --mode overwrite replaces the table's contents."""
    path = str(tmp_path / "d")
    dec = pa.decimal128(10, 2)
    pq.write_table(pa.table({"id": pa.array([Decimal("1.50"), Decimal("-2.00"), Decimal("0.01")], dec),
                             "v": ["a", None, "c"], "ts": pa.array([1, 1, 1], pa.int64())}), tmp_path / "d1.parquet")
    opts = ["-o", "hoodie.table.name=dec", "-o", "hoodie.datasource.write.recordkey.field=id",
            "-o", "hoodie.datasource.write.precombine.field=ts"]
    nojava.run("write", "--source", str(tmp_path / "d1.parquet"), "--source-format", "parquet", "--target", path,
               *opts, "--operation", "insert")
    got = rows_by_key(hudi_rs(path), "id", ["v"])
    assert got == {Decimal("1.50"): ("a",), Decimal("-2.00"): (None,), Decimal("0.01"): ("c",)}
    keys = sorted(hudi_rs(path).column("_hoodie_record_key").to_pylist())  # type: ignore[union-attr]
    assert keys == ["-2.00", "0.01", "1.50"]

    pq.write_table(pa.table({"id": pa.array([Decimal("9.99")], dec), "v": ["z"], "ts": pa.array([2], pa.int64())}),
                   tmp_path / "d2.parquet")
    nojava.run("write", "--source", str(tmp_path / "d2.parquet"), "--source-format", "parquet", "--target", path,
               *opts, "--mode", "overwrite")
    assert rows_by_key(hudi_rs(path), "id", ["v"]) == {Decimal("9.99"): ("z",)}


def test_streamer_without_java(nojava: NoJava, tmp_path: Path) -> None:
    """Rounds in-process: each landed file once; --continuous stops cleanly on SIGTERM."""
    import signal

    landing, path = tmp_path / "landing", str(tmp_path / "s")
    landing.mkdir()
    props = tmp_path / "s.properties"
    props.write_text("".join(f"{k}={v}\n" for k, v in {**PROPS, "hoodie.table.name": "stream",
                                                         "hoodie.datasource.write.table.type": "COPY_ON_WRITE"}.items()))
    model: dict[Any, dict[str, Any]] = {}
    rows = [{"id": f"r{i}", "name": f"n{i}", "city": ("a/b", "1")[i % 2], "amount": i / 4, "ts": 1} for i in range(6)]
    write_json(landing / "1.json", rows[:3])
    write_json(landing / "2.json", rows[3:])
    argv = ["streamer", "--source-dir", str(landing), "--source-format", "json", "--target", path,
            "--props", str(props)]
    out = nojava.run(*argv).stdout
    assert "6 records in" in out and "(2 landing files)" in out and out.endswith("streamer: stopped\n")
    model.update({r["id"]: r for r in rows})
    check(path, model)
    assert "records in" not in nojava.run(*argv).stdout and len(completed(path)) == 1  # nothing new

    write_json(landing / "3.json", [{"id": "r0", "name": "upd", "city": "a/b", "amount": None, "ts": 2}])
    proc = subprocess.Popen([sys.executable, "-m", "pyhudi.cli.main", *argv, "--continuous",
                             "--min-sync-interval-seconds", "1"], env=nojava.env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    first = proc.stdout.readline()  # the round's commit line
    if not first.startswith("commit "):
        proc.kill()
        pytest.fail(f"no commit line: {first!r} {proc.communicate()}")
    assert "1 records in" in first, first
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "SIGTERM received" in err and out.strip().endswith("streamer: stopped"), err
    assert not nojava.attempts.exists()
    model["r0"].update(name="upd", amount=None, ts=2)
    check(path, model)
    assert len(completed(path)) == 2
