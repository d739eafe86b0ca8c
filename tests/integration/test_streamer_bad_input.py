"""The streamer and bad input: malformed records fail fast or go to the error table, never vanish; a
landing file whose schema cannot be written is named."""

from __future__ import annotations

import json
import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from pyhudi.cli.streamer_cmd import Streamer
from pyhudi.errors import HudiError, MalformedRecordError, SchemaMismatchError
from tests.helpers import hudi_rs, rows_by_key

pytestmark = pytest.mark.spark
COLS = ["name", "part", "ts"]
ERROR_COLS = ["batch_id", "source_file", "error_type", "reason", "record"]


def _props(**extra: str) -> dict[str, str]:
    return {"hoodie.table.name": "landed", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.operation": "insert", **extra}


def _land(path: str, lines: list[str]) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w") as fh:
        fh.write("".join(line + "\n" for line in lines))
    os.replace(path + ".tmp", path)  # Spark's file source must never see a half-written file


def _good_json(ids: range) -> tuple[list[str], dict[int, tuple]]:
    recs = [{"id": i, "name": f"n{i}", "part": f"p{i % 2}", "ts": 1} for i in ids]
    return [json.dumps(r) for r in recs], {r["id"]: (r["name"], r["part"], r["ts"]) for r in recs}


def _instants(path: str) -> list[str]:
    return sorted(n for n in os.listdir(os.path.join(path, ".hoodie")) if n[:1].isdigit())


def _check(spark, path: str, expected: dict) -> None:
    assert rows_by_key(pyhudi.read(spark, path).toArrow(), "id", COLS) == expected
    assert rows_by_key(hudi_rs(path), "id", COLS) == expected


def _errors(spark, path: str) -> dict[str, tuple]:
    """The error table by error_id, read by pyhudi and (identically) by hudi-rs."""
    ours = rows_by_key(pyhudi.read(spark, path).toArrow(), "error_id", ERROR_COLS)
    assert rows_by_key(hudi_rs(path), "error_id", ERROR_COLS) == ours
    return ours


def _drop_spark_commit(target: str, batch_id: int) -> None:
    """As if the streamer died after our commits but before Spark recorded the batch: it is replayed."""
    commits = os.path.join(target, ".hoodie", ".aux", "streamer", "checkpoint", "commits")
    for name in (str(batch_id), f".{batch_id}.crc"):
        os.remove(os.path.join(commits, name))


def test_malformed_json_fails_fast_then_goes_to_the_error_table_once(spark, tmp_path, capsys):
    landing, target = str(tmp_path / "landing"), str(tmp_path / "t")
    lines, expected = _good_json(range(3))
    _land(f"{landing}/a.json", lines)
    Streamer(spark, landing, "json", target, _props()).run_round()
    assert "3 records in" in capsys.readouterr().out
    committed = _instants(target)

    good, more = _good_json(range(3, 5))
    bad = ['{"id": 5, "name": "n5", "pa',                              # not JSON
           '{"id": "x6", "name": "n6", "part": "p0", "ts": 1}',        # does not fit the table's id bigint
           '{"name": "n7", "part": "p1", "ts": 1}',                    # no record key
           '{"id": 8, "name": "n8", "part": "p0"}']                    # no precombine value
    _land(f"{landing}/b.json", [good[0], *bad, good[1]])

    # Default (no error table): the round fails naming the file, count and an example; nothing is written.
    with pytest.raises(MalformedRecordError) as err:
        Streamer(spark, landing, "json", target, _props()).run_round()
    msg = str(err.value)
    assert f"{landing}/b.json: 4 of 6 record(s)" in msg and "hoodie.errortable.enable=true" in msg
    assert '{"id": 5, "name": "n5", "pa' in msg and "malformed JSON" in msg
    assert _instants(target) == committed, "no instant, not even a requested one"
    assert not os.path.exists(f"{target}/.hoodie/.aux/errors")
    _check(spark, target, expected)

    # With the error table on, the same (replayed) micro-batch commits the good records, quarantines the rest.
    props = _props(**{"hoodie.errortable.enable": "true"})
    Streamer(spark, landing, "json", target, props).run_round()
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "2 records in" in out[0] and f"4 records quarantined to {target}/.hoodie/.aux/errors" \
        in out[0], out
    expected.update(more)
    _check(spark, target, expected)
    errors = _errors(spark, f"{target}/.hoodie/.aux/errors")
    assert len(errors) + len(more) == len(good) + len(bad), "every landed record is committed or quarantined"
    assert sorted(e[1:] for e in errors.values()) == sorted([
        (f"{landing}/b.json", "JSON_ROW_DESERIALIZATION_FAILURE", "malformed JSON: Unterminated string starting at "
         "column 25", bad[0]),
        (f"{landing}/b.json", "JSON_ROW_DESERIALIZATION_FAILURE", 'field id: "x6" is not an integer (bigint)',
         bad[1]),
        (f"{landing}/b.json", "RECORD_CREATION", "record key field id is null",
         '{"name":"n7","part":"p1","ts":1}'),
        (f"{landing}/b.json", "RECORD_CREATION", "precombine field ts is null", '{"id":8,"name":"n8","part":"p0"}'),
    ])
    assert {e[0] for e in errors.values()} == {1}, "the batch id of the failed, then replayed, micro-batch"

    # A replay after both commits (Spark had not recorded the batch) duplicates nothing in either table.
    errors_committed = _instants(f"{target}/.hoodie/.aux/errors")
    committed = _instants(target)
    _drop_spark_commit(target, 1)
    Streamer(spark, landing, "json", target, props).run_round()
    assert capsys.readouterr().out == ""
    assert _instants(target) == committed and _instants(f"{target}/.hoodie/.aux/errors") == errors_committed
    assert _errors(spark, f"{target}/.hoodie/.aux/errors") == errors
    _check(spark, target, expected)


def test_csv_bad_rows_quarantined_failing_error_table_and_reordered_header(spark, tmp_path, capsys):
    landing, target = str(tmp_path / "landing"), str(tmp_path / "t")
    header = "id,name,part,ts"
    _land(f"{landing}/a.csv", [header, "1,n1,p1,1", "2,n2,p0,1"])
    streamer = Streamer(spark, landing, "csv", target, _props())
    streamer.run_round()
    expected = {1: ("n1", "p1", 1), 2: ("n2", "p0", 1)}
    rows = ["3,n3,p1,1", "4,n4,p0", "5,n5,p1,1,extra", "6,n6,p0,abc", ",n7,p1,1", "8,n8,,1"]
    _land(f"{landing}/b.csv", [header, *rows])
    committed = _instants(target)

    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("the error table cannot live under a file")
    broken = _props(**{"hoodie.errortable.enable": "true", "hoodie.errortable.base.path": f"{not_a_dir}/errors"})
    with pytest.raises(HudiError, match=r"writing 4 malformed record\(s\) to the error table .*ROLLBACK_COMMIT"):
        Streamer(spark, landing, "csv", target, broken).run_round()
    assert _instants(target) == committed, "ROLLBACK_COMMIT: the good records wait for their quarantine"

    capsys.readouterr()
    props = _props(**{"hoodie.errortable.enable": "true", "hoodie.errortable.base.path": str(tmp_path / "errors")})
    Streamer(spark, landing, "csv", target, props).run_round()
    assert "2 records in" in capsys.readouterr().out
    expected.update({3: ("n3", "p1", 1), 8: ("n8", None, 1)})
    _check(spark, target, expected)
    stored = pyhudi.read(spark, target).filter("id = 8").select("_hoodie_partition_path").first()
    assert stored[0] == "__HIVE_DEFAULT_PARTITION__", "a null partition value is not an error: Hudi's default partition"
    errors = _errors(spark, str(tmp_path / "errors"))
    assert sorted((e[3], e[4]) for e in errors.values()) == sorted([
        ("expected 4 fields, found 3", "4,n4,p0"),
        ("expected 4 fields, found 5", "5,n5,p1,1,extra"),
        ("field ts: cannot read 'abc' as int", "6,n6,p0,abc"),
        ("record key field id is null", '{"name":"n7","part":"p1","ts":1}'),
    ])
    assert len(errors) + 2 == len(rows)

    # Columns in another order would shift values into the wrong columns: the file is refused by name.
    committed = _instants(target)
    _land(f"{landing}/c.csv", ["id,part,name,ts", "9,p1,n9,1"])
    with pytest.raises(SchemaMismatchError, match=f"landing file {landing}/c.csv: its CSV header does not match"):
        Streamer(spark, landing, "csv", target, props).run_round()
    assert _instants(target) == committed
    _check(spark, target, expected)


def _land_parquet(tmp_path, landing: str, name: str, columns: dict) -> None:
    pq.write_table(pa.table(columns), f"{tmp_path}/{name}")
    shutil.move(f"{tmp_path}/{name}", f"{landing}/{name}")


def test_parquet_new_column_and_changed_column_type_are_named(spark, tmp_path):
    landing, target = str(tmp_path / "landing"), str(tmp_path / "t")
    os.makedirs(landing)
    _land_parquet(tmp_path, landing, "a.parquet", {"id": [1, 2], "name": ["a", "b"], "part": ["p0", "p1"], "ts": [1, 1]})
    streamer = Streamer(spark, landing, "parquet", target, _props())
    streamer.run_round()
    committed = _instants(target)

    # A column the running streamer does not know would be dropped: refused, naming file and column.
    _land_parquet(tmp_path, landing, "b.parquet",
                  {"id": [3], "name": ["c"], "part": ["p0"], "ts": [2], "tip": [1.5]})
    with pytest.raises(SchemaMismatchError, match=rf"{landing}/b.parquet: tip \(double\).*Restart the streamer"):
        streamer.run_round()
    assert _instants(target) == committed
    # Restarted, the streamer merges the footers and the table gains the nullable column (schema evolution).
    streamer = Streamer(spark, landing, "parquet", target, _props())
    streamer.run_round()
    tips = {r["id"]: r["tip"] for r in hudi_rs(target).select(["id", "tip"]).to_pylist()}
    assert tips == {1: None, 2: None, 3: 1.5}
    expected = {1: ("a", "p0", 1), 2: ("b", "p1", 1), 3: ("c", "p0", 2)}
    _check(spark, target, expected)
    committed = _instants(target)

    # Spark cannot read a file whose column type changed: the error names the file and the column.
    _land_parquet(tmp_path, landing, "c.parquet", {"id": [4], "name": ["d"], "part": ["p0"], "ts": ["late"]})
    with pytest.raises(SchemaMismatchError) as err:
        streamer.run_round()
    assert f"landing file {landing}/c.parquet: column ts is parquet BINARY in the file but bigint" in str(err.value)
    assert _instants(target) == committed

    # A streamer started later infers ts as string from the files left; the table refuses the change, and the
    # error names the landing file it came from.
    os.remove(f"{landing}/a.parquet")
    os.remove(f"{landing}/b.parquet")
    with pytest.raises(SchemaMismatchError) as err:
        Streamer(spark, landing, "parquet", target, _props()).run_round()
    assert "'ts'" in str(err.value) and f"landing file(s): {landing}/c.parquet" in str(err.value)
    assert _instants(target) == committed
    _check(spark, target, expected)
