"""Two merge-on-read writers racing on one file slice never clobber each other's log files.

Finding 1 of issue 15: two applications upserting different keys of one MOR file group at the same
moment under optimistic concurrency planned the same next log version and, with identical job
histories, got the same write token `<partition>-<stage>-<attempt>`; the second overwrote the first's
log file, and the loser's rollback then deleted it through its marker, so neither update survived.

Here two writer processes (concurrency_worker.py, role `occ`, mode `one_group`) run ROUNDS lockstep
rounds: both have planned (fixed the log version) before either writes, so every round is a race for
the same name. Each round's winner must be in the table (read by pyhudi and by hudi-rs), its loser
must fail with CommitConflictError and leave nothing, and nothing else in the table may change.
"""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any

import pytest

import pyhudi
from pyhudi.io.log_format import LogBlock, iter_blocks
from pyhudi.model.file_names import parse_log_file
from tests.helpers import rows_by_key
from tests.integration.concurrency_worker import occ_rows
from tests.integration.fault_writer import model_rows, rows_frame
from tests.integration.table_checks import COLS, assert_table, read_avro
from tests.integration.test_concurrency import (
    CONF,
    INSTANT_CONFLICT,
    OCC_OPTIONS,
    Problems,
    Proc,
    completed,
    error_line,
    lock_files,
    pending_instants,
    stop_all,
)

pytestmark = [pytest.mark.spark, pytest.mark.slow]
ROUNDS = 5
RACE_ROWS = {"initial": 400, "new": 0, "shared": 0, "own": 20, "seed": 3}
INITIAL = {"start": 0, "stop": RACE_ROWS["initial"], "version": 0, "partitions": 2}
OPTIONS = {**OCC_OPTIONS, "hoodie.table.name": "mor_race", "hoodie.datasource.write.table.type": "MERGE_ON_READ"}


def data_files(path: str) -> dict[str, bytes]:
    """Every file outside .hoodie/ with its content."""
    out = {}
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if d != ".hoodie"]
        for f in files:
            full = os.path.join(root, f)
            out[os.path.relpath(full, path)] = pathlib.Path(full).read_bytes()
    return out


def block_writers(content: bytes) -> set[str | None]:
    return {b.instant_time for b in iter_blocks(content, load_content=False) if isinstance(b, LogBlock)}


def written_paths(path: str, instant: str) -> list[str]:
    meta = json.loads(pathlib.Path(path, ".hoodie", f"{instant}.deltacommit").read_text())
    return sorted(s["path"] for stats in meta["partitionToWriteStats"].values() for s in stats)


def deleted_by_rollbacks(path: str) -> dict[str, list[str]]:
    """Rolled-back instant -> names of the files its rollback deleted."""
    out: dict[str, list[str]] = {}
    for rb in completed(path, "rollback"):
        meta = read_avro(pathlib.Path(path, ".hoodie", f"{rb}.rollback"))
        for target in meta["instantsRollback"]:
            out[target["commitTime"]] = sorted(os.path.basename(f) for pm in meta["partitionMetadata"].values()
                                               for f in pm["successDeleteFiles"])
    return out


