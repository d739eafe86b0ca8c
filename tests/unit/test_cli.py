"""The `pyhudi` CLI (timeline, files) against the Hudi samples and hand-built tables.

No Spark: the commands only list storage and read `.hoodie/`. Synthetic tables
use a `hoodie.properties` copied from a sample, hand-written commit JSON,
Avro plans from pyhudi's builders, and sparse data files of chosen sizes
(listing reads only names and sizes, never contents).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest

from pyhudi.cli import render
from pyhudi.cli.files_cmd import BUCKET_LABELS, bucket_of, histogram
from pyhudi.cli.main import main
from pyhudi.model import avro_models as am
from tests.helpers import samples_root

SAMPLES = samples_root() / "tables"
SMOKE = Path("/tmp/smoke/t1")
SAMPLE_NAMES = sorted(p.stem for p in SAMPLES.glob("*.zip"))
OVERWRITE = [n for n in SAMPLE_NAMES if n.endswith("overwritetable")]
EMPTY = [n for n in SAMPLE_NAMES if n.endswith("_empty")]


@pytest.fixture(scope="session")
def samples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Sample name -> table base path (the directory holding `.hoodie`)."""
    if not SAMPLE_NAMES:
        pytest.skip(f"no sample tables under {SAMPLES}")
    root = tmp_path_factory.mktemp("samples")
    out = {}
    for name in SAMPLE_NAMES:
        with zipfile.ZipFile(SAMPLES / f"{name}.zip") as zf:
            zf.extractall(root / name)
        props = next((root / name).rglob(".hoodie/hoodie.properties"))
        out[name] = props.parent.parent
    return out


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code, out, err = run_cli(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def instant_files(table: Path) -> set[str]:
    return {n.split(".")[0] for n in os.listdir(table / ".hoodie") if n[:1].isdigit()}


# --------------------------------------------------------------------------- samples
def test_all_thirteen_samples_present() -> None:
    if not SAMPLE_NAMES:
        pytest.skip("samples not available")
    assert len(SAMPLE_NAMES) == 13


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_timeline_on_sample(name: str, samples: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    table = samples[name]
    code, out, err = run_cli(capsys, "timeline", str(table))
    assert code == 0 and err == ""
    assert out.startswith("table ")
    data = run_json(capsys, "timeline", str(table))
    stamps = [i["timestamp"] for i in data["instants"]]
    assert stamps == sorted(instant_files(table))
    assert data["counts"]["instants"] == len(stamps)
    for row in data["instants"]:
        assert row["state"] == "completed"
        assert row["records"] >= 1 and row["bytes"] > 0 and row["files"] >= 1
        assert row["inserts"] + row["updates"] <= row["records"]
        meta = json.loads((table / ".hoodie" / f"{row['timestamp']}.{row['action']}").read_text())
        stats = [s for v in meta["partitionToWriteStats"].values() for s in v]
        assert row["records"] == sum(s["numWrites"] for s in stats)
        assert row["bytes"] == sum(s["totalWriteBytes"] for s in stats)
        assert row["operation"] == meta["operationType"]
        assert row["timestamp"] in out
    if name in EMPTY:
        assert "(no instants)" in out


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_files_on_sample(name: str, samples: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    table = samples[name]
    code, out, err = run_cli(capsys, "files", str(table))
    assert code == 0 and err == ""
    assert "ideal file count" in out
    data = run_json(capsys, "files", str(table))
    assert data["small_file_limit"] == 100 * 1024 * 1024 and data["max_file_size"] == 120 * 1024 * 1024
    groups = [g for p in data["partitions"] for g in p["file_groups"]]
    live = [g for g in groups if not g["replaced"]]
    on_disk = {f.name for f in table.rglob("*.parquet") if ".hoodie" not in f.parts}
    assert {g["base_file"] for g in groups if g["base_file"]} <= on_disk
    tot = data["totals"]
    assert tot["live_file_groups"] == len(live)
    assert tot["bytes"] == sum(g["base_size"] for g in live)
    assert sum(b["files"] for b in data["histogram"]) == tot["base_files"]
    # Sample files are a few hundred KiB: all far below 10% of the default small-file limit.
    assert data["histogram"][0]["files"] == tot["base_files"] == tot["small_files"]
    assert tot["ideal_file_count"] == (1 if tot["bytes"] else 0)
    if name in EMPTY:
        assert groups == [] and tot["well_sized_pct"] is None
    else:
        assert live


@pytest.mark.parametrize("name", OVERWRITE)
def test_overwrite_table_flags_replaced_groups(name: str, samples: dict[str, Path],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    table = samples[name]
    replace = next((table / ".hoodie").glob("*.replacecommit"))
    replaced_ids = {fid for ids in json.loads(replace.read_text())["partitionToReplaceFileIds"].values()
                    for fid in ids}
    data = run_json(capsys, "files", str(table))
    groups = [g for p in data["partitions"] for g in p["file_groups"]]
    assert {g["file_id"] for g in groups if g["replaced"]} == replaced_ids
    assert data["totals"]["live_file_groups"] == 1
    assert sum(p["summary"]["replaced"] for p in data["partitions"]) == 3
    tl = run_json(capsys, "timeline", str(table))
    row = tl["instants"][-1]
    assert (row["action"], row["operation"], row["replaced_file_groups"]) == \
        ("replacecommit", "INSERT_OVERWRITE_TABLE", 3)
    _, out, _ = run_cli(capsys, "files", str(table))
    assert out.count("replaced\n") == 3


def test_partition_option(samples: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    table = samples["trips_mor_avro__v6_trips_8i1u"]
    data = run_json(capsys, "files", str(table), "--partition", "city=chennai")
    assert [p["partition"] for p in data["partitions"]] == ["city=chennai"]
    code, _, err = run_cli(capsys, "files", str(table), "--partition", "city=nowhere")
    assert code == 2 and "city=nowhere" in err and "city=chennai" in err


def test_timeline_limit_and_archived(samples: dict[str, Path], capsys: pytest.CaptureFixture[str],
                                     tmp_path: Path) -> None:
    table = samples["cow__v6_simplekeygen_nonhivestyle_overwritetable"]
    data = run_json(capsys, "timeline", str(table), "--limit", "1")
    assert [i["action"] for i in data["instants"]] == ["replacecommit"]
    assert data["counts"]["instants"] == 3 and data["counts"]["shown"] == 1
    code, out, err = run_cli(capsys, "timeline", str(table), "--archived")
    assert code == 0 and err == ""  # empty archive folder: nothing to say
    assert "archived: 0 instants in 0 file(s)" in out
    copy = tmp_path / "t"
    shutil.copytree(table, copy)
    (copy / ".hoodie" / "archived" / ".commits_.archive.1_1-0-1").write_bytes(b"x")
    code, out, err = run_cli(capsys, "timeline", str(copy), "--archived", "--json")
    # A damaged archive is reported (on stderr, keeping --json clean) and never stops the listing.
    assert code == 0 and "skipped 1 unreadable block" in err
    data = json.loads(out)
    assert data["archive"]["corrupt_blocks"] == 1 and data["counts"]["archived"] == 0
    assert [i["archived"] for i in data["instants"]] == [False] * 3


def test_smoke_table(capsys: pytest.CaptureFixture[str]) -> None:
    if not (SMOKE / ".hoodie" / "hoodie.properties").exists():
        pytest.skip(f"{SMOKE} not present")
    tl = run_json(capsys, "timeline", str(SMOKE))
    assert tl["counts"]["instants"] == len(instant_files(SMOKE)) > 0
    files = run_json(capsys, "files", str(SMOKE))
    assert files["totals"]["live_file_groups"] >= 1


# --------------------------------------------------------------------------- errors
def test_not_a_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for cmd in ("timeline", "files"):
        code, out, err = run_cli(capsys, cmd, str(tmp_path))
        assert code == 2 and out == ""
        assert "is not a Hudi table" in err and "Traceback" not in err
        assert len(err.strip().splitlines()) == 1
    code, _, err = run_cli(capsys, "files", str(tmp_path / "missing"))
    assert code == 2 and "is not a Hudi table" in err


def test_not_a_table_hints_at_nested_table(samples: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    table = samples["cow__v6_nonpartitioned"]
    code, _, err = run_cli(capsys, "timeline", str(table.parent))
    assert code == 2 and f"did you mean {table}" in err


def test_unsupported_version(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / ".hoodie").mkdir()
    (tmp_path / ".hoodie" / "hoodie.properties").write_text(
        "hoodie.table.name=x\nhoodie.table.type=COPY_ON_WRITE\nhoodie.table.version=8\n")
    code, _, err = run_cli(capsys, "files", str(tmp_path))
    assert code == 2 and "version 8" in err


def test_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["frobnicate"], [], ["files"], ["files", "x", "--max-file-size", "lots"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
        assert "usage: pyhudi" in capsys.readouterr().err


def test_demo_forwards_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without pyhudi.demo.add_arguments the CLI's own option list is used and the namespace forwarded."""
    import sys
    import types

    seen: dict[str, Any] = {}
    fake = types.ModuleType("pyhudi.demo")
    fake.main = lambda args: seen.update(vars(args)) or 0  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pyhudi.demo", fake)
    monkeypatch.setattr("pyhudi.demo", fake, raising=False)
    assert main(["demo", "--batches", "3", "--rows-per-batch", "1000", "--max-file-size", "1MB",
                 "--small-file-limit", "524288"]) == 0
    assert seen["path"] == "./demo" and seen["batches"] == 3 and seen["rows_per_batch"] == 1000
    assert seen["max_file_size"] == 1024 * 1024 and seen["small_file_limit"] == 524288
    assert seen["master"] is None  # in-process unless --master asks for Spark


def test_demo_uses_demo_module_options(monkeypatch: pytest.MonkeyPatch) -> None:
    demo = pytest.importorskip("pyhudi.demo")
    if not hasattr(demo, "add_arguments"):
        pytest.skip("pyhudi.demo has no add_arguments")
    seen: dict[str, Any] = {}
    monkeypatch.setattr(demo, "main", lambda args: seen.update(vars(args)) or 0)
    assert main(["demo", "--batches", "2", "--master", "local[1]"]) == 0  # Spark is not started
    assert seen["batches"] == 2 and seen["master"] == "local[1]"
    assert {"path", "rows_per_batch", "max_file_size", "small_file_limit"} <= set(seen)


def test_command_mains_standalone(samples: dict[str, Path], capsys: pytest.CaptureFixture[str],
                                  tmp_path: Path) -> None:
    """pyhudi.demo calls files_cmd.main([...]) directly."""
    from pyhudi.cli import files_cmd, timeline_cmd

    table = str(samples["trips_mor_avro__v6_trips_8i1u"])
    assert files_cmd.main([table, "--small-file-limit", "3145728", "--max-file-size", "4194304"]) == 0
    assert "small-file limit 3.0 MiB, max file size 4.0 MiB" in capsys.readouterr().out
    assert timeline_cmd.main([table, "--limit", "1"]) == 0
    assert "showing the newest 1" in capsys.readouterr().out
    assert files_cmd.main([str(tmp_path)]) == 2
    assert "pyhudi files: error:" in capsys.readouterr().err


# --------------------------------------------------------------------------- histogram arithmetic
def test_bucket_boundaries() -> None:
    limit, mx = 100, 120
    expected = {0: 0, 9: 0, 10: 1, 49: 1, 50: 2, 99: 2, 100: 3, 120: 3, 121: 4, 132: 4, 133: 5, 10**9: 5}
    assert {s: bucket_of(s, limit, mx) for s in expected} == expected
    assert {bucket_of(s, 0, mx) for s in (0, 1, 120)} == {3}  # small files off: nothing is small
    hist = histogram(list(expected), limit, mx)
    assert [b["files"] for b in hist["buckets"]] == [2, 2, 2, 2, 2, 2]
    assert [b["bytes"] for b in hist["buckets"]] == [9, 59, 149, 220, 253, 10**9 + 133]
    assert hist["well_sized_bytes"] == 100 + 120 + 121 + 132
    assert hist["ideal_file_count"] == math.ceil(sum(expected) / mx)
    assert histogram([], limit, mx)["well_sized_pct"] is None


def _sparse(path: Path, size: int) -> None:
    """A data file of `size` bytes in a partition directory (with its partition metafile)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.parent / ".hoodie_partition_metadata").touch()
    with open(path, "wb") as f:
        f.truncate(size)


def _stat(partition: str, name: str, size: int, *, writes: int = 1, inserts: int = 0, updates: int = 0,
          deletes: int = 0, **extra: Any) -> dict[str, Any]:
    return {"fileId": name.lstrip(".").split("_")[0], "path": f"{partition}/{name}", "prevCommit": "null",
            "numWrites": writes, "numInserts": inserts, "numUpdateWrites": updates, "numDeletes": deletes,
            "totalWriteBytes": size, "fileSizeInBytes": size, "partitionPath": partition, **extra}


def _commit(table: Path, file_name: str, stats: list[dict[str, Any]], op: str, **extra: Any) -> None:
    meta: dict[str, Any] = {"partitionToWriteStats": {}, "compacted": False, "extraMetadata": {},
                            "operationType": op, **extra}
    for s in stats:
        meta["partitionToWriteStats"].setdefault(s["partitionPath"], []).append(s)
    (table / ".hoodie" / file_name).write_text(json.dumps(meta, indent=2))


def _new_table(tmp_path: Path, samples: dict[str, Path], sample: str) -> Path:
    table = tmp_path / "t"
    (table / ".hoodie").mkdir(parents=True)
    shutil.copy(samples[sample] / ".hoodie" / "hoodie.properties", table / ".hoodie")
    return table


T1, T2, T3, T4 = "20250101000000000", "20250101000001000", "20250101000002000", "20250101000003000"


def test_histogram_on_synthetic_cow_table(tmp_path: Path, samples: dict[str, Path],
                                          capsys: pytest.CaptureFixture[str]) -> None:
    table = _new_table(tmp_path, samples, "cow__v6_simplekeygen_nonhivestyle")
    mib = 1024 * 1024
    first = {"a": 5 * mib, "b": 30 * mib, "c": 60 * mib, "d": 100 * mib, "e": 125 * mib, "f": 140 * mib,
             "old": 10 * mib, "gone": 200 * mib}
    stats = []
    for fid, size in first.items():
        name = f"{fid}-0_0-1-1_{T1}.parquet"
        _sparse(table / "10" / name, size)
        stats.append(_stat("10", name, size, inserts=1))
    _commit(table, f"{T1}.commit", stats, "INSERT")
    upd = f"old-0_0-2-2_{T2}.parquet"  # a second version of "old"
    _sparse(table / "10" / upd, 110 * mib)
    _commit(table, f"{T2}.commit", [_stat("10", upd, 110 * mib, updates=1)], "UPSERT")
    new = f"g-0_0-3-3_{T3}.parquet"
    _sparse(table / "20" / new, 1 * mib)
    _commit(table, f"{T3}.replacecommit", [_stat("20", new, mib, inserts=1)], "INSERT_OVERWRITE",
            partitionToReplaceFileIds={"10": ["gone-0"]})
    _sparse(table / "10" / f"a-0_0-9-9_{T4}.parquet", 90 * mib)  # uncommitted: not on the timeline

    data = run_json(capsys, "files", str(table))
    groups = {g["file_id"]: g for p in data["partitions"] for g in p["file_groups"]}
    assert groups["old-0"]["versions"] == 2 and groups["old-0"]["base_size"] == 110 * mib
    assert groups["a-0"]["versions"] == 1 and groups["a-0"]["base_size"] == 5 * mib
    assert groups["gone-0"]["replaced"] and not groups["g-0"]["replaced"]
    live_sizes = [5, 30, 60, 100, 125, 140, 110, 1]
    assert [b["files"] for b in data["histogram"]] == [2, 1, 1, 2, 1, 1]
    assert [b["bytes"] // mib for b in data["histogram"]] == [6, 30, 60, 210, 125, 140]
    tot = data["totals"]
    assert tot["live_file_groups"] == 8 and tot["bytes"] == sum(live_sizes) * mib
    assert tot["ideal_file_count"] == math.ceil(sum(live_sizes) / 120)
    assert tot["small_files"] == 4
    assert tot["well_sized_bytes"] == (100 + 110 + 125) * mib
    assert tot["well_sized_pct"] == round(100 * 335 / sum(live_sizes), 1)

    # Explicit limits move the boundaries; sizes may carry units.
    data = run_json(capsys, "files", str(table), "--small-file-limit", "50MB", "--max-file-size", "100MiB")
    assert data["small_file_limit"] == 50 * mib and data["max_file_size"] == 100 * mib
    assert [b["files"] for b in data["histogram"]] == [1, 1, 1, 2, 1, 2]  # 1 | 5 | 30 | 60,100 | 110 | 125,140
    code, out, _ = run_cli(capsys, "files", str(table))
    assert code == 0 and "1 replaced" in out and "ideal file count: 5" in out
    assert any(line.strip().startswith("limit .. max") and line.rstrip().endswith("#" * 30)
               for line in out.splitlines())
    tl = run_json(capsys, "timeline", str(table))
    assert [r["replaced_file_groups"] for r in tl["instants"]] == [None, None, 1]
    assert tl["instants"][0]["bytes"] == sum(first.values())


def test_synthetic_mor_table_with_plans(tmp_path: Path, samples: dict[str, Path],
                                        capsys: pytest.CaptureFixture[str]) -> None:
    table = _new_table(tmp_path, samples, "mor_parquet__v6_simplekeygen_nonhivestyle")
    hoodie = table / ".hoodie"
    base_a, base_b = f"A-0_0-1-1_{T1}.parquet", f"B-0_0-1-1_{T1}.parquet"
    _sparse(table / "10" / base_a, 1000)
    _sparse(table / "10" / base_b, 2000)
    _commit(table, f"{T1}.deltacommit", [_stat("10", base_a, 1000, writes=4, inserts=4),
                                         _stat("10", base_b, 2000, writes=6, inserts=6)], "INSERT")
    log = f".A-0_{T1}.log.1_0-2-2"
    _sparse(table / "10" / log, 300)
    _commit(table, f"{T2}.deltacommit", [_stat("10", log, 300, writes=2, updates=1, deletes=1,
                                               logVersion=1, logOffset=0, baseFile=base_a, logFiles=[log])],
            "UPSERT")
    op = am.compaction_operation(base_instant_time=T1, file_id="A-0", partition_path="10",
                                 data_file_path=base_a, delta_file_paths=[log])
    (hoodie / f"{T3}.compaction.requested").write_bytes(
        am.write_instant_avro("HoodieCompactionPlan", am.compaction_plan(operations=[op])))
    plan = am.clustering_plan(input_groups=[am.clustering_group(
        slices=[am.slice_info(file_id="B-0", partition_path="10")], num_output_file_groups=1)])
    (hoodie / f"{T4}.replacecommit.requested").write_bytes(am.write_instant_avro(
        "HoodieRequestedReplaceMetadata", am.requested_replace_metadata(clustering_plan=plan)))
    t5, t6, t7, t8, t9 = (f"2025010100000{i}000" for i in range(4, 9))
    clean = am.clean_metadata(start_clean_time=t5, earliest_commit_to_retain=T1, partition_metadata={
        "10": am.clean_partition_metadata(partition_path="10", policy="KEEP_LATEST_COMMITS",
                                          delete_path_patterns=["x"], success_delete_files=["x", "y"])})
    (hoodie / f"{t5}.clean").write_bytes(am.write_instant_avro("HoodieCleanMetadata", clean))
    rb = am.rollback_metadata(start_rollback_time=t6, instants_rollback=[am.instant_info("20241231000000000",
                                                                                          "deltacommit")],
                              partition_metadata={"10": am.rollback_partition_metadata(
                                  partition_path="10", success_delete_files=["z"])})
    (hoodie / f"{t6}.rollback").write_bytes(am.write_instant_avro("HoodieRollbackMetadata", rb))
    cplan = am.cleaner_plan(policy="KEEP_LATEST_COMMITS", file_paths_to_be_deleted_per_partition={
        "10": [am.clean_file_info("/x/10/a"), am.clean_file_info("/x/10/b"), am.clean_file_info("/x/10/c")]},
        earliest_instant_to_retain=am.action_instant(T2, "deltacommit"))
    (hoodie / f"{t7}.clean.requested").write_bytes(am.write_instant_avro("HoodieCleanerPlan", cplan))
    rplan = am.rollback_plan(instant_to_rollback=am.instant_info(t9, "deltacommit"), rollback_requests=[
        am.rollback_request(partition_path="10", files_to_be_deleted=["10/q.parquet"])])
    (hoodie / f"{t8}.rollback.requested").write_bytes(am.write_instant_avro("HoodieRollbackPlan", rplan))
    (hoodie / f"{t9}.deltacommit.requested").write_bytes(b"")
    (hoodie / f"{t9}.deltacommit.inflight").write_text(json.dumps({  # workload profile
        "partitionToWriteStats": {"10": [{"fileId": "", "path": None, "partitionPath": None, "numInserts": 7,
                                          "prevCommit": "null"}]},
        "compacted": False, "extraMetadata": {}, "operationType": "UPSERT"}))

    tl = run_json(capsys, "timeline", str(table))
    rows = {r["timestamp"]: r for r in tl["instants"]}
    assert tl["counts"]["pending"] == 5 and tl["counts"]["completed"] == 4
    assert (rows[T2]["records"], rows[T2]["updates"], rows[T2]["deletes"], rows[T2]["files"]) == (2, 1, 1, 1)
    assert rows[T3]["summary"] == "plan: compact 1 file groups in 1 partitions (1 log files)"
    assert rows[T4]["summary"].startswith("plan: cluster 1 file slices in 1 groups")
    assert rows[t5]["summary"].startswith("deleted 2 files in 1 partitions")
    assert rows[t6]["summary"] == "rolled back 20241231000000000: 1 files deleted"
    assert rows[t7]["summary"].startswith("plan: delete 3 files in 1 partitions (KEEP_LATEST_COMMITS")
    assert rows[t8]["summary"].startswith(f"plan: roll back {t9} (deltacommit): delete 1 files")
    assert rows[t9]["state"] == "inflight" and "planned 7 inserts" in rows[t9]["summary"]

    files = run_json(capsys, "files", str(table))
    groups = {g["file_id"]: g for p in files["partitions"] for g in p["file_groups"]}
    assert groups["A-0"]["pending_compaction"] == T3 and groups["A-0"]["log_files"] == 1
    assert groups["A-0"]["log_bytes"] == 300
    assert groups["B-0"]["pending_clustering"] == T4 and not groups["B-0"]["pending_compaction"]
    assert files["totals"]["log_bytes"] == 300
    code, out, _ = run_cli(capsys, "files", str(table))
    assert f"compaction@{T3}" in out and f"clustering@{T4}" in out and "LOG SIZE" in out

    # A completed compaction shows as a commit labelled compaction; a corrupt plan is a note, not a crash.
    (hoodie / f"{T3}.commit").write_text(json.dumps({
        "partitionToWriteStats": {"10": [_stat("10", f"A-0_0-5-5_{T3}.parquet", 1200, writes=4,
                                               totalLogFilesCompacted=1)]},
        "compacted": True, "extraMetadata": {}, "operationType": "COMPACT"}))
    (hoodie / f"{t7}.clean.requested").write_bytes(b"not avro")
    tl = run_json(capsys, "timeline", str(table))
    rows = {r["timestamp"]: r for r in tl["instants"]}
    assert rows[T3]["compaction"] and rows[T3]["operation"] == "COMPACT"
    assert "1 log files compacted" in rows[T3]["summary"]
    assert rows[t7]["summary"].startswith("unreadable:")
    assert "compaction" in tl["counts"]["by_action"]


def test_render_helpers() -> None:
    assert render.human_bytes(0) == "0 B" and render.human_bytes(1023) == "1023 B"
    assert render.human_bytes(100 * 1024 * 1024) == "100.0 MiB"
    assert render.human_bytes(None) == "-"
    assert render.plural(1, "file group") == "1 file group" and render.plural(2, "file") == "2 files"
    assert render.bar(0, 10) == "" and render.bar(1, 1000, 30) == "#" and render.bar(10, 10, 30) == "#" * 30
    lines = render.table(["A", "NUM"], [["x", 1], ["yy", 100]], right=[1])
    assert lines == ["A   NUM", "x     1", "yy  100"]
    assert len(BUCKET_LABELS) == 6


def test_pending_insert_overwrite(samples: dict[str, Path], capsys: pytest.CaptureFixture[str],
                                  tmp_path: Path) -> None:
    """Without its completed file the replacecommit is inflight: nothing is replaced, its file is hidden."""
    table = tmp_path / "t"
    shutil.copytree(samples["cow__v6_simplekeygen_nonhivestyle_overwritetable"], table)
    done = next((table / ".hoodie").glob("*.replacecommit"))
    done.unlink()
    tl = run_json(capsys, "timeline", str(table))
    row = tl["instants"][-1]
    assert row["state"] == "inflight" and row["records"] is None
    assert row["summary"].startswith("requested insert overwrite / delete partition (no plan)")
    files = run_json(capsys, "files", str(table))
    groups = [g for p in files["partitions"] for g in p["file_groups"]]
    assert not any(g["replaced"] for g in groups) and len(groups) == 3
    assert all(done.name.split(".")[0] not in (g["base_file"] or "") for g in groups)
