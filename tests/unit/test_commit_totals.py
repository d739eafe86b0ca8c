"""commit_totals.scan_totals (the record-size estimate's two sums without a JSON parse) equals the JSON
parse on every commit file Hudi wrote in the samples, on pyhudi-written ones with adversarial partition
paths, keys and schemas, and falls back (NotScannable) whenever it could not be sure."""

from __future__ import annotations

import json

import pytest

from pyhudi.model.commit_metadata import CommitMetadata
from pyhudi.model.write_stat import WriteStat
from pyhudi.timeline.commit_totals import NotScannable, json_totals, scan_totals
from tests.unit._samples import SampleTables, sample_names

JSON_SUFFIXES = (".commit", ".deltacommit", ".replacecommit", ".inflight")
T1 = "20240101000000000"


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> SampleTables:
    return SampleTables(tmp_path_factory.mktemp("totals_samples"))


def _same(data: bytes) -> None:
    for base_only in (False, True):
        assert scan_totals(data, base_only) == json_totals(data, base_only, "x"), (base_only, data[:200])


@pytest.mark.parametrize("name", sample_names())
def test_scan_equals_json_parse_on_hudi_written_commit_files(samples: SampleTables, name: str) -> None:
    files = sorted(p for p in samples.hoodie(name).iterdir() if p.is_file() and p.name.endswith(JSON_SUFFIXES))
    scanned = 0
    for path in files:
        data = path.read_bytes()
        if not data.strip():
            continue
        _same(data)
        scanned += 1
    assert scanned or not files


def _stat(part: str, i: int, log: bool) -> WriteStat:
    name = f".f{i}_{T1}.log.1_0-1-1" if log else f"f{i}_0-1-1_{T1}.parquet"
    path = f"{part}/{name}" if part else name
    return WriteStat(file_id=f"f{i}", path=path, partition_path=part, num_writes=10 + i,
                     total_write_bytes=1000 * (i + 1) + 7, num_inserts=3, log_version=1 if log else None)


ADVERSARIAL_PARTS = ["2024/01/02", "é ü/ß", "7", "", 'a"numWrites" : 99', "p\\", 'x\\"path" : "y.parquet',
                     "日本/1.5", "totalWriteBytes", "k=-12.30"]


def test_scan_equals_json_parse_on_adversarial_commit_metadata() -> None:
    meta = CommitMetadata(operation_type="UPSERT", extra_metadata={
        "schema": json.dumps({"type": "record", "name": "r", "fields": [
            {"name": "numWrites", "type": "long"}, {"name": "path", "type": "string"}]}),
        "note": '"totalWriteBytes" : 5, "path" : "z.parquet"'})
    for i, part in enumerate(ADVERSARIAL_PARTS):
        meta.add(_stat(part, i, log=False))
        meta.add(_stat(part, 100 + i, log=True))
    data = meta.to_bytes()
    _same(data)
    base = [s for s in meta.all_stats() if s.path.endswith(".parquet")]
    assert scan_totals(data, True) == (sum(s.total_write_bytes for s in base), sum(s.num_writes for s in base))
    assert scan_totals(data, False)[1] == sum(s.num_writes for s in meta.all_stats())
    # Compact JSON (another writer's whitespace) scans the same.
    _same(json.dumps(json.loads(data), separators=(",", ":"), ensure_ascii=False).encode())
    _same(json.dumps(json.loads(data), indent=4).encode())
    # An extraMetadata entry named like a stat field has a string value: the scan gives up, never guesses.
    meta.extra_metadata["numWrites"] = "12"
    with pytest.raises(NotScannable):
        scan_totals(meta.to_bytes(), False)


def test_empty_and_statless_commits() -> None:
    _same(CommitMetadata(operation_type="UPSERT").to_bytes())
    _same(b'{"partitionToWriteStats": null, "extraMetadata": {}}')


@pytest.mark.parametrize("data", [
    b'{"partitionToWriteStats": {"p": [{"path": "a.parquet", "numWrites": "5", "totalWriteBytes": 9}]}}',
    b'{"partitionToWriteStats": {"p": [{"path": "a.parquet", "numWrites": 5.0, "totalWriteBytes": 9}]}}',
    b'{"partitionToWriteStats": {"p": [{"path": "a.parquet", "numWrites": true, "totalWriteBytes": 9}]}}',
    b'{"partitionToWriteStats": {"p": [{"numWrites": 5, "totalWriteBytes": 9}]}',
    b"[1, 2]",
    b'{"partitionToWriteStats": {"p": [{"path": "a.parquet", "numWrites": 5, "totalWriteBytes": 9}',
])
def test_what_the_scan_cannot_read_exactly_falls_back(data: bytes) -> None:
    """Non-integer values, a stat without a path (base files only), a truncated or non-object file: the
    scan gives up rather than guess (write_totals then parses, and reports corrupt files)."""
    with pytest.raises(NotScannable):
        scan_totals(data, True)


def test_base_files_only_needs_one_path_per_stat() -> None:
    mixed = (b'{"partitionToWriteStats": {"p": [{"path": "a.parquet", "numWrites": 5, "totalWriteBytes": 9},'
             b'{"totalWriteBytes": 1, "path": "b.parquet", "numWrites": 2}]}}')
    with pytest.raises(NotScannable):
        scan_totals(mixed, True)
    assert scan_totals(mixed, False) == json_totals(mixed, False, "x") == (10, 7)

