"""`pyhudi compaction PATH show|schedule|run` against the MOR samples, without Spark.

`show` and `schedule` read and write only `.hoodie/` and file names, so the
Spark-written samples (and sparse log files added by hand) are enough. `run`
is checked up to the point where it would start Spark; the Spark part is
replaced by a stand-in that completes the plan the way the service does.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import fastavro
import pytest

from pyhudi.cli import compaction_cmd
from pyhudi.cli.main import main
from pyhudi.model import avro_models as am
from pyhudi.model.commit_metadata import CommitMetadata
from pyhudi.model.write_stat import WriteStat
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action, Instant, State
from pyhudi.timeline.timeline import ActiveTimeline
from tests.unit._samples import MANIFEST_PATH, extract_sample

NONPART = "mor_parquet__v6_nonpartitioned"
PARTITIONED = "mor_parquet__v6_simplekeygen_nonhivestyle"
LOGGED_FID = "d206069c-22c8-4532-b9ea-3cf4282342c4-0"
LOGGED_BASE = f"{LOGGED_FID}_0-13-23_20250117083125837.parquet"
LOGGED_LOG = f".{LOGGED_FID}_20250117083125837.log.1_0-33-43"
OTHER_FID = "d5c0b12d-088d-48e8-9683-3f0c1eabcaf0-0"
OTHER_BASE_INSTANT = "20250117083136333"

pytestmark = pytest.mark.skipif(not MANIFEST_PATH.exists(), reason="sample tables not available")


@pytest.fixture()
def mor(tmp_path: Path) -> Path:
    """A fresh copy of the non-partitioned MOR sample: two file groups, one with a log file."""
    return extract_sample(NONPART, tmp_path / "s")


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code, out, err = cli(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def plans(table: Path) -> list[Path]:
    return sorted((table / ".hoodie").glob("*.compaction.requested"))


def sparse(path: Path, size: int) -> None:
    with open(path, "wb") as f:
        f.truncate(size)


# --------------------------------------------------------------------------- show
def test_show_before_any_plan(mor: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log_size = (mor / LOGGED_LOG).stat().st_size
    data = cli_json(capsys, "compaction", str(mor), "show")
    assert data["pending"] == [] and data["completed"] == []
    nxt = data["next"]
    assert (nxt["file_slices"], nxt["log_files"], nxt["log_bytes"]) == (1, 1, log_size)
    assert nxt["slices"][0]["file_id"] == LOGGED_FID and nxt["reason"] is None and nxt["blocked_by"] is None
    assert data["trigger"]["delta_commits_since_last_compaction"] == 2 and not data["trigger"]["fired"]
    code, out, err = cli(capsys, "compaction", str(mor), "show")
    assert code == 0 and err == ""
    assert "pending compactions: 0" in out and "completed compactions: 0" in out
    assert "next compaction would pick 1 file slice (11.4 KiB of logs)" in out
    assert plans(mor) == []  # show never writes


# --------------------------------------------------------------------------- schedule
def test_schedule_writes_plan_that_show_and_files_list(mor: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base_size = (mor / LOGGED_BASE).stat().st_size
    log_size = (mor / LOGGED_LOG).stat().st_size
    code, out, err = cli(capsys, "compaction", str(mor), "schedule")
    assert code == 0 and err == ""
    (plan_file,) = plans(mor)
    instant = plan_file.name.split(".")[0]
    assert f"scheduled compaction {instant}" in out and LOGGED_BASE in out
    assert instant > OTHER_BASE_INSTANT

    # A valid Avro container of Hudi's HoodieCompactionPlan naming the slice's files (plan version 2: names).
    reader: Any = fastavro.reader(io.BytesIO(plan_file.read_bytes()))
    assert reader.writer_schema["name"] == "org.apache.hudi.avro.model.HoodieCompactionPlan"
    plan: Any
    (plan,) = list(reader)
    assert plan == am.read_instant_avro(plan_file.read_bytes())
    assert plan["version"] == 2
    (op,) = plan["operations"]
    assert (op["fileId"], op["partitionPath"], op["baseInstantTime"]) == (LOGGED_FID, "", "20250117083125837")
    assert op["dataFilePath"] == LOGGED_BASE and op["deltaFilePaths"] == [LOGGED_LOG]
    assert op["metrics"]["TOTAL_LOG_FILES"] == 1.0 and op["metrics"]["TOTAL_LOG_FILES_SIZE"] == log_size
    mb = 1024 * 1024  # Hudi's FileSliceMetricUtils: whole MB, read = base + logs, write = base
    assert op["metrics"]["TOTAL_IO_MB"] == (base_size + log_size) // mb + base_size // mb

    data = cli_json(capsys, "compaction", str(mor), "show")
    (pending,) = data["pending"]
    assert (pending["instant"], pending["state"], pending["file_slices"]) == (instant, "requested", 1)
    (row,) = pending["operations"]
    assert row == {"partition": "", "file_id": LOGGED_FID, "base_instant": "20250117083125837",
                   "base_file": LOGGED_BASE, "log_files": [LOGGED_LOG], "log_file_count": 1,
                   "log_bytes": log_size, "io_mb": round(op["metrics"]["TOTAL_IO_MB"], 3)}
    assert data["next"]["file_slices"] == 0
    assert data["next"]["reason"] == "every file slice with log files is already in a pending compaction"
    _, out, _ = cli(capsys, "compaction", str(mor), "show")
    assert f"{instant}  requested: 1 file slice, 1 log file (11.4 KiB)" in out
    assert "next compaction would pick 0 file slices (0 B of logs)" in out

    # `pyhudi files` shows the latest slice's logs and flags the group.
    files = cli_json(capsys, "files", str(mor))
    groups = {g["file_id"]: g for p in files["partitions"] for g in p["file_groups"]}
    assert groups[LOGGED_FID]["pending_compaction"] == instant
    assert (groups[LOGGED_FID]["log_files"], groups[LOGGED_FID]["log_bytes"]) == (1, log_size)
    assert groups[OTHER_FID]["pending_compaction"] is None and groups[OTHER_FID]["log_files"] == 0
    _, out, _ = cli(capsys, "files", str(mor))
    line = next(ln for ln in out.splitlines() if LOGGED_FID in ln)
    assert line.split()[-3:] == ["11.4", "KiB", f"compaction@{instant}"] and " 1 " in line


def test_second_schedule_does_not_replan_pending_groups(mor: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(capsys, "compaction", str(mor), "schedule")[0] == 0
    (first,) = plans(mor)
    code, out, err = cli(capsys, "compaction", str(mor), "schedule")
    assert code == 0 and err == ""
    assert "nothing to compact: every file slice with log files is already in a pending compaction" in out
    assert plans(mor) == [first]
    data = cli_json(capsys, "compaction", str(mor), "schedule")
    assert data["scheduled"] is None and data["compaction"] is None

    # A log on the other group: the next plan takes only that group.
    other_log = f".{OTHER_FID}_{OTHER_BASE_INSTANT}.log.1_0-1-1"
    sparse(mor / other_log, 5000)
    data = cli_json(capsys, "compaction", str(mor), "schedule")
    second = data["scheduled"]
    assert second and second > first.name.split(".")[0]
    ops = data["compaction"]["operations"]
    assert [(o["file_id"], o["base_file"], o["log_files"], o["log_bytes"]) for o in ops] == [
        (OTHER_FID, f"{OTHER_FID}_1-33-44_{OTHER_BASE_INSTANT}.parquet", [other_log], 5000)]
    show = cli_json(capsys, "compaction", str(mor), "show")
    assert [(p["instant"], [o["file_id"] for o in p["operations"]]) for p in show["pending"]] == [
        (first.name.split(".")[0], [LOGGED_FID]), (second, [OTHER_FID])]


def test_schedule_partitioned_sample_and_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = extract_sample(PARTITIONED, tmp_path / "p")
    (log,) = (table / "10").glob(".*.log.*")
    # Below the log-size threshold: nothing, and the reason names the option.
    code, out, err = cli(capsys, "compaction", str(table), "schedule",
                         "--option", "hoodie.compaction.logfile.size.threshold=1000000")
    assert code == 0 and err == "" and plans(table) == []
    assert "nothing to compact: no file slice has at least hoodie.compaction.logfile.size.threshold=1000000" in out
    show = cli_json(capsys, "compaction", str(table), "show", "-o",
                    "hoodie.compaction.logfile.size.threshold=1000000")
    assert show["next"]["file_slices"] == 0 and "threshold" in show["next"]["reason"]
    # An unknown key is ignored with a one-line warning; a bad value is an error.
    code, out, err = cli(capsys, "compaction", str(table), "schedule", "-o", "hoodie.compaction.nonsense=1")
    assert code == 0 and err.strip() == "pyhudi compaction: warning: unknown option 'hoodie.compaction.nonsense' " \
                                         "is ignored"
    (plan_file,) = plans(table)
    (op,) = am.read_instant_avro(plan_file.read_bytes())["operations"]
    assert op["partitionPath"] == "10" and op["deltaFilePaths"] == [log.name]
    assert op["dataFilePath"] == next((table / "10").glob("*.parquet")).name
    code, out, err = cli(capsys, "compaction", str(table), "schedule",
                         "-o", "hoodie.compaction.logfile.size.threshold=lots")
    assert code == 2 and out == "" and "hoodie.compaction.logfile.size.threshold" in err
    with pytest.raises(SystemExit) as exc:
        main(["compaction", str(table), "schedule", "--option", "no-equals-sign"])
    assert exc.value.code == 2 and "is not KEY=VALUE" in capsys.readouterr().err


def test_empty_table_has_nothing_to_compact(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = extract_sample("mor_parquet__v6_empty", tmp_path / "e")
    code, out, _ = cli(capsys, "compaction", str(table), "schedule")
    assert code == 0 and "nothing to compact: no file slice has log files" in out
    data = cli_json(capsys, "compaction", str(table), "show")
    assert data["next"]["file_slices"] == 0 and data["pending"] == [] and data["completed"] == []


# --------------------------------------------------------------------------- refusals
def test_cow_table_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    _no_spark(monkeypatch)
    table = extract_sample("cow__v6_nonpartitioned", tmp_path / "c")
    for action in ("show", "schedule", "run"):
        code, out, err = cli(capsys, "compaction", str(table), action)
        assert code == 2 and out == ""
        assert err == f"pyhudi compaction: error: {table} is a COPY_ON_WRITE table; only merge-on-read tables " \
                      "compact\n"
    assert plans(table) == []


def test_not_a_table_and_usage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "compaction", str(tmp_path), "show")
    assert code == 2 and "is not a Hudi table" in err and len(err.strip().splitlines()) == 1
    for argv in (["compaction"], ["compaction", str(tmp_path)], ["compaction", str(tmp_path), "frob"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2 and "usage: pyhudi compaction" in capsys.readouterr().err


def test_pending_write_blocks_scheduling(mor: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    _no_spark(monkeypatch)
    pending = "20250117083200000"
    (mor / ".hoodie" / f"{pending}.deltacommit.requested").write_bytes(b"")
    for action in ("schedule", "run"):
        code, out, err = cli(capsys, "compaction", str(mor), action)
        assert code == 2 and out == ""
        assert f"while write {pending} (deltacommit, requested) is pending" in err
    assert plans(mor) == []
    data = cli_json(capsys, "compaction", str(mor), "show")
    assert data["next"]["blocked_by"] == pending and data["next"]["file_slices"] == 1
    _, out, _ = cli(capsys, "compaction", str(mor), "show")
    assert f"scheduling waits for pending write {pending}" in out


def test_unreadable_plan_is_a_note(mor: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (mor / ".hoodie" / "20250117083200000.compaction.requested").write_bytes(b"not avro")
    code, out, err = cli(capsys, "compaction", str(mor), "show")
    assert code == 0 and "20250117083200000  requested  unreadable plan:" in out


# --------------------------------------------------------------------------- completed compactions
def complete_plan(table: Path, instant: str) -> CommitMetadata:
    """What the service's execute leaves behind: inflight, a new base file per operation, the commit."""
    storage = Storage(str(table))
    tl = ActiveTimeline.load(storage)
    plan = am.read_instant_avro(tl.requested_details(Instant(instant, Action.COMPACTION, State.REQUESTED)))
    meta = CommitMetadata(compacted=True, operation_type="COMPACT")
    for op in plan["operations"]:
        part = op["partitionPath"] or ""
        name = f"{op['fileId']}_0-1-1_{instant}.parquet"
        sparse((table / part / name) if part else table / name, 4321)
        meta.add(WriteStat(file_id=op["fileId"], path=f"{part}/{name}" if part else name, partition_path=part,
                           prev_commit=op["baseInstantTime"], num_writes=3, num_update_writes=1,
                           total_write_bytes=4321, file_size_in_bytes=4321,
                           total_log_files_compacted=len(op["deltaFilePaths"]), total_log_size_compacted=777))
    tl.transition_to_inflight(Instant(instant, Action.COMPACTION, State.REQUESTED), b"")
    tl.complete(Instant(instant, Action.COMPACTION, State.INFLIGHT), meta.to_bytes())
    return meta


