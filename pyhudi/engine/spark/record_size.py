"""A first write's record size measured on Spark's executors (see writer/record_size.py): the driver
gets one number, never rows."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

import pyarrow as pa
from pyspark.sql import DataFrame

from pyhudi.io.base_file import ParquetSettings
from pyhudi.writer.config import SizingConfig, WriteConfig, parquet_settings
from pyhudi.writer.record_size import SAMPLE_ROWS, sampled_record_size


def spark_sampled_record_size(tagged: DataFrame, cfg: WriteConfig, table_uri: str) -> int | None:
    """The first `SAMPLE_ROWS` records, gathered into one executor task (Spark's global limit), encoded
    there as `sampled_record_size` encodes the in-process engine's evenly spread sample. One small job,
    only on a table with no commit to estimate from."""
    fn = partial(_measure, cfg.sizing, parquet_settings(cfg, table_uri))
    rows = tagged.limit(SAMPLE_ROWS).coalesce(1).mapInArrow(fn, "size long").collect()
    sizes = [int(r["size"]) for r in rows if r["size"] is not None]
    return max(sizes) if sizes else None


def _measure(sizing: SizingConfig, parquet: ParquetSettings, batches: Iterator[pa.RecordBatch]
             ) -> Iterator[pa.RecordBatch]:
    got = list(batches)
    size = sampled_record_size(pa.Table.from_batches(got), sizing, parquet) if got else None
    yield pa.RecordBatch.from_pydict({"size": pa.array([size], pa.int64())})
