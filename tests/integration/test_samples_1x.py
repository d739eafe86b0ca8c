"""Real Hudi 1.x tables (versions 8 and 9, written by Hudi 1.0-1.2) read through pyhudi equal their rows as
the independent reader hudi-rs 0.5 reads them (the gold files), in process and on Spark."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
from tests.helpers import SAMPLES_1X, extract_sample_1x, hudi_rs, same_rows, samples_1x

TABLES = samples_1x()
META = ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
        "_hoodie_file_name"]
# Every table, the one with Lance base files (Hudi 1.2) too: the test extra installs the `lance` extra.
ALL = sorted(TABLES)


def _gold(name: str) -> pa.Table:
    return pq.read_table(SAMPLES_1X / "gold" / f"{name}.parquet")


def _root(name: str, tmp_path) -> str:
    return str(extract_sample_1x(name, tmp_path))


def _check(actual: pa.Table, name: str) -> None:
    gold = _gold(name)
    assert actual.num_rows == TABLES[name]["hudi_rs_rows"]
    # The gold keeps the record key of the meta columns.
    assert set(actual.column_names) - set(gold.column_names) == set(META) - {"_hoodie_record_key"}
    assert set(gold.column_names) <= set(actual.column_names)
    assert same_rows(actual, gold), f"{name}: pyhudi's rows differ from the gold"


@pytest.mark.parametrize("name", ALL)
def test_snapshot_in_process_equals_gold(tmp_path, name):
    _check(pyhudi.read(_root(name, tmp_path)), name)


@pytest.mark.spark
@pytest.mark.parametrize("name", ALL)
def test_snapshot_on_spark_equals_gold(spark, tmp_path, name):
    _check(pyhudi.read(spark, _root(name, tmp_path)).toArrow(), name)


@pytest.mark.parametrize("name", ALL)
def test_projection_and_filter(tmp_path, name):
    """A projected, filtered read returns the gold's matching rows (filters reach the planner and the
    merged rows alike)."""
    root = _root(name, tmp_path)
    gold = _gold(name)
    key = "_hoodie_record_key"
    keys = sorted(gold.column(key).to_pylist())
    some = sorted(set(keys[: max(1, len(keys) // 2)]))
    got = pyhudi.read(root, columns=[key], filters=[(key, "in", some)])
    assert got.column_names == [key]
    assert sorted(got.column(key).to_pylist()) == [k for k in keys if k in some]


@pytest.mark.parametrize("name", ALL)
def test_agrees_with_hudi_rs(tmp_path, name):
    root = _root(name, tmp_path)
    ours, theirs = pyhudi.read(root), hudi_rs(root)
    assert theirs is not None
    assert same_rows(ours, theirs, [c for c in ours.column_names if c in theirs.column_names])


def _completed_writes(root: str) -> list[tuple[str, str]]:
    """(requested, completion) of each completed commit/deltacommit/replacecommit, read from the names
    in .hoodie/timeline independently of pyhudi's timeline code."""
    import os
    import re

    out = []
    for name in os.listdir(os.path.join(root, ".hoodie", "timeline")):
        m = re.fullmatch(r"(\d{17})_(\d{17})\.(commit|deltacommit|replacecommit)", name)
        if m:
            out.append((m.group(1), m.group(2)))
    return sorted(out)


def _with_commit_times(table: pa.Table, times: set[str]) -> pa.Table:
    import pyarrow.compute as pc

    return table.filter(pc.is_in(table.column("_hoodie_commit_time"), pa.array(sorted(times), pa.string())))


@pytest.mark.parametrize("name", ALL)
def test_time_travel_to_every_instant_agrees_with_hudi_rs(tmp_path, name):
    """Hudi 1.x and hudi-rs both compare as.of.instant with requested times."""
    root = _root(name, tmp_path)
    for requested, _ in _completed_writes(root):
        ours = pyhudi.read(root, {"as.of.instant": requested})
        theirs = hudi_rs(root, as_of=requested)
        if theirs is None:
            assert ours.num_rows == 0, requested
            continue
        cols = [c for c in ours.column_names if c in theirs.column_names]
        assert same_rows(ours, theirs, cols), f"{name} as of {requested}"


@pytest.mark.parametrize("name", ALL)
def test_incremental_selects_by_completion_time(tmp_path, name):
    """1.x's incremental range (begin, end] holds completion times; the rows are those whose commit time
    is the requested time of a commit completed in the range, read as of the range's last commit."""
    root = _root(name, tmp_path)
    writes = _completed_writes(root)
    latest = pyhudi.read(root)  # equal to the gold: test_snapshot_in_process_equals_gold
    begins = ["earliest", "000", *[c for _, c in writes], *[str(int(r) + 1) for r, _ in writes]]
    for begin in begins:
        floor = "0" if begin in ("earliest", "000") else begin
        chosen = {r for r, c in writes if c > floor}
        got = pyhudi.read(root, {"hoodie.datasource.query.type": "incremental",
                                 "hoodie.datasource.read.begin.instanttime": begin})
        assert same_rows(got, _with_commit_times(latest, chosen)), f"{name} from {begin}"
    for (_, start), (_, end) in zip(writes, writes[1:]):
        chosen = {r for r, c in writes if start < c <= end}
        got = pyhudi.read(root, {"hoodie.datasource.query.type": "incremental",
                                 "hoodie.datasource.read.begin.instanttime": start,
                                 "hoodie.datasource.read.end.instanttime": end})
        at = pyhudi.read(root, {"as.of.instant": max(chosen)})
        assert same_rows(got, _with_commit_times(at, chosen)), f"{name} ({start}, {end}]"


