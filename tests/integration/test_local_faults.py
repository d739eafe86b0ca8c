"""Faults that need only the shared session: marker reconciliation, a bulk_insert partition streamed over
several flushes, and bad input (bad records, schemas and options, non-Hudi paths, other table
versions), each of which must change nothing on disk. The faults that kill processes are in
test_faults.py."""

from __future__ import annotations

import os
import shutil

import pytest

import pyhudi
from pyhudi.errors import (
    InvalidConfigError,
    InvalidRecordError,
    SchemaMismatchError,
    TableNotFoundError,
    UnsupportedTableError,
)
from tests.integration.fault_writer import model_rows, rows_frame
from tests.integration.table_checks import (
    all_data_files,
    assert_files_match_commits,
    assert_table,
    opts,
    split_name,
    tree_snapshot,
)

pytestmark = pytest.mark.spark
MB = 1024 * 1024


# --------------------------------------------------------------------------- (2) markers, unit level
def test_marker_reconciliation_deletes_files_no_stat_names(spark, tmp_path):
    from pyhudi.config.registry import Options
    from pyhudi.model.instant_time import new_instant_time
    from pyhudi.model.table_config import load_table_config
    from pyhudi.model.write_stat import WriteStat
    from pyhudi.storage import Storage
    from pyhudi.writer.client import WriteClient
    from pyhudi.writer.config import build_write_config
    from pyhudi.writer.markers import Marking, create_marker, list_marked_files

    path = str(tmp_path / "m")
    rows = {"start": 0, "stop": 50, "version": 1}
    i1 = pyhudi.write(rows_frame(spark, rows), path, opts("m"))
    model = model_rows(rows)
    storage = Storage(path)
    committed = [f for f in all_data_files(path) if f.startswith("p0/")][0]
    fid, _, _ = split_name(committed)
    fake = new_instant_time(after=i1)  # a later instant that never reached the timeline
    kept, stray, missing = (f"p0/{fid}_{tok}_{fake}.parquet" for tok in ("0-7-11", "0-7-12", "0-7-13"))
    for rel in (kept, stray):
        shutil.copyfile(os.path.join(path, committed), os.path.join(path, rel))
    for rel in (kept, stray, missing):
        create_marker(storage, fake, "p0", os.path.basename(rel), "CREATE", Marking())
    assert list_marked_files(storage, fake) == sorted([kept, stray, missing])
    # Files of an instant that is not on the timeline are invisible to both readers.
    assert_table(spark, path, model)
    config = build_write_config(Options.parse(opts("m")), load_table_config(storage))
    client = WriteClient(spark, storage, config)
    client._reconcile_markers(fake, [WriteStat(file_id=fid, path=kept, partition_path="p0")])
    assert os.path.exists(os.path.join(path, kept))
    assert not os.path.exists(os.path.join(path, stray)), "a marked file no write stat names must be deleted"
    assert not os.path.exists(os.path.join(path, missing))
    assert os.path.exists(os.path.join(path, committed))
    os.remove(os.path.join(path, kept))
    shutil.rmtree(os.path.join(path, ".hoodie", ".temp", fake))
    assert_files_match_commits(path)
    assert_table(spark, path, model)


# --------------------------------------------------------------------------- bulk_insert streaming
def test_bulk_insert_streams_one_partition_over_several_flushes(spark, tmp_path):
    """One bulk_insert task receiving several files' worth of one partition in many Arrow batches
    (the shape a killed-mid-stream bulk_insert needs): it must flush, keep the tail, and go on."""
    path = str(tmp_path / "stream")
    rows = {"start": 0, "stop": 300_000, "version": 1, "slices": 1, "city": "p0"}
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    old = spark.conf.get(key)
    spark.conf.set(key, "5000")
    try:
        pyhudi.write(rows_frame(spark, rows), path, {**opts("stream"), "hoodie.parquet.max.file.size": str(MB),
                                                  "hoodie.datasource.write.operation": "bulk_insert"})
    finally:
        spark.conf.set(key, old)
    assert len(all_data_files(path)) > 2
    assert_files_match_commits(path)
    assert_table(spark, path, model_rows(rows))


# --------------------------------------------------------------------------- (4) bad input
BAD_SCHEMA = "id string, city string, ts long, n long"


@pytest.fixture(scope="module")
def bad_table(spark, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("bad") / "t")
    df = spark.createDataFrame([(str(i), ["sf", "ny"][i % 2], 1, i) for i in range(20)], BAD_SCHEMA)
    pyhudi.write(df, path, opts("bad"))
    return path


