"""One side of a concurrency test, in a SparkSession (and JVM) of its own.

Usage: `python concurrency_worker.py SPEC.json` (run as a script, so the gate functions below are
shipped to executors by value). Every outcome is printed to stdout as a JSON line; the test reads
them back. Roles:

- `ingest`: upsert rounds (`ingest_rows`): round 0 creates the table, every later round inserts new
  keys and updates keys spread over the whole table (so over every file group). Each round records
  whether `pyhudi.write` returned an instant (acknowledged) or raised (class, message).
- `cluster`: `pyhudi.cluster(spark, path, options)` attempts (each schedules a plan if none is
  pending and executes it), recording the instants completed or the exception.
- `occ`: one of two optimistic-concurrency writers (`occ_rows`). Round r starts once the other
  writer has finished round r - 1; within the round the two writes move in lockstep through gates in
  their inputs (`occ_gate`), so exactly these two writes race, both know the same completed
  instants, and one always runs its failed-write rollback while the other's instant is live.

Coordination never uses a hook inside pyhudi and never relies on timing. It uses marker files in
the `coord` folder and two helpers that live in the *user's* side of the pipeline:

- a round or attempt may wait for marker files first (`wait_for`: every entry must exist; an entry
  that is a list needs any one of its files);
- an ingest/occ round may put a *gate* in its input pipeline: a pass-through `mapInArrow` step that
  writes `signal` and then waits for `wait_for`. pyhudi evaluates the input (its count job) only
  after it has loaded the timeline, so "signal written" means "this write has fixed the set of
  instants it knows about", and the write cannot commit before the gate opens;
- a cluster attempt may *hold* its execution: on `local[1]` a one-task Spark job occupies the only
  task slot until `hold.release` exists, so the clustering's own Spark job cannot run. The hold job
  writes `hold.signal` once the clustering is inflight (its plan fixed, nothing written yet).

Marker files: `a_done_<r>` after every ingest round, `a_finished` after the last; `b_done_<j>`
after every cluster attempt; `w<i>_done_<r>` after every occ round.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sys
import threading
import time
from typing import Any

WAIT_LIMIT_SECONDS = 900  # only bounds a hang (the test then fails on its own assertions)
INGEST_SCHEMA = "id long, name string, city string, ts long, payload string"
OCC_SCHEMA = "id long, name string, city string, ts long"


# --------------------------------------------------------------------------- the data (also the tests' model)
def ingest_rows(cfg: dict[str, Any], r: int) -> list[tuple[int, str, str, int, str]]:
    """Rows of ingest round r: round 0 loads `initial` keys; round r > 0 inserts `new` fresh keys and
    updates `uniform` keys drawn from every key written so far plus `recent` keys of each of the two
    previous rounds' inserts (those sit in the newest, smallest files: the clustering candidates)."""
    initial, new, parts, seed = int(cfg["initial"]), int(cfg["new"]), int(cfg["partitions"]), int(cfg["seed"])
    if r == 0:
        ids = list(range(initial))
    else:
        first_new = initial + (r - 1) * new
        rng = random.Random(seed * 1_000_003 + r)
        chosen = set(rng.sample(range(first_new), min(int(cfg["uniform"]), first_new)))
        for back in (1, 2):
            if r - back >= 1:
                lo = initial + (r - back - 1) * new
                chosen.update(rng.sample(range(lo, lo + new), min(int(cfg["recent"]), new)))
        ids = sorted(chosen) + list(range(first_new, first_new + new))

    def payload(i: int) -> str:
        return hashlib.sha256(f"{seed}:{i}:{r}".encode()).hexdigest()

    return [(i, f"r{r}-{i}", f"p{i % parts}", r, payload(i)) for i in ids]


