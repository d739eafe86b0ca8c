"""Rollback of completed writes, savepoints and restore, on COW and MOR, checked with hudi-rs."""

from __future__ import annotations

import os

import pytest
from pyspark.sql import functions as F

import pyhudi
from pyhudi.io.log_format import ROLLBACK_COMMAND, BlockType, HeaderKey, read_valid_blocks
from pyhudi.model import avro_models as am
from pyhudi.model.file_names import parse_log_file
from pyhudi.services.restore import RollbackRefusedError, list_savepoints
from pyhudi.storage import Storage
from tests.helpers import hudi_rs, rows_by_key

pytestmark = pytest.mark.spark
COLS = ["v", "ts"]


def _opts(table_type: str, **extra: str) -> dict[str, str]:
    o = {"hoodie.table.name": "rb", "hoodie.datasource.write.recordkey.field": "id",
         "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
         "hoodie.datasource.write.table.type": table_type, "hoodie.parquet.max.file.size": str(256 * 1024),
         "hoodie.parquet.small.file.limit": str(128 * 1024), "hoodie.index.bloom.num_entries": "1000",
         "hoodie.clean.automatic": "false"}
    if table_type == "MERGE_ON_READ":
        o["hoodie.index.type"] = "INMEMORY"
    return {**o, **extra}


def _batch(spark, ids: range, ts: int):
    return spark.range(ids.start, ids.stop).select(
        F.col("id"), (F.col("id") * 31 + ts).alias("v"), F.lit(ts).cast("long").alias("ts"),
        (F.col("id") % 2).cast("string").alias("p"))


def _apply(model: dict, ids: range, ts: int) -> dict:
    new = dict(model)
    new.update({i: (i * 31 + ts, ts) for i in ids})
    return new


def _check(spark, path: str, expected: dict) -> None:
    assert rows_by_key(pyhudi.read(spark, path).toArrow(), "id", COLS) == expected
    assert rows_by_key(hudi_rs(path), "id", COLS) == expected, "hudi-rs disagrees"


def _hoodie(path: str) -> set[str]:
    return set(os.listdir(os.path.join(path, ".hoodie")))


def _avro(path: str, name: str) -> dict:
    with open(os.path.join(path, ".hoodie", name), "rb") as fh:
        return am.read_instant_avro(fh.read())


def _data_files(path: str) -> set[str]:
    return {os.path.join(d, f) for d in ("0", "1") if os.path.isdir(os.path.join(path, d))
            for f in os.listdir(os.path.join(path, d)) if not f.startswith(".hoodie_partition")}


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_rollback_latest_completed_write(spark, tmp_path, table_type):
    path = str(tmp_path / "t")
    o = _opts(table_type)
    model: dict = {}
    for ts, ids in enumerate([range(0, 3000), range(3000, 4000), range(0, 500)], start=1):
        pyhudi.write(_batch(spark, ids, ts), path, o)
        model = _apply(model, ids, ts)
    last = pyhudi.write(_batch(spark, range(200, 900), 9), path, {**o, "hoodie.datasource.write.operation": "upsert"})
    files_before_last = _data_files(path)
    _check(spark, path, _apply(model, range(200, 900), 9))

    with pytest.raises(RollbackRefusedError, match="only the latest write"):
        older = sorted(n.split(".")[0] for n in _hoodie(path) if n.endswith(("commit", "deltacommit")))[0]
        pyhudi.rollback(spark, path, older)
    result = pyhudi.rollback(spark, path, last)
    assert result.target == last
    names = _hoodie(path)
    assert not any(n.startswith(last) for n in names), "the rolled-back instant leaves the timeline"
    assert f"{result.rollback_instant}.rollback" in names
    meta = _avro(path, f"{result.rollback_instant}.rollback")
    assert meta["commitsRollback"] == [last]
    _check(spark, path, model)
    if table_type == "MERGE_ON_READ":
        # Hudi v6: appended log blocks are undone by a ROLLBACK command block in a new log version.
        new_logs = sorted(_data_files(path) - files_before_last)
        assert new_logs, "a rollback command block file was written"
        for rel in new_logs:
            lf = parse_log_file(os.path.basename(rel))
            assert lf is not None
            with open(os.path.join(path, rel), "rb") as fh:
                (block,) = read_valid_blocks(fh.read())
            assert block.block_type == BlockType.COMMAND_BLOCK
            assert block.header[HeaderKey.COMMAND_BLOCK_TYPE] == ROLLBACK_COMMAND
            assert block.header[HeaderKey.TARGET_INSTANT_TIME] == last
        rolled = {p for m in meta["partitionMetadata"].values() for p in (m.get("rollbackLogFiles") or {})}
        assert {os.path.basename(p) for p in rolled} == {os.path.basename(r) for r in new_logs}
    else:
        assert _data_files(path) < files_before_last, "files the commit created are deleted"
    # The table keeps working: the next write's version comes after the rollback block.
    pyhudi.write(_batch(spark, range(100, 300), 11), path, o)
    _check(spark, path, _apply(model, range(100, 300), 11))


