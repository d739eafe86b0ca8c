"""Arrow / pandas / polars data written in-process (writer/local_write.py), against a model, hudi-rs and the
Spark path.

The same batches go into two tables, one written with a pyarrow Table (no JVM involved) and one with a
Spark DataFrame; after every batch both must hold exactly the model's records (hudi-rs; pyhudi's Spark
reader for the continued tables), and their commits must describe the same work with the same file-group
sizing (records per written file, per partition). Tables written by one engine are continued by the other.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import HudiError, InvalidRecordError
from tests.helpers import hudi_rs

SCHEMA = "id long, name string, part string, ts long"
ARROW = pa.schema([("id", pa.int64()), ("name", pa.string()), ("part", pa.string()), ("ts", pa.int64())])
Row = tuple[int, str, str, int]
Model = dict[tuple[str, int], tuple[str, int]]


def _opts(table_type: str, index: str = "SIMPLE", **extra: str) -> dict[str, str]:
    out = {
        "hoodie.table.name": "lw", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type, "hoodie.parquet.max.file.size": str(48 * 1024),
        "hoodie.parquet.small.file.limit": str(36 * 1024), "hoodie.index.bloom.num_entries": "500",
        "hoodie.record.size.estimation.threshold": "0.1", "hoodie.index.type": index, **extra,
    }
    if index == "BUCKET":
        out["hoodie.bucket.index.num.buckets"] = "4"
    return out


def _arrow(rows: list[Row]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(ARROW.names, r)) for r in rows], schema=ARROW)


def _rows(table: pa.Table | None) -> Model:
    out: Model = {}
    for r in ([] if table is None else table.select(["id", "name", "part", "ts"]).to_pylist()):
        key = (r["part"], r["id"])
        assert key not in out, f"duplicate record {key}"
        out[key] = (r["name"], r["ts"])
    return out


def _commit(path: str, instant: str) -> dict[str, Any]:
    hoodie = os.path.join(path, ".hoodie")
    name = next(n for n in os.listdir(hoodie) if n.startswith(instant) and n.split(".")[-1] in
                ("commit", "deltacommit", "replacecommit"))
    with open(os.path.join(hoodie, name)) as fh:
        return json.load(fh)  # type: ignore[no-any-return]


def _work(path: str, instant: str) -> tuple[tuple[int, int, int], dict[str, tuple[int, int]]]:
    """(inserts, updates, deletes) of the commit and, per partition, (new file groups of the commit, file
    groups holding records now): the file-group sizing. Which small file an insert tops up follows the order
    of file ids, which are random, so which group holds which key differs between two tables; how many
    groups there are may not."""
    meta = _commit(path, instant)
    stats = [s for v in meta["partitionToWriteStats"].values() for s in v]
    totals = (sum(s["numInserts"] for s in stats), sum(s["numUpdateWrites"] for s in stats),
              sum(s["numDeletes"] for s in stats))
    new = {p: sum(s["prevCommit"] == "null" and ".log." not in s["path"] for s in v)
           for p, v in meta["partitionToWriteStats"].items()}
    table = hudi_rs(path)
    groups: dict[str, set[str]] = {}
    for part, name in zip(*(table.column(c).to_pylist() for c in ("_hoodie_partition_path", "_hoodie_file_name"))
                          ) if table is not None else []:
        groups.setdefault(part, set()).add(name.split("_")[0])
    return totals, {p: (new.get(p, 0), len(groups.get(p, ()))) for p in sorted(set(new) | set(groups))}


def _apply(model: Model, op: str, rows: list[Row]) -> None:
    if op == "delete":
        for rid, _, part, _ in rows:
            model.pop((part, rid), None)
        return
    if op == "insert_overwrite":
        for part in {r[2] for r in rows}:
            for key in [k for k in model if k[0] == part]:
                del model[key]
    best: dict[tuple[str, int], tuple[str, int]] = {}
    for rid, name, part, t in rows:
        if (part, rid) not in best or t > best[(part, rid)][1]:
            best[(part, rid)] = (name, t)
    model.update(best)


def _batch(rng: random.Random, op: str, model: Model, next_id: int, ts: int) -> tuple[list[Row], int]:
    rows: list[Row] = []
    if op == "delete":
        rows = [(k[1], "", k[0], 0) for k in rng.sample(sorted(model), min(len(model), 40))]
        rows.append((10**9 + ts, "", "p0", 0))  # a key the table does not have
        return rows, next_id
    if op in ("upsert", "insert_overwrite"):
        rows = [(k[1], f"u{ts}", k[0], ts) for k in rng.sample(sorted(model), min(len(model), 120))]
        if op == "upsert":
            rows += [(r[0], "loser", r[2], r[3] - 1) for r in rows[:5]]  # in-batch duplicates lose
    for _ in range(rng.randint(100, 400)):
        rows.append((next_id, f"n{ts}", rng.choice(["p0", "p1", "p2"]), ts))
        next_id += 1
    rng.shuffle(rows)
    return rows, next_id


OPS = ["insert", "upsert", "delete", "bulk_insert", "upsert", "insert_overwrite", "delete"]


@pytest.mark.spark
@pytest.mark.parametrize("table_type,index", [
    ("COPY_ON_WRITE", "SIMPLE"), ("MERGE_ON_READ", "BLOOM"),
    pytest.param("MERGE_ON_READ", "GLOBAL_BLOOM", marks=pytest.mark.extended),
    pytest.param("COPY_ON_WRITE", "BUCKET", marks=pytest.mark.extended),
])
def test_arrow_writes_match_spark_writes_and_the_model(spark, tmp_path, table_type, index):
    rng = random.Random(11)
    local, remote = str(tmp_path / "local"), str(tmp_path / "spark")
    # bulk_insert writes a file per task and partition: one task on both engines.
    o = _opts(table_type, index, **{"hoodie.pyhudi.write.single.task.max.bytes": "0",
                                    "hoodie.bulkinsert.shuffle.parallelism": "1"})
    model: Model = {}
    next_id = 0
    for step, op in enumerate(OPS):
        if index == "BUCKET" and op in ("bulk_insert", "insert_overwrite"):
            op = "insert"  # BUCKET bulk_insert may only create new buckets
        rows, next_id = _batch(rng, op, model, next_id, 10 * step + 10)
        options = {**o, "hoodie.datasource.write.operation": op}
        i_local = pyhudi.write(_arrow(rows), local, options)
        i_spark = pyhudi.write(spark.createDataFrame(rows, SCHEMA), remote, options)
        _apply(model, op, rows)
        assert _rows(hudi_rs(local)) == model, f"step {step} ({op}): in-process table"
        assert _rows(hudi_rs(remote)) == model, f"step {step} ({op}): Spark table"
        assert _work(local, i_local) == _work(remote, i_spark), f"step {step} ({op}): same work, same sizing"
    assert _rows(pyhudi.read(spark, local).toArrow()) == model


@pytest.mark.spark
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_each_engine_continues_the_other(spark, tmp_path, table_type):
    path = str(tmp_path / "t")
    o = _opts(table_type)
    rng = random.Random(3)
    model: Model = {}
    next_id = 0
    for step, (engine, op) in enumerate([("spark", "insert"), ("local", "upsert"), ("spark", "upsert"),
                                         ("local", "delete"), ("local", "insert"), ("spark", "delete"),
                                         ("local", "upsert")]):
        rows, next_id = _batch(rng, op, model, next_id, 10 * step + 10)
        data = _arrow(rows) if engine == "local" else spark.createDataFrame(rows, SCHEMA)
        pyhudi.write(data, path, {**o, "hoodie.datasource.write.operation": op})
        _apply(model, op, rows)
        assert _rows(hudi_rs(path)) == model, f"step {step} ({engine} {op})"
        assert _rows(pyhudi.read(spark, path).toArrow()) == model, f"step {step} ({engine} {op}): Spark's read"


def test_pandas_and_polars_inputs_and_save_modes(tmp_path):
    pd = pytest.importorskip("pandas")
    path = str(tmp_path / "t")
    o = _opts("COPY_ON_WRITE")
    frame = pd.DataFrame({"id": [1, 2, 3], "name": ["a", "b", "c"], "part": ["p0", "p1", "p0"], "ts": [1, 1, 1]},
                         index=[10, 11, 12])  # the index is not a column
    pyhudi.write(frame, path, o)
    assert _rows(hudi_rs(path)) == {("p0", 1): ("a", 1), ("p1", 2): ("b", 1), ("p0", 3): ("c", 1)}
    assert pyhudi.write(frame, path, o, mode="ignore") is None
    with pytest.raises(HudiError, match="already exists"):
        pyhudi.write(frame, path, o, mode="error")
    pl = pytest.importorskip("polars")
    df = pl.DataFrame({"id": [2, 9], "name": ["B", "z"], "part": ["p1", "p2"], "ts": [2, 2]})
    pyhudi.write(df, path, {**o, "hoodie.datasource.write.operation": "upsert"})
    assert _rows(hudi_rs(path)) == {("p0", 1): ("a", 1), ("p1", 2): ("B", 2), ("p0", 3): ("c", 1),
                                    ("p2", 9): ("z", 2)}
    pyhudi.write(df, path, o, mode="overwrite")  # insert_overwrite_table: the table holds exactly df
    assert _rows(hudi_rs(path)) == {("p1", 2): ("B", 2), ("p2", 9): ("z", 2)}


def test_unsupported_input_names_the_type_and_the_accepted_ones(tmp_path):
    with pytest.raises(HudiError, match=r"builtins\.list.*pyarrow\.Table.*pandas\.DataFrame"):
        pyhudi.write([{"id": 1}], str(tmp_path / "t"), _opts("COPY_ON_WRITE"))
    assert not os.path.exists(tmp_path / "t")


def test_streamed_bulk_insert_rolls_over_and_matches_the_model(tmp_path):
    path = str(tmp_path / "t")
    o = _opts("COPY_ON_WRITE", **{"hoodie.datasource.write.operation": "bulk_insert"})
    batches = [_arrow([(b * 1000 + i, f"v{i}" * 5, f"p{i % 2}", 1) for i in range(1000)]).to_batches()[0]
               for b in range(12)]
    consumed: list[int] = []

    def gen():
        for i, b in enumerate(batches):
            consumed.append(i)
            yield b

    reader = pa.RecordBatchReader.from_batches(ARROW, gen())
    instant = pyhudi.write(reader, path, o)
    assert consumed == list(range(12))
    model = {(f"p{i % 2}", b * 1000 + i): (f"v{i}" * 5, 1) for b in range(12) for i in range(1000)}
    assert _rows(hudi_rs(path)) == model
    sizing = _work(path, instant)[1]
    assert all(len(files) >= 2 for files in sizing.values()), f"rolled over at the max file size: {sizing}"
    sizes = [os.path.getsize(os.path.join(path, s["path"]))
             for v in _commit(path, instant)["partitionToWriteStats"].values() for s in v]
    assert max(sizes) <= 48 * 1024 * 1.1, sizes


def test_null_keys_and_null_precombine_are_refused_before_anything_is_written(tmp_path):
    path = str(tmp_path / "t")
    o = _opts("COPY_ON_WRITE")
    pyhudi.write(_arrow([(1, "a", "p0", 1)]), path, o)
    before = sorted(os.listdir(os.path.join(path, ".hoodie")))
    bad = pa.table({"id": pa.array([2, None], pa.int64()), "name": ["b", "c"], "part": ["p0", "p0"], "ts": [2, 2]})
    for op in ("upsert", "insert", "bulk_insert"):
        with pytest.raises(InvalidRecordError, match="1 record.*null or empty record key"):
            pyhudi.write(bad, path, {**o, "hoodie.datasource.write.operation": op})
    no_ts = pa.table({"id": pa.array([2], pa.int64()), "name": ["b"], "part": ["p0"], "ts": pa.array([None], pa.int64())})
    with pytest.raises(InvalidRecordError, match="null precombine"):
        pyhudi.write(no_ts, path, {**o, "hoodie.datasource.write.operation": "upsert"})
    assert sorted(os.listdir(os.path.join(path, ".hoodie"))) == before, "refused writes left no instant"
    # A stream finds the null key only when it arrives: the instant is rolled back.
    reader = pa.RecordBatchReader.from_batches(bad.schema, bad.to_batches())
    with pytest.raises(InvalidRecordError, match="null or empty record key"):
        pyhudi.write(reader, path, {**o, "hoodie.datasource.write.operation": "bulk_insert"})
    assert _rows(hudi_rs(path)) == {("p0", 1): ("a", 1)}


def test_adversarial_keys_and_partition_values(tmp_path):
    """Unicode keys, `/` and digits in partition values (URL-encoded and not), decimal keys, complex keys,
    nested key fields, an empty batch."""
    path = str(tmp_path / "t")
    o = {"hoodie.table.name": "adv", "hoodie.datasource.write.recordkey.field": "k,d",
         "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
         "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator"}
    table = pa.table({
        "k": ["ü/ß", "日本", "", "a,b"],
        "d": pa.array([Decimal("1E-18"), Decimal("0"), Decimal("12.5"), None], pa.decimal128(38, 18)),
        "part": ["2024/01", "007", "a b", "x"], "ts": [1, 1, 1, 1],
    })
    pyhudi.write(table, path, o)
    got = hudi_rs(path)
    assert got is not None
    keys = sorted(got.column("_hoodie_record_key").to_pylist())
    assert keys == sorted(["k:ü/ß,d:1E-18", "k:日本,d:0E-18", "k:__empty__,d:12.500000000000000000",
                           "k:a,b,d:__null__"])
    assert sorted(set(got.column("_hoodie_partition_path").to_pylist())) == ["007", "2024/01", "a b", "x"]
    pyhudi.write(table.slice(0, 0), path, {**o, "hoodie.datasource.write.operation": "upsert"})  # empty batch
    enc = str(tmp_path / "enc")
    pyhudi.write(table, enc, {**o, "hoodie.datasource.write.partitionpath.urlencode": "true",
                              "hoodie.datasource.write.hive_style_partitioning": "true"})
    parts = sorted(set(hudi_rs(enc).column("_hoodie_partition_path").to_pylist()))
    assert parts == ["part=007", "part=2024%2F01", "part=a b", "part=x"]
    nested = str(tmp_path / "nested")
    rows = pa.table({"r": pa.array([{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]), "p": ["x", "y"], "ts": [1, 1]})
    # A nested partition field is written too, but hudi-rs cannot list such a table (README).
    pyhudi.write(rows, nested, {"hoodie.table.name": "n", "hoodie.datasource.write.recordkey.field": "r.a",
                                "hoodie.datasource.write.partitionpath.field": "p",
                                "hoodie.datasource.write.precombine.field": "ts"})
    got = hudi_rs(nested)
    assert sorted(zip(got.column("_hoodie_record_key").to_pylist(), got.column("_hoodie_partition_path").to_pylist())) \
        == [("1", "x"), ("2", "y")]


def test_in_process_write_needs_neither_pyspark_nor_java(tmp_path):
    """The in-process path in a process where pyspark cannot be imported and no java can start."""
    path = str(tmp_path / "t")
    script = textwrap.dedent(f"""
        import sys
        sys.modules["pyspark"] = None
        import pyarrow as pa
        import pyhudi
        o = {{"hoodie.table.name": "nj", "hoodie.datasource.write.recordkey.field": "id",
             "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
             "hoodie.datasource.write.table.type": "MERGE_ON_READ"}}
        t = pa.table({{"id": [1, 2, 3], "part": ["a", "b", "a"], "ts": [1, 1, 1]}})
        pyhudi.write(t, {path!r}, o)
        pyhudi.write(t.slice(0, 2), {path!r}, {{**o, "hoodie.datasource.write.operation": "upsert"}})
        pyhudi.write(t.slice(2), {path!r}, {{**o, "hoodie.datasource.write.operation": "delete"}})
        pyhudi.write(t, {path!r}, {{**o, "hoodie.datasource.write.operation": "bulk_insert"}})
        assert not [m for m in sys.modules if m.startswith("pyspark.")], "pyspark was imported"
        print("ok")
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "SPARK_HOME")}
    env["JAVA_HOME"] = str(tmp_path / "no-java")
    env["PATH"] = os.path.dirname(sys.executable)  # the venv's python only: no java on PATH
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120,
                         cwd=os.getcwd())
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
    got = hudi_rs(path)
    assert got is not None and sorted(got.column("id").to_pylist()) == [1, 1, 2, 2, 3]  # bulk_insert adds again


