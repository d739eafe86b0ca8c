"""Auto-sizing end to end: many small batches end in properly sized files."""

from __future__ import annotations

import math
import os

import pytest
from pyspark.sql import functions as F

import pyhudi
from pyhudi.model.table_config import load_table_config
from pyhudi.storage import Storage
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.builder import build_view
from tests.helpers import hudi_rs

pytestmark = [pytest.mark.spark, pytest.mark.slow]
MAX = 1024 * 1024
LIMIT = MAX * 5 // 6


def _batch(spark, start: int, n: int):
    return spark.range(start, start + n).select(
        F.col("id"), F.sha2(F.col("id").cast("string"), 256).alias("payload"),
        F.lit("x").alias("tag"), F.col("id").alias("ts"))


def test_small_batches_end_in_well_sized_files(spark, tmp_path):
    path = str(tmp_path / "sized")
    options = {"hoodie.table.name": "sized", "hoodie.datasource.write.recordkey.field": "id",
               "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.operation": "insert",
               "hoodie.parquet.max.file.size": str(MAX), "hoodie.parquet.small.file.limit": str(LIMIT),
               "hoodie.index.bloom.num_entries": "2000"}
    batches, per_batch = 30, 3000
    for b in range(batches):
        pyhudi.write(_batch(spark, b * per_batch, per_batch), path, options)
    storage = Storage(path)
    view = build_view(storage, load_table_config(storage), ActiveTimeline.load(storage))
    sizes = [bf.size for bf in view.all_latest_base_files()]
    total = sum(sizes)
    well = sum(s for s in sizes if LIMIT <= s <= MAX * 1.1)
    ideal = math.ceil(total / MAX)
    assert max(sizes) <= MAX * 1.1, f"oversized file: {max(sizes)}"
    # Only the newest, still-filling file group may be small.
    assert sum(1 for s in sizes if s < LIMIT) <= 1, sizes
    assert well / total >= 0.85, f"only {well / total:.0%} of bytes in well-sized files: {sorted(sizes)}"
    assert len(sizes) <= ideal + 1, f"{len(sizes)} files for {total} bytes (ideal {ideal})"
    # Older versions stay on disk until a cleaner removes them: auto-sizing rewrites, never edits.
    on_disk = [f for f in os.listdir(path) if f.endswith(".parquet")]
    assert len(on_disk) > len(sizes)
    assert pyhudi.read(spark, path).count() == batches * per_batch
    assert hudi_rs(path).num_rows == batches * per_batch


def test_bulk_insert_rolls_over_and_small_files_get_topped_up(spark, tmp_path):
    path = str(tmp_path / "bulk")
    options = {"hoodie.table.name": "bulk", "hoodie.datasource.write.recordkey.field": "id",
               "hoodie.datasource.write.precombine.field": "ts", "hoodie.parquet.max.file.size": str(MAX),
               "hoodie.parquet.small.file.limit": str(LIMIT), "hoodie.index.bloom.num_entries": "2000",
               "hoodie.bulkinsert.sort.mode": "GLOBAL_SORT", "hoodie.bulkinsert.shuffle.parallelism": "2"}
    pyhudi.write(_batch(spark, 0, 50000), path, {**options, "hoodie.datasource.write.operation": "bulk_insert"})
    storage = Storage(path)
    sizes = [bf.size for bf in build_view(storage, load_table_config(storage),
                                          ActiveTimeline.load(storage)).all_latest_base_files()]
    assert len(sizes) >= 3 and max(sizes) <= MAX * 1.1, sizes  # rolled over, never oversized
    # GLOBAL_SORT: each file holds a contiguous key range.
    import pyarrow.parquet as pq

    ranges = []
    for f in os.listdir(path):
        if f.endswith(".parquet"):
            meta = pq.ParquetFile(os.path.join(path, f)).metadata.metadata
            ranges.append((meta[b"hoodie_min_record_key"], meta[b"hoodie_max_record_key"]))
    ranges.sort()
    assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:])), "GLOBAL_SORT files overlap in key range"
    small_before = sum(1 for s in sizes if s < LIMIT)
    pyhudi.write(_batch(spark, 50000, 500), path, {**options, "hoodie.datasource.write.operation": "upsert"})
    view = build_view(storage, load_table_config(storage), ActiveTimeline.load(storage))
    after = [bf for bf in view.all_latest_base_files()]
    assert len(after) == len(sizes), "500 new records should top up a small file, not open a new group"
    assert sum(1 for bf in after if bf.size < LIMIT) <= small_before
    assert pyhudi.read(spark, path).count() == 50500