def _bad_cases(spark):  # type: ignore[no-untyped-def]
    ok = [("1", "sf", 2, 1)]
    return {
        "null_key": (spark.createDataFrame([*ok, (None, "ny", 2, 2)], BAD_SCHEMA), {},
                     InvalidRecordError, ["null", "(field(s) id)"]),
        "empty_key": (spark.createDataFrame([*ok, ("", "ny", 2, 2)], BAD_SCHEMA), {},
                      InvalidRecordError, ["empty", "(field(s) id)"]),
        "missing_key_column": (spark.createDataFrame(ok, BAD_SCHEMA).drop("id"), {},
                               InvalidRecordError, ["'id'"]),
        "missing_partition_column": (spark.createDataFrame(ok, BAD_SCHEMA).drop("city"), {},
                                     InvalidRecordError, ["'city'"]),
        "missing_precombine_column": (spark.createDataFrame(ok, BAD_SCHEMA).drop("ts"), {},
                                      InvalidRecordError, ["'ts'"]),
        "string_into_bigint": (spark.createDataFrame([("1", "sf", 2, "x")], "id string, city string, ts long, "
                                                     "n string"), {}, SchemaMismatchError,
                               ["'n'", "bigint", "string"]),
        "unknown_operation": (spark.createDataFrame(ok, BAD_SCHEMA), {"hoodie.datasource.write.operation": "merge"},
                              InvalidConfigError, ["hoodie.datasource.write.operation", "'merge'"]),
    }


BAD_CASES = ["null_key", "empty_key", "missing_key_column", "missing_partition_column",
             "missing_precombine_column", "string_into_bigint", "unknown_operation"]


@pytest.mark.parametrize("case", BAD_CASES)
def test_bad_input_changes_nothing(spark, bad_table, case):
    df, extra, error, words = _bad_cases(spark)[case]
    before = tree_snapshot(bad_table)
    with pytest.raises(error) as exc:
        pyhudi.write(df, bad_table, {**opts("bad"), **extra})
    for word in words:
        assert word in str(exc.value), f"{exc.value!s} does not name {word}"
    assert tree_snapshot(bad_table) == before, "a failed write changed the table directory"


@pytest.mark.parametrize("case", [c for c in BAD_CASES if c != "string_into_bigint"])
def test_failed_first_write_leaves_no_table(spark, tmp_path, case):
    df, extra, error, words = _bad_cases(spark)[case]
    path = tmp_path / "new"
    with pytest.raises(error) as exc:
        pyhudi.write(df, str(path), {**opts("bad"), **extra})
    for word in words:
        assert word in str(exc.value)
    assert not (path / ".hoodie" / "hoodie.properties").exists()
    if path.exists():
        assert not [p for p in path.rglob("*") if p.is_file()], "a failed first write left files behind"


def test_reading_a_non_hudi_path_changes_nothing(spark, tmp_path):
    path = tmp_path / "plain"
    spark.createDataFrame([(1, "a")], "id long, name string").write.parquet(str(path))
    before = tree_snapshot(path)
    with pytest.raises(TableNotFoundError) as exc:
        pyhudi.read(spark, str(path))
    assert str(path) in str(exc.value)
    assert tree_snapshot(path) == before
    with pytest.raises(TableNotFoundError):
        pyhudi.read(spark, str(tmp_path / "absent"))
    assert not (tmp_path / "absent").exists()


def test_table_version_8_is_refused_for_read_and_write(spark, tmp_path):
    """Hudi 1.x's table version 8 is refused on read and write, leaving the table as it was (version 5 was
    refused here until pyhudi learnt to read and upgrade versions 4 and 5: tests/integration/test_old_versions.py)."""
    path = tmp_path / "v8"
    rows = {"start": 0, "stop": 10, "version": 1}
    pyhudi.write(rows_frame(spark, rows), str(path), opts("v8"))
    props = path / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text().replace("hoodie.table.version=6", "hoodie.table.version=8"))
    before = tree_snapshot(path)
    with pytest.raises(UnsupportedTableError) as exc:
        pyhudi.read(spark, str(path))
    assert "version 8" in str(exc.value)
    with pytest.raises(UnsupportedTableError) as exc:
        pyhudi.write(rows_frame(spark, {"start": 5, "stop": 15, "version": 2}), str(path), opts("v8"))
    assert "version 8" in str(exc.value)
    assert tree_snapshot(path) == before
