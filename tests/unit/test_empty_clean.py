"""Empty cleans (`hoodie.write.empty.clean.create.duration.ms`, Hudi's apache/hudi#18337; -1, Hudi's default,
writes none) and the cleaner of a table that has no clean yet: an append-only table's inline cleaner lists no
partition directory, with or without empty cleans (hudi#6953 is a full scan after every commit). In-process
writes with the cleaner on; each table is read with hudi-rs and compared with a model."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.config.registry import Options
from pyhudi.errors import InvalidConfigError
from pyhudi.model import avro_models as am
from pyhudi.model.instant_time import instant_to_ms
from pyhudi.model.table_config import load_table_config
from pyhudi.services import clean as cleaner
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


def _data_listings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The directories the cleaner lists (Storage.list_dir inside clean._schedule) other than the timeline's."""
    seen: list[str] = []
    inside = [False]
    list_dir, schedule = Storage.list_dir, cleaner._schedule

    def spy(self: Storage, rel: str) -> object:
        if inside[0] and not rel.strip("/").startswith(".hoodie"):
            seen.append(rel)
        return list_dir(self, rel)

    def scheduling(*args: object, **kw: object) -> object:
        inside[0] = True
        try:
            return schedule(*args, **kw)  # type: ignore[arg-type]
        finally:
            inside[0] = False
    monkeypatch.setattr(Storage, "list_dir", spy)
    monkeypatch.setattr(cleaner, "_schedule", scheduling)
    return seen


