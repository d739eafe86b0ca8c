"""Concurrency, for real: ingestion and clustering in separate processes, and two OCC writers.

The acceptance test of the clustering/OCC work: an ingestion loop and a clustering loop run side by
side, each in a process (and JVM) of its own, for many rounds, with updates hitting the file groups
that are being clustered, once under each `hoodie.clustering.updates.strategy`. Afterwards:

* the table (read by pyhudi and by hudi-rs) holds exactly the acknowledged rounds (last acknowledged
  value per key, by round order), no key twice, nothing of a failed round;
* every failure was a clean, reported one: a `HudiError` subclass with a message that says what
  happened, whose instant (if it had one) was rolled back without a trace;
* the race really happened: clusterings completed, writes were rejected (reject) or clusterings were
  rolled back for conflict (allow), and a clustering that committed in the middle of a write made
  that write fail cleanly;
* nothing is left pending and no lock file remains.

Most rounds race freely. A few windows are arranged deterministically (marker files and gates in the
*user's* pipelines, see concurrency_worker.py; no hook inside pyhudi, no sleeps, no timed assertions)
so that every interleaving that matters happens in every run:

W1 (quiet)      B clusters while A waits; A's next round updates the freshly clustered groups.
W2 (held)       B's clustering is inflight (plan fixed) for the whole of A's round 4:
                reject -> round 4 fails with ClusteringUpdateConflictError, the clustering completes;
                allow  -> round 4 commits, the clustering fails its commit check and is rolled back.
W3 (mid-write)  A's round 6 has loaded its timeline (and holds in its input) when B clusters and
                commits; round 6 then must fail cleanly (CommitConflictError, rolled back).

The reject run feeds A's batches as local (pandas) DataFrames, which Spark can size, so every round
after the first takes the one-task path (writer/single_task.py) and the gates fire inside that task,
after its table layout was fixed. The allow run feeds Python rows with the one-task path off, so its
rounds take the distributed path (count, tag, write jobs) and the gates fire in the count job.
free            B clusters at the start of rounds 8, 11, 14 and in the middle of rounds 9, 12, 15
                while A keeps writing.

The OCC test runs two writer processes in lockstep rounds (both have loaded the timeline before either
can commit, and one always runs its failed-write rollback while the other's instant is live and
pending), on a table where a third writer was SIGKILLed mid-write and must be rolled back.
"""

from __future__ import annotations

import collections
import json
import os
import pathlib
import re
import subprocess
import sys
import time
from typing import Any

import pytest

import pyhudi
from pyhudi.storage import Storage
from pyhudi.transaction.heartbeat import is_expired
from tests.helpers import hudi_rs, rows_by_key
from tests.integration.concurrency_worker import ingest_rows, occ_rows
from tests.integration.fault_writer import model_rows
from tests.integration.table_checks import all_data_files, assert_table, opts, read_avro, split_name
from tests.integration.test_faults import WAIT_LIMIT, Writer, read_signal

