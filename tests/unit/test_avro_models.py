"""Avro timeline models: schemas as Hudi's Java writer prints them, container layout, round trips."""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import fastavro
import pytest

from pyhudi.errors import CorruptFileError, HudiError
from pyhudi.model import avro_models as am
from pyhudi.model.avro_schemas import NAMESPACE, SCHEMAS, TOP_LEVEL_SCHEMAS, WRAPPER_NAMES
from tests.helpers import samples_root

SAMPLES = samples_root() / "tables"
OVERWRITE_SAMPLES = [
    "cow__v6_simplekeygen_nonhivestyle_overwritetable.zip",
    "mor_parquet__v6_simplekeygen_nonhivestyle_overwritetable.zip",
]
BASE = "file:/tmp/hudi/trips"
SYNC = bytes(range(16))


def _unzip(zip_name: str, dest: Path) -> Path:
    path = SAMPLES / zip_name
    if not path.exists():
        pytest.skip(f"sample {zip_name} not available")
    with zipfile.ZipFile(path) as zf:
        for member in zf.namelist():
            if member.startswith("__MACOSX/") or "/__MACOSX/" in member:
                continue
            zf.extract(member, dest)
    return dest


def _requested_replace_files(tmp_path: Path, zip_name: str) -> list[Path]:
    root = _unzip(zip_name, tmp_path / zip_name)
    files = sorted(root.rglob(".hoodie/*.replacecommit.requested"))
    assert files, f"no .replacecommit.requested in {zip_name}"
    return files


# ---------------------------------------------------------------------------------------
# Realistic records, one per top-level schema
# ---------------------------------------------------------------------------------------


def _clustering_plan() -> dict[str, Any]:
    slices = [
        am.slice_info(
            file_id="d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0",
            partition_path="city=san_francisco",
            data_file_path=f"{BASE}/city=san_francisco/d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_0-13-9_20250331030642808.parquet",
            delta_file_paths=[
                f"{BASE}/city=san_francisco/.d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_20250331030642808.log.1_0-33-43"
            ],
        ),
        am.slice_info(file_id="88163884-fef0-4aab-865d-c72327a8a1d5-0", partition_path="city=chennai"),
    ]
    group = am.clustering_group(
        slices=slices,
        num_output_file_groups=1,
        metrics={
            "TOTAL_IO_READ_MB": 12.0,
            "TOTAL_IO_WRITE_MB": 6.0,
            "TOTAL_IO_MB": 18.0,
            "TOTAL_LOG_FILES": 1,
        },
    )
    strategy = am.clustering_strategy(strategy_params={"hoodie.clustering.plan.strategy.sort.columns": "ts"})
    return am.clustering_plan(input_groups=[group], strategy=strategy)


def _rollback_metadata() -> dict[str, Any]:
    return am.rollback_metadata(
        start_rollback_time="20250126040936578",
        time_taken_in_millis=321,
        instants_rollback=[am.instant_info("20250126040826878", "deltacommit")],
        partition_metadata={
            "city=chennai": am.rollback_partition_metadata(
                partition_path="city=chennai",
                success_delete_files=[
                    f"{BASE}/city=chennai/2288d88d-15fd-4af2-ad79-31d50bd93827-0_2-283-319_20250126040826878.parquet"
                ],
                rollback_log_files={f"{BASE}/city=chennai/.2288d88d-15fd_20250126040826878.log.2_1-0-1": 105},
                log_files_from_failed_commit={
                    f"{BASE}/city=chennai/.2288d88d-15fd_20250126040826878.log.1_0-33-43": 11721
                },
            )
        },
    )