def test_global_index_moves_records_between_partitions(tmp_path):
    for update_path in ("true", "false"):
        path = str(tmp_path / f"g{update_path}")
        o = _opts("MERGE_ON_READ", "GLOBAL_SIMPLE", **{"hoodie.simple.index.update.partition.path": update_path})
        pyhudi.write(_arrow([(1, "a", "p0", 1), (2, "b", "p0", 1)]), path, o)
        pyhudi.write(_arrow([(1, "A", "p1", 2)]), path, {**o, "hoodie.datasource.write.operation": "upsert"})
        assert _rows(hudi_rs(path)) == {("p1", 1): ("A", 2), ("p0", 2): ("b", 1)}  # (data column part, id)
        parts = {r["id"]: r["_hoodie_partition_path"] for r in hudi_rs(path).to_pylist()}
        assert parts[1] == ("p1" if update_path == "true" else "p0")


def test_inmemory_index_finds_keys_in_log_files_and_compaction_runs_in_process(tmp_path):
    path = str(tmp_path / "t")
    o = _opts("MERGE_ON_READ", "INMEMORY", **{"hoodie.compact.inline": "true",
                                              "hoodie.compact.inline.max.delta.commits": "3"})
    model: Model = {}
    rows = [(i, "a", f"p{i % 2}", 1) for i in range(50)]
    pyhudi.write(_arrow(rows), path, o)
    _apply(model, "insert", rows)
    for step in range(2, 6):
        batch = [(i, f"u{step}", f"p{i % 2}", step) for i in range(step, 50, 7)] + [(100 + step, "n", "p0", step)]
        pyhudi.write(_arrow(batch), path, {**o, "hoodie.datasource.write.operation": "upsert"})
        _apply(model, "upsert", batch)
        assert _rows(hudi_rs(path)) == model, f"step {step}"
    hoodie = os.listdir(os.path.join(path, ".hoodie"))
    assert any(n.endswith(".commit") for n in hoodie), "inline compaction completed a commit in-process"


