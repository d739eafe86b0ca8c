"""The randomized mixed workload on the in-process engine, and with the engine picked at random per step.

Every operation (insert, upsert, delete, bulk_insert, insert_overwrite, insert_overwrite_table,
delete_partition, and empty batches) writes adversarial data: unicode keys, keys with spaces and `/`,
partition values with `/` (nested folders), digits only and non-ASCII, null data columns, in-batch
duplicates with a lower precombine value. Inline compaction (MOR), inline clustering, automatic
cleaning and archival are on. After every step the table equals a plain-Python model (key -> row, and
the instant that last wrote each row) read as Arrow; hudi-rs reads it every few steps and at the end.

`local` writes only Arrow/pandas data in-process (`pyhudi.write(pyarrow.Table, ...)`); `alternate` picks
Spark or in-process for each step (seeded), so each engine continues the table the other wrote, table
services included (`pyhudi.compact(None | spark, ...)`). `spark` is the baseline the other two must match.
On Spark steps the `hudi` data source is an engine too: it writes the operations its API can give Hudi's
semantics for (bulk_insert, insert_overwrite, insert_overwrite_table: `df.write.format("hudi")`), and
every Spark step's table is also read through `spark.read.format("hudi")` and checked against the model.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi.model.file_names import parse_base_file
from tests.helpers import arrow_read, hudi_rs

PARTS = ["p0", "2024/07", "7", "ü ñ-数"]  # a nested path, digits only, non-ASCII with a space
Row = tuple[str, "str | None", str, int]  # id, name, part, ts
SCHEMA = pa.schema([("id", pa.string()), ("name", pa.string()), ("part", pa.string()), ("ts", pa.int64())])
SPARK_SCHEMA = "id string, name string, part string, ts long"
WRITE_ACTIONS = ("commit", "deltacommit", "replacecommit")
OPS = ["upsert", "insert", "delete", "bulk_insert", "insert_overwrite", "insert_overwrite_table",
       "delete_partition", "empty"]
WEIGHTS = [40, 15, 12, 8, 6, 3, 4, 4]
DATASOURCE_OPS = ("bulk_insert", "insert_overwrite", "insert_overwrite_table")  # what df.write.format("hudi") writes


def key_of(n: int) -> str:
    """Adversarial record keys: unicode, spaces, a slash, a colon, digits that sort apart from their value."""
    return [f"{n}", f"ключ-{n}", f"k {n}/é", f"{n:06d}:键"][n % 4]


@dataclass
class Model:
    rows: dict[tuple[str, str], tuple[Any, int, str]] = field(default_factory=dict)  # (part, id) -> (name, ts, instant)

    def snapshot(self) -> dict[tuple[str, str], tuple[Any, int]]:
        return {k: (v[0], v[1]) for k, v in self.rows.items()}

    def apply(self, op: str, rows: list[Row], instant: str) -> None:
        if op == "delete":
            for rid, _, part, _ in rows:
                self.rows.pop((part, rid), None)
            return
        if op == "delete_partition":
            parts = {r[2] for r in rows}
            self.rows = {k: v for k, v in self.rows.items() if k[0] not in parts}
            return
        if op == "insert_overwrite":
            parts = {r[2] for r in rows}
            self.rows = {k: v for k, v in self.rows.items() if k[0] not in parts}
        elif op == "insert_overwrite_table":
            self.rows = {}
        best: dict[tuple[str, str], tuple[Any, int]] = {}
        for rid, name, part, ts in rows:
            cur = best.get((part, rid))
            if cur is None or ts > cur[1]:
                best[(part, rid)] = (name, ts)
        for key, (name, ts) in best.items():
            self.rows[key] = (name, ts, instant)


def generate(rng: random.Random, model: Model, next_id: list[int], step: int,
             force: str | None = None) -> tuple[str, list[Row]]:
    """One operation and its batch: fresh keys for inserts, stored keys for updates and deletes. `force`
    replaces the drawn operation (the draw still happens, so the rest of the run is the same)."""
    existing = sorted(model.rows)
    op = rng.choices(OPS, weights=WEIGHTS)[0]
    op = force or op
    if not existing and op in ("delete", "insert_overwrite", "delete_partition", "upsert"):
        op = "insert"
    ts = 10 * (step + 1)

    def fresh(n: int, tag: str, part: str | None = None) -> list[Row]:
        out = []
        for _ in range(n):
            name = None if rng.random() < 0.1 else f"{tag}{ts}-名"
            out.append((key_of(next_id[0]), name, part or rng.choice(PARTS), ts))
            next_id[0] += 1
        return out

    rows: list[Row] = []
    if op == "upsert":
        rows = [(k[1], f"u{ts}", k[0], ts + rng.randint(0, 5))
                for k in rng.sample(existing, min(len(existing), rng.randint(0, 80)))]
        rows += fresh(rng.randint(1, 120), "n")
        rows += [(r[0], "dup-loser", r[2], r[3] - 100) for r in rng.sample(rows, min(len(rows), 8))]
    elif op in ("insert", "bulk_insert"):
        rows = fresh(rng.randint(1, 200), "i")
    elif op == "delete":
        rows = [(k[1], None, k[0], ts) for k in rng.sample(existing, min(len(existing), rng.randint(1, 40)))]
        rows.append((key_of(10**9 + step), None, PARTS[0], ts))  # a key the table does not have
    elif op == "insert_overwrite":
        rows = fresh(rng.randint(1, 40), "o", rng.choice(PARTS))
    elif op == "insert_overwrite_table":
        rows = fresh(rng.randint(1, 60), "t")
    elif op == "delete_partition":
        part = rng.choice(sorted({k[0] for k in existing}))
        rows = [next((k[1], None, k[0], ts) for k in existing if k[0] == part)]
    rng.shuffle(rows)
    return op, rows


def arrow_batch(rows: list[Row]) -> pa.Table:
    cols = list(zip(*rows)) if rows else [[], [], [], []]
    return pa.table([pa.array(c, t.type) for c, t in zip(cols, SCHEMA)], schema=SCHEMA)


def options(table_type: str, **extra: str) -> dict[str, str]:
    o = {"hoodie.table.name": "engines", "hoodie.datasource.write.recordkey.field": "id",
         "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
         "hoodie.datasource.write.table.type": table_type, "hoodie.parquet.max.file.size": str(96 * 1024),
         "hoodie.parquet.small.file.limit": str(64 * 1024), "hoodie.index.bloom.num_entries": "1000",
         "hoodie.record.size.estimation.threshold": "0.1",
         "hoodie.cleaner.commits.retained": "3", "hoodie.keep.min.commits": "5", "hoodie.keep.max.commits": "7",
         "hoodie.clustering.inline": "true", "hoodie.clustering.inline.max.commits": "4",
         "hoodie.clustering.plan.strategy.small.file.limit": str(64 * 1024),
         "hoodie.clustering.plan.strategy.target.file.max.bytes": str(96 * 1024),
         "hoodie.clustering.plan.strategy.sort.columns": "name",  # nulls among them; single groups cluster too
         "hoodie.pyhudi.engine.local.parallelism": "2"}
    if table_type == "MERGE_ON_READ":
        o.update({"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "3",
                  "hoodie.index.type": "INMEMORY"})
    o.update(extra)
    return o


def table_rows(table: pa.Table | None) -> dict[tuple[str, str], tuple[Any, int]]:
    out: dict[tuple[str, str], tuple[Any, int]] = {}
    if table is None or table.num_rows == 0:
        return out
    for r in table.select(["id", "name", "part", "ts"]).to_pylist():
        key = (r["part"], r["id"])
        assert key not in out, f"duplicate record {key}"
        out[key] = (r["name"], r["ts"])
    return out


def commit_times(table: pa.Table) -> dict[tuple[str, str], str]:
    if table.num_rows == 0:
        return {}
    return {(r["part"], r["id"]): r["_hoodie_commit_time"]
            for r in table.select(["id", "part", "_hoodie_commit_time"]).to_pylist()}


def timeline_dir(path: str) -> str:
    """The folder of the table's instant files: `.hoodie` (table version 6) or `.hoodie/timeline` (8, 9)."""
    layout2 = os.path.join(path, ".hoodie", "timeline")
    return layout2 if os.path.isdir(layout2) else os.path.join(path, ".hoodie")