def _commit_json() -> dict[str, Any]:
    return {
        "partitionToWriteStats": {
            "city=chennai": [
                {
                    "fileId": "2288d88d-15fd-4af2-ad79-31d50bd93827-0",
                    "path": "city=chennai/2288d88d-15fd-4af2-ad79-31d50bd93827-0_2-283-319_20220609121017723.parquet",
                    "cdcStats": None,
                    "prevCommit": "null",
                    "numWrites": 4,
                    "numDeletes": 0,
                    "numUpdateWrites": 0,
                    "numInserts": 4,
                    "totalWriteBytes": 437858,
                    "totalWriteErrors": 0,
                    "tempPath": None,
                    "partitionPath": "city=chennai",
                    "totalLogRecords": 0,
                    "totalLogFilesCompacted": 0,
                    "totalUpdatedRecordsCompacted": 0,
                    "totalLogBlocks": 0,
                    "totalCorruptLogBlock": 0,
                    "totalRollbackBlocks": 0,
                    "fileSizeInBytes": 437858,
                    "minEventTime": None,
                    "maxEventTime": None,
                    "runtimeStats": {"totalScanTime": 0, "totalUpsertTime": 0, "totalCreateTime": 385},
                }
            ]
        },
        "compacted": False,
        "extraMetadata": {"schema": '{"type":"record","name":"r","fields":[]}'},
        "operationType": "UPSERT",
    }


def sample_records() -> dict[str, dict[str, Any]]:
    """One realistic record for every top-level schema."""
    clean_partition = am.clean_partition_metadata(
        partition_path="city=chennai",
        policy="KEEP_LATEST_COMMITS",
        delete_path_patterns=["2288d88d-15fd-4af2-ad79-31d50bd93827-0_2-283-319_20220609121017723.parquet"],
        success_delete_files=["2288d88d-15fd-4af2-ad79-31d50bd93827-0_2-283-319_20220609121017723.parquet"],
    )
    return {
        "HoodieRequestedReplaceMetadata": am.requested_replace_metadata(clustering_plan=_clustering_plan()),
        "HoodieCompactionPlan": am.compaction_plan(
            operations=[
                am.compaction_operation(
                    base_instant_time="20250331030642808",
                    file_id="d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0",
                    partition_path="city=san_francisco",
                    data_file_path="d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_0-13-9_20250331030642808.parquet",
                    delta_file_paths=[
                        ".d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_20250331030642808.log.1_0-33-43"
                    ],
                    metrics={
                        "TOTAL_LOG_FILES": 1.0,
                        "TOTAL_IO_READ_MB": 1.0,
                        "TOTAL_LOG_FILES_SIZE": 11721.0,
                    },
                ),
                am.compaction_operation(
                    base_instant_time="20250331030700000",
                    file_id="4f2685a3-614f-49ca-9b2b-e1cb9fb61f27-0",
                    partition_path="city=sao_paulo",
                    delta_file_paths=[
                        ".4f2685a3-614f-49ca-9b2b-e1cb9fb61f27-0_20250331030700000.log.1_1-2-3"
                    ],
                ),
            ]
        ),
        "HoodieCleanerPlan": am.cleaner_plan(
            policy="KEEP_LATEST_COMMITS",
            earliest_instant_to_retain=am.action_instant("20250331030642808", "deltacommit"),
            last_completed_commit_timestamp="20250331040000000",
            file_paths_to_be_deleted_per_partition={
                "city=chennai": [
                    am.clean_file_info(
                        f"{BASE}/city=chennai/2288d88d-15fd-4af2-ad79-31d50bd93827-0_2-283-319_20220609121017723.parquet"
                    )
                ]
            },
            partitions_to_be_deleted=["city=atlantis"],
        ),
        "HoodieCleanMetadata": am.clean_metadata(
            start_clean_time="20250331040100000",
            time_taken_in_millis=57,
            earliest_commit_to_retain="20250331030642808",
            last_completed_commit_timestamp="20250331040000000",
            partition_metadata={"city=chennai": clean_partition},
        ),
        "HoodieRollbackPlan": am.rollback_plan(
            instant_to_rollback=am.instant_info("20250126040826878", "deltacommit"),
            rollback_requests=[
                am.rollback_request(
                    partition_path="city=chennai",
                    files_to_be_deleted=[
                        f"{BASE}/city=chennai/2288d88d-15fd-4af2-ad79-31d50bd93827-0_2-283-319_20250126040826878.parquet"
                    ],
                ),
                am.rollback_request(
                    partition_path="city=chennai",
                    file_id="2288d88d-15fd-4af2-ad79-31d50bd93827-0",
                    latest_base_instant="20250126040000000",
                    log_blocks_to_be_deleted={
                        f"{BASE}/city=chennai/.2288d88d-15fd_20250126040000000.log.1_0-33-43": 11721
                    },
                ),
            ],
        ),
        "HoodieRollbackMetadata": _rollback_metadata(),
        "HoodieSavepointMetadata": am.savepoint_metadata(
            savepointed_by="etl",
            comments="before backfill",
            savepointed_at=1743393600000,
            latest_files={
                "city=chennai": ["2288d88d-15fd-4af2-ad79-31d50bd93827-0_2-283-319_20220609121017723.parquet"]
            },
        ),
        "HoodieRestorePlan": am.restore_plan(
            instants_to_rollback=[
                am.instant_info("20250331040000000", "commit"),
                am.instant_info("20250331035000000", "clean"),
            ],
            savepoint_to_restore_timestamp="20250331030642808",
        ),
        "HoodieRestoreMetadata": am.restore_metadata(
            start_restore_time="20250331050000000",
            time_taken_in_millis=1200,
            restore_instant_info=[am.instant_info("20250126040826878", "deltacommit")],
            rollback_metadata_by_instant={"20250126040826878": [_rollback_metadata()]},
        ),
        "HoodieCommitMetadata": am.archived_commit_metadata(_commit_json()),
        "HoodieReplaceCommitMetadata": am.archived_commit_metadata(
            {
                **_commit_json(),
                "operationType": "INSERT_OVERWRITE_TABLE",
                "partitionToReplaceFileIds": {"30": ["d398fae1-c0e6-4098-8124-f55f7098bdba-0"]},
            },
            replace=True,
        ),
        "HoodieIndexCommitMetadata": {
            "version": 1,
            "operationType": "BUILD",
            "indexPartitionInfos": [
                {
                    "version": 1,
                    "metadataPartitionPath": "column_stats",
                    "indexUptoInstant": "20250331030642808",
                }
            ],
        },
        "HoodieArchivedMetaEntry": am.archived_meta_entry(
            commit_time="20250331040100000",
            action_type="clean",
            state_transition_time="20250331040100123",
            hoodieCleanMetadata=am.clean_metadata(
                start_clean_time="20250331040100000",
                earliest_commit_to_retain="20250331030642808",
                partition_metadata={"city=chennai": clean_partition},
            ),
        ),
        "HoodieDeleteRecordList": am.delete_record_list(
            [
                am.delete_record("uuid-1", "city=chennai", 0),
                am.delete_record("uuid-2", "city=chennai", am.ordering_value(7, "LongWrapper")),
                am.delete_record("uuid-3", None, None),
            ]
        ),
    }