def test_show_completed_compaction(mor: Path, capsys: pytest.CaptureFixture[str]) -> None:
    instant = cli_json(capsys, "compaction", str(mor), "schedule")["scheduled"]
    complete_plan(mor, instant)
    data = cli_json(capsys, "compaction", str(mor), "show")
    assert data["pending"] == []
    (done,) = data["completed"]
    assert (done["instant"], done["operation"], done["file_groups"], done["records"]) == (instant, "COMPACT", 1, 3)
    assert (done["bytes_written"], done["log_files_compacted"], done["log_bytes_compacted"]) == (4321, 1, 777)
    (g,) = done["groups"]
    assert g["file_id"] == LOGGED_FID and g["base_file"] == f"{LOGGED_FID}_0-1-1_{instant}.parquet"
    assert g["previous_base_instant"] == "20250117083125837"
    assert data["next"]["reason"] == "no file slice has log files"
    assert data["trigger"]["last_compaction"] == instant
    assert data["trigger"]["delta_commits_since_last_compaction"] == 0
    _, out, _ = cli(capsys, "compaction", str(mor), "show")
    assert f"{instant}: 1 file group, 1 log file (777 B) compacted; wrote 4.2 KiB, 3 records" in out
    files = cli_json(capsys, "files", str(mor))
    groups = {g["file_id"]: g for p in files["partitions"] for g in p["file_groups"]}
    assert groups[LOGGED_FID]["log_files"] == 0 and groups[LOGGED_FID]["pending_compaction"] is None
    assert groups[LOGGED_FID]["base_instant"] == instant and groups[LOGGED_FID]["versions"] == 2