def completed_commits(path: str) -> dict[str, str]:
    """instant -> file name of each completed write, in either timeline layout (`<ts>.<action>` or Hudi
    1.x's `<ts>_<completion>.<action>`)."""
    out = {}
    for name in os.listdir(timeline_dir(path)):
        head, _, action = name.partition(".")
        if action in WRITE_ACTIONS:
            out[head.split("_")[0]] = name
    return out


def commit_json(path: str, name: str) -> dict[str, Any]:
    """A completed commit's metadata as Hudi's JSON (decoded from Avro on table versions 8 and 9)."""
    from pyhudi.model.commit_avro import commit_json_bytes

    with open(os.path.join(timeline_dir(path), name), "rb") as fh:
        return dict(json.loads(commit_json_bytes(fh.read(), name)))


def archived_any(path: str) -> bool:
    """Whether archival ran: `.hoodie/archived` log files (version 6) or LSM history files (8, 9)."""
    archived = os.path.join(path, ".hoodie", "archived")
    history = os.path.join(timeline_dir(path), "history")
    if os.path.isdir(history):
        return any(n.endswith(".parquet") for n in os.listdir(history))
    return os.path.isdir(archived) and any(n.startswith(".commits_.archive") for n in os.listdir(archived))


def check_write_stats(path: str, instant: str) -> None:
    """The commit's base-file write stats name files on disk of exactly that size and row count."""
    name = completed_commits(path).get(instant)
    assert name is not None, f"{instant} did not complete"
    meta = commit_json(path, name)
    for part, stats in meta["partitionToWriteStats"].items():
        for s in stats:
            if not s.get("path") or not parse_base_file(os.path.basename(s["path"])):
                continue
            f = os.path.join(path, s["path"])
            assert os.path.getsize(f) == s["fileSizeInBytes"], f"{s['path']}: size differs from its stat"
            assert pq.ParquetFile(f).metadata.num_rows == s["numWrites"], f"{s['path']}: row count"
            assert s["partitionPath"] == part


