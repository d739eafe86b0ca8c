"""Once a write's commit file exists the write has succeeded (in-process, no Spark).

Work after the commit (the inline clean, archival, inline compaction, releasing the lock) may fail or find
its job done by someone else; `pyhudi.write` still returns the committed instant, its rows are visible to
both readers, and a failure is reported as a PostCommitWarning carrying that instant, never raised as if
the write had failed (a caller retrying it would write the rows twice).
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import pyarrow as pa
import pytest

import pyhudi
from pyhudi import faults
from pyhudi.config.registry import Options
from pyhudi.errors import PostCommitWarning
from pyhudi.model.table_config import load_table_config
from pyhudi.services import clean
from pyhudi.storage import Storage
from pyhudi.writer.config import CleanConfig
from tests.helpers import hudi_rs

ARROW = pa.schema([("id", pa.int64()), ("name", pa.string()), ("part", pa.string()), ("ts", pa.int64())])
QUIET = {"hoodie.clean.automatic": "false", "hoodie.archive.automatic": "false"}
Model = dict[int, tuple[str, str, int]]


def _opts(table_type: str = "COPY_ON_WRITE", **extra: str) -> dict[str, str]:
    return {"hoodie.table.name": "pc", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.table.type": table_type, "hoodie.datasource.write.operation": "upsert",
            "hoodie.parquet.small.file.limit": "0", "hoodie.cleaner.commits.retained": "1",
            "hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", **extra}


def _write(path: str, step: int, model: Model, opts: dict[str, str]) -> str:
    rows = [(i, f"v{step}", f"p{i % 2}", step) for i in range(0, 12, 1 + step % 3)]
    instant = pyhudi.write(pa.Table.from_pylist([dict(zip(ARROW.names, r)) for r in rows], schema=ARROW), path, opts)
    model.update({i: (n, p, ts) for i, n, p, ts in rows})
    return instant


def _check(path: str, model: Model) -> None:
    for table in (hudi_rs(path), pyhudi.read(path)):
        assert table is not None
        rows = table.select(["id", "name", "part", "ts"]).to_pylist()
        assert {r["id"]: (r["name"], r["part"], r["ts"]) for r in rows} == model
        assert len(rows) == len(model)


def _history(path: str, opts: dict[str, str], writes: int = 4) -> Model:
    model: Model = {}
    for step in range(writes):
        _write(path, step, model, {**opts, **QUIET})
    return model


def _committed(path: str, instant: str) -> bool:
    return any(n.split(".")[0] == instant and n.split(".")[-1] in ("commit", "deltacommit")
               for n in os.listdir(os.path.join(path, ".hoodie")))


def _post_commit_warnings(caught: list[warnings.WarningMessage]) -> list[PostCommitWarning]:
    return [w.message for w in caught if isinstance(w.message, PostCommitWarning)]


def test_inline_clean_whose_plan_another_process_ran_and_archived(tmp_path, monkeypatch):
    """The review's slow answer: the writer's inline clean lists a pending clean; before it reads the plan,
    another process executes that plan and archival removes it from the active timeline."""
    path = str(tmp_path / "t")
    opts = _opts()
    model = _history(path, opts)
    storage = Storage(path)
    pending = clean.schedule(storage, load_table_config(storage), CleanConfig.from_options(Options.parse(opts)))
    assert pending is not None
    real_pending, real_execute = clean.pending_cleans, clean.execute
    raced: list[str] = []

    def slow_answer(storage: Storage, timeline: Any = None) -> list[str]:
        found = real_pending(storage, timeline)
        if pending in found and not raced:
            raced.append(pending)
            real_execute(storage, pending)  # the other process runs the plan ...
            hoodie = os.path.join(path, ".hoodie")
            for name in os.listdir(hoodie):  # ... and archival takes it off the active timeline
                if name.startswith(f"{pending}.clean"):
                    os.remove(os.path.join(hoodie, name))
        return found

    monkeypatch.setattr(clean, "pending_cleans", slow_answer)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        instant = _write(path, 9, model, {**opts, "hoodie.archive.automatic": "false"})
    assert raced == [pending]
    assert _post_commit_warnings(caught) == [], "a clean someone else completed counts as done"
    assert _committed(path, instant)
    _check(path, model)


@pytest.mark.parametrize("table_type,services,point", [
    ("COPY_ON_WRITE", {"hoodie.clean.automatic": "true"}, "clean.after_plan"),
    ("COPY_ON_WRITE", {"hoodie.clean.automatic": "true"}, "clean.before_commit"),
    ("COPY_ON_WRITE", {"hoodie.archive.automatic": "true", "hoodie.clean.automatic": "false"},
     "archival.after_archive_file"),
    ("MERGE_ON_READ", {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "1",
                       **QUIET}, "compaction.before_commit"),
    ("COPY_ON_WRITE", QUIET, "write.after_commit"),
])
def test_a_failure_after_the_commit_is_reported_with_the_committed_instant(tmp_path, monkeypatch, table_type,
                                                                           services, point):
    path = str(tmp_path / "t")
    opts = _opts(table_type)
    model = _history(path, opts)
    report = tmp_path / "fired"
    monkeypatch.setenv(faults.RAISE_ENV, point)
    monkeypatch.setenv(faults.REPORT_ENV, str(report))
    faults.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        instant = _write(path, 9, model, {**opts, **services})
    monkeypatch.delenv(faults.RAISE_ENV)
    faults.reset()
    assert report.read_text().split()[0] == point, "the fault fired"
    assert _committed(path, instant)
    (warned,) = _post_commit_warnings(caught)
    assert warned.instant == instant and isinstance(warned.error, faults.InjectedFault)
    assert str(warned).startswith(f"write {instant} committed;")
    _check(path, model)
    _write(path, 10, model, {**opts, **services})  # the next write (and its services) goes on as usual
    _check(path, model)
