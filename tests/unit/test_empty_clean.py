"""Empty cleans (`hoodie.write.empty.clean.create.duration.ms`, Hudi's apache/hudi#18337): a table whose
cleans never delete anything (append-only) still records its earliest retained commit, so the next clean
plans from the partitions written since, not from every partition (hudi#6953). In-process writes with the
cleaner on; each table is read with hudi-rs and compared with a model."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.model import avro_models as am
from pyhudi.model.instant_time import instant_to_ms
from pyhudi.model.table_config import load_table_config
from pyhudi.services.clean import empty_clean_due
from pyhudi.services.clean_plan import CleanPlanDraft, clean_scope, earliest_commit_to_retain
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.builder import build_view
from pyhudi.writer.config import CleanConfig
from tests.helpers import hudi_rs

PARTS = ["p=1", "p=10", "p=é ü", "p=a/b", "2024/01/02", "p=7"]


def _opts(**extra: str) -> dict[str, str]:
    return {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "part",
            "hoodie.datasource.write.operation": "bulk_insert", "hoodie.cleaner.commits.retained": "2", **extra}


def _append(path: Path, n: int, model: dict[str, tuple[str, int]], **extra: str) -> None:
    """Write `n`: two new keys into one partition (new files only: nothing ever becomes cleanable)."""
    part = PARTS[n % len(PARTS)]
    keys = [f"k-{n}-ü", f"k-{n}-{'9' * 20}"]
    pyhudi.write(pa.table({"id": keys, "ts": [n, n], "part": [part, part]}), str(path), _opts(**extra))
    model.update({k: (part, n) for k in keys})


def _check(path: Path, model: dict[str, tuple[str, int]]) -> None:
    got = hudi_rs(path)
    assert got is not None
    rows = {r["id"]: (r["part"], r["ts"]) for r in got.to_pylist()}
    assert rows == model


def _cleans(path: Path) -> list[dict[str, object]]:
    tl = ActiveTimeline.load(Storage(str(path)))
    return [am.read_instant_avro(tl.details(i)) for i in tl.completed().actions(Action.CLEAN)]


def _scope(path: Path, cfg: CleanConfig) -> str:
    storage = Storage(str(path))
    timeline = ActiveTimeline.load(storage)
    view = build_view(storage, load_table_config(storage), timeline)
    return clean_scope(view, cfg, earliest_commit_to_retain(timeline, cfg))[1]


def test_append_only_table_cleans_incrementally(tmp_path: Path) -> None:
    path, model = tmp_path / "t", {}
    for n in range(8):
        _append(path, n, model)
    cleans = _cleans(path)
    assert cleans, "no clean recorded: the next clean would scan every partition"
    assert all(not c["partitionMetadata"] for c in cleans)  # nothing was deleted
    assert all(c["earliestCommitToRetain"] for c in cleans)
    _append(path, 8, model, **{"hoodie.clean.automatic": "false"})  # the next clean's view
    scope = _scope(path, CleanConfig(commits_retained=2))
    assert scope.startswith("incremental: 1 partition"), scope
    _check(path, model)


def test_hudi_default_writes_no_empty_clean(tmp_path: Path) -> None:
    """-1 (Hudi's default): no clean instant, and every clean scans all partitions."""
    path, model = tmp_path / "t", {}
    for n in range(8):
        _append(path, n, model, **{"hoodie.write.empty.clean.create.duration.ms": "-1"})
    assert _cleans(path) == []
    assert _scope(path, CleanConfig(commits_retained=2)).startswith("full scan"), _scope
    _check(path, model)


def test_a_cleaning_table_is_unchanged(tmp_path: Path) -> None:
    """Upserts into one partition: real cleans happen; each completed clean deleted files or recorded a
    newer earliest retained commit than the one before it."""
    path, model = tmp_path / "t", {}
    for n in range(8):
        rows = {"id": ["same-key", f"new-{n}"], "ts": [n, n], "part": ["p=1", "p=1"]}
        pyhudi.write(pa.table(rows), str(path), _opts(**{"hoodie.datasource.write.operation": "upsert"}))
        model.update({"same-key": ("p=1", n), f"new-{n}": ("p=1", n)})
    cleans = _cleans(path)
    assert any(c["partitionMetadata"] for c in cleans)
    retained = [str(c["earliestCommitToRetain"]) for c in cleans]
    assert retained == sorted(set(retained)), retained
    _check(path, model)


def _draft(earliest: str | None) -> CleanPlanDraft:
    from pyhudi.timeline.instant import Instant, State

    inst = Instant(earliest, Action.COMMIT, State.COMPLETED) if earliest else None
    return CleanPlanDraft("KEEP_LATEST_COMMITS", inst, earliest or "")


@pytest.mark.parametrize(("after_ms", "age_ms", "due"), [(0, 1, True), (-1, 10**9, False),
                                                          (60_000, 30_000, False), (60_000, 90_000, True)])
def test_due_follows_the_duration_since_the_last_clean(tmp_path: Path, after_ms: int, age_ms: int,
                                                       due: bool) -> None:
    path, model = tmp_path / "t", {}
    for n in range(5):
        _append(path, n, model)
    timeline = ActiveTimeline.load(Storage(str(path)))
    last = timeline.completed().actions(Action.CLEAN).last()
    assert last is not None
    newer = timeline.commits().completed().last()
    assert newer is not None
    cfg = CleanConfig(commits_retained=2, empty_clean_after_ms=after_ms)
    now = instant_to_ms(last.timestamp) + age_ms
    assert empty_clean_due(timeline, _draft(newer.timestamp), cfg, False, now) is due
    # the same earliest retained commit as the last clean's: nothing would move, never due
    same = str(_cleans(path)[-1]["earliestCommitToRetain"])
    assert empty_clean_due(timeline, _draft(same), cfg, False, now + 10**9) is False
    assert empty_clean_due(timeline, _draft(None), cfg, False, now) is False
    by_versions = CleanConfig(policy="KEEP_LATEST_FILE_VERSIONS", empty_clean_after_ms=after_ms)
    assert empty_clean_due(timeline, _draft(newer.timestamp), by_versions, False, now) is False


def test_explain_says_what_the_clean_scanned(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`pyhudi clean --explain` names the clean's scope: a full scan and why, then incremental."""
    from pyhudi.cli.main import main

    path, model = tmp_path / "t", {}
    for n in range(4):
        _append(path, n, model, **{"hoodie.clean.automatic": "false"})
    assert main(["clean", str(path), "-o", "hoodie.cleaner.commits.retained=2", "--explain"]) == 0
    first = capsys.readouterr().out
    assert "plan: clean: full scan: no earlier clean recorded an earliest retained commit" in first, first
    assert "plan: clean: nothing to delete; an empty clean records the earliest retained commit" in first, first
    _append(path, 4, model, **{"hoodie.clean.automatic": "false"})
    assert main(["clean", str(path), "-o", "hoodie.cleaner.commits.retained=2", "--explain"]) == 0
    second = capsys.readouterr().out
    assert "plan: clean: incremental: 1 partition(s) written by commits in" in second, second
    _check(path, model)
