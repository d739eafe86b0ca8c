"""INMEMORY index (log-aware): keys are located in base files *and* log files.

Hudi's INMEMORY index keeps a map in one JVM; pyhudi rebuilds the same
knowledge from storage for each write: keys of the latest base files plus keys
of the latest slices' log data blocks, read by the engine's tasks (Spark's side:
`pyhudi.engine.spark.index_simple.existing_log_aware_locations`). A key deleted
in a log may still be located in its group, which is harmless: a re-insert then
lands in the same group's log.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from pyhudi.errors import WriteRolledBackError
from pyhudi.index import locations as simple
from pyhudi.io.log_blocks import avro_block_to_arrow
from pyhudi.io.log_format import BlockType, LogBlock, read_blocks
from pyhudi.storage import Storage

LOGS_SCHEMA = "l_part string, l_file_id string, l_instant string, l_path string"
KEYS_SCHEMA = (f"_loc_key string, {simple.LOC_PARTITION} string, {simple.LOC_FILE_ID} string, "
               f"{simple.LOC_INSTANT} string")


def log_file_keys(storage: Storage, path: str) -> list[str]:
    """Record keys of the data blocks of one log file (deletes are not locations). A log file listed in the
    view but gone when read was deleted by a concurrent rollback (or clean): the lookup would miss keys, so
    the write stops with a retryable conflict instead of a raw FileNotFoundError."""
    keys: list[str] = []
    try:
        data = storage.read_bytes(path)
    except FileNotFoundError as exc:
        raise WriteRolledBackError(
            f"log file {storage.uri(path)} was deleted while this write looked up its keys (a concurrent "
            "rollback of the write that created it, or a clean); nothing was written: retry the write") from exc
    for block in read_blocks(data, where=path):
        if not isinstance(block, LogBlock):
            continue
        btype = block.block_type
        if btype == BlockType.PARQUET_DATA_BLOCK:
            keys.extend(pq.read_table(pa.BufferReader(block.content),
                                      columns=[simple.RECORD_KEY]).column(0).to_pylist())
        elif btype == BlockType.AVRO_DATA_BLOCK:
            keys.extend(avro_block_to_arrow(block).column(simple.RECORD_KEY).to_pylist())
    return keys


def log_keys_batches(storage: Storage, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(key, partition, fileId, instant) batches for batches of log files (LOGS_SCHEMA rows): an engine task
    that runs where the logs are read, so keys never pass through the driver."""
    for batch in batches:
        for part, fid, inst, path in zip(*(batch.column(i).to_pylist() for i in range(4))):
            keys = log_file_keys(storage, path)
            n = len(keys)
            if n:
                yield pa.RecordBatch.from_pydict({
                    "_loc_key": keys, simple.LOC_PARTITION: [part] * n, simple.LOC_FILE_ID: [fid] * n,
                    simple.LOC_INSTANT: [inst] * n})
