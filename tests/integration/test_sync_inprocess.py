"""Meta sync end to end, in-process (no Spark, no metastore): writes with hoodie.datasource.hive_sync.enable
sync into the in-memory catalog (pyhudi.sync.factory.override), and after every step the catalog must equal
the table: one partition per partition the table's rows are in, at its location; the columns of the table's
schema; the tables, formats and properties Hudi registers; last_commit_time_sync at the last commit.

The table side is computed without the sync's code: partitions from the rows `pyhudi.read` returns
(`_hoodie_partition_path`), columns from the read schema, the last commit from the timeline."""

from __future__ import annotations

import random
import threading
import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import MetaSyncError, PostCommitWarning
from pyhudi.storage import Storage
from pyhudi.sync import factory
from pyhudi.sync.memory import InMemoryCatalog
from pyhudi.timeline.timeline import ActiveTimeline

DB = "lake"
REGIONS = ["eu", "us", "asia", "africa", "oceania", "arctic"]


def _options(table_type: str, version: int = 6, **extra: str) -> dict[str, str]:
    return {"hoodie.table.name": "trips", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "region",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.hive_style_partitioning": "true",
            "hoodie.datasource.write.table.type": table_type, "hoodie.write.table.version": str(version),
            "hoodie.datasource.hive_sync.enable": "true", "hoodie.datasource.hive_sync.database": DB,
            "hoodie.datasource.hive_sync.support_timestamp": "true", **extra}


def _batch(rng: random.Random, regions: list[str], n: int, ts: int, extra: bool = False,
           wide: bool = False) -> pa.Table:
    cols: dict[str, Any] = {
        "id": [f"k{rng.randrange(60)}" for _ in range(n)],
        "region": [rng.choice(regions) for _ in range(n)],
        "ts": [ts] * n,
        "qty": pa.array([rng.randrange(100) for _ in range(n)], pa.int64() if wide else pa.int32()),
    }
    if extra:
        cols["note"] = [f"n{i}" for i in range(n)]
    return pa.table(cols)


def _table_names(table_type: str, version: int) -> list[str]:
    if table_type == "COPY_ON_WRITE":
        return ["trips"]
    return ["trips_ro", "trips_rt", "trips"] if version >= 8 else ["trips_ro", "trips_rt"]


def assert_catalog_equals_table(cat: InMemoryCatalog, path: str, names: list[str]) -> None:
    rows = pyhudi.read(path)
    partitions = set(rows.column("_hoodie_partition_path").to_pylist())
    want_parts = {(p.split("=", 1)[1],): f"file:{path}/{p}" for p in partitions}
    want_cols = [f.name.lower() for f in rows.schema if f.name != "region"]
    last = ActiveTimeline.load(Storage(path)).commits().completed().last()
    assert last is not None
    assert sorted(n for d, n in cat.tables if d == DB) == sorted(names)
    for name in names:
        table = cat.tables[(DB, name)]
        got = {p.values: p.location for p in cat.partitions[(DB, name)].values()}
        assert got == want_parts, name
        assert [c.name for c in table.columns] == want_cols, name
        assert [(c.name, c.type) for c in table.partition_keys] == [("region", "string")]
        assert table.location == f"file:{path}" and table.serde_parameters["path"] == f"file:{path}"
        assert table.parameters["last_commit_time_sync"] == last.timestamp, name
        assert table.parameters["EXTERNAL"] == "TRUE" and table.parameters["spark.sql.sources.provider"] == "hudi"
        realtime = name.endswith("_rt") or (name == "trips" and len(names) == 3)
        assert table.input_format.endswith("HoodieParquetRealtimeInputFormat" if realtime else ".HoodieParquetInputFormat")
        assert table.serde_parameters["hoodie.query.as.ro.table"] == ("false" if realtime else "true"
                                                                      if len(names) > 1 else "false")


def _types(cat: InMemoryCatalog, name: str) -> dict[str, str]:
    return {c.name: c.type for c in cat.tables[(DB, name)].columns}