def occ_rows(cfg: dict[str, Any], writer: int, r: int, mode: str) -> list[tuple[int, str, str, int]]:
    """Rows of occ writer `writer` (0 or 1) in round r >= 1 on a table holding keys [0, initial) in
    partitions p0/p1 (p{id % 2}).

    `overlap`: both writers update the same `shared` keys (so the same file groups) plus their own
    random keys, and insert fresh keys into both partitions. `disjoint`: each writer only touches its
    own partition p{writer}: updates of its keys, inserts of fresh keys. Fresh keys never repeat
    between writers or rounds. `one_group`: updates only, of `own` keys of partition p0 that no other
    writer or round updates (so both writers append to the same file slice, and every round's outcome
    stays visible in the final table)."""
    initial, new, seed = int(cfg["initial"]), int(cfg["new"]), int(cfg["seed"])
    if mode == "one_group":
        n = int(cfg["own"])
        first = ((r - 1) * 2 + writer) * n
        keys = [i for i in range(initial) if i % 2 == 0][first:first + n]
        assert len(keys) == n, f"initial={initial} too small for {r} one_group rounds of {n} keys"
        return [(i, f"w{writer}r{r}-{i}", "p0", r) for i in keys]
    fresh_lo = initial + (r * 2 + writer) * new
    fresh = list(range(fresh_lo, fresh_lo + new))
    own = random.Random(seed * 7919 + r * 2 + writer)
    if mode == "overlap":
        shared = random.Random(seed * 104_729 + r).sample(range(initial), int(cfg["shared"]))
        updates = set(shared) | set(own.sample(range(initial), int(cfg["own"])))
    elif mode == "disjoint":
        mine = [i for i in range(initial) if i % 2 == writer]
        updates = set(own.sample(mine, int(cfg["own"])))
        fresh = [i for i in fresh if i % 2 == writer]
    else:
        raise ValueError(f"unknown occ round mode {mode!r}")
    return [(i, f"w{writer}r{r}-{i}", f"p{i % 2}", r) for i in sorted(updates) + fresh]


# --------------------------------------------------------------------------- coordination
_emit_lock = threading.Lock()


def emit(event: dict[str, Any]) -> None:
    with _emit_lock:
        sys.stdout.write(json.dumps(event) + "\n")
        sys.stdout.flush()


def touch(path: str, content: str = "") -> None:
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    with open(tmp, "w") as f:
        f.write(content)
    os.replace(tmp, path)


def satisfied(conds: list[Any]) -> bool:
    return all(any(os.path.exists(p) for p in c) if isinstance(c, list) else os.path.exists(c) for c in conds)


def wait_for(conds: list[Any]) -> None:
    deadline = time.monotonic() + WAIT_LIMIT_SECONDS
    while not satisfied(conds):
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up waiting for {conds}")
        time.sleep(0.05)


def describe(exc: BaseException) -> dict[str, Any]:
    from pyhudi.errors import HudiError

    return {"type": type(exc).__name__, "module": type(exc).__module__,
            "mro": [c.__name__ for c in type(exc).__mro__], "hudi": isinstance(exc, HudiError),
            "message": str(exc)[:4000]}


def make_gate(signal: str, conds: list[Any]):  # type: ignore[no-untyped-def]
    """A pass-through step of the input pipeline: write `signal`, wait until `conds` hold."""

    def gate(batches):  # type: ignore[no-untyped-def]
        touch(signal)
        wait_for(conds)
        yield from batches

    return gate


def pending_inflight_clustering(table: str) -> str | None:
    """A replacecommit that is inflight but not completed (only clusterings write replacecommits here)."""
    try:
        names = set(os.listdir(os.path.join(table, ".hoodie")))
    except FileNotFoundError:
        return None
    for name in sorted(names):
        if name.endswith(".replacecommit.inflight"):
            ts = name.split(".")[0]
            if f"{ts}.replacecommit" not in names:
                return ts
    return None


def hold_slot(spark: Any, table: str, running: str, signal: str, release: list[Any], attempt_done: str) -> None:
    """Occupy the only task slot (local[1]) until `release`; report once a clustering is inflight."""

    def hold(batches):  # type: ignore[no-untyped-def]
        touch(running)
        deadline = time.monotonic() + WAIT_LIMIT_SECONDS
        instant = None
        while instant is None and not os.path.exists(attempt_done) and time.monotonic() < deadline:
            instant = pending_inflight_clustering(table)
            time.sleep(0.02)
        touch(signal, instant or "")
        wait_for(release)
        yield from batches

    spark.range(0, 1, 1, 1).mapInArrow(hold, "id long").collect()


