"""Clustering never churns (issue 19, item 4), in-process, no Spark.

* Output files are sized by the bytes actually written: every output of a clustering lies in
  [small-file limit, 1.1 x target], except at most one file per partition (its tail), even when the
  partition's small files fill several groups (max.bytes.per.group of 2 targets).
* A clustering over a table it has just clustered plans nothing; a later one, after new small files,
  rewrites only those files and at most the previous tail of each partition, never a well-sized file.
* Ingestion-ordered clustering (no sort columns) stitches only the small files together.
* A merge-on-read stream of small upserts with the default SIMPLE index, inline compaction and inline
  clustering ends with at least 95% of its bytes in well-sized base files.

Targets are small (256 KB with a bloom filter sized to it, and 1 MB with Hudi's default bloom filter,
whose ~431 KB footer dominates such files), the small-file limit 75% of the target. Keys and partition
values are adversarial (unicode, `/` and digits in partition values, decimal keys), data columns hold
nulls, and an empty batch is part of every history. Every table is read with hudi-rs and pyhudi and
compared with a model.
"""

from __future__ import annotations

import decimal
import random
from typing import Any

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.model.table_config import load_table_config
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.builder import build_view
from tests.helpers import arrow_read, hudi_rs, rows_by_key

KB = 1024
PARTITIONS = ["2024/01", "7", "ü-1"]
COLUMNS = ["p", "v", "s", "n"]

# (target, bloom entries or None for Hudi's default, rows per batch)
SIZES = {"256k": (256 * KB, 1000, 700), "1m": (1024 * KB, None, 900)}


def _key(key_type: str, i: int) -> Any:
    return decimal.Decimal(i).scaleb(-2) if key_type == "decimal" else f"kü-{i:07d}"


def _batch(rng: random.Random, key_type: str, first: int, n: int, ts: int) -> pa.Table:
    """`n` new keys from `first`; random strings (some null), numbers (some null), a partition each."""
    keys = [_key(key_type, i) for i in range(first, first + n)]
    key_type_arrow = pa.decimal128(12, 2) if key_type == "decimal" else pa.string()
    text = [None if rng.random() < 0.05 else "".join(rng.choice("abcdeü€0123456789") for _ in range(rng.randint(0, 60)))
            for _ in range(n)]
    return pa.table({
        "k": pa.array(keys, key_type_arrow),
        "p": pa.array([rng.choice(PARTITIONS) for _ in range(n)]),
        "v": pa.array([None if rng.random() < 0.1 else rng.random() for _ in range(n)], pa.float64()),
        "s": pa.array(text, pa.string()),
        "n": pa.array([rng.randint(0, 1000) for _ in range(n)], pa.int64()),
        "ts": pa.array([ts] * n, pa.int64()),
    })


