"""HoodieWriteStat / HoodieDeltaWriteStat field names and order, as in the samples."""

from __future__ import annotations

import json

import pytest

from pyhudi.model.write_stat import RuntimeStats, WriteStat
from tests.unit._samples import SampleTables

BASE_KEYS = [
    "fileId", "path", "cdcStats", "prevCommit", "numWrites", "numDeletes", "numUpdateWrites", "numInserts",
    "totalWriteBytes", "totalWriteErrors", "tempPath", "partitionPath", "totalLogRecords",
    "totalLogFilesCompacted", "totalLogSizeCompacted", "totalUpdatedRecordsCompacted", "totalLogBlocks",
    "totalCorruptLogBlock", "totalRollbackBlocks", "fileSizeInBytes", "minEventTime", "maxEventTime",
    "runtimeStats",
]
DELTA_KEYS = BASE_KEYS + ["logVersion", "logOffset", "baseFile", "logFiles", "recordsStats"]


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    return SampleTables(tmp_path_factory.mktemp("ws_samples"))


def test_base_stat_key_order_matches_sample(samples):
    doc = json.loads((samples.hoodie("cow__v6_nonpartitioned") / "20240418173551906.commit").read_bytes())
    raw = doc["partitionToWriteStats"][""][0]
    assert list(raw) == BASE_KEYS
    stat = WriteStat.from_json(raw)
    assert list(stat.to_json()) == BASE_KEYS
    assert stat.to_json() == raw


def test_delta_stat_key_order_matches_sample(samples):
    doc = json.loads((samples.hoodie("trips_mor_avro__v6_trips_8i1u") / "20250331030645735.deltacommit").read_bytes())
    raw = doc["partitionToWriteStats"]["city=san_francisco"][0]
    assert list(raw) == DELTA_KEYS
    stat = WriteStat.from_json(raw)
    assert stat.is_delta
    assert stat.to_json() == raw
    assert stat.to_json()["recordsStats"] == {"val": None}


def test_new_file_group_defaults():
    stat = WriteStat(file_id="f-0", path="p/f-0_0-1-2_20250101000000000.parquet", partition_path="p")
    out = stat.to_json()
    assert list(out) == BASE_KEYS
    assert out["prevCommit"] == "null"  # the string, not JSON null
    assert out["cdcStats"] is None and out["tempPath"] is None
    assert out["runtimeStats"] is None
    assert not stat.is_delta


def test_log_only_slice_has_empty_base_file():
    stat = WriteStat(file_id="f-0", path="p/.f-0_1.log.1_0-1-2", partition_path="p", log_version=1, log_offset=0,
                     log_files=[".f-0_1.log.1_0-1-2"])
    out = stat.to_json()
    assert list(out) == DELTA_KEYS
    assert out["baseFile"] == ""
    assert out["logFiles"] == [".f-0_1.log.1_0-1-2"]


def test_runtime_stats_and_round_trip():
    stat = WriteStat(file_id="f", path="f.parquet", partition_path="", num_writes=7, num_inserts=7,
                     total_write_bytes=700, file_size_in_bytes=700,
                     runtime_stats=RuntimeStats(total_scan_time=1, total_upsert_time=2, total_create_time=3))
    out = stat.to_json()
    assert out["runtimeStats"] == {"totalScanTime": 1, "totalUpsertTime": 2, "totalCreateTime": 3}
    again = WriteStat.from_json(json.loads(json.dumps(out)))
    assert again.to_json() == out
    assert stat.to_row() == out


def test_from_json_tolerates_missing_fields():
    stat = WriteStat.from_json({"path": "x"})
    assert stat.file_id == "" and stat.prev_commit == "null" and stat.num_writes == 0
    assert stat.runtime_stats is None and not stat.is_delta