def test_incremental_differs_from_requested_time_ranges_on_overlapping_writes(tmp_path):
    """The worked case: deltacommit 20260307162611195 completed at ...612005. A range starting at
    ...611500 holds it by completion time (Hudi 1.x), though its requested time is before the start
    (0.x rules select by requested time and leave its row TXN-007 out)."""
    root = _root("mor_avro_v9_txns_simple_meta", tmp_path)
    got = pyhudi.read(root, {"hoodie.datasource.query.type": "incremental",
                             "hoodie.datasource.read.begin.instanttime": "20260307162611500"})
    rows = {r["txn_id"]: r["_hoodie_commit_time"] for r in got.to_pylist()}
    assert rows.get("TXN-007") == "20260307162611195"


def _archive_oldest(root: str, count: int) -> list[str]:
    """Move the `count` oldest completed writes of a sample into its LSM history, as Hudi 1.x's archiver
    does (rows of instant, completion, action and the completed file's bytes; every file of the
    instant leaves the active timeline). Returns their requested times."""
    import os

    from pyhudi.storage import Storage
    from pyhudi.timeline.history import HistoryInstant
    from pyhudi.timeline.history_writer import append_history

    folder = os.path.join(root, ".hoodie", "timeline")
    oldest = _completed_writes(root)[:count]
    rows = []
    for requested, completion in oldest:
        (name,) = [n for n in os.listdir(folder) if n.startswith(f"{requested}_")]
        with open(os.path.join(folder, name), "rb") as f:
            rows.append(HistoryInstant(requested, completion, name.rsplit(".", 1)[1], f.read()))
        for n in os.listdir(folder):
            if n.startswith(requested):
                os.remove(os.path.join(folder, n))
    append_history(Storage(root), ".hoodie/timeline/history", rows)
    return [r for r, _ in oldest]


@pytest.mark.parametrize("name", ["mor_avro_v9_txns_simple_meta", "cow_v9_txns_simple_meta"])
def test_reads_with_archived_instants_in_the_lsm_history(tmp_path, name):
    """Instants archived into the history still count as committed; their completion times come from
    the history (slicing), and an incremental range from the start selects them (Hudi 1.x reads the
    archived timeline), so the rows are those of the unarchived table."""
    root = _root(name, tmp_path)
    before = pyhudi.read(root)
    incr = {"hoodie.datasource.query.type": "incremental", "hoodie.datasource.read.begin.instanttime": "earliest"}
    incr_before = pyhudi.read(root, incr)
    archived = _archive_oldest(root, 3)
    _check(pyhudi.read(root), name)
    assert same_rows(pyhudi.read(root), before)
    got = pyhudi.read(root, incr)
    assert same_rows(got, incr_before)
    assert set(got.column("_hoodie_commit_time").to_pylist()) & set(archived), "archived commits' rows missing"


def test_timeline_command_shows_the_lsm_history(tmp_path):
    """`pyhudi timeline --archived` on a Hudi 1.x table lists the history's instants (with completion
    times and their commits' operations) before the active ones."""
    import json
    import subprocess
    import sys

    root = _root("mor_avro_v9_txns_simple_meta", tmp_path)
    archived = _archive_oldest(root, 3)
    out = subprocess.run([sys.executable, "-m", "pyhudi.cli.main", "timeline", root, "--archived", "--json"],
                         capture_output=True, text=True, check=True, timeout=120)
    data = json.loads(out.stdout)
    assert data["counts"]["archived"] == 3
    rows = data["instants"][:3]
    assert [r["timestamp"] for r in rows] == archived and all(r["archived"] for r in rows)
    assert all(r["completed_at"] > r["timestamp"] for r in rows) and rows[0]["operation"] == "INSERT"


@pytest.mark.parametrize("name", sorted(n for n, t in TABLES.items() if t["table_type"] == "MERGE_ON_READ"))
def test_read_optimized_agrees_with_hudi_rs(tmp_path, name):
    """A read-optimized query of a 1.x merge-on-read table reads the latest base files only (no logs)."""
    root = _root(name, tmp_path)
    ours = pyhudi.read(root, {"hoodie.datasource.query.type": "read_optimized"})
    theirs = hudi_rs(root, read_optimized=True)
    if theirs is None:
        assert ours.num_rows == 0
        return
    assert same_rows(ours, theirs, [c for c in ours.column_names if c in theirs.column_names])
    if name == "qs_mor_avro_v8_trips_8i3u1d":  # its latest slices have logs: the query really skips them
        assert not same_rows(ours, pyhudi.read(root))
