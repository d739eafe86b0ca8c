"""Long randomized runs with every table service: writes, compaction, clustering, cleaning, archival.

After every step the table equals a plain-Python model (pyhudi and hudi-rs). At the end the storage must
hold exactly the files the retention policy requires. That set is computed here, independently of the
cleaner's code, from the write stats of every commit the test saw complete (remembered as they happened,
so archival cannot hide them): the union, over the last retained commit before the earliest retained one
and every retained commit, of the files a reader at that commit opens. Every retained instant must also
read as the model remembers it.
"""

from __future__ import annotations

import json
import os
import random

import pytest

import pyhudi
from pyhudi.model.file_names import parse_base_file, parse_log_file
from tests.helpers import hudi_rs

pytestmark = [pytest.mark.spark, pytest.mark.slow]
PARTS = ["p0", "p1"]
SCHEMA = "id long, name string, part string, ts long"
RETAINED = 3
WRITE_ACTIONS = ("commit", "deltacommit", "replacecommit")


def _options(table_type: str) -> dict[str, str]:
    o = {"hoodie.table.name": "maint", "hoodie.datasource.write.recordkey.field": "id",
         "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
         "hoodie.datasource.write.table.type": table_type, "hoodie.parquet.max.file.size": str(96 * 1024),
         "hoodie.parquet.small.file.limit": str(64 * 1024), "hoodie.index.bloom.num_entries": "1000",
         "hoodie.record.size.estimation.threshold": "0.1",
         "hoodie.cleaner.commits.retained": str(RETAINED), "hoodie.keep.min.commits": "5",
         "hoodie.keep.max.commits": "7",
         "hoodie.clustering.plan.strategy.small.file.limit": str(64 * 1024),
         "hoodie.clustering.plan.strategy.target.file.max.bytes": str(96 * 1024)}
    if table_type == "MERGE_ON_READ":
        o["hoodie.index.type"] = "INMEMORY"
    return o


def _rows(table) -> dict[tuple[str, int], tuple[str, int]]:
    out: dict[tuple[str, int], tuple[str, int]] = {}
    for r in (table.select(["id", "name", "part", "ts"]).to_pylist() if table is not None else []):
        key = (r["part"], r["id"])
        assert key not in out, f"duplicate record {key}"
        out[key] = (r["name"], r["ts"])
    return out


class Observer:
    """Remembers every completed write instant's metadata the moment it appears on the timeline."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.meta: dict[str, dict] = {}
        # replacecommit -> files of the groups it replaced, on disk when it completed. Hudi's cleaner leaves
        # a replaced group untouched until the replacecommit leaves retention, then deletes it whole.
        self.replaced_files: dict[str, set[str]] = {}

    def scan(self) -> None:
        hoodie = os.path.join(self.path, ".hoodie")
        for name in sorted(os.listdir(hoodie)):
            ts, _, action = name.partition(".")
            if action in WRITE_ACTIONS and ts not in self.meta:
                with open(os.path.join(hoodie, name)) as fh:
                    self.meta[ts] = json.load(fh)
                groups = {(p, f) for p, ids in (self.meta[ts].get("partitionToReplaceFileIds") or {}).items()
                          for f in ids}
                self.replaced_files[ts] = {f for f in _storage_files(self.path)
                                           if (f.split("/")[0], _file_id(f)) in groups}

    def needed(self, as_of: str) -> set[str]:
        """Files a reader at `as_of` opens: per live file group, its latest base file and that slice's logs."""
        base: dict[tuple[str, str], str] = {}
        logs: dict[tuple[str, str], list[str]] = {}
        replaced: set[tuple[str, str]] = set()
        for ts in sorted(t for t in self.meta if t <= as_of):
            m = self.meta[ts]
            for p, ids in (m.get("partitionToReplaceFileIds") or {}).items():
                replaced.update((p, f) for f in ids)
            for p, stats in (m.get("partitionToWriteStats") or {}).items():
                for s in stats:
                    path = s.get("path")
                    if not path:
                        continue
                    key = (p, s["fileId"])
                    if parse_base_file(os.path.basename(path)):
                        base[key] = path
                    else:
                        logs.setdefault(key, []).append(path)
        out: set[str] = set()
        for key in set(base) | set(logs):
            if key in replaced:
                continue
            b = base.get(key)
            b_instant = parse_base_file(os.path.basename(b)).instant if b else None  # type: ignore[union-attr]
            if b:
                out.add(b)
            # Logs of the base file's slice, and of a newer slice whose compaction has not completed at
            # `as_of` (a reader merges those onto the older base, as Hudi's view does).
            out.update(lp for lp in logs.get(key, [])
                       if b_instant is None or parse_log_file(os.path.basename(lp)).base_instant >= b_instant)  # type: ignore[union-attr]
        return out


