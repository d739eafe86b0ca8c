"""The streamer's error table: Hudi's `hoodie.errortable.*` keys, and writing quarantined records once.

The error table is an ordinary Hudi copy-on-write table (non-partitioned, keyed by `error_id`, written
with `insert`), so it is read like any other (`pyhudi.read`, Spark, hudi-rs) and gets Hudi's file
sizing and cleaning. Its default place is `<target>/.hoodie/.aux/errors`: beside the streamer's
checkpoint, so the table, its checkpoint and its rejected records live and go together, no permission
outside the table is needed, and readers of the target never list `.hoodie`. Hudi itself has no
default (`hoodie.errortable.base.path` is required there); set it to put the table elsewhere.

Exactly once: each error-table commit carries the same `_hudi_streaming_sink_checkpoint` marker as the
data commits, and a micro-batch whose errors are already committed is not written again when Spark
replays it. The errors are committed *before* the batch's good records, so a batch is never marked
done in the target while its rejected records are missing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame

ROLLBACK_COMMIT = "ROLLBACK_COMMIT"
LOG_ERROR = "LOG_ERROR"


@dataclass(frozen=True)
class ErrorTableConfig:
    """The `hoodie.errortable.*` options, parsed once, with pyhudi's defaults filled in."""

    enabled: bool
    base_path: str
    table_name: str
    failure_strategy: str
    validate_record_creation: bool

    @classmethod
    def from_options(cls, options: Mapping[str, Any], target: str) -> ErrorTableConfig:
        from pyhudi.config import keys as K
        from pyhudi.config.registry import Options

        o = Options.parse(options, warn_unknown=False)
        return cls(
            enabled=bool(o.get(K.ERROR_TABLE_ENABLE)),
            base_path=str(o.get(K.ERROR_TABLE_BASE_PATH) or f"{target.rstrip('/')}/.hoodie/.aux/errors"),
            table_name=str(o.get(K.ERROR_TABLE_NAME) or f"{o.get(K.TABLE_NAME) or 'hoodie'}_errors"),
            failure_strategy=str(o.get(K.ERROR_TABLE_FAILURE_STRATEGY)),
            validate_record_creation=bool(o.get(K.ERROR_TABLE_VALIDATE_RECORD_CREATION)),
        )

    def write_options(self) -> dict[str, str]:
        return {
            "hoodie.table.name": self.table_name,
            "hoodie.datasource.write.recordkey.field": "error_id",
            "hoodie.datasource.write.operation": "insert",
        }


def write_errors(errors: DataFrame, config: ErrorTableConfig, identifier: str, query_id: str,
                 batch_id: int) -> str | None:
    """Commit `errors` to the error table; None when this micro-batch's errors are already there (replay)."""
    from pyhudi.api import write
    from pyhudi.streamer.commits import last_committed_batch, sink_metadata

    last = last_committed_batch(config.base_path, identifier)
    if last is not None and batch_id <= last:
        return None
    return write(errors, config.base_path, {**config.write_options(), **sink_metadata(identifier, query_id, batch_id)})
