"""Average record size estimate, Hudi 0.15 rules (AverageRecordSizeUtils, reference §10.7):
newest completed instant first; commit/replacecommit count whole, deltacommit only base-file stats;
the first with bytes > threshold x small-file limit and records > 0 sets ceil(bytes / records)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from pyhudi.model.commit_metadata import CommitMetadata
from pyhudi.model.write_stat import WriteStat
from pyhudi.storage import Storage
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.writer.config import SizingConfig
from pyhudi.writer.record_size import average_record_size
from tests.unit._samples import SampleTables

# small limit so that thresholds are easy to reason about: threshold = 1.0 x 1000 = 1000 bytes. Hudi's rule
# (pyhudi's small-commit fallback off); PYHUDI is the same with it on (pyhudi's default).
SIZING = SizingConfig(small_file_limit=1000, record_size_estimate=1024, estimation_threshold=1.0,
                      estimate_auto=False)
PYHUDI = SizingConfig(small_file_limit=1000, record_size_estimate=1024, estimation_threshold=1.0)


def T(n: int) -> str:
    return f"2025010100000{n:04d}"


class TimelineDir:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.hoodie = root / ".hoodie"
        self.hoodie.mkdir(parents=True, exist_ok=True)

    def write(self, ts: str, action: str, stats: list[tuple[str, int, int]] | None = None,
              state: str = "completed", raw: bytes | None = None) -> None:
        """stats: (path, totalWriteBytes, numWrites)."""
        meta = CommitMetadata(operation_type="UPSERT")
        for path, nbytes, nrec in stats or []:
            delta = ".log." in path
            meta.add(WriteStat(file_id="f-0", path=path, partition_path="p", num_writes=nrec,
                               total_write_bytes=nbytes, file_size_in_bytes=nbytes,
                               log_version=1 if delta else None, log_offset=0 if delta else None,
                               log_files=[path.split("/")[-1]] if delta else None))
        completed = {"compaction": "commit"}.get(action, action)
        inflight = f"{ts}.inflight" if action == "commit" else f"{ts}.{action}.inflight"
        (self.hoodie / f"{ts}.{action}.requested").write_bytes(b"")
        if state in ("inflight", "completed"):
            (self.hoodie / inflight).write_bytes(b"{}")
        if state == "completed":
            (self.hoodie / f"{ts}.{completed}").write_bytes(raw if raw is not None else meta.to_bytes())

    def estimate(self, sizing: SizingConfig = SIZING) -> int:
        return average_record_size(ActiveTimeline.load(Storage(str(self.root))), sizing)


BASE = "p/f-0_0-1-1_20250101000000001.parquet"
LOG = "p/.f-0_20250101000000001.log.1_0-1-1"


def test_empty_timeline_gives_configured_estimate(tmp_path):
    tl = TimelineDir(tmp_path)
    assert tl.estimate() == 1024
    assert tl.estimate(SizingConfig(small_file_limit=1000, record_size_estimate=333)) == 333


def test_below_or_at_threshold_is_ignored(tmp_path):
    tl = TimelineDir(tmp_path)
    tl.write(T(1), "commit", [(BASE, 1000, 10)])  # exactly at the threshold: not > threshold
    assert tl.estimate() == 1024


def test_above_threshold_sets_ceil(tmp_path):
    tl = TimelineDir(tmp_path)
    tl.write(T(1), "commit", [(BASE, 1001, 10)])  # 100.1 -> 101
    assert tl.estimate() == 101


def test_ceil_not_floor_or_round(tmp_path):
    tl = TimelineDir(tmp_path)
    tl.write(T(1), "commit", [(BASE, 1999, 1000), (BASE, 2, 1)])  # 2001 / 1001 = 1.999 -> 2
    assert tl.estimate() == 2
    tl.write(T(2), "commit", [(BASE, 3001, 1000)])  # 3.001 -> 4
    assert tl.estimate() == 4


def test_sums_across_partitions_and_stats(tmp_path):
    tl = TimelineDir(tmp_path)
    meta = CommitMetadata(operation_type="INSERT")
    meta.add(WriteStat("a-0", "x/a.parquet", "x", num_writes=7, total_write_bytes=700))
    meta.add(WriteStat("b-0", "y/b.parquet", "y", num_writes=3, total_write_bytes=901))
    tl.write(T(1), "commit", raw=meta.to_bytes())
    assert tl.estimate() == math.ceil(1601 / 10)


def test_newest_qualifying_instant_wins(tmp_path):
    tl = TimelineDir(tmp_path)
    tl.write(T(1), "commit", [(BASE, 50_000, 100)])   # 500
    tl.write(T(2), "commit", [(BASE, 20_000, 100)])   # 200  <- newest qualifying
    tl.write(T(3), "commit", [(BASE, 900, 1)])        # newest, but below threshold
    assert tl.estimate() == 200


def test_records_zero_is_skipped(tmp_path):
    tl = TimelineDir(tmp_path)
    tl.write(T(1), "commit", [(BASE, 5000, 10)])
    tl.write(T(2), "commit", [(BASE, 5000, 0)])
    assert tl.estimate() == 500


def test_replacecommit_counts_whole(tmp_path):
    tl = TimelineDir(tmp_path)
    tl.write(T(1), "commit", [(BASE, 50_000, 100)])
    tl.write(T(2), "replacecommit", [(BASE, 3000, 1000)])
    assert tl.estimate() == 3


def test_deltacommit_counts_only_base_files(tmp_path):
    tl = TimelineDir(tmp_path)
    tl.write(T(1), "deltacommit", [(BASE, 2000, 10), (LOG, 5000, 1)])
    assert tl.estimate() == 200  # not ceil(7000 / 11)


def test_deltacommit_with_only_logs_falls_through(tmp_path):
    tl = TimelineDir(tmp_path)
    tl.write(T(1), "deltacommit", [(BASE, 3000, 10)])
    tl.write(T(2), "deltacommit", [(LOG, 1_000_000, 1000)])
    assert tl.estimate() == 300


def test_deltacommit_logs_do_not_push_base_bytes_over_threshold(tmp_path):
    tl = TimelineDir(tmp_path)
    tl.write(T(1), "deltacommit", [(BASE, 600, 6), (LOG, 600, 6)])  # base bytes 600 <= 1000
    assert tl.estimate() == 1024


def test_compaction_commit_counts(tmp_path):
    tl = TimelineDir(tmp_path)
    tl.write(T(1), "deltacommit", [(LOG, 9999, 9)])
    tl.write(T(2), "compaction", [(BASE, 4000, 8)])  # completes as .commit
    assert (tl.hoodie / f"{T(2)}.commit").exists()
    assert tl.estimate() == 500


def test_pending_and_other_actions_ignored(tmp_path):
    tl = TimelineDir(tmp_path)
    tl.write(T(1), "commit", [(BASE, 10_000, 100)])
    tl.write(T(2), "commit", state="inflight")
    tl.write(T(3), "deltacommit", state="requested")
    (tl.hoodie / f"{T(4)}.clean").write_bytes(b"Obj\x01not json")
    (tl.hoodie / f"{T(5)}.rollback").write_bytes(b"Obj\x01not json")
    assert tl.estimate() == 100


def test_corrupt_commit_is_skipped(tmp_path):
    tl = TimelineDir(tmp_path)
    tl.write(T(1), "commit", [(BASE, 10_000, 100)])
    tl.write(T(2), "commit", raw=b"{ this is not json")
    tl.write(T(3), "commit", raw=b"")  # empty completed file
    assert tl.estimate() == 100


@pytest.mark.parametrize("ratio, limit, nbytes, expected", [
    (0.5, 1000, 501, 6),      # threshold 500
    (0.5, 1000, 500, 1024),
    (2.0, 1000, 2000, 1024),  # threshold 2000
    (2.0, 1000, 2001, 21),
    (1.0, 0, 1, 1),           # small files off: threshold 0, any bytes count
    (0.0, 10**9, 1, 1),
])
def test_threshold_is_ratio_times_small_file_limit(tmp_path, ratio, limit, nbytes, expected):
    tl = TimelineDir(tmp_path)
    tl.write(T(1), "commit", [(BASE, nbytes, 100)])
    sizing = SizingConfig(small_file_limit=limit, estimation_threshold=ratio, estimate_auto=False)
    assert tl.estimate(sizing) == expected


def test_default_threshold_keeps_1024_for_small_commits(tmp_path):
    """With the defaults only a commit over 100 MB updates the estimate (Hudi #2630)."""
    tl = TimelineDir(tmp_path)
    tl.write(T(1), "commit", [(BASE, 104857600, 1000)])
    assert tl.estimate(SizingConfig()) == 1024
    tl.write(T(2), "commit", [(BASE, 104857601, 1000)])
    assert tl.estimate(SizingConfig()) == 104858


# ----------------------------------------------------------------------------- pyhudi's small-commit fallback
def test_small_commits_together_estimate_where_hudi_falls_back(tmp_path):
    """No commit passes the threshold: Hudi assumes 1,024; pyhudi sums the newest commits, newest first
    until their bytes pass the threshold, and takes that if smaller."""
    tl = TimelineDir(tmp_path)
    tl.write(T(1), "commit", [(BASE, 900, 3)])  # 300 a record, not reached: the two newer pass first
    tl.write(T(2), "commit", [(BASE, 600, 6)])
    tl.write(T(3), "deltacommit", [(BASE, 500, 5), (LOG, 9000, 90)])  # base files only
    assert tl.estimate(SIZING) == 1024
    assert tl.estimate(PYHUDI) == 100  # (500 + 600) / (5 + 6)
    tl.write(T(4), "commit", [(BASE, 300, 1)])
    assert tl.estimate(PYHUDI) == math.ceil((300 + 500 + 600) / 12)


def test_small_commits_never_raise_the_estimate_or_override_a_representative_commit(tmp_path):
    tl = TimelineDir(tmp_path)
    tl.write(T(1), "commit", [(BASE, 990, 0)])  # no records: nothing to estimate from
    assert tl.estimate(PYHUDI) == 1024
    tl.write(T(2), "commit", [(BASE, 999, 1)])  # ~2 KB a record together (or a footer-heavy small commit)
    assert tl.estimate(PYHUDI) == 1024 and tl.estimate(PYHUDI.__class__(small_file_limit=1000,
                                                                          record_size_estimate=400)) == 400
    tl.write(T(3), "commit", [(BASE, 5000, 10)])  # passes: Hudi's answer, whatever smaller commits say
    tl.write(T(4), "commit", [(BASE, 10, 10)])
    assert tl.estimate(PYHUDI) == tl.estimate(SIZING) == 500


def test_setting_the_estimate_key_keeps_hudis_rule() -> None:
    from pyhudi.config import keys as K
    from pyhudi.config.registry import Options

    assert SizingConfig.from_options(Options.parse({})).estimate_auto
    for opts in ({K.RECORD_SIZE_ESTIMATE.key: "200"}, {K.RECORD_SIZE_ESTIMATE_AUTO.key: "false"}):
        assert not SizingConfig.from_options(Options.parse(opts)).estimate_auto


# ----------------------------------------------------------------------------- samples
@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    return SampleTables(tmp_path_factory.mktemp("rs_samples"))


def _sample_estimate(samples, name, sizing):
    storage = Storage(str(samples.root(name)))
    return average_record_size(ActiveTimeline.load(storage), sizing)


@pytest.mark.parametrize("name", ["cow__v6_nonpartitioned", "trips_mor_avro__v6_trips_8i1u",
                                  "cow__v6_simplekeygen_nonhivestyle_overwritetable"])
def test_samples_keep_default_with_default_sizing(samples, name):
    assert _sample_estimate(samples, name, SizingConfig()) == 1024


def _stats(path: Path) -> list[dict]:
    doc = json.loads(path.read_bytes())
    return [s for stats in doc["partitionToWriteStats"].values() for s in stats]


def test_sample_cow_newest_commit(samples):
    name = "cow__v6_nonpartitioned"
    stats = _stats(samples.hoodie(name) / "20240418173551906.commit")
    expected = math.ceil(sum(s["totalWriteBytes"] for s in stats) / sum(s["numWrites"] for s in stats))
    assert expected == math.ceil(441520 / 4)
    assert _sample_estimate(samples, name, SizingConfig(small_file_limit=1000)) == expected


def test_sample_replacecommit_counts(samples):
    name = "cow__v6_simplekeygen_nonhivestyle_overwritetable"
    stats = _stats(samples.hoodie(name) / "20240707001303088.replacecommit")
    expected = math.ceil(sum(s["totalWriteBytes"] for s in stats) / sum(s["numWrites"] for s in stats))
    assert _sample_estimate(samples, name, SizingConfig(small_file_limit=1000)) == expected


def test_sample_mor_log_only_deltacommit_skipped(samples):
    """The newest trips deltacommit wrote only a log block; the estimate comes from the first deltacommit's
    three base files (8 records)."""
    name = "trips_mor_avro__v6_trips_8i1u"
    assert all(".log." in s["path"] for s in _stats(samples.hoodie(name) / "20250331030645735.deltacommit"))
    stats = _stats(samples.hoodie(name) / "20250331030642808.deltacommit")
    assert all(s["path"].endswith(".parquet") for s in stats)
    expected = math.ceil(sum(s["totalWriteBytes"] for s in stats) / sum(s["numWrites"] for s in stats))
    assert sum(s["numWrites"] for s in stats) == 8
    assert _sample_estimate(samples, name, SizingConfig(small_file_limit=1000)) == expected


def test_sample_mor_mixed_deltacommit_uses_base_stats_only(samples):
    name = "mor_parquet__v6_simplekeygen_nonhivestyle"
    stats = _stats(samples.hoodie(name) / "20250121000557095.deltacommit")
    base = [s for s in stats if s["path"].endswith(".parquet")]
    assert base and len(base) < len(stats)  # one new base file and one log write
    expected = math.ceil(sum(s["totalWriteBytes"] for s in base) / sum(s["numWrites"] for s in base))
    assert _sample_estimate(samples, name, SizingConfig(small_file_limit=1000)) == expected


# ----------------------------------------------------------------------------- a first write, end to end
def _first_write(path: Path, rows: int, auto: bool) -> list[int]:
    import pyarrow as pa

    import pyhudi

    table = pa.table({"k": [f"key-{i:07d}" for i in range(rows)], "ts": [1] * rows,
                      "v": [float(i) * 1.5 for i in range(rows)], "s": [f"text {i % 97} {i}" for i in range(rows)]})
    pyhudi.write(table, str(path), {
        "hoodie.table.name": "fw", "hoodie.datasource.write.recordkey.field": "k",
        "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.operation": "insert",
        "hoodie.parquet.max.file.size": str(256 * 1024), "hoodie.parquet.small.file.limit": str(200 * 1024),
        "hoodie.pyhudi.record.size.estimate.auto": str(auto).lower()})
    return sorted(f.stat().st_size for f in path.glob("*.parquet"))


def test_a_first_write_is_planned_from_a_sample_of_its_records(tmp_path, monkeypatch):
    """Hudi's 1,024 B a record splits 30,000 ~40 B records into 256-record files of ~12 KB; the sample
    plans files near the 256 KB max, all but the last above the small-file limit. A write whose every
    partition fits one file at 1,024 B takes no sample (on Spark it would be a job)."""
    from pyhudi.writer import local_write

    hudi = _first_write(tmp_path / "hudi", 30_000, auto=False)
    assert len(hudi) >= 100 and max(hudi) < 200 * 1024, hudi
    sizes = _first_write(tmp_path / "auto", 30_000, auto=True)
    assert len(sizes) <= 8 and all(200 * 1024 <= s <= 256 * 1024 * 1.05 for s in sizes[1:]), sizes
    calls = []
    real = local_write.sampled_record_size
    monkeypatch.setattr(local_write, "sampled_record_size", lambda *a: calls.append(1) or real(*a))
    _first_write(tmp_path / "small", 200, auto=True)
    assert not calls
    _first_write(tmp_path / "large", 1_000, auto=True)
    assert calls == [1]
