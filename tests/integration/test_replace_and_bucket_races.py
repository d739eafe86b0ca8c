"""Interleavings around replaced file groups and bucket file groups (in-process engine, no Spark).

A write is paused between writing its files and its commit (`WriteClient._complete`, where the table lock
is taken), another operation runs to completion, then the write goes on. Allowed outcomes are one of the two
serial orders, or a clean conflict with nothing of the loser visible; the table stays writable.

* An overwrite (insert_overwrite, insert_overwrite_table, mode="overwrite") racing a clustering of its
  partition must fail: the clustered group holds the pre-overwrite rows under a file id the overwrite never
  saw, so committing would bring them back (Hudi: the overwrite's replaced ids overlap the replacecommit's).
* BUCKET index: two writers creating one new bucket must not both commit (Hudi compares partition and bucket
  id), in the single-writer default and under optimistic concurrency.
* A BUCKET table is never clustered (the result would not be bucket-named, and unwritable), and its bucket
  count is recorded at creation and cannot change; a table that does not record it has its count checked
  against the stored keys.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import CommitConflictError, InvalidConfigError, UnsupportedTableError
from pyhudi.index.bucket import bucket_id, bucket_of_file_id
from pyhudi.writer.client import WriteClient
from tests.helpers import hudi_rs, rows_by_key

ARROW = pa.schema([("id", pa.string()), ("name", pa.string()), ("part", pa.string()), ("ts", pa.int64())])
COLS = ["name", "part", "ts"]
OCC = {"hoodie.write.concurrency.mode": "optimistic_concurrency_control",
       "hoodie.cleaner.policy.failed.writes": "LAZY"}
Rows = dict[str, tuple[str, str, int]]


def _opts(table_type: str = "COPY_ON_WRITE", **extra: str) -> dict[str, str]:
    return {"hoodie.table.name": "r", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.table.type": table_type, **extra}


def _bucket_opts(table_type: str = "COPY_ON_WRITE", buckets: int | None = 4, **extra: str) -> dict[str, str]:
    out = _opts(table_type, **{"hoodie.index.type": "BUCKET", **extra})
    if buckets is not None:
        out["hoodie.bucket.index.num.buckets"] = str(buckets)
    return out


def _arrow(rows: Rows) -> pa.Table:
    return pa.Table.from_pylist([{"id": k, "name": v[0], "part": v[1], "ts": v[2]} for k, v in rows.items()],
                                schema=ARROW)


def _check(path: str, expected: Rows) -> None:
    """pyhudi and hudi-rs both read exactly `expected` (rows_by_key asserts each key is there once)."""
    assert rows_by_key(pyhudi.read(path), "id", COLS) == expected
    assert rows_by_key(hudi_rs(path), "id", COLS) == expected


@pytest.fixture
def pause_before_commit(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Callable[[], Any]], None]]:
    """Arms a one-shot interleaving: the next write to reach its commit first runs `other` to completion."""
    pending: list[Callable[[], Any]] = []
    original = WriteClient._complete

    def complete(self: WriteClient, *args: Any, **kwargs: Any) -> None:
        if pending:
            pending.pop()()
        original(self, *args, **kwargs)

    monkeypatch.setattr(WriteClient, "_complete", complete)
    yield pending.append
    assert not pending, "the paused write never reached its commit"


def _two_small_groups(path: str, table_type: str) -> Rows:
    """Partition x with two file groups (two bulk_inserts), partition y with one."""
    first = {f"a{i}": (f"old{i}", "x", 1) for i in range(5)} | {"y0": ("keep", "y", 1)}
    second = {f"b{i}": (f"old{i}", "x", 1) for i in range(5)}
    for rows in (first, second):
        pyhudi.write(_arrow(rows), path, _opts(table_type, **{"hoodie.datasource.write.operation": "bulk_insert"}))
    return first | second


def _cluster(path: str) -> list[str]:
    return pyhudi.cluster(None, path, {"hoodie.clustering.plan.strategy.small.file.limit": str(64 << 20)})


OVERWRITES = [("insert_overwrite", None), ("insert_overwrite_table", None), ("upsert", "overwrite")]


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize(("operation", "mode"), OVERWRITES, ids=["insert_overwrite", "insert_overwrite_table",
                                                                   "mode_overwrite"])
def test_overwrite_racing_a_clustering_of_its_partition_conflicts(tmp_path, pause_before_commit, table_type,
                                                                   operation, mode):
    path = str(tmp_path / "t")
    before = _two_small_groups(path, table_type)
    clustered: list[str] = []
    pause_before_commit(lambda: clustered.extend(_cluster(path)))
    new = {"n0": ("new", "x", 2)}
    opts = _opts(table_type, **{"hoodie.datasource.write.operation": operation})
    with pytest.raises(CommitConflictError, match="replaced"):
        pyhudi.write(_arrow(new), path, opts, mode=mode or "append")
    assert clustered, "the clustering did not run while the overwrite was paused"
    _check(path, before)  # the clustering's result alone: nothing of the overwrite
    # Still writable: the overwrite, retried, replaces what it replaces in either serial order.
    pyhudi.write(_arrow(new), path, opts, mode=mode or "append")
    kept = {} if operation != "insert_overwrite" else {k: v for k, v in before.items() if v[1] == "y"}
    _check(path, kept | new)


def _same_bucket_keys(count: int, buckets: int = 4, part: str = "x") -> list[str]:
    keys = [f"k{i}" for i in range(200)]
    wanted = bucket_id(keys[0], ("id",), buckets)
    return [k for k in keys if bucket_id(k, ("id",), buckets) == wanted][:count]


def _bucket_groups(path: str, part: str) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for name in os.listdir(os.path.join(path, part)):
        if name.startswith(".hoodie") or not (name.endswith(".parquet") or ".log." in name):
            continue
        fid = name.lstrip(".").split("_")[0]
        b = bucket_of_file_id(fid)
        assert b is not None, name
        out.setdefault(b, set()).add(fid)
    return out


@pytest.mark.parametrize(("table_type", "extra"), [("COPY_ON_WRITE", {}), ("MERGE_ON_READ", OCC),
                                                    ("MERGE_ON_READ", {}), ("COPY_ON_WRITE", OCC)],
                         ids=["cow-single-writer", "mor-occ", "mor-single-writer", "cow-occ"])
def test_two_writers_creating_one_bucket_do_not_both_commit(tmp_path, pause_before_commit, table_type, extra):
    path = str(tmp_path / "t")
    opts = _bucket_opts(table_type, **extra)
    base = {"z0": ("base", "y", 1)}  # the table exists; partition x does not yet
    pyhudi.write(_arrow(base), path, opts)
    shared, only_a, only_b = _same_bucket_keys(3)
    b_rows = {shared: ("b", "x", 2), only_b: ("b", "x", 2)}
    pause_before_commit(lambda: pyhudi.write(_arrow(b_rows), path, opts))
    with pytest.raises(CommitConflictError, match="same bucket"):
        pyhudi.write(_arrow({shared: ("a", "x", 3), only_a: ("a", "x", 3)}), path, opts)
    _check(path, base | b_rows)
    assert all(len(ids) == 1 for ids in _bucket_groups(path, "x").values())
    # Still writable, into the bucket the second writer created.
    more = {only_a: ("a2", "x", 4), shared: ("a2", "x", 4)}
    pyhudi.write(_arrow(more), path, opts)
    _check(path, base | b_rows | more)
    assert all(len(ids) == 1 for ids in _bucket_groups(path, "x").values())


def test_writers_creating_other_buckets_both_commit(tmp_path, pause_before_commit):
    """The bucket rule is not a blanket conflict: new groups of different buckets are independent."""
    path = str(tmp_path / "t")
    opts = _bucket_opts()
    keys = [f"k{i}" for i in range(200)]
    first = keys[0]
    other = next(k for k in keys if bucket_id(k, ("id",), 4) != bucket_id(first, ("id",), 4))
    pyhudi.write(_arrow({"z0": ("base", "y", 1)}), path, opts)
    pause_before_commit(lambda: pyhudi.write(_arrow({other: ("b", "x", 2)}), path, opts))
    pyhudi.write(_arrow({first: ("a", "x", 2)}), path, opts)
    _check(path, {"z0": ("base", "y", 1), other: ("b", "x", 2), first: ("a", "x", 2)})


def _drop_property(path: str, key: str) -> None:
    """Hudi 0.14 keeps no bucket count in hoodie.properties: make a pyhudi table look like one of its."""
    props = os.path.join(path, ".hoodie", "hoodie.properties")
    with open(props) as f:
        lines = [ln for ln in f if not ln.startswith(key + "=")]
    with open(props, "w") as f:
        f.writelines(lines)


def _bucket_table(path: str, table_type: str, recorded: bool) -> Rows:
    rows: Rows = {}
    for n in range(3):  # three writes: several file groups, and log files on MOR
        batch = {f"k{i}": (f"v{n}", f"p{i % 2}", n) for i in range(n * 7, n * 7 + 12)}
        pyhudi.write(_arrow(batch), path, _bucket_opts(table_type))
        rows |= batch
    if not recorded:
        _drop_property(path, "hoodie.bucket.index.num.buckets")
    return rows


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize("recorded", [True, False], ids=["recorded", "hudi-0.14-table"])
def test_a_bucket_table_is_never_clustered(tmp_path, table_type, recorded):
    path = str(tmp_path / "t")
    rows = _bucket_table(path, table_type, recorded)
    with pytest.raises(UnsupportedTableError, match="BUCKET"):
        _cluster(path)  # no options: what the table records or its file groups tell
    with pytest.raises(UnsupportedTableError, match="BUCKET"):
        pyhudi.cluster(None, path, {"hoodie.index.type": "BUCKET"})
    inline = {"hoodie.clustering.inline": "true", "hoodie.clustering.inline.max.commits": "1"}
    with pytest.raises(InvalidConfigError, match="clustering"):
        pyhudi.write(_arrow({"k0": ("x", "p0", 9)}), path, _bucket_opts(table_type, **inline))
    assert not [f for f in os.listdir(os.path.join(path, ".hoodie")) if f.endswith(".replacecommit.requested")]
    update = {"k0": ("after", "p0", 9)}
    pyhudi.write(_arrow(update), path, _bucket_opts(table_type))  # still a writable bucket table
    _check(path, rows | update)


def test_bucket_count_is_recorded_and_cannot_change(tmp_path):
    path = str(tmp_path / "t")
    rows = _bucket_table(path, "COPY_ON_WRITE", recorded=True)
    with open(os.path.join(path, ".hoodie", "hoodie.properties")) as f:
        assert "hoodie.bucket.index.num.buckets=4\n" in f.read()
    update = {f"k{i}": ("eight", f"p{i % 2}", 9) for i in range(12)}
    with pytest.raises(InvalidConfigError, match="hoodie.bucket.index.num.buckets=8 conflicts"):
        pyhudi.write(_arrow(update), path, _bucket_opts(buckets=8))
    pyhudi.write(_arrow(update), path, _bucket_opts(buckets=None))  # left out: the table's 4, not 256
    _check(path, rows | update)
    assert max(_bucket_groups(path, "p0")) < 4


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_bucket_count_change_is_refused_on_a_table_that_does_not_record_it(tmp_path, table_type):
    path = str(tmp_path / "t")
    rows = _bucket_table(path, table_type, recorded=False)
    update = {f"k{i}": ("eight", f"p{i % 2}", 9) for i in range(20)}
    for wrong in (8, 2, 3):
        with pytest.raises(InvalidConfigError, match="does not match the table"):
            pyhudi.write(_arrow(update), path, _bucket_opts(table_type, buckets=wrong))
    _check(path, rows)
    pyhudi.write(_arrow(update), path, _bucket_opts(table_type, buckets=4))
    _check(path, rows | update)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize(("operation", "mode"), OVERWRITES, ids=["insert_overwrite", "insert_overwrite_table",
                                                                   "mode_overwrite"])
def test_a_clustering_plan_an_overwrite_made_obsolete_is_dropped_not_failed(tmp_path, table_type, operation, mode):
    """Scheduled before an overwrite of its partition, executed after: its input groups are replaced, so it
    is dropped (Hudi fails such a clustering's commit and leaves it pending); before, `pyhudi.cluster` raised
    CommitConflictError for it. (delete_partition refuses partitions under pending clustering.)"""
    from pyhudi.model.table_config import load_table_config
    from pyhudi.services import clustering
    from pyhudi.storage import Storage
    from pyhudi.writer.config import ClusteringConfig

    path = str(tmp_path / "t")
    before = _two_small_groups(path, table_type)
    storage = Storage(path)
    assert clustering.schedule(storage, load_table_config(storage), ClusteringConfig(small_file_limit=64 << 20),
                               128 << 20)
    new = {"n0": ("new", "x", 2)}
    pyhudi.write(_arrow(new), path, _opts(table_type, **{"hoodie.datasource.write.operation": operation}),
                 mode=mode or "append")
    after = ({k: v for k, v in before.items() if v[1] == "y"} if operation == "insert_overwrite" else {}) | new
    assert _cluster(path) == []  # dropped, and no new plan: nothing small enough twice
    assert not clustering.pending_clusterings(storage)
    _check(path, after)
    pyhudi.write(_arrow({"n1": ("more", "x", 3)}), path, _opts(table_type))
    _check(path, after | {"n1": ("more", "x", 3)})
