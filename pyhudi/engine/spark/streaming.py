"""Structured Streaming sink: each micro-batch is one commit, exactly once.

Spark replays a micro-batch whose completion it did not record (crash, kill, restart). As Hudi's
HoodieStreamingSink does, every commit carries `_hudi_streaming_sink_checkpoint` in its
extraMetadata, a JSON map {identifier: batchId}; a batch whose id is not greater than the one
stored for its identifier is already in the table and is skipped. The identifier is
`hoodie.datasource.write.streaming.checkpoint.identifier` when set, otherwise the streaming query's
id, which Spark keeps in the checkpoint directory across restarts. The query id and batch id are also
stored under their own keys for people reading the timeline.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql.streaming import StreamingQuery

from pyhudi.errors import InvalidConfigError
from pyhudi.streamer.commits import (  # the checkpoint in the commits is engine-neutral (streamer/commits.py)
    BATCH_ID_KEY,
    QUERY_ID_KEY,
    SINK_CHECKPOINT_KEY,
    commit_summary,
    last_committed_batch,
    sink_metadata,
)

log = logging.getLogger(__name__)
IDENTIFIER_OPTION = "hoodie.datasource.write.streaming.checkpoint.identifier"
_TRIGGERS = ("processingTime", "once", "continuous", "availableNow")
__all__ = ["BATCH_ID_KEY", "IDENTIFIER_OPTION", "QUERY_ID_KEY", "SINK_CHECKPOINT_KEY", "BatchWriter", "commit_summary",
           "last_committed_batch", "sink_metadata", "start_stream", "write_stream"]


def _query_id(checkpoint_location: str) -> str:
    """Spark writes {"id": ...} to <checkpoint>/metadata when the query first starts and reuses it. A
    checkpoint on an object store (a cluster with a connector) is read through Storage, not os.path."""
    location = _local(checkpoint_location)
    if "://" in location:
        from pyhudi.storage import Storage

        first = Storage(location).read_bytes("metadata").decode("utf-8").split("\n", 1)[0]
        return str(json.loads(first)["id"])
    with open(os.path.join(location, "metadata")) as fh:
        return str(json.loads(fh.readline())["id"])


def _spark_checkpoint(df: DataFrame, checkpoint_location: str) -> str:
    """The checkpoint location as Spark should open it. Spark writes the checkpoint with its own Hadoop
    file system, which pyhudi cannot stand in for (unlike reads and writes of the table): a scheme the
    cluster has no connector for is refused here, before anything starts, instead of failing in the JVM."""
    from pyhudi.engine.spark.read_files import spark_reads_scheme, spark_uri

    if spark_reads_scheme(df.sparkSession, checkpoint_location):
        return spark_uri(df.sparkSession, checkpoint_location)
    scheme = checkpoint_location.split("://", 1)[0]
    raise InvalidConfigError(
        f"checkpoint location {checkpoint_location!r}: this Spark cluster has no Hadoop file system for "
        f"{scheme}:// (no connector such as hadoop-aws), and Spark writes the streaming checkpoint itself. Give a "
        "local or HDFS checkpoint location (the table itself can stay on the bucket; `pyhudi streamer`: "
        "--checkpoint-dir), or add the connector "
        "(e.g. spark.jars.packages=org.apache.hadoop:hadoop-aws:<Spark's Hadoop version>).")


def _local(location: str) -> str:
    return location[len("file:"):] if location.startswith("file:") else location


class BatchWriter:
    """The foreachBatch function; picklable state only (path, options, checkpoint location).

    Subclasses (the streamer's validating sink) override `write_batch`; the replay check stays here.
    """

    def __init__(self, path: str, options: Mapping[str, Any], checkpoint_location: str,
                 on_commit: Callable[[str], None] | None = None) -> None:
        self.path = path
        self.options = dict(options)
        self.checkpoint_location = checkpoint_location
        self.on_commit = on_commit
        self._query_id: str | None = None  # fixed for the checkpoint's lifetime; read once

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        identifier, query_id = self.identity()
        last = last_committed_batch(self.path, identifier)
        if last is not None and batch_id <= last:
            log.info("micro-batch %d of %s is already committed (last %d); skipped", batch_id, identifier, last)
            return
        self.write_batch(batch, batch_id, identifier, query_id)

    def identity(self) -> tuple[str, str]:
        """(checkpoint identifier, query id) of this stream."""
        if self._query_id is None:
            self._query_id = _query_id(self.checkpoint_location)
        return str(self.options.get(IDENTIFIER_OPTION) or self._query_id), self._query_id

    def write_batch(self, batch: DataFrame, batch_id: int, identifier: str, query_id: str) -> None:
        if batch.isEmpty():
            return
        self.commit(batch, batch_id, identifier, query_id)

    def commit(self, df: DataFrame, batch_id: int, identifier: str, query_id: str, note: str = "") -> str | None:
        """One pyhudi.write carrying the sink checkpoint; `note` is appended to the summary line."""
        from pyhudi.api import _write

        started = time.monotonic()
        instant = _write(df, self.path, {**self.options, **sink_metadata(identifier, query_id, batch_id)},
                         streaming=True)
        log.info("micro-batch %d committed as %s", batch_id, instant)
        if self.on_commit is not None and instant is not None:
            summary = commit_summary(self.path, instant, batch_id, time.monotonic() - started, self.options)
            self.on_commit(summary + note)
        return instant


def write_stream(df: DataFrame, path: str, options: Mapping[str, Any] | None, checkpoint_location: str,
                 trigger: Mapping[str, Any] | None = None,
                 on_commit: Callable[[str], None] | None = None) -> StreamingQuery:
    """Start a streaming query writing every micro-batch of `df` to the Hudi table at `path`.

    `trigger` takes DataStreamWriter.trigger's keyword forms, e.g. {"availableNow": True} or
    {"processingTime": "10 seconds"}. `on_commit` receives a one-line summary of each commit. Returns the
    started StreamingQuery.

    Table services run as Hudi's streaming sink runs them: on a MERGE_ON_READ table compaction is scheduled
    after micro-batches (hoodie.compact.inline.trigger.strategy) and executed in the background unless
    hoodie.datasource.compaction.async.enable=false or hoodie.compact.inline=true; clustering runs in the
    background with hoodie.clustering.async.enabled=true. Pending plans of those services are resumed when
    the query starts. Call pyhudi.wait_for_table_services(path) before stopping the SparkSession.
    """
    return start_stream(df, BatchWriter(path, options or {}, checkpoint_location, on_commit), checkpoint_location,
                        trigger)


def start_stream(df: DataFrame, batch_writer: BatchWriter, checkpoint_location: str,
                 trigger: Mapping[str, Any] | None = None) -> StreamingQuery:
    """Start `df`'s streaming query with `batch_writer` as its foreachBatch function."""
    if not df.isStreaming:
        raise InvalidConfigError("write_stream needs a streaming DataFrame (spark.readStream...); use pyhudi.write "
                                 "for a batch DataFrame")
    if trigger is not None and (len(trigger) != 1 or next(iter(trigger)) not in _TRIGGERS):
        raise InvalidConfigError(f"trigger={dict(trigger)!r} is not valid; give exactly one of {', '.join(_TRIGGERS)}, "
                                 "e.g. {'processingTime': '10 seconds'}")
    checkpoint_location = _spark_checkpoint(df, checkpoint_location)
    from pyhudi.api import resume_table_services

    # As Hudi's streaming sink: pending compaction/clustering plans (e.g. left by a crash) resume at start.
    resume_table_services(df.sparkSession, batch_writer.path, batch_writer.options)
    writer = df.writeStream.option("checkpointLocation", checkpoint_location).foreachBatch(batch_writer)
    if trigger is not None:
        writer = writer.trigger(**dict(trigger))
    return writer.start()