def test_rollback_refuses_savepointed_and_unknown_instants(spark, tmp_path):
    path = str(tmp_path / "t")
    o = _opts("COPY_ON_WRITE")
    pyhudi.write(_batch(spark, range(0, 500), 1), path, o)
    last = pyhudi.write(_batch(spark, range(0, 100), 2), path, o)
    sp = pyhudi.savepoint(spark, path, comments="before release")
    assert sp == last
    before = _hoodie(path), _data_files(path)
    with pytest.raises(RollbackRefusedError, match="savepoint"):
        pyhudi.rollback(spark, path, last)
    with pytest.raises(pyhudi.InstantNotFoundError):
        pyhudi.rollback(spark, path, "20000101000000000")
    assert (_hoodie(path), _data_files(path)) == before, "a refused rollback changes nothing"


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_savepoint_survives_cleaning_and_restore_brings_it_back(spark, tmp_path, table_type):
    path = str(tmp_path / "t")
    o = _opts(table_type, **{"hoodie.cleaner.commits.retained": "1", "hoodie.keep.min.commits": "2",
                             "hoodie.keep.max.commits": "3"})
    model: dict = {}
    for ts, ids in enumerate([range(0, 2000), range(0, 800)], start=1):
        pyhudi.write(_batch(spark, ids, ts), path, o)
        model = _apply(model, ids, ts)
    sp = pyhudi.savepoint(spark, path, user="tester")
    saved_model = dict(model)
    infos = list_savepoints(Storage(path))
    assert [(i.instant, i.savepointed_by) for i in infos] == [(sp, "tester")] and infos[0].files > 0
    steps = [range(0, 600), range(1500, 2600), range(100, 400)]
    for ts, ids in enumerate(steps, start=3):
        pyhudi.write(_batch(spark, ids, ts), path, o)
        model = _apply(model, ids, ts)
    if table_type == "MERGE_ON_READ":
        pyhudi.compact(spark, path, o)
    pyhudi.clean(spark, path, o)
    # The savepointed version is still readable although retention alone would have cleaned it.
    as_of = pyhudi.read(spark, path, {"as.of.instant": sp}).toArrow()
    assert rows_by_key(as_of, "id", COLS) == saved_model
    _check(spark, path, model)

    restore_ts = pyhudi.restore(spark, path, sp)
    names = _hoodie(path)
    assert f"{restore_ts}.restore" in names and f"{restore_ts}.restore.requested" in names
    plan = _avro(path, f"{restore_ts}.restore.requested")
    assert plan["savepointToRestoreTimestamp"] == sp
    rolled = [i["commitTime"] for i in plan["instantsToRollback"]]
    assert rolled == sorted(rolled, reverse=True) and all(t > sp for t in rolled) and rolled
    assert not any(n.split(".")[0] in rolled for n in names if not n.endswith((".rollback", ".rollback.requested",
                                                                               ".rollback.inflight")))
    _check(spark, path, saved_model)
    # Writing after a restore works and builds on the savepoint state.
    pyhudi.write(_batch(spark, range(50, 150), 20), path, o)
    _check(spark, path, _apply(saved_model, range(50, 150), 20))