class Engines:
    """Writes and services on the engine a step picks: `local` (Arrow data, no session) or `spark`."""

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self.request = request
        self.datasource_writes = 0

    def spark(self) -> Any:
        return self.request.getfixturevalue("spark")

    def write(self, engine: str, rows: list[Row], path: str, opts: dict[str, str]) -> str | None:
        op = opts["hoodie.datasource.write.operation"]
        if engine == "spark" and rows and op in (*DATASOURCE_OPS, "insert"):
            # fresh keys only in an insert batch: bulk_insert gives the same rows (the source cannot insert)
            return self._datasource_write(rows, path, {**opts, "hoodie.datasource.write.operation":
                                                       "bulk_insert" if op == "insert" else op})
        if engine == "spark":
            return pyhudi.write(self.spark().createDataFrame(rows, SPARK_SCHEMA), path, opts)
        data: Any = arrow_batch(rows)
        if len(rows) % 3 == 1:  # the other input kinds the in-process write takes
            # pandas with Arrow-backed dtypes: a column of only None keeps its string type
            data = data.to_pandas(types_mapper=pd.ArrowDtype) if len(rows) % 2 else pa.RecordBatchReader.from_batches(
                data.schema, data.to_batches(max_chunksize=50))
        return pyhudi.write(data, path, opts)

    def session(self, engine: str) -> Any:
        return self.spark() if engine == "spark" else None

    def _datasource_write(self, rows: list[Row], path: str, opts: dict[str, str]) -> str:
        """Through the `hudi` data source; its instant is the one new completed commit of its operation
        (inline services may complete others after it)."""
        import pyhudi.spark

        spark = self.spark()
        pyhudi.spark.register(spark)
        op = opts["hoodie.datasource.write.operation"]
        before = set(completed_commits(path)) if os.path.isdir(timeline_dir(path)) else set()
        spark.createDataFrame(rows, SPARK_SCHEMA).repartition(2).write.format("hudi").options(**opts).mode(
            "append").save(path)
        new = [ts for ts, name in completed_commits(path).items()
               if ts not in before and commit_json(path, name).get("operationType", "").lower() == op]
        assert len(new) == 1, (op, new)
        self.datasource_writes += 1
        return new[0]

    def datasource_read(self, path: str) -> pa.Table:
        import pyhudi.spark

        spark = self.spark()
        pyhudi.spark.register(spark)
        return spark.read.format("hudi").load(path).toArrow()