# ---------------------------------------------------------------------------------------
# Schemas vs the samples Hudi wrote
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("zip_name", OVERWRITE_SAMPLES)
def test_sample_requested_replace_schema_is_byte_identical(tmp_path: Path, zip_name: str) -> None:
    for path in _requested_replace_files(tmp_path, zip_name):
        data = path.read_bytes()
        assert am.embedded_schema_json(data) == am.avro_schema_json("HoodieRequestedReplaceMetadata")
        assert am.read_instant_avro(data) == am.empty_requested_replace_metadata()
        assert (
            am.read_instant_avro(data, "HoodieRequestedReplaceMetadata")
            == am.empty_requested_replace_metadata()
        )
        # Same sync marker -> the whole file is reproduced byte for byte.
        rewritten = am.write_instant_avro(
            "HoodieRequestedReplaceMetadata", am.empty_requested_replace_metadata(), sync_marker=data[-16:]
        )
        assert rewritten == data


def test_sample_header_has_schema_only_and_one_block(tmp_path: Path) -> None:
    data = _requested_replace_files(tmp_path, OVERWRITE_SAMPLES[0])[0].read_bytes()
    reader = fastavro.reader(io.BytesIO(data))
    assert set(reader.metadata) == {"avro.schema"}  # no avro.codec key: null codec
    assert data.startswith(b"Obj\x01")
    assert data.count(data[-16:]) == 2  # header sync + one block