pytestmark = [pytest.mark.spark, pytest.mark.slow]
WORKER = pathlib.Path(__file__).with_name("concurrency_worker.py")
KB = 1024
ALLOW = "org.apache.hudi.client.clustering.update.strategy.SparkAllowUpdateStrategy"
REJECT = "org.apache.hudi.client.clustering.update.strategy.SparkRejectUpdateStrategy"
CONF = {"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"}
ROUNDS = 16
# Free races: B clusters at the start of a round ("a_done_<r-1>") or while it is underway ("a_loaded_<r>",
# signalled by round r's input without holding it).
FREE_TRIGGERS = ("a_done_7", "a_loaded_9", "a_done_10", "a_loaded_12", "a_done_13", "a_loaded_15")
INGEST_ROWS = {"initial": 30_000, "new": 1200, "uniform": 400, "recent": 100, "partitions": 2, "seed": 11}
COLS = ["name", "city", "ts", "payload"]
# Small files, so the table has many file groups and every round leaves small ones to cluster.
SIZES = {
    "hoodie.parquet.max.file.size": str(200 * KB),
    "hoodie.parquet.small.file.limit": str(100 * KB),
    "hoodie.copyonwrite.record.size.estimate": "90",
    "hoodie.index.bloom.num_entries": "3000",
    # Above the max file size: every file a write produces is a clustering candidate (so every plan after an
    # acknowledged round is non-empty); only clustering outputs (target 400 KB) are left alone.
    "hoodie.clustering.plan.strategy.small.file.limit": str(210 * KB),
    "hoodie.clustering.plan.strategy.target.file.max.bytes": str(400 * KB),
    "hoodie.clustering.plan.strategy.max.bytes.per.group": str(1600 * KB),
    # A sort order means even a single small file is worth rewriting, so no plan comes out empty.
    "hoodie.clustering.plan.strategy.sort.columns": "payload",
}
INSTANT_CONFLICT = re.compile(r"instant (\d{17}) conflicts with (\w+) (\d{17})")
CLUSTERING_INSTANT = re.compile(r"clustering (\d{17})")


# --------------------------------------------------------------------------- processes
class Proc(Writer):
    """concurrency_worker.py in a session (process group) of its own; stdout carries JSON events.
    Waiting, killing and stderr come from test_faults.Writer."""

    def __init__(self, workdir: pathlib.Path, name: str, spec: dict[str, Any]) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.spec_path = workdir / f"{name}.spec.json"
        self.spec_path.write_text(json.dumps(spec))
        self.out = workdir / f"{name}.out"
        self.err = workdir / f"{name}.err"
        env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
        env.pop("HUDI_CONF_DIR", None)
        with open(self.out, "w") as out, open(self.err, "w") as err:
            self.proc = subprocess.Popen([sys.executable, str(WORKER), str(self.spec_path)], stdout=out,
                                         stderr=err, cwd=str(workdir), env=env, start_new_session=True)
        self.pgid = self.proc.pid

    def of(self, kind: str, key: str) -> dict[int, dict[str, Any]]:
        return {e[key]: e for e in self.events() if e["event"] == kind}


def stop_all(procs: list[Writer]) -> None:
    for p in procs:
        if p.proc.poll() is None:
            p.kill()


# --------------------------------------------------------------------------- table inspection
def hoodie_files(path: str | os.PathLike[str]) -> list[str]:
    meta = os.path.join(path, ".hoodie")
    return sorted(n for n in os.listdir(meta) if os.path.isfile(os.path.join(meta, n)))


def completed(path: str | os.PathLike[str], action: str) -> list[str]:
    return sorted(n.split(".")[0] for n in hoodie_files(path) if n.count(".") == 1 and n.split(".")[1] == action)


def pending_instants(path: str | os.PathLike[str]) -> list[str]:
    """Every instant file (requested or inflight) whose instant has no completed file."""
    names = hoodie_files(path)
    done = {n for n in names if n.count(".") == 1 and not n.endswith(".properties")}
    out = []
    for n in names:
        parts = n.split(".")
        if parts[-1] in ("requested", "inflight"):
            action = parts[1] if len(parts) == 3 else "commit"
            if f"{parts[0]}.{action}" not in done:
                out.append(n)
    return out


def lock_files(path: str | os.PathLike[str]) -> list[str]:
    locks = os.path.join(path, ".hoodie", ".locks")
    return sorted(os.listdir(locks)) if os.path.isdir(locks) else []


def rollback_targets(path: str | os.PathLike[str]) -> dict[str, list[str]]:
    """Completed rollback instant -> the instants it rolled back."""
    meta = pathlib.Path(path, ".hoodie")
    return {rb: [i["commitTime"] for i in read_avro(meta / f"{rb}.rollback")["instantsRollback"]]
            for rb in completed(path, "rollback")}