def test_restore_is_resumed_after_an_interruption(spark, tmp_path):
    path = str(tmp_path / "t")
    o = _opts("MERGE_ON_READ")
    pyhudi.write(_batch(spark, range(0, 1000), 1), path, o)
    sp = pyhudi.savepoint(spark, path)
    expected = _apply({}, range(0, 1000), 1)
    pyhudi.write(_batch(spark, range(0, 300), 2), path, o)
    pyhudi.write(_batch(spark, range(900, 1300), 3), path, o)
    from pyhudi.services import restore as rs

    calls = {"n": 0}
    real = rs._start_rollback

    def crash_after_first(*args, **kwargs):
        if calls["n"] == 1:
            raise KeyboardInterrupt("simulated crash between two rollbacks of a restore")
        calls["n"] += 1
        return real(*args, **kwargs)

    rs._start_rollback = crash_after_first  # type: ignore[assignment]
    try:
        with pytest.raises(KeyboardInterrupt):
            rs.restore(Storage(path), sp)
    finally:
        rs._start_rollback = real  # type: ignore[assignment]
    pending = [n for n in _hoodie(path) if n.endswith(".restore.inflight")]
    assert pending, "the restore is left pending"
    rs.restore(Storage(path), sp)
    assert not [n for n in _hoodie(path) if n.endswith((".restore.inflight",)) and
                n.replace(".inflight", "") not in _hoodie(path)]
    _check(spark, path, expected)


def test_cli_clean_rollback_savepoint(spark, tmp_path, capsys):
    from pyhudi.cli.main import main

    path = str(tmp_path / "t")
    o = _opts("COPY_ON_WRITE")
    for ts, ids in enumerate([range(0, 1500), range(0, 700), range(200, 900)], start=1):
        last = pyhudi.write(_batch(spark, ids, ts), path, o)
    capsys.readouterr()
    files = _data_files(path)
    assert main(["clean", path, "--dry-run", "-o", "hoodie.cleaner.policy=KEEP_LATEST_FILE_VERSIONS",
                 "-o", "hoodie.cleaner.fileversions.retained=1"]) == 0
    out = capsys.readouterr().out
    assert "would delete" in out and "keeps its newest 1 versions" in out
    assert _data_files(path) == files, "a dry run deletes nothing"
    assert main(["savepoint", path, "create", "--comments", "nightly"]) == 0
    assert f"savepoint {last} created" in capsys.readouterr().out
    assert main(["savepoint", path, "list"]) == 0
    assert last in capsys.readouterr().out
    assert main(["rollback", path, last]) == 2
    assert "savepoint" in capsys.readouterr().err
    assert main(["savepoint", path, "delete", last]) == 0
    capsys.readouterr()
    assert main(["rollback", path, last]) == 0
    assert f"rolled back {last}" in capsys.readouterr().out
    _check(spark, path, _first_two_batches())
    pyhudi.write(_batch(spark, range(0, 700), 4), path, o)
    assert main(["clean", path, "-o", "hoodie.cleaner.commits.retained=1"]) == 0
    out = capsys.readouterr().out
    deleted = int(out.split(": ")[1].split(" ")[0])
    assert out.startswith("clean ") and deleted > 0, out
    _check(spark, path, _apply(_first_two_batches(), range(0, 700), 4))


def _first_two_batches() -> dict:
    """The model after rolling back the third batch: batches one and two only."""
    model: dict = {}
    for ts, ids in enumerate([range(0, 1500), range(0, 700)], start=1):
        model = _apply(model, ids, ts)
    return model
