"""The `hudi` data source's streams: `spark.readStream.format("hudi").load(path)` reads the table's commits as
they complete; `writeStream.format("hudi")` is refused (use `pyhudi.write_stream`).

Read: an offset is the end of an incremental range, `{"instant": ts}`: the last completed commit's instant
time on a version-6 table, its completion time on a Hudi 1.x table (versions 8 and 9) or with
hoodie.read.timeline.holes.resolution.policy=USE_TRANSITION_TIME, exactly as an incremental query reads
its begin and end (reader/incremental.py; a write still in flight before a completed one is handled by that
policy: FAIL, the default, fails the micro-batch until it completes). Each micro-batch is the incremental
query (start, end], planned and read like a batch read (datasource_read.py: one task per group of file
slices, MOR merged on executors). `hoodie.datasource.streaming.startOffset` picks where a new query starts:
`earliest` (default, as Hudi: every commit), `latest` (only commits after the start), or an instant.
Columns added to the table after the query started are not returned (a stream's schema is fixed when it
starts); columns of the stream's schema that an older commit lacks are null.

Write: the stream writer API has no call before a micro-batch's tasks write, so no instant can exist when
they do, and a micro-batch replayed after a failure could not be recognized (Hudi's sink stores the batch id
in the commit). `streamWriter()` therefore refuses at query start, before anything is written, naming
`pyhudi.write_stream(df, path, options, checkpoint_location)`, pyhudi's exactly-once streaming sink with every
write operation.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from pyhudi.config import keys as K
from pyhudi.config.registry import Options
from pyhudi.engine.spark.datasource_read import SliceGroup, SourceOptions, group_partitions, read_units
from pyhudi.engine.spark.datasource_write import UnsupportedWriteError
from pyhudi.model.instant_time import normalize_instant
from pyhudi.model.table_config import load_table_config
from pyhudi.reader import incremental
from pyhudi.reader.plan import plan_read
from pyhudi.timeline.timeline import ActiveTimeline

START_OFFSET = "hoodie.datasource.streaming.startoffset"  # Hudi's hoodie.datasource.streaming.startOffset
EARLIEST = "00000000000000000"


class HudiStreamReader(DataSourceStreamReader):
    def __init__(self, opts: SourceOptions, schema: T.StructType) -> None:
        hudi = {k: v for k, v in opts.hudi.items() if k not in (K.QUERY_TYPE.key, K.BEGIN_INSTANT.key,
                                                               K.END_INSTANT.key, K.AS_OF_INSTANT.key, START_OFFSET)}
        self.start = opts.hudi.get(START_OFFSET, "earliest")
        self.opts = SourceOptions(opts.path, hudi, opts.storage, opts.own)
        self.schema = schema

    def initialOffset(self) -> dict[str, str]:
        start = self.start.strip().lower()
        if start == "earliest":
            return {"instant": EARLIEST}
        if start == "latest":
            return {"instant": self.latest(EARLIEST)}
        return {"instant": normalize_instant(self.start)}

    def latestOffset(self, start: dict[str, str], limit: object) -> dict[str, str]:
        return {"instant": self.latest(start["instant"])}

    def latest(self, begin: str) -> str:
        """The end of the incremental range that starts after `begin` and takes every completed commit."""
        storage = self.opts.storage_handle()
        config = load_table_config(storage)
        timeline = ActiveTimeline.load(storage)
        rng = incremental.resolve(Options.parse(self.opts.hudi), storage, timeline, config, begin, None)
        return max(rng.end, begin)

    def partitions(self, start: dict[str, str], end: dict[str, str]) -> list[InputPartition]:
        if start["instant"] >= end["instant"]:
            return []
        options = {**self.opts.hudi, K.QUERY_TYPE.key: "incremental", K.BEGIN_INSTANT.key: start["instant"],
                   K.END_INSTANT.key: end["instant"]}
        planned = plan_read(self.opts.path, options, None, self.opts.storage)
        return list(group_partitions(self.opts, planned, self.schema))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, SliceGroup):
            return iter(())
        return read_units(partition.job, partition.units, self.schema)


def refuse_stream_write() -> UnsupportedWriteError:
    return UnsupportedWriteError(
        "the hudi data source cannot be a streaming sink (writeStream.format('hudi')): the stream writer API "
        "gives no call before a micro-batch's tasks write, so the micro-batch's instant could not exist when "
        "they write, nor could a replayed micro-batch be recognized. Nothing was written. Use "
        "pyhudi.write_stream(df, path, options, checkpoint_location): pyhudi's exactly-once streaming sink, "
        "every write operation, one commit per micro-batch")


__all__ = ["START_OFFSET", "HudiStreamReader", "refuse_stream_write"]