@pytest.mark.parametrize(("table_type", "version", "seed"), [
    ("COPY_ON_WRITE", 6, 1), ("MERGE_ON_READ", 6, 2), ("MERGE_ON_READ", 8, 3),
])
def test_randomized_writes_keep_the_catalog_equal_to_the_table(tmp_path: Path, table_type: str, version: int,
                                                              seed: int) -> None:
    rng = random.Random(seed)
    path = str(tmp_path / "trips")
    names = _table_names(table_type, version)
    opts = _options(table_type, version, **{"hoodie.cleaner.commits.retained": "2", "hoodie.keep.min.commits": "3",
                                             "hoodie.keep.max.commits": "4"})
    cat = InMemoryCatalog()
    extra = wide = False
    with factory.override(cat):
        for step in range(12):
            if step == 5:
                extra = True  # schema evolution: an added column
            if step == 8:
                wide = True  # a widened type: int -> bigint
            roll = rng.random()
            if step > 2 and roll < 0.15:
                present = sorted({p.split("=", 1)[1] for p in pyhudi.read(path).column("_hoodie_partition_path")
                                  .to_pylist()})
                if len(present) > 1:
                    pyhudi.write(_batch(rng, REGIONS, 0, step, extra, wide), path,
                                 {**opts, "hoodie.datasource.write.operation": "delete_partition",
                                  "hoodie.datasource.write.partitions.to.delete": f"region={rng.choice(present)}"})
            elif step > 2 and roll < 0.25:
                pyhudi.write(_batch(rng, rng.sample(REGIONS, 2), 10, step, extra, wide), path,
                             {**opts, "hoodie.datasource.write.operation": "insert_overwrite_table"})
            else:
                pyhudi.write(_batch(rng, rng.sample(REGIONS, 3), 20, step, extra, wide), path, opts)
            assert_catalog_equals_table(cat, path, names)
        types = _types(cat, names[0])
        assert types["note"] == "string" and types["qty"] == "bigint" and types["ts"] == "bigint"


def test_delete_partition_and_overwrite_table_drop_partitions(tmp_path: Path) -> None:
    path = str(tmp_path / "trips")
    opts = _options("COPY_ON_WRITE")
    rng = random.Random(7)
    cat = InMemoryCatalog()
    with factory.override(cat):
        pyhudi.write(_batch(rng, ["eu", "us", "asia"], 30, 1), path, opts)
        assert set(cat.partitions[(DB, "trips")]) == {("eu",), ("us",), ("asia",)}
        pyhudi.write(_batch(rng, ["eu"], 0, 2), path, {**opts, "hoodie.datasource.write.operation": "delete_partition",
                                                       "hoodie.datasource.write.partitions.to.delete": "region=us"})
        assert set(cat.partitions[(DB, "trips")]) == {("eu",), ("asia",)}
        pyhudi.write(_batch(rng, ["africa"], 5, 3), path,
                     {**opts, "hoodie.datasource.write.operation": "insert_overwrite_table"})
        assert set(cat.partitions[(DB, "trips")]) == {("africa",)}
        pyhudi.clean(None, path, opts)
        assert_catalog_equals_table(cat, path, ["trips"])


def test_archived_sync_point_falls_back_to_a_full_listing(tmp_path: Path) -> None:
    path = str(tmp_path / "trips")
    archiving = {"hoodie.cleaner.commits.retained": "1", "hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3"}
    opts = _options("MERGE_ON_READ", **archiving)
    unsynced = {k: v for k, v in opts.items() if k != "hoodie.datasource.hive_sync.enable"}
    rng = random.Random(11)
    cat = InMemoryCatalog()
    with factory.override(cat):
        pyhudi.write(_batch(rng, ["eu", "us"], 20, 1), path, opts)
        point = cat.tables[(DB, "trips_ro")].parameters["last_commit_time_sync"]
        for step in range(2, 9):  # written without sync: the catalog falls behind, its sync point is archived
            pyhudi.write(_batch(rng, [REGIONS[step % len(REGIONS)]], 10, step), path, unsynced)
        pyhudi.write(_batch(rng, ["eu"], 0, 9), path, {**unsynced, "hoodie.datasource.write.operation":
                                                       "delete_partition", "hoodie.datasource.write.partitions.to.delete":
                                                       "region=us"})
        assert not ActiveTimeline.load(Storage(path)).commits().completed().contains(point)
        explained = pyhudi.sync(path, opts, explain=True)
        assert all(t.full_listing for t in explained[0].tables)
        assert ("us",) in cat.partitions[(DB, "trips_ro")]  # explain changed nothing
        [report] = pyhudi.sync(path, opts)
        assert all(t.full_listing for t in report.tables)
        assert_catalog_equals_table(cat, path, ["trips_ro", "trips_rt"])


