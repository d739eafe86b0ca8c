"""File-system view: which files make up the table, on the samples (checked against Spark's gold output)
and on synthetic tables built from hand-written instant files and empty data files."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pyhudi.model.commit_metadata import CommitMetadata
from pyhudi.model.file_names import parse_base_file
from pyhudi.model.table_config import COW, MOR, load_table_config
from pyhudi.storage import Storage
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.builder import build_view
from pyhudi.view.file_system_view import FileGroup, FileSlice, FileSystemView, LogFile, PendingCompaction
from tests.unit._samples import SampleTables, manifest, sample_names
from tests.unit._tables import T, Table


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    return SampleTables(tmp_path_factory.mktemp("fsv_samples"))


def _sample_view(samples, name) -> FileSystemView:
    storage = Storage(str(samples.root(name)))
    return build_view(storage, load_table_config(storage), ActiveTimeline.load(storage))


def _rows(root: Path, paths) -> int:
    return sum(pq.ParquetFile(root / p).metadata.num_rows for p in paths)


# ----------------------------------------------------------------------------- samples
@pytest.mark.parametrize("name", sample_names())
def test_sample_latest_files_match_spark_gold(samples, name):
    facts = manifest()[name]
    view = _sample_view(samples, name)
    base_files = view.all_latest_base_files()
    slices = view.all_latest_file_slices()
    if not facts["completed_instants"]:
        assert base_files == [] and slices == []
        return
    # one latest slice per live file group, each with a committed base file in these samples
    assert len({(s.partition, s.file_id) for s in slices}) == len(slices)
    assert {(b.partition, b.file_id) for b in base_files} == {(s.partition, s.file_id) for s in slices}
    if facts["gold"]["snapshot_has_meta_columns"]:
        gold = pq.read_table(samples.gold_snapshot(name), columns=["_hoodie_file_name"])
        gold_names = set(gold.column(0).to_pylist())
        gold_base = {n for n in gold_names if n.endswith(".parquet")}
        assert {b.name for b in base_files} == gold_base
        gold_ids = {parse_base_file(n).file_id if n.endswith(".parquet") else n for n in gold_names}
        assert {s.file_id for s in slices} == gold_ids
    if facts["table_type"] == COW:
        assert _rows(samples.root(name), [b.path for b in base_files]) == facts["snapshot_rows"]
        assert all(not s.has_logs for s in slices)
    else:
        assert _rows(samples.root(name), [b.path for b in base_files]) == facts["read_optimized_rows"]
        assert sum(len(s.log_files) for s in slices) == (
            0 if "overwritetable" in name else facts["log_files"])


@pytest.mark.parametrize("name", [n for n in sample_names() if "empty" not in n])
def test_sample_time_travel_to_first_instant(samples, name):
    facts = manifest()[name]
    first = facts["completed_instants"][0]["instant"]
    view = _sample_view(samples, name)
    files = view.all_latest_base_files(as_of=first)
    assert all(b.instant <= first for b in files)
    assert _rows(samples.root(name), [b.path for b in files]) == facts["as_of_first_instant_rows"]
    # as of the latest instant is the same as no as_of
    last = facts["completed_instants"][-1]["instant"]
    assert {b.path for b in view.all_latest_base_files(as_of=last)} == {b.path for b in view.all_latest_base_files()}


def test_cow_sample_versions(samples):
    view = _sample_view(samples, "cow__v6_simplekeygen_nonhivestyle")
    assert [b.name for b in view.latest_base_files("10")] == [
        "97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0_0-119-166_20240418172804498.parquet"]
    assert [b.name for b in view.latest_base_files("10", as_of="20240418172802262")] == [
        "97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0_1-98-142_20240418172802262.parquet"]
    assert view.latest_base_files("30", as_of="20240418172802262") == []
    (group,) = view.file_groups("10")
    assert [s.base_instant for s in group.slices] == ["20240418172802262", "20240418172804498"]
    b = view.latest_base_files("10")[0]
    assert b.size == (samples.root("cow__v6_simplekeygen_nonhivestyle") / b.path).stat().st_size
    assert b.path == f"10/{b.name}" and b.write_token == "0-119-166"


@pytest.mark.parametrize("name", ["cow__v6_simplekeygen_nonhivestyle_overwritetable",
                                  "mor_parquet__v6_simplekeygen_nonhivestyle_overwritetable"])
def test_overwritetable_samples_hide_replaced_groups(samples, name):
    facts = manifest()[name]
    view = _sample_view(samples, name)
    replace_ts = facts["completed_instants"][2]["instant"]
    before = facts["completed_instants"][1]["instant"]
    replaced = view.replaced_file_ids()
    assert len(replaced) == 3 and {p for p, _ in replaced} == {"10", "20", "30"}
    assert view.replaced_file_ids(as_of=before) == set()
    assert view.latest_base_files("10") == [] and view.latest_base_files("20") == []
    assert view.latest_file_slices("10") == [] and view.latest_file_slices("20") == []
    (only,) = view.latest_base_files("30")
    assert only.instant == replace_ts
    # replaced groups are still there for services that need them (cleaner)
    assert {g.file_id for g in view.file_groups("10")} == {fid for p, fid in replaced if p == "10"}
    # before the replacecommit, they are live again
    assert len(view.all_latest_base_files(as_of=before)) == 3
    assert all(b.instant < replace_ts for b in view.all_latest_base_files(as_of=before))


def test_mor_sample_slice_with_log(samples):
    view = _sample_view(samples, "trips_mor_avro__v6_trips_8i1u")
    (sl,) = view.latest_file_slices("city=san_francisco")
    assert sl.file_id == "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0"
    assert sl.base_instant == "20250331030642808"
    assert sl.base_file.name == "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_0-13-60_20250331030642808.parquet"
    (lf,) = sl.log_files
    assert (lf.name, lf.version, lf.write_token, lf.size) == (
        ".d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_20250331030642808.log.1_0-26-85", 1, "0-26-85", 1148)
    assert sl.all_paths() == [f"city=san_francisco/{sl.base_file.name}", f"city=san_francisco/{lf.name}"]
    assert sl.estimated_parquet_size(0.35) == sl.base_file.size + int(1148 * 0.35)


# ----------------------------------------------------------------------------- synthetic tables
def _names(files) -> set[str]:
    return {f.name for f in files}


def test_pending_unknown_hidden_archived_visible(tmp_path):
    t = Table(tmp_path)
    t.instant(T(10), "commit")
    t.instant(T(30), "commit", "inflight")
    t.instant(T(40), "commit", "requested")
    a1 = t.base("p=1", "a-0", T(10))
    old = t.base("p=1", "old-0", T(5))        # older than the active timeline: archived, committed
    t.base("p=1", "ghost-0", T(20))           # between active instants, not on the timeline: failed write
    t.base("p=1", "a-0", T(30))               # new version by an inflight commit
    t.base("p=1", "b-0", T(30))
    t.base("p=1", "c-0", T(40))               # requested-only commit
    t.base("p=1", "future-0", T(99))          # newer than everything
    view = t.view()
    assert _names(view.latest_base_files("p=1")) == {a1, old}
    assert {s.file_id for s in view.latest_file_slices("p=1")} == {"a-0", "old-0"}
    assert view.is_committed(T(5)) and view.is_committed(T(10))
    assert not view.is_committed(T(20)) and not view.is_committed(T(30)) and not view.is_committed(T(99))
    assert not view.is_committed(T(10), as_of=T(9))


@pytest.mark.parametrize("first_action", ["clean", "rollback"])
def test_archived_cutoff_is_the_first_write_instant(tmp_path, first_action):
    """Hudi archives cleans/rollbacks by their own count, so a clean or rollback can stay on the active
    timeline while later commits are archived. Hudi's view (containsOrBeforeTimelineStarts on the completed
    write timeline) treats anything older than the first active *write* instant as archived, so data of
    archived commits newer than such a clean stays visible."""
    t = Table(tmp_path)
    t.instant(T(10), first_action)
    t.instant(T(20), "commit")
    very_old = t.base("p=1", "a-0", T(3))
    archived = t.base("p=1", "b-0", T(15))  # its commit was archived; the older clean stayed active
    current = t.base("p=1", "c-0", T(20))
    assert _names(t.view().latest_base_files("p=1")) == {very_old, archived, current}


def test_pending_first_instant_is_not_archived(tmp_path):
    t = Table(tmp_path)
    t.instant(T(5), "commit", "inflight")
    t.instant(T(10), "commit")
    old = t.base("p=1", "a-0", T(3))
    t.base("p=1", "b-0", T(5))  # inflight: never visible
    t.base("p=1", "c-0", T(7))  # unknown instant after the (pending) start of the timeline
    good = t.base("p=1", "d-0", T(10))
    assert _names(t.view().latest_base_files("p=1")) == {old, good}


def test_empty_timeline_shows_nothing(tmp_path):
    t = Table(tmp_path)
    t.base("p=1", "a-0", T(1))
    view = t.view()
    assert view.latest_base_files("p=1") == [] and view.all_latest_file_slices() == []


def test_versions_and_time_travel(tmp_path):
    t = Table(tmp_path)
    names = {}
    for n in (10, 30, 50):
        t.instant(T(n), "commit")
        names[n] = t.base("p=1", "a-0", T(n), token=f"0-{n}-1")
    view = t.view()
    assert _names(view.latest_base_files("p=1")) == {names[50]}
    assert _names(view.latest_base_files("p=1", as_of=T(50))) == {names[50]}
    assert _names(view.latest_base_files("p=1", as_of=T(49))) == {names[30]}
    assert _names(view.latest_base_files("p=1", as_of=T(30))) == {names[30]}
    assert _names(view.latest_base_files("p=1", as_of=T(10))) == {names[10]}
    assert view.latest_base_files("p=1", as_of=T(9)) == []
    assert [s.base_instant for s in view.latest_file_slices("p=1", as_of=T(40))] == [T(30)]
    (group,) = view.file_groups("p=1")
    assert [s.base_instant for s in group.slices] == [T(10), T(30), T(50)]
    assert group.latest_slice().base_instant == T(50)
    assert group.latest_slice(before_or_on=T(31)).base_instant == T(30)
    assert group.latest_slice(before_or_on=T(1)) is None


def test_failed_task_attempt_duplicate_keeps_one_base_file(tmp_path):
    t = Table(tmp_path)
    t.instant(T(10), "commit")
    t.base("p=1", "a-0", T(10), token="0-1-1")
    t.base("p=1", "a-0", T(10), token="0-1-2")
    view = t.view()
    assert len(view.latest_base_files("p=1")) == 1
    (group,) = view.file_groups("p=1")
    assert len(group.slices) == 1 and group.slices[0].base_file is not None


def test_replacecommit_hides_groups_and_time_travel(tmp_path):
    t = Table(tmp_path)
    t.instant(T(10), "commit")
    x, y, z = t.base("p=1", "x-0", T(10)), t.base("p=1", "y-0", T(10)), t.base("p=2", "z-0", T(10))
    t.instant(T(20), "replacecommit", meta=CommitMetadata(
        operation_type="INSERT_OVERWRITE", partition_to_replace_file_ids={"p=1": ["x-0"], "p=2": ["z-0"]}))
    w = t.base("p=1", "w-0", T(20))
    # a newer version of a replaced group does not bring it back
    t.instant(T(25), "commit")
    t.base("p=1", "x-0", T(25))
    # a pending replacecommit does not hide anything
    t.instant(T(30), "replacecommit", "inflight")
    (t.hoodie / f"{T(30)}.replacecommit.inflight").write_bytes(CommitMetadata(
        operation_type="INSERT_OVERWRITE", partition_to_replace_file_ids={"p=1": ["y-0"]}).to_bytes())
    view = t.view()
    assert view.partition_paths == ["p=1", "p=2"]
    assert _names(view.latest_base_files("p=1")) == {y, w}
    assert view.latest_base_files("p=2") == []
    assert {s.file_id for s in view.latest_file_slices("p=1")} == {"y-0", "w-0"}
    assert view.replaced_file_ids() == {("p=1", "x-0"), ("p=2", "z-0")}
    assert view.replaced_file_ids(as_of=T(19)) == set()
    assert _names(view.latest_base_files("p=1", as_of=T(10))) == {x, y}
    assert _names(view.latest_base_files("p=2", as_of=T(10))) == {z}
    assert {g.file_id for g in view.file_groups("p=1")} == {"x-0", "y-0", "w-0"}


def test_mor_pending_compaction(tmp_path):
    t = Table(tmp_path, table_type=MOR)
    t.instant(T(10), "deltacommit")
    m_base = t.base("p=1", "m-0", T(10), size=100)
    n_base = t.base("p=1", "n-0", T(10), size=200)
    t.instant(T(20), "deltacommit")
    m_log1 = t.log("p=1", "m-0", T(10), 1, size=50)
    n_log1 = t.log("p=1", "n-0", T(10), 1, size=60)
    t.instant(T(30), "compaction", "inflight")      # compaction of m-0 scheduled and running
    t.base("p=1", "m-0", T(30), size=150)             # written by the running compaction, not committed
    t.instant(T(40), "deltacommit")
    m_log_after = t.log("p=1", "m-0", T(30), 1, size=70)  # logs after scheduling use the compaction instant
    pending = [PendingCompaction(T(30), "p=1", "m-0")]
    view = t.view(pending_compactions=pending)

    assert view.pending_compaction_instants == frozenset({T(30)})
    assert view.pending_compaction_file_ids() == {("p=1", "m-0"): T(30)}
    assert _names(view.latest_base_files("p=1")) == {m_base, n_base}

    slices = {s.file_id: s for s in view.latest_file_slices("p=1")}
    assert set(slices) == {"m-0", "n-0"}
    assert slices["m-0"].base_instant == T(30)
    assert slices["m-0"].base_file is None
    assert [lf.name for lf in slices["m-0"].log_files] == [m_log_after]
    assert slices["n-0"].base_file.name == n_base
    assert [lf.name for lf in slices["n-0"].log_files] == [n_log1]

    no_pending = view.latest_file_slices("p=1", include_pending_compaction=False)
    assert [s.file_id for s in no_pending] == ["n-0"]

    # the slice before the compaction still carries its base file and logs
    (m_group,) = [g for g in view.file_groups("p=1") if g.file_id == "m-0"]
    assert [(s.base_instant, s.base_file.name if s.base_file else None, [lf.name for lf in s.log_files])
            for s in m_group.slices] == [(T(10), m_base, [m_log1]), (T(30), None, [m_log_after])]

    # once the compaction completes (as a commit), its base file becomes the latest
    (t.hoodie / f"{T(30)}.commit").write_bytes(CommitMetadata(compacted=True, operation_type="COMPACT").to_bytes())
    view = t.view()
    slices = {s.file_id: s for s in view.latest_file_slices("p=1", include_pending_compaction=False)}
    assert slices["m-0"].base_instant == T(30)
    assert slices["m-0"].base_file.size == 150
    assert [lf.name for lf in slices["m-0"].log_files] == [m_log_after]
    assert {b.instant for b in view.latest_base_files("p=1")} == {T(10), T(30)}


def test_log_only_slice_of_pending_deltacommit_is_hidden(tmp_path):
    """Hudi's isFileSliceCommitted: a slice whose base instant is not a completed (or archived) instant or a
    pending compaction is not visible, so a new log-only file group of an inflight deltacommit is hidden."""
    t = Table(tmp_path, table_type=MOR)
    t.instant(T(10), "deltacommit")
    a_base = t.base("p=1", "a-0", T(10))
    t.instant(T(20), "deltacommit", "inflight")
    a_log = t.log("p=1", "a-0", T(10), 1)        # append to a committed slice: slice visible, blocks filtered later
    t.log("p=1", "fresh-0", T(20), 1)           # new log-only group of the inflight deltacommit
    view = t.view()
    slices = view.latest_file_slices("p=1")
    assert [s.file_id for s in slices] == ["a-0"]
    assert slices[0].base_file.name == a_base and [lf.name for lf in slices[0].log_files] == [a_log]


def test_log_only_slice_of_unknown_instant_is_hidden(tmp_path):
    t = Table(tmp_path, table_type=MOR)
    t.instant(T(10), "deltacommit")
    t.instant(T(30), "deltacommit")
    t.log("p=1", "ghost-0", T(20), 1)
    assert t.view().latest_file_slices("p=1") == []


def test_log_only_slice_of_completed_deltacommit_is_visible(tmp_path):
    t = Table(tmp_path, table_type=MOR)
    t.instant(T(10), "deltacommit")
    name = t.log("p=1", "fresh-0", T(10), 1, size=1000)
    (sl,) = t.view().latest_file_slices("p=1")
    assert sl.base_file is None and [lf.name for lf in sl.log_files] == [name]
    assert sl.base_size == 0 and sl.log_size == 1000
    assert sl.estimated_parquet_size(0.35) == 350


def test_log_versions_sorted_numerically(tmp_path):
    t = Table(tmp_path, table_type=MOR)
    t.instant(T(10), "deltacommit")
    t.base("p=1", "a-0", T(10))
    for v in (10, 2, 1):
        t.log("p=1", "a-0", T(10), v, token=f"0-{v}-1")
    (sl,) = t.view().latest_file_slices("p=1")
    assert [lf.version for lf in sl.log_files] == [1, 2, 10]


def test_junk_files_are_ignored(tmp_path):
    t = Table(tmp_path)
    t.instant(T(10), "commit")
    good = t.base("p=1", "a-0", T(10))
    d = tmp_path / "p=1"
    for junk in (".DS_Store", ".hoodie_partition_metadata", "_SUCCESS", "notes.txt",
                 "part-00000-34daeedf-3baa-40b1-90b5-dc398a341a4f-c000.snappy.parquet", ".a-0_x.crc"):
        (d / junk).write_bytes(b"junk")
    (d / "nested").mkdir()
    (d / "nested" / f"b-0_0-1-1_{T(10)}.parquet").write_bytes(b"x")
    view = t.view()
    assert _names(view.latest_base_files("p=1")) == {good}
    assert [g.file_id for g in view.file_groups("p=1")] == ["a-0"]


def test_nonpartitioned_table(tmp_path):
    t = Table(tmp_path, partitioned=False)
    t.instant(T(10), "commit")
    name = t.base("", "a-0", T(10))
    (tmp_path / ".hoodie_partition_metadata").write_bytes(b"#partition metadata\n")
    view = t.view()
    assert view.partition_paths == [""]
    (b,) = view.all_latest_base_files()
    assert b.name == name and b.path == name and b.partition == ""


def test_file_slice_helpers():
    logs = [LogFile("p", ".f_1.log.1_0-1-1", "f", "1", 1, "0-1-1", 200),
            LogFile("p", ".f_1.log.2_0-1-1", "f", "1", 2, "0-1-1", 0),
            LogFile("p", ".f_1.log.3_0-1-1", "f", "1", 3, "0-1-1", 100)]
    sl = FileSlice("p", "f", "1", None, logs)
    assert sl.log_size == 300 and sl.has_logs and sl.base_size == 0
    assert sl.estimated_parquet_size(0.35) == int(300 * 0.35)
    assert sl.all_paths() == ["p/.f_1.log.1_0-1-1", "p/.f_1.log.2_0-1-1", "p/.f_1.log.3_0-1-1"]
    empty = FileGroup("p", "f")
    assert empty.latest_slice() is None
