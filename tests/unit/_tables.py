"""Hand-made tables for view and sizing tests: instant files in `.hoodie/` plus tiny data files named
like Hudi's (their content is irrelevant: the view works from names, sizes and the timeline)."""

from __future__ import annotations

from pathlib import Path

from pyhudi.model.commit_metadata import CommitMetadata
from pyhudi.model.table_config import COW, NONPARTITIONED_KEYGEN, SIMPLE_KEYGEN, TableConfig
from pyhudi.storage import Storage
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.file_system_view import FileSystemView


def T(n: int) -> str:
    """A 17-digit instant time."""
    return f"2025010100000{n:04d}"


class Table:
    """A hand-made table: instant files in .hoodie/ and tiny data files named like Hudi's."""

    def __init__(self, root: Path, table_type: str = COW, partitioned: bool = True) -> None:
        self.root = root
        self.hoodie = root / ".hoodie"
        self.hoodie.mkdir(parents=True)
        (self.hoodie / "archived").mkdir()
        self.config = TableConfig(
            name="t", table_type=table_type, record_key_fields=("id",),
            partition_fields=("p",) if partitioned else (), hive_style_partitioning=partitioned,
            keygen_class=SIMPLE_KEYGEN if partitioned else NONPARTITIONED_KEYGEN)

    def instant(self, ts: str, action: str, state: str = "completed", meta: CommitMetadata | None = None) -> None:
        requested = f"{ts}.{action}.requested"
        if action == "compaction":
            inflight, completed = f"{ts}.compaction.inflight", f"{ts}.commit"
        elif action == "commit":
            inflight, completed = f"{ts}.inflight", f"{ts}.commit"
        else:
            inflight, completed = f"{ts}.{action}.inflight", f"{ts}.{action}"
        (self.hoodie / requested).write_bytes(b"")
        if state in ("inflight", "completed"):
            (self.hoodie / inflight).write_bytes(b"{}")
        if state == "completed":
            (self.hoodie / completed).write_bytes((meta or CommitMetadata(operation_type="UPSERT")).to_bytes())

    def _dir(self, partition: str) -> Path:
        d = self.root / partition if partition else self.root
        d.mkdir(parents=True, exist_ok=True)
        if partition:  # a partition is a directory with this file, as Hudi and pyhudi discover them
            (d / ".hoodie_partition_metadata").touch()
        return d

    def base(self, partition: str, fid: str, ts: str, token: str = "0-1-1", size: int = 10) -> str:
        name = f"{fid}_{token}_{ts}.parquet"
        (self._dir(partition) / name).write_bytes(b"x" * size)
        return name

    def log(self, partition: str, fid: str, base_ts: str, version: int = 1, token: str = "0-1-1",
            size: int = 10) -> str:
        name = f".{fid}_{base_ts}.log.{version}_{token}"
        (self._dir(partition) / name).write_bytes(b"x" * size)
        return name

    def view(self, **kw) -> FileSystemView:
        storage = Storage(str(self.root))
        return FileSystemView(storage, self.config, ActiveTimeline.load(storage), **kw)