# --------------------------------------------------------------------------- run (Spark replaced)
def _no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*_a: Any, **_k: Any) -> list[str]:
        raise AssertionError("no engine may run (neither Spark nor in-process)")

    monkeypatch.setattr(compaction_cmd, "_compact_with_spark", fail)
    monkeypatch.setattr(compaction_cmd, "_compact_in_process", fail)


def _fake_spark(monkeypatch: pytest.MonkeyPatch, seen: list[tuple[Any, ...]]) -> None:
    """pyhudi.compact's behaviour without Spark: schedule if nothing is pending, then complete the plans."""
    from pyhudi.model.table_config import load_table_config
    from pyhudi.services import compaction
    from pyhudi.writer.config import CompactionConfig

    def fake(master: str, path: str, options: dict[str, str], instant: str | None) -> list[str]:
        seen.append((master, path, dict(options), instant))
        storage = Storage(path)
        if instant is None and not compaction.pending_compactions(storage):
            compaction.schedule(storage, load_table_config(storage), CompactionConfig(), force=True)
        todo = [instant] if instant else compaction.pending_compactions(storage)
        for ts in todo:
            complete_plan(Path(path), ts)
        return todo

    monkeypatch.setattr(compaction_cmd, "_compact_with_spark", fake)
    # without --master: the in-process engine, recorded with master None
    monkeypatch.setattr(compaction_cmd, "_compact_in_process", lambda path, options, instant: fake(None, path, options, instant))


