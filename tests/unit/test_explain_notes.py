"""`--explain` on a write says what its inline table services planned from: the clean's and the
compaction's scope (incremental window or full scan, and why), next to the request counts."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pyhudi.cli.main import main
from pyhudi.storage.metrics import note, request_metrics
from tests.helpers import hudi_rs


def test_notes_reach_every_enclosing_collector() -> None:
    note("outside any collector: dropped")
    with request_metrics() as outer:
        with request_metrics() as inner:
            note("a")
        note("b")
    assert (inner.notes, outer.notes) == (["a"], ["a", "b"])
    assert outer.as_dict()["notes"] == ["a", "b"]


def test_write_explain_names_inline_service_scopes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table, model = tmp_path / "t", {}
    opts = ["-o", "hoodie.table.name=t", "-o", "hoodie.datasource.write.recordkey.field=id",
            "-o", "hoodie.datasource.write.precombine.field=ts", "-o", "hoodie.datasource.write.partitionpath.field=p",
            "-o", "hoodie.datasource.write.table.type=MERGE_ON_READ", "-o", "hoodie.compact.inline=true",
            "-o", "hoodie.compact.inline.max.delta.commits=2", "-o", "hoodie.cleaner.commits.retained=1"]
    outs = []
    for n in range(4):
        rows = {"id": ["same/ü", f"k{n}"], "ts": [n, n], "p": ["2024/01/02", f"p={n % 2}"]}
        src = tmp_path / f"b{n}.parquet"
        pq.write_table(pa.table(rows), src)
        model.update({k: (p, n) for k, p in zip(rows["id"], rows["p"])})
        assert main(["write", "--source", str(src), "--source-format", "parquet", "--target", str(table),
                     "--no-progress", "--explain", *opts]) == 0
        outs.append(capsys.readouterr().out)
    text = "\n".join(outs)
    assert "plan: compaction: full scan: no completed compaction" in text, text
    assert "plan: compaction: incremental:" in text, text
    assert "plan: clean: " in text, text
    got = hudi_rs(table)
    assert got is not None
    assert {r["id"]: (r["p"], r["ts"]) for r in got.to_pylist()} == model
