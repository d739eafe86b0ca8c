"""Structured Streaming sink: one commit per micro-batch, replayed batches skipped (exactly once)."""

from __future__ import annotations

import json
import os
import re

import pytest

import pyhudi
from pyhudi.engine.spark.streaming import BATCH_ID_KEY, QUERY_ID_KEY, SINK_CHECKPOINT_KEY
from pyhudi.errors import InvalidConfigError
from tests.helpers import hudi_rs, rows_by_key

pytestmark = pytest.mark.spark
SCHEMA = "id long, name string, part string, ts long"


def _opts() -> dict[str, str]:
    # insert keeps duplicates (hoodie.merge.allow.duplicate.on.inserts=true): a replayed batch would show.
    return {"hoodie.table.name": "stream", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.operation": "insert"}


def _land(landing: str, n: int, rows: int) -> dict[int, tuple]:
    os.makedirs(landing, exist_ok=True)
    expected = {}
    for f in range(n):
        with open(os.path.join(landing, f"part-{f:04d}.json"), "w") as fh:
            for i in range(rows):
                rid = f * rows + i
                rec = {"id": rid, "name": f"n{rid}", "part": f"p{rid % 2}", "ts": f}
                fh.write(json.dumps(rec) + "\n")
                expected[rid] = (rec["name"], rec["part"], rec["ts"])
    return expected


def _stream(spark, landing: str, path: str, checkpoint: str):
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(landing)
    q = pyhudi.write_stream(df, path, _opts(), checkpoint, trigger={"availableNow": True})
    q.awaitTermination()
    assert q.exception() is None


def _commits(path: str) -> list[dict]:
    hoodie = os.path.join(path, ".hoodie")
    out = []
    for name in sorted(os.listdir(hoodie)):
        if name.endswith(".commit"):
            with open(os.path.join(hoodie, name)) as fh:
                out.append(json.load(fh))
    return out


def _check(spark, path: str, expected: dict) -> None:
    cols = ["name", "part", "ts"]
    assert rows_by_key(pyhudi.read(spark, path).toArrow(), "id", cols) == expected
    assert rows_by_key(hudi_rs(path), "id", cols) == expected


def test_each_micro_batch_is_one_commit_and_replays_are_skipped(spark, tmp_path):
    landing, path, checkpoint = str(tmp_path / "landing"), str(tmp_path / "t"), str(tmp_path / "ckpt")
    expected = _land(landing, 3, 40)
    _stream(spark, landing, path, checkpoint)
    commits = _commits(path)
    assert len(commits) == 3, "one commit per micro-batch (one file each)"
    with open(os.path.join(checkpoint, "metadata")) as fh:
        query_id = json.loads(fh.readline())["id"]
    for batch_id, meta in enumerate(commits):
        extra = meta["extraMetadata"]
        assert json.loads(extra[SINK_CHECKPOINT_KEY]) == {query_id: str(batch_id)}
        assert extra[QUERY_ID_KEY] == query_id and extra[BATCH_ID_KEY] == str(batch_id)
    _check(spark, path, expected)

    # A crash after the commit but before Spark recorded the batch: Spark replays it on restart.
    for name in ("2", ".2.crc"):  # as if Spark never wrote its commit record (nor its checksum)
        os.remove(os.path.join(checkpoint, "commits", name))
    _stream(spark, landing, path, checkpoint)
    assert len(_commits(path)) == 3, "the replayed batch 2 is recognised and skipped"
    _check(spark, path, expected)

    # New files after the restart are picked up where the query left off.
    more = _land(str(tmp_path / "more"), 5, 40)
    for f in (3, 4):
        os.replace(os.path.join(tmp_path, "more", f"part-{f:04d}.json"), os.path.join(landing, f"part-{f:04d}.json"))
    expected.update({k: v for k, v in more.items() if k >= 3 * 40})
    _stream(spark, landing, path, checkpoint)
    assert len(_commits(path)) == 5
    _check(spark, path, expected)


def test_write_stream_refuses_bad_arguments(spark, tmp_path):
    with pytest.raises(InvalidConfigError, match="streaming DataFrame"):
        pyhudi.write_stream(spark.range(3), str(tmp_path / "t"), _opts(), str(tmp_path / "c"))
    df = spark.readStream.schema(SCHEMA).json(str(tmp_path))
    with pytest.raises(InvalidConfigError, match="trigger"):
        pyhudi.write_stream(df, str(tmp_path / "t"), _opts(), str(tmp_path / "c"), trigger={"every": "1s"})


# Per mode: the runs of the streaming job, each (files landed before it starts, kill point or None).
KILL_RUNS = {
    # kills right after a commit (before Spark records the batch), mid file, before the commit file
    "plain": [(6, "write.after_commit@2"), (0, "write.mid_file@1"), (0, "write.before_commit@2"), (0, None)],
    # MOR, async compaction + clustering: kills inside the background services (a pending plan must be
    # resumed by the next start; the kill also hits the micro-batch running meanwhile), then in an executor of
    # a clustering
    "services": [(3, "compaction.before_commit@1"), (2, "clustering.mid_execute@1"), (1, None)],
}


@pytest.mark.parametrize("mode", [pytest.param(m, marks=pytest.mark.extended) if m == "services" else m
                                  for m in sorted(KILL_RUNS)])
def test_killed_and_restarted_stream_loses_and_duplicates_nothing(spark, tmp_path, mode):
    """SIGKILL the streaming job at several points, restart it each time (landing more files in between),
    then let it finish: every micro-batch is committed exactly once and both readers return the input; with
    table services on, whatever plan a kill left pending is completed by a later run."""
    import subprocess
    import sys

    from tests.integration.test_crash import kill_session, wait_session_gone

    landing, path, checkpoint = str(tmp_path / "landing"), str(tmp_path / "t"), str(tmp_path / "ckpt")
    runs = KILL_RUNS[mode]
    total = sum(n for n, _ in runs)
    files = _land(str(tmp_path / "all"), total, 50)
    os.makedirs(landing)
    worker = os.path.join(os.path.dirname(__file__), "stream_worker.py")
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    landed, codes = 0, []
    for new_files, fault in runs:
        for f in range(landed, landed + new_files):
            name = f"part-{f:04d}.json"
            os.replace(os.path.join(tmp_path, "all", name), os.path.join(landing, name))
        landed += new_files
        env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
                   PYTHONPATH=os.pathsep.join([repo, *filter(None, [os.environ.get("PYTHONPATH")])]))
        env.pop("PYHUDI_FAULT_POINT", None)
        if fault:
            env.update(PYHUDI_FAULT_POINT=fault, PYHUDI_FAULT_OWN_GROUP="1")
        proc = subprocess.Popen([sys.executable, worker, landing, path, checkpoint, mode], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        try:
            _, err = proc.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            kill_session(proc.pid)
            raise
        assert not wait_session_gone(proc.pid), "no process of the killed job survives"
        codes.append(proc.returncode)
        assert proc.returncode == (-9 if fault else 0), (fault, err.decode(errors="replace")[-2000:])
    assert codes == [-9] * (len(runs) - 1) + [0]
    timeline = sorted(os.listdir(os.path.join(path, ".hoodie")))
    writes = _commits(path) if mode == "plain" else _deltacommits(path)
    batches = sorted(int(c["extraMetadata"]["_pyhudi_streaming_batch_id"]) for c in writes)
    # A kill inside Spark's own planning (between its source log and offset log, possible when a background
    # service's kill point fires) makes the restarted query take two files in one micro-batch: fewer batches,
    # never a batch twice or a gap.
    n = total if mode == "plain" else len(batches)
    assert batches == list(range(n)) and n <= total, f"each micro-batch committed exactly once: {batches}"
    if mode == "services":
        done = {n.split(".")[0] for n in timeline if n.endswith(".commit") or n.endswith(".replacecommit")}
        pending = [n for n in timeline if (".compaction." in n or ".replacecommit." in n) and n.split(".")[0] not in done]
        assert not pending, f"plans left pending by the kills were completed by later runs: {pending}"
        assert any(n.endswith(".replacecommit") for n in timeline), "a background clustering completed"
        assert any(n.endswith(".commit") for n in timeline), "a background compaction completed"
    _check(spark, path, files)


def _deltacommits(path: str) -> list[dict]:
    hoodie = os.path.join(path, ".hoodie")
    out = []
    for name in sorted(os.listdir(hoodie)):
        if name.endswith(".deltacommit"):
            with open(os.path.join(hoodie, name)) as fh:
                out.append(json.load(fh))
    return out


def test_streamer_ingests_new_files_once_and_resumes(spark, tmp_path, capsys):
    from pyhudi.cli.streamer_cmd import Streamer

    landing, path = str(tmp_path / "landing"), str(tmp_path / "t")
    expected = _land(landing, 3, 30)
    props = {**_opts(), "hoodie.parquet.small.file.limit": "104857600"}
    Streamer(spark, landing, "json", path, props).run_round()
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "90 records in" in out[0] and "small files remaining" in out[0], out
    assert len(_commits(path)) == 1, "one round, one commit"
    _check(spark, path, expected)
    Streamer(spark, landing, "json", path, props).run_round()
    assert capsys.readouterr().out == "" and len(_commits(path)) == 1, "nothing new: nothing written"
    more = _land(str(tmp_path / "more"), 4, 30)
    os.replace(os.path.join(tmp_path, "more", "part-0003.json"), os.path.join(landing, "part-0003.json"))
    expected.update({k: v for k, v in more.items() if k >= 90})
    Streamer(spark, landing, "json", path, props).run_round()
    assert "30 records in" in capsys.readouterr().out
    _check(spark, path, expected)


def test_streamer_cli_stops_cleanly_on_sigterm(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    landing, path = str(tmp_path / "landing"), str(tmp_path / "t")
    expected = _land(landing, 2, 25)
    props = tmp_path / "job.properties"
    props.write_text("".join(f"{k}={v}\n" for k, v in _opts().items()))
    cmd = [sys.executable, "-m", "pyhudi.cli.main", "streamer", "--source-dir", landing, "--source-format", "json",
           "--target", path, "--props", str(props), "--continuous", "--min-sync-interval-seconds", "1",
           "--master", "local[1]"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, SPARK_LOCAL_IP="127.0.0.1"))
    assert proc.stdout is not None
    first = proc.stdout.readline()  # blocks until the first commit's line
    assert first.startswith("commit ") and "50 records in" in first, first
    time.sleep(1)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    assert "SIGTERM received" in err and out.strip().endswith("streamer: stopped")
    assert re.search(r"^pyhudi streamer round: done in \S+ \(\d+ Spark stages?, \d+ tasks?\)$", err, re.M), err[-2000:]
    assert len(_commits(path)) == 1
    rows = rows_by_key(hudi_rs(path), "id", ["name", "part", "ts"])
    assert rows == expected
