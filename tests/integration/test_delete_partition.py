"""delete_partition (Hudi 0.14's DELETE_PARTITION: one replacecommit of every file group of the partitions).

Both readers (pyhudi, hudi-rs) must see the table without the partitions, time travel before the
replacecommit still sees them, a clean retaining one commit deletes the replaced files, the CLI does the
same, and every refusal leaves the table byte-for-byte unchanged.
"""

from __future__ import annotations

import json
import os
import pathlib

import pytest

import pyhudi
from pyhudi.cli.main import main as cli_main
from pyhudi.errors import InvalidConfigError, TableNotFoundError
from pyhudi.writer.delete_partition import PendingTableServiceError
from tests.integration.table_checks import assert_table, opts, read_avro, tree_snapshot

pytestmark = pytest.mark.spark
KEY = "hoodie.datasource.write.partitions.to.delete"
ROWS = [(1, "a", "sf", 1), (2, "b", "sf", 1), (3, "c", "ny", 1), (4, "d", "2024/01/02", 1),
        (5, "e", "2024/01/03", 1), (6, "f", "2024/02/01", 1), (7, "g", "la", 1)]
UPDATES = [(1, "a2", "sf", 2), (3, "c2", "ny", 2), (4, "d2", "2024/01/02", 2)]  # MOR: log files


def _df(spark, rows):
    return spark.createDataFrame(rows, "id long, name string, city string, ts long")


def _opts(name: str, table_type: str, operation: str = "upsert", **extra: str) -> dict[str, str]:
    return {**opts(name), "hoodie.datasource.write.table.type": table_type,
            "hoodie.datasource.write.operation": operation, **extra}


def _model(rows) -> dict[int, tuple]:
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def _without(model: dict[int, tuple], *cities: str) -> dict[int, tuple]:
    return {k: v for k, v in model.items() if v[1] not in cities}


def _make_table(spark, path: str, table_type: str) -> dict[int, tuple]:
    pyhudi.write(_df(spark, ROWS), path, _opts("t", table_type, "insert"))
    pyhudi.write(_df(spark, UPDATES), path, _opts("t", table_type))
    return _model(ROWS) | _model(UPDATES)


def _delete(spark, path: str, table_type: str, partitions: str | None, rows=(), mode: str = "append"):
    extra = {KEY: partitions} if partitions is not None else {}
    return pyhudi.write(_df(spark, list(rows)), path, _opts("t", table_type, "delete_partition", **extra), mode=mode)


def _data_files(path: str, partition: str) -> list[str]:
    """Base and log files directly in a partition directory."""
    d = pathlib.Path(path, partition)
    if not d.is_dir():
        return []
    return sorted(f.name for f in d.iterdir() if f.is_file() and f.name != ".hoodie_partition_metadata")


def _file_ids(path: str, partition: str) -> list[str]:
    ids = set()
    for name in _data_files(path, partition):
        ids.add(name.lstrip(".").split("_")[0])
    return sorted(ids)


def _commit(path: str, instant: str) -> dict:
    return json.loads(pathlib.Path(path, ".hoodie", f"{instant}.replacecommit").read_text())


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_delete_by_list_and_wildcard_then_clean(spark, tmp_path, table_type):
    path = str(tmp_path / "t")
    model = _make_table(spark, path, table_type)
    before = sorted(n.split(".")[0] for n in os.listdir(pathlib.Path(path, ".hoodie")) if "commit" in n)[-1]
    ny_ids = _file_ids(path, "ny")
    dated_ids = {p: _file_ids(path, p) for p in ("2024/01/02", "2024/01/03", "2024/02/01")}
    assert ny_ids and all(dated_ids.values())

    first = _delete(spark, path, table_type, "ny")
    meta = _commit(path, first)
    assert meta["operationType"] == "DELETE_PARTITION"
    assert meta["partitionToReplaceFileIds"] == {"ny": ny_ids}
    assert not any(meta["partitionToWriteStats"].values())
    assert json.loads(meta["extraMetadata"]["schema"])["type"] == "record"  # the table's schema, as Hudi stores
    inflight = json.loads(pathlib.Path(path, ".hoodie", f"{first}.replacecommit.inflight").read_text())
    assert inflight["operationType"] == "DELETE_PARTITION"
    assert read_avro(pathlib.Path(path, ".hoodie", f"{first}.replacecommit.requested"))["operationType"] is None
    assert_table(spark, path, _without(model, "ny"))

    second = _delete(spark, path, table_type, "2024/*")  # a wildcard across the '/' of partition values
    assert _commit(path, second)["partitionToReplaceFileIds"] == dated_ids
    after = _without(model, "ny", "2024/01/02", "2024/01/03", "2024/02/01")
    assert_table(spark, path, after)
    assert_table(spark, path, model, as_of=before)  # time travel still sees the deleted partitions
    assert_table(spark, path, _without(model, "ny"), as_of=first)
    assert _data_files(path, "ny") and _data_files(path, "2024/01/02")  # nothing deleted before a clean

    pyhudi.write(_df(spark, [(8, "h", "la", 3)]), path, _opts("t", table_type))
    after[8] = ("h", "la", 3)
    kept = {p: _data_files(path, p) for p in ("sf", "la")}
    pyhudi.clean(None, path, {"hoodie.cleaner.commits.retained": "1"})
    for partition in ("ny", "2024/01/02", "2024/01/03", "2024/02/01"):
        assert _data_files(path, partition) == [], f"replaced files of {partition} survived the clean"
    assert all(set(_data_files(path, p)) <= set(kept[p]) and _data_files(path, p) for p in kept)
    assert_table(spark, path, after)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_partitions_from_the_dataframe(spark, tmp_path, table_type):
    """Without the option, Hudi deletes the partitions of the DataFrame's records (keys are not matched)."""
    path = str(tmp_path / "t")
    model = _make_table(spark, path, table_type)
    instant = _delete(spark, path, table_type, None, rows=[(99, "x", "sf", 9), (98, "y", "2024/01/03", 9)])
    assert sorted(_commit(path, instant)["partitionToReplaceFileIds"]) == ["2024/01/03", "sf"]
    assert_table(spark, path, _without(model, "sf", "2024/01/03"))


