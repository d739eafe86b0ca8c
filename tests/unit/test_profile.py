"""Workload profile and its inflight file (reference §4.1), against the Spark-written inflight files."""

from __future__ import annotations

import json

import pytest

from pyhudi.model.commit_metadata import CommitMetadata
from pyhudi.writer.profile import PartitionProfile, WorkloadProfile
from tests.unit._samples import SampleTables, manifest, sample_names


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    return SampleTables(tmp_path_factory.mktemp("wp_samples"))


def _inflight_name(ts: str, action: str) -> str:
    return f"{ts}.inflight" if action == "commit" else f"{ts}.{action}.inflight"


def _profile_from_sample(data: bytes) -> WorkloadProfile:
    """Rebuild the profile Hudi planned, from its inflight file."""
    meta = CommitMetadata.from_bytes(data)
    wp = WorkloadProfile(operation_type=meta.operation_type)
    for path, stats in meta.partition_to_write_stats.items():
        pp = wp.partition(path)
        for s in stats:
            if s.file_id == "":
                pp.num_inserts += s.num_inserts
            else:
                pp.updates[s.file_id] = (s.prev_commit, s.num_update_writes)
    return wp


def test_byte_exact_single_partition_cow_upsert(samples):
    """cow nonpartitioned, commit 2: one insert and one update of file group a079...-0."""
    wp = WorkloadProfile(operation_type="UPSERT")
    wp.partition("").num_inserts = 1
    wp.partition("").updates["a079bdb3-731c-4894-b855-abfcd6921007-0"] = ("20240418173550988", 1)
    sample = (samples.hoodie("cow__v6_nonpartitioned") / "20240418173551906.inflight").read_bytes()
    assert wp.to_inflight_bytes() == sample


def test_byte_exact_update_only_partition(samples):
    """trips deltacommit 2 (UPSERT_PREPPED): update-only partition still has its fileId "" stat with 0 inserts."""
    wp = WorkloadProfile(operation_type="UPSERT_PREPPED")
    wp.partition("city=san_francisco").updates["d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0"] = ("20250331030642808", 1)
    sample = (samples.hoodie("trips_mor_avro__v6_trips_8i1u") / "20250331030645735.deltacommit.inflight").read_bytes()
    assert wp.to_inflight_bytes() == sample


@pytest.mark.parametrize("name", [n for n in sample_names() if "empty" not in n])
def test_every_sample_inflight_has_the_same_structure(samples, name):
    """Same partitions, same stats per partition (insert stat first), same values; Hudi's partition order
    comes from a Java HashMap, so partitions are compared as a mapping."""
    for inst in manifest()[name]["completed_instants"]:
        sample = (samples.hoodie(name) / _inflight_name(inst["instant"], inst["action"])).read_bytes()
        ours = _profile_from_sample(sample).to_inflight_bytes()
        theirs_doc, ours_doc = json.loads(sample), json.loads(ours)
        assert list(ours_doc) == list(theirs_doc) == ["partitionToWriteStats", "compacted", "extraMetadata",
                                                      "operationType"]
        assert ours_doc == theirs_doc
        for stats in ours_doc["partitionToWriteStats"].values():
            assert stats[0]["fileId"] == "" and stats[0]["prevCommit"] == "null"
            assert all(s["path"] is None and s["partitionPath"] is None for s in stats)
        # a single-partition profile is byte-identical
        if len(theirs_doc["partitionToWriteStats"]) == 1:
            assert ours == sample


def test_inflight_is_valid_commit_metadata_with_zero_counters():
    wp = WorkloadProfile(operation_type="INSERT")
    wp.partition("b").num_inserts = 7
    wp.partition("a").updates.update({"f2": ("20250101000000001", 3), "f1": ("20250101000000002", 4)})
    meta = CommitMetadata.from_bytes(wp.to_inflight_bytes())
    assert meta.operation_type == "INSERT" and meta.compacted is False and meta.extra_metadata == {}
    a = meta.partition_to_write_stats["a"]
    assert [(s.file_id, s.prev_commit, s.num_inserts, s.num_update_writes) for s in a] == [
        ("", "null", 0, 0), ("f1", "20250101000000002", 0, 4), ("f2", "20250101000000001", 0, 3)]
    (b,) = meta.partition_to_write_stats["b"]
    assert (b.file_id, b.num_inserts) == ("", 7)
    for s in meta.all_stats():
        assert s.num_writes == 0 and s.total_write_bytes == 0 and s.num_deletes == 0
        assert not s.is_delta and s.runtime_stats is None
    assert not wp.to_inflight_bytes().endswith(b"\n")


def test_empty_profile():
    data = WorkloadProfile().to_inflight_bytes()
    assert data == (b'{\n  "partitionToWriteStats" : { },\n  "compacted" : false,\n  "extraMetadata" : { },\n'
                    b'  "operationType" : "UPSERT"\n}')


def test_partition_accessor_creates_once():
    wp = WorkloadProfile()
    p = wp.partition("x")
    assert wp.partition("x") is p
    assert isinstance(p, PartitionProfile) and p.num_inserts == 0 and p.updates == {}
