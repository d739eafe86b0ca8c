"""The `pyhudi` command line on a bucket of the local S3 server, in subprocesses configured only through
the AWS_* environment: write of local parquet and csv files, timeline, files, read, compaction run,
clustering run, clean, rollback and the in-process streamer (landing files local). After every command
that changes the table, it is read in-process and by hudi-rs and compared with a model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.integration import s3_model as m

if TYPE_CHECKING:
    from pathlib import Path

    from tests.support.s3_fixtures import S3Bucket

pytest_plugins = ["tests.support.s3_fixtures"]  # the s3 and s3_session fixtures


def _cli(s3: S3Bucket, *args: str, expect: int = 0) -> str:
    env = {**os.environ, **s3.env, "PYHUDI_NO_PROGRESS": "1"}
    proc = subprocess.run([sys.executable, "-m", "pyhudi.cli.main", *args], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == expect, f"pyhudi {' '.join(args)} -> {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _props(tmp_path: Path, table_type: str, **extra: str) -> str:
    path = tmp_path / f"{table_type}.properties"
    opts = m.options(table_type, **{"hoodie.clean.automatic": "false", "hoodie.archive.automatic": "false"},
                     **extra)
    path.write_text("".join(f"{k}={v}\n" for k, v in opts.items()), encoding="utf-8")
    return str(path)


def _parquet(tmp_path: Path, name: str, rows: list[dict[str, Any]]) -> str:
    path = tmp_path / name
    pq.write_table(m.arrow(rows), str(path))
    return str(path)


def _instants(s3: S3Bucket, uri: str) -> list[dict[str, Any]]:
    out = json.loads(_cli(s3, "timeline", uri, "--json"))
    return out["instants"] if isinstance(out, dict) else out


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", pytest.param("MERGE_ON_READ", marks=pytest.mark.extended)])
def test_cli_on_a_bucket(s3: S3Bucket, tmp_path: Path, table_type: str) -> None:
    props = _props(tmp_path, table_type, **{
        "hoodie.cleaner.commits.retained": "1",
        "hoodie.clustering.plan.strategy.small.file.limit": str(1 << 20)})
    model: m.Model = {}
    keys = m.all_keys()
    for step, (chunk, op) in enumerate([(keys[:14], "upsert"), (keys[8:20], "upsert"), (keys[::4], "delete")]):
        rows = m.rows_for(chunk, step + 1, f"c{step}")
        _cli(s3, "write", "--source", _parquet(tmp_path, f"in{step}.parquet", rows), "--source-format", "parquet",
             "--target", s3.uri, "--props", props, "--operation", op)
        m.apply(model, rows, op)
        m.check(s3, model, f"cli write {step} ({op})")
    assert len(_instants(s3, s3.uri)) == 3
    files = json.loads(_cli(s3, "files", s3.uri, "--json"))
    assert "2024/01" in json.dumps(files) and "007" in json.dumps(files)
    lines = _cli(s3, "read", s3.uri, "--format", "json").splitlines()
    assert m.as_model(pa.Table.from_pylist([json.loads(x) for x in lines if x.strip()])) == model
    if table_type == "MERGE_ON_READ":
        _cli(s3, "compaction", s3.uri, "run", "--json", "--explain")
        m.check(s3, model, "cli compaction run")
        assert [i["action"] for i in _instants(s3, s3.uri)].count("commit") == 1, "no compaction commit"
    _cli(s3, "clustering", s3.uri, "run", "--json", "-o", "hoodie.clustering.plan.strategy.small.file.limit=1048576")
    m.check(s3, model, "cli clustering run")
    actions = [i.get("action") for i in _instants(s3, s3.uri)]
    assert "replacecommit" in actions, actions
    _cli(s3, "clean", s3.uri, "-o", "hoodie.cleaner.commits.retained=1", "--json", "--explain")
    m.check(s3, model, "cli clean")
    before = dict(model)
    rows = m.rows_for(keys[1:6], 9, "late")
    _cli(s3, "write", "--source", _parquet(tmp_path, "late.parquet", rows), "--source-format", "parquet",
         "--target", s3.uri, "--props", props)
    m.apply(model, rows, "upsert")
    m.check(s3, model, "cli write after services")
    latest = _instants(s3, s3.uri)[-1]
    _cli(s3, "rollback", s3.uri, latest["timestamp"])
    m.check(s3, before, "cli rollback")
    after = _instants(s3, s3.uri)
    assert latest["timestamp"] not in [i["timestamp"] for i in after if i["action"] != "rollback"]
    assert after[-1]["action"] == "rollback"
    _savepoint_delete_partition_restore(s3, before)


def _savepoint_delete_partition_restore(s3: S3Bucket, model: m.Model) -> None:
    """savepoint create/list, delete-partition of `007`, then restore to the savepoint."""
    _cli(s3, "savepoint", s3.uri, "create", "--user", "t")
    saved = [line.split()[0] for line in _cli(s3, "savepoint", s3.uri, "list").splitlines() if line.strip()]
    assert len(saved) == 1 and saved[0] in [i["timestamp"] for i in _instants(s3, s3.uri)], saved
    _cli(s3, "delete-partition", s3.uri, "--partitions", "007")
    m.check(s3, {k: v for k, v in model.items() if k[1] != "007"}, "cli delete-partition 007")
    _cli(s3, "savepoint", s3.uri, "restore", saved[0])
    m.check(s3, model, "cli savepoint restore")


def test_cli_write_csv_and_streamer_into_a_bucket(s3: S3Bucket, tmp_path: Path) -> None:
    """A csv file written into a bucket table, then the in-process streamer ingesting two rounds of local
    landing files (json lines) into it."""
    uri = f"s3://{s3.bucket}/csv_table"
    csv = tmp_path / "in.csv"
    csv.write_text("k,part,name,ts\nü/ß,2024/01,a,1\n日本,007,,1\n0,007,zero,1\n", encoding="utf-8")
    props = tmp_path / "csv.properties"
    props.write_text("hoodie.table.name=csvt\nhoodie.datasource.write.recordkey.field=k\n"
                     "hoodie.datasource.write.partitionpath.field=part\nhoodie.datasource.write.precombine.field=ts\n"
                     "hoodie.datasource.write.table.type=MERGE_ON_READ\n", encoding="utf-8")
    _cli(s3, "write", "--source", str(csv), "--source-format", "csv", "--target", uri, "--props", str(props))
    model: m.Model = {("ü/ß", "2024/01"): ("a", 1), ("日本", "007"): (None, 1), ("0", "007"): ("zero", 1)}
    m.check(s3, model, "cli write csv", uri)
    landing = tmp_path / "landing"
    landing.mkdir()
    for n, records in enumerate([[("日本", "007", "jp", 2), ("x/y", "2024/01", None, 2)],
                                 [("0", "007", "zero2", 3), ("Ω", "p", "omega", 3)]]):
        (landing / f"f{n}.json").write_text("".join(json.dumps(dict(zip(("k", "part", "name", "ts"), r)))
                                                    + "\n" for r in records), encoding="utf-8")
        _cli(s3, "streamer", "--source-dir", str(landing), "--source-format", "json", "--target", uri,
             "--props", str(props))
        model.update({(k, part): (name, ts) for k, part, name, ts in records})
        m.check(s3, model, f"cli streamer round {n}", uri)
    assert len(_instants(s3, uri)) == 3


def test_cli_sources_on_a_bucket(s3: S3Bucket, tmp_path: Path) -> None:
    """`pyhudi write --source s3://...` and the in-process streamer with its landing folder on the bucket:
    files read through Storage (one LIST per round), hidden and empty objects skipped, each file once."""
    from pyhudi.storage import Storage

    uri, landing = f"s3://{s3.bucket}/t2", f"s3://{s3.bucket}/landing/in 2024"
    props = _props(tmp_path, "MERGE_ON_READ")
    keys, model = m.all_keys(), {}
    store = Storage(landing)
    first = m.rows_for(keys[:6], 1, "w")
    pq.write_table(m.arrow(first), str(tmp_path / "w.parquet"))
    store.write_bytes("w.parquet", (tmp_path / "w.parquet").read_bytes())
    _cli(s3, "write", "--source", f"{landing}/w.parquet", "--source-format", "parquet", "--target", uri,
         "--props", props)
    m.apply(model, first, "upsert")
    m.check(s3, model, "cli write of an object", uri)
    store.delete("w.parquet")
    _cli(s3, "streamer", "--source-dir", landing, "--source-format", "parquet", "--target", uri, "--props", props)
    assert len(_instants(s3, uri)) == 1, "an empty landing folder commits nothing"
    for n in range(2):
        rows = m.rows_for(keys[n * 4:n * 4 + 7], n + 2, f"s{n}")
        pq.write_table(m.arrow(rows), str(tmp_path / "f.parquet"))
        store.write_bytes(f"f{n}.parquet", (tmp_path / "f.parquet").read_bytes())
        store.write_bytes(f"_SUCCESS{n}", b"")
        store.write_bytes(f".tmp{n}.parquet", b"not parquet")  # hidden: a file still being written
        _cli(s3, "streamer", "--source-dir", landing, "--source-format", "parquet", "--target", uri,
             "--props", props)
        m.apply(model, rows, "upsert")
        m.check(s3, model, f"cli streamer round {n} from the bucket", uri)
    _cli(s3, "streamer", "--source-dir", landing, "--source-format", "parquet", "--target", uri, "--props", props)
    assert len(_instants(s3, uri)) == 3, "a landed file was ingested twice"


@pytest.mark.spark
@pytest.mark.extended  # a JVM per CLI call: ~45 s; the Spark path on a bucket is covered by test_s3_spark.py
def test_cli_spark_master_on_a_bucket(s3: S3Bucket, tmp_path: Path) -> None:
    """`--master local[1]`: the CLI's own SparkSession (no S3 connector) writes a bucket table and compacts
    it, the executors reaching the bucket through Storage."""
    props = _props(tmp_path, "MERGE_ON_READ")
    model: m.Model = {}
    for step, chunk in enumerate([m.all_keys()[:9], m.all_keys()[5:14]]):
        rows = m.rows_for(chunk, step + 1, f"sp{step}")
        _cli(s3, "write", "--source", _parquet(tmp_path, f"sp{step}.parquet", rows), "--source-format", "parquet",
             "--target", s3.uri, "--props", props, "--master", "local[1]")
        m.apply(model, rows, "upsert")
        m.check(s3, model, f"cli write --master, step {step}")
    _cli(s3, "compaction", s3.uri, "run", "--master", "local[1]")
    m.check(s3, model, "cli compaction run --master")
    assert [i["action"] for i in _instants(s3, s3.uri)].count("commit") == 1