def run_workload(request: pytest.FixtureRequest, tmp_path: Any, table_type: str, steps: int, seed: int,
                 pick: Callable[[random.Random], str], **extra: str) -> dict[str, int]:
    rng = random.Random(seed)
    schedule = plan_engines(random.Random(seed * 7919), steps, pick)
    engines = Engines(request)
    path = str(tmp_path / f"{table_type.lower()}_{seed}")
    opts = options(table_type, **extra)
    version = int(opts.get("hoodie.write.table.version", "6"))
    model = Model()
    next_id = [0]
    used: dict[str, int] = {}
    seen: dict[str, str] = {}
    for step, engine in enumerate(schedule):
        used[engine] = used.get(engine, 0) + 1
        # Alternating runs: the first Spark step writes through the `hudi` data source (a bulk_insert).
        first_spark = pick is _alternate and engine == "spark" and step == schedule.index("spark")
        if step > 2 and rng.random() < 0.12 and not first_spark:  # an explicit service run, on the step's engine
            service = "compact" if table_type == "MERGE_ON_READ" and rng.random() < 0.5 else "cluster"
            getattr(pyhudi, service)(engines.session(engine), path, opts)
            op, instant = service, None
        else:
            op, rows = generate(rng, model, next_id, step, "bulk_insert" if first_spark else None)
            write_op = "insert" if op == "empty" else op
            instant = engines.write(engine, rows, path, {**opts, "hoodie.datasource.write.operation": write_op})
            if rows:
                assert instant, f"step {step} ({op} on {engine}): no instant returned"
                model.apply(op, rows, instant)
        where = f"step {step} ({op} on {engine})"
        ours = arrow_read(path, None, engines.spark)
        assert table_rows(ours) == model.snapshot(), f"{where}: pyhudi differs from the model"
        assert commit_times(ours) == {k: v[2] for k, v in model.rows.items()}, f"{where}: commit times differ"
        if engine == "spark":
            through = engines.datasource_read(path)
            assert table_rows(through) == model.snapshot(), f"{where}: the hudi data source differs from the model"
        if instant:
            check_write_stats(path, instant)
        # hudi-rs 0.5 reads a version-8/9 table's active timeline only, so it drops the files of commits
        # archived into the LSM history: it is the reference until archival first runs there.
        if (step % 5 == 4 or step == steps - 1) and not (version >= 8 and archived_any(path)):
            assert table_rows(hudi_rs(path)) == model.snapshot(), f"{where}: hudi-rs differs from the model"
        operations_seen(path, seen)
    if steps >= 12:  # the services (inline, or the odd explicit run) really ran, and archival too
        want = {"cluster"} | ({"compact"} if table_type == "MERGE_ON_READ" else set())
        assert want <= set(seen.values()), f"services that never ran: {want - set(seen.values())}"
        assert archived_any(path), "archival never ran"
    used["datasource"] = engines.datasource_writes
    return used


