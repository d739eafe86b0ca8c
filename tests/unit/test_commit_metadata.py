"""Commit metadata: every sample commit/deltacommit/replacecommit/inflight file parses and re-serialises
byte for byte; derived sums and tolerant reading."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pyhudi.errors import CorruptFileError
from pyhudi.model.commit_metadata import CommitMetadata
from pyhudi.model.write_stat import WriteStat
from tests.unit._samples import SampleTables, manifest, sample_names


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    return SampleTables(tmp_path_factory.mktemp("cm_samples"))


JSON_SUFFIXES = (".commit", ".deltacommit", ".replacecommit", ".inflight")


def _json_instant_files(hoodie: Path) -> list[Path]:
    return sorted(p for p in hoodie.iterdir() if p.is_file() and p.name.endswith(JSON_SUFFIXES))


@pytest.mark.parametrize("name", sample_names())
def test_every_sample_instant_file_round_trips_byte_for_byte(samples, name):
    files = _json_instant_files(samples.hoodie(name))
    n_completed = len(manifest()[name]["completed_instants"])
    assert len(files) == 2 * n_completed  # one inflight + one completed file per instant
    for path in files:
        data = path.read_bytes()
        meta = CommitMetadata.from_bytes(data, what=path.name)
        out = meta.to_bytes()
        if out != data:
            pos = next((i for i, (a, b) in enumerate(zip(out, data, strict=False)) if a != b), min(len(out), len(data)))
            pytest.fail(f"{name}/{path.name} differs at byte {pos}: sample {data[pos - 40:pos + 40]!r} "
                        f"vs ours {out[pos - 40:pos + 40]!r}")
        # stable under a second cycle, and semantically equal to the raw JSON
        assert CommitMetadata.from_bytes(out).to_bytes() == data
        assert json.loads(out) == json.loads(data)


@pytest.mark.parametrize("name", sample_names())
def test_sample_completed_instants_match_manifest(samples, name):
    hoodie = samples.hoodie(name)
    for inst in manifest()[name]["completed_instants"]:
        meta = CommitMetadata.from_bytes((hoodie / f"{inst['instant']}.{inst['action']}").read_bytes())
        assert meta.operation_type == inst["operation_type"]
        assert meta.compacted is False
        assert meta.is_replace == (inst["action"] == "replacecommit")
        schema = json.loads(meta.schema)
        assert schema["type"] == "record"
        assert meta.all_stats()
        for partition, stats in meta.partition_to_write_stats.items():
            for s in stats:
                assert s.partition_path == partition
                assert s.path.startswith(f"{partition}/" if partition else "")
                assert s.file_id and s.file_id in s.path
                if s.is_delta:
                    assert s.log_files and all(".log." in lf for lf in s.log_files)
                else:
                    assert s.path.endswith(".parquet")
                    assert s.total_write_bytes == s.file_size_in_bytes
                    assert (samples.root(name) / s.path).stat().st_size == s.file_size_in_bytes


def test_cow_nonpartitioned_second_commit_values(samples):
    hoodie = samples.hoodie("cow__v6_nonpartitioned")
    meta = CommitMetadata.from_bytes((hoodie / "20240418173551906.commit").read_bytes())
    assert list(meta.partition_to_write_stats) == [""]
    (stat,) = meta.all_stats()
    assert (stat.num_writes, stat.num_inserts, stat.num_update_writes, stat.num_deletes) == (4, 1, 1, 0)
    assert stat.prev_commit == "20240418173550988"
    assert stat.file_id == "a079bdb3-731c-4894-b855-abfcd6921007-0"
    assert not stat.is_delta
    assert stat.runtime_stats is not None
    assert meta.total_records_written() == 4
    assert meta.total_bytes_written() == stat.total_write_bytes == 441520
    assert meta.file_ids_written() == {("", "a079bdb3-731c-4894-b855-abfcd6921007-0")}
    first = CommitMetadata.from_bytes((hoodie / "20240418173550988.commit").read_bytes())
    assert first.all_stats()[0].prev_commit == "null"


def test_trips_log_write_stat(samples):
    hoodie = samples.hoodie("trips_mor_avro__v6_trips_8i1u")
    meta = CommitMetadata.from_bytes((hoodie / "20250331030645735.deltacommit").read_bytes())
    assert meta.operation_type == "UPSERT_PREPPED"
    assert meta.extra_metadata["_hoodie.spark.sql.writes.prepped"] == "true"
    (stat,) = meta.all_stats()
    assert stat.is_delta
    assert (stat.num_writes, stat.num_update_writes, stat.total_write_bytes, stat.file_size_in_bytes) == \
        (1, 1, 1148, 1148)
    assert stat.log_version == 1 and stat.log_offset == 0
    assert stat.base_file == "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_0-13-60_20250331030642808.parquet"
    assert stat.log_files == [".d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_20250331030642808.log.1_0-26-85"]
    assert stat.prev_commit == "20250331030642808"


@pytest.mark.parametrize("name", ["cow__v6_simplekeygen_nonhivestyle_overwritetable",
                                  "mor_parquet__v6_simplekeygen_nonhivestyle_overwritetable"])
def test_replacecommit_file_ids(samples, name):
    facts = manifest()[name]
    ts = next(i["instant"] for i in facts["completed_instants"] if i["action"] == "replacecommit")
    meta = CommitMetadata.from_bytes((samples.hoodie(name) / f"{ts}.replacecommit").read_bytes())
    assert meta.is_replace
    assert meta.operation_type == "INSERT_OVERWRITE_TABLE"
    if "replaced_file_groups" in facts:
        assert meta.partition_to_replace_file_ids == facts["replaced_file_groups"]
    else:
        assert meta.partition_to_replace_file_ids == {
            "30": ["d398fae1-c0e6-4098-8124-f55f7098bdba-0"],
            "20": ["88163884-fef0-4aab-865d-c72327a8a1d5-0"],
            "10": ["4f2685a3-614f-49ca-9b2b-e1cb9fb61f27-0"],
        }
    # the inflight replacecommit carries no replace ids
    inflight = CommitMetadata.from_bytes((samples.hoodie(name) / f"{ts}.replacecommit.inflight").read_bytes())
    assert not inflight.is_replace


def test_inflight_profile_shape(samples):
    data = (samples.hoodie("cow__v6_simplekeygen_nonhivestyle") / "20240418172804498.inflight").read_bytes()
    meta = CommitMetadata.from_bytes(data)
    assert meta.operation_type == "UPSERT"
    assert meta.extra_metadata == {}
    p10 = meta.partition_to_write_stats["10"]
    assert [(s.file_id, s.prev_commit, s.num_inserts, s.num_update_writes) for s in p10] == [
        ("", "null", 0, 0), ("97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0", "20240418172802262", 0, 1)]
    assert [(s.file_id, s.num_inserts) for s in meta.partition_to_write_stats["30"]] == [("", 1)]
    assert all(s.path is None and s.partition_path is None and s.runtime_stats is None for s in meta.all_stats())
    assert meta.total_bytes_written() == 0


# ----------------------------------------------------------------------------- tolerant reading
def test_empty_bytes_is_empty_metadata():
    for data in (b"", b"  \n"):
        meta = CommitMetadata.from_bytes(data)
        assert meta.partition_to_write_stats == {} and meta.operation_type == "UNKNOWN"


@pytest.mark.parametrize("data", [b"{not json", b"\xff\xfe", b"[1, 2]", b'"str"'])
def test_corrupt_metadata_raises(data):
    with pytest.raises(CorruptFileError):
        CommitMetadata.from_bytes(data, what="x.commit")


def test_unknown_keys_ignored_and_nulls_tolerated():
    doc = {
        "partitionToWriteStats": {"p": [{"fileId": "f-0", "path": "p/f.parquet", "numWrites": 3,
                                         "totalWriteBytes": 30, "futureField": 1, "numDeletes": None}]},
        "compacted": True, "extraMetadata": {"schema": "{}", "nullValue": None},
        "operationType": "COMPACT", "fileIdAndRelativePaths": {"f-0": "p/f.parquet"},
        "writePartitionPaths": ["p"], "totalRecordsDeleted": 0,
    }
    meta = CommitMetadata.from_bytes(json.dumps(doc).encode())
    assert meta.compacted is True and meta.operation_type == "COMPACT"
    assert meta.extra_metadata == {"schema": "{}"}
    (stat,) = meta.all_stats()
    assert (stat.num_writes, stat.total_write_bytes, stat.num_deletes) == (3, 30, 0)
    assert "futureField" not in meta.to_json()["partitionToWriteStats"]["p"][0]
    assert "fileIdAndRelativePaths" not in meta.to_json()


def test_add_and_sums():
    meta = CommitMetadata(operation_type="UPSERT")
    meta.add(WriteStat("f1", "a/f1.parquet", "a", num_writes=10, total_write_bytes=100))
    meta.add(WriteStat("f2", "a/f2.parquet", "a", num_writes=5, total_write_bytes=50))
    meta.add(WriteStat("f3", "f3.parquet", None, num_writes=1, total_write_bytes=7))
    assert list(meta.partition_to_write_stats) == ["a", ""]
    assert meta.total_records_written() == 16
    assert meta.total_bytes_written() == 157
    assert meta.file_ids_written() == {("a", "f1"), ("a", "f2"), ("", "f3")}
    assert meta.schema is None
    out = json.loads(meta.to_bytes())
    assert list(out) == ["partitionToWriteStats", "compacted", "extraMetadata", "operationType"]


def test_replace_metadata_key_order():
    meta = CommitMetadata(operation_type="INSERT_OVERWRITE", partition_to_replace_file_ids={"p": ["f-0"]})
    assert list(json.loads(meta.to_bytes())) == ["partitionToWriteStats", "compacted", "extraMetadata",
                                                 "operationType", "partitionToReplaceFileIds"]
    empty_replace = CommitMetadata(partition_to_replace_file_ids={})
    assert empty_replace.is_replace
    assert CommitMetadata.from_bytes(empty_replace.to_bytes()).is_replace