def traces_of(path: str | os.PathLike[str], instant: str) -> list[str]:
    """Timeline files and data files an instant left behind."""
    files = [n for n in hoodie_files(path) if n.startswith(f"{instant}.")]
    return files + [f for f in all_data_files(path) if split_name(f)[2] == instant]


def read_model(spark, path: str | os.PathLike[str], cols: list[str]) -> tuple[dict, dict]:
    ours = rows_by_key(pyhudi.read(spark, str(path)).toArrow(), "id", cols)
    theirs = rows_by_key(hudi_rs(path), "id", cols)
    return ours, theirs


def diff(actual: dict, expected: dict, limit: int = 5) -> str:
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    wrong = sorted(k for k in set(actual) & set(expected) if actual[k] != expected[k])
    return (f"{len(actual)} keys vs {len(expected)} expected; missing {len(missing)} {missing[:limit]}, "
            f"unexpected {len(extra)} {extra[:limit]}, wrong value {len(wrong)} "
            f"{[(k, actual[k], expected[k]) for k in wrong[:limit]]}")


def assert_equals_model(spark, path: str | os.PathLike[str], model: dict, cols: list[str], what: str) -> None:
    ours, theirs = read_model(spark, path, cols)  # rows_by_key asserts no key appears twice
    assert ours == model, f"{what}: pyhudi read differs from the acknowledged writes: {diff(ours, model)}"
    assert theirs == model, f"{what}: hudi-rs read differs from the acknowledged writes: {diff(theirs, model)}"


def error_line(e: dict[str, Any]) -> str:
    """Class and message; for errors from Spark workers, the last lines (where the cause is)."""
    err = e["error"]
    lines = err["message"].strip().splitlines()
    text = err["message"] if len(lines) <= 3 else " | ".join([lines[0], "...", *lines[-2:]])
    return f"{err['module']}.{err['type']}: {text[:800]}"


# --------------------------------------------------------------------------- ingestion vs clustering
class ClusteringRun:
    def __init__(self, root: pathlib.Path, strategy: str, one_task: bool) -> None:
        self.strategy = strategy
        self.path = str(root / "table")
        self.coord = root / "coord"
        self.coord.mkdir(parents=True)
        self.options = {**opts("conc"), **SIZES, "hoodie.clustering.updates.strategy": strategy}
        if not one_task:
            self.options["hoodie.pyhudi.write.single.task.max.bytes"] = "0"
        c = self.c
        rounds: list[dict[str, Any]] = [{} for _ in range(ROUNDS)]
        attempts: list[dict[str, Any]] = []
        # W1 quiet: B clusters after round 1 while A waits; round 2 updates the clustered groups.
        attempts.append({"wait_for": [c("a_done_1")]})
        rounds[2] = {"wait_for": [c("b_done_0")]}
        # W2 held: B's clustering is inflight during the whole of round 4 (released by a_done_4).
        attempts.append({"wait_for": [c("a_done_3")], "hold": {"signal": c("b_held_1"), "release": [c("a_done_4")]}})
        rounds[4] = {"wait_for": [[c("b_held_1"), c("b_done_1")]]}
        rounds[5] = {"wait_for": [c("b_done_1")]}
        # W3 mid-write: round 6 loads its timeline, then holds in its input until B has clustered.
        rounds[6] = {"gate": {"signal": c("a_loaded_6"), "wait_for": [c("b_done_2")]}}
        attempts.append({"wait_for": [c("a_loaded_6")]})
        # Free races.
        for trigger in FREE_TRIGGERS:
            attempts.append({"wait_for": [c(trigger)]})
            if trigger.startswith("a_loaded_"):
                rounds[int(trigger.rsplit("_", 1)[1])] = {"gate": {"signal": c(trigger), "wait_for": []}}
        self.n_attempts = len(attempts)
        procs = root / "procs"
        common = {"path": self.path, "options": self.options, "coord": str(self.coord), "conf": CONF}
        self.ingest = Proc(procs, "ingest", {**common, "role": "ingest", "master": "local[2]",
                                             "app": f"ingest-{strategy}", "rows": INGEST_ROWS, "rounds": rounds,
                                             "local_input": one_task})
        # local[1]: the held window occupies B's only task slot.
        self.cluster = Proc(procs, "cluster", {**common, "role": "cluster", "master": "local[1]",
                                               "app": f"cluster-{strategy}", "attempts": attempts})

    def c(self, name: str) -> str:
        return str(self.coord / name)

    def finish(self) -> tuple[dict[int, dict[str, Any]], dict[int, dict[str, Any]]]:
        try:
            self.ingest.finish()
            self.cluster.finish()
        finally:
            stop_all([self.ingest, self.cluster])
        return self.ingest.of("round", "round"), self.cluster.of("attempt", "attempt")


