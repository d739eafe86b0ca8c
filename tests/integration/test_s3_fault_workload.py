"""Faults lose nothing on a bucket (issue 18, item 4): a randomized workload of writes and table services
against the local S3 server behind a fault-injecting proxy (throttling, 500s, connection resets, slow
answers, answers lost after the request took effect), checked against a plain-Python model after every step;
and writers SIGKILLed at exact points between their data files and their commit, then continued.

Every acknowledged write must be present; a write that raised must leave the table as it was (the next
writer rolls its leftovers back); the table reads equal to the model with pyhudi and with hudi-rs.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import HudiError

if TYPE_CHECKING:
    from tests.support.s3_fixtures import S3Bucket

pytest_plugins = ["tests.support.s3_fixtures"]

REPO = Path(__file__).resolve().parents[2]
WORKER = REPO / "tests" / "integration" / "engine_worker.py"
PARTS = ["2024/01", "007", "ü x", "a%2Fb"]
# Few, fast retries: four failures in a row exhaust them, so some writes fail outright.
RETRIES = {"pyhudi.retry.max_attempts": "4", "pyhudi.retry.base_delay_ms": "5", "pyhudi.retry.max_delay_ms": "40"}
Model = dict[str, tuple[Any, ...]]


def _options(table_type: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    return {
        "hoodie.table.name": "faults_t",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "part",
        "hoodie.parquet.small.file.limit": str(1 << 20),
        "hoodie.keep.min.commits": "3", "hoodie.keep.max.commits": "4",
        "hoodie.cleaner.commits.retained": "2",
        **(extra or {}),
    }


def _part(key: str) -> str:
    return PARTS[sum(map(ord, key)) % len(PARTS)]  # a key keeps its partition (non-global index)


def _rows(keys: list[str], ts: int) -> pa.Table:
    return pa.table({
        "id": keys, "ts": [ts] * len(keys), "part": [_part(k) for k in keys],
        "amount": [Decimal(f"{len(k)}.{ts % 100:02d}") if ts % 3 else None for k in keys],
        "note": [f"{k}/{ts}-é" for k in keys],
    }, schema=pa.schema([("id", pa.string()), ("ts", pa.int64()), ("part", pa.string()),
                         ("amount", pa.decimal128(12, 2)), ("note", pa.string())]))


def _model_of(table: pa.Table | None) -> Model:
    if table is None or not table.num_rows:
        return {}
    return {r["id"]: (r["ts"], r["part"], r["amount"], r["note"])
            for r in table.select(["id", "ts", "part", "amount", "note"]).to_pylist()}


def _assert_reads(s3: S3Bucket, model: Model, when: str) -> None:
    s3.proxy.clear()
    ours = _model_of(pyhudi.read(s3.uri)) if model or _table_exists(s3) else {}
    assert ours == model, f"{when}: pyhudi reads {len(ours)} keys, the model has {len(model)}"
    assert _model_of(s3.hudi_rs()) == model, f"{when}: hudi-rs differs from the model"


def _table_exists(s3: S3Bucket) -> bool:
    from pyhudi.storage import Storage

    return Storage(s3.uri).exists(".hoodie/hoodie.properties")


def _arm(s3: S3Bucket, rng: random.Random, table_type: str) -> tuple[str, list[Any]]:
    """One random fault mix for the next step (the proxy's rules; see tests/support/fault_proxy.py)."""
    kind = rng.choice(["503", "500", "reset", "lost", "slow", "mixed", "fail_commit", "fail_data", "lost_commit"])
    completed = ".deltacommit" if table_type == "MERGE_ON_READ" else ".commit"
    if kind == "fail_commit":  # the completed-instant PUT fails on every attempt: the write must not count
        rules = [s3.proxy.add("status", status=503, op="PUT", path_endswith=suffix, limit=4)
                 for suffix in (completed, ".replacecommit")]
    elif kind == "fail_data":  # a data file's upload fails on every attempt, after others succeeded
        rules = [s3.proxy.add("status", status=500, op="PUT", path_endswith=".parquet", every=2, limit=4),
                 s3.proxy.add("status", status=500, op="PUT", path_contains=".log.", every=2, limit=4)]
    elif kind == "lost_commit":  # the completion took effect, its answer was lost: the write counts once
        rules = [s3.proxy.add("lost", op="PUT", path_endswith=completed, limit=1)]
    elif kind in ("503", "500"):
        rules = [s3.proxy.add("status", status=int(kind), every=rng.choice([3, 5, 7]))]
    elif kind == "reset":
        rules = [s3.proxy.add("reset", every=rng.choice([5, 9]))]
    elif kind == "lost":
        rules = [s3.proxy.add("lost", op="PUT", every=rng.choice([2, 4]), path_contains=".hoodie/")]
    elif kind == "slow":
        rules = [s3.proxy.add("delay", delay_s=0.05, every=4)]
    else:
        rules = [s3.proxy.add("status", status=503, every=6),
                 s3.proxy.add("lost", op="PUT", every=5, conditional_only=True),
                 s3.proxy.add("reset", op="GET", every=11)]
    return kind, rules


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE",
                                        pytest.param("MERGE_ON_READ", marks=pytest.mark.extended)])
