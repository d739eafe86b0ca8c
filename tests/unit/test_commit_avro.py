"""Commit metadata of Hudi 1.x tables: Avro container <-> Hudi's JSON form (pyhudi.model.commit_avro).

Checked on every commit-metadata file of the eight Hudi 1.0/1.1 sample tables (data tables and their
metadata tables): the JSON is what the JSON readers downstream need (totals, replaced ids, write stats,
schema), and encoding it again gives the sample's bytes exactly (same schema text, layout and datum;
only the sync marker is random). hudi-rs must read a table whose commit files we re-encoded.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import zipfile
from pathlib import Path
from typing import Any

import fastavro
import pytest

from pyhudi.errors import CorruptFileError, HudiError
from pyhudi.model.commit_avro import (
    commit_avro_bytes,
    commit_avro_record,
    commit_json_bytes,
    commit_schema_json,
    is_avro_container,
    read_commit_avro,
)
from pyhudi.model.commit_metadata import CommitMetadata, replaced_file_ids
from pyhudi.model.write_stat import RuntimeStats, WriteStat
from pyhudi.timeline.commit_totals import json_totals, scan_totals
from tests.helpers import hudi_rs, same_rows

_ROOTS = (Path(__file__).parents[1] / "fixtures" / "samples-1x",
          Path(os.environ.get("PYHUDI_SAMPLES_1X", "/work/shared/samples-1x")))
_COMMIT_ACTIONS = ("commit", "deltacommit", "replacecommit")


def _samples_1x() -> Path:
    for root in _ROOTS:
        if (root / "tables").is_dir():
            return root
    pytest.fail(f"Hudi 1.x sample tables not found in {[str(r) for r in _ROOTS]} "
                "(PYHUDI_SAMPLES_1X overrides the folder)", pytrace=False)
    raise AssertionError("unreachable")


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every sample zip extracted: table name -> table root."""
    base = tmp_path_factory.mktemp("samples1x")
    roots = {}
    for zip_path in sorted((_samples_1x() / "tables").glob("*.zip")):
        with zipfile.ZipFile(zip_path) as z:
            z.extractall(base / zip_path.stem, [m for m in z.namelist() if not m.startswith("__MACOSX/")])
        roots[zip_path.stem] = base / zip_path.stem / zip_path.stem
    assert len(roots) == 8, roots
    return roots


def _timeline_files(root: Path) -> list[Path]:
    """The instant files of the table's timeline and of its metadata table's, if any."""
    dirs = [root / ".hoodie" / "timeline", root / ".hoodie" / "metadata" / ".hoodie" / "timeline"]
    return sorted(p for d in dirs if d.is_dir() for p in d.iterdir() if p.is_file())


def _is_completed_commit(path: Path) -> bool:
    stem, _, action = path.name.partition(".")
    return "_" in stem and action in _COMMIT_ACTIONS


def _commit_files(tables: dict[str, Path], completed_only: bool) -> list[Path]:
    """Completed commits, or every file holding commit metadata (with the non-empty inflights)."""
    return [path for root in tables.values() for path in _timeline_files(root)
            if _is_completed_commit(path) or (not completed_only and _is_inflight_commit(path))]


def _is_inflight_commit(path: Path) -> bool:
    """A `.inflight` of commit, deltacommit or replacecommit that holds Avro commit metadata (those of
    compaction, clustering, rollback and indexing are empty)."""
    return path.name.endswith(".inflight") and path.stat().st_size > 0 \
        and _record_name(path.read_bytes()).endswith("CommitMetadata")


def _record_name(data: bytes) -> str:
    return str(json.loads(fastavro.reader(io.BytesIO(data)).metadata["avro.schema"])["name"])


def _avro(data: bytes) -> tuple[dict[str, Any], str, dict[str, Any]]:
    reader = fastavro.reader(io.BytesIO(data))
    records = list(reader)
    assert len(records) == 1 and isinstance(records[0], dict)
    return records[0], reader.metadata["avro.schema"], reader.metadata


def _sums(record: dict[str, Any], base_files_only: bool) -> tuple[int, int]:
    stats = [s for lst in (record["partitionToWriteStats"] or {}).values() for s in lst]
    if base_files_only:
        stats = [s for s in stats if (s["path"] or "").endswith((".parquet", ".lance"))]
    return sum(s["totalWriteBytes"] or 0 for s in stats), sum(s["numWrites"] or 0 for s in stats)


# ---------------------------------------------------------------------------------------
# The sample files
# ---------------------------------------------------------------------------------------