# ---------------------------------------------------------------------------------------
# Java-style schema printing
# ---------------------------------------------------------------------------------------


def test_every_schema_parses_and_names_are_hudi_full_names() -> None:
    for name in SCHEMAS:
        parsed = json.loads(am.avro_schema_json(name))
        assert parsed["name"] == name
        assert parsed["namespace"] == NAMESPACE
        assert am.full_name(name) == f"{NAMESPACE}.{name}"
        fastavro.parse_schema(am.avro_schema(name))


def test_named_types_inlined_once_and_strings_marked_for_java() -> None:
    text = am.avro_schema_json("HoodieRestoreMetadata")
    assert text.count('"name":"HoodieInstantInfo"') == 1  # defined once, then referenced
    assert '"items":"HoodieInstantInfo"' in text
    assert text.count('"namespace"') == 1
    archived = am.avro_schema_json("HoodieArchivedMetaEntry")
    assert archived.count('"name":"HoodieWriteStat"') == 1
    assert '"type":["null","HoodieCommitMetadata"]' in archived  # HoodieInflightReplaceMetadata
    assert '"type":"string"}' not in text.replace('"avro.java.string":"String"}', "")
    assert '{"type":"map","values":"long","avro.java.string":"String"}' in text


def test_archived_entry_field_order() -> None:
    names = [f["name"] for f in am.avro_schema("HoodieArchivedMetaEntry")["fields"]]
    assert names == [
        "hoodieCommitMetadata",
        "hoodieCleanMetadata",
        "hoodieCompactionMetadata",
        "hoodieRollbackMetadata",
        "hoodieSavePointMetadata",
        "commitTime",
        "actionType",
        "version",
        "hoodieCompactionPlan",
        "hoodieCleanerPlan",
        "actionState",
        "hoodieReplaceCommitMetadata",
        "hoodieRequestedReplaceMetadata",
        "HoodieInflightReplaceMetadata",
        "hoodieIndexCommitMetadata",
        "stateTransitionTime",
    ]


def test_delete_record_ordering_union_layout() -> None:
    schema = am.avro_schema("HoodieDeleteRecordList")
    record = schema["fields"][0]["type"]["items"]
    union = record["fields"][2]["type"]
    assert union[0] == "null"
    assert [b["name"] for b in union[1:]] == list(WRAPPER_NAMES)
    by_name = {b["name"]: b["fields"][0]["type"] for b in union[1:]}
    assert by_name["DecimalWrapper"] == {
        "type": "bytes",
        "logicalType": "decimal",
        "precision": 30,
        "scale": 15,
    }
    assert by_name["TimeMicrosWrapper"] == {"type": "long", "logicalType": "time-micros"}
    assert by_name["DateWrapper"] == "int"  # Hudi leaves the logical type off
    assert by_name["TimestampMicrosWrapper"] == "long"


# ---------------------------------------------------------------------------------------
# Round trips
# ---------------------------------------------------------------------------------------


def test_sample_records_cover_every_top_level_schema() -> None:
    assert set(sample_records()) == set(TOP_LEVEL_SCHEMAS)


@pytest.mark.parametrize("schema_name", TOP_LEVEL_SCHEMAS)
def test_write_then_read_round_trip(schema_name: str) -> None:
    record = sample_records()[schema_name]
    data = am.write_instant_avro(schema_name, record)
    assert data.startswith(am.AVRO_MAGIC)
    assert am.embedded_schema_json(data) == am.avro_schema_json(schema_name)
    assert am.read_instant_avro(data) == record
    assert am.read_instant_avro(data, schema_name) == record
    assert am.read_instant_avro(data, am.full_name(schema_name)) == record
    # Independent decoder: fastavro's own container reader sees one record.
    assert len(list(fastavro.reader(io.BytesIO(data)))) == 1


@pytest.mark.parametrize("schema_name", TOP_LEVEL_SCHEMAS)
def test_datum_round_trip(schema_name: str) -> None:
    record = sample_records()[schema_name]
    assert am.decode_avro_datum(schema_name, am.encode_avro_datum(schema_name, record)) == record