def test_run_without_work_does_not_start_spark(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    _no_spark(monkeypatch)
    empty = extract_sample("mor_parquet__v6_empty", tmp_path / "e")
    code, out, err = cli(capsys, "compaction", str(empty), "run")
    assert code == 0 and err == "" and "nothing to compact: no file slice has log files" in out
    # No meta fields: the default upsert's index check must not stop compaction (no work here either).
    nometa = extract_sample("mor_parquet__v6_simplekeygen_hivestyle_no_metafields", tmp_path / "n")
    code, out, err = cli(capsys, "compaction", str(nometa), "run")
    assert code == 0 and err == "" and "nothing to compact" in out
    assert cli_json(capsys, "compaction", str(empty), "run")["completed"] == []


def test_run_rejects_unknown_instant_and_bad_options(mor: Path, capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    _no_spark(monkeypatch)
    code, out, err = cli(capsys, "compaction", str(mor), "run", "--instant", "20250117083125837")
    assert code == 2 and out == ""
    assert "20250117083125837 is not a pending compaction" in err and "pending compactions: none" in err
    code, _, err = cli(capsys, "compaction", str(mor), "run", "-o", "hoodie.parquet.compression.codec=rar")
    assert code == 2 and "hoodie.parquet.compression.codec" in err


def test_run_schedules_and_reports(mor: Path, capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[Any, ...]] = []
    _fake_spark(monkeypatch, seen)
    code, out, err = cli(capsys, "compaction", str(mor), "run", "--master", "local[1]",
                         "-o", "hoodie.parquet.compression.codec=gzip")
    assert code == 0
    start, summary = err.splitlines()  # the start line, then the status line's summary (not a terminal)
    assert start == "pyhudi compaction: starting Spark (local[1]) to run a new compaction"
    assert re.fullmatch(r"pyhudi compaction run: done in \d+\.\ds( \(.*\))?", summary), summary
    (plan_file,) = plans(mor)
    instant = plan_file.name.split(".")[0]
    assert seen == [("local[1]", str(mor), {"hoodie.parquet.compression.codec": "gzip"}, None)]
    assert "completed 1 compaction in" in out
    assert f"{instant} (scheduled now): 1 file group, 1 log file (777 B) compacted; wrote 4.2 KiB" in out
    assert f"{LOGGED_FID}_0-1-1_{instant}.parquet" in out
    code, out, _ = cli(capsys, "compaction", str(mor), "run")
    assert code == 0 and "nothing to compact: no file slice has log files" in out and len(seen) == 1


def test_run_given_instant(mor: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[Any, ...]] = []
    _fake_spark(monkeypatch, seen)
    instant = cli_json(capsys, "compaction", str(mor), "schedule")["scheduled"]
    data = cli_json(capsys, "compaction", str(mor), "run", "--instant", instant)
    assert seen[0][3] == instant and data["scheduled"] == []
    (done,) = data["completed"]
    assert done["instant"] == instant and done["groups"][0]["file_id"] == LOGGED_FID
    code, _, err = cli(capsys, "compaction", str(mor), "run", "--instant", instant)
    assert code == 2 and "is not a pending compaction" in err


def test_run_without_progress(mor: Path, capsys: pytest.CaptureFixture[str],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    """--no-progress (or PYHUDI_NO_PROGRESS=1) leaves stderr with the start line only (the status line is
    Spark's: it shows on the --master path only)."""
    seen: list[str | None] = []
    monkeypatch.setattr(compaction_cmd, "_compact_with_spark", lambda m, p, o, i: seen.append(i) or [])
    instant = cli_json(capsys, "compaction", str(mor), "schedule")["scheduled"]
    code, _, err = cli(capsys, "compaction", str(mor), "run", "--master", "local[2]", "--no-progress")
    assert code == 0 and err == f"pyhudi compaction: starting Spark (local[2]) to run {instant}\n"
    monkeypatch.setenv("PYHUDI_NO_PROGRESS", "1")
    code, _, err = cli(capsys, "compaction", str(mor), "run", "--master", "local[2]")
    assert code == 0 and err == f"pyhudi compaction: starting Spark (local[2]) to run {instant}\n"
    monkeypatch.delenv("PYHUDI_NO_PROGRESS")
    code, _, err = cli(capsys, "compaction", str(mor), "run", "--master", "local[2]")
    assert code == 0 and err.splitlines()[1].startswith("pyhudi compaction run: done in ")
    assert seen == [None, None, None]


def test_standalone_main(mor: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert compaction_cmd.main([str(mor), "show"]) == 0
    assert "next compaction would pick" in capsys.readouterr().out
    assert compaction_cmd.main([str(mor.parent), "show"]) == 2
    assert "pyhudi compaction: error:" in capsys.readouterr().err