def test_every_sample_has_commit_files(tables: dict[str, Path]) -> None:
    completed = _commit_files(tables, completed_only=True)
    assert len(completed) >= 60
    assert {p.name.rsplit(".", 1)[1] for p in completed} == set(_COMMIT_ACTIONS)
    assert all(is_avro_container(p.read_bytes()) for p in completed)
    assert any("metadata" in p.parts for p in completed)  # metadata-table deltacommits are covered too
    assert {name for name, root in tables.items() if any(p.is_relative_to(root) for p in completed)} == set(tables)


def test_json_of_every_completed_commit_reads_as_hudi_json(tables: dict[str, Path]) -> None:
    for path in _commit_files(tables, completed_only=True):
        data = path.read_bytes()
        record, _, _ = _avro(data)
        text = commit_json_bytes(data, str(path))
        meta = CommitMetadata.from_bytes(text, str(path))
        for base_only in (False, True):
            expected = _sums(record, base_only)
            assert scan_totals(text, base_only) == expected, path
            assert json_totals(text, base_only, str(path)) == expected, path
        assert meta.schema == (record["extraMetadata"] or {}).get("schema")
        assert meta.operation_type == record["operationType"]
        assert meta.compacted is record["compacted"]
        assert meta.extra_metadata == record["extraMetadata"]
        _check_stats(meta, record)
        if path.name.endswith(".replacecommit"):
            ids = record["partitionToReplaceFileIds"]
            assert ids and meta.partition_to_replace_file_ids == ids
            found = replaced_file_ids(text, str(path))
            assert {p: found.get(p) for p in ids} == ids
        else:
            assert meta.partition_to_replace_file_ids is None


def _check_stats(meta: CommitMetadata, record: dict[str, Any]) -> None:
    """Each write stat's JSON carries the Avro stat's values under the JSON keys WriteStat reads."""
    assert list(meta.partition_to_write_stats) == list(record["partitionToWriteStats"])
    for partition, stats in record["partitionToWriteStats"].items():
        for ours, avro in zip(meta.partition_to_write_stats[partition], stats, strict=True):
            assert (ours.file_id, ours.path, ours.partition_path, ours.prev_commit) == \
                (avro["fileId"], avro["path"], avro["partitionPath"], avro["prevCommit"])
            assert (ours.num_writes, ours.num_inserts, ours.num_update_writes, ours.num_deletes) == \
                (avro["numWrites"], avro["numInserts"], avro["numUpdateWrites"], avro["numDeletes"])
            assert (ours.total_write_bytes, ours.file_size_in_bytes, ours.total_log_blocks) == \
                (avro["totalWriteBytes"], avro["fileSizeInBytes"], avro["totalLogBlocks"])
            assert (ours.log_version, ours.log_offset, ours.base_file, ours.log_files) == \
                (avro["logVersion"], avro["logOffset"], avro["baseFile"], avro["logFiles"])
            rt = avro["runtimeStats"]
            assert ours.runtime_stats == (None if rt is None else RuntimeStats(
                rt["totalScanTime"], rt["totalUpsertTime"], rt["totalCreateTime"]))


def test_json_keeps_the_1x_stat_fields(tables: dict[str, Path]) -> None:
    """prevBaseFile, numUpdates and totalLogReadTimeMs (1.x additions) are in the JSON; the Avro-only
    fields Hudi leaves null (version, totalLogFiles) are not."""
    path = next(p for p in _commit_files(tables, completed_only=True) if p.name.endswith(".commit")
                and any(s["prevBaseFile"] for lst in _avro(p.read_bytes())[0]["partitionToWriteStats"].values()
                        for s in lst))
    parsed = json.loads(commit_json_bytes(path.read_bytes()))
    stat = next(s for lst in parsed["partitionToWriteStats"].values() for s in lst if s["prevBaseFile"])
    assert {"numUpdates", "totalLogReadTimeMs", "runtimeStats", "cdcStats"} <= set(stat)
    assert "totalLogFiles" not in stat and "version" not in parsed and "logVersion" not in stat
    assert list(stat["runtimeStats"]) == ["totalScanTime", "totalUpsertTime", "totalCreateTime"]