def test_container_layout_matches_java_writer() -> None:
    record = sample_records()["HoodieCleanerPlan"]
    data = am.write_instant_avro("HoodieCleanerPlan", record, sync_marker=SYNC)
    schema = am.avro_schema_json("HoodieCleanerPlan").encode()
    datum = am.encode_avro_datum("HoodieCleanerPlan", record)
    expected_header = (
        b"Obj\x01" + b"\x02" + b"\x16avro.schema" + am._zigzag_long(len(schema)) + schema + b"\x00" + SYNC
    )
    assert data.startswith(expected_header)
    assert data[len(expected_header) :] == b"\x02" + am._zigzag_long(len(datum)) + datum + SYNC


def test_helpers_use_hudi_versions_and_defaults() -> None:
    recs = sample_records()
    assert recs["HoodieCleanerPlan"]["version"] == 2
    assert recs["HoodieCleanerPlan"]["filesToBeDeletedPerPartition"] == {}
    assert recs["HoodieCleanMetadata"]["version"] == 2
    assert recs["HoodieCleanMetadata"]["totalFilesDeleted"] == 1
    assert recs["HoodieCleanMetadata"]["bootstrapPartitionMetadata"] == {}
    assert recs["HoodieCompactionPlan"]["version"] == 2
    assert recs["HoodieCompactionPlan"]["operations"][1]["dataFilePath"] is None
    plan = recs["HoodieRequestedReplaceMetadata"]["clusteringPlan"]
    assert recs["HoodieRequestedReplaceMetadata"]["operationType"] == "CLUSTER"
    assert plan["version"] == 1 and plan["preserveHoodieMetadata"] is True
    assert plan["strategy"]["strategyClassName"].endswith("SparkSortAndSizeExecutionStrategy")
    assert plan["inputGroups"][0]["slices"][1]["dataFilePath"] == ""
    assert recs["HoodieRollbackPlan"]["version"] == 1
    assert recs["HoodieRollbackPlan"]["RollbackRequests"][0]["fileId"] == ""
    assert recs["HoodieRollbackMetadata"]["commitsRollback"] == ["20250126040826878"]
    assert recs["HoodieRollbackMetadata"]["totalFilesDeleted"] == 1
    assert recs["HoodieRestorePlan"]["version"] == 2
    assert recs["HoodieRestoreMetadata"]["instantsToRollback"] == ["20250126040826878"]
    assert recs["HoodieArchivedMetaEntry"]["version"] is None
    commit = recs["HoodieCommitMetadata"]
    assert commit["version"] is None and commit["extraMetadata"]["ROLLING_STAT"] == ""
    assert "runtimeStats" not in commit["partitionToWriteStats"]["city=chennai"][0]
    assert am.archived_commit_metadata({**_commit_json(), "compacted": True})["operationType"] == "COMPACT"


def test_empty_requested_replace_metadata_matches_sample_bytes() -> None:
    data = am.write_instant_avro("HoodieRequestedReplaceMetadata", am.empty_requested_replace_metadata())
    # operationType, clusteringPlan, extraMetadata null (branch 0); version null is branch 1 of ["int","null"].
    assert data[-16 - 6 : -16] == b"\x02\x08\x00\x00\x00\x02"


# ---------------------------------------------------------------------------------------
# Records written by other Hudi versions
# ---------------------------------------------------------------------------------------


def _container(schema: dict[str, Any], record: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), [record])
    return buf.getvalue()


def test_read_accepts_older_and_newer_writer_schemas() -> None:
    schema = am.avro_schema("HoodieCleanerPlan")
    # An older plan: no lastCompletedCommitTimestamp; a newer one: an extra extraMetadata field.
    schema["fields"] = [f for f in schema["fields"] if f["name"] != "lastCompletedCommitTimestamp"]
    schema["fields"].append(
        {"name": "extraMetadata", "type": ["null", {"type": "map", "values": "string"}], "default": None}
    )
    record = dict(sample_records()["HoodieCleanerPlan"])
    del record["lastCompletedCommitTimestamp"]
    record["extraMetadata"] = {"savepointed_timestamps": ""}
    data = _container(schema, record)

    as_written = am.read_instant_avro(data)
    assert as_written["extraMetadata"] == {"savepointed_timestamps": ""}
    assert "lastCompletedCommitTimestamp" not in as_written

    resolved = am.read_instant_avro(data, "HoodieCleanerPlan")
    assert resolved["lastCompletedCommitTimestamp"] == ""
    assert "extraMetadata" not in resolved
    assert resolved["filePathsToBeDeletedPerPartition"] == record["filePathsToBeDeletedPerPartition"]


