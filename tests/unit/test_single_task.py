"""The one-task write's index lookup, profile and routing, without Spark."""

from __future__ import annotations

from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pyhudi.index import key_cache
from pyhudi.keygen.spec import PARTITION_COL, RECORD_KEY_COL
from pyhudi.storage import Storage
from pyhudi.writer import single_task as st
from pyhudi.writer.config import SizingConfig
from pyhudi.writer.handles import DELETE_FLAG
from pyhudi.writer.operation import WriteOperation
from pyhudi.writer.partitioner import UpdateBase, plan_buckets


def _base_file(root, part: str, name: str, keys: list[str]) -> str:
    (root / part).mkdir(exist_ok=True)
    pq.write_table(pa.table({"_hoodie_record_key": keys}), str(root / part / name))
    return f"{part}/{name}"


@pytest.fixture
def table(tmp_path):
    key_cache.KEY_CACHE.clear()
    files = {
        "p0": (st.StoredFile("f1-0", "001", _base_file(tmp_path, "p0", "f1-0_0-1-1_001.parquet", ["a", "b", "c"])),
               st.StoredFile("f2-0", "002", _base_file(tmp_path, "p0", "f2-0_0-1-1_002.parquet", ["d", "e"]))),
        "p1": (st.StoredFile("f3-0", "003", _base_file(tmp_path, "p1", "f3-0_0-1-1_003.parquet", ["a", "z"])),),
    }
    layout = st.TableLayout(base_files=files, small_files={}, log_targets={}, pending_clustering={},
                            average_record_size=100, tag=True, reject_updates_under_clustering=True, mor=False)
    yield Storage(str(tmp_path)), layout
    key_cache.KEY_CACHE.clear()


def _records(keys: list[str], parts: list[str]) -> pa.Table:
    return pa.table({RECORD_KEY_COL: keys, PARTITION_COL: parts})


def test_locate_finds_keys_per_partition_only(table):
    storage, layout = table
    recs = _records(["e", "a", "a", "zz", "z", "c"], ["p0", "p0", "p1", "p0", "p0", "p2"])
    fids, insts = st._locate(storage, layout, recs)
    # "a" lives in f1-0 (p0) and f3-0 (p1); "z" is stored only in p1, so in p0 it is an insert.
    assert fids.to_pylist() == ["f2-0", "f1-0", "f3-0", None, None, None]
    assert insts.to_pylist() == ["002", "001", "003", None, None, None]


def _tag_and_profile(storage, layout, recs):
    fids, insts = st._locate(storage, layout, recs)
    return fids, st._profile(WriteOperation.UPSERT, recs, fids, insts)


def test_profile_counts_inserts_and_updates_by_file_group(table):
    storage, layout = table
    recs = _records(["e", "d", "a", "new1", "new2"], ["p0", "p0", "p1", "p0", "p1"])
    fids, prof = _tag_and_profile(storage, layout, recs)
    assert prof.partitions["p0"].num_inserts == 1 and prof.partitions["p0"].updates == {"f2-0": ("002", 2)}
    assert prof.partitions["p1"].num_inserts == 1 and prof.partitions["p1"].updates == {"f3-0": ("003", 1)}


def test_updates_under_pending_clustering_are_reported_before_writing(table):
    storage, layout = table
    layout = st.TableLayout(**{**layout.__dict__, "pending_clustering": {("p0", "f2-0"): "009"}})
    recs = pa.table({RECORD_KEY_COL: ["d"], PARTITION_COL: ["p0"], DELETE_FLAG: [False], st.BAD_KEY: [False]})
    ctx = SimpleNamespace(operation=WriteOperation.UPSERT, require_ordering=False, precombine_field=None)
    out = st.write_batch(ctx, layout, storage, recs, lambda n: "0-0-0")  # type: ignore[arg-type]
    assert out == [{"error": st.ERR_CLUSTERING, "count": 1, "partition": "p0", "file_id": "f2-0",
                    "clustering": "009"}]


def test_null_keys_are_reported_before_anything_else(table):
    storage, layout = table
    recs = pa.table({RECORD_KEY_COL: ["d", None], PARTITION_COL: ["p0", "p0"], DELETE_FLAG: [False, False],
                     st.BAD_KEY: [False, True]})
    assert st.write_batch(None, layout, storage, recs, lambda n: "0-0-0") == [  # type: ignore[arg-type]
        {"error": st.ERR_BAD_KEYS, "count": 1}]


def test_routing_follows_the_plan(table):
    storage, layout = table
    recs = _records(["e", "a", "n1", "n2", "n3"], ["p0", "p0", "p0", "p0", "p1"])
    fids, prof = _tag_and_profile(storage, layout, recs)
    plan = plan_buckets(prof, {}, {("p0", "f1-0"): UpdateBase("x"), ("p0", "f2-0"): UpdateBase("y")}, SizingConfig(), 100)
    routes = st._route(plan, recs, fids)
    assert routes[0] == plan.update_buckets[("p0", "f2-0")] and routes[1] == plan.update_buckets[("p0", "f1-0")]
    assert {plan.buckets[b].partition for b in routes[2:4]} == {"p0"} and plan.buckets[routes[4]].partition == "p1"
    assert all(plan.buckets[b].kind.value == "INSERT" for b in routes[2:])


def test_stored_keys_cache_is_bounded_and_reused(table, monkeypatch):
    storage, layout = table
    paths = [sf.path for files in layout.base_files.values() for sf in files]
    first = key_cache.stored_keys(storage, paths[0])
    assert key_cache.stored_keys(storage, paths[0]) is first, "an immutable base file is read once"
    monkeypatch.setattr(key_cache, "KEY_CACHE_MAX_BYTES", first.nbytes + 1)
    for p in paths[1:]:
        key_cache.stored_keys(storage, p)
    assert len(key_cache.KEY_CACHE) == 1 and storage.uri(paths[-1]) in key_cache.KEY_CACHE