@pytest.fixture(scope="module")
def clustering_runs(tmp_path_factory):
    """Both strategies start at once (4 processes); each test claims its own run."""
    runs = {name: ClusteringRun(tmp_path_factory.mktemp(f"conc_{name}"), strategy, one_task)
            for name, strategy, one_task in (("reject", REJECT, True), ("allow", ALLOW, False))}
    yield runs
    stop_all([p for r in runs.values() for p in (r.ingest, r.cluster)])


def model_of(acked_rounds: list[int]) -> dict[int, tuple]:
    model: dict[int, tuple] = {}
    for r in sorted(acked_rounds):
        for i, name, city, ts, payload in ingest_rows(INGEST_ROWS, r):
            model[i] = (name, city, ts, payload)
    return model


def summarize(strategy: str, rounds: dict, attempts: dict) -> dict[str, Any]:
    kinds = collections.Counter(e["error"]["type"] for e in rounds.values() if not e["ok"])
    b_kinds = collections.Counter(e["error"]["type"] for e in attempts.values() if not e["ok"])
    return {
        "strategy": strategy.rsplit(".", 1)[-1], "rounds": len(rounds),
        "acknowledged": sorted(r for r, e in rounds.items() if e["ok"]),
        "failed": {r: e["error"]["type"] for r, e in sorted(rounds.items()) if not e["ok"]},
        "failure_kinds": dict(kinds),
        "cluster_attempts": len(attempts),
        "clusterings_completed": sum(len(e["instants"]) for e in attempts.values() if e["ok"]),
        "attempts_with_nothing_to_do": sum(1 for e in attempts.values() if e["ok"] and not e["instants"]),
        "cluster_failure_kinds": dict(b_kinds),
        "round_seconds": [round(e["ended"] - e["started"], 1) for _, e in sorted(rounds.items())],
    }


