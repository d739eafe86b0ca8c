"""Hudi 1.x tables written by pyhudi: created at versions 8 and 9, version-6 tables upgraded to 8 and 9 when a write
asks for it (crash-safely), mismatched versions refused with Hudi's message, metadata tables of 1.x tables
removed only when nothing pyhudi cannot rebuild is lost, and 1.x merge semantics on writes. Every table is
checked against hudi-rs, an independent reader of versions 8 and 9. In-process writes only (no Spark).
"""

from __future__ import annotations

import json
import os
import pathlib
import time
from typing import Any

import pyarrow as pa
import pytest

import pyhudi
from pyhudi import faults
from pyhudi.errors import UnsupportedTableError
from pyhudi.model.commit_avro import commit_json_bytes, is_avro_container
from pyhudi.model.instant_time import ms_to_instant
from pyhudi.model.properties import parse_properties
from pyhudi.storage import Storage
from pyhudi.timeline.history import read_history
from pyhudi.timeline.instant import parse_instant_file
from tests.helpers import extract_sample, extract_sample_1x, hudi_rs, same_rows

P = "org.apache.hudi.common.model."
EVENT_TIME_ID = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("part", pa.string()), ("v", pa.float64())])
BASE = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.operation": "upsert", "hoodie.parquet.small.file.limit": "0"}
# What pyhudi adds in .hoodie besides Hudi's own folders (heartbeats, locks, staging of atomic writes).
PYHUDI_DIRS = {".hoodie/.heartbeat", ".hoodie/.locks", ".hoodie/.aux/.pyhudi-tmp"}


def rows(*records: tuple[str, int, str, float]) -> pa.Table:
    cols = list(zip(*records))
    return pa.Table.from_arrays([pa.array(c, f.type) for c, f in zip(cols, SCHEMA)], schema=SCHEMA)


def props(root: pathlib.Path | str) -> dict[str, str]:
    return parse_properties((pathlib.Path(root) / ".hoodie" / "hoodie.properties").read_text())


def data(table: pa.Table | None) -> dict[str, tuple[Any, ...]]:
    """(part, ts, v) by key of a read, meta columns ignored."""
    assert table is not None
    return {r["id"]: (r["part"], r["ts"], r["v"]) for r in table.to_pylist()}


def both_readers(root: pathlib.Path | str) -> dict[str, tuple[Any, ...]]:
    """The table as pyhudi reads it, checked to be what hudi-rs reads."""
    ours = data(pyhudi.read(str(root)))
    assert data(hudi_rs(root)) == ours, "hudi-rs reads other rows"
    return ours


def dirs(root: pathlib.Path) -> set[str]:
    return {str(p.relative_to(root)) for p in (root / ".hoodie").rglob("*") if p.is_dir()}


def instant_names(root: pathlib.Path, folder: str = ".hoodie") -> list[str]:
    return sorted(n for n in os.listdir(root / folder) if parse_instant_file(n) is not None)


# ============================================================================ new tables


