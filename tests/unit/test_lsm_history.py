"""The layout-2 LSM timeline history (`.hoodie/timeline/history/`): reader and writer.

No sample table has history files, so the files here come from pyhudi's writer and are checked
against what Apache Hudi 1.0.x/1.1.x write (LSMTimelineWriter, HoodieLSMTimelineManifest,
HoodieLSMTimelineInstant.avsc, parquet-avro): names, `_version_` bytes, the manifest's Jackson
text, the parquet schema and footer. hudi-rs (0.5 and its main branch) does not read the history
(its layout-2 archived loader returns no instants), so the only hudi-rs check is that a v9 table
with history files still reads the same.
"""

from __future__ import annotations

import json
import pathlib
import random
from collections.abc import Iterator
from typing import TYPE_CHECKING

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pyhudi import faults
from pyhudi.errors import CorruptFileError
from pyhudi.storage import Storage
from pyhudi.timeline.history import (
    HISTORY_AVRO_SCHEMA,
    TAIL_BYTES,
    HistoryInstant,
    encode_history_table,
    history_completion_times,
    read_history,
)
from pyhudi.timeline.history_writer import InvalidHistoryInstantError, append_history, compact_and_clean
from tests.helpers import extract_sample_1x

if TYPE_CHECKING:
    from tests.support.s3_fixtures import S3Bucket

pytest_plugins = ["tests.support.s3_fixtures"]
H = ".hoodie/timeline/history"


class CountingStorage(Storage):
    """Local storage that records every read of a file's content."""

    def __init__(self, base: str) -> None:
        super().__init__(base)
        self.reads: list[tuple[str, str, int | None]] = []

    def read_bytes(self, rel: str) -> bytes:
        self.reads.append(("read_bytes", rel, None))
        return super().read_bytes(rel)

    def read_range(self, rel: str, start: int, end: int) -> bytes:
        self.reads.append(("read_range", rel, end - start))
        return super().read_range(rel, start, end)

    def data_reads(self) -> list[str]:
        return [rel.rsplit("/", 1)[-1] for _, rel, _ in self.reads if rel.endswith(".parquet")]


@pytest.fixture
def storage(tmp_path: pathlib.Path) -> CountingStorage:
    return CountingStorage(str(tmp_path))


def ts(batch: int, i: int) -> str:
    return f"202601010{batch:03d}{i:02d}000"


def batch(b: int, n: int = 3, meta_size: int = 8) -> list[HistoryInstant]:
    """n instants of batch b; metadata is random (incompressible) bytes of meta_size."""
    return [HistoryInstant(ts(b, i), ts(b, i)[:-3] + "900", "commit", random.Random(b * 100 + i).randbytes(meta_size),
                           b"plan" if i == 0 else None) for i in range(n)]


def listing(storage: Storage) -> list[str]:
    return sorted(i.name for i in storage.list_dir(H))


def manifest_names(storage: Storage, version: int | None = None) -> list[str]:
    v = version if version is not None else int(storage.read_bytes(f"{H}/_version_"))
    return [f["fileName"] for f in json.loads(storage.read_bytes(f"{H}/manifest_{v}"))["files"]]


# -- on-disk format --------------------------------------------------------------------------------------

EXPECTED_AVRO_SCHEMA = (
    '{"type":"record","name":"HoodieLSMTimelineInstant","namespace":"org.apache.hudi.avro.model","fields":['
    '{"name":"instantTime","type":["null",{"type":"string","avro.java.string":"String"}],"default":null},'
    '{"name":"completionTime","type":["null",{"type":"string","avro.java.string":"String"}],"default":null},'
    '{"name":"action","type":["null",{"type":"string","avro.java.string":"String"}],"default":null},'
    '{"name":"metadata","type":["null","bytes"],"default":null},'
    '{"name":"plan","type":["null","bytes"],"default":null},'
    '{"name":"version","type":"int","default":1}]}')

EXPECTED_PARQUET_COLUMNS = [
    # (name, repetition, physical type, logical type)
    ("instantTime", "OPTIONAL", "BYTE_ARRAY", "String"),
    ("completionTime", "OPTIONAL", "BYTE_ARRAY", "String"),
    ("action", "OPTIONAL", "BYTE_ARRAY", "String"),
    ("metadata", "OPTIONAL", "BYTE_ARRAY", "None"),
    ("plan", "OPTIONAL", "BYTE_ARRAY", "None"),
    ("version", "REQUIRED", "INT32", "None"),
]