def test_overwrite_and_delete_partition(tmp_path):
    path = str(tmp_path / "t")
    o = _opts("COPY_ON_WRITE")
    pyhudi.write(_arrow([(1, "a", "p0", 1), (2, "b", "p1", 1), (3, "c", "p2", 1)]), path, o)
    pyhudi.write(_arrow([(4, "d", "p1", 1)]), path, {**o, "hoodie.datasource.write.operation": "insert_overwrite"})
    assert _rows(hudi_rs(path)) == {("p0", 1): ("a", 1), ("p1", 4): ("d", 1), ("p2", 3): ("c", 1)}
    pyhudi.write(_arrow([(9, "x", "p2", 1)]), path, {**o, "hoodie.datasource.write.operation": "delete_partition"})
    assert _rows(hudi_rs(path)) == {("p0", 1): ("a", 1), ("p1", 4): ("d", 1)}
    pyhudi.write(_arrow([]), path, {**o, "hoodie.datasource.write.operation": "delete_partition",
                                    "hoodie.datasource.write.partitions.to.delete": "p*"})
    assert _rows(hudi_rs(path)) == {}
    pyhudi.write(_arrow([(5, "e", "p3", 1)]), path, {**o, "hoodie.datasource.write.operation":
                                                     "insert_overwrite_table"})
    assert _rows(hudi_rs(path)) == {("p3", 5): ("e", 1)}