@pytest.mark.parametrize(("version", "table_type", "sample"), [
    ("8", "COPY_ON_WRITE", "cow_v8_complexkeygen_hivestyle"), ("8", "MERGE_ON_READ", "qs_mor_avro_v8_trips_8i3u1d"),
    ("9", "COPY_ON_WRITE", "cow_v9_txns_simple_meta"), ("9", "MERGE_ON_READ", "mor_avro_v9_txns_simple_meta"),
])
def test_new_table_at_1x_version(tmp_path: pathlib.Path, version: str, table_type: str, sample: str) -> None:
    root = tmp_path / "t"
    opts = {**BASE, "hoodie.write.table.version": version, "hoodie.datasource.write.table.type": table_type}
    pyhudi.write(rows(("a", 1, "p1", 1.0), ("b", 1, "p2", 1.0)), str(root), opts)
    pyhudi.write(rows(("a", 2, "p1", 2.0), ("c", 1, "p1", 3.0)), str(root), opts)
    pyhudi.write(rows(("b", 0, "p2", 0.0)), str(root), {**opts, "hoodie.datasource.write.operation": "delete"})
    assert both_readers(root) == {"a": ("p1", 2, 2.0), "c": ("p1", 1, 3.0)}
    p = props(root)
    assert (p["hoodie.table.version"], p["hoodie.timeline.layout.version"], p["hoodie.table.initial.version"]) == \
        (version, "2", version)
    # the folders Hudi 1.x creates (the sample's, less its metadata table), no layout-1 archive folder
    theirs = dirs(extract_sample_1x(sample, tmp_path / "sample"))
    theirs = {d for d in theirs if not d.startswith((".hoodie/metadata", ".hoodie/.index_defs"))}
    ours = {d for d in dirs(root) if not d.startswith(tuple(PYHUDI_DIRS))}
    assert ours == theirs
    assert instant_names(root) == [] and all("_" in n for n in instant_names(root, ".hoodie/timeline")
                                             if parse_instant_file(n).is_completed)  # type: ignore[union-attr]
    for name in instant_names(root, ".hoodie/timeline"):
        body = (root / ".hoodie" / "timeline" / name).read_bytes()
        if parse_instant_file(name).is_completed and name.endswith(("commit", "deltacommit")):  # type: ignore[union-attr]
            assert is_avro_container(body), name


