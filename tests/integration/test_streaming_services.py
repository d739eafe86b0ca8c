"""Table services while streaming: async clustering (COW) and async compaction (MOR) run in the background of a
streaming query over a landing directory; a failing service is logged and retried while ingestion goes on;
the cleaner removes what the services replaced. (SIGKILL/restart with services on: test_streaming.py.)"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

import pyhudi
from pyhudi import faults
from pyhudi.services import background
from tests.helpers import hudi_rs, rows_by_key
from tests.integration.test_cleaner import COMMITS, on_disk, read_avro, written

pytestmark = pytest.mark.spark
SCHEMA = "id long, name string, part string, ts long"
COLS = ["name", "part", "ts"]
TARGET = 64 * 1024  # clustering target file size
CLUSTER_SMALL = 36 * 1024  # base files below this are clustering candidates
ROWS = 1600  # per landed file: two base files of about 28 KB, two of them cluster into one of about 46 KB


def _opts(**extra: str) -> dict[str, str]:
    return {"hoodie.table.name": "svc", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.index.bloom.num_entries": "1000", "hoodie.cleaner.commits.retained": "1",
            "hoodie.table.services.async.retry.interval.ms": "0", **extra}


class Landing:
    """A landing directory receiving small JSON files, and the model of the table they should produce."""

    def __init__(self, root: str) -> None:
        self.dir = os.path.join(root, "landing")
        os.makedirs(self.dir)
        self.files = 0
        self.model: dict[int, tuple] = {}

    def drop(self, ids: range, ts: int) -> None:
        tmp = os.path.join(os.path.dirname(self.dir), f".tmp-{self.files}.json")
        with open(tmp, "w") as fh:
            for i in ids:
                rec = {"id": i, "name": f"n{i}-{ts}-{'x' * 40}", "part": f"p{i % 2}", "ts": ts}
                fh.write(json.dumps(rec) + "\n")
                self.model[i] = (rec["name"], rec["part"], ts)
        os.replace(tmp, os.path.join(self.dir, f"f-{self.files:04d}.json"))  # appears whole
        self.files += 1


def _start(spark, landing: Landing, path: str, checkpoint: str, opts: dict[str, str]):
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(landing.dir)
    return pyhudi.write_stream(df, path, opts, checkpoint)


def _check_rows(spark, path: str, model: dict[int, tuple]) -> None:
    assert rows_by_key(pyhudi.read(spark, path).toArrow(), "id", COLS) == model
    assert rows_by_key(hudi_rs(path), "id", COLS) == model


def _timeline(path: str) -> list[str]:
    return sorted(os.listdir(os.path.join(path, ".hoodie")))


def _check_cleaned(path: str) -> set[str]:
    """The newest clean, planned after the last background service completed, left none of the files that
    Hudi's KEEP_LATEST_COMMITS rule (with the earliest commit it recorded) lets go. Returns those files."""
    clean = max(n.split(".")[0] for n in _timeline(path) if n.endswith(".clean"))
    earliest = read_avro(os.path.join(path, ".hoodie", f"{clean}.clean"))["earliestCommitToRetain"]  # type: ignore[arg-type]
    tl = written(path)
    stale = {f for f in tl.all_files() - tl.kept(COMMITS, earliest) if tl.written_by[f] < clean}
    assert not stale & on_disk(path), f"left by the cleaner: {sorted(stale & on_disk(path))}"
    assert on_disk(path) <= tl.all_files(), "no file of a failed attempt is left"
    return stale