def test_read_accepts_deflate_codec() -> None:
    buf = io.BytesIO()
    record = sample_records()["HoodieRollbackPlan"]
    fastavro.writer(
        buf, fastavro.parse_schema(am.avro_schema("HoodieRollbackPlan")), [record], codec="deflate"
    )
    assert am.read_instant_avro(buf.getvalue()) == record


def test_decode_with_explicit_writer_schema() -> None:
    old = am.avro_schema("HoodieRollbackPartitionMetadata")
    old["fields"] = old["fields"][:4]  # before logFilesFromFailedCommit
    buf = io.BytesIO()
    fastavro.schemaless_writer(
        buf,
        fastavro.parse_schema(old),
        {
            "partitionPath": "p",
            "successDeleteFiles": ["a"],
            "failedDeleteFiles": [],
            "rollbackLogFiles": None,
        },
    )
    decoded = am.decode_avro_datum("HoodieRollbackPartitionMetadata", buf.getvalue(), writer_schema=old)
    assert decoded["logFilesFromFailedCommit"] is None and decoded["successDeleteFiles"] == ["a"]


# ---------------------------------------------------------------------------------------
# Delete records
# ---------------------------------------------------------------------------------------


def _string(value: str) -> bytes:
    raw = value.encode()
    return am._zigzag_long(len(raw)) + raw


def test_decode_hand_built_delete_record_list() -> None:
    # array of 2 records; each: union index (zigzag) then value.
    data = b"".join(
        [
            b"\x04",  # array block of 2 items
            b"\x02" + _string("uuid-1"),  # recordKey: union branch 1 (string)
            b"\x02" + _string("city=chennai"),  # partitionPath
            b"\x04" + b"\x00",  # orderingVal: branch 2 = IntWrapper, value 0
            b"\x02" + _string("uuid-2"),
            b"\x00",  # partitionPath null
            b"\x0e" + _string("zz"),  # branch 7 = StringWrapper("zz")
            b"\x00",  # end of array
        ]
    )
    decoded = am.decode_avro_datum("HoodieDeleteRecordList", data)
    assert decoded == {
        "deleteRecordList": [
            {
                "recordKey": "uuid-1",
                "partitionPath": "city=chennai",
                "orderingVal": (f"{NAMESPACE}.IntWrapper", {"value": 0}),
            },
            {
                "recordKey": "uuid-2",
                "partitionPath": None,
                "orderingVal": (f"{NAMESPACE}.StringWrapper", {"value": "zz"}),
            },
        ]
    }
    rebuilt = am.delete_record_list(
        [am.delete_record("uuid-1", "city=chennai", 0), am.delete_record("uuid-2", None, "zz")]
    )
    assert am.encode_avro_datum("HoodieDeleteRecordList", rebuilt) == data


