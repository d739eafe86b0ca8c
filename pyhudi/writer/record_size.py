"""Average record size from earlier commits (Hudi 0.15's AverageRecordSizeUtils).

Walk completed commits newest first; the first one that wrote more than
threshold x small-file-limit bytes sets the estimate to ceil(bytes / records).
Commits and replacecommits count whole; deltacommits count only their base
files (log bytes are not parquet bytes). Until such a commit exists the
configured estimate (1024) is used -- the behaviour Hudi users know from #2630.
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
    for instant in reversed(completed.instants):
        try:  # the two sums only: wide commits are megabytes of write stats
            total_bytes, total_records = timeline.write_totals(
                instant, base_files_only=instant.action is Action.DELTA_COMMIT)
        except HudiError as exc:  # fail safe, as Hudi does
            log.warning("skipping %s for record size estimation: %s", instant, exc)
            continue
        if total_bytes > threshold and total_records > 0:
            return math.ceil(total_bytes / total_records)
    return sizing.record_size_estimate