def test_first_batch_writes_level0_file_manifest_1_and_version(storage: CountingStorage) -> None:
    instants = batch(0, 4)
    append_history(storage, H, list(reversed(instants)))  # the archiver's order is by instant time
    name = f"{ts(0, 0)}_{ts(0, 3)}_0.parquet"
    assert listing(storage) == sorted([name, "_version_", "manifest_1"])
    assert storage.read_bytes(f"{H}/_version_") == b"1"  # String.valueOf(1), no newline
    size = storage.size(f"{H}/{name}")
    assert storage.read_bytes(f"{H}/manifest_1").decode() == (
        '{\n  "files" : [ {\n    "fileName" : "' + name + '",\n    "fileLen" : ' + str(size) + "\n  } ]\n}")

    pf = pq.ParquetFile(storage.full_path(f"{H}/{name}"))
    cols = [(c.name, c.max_definition_level and "OPTIONAL" or "REQUIRED", c.physical_type, str(c.logical_type))
            for c in pf.schema]
    assert cols == EXPECTED_PARQUET_COLUMNS
    footer = pf.metadata.metadata
    assert footer == {b"parquet.avro.schema": EXPECTED_AVRO_SCHEMA.encode(), b"writer.model.name": b"avro"}
    assert HISTORY_AVRO_SCHEMA == EXPECTED_AVRO_SCHEMA
    assert pf.metadata.num_row_groups == 1
    assert {pf.metadata.row_group(0).column(i).compression for i in range(6)} == {"GZIP"}
    rows = pf.read().to_pylist()
    assert [r["instantTime"] for r in rows] == [i.instant_time for i in instants]
    assert rows[0] == {"instantTime": ts(0, 0), "completionTime": instants[0].completion_time, "action": "commit",
                       "metadata": instants[0].metadata, "plan": b"plan", "version": 1}


def test_avro_schema_in_footer_is_the_avsc(storage: CountingStorage) -> None:
    parsed = fastavro.parse_schema(json.loads(HISTORY_AVRO_SCHEMA))
    assert isinstance(parsed, dict) and parsed["name"] == "org.apache.hudi.avro.model.HoodieLSMTimelineInstant"
    fields = [(f["name"], f["default"]) for f in json.loads(HISTORY_AVRO_SCHEMA)["fields"]]
    assert fields == [("instantTime", None), ("completionTime", None), ("action", None), ("metadata", None),
                      ("plan", None), ("version", 1)]


def test_second_batch_adds_to_the_manifest(storage: CountingStorage) -> None:
    append_history(storage, H, batch(0))
    append_history(storage, H, batch(1))
    assert storage.read_bytes(f"{H}/_version_") == b"2"
    assert manifest_names(storage) == [f"{ts(0, 0)}_{ts(0, 2)}_0.parquet", f"{ts(1, 0)}_{ts(1, 2)}_0.parquet"]
    assert manifest_names(storage, 1) == [f"{ts(0, 0)}_{ts(0, 2)}_0.parquet"]


def test_codec_follows_the_table_config(storage: CountingStorage) -> None:
    append_history(storage, H, batch(0), codec="snappy")
    (name,) = manifest_names(storage)
    assert pq.ParquetFile(storage.full_path(f"{H}/{name}")).metadata.row_group(0).column(0).compression == "SNAPPY"


# -- reading -----------------------------------------------------------------------------------------------

def test_round_trip_sorted_with_and_without_details(storage: CountingStorage) -> None:
    written = batch(2) + batch(0) + batch(1)
    for b in (2, 0, 1):
        append_history(storage, H, batch(b))
    got = read_history(storage, H)
    assert got == sorted(written, key=lambda i: i.instant_time)
    bare = read_history(storage, H, with_details=False)
    assert [(i.instant_time, i.completion_time, i.action, i.metadata, i.plan) for i in bare] == [
        (i.instant_time, i.completion_time, i.action, None, None) for i in got]
    assert history_completion_times(storage, H) == {i.instant_time: i.completion_time for i in written}