@pytest.mark.extended  # ~37 s; the interleaving matrix races merge-on-read writers of one slice at every pause point
def test_two_mor_writers_of_one_slice_never_overwrite_or_roll_back_each_others_log_files(spark, tmp_path):
    path = str(tmp_path / "mor")
    coord = tmp_path / "coord"
    coord.mkdir()
    pyhudi.write(rows_frame(spark, INITIAL), path, OPTIONS)
    before = data_files(path)
    writers = [Proc(tmp_path / "procs", f"mor_w{w}", {
        "role": "occ", "writer": w, "master": "local[2]", "app": f"mor-w{w}", "conf": CONF, "path": path,
        "options": OPTIONS, "coord": str(coord), "rows": RACE_ROWS, "rounds": ["one_group"] * ROUNDS})
        for w in (0, 1)]
    try:
        for w in writers:
            w.finish()
    finally:
        stop_all(writers)

    events = {(e["writer"], e["round"]): e for w in writers for e in w.events() if e["event"] == "round"}
    assert sorted(events) == [(w, r) for w in (0, 1) for r in range(1, ROUNDS + 1)], sorted(events)
    p = Problems("two MOR writers of one file slice")
    winners: dict[int, dict[str, Any]] = {}
    losers: dict[int, dict[str, Any]] = {}
    for r in range(1, ROUNDS + 1):
        pair = [events[(0, r)], events[(1, r)]]
        oks = [e for e in pair if e["ok"]]
        for e in pair:
            p.check(e["ok"] or (e["error"]["hudi"] and e["error"]["type"] == "CommitConflictError"),
                    f"round {r} writer {e['writer']}: {error_line(e) if not e['ok'] else ''}")
        if p.check(len(oks) == 1, f"round {r}: exactly one of two writes to one file group must commit, got "
                                  f"{[e['ok'] for e in pair]}"):
            winners[r] = oks[0]
            (losers[r],) = [e for e in pair if not e["ok"]]

    # Every acknowledged write is in the table, no loser's key changed, and nothing else did either.
    model = {i: tuple(v) for i, v in model_rows(INITIAL).items()}
    for r, e in winners.items():
        for i, name, city, ts in occ_rows(RACE_ROWS, e["writer"], r, "one_group"):
            model[i] = (name, city, ts)
    ours = rows_by_key(pyhudi.read(spark, path).toArrow(), "id", COLS)
    for r, e in winners.items():
        lost = [i for i, *_ in occ_rows(RACE_ROWS, e["writer"], r, "one_group") if ours.get(i) != model[i]]
        p.check(not lost, f"round {r}: the committed write {e['instant']} lost keys {lost[:5]}")
    for r, e in losers.items():
        leaked = [i for i, *_ in occ_rows(RACE_ROWS, e["writer"], r, "one_group") if ours.get(i) != model[i]]
        p.check(not leaked, f"round {r}: keys {leaked[:5]} of the rolled-back write changed")
    p.run("table", lambda: assert_table(spark, path, model))

    # On storage: the files from before, unchanged, plus exactly the winners' log files, each holding only
    # its winner's blocks; losers left nothing; nothing pending, no lock.
    after = data_files(path)
    p.check({f: after.get(f) for f in before} == before, "a file that existed before the race changed or vanished")
    expected_new = {rel for e in winners.values() for rel in written_paths(path, e["instant"])}
    p.check(set(after) - set(before) == expected_new,
            f"new files {sorted(set(after) - set(before))} are not the winners' {sorted(expected_new)}")
    for e in winners.values():
        for rel in written_paths(path, e["instant"]):
            p.check(rel in after and block_writers(after[rel]) == {e["instant"]},
                    f"{rel} of {e['instant']} holds blocks of {block_writers(after.get(rel, b''))}")
    p.check(pending_instants(path) == [], f"left pending: {pending_instants(path)}")
    p.check(lock_files(path) == [], f"lock files left: {lock_files(path)}")

    # The race happened: in some round both planned the same name, and whoever created it second rolled
    # over to the next version instead of overwriting (the loser's rollback then deleted only its own file).
    deleted = deleted_by_rollbacks(path)
    p.check(len(deleted) == len(losers), f"rollbacks {sorted(deleted)}: not one per loser {sorted(losers)}")
    collisions = 0
    for r, e in winners.items():
        m = INSTANT_CONFLICT.search(losers[r]["error"]["message"])
        if not p.check(m, f"round {r}: the conflict does not name the losing instant"):
            continue
        assert m is not None
        (won,) = [parse_log_file(os.path.basename(rel)) for rel in written_paths(path, e["instant"])]
        lost = [parse_log_file(n) for n in deleted.get(m.group(1), [])]
        p.check(lost, f"round {r}: the loser {m.group(1)} was not rolled back or deleted nothing")
        collisions += any(lf is not None and won is not None and lf.write_token == won.write_token
                          and abs(lf.version - won.version) == 1 for lf in lost)
    print(f"\nmor race: {ROUNDS} rounds, winners {[winners[r]['writer'] for r in sorted(winners)]}, "
          f"same-name collisions rolled over: {collisions}")
    p.check(collisions > 0, "no round raced for the same log file name: the test did not exercise the race")
    p.raise_if_any()
