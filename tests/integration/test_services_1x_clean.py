"""The cleaner on Hudi 1.x tables (versions 8 and 9, timeline layout 2), on copies of the 1.x samples.

After several writes (and a compaction on MERGE_ON_READ) a clean keeping one commit deletes the older file
versions, rows read by pyhudi and hudi-rs stay those of the model, and the clean's timeline files are Hudi
1.x's: `<t>.clean.requested` (HoodieCleanerPlan), an empty `<t>.clean.inflight` (ActiveTimelineV2), then
`<t>_<completion>.clean` (HoodieCleanMetadata). A savepoint keeps its files through cleans until it is
deleted; a pending clustering (its own action on layout 2) caps the earliest commit to retain as Hudi 1.x's
commits-and-compaction timeline does.
"""

from __future__ import annotations

import os
import re
import zipfile

import pytest

import pyhudi
from pyhudi import faults
from pyhudi.model import avro_models as am
from tests.helpers import SAMPLES_1X, hudi_rs
from tests.integration.test_services_1x_rollback import OPTS, Table, completed

RETAIN_ONE = {**OPTS, "hoodie.cleaner.commits.retained": "1"}
COMPACT = {**OPTS, "hoodie.compact.inline.max.delta.commits": "1"}


def _files(t: Table) -> set[str]:
    return {os.path.relpath(os.path.join(d, f), t.path) for d, _, fs in os.walk(t.path) if "/.hoodie" not in d + "/"
            for f in fs if not f.startswith(".hoodie_partition")}


@pytest.mark.parametrize("name", ["cow_v9_txns_simple_meta", "mor_avro_v9_txns_simple_meta",
                                  "cow_v8_nonpartitioned"])
def test_clean_after_updates_deletes_old_versions_and_reads_stay_equal(tmp_path, name):
    t = Table(name, tmp_path)
    for _ in range(3):
        t.write(updates=3, inserts=0)
    if "mor" in name:
        assert pyhudi.compact(None, t.path, COMPACT)
    last = t.write(updates=3, inserts=0)
    t.check()
    before = _files(t)

    (result,) = pyhudi.clean(None, t.path, RETAIN_ONE)
    assert result.deleted > 0 and result.failed == 0 and result.earliest_retained == last
    c = result.instant
    assert t.names(c) == [f"{c}.clean.inflight", f"{c}.clean.requested", completed(t, c, "clean")]
    assert (t.timeline / f"{c}.clean.inflight").read_bytes() == b"", "Hudi 1.x leaves a clean's inflight empty"
    plan = t.avro(f"{c}.clean.requested")
    assert plan["earliestInstantToRetain"]["timestamp"] == last and plan["policy"] == "KEEP_LATEST_COMMITS"
    planned = {os.path.relpath(f["filePath"].split("://", 1)[1], t.path)
               for infos in plan["filePathsToBeDeletedPerPartition"].values() for f in infos}
    meta = t.avro(completed(t, c, "clean"))
    assert meta["earliestCommitToRetain"] == last and meta["totalFilesDeleted"] == len(planned) == result.deleted
    assert before - _files(t) == planned, "exactly the planned files are gone"
    assert not [f for f in planned if last in os.path.basename(f)], "the retained commit's files stay"
    t.check()
    t.write()
    t.check()


@pytest.mark.parametrize("point", ["clean.after_plan", "timeline.before_inflight", "clean.mid_delete",
                                   "clean.before_commit"])
def test_clean_interrupted_at_each_step_reads_right_and_the_next_clean_finishes_it(tmp_path, monkeypatch, point):
    t = Table("mor_avro_v9_txns_simple_meta", tmp_path)
    for _ in range(2):
        t.write(updates=3, inserts=0)
    assert pyhudi.compact(None, t.path, COMPACT)
    t.write(updates=3, inserts=0)
    monkeypatch.setenv(faults.RAISE_ENV, point)
    faults.reset()
    with pytest.raises(faults.InjectedFault):
        pyhudi.clean(None, t.path, RETAIN_ONE)
    monkeypatch.delenv(faults.RAISE_ENV)
    t.check()
    (pending,) = {n.split(".")[0] for n in t.names() if ".clean." in n} - {n.split("_")[0] for n in t.names() if "_" in n}
    results = pyhudi.clean(None, t.path, RETAIN_ONE)
    assert results[0].instant == pending and completed(t, pending, "clean") in t.names(pending)
    assert (t.timeline / f"{pending}.clean.inflight").read_bytes() == b""
    t.check()


def test_savepointed_files_survive_cleans_until_the_savepoint_is_deleted(tmp_path):
    t = Table("cow_v9_txns_simple_meta", tmp_path)
    t.write(updates=3, inserts=1)
    sp = pyhudi.savepoint(None, t.path, options=OPTS)
    saved = t.model()
    meta = t.avro(completed(t, sp, "savepoint"))
    kept = {os.path.join(p, f) for p, pm in meta["partitionMetadata"].items() for f in pm["savepointDataFile"]}
    for _ in range(3):
        t.write(updates=3, inserts=0)
    pyhudi.clean(None, t.path, RETAIN_ONE)
    assert kept <= _files(t), "savepointed files are never cleaned"
    assert t.bag(pyhudi.read(t.path, {"as.of.instant": sp})) == saved
    assert t.bag(hudi_rs(t.path, as_of=sp)) == saved
    t.check()

    from pyhudi.services.restore import delete_savepoint  # `pyhudi savepoint PATH delete` in the CLI
    from pyhudi.storage import Storage

    delete_savepoint(Storage(t.path), sp)
    assert not [n for n in t.names(sp) if ".savepoint" in n]
    t.write(updates=3, inserts=0)
    pyhudi.clean(None, t.path, RETAIN_ONE)
    assert kept - _files(t), "once the savepoint is gone its old versions are cleaned"
    t.check()


