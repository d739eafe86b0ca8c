"""What a commit says about the stream that wrote it, without Spark: the sink checkpoint in extraMetadata.

As Hudi's HoodieStreamingSink does, every streaming commit carries `_hudi_streaming_sink_checkpoint`, a
JSON map {identifier: batchId}; a batch whose id is not greater than the one stored for its identifier is
already in the table. The Spark sink (pyhudi/engine/spark/streaming.py) and the in-process streamer
(streamer/local.py) both read and write it through this module, which imports no pyspark.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pyhudi.storage import Storage
from pyhudi.timeline.instant import WRITE_ACTIONS
from pyhudi.timeline.timeline import ActiveTimeline

SINK_CHECKPOINT_KEY = "_hudi_streaming_sink_checkpoint"
QUERY_ID_KEY = "_pyhudi_streaming_query_id"
BATCH_ID_KEY = "_pyhudi_streaming_batch_id"


def last_committed_batch(path: str, identifier: str) -> int | None:
    """The newest batch id committed for `identifier`, from the newest commit that carries one."""
    storage = Storage(path)
    if not storage.exists(".hoodie/hoodie.properties"):
        return None
    timeline = ActiveTimeline.load(storage)
    for inst in reversed(timeline.completed().instants):
        if inst.action not in WRITE_ACTIONS:
            continue
        raw = timeline.commit_metadata(inst).extra_metadata.get(SINK_CHECKPOINT_KEY)
        if not raw:
            continue
        try:
            value = json.loads(raw).get(identifier)
        except (ValueError, AttributeError):
            continue
        if value is not None:
            return int(value)
    return None


def sink_metadata(identifier: str, query_id: str, batch_id: int) -> dict[str, str]:
    """The extraMetadata that marks a commit as micro-batch `batch_id` of stream `identifier`."""
    return {SINK_CHECKPOINT_KEY: json.dumps({identifier: str(batch_id)}), QUERY_ID_KEY: query_id,
            BATCH_ID_KEY: str(batch_id)}


def commit_summary(path: str, instant: str, batch_id: int | None, seconds: float, options: Mapping[str, Any]) -> str:
    """One line per commit: records in, files created and updated, small files left, duration
    (also `pyhudi write`'s result line, which has no batch id)."""
    from pyhudi.config import keys as K
    from pyhudi.config.registry import Options
    from pyhudi.model.table_config import load_table_config
    from pyhudi.view.builder import build_view

    storage = Storage(path)
    timeline = ActiveTimeline.load(storage)
    inst = timeline.find(instant)
    assert inst is not None
    stats = timeline.commit_metadata(inst).all_stats()
    created = sum(1 for s in stats if s.prev_commit in ("null", "", None))
    records = sum(s.num_inserts + s.num_update_writes + s.num_deletes for s in stats)
    limit = int(Options.parse(dict(options), warn_unknown=False).get(K.PARQUET_SMALL_FILE_LIMIT))
    view = build_view(storage, load_table_config(storage), timeline)
    small = sum(1 for sl in view.all_latest_file_slices()
                if sl.base_file is not None and sl.base_file.size < limit)
    batch = "" if batch_id is None else f" (batch {batch_id})"
    return (f"commit {instant}{batch}: {records} records in, {created} files created, "
            f"{len(stats) - created} updated, {small} small files remaining, {seconds:.1f}s")