def test_real_commit_metadata_round_trips(storage: CountingStorage, tmp_path: pathlib.Path) -> None:
    root = extract_sample_1x("cow_v9_txns_simple_meta", tmp_path / "sample")
    timeline = root / ".hoodie" / "timeline"
    done = sorted(p for p in timeline.iterdir() if p.is_file() and "_" in p.name.split(".")[0])
    instants = [HistoryInstant(p.name.split("_")[0], p.name.split("_")[1].split(".")[0], p.name.split(".")[1],
                               p.read_bytes() or None, None) for p in done]
    assert instants and all(i.metadata and i.metadata.startswith(b"Obj\x01") for i in instants)
    table = Storage(str(root))
    append_history(table, H, instants)
    assert read_history(table, H) == instants

    from tests.helpers import hudi_rs, samples_1x  # history files do not disturb hudi-rs
    got = hudi_rs(root)
    assert got is not None and got.num_rows == samples_1x()["cow_v9_txns_simple_meta"]["hudi_rs_rows"]


def test_range_reads_only_overlapping_files(storage: CountingStorage) -> None:
    for b in range(4):
        append_history(storage, H, batch(b))
    storage.reads.clear()
    got = read_history(storage, H, start=ts(1, 1), end=ts(2, 0))
    assert [i.instant_time for i in got] == [ts(1, 1), ts(1, 2), ts(2, 0)]  # both bounds inclusive
    assert sorted(storage.data_reads()) == [f"{ts(1, 0)}_{ts(1, 2)}_0.parquet", f"{ts(2, 0)}_{ts(2, 2)}_0.parquet"]
    assert [r for r, rel, _ in storage.reads if not rel.endswith(".parquet")] == ["read_bytes", "read_bytes"]

    storage.reads.clear()
    assert set(history_completion_times(storage, H, start=ts(3, 1))) == {ts(3, 1), ts(3, 2)}
    assert storage.data_reads() == [f"{ts(3, 0)}_{ts(3, 2)}_0.parquet"]

    storage.reads.clear()  # the completion-time lookup's end is exclusive: below the first active instant
    assert set(history_completion_times(storage, H, end=ts(1, 0))) == {ts(0, i) for i in range(3)}
    assert storage.data_reads() == [f"{ts(0, 0)}_{ts(0, 2)}_0.parquet"]

    storage.reads.clear()
    assert read_history(storage, H, start="30000000000000000") == []
    assert storage.data_reads() == []


def test_without_details_a_large_file_is_read_by_ranges_without_the_blobs(storage: CountingStorage) -> None:
    big = batch(0, 5, meta_size=200_000)
    append_history(storage, H, big)
    (name,) = manifest_names(storage)
    size = storage.size(f"{H}/{name}")
    assert size > 4 * TAIL_BYTES
    storage.reads.clear()
    assert history_completion_times(storage, H) == {i.instant_time: i.completion_time for i in big}
    reads = [(kind, n) for kind, rel, n in storage.reads if rel.endswith(".parquet")]
    assert all(kind == "read_range" for kind, _ in reads) and len(reads) <= 3
    assert sum(n or 0 for _, n in reads) < size / 4

    storage.reads.clear()
    assert read_history(storage, H) == big  # with details: one whole read
    assert [(k, rel.endswith(".parquet")) for k, rel, _ in storage.reads][-1] == ("read_bytes", True)


def test_empty_or_absent_history(storage: CountingStorage) -> None:
    assert read_history(storage, H) == [] and history_completion_times(storage, H) == {}
    storage.makedirs(H)
    assert read_history(storage, H) == []


def test_instant_in_two_listed_files_is_kept_once(storage: CountingStorage) -> None:
    append_history(storage, H, batch(0, 3))
    append_history(storage, H, batch(0, 5))  # re-archived with more instants after a crash: another name
    assert len(manifest_names(storage)) == 2
    assert [i.instant_time for i in read_history(storage, H)] == [ts(0, i) for i in range(5)]


