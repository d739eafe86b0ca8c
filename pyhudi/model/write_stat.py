"""Write stats: what one handle wrote to one file, as Hudi records it.

Field names and order follow `HoodieWriteStat`/`HoodieDeltaWriteStat` in the
Spark-written samples. The size estimator and the cleaner read these, so the
counts must be exact, not approximate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class RuntimeStats:
    total_scan_time: int = 0
    total_upsert_time: int = 0
    total_create_time: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "totalScanTime": self.total_scan_time,
            "totalUpsertTime": self.total_upsert_time,
            "totalCreateTime": self.total_create_time,
        }


@dataclass
class WriteStat:
    file_id: str
    path: str | None
    partition_path: str | None
    prev_commit: str = "null"
    num_writes: int = 0
    num_deletes: int = 0
    num_update_writes: int = 0
    num_inserts: int = 0
    total_write_bytes: int = 0
    total_write_errors: int = 0
    file_size_in_bytes: int = 0
    total_log_records: int = 0
    total_log_files_compacted: int = 0
    total_log_size_compacted: int = 0
    total_updated_records_compacted: int = 0
    total_log_blocks: int = 0
    total_corrupt_log_block: int = 0
    total_rollback_blocks: int = 0
    runtime_stats: RuntimeStats | None = None
    # HoodieDeltaWriteStat (log writes); None for base-file stats.
    log_version: int | None = None
    log_offset: int | None = None
    base_file: str | None = None
    log_files: list[str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def is_delta(self) -> bool:
        return self.log_version is not None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "fileId": self.file_id,
            "path": self.path,
            "cdcStats": None,
            "prevCommit": self.prev_commit,
            "numWrites": self.num_writes,
            "numDeletes": self.num_deletes,
            "numUpdateWrites": self.num_update_writes,
            "numInserts": self.num_inserts,
            "totalWriteBytes": self.total_write_bytes,
            "totalWriteErrors": self.total_write_errors,
            "tempPath": None,
            "partitionPath": self.partition_path,
            "totalLogRecords": self.total_log_records,
            "totalLogFilesCompacted": self.total_log_files_compacted,
            "totalLogSizeCompacted": self.total_log_size_compacted,
            "totalUpdatedRecordsCompacted": self.total_updated_records_compacted,
            "totalLogBlocks": self.total_log_blocks,
            "totalCorruptLogBlock": self.total_corrupt_log_block,
            "totalRollbackBlocks": self.total_rollback_blocks,
            "fileSizeInBytes": self.file_size_in_bytes,
            "minEventTime": None,
            "maxEventTime": None,
            "runtimeStats": self.runtime_stats.to_json() if self.runtime_stats else None,
        }
        if self.is_delta:
            out["logVersion"] = self.log_version
            out["logOffset"] = self.log_offset
            out["baseFile"] = self.base_file or ""
            out["logFiles"] = list(self.log_files or [])
            out["recordsStats"] = {"val": None}
        out.update(self.extra)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WriteStat:
        rt = data.get("runtimeStats")
        return cls(
            file_id=data.get("fileId") or "",
            path=data.get("path"),
            partition_path=data.get("partitionPath"),
            prev_commit=str(data.get("prevCommit", "null")),
            num_writes=int(data.get("numWrites") or 0),
            num_deletes=int(data.get("numDeletes") or 0),
            num_update_writes=int(data.get("numUpdateWrites") or 0),
            num_inserts=int(data.get("numInserts") or 0),
            total_write_bytes=int(data.get("totalWriteBytes") or 0),
            total_write_errors=int(data.get("totalWriteErrors") or 0),
            file_size_in_bytes=int(data.get("fileSizeInBytes") or 0),
            total_log_records=int(data.get("totalLogRecords") or 0),
            total_log_files_compacted=int(data.get("totalLogFilesCompacted") or 0),
            total_log_size_compacted=int(data.get("totalLogSizeCompacted") or 0),
            total_updated_records_compacted=int(data.get("totalUpdatedRecordsCompacted") or 0),
            total_log_blocks=int(data.get("totalLogBlocks") or 0),
            total_corrupt_log_block=int(data.get("totalCorruptLogBlock") or 0),
            total_rollback_blocks=int(data.get("totalRollbackBlocks") or 0),
            runtime_stats=RuntimeStats(
                int(rt.get("totalScanTime") or 0), int(rt.get("totalUpsertTime") or 0),
                int(rt.get("totalCreateTime") or 0)) if isinstance(rt, dict) else None,
            log_version=data.get("logVersion"),
            log_offset=data.get("logOffset"),
            base_file=data.get("baseFile"),
            log_files=data.get("logFiles"),
        )

    def to_row(self) -> dict[str, Any]:
        """Flat form shipped from executors to the driver (JSON text keeps the Arrow schema trivial)."""
        return self.to_json()
