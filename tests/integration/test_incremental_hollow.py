"""Incremental reads around hollow commits (a write still in flight while a later one completed), the
full-table-scan fallback, and time travel with Hudi's as.of.instant formats."""

from __future__ import annotations

import os
import time
from datetime import datetime

import pytest

import pyhudi
from pyhudi.errors import HollowCommitError, InstantNotFoundError, InvalidConfigError
from pyhudi.model.instant_time import instant_to_ms, ms_to_instant

pytestmark = pytest.mark.spark
INCR = "hoodie.datasource.query.type"
BEGIN = "hoodie.datasource.read.begin.instanttime"
END = "hoodie.datasource.read.end.instanttime"
HOLLOW = "hoodie.read.timeline.holes.resolution.policy"  # Hudi 0.14 (alias: ...handle.hollow.commit)


def _opts(**extra: str) -> dict[str, str]:
    return {"hoodie.table.name": "h", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "city", "hoodie.datasource.write.precombine.field": "ts",
            **extra}


def _write(spark, path, rows, **extra):
    df = spark.createDataFrame(rows, "id long, name string, city string, ts long")
    return pyhudi.write(df, path, _opts(**extra))


def _ids(spark, path, options) -> list[int]:
    return sorted(r["id"] for r in pyhudi.read(spark, path, options).collect())


def _incr(begin: str, **extra: str) -> dict[str, str]:
    return {INCR: "incremental", BEGIN: begin, **extra}


def _hollow_table(spark, path):
    """c1, c2 completed and a write p (c1 < p < c2) still in flight, as a slow concurrent writer leaves it."""
    c1 = _write(spark, path, [(1, "a", "sf", 1), (2, "b", "ny", 1)])
    time.sleep(0.01)
    c2 = _write(spark, path, [(3, "c", "sf", 2)])
    p = ms_to_instant(instant_to_ms(c1) + 1)
    assert c1 < p < c2
    meta = os.path.join(path, ".hoodie")
    for name in (f"{p}.commit.requested", f"{p}.inflight"):
        open(os.path.join(meta, name), "wb").close()
    return c1, c2, p


def test_hollow_commit_fail_block_and_transition_time(spark, tmp_path):
    path = str(tmp_path / "t")
    c1, c2, p = _hollow_table(spark, path)
    # FAIL (default): a consumer checkpointing c2 would never see p's rows.
    with pytest.raises(HollowCommitError, match=p):
        pyhudi.read(spark, path, _incr("000")).collect()
    # BLOCK: nothing at or after the pending write, even with an explicit end beyond it.
    assert _ids(spark, path, _incr("000", **{HOLLOW: "BLOCK"})) == [1, 2]
    assert _ids(spark, path, _incr("000", **{HOLLOW: "BLOCK", END: c2})) == [1, 2]
    assert _ids(spark, path, _incr(c1, **{HOLLOW: "BLOCK"})) == []
    # A range ending before the pending write is not hollow for BLOCK either.
    assert _ids(spark, path, _incr("000", **{HOLLOW: "BLOCK", END: c1})) == [1, 2]
    # USE_TRANSITION_TIME: selected by completion time; make c1 complete after c2.
    meta = os.path.join(path, ".hoodie")
    t2 = os.stat(os.path.join(meta, f"{c2}.commit")).st_mtime
    os.utime(os.path.join(meta, f"{c1}.commit"), (t2 + 5, t2 + 5))
    done_c2 = ms_to_instant(int(t2 * 1000))
    tt = {HOLLOW: "USE_TRANSITION_TIME"}
    assert _ids(spark, path, _incr("000", **tt)) == [1, 2, 3]
    assert _ids(spark, path, _incr(done_c2, **tt)) == [1, 2]  # only c1 completed after c2's completion
    assert _ids(spark, path, _incr("000", **tt, **{END: done_c2})) == [3]
    # Once the pending write is gone (completed or rolled back), FAIL reads everything.
    for name in (f"{p}.commit.requested", f"{p}.inflight"):
        os.remove(os.path.join(meta, name))
    assert _ids(spark, path, _incr("000")) == [1, 2, 3]


def test_pending_compaction_is_not_hollow(spark, tmp_path):
    """Only writes count: a pending `compaction` (or clustering) instant never blocks an incremental read."""
    path = str(tmp_path / "t")
    c1 = _write(spark, path, [(1, "a", "sf", 1)])
    time.sleep(0.01)
    _write(spark, path, [(2, "b", "sf", 2)])
    p = ms_to_instant(instant_to_ms(c1) + 1)
    open(os.path.join(path, ".hoodie", f"{p}.compaction.requested"), "wb").close()
    assert _ids(spark, path, _incr("000")) == [1, 2]


def test_fallback_full_table_scan_when_range_was_cleaned(spark, tmp_path):
    path = str(tmp_path / "t")
    c1 = _write(spark, path, [(1, "a", "sf", 1), (2, "b", "sf", 1)])
    c2 = _write(spark, path, [(1, "a2", "sf", 2)])
    _write(spark, path, [(1, "a3", "sf", 3)])
    _write(spark, path, [(1, "a4", "sf", 4)])  # with one commit retained, c2's file version goes
    pyhudi.clean(spark, path, {**_opts(), "hoodie.cleaner.commits.retained": "1"})
    with pytest.raises(InstantNotFoundError, match="fallback.fulltablescan"):
        pyhudi.read(spark, path, _incr(c1, **{END: c2})).collect()
    # Hudi's full table scan: the latest snapshot filtered by commit time in (begin, end]: key 1 was
    # rewritten after c2, so only key 2 (written by c1) is in (000, c2].
    fallback = {"hoodie.datasource.read.incr.fallback.fulltablescan.enable": "true"}
    assert _ids(spark, path, _incr("000", **{END: c2}, **fallback)) == [2]
    assert _ids(spark, path, _incr(c1, **{END: c2}, **fallback)) == []


def test_time_travel_formats_and_refusals(spark, tmp_path):
    path = str(tmp_path / "t")
    c1 = _write(spark, path, [(1, "a", "sf", 1), (2, "b", "ny", 1)])
    while ms_to_instant(int(time.time() * 1000))[:14] == c1[:14]:
        time.sleep(0.05)  # the next commit falls in a later second
    _write(spark, path, [(3, "c", "sf", 2)])
    second = datetime.strptime(c1[:14], "%Y%m%d%H%M%S").strftime("%Y-%m-%d %H:%M:%S")
    # Hudi: 'yyyy-MM-dd HH:mm:ss' is the end of that second, so the commit made during it is included.
    assert _ids(spark, path, {"as.of.instant": second}) == [1, 2]
    assert _ids(spark, path, {"as.of.instant": c1}) == [1, 2]
    # 14 digits compare as a string in Hudi: every instant of that second sorts after them.
    assert _ids(spark, path, {"as.of.instant": c1[:14]}) == []
    for bad in ("", "2024-04-18T17:32:13"):
        with pytest.raises(InvalidConfigError, match="as.of.instant"):
            pyhudi.read(spark, path, {"as.of.instant": bad})
    with pytest.raises(InvalidConfigError, match="incremental"):
        pyhudi.read(spark, path, {**_incr("000"), "as.of.instant": c1})