def test_randomized_workload_under_store_faults(s3: S3Bucket, table_type: str) -> None:
    rng = random.Random(20261126 + len(table_type))
    model: Model = {}
    keys = [f"k{i:03d}" for i in range(60)] + ["ü-key", "日本", "a/b", "k%20"]
    failures, fired = 0, 0
    for step in range(1, 19):
        kind, rules = _arm(s3, rng, table_type)
        op = rng.choice(["upsert", "upsert", "insert", "delete", "service"]) if model else "upsert"
        try:
            if op == "service":
                service = rng.choice(["compact" if table_type == "MERGE_ON_READ" else "cluster", "clean",
                                      "archive", "cluster"])
                getattr(pyhudi, service)(None, s3.uri, _options(table_type), storage_options=RETRIES)
                outcome = f"{service} ok"
            else:
                chosen = rng.sample(keys, rng.randint(3, 12))
                if op == "delete":
                    chosen = [k for k in chosen if k in model] or [next(iter(model))]
                elif op == "insert":
                    chosen = [k for k in chosen if k not in model] or [f"new{step}"]
                batch = _rows(chosen, step)
                pyhudi.write(batch, s3.uri, {**_options(table_type), "hoodie.datasource.write.operation": op},
                             storage_options=RETRIES)
                if op == "delete":
                    for k in chosen:
                        model.pop(k, None)
                else:
                    model.update(_model_of(batch))
                outcome = f"{op} ok"
        except HudiError as exc:  # not acknowledged: the table must read as before
            failures += 1
            outcome = f"{op} failed: {type(exc).__name__}: {str(exc)[:120]}"
        fired += sum(r.fired for r in rules if r.kind != "delay")
        _assert_reads(s3, model, f"step {step} ({kind}; {outcome})")
    assert fired > 10  # the faults were real: many requests were failed, reset or lost by the proxy
    assert failures >= 1  # and some writes failed outright: their leftovers were rolled back
    # A clean continuation after the faulty history.
    batch = _rows(["k001", "ü-key", "fresh"], 99)
    pyhudi.write(batch, s3.uri, {**_options(table_type), "hoodie.datasource.write.operation": "upsert"})
    model.update(_model_of(batch))
    _assert_reads(s3, model, f"after the workload ({failures} failed steps)")


KILL_POINTS = [
    pytest.param("timeline.before_inflight", False, marks=pytest.mark.extended),  # requested, nothing written
    ("write.mid_file", False),  # a data file half uploaded (never visible: one PUT / multipart)
    pytest.param("write.after_marker", False, marks=pytest.mark.extended),
    # data files complete, commit not written (the crash test covers it locally in the default run)
    pytest.param("write.before_commit", False, marks=pytest.mark.extended),
    pytest.param("write.after_commit", True, marks=pytest.mark.extended),  # committed: the write counts
]


@pytest.mark.parametrize(("point", "counts"), KILL_POINTS)
def test_writer_killed_on_a_bucket_loses_nothing_acknowledged(s3: S3Bucket, tmp_path: Path, point: str,
                                                             counts: bool) -> None:
    opts = _options("COPY_ON_WRITE")
    first = _worker_rows(list(range(20)), 1)
    pyhudi.write(first, s3.uri, {**opts, "hoodie.datasource.write.operation": "upsert"})
    model = _worker_model(first)
    killed = _worker_rows([1, 2, 19, 1000], 2)
    spec = {"path": s3.uri, "op": "upsert", "options": opts, "engine": "local",
            "rows": [list(r.values()) for r in killed.to_pylist()], "columns": killed.column_names}
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec, default=str))
    report = tmp_path / "report.txt"
    env = dict(os.environ, **s3.env, PYHUDI_FAULT_POINT=point, PYHUDI_FAULT_OWN_GROUP="1",
               PYHUDI_FAULT_REPORT=str(report),
               PYTHONPATH=os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
    proc = subprocess.Popen([sys.executable, str(WORKER), str(spec_path)], cwd=str(tmp_path), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    assert report.exists() and point in report.read_text(), \
        f"{point} was not reached (rc {proc.returncode}): {err.decode(errors='replace')[-2000:]}"
    assert proc.returncode == -signal.SIGKILL
    if counts:
        model.update(_worker_model(killed))
    _assert_worker_reads(s3, model, f"after a writer was killed at {point}")
    # The next writer rolls the leftovers back and writes; everything acknowledged is there.
    after = _worker_rows([2, 3, 2000], 3)
    pyhudi.write(after, s3.uri, {**opts, "hoodie.datasource.write.operation": "upsert"})
    model.update(_worker_model(after))
    _assert_worker_reads(s3, model, f"after the next write (killed at {point})")


def _worker_rows(ids: list[int], ts: int) -> pa.Table:
    """Rows in engine_worker.py's column types (id int64; part, payload strings; ts int64)."""
    return pa.table({"id": pa.array(ids, pa.int64()), "part": [PARTS[i % len(PARTS)] for i in ids],
                     "ts": pa.array([ts] * len(ids), pa.int64()), "payload": [f"p{i}-{ts}-ü" for i in ids]})


def _worker_model(table: pa.Table | None) -> dict[int, tuple[Any, ...]]:
    if table is None or not table.num_rows:
        return {}
    return {r["id"]: (r["ts"], r["part"], r["payload"]) for r in table.select(["id", "ts", "part", "payload"]).to_pylist()}


def _assert_worker_reads(s3: S3Bucket, model: dict[int, tuple[Any, ...]], when: str) -> None:
    s3.proxy.clear()
    assert _worker_model(pyhudi.read(s3.uri)) == model, f"{when}: pyhudi differs from the model"
    assert _worker_model(s3.hudi_rs()) == model, f"{when}: hudi-rs differs from the model"