def operations_seen(path: str, seen: dict[str, str]) -> None:
    """Remember the operation type of every completed instant as it appears (before archival moves it)."""
    for ts, name in completed_commits(path).items():
        if ts not in seen:
            seen[ts] = str(commit_json(path, name).get("operationType", "")).lower()


def plan_engines(rng: random.Random, steps: int, pick: Callable[[random.Random], str]) -> list[str]:
    """The engine of every step. Alternating runs get each engine for half the steps, in a seeded random
    order (an independent coin per step can leave one engine almost unused in a short run)."""
    if pick is not _alternate:
        return [pick(rng) for _ in range(steps)]
    schedule = ["local", "spark"] * (steps // 2) + [rng.choice(["local", "spark"])] * (steps % 2)
    rng.shuffle(schedule)
    return schedule


def _local(_: random.Random) -> str:
    return "local"


def _spark(_: random.Random) -> str:
    return "spark"


def _alternate(rng: random.Random) -> str:
    return rng.choice(["local", "spark"])


@pytest.mark.parametrize("table_type,seed", [("COPY_ON_WRITE", 1), ("MERGE_ON_READ", 2)])
def test_randomized_local_engine(request, tmp_path, table_type, seed):
    run_workload(request, tmp_path, table_type, steps=24, seed=seed, pick=_local)


@pytest.mark.parametrize("table_type,seed,version", [("COPY_ON_WRITE", 5, "8"), ("MERGE_ON_READ", 6, "9")])
def test_randomized_local_engine_hudi_1x_tables(request, tmp_path, table_type, seed, version):
    """The same workload on tables pyhudi creates at Hudi 1.x's versions 8 and 9 (timeline layout 2)."""
    run_workload(request, tmp_path, table_type, steps=24, seed=seed, pick=_local,
                 **{"hoodie.write.table.version": version})


@pytest.mark.spark
@pytest.mark.parametrize("table_type,seed,version", [("MERGE_ON_READ", 7, "8")])
def test_randomized_alternating_engines_hudi_1x_tables(request, tmp_path, table_type, seed, version):
    used = run_workload(request, tmp_path, table_type, steps=9, seed=seed, pick=_alternate,
                        **{"hoodie.write.table.version": version})
    assert used.get("local", 0) >= 3 and used.get("spark", 0) >= 3 and used["datasource"] >= 1, used


@pytest.mark.spark
@pytest.mark.parametrize("table_type,seed", [pytest.param("COPY_ON_WRITE", 3, marks=pytest.mark.slow),
                                             ("MERGE_ON_READ", 4)])
def test_randomized_alternating_engines(request, tmp_path, table_type, seed):
    used = run_workload(request, tmp_path, table_type, steps=9, seed=seed, pick=_alternate)
    assert used.get("local", 0) >= 3 and used.get("spark", 0) >= 3 and used["datasource"] >= 1, used


@pytest.mark.extended
@pytest.mark.slow
@pytest.mark.parametrize("seed", [11, 12, 13])
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_randomized_local_engine_long(request, tmp_path, table_type, seed):
    run_workload(request, tmp_path, table_type, steps=60, seed=seed, pick=_local)


@pytest.mark.extended
@pytest.mark.slow
@pytest.mark.parametrize("table_type,index", [("COPY_ON_WRITE", "BLOOM"), ("COPY_ON_WRITE", "GLOBAL_SIMPLE"),
                                              ("MERGE_ON_READ", "SIMPLE"), ("MERGE_ON_READ", "GLOBAL_BLOOM")])
def test_randomized_local_engine_other_indexes(request, tmp_path, table_type, index):
    run_workload(request, tmp_path, table_type, steps=40, seed=31, pick=_local, **{"hoodie.index.type": index})


@pytest.mark.extended
@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.parametrize("seed", [21, 22])
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_randomized_alternating_engines_long(request, tmp_path, table_type, seed):
    run_workload(request, tmp_path, table_type, steps=40, seed=seed, pick=_alternate)


@pytest.mark.extended
@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.parametrize("table_type,seed", [("COPY_ON_WRITE", 1), ("MERGE_ON_READ", 2)])
def test_randomized_spark_baseline(request, tmp_path, table_type, seed):
    """The same workload as test_randomized_local_engine on Spark alone: the baseline that separates a
    fault of the in-process path from one of the workload."""
    run_workload(request, tmp_path, table_type, steps=16, seed=seed, pick=_spark)


# --------------------------------------------------------------------------- typed keys on both engines
TYPED_SPARK = "id decimal(38,18), day date, bucket int, name string, ts long"


def _typed_batch(start: int, ts: int) -> pa.Table:
    """Decimal record keys (Java's BigDecimal text: `1E-18`, `-0.000000000000000001`...), a date and an int
    partition column, unicode and null data."""
    import datetime as dt
    import decimal

    dec = pa.decimal128(38, 18)
    keys = [decimal.Decimal(v) for v in ("1E-18", "-1E-18", "0", "123456789.5", "-0.25", "1E+2", "7")]
    keys = [k + start for k in keys]
    n = len(keys)
    return pa.table({"id": pa.array(keys, dec),
                     "day": pa.array([dt.date(2024, 1, 1 + (i % 3)) for i in range(n)], pa.date32()),
                     "bucket": pa.array([i % 2 * 10 for i in range(n)], pa.int32()),
                     "name": pa.array([None if i % 3 == 0 else f"名-{start}-{i}" for i in range(n)], pa.string()),
                     "ts": pa.array([ts] * n, pa.int64())})


def _typed_options(table_type: str) -> dict[str, str]:
    return {"hoodie.table.name": "typed", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "day,bucket",
            "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.operation": "upsert",
            "hoodie.datasource.write.table.type": table_type}


def _meta(table: pa.Table | None) -> dict[tuple[str, str], tuple[Any, ...]]:
    if table is None:
        return {}
    return {(r["_hoodie_record_key"], r["_hoodie_partition_path"]): (str(r["id"]), r["name"], r["ts"])
            for r in table.to_pylist()}


@pytest.mark.spark
@pytest.mark.parametrize("table_type", [pytest.param("COPY_ON_WRITE", marks=pytest.mark.slow), "MERGE_ON_READ"])
def test_typed_keys_same_on_both_engines(request, tmp_path, spark, table_type):
    """The same batches written by each engine give the same record keys and partition paths (meta
    columns), and each engine continues the table the other wrote (upserts of half the keys)."""
    opts = _typed_options(table_type)
    first, second = _typed_batch(0, 1), _typed_batch(0, 2).slice(0, 4)
    paths = {e: str(tmp_path / e) for e in ("local", "spark")}
    pyhudi.write(first, paths["local"], opts)
    pyhudi.write(spark.createDataFrame(first.to_pandas(), TYPED_SPARK), paths["spark"], opts)
    local, remote = (_meta(arrow_read(paths[e], None, lambda: spark)) for e in ("local", "spark"))
    assert local == remote, "the engines wrote different keys or partition paths"
    assert any(k.endswith("id:1E-18") or "1E-18" in k for k, _ in local), sorted(local)[:3]
    pyhudi.write(spark.createDataFrame(second.to_pandas(), TYPED_SPARK), paths["local"], opts)  # Spark continues local's
    pyhudi.write(second, paths["spark"], opts)  # and local continues Spark's
    expected = dict(local)
    for row in second.to_pylist():
        key = next(k for k in expected if expected[k][0] == str(row["id"]))
        expected[key] = (str(row["id"]), row["name"], row["ts"])
    for e, path in paths.items():
        assert _meta(arrow_read(path, None, lambda: spark)) == expected, f"{e} table after the other engine's upsert"
        assert _meta(hudi_rs(path)) == expected, f"{e} table read by hudi-rs"