def test_failed_sync_raises_after_the_commit_and_the_next_commit_catches_up(tmp_path: Path) -> None:
    path = str(tmp_path / "trips")
    opts = _options("COPY_ON_WRITE")
    rng = random.Random(5)
    cat = InMemoryCatalog()
    with factory.override(cat):
        pyhudi.write(_batch(rng, ["eu"], 10, 1), path, opts)
        point = cat.tables[(DB, "trips")].parameters["last_commit_time_sync"]
        cat.fail["add_partitions"] = lambda _name: True
        with pytest.raises(MetaSyncError) as err:
            pyhudi.write(_batch(rng, ["us"], 10, 2), path, opts)
        instant = err.value.instant
        assert instant is not None and instant in str(err.value)
        assert list(err.value.failures) == ["org.apache.hudi.hive.HiveSyncTool"]
        assert ActiveTimeline.load(Storage(path)).commits().completed().last().timestamp == instant  # type: ignore[union-attr]
        assert "region=us" in pyhudi.read(path).column("_hoodie_partition_path").to_pylist()  # the rows are in
        assert cat.tables[(DB, "trips")].parameters["last_commit_time_sync"] == point  # the point did not move
        cat.fail.clear()
        pyhudi.write(_batch(rng, ["asia"], 10, 3), path, opts)
        assert_catalog_equals_table(cat, path, ["trips"])  # us (the failed sync's commit) is there too


def test_ignore_exceptions_logs_an_unreachable_metastore_and_warns(tmp_path: Path) -> None:
    path = str(tmp_path / "trips")
    rng = random.Random(3)
    down = MetaSyncError("metastore thrift://nowhere:9083 unreachable")
    with factory.override(InMemoryCatalog(), connect_error=down):
        with pytest.raises(MetaSyncError, match="unreachable"):
            pyhudi.write(_batch(rng, ["eu"], 5, 1), path, _options("COPY_ON_WRITE"))
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            instant = pyhudi.write(_batch(rng, ["eu"], 5, 2), path, _options(
                "COPY_ON_WRITE", **{"hoodie.datasource.hive_sync.ignore_exceptions": "true"}))
        found = [w.message for w in seen if isinstance(w.message, PostCommitWarning)]
        assert len(found) == 1 and found[0].instant == instant and found[0].error is down


def test_refused_sync_option_fails_before_the_commit(tmp_path: Path) -> None:
    path = str(tmp_path / "trips")
    with pytest.raises(pyhudi.InvalidConfigError, match="HiveServer2"):
        pyhudi.write(_batch(random.Random(1), ["eu"], 5, 1), path,
                     _options("COPY_ON_WRITE", **{"hoodie.datasource.hive_sync.mode": "jdbc"}))
    assert not (tmp_path / "trips" / ".hoodie").exists() or not ActiveTimeline.load(Storage(path)).commits()


