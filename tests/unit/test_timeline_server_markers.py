"""A failed write of Hudi's Spark writer leaves TIMELINE_SERVER_BASED markers (its default): `MARKERS.type`
and `MARKERS<n>` files listing marker names, one per line, in `.hoodie/.temp/<instant>/`. pyhudi's rollback
must find the files they name, as Hudi's MarkerBasedRollbackUtils does, and delete what the failed write made.
pyhudi writes the same layout by default (each task writes its own `MARKERS<n>` files), which Hudi's
rollback must be able to read in turn: every file the failed write left must be named there.

The failed write is pyhudi's own, stopped before its commit: either with its own batched markers, or with
DIRECT markers then rewritten as Hudi's server writes them. Each table is read with pyhudi and hudi-rs and
compared with a model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import pyhudi
from pyhudi import faults
from pyhudi.storage import Storage
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.writer.markers import MARKER_ROOT, list_marked_files
from tests.helpers import hudi_rs

OPTS = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.operation": "upsert",
        "hoodie.write.lock.filesystem.expire": str(2 / 60)}  # minutes: the killed writer's lock lasts 2 s
PARTS = ["2024/01/02", "p=7", "ünï"]
ROOT = Path(__file__).resolve().parents[2]


def _batch(keys: range, ts: int) -> pa.Table:
    return pa.table({"id": [f"k{i}.5-é" for i in keys], "ts": [ts] * len(keys),
                     "p": [PARTS[i % len(PARTS)] for i in keys]})


def _check(path: Path, model: dict[str, tuple[str, int]]) -> None:
    for got in (pyhudi.read(str(path)), hudi_rs(path)):
        assert got is not None
        assert {r["id"]: (r["p"], r["ts"]) for r in got.to_pylist()} == model


def _killed_write(path: Path, opts: dict[str, str]) -> None:
    """A writer process killed (SIGKILL, its whole session) after its data files, before its commit."""
    code = ("import sys, json, pyhudi; sys.path.insert(0, sys.argv[3]); from tests.unit.test_timeline_server_markers "
            "import _batch; pyhudi.write(_batch(range(20, 45), 2), sys.argv[1], json.loads(sys.argv[2]))")
    env = {**os.environ, faults.ENV: "write.before_commit", "PYHUDI_FAULT_OWN_GROUP": "1"}
    proc = subprocess.run([sys.executable, "-c", code, str(path), json.dumps(opts), str(ROOT)], env=env,
                          start_new_session=True, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]


def _to_timeline_server_markers(path: Path, instant: str) -> list[str]:
    """Rewrite the instant's DIRECT markers as Hudi's timeline server writes them; the marker names."""
    root = path / MARKER_ROOT / instant
    names = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert names, "the failed write left no markers"
    for p in sorted(root.rglob("*"), reverse=True):
        p.unlink() if p.is_file() else p.rmdir()
    (root / "MARKERS.type").write_text("TIMELINE_SERVER_BASED")
    half = len(names) // 2
    (root / "MARKERS0").write_text("".join(n + "\n" for n in names[:half]))
    (root / "MARKERS1").write_text("".join(n + "\n" for n in names[half:]))
    return names


def _hudi_reads_markers(path: Path, instant: str) -> list[str]:
    """The marker names of a batched-layout directory, read as Hudi's MarkerBasedRollbackUtils does: only
    when MARKERS.type says TIMELINE_SERVER_BASED, from every MARKERS* file but the type file."""
    root = path / MARKER_ROOT / instant
    assert (root / "MARKERS.type").read_text() == "TIMELINE_SERVER_BASED"
    assert not [p for p in root.iterdir() if p.is_dir()], "a DIRECT marker directory in a batched layout"
    files = [p for p in root.iterdir() if p.name.startswith("MARKERS") and p.name != "MARKERS.type"]
    for f in files:
        assert 0 <= int(f.name[len("MARKERS"):]) < 2 ** 31, f"{f.name}: Hudi parses the index as a Java int"
    return [line for f in files for line in f.read_text(encoding="utf-8").split("\n") if line]


@pytest.mark.parametrize("layout", ["hudi_server", "pyhudi_batched"])
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_rollback_finds_files_named_by_timeline_server_markers(tmp_path: Path, table_type: str, layout: str) -> None:
    path = tmp_path / "t"
    opts = {**OPTS, "hoodie.datasource.write.table.type": table_type}
    if layout == "hudi_server":  # written DIRECT, then rewritten below as Hudi's own server writes them
        opts["hoodie.write.markers.type"] = "DIRECT"
    pyhudi.write(_batch(range(30), 1), str(path), opts)
    model = {f"k{i}.5-é": (PARTS[i % len(PARTS)], 1) for i in range(30)}
    before = {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file() and ".hoodie" not in p.parts}

    _killed_write(path, opts)  # updates and inserts in every partition, killed before its commit
    pending = ActiveTimeline.load(Storage(str(path))).pending()
    assert len(pending.instants) == 1
    failed = pending.instants[0].timestamp
    left = {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file() and ".hoodie" not in p.parts} - before
    assert left, "the failed write left no data files"

    names = _to_timeline_server_markers(path, failed) if layout == "hudi_server" else _hudi_reads_markers(path, failed)
    assert all(n.rsplit(".marker.", 1)[1] in ("CREATE", "MERGE", "APPEND") for n in names)
    marked = list_marked_files(Storage(str(path)), failed)
    assert marked == sorted({n[: n.rindex(".marker.")] for n in names})
    assert left <= set(marked)
    _check(path, model)  # the failed write is invisible

    pyhudi.write(_batch(range(40, 50), 3), str(path), opts)  # rolls the failed write back first
    model.update({f"k{i}.5-é": (PARTS[i % len(PARTS)], 3) for i in range(40, 50)})
    now = {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file() and ".hoodie" not in p.parts}
    assert not (left & now), f"files of the rolled-back write survived: {sorted(left & now)}"
    assert not os.path.exists(path / MARKER_ROOT / failed)
    assert failed not in {i.timestamp for i in ActiveTimeline.load(Storage(str(path))).instants}
    _check(path, model)