def test_append_only_inline_cleans_list_no_partition(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hudi's default (-1): no clean instant is ever written, and none of the inline cleans after 12 commits
    (archival moving the oldest out on the way) lists a partition directory: no commit superseded a file
    version, so there is nothing to scan (`clean_plan.scope_without_clean`)."""
    path, model = tmp_path / "t", {}
    listed = _data_listings(monkeypatch)
    keep = {"hoodie.keep.min.commits": "3", "hoodie.keep.max.commits": "5"}
    for n in range(12):
        _append(path, n, model, **keep)
    assert _cleans(path) == []
    assert listed == [], listed
    assert (path / ".hoodie" / "archived").is_dir()  # the history moved on without any clean
    assert _scope(path, CleanConfig(commits_retained=2)).startswith("no clean yet: 0 partition(s)")
    _check(path, model)


def test_without_a_clean_an_update_is_found_by_listing_its_partition_only(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """An upsert that rewrites a file in one partition: once it is older than the earliest retained commit, the
    cleaner lists that partition alone and deletes the superseded version (the first clean of the table)."""
    path, model = tmp_path / "t", {}
    for n in range(3):
        _append(path, n, model)
    upsert = {"hoodie.datasource.write.operation": "upsert"}
    pyhudi.write(pa.table({"id": ["k-0-ü"], "ts": [100], "part": [PARTS[0]]}), str(path), _opts(**upsert))
    model["k-0-ü"] = (PARTS[0], 100)
    listed = _data_listings(monkeypatch)
    for n in range(3, 6):
        _append(path, n, model)
    cleans = _cleans(path)
    assert len(cleans) == 1 and list(cleans[0]["partitionMetadata"]) == [PARTS[0]], cleans
    assert {p.strip("/") for p in listed} == {PARTS[0]}, listed
    _check(path, model)


@pytest.mark.parametrize("after_ms", ["1", "3600000"])
def test_a_positive_duration_writes_empty_cleans(tmp_path: Path, after_ms: str) -> None:
    """With a duration, the first clean with nothing to delete is an empty clean recording the earliest
    retained commit; the next are written once the last clean is older than the duration (an hour: not
    within this test); the next clean plans from the partitions written since."""
    path, model = tmp_path / "t", {}
    for n in range(8):
        _append(path, n, model, **{"hoodie.write.empty.clean.create.duration.ms": after_ms})
    cleans = _cleans(path)
    assert all(not c["partitionMetadata"] and c["earliestCommitToRetain"] for c in cleans)
    assert len(cleans) == (1 if after_ms == "3600000" else 6), cleans  # from the 3rd commit on, one is retained
    _append(path, 8, model, **{"hoodie.clean.automatic": "false"})  # the next clean's view
    scope = _scope(path, CleanConfig(commits_retained=2))
    assert scope.startswith("incremental: "), scope
    _check(path, model)


def test_the_duration_keys_values() -> None:
    """-1 (the default) or a positive interval; Hudi 1.2.0's hours key is read too, the ms key wins."""
    def cfg(**opts: str) -> CleanConfig:
        return CleanConfig.from_options(Options.parse(opts))

    assert cfg().empty_clean_after_ms == -1
    assert cfg(**{"hoodie.write.empty.clean.create.duration.ms": "250"}).empty_clean_after_ms == 250
    assert cfg(**{"hoodie.write.empty.clean.interval.hours": "2"}).empty_clean_after_ms == 7_200_000
    assert cfg(**{"hoodie.write.empty.clean.interval.hours": "2",
                  "hoodie.write.empty.clean.create.duration.ms": "5"}).empty_clean_after_ms == 5
    for key in ("hoodie.write.empty.clean.create.duration.ms", "hoodie.write.empty.clean.interval.hours"):
        for bad in ("0", "-2"):
            with pytest.raises(InvalidConfigError, match="use -1 or at least 1"):
                cfg(**{key: bad})


def _draft(earliest: str | None) -> CleanPlanDraft:
    from pyhudi.timeline.instant import Instant, State

    inst = Instant(earliest, Action.COMMIT, State.COMPLETED) if earliest else None
    return CleanPlanDraft("KEEP_LATEST_COMMITS", inst, earliest or "")


@pytest.mark.parametrize(("after_ms", "age_ms", "due"), [(1, 2, True), (-1, 10**9, False),
                                                          (60_000, 30_000, False), (60_000, 90_000, True)])
def test_due_follows_the_duration_since_the_last_clean(tmp_path: Path, after_ms: int, age_ms: int,
                                                       due: bool) -> None:
    """Hudi's rule (J:CleanPlanActionExecutor#requestClean): due when the last clean was requested more than the
    duration ago, whether or not the earliest retained commit moved; never without one or by file versions."""
    path, model = tmp_path / "t", {}
    for n in range(5):
        _append(path, n, model, **{"hoodie.write.empty.clean.create.duration.ms": "1"})
    timeline = ActiveTimeline.load(Storage(str(path)))
    last = timeline.completed().actions(Action.CLEAN).last()
    assert last is not None
    newer = timeline.commits().completed().last()
    assert newer is not None
    cfg = CleanConfig(commits_retained=2, empty_clean_after_ms=after_ms)
    now = instant_to_ms(last.timestamp) + age_ms
    assert empty_clean_due(timeline, _draft(newer.timestamp), cfg, False, now) is due
    same = str(_cleans(path)[-1]["earliestCommitToRetain"])
    assert empty_clean_due(timeline, _draft(same), cfg, False, now) is due
    assert empty_clean_due(timeline, _draft(None), cfg, False, now) is False
    by_versions = CleanConfig(policy="KEEP_LATEST_FILE_VERSIONS", empty_clean_after_ms=after_ms)
    assert empty_clean_due(timeline, _draft(None), by_versions, False, now) is False
    off = CleanConfig(commits_retained=2, empty_clean_after_ms=after_ms, incremental=False)
    assert empty_clean_due(timeline, _draft(newer.timestamp), off, False, now) is False


def test_an_empty_cleans_retained_commit_never_goes_back(tmp_path: Path) -> None:
    """Retaining more commits than the last clean did would move the earliest retained commit back: the empty
    clean keeps the last clean's (apache/hudi#18587)."""
    path, model = tmp_path / "t", {}
    for n in range(6):
        _append(path, n, model, **{"hoodie.write.empty.clean.create.duration.ms": "1"})
    before = str(_cleans(path)[-1]["earliestCommitToRetain"])
    _append(path, 6, model, **{"hoodie.write.empty.clean.create.duration.ms": "1",
                               "hoodie.cleaner.commits.retained": "4", "hoodie.keep.min.commits": "5"})
    after = str(_cleans(path)[-1]["earliestCommitToRetain"])
    assert after == before and len(_cleans(path)) >= 2
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
    assert cleans and all(c["partitionMetadata"] for c in cleans)
    retained = [str(c["earliestCommitToRetain"]) for c in cleans]
    assert retained == sorted(set(retained)), retained
    _check(path, model)


def test_explain_says_what_the_clean_scanned(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`pyhudi clean --explain` names the clean's scope: no clean yet (nothing to list), an empty clean with a
    duration, then incremental."""
    from pyhudi.cli.main import main

    path, model = tmp_path / "t", {}
    for n in range(4):
        _append(path, n, model, **{"hoodie.clean.automatic": "false"})
    assert main(["clean", str(path), "-o", "hoodie.cleaner.commits.retained=2", "--explain"]) == 0
    first = capsys.readouterr().out
    assert "plan: clean: no clean yet: 0 partition(s) where commits before the earliest retained commit" in first
    assert "empty clean" not in first and _cleans(path) == []
    duration = "hoodie.write.empty.clean.create.duration.ms=1"
    assert main(["clean", str(path), "-o", "hoodie.cleaner.commits.retained=2", "-o", duration, "--explain"]) == 0
    second = capsys.readouterr().out
    assert "plan: clean: nothing to delete; an empty clean records the earliest retained commit" in second, second
    _append(path, 4, model, **{"hoodie.clean.automatic": "false"})
    assert main(["clean", str(path), "-o", "hoodie.cleaner.commits.retained=2", "--explain"]) == 0
    third = capsys.readouterr().out
    assert "plan: clean: incremental: 0 partition(s) where commits in" in third, third
    _check(path, model)
