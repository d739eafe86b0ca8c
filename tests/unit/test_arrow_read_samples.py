"""The in-process reader (`pyhudi.read(path)`, no Spark) on the sample tables Hudi itself wrote: equal to
Apache Hudi's gold results (the same checks tests/integration/test_samples.py makes of the Spark
path), to hudi-rs, and free of pyspark (a subprocess where importing pyspark fails)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pyarrow.parquet as pq
import pytest

import pyhudi
from tests.helpers import REPO, SAMPLES, extract_sample, hudi_rs, manifest, same_rows

TABLES = {t["name"]: t for t in manifest()}
ALL = sorted(TABLES)
TRIPS = "trips_mor_avro__v6_trips_8i1u"


def _root(name: str, tmp_path) -> str:
    return str(extract_sample(TABLES[name]["zip"].split("/")[-1], tmp_path))


@pytest.mark.parametrize("name", ALL)
def test_sample_snapshot_equals_gold(tmp_path, name):
    root = _root(name, tmp_path)
    actual = pyhudi.read(root)
    gold = pq.read_table(SAMPLES / TABLES[name]["gold"]["snapshot"])
    assert actual.num_rows == TABLES[name]["snapshot_rows"]
    assert sorted(actual.column_names) == sorted(gold.column_names)
    assert same_rows(actual, gold), f"{name}: in-process rows differ from Apache Hudi's gold result"
    theirs = hudi_rs(root)
    if theirs is None:
        assert actual.num_rows == 0
    else:
        assert same_rows(actual, theirs, [c for c in actual.column_names if c in theirs.column_names])


@pytest.mark.parametrize("name", ALL)
def test_sample_time_travel_incremental_read_optimized_counts(tmp_path, name):
    t = TABLES[name]
    root = _root(name, tmp_path)
    if not t["completed_instants"]:
        assert pyhudi.read(root).num_rows == 0
        return
    first = t["completed_instants"][0]["instant"]
    assert pyhudi.read(root, {"as.of.instant": first}).num_rows == t["as_of_first_instant_rows"]
    if t["populate_meta_fields"]:
        incr = pyhudi.read(root, {"hoodie.datasource.query.type": "incremental",
                                  "hoodie.datasource.read.begin.instanttime": "000"})
        assert incr.num_rows == t["incremental_all_rows"]
    if t["table_type"] == "MERGE_ON_READ":
        ro = pyhudi.read(root, {"hoodie.datasource.query.type": "read_optimized"})
        assert ro.num_rows == t["read_optimized_rows"]


@pytest.mark.parametrize("case", sorted(TABLES[TRIPS]["gold"]["options"]))
def test_trips_option_cases(tmp_path, case):
    spec = TABLES[TRIPS]["gold"]["options"][case]
    options: dict[str, str] = {}
    if spec.get("read_optimized"):
        options["hoodie.datasource.query.type"] = "read_optimized"
    if "start_timestamp" in spec:
        options.update({"hoodie.datasource.query.type": "incremental",
                        "hoodie.datasource.read.begin.instanttime": spec["start_timestamp"],
                        "hoodie.datasource.read.end.instanttime": spec["end_timestamp"]})
    actual = pyhudi.read(_root(TRIPS, tmp_path), options, columns=spec.get("projection"))
    gold = pq.read_table(SAMPLES / spec["path"])
    if spec.get("projection"):
        assert actual.column_names == spec["projection"]
    assert actual.num_rows == spec["rows"]
    assert same_rows(actual, gold, gold.column_names)


_NO_PYSPARK = textwrap.dedent("""
    import json, sys
    sys.modules["pyspark"] = None  # any import of pyspark now fails
    import pyhudi
    out = {}
    for path in sys.argv[1:]:
        table = pyhudi.read(path)
        reader = pyhudi.read(path, batches=True, columns=["_hoodie_record_key"])
        incr = pyhudi.read(path, {"hoodie.datasource.query.type": "incremental",
                                  "hoodie.datasource.read.begin.instanttime": "000"}, [("_hoodie_record_key", "!=", "")])
        first = min(table.column("_hoodie_commit_time").to_pylist())
        travel = pyhudi.read(path, {"as.of.instant": first})
        out[path] = [table.num_rows, sum(b.num_rows for b in reader), incr.num_rows, travel.num_rows]
    out["spark_modules"] = sorted(m for m in sys.modules if m.startswith("pyspark") and sys.modules[m] is not None)
    print(json.dumps(out))
""")


def test_reads_never_import_pyspark(tmp_path):
    """COW and MOR (with log files) snapshot reads in a process where pyspark cannot be imported."""
    cow = _root("cow__v6_complexkeygen_hivestyle", tmp_path / "cow")
    mor = _root(TRIPS, tmp_path / "mor")
    proc = subprocess.run([sys.executable, "-c", _NO_PYSPARK, cow, mor], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    for path, name in ((cow, "cow__v6_complexkeygen_hivestyle"), (mor, TRIPS)):
        t = TABLES[name]
        assert got[path] == [t["snapshot_rows"], t["snapshot_rows"], t["incremental_all_rows"],
                             t["as_of_first_instant_rows"]]
    assert got["spark_modules"] == []


def test_read_path_reaches_no_pyspark_module():
    """Statically, with function-level imports too (branches the subprocess above may not take, such as
    archived-timeline or hollow-commit handling): nothing the in-process reader can import imports pyspark."""
    from tests.unit.test_import_graph import precise_graph, pyspark_importers

    graph = precise_graph()
    # `import pyhudi` runs only pyhudi/__init__'s top-level imports (its functions import lazily, by entry).
    graph["pyhudi"] = {"pyhudi.errors"}
    seen: set[str] = set()
    todo = ["pyhudi.reader.arrow_read"]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        parents = [name.rsplit(".", i)[0] for i in range(1, name.count(".") + 1)]
        todo.extend([*graph.get(name, ()), *parents])
    assert {"pyhudi.reader.plan", "pyhudi.reader.log_merge", "pyhudi.view.partitions"} <= seen
    offenders = sorted(seen & set(pyspark_importers()))
    ours = [m for m in offenders if m.startswith(("pyhudi.reader", "pyhudi.view"))]
    assert ours == [], f"the read path's own modules import pyspark: {ours}"
    if offenders:  # modules of the write path that still import pyspark lazily in Spark-only functions
        pytest.xfail(f"issue 17: modules the reader imports still import pyspark (in functions it does not call): "
                     f"{', '.join(offenders)}")