def test_pending_clustering_caps_the_earliest_commit_to_retain(tmp_path):
    """Hudi 1.x's CleanerUtils.getEarliestCommitToRetain over getCommitsAndCompactionTimeline (which lists
    CLUSTERING_ACTION): the earliest retained commit is never after the first pending instant."""
    from pyhudi.services.clean_plan import earliest_commit_to_retain
    from pyhudi.storage import Storage
    from pyhudi.timeline.timeline import ActiveTimeline
    from pyhudi.writer.config import CleanConfig

    with zipfile.ZipFile(SAMPLES_1X / "tables" / "cow_v9_txns_simple_meta.zip") as z:
        props = z.read("cow_v9_txns_simple_meta/.hoodie/hoodie.properties").decode()
    (tmp_path / ".hoodie" / "timeline").mkdir(parents=True)
    (tmp_path / ".hoodie" / "hoodie.properties").write_text(props)
    for f in ["{100}_{101}.commit", "{110}_{111}.commit", "{115}.clustering.requested", "{120}_{121}.commit",
              "{130}_{131}.commit", "{140}_{141}.commit"]:
        name = re.sub(r"\{(\d+)\}", lambda m: f"20260101000000{int(m.group(1)):03d}", f)
        (tmp_path / ".hoodie" / "timeline" / name).write_bytes(b"")
    timeline = ActiveTimeline.load(Storage(str(tmp_path)))
    earliest = earliest_commit_to_retain(timeline, CleanConfig(commits_retained=1))
    assert earliest is not None and earliest.timestamp == "20260101000000110", \
        "a pending clustering keeps every commit from the one before it"


def test_completed_clean_metadata_round_trips_as_hudi_avro(tmp_path):
    t = Table("mor_avro_v9_txns_simple_meta", tmp_path)
    for _ in range(2):
        t.write(updates=2, inserts=0)
    assert pyhudi.compact(None, t.path, COMPACT)
    t.write(updates=2, inserts=0)
    (result,) = pyhudi.clean(None, t.path, RETAIN_ONE)
    raw = (t.timeline / completed(t, result.instant, "clean")).read_bytes()
    assert raw.startswith(am.AVRO_MAGIC) and am.read_instant_avro(raw, "HoodieCleanMetadata")["startCleanTime"] == \
        result.instant
    # A second clean with nothing new to delete resumes nothing and leaves no pending clean.
    pyhudi.clean(None, t.path, RETAIN_ONE)
    assert not [n for n in t.names() if n.endswith((".clean.requested", ".clean.inflight"))
                and not t.names(n.split(".")[0] + "_")]
    t.check()


def test_a_savepoint_deleted_since_the_last_clean_makes_the_next_clean_scan_every_partition(tmp_path):
    """Hudi 1.x records the savepoints in a clean's extraMetadata (savepointed_timestamps) and scans every
    partition once one of them is gone (CleanPlanner#isAnySavepointDeleted)."""
    import io

    import fastavro

    from pyhudi.services.restore import delete_savepoint
    from pyhudi.storage import Storage

    t = Table("cow_v9_txns_simple_meta", tmp_path)
    t.write(updates=3, inserts=0)
    sp = pyhudi.savepoint(None, t.path, options=OPTS)
    for _ in range(2):
        t.write(updates=3, inserts=0)
    (done,) = pyhudi.clean(None, t.path, RETAIN_ONE)
    name = completed(t, done.instant, "clean")
    schema = am.avro_schema("HoodieCleanMetadata")
    schema["fields"].append({"name": "extraMetadata", "type": ["null", {"type": "map", "values": "string"}],
                             "default": None})
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), [{**t.avro(name), "extraMetadata": {"savepointed_timestamps": sp}}])
    (t.timeline / name).write_bytes(buf.getvalue())  # the clean as a Hudi 1.x cleaner records it
    delete_savepoint(Storage(t.path), sp)
    t.write(updates=3, inserts=0)
    draft = pyhudi.clean(None, t.path, RETAIN_ONE, dry_run=True)
    assert draft.scope == f"full scan: savepoint {sp}, recorded by the last clean, was deleted since"


@pytest.mark.spark
def test_clean_on_spark(spark, tmp_path):
    t = Table("cow_v9_txns_simple_meta", tmp_path)
    for _ in range(3):
        t.write(updates=3, inserts=0)
    before = _files(t)
    (result,) = pyhudi.clean(spark, t.path, RETAIN_ONE)
    assert result.deleted > 0 and len(before - _files(t)) == result.deleted
    assert (t.timeline / f"{result.instant}.clean.inflight").read_bytes() == b""
    t.check(spark)
