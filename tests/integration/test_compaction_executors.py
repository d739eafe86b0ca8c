"""One compaction plan, two executors (in-process, threads, `faults.pause_at`).

An executor beats the compaction instant's heartbeat, taken under the table lock. A second executor of the
same plan while the first is live is refused (`pyhudi.compact` skips the plan, naming it explicitly raises
CompactionInProgressError): before, it took the inflight plan for a dead attempt, deleted the live
executor's files and wrote its own, and both completed base files of one instant into one file group,
which hudi-rs refuses to read ("already present in File Group").
"""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest

import pyhudi
from pyhudi import faults
from pyhudi.errors import CompactionInProgressError
from pyhudi.services import compaction
from pyhudi.storage import Storage
from tests.helpers import hudi_rs, rows_by_key

ARROW = pa.schema([("id", pa.string()), ("name", pa.string()), ("part", pa.string()), ("ts", pa.int64())])
OPTS = {"hoodie.table.name": "c", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": "MERGE_ON_READ", "hoodie.index.type": "INMEMORY"}


def _write(path: str, rows: dict[str, tuple[str, str, int]]) -> None:
    pyhudi.write(pa.Table.from_pylist([{"id": k, "name": v[0], "part": v[1], "ts": v[2]} for k, v in rows.items()],
                                      schema=ARROW), path, OPTS)


def test_a_live_compaction_is_not_executed_twice(tmp_path):
    path = str(tmp_path / "t")
    rows = {f"k{i}": ("v1", f"p{i % 2}", 1) for i in range(8)}
    _write(path, rows)
    update = {f"k{i}": ("v2", f"p{i % 2}", 2) for i in range(0, 8, 2)}
    _write(path, update)
    rows |= update
    errors: list[BaseException] = []
    done: list[list[str]] = []

    def first() -> None:
        try:
            done.append(pyhudi.compact(None, path, OPTS))
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            errors.append(exc)

    with faults.pause_at("compaction.mid_execute") as pause:
        thread = threading.Thread(target=first)
        thread.start()
        assert pause.wait_reached(120)
        [planned] = compaction.pending_compactions(Storage(path))
        assert pyhudi.compact(None, path, OPTS) == []  # skipped: another process executes it
        with pytest.raises(CompactionInProgressError, match=planned):
            pyhudi.compact(None, path, OPTS, instant=planned)
    thread.join(120)
    assert not errors and done == [[planned]]
    for table in (pyhudi.read(path), hudi_rs(path)):
        assert rows_by_key(table, "id", ["name", "part", "ts"]) == rows
    base_files = [f for p in ("p0", "p1") for f in (tmp_path / "t" / p).iterdir()
                  if f.name.endswith(f"_{planned}.parquet")]
    assert len(base_files) == 2  # one per file group, not one per executor