class Problems:
    """Soft assertions: every broken property of a run is reported together, not only the first one."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.found: list[str] = []

    def check(self, ok: object, message: str) -> bool:
        if not ok:
            self.found.append(message)
        return bool(ok)

    def run(self, label: str, fn) -> None:  # type: ignore[no-untyped-def]
        try:
            fn()
        except AssertionError as exc:
            self.found.append(f"{label}: {exc}")
        except Exception as exc:  # an error while checking is a finding too, not a reason to skip the rest
            self.found.append(f"{label}: {type(exc).__module__}.{type(exc).__name__}: {str(exc)[:800]}")

    def raise_if_any(self) -> None:
        numbered = "\n".join(f"  {i}. {m}" for i, m in enumerate(self.found, 1))
        assert not self.found, f"{self.what}: {len(self.found)} problem(s):\n{numbered}"


def check_clustering_run(spark, run: ClusteringRun) -> None:
    rounds, attempts = run.finish()
    reject = run.strategy == REJECT
    summary = summarize(run.strategy, rounds, attempts)
    print(f"\nconcurrency summary: {json.dumps(summary)}")
    assert sorted(rounds) == list(range(ROUNDS)), f"ingestion reported rounds {sorted(rounds)}"
    assert sorted(attempts) == list(range(run.n_attempts)), f"clustering reported attempts {sorted(attempts)}"
    p = Problems(f"{run.strategy.rsplit('.', 1)[-1]} run {summary}")

    # --- every failure is a clean, reported one -------------------------------------------------
    failed = {r: e for r, e in rounds.items() if not e["ok"]}
    for r, e in failed.items():
        p.check(e["error"]["hudi"], f"round {r} failed with something other than a pyhudi HudiError: {error_line(e)}")
    b_instants: set[str] = set()
    b_conflicted: set[str] = set()
    for j, e in attempts.items():
        if e["ok"]:
            b_instants.update(e["instants"])
            continue
        msg = e["error"]["message"]
        m = CLUSTERING_INSTANT.search(msg)
        if p.check(e["error"]["type"] == "CommitConflictError" and m and "rolled back" in msg,
                   f"clustering attempt {j} failed other than by a reported conflict: {error_line(e)}"):
            b_conflicted.add(m.group(1))  # type: ignore[union-attr]
    completed_clusterings = set(b_instants)

    a_conflicted: dict[int, str] = {}
    rejected: list[int] = []
    for r, e in failed.items():
        err, msg = e["error"], e["error"]["message"]
        if err["type"] == "ClusteringUpdateConflictError":
            p.check(reject, f"round {r}: the allow strategy must never reject an update: {msg}")
            m = CLUSTERING_INSTANT.search(msg)
            p.check(m and "under pending clustering" in msg and "nothing was written" in msg
                    and "SparkAllowUpdateStrategy" in msg, f"round {r}: unclear rejection message: {msg}")
            p.check(m and m.group(1) in b_instants | b_conflicted,
                    f"round {r}: the rejection names a clustering B never ran: {msg}")
            rejected.append(r)
        elif err["type"] == "CommitConflictError":
            # Either found at commit ("instant X conflicts with replacecommit C ... X was rolled back") or
            # before anything was written; either way the message names the clustering and says what to do.
            named = set(re.findall(r"\d{17}", msg)) & completed_clusterings
            p.check(named and ("rolled back" in msg or "nothing was written" in msg) and "retry" in msg,
                    f"round {r}: a conflict message must name the completed clustering it lost to, say that nothing "
                    f"of the write remains, and say to retry: {msg}")
            m = INSTANT_CONFLICT.search(msg)
            if m:
                a_conflicted[r] = m.group(1)
        elif err["hudi"]:
            p.check(False, f"round {r}: unexpected error class: {error_line(e)}")

    # --- the arranged windows went as they must -------------------------------------------------
    assert rounds[0]["ok"], f"round 0 (table creation) failed: {error_line(rounds[0])}"
    p.check(attempts[0]["ok"] and attempts[0]["instants"], f"W1: the quiet clustering must complete: {attempts[0]}")
    p.check(rounds[2]["ok"], f"W1: updates of freshly clustered groups must succeed: {rounds[2]}")
    if reject:
        p.check(not rounds[4]["ok"] and rounds[4]["error"]["type"] == "ClusteringUpdateConflictError",
                f"W2 (reject): round 4 ran while a clustering was pending and must be rejected: {rounds[4]}")
        p.check(attempts[1]["ok"] and attempts[1]["instants"],
                f"W2 (reject): nothing was written to its groups, so the held clustering completes: {attempts[1]}")
    else:
        p.check(rounds[4]["ok"], f"W2 (allow): the update must go through: {rounds[4]}")
        p.check(not attempts[1]["ok"] and attempts[1]["error"]["type"] == "CommitConflictError",
                f"W2 (allow): the held clustering must not commit over round 4's updates: {attempts[1]}")
    p.check(attempts[2]["ok"] and attempts[2]["instants"], f"W3: the clustering must complete: {attempts[2]}")
    w3 = rounds[6]
    p.check(not w3["ok"] and w3["error"]["type"] == "CommitConflictError"
            and set(re.findall(r"\d{17}", w3["error"]["message"])) & set(attempts[2].get("instants") or []),
            "W3: round 6 was tagged against file groups that a clustering replaced before it committed; it must fail "
            f"with a CommitConflictError naming that clustering, leaving nothing behind. Got: "
            f"{error_line(w3) if not w3['ok'] else 'acknowledged ' + str(w3['instant'])}")

    # --- the race was exercised ---------------------------------------------------------------
    p.check(completed_clusterings, "no clustering completed")
    p.check(any(e["ok"] for r, e in rounds.items() if r > 0), "no ingest round was acknowledged")
    if reject:
        p.check(rejected, "no write was rejected under the reject strategy")
    else:
        p.check(b_conflicted, "no clustering was rolled back for conflict under the allow strategy")

    # --- the timeline and the files are consistent --------------------------------------------
    path = run.path
    p.check(pending_instants(path) == [], f"instants left pending after both processes finished: "
                                          f"{pending_instants(path)}")
    p.check(lock_files(path) == [], f"lock files left behind: {lock_files(path)}")
    acked = {e["instant"]: r for r, e in rounds.items() if e["ok"]}
    p.check(set(completed(path, "commit")) == set(acked),
            f"completed commits {completed(path, 'commit')} are not exactly the acknowledged rounds {sorted(acked)}")
    p.check(set(completed(path, "replacecommit")) == completed_clusterings,
            f"completed replacecommits {completed(path, 'replacecommit')} are not exactly the clusterings B saw "
            f"complete {sorted(completed_clusterings)}")
    targets = rollback_targets(path)
    rolled = {t for ts in targets.values() for t in ts}
    p.check(not rolled & (set(acked) | completed_clusterings), f"a completed instant was rolled back: {targets}")
    p.check(set(a_conflicted.values()) <= rolled, f"conflicting writes {a_conflicted} not all rolled back: {targets}")
    for r, inst in a_conflicted.items():
        p.check(traces_of(path, inst) == [], f"round {r}'s instant {inst} left {traces_of(path, inst)}")
    for inst in b_conflicted:
        p.check(traces_of(path, inst) == [], f"rolled-back clustering {inst} left {traces_of(path, inst)}")
    live = set(acked) | completed_clusterings
    strays = [f for f in all_data_files(path) if split_name(f)[2] not in live]
    p.check(not strays, f"data files of no completed instant: {strays[:10]}")

    # --- the data: exactly the acknowledged rounds ----------------------------------------------
    model = model_of(list(acked.values()))

    def data() -> None:
        ours, _ = read_model(spark, path, COLS)
        leaked = sorted({int(v[0].split("-")[0][1:]) for v in ours.values()} & set(failed))
        assert not leaked, f"values of failed rounds {leaked} are visible"
        assert_equals_model(spark, path, model, COLS, "after both processes finished")

    p.run("data", data)

    # --- settle: one more clustering, then nothing pending, same data ---------------------------
    def settle() -> None:
        settled = pyhudi.cluster(spark, path, run.options)
        assert pending_instants(path) == [], f"pending after settling: {pending_instants(path)}"
        assert lock_files(path) == [], f"lock files after settling: {lock_files(path)}"
        assert set(completed(path, "replacecommit")) >= set(settled)
        assert_equals_model(spark, path, model, COLS, "after a settling clustering")

    p.run("settle", settle)
    p.raise_if_any()


# Both under -m extended (four processes, ~95 s together): the interleaving matrix pairs every write with
# clustering schedule/execute at every pause point in process, on versions 6 and 8, and test_conflicts_default
# races a clustering planned while a merge-on-read write is in flight on Spark.
@pytest.mark.extended
def test_ingestion_and_clustering_race_reject_strategy(spark, clustering_runs):
    check_clustering_run(spark, clustering_runs["reject"])


@pytest.mark.extended
def test_ingestion_and_clustering_race_allow_strategy(spark, clustering_runs):
    check_clustering_run(spark, clustering_runs["allow"])


# --------------------------------------------------------------------------- optimistic concurrency control
OCC_MODES = ["overlap", "disjoint", "overlap", "disjoint", "overlap", "overlap"]
OCC_ROWS = {"initial": 6000, "new": 300, "shared": 150, "own": 150, "seed": 5}
HEARTBEAT_MS, MISSES = 5000, 2
OCC_OPTIONS = {
    **opts("occ"),
    "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
    "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider",
    "hoodie.client.heartbeat.interval_in_ms": str(HEARTBEAT_MS),
    "hoodie.client.heartbeat.tolerable.misses": str(MISSES),
    "hoodie.parquet.max.file.size": str(96 * KB),
    "hoodie.parquet.small.file.limit": str(64 * KB),
    "hoodie.copyonwrite.record.size.estimate": "30",
    "hoodie.index.bloom.num_entries": "3000",
    # Not cached: every job of a write re-reads the input, so the lockstep gates also act in the write phase.
    "hoodie.write.tagged.record.storage.level": "NONE",
}


@pytest.mark.extended  # ~55 s; OCC writer pairs: test_concurrency_matrix (occ cases) and the interleaving matrix
def test_occ_two_writers_conflict_cleanly_and_never_roll_back_each_other(spark, tmp_path):
    path = str(tmp_path / "occ")
    coord = tmp_path / "coord"
    coord.mkdir()
    go, crash_signal = str(coord / "go"), str(coord / "crash.signal")
    # A third writer creates the table, then is SIGKILLed with its second write inflight (heartbeat stale).
    crasher = Writer(tmp_path / "procs", "occ_crash", {"master": "local[2]", "app": "occ-crash", "conf": CONF, "jobs": [
        {"path": path, "rows": {"start": 0, "stop": OCC_ROWS["initial"], "version": 0, "partitions": 2},
         "options": OCC_OPTIONS},
        {"path": path, "rows": {"start": 3000, "stop": 9000, "version": 99, "partitions": 2},
         "options": {**OCC_OPTIONS, "hoodie.write.tagged.record.storage.level": "NONE"},
         "gate": "block_on_inflight", "signal": crash_signal},
    ]})
    writers = [Proc(tmp_path / "procs", f"occ_w{w}", {
        "role": "occ", "writer": w, "master": "local[2]", "app": f"occ-w{w}", "conf": CONF, "path": path,
        "options": OCC_OPTIONS, "coord": str(coord), "rows": OCC_ROWS, "rounds": OCC_MODES, "wait_for": [go]})
        for w in (0, 1)]
    try:
        crasher.wait_until(lambda: read_signal(pathlib.Path(crash_signal)), "the doomed write to be inflight")
        crasher.kill()
        pending = pending_instants(path)
        assert len(pending) == 2 and {n.split(".")[0] for n in pending} == {pending[0].split(".")[0]}, pending
        crashed = pending[0].split(".")[0]
        assert os.path.exists(os.path.join(path, ".hoodie", ".heartbeat", crashed)), "the crashed write had a heartbeat"
        storage = Storage(path)
        deadline = time.monotonic() + WAIT_LIMIT
        while not is_expired(storage, crashed, HEARTBEAT_MS, MISSES):  # wait for the crashed heartbeat to go stale
            assert time.monotonic() < deadline, "the crashed writer's heartbeat never expired"
            time.sleep(0.2)
        pathlib.Path(go).touch()
        for w in writers:
            w.finish()
    finally:
        stop_all([crasher, *writers])

    events = {(e["writer"], e["round"]): e for w in writers for e in w.events() if e["event"] == "round"}
    outcomes = {f"r{r}": [("ack" if events[(w, r)]["ok"] else events[(w, r)]["error"]["type"])
                         for w in (0, 1)] for r in range(1, len(OCC_MODES) + 1)}
    summary = {"rounds": len(OCC_MODES), "modes": OCC_MODES, "outcomes": outcomes}
    print(f"\nocc summary: {json.dumps(summary)}")
    assert sorted(events) == [(w, r) for w in (0, 1) for r in range(1, len(OCC_MODES) + 1)]
    p = Problems(f"OCC run {summary}")
    for k, e in sorted(events.items()):
        p.check(e["ok"] or (e["error"]["hudi"] and e["error"]["type"] == "CommitConflictError"),
                f"writer {k[0]} round {k[1]} failed with something other than CommitConflictError: "
                f"{error_line(e) if not e['ok'] else ''}")

    acked: dict[str, tuple[int, int]] = {}
    conflicted: dict[str, tuple[int, int]] = {}
    for r, mode in enumerate(OCC_MODES, start=1):
        pair = [events[(0, r)], events[(1, r)]]
        for e in pair:
            if e["ok"]:
                acked[e["instant"]] = (e["writer"], r)
        if mode == "disjoint":
            p.check(all(e["ok"] for e in pair), f"round {r}: writes to disjoint partitions must both commit: "
                                                f"{[error_line(e) for e in pair if not e['ok']]}")
            continue
        oks = [e for e in pair if e["ok"]]
        if not p.check(len(oks) == 1, f"round {r}: two concurrent writes to the same file groups: exactly one "
                                      f"must commit, got {outcomes[f'r{r}']}"):
            continue
        (loser,) = [e for e in pair if not e["ok"]]
        msg = loser["error"]["message"]
        m = INSTANT_CONFLICT.search(msg)
        if p.check(m and m.group(2) == "commit" and m.group(3) == oks[0]["instant"] and "it also wrote" in msg
                   and "rolled back" in msg and "retry" in msg,
                   f"round {r}: the conflict must name the round's winning commit {oks[0]['instant']}: {msg}"):
            assert m is not None
            conflicted[m.group(1)] = (loser["writer"], r)

    # Rollbacks target only the crashed write and the writers' own conflicting instants, never a live one.
    targets = rollback_targets(path)
    rolled = {t for ts in targets.values() for t in ts}
    p.check(crashed in rolled, f"the crashed write {crashed} was never rolled back: {targets}")
    p.check(rolled <= {crashed} | set(conflicted), f"a rollback targeted a live or acknowledged write: {targets} "
                                                   f"(crashed {crashed}, conflicted {sorted(conflicted)})")
    for inst in [crashed, *conflicted]:
        p.check(traces_of(path, inst) == [], f"{inst} left {traces_of(path, inst)}")
    p.check(pending_instants(path) == [], f"left pending: {pending_instants(path)}")
    p.check(lock_files(path) == [], f"lock files left behind: {lock_files(path)}")
    beats = os.listdir(os.path.join(path, ".hoodie", ".heartbeat"))
    p.check(set(beats) <= {crashed}, f"live writers left heartbeats behind: {beats}")
    commits = completed(path, "commit")
    p.check(set(commits) == set(acked) | {commits[0]},
            f"completed commits {commits} are not the table creation plus the acknowledged writes {sorted(acked)}")

    # The model: creation, then the acknowledged writes in completion order (a later commit that shares a
    # key with an earlier one started after it completed, so file order is unambiguous for such pairs).
    meta = pathlib.Path(path, ".hoodie")
    order = sorted(acked, key=lambda i: (meta / f"{i}.commit").stat().st_mtime_ns)
    model = {i: tuple(v) for i, v in model_rows({"start": 0, "stop": OCC_ROWS["initial"], "version": 0,
                                                   "partitions": 2}).items()}
    for inst in order:
        writer, rnd = acked[inst]
        for i, name, city, ts in occ_rows(OCC_ROWS, writer, rnd, OCC_MODES[rnd - 1]):
            model[i] = (name, city, ts)
    p.run("data", lambda: assert_table(spark, path, model))
    p.raise_if_any()