def test_two_concurrent_writers_leave_the_catalog_equal_to_the_table(tmp_path: Path) -> None:
    """Two writers (optimistic concurrency, disjoint partitions), each syncing after every commit, against one
    catalog whose calls are slowed at random so that their syncs interleave."""
    path = str(tmp_path / "trips")
    occ = {"hoodie.write.concurrency.mode": "optimistic_concurrency_control",
           "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.InProcessLockProvider"}
    opts = _options("COPY_ON_WRITE", **occ)
    cat = InMemoryCatalog()
    jitter = random.Random(99)

    def slow(_name: str) -> bool:
        threading.Event().wait(jitter.random() * 0.004)
        return False

    errors: list[BaseException] = []

    def writer(regions: list[str], seed: int) -> None:
        rng = random.Random(seed)
        try:
            for step in range(6):
                if step == 4:
                    pyhudi.write(_batch(rng, regions, 0, step), path,
                                 {**opts, "hoodie.datasource.write.operation": "delete_partition",
                                  "hoodie.datasource.write.partitions.to.delete": f"region={regions[0]}"})
                else:
                    pyhudi.write(_batch(rng, regions, 10, step), path, opts)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    with factory.override(cat):
        pyhudi.write(_batch(random.Random(0), ["eu", "us"], 10, 0), path, opts)
        cat.fail["*"] = slow
        threads = [threading.Thread(target=writer, args=(r, i)) for i, r in
                   enumerate((["asia", "africa"], ["oceania", "arctic"]))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        cat.fail.clear()
    assert not errors, errors
    assert_catalog_equals_table(cat, path, ["trips"])


def test_two_concurrent_syncers_converge(tmp_path: Path) -> None:
    """`pyhudi sync` run by two threads at once, over and over, while the table changes under them."""
    path = str(tmp_path / "trips")
    opts = _options("MERGE_ON_READ")
    unsynced = {k: v for k, v in opts.items() if k != "hoodie.datasource.hive_sync.enable"}
    rng = random.Random(21)
    cat = InMemoryCatalog()
    stop = threading.Event()
    errors: list[BaseException] = []

    def syncer(once: bool = False) -> None:
        try:
            while not stop.is_set() or once:
                pyhudi.sync(path, opts)
                once = False
                if stop.is_set():
                    return
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    pyhudi.write(_batch(rng, REGIONS[:3], 20, 0), path, unsynced)
    with factory.override(cat):
        threads = [threading.Thread(target=syncer) for _ in range(2)]
        for t in threads:
            t.start()
        for step in range(1, 7):
            if step % 3 == 0:
                pyhudi.write(_batch(rng, ["eu"], 0, step), path, {
                    **unsynced, "hoodie.datasource.write.operation": "delete_partition",
                    "hoodie.datasource.write.partitions.to.delete": f"region={REGIONS[step // 3]}"})
            else:
                pyhudi.write(_batch(rng, rng.sample(REGIONS, 2), 10, step), path, unsynced)
        stop.set()
        for t in threads:
            t.join()
        finals = [threading.Thread(target=syncer, args=(True,)) for _ in range(2)]
        for t in finals:
            t.start()
        for t in finals:
            t.join()
    assert not errors, errors
    assert_catalog_equals_table(cat, path, ["trips_ro", "trips_rt"])


def test_cli_sync_explain_and_progress(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pyhudi.cli.main import main

    path = str(tmp_path / "trips")
    opts = _options("COPY_ON_WRITE")
    unsynced = {k: v for k, v in opts.items() if k != "hoodie.datasource.hive_sync.enable"}
    pyhudi.write(_batch(random.Random(2), ["eu", "us"], 10, 1), path, unsynced)
    cat = InMemoryCatalog()
    args = ["sync", path, "-o", f"hoodie.datasource.hive_sync.database={DB}", "-o",
            "hoodie.datasource.hive_sync.support_timestamp=true"]
    with factory.override(cat):
        assert main([*args, "--explain"]) == 0
        out = capsys.readouterr()
        assert "would change" in out.out and f"create table {DB}.trips" in out.out and "add partition eu" in out.out
        assert not cat.tables
        assert main(args) == 0
        out = capsys.readouterr()
        assert "adding partitions 1-2 of 2" in out.err
        assert_catalog_equals_table(cat, path, ["trips"])
        assert main(args) == 0
        assert "nothing to change" in capsys.readouterr().out


def test_rollback_of_a_synced_commit_removes_its_partition(tmp_path: Path) -> None:
    """Hudi does not sync after a rollback, and its incremental sync never revisits a synced commit; pyhudi
    syncs after rollback/restore, and a sync point that left the timeline means a full comparison."""
    path = str(tmp_path / "trips")
    opts = _options("COPY_ON_WRITE")
    rng = random.Random(4)
    cat = InMemoryCatalog()
    with factory.override(cat):
        pyhudi.write(_batch(rng, ["eu"], 10, 1), path, opts)
        last = pyhudi.write(_batch(rng, ["us"], 10, 2), path, opts)
        assert ("us",) in cat.partitions[(DB, "trips")]
        pyhudi.rollback(None, path, last, opts)
        assert_catalog_equals_table(cat, path, ["trips"])
        assert ("us",) not in cat.partitions[(DB, "trips")]