def _file_id(rel: str) -> str:
    name = os.path.basename(rel)
    parsed = parse_base_file(name) or parse_log_file(name)
    assert parsed is not None, rel
    return parsed.file_id


def _storage_files(path: str) -> set[str]:
    return {f"{p}/{n}" for p in PARTS if os.path.isdir(os.path.join(path, p))
            for n in os.listdir(os.path.join(path, p)) if parse_base_file(n) or parse_log_file(n)}


def _write(rng: random.Random, spark, path: str, o: dict[str, str], model: dict, next_id: list[int],
           cow: bool, ts: int) -> tuple[str, str]:
    ops = ["upsert", "insert", "delete", "bulk_insert"] + (["insert_overwrite"] if cow else [])
    op = rng.choices(ops, weights=[50, 20, 15, 10] + ([5] if cow else []))[0]
    existing = sorted(model)
    if not existing and op in ("delete", "insert_overwrite"):
        op = "insert"
    rows: list[tuple[int, str, str, int]] = []
    if op == "upsert":
        rows = [(k[1], f"u{ts}", k[0], ts) for k in rng.sample(existing, min(len(existing), rng.randint(0, 150)))]
    if op == "delete":
        rows = [(k[1], "", k[0], 0) for k in rng.sample(existing, min(len(existing), rng.randint(1, 80)))]
    elif op == "insert_overwrite":
        part = rng.choice(PARTS)
        rows = [(next_id[0] + i, f"o{ts}", part, ts) for i in range(rng.randint(1, 60))]
    else:
        rows += [(next_id[0] + i, f"n{ts}", rng.choice(PARTS), ts) for i in range(rng.randint(1, 250))]
    next_id[0] += len(rows)
    instant = pyhudi.write(spark.createDataFrame(rows, SCHEMA), path, {**o, "hoodie.datasource.write.operation": op})
    if op == "delete":
        for rid, _, part, _ in rows:
            model.pop((part, rid), None)
    elif op == "insert_overwrite":
        for k in [k for k in model if k[0] == rows[0][2]]:
            del model[k]
    if op != "delete":
        model.update({(part, rid): (name, t) for rid, name, part, t in rows})
    return op, instant


def _run(spark, tmp_path, table_type: str, steps: int, seed: int) -> None:
    rng = random.Random(seed)
    path = str(tmp_path / table_type.lower())
    cow = table_type == "COPY_ON_WRITE"
    o = _options(table_type)
    model: dict = {}
    history: list[tuple[str, dict]] = []
    observer = Observer(path)
    next_id = [0]
    for step in range(steps):
        op = rng.choices(["write", "compact", "cluster"], weights=[70, 0 if cow else 15, 15])[0] if step > 2 else "write"
        if op == "write":
            op, instant = _write(rng, spark, path, o, model, next_id, cow, ts=10 * (step + 1))
            history.append((instant, dict(model)))
        elif op == "compact":
            done = pyhudi.compact(spark, path, o)
            history.extend((c, dict(model)) for c in done)
        else:
            done = pyhudi.cluster(spark, path, o)
            history.extend((c, dict(model)) for c in done)
        observer.scan()
        assert _rows(pyhudi.read(spark, path).toArrow()) == model, f"step {step} ({op}): pyhudi differs"
        assert _rows(hudi_rs(path)) == model, f"step {step} ({op}): hudi-rs differs"

    # Settle: nothing pending, then one clean with the run's policy.
    if not cow:
        pyhudi.compact(spark, path, o)
    pyhudi.clean(spark, path, o)
    observer.scan()
    writes = sorted(observer.meta)
    earliest = writes[len(writes) - RETAINED]
    before = [w for w in writes if w < earliest]
    readers = ([before[-1]] if before else []) + [w for w in writes if w >= earliest]
    expected = set().union(*(observer.needed(r) for r in readers),
                           *(files for rc, files in observer.replaced_files.items() if rc >= earliest))
    on_disk = _storage_files(path)
    assert on_disk == expected, (f"extra files: {sorted(on_disk - expected)[:5]}; "
                                 f"missing files: {sorted(expected - on_disk)[:5]}")
    for instant, state in history:
        if instant >= earliest:
            got = _rows(pyhudi.read(spark, path, {"as.of.instant": instant}).toArrow())
            assert got == state, f"retained instant {instant} reads wrong"
    archived = os.path.join(path, ".hoodie", "archived")
    assert any(n.startswith(".commits_.archive") for n in os.listdir(archived)), "archival ran during the run"


@pytest.mark.parametrize("table_type,steps,seed", [("COPY_ON_WRITE", 22, 5),
                                                   pytest.param("MERGE_ON_READ", 22, 9, marks=pytest.mark.extended)])
def test_randomized_with_table_services(spark, tmp_path, table_type, steps, seed):
    _run(spark, tmp_path, table_type, steps, seed)