def test_missing_completion_time_is_the_instant_time(storage: CountingStorage) -> None:
    table = pa.table({"instantTime": [ts(0, 0)], "completionTime": pa.array([None], pa.string()),
                      "action": ["clean"], "metadata": pa.array([None], pa.binary()),
                      "plan": pa.array([b"p"], pa.binary()), "version": pa.array([1], pa.int32())})
    from pyhudi.timeline.history import HISTORY_ARROW_SCHEMA
    data = encode_history_table(table.cast(HISTORY_ARROW_SCHEMA))
    name = f"{ts(0, 0)}_{ts(0, 0)}_0.parquet"
    storage.write_bytes(f"{H}/{name}", data)
    storage.write_bytes(f"{H}/manifest_1", json.dumps({"files": [{"fileName": name, "fileLen": len(data)}]}).encode())
    storage.write_bytes(f"{H}/_version_", b"1")
    assert history_completion_times(storage, H) == {ts(0, 0): ts(0, 0)}
    assert read_history(storage, H) == [HistoryInstant(ts(0, 0), ts(0, 0), "clean", None, b"p")]


# -- snapshot versions: _version_ and manifests ---------------------------------------------------------------

@pytest.mark.parametrize("content", [None, b"", b"abc", b"2\n", b" 2", b"99999999999"])
def test_missing_or_garbage_version_falls_back_to_highest_manifest(storage: CountingStorage,
                                                                   content: bytes | None) -> None:
    append_history(storage, H, batch(0))
    append_history(storage, H, batch(1))
    if content is None:
        storage.delete(f"{H}/_version_")
    else:
        storage.write_bytes(f"{H}/_version_", content)
    assert [i.instant_time for i in read_history(storage, H)] == [ts(0, i) for i in range(3)] + [
        ts(1, i) for i in range(3)]


def test_version_names_the_snapshot_not_the_newest_manifest(storage: CountingStorage) -> None:
    """A manifest written by a writer that died before `_version_` is not part of the history, and the
    next writer replaces it."""
    append_history(storage, H, batch(0))
    stray = f"{ts(9, 0)}_{ts(9, 0)}_0.parquet"
    storage.write_bytes(f"{H}/manifest_2", json.dumps({"files": [{"fileName": stray, "fileLen": 1}]}).encode())
    assert [i.instant_time for i in read_history(storage, H)] == [ts(0, i) for i in range(3)]
    append_history(storage, H, batch(1))
    assert storage.read_bytes(f"{H}/_version_") == b"2"
    assert stray not in manifest_names(storage, 2)


def test_version_pointing_to_missing_manifest_is_corrupt(storage: CountingStorage) -> None:
    append_history(storage, H, batch(0))
    storage.write_bytes(f"{H}/_version_", b"7")
    with pytest.raises(CorruptFileError, match=r"_version_ names snapshot 7.*manifest_7 does not exist"):
        read_history(storage, H)


def test_negative_version_is_an_empty_history_and_the_writer_refuses(storage: CountingStorage) -> None:
    append_history(storage, H, batch(0))
    storage.write_bytes(f"{H}/_version_", b"-1")
    assert read_history(storage, H) == []  # Hudi: latestSnapshotManifest(-1) is EMPTY
    with pytest.raises(CorruptFileError, match="_version_ holds -1"):
        append_history(storage, H, batch(1))


def test_malformed_manifest_is_corrupt(storage: CountingStorage) -> None:
    append_history(storage, H, batch(0))
    storage.write_bytes(f"{H}/manifest_1", b'{"files": [ {"fileName": ')
    with pytest.raises(CorruptFileError, match="manifest_1: not a history manifest"):
        read_history(storage, H)


def test_manifest_extra_keys_ignored_and_empty_manifest_is_empty(storage: CountingStorage) -> None:
    append_history(storage, H, batch(0))
    doc = json.loads(storage.read_bytes(f"{H}/manifest_1"))
    doc["extra"] = 1
    doc["files"][0]["more"] = "x"
    storage.write_bytes(f"{H}/manifest_1", json.dumps(doc).encode())
    assert len(read_history(storage, H)) == 3
    storage.write_bytes(f"{H}/manifest_1", b"")
    assert read_history(storage, H) == []


# -- files outside the manifest, damaged files ----------------------------------------------------------------

def test_file_not_in_manifest_is_ignored(storage: CountingStorage) -> None:
    append_history(storage, H, batch(0))
    from pyhudi.timeline.history import encode_history_file
    storage.write_bytes(f"{H}/{ts(5, 0)}_{ts(5, 2)}_0.parquet", encode_history_file(batch(5)))
    storage.write_bytes(f"{H}/notes.txt", b"x")
    storage.reads.clear()
    assert [i.instant_time for i in read_history(storage, H)] == [ts(0, i) for i in range(3)]
    assert storage.data_reads() == [f"{ts(0, 0)}_{ts(0, 2)}_0.parquet"]


