"""The workload profile: per partition, how many inserts and which file groups get updates.

It is computed by one small Spark aggregation (counts only) and drives the
partitioner; it is also what Hudi stores in the inflight instant file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pyhudi.model import jackson
from pyhudi.model.write_stat import WriteStat


@dataclass
class PartitionProfile:
    num_inserts: int = 0
    # fileId -> (base instant of the slice being updated, number of updates/deletes routed there)
    updates: dict[str, tuple[str, int]] = field(default_factory=dict)
    # BUCKET index: bucket number -> inserts into that (not yet existing) bucket's file group
    bucket_inserts: dict[int, int] = field(default_factory=dict)

    @property
    def num_updates(self) -> int:
        return sum(n for _, n in self.updates.values())


@dataclass
class WorkloadProfile:
    partitions: dict[str, PartitionProfile] = field(default_factory=dict)
    operation_type: str = "UPSERT"

    def partition(self, path: str) -> PartitionProfile:
        return self.partitions.setdefault(path, PartitionProfile())

    def count(self, partition: str, file_id: str | None, base_instant: str | None, n: int) -> None:
        """Add `n` tagged records: inserts when the index found no file group, else updates of it."""
        prof = self.partition(partition)
        if file_id is None:
            prof.num_inserts += n
            return
        base, count = prof.updates.get(file_id, (base_instant or "", 0))
        prof.updates[file_id] = (base, count + n)

    def updates_in(self, groups: Mapping[tuple[str, str], object]) -> list[tuple[str, str]]:
        """The (partition, fileId) pairs this write updates that are among `groups`, sorted."""
        return sorted((p, fid) for p, prof in self.partitions.items() for fid in prof.updates if (p, fid) in groups)

    @property
    def total_inserts(self) -> int:
        return sum(p.num_inserts for p in self.partitions.values())

    @property
    def total_updates(self) -> int:
        return sum(p.num_updates for p in self.partitions.values())

    def to_inflight_bytes(self) -> bytes:
        """Hudi's inflight file: a commit-metadata-shaped JSON of the planned work."""
        stats: dict[str, list[dict[str, object]]] = {}
        for path, prof in sorted(self.partitions.items()):
            entries = [WriteStat(file_id="", path=None, partition_path=None,
                                 num_inserts=prof.num_inserts).to_json()]
            for fid, (base, count) in sorted(prof.updates.items()):
                entries.append(WriteStat(file_id=fid, path=None, partition_path=None, prev_commit=base,
                                         num_update_writes=count).to_json())
            stats[path] = entries
        doc = {"partitionToWriteStats": stats, "compacted": False, "extraMetadata": {},
               "operationType": self.operation_type}
        return jackson.dumps(doc).encode("utf-8")
