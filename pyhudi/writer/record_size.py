"""Average record size from earlier commits (Hudi 0.15's AverageRecordSizeUtils).

Walk completed commits newest first; the first one that wrote more than
threshold x small-file-limit bytes sets the estimate to ceil(bytes / records).
Commits and replacecommits count whole; deltacommits count only their base
files (log bytes are not parquet bytes). Until such a commit exists the
configured estimate (1024) is used -- the behaviour Hudi users know from #2630.

One deliberate difference (hoodie.pyhudi.record.size.estimate.auto, on unless the estimate key is
set): where Hudi falls back to the configured estimate, pyhudi takes the newest commits together,
newest first until their bytes pass the threshold (or all of them), if that gives a smaller size. A
stream of 20,000-row batches into 8 MB files writes ~4 MB a commit, so under Hudi's rule every batch is
planned at 1,024 bytes a record: files of ~1.5 MB, small from the start, topped up one a batch. The
threshold exists because a small commit's bytes are dominated by per-file footers; pyhudi's footers
are small (its bloom filters are sized to each file's records), and taking the smaller of the two
never plans smaller files than Hudi's fallback would (a table whose small commits Hudi wrote, each file
carrying a 431 KB filter, comes out above 1,024 and keeps Hudi's answer). A table with no commit that
wrote records (its first write) is planned from an encoded sample of the write's records (in-process;
on Spark an executor measures it, engine/spark/record_size.py), taken only when some partition gets more
inserts than one file holds at the configured estimate: at the 1,024-byte default a 1 MB target split a
first batch of 180-byte records into 1,024-record files of ~190 KB, and merge-on-read tops up only one
small file per partition per write.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyhudi.errors import HudiError
from pyhudi.io.base_file import ParquetSettings, estimate_bytes_per_row, every_nth
from pyhudi.timeline.instant import Action
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.writer.config import SizingConfig
from pyhudi.writer.handles import COMMIT_TIME, FILE_NAME, PARTITION, SEQNO, file_overhead

log = logging.getLogger(__name__)


def average_record_size(timeline: ActiveTimeline, sizing: SizingConfig,
                        sampled: Callable[[], int | None] | None = None) -> int:
    """`sampled` measures the write's own records (either engine), for a table with no commit."""
    threshold = int(sizing.estimation_threshold * sizing.small_file_limit)
    completed = timeline.actions(Action.COMMIT, Action.REPLACE_COMMIT, Action.DELTA_COMMIT).completed()
    together = [0, 0]  # bytes, records of the newest commits, until their bytes pass the threshold
    for instant in reversed(completed.instants):
        try:  # the two sums only: wide commits are megabytes of write stats
            total_bytes, total_records = timeline.write_totals(
                instant, base_files_only=instant.action is Action.DELTA_COMMIT)
        except HudiError as exc:  # fail safe, as Hudi does
            log.warning("skipping %s for record size estimation: %s", instant, exc)
            continue
        if total_bytes > threshold and total_records > 0:
            return math.ceil(total_bytes / total_records)
        if together[0] <= threshold:
            together[0] += total_bytes
            together[1] += total_records
    if sizing.estimate_auto and together[1] > 0:
        return max(1, min(sizing.record_size_estimate, math.ceil(together[0] / together[1])))
    if sizing.estimate_auto and sampled is not None:
        measured = sampled()
        if measured:
            return measured
    return sizing.record_size_estimate


# Rows of a write's records encoded to estimate a first write's record size (a few ms).
SAMPLE_ROWS = 4000
# Meta columns whose value is the same in every row of a file (one dictionary entry in the encoding).
_CONSTANT_PER_FILE = (COMMIT_TIME, PARTITION, FILE_NAME)


def sampled_record_size(records: pa.Table, sizing: SizingConfig, parquet: ParquetSettings) -> int | None:
    """Bytes a record of `records` (tagged, with the record key column) takes in a full base file:
    an evenly spread sample encoded as the file columns it becomes (data, record key, sequence numbers;
    the per-file constant meta columns cost next to nothing), plus a full file's share of its bloom
    filter and footer. A sample compresses a little worse than a whole file, so files come out at or
    below the target, never over it."""
    n = records.num_rows
    if not n:
        return None
    k = min(n, SAMPLE_ROWS)
    sample = every_nth(records, n / k, k) if n > k else records
    keep = [c for c in sample.column_names if not c.startswith(("_pyhudi", "__pyhudi")) and c not in _CONSTANT_PER_FILE]
    seqno = pc.binary_join_element_wise("00000000000000000_0_", pc.cast(pa.array(np.arange(k)), pa.string()), "")
    per_row = estimate_bytes_per_row(sample.select(keep).append_column(SEQNO, seqno), parquet, k)
    full = max(1, int(sizing.max_file_size / per_row))
    return max(1, math.ceil(per_row + file_overhead(full, parquet) / full))
