"""Hudi file names: base files, log files, file ids and write tokens.

Every reader (Hudi's, hudi-rs, ours) identifies versions purely by name, so
these functions are the contract: `<fileId>_<writeToken>_<instant>.parquet`
and `.<fileId>_<baseInstant>.log.<version>_<writeToken>`. Hudi 1.2 tables with
`hoodie.table.base.file.format=LANCE` name their base files the same way with `.lance`
(`HoodieFileFormat.LANCE`; hudi-rs `BaseFileFormatValue::Lance`).
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

BASE_FILE_EXTENSION = ".parquet"
#: Every base-file extension a data table may hold: parquet, and Lance in Hudi 1.2 LANCE tables.
BASE_FILE_EXTENSIONS = (".parquet", ".lance")
LANCE_FILE_EXTENSION = ".lance"
PARTITION_METAFILE = ".hoodie_partition_metadata"
# The instant part must be digits, so `._<name>.parquet` (macOS AppleDouble) or Spark's `part-0000-...`
# files never pass for base files.
_BASE_RE = re.compile(r"^([^_.][^_]*)_([^_]+)_(\d{14,17})(?:_[^.]*)?(\.parquet|\.lance)$")
_LOG_RE = re.compile(
    r"^\.(?P<file_id>[^_]+)_(?P<instant>[^.]*)\.(?P<ext>log|archive)\.(?P<version>\d+)"
    r"(?:_(?P<token>[^_.]+)(?P<cdc>\.cdc)?)?$"
)


@dataclass(frozen=True)
class BaseFileName:
    file_id: str
    write_token: str
    instant: str
    extension: str = BASE_FILE_EXTENSION  # ".parquet", or ".lance" in a Hudi 1.2 LANCE table

    @property
    def name(self) -> str:
        return f"{self.file_id}_{self.write_token}_{self.instant}{self.extension}"


@dataclass(frozen=True)
class LogFileName:
    """``.<fileId>_<baseInstant>.log.<version>_<writeToken>[.cdc]``.

    In v6 ``base_instant`` is the base instant of the file slice, not the deltacommit that wrote the
    file (that one is in each block's header). Archive logs (``.commits_.archive.N``) share the shape.
    """

    file_id: str
    base_instant: str
    version: int
    write_token: str | None = None
    extension: str = "log"
    cdc: bool = False

    @classmethod
    def parse(cls, name: str) -> LogFileName | None:
        """Parse a bare file name; ``None`` for anything that is not a log file."""
        m = _LOG_RE.match(name)
        if m is None:
            return None
        return cls(m["file_id"], m["instant"], int(m["version"]), m["token"], m["ext"], m["cdc"] is not None)

    @property
    def name(self) -> str:
        """The on-disk name, as Hudi's ``FSUtils.makeLogFileName`` builds it."""
        out = f".{self.file_id}_{self.base_instant}.{self.extension}.{self.version}"
        if self.write_token is not None:
            out += f"_{self.write_token}"
            if self.cdc:
                out += ".cdc"
        return out

    def format(self) -> str:
        return self.name

    def __str__(self) -> str:
        return self.name

    def rolled_over(self, write_token: str) -> LogFileName:
        """The next version: Hudi never appends to an existing log path, it rolls over."""
        return LogFileName(self.file_id, self.base_instant, self.version + 1, write_token, self.extension,
                           self.cdc)


def parse_base_file(name: str) -> BaseFileName | None:
    m = _BASE_RE.match(name)
    if not m:
        return None
    return BaseFileName(m.group(1), m.group(2), m.group(3), m.group(4))


def parse_log_file(name: str) -> LogFileName | None:
    """A data log file of a file slice; archive logs and CDC logs are not."""
    parsed = LogFileName.parse(name)
    if parsed is None or parsed.extension != "log" or parsed.cdc:
        return None
    return parsed


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