def test_missing_partition_is_recorded_empty_as_hudi_does(spark, tmp_path):
    """Hudi 0.14 keeps a named partition that does not exist, with no file ids; nothing is hidden."""
    path = str(tmp_path / "t")
    model = _make_table(spark, path, "COPY_ON_WRITE")
    instant = _delete(spark, path, "COPY_ON_WRITE", "nowhere,la")
    assert _commit(path, instant)["partitionToReplaceFileIds"] == {"nowhere": [], "la": _file_ids(path, "la")}
    assert_table(spark, path, _without(model, "la"))


def test_cli_delete_partition_then_clean(spark, tmp_path, capsys):
    path = str(tmp_path / "t")
    model = _make_table(spark, path, "MERGE_ON_READ")
    assert cli_main(["delete-partition", path, "--partitions", "sf,2024/01/*", "--no-progress"]) == 0
    assert "deleted partition(s) sf,2024/01/*" in capsys.readouterr().out
    after = _without(model, "sf", "2024/01/02", "2024/01/03")
    assert_table(spark, path, after)
    pyhudi.write(_df(spark, [(8, "h", "la", 3)]), path, _opts("t", "MERGE_ON_READ"))
    after[8] = ("h", "la", 3)
    assert cli_main(["clean", path, "-o", "hoodie.cleaner.commits.retained=1"]) == 0
    assert _data_files(path, "sf") == [] and _data_files(path, "2024/01/02") == []
    assert _data_files(path, "2024/02/01")
    assert_table(spark, path, after)
    assert cli_main(["delete-partition", str(tmp_path / "none"), "--partitions", "sf", "--no-progress"]) == 2


def test_refusals_leave_the_table_unchanged(spark, tmp_path):
    path = str(tmp_path / "t")
    model = _make_table(spark, path, "MERGE_ON_READ")
    snapshot = tree_snapshot(path)
    for mode in ("overwrite", "error"):
        with pytest.raises(InvalidConfigError, match="append is the only save mode"):
            _delete(spark, path, "MERGE_ON_READ", "sf", mode=mode)
    with pytest.raises(InvalidConfigError, match="is not set and the DataFrame has no records"):
        _delete(spark, path, "MERGE_ON_READ", None)
    with pytest.raises(InvalidConfigError, match="names no partition"):
        _delete(spark, path, "MERGE_ON_READ", "2023/*")
    assert tree_snapshot(path) == snapshot
    # A partition under a pending compaction is refused (Hudi's HoodieDeletePartitionException).
    from pyhudi.api import _service_config
    from pyhudi.services import compaction

    storage, config = _service_config(path, None)
    assert compaction.schedule(storage, config.table, config.compaction, force=True,
                               max_file_size=config.sizing.max_file_size)
    snapshot = tree_snapshot(path)
    with pytest.raises(PendingTableServiceError, match="pending compaction/clustering"):
        _delete(spark, path, "MERGE_ON_READ", "sf,ny")
    assert tree_snapshot(path) == snapshot
    assert_table(spark, path, model)
    missing = str(tmp_path / "none")
    with pytest.raises(TableNotFoundError, match="no Hudi table"):
        _delete(spark, missing, "MERGE_ON_READ", "sf")
    assert not os.path.exists(missing)


def test_write_completed_meanwhile_into_a_deleted_partition_conflicts(spark, tmp_path, monkeypatch):
    """An upsert that completes into a file group between delete_partition's look at the table and its
    commit would be hidden unseen: the delete is rolled back instead and the upsert's row stays."""
    from pyhudi.errors import CommitConflictError
    from pyhudi.writer import delete_partition

    path = str(tmp_path / "t")
    model = _make_table(spark, path, "COPY_ON_WRITE")
    real = delete_partition.replaced_file_ids

    def then_concurrent_upsert(view, partitions):
        out = real(view, partitions)
        pyhudi.write(_df(spark, [(2, "b-new", "sf", 5)]), path, _opts("t", "COPY_ON_WRITE"))
        return out

    monkeypatch.setattr(delete_partition, "replaced_file_ids", then_concurrent_upsert)
    with pytest.raises(CommitConflictError, match="it also wrote"):
        _delete(spark, path, "COPY_ON_WRITE", "sf")
    monkeypatch.undo()
    model[2] = ("b-new", "sf", 5)
    assert_table(spark, path, model)
    assert not [n for n in os.listdir(pathlib.Path(path, ".hoodie")) if n.endswith(".replacecommit")]
