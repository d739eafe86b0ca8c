"""Hudi file names: base files, log files, file ids and write tokens.

Every reader (Hudi's, hudi-rs, ours) identifies versions purely by name, so
these functions are the contract: `<fileId>_<writeToken>_<instant>.parquet`
and `.<fileId>_<baseInstant>.log.<version>_<writeToken>`.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

BASE_FILE_EXTENSION = ".parquet"
PARTITION_METAFILE = ".hoodie_partition_metadata"
# The instant part must be digits, so `._<name>.parquet` (macOS AppleDouble) or Spark's `part-0000-...`
# files never pass for base files.
_BASE_RE = re.compile(r"^([^_.][^_]*)_([^_]+)_(\d{14,17})(?:_[^.]*)?\.parquet$")
_LOG_RE = re.compile(r"^\.([^_]+)_([^.]+)\.(log|archive)\.(\d+)(?:_(.+))?$")


@dataclass(frozen=True)
class BaseFileName:
    file_id: str
    write_token: str
    instant: str

    @property
    def name(self) -> str:
        return f"{self.file_id}_{self.write_token}_{self.instant}{BASE_FILE_EXTENSION}"


@dataclass(frozen=True)
class LogFileName:
    file_id: str
    base_instant: str
    version: int
    write_token: str
    extension: str = "log"

    @property
    def name(self) -> str:
        return f".{self.file_id}_{self.base_instant}.{self.extension}.{self.version}_{self.write_token}"


def parse_base_file(name: str) -> BaseFileName | None:
    m = _BASE_RE.match(name)
    if not m:
        return None
    return BaseFileName(m.group(1), m.group(2), m.group(3))


def parse_log_file(name: str) -> LogFileName | None:
    m = _LOG_RE.match(name)
    if not m or m.group(3) != "log":
        return None
    return LogFileName(m.group(1), m.group(2), int(m.group(4)), m.group(5) or "", m.group(3))


def base_file_name(file_id: str, write_token: str, instant: str) -> str:
    return BaseFileName(file_id, write_token, instant).name


def log_file_name(file_id: str, base_instant: str, version: int, write_token: str) -> str:
    return LogFileName(file_id, base_instant, version, write_token).name


def write_token(spark_partition_id: int, stage_id: int, task_attempt_id: int) -> str:
    """Hudi's `<sparkPartitionId>-<stageId>-<taskAttemptId>`: distinct per task attempt."""
    return f"{spark_partition_id}-{stage_id}-{task_attempt_id}"


def new_file_id_prefix() -> str:
    return str(uuid.uuid4())


def file_id(prefix: str, rollover: int = 0) -> str:
    """A create handle's N-th rollover of a bucket becomes `<prefix>-N`."""
    return f"{prefix}-{rollover}"


def join_path(partition_path: str, name: str) -> str:
    return f"{partition_path}/{name}" if partition_path else name
