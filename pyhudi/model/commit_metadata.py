"""Commit metadata (`.commit`, `.deltacommit`, `.replacecommit`, inflight profiles).

This is the table's source of truth for readers that do not list storage and
for our own size estimator, so it is written exactly in Hudi's JSON shape and
read tolerantly (unknown keys ignored).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pyhudi.errors import CorruptFileError
from pyhudi.model import jackson
from pyhudi.model.file_names import BASE_FILE_EXTENSIONS
from pyhudi.model.replaced_ids import ReplacedIds
from pyhudi.model.write_stat import WriteStat

# extraMetadata key of the totals `CommitMetadata.to_bytes` stamps: "<instant>:bytes,records,base
# bytes,base records" (base: the stats of .parquet files, which a deltacommit's estimate counts).
TOTALS_KEY = "pyhudi.writeTotals"


def stamped_totals(extra: dict[str, Any] | None, instant: str, base_files_only: bool) -> tuple[int, int] | None:
    """The totals a commit stamped for itself; None if absent or stamped for another instant (an
    extraMetadata copied from an older commit, as a commit-metadata key prefix could carry over)."""
    value = (extra or {}).get(TOTALS_KEY)
    if not isinstance(value, str):
        return None
    stamp, _, numbers = value.partition(":")
    parts = numbers.split(",")
    if stamp != instant or len(parts) != 4 or not all(p.isdigit() for p in parts):
        return None
    b, r, bb, br = (int(p) for p in parts)
    return (bb, br) if base_files_only else (b, r)


@dataclass
class CommitMetadata:
    partition_to_write_stats: dict[str, list[WriteStat]] = field(default_factory=dict)
    compacted: bool = False
    extra_metadata: dict[str, str] = field(default_factory=dict)
    operation_type: str = "UNKNOWN"
    partition_to_replace_file_ids: dict[str, list[str]] | None = None

    @property
    def is_replace(self) -> bool:
        return self.partition_to_replace_file_ids is not None

    @property
    def schema(self) -> str | None:
        return self.extra_metadata.get("schema") or None

    def add(self, stat: WriteStat) -> None:
        key = stat.partition_path if stat.partition_path is not None else ""
        self.partition_to_write_stats.setdefault(key, []).append(stat)

    def all_stats(self) -> list[WriteStat]:
        return [s for stats in self.partition_to_write_stats.values() for s in stats]

    def total_bytes_written(self) -> int:
        return sum(s.total_write_bytes for s in self.all_stats())

    def total_records_written(self) -> int:
        return sum(s.num_writes for s in self.all_stats())

    def file_ids_written(self) -> set[tuple[str, str]]:
        return {(p, s.file_id) for p, stats in self.partition_to_write_stats.items() for s in stats if s.file_id}

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "partitionToWriteStats": {p: [s.to_json() for s in stats]
                                      for p, stats in self.partition_to_write_stats.items()},
            "compacted": self.compacted,
            "extraMetadata": dict(self.extra_metadata),
            "operationType": self.operation_type,
        }
        if self.partition_to_replace_file_ids is not None:
            out["partitionToReplaceFileIds"] = {p: list(ids)
                                                for p, ids in self.partition_to_replace_file_ids.items()}
        return out

    def to_bytes(self, instant: str | None = None) -> bytes:
        """The commit file; with `instant` (the commit's own time) its write totals go in extraMetadata
        (`TOTALS_KEY`), which the record-size estimate of later writes reads from the file's tail instead
        of summing the write stats of every partition the commit wrote."""
        out = self.to_json()
        if instant is not None:  # into the copy: the metadata object itself stays as its caller built it
            base = [s for s in self.all_stats() if (s.path or "").endswith(BASE_FILE_EXTENSIONS)]
            out["extraMetadata"][TOTALS_KEY] = f"{instant}:{self.total_bytes_written()},{self.total_records_written()}," \
                f"{sum(s.total_write_bytes for s in base)},{sum(s.num_writes for s in base)}"
        return jackson.dumps(out).encode("utf-8")

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CommitMetadata:
        stats = {
            str(p): [WriteStat.from_json(s) for s in (lst or [])]
            for p, lst in (data.get("partitionToWriteStats") or {}).items()
        }
        replace = data.get("partitionToReplaceFileIds")
        return cls(
            partition_to_write_stats=stats,
            compacted=bool(data.get("compacted", False)),
            extra_metadata={str(k): str(v) for k, v in (data.get("extraMetadata") or {}).items()
                            if v is not None},
            operation_type=str(data.get("operationType") or "UNKNOWN"),
            partition_to_replace_file_ids=(
                {str(p): list(ids or []) for p, ids in replace.items()} if isinstance(replace, dict) else None
            ),
        )

    @classmethod
    def from_bytes(cls, data: bytes, what: str = "commit metadata") -> CommitMetadata:
        if not data.strip():
            return cls()
        try:
            parsed = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CorruptFileError(f"{what} is not valid JSON: {exc}") from exc
        if not isinstance(parsed, dict):
            raise CorruptFileError(f"{what} is not a JSON object")
        return cls.from_json(parsed)


def top_level_value(data: bytes, key: str, kind: type, tail: bool = False) -> Any | None:
    """The value of `key` in a commit's JSON if it is of `kind`, decoding only that value (a commit of
    a clustering or bulk load names every partition; a planner reading its replaced file ids or extra
    metadata need not build its write stats). Searched from the end: the top-level keys follow
    partitionToWriteStats. None when absent or unreadable: callers then parse the whole commit.
    With `tail`, `data` is the end of the file only: a match at its first byte is not trusted (the byte
    before it, which says whether the quote is escaped, was not read)."""
    needle = f'"{key}"'.encode()
    pos = data.rfind(needle)
    while pos >= 0:
        if (pos == 0 and not tail) or (pos > 0 and data[pos - 1:pos] != b"\\"):
            value = _value_after(data, pos + len(needle))
            if isinstance(value, kind):
                return value
        pos = data.rfind(needle, 0, pos)
    return None


def _value_after(data: bytes, start: int, window: int = 16384) -> Any | None:
    """The JSON value after the key ending at `start` (`: <value>`), None when there is none or it does not
    decode. Decoded from a window that grows until the value ends inside it, not from the rest of the file:
    a key near the start of a 256 KB tail cost every planner ~0.3 ms of decoding (measured)."""
    decoder = json.JSONDecoder()
    while True:
        chunk = data[start:start + window]
        whole = start + window >= len(data)
        try:
            text = chunk.decode("utf-8")
        except UnicodeDecodeError as exc:
            if whole or exc.start < len(chunk) - 3:
                return None
            text = chunk[:exc.start].decode("utf-8")  # a character cut by the window's end
        text = text.lstrip()
        if not text.startswith(":"):
            if text or whole:
                return None
            window *= 4  # only blanks so far
            continue
        body = text[1:].lstrip()
        try:
            value, end = decoder.raw_decode(body)
        except ValueError:
            value, end = None, len(body)
        if whole or end < len(body):  # the value ended inside the window (a cut number would not)
            return value
        window *= 4


def replaced_file_ids(data: bytes, what: str = "replacecommit") -> ReplacedIds:
    """A replacecommit's replaced file ids, without building its write stats (a clustering of every
    partition is megabytes of them; views and cleans of any partition read its replaced ids)."""
    found = ReplacedIds.locate(data)
    if found is None:  # not found cheaply: parse the whole commit
        found = ReplacedIds(CommitMetadata.from_bytes(data, what).partition_to_replace_file_ids or {})
    return found