def _options(target: int, bloom: int | None, sort: str, group: int | None = None) -> dict[str, str]:
    """`group`: max.bytes.per.group (default Hudi's 2 GB: a partition's small files fill one group)."""
    o = {"hoodie.table.name": "churn", "hoodie.datasource.write.recordkey.field": "k",
         "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
         "hoodie.datasource.write.operation": "insert", "hoodie.parquet.small.file.limit": "0",
         "hoodie.clustering.plan.strategy.target.file.max.bytes": str(target),
         "hoodie.clustering.plan.strategy.small.file.limit": str(target * 3 // 4),
         "hoodie.clustering.plan.strategy.sort.columns": sort}
    if bloom is not None:
        o["hoodie.index.bloom.num_entries"] = str(bloom)
    if group is not None:
        o["hoodie.clustering.plan.strategy.max.bytes.per.group"] = str(group)
        o["hoodie.clustering.plan.strategy.max.num.groups"] = "1000"
    return o


def _write(path: str, opts: dict[str, str], data: pa.Table, model: dict[Any, tuple[Any, ...]]) -> None:
    pyhudi.write(data, path, opts)
    model.update({r["k"]: tuple(r[c] for c in COLUMNS) for r in data.to_pylist()})


def _check_rows(path: str, model: dict[Any, tuple[Any, ...]]) -> None:
    expected = {k: tuple(round(x, 6) if isinstance(x, float) else x for x in row) for k, row in model.items()}
    assert rows_by_key(hudi_rs(path), "k", COLUMNS) == expected, "hudi-rs differs from the model"
    assert rows_by_key(arrow_read(path), "k", COLUMNS) == expected, "pyhudi differs from the model"


def _latest(path: str) -> dict[tuple[str, str], int]:
    """(partition, fileId) -> base file size of the latest slices."""
    storage = Storage(path)
    view = build_view(storage, load_table_config(storage), ActiveTimeline.load(storage))
    return {(p, s.file_id): s.base_size for p in view.partition_paths for s in view.latest_file_slices(p)}


def _clusterings(path: str) -> list[str]:
    timeline = ActiveTimeline.load(Storage(path))
    return [i.timestamp for i in timeline.completed().actions(Action.REPLACE_COMMIT)]


def _replaced(path: str, instant: str) -> set[tuple[str, str]]:
    timeline = ActiveTimeline.load(Storage(path))
    meta = timeline.commit_metadata(timeline.find(instant))  # type: ignore[arg-type]
    return {(p, f) for p, ids in (meta.partition_to_replace_file_ids or {}).items() for f in ids}


def _check_output_sizes(path: str, instant: str, target: int, limit: int | None = None) -> dict[tuple[str, str], int]:
    """Every output of `instant` in [limit, 1.1 x target] but at most one per partition (its tail), however
    many groups the partition's small files filled; the files on storage are exactly the reported ones.
    `limit`: the clustering small-file limit (default 3/4 of the target)."""
    storage = Storage(path)
    timeline = ActiveTimeline.load(storage)
    stats = timeline.commit_metadata(timeline.find(instant)).all_stats()  # type: ignore[arg-type]
    limit = target * 3 // 4 if limit is None else limit
    small: dict[str, list[int]] = {}
    for s in stats:
        assert s.file_size_in_bytes <= target * 1.1, f"{s.path}: {s.file_size_in_bytes} B over 1.1 x {target}"
        assert storage.size(s.path) == s.file_size_in_bytes, f"{s.path}: stat and file differ"
        if s.file_size_in_bytes < limit:
            small.setdefault(s.partition_path or "", []).append(s.file_size_in_bytes)
    assert all(len(v) == 1 for v in small.values()), f"more than one small output in a partition: {small} " \
        f"(all: {sorted(s.file_size_in_bytes for s in stats)})"
    written = {f.path for p in {s.partition_path or "" for s in stats} for f in storage.list_dir(p)
               if f.name.endswith(f"_{instant}.parquet")}
    assert written == {s.path for s in stats}, f"files of {instant} nobody reports: {written - {s.path for s in stats}}"
    return {(s.partition_path, s.file_id): s.file_size_in_bytes for s in stats}


@pytest.mark.parametrize("size", sorted(SIZES))
@pytest.mark.parametrize("sort,key_type,seed,groups", [("", "string", 1, None), ("n,v", "string", 2, 2),
                                                        ("s", "decimal", 3, None), ("", "decimal", 4, 2)])
def test_clustering_sizes_by_bytes_written_and_never_churns(tmp_path, size, sort, key_type, seed, groups):
    """`groups`: max.bytes.per.group in targets (2: a partition's small files fill several groups, each
    with its own small last file, which the executor joins into one tail per partition)."""
    target, bloom, per_batch = SIZES[size]
    limit = target * 3 // 4
    rng = random.Random(seed)
    path = str(tmp_path / "t")
    opts = _options(target, bloom, sort, groups * target if groups else None)
    model: dict[Any, tuple[Any, ...]] = {}
    batches = rng.randint(9, 14)
    for b in range(batches):
        _write(path, opts, _batch(rng, key_type, b * per_batch, rng.randint(per_batch // 2, per_batch), b), model)
    _write(path, opts, _batch(rng, key_type, 0, 0, batches), model)  # an empty batch
    before = _latest(path)
    assert all(s < limit for s in before.values()), "every ingested file starts small"

    (first,) = pyhudi.cluster(None, path, opts)
    outputs = _check_output_sizes(path, first, target)
    assert _replaced(path, first) == set(before), "every small file was clustered"
    _check_rows(path, model)

    # Clustering the table it has just clustered plans nothing: no new instant, the same files.
    assert pyhudi.cluster(None, path, opts) == []
    assert _clusterings(path) == [first] and _latest(path) == outputs

    # New small files: the next clustering takes only them and the previous tails (below the limit).
    fresh_start = batches * per_batch
    for b in range(3):
        _write(path, opts, _batch(rng, key_type, fresh_start + b * per_batch, per_batch // 2, batches + 1 + b), model)
    new_small = set(_latest(path)) - set(outputs)
    tails = {fid for fid, size_ in outputs.items() if size_ < limit}
    (third,) = pyhudi.cluster(None, path, opts)
    replaced = _replaced(path, third)
    assert new_small <= replaced, "every new small file is clustered"
    assert replaced <= new_small | tails, f"well-sized files were rewritten: {replaced - new_small - tails}"
    _check_output_sizes(path, third, target)
    _check_rows(path, model)
    assert pyhudi.cluster(None, path, opts) == [], "and once more: nothing left to cluster"


def test_ingestion_ordered_clustering_stitches_only_the_small_tail(tmp_path):
    """No sort columns: well-sized files stay, the small ones are stitched together in arrival order."""
    target, bloom, per_batch = SIZES["256k"]
    rng = random.Random(7)
    path = str(tmp_path / "t")
    sized = {**_options(target, bloom, ""), "hoodie.parquet.max.file.size": str(target),
             "hoodie.parquet.small.file.limit": str(target * 3 // 4)}
    model: dict[Any, tuple[Any, ...]] = {}
    for b in range(12):  # auto-sized ingestion: files topped up to the limit
        _write(path, sized, _batch(rng, "string", b * 3 * per_batch, 3 * per_batch, b), model)
    well = {fid: s for fid, s in _latest(path).items() if s >= target * 3 // 4}
    assert well, "auto-sizing produced well-sized files"
    small_opts = _options(target, bloom, "")
    for b in range(4):  # small files that are never topped up
        _write(path, small_opts, _batch(rng, "string", (40 + b) * per_batch, per_batch // 3, 40 + b), model)
    small = {fid for fid, s in _latest(path).items() if s < target * 3 // 4}
    (instant,) = pyhudi.cluster(None, path, small_opts)
    assert _replaced(path, instant) == {fid for fid in small if sum(1 for f in small if f[0] == fid[0]) > 1}
    latest = _latest(path)
    assert all(latest.get(fid) == s for fid, s in well.items()), "well-sized files were not touched"
    _check_output_sizes(path, instant, target)
    _check_rows(path, model)
    assert pyhudi.cluster(None, path, small_opts) == []


# --------------------------------------------------------------------------- merge-on-read stream
MOR_MAX = 256 * KB
MOR_LIMIT = MOR_MAX * 3 // 4
# 34 batches: the last one's inline compaction (every 3 delta commits) folds the logs, as the end of a stream
# whose services ran; between two compactions a merge-on-read table holds its recent updates in log files.
MOR_BATCHES, MOR_PER_BATCH, MOR_UPDATES = 34, 1500, 300


def _mor_batch(b: int) -> pa.Table:
    """Fresh keys plus updates of random earlier keys; unicode strings, nulls and a decimal column."""
    rng = random.Random(b)
    ids = list(range(b * MOR_PER_BATCH, (b + 1) * MOR_PER_BATCH))
    if b:
        ids = sorted(set(ids) | {rng.randrange(b * MOR_PER_BATCH) for _ in range(MOR_UPDATES)})
    return pa.table({
        "k": pa.array([f"kü-{i:07d}" for i in ids]),
        "p": pa.array(["x"] * len(ids)),
        "v": pa.array([None if i % 11 == 0 else rng.random() for i in ids], pa.float64()),
        "s": pa.array([rng.getrandbits(128).to_bytes(16, "little").hex() + "€" for _ in ids]),
        "n": pa.array([decimal.Decimal(i).scaleb(-2) for i in ids], pa.decimal128(12, 2)),
        "ts": pa.array([b] * len(ids), pa.int64()),
    })


def _mor_files(path: str) -> tuple[list[int], int]:
    """The latest base file sizes (sorted) and the bytes of the latest slices' log files."""
    storage = Storage(path)
    view = build_view(storage, load_table_config(storage), ActiveTimeline.load(storage))
    slices = [s for p in view.partition_paths for s in view.latest_file_slices(p)]
    return sorted(s.base_size for s in slices if s.base_file is not None), \
        sum(lf.size for s in slices for lf in s.log_files)


def test_mor_stream_ends_well_sized_with_simple_index_inline_compaction_and_clustering(tmp_path):
    path = str(tmp_path / "mor")
    opts = {"hoodie.table.name": "mor", "hoodie.datasource.write.recordkey.field": "k",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
            "hoodie.datasource.write.operation": "upsert", "hoodie.datasource.write.table.type": "MERGE_ON_READ",
            "hoodie.parquet.max.file.size": str(MOR_MAX), "hoodie.parquet.small.file.limit": str(MOR_LIMIT),
            "hoodie.index.bloom.num_entries": "2000", "hoodie.cleaner.commits.retained": "2",
            # Hudi's record-size rule (1,024 B until a commit passes the threshold) leaves the small files
            # this test needs its services to fix; pyhudi's own estimate sizes this stream without them.
            "hoodie.pyhudi.record.size.estimate.auto": "false",
            "hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "3",
            "hoodie.clustering.inline": "true", "hoodie.clustering.inline.max.commits": "4",
            "hoodie.clustering.plan.strategy.small.file.limit": str(MOR_LIMIT),
            "hoodie.clustering.plan.strategy.target.file.max.bytes": str(MOR_MAX),
            "hoodie.clustering.plan.strategy.max.bytes.per.group": str(2 * MOR_MAX)}
    model: dict[Any, tuple[Any, ...]] = {}
    checked: set[str] = set()
    for b in range(MOR_BATCHES):
        _write(path, opts, _mor_batch(b), model)
        for instant in set(_clusterings(path)) - checked:  # each inline clustering, before any clean
            _check_output_sizes(path, instant, MOR_MAX)
            checked.add(instant)
        bases, logs = _mor_files(path)
        if b >= 4:  # after the first clustering, only the file group taking this batch's inserts is small
            assert sum(1 for x in bases if x < MOR_LIMIT) <= 1, f"batch {b}: more than one small base file: {bases}"
        assert max(bases) <= MOR_MAX * 1.1, f"batch {b}: oversized base file: {bases}"
    assert checked, "inline clustering ran"
    bases, logs = _mor_files(path)
    well = sum(x for x in bases if MOR_LIMIT <= x <= MOR_MAX * 1.1)
    assert well / (sum(bases) + logs) >= 0.95, f"only {well / (sum(bases) + logs):.1%} of the bytes well sized: " \
        f"base files {bases}, log bytes {logs}"
    _check_rows(path, model)