def test_existing_1x_table_is_written_at_its_version_and_never_downgraded(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "t"
    opts = {**BASE, "hoodie.write.table.version": "9"}
    pyhudi.write(rows(("a", 1, "p1", 1.0)), str(root), opts)
    pyhudi.write(rows(("b", 1, "p1", 1.0)), str(root), BASE)  # no option: version 9 stays
    assert props(root)["hoodie.table.version"] == "9"
    text = (root / ".hoodie" / "hoodie.properties").read_text()
    for asked in ("6", "8"):
        with pytest.raises(UnsupportedTableError, match=fr"Table version \(9\) and Writer version \({asked}\) do not "
                                                        f"match.*hoodie.write.table.version={asked}"):
            pyhudi.write(rows(("c", 1, "p1", 1.0)), str(root), {**BASE, "hoodie.write.table.version": asked})
    assert (root / ".hoodie" / "hoodie.properties").read_text() == text
    assert set(both_readers(root)) == {"a", "b"}


# ============================================================================ upgrades


def _v6_with_archive(root: pathlib.Path, table_type: str = "COPY_ON_WRITE") -> dict[str, Any]:
    """A version-6 table whose archival moved its first instants into .hoodie/archived."""
    opts = {**BASE, "hoodie.datasource.write.table.type": table_type, "hoodie.keep.min.commits": "2",
            "hoodie.keep.max.commits": "3", "hoodie.cleaner.commits.retained": "1"}
    for i in range(6):
        pyhudi.write(rows((f"k{i}", i, "p1", float(i)), ("k0", i, "p1", float(i))), str(root), opts)
    assert os.listdir(root / ".hoodie" / "archived"), "archival ran"
    return opts


def test_upgrade_six_to_eight(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "t"
    opts = _v6_with_archive(root)
    before = data(pyhudi.read(str(root)))
    active = instant_names(root)
    archived_at = {ts: tt for ts, tt in _archived_completion_times(root).items()}
    pyhudi.write(rows(("k9", 9, "p1", 9.0)), str(root), {**opts, "hoodie.write.table.version": "8"})
    p = props(root)
    assert {k: p[k] for k in ("hoodie.table.version", "hoodie.timeline.layout.version", "hoodie.timeline.path",
                              "hoodie.table.initial.version", "hoodie.table.keygenerator.type",
                              "hoodie.record.merge.mode", "hoodie.record.merge.strategy.id",
                              "hoodie.compaction.payload.class")} == {
        "hoodie.table.version": "8", "hoodie.timeline.layout.version": "2", "hoodie.timeline.path": "timeline",
        "hoodie.table.initial.version": "6", "hoodie.table.keygenerator.type": "SIMPLE",
        # upgradeMergeMode: a COW table without a payload class has Hudi's default, DefaultHoodieRecordPayload
        "hoodie.record.merge.mode": "EVENT_TIME_ORDERING", "hoodie.record.merge.strategy.id": EVENT_TIME_ID, "hoodie.compaction.payload.class": P + "DefaultHoodieRecordPayload"}
    assert "hoodie.pyhudi.upgrade.cleanup" not in p and instant_names(root) == []
    moved = instant_names(root, ".hoodie/timeline")
    for name in active:  # every layout-1 instant is in the timeline folder, completed ones named by completion
        inst = parse_instant_file(name)
        assert inst is not None
        if inst.is_completed:
            (found,) = [n for n in moved if n.startswith(inst.timestamp + "_") and n.endswith("." + inst.action.value)]
            completion = found.split(".")[0].split("_")[1]
            assert completion >= inst.timestamp and len(completion) == 17
            body = (root / ".hoodie" / "timeline" / found).read_bytes()
            if inst.action.value == "commit":
                assert is_avro_container(body) and json.loads(commit_json_bytes(body))["partitionToWriteStats"]
        else:
            assert name in moved
    history = {i.instant_time: i for i in read_history(Storage(str(root)), ".hoodie/timeline/history")}
    assert {ts: i.completion_time for ts, i in history.items() if ts in archived_at} == archived_at
    for ts in archived_at:
        if history[ts].action == "commit":
            assert is_avro_container(history[ts].metadata or b"")
    after = both_readers(root)
    assert after == {**before, "k9": ("p1", 9, 9.0)}


def _archived_completion_times(root: pathlib.Path) -> dict[str, str]:
    from pyhudi.timeline.archived import ArchivedTimeline

    archived = ArchivedTimeline.load(Storage(str(root)), "archived")
    out = {}
    for inst in archived.instants:
        entry = archived.entry(inst)
        if inst.is_completed and entry is not None:
            out[inst.timestamp] = str(entry.record["stateTransitionTime"])
    return out


def test_upgrade_six_to_nine_compacts_merge_on_read_first(tmp_path: pathlib.Path) -> None:
    """Hudi 0.14 wrote this MOR table (OverwriteWithLatestAvroPayload, precombine longField); 1.1 upgrades it to
    EVENT_TIME_ORDERING, so its logs are compacted by the old rules first: the rows read the same."""
    root = extract_sample("mor_parquet__v6_simplekeygen_nonhivestyle.zip", tmp_path)
    before = pyhudi.read(str(root))
    cols = [c for c in before.column_names if not c.startswith("_hoodie")]
    assert any(".log." in f for _, _, files in os.walk(root) for f in files), "the sample has log files"
    update = before.filter(pa.compute.equal(before["id"], 1)).select(cols)
    update = update.set_column(cols.index("longField"), "longField", pa.array([1], pa.int64()))  # lower ordering
    pyhudi.write(update, str(root), {"hoodie.write.table.version": "9", "hoodie.table.name": "v6_simplekeygen_nonhivestyle"})
    p = props(root)
    assert p["hoodie.table.version"] == "9" and p["hoodie.table.initial.version"] == "6"
    assert p["hoodie.table.ordering.fields"] == "longField" and "hoodie.table.precombine.field" not in p
    assert p["hoodie.table.legacy.payload.class"] == P + "DefaultHoodieRecordPayload"
    assert p["hoodie.record.merge.mode"] == "EVENT_TIME_ORDERING" and "hoodie.compaction.payload.class" not in p
    ops = [json.loads(commit_json_bytes((root / ".hoodie" / "timeline" / n).read_bytes())).get("operationType")
           for n in instant_names(root, ".hoodie/timeline") if n.endswith(".commit")]
    assert "COMPACT" in ops, "the upgrade compacted the logs of version 6"
    after = pyhudi.read(str(root))
    # EVENT_TIME_ORDERING now: the update with a lower ordering value loses to the stored record
    assert same_rows(after, before, cols)
    reference = hudi_rs(root)
    assert reference is not None and same_rows(reference, before, cols)


def test_upgrade_keeps_what_version_6_merged(tmp_path: pathlib.Path) -> None:
    """Version 6 (OverwriteWithLatestAvroPayload) lets a log record with a lower ordering value replace its base
    record; EVENT_TIME_ORDERING would not. The upgrade compacts by the old rules first, so the row stays."""
    root = tmp_path / "t"
    opts = {**BASE, "hoodie.datasource.write.table.type": "MERGE_ON_READ"}
    pyhudi.write(rows(("a", 5, "p1", 1.0), ("b", 5, "p1", 1.0)), str(root), opts)
    pyhudi.write(rows(("a", 1, "p1", 2.0)), str(root), opts)
    before = data(pyhudi.read(str(root)))
    assert before["a"] == ("p1", 1, 2.0)
    pyhudi.write(rows(("c", 1, "p1", 3.0)), str(root), {**opts, "hoodie.write.table.version": "9"})
    assert props(root)["hoodie.record.merge.mode"] == "EVENT_TIME_ORDERING"
    assert both_readers(root) == {**before, "c": ("p1", 1, 3.0)}


def test_pending_clustering_carries_over_as_the_clustering_action(tmp_path: pathlib.Path) -> None:
    """SIX_TO_EIGHT_TIMELINE_ACTION_MAP: a pending replacecommit (a clustering; every other pending write was
    rolled back) becomes `<ts>.clustering.requested`, and completes as a replacecommit after the upgrade."""
    from pyhudi.model.table_config import load_table_config
    from pyhudi.services import clustering
    from pyhudi.writer.config import ClusteringConfig

    root = tmp_path / "t"
    for i in range(3):
        pyhudi.write(rows((f"k{i}", i, "p1", float(i))), str(root), BASE)
    storage = Storage(str(root))
    plan = clustering.schedule(storage, load_table_config(storage), ClusteringConfig(), 125829120)
    assert plan is not None and f"{plan}.replacecommit.requested" in instant_names(root)
    before = data(pyhudi.read(str(root)))
    pyhudi.write(rows(("k9", 9, "p2", 9.0)), str(root), {**BASE, "hoodie.write.table.version": "8"})
    assert f"{plan}.clustering.requested" in instant_names(root, ".hoodie/timeline")
    assert not [n for n in instant_names(root, ".hoodie/timeline") if n.startswith(f"{plan}.replacecommit")]
    assert pyhudi.cluster(None, str(root), BASE) == [plan]
    assert [n for n in instant_names(root, ".hoodie/timeline") if n.startswith(f"{plan}_")][0].endswith(".replacecommit")
    assert both_readers(root) == {**before, "k9": ("p2", 9, 9.0)}


def test_upgrade_eight_to_nine(tmp_path: pathlib.Path) -> None:
    """EightToNineUpgradeHandler: the payload class becomes the legacy payload class, the ordering fields move to
    hoodie.table.ordering.fields; the merge mode and strategy id stay."""
    root = tmp_path / "t"
    opts = {**BASE, "hoodie.datasource.write.table.type": "MERGE_ON_READ", "hoodie.write.table.version": "8"}
    pyhudi.write(rows(("a", 5, "p1", 1.0)), str(root), opts)
    pyhudi.write(rows(("a", 6, "p1", 2.0)), str(root), opts)  # a log file
    eight = props(root)
    pyhudi.write(rows(("b", 1, "p1", 3.0)), str(root), {**opts, "hoodie.write.table.version": "9"})
    nine = props(root)
    assert nine["hoodie.table.version"] == "9" and nine["hoodie.table.initial.version"] == "8"
    assert nine["hoodie.table.legacy.payload.class"] == eight["hoodie.compaction.payload.class"]
    assert nine["hoodie.table.ordering.fields"] == eight["hoodie.table.precombine.field"] == "ts"
    assert {k: nine[k] for k in ("hoodie.record.merge.mode", "hoodie.record.merge.strategy.id")} == \
        {k: eight[k] for k in ("hoodie.record.merge.mode", "hoodie.record.merge.strategy.id")}
    assert not {"hoodie.compaction.payload.class", "hoodie.table.precombine.field"} & set(nine)
    assert both_readers(root) == {"a": ("p1", 6, 2.0), "b": ("p1", 1, 3.0)}


UPGRADE_POINTS = ["upgrade_1x.after_rollback", "upgrade_1x.after_prepare", "upgrade_1x.after_history",
                  "upgrade_1x.mid_copy@3", "upgrade_1x.before_flip"]


@pytest.mark.parametrize("point", UPGRADE_POINTS)
def test_interrupted_upgrade_leaves_version_6_and_resumes(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
                                                          point: str) -> None:
    root = tmp_path / "t"
    opts = _v6_with_archive(root, "MERGE_ON_READ")
    before = data(pyhudi.read(str(root)))
    text = (root / ".hoodie" / "hoodie.properties").read_text()
    monkeypatch.setenv(faults.RAISE_ENV, point)
    faults.reset()
    with pytest.raises(faults.InjectedFault):
        pyhudi.write(rows(("k9", 9, "p1", 9.0)), str(root), {**opts, "hoodie.write.table.version": "8"})
    monkeypatch.delenv(faults.RAISE_ENV)
    faults.reset()
    assert props(root)["hoodie.table.version"] == "6"
    assert (root / ".hoodie" / "hoodie.properties").read_text() == text or point == "upgrade_1x.after_rollback"
    assert data(pyhudi.read(str(root))) == before, "a version-6 reader sees the table as it was"
    pyhudi.write(rows(("k9", 9, "p1", 9.0)), str(root), {**opts, "hoodie.write.table.version": "8"})
    assert props(root)["hoodie.table.version"] == "8" and instant_names(root) == []
    assert both_readers(root) == {**before, "k9": ("p1", 9, 9.0)}


def test_interrupted_cleanup_is_finished_by_the_next_write(tmp_path: pathlib.Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "t"
    opts = _v6_with_archive(root)
    before = data(pyhudi.read(str(root)))
    monkeypatch.setenv(faults.RAISE_ENV, "upgrade_1x.mid_cleanup@2")
    faults.reset()
    with pytest.raises(faults.InjectedFault):
        pyhudi.write(rows(("k9", 9, "p1", 9.0)), str(root), {**opts, "hoodie.write.table.version": "8"})
    monkeypatch.delenv(faults.RAISE_ENV)
    faults.reset()
    p = props(root)
    assert p["hoodie.table.version"] == "8" and p["hoodie.pyhudi.upgrade.cleanup"] == "pending"
    assert instant_names(root), "layout-1 instant files are left"
    assert data(pyhudi.read(str(root))) == before, "the upgraded table reads its timeline folder"
    pyhudi.write(rows(("k9", 9, "p1", 9.0)), str(root), opts)  # any write finishes the cleanup
    assert instant_names(root) == [] and "hoodie.pyhudi.upgrade.cleanup" not in props(root)
    assert both_readers(root) == {**before, "k9": ("p1", 9, 9.0)}


def test_upgrade_refuses_live_writes_and_auto_upgrade_false_keeps_version_6(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "t"
    opts = {**BASE, "hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
            "hoodie.cleaner.policy.failed.writes": "LAZY"}
    pyhudi.write(rows(("a", 1, "p1", 1.0)), str(root), opts)
    # A live writer's instant of just now: a far-future time would move this process's instant clock
    # (instant_time.new_instant_time is monotonic per process) and every later test's instants with it.
    live = ms_to_instant(int(time.time() * 1000))
    (root / ".hoodie" / f"{live}.commit.requested").write_bytes(b"")
    (root / ".hoodie" / ".heartbeat").mkdir(exist_ok=True)
    (root / ".hoodie" / ".heartbeat" / live).write_bytes(b"")  # a heartbeat just now: a live writer
    text = (root / ".hoodie" / "hoodie.properties").read_text()
    with pytest.raises(UnsupportedTableError, match=f"{live}.*pending.*nothing was changed"):
        pyhudi.write(rows(("b", 1, "p1", 1.0)), str(root), {**opts, "hoodie.write.table.version": "8"})
    assert (root / ".hoodie" / "hoodie.properties").read_text() == text and not (root / ".hoodie" / "timeline").exists()
    pyhudi.write(rows(("b", 1, "p1", 1.0)), str(root), {**opts, "hoodie.write.table.version": "8",
                                                        "hoodie.write.auto.upgrade": "false"})
    assert props(root)["hoodie.table.version"] == "6"


# ============================================================================ metadata tables of 1.x tables


def _sample_update(root: pathlib.Path) -> pa.Table:
    t = pyhudi.read(str(root))
    return t.slice(0, 1).select([c for c in t.column_names if not c.startswith("_hoodie")])


def test_metadata_table_with_unrebuildable_index(tmp_path: pathlib.Path) -> None:
    root = extract_sample_1x("cow_v9_txns_simple_meta", tmp_path)
    before = both_readers_raw(root)
    update = _sample_update(root)
    text = (root / ".hoodie" / "hoodie.properties").read_text()
    with pytest.raises(UnsupportedTableError, match="record_index, secondary_index_merchant_idx, secondary_index_txn_"
                                                    "date_idx .*hoodie.write.drop.unrebuildable.metadata.indexes=true"):
        pyhudi.write(update, str(root), {"hoodie.table.name": "v9_txns_cow_simple_meta"})
    assert (root / ".hoodie" / "hoodie.properties").read_text() == text and (root / ".hoodie" / "metadata").is_dir()
    pyhudi.write(update, str(root), {"hoodie.table.name": "v9_txns_cow_simple_meta",
                                     "hoodie.write.drop.unrebuildable.metadata.indexes": "true"})
    p = props(root)
    assert not (root / ".hoodie" / "metadata").exists()
    assert p["hoodie.table.metadata.partitions"] == "" and p["hoodie.table.metadata.partitions.inflight"] == ""
    assert (root / p["hoodie.table.index.defs.path"]).exists(), "index definitions stay, as Hudi leaves them"
    assert both_readers_raw(root) == before  # an upsert of a stored record with its own values


def test_metadata_table_hudi_rebuilds_is_removed_without_asking(tmp_path: pathlib.Path) -> None:
    root = extract_sample_1x("mor_avro_v9_nonpartitioned_rollback", tmp_path)
    path = root / ".hoodie" / "hoodie.properties"
    path.write_text(path.read_text().replace("column_stats,files,record_index", "column_stats,files"))
    before = both_readers_raw(root)
    pyhudi.write(_sample_update(root), str(root), {"hoodie.table.name": "v9_nonpartitioned_rollback_mor"})
    assert not (root / ".hoodie" / "metadata").exists() and props(root)["hoodie.table.metadata.partitions"] == ""
    assert both_readers_raw(root) == before


def both_readers_raw(root: pathlib.Path) -> list[tuple[Any, ...]]:
    ours = pyhudi.read(str(root))
    cols = sorted(c for c in ours.column_names if not c.startswith("_hoodie"))
    reference = hudi_rs(root)
    assert reference is not None and same_rows(ours, reference, cols)
    return sorted(tuple(str(r[c]) for c in cols) for r in ours.to_pylist())


# ============================================================================ merge semantics of 1.x writes


@pytest.mark.parametrize(("version", "table_type"), [("8", "COPY_ON_WRITE"), ("9", "MERGE_ON_READ")])
def test_event_time_ordering_writes(tmp_path: pathlib.Path, version: str, table_type: str) -> None:
    """EVENT_TIME_ORDERING: in a batch the greatest ordering value wins (ties: the later record), and a stored
    record with a greater ordering value stays; a delete operation always deletes (its ordering is the default)."""
    root = tmp_path / "t"
    opts = {**BASE, "hoodie.write.table.version": version, "hoodie.datasource.write.table.type": table_type}
    pyhudi.write(rows(("a", 5, "p1", 1.0), ("a", 3, "p1", 2.0), ("b", 4, "p1", 1.0), ("b", 4, "p1", 2.0),
                      ("c", 1, "p1", 1.0)), str(root), opts)
    assert both_readers(root) == {"a": ("p1", 5, 1.0), "b": ("p1", 4, 2.0), "c": ("p1", 1, 1.0)}
    pyhudi.write(rows(("a", 4, "p1", 9.0), ("b", 4, "p1", 9.0)), str(root), opts)
    assert both_readers(root) == {"a": ("p1", 5, 1.0), "b": ("p1", 4, 9.0), "c": ("p1", 1, 1.0)}
    pyhudi.write(rows(("a", 0, "p1", 0.0)), str(root), {**opts, "hoodie.datasource.write.operation": "delete"})
    assert set(both_readers(root)) == {"b", "c"}


def test_commit_time_ordering_writes(tmp_path: pathlib.Path) -> None:
    """COMMIT_TIME_ORDERING ignores ordering values: the later record of a batch wins, and every write replaces
    the stored record, although the table records an ordering field."""
    root = tmp_path / "t"
    opts = {**BASE, "hoodie.write.table.version": "9", "hoodie.write.record.merge.mode": "COMMIT_TIME_ORDERING"}
    pyhudi.write(rows(("a", 5, "p1", 1.0), ("a", 3, "p1", 2.0)), str(root), opts)
    assert props(root)["hoodie.record.merge.mode"] == "COMMIT_TIME_ORDERING"
    assert props(root)["hoodie.table.ordering.fields"] == "ts"
    assert both_readers(root) == {"a": ("p1", 3, 2.0)}
    pyhudi.write(rows(("a", 1, "p1", 3.0)), str(root), opts)
    assert both_readers(root) == {"a": ("p1", 1, 3.0)}


def test_global_index_moves_by_event_time(tmp_path: pathlib.Path) -> None:
    """A record moving partition under a global index merges with the stored one first: a stored record with a
    greater ordering value stays where it is (HoodieIndexUtils.mergeForPartitionUpdates with the merge mode)."""
    root = tmp_path / "t"
    opts = {**BASE, "hoodie.write.table.version": "9", "hoodie.index.type": "GLOBAL_SIMPLE",
            "hoodie.simple.index.update.partition.path": "true"}
    pyhudi.write(rows(("a", 5, "p1", 1.0), ("b", 5, "p1", 1.0)), str(root), opts)
    pyhudi.write(rows(("a", 4, "p2", 2.0), ("b", 6, "p2", 2.0)), str(root), opts)
    assert both_readers(root) == {"a": ("p1", 5, 1.0), "b": ("p2", 6, 2.0)}


def test_several_ordering_fields_are_refused_on_write(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "t"
    with pytest.raises(UnsupportedTableError, match="several fields.*hoodie.table.ordering.fields=ts,v"):
        pyhudi.write(rows(("a", 5, "p1", 1.0)), str(root),
                     {**BASE, "hoodie.write.table.version": "9", "hoodie.table.ordering.fields": "ts,v"})
    assert not (root / ".hoodie" / "hoodie.properties").exists()

