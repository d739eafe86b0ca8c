"""The CLI's in-process path (no `--master`): pyarrow reads the landing files, the in-process engine writes,
compacts, clusters and deletes partitions; no SparkSession anywhere. Every table is read back with hudi-rs
and compared with a plain-Python model. (tests/integration/test_no_java.py runs the same commands where
Java cannot start at all.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pyhudi.cli.main import main
from pyhudi.errors import HudiError, JavaNotFoundError, MalformedRecordError
from pyhudi.storage import Storage
from pyhudi.streamer import arrow_source
from pyhudi.timeline.timeline import ActiveTimeline
from tests.helpers import hudi_rs, rows_by_key
from tests.unit._samples import extract_sample

COLS = ["name", "city", "ts"]
OPTS = ["-o", "hoodie.table.name=inproc", "-o", "hoodie.datasource.write.recordkey.field=id",
        "-o", "hoodie.datasource.write.partitionpath.field=city", "-o", "hoodie.datasource.write.precombine.field=ts",
        "-o", "hoodie.index.bloom.num_entries=1000"]


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def lines(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def completed(path: str) -> list[str]:
    return [i.timestamp for i in ActiveTimeline.load(Storage(path)).completed()]


# --------------------------------------------------------------------------- reading landing files
def test_source_files_follow_spark_rules(tmp_path: Path) -> None:
    d = tmp_path / "land"
    d.mkdir()
    lines(d / "b.json", [{"id": 2}])
    lines(d / "a.json", [{"id": 1}])
    (d / "_SUCCESS").write_text("")
    (d / ".a.json.crc").write_text("x")
    (d / "empty.json").write_text("")
    assert [Path(p).name for p in arrow_source.list_files(str(d), "json")] == ["a.json", "b.json"]
    assert arrow_source.list_files(f"file:{d / 'a.json'}", "json") == [str(d / "a.json")]
    assert arrow_source.list_files(str(d / "empty.json"), "json") == []
    (d / "city=sf").mkdir()
    with pytest.raises(HudiError, match="holds directories.*--master"):
        arrow_source.list_files(str(d), "json")
    with pytest.raises(HudiError, match="does not exist"):
        arrow_source.list_files(str(tmp_path / "nope"), "json")
    with pytest.raises(HudiError, match="only local files"):
        arrow_source.list_files("hdfs://namenode/x", "json")  # s3:// is read through Storage: test_s3_cli.py
    with pytest.raises(HudiError, match="'xml' is not one of"):
        arrow_source.list_files(str(d), "xml")


def test_json_keeps_timestamp_text_and_widens_across_files(tmp_path: Path) -> None:
    lines(tmp_path / "a.json", [{"id": 1, "at": "2024-01-02T03:04:05", "n": {"t": "2024-01-01 00:00:00"}},
                                {"id": 2, "at": None, "x": 1}])
    lines(tmp_path / "b.json", [{"id": 3.5, "x": 2.5, "u": "ü/日本"}])
    t = arrow_source.read_source(str(tmp_path), "json")
    assert t is not None
    assert t.schema.field("at").type == pa.string() and t.schema.field("n").type == pa.struct([("t", pa.string())])
    assert t.schema.field("id").type == pa.float64() and t.schema.field("x").type == pa.float64()
    assert t.to_pylist() == [
        {"id": 1.0, "at": "2024-01-02T03:04:05", "n": {"t": "2024-01-01 00:00:00"}, "x": None, "u": None},
        {"id": 2.0, "at": None, "n": None, "x": 1.0, "u": None},
        {"id": 3.5, "at": None, "n": None, "x": 2.5, "u": "ü/日本"}]


def test_csv_header_inferred_types_empty_is_null(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("id,name,v\n1,,2.5\n2,é,\n", encoding="utf-8")
    t = arrow_source.read_source(str(tmp_path / "a.csv"), "csv")
    assert t is not None and t.to_pylist() == [{"id": 1, "name": None, "v": 2.5}, {"id": 2, "name": "é", "v": None}]


def test_malformed_and_incompatible_files_name_the_file(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text('{"id": 1}\n{not json\n')
    with pytest.raises(MalformedRecordError, match="bad.json"):
        arrow_source.read_source(str(tmp_path / "bad.json"), "json")
    d = tmp_path / "mixed"
    d.mkdir()
    pq.write_table(pa.table({"id": [1]}), d / "a.parquet")
    pq.write_table(pa.table({"id": ["x"]}), d / "b.parquet")
    with pytest.raises(MalformedRecordError, match="a.parquet, b.parquet do not share compatible column types"):
        arrow_source.read_source(str(d), "parquet")
    assert arrow_source.read_files([], "json") is None


# --------------------------------------------------------------------------- commands
def test_write_then_delete_partition_in_process(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "t")
    rows = [{"id": "a/1", "name": "Zoë", "city": "2024/01", "ts": 1}, {"id": "日本", "name": None, "city": "42", "ts": 1},
            {"id": "c", "name": "", "city": "42", "ts": 1}]
    code, out, err = cli(capsys, "write", "--source", str(lines(tmp_path / "b1.json", rows)), "--source-format",
                         "json", "--target", path, *OPTS, "--operation", "insert")
    assert code == 0 and err == "", err  # no "starting Spark", no status line
    assert out.startswith(f"commit {completed(path)[-1]}: 3 records in")
    model = {r["id"]: (r["name"], r["city"], r["ts"]) for r in rows}
    assert rows_by_key(hudi_rs(path), "id", COLS) == model

    # an upsert from parquet: a later ts wins, a null replaces a value
    pq.write_table(pa.table({"id": ["c", "d"], "name": [None, "new"], "city": ["42", "2024/01"],
                             "ts": pa.array([2, 2], pa.int64())}), tmp_path / "b2.parquet")
    code, out, err = cli(capsys, "write", "--source", str(tmp_path / "b2.parquet"), "--source-format", "parquet",
                         "--target", path, *OPTS)
    assert code == 0, err
    model.update({"c": (None, "42", 2), "d": ("new", "2024/01", 2)})
    assert rows_by_key(hudi_rs(path), "id", COLS) == model

    code, out, err = cli(capsys, "delete-partition", path, "--partitions", "2024/*")
    assert code == 0 and err == "", err
    assert out == f"pyhudi delete-partition: replacecommit {completed(path)[-1]} deleted partition(s) 2024/* of {path}\n"
    model = {k: v for k, v in model.items() if v[1] != "2024/01"}
    assert rows_by_key(hudi_rs(path), "id", COLS) == model

    # --mode ignore on an existing table writes nothing; an empty source is refused
    before = completed(path)
    code, out, _ = cli(capsys, "write", "--source", str(tmp_path / "b2.parquet"), "--source-format", "parquet",
                       "--target", path, *OPTS, "--mode", "ignore")
    assert code == 0 and "nothing written (--mode ignore)" in out and completed(path) == before
    (tmp_path / "e.json").write_text("")
    code, _, err = cli(capsys, "write", "--source", str(tmp_path / "e.json"), "--source-format", "json",
                       "--target", path, *OPTS)
    assert code == 2 and "has no json records" in err and completed(path) == before


def test_compaction_run_in_process_on_a_sample(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Hudi's MOR sample with an Avro log block: compacted in-process, the rows read the same, and the
    read-optimized view now has the update."""
    path = str(extract_sample("trips_mor_avro__v6_trips_8i1u", tmp_path / "s"))
    cols = ["rider", "driver", "fare", "city"]
    before = rows_by_key(hudi_rs(path), "uuid", cols)
    assert len(before) == 8 and rows_by_key(hudi_rs(path, read_optimized=True), "uuid", cols) != before
    code, out, err = cli(capsys, "compaction", path, "run", "--json")
    assert code == 0 and err == "pyhudi compaction: running a new compaction in-process\n", err
    (done,) = json.loads(out)["completed"]
    assert done["instant"] == completed(path)[-1]
    assert rows_by_key(hudi_rs(path), "uuid", cols) == before
    assert rows_by_key(hudi_rs(path, read_optimized=True), "uuid", cols) == before
    assert {v[2] for v in before.values() if v[0] == "rider-D"} == {25.0}


