"""Partition values with '/' (issue 16): Hudi's default layout (not hive-style, no URL-encoding) nests
them as directories, e.g. `2024/01/02` (what TimestampBasedKeyGenerator with `yyyy/MM/dd` writes: one
field, three levels) and both `a` and `a/b` (a partition nested in another). pyhudi must find every
partition at its depth, and write, read, upsert, time-travel, read incrementally, compact, cluster and
prune such tables exactly as a flat table; hudi-rs must read what pyhudi wrote."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

import pyhudi
from pyhudi.errors import InvalidRecordError
from pyhudi.model.table_config import load_table_config
from pyhudi.storage import Storage
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.builder import build_view
from pyhudi.view.file_system_view import FileSlice
from pyhudi.view.partition_values import DEFAULT_PARTITION
from tests.helpers import hudi_rs

pytestmark = pytest.mark.spark

VALUES = ["2024/01/02", "2024/01/03", "2023/12/31", "a", "a/b", "a/b/c", "x", None]
N = 40
FILTERS: list[list[tuple[str, str, Any]]] = [
    [("part", "=", "a")], [("part", "=", "a/b")], [("part", "=", "2024/01/02")],
    [("part", ">=", "2024/01/02")], [("part", "<", "a/b")], [("part", "in", ["a/b/c", "x"])],
    [("part", "!=", "a")], [("part", "not in", ["a", "2023/12/31"])]]


def _opts(table_type: str, hive: bool, **extra: str) -> dict[str, str]:
    return {"hoodie.table.name": "deep", "hoodie.datasource.write.table.type": table_type,
            "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "part",
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.hive_style_partitioning": str(hive).lower(),
            "hoodie.parquet.small.file.limit": "0", **extra}


def _rows(start: int, n: int, v: int) -> list[tuple[Any, ...]]:
    return [(i, VALUES[i % len(VALUES)], v, v) for i in range(start, start + n)]


def _write(spark, path: str, rows: list[tuple[Any, ...]], opts: dict[str, str], op: str) -> str:
    df = spark.createDataFrame(rows, "id long, part string, v long, ts long")
    instant = pyhudi.write(df, path, {**opts, "hoodie.datasource.write.operation": op})
    assert instant
    return instant


def _model(rows: list[tuple[Any, ...]]) -> dict[int, tuple[Any, ...]]:
    return {r[0]: (r[1], r[2]) for r in rows}


def _by_key(table) -> dict[int, tuple[Any, ...]]:  # type: ignore[no-untyped-def]
    if table is None:
        return {}
    out: dict[int, tuple[Any, ...]] = {}
    for r in table.select(["id", "part", "v"]).to_pylist():
        assert r["id"] not in out, f"duplicate key {r['id']}"
        out[r["id"]] = (r["part"], r["v"])
    return out


def _path_of(value: str | None, hive: bool) -> str:
    text = DEFAULT_PARTITION if value is None else value
    return f"part={text}" if hive else text


def _slices(path: str) -> list[FileSlice]:
    storage = Storage(path)
    return build_view(storage, load_table_config(storage), ActiveTimeline.load(storage)).all_latest_file_slices()


def _groups(path: str) -> set[tuple[str, str]]:
    return {(s.partition, s.file_id) for s in _slices(path)}


def _leaves(model: dict[int, tuple[Any, ...]]) -> dict[int, tuple[Any, ...]]:
    """The rows hudi-rs (0.5) can read: it takes partitions to be the *leaf* directories under the
    table (storage `get_leaf_dirs`), not the directories holding a partition metafile, so the rows of
    a partition with another partition nested inside (`a` holds `a/b`, `a/b` holds `a/b/c`) are
    invisible to it. Deeper one-field paths such as `2024/01/02` it reads in full."""
    values = {v for v, _ in model.values()}
    nested = {v for v in values if v is not None and any(w and w.startswith(v + "/") for w in values)}
    return {k: r for k, r in model.items() if r[0] not in nested}


def _check(spark, path: str, model: dict[int, tuple[Any, ...]], as_of: str | None = None) -> None:
    opts = {"as.of.instant": as_of} if as_of else None
    assert _by_key(pyhudi.read(spark, path, opts).toArrow()) == model
    assert _by_key(hudi_rs(path, as_of=as_of)) == _leaves(model)


def _commit(path: str, instant: str) -> dict[str, Any]:
    hoodie = os.path.join(path, ".hoodie")
    completed = {f"{instant}.{a}" for a in ("commit", "deltacommit", "replacecommit")}
    name = next(n for n in os.listdir(hoodie) if n in completed)
    with open(os.path.join(hoodie, name)) as fh:
        return json.load(fh)


@pytest.mark.parametrize("table_type,hive", [("COPY_ON_WRITE", False), ("MERGE_ON_READ", False),
                                             ("COPY_ON_WRITE", True)], ids=["cow", "mor", "cow-hive"])
def test_slash_partitions_write_read_upsert(spark, tmp_path, table_type, hive):
    path, opts = str(tmp_path / "t"), _opts(table_type, hive)
    first = _rows(0, N, 1)
    c1 = _write(spark, path, first, opts, "insert")
    model1 = _model(first)
    _check(spark, path, model1)
    expected_paths = {_path_of(v, hive) for v in VALUES}
    meta = _commit(path, c1)
    assert set(meta["partitionToWriteStats"]) == expected_paths
    stored = pyhudi.read(spark, path).select("_hoodie_partition_path", "part").distinct().collect()
    assert {r[0]: r[1] for r in stored} == {_path_of(v, hive): v for v in VALUES}
    groups = _groups(path)
    assert {p for p, _ in groups} == expected_paths

    # An upsert of every key lands in the same file groups (COW: rewritten, MOR: logs appended).
    second = [(i, p, 2, 2) for i, p, _, _ in first]
    c2 = _write(spark, path, second, opts, "upsert")
    model2 = _model(second)
    _check(spark, path, model2)
    assert _groups(path) == groups
    assert set(_commit(path, c2)["partitionToWriteStats"]) == expected_paths

    # Time travel and incremental reads see the nested partitions too.
    _check(spark, path, model1, as_of=c1)
    incr = {"hoodie.datasource.query.type": "incremental", "hoodie.datasource.read.begin.instanttime": c1}
    assert _by_key(pyhudi.read(spark, path, incr).toArrow()) == model2
    assert _by_key(hudi_rs(path, start=c1)) == _leaves(model2)
    first_only = {**incr, "hoodie.datasource.read.begin.instanttime": "000",
                  "hoodie.datasource.read.end.instanttime": c1}
    assert {k: v for k, (_, v) in _by_key(pyhudi.read(spark, path, first_only).toArrow()).items()} == {
        k: 1 for k in model1}

    # Pruned reads equal the unpruned read filtered by Spark.
    everything = pyhudi.read(spark, path)
    for flt in FILTERS:
        (col, op, value), = flt
        cond = everything[col].isin(value) if op == "in" else ~everything[col].isin(value) if op == "not in" \
            else {"=": everything[col] == value, "!=": everything[col] != value, "<": everything[col] < value,
                  ">=": everything[col] >= value}[op]
        assert _by_key(pyhudi.read(spark, path, filters=flt).toArrow()) == _by_key(
            everything.filter(cond).toArrow()), flt


def test_mor_compaction_on_slash_partitions(spark, tmp_path):
    path, opts = str(tmp_path / "t"), _opts("MERGE_ON_READ", False)
    first = _rows(0, N, 1)
    _write(spark, path, first, opts, "insert")
    second = [(i, p, 2, 2) for i, p, _, _ in first[::2]]
    _write(spark, path, second, opts, "upsert")
    model = {**_model(first), **_model(second)}
    with_logs = {(s.partition, s.file_id) for s in _slices(path) if s.log_files}
    assert {p for p, _ in with_logs} == {v for v in VALUES[::2]}  # includes a/b, nested under a
    groups = _groups(path)
    done = pyhudi.compact(spark, path, opts)
    assert len(done) == 1
    _check(spark, path, model)
    slices = _slices(path)
    assert {(s.partition, s.file_id) for s in slices} == groups
    compacted = {(s.partition, s.file_id) for s in slices if s.base_instant == done[0] and not s.log_files}
    assert compacted == with_logs


def test_cow_clustering_on_slash_partitions(spark, tmp_path):
    path, opts = str(tmp_path / "t"), _opts("COPY_ON_WRITE", False)
    first, more = _rows(0, N, 1), _rows(N, N, 1)
    _write(spark, path, first, opts, "insert")
    _write(spark, path, more, opts, "insert")  # small.file.limit=0: a second file group per partition
    before = _groups(path)
    done = pyhudi.cluster(spark, path, opts)
    assert len(done) == 1
    replaced = _commit(path, done[0])["partitionToReplaceFileIds"]
    assert {(p, f) for p, ids in replaced.items() for f in ids} == before
    _check(spark, path, _model(first + more))
    after = _groups(path)
    assert after.isdisjoint(before) and {p for p, _ in after} == {p for p, _ in before}

    # The cleaner finds the replaced files in every partition, nested ones included, and only those.
    pyhudi.clean(spark, path, {**opts, "hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
                               "hoodie.cleaner.fileversions.retained": "1"})
    left = {(os.path.dirname(f), f.rsplit("/", 1)[-1].split("_")[0]) for f in _data_files(path)}
    assert left == after
    _check(spark, path, _model(first + more))


def _data_files(path: str) -> list[str]:
    out = []
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if d != ".hoodie"]
        out += [os.path.relpath(os.path.join(root, f), path) for f in files if f.endswith(".parquet")]
    return out


@pytest.mark.parametrize("bad", ["x/", "/", "x//y", "..", "a/./b"])
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_values_the_file_system_cannot_keep_apart_are_refused(spark, tmp_path, bad, table_type):
    """`x/` and `x` would share one folder (and `..` leave the table): such a write is refused and rolled
    back, and the table reads as before; with URL-encoding the same value is written and read back."""
    path = str(tmp_path / "t")
    opts = _opts(table_type, hive=False)
    first = [(1, "x", 1, 1), (2, "x", 1, 1)]
    _write(spark, path, first, opts, "upsert")
    before = sorted(os.listdir(os.path.join(path, ".hoodie")))
    df = spark.createDataFrame([(3, bad, 2, 2)], "id long, part string, v long, ts long")
    with pytest.raises(InvalidRecordError, match="urlencode"):
        pyhudi.write(df, path, {**opts, "hoodie.datasource.write.operation": "upsert"})
    assert _by_key(pyhudi.read(spark, path).toArrow()) == _model(first)
    after = [n for n in sorted(os.listdir(os.path.join(path, ".hoodie"))) if n not in before]
    assert all(".rollback" in n or n.startswith(".") or "heartbeat" in n for n in after), after
    assert not os.path.exists(os.path.join(tmp_path, "x")) and not os.path.exists(os.path.join(path, ".", "y"))
    enc = str(tmp_path / "enc")
    rows = [(1, bad, 1, 1), (2, "x", 1, 1)]
    # Hudi's escaping leaves dots alone, so a whole value '..' takes hive-style partitioning instead
    fix = {"hoodie.datasource.write.hive_style_partitioning": "true"} if bad == ".." else \
        {"hoodie.datasource.write.partitionpath.urlencode": "true"}
    _write(spark, enc, rows, {**_opts(table_type, hive=False), **fix}, "upsert")
    assert _by_key(pyhudi.read(spark, enc).toArrow()) == _model(rows)
    assert _by_key(hudi_rs(enc)) == _model(rows)