class GateLock:
    """A lock provider (`hoodie.write.lock.provider=concurrency_worker.GateLock`) that holds a process at
    the door of its next critical section (a commit) when `<table dir>/../gate_lock.json` lists a gate for
    it: `[{"pid": P, "signal": path, "wait_for": [...]}]`. The gate writes `signal` (once) and waits for
    `wait_for`, then the file-system lock is taken as usual. A user-side component, like the input gates."""

    def __init__(self, storage: Any, settings: Any) -> None:
        from pyhudi.transaction.lock import FileSystemLockProvider

        self.inner = FileSystemLockProvider(storage, settings)
        self.gates = os.path.join(os.path.dirname(storage.full_path("").rstrip("/")), "gate_lock.json")

    def acquire(self, timeout_s: float) -> None:
        gates: list[dict[str, Any]] = []
        if os.path.exists(self.gates):
            with open(self.gates) as f:
                gates = json.load(f)
        for gate in gates:
            if gate["pid"] == os.getpid() and not os.path.exists(gate["signal"]):
                touch(gate["signal"])
                wait_for(gate.get("wait_for", []))
                break
        self.inner.acquire(timeout_s)

    def release(self) -> None:
        self.inner.release()


def gated(df: Any, gate: dict[str, Any] | None) -> Any:
    if not gate:
        return df
    return df.mapInArrow(make_gate(gate["signal"], gate.get("wait_for", [])), df.schema)


# --------------------------------------------------------------------------- roles
def run_ingest(spark: Any, spec: dict[str, Any]) -> None:
    import pyhudi

    coord = spec["coord"]
    for r, rnd in enumerate(spec["rounds"]):
        wait_for(rnd.get("wait_for", []))
        rows = ingest_rows(spec["rows"], r)
        if spec.get("local_input"):  # a pandas batch: Spark knows its size (a LocalRelation)
            import pandas as pd

            names = [f.split()[0] for f in INGEST_SCHEMA.split(",")]
            source = spark.createDataFrame(pd.DataFrame(rows, columns=names), INGEST_SCHEMA)
        else:
            source = spark.createDataFrame(rows, INGEST_SCHEMA, verifySchema=False)
        df = gated(source, rnd.get("gate"))
        started = time.time()
        event: dict[str, Any] = {"event": "round", "round": r, "rows": len(rows), "started": started}
        try:
            event.update(ok=True, instant=pyhudi.write(df, spec["path"], spec["options"]))
        except Exception as exc:  # every failure is recorded; the test judges it
            event.update(ok=False, error=describe(exc))
        event["ended"] = time.time()
        emit(event)
        touch(os.path.join(coord, f"a_done_{r}"))
    touch(os.path.join(coord, "a_finished"))


def run_cluster(spark: Any, spec: dict[str, Any]) -> None:
    import pyhudi

    coord = spec["coord"]
    for j, attempt in enumerate(spec["attempts"]):
        wait_for(attempt.get("wait_for", []))
        done = os.path.join(coord, f"b_done_{j}")
        holder = None
        hold = attempt.get("hold")
        if hold:
            running = os.path.join(coord, f"b_hold_running_{j}")
            holder = threading.Thread(target=hold_slot, name=f"hold-{j}", args=(
                spark, spec["path"], running, hold["signal"], hold["release"], done))
            holder.start()
            wait_for([running])  # the hold job has the only task slot before the clustering starts
        started = time.time()
        event: dict[str, Any] = {"event": "attempt", "attempt": j, "started": started}
        try:
            event.update(ok=True, instants=pyhudi.cluster(spark, spec["path"], spec["options"]))
        except Exception as exc:
            event.update(ok=False, error=describe(exc))
        event["ended"] = time.time()
        emit(event)
        touch(done)
        if holder is not None:
            holder.join()


