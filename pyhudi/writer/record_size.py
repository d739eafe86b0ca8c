"""Average record size from earlier commits (Hudi 0.15's AverageRecordSizeUtils).

Walk completed commits newest first; the first one that wrote more than
threshold x small-file-limit bytes sets the estimate to ceil(bytes / records).
Commits and replacecommits count whole; deltacommits count only their base
files (log bytes are not parquet bytes). Until such a commit exists the
configured estimate (1024) is used -- the behaviour Hudi users know from #2630.

One deliberate difference (hoodie.pyhudi.record.size.estimate.from.small.commits, on unless the estimate
key is set): where Hudi falls back to the configured estimate, pyhudi takes the newest commits together,
newest first until their bytes pass the threshold (or all of them), if that gives a smaller size. A
stream of 20,000-row batches into 8 MB files writes ~4 MB a commit, so under Hudi's rule every batch is
planned at 1,024 bytes a record: files of ~1.5 MB, small from the start, topped up one a batch. The
threshold exists because a small commit's bytes are dominated by per-file footers; pyhudi's footers
are small (its bloom filters are sized to each file's records), and taking the smaller of the two
never plans smaller files than Hudi's fallback would (a table whose small commits Hudi wrote, each file
carrying a 431 KB filter, comes out above 1,024 and keeps Hudi's answer).
"""

from __future__ import annotations

import logging
import math

from pyhudi.errors import HudiError
from pyhudi.timeline.instant import Action
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.writer.config import SizingConfig

log = logging.getLogger(__name__)


def average_record_size(timeline: ActiveTimeline, sizing: SizingConfig) -> int:
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
    if sizing.estimate_from_small_commits and together[1] > 0:
        return max(1, min(sizing.record_size_estimate, math.ceil(together[0] / together[1])))
    return sizing.record_size_estimate