def test_bucket_bulk_insert_and_its_refusal(tmp_path):
    path = str(tmp_path / "t")
    o = _opts("COPY_ON_WRITE", "BUCKET", **{"hoodie.datasource.write.operation": "bulk_insert"})
    rows = [(i, "a", f"p{i % 2}", 1) for i in range(40)]
    pyhudi.write(_arrow(rows), path, o)
    got = hudi_rs(path)
    fids = {n.split("_")[0] for n in got.column("_hoodie_file_name").to_pylist()}
    assert all(f[:8].isdigit() for f in fids) and len(fids) <= 8, fids
    with pytest.raises(HudiError, match="second file group for bucket"):
        pyhudi.write(_arrow([(0, "b", "p0", 2)]), path, o)
    pyhudi.write(_arrow([(0, "b", "p0", 2)]), path, {**o, "hoodie.datasource.write.operation": "upsert"})
    model: Model = {}
    _apply(model, "insert", rows)
    _apply(model, "upsert", [(0, "b", "p0", 2)])
    assert _rows(hudi_rs(path)) == model


KEYGENS = {
    "timestamp": {"hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
                  "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "ms",
                  "hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
                  "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd", "hoodie.keygen.timebased.timezone": "UTC"},
    "custom": {"hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.CustomKeyGenerator",
               "hoodie.datasource.write.recordkey.field": "id,d",
               "hoodie.datasource.write.partitionpath.field": "city:SIMPLE,ms:TIMESTAMP",
               "hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
               "hoodie.keygen.timebased.output.dateformat": "yyyyMMddHH",
               "hoodie.keygen.timebased.output.timezone": "UTC"},
    "complex_hive_urlencoded": {
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
        "hoodie.datasource.write.recordkey.field": "id,day,dec", "hoodie.datasource.write.partitionpath.field": "city,day",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.datasource.write.partitionpath.urlencode": "true"},
    "nonpartitioned": {"hoodie.datasource.write.keygenerator.class":
                       "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
                       "hoodie.datasource.write.recordkey.field": "ts_key"},
}


@pytest.mark.spark
@pytest.mark.parametrize("name", sorted(KEYGENS))
def test_key_generators_give_the_spark_paths_keys(spark, tmp_path, name):
    import datetime as dt

    utc = dt.timezone.utc
    table = pa.table({
        "id": pa.array([1, 2, 3, 4], pa.int64()),
        "d": pa.array([1.5, 1e10, None, -0.0], pa.float64()),
        "ms": pa.array([0, 1_700_000_000_123, None, -86_400_001], pa.int64()),
        "city": ["sf/x", "東京", None, "a%b"],
        "day": pa.array([dt.date(2024, 1, 2), dt.date(1, 1, 1), None, dt.date(2024, 2, 29)], pa.date32()),
        "dec": pa.array([Decimal("1E-18"), Decimal("0"), Decimal("12.5"), None], pa.decimal128(38, 18)),
        "ts_key": pa.array([dt.datetime(2024, 1, 1, tzinfo=utc), dt.datetime(1969, 12, 31, 23, 59, tzinfo=utc),
                            dt.datetime(2000, 1, 1, tzinfo=utc), dt.datetime(2024, 6, 1, 1, 2, 3, 456789, tzinfo=utc)],
                           pa.timestamp("us", tz="UTC")),
        "pc": [1, 1, 1, 1],
    })
    o = {"hoodie.table.name": "kg", "hoodie.datasource.write.precombine.field": "pc", **KEYGENS[name]}
    local, remote = str(tmp_path / "local"), str(tmp_path / "spark")
    pyhudi.write(table, local, o)
    pyhudi.write(spark.createDataFrame(table), remote, o)

    def keys(path: str) -> list[tuple[str, str]]:
        got = hudi_rs(path)
        assert got is not None
        return sorted(zip(got.column("_hoodie_record_key").to_pylist(),
                          got.column("_hoodie_partition_path").to_pylist()))

    assert keys(local) == keys(remote)
    assert len(keys(local)) == 4