def test_cow_stream_clusters_tiny_files_in_the_background(spark, tmp_path):
    """Auto-sizing off, so every micro-batch writes tiny files; async clustering every 2 commits rewrites them
    into files near the target while the stream keeps committing; the cleaner then deletes the replaced files."""
    path, checkpoint = str(tmp_path / "t"), str(tmp_path / "ckpt")
    landing = Landing(str(tmp_path))
    opts = _opts(**{"hoodie.datasource.write.operation": "insert", "hoodie.parquet.small.file.limit": "0",
                    "hoodie.clustering.async.enabled": "true", "hoodie.clustering.async.max.commits": "2",
                    "hoodie.clustering.plan.strategy.small.file.limit": str(CLUSTER_SMALL),
                    "hoodie.clustering.plan.strategy.target.file.max.bytes": str(TARGET),
                    "hoodie.clustering.plan.strategy.max.bytes.per.group": str(4 * TARGET)})
    query = _start(spark, landing, path, checkpoint, opts)
    try:
        for _ in range(2):  # the clustering planned after commit 2 (and 4) runs while commit 3 (and 5, 6) go on
            for _ in range(3):
                landing.drop(range(landing.files * ROWS, (landing.files + 1) * ROWS), ts=landing.files)
            query.processAllAvailable()
            assert pyhudi.wait_for_table_services(path, timeout=300) == []
    finally:
        query.stop()
    assert pyhudi.wait_for_table_services(path, timeout=300) == []
    assert query.exception() is None

    tl = written(path)
    batches = [ts for ts, a in tl.writes if a == "commit"]
    clusterings = [ts for ts, a in tl.writes if a == "replacecommit"]
    assert len(batches) == 6, "one commit per micro-batch"
    assert clusterings, "background clustering completed"
    assert not [n for n in _timeline(path) if ".replacecommit." in n and n.split(".")[0] not in clusterings]
    batch_files = [f for f, ts in tl.written_by.items() if ts in batches]
    assert max(os.path.getsize(os.path.join(path, f)) for f in batch_files if os.path.exists(os.path.join(path, f))) \
        < CLUSTER_SMALL, "micro-batches write tiny files"
    for c in clusterings:
        meta = json.loads(Path(path, ".hoodie", f"{c}.replacecommit").read_text())
        sizes = [s["fileSizeInBytes"] for st in meta["partitionToWriteStats"].values() for s in st]
        assert all(CLUSTER_SMALL <= s <= TARGET for s in sizes), f"clustering {c} wrote {sizes}"
    stale = _check_cleaned(path)
    assert any(tl.written_by[f] in batches for f in stale), "files replaced by clustering were cleaned"
    _check_rows(spark, path, landing.model)


def test_mor_stream_compacts_in_the_background_and_retries_a_failed_compaction(spark, tmp_path, monkeypatch,
                                                                               caplog):
    """Async compaction is on by default for a streaming MOR write (as in Hudi). Its first execution fails
    (injected before its commit, after writing files): logged with the instant, the stream keeps committing,
    the next micro-batch's trigger re-executes the pending plan, and the table reads the same everywhere."""
    path, checkpoint = str(tmp_path / "t"), str(tmp_path / "ckpt")
    landing = Landing(str(tmp_path))
    opts = _opts(**{"hoodie.datasource.write.table.type": "MERGE_ON_READ",
                    "hoodie.datasource.write.operation": "upsert", "hoodie.compact.inline.max.delta.commits": "2"})
    faults.reset()
    monkeypatch.setenv(faults.RAISE_ENV, "compaction.before_commit@1")
    background.ATTEMPTS.forget()
    query = _start(spark, landing, path, checkpoint, opts)
    try:
        landing.drop(range(0, 600), ts=0)
        landing.drop(range(0, 600, 3), ts=1)  # updates: log files
        with caplog.at_level(logging.WARNING, logger="pyhudi.services.background"):
            query.processAllAvailable()
            errors = pyhudi.wait_for_table_services(path, timeout=300)
        assert [type(e) for e in errors] == [faults.InjectedFault]
        (failed,) = [n.split(".")[0] for n in _timeline(path) if n.endswith(".compaction.inflight")]
        assert f"background compaction {failed} of" in caplog.text and "attempt 1 of 4" in caplog.text
        assert "InjectedFault" in caplog.text

        landing.drop(range(1, 600, 4), ts=2)  # the stream goes on; its commit retries the compaction
        query.processAllAvailable()
        assert pyhudi.wait_for_table_services(path, timeout=300) == []
        assert os.path.exists(os.path.join(path, ".hoodie", f"{failed}.commit")), "the retry completed it"
        landing.drop(range(2, 600, 5), ts=3)
        landing.drop(range(600, 700), ts=4)
        query.processAllAvailable()
    finally:
        query.stop()
    assert pyhudi.wait_for_table_services(path, timeout=300) == []
    assert query.exception() is None

    tl = written(path)
    assert [a for _, a in tl.writes].count("deltacommit") == 5, "every micro-batch committed once"
    assert [a for _, a in tl.writes].count("commit") >= 2, "compactions completed"
    assert not [n for n in _timeline(path) if ".compaction." in n and not os.path.exists(
        os.path.join(path, ".hoodie", n.split(".")[0] + ".commit"))], "no compaction left pending"
    assert _check_cleaned(path), "the cleaner removed slices the compactions superseded"
    _check_rows(spark, path, landing.model)
