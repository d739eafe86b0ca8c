"""`pyhudi clustering PATH show|schedule|run` on hand-made tables, without Spark.

`show` and `schedule` read and write only `.hoodie/` and file listings, so sparse data files named
like Hudi's are enough. `run` is checked up to the point where it would start Spark; the Spark part
is replaced by a stand-in that completes the plans the way the service does (or conflicts).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pyhudi.cli import clustering_cmd
from pyhudi.cli.main import main
from pyhudi.errors import CommitConflictError
from pyhudi.model import avro_models as am
from pyhudi.model.commit_metadata import CommitMetadata
from pyhudi.model.table_config import COW, MOR
from pyhudi.services import clustering
from pyhudi.storage import Storage
from pyhudi.writer.config import ClusteringConfig
from tests.unit._cluster_tables import MB, ClusterTable, T

SORT = "hoodie.clustering.plan.strategy.sort.columns"
TARGET = "hoodie.clustering.plan.strategy.target.file.max.bytes"


@pytest.fixture()
def mor(tmp_path: Path) -> ClusterTable:
    """p=a: a1 10 MiB, a2 20 MiB + 1 MiB log, lo (2 MiB log only); p=b: b1 400 MiB, b2 5 MiB, b3 6 MiB;
    p=c: c1 7 MiB alone."""
    t = ClusterTable(tmp_path / "mor", MOR)
    t.write(T(1), bases=(("p=a", "a1", 10 * MB), ("p=a", "a2", 20 * MB), ("p=b", "b1", 400 * MB),
                         ("p=b", "b2", 5 * MB), ("p=b", "b3", 6 * MB), ("p=c", "c1", 7 * MB)))
    t.write(T(2), logs=(("p=a", "a2", T(1), 1, MB), ("p=a", "lo", T(2), 1, 2 * MB)))
    return t


@pytest.fixture()
def cow(tmp_path: Path) -> ClusterTable:
    t = ClusterTable(tmp_path / "cow", COW)
    t.write(T(1), bases=(("p=a", "f1", 10 * MB), ("p=a", "f2", 20 * MB), ("p=a", "f3", 30 * MB)))
    return t


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code, out, err = cli(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


# --------------------------------------------------------------------------- show
def test_show_before_any_plan(mor: ClusterTable, capsys: pytest.CaptureFixture[str]) -> None:
    data = cli_json(capsys, "clustering", str(mor.root), "show")
    assert data["pending"] == [] and data["completed"] == []
    nxt = data["next"]
    assert (nxt["groups"], nxt["file_slices"], nxt["num_output_file_groups"]) == (2, 5, 2)
    assert nxt["input_bytes"] == (10 + 20 + 1 + 2 + 5 + 6) * MB, "actual bytes: bases and logs"
    assert [(g["partition"], g["file_ids"]) for g in nxt["plan"]] == [("p=a", ["lo", "a2", "a1"]),
                                                                     ("p=b", ["b3", "b2"])]
    assert nxt["reason"] is None and "explain" not in nxt
    assert data["trigger"]["commits_since_last_clustering"] == 2
    assert data["settings"]["small_file_limit"] == 314572800 and data["settings"]["sort_columns"] == []

    code, out, err = cli(capsys, "clustering", str(mor.root), "show")
    assert code == 0 and err == ""
    assert "pending clusterings: 0" in out and "completed clusterings: 0" in out
    assert "next clustering would choose 5 file slices (44.0 MiB) in 2 groups -> 2 file groups" in out
    assert "2 commits since the last clustering (inline trigger every 4, not enabled)" in out
    assert "file slices:" not in out
    assert mor.replace_requests() == [], "show never writes"


def test_show_explain_gives_every_slice_and_partition_a_reason(mor: ClusterTable,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    data = cli_json(capsys, "clustering", str(mor.root), "show", "--explain",
                    "-o", "hoodie.clustering.plan.strategy.partition.regex.pattern=p=[ab]")
    exp = data["next"]["explain"]
    assert exp["partitions_considered"] == ["p=a", "p=b"]
    assert exp["partitions_skipped"] == {"p=c": "does not match partition.regex.pattern 'p=[ab]'"}
    rows = {d["file_id"]: d for d in exp["decisions"]}
    assert set(rows) == {"a1", "a2", "lo", "b1", "b2", "b3"}
    assert all(d["reason"] for d in rows.values())
    assert rows["b1"]["chosen"] is False and "small-file limit" in rows["b1"]["reason"]
    assert rows["b1"]["base_bytes"] == 400 * MB and rows["b1"]["group"] is None
    assert (rows["lo"]["chosen"], rows["lo"]["group"], rows["lo"]["base_file"]) == (True, 0, None)
    assert (rows["lo"]["size"], rows["lo"]["log_files"], rows["lo"]["log_bytes"]) == (125829120, 1, 2 * MB)
    assert (rows["a2"]["log_files"], rows["a2"]["log_bytes"], rows["b3"]["group"]) == (1, MB, 1)

    code, out, _ = cli(capsys, "clustering", str(mor.root), "show", "--explain",
                       "-o", "hoodie.clustering.plan.strategy.partition.regex.pattern=p=[ab]")
    assert code == 0
    assert "partitions considered: p=a, p=b" in out and "partitions skipped:" in out
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("p=b") and " b1 " in ln)
    assert "400.0 MiB" in line and " no " in line and "not below the clustering small-file limit" in line
    line = next(ln for ln in out.splitlines() if " lo " in ln)
    assert "1 (2.0 MiB)" in line and "120.0 MiB" in line and " yes " in line
    # Options change the explanation: a single slice with nothing to merge or sort is not rewritten.
    data = cli_json(capsys, "clustering", str(mor.root), "show", "--explain")
    c1 = next(d for d in data["next"]["explain"]["decisions"] if d["file_id"] == "c1")
    assert not c1["chosen"] and "rewritten unchanged" in c1["reason"]
    data = cli_json(capsys, "clustering", str(mor.root), "show", "--explain", "-o", f"{SORT}=id")
    c1 = next(d for d in data["next"]["explain"]["decisions"] if d["file_id"] == "c1")
    assert c1["chosen"] and data["next"]["groups"] == 3


# --------------------------------------------------------------------------- schedule
def test_schedule_writes_a_plan_that_show_lists(mor: ClusterTable, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "clustering", str(mor.root), "schedule", "-o", f"{SORT}=id,name",
                         "-o", "hoodie.layout.optimize.strategy=hilbert", "-o", f"{TARGET}={64 * MB}")
    assert code == 0 and err == ""
    (instant,) = mor.replace_requests()
    assert f"scheduled clustering {instant}" in out
    assert f"{instant}  requested: 3 groups, 6 file slices (51.0 MiB) -> 5 file groups; sort by id,name " \
           "(hilbert), target 64.0 MiB" in out
    meta = mor.requested(instant)
    assert meta["operationType"] == "CLUSTER"
    assert [g["numOutputFileGroups"] for g in meta["clusteringPlan"]["inputGroups"]] == [3, 1, 1]

    data = cli_json(capsys, "clustering", str(mor.root), "show")
    (pending,) = data["pending"]
    assert (pending["instant"], pending["state"], pending["note"]) == (instant, "requested", None)
    assert (pending["sort_columns"], pending["layout"], pending["target_file_max_bytes"]) == (
        ["id", "name"], "hilbert", 64 * MB)
    assert (pending["file_slices"], pending["input_bytes"], pending["num_output_file_groups"]) == (6, 51 * MB, 5)
    g0, g1, g2 = pending["groups"]
    assert (g0["partition"], g0["file_slices"], g0["log_files"], g0["input_bytes"], g0["num_output_file_groups"]) \
        == ("p=a", 3, 2, 33 * MB, 3)
    assert [s["file_id"] for s in g0["slices"]] == ["lo", "a2", "a1"]
    assert g0["slices"][1] == {"partition": "p=a", "file_id": "a2", "base_file": f"a2_0-1-1_{T(1)}.parquet",
                               "base_bytes": 20 * MB, "log_files": [f".a2_{T(1)}.log.1_0-1-1"],
                               "log_bytes": MB, "missing_files": 0}
    assert (g1["partition"], g1["input_bytes"], g2["partition"], g2["input_bytes"]) == ("p=b", 11 * MB, "p=c", 7 * MB)
    assert data["next"]["groups"] == 0
    assert data["next"]["reason"] == "6 file slices: already in a pending clustering; 1 file slice: base file is " \
                                     "not below the clustering small-file limit 314572800 B"
    _, out, _ = cli(capsys, "clustering", str(mor.root), "show")
    assert "pending clusterings: 1" in out
    row = next(ln.split() for ln in out.splitlines() if ln.strip().startswith("0  p=a"))
    assert row == ["0", "p=a", "3", "2", "33.0", "MiB", "3"]
    assert "next clustering: nothing to cluster: 6 file slices: already in a pending clustering" in out


def test_second_schedule_has_nothing_to_cluster(cow: ClusterTable, capsys: pytest.CaptureFixture[str]) -> None:
    first = cli_json(capsys, "clustering", str(cow.root), "schedule")["scheduled"]
    assert first and cow.replace_requests() == [first]
    code, out, err = cli(capsys, "clustering", str(cow.root), "schedule")
    assert code == 0 and err == ""
    assert out.splitlines()[-1] == "nothing to cluster: 3 file slices: already in a pending clustering"
    data = cli_json(capsys, "clustering", str(cow.root), "schedule", "--explain")
    assert data["scheduled"] is None and data["clustering"] is None
    assert {d["reason"] for d in data["explain"]["decisions"]} == {f"already in pending clustering {first}"}
    assert cow.replace_requests() == [first]


def test_schedule_explain_shows_the_decisions_it_was_made_from(cow: ClusterTable,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    cow.write(T(2), bases=(("p=b", "big", 400 * MB),))
    data = cli_json(capsys, "clustering", str(cow.root), "schedule", "--explain")
    assert data["scheduled"] is not None
    rows = {d["file_id"]: (d["chosen"], d["group"]) for d in data["explain"]["decisions"]}
    assert rows == {"f3": (True, 0), "f2": (True, 0), "f1": (True, 0), "big": (False, None)}
    assert [s["file_id"] for s in data["clustering"]["groups"][0]["slices"]] == ["f3", "f2", "f1"]


@pytest.mark.parametrize(("options", "reason"), [
    ((), "1 file slice: a single file group with nothing to merge or sort would be rewritten unchanged"),
    (("hoodie.clustering.plan.strategy.small.file.limit=1048576",),
     "1 file slice: base file is not below the clustering small-file limit 1048576 B"),
    (("hoodie.clustering.plan.strategy.partition.regex.pattern=zzz",),
     "no partition selected; 1 partition skipped: does not match partition.regex.pattern 'zzz'"),
])
def test_nothing_to_cluster_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str], options: tuple[str, ...],
                                     reason: str) -> None:
    t = ClusterTable(tmp_path / "one", COW)
    t.write(T(1), bases=(("p=a", "only", 10 * MB),))
    argv = [x for o in options for x in ("-o", o)]
    code, out, err = cli(capsys, "clustering", str(t.root), "schedule", *argv)
    assert code == 0 and err == ""
    assert out.splitlines() == ["table t  (COPY_ON_WRITE, version 6)  " + str(t.root), f"nothing to cluster: {reason}"]
    assert t.replace_requests() == []
    assert cli_json(capsys, "clustering", str(t.root), "show", *argv)["next"]["reason"] == reason


def test_empty_table_has_nothing_to_cluster(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    _no_spark(monkeypatch)
    t = ClusterTable(tmp_path / "empty", COW, partitioned=False)
    for action in ("schedule", "run"):
        code, out, err = cli(capsys, "clustering", str(t.root), action)
        assert code == 0 and err == "" and "nothing to cluster: no file slices in the selected partitions" in out
    data = cli_json(capsys, "clustering", str(t.root), "show", "--explain")
    assert data["next"]["explain"]["partitions_considered"] == [""] and data["next"]["explain"]["decisions"] == []
    _, out, _ = cli(capsys, "clustering", str(t.root), "show", "--explain")
    assert "partitions considered: (table root)" in out and "no file slices to consider" in out


def test_options_are_checked(cow: ClusterTable, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "clustering", str(cow.root), "schedule", "-o", "hoodie.clustering.nonsense=1")
    assert code == 0 and "scheduled clustering" in out
    assert err == "pyhudi clustering: warning: unknown option 'hoodie.clustering.nonsense' is ignored\n"
    for bad in (f"{TARGET}=lots", "hoodie.layout.optimize.strategy=spiral",
                "hoodie.clustering.plan.partition.filter.mode=SOMETIMES"):
        code, out, err = cli(capsys, "clustering", str(cow.root), "show", "-o", bad)
        assert code == 2 and out == "" and bad.split("=")[0] in err and len(err.strip().splitlines()) == 1
    with pytest.raises(SystemExit) as exc:
        main(["clustering", str(cow.root), "schedule", "-o", "no-equals-sign"])
    assert exc.value.code == 2 and "is not KEY=VALUE" in capsys.readouterr().err


def test_unknown_sort_column_is_refused_before_a_plan_is_written(cow: ClusterTable,
                                                                 capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _no_spark(monkeypatch)
    for action in ("schedule", "run"):
        code, out, err = cli(capsys, "clustering", str(cow.root), action, "-o", f"{SORT}=id,nmae")
        assert code == 2 and out == ""
        assert err == f"pyhudi clustering: error: {SORT} names nmae, which the table does not have " \
                      "(columns: id, name, p)\n"
    assert cow.replace_requests() == []
    code, out, _ = cli(capsys, "clustering", str(cow.root), "schedule", "-o", f"{SORT}=_hoodie_record_key,name")
    assert code == 0 and "sort by _hoodie_record_key,name (linear)" in out


# --------------------------------------------------------------------------- plans written by Hudi, completed ones
def test_show_a_plan_written_by_hudi(cow: ClusterTable, capsys: pytest.CaptureFixture[str]) -> None:
    """Hudi names files by full `file:/` paths and stores only the sort columns; sizes come from the listing."""
    cow.hudi_clustering(T(2), [[("p=a", "f3"), ("p=a", "f1")]], state="inflight", sort_columns="name")
    (cow.root / "p=a" / f"f1_0-1-1_{T(1)}.parquet").unlink()  # cleaned by hand: shown as missing
    data = cli_json(capsys, "clustering", str(cow.root), "show")
    (p,) = data["pending"]
    assert (p["instant"], p["state"], p["sort_columns"], p["layout"], p["target_file_max_bytes"]) == (
        T(2), "inflight", ["name"], None, None)
    (g,) = p["groups"]
    assert (g["partition"], g["file_slices"], g["input_bytes"], g["missing_files"]) == ("p=a", 2, 30 * MB, 1)
    assert g["slices"][0]["base_file"] == f"f3_0-1-1_{T(1)}.parquet"
    _, out, _ = cli(capsys, "clustering", str(cow.root), "show")
    assert f"{T(2)}  inflight: 1 group, 2 file slices (30.0 MiB) -> 1 file group; sort by name (linear)" in out
    assert "1 missing" in out


def test_insert_overwrite_is_not_a_clustering(cow: ClusterTable, capsys: pytest.CaptureFixture[str]) -> None:
    (cow.hoodie / f"{T(2)}.replacecommit.requested").write_bytes(
        am.write_instant_avro("HoodieRequestedReplaceMetadata", am.empty_requested_replace_metadata()))
    data = cli_json(capsys, "clustering", str(cow.root), "show")
    assert data["pending"] == [] and data["next"]["file_slices"] == 3


def test_show_completed_clustering(cow: ClusterTable, capsys: pytest.CaptureFixture[str]) -> None:
    instant = cli_json(capsys, "clustering", str(cow.root), "schedule", "-o", f"{SORT}=id")["scheduled"]
    cow.complete_clustering(instant, {"p=a": [40 * MB, 20 * MB]})
    data = cli_json(capsys, "clustering", str(cow.root), "show")
    assert data["pending"] == []
    (done,) = data["completed"]
    assert (done["instant"], done["file_groups_replaced"], done["files_written"]) == (instant, 3, 2)
    assert (done["bytes_written"], done["records"], done["sort_columns"]) == (60 * MB, 201, ["id"])
    assert done["partitions"] == [{"partition": "p=a", "file_groups_replaced": 3, "files_written": 2,
                                   "records": 201, "bytes_written": 60 * MB}]
    assert data["trigger"]["commits_since_last_clustering"] == 0
    # The replaced groups are gone; the two new files are a group of their own for the next plan.
    assert data["next"]["plan"][0]["file_ids"] == [f"c{instant[-4:]}-pa-0", f"c{instant[-4:]}-pa-1"]
    _, out, _ = cli(capsys, "clustering", str(cow.root), "show")
    assert f"{instant}: replaced 3 file groups, wrote 2 files (60.0 MiB, 201 records); sort by id (linear)" in out
    # An insert overwrite's completed replacecommit is not listed.
    cow.instant(T(9), "replacecommit", meta=CommitMetadata(operation_type="INSERT_OVERWRITE",
                                                           partition_to_replace_file_ids={"p=b": []}))
    assert len(cli_json(capsys, "clustering", str(cow.root), "show")["completed"]) == 1


# --------------------------------------------------------------------------- run (Spark replaced)
def _no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*_a: Any, **_k: Any) -> list[str]:
        raise AssertionError("no engine may run (neither Spark nor in-process)")

    monkeypatch.setattr(clustering_cmd, "_cluster_with_spark", fail)
    monkeypatch.setattr(clustering_cmd, "_cluster_in_process", fail)


def _fake_spark(monkeypatch: pytest.MonkeyPatch, seen: list[tuple[Any, ...]], conflict_on: str | None = None) -> None:
    """pyhudi.cluster without Spark: schedule if nothing is pending, then complete the plans oldest first;
    the plan `conflict_on` is rolled back with a CommitConflictError, as the service does."""
    def fake(master: str, path: str, options: dict[str, str], instant: str | None) -> list[str]:
        seen.append((master, path, dict(options), instant))
        storage = Storage(path)
        t = ClusterTable.open(Path(path))
        if instant is None and not clustering.pending_clusterings(storage):
            from pyhudi.model.table_config import load_table_config

            clustering.schedule(storage, load_table_config(storage), ClusteringConfig(), 125829120)
        todo = [instant] if instant else clustering.pending_clusterings(storage)
        for ts in todo:
            if ts == conflict_on:
                clustering.rollback_clustering(storage, ts)
                raise CommitConflictError(f"clustering {ts}: file group f1 (p=a) was written after the clustering "
                                          "was scheduled; committing would drop that write, so the clustering was "
                                          "rolled back")
            t.complete_clustering(ts, {"p=a": [50 * MB]})
        return todo

    monkeypatch.setattr(clustering_cmd, "_cluster_with_spark", fake)
    # without --master: the in-process engine, recorded with master None
    monkeypatch.setattr(clustering_cmd, "_cluster_in_process", lambda path, options, instant: fake(None, path, options, instant))


def test_run_without_work_does_not_start_spark(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    _no_spark(monkeypatch)
    t = ClusterTable(tmp_path / "one", COW)
    t.write(T(1), bases=(("p=a", "only", 10 * MB),))
    code, out, err = cli(capsys, "clustering", str(t.root), "run")
    assert code == 0 and err == ""
    assert "nothing to cluster: 1 file slice: a single file group with nothing to merge or sort" in out
    data = cli_json(capsys, "clustering", str(t.root), "run")
    assert data["completed"] == [] and data["conflict"] is None and "rewritten unchanged" in data["reason"]


def test_run_schedules_and_reports(cow: ClusterTable, capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[Any, ...]] = []
    _fake_spark(monkeypatch, seen)
    code, out, err = cli(capsys, "clustering", str(cow.root), "run", "--master", "local[1]",
                         "-o", "hoodie.clustering.plan.strategy.max.num.groups=5")
    assert code == 0
    start, summary = err.splitlines()  # the start line, then the status line's summary (not a terminal)
    assert start == "pyhudi clustering: starting Spark (local[1]) to run a new clustering"
    assert re.fullmatch(r"pyhudi clustering run: done in \d+\.\ds( \(.*\))?", summary), summary
    (instant,) = cow.replace_requests()
    assert seen == [("local[1]", str(cow.root), {"hoodie.clustering.plan.strategy.max.num.groups": "5"}, None)]
    assert "completed 1 clustering in" in out
    assert f"{instant} (scheduled now): replaced 3 file groups, wrote 1 file (50.0 MiB, 100 records)" in out
    code, out, _ = cli(capsys, "clustering", str(cow.root), "run")
    assert code == 0 and "nothing to cluster: no partition written since the last clustering" in out
    code, out, _ = cli(capsys, "clustering", str(cow.root), "run", "-o", "hoodie.table.services.incremental.enabled=false")
    assert code == 0 and "nothing to cluster: 1 file slice: a single file group" in out and len(seen) == 1


def test_run_given_instant(cow: ClusterTable, capsys: pytest.CaptureFixture[str],
                           monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[Any, ...]] = []
    _fake_spark(monkeypatch, seen)
    instant = cli_json(capsys, "clustering", str(cow.root), "schedule")["scheduled"]
    data = cli_json(capsys, "clustering", str(cow.root), "run", "--instant", instant)
    assert seen[0][3] == instant and data["scheduled"] == []
    (done,) = data["completed"]
    assert (done["instant"], done["file_groups_replaced"], done["files_written"]) == (instant, 3, 1)
    code, out, err = cli(capsys, "clustering", str(cow.root), "run", "--instant", instant)
    assert code == 2 and out == ""
    assert f"{instant} is not a pending clustering" in err and "pending clusterings: none" in err


def test_run_rejects_bad_options_before_spark(cow: ClusterTable, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    _no_spark(monkeypatch)
    code, _, err = cli(capsys, "clustering", str(cow.root), "run", "-o", "hoodie.parquet.compression.codec=rar")
    assert code == 2 and "hoodie.parquet.compression.codec" in err
    code, _, err = cli(capsys, "clustering", str(cow.root), "run", "--instant", T(1))
    assert code == 2 and f"{T(1)} is not a pending clustering" in err


def test_run_conflict_exits_3(cow: ClusterTable, capsys: pytest.CaptureFixture[str],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    instant = cli_json(capsys, "clustering", str(cow.root), "schedule")["scheduled"]
    seen: list[tuple[Any, ...]] = []
    _fake_spark(monkeypatch, seen, conflict_on=instant)
    code, out, err = cli(capsys, "clustering", str(cow.root), "run", "--master", "local[2]")
    assert code == 3
    start, summary, error = err.splitlines()
    assert start == f"pyhudi clustering: starting Spark (local[2]) to run {instant}"
    assert re.fullmatch(r"pyhudi clustering run: failed after \d+\.\ds( \(.*\))?", summary), summary
    assert error == (f"pyhudi clustering: error: clustering {instant}: file group f1 (p=a) was written after the "
                     "clustering was scheduled; committing would drop that write, so the clustering was rolled back")
    assert "no clustering completed" in out
    assert cow.replace_requests() == []
    data = json.loads(cli(capsys, "clustering", str(cow.root), "show", "--json")[1])
    assert data["pending"] == [] and data["completed"] == []


def test_run_reports_clusterings_completed_before_a_conflict(cow: ClusterTable, capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    first = cli_json(capsys, "clustering", str(cow.root), "schedule")["scheduled"]
    cow.write(T(5), bases=(("p=b", "n1", MB), ("p=b", "n2", MB)))
    second = cli_json(capsys, "clustering", str(cow.root), "schedule")["scheduled"]
    _fake_spark(monkeypatch, [], conflict_on=second)
    code, out, err = cli(capsys, "clustering", str(cow.root), "run", "--json")
    assert code == 3 and f"error: clustering {second}:" in err
    data = json.loads(out)
    assert [c["instant"] for c in data["completed"]] == [first] and data["conflict"].startswith(f"clustering {second}")


# --------------------------------------------------------------------------- errors and entry points
def test_not_a_table_and_usage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "clustering", str(tmp_path), "show")
    assert code == 2 and "is not a Hudi table" in err and len(err.strip().splitlines()) == 1
    for argv in (["clustering"], ["clustering", str(tmp_path)], ["clustering", str(tmp_path), "frob"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2 and "usage: pyhudi clustering" in capsys.readouterr().err


def test_standalone_main(cow: ClusterTable, capsys: pytest.CaptureFixture[str]) -> None:
    assert clustering_cmd.main([str(cow.root), "show"]) == 0
    assert "next clustering would choose 3 file slices" in capsys.readouterr().out
    assert clustering_cmd.main([str(cow.root.parent), "show"]) == 2
    assert "pyhudi clustering: error:" in capsys.readouterr().err