def test_clustering_run_in_process(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "c")
    model = {}
    for b in range(3):  # three inserts with small-file handling off: three small file groups per partition
        rows = [{"id": f"{b}-{i}", "name": f"n{i}", "city": ("x", "y")[i % 2], "ts": b} for i in range(6)]
        code, _, err = cli(capsys, "write", "--source", str(lines(tmp_path / f"b{b}.json", rows)), "--source-format",
                           "json", "--target", path, *OPTS, "-o", "hoodie.parquet.small.file.limit=0",
                           "--operation", "insert")
        assert code == 0, err
        model.update({r["id"]: (r["name"], r["city"], r["ts"]) for r in rows})
    code, out, err = cli(capsys, "clustering", path, "run", "--json",
                         "-o", "hoodie.clustering.plan.strategy.small.file.limit=104857600")
    assert code == 0 and err == "pyhudi clustering: running a new clustering in-process\n", err
    (done,) = json.loads(out)["completed"]
    assert done["file_groups_replaced"] == 6 and done["records"] == 18
    assert rows_by_key(hudi_rs(path), "id", COLS) == model


def test_spark_asked_for_without_pyspark(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """--master with pyspark missing: one line naming the extra, before the "starting Spark" line."""
    import importlib.util

    from pyhudi import spark_env

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyspark" else real(name, *a))
    with pytest.raises(JavaNotFoundError, match=r"pip install 'pyhudi\[spark\]'.*leave out --master"):
        spark_env.check_spark()
    path = str(extract_sample("mor_parquet__v6_nonpartitioned", tmp_path / "s"))
    code, out, err = cli(capsys, "compaction", path, "run", "--master", "local[1]")
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and "pyhudi[spark]" in err
    code, _, err = cli(capsys, "write", "--source", path, "--source-format", "parquet", "--target", path,
                       "--master", "local[1]")
    assert code == 2 and "pyhudi[spark]" in err and "starting Spark" not in err


def test_png_plot_without_matplotlib_names_the_extra(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    path = str(extract_sample("cow__v6_nonpartitioned", tmp_path / "s"))
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code, _, err = cli(capsys, "files", path, "--plot", str(tmp_path / "x.png"))
    assert code == 2 and "pip install 'pyhudi[plot]'" in err and ".html" in err
    code, _, err = cli(capsys, "files", path, "--plot", str(tmp_path / "x.html"))
    assert code == 0 and (tmp_path / "x.html").exists()


def test_demo_runs_in_process(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "demo")
    code, out, _ = cli(capsys, "demo", "--path", path, "--batches", "2", "--rows-per-batch", "300", "--no-progress")
    assert code == 0 and "in-process" in out and "table has 540 records (expected 540 distinct trips): OK" in out
    got = hudi_rs(path)
    assert got is not None
    assert sorted(got.column("uuid").to_pylist()) == [f"trip-{i:09d}" for i in range(540)]


def test_read_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`pyhudi read` against a model: columns, typed filters, limit, time travel, the three formats."""
    path = str(tmp_path / "r")
    rows = [{"id": "k1", "name": "Zoë", "city": "2024/01", "ts": 1}, {"id": "日本", "name": None, "city": "7", "ts": 1},
            {"id": "k3", "name": "c,d", "city": "7", "ts": 5}]
    assert cli(capsys, "write", "--source", str(lines(tmp_path / "a.json", rows)), "--source-format", "json",
               "--target", path, *OPTS, "--operation", "insert")[0] == 0
    first = completed(path)[-1]
    upd = [{"id": "k1", "name": "new", "city": "2024/01", "ts": 2}]
    assert cli(capsys, "write", "--source", str(lines(tmp_path / "b.json", upd)), "--source-format", "json",
               "--target", path, *OPTS)[0] == 0

    def read_json(*argv: str) -> list[dict[str, Any]]:
        code, out, err = cli(capsys, "read", path, "--format", "json", *argv)
        assert code == 0 and err == "", err
        return [json.loads(line) for line in out.splitlines()]

    got = read_json("--columns", "id,name,ts")
    assert sorted(got, key=lambda r: r["ts"]) == [
        {"id": "日本", "name": None, "ts": 1}, {"id": "k1", "name": "new", "ts": 2}, {"id": "k3", "name": "c,d", "ts": 5}]
    assert read_json("--columns", "id", "--filter", "ts>=2", "--filter", "city=7") == [{"id": "k3"}]
    assert read_json("--columns", "id", "--filter", "city=2024/01") == [{"id": "k1"}]
    assert len(read_json("--limit", "2")) == 2
    assert {r["id"]: r["name"] for r in read_json("--columns", "id,name", "--as-of", first)}["k1"] == "Zoë"
    code, out, _ = cli(capsys, "read", path, "--columns", "id,name", "--filter", "id=k3", "--format", "csv")
    assert code == 0 and out == '"id","name"\n"k3","c,d"\n'
    code, out, _ = cli(capsys, "read", path, "--columns", "id", "--filter", "id=k3")
    assert code == 0 and out.splitlines()[-1] == "(1 row)" and "k3" in out
    code, _, err = cli(capsys, "read", path, "--filter", "ts=soon")
    assert code == 2 and "'soon' is not a int64" in err
    code, _, err = cli(capsys, "read", path, "--filter", "ts")
    assert code == 2 and "is not COL=VAL" in err


# --------------------------------------------------------------------------- the in-process streamer
def test_streamer_rounds_ingest_each_file_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import os
    import time

    from pyhudi.streamer.local import CHECKPOINT_KEY, FILES_KEY

    landing, path = tmp_path / "landing", str(tmp_path / "t")
    landing.mkdir()
    props = tmp_path / "job.properties"
    props.write_text("hoodie.table.name=st\nhoodie.datasource.write.recordkey.field=id\n"
                     "hoodie.datasource.write.partitionpath.field=city\nhoodie.datasource.write.precombine.field=ts\n"
                     "hoodie.index.bloom.num_entries=1000\n")
    argv = ["streamer", "--source-dir", str(landing), "--source-format", "json", "--target", path,
            "--props", str(props)]

    def round_(expect_commit: bool) -> str:
        before = completed(path) if os.path.exists(path) else []
        code, out, err = cli(capsys, *argv)
        assert code == 0, err
        after = completed(path) if os.path.exists(path) else []
        assert len(after) == len(before) + (1 if expect_commit else 0), out
        return out

    assert round_(False).strip() == "streamer: stopped"  # nothing landed yet (empty directory)
    model: dict[str, tuple[Any, ...]] = {}
    r1 = [{"id": "a", "name": "Zoë", "city": "2024/01", "ts": 1}, {"id": "ключ", "name": None, "city": "9", "ts": 1}]
    lines(landing / "f1.json", r1)
    (landing / ".f2.json.tmp").write_text('{"id": "partial"')  # still being written: hidden, skipped
    out = round_(True)
    assert "2 records in" in out and "(1 landing file)" in out
    model.update({r["id"]: (r["name"], r["city"], r["ts"]) for r in r1})
    assert rows_by_key(hudi_rs(path), "id", COLS) == model
    round_(False)  # f1 is in the commit's list: never ingested twice

    # A malformed file fails the round, naming it; nothing is committed; fixed, it is ingested.
    lines(landing / "f2.json", [{"id": "a", "name": "upd", "city": "2024/01", "ts": 2}])
    (landing / "f3.json").write_text('{"id": "b", "name": "x", "city": "9", "ts": 2}\n{oops\n')
    before = completed(path)
    code, _, err = cli(capsys, *argv)
    assert code == 2 and "f3.json" in err and completed(path) == before
    lines(landing / "f3.json", [{"id": "b", "name": "x", "city": "9", "ts": 2}])
    out = round_(True)
    assert "(2 landing files)" in out
    model.update({"a": ("upd", "2024/01", 2), "b": ("x", "9", 2)})
    assert rows_by_key(hudi_rs(path), "id", COLS) == model

    # The commit carries what it ingested (extraMetadata), the checkpoint is the newest modification time.
    tl = ActiveTimeline.load(Storage(path))
    extra = tl.commit_metadata(tl.completed().instants[-1]).extra_metadata
    assert json.loads(extra[FILES_KEY]) == ["f2.json", "f3.json"]
    assert int(extra[CHECKPOINT_KEY]) == max(os.stat(landing / n).st_mtime_ns // 1_000_000
                                             for n in ("f1.json", "f2.json", "f3.json"))
    os.utime(landing / "f1.json", (time.time() + 5, time.time() + 5))  # touched again: still not re-ingested
    round_(False)


def test_streamer_file_selection_after_archival(tmp_path: Path) -> None:
    """Names listed by active commits, or (once commits were archived) not newer than the oldest active
    checkpoint, count as ingested."""
    import os

    from pyhudi.streamer.local import Ingested, new_files

    for i, name in enumerate(["a.json", "b.json", "c.json"]):
        lines(tmp_path / name, [{"id": i}])
        os.utime(tmp_path / name, ns=((1000 + i) * 1_000_000, (1000 + i) * 1_000_000))
    names = lambda done: [Path(p).name for p in new_files(str(tmp_path), "json", done)]  # noqa: E731
    assert names(Ingested(frozenset(), -1, -1)) == ["a.json", "b.json", "c.json"]
    assert names(Ingested(frozenset({"b.json"}), -1, 1001)) == ["a.json", "c.json"]
    assert names(Ingested(frozenset({"b.json"}), 1000, 1001)) == ["c.json"]  # a.json: archived commit's file


def test_streamer_error_table_needs_spark(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    props = tmp_path / "p.properties"
    props.write_text("hoodie.table.name=x\nhoodie.datasource.write.recordkey.field=id\nhoodie.errortable.enable=true\n")
    code, _, err = cli(capsys, "streamer", "--source-dir", str(tmp_path), "--source-format", "json",
                       "--target", str(tmp_path / "t"), "--props", str(props))
    assert code == 2 and "hoodie.errortable.enable=true" in err and "--master" in err


def test_all_null_columns_take_the_tables_type(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A json column null in every record has no Arrow type: a new table stores it as string (Spark's json
    inference); an existing table's column keeps its type."""
    t = pa.table({"a": pa.nulls(2), "b": [1, 2]})
    assert arrow_source.type_null_columns(t, None).schema.field("a").type == pa.string()
    target = pa.schema([("a", pa.float64())])
    typed = arrow_source.type_null_columns(t, target)
    assert typed.schema.field("a").type == pa.float64() and typed.column("a").null_count == 2

    path = str(tmp_path / "n")
    first = [{"id": "x", "name": "a", "city": "c", "ts": 1, "amount": 1.5}]
    assert cli(capsys, "write", "--source", str(lines(tmp_path / "1.json", first)), "--source-format", "json",
               "--target", path, *OPTS)[0] == 0
    nulls = [{"id": "y", "name": None, "city": "c", "ts": 1, "amount": None}]
    code, _, err = cli(capsys, "write", "--source", str(lines(tmp_path / "2.json", nulls)), "--source-format",
                       "json", "--target", path, *OPTS)
    assert code == 0, err
    assert rows_by_key(hudi_rs(path), "id", ["name", "amount"]) == {"x": ("a", 1.5), "y": (None, None)}