def test_every_commit_file_encodes_back_to_its_bytes(tables: dict[str, Path]) -> None:
    """decode -> JSON -> encode gives the same record, schema text and container layout: with the
    sample's sync marker, the very same bytes (inflight workload profiles included)."""
    files = _commit_files(tables, completed_only=False)
    assert any(p.name.endswith("inflight") for p in files)
    for path in files:
        data = path.read_bytes()
        record, schema, metadata = _avro(data)
        replace = record.get("partitionToReplaceFileIds", ...) is not ...
        assert schema == commit_schema_json(replace), path
        assert set(metadata) == {"avro.schema"}  # no avro.codec: Java's null codec
        parsed = json.loads(commit_json_bytes(data, str(path)))
        again = commit_avro_bytes(parsed, replace)
        assert _avro(again)[0] == record, path
        assert _avro(again)[1] == schema
        assert commit_avro_bytes(parsed, replace, sync_marker=data[-16:]) == data, path


def test_read_commit_avro_says_which_record(tables: dict[str, Path]) -> None:
    for path in _commit_files(tables, completed_only=True):
        record, replace = read_commit_avro(path.read_bytes(), str(path))
        assert replace == path.name.endswith(".replacecommit")
        assert record == _avro(path.read_bytes())[0]


def test_hudi_rs_reads_a_table_with_our_commit_files(tables: dict[str, Path], tmp_path: Path) -> None:
    """Every sample table, its completed commit files (and the metadata table's) replaced by our
    re-encoding (random sync markers): hudi-rs reads the same snapshot as from the original."""
    for name, root in tables.items():
        copy = tmp_path / name
        shutil.copytree(root, copy)
        rewritten = 0
        for path in _timeline_files(copy):
            if _is_completed_commit(path):
                data = path.read_bytes()
                _, replace = read_commit_avro(data)
                ours = commit_avro_bytes(json.loads(commit_json_bytes(data)), replace)
                assert ours != data  # another sync marker: the file really is ours
                path.write_bytes(ours)
                rewritten += 1
        assert rewritten
        original, ours_read = hudi_rs(root), hudi_rs(copy)
        assert original is not None and ours_read is not None and original.num_rows > 0, name
        assert same_rows(ours_read, original), name


def test_hudi_rs_does_read_the_commit_files(tables: dict[str, Path], tmp_path: Path) -> None:
    """The control of the test above: hudi-rs refuses a layout-2 commit file in JSON, so it read ours."""
    copy = tmp_path / "t"
    shutil.copytree(tables["cow_v9_txns_simple_meta"], copy)
    last = [p for p in _timeline_files(copy) if _is_completed_commit(p)][-1]
    last.write_bytes(commit_json_bytes(last.read_bytes()))
    with pytest.raises(Exception, match="Avro"):
        hudi_rs(copy)


# ---------------------------------------------------------------------------------------
# Inputs that are not Avro, defaults, errors
# ---------------------------------------------------------------------------------------


def test_empty_and_json_pass_through() -> None:
    assert commit_json_bytes(b"") == b""
    legacy = b'{\n  "partitionToWriteStats" : { },\n  "compacted" : false\n}'
    assert commit_json_bytes(legacy, "x.commit") is legacy
    assert not is_avro_container(b"") and not is_avro_container(legacy) and not is_avro_container(b"Obj")
    assert is_avro_container(commit_avro_bytes({}, False))


def test_pyhudi_commit_metadata_survives_the_round_trip() -> None:
    """What pyhudi's writers build (CommitMetadata.to_json, with a log write and replaced ids) comes back
    equal through Avro; the JSON-only recordsStats is dropped, the 1.x fields default as Java's do."""
    meta = CommitMetadata(operation_type="UPSERT", extra_metadata={"schema": '{"type":"record"}', "k": "v"},
                          partition_to_replace_file_ids={"p=1": ["old-0"]})
    meta.add(WriteStat("f1-0", "p=1/f1-0_0-1-1_001.parquet", "p=1", num_writes=5, total_write_bytes=500,
                       runtime_stats=RuntimeStats(1, 2, 3)))
    meta.add(WriteStat("f2-0", "p=1/.f2-0_001.log.1_0-1-1", "p=1", prev_commit="001", num_writes=2,
                       total_write_bytes=90, log_version=1, log_offset=0, base_file=None,
                       log_files=[".f2-0_001.log.1_0-1-1"]))
    data = commit_avro_bytes(meta.to_json(), replace=True)
    record, replace = read_commit_avro(data)
    assert replace and record["version"] is None and record["compacted"] is False
    delta = record["partitionToWriteStats"]["p=1"][1]
    assert (delta["logVersion"], delta["baseFile"], delta["numUpdates"], delta["totalLogFiles"]) == (1, "", 0, None)
    base = record["partitionToWriteStats"]["p=1"][0]
    assert base["logVersion"] is None and base["logFiles"] is None and base["prevBaseFile"] is None
    assert base["runtimeStats"] == {"totalScanTime": 1, "totalCreateTime": 3, "totalUpsertTime": 2}
    back = CommitMetadata.from_bytes(commit_json_bytes(data))
    assert back.to_json() == meta.to_json()