@pytest.mark.parametrize(
    ("value", "wrapper", "stored"),
    [
        (True, "BooleanWrapper", True),
        (5, "IntWrapper", 5),
        (2**40, "LongWrapper", 2**40),
        (1.5, "DoubleWrapper", 1.5),
        ("abc", "StringWrapper", "abc"),
        (b"\x00\x01", "BytesWrapper", b"\x00\x01"),
        (decimal.Decimal("12.25"), "DecimalWrapper", decimal.Decimal("12.250000000000000")),
        (dt.date(2024, 7, 7), "DateWrapper", 19911),
        (
            dt.datetime(2024, 7, 7, 0, 13, 3, 88000, tzinfo=dt.timezone.utc),
            "TimestampMicrosWrapper",
            1720311183088000,
        ),
        (dt.time(1, 2, 3, 4), "TimeMicrosWrapper", dt.time(1, 2, 3, 4)),
    ],
)
def test_ordering_value_wrappers_round_trip(value: Any, wrapper: str, stored: Any) -> None:
    wrapped = am.ordering_value(value)
    assert wrapped is not None and wrapped[0] == f"{NAMESPACE}.{wrapper}"
    datum = am.encode_avro_datum(
        "HoodieDeleteRecordList", am.delete_record_list([am.delete_record("k", "p", wrapped)])
    )
    decoded = am.decode_avro_datum("HoodieDeleteRecordList", datum)["deleteRecordList"][0]["orderingVal"]
    assert decoded == (f"{NAMESPACE}.{wrapper}", {"value": stored})


def test_float_wrapper_on_request() -> None:
    wrapped = am.ordering_value(0.5, "FloatWrapper")
    datum = am.encode_avro_datum(
        "HoodieDeleteRecordList", {"deleteRecordList": [am.delete_record("k", "p", wrapped)]}
    )
    assert (
        datum
        == b"\x02" + b"\x02" + _string("k") + b"\x02" + _string("p") + b"\x08" + b"\x00\x00\x00\x3f" + b"\x00"
    )


# ---------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------


def test_unknown_schema_name_is_a_hudi_error() -> None:
    with pytest.raises(am.UnknownAvroSchemaError) as info:
        am.write_instant_avro("HoodieNoSuchPlan", {})
    assert isinstance(info.value, HudiError)
    for call in (
        lambda: am.encode_avro_datum("Nope", {}),
        lambda: am.decode_avro_datum("Nope", b""),
        lambda: am.avro_schema_json("Nope"),
        lambda: am.read_instant_avro(
            am.write_instant_avro("HoodieRestorePlan", sample_records()["HoodieRestorePlan"]), "Nope"
        ),
    ):
        with pytest.raises(HudiError):
            call()


def test_invalid_record_is_a_hudi_error() -> None:
    bad = dict(sample_records()["HoodieCleanMetadata"])
    bad["totalFilesDeleted"] = "many"
    with pytest.raises(am.AvroModelError, match="HoodieCleanMetadata"):
        am.write_instant_avro("HoodieCleanMetadata", bad)
    typo = {**sample_records()["HoodieRollbackPlan"], "rollbackRequests": []}
    with pytest.raises(am.AvroModelError):
        am.encode_avro_datum("HoodieRollbackPlan", typo)
    with pytest.raises(am.AvroModelError):
        am.write_instant_avro("HoodieRestorePlan", sample_records()["HoodieRestorePlan"], sync_marker=b"x")
    with pytest.raises(am.AvroModelError):
        am.archived_meta_entry(commit_time="1", action_type="commit", hoodieNothing={})
    with pytest.raises(am.AvroModelError):
        am.ordering_value(object())


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b'{"partitionToWriteStats": {}}',
        b"Obj\x01\x02",
    ],
)
def test_undecodable_instant_bytes_raise_corrupt_file_error(data: bytes) -> None:
    with pytest.raises(CorruptFileError):
        am.read_instant_avro(data)


def test_truncated_or_mismatched_container_raises_corrupt_file_error() -> None:
    data = am.write_instant_avro("HoodieCleanerPlan", sample_records()["HoodieCleanerPlan"])
    with pytest.raises(CorruptFileError):
        am.read_instant_avro(data[:-20])
    with pytest.raises(CorruptFileError):
        am.read_instant_avro(data, "HoodieRollbackPlan")  # a clean plan is not a rollback plan


def test_undecodable_datum_raises_corrupt_file_error() -> None:
    with pytest.raises(CorruptFileError):
        am.decode_avro_datum("HoodieDeleteRecordList", b"\x02\x02\xff")
    datum = am.encode_avro_datum("HoodieDeleteRecordList", sample_records()["HoodieDeleteRecordList"])
    with pytest.raises(CorruptFileError):
        am.decode_avro_datum("HoodieDeleteRecordList", datum + b"\x00\x00")
