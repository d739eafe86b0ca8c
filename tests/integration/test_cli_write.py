"""`pyhudi write --master local[2]` on the shared session: the commit line on stdout, the status line's
summary on stderr (stderr is not a terminal here, so only the summary), the rows as both readers see
them; a second write without --master continues the table in-process; then `pyhudi files --plot`
before/after the second write."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pyhudi.cli.main import main
from pyhudi.storage import Storage
from pyhudi.timeline.timeline import ActiveTimeline
from tests.helpers import hudi_rs, rows_by_key

pytestmark = pytest.mark.spark
COLS = ["name", "city", "ts"]
PROPS = """# the streamer's properties format
hoodie.table.name=cli_write
hoodie.datasource.write.recordkey.field=id
hoodie.datasource.write.partitionpath.field=city
hoodie.datasource.write.precombine.field=ts
hoodie.insert.shuffle.parallelism=2
hoodie.upsert.shuffle.parallelism=2
"""


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[str, str]:
    code = main(list(argv))
    cap = capsys.readouterr()
    assert code == 0, cap.err
    return cap.out, cap.err


def completed_writes(path: str) -> list[str]:
    return [i.timestamp for i in ActiveTimeline.load(Storage(path)).write_timeline().completed()]


def test_cli_write_with_status_line_then_plot(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    landing, path, props = tmp_path / "landing", str(tmp_path / "t"), tmp_path / "t.properties"
    landing.mkdir()
    props.write_text(PROPS)
    rows = [{"id": i, "name": f"a{i}", "city": ("sf", "ny")[i % 2], "ts": 1} for i in range(40)]
    (landing / "part-0.json").write_text("".join(json.dumps(r) + "\n" for r in rows))

    out, err = cli(capsys, "write", "--source", str(landing), "--source-format", "json", "--target", path,
                   "--props", str(props), "--operation", "insert", "--master", "local[2]")
    (first,) = completed_writes(path)
    assert out == f"commit {first}: 40 records in, 2 files created, 0 updated, 2 small files remaining, " \
                  f"{out.rsplit(', ', 1)[1]}"
    summary = re.search(r"^pyhudi write: done in \d+\.\ds \((\d+) Spark stages?, (\d+) tasks?\)$", err, re.M)
    assert summary, err
    assert int(summary.group(1)) >= 1 and int(summary.group(2)) >= int(summary.group(1))
    assert "\r" not in err  # not a terminal: no in-place redraws

    # An upsert from parquet with -o, in-process (no --master) on the table Spark wrote: no status line.
    ids = range(0, 40, 3)  # 14 keys in both partitions
    updates = pa.table({"id": pa.array(ids, pa.int64()), "name": [f"b{i}" for i in ids],
                        "city": [("sf", "ny")[i % 2] for i in ids], "ts": pa.array([2] * len(ids), pa.int64())})
    pq.write_table(updates, tmp_path / "updates.parquet")
    out, err = cli(capsys, "write", "--source", str(tmp_path / "updates.parquet"), "--source-format", "parquet",
                   "--target", path, "--props", str(props), "-o", "hoodie.datasource.write.operation=upsert",
                   "--no-progress")
    second = completed_writes(path)[-1]
    assert out.startswith(f"commit {second}: 14 records in, 0 files created, 2 updated") and "done in" not in err

    expected = {i: (f"b{i}" if i % 3 == 0 else f"a{i}", ("sf", "ny")[i % 2], 2 if i % 3 == 0 else 1)
                for i in range(40)}
    assert rows_by_key(hudi_rs(path), "id", COLS) == expected

    # Before/after panels of the table just written: each write left one base file per partition.
    html = tmp_path / "sizes.html"
    out, _ = cli(capsys, "files", path, "--plot", str(html), "--as-of", f"{first},latest")
    assert out.splitlines()[0] == f"wrote {html}: cli_write, 2 panels"
    page = html.read_text()
    assert re.findall(r'data-as-of="([^"]*)" data-instant="([^"]*)"', page) == [(first, first), ("latest", second)]
    assert re.search(r"<tr><td>base files</td><td>2</td><td>2</td></tr>", page)
    assert "100.0 MiB (104,857,600 B) [default]" in page