def inflight_commits(table: str) -> set[str]:
    """Commit and delta commit instants with an inflight file and no completed file (timeline layout 1:
    `<ts>.inflight` / `<ts>.commit`, `<ts>.deltacommit.inflight` / `<ts>.deltacommit`)."""
    try:
        names = set(os.listdir(os.path.join(table, ".hoodie")))
    except FileNotFoundError:
        return set()
    commits = {n.split(".")[0] for n in names if n.count(".") == 1 and n.endswith(".inflight")
               and f"{n.split('.')[0]}.commit" not in names}
    return commits | {n.split(".")[0] for n in names if n.endswith(".deltacommit.inflight")
                      and f"{n.split('.')[0]}.deltacommit" not in names}


def occ_gate(table: str, leader: bool, known: set[str], me_loaded: str, other_loaded: str, other_done: str):  # type: ignore[no-untyped-def]
    """The two writes of an occ round, in lockstep through their inputs (evaluated by every job of the write,
    as the tagged records are not cached): the leader plans only once the follower has loaded its timeline;
    the follower plans (and so runs its failed-write rollback) only once the leader's instant is inflight;
    the leader writes its files only once the follower's instant is inflight too. So the follower's
    rollback step always sees the leader's live pending instant, and neither can commit before both
    have loaded their timelines."""

    def new_inflight() -> set[str]:
        return inflight_commits(table) - known

    def wait_until(cond) -> None:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + WAIT_LIMIT_SECONDS
        while not (cond() or os.path.exists(other_done)):
            if time.monotonic() > deadline:
                raise TimeoutError("occ gate gave up")
            time.sleep(0.02)

    def gate(batches):  # type: ignore[no-untyped-def]
        if leader:
            if not new_inflight():  # planning: meet the follower
                touch(me_loaded)
                wait_until(lambda: os.path.exists(other_loaded))
            else:  # writing: hold until the follower has passed its rollback step and started its instant
                wait_until(lambda: len(new_inflight()) >= 2)
        else:
            touch(me_loaded)
            wait_until(lambda: bool(new_inflight()))
        yield from batches

    return gate


def run_occ(spark: Any, spec: dict[str, Any]) -> None:
    import pyhudi

    coord, w, table = spec["coord"], int(spec["writer"]), spec["path"]
    other = 1 - w
    wait_for(spec.get("wait_for", []))
    for r, mode in enumerate(spec["rounds"], start=1):
        if r > 1:  # both writes of the previous round are finished before this round loads its timeline
            wait_for([os.path.join(coord, f"w{other}_done_{r - 1}")])
        rows = occ_rows(spec["rows"], w, r, mode)
        leader = r % 2 == w
        gate = occ_gate(table, leader, inflight_commits(table), os.path.join(coord, f"w{w}_loaded_{r}"),
                        os.path.join(coord, f"w{other}_loaded_{r}"), os.path.join(coord, f"w{other}_done_{r}"))
        df = spark.createDataFrame(rows, OCC_SCHEMA, verifySchema=False)
        df = df.mapInArrow(gate, df.schema)
        event: dict[str, Any] = {"event": "round", "writer": w, "round": r, "mode": mode, "leader": leader,
                                 "rows": len(rows), "started": time.time()}
        try:
            event.update(ok=True, instant=pyhudi.write(df, table, spec["options"]))
        except Exception as exc:
            event.update(ok=False, error=describe(exc))
        event["ended"] = time.time()
        emit(event)
        touch(os.path.join(coord, f"w{w}_done_{r}"))


def main(spec_path: str) -> None:
    with open(spec_path) as f:
        spec = json.load(f)
    from pyhudi.spark_env import create_session

    spark: Any = create_session(spec["master"], app_name=spec.get("app", "pyhudi-concurrency"),
                                conf=spec.get("conf", {}))
    emit({"event": "started", "role": spec["role"]})
    {"ingest": run_ingest, "cluster": run_cluster, "occ": run_occ}[spec["role"]](spark, spec)
    spark.stop()
    emit({"event": "done"})


if __name__ == "__main__":
    main(sys.argv[1])