def test_java_defaults_for_missing_and_null_values() -> None:
    record = commit_avro_record({}, replace=True)
    assert record == {"partitionToWriteStats": {}, "compacted": False, "extraMetadata": {}, "version": None,
                      "operationType": "UNKNOWN", "partitionToReplaceFileIds": {}}
    record = commit_avro_record({
        "partitionToWriteStats": {"p": [{"fileId": "f", "numWrites": None, "baseFile": "b.parquet",
                                         "recordsStats": {"val": None}}]},
        "compacted": None, "extraMetadata": {"a": None, "b": True, "c": 7}, "operationType": None,
    }, replace=False)
    stat = record["partitionToWriteStats"]["p"][0]
    assert stat["numWrites"] == 0 and stat["totalLogReadTimeMs"] == 0 and stat["path"] is None
    assert (stat["logVersion"], stat["logOffset"], stat["logFiles"]) == (0, 0, [])  # a delta stat: baseFile set
    assert "recordsStats" not in stat and "partitionToReplaceFileIds" not in record
    assert record["extraMetadata"] == {"b": "true", "c": "7"}
    assert record["compacted"] is None and record["operationType"] is None
    assert _avro(commit_avro_bytes({"partitionToWriteStats": None, "extraMetadata": None}, False))[0] == {
        "partitionToWriteStats": None, "compacted": False, "extraMetadata": None, "version": None,
        "operationType": "UNKNOWN"}


def test_fields_hudi_leaves_null_are_kept_when_set() -> None:
    """version and totalLogFiles have no Java property (always null from Hudi); a file that sets them
    keeps them through JSON."""
    data = commit_avro_bytes({"version": 1, "partitionToWriteStats": {"": [{"fileId": "f", "totalLogFiles": 3}]}},
                             replace=False)
    parsed = json.loads(commit_json_bytes(data))
    assert parsed["version"] == 1 and parsed["partitionToWriteStats"][""][0]["totalLogFiles"] == 3
    assert _avro(commit_avro_bytes(parsed, False))[0] == _avro(data)[0]


def test_container_layout() -> None:
    """Header with avro.schema only, a random 16-byte sync marker, one block of one record."""
    a, b = commit_avro_bytes({}, False), commit_avro_bytes({}, False)
    assert a[:4] == b"Obj\x01" and a[-16:] != b[-16:] and a[:-16].endswith(b"UNKNOWN")
    schema = commit_schema_json(False).encode()
    assert a[4:5] == b"\x02" and a[5:17] == b"\x16avro.schema"  # a map of one entry
    end = a.index(schema) + len(schema)
    assert a[end] == 0 and a[end + 1:end + 17] == a[-16:]  # end of the map, then the sync marker
    count, size = a[end + 17], a[end + 18]
    assert count == 2 and end + 19 + size // 2 + 16 == len(a)  # one record (zig-zag 1), then its datum
    assert fastavro.reader(io.BytesIO(a)).codec == "null"
    with pytest.raises(HudiError, match="16 bytes"):
        commit_avro_bytes({}, False, sync_marker=b"short")


def test_corrupt_and_foreign_avro_files_name_the_file(tables: dict[str, Path]) -> None:
    data = _commit_files(tables, completed_only=True)[0].read_bytes()
    with pytest.raises(CorruptFileError, match="t1.commit"):
        commit_json_bytes(data[:200], "t1.commit")
    plan = next(p for root in tables.values() for p in _timeline_files(root)
                if p.name.endswith(".rollback.requested"))
    with pytest.raises(CorruptFileError, match="HoodieRollbackPlan.*not commit metadata"):
        commit_json_bytes(plan.read_bytes(), "t2.commit")
    header = commit_avro_bytes({}, False)
    empty = header[:header.index(commit_schema_json(False).encode()) + len(commit_schema_json(False)) + 17]
    with pytest.raises(CorruptFileError, match="t3.commit"):
        commit_json_bytes(empty, "t3.commit")


def test_values_of_the_wrong_type_are_refused() -> None:
    with pytest.raises(HudiError, match="HoodieCommitMetadata schema"):
        commit_avro_bytes({"partitionToWriteStats": {"p": [{"fileId": "f", "numWrites": "many"}]}}, False)
