"""`pyhudi compaction ... run` on a merge-on-read table written by pyhudi: the data reads the same
before and after, and the compacted groups' latest slices have no log files left."""

from __future__ import annotations

import json
from typing import Any

import pytest

import pyhudi
from pyhudi.cli.main import main
from pyhudi.model.table_config import load_table_config
from pyhudi.storage import Storage
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.builder import build_view
from tests.helpers import hudi_rs, rows_by_key

pytestmark = pytest.mark.spark
COLS = ["name", "city", "ts"]


def opts(name: str) -> dict[str, str]:
    return {"hoodie.table.name": name, "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.table.type": "MERGE_ON_READ",
            "hoodie.datasource.write.partitionpath.field": "city",
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.upsert.shuffle.parallelism": "2", "hoodie.insert.shuffle.parallelism": "2"}


def upsert(spark: Any, path: str, rows: list[tuple[Any, ...]]) -> None:
    df = spark.createDataFrame(rows, "id long, name string, city string, ts long")
    pyhudi.write(df, path, opts("cc"))


def snapshot(spark: Any, path: str) -> dict[Any, tuple[Any, ...]]:
    return rows_by_key(pyhudi.read(spark, path).toArrow(), "id", COLS)


def latest_slices(path: str) -> dict[tuple[str, str], Any]:
    storage = Storage(path)
    view = build_view(storage, load_table_config(storage), ActiveTimeline.load(storage))
    return {(s.partition, s.file_id): s for s in view.all_latest_file_slices()}


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code = main([*argv, "--json"])
    cap = capsys.readouterr()
    assert code == 0, cap.err
    return json.loads(cap.out)


def test_cli_schedule_and_run(spark: Any, tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "cc")
    cities = ["sf", "ny"]
    upsert(spark, path, [(i, f"a{i}", cities[i % 2], 1) for i in range(20)])
    upsert(spark, path, [(i, f"b{i}", cities[i % 2], 2) for i in range(0, 20, 3)])
    upsert(spark, path, [(i, f"c{i}", cities[i % 2], 3) for i in range(1, 20, 4)])
    before = snapshot(spark, path)
    assert len(before) == 20 and before[3] == ("b3", "ny", 2) and before[5] == ("c5", "ny", 3)
    with_logs = {k for k, s in latest_slices(path).items() if s.log_files}
    assert with_logs, "upserts on a MOR table should have written log files"

    # schedule (no Spark), then a write against the pending plan, then run that plan.
    planned = cli_json(capsys, "compaction", path, "schedule")
    instant = planned["scheduled"]
    assert {(o["partition"], o["file_id"]) for o in planned["compaction"]["operations"]} == with_logs
    upsert(spark, path, [(0, "d0", "sf", 4)])
    expected = {**before, 0: ("d0", "sf", 4)}
    assert snapshot(spark, path) == expected

    code = main(["compaction", path, "run", "--instant", instant])
    cap = capsys.readouterr()
    assert code == 0, cap.err
    assert f"  {instant}: {len(with_logs)} file groups" in cap.out
    assert snapshot(spark, path) == expected
    slices = latest_slices(path)
    for key in with_logs:
        assert slices[key].base_instant == instant and slices[key].base_file is not None
    # The write made while the plan was pending went to a log against the compaction instant.
    logged = [k for k, s in slices.items() if s.log_files]
    assert len(logged) == 1 and logged[0][0] == "sf" and slices[logged[0]].base_instant == instant

    # run without --instant: schedules the remaining logs and compacts them; then nothing is left.
    data = cli_json(capsys, "compaction", path, "run")
    assert len(data["completed"]) == 1 and data["scheduled"] == [data["completed"][0]["instant"]]
    done = data["completed"][0]
    assert done["file_groups"] >= 1 and done["bytes_written"] > 0
    assert snapshot(spark, path) == expected
    assert not [k for k, s in latest_slices(path).items() if s.log_files]
    assert rows_by_key(hudi_rs(path), "id", COLS) == expected  # an independent reader agrees
    shown = cli_json(capsys, "compaction", path, "show")
    assert shown["pending"] == [] and [c["instant"] for c in shown["completed"]] == [instant, done["instant"]]
    assert shown["next"]["file_slices"] == 0
    files = cli_json(capsys, "files", path)
    groups = [g for p in files["partitions"] for g in p["file_groups"]]
    assert all(g["log_files"] == 0 and g["pending_compaction"] is None for g in groups)
    code = main(["compaction", path, "run"])
    assert code == 0 and "nothing to compact" in capsys.readouterr().out
    assert spark.sparkContext._jsc is not None  # the CLI kept the session it did not create