@pytest.mark.parametrize("meta_size", [8, 200_000])
def test_truncated_listed_file_is_corrupt_naming_it(storage: CountingStorage, meta_size: int) -> None:
    append_history(storage, H, batch(0, 5, meta_size=meta_size))
    (name,) = manifest_names(storage)
    data = storage.read_bytes(f"{H}/{name}")
    storage.write_bytes(f"{H}/{name}", data[: len(data) // 2])
    for read in (lambda: read_history(storage, H), lambda: history_completion_times(storage, H)):
        with pytest.raises(CorruptFileError, match=name):
            read()


def test_listed_file_missing_is_corrupt_naming_it(storage: CountingStorage) -> None:
    append_history(storage, H, batch(0))
    (name,) = manifest_names(storage)
    storage.delete(f"{H}/{name}")
    with pytest.raises(CorruptFileError, match=f"{name}: listed in .*manifest_1 but missing"):
        read_history(storage, H)


def test_file_cleaned_by_a_concurrent_writer_rereads_the_new_snapshot(tmp_path: pathlib.Path) -> None:
    class Racing(CountingStorage):
        victim = "-"

        def read_bytes(self, rel: str) -> bytes:
            if rel.endswith(self.victim):  # a writer commits snapshot 3 and cleans this file just now
                self.write_atomic(f"{H}/_version_", b"3")
                raise FileNotFoundError(rel)
            return super().read_bytes(rel)

    storage = Racing(str(tmp_path))
    append_history(storage, H, batch(0))
    append_history(storage, H, batch(1))
    first, second = manifest_names(storage)
    storage.write_atomic(f"{H}/manifest_3", json.dumps(
        {"files": [{"fileName": second, "fileLen": storage.size(f"{H}/{second}")}]}).encode())
    storage.write_atomic(f"{H}/_version_", b"1")
    storage.victim = first
    assert read_history(storage, H) == batch(1)


# -- compaction and cleaning --------------------------------------------------------------------------------

def test_ten_files_of_level_0_are_merged_into_level_1(storage: CountingStorage) -> None:
    for b in range(9):
        append_history(storage, H, batch(b))
    assert not any(n.endswith("_1.parquet") for n in listing(storage))
    append_history(storage, H, batch(9))
    merged = f"{ts(0, 0)}_{ts(9, 2)}_1.parquet"
    assert storage.read_bytes(f"{H}/_version_") == b"11"  # manifest_10 (10th batch) + manifest_11 (merge)
    assert manifest_names(storage) == [merged]
    assert len(manifest_names(storage, 10)) == 10
    rows = pq.read_table(storage.full_path(f"{H}/{merged}"))
    assert rows.column("instantTime").to_pylist() == [ts(b, i) for b in range(10) for i in range(3)]
    # cleaning kept 3 + 1 (one merge) manifests; their files (the merged inputs) stay for older readers
    assert [n for n in listing(storage) if n.startswith("manifest_")] == [f"manifest_{v}" for v in (10, 11, 8, 9)]
    assert sum(n.endswith("_0.parquet") for n in listing(storage)) == 10
    assert read_history(storage, H) == [i for b in range(10) for i in batch(b)]

    append_history(storage, H, batch(10))
    append_history(storage, H, batch(11))  # manifest_10, the last one listing the inputs, is cleaned now
    assert [n for n in listing(storage) if n.startswith("manifest_")] == ["manifest_11", "manifest_12", "manifest_13"]
    assert [n for n in listing(storage) if n.endswith(".parquet")] == sorted(
        [merged, f"{ts(10, 0)}_{ts(10, 2)}_0.parquet", f"{ts(11, 0)}_{ts(11, 2)}_0.parquet"])
    assert len(read_history(storage, H)) == 36


def test_merges_cascade_to_the_next_level(storage: CountingStorage) -> None:
    for b in range(4):
        append_history(storage, H, batch(b), batch_size=2)
    assert manifest_names(storage) == [f"{ts(0, 0)}_{ts(3, 2)}_2.parquet"]
    assert read_history(storage, H) == [i for b in range(4) for i in batch(b)]
    files = [n for n in listing(storage) if n.endswith(".parquet")]
    assert f"{ts(0, 0)}_{ts(3, 2)}_2.parquet" in files


def test_compaction_inputs_stop_past_1000_mib() -> None:
    """J:LSMTimelineWriter.getCandidateFiles (1.0.x/1.1.x): no file joins once the chosen ones exceed
    1,000 MiB, and fewer than two inputs merge nothing (a huge oldest file blocks its level)."""
    from pyhudi.timeline.history import ManifestEntry
    from pyhudi.timeline.history_writer import COMPACTION_MAX_BYTES, _candidates

    mib = 1024 * 1024
    files = [ManifestEntry(f"f{i}", s) for i, s in enumerate([600 * mib, 600 * mib] + [1] * 10)]
    assert [f.name for f in _candidates(files, 10)] == ["f0", "f1"]
    assert [f.name for f in _candidates([ManifestEntry("big", COMPACTION_MAX_BYTES + 1)] + files, 10)] == ["big"]
    assert len(_candidates([ManifestEntry(f"s{i}", 10) for i in range(12)], 10)) == 10


def test_compaction_without_append(storage: CountingStorage) -> None:
    for b in range(10):
        append_history(storage, H, batch(b), compact=False)
    assert len(manifest_names(storage)) == 10 and len(listing(storage)) == 10 + 10 + 1
    compact_and_clean(storage, H)
    assert manifest_names(storage) == [f"{ts(0, 0)}_{ts(9, 2)}_1.parquet"]


# -- crash safety and re-runs ---------------------------------------------------------------------------------

@pytest.fixture
def raise_at(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    def arm(point: str) -> None:
        faults.reset()
        monkeypatch.setenv(faults.RAISE_ENV, point)
    yield arm
    monkeypatch.delenv(faults.RAISE_ENV, raising=False)
    faults.reset()


@pytest.mark.parametrize("point", ["history.after_data_file", "history.after_manifest"])
def test_crash_before_version_leaves_the_old_snapshot_and_a_rerun_completes(
        storage: CountingStorage, raise_at: object, monkeypatch: pytest.MonkeyPatch, point: str) -> None:
    append_history(storage, H, batch(0))
    raise_at(point)  # type: ignore[operator]
    with pytest.raises(faults.InjectedFault):
        append_history(storage, H, batch(1))
    monkeypatch.delenv(faults.RAISE_ENV)
    assert storage.read_bytes(f"{H}/_version_") == b"1"
    assert [i.instant_time for i in read_history(storage, H)] == [ts(0, i) for i in range(3)]
    append_history(storage, H, batch(1))
    assert storage.read_bytes(f"{H}/_version_") == b"2"
    assert len(read_history(storage, H)) == 6


def test_committed_batch_is_not_written_again(storage: CountingStorage) -> None:
    append_history(storage, H, batch(0))
    before = listing(storage)
    append_history(storage, H, batch(0))
    assert listing(storage) == before and storage.read_bytes(f"{H}/_version_") == b"1"


@pytest.mark.parametrize("bad, message", [
    ([], "at least one"),
    ([HistoryInstant("2026-01-01", "20260101000000001", "commit")], "not all digits"),
    ([HistoryInstant("20260101000000000", "", "commit")], "completion time"),
    ([HistoryInstant("20260101000000000", "20260101000000001", "commit")] * 2, "twice"),
])
def test_invalid_batches_are_refused(storage: CountingStorage, bad: list[HistoryInstant], message: str) -> None:
    with pytest.raises(InvalidHistoryInstantError, match=message):
        append_history(storage, H, bad)
    assert listing(storage) == []


# -- on an object store ----------------------------------------------------------------------------------------
def test_on_s3_round_trip_ranged_read_and_truncation(s3: S3Bucket) -> None:
    storage = Storage(s3.uri)
    for b in range(3):
        append_history(storage, H, batch(b, 4, meta_size=100_000), batch_size=2)
    assert read_history(storage, H) == [i for b in range(3) for i in batch(b, 4, meta_size=100_000)]
    assert len(history_completion_times(storage, H)) == 12  # ranged reads: footer + time columns
    victim = manifest_names(storage)[0]
    data = storage.read_bytes(f"{H}/{victim}")
    storage.write_bytes(f"{H}/{victim}", data[: len(data) // 3])
    for read in (lambda: read_history(storage, H), lambda: history_completion_times(storage, H)):
        with pytest.raises(CorruptFileError, match=victim):
            read()
