"""INMEMORY index (log-aware): keys are located in base files *and* log files.

Hudi's INMEMORY index keeps a map in one JVM; pyhudi rebuilds the same
knowledge from storage for each write: keys of the latest base files (Spark's
parquet reader, key column only) plus keys of the latest slices' log data
blocks (read in executors). A key deleted in a log may still be located in
its group, which is harmless: a re-insert then lands in the same group's log.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from pyhudi.index import locations as simple
from pyhudi.io.log_blocks import avro_block_to_arrow
from pyhudi.io.log_format import BlockType, LogBlock, read_blocks
from pyhudi.storage import Storage
from pyhudi.view.file_system_view import FileSlice

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

LOGS_SCHEMA = "l_part string, l_file_id string, l_instant string, l_path string"
KEYS_SCHEMA = (f"_loc_key string, {simple.LOC_PARTITION} string, {simple.LOC_FILE_ID} string, "
               f"{simple.LOC_INSTANT} string")


def log_file_keys(storage: Storage, path: str) -> list[str]:
    """Record keys of the data blocks of one log file (deletes are not locations)."""
    keys: list[str] = []
    for block in read_blocks(storage.read_bytes(path), where=path):
        if not isinstance(block, LogBlock):
            continue
        btype = block.block_type
        if btype == BlockType.PARQUET_DATA_BLOCK:
            keys.extend(pq.read_table(pa.BufferReader(block.content),
                                      columns=[simple.RECORD_KEY]).column(0).to_pylist())
        elif btype == BlockType.AVRO_DATA_BLOCK:
            keys.extend(avro_block_to_arrow(block).column(simple.RECORD_KEY).to_pylist())
    return keys


def _log_keys(base_uri: str, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    storage = Storage(base_uri)
    for batch in batches:
        for part, fid, inst, path in zip(*(batch.column(i).to_pylist() for i in range(4))):
            keys = log_file_keys(storage, path)
            n = len(keys)
            if n:
                yield pa.RecordBatch.from_pydict({
                    "_loc_key": keys, simple.LOC_PARTITION: [part] * n, simple.LOC_FILE_ID: [fid] * n,
                    simple.LOC_INSTANT: [inst] * n})


def existing_locations(spark: SparkSession, storage: Storage, slices: Sequence[FileSlice]) -> DataFrame | None:
    """The Spark engine's lookup: keys of base files (Spark's reader) and of log files (executors)."""
    from pyhudi.index import simple as simple_index

    base = simple_index.existing_locations(spark, storage, [s.base_file for s in slices if s.base_file])
    logs = [(s.partition, s.file_id, s.base_instant, lf.path) for s in slices for lf in s.log_files]
    if not logs:
        return base
    log_df = spark.createDataFrame(logs, LOGS_SCHEMA).repartition(
        max(1, min(len(logs), spark.sparkContext.defaultParallelism * 2)))
    base_uri = storage.base_uri
    in_logs = log_df.mapInArrow(lambda it: _log_keys(base_uri, it), KEYS_SCHEMA)
    union = in_logs if base is None else base.unionByName(in_logs)
    return union.dropDuplicates(["_loc_key", simple.LOC_PARTITION, simple.LOC_FILE_ID])
