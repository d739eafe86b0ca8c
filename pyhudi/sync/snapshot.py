"""The table as one sync sees it: the timeline loaded once at the start (Hudi's sync client loads its meta
client once too), the commits and their completion times, the schema, and the partitions of a full listing.

The sync point written at the end is this snapshot's last commit, never a commit that completed while the
sync ran: that one is synced by the next sync, which finds it after the point (or, if it started earlier
and completed later, as a "hollow" instant through its completion time)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from pyhudi.errors import MetaSyncError
from pyhudi.io import schema as S
from pyhudi.model.instant_time import ms_to_instant, zone
from pyhudi.model.table_config import TableConfig
from pyhudi.storage import Storage
from pyhudi.sync.schema import PType, parquet_schema
from pyhudi.timeline.instant import Action, Instant, parse_instant_file
from pyhudi.timeline.table_schema import table_schema
from pyhudi.timeline.timeline import ActiveTimeline


@dataclass
class Snapshot:
    storage: Storage
    config: TableConfig
    timeline: ActiveTimeline
    include_meta_fields: bool
    _completion: dict[str, str] | None = field(default=None, repr=False)

    @classmethod
    def load(cls, storage: Storage, config: TableConfig, include_meta_fields: bool) -> Snapshot:
        return cls(storage, config, ActiveTimeline.load(storage), include_meta_fields)

    @cached_property
    def commits(self) -> list[Instant]:
        """Hudi's completed commits timeline (commit, deltacommit, replacecommit), oldest first."""
        return list(self.timeline.commits().completed())

    @cached_property
    def commit_times(self) -> frozenset[str]:
        return frozenset(i.timestamp for i in self.commits)

    @property
    def last(self) -> str | None:
        return self.commits[-1].timestamp if self.commits else None

    @cached_property
    def fields(self) -> list[PType]:
        """TableSchemaResolver.getTableParquetSchema(withMetaFields): the latest write's schema."""
        avro = table_schema(self.timeline, self.config)
        if avro is None:
            raise MetaSyncError(f"the table at {self.storage.base_uri} has no schema yet (no completed write); "
                                "there is nothing to register")
        return parquet_schema(S.with_meta_fields(avro) if self.include_meta_fields else avro)

    def completion_times(self) -> dict[str, str]:
        """Completion time of each completed commit: from the instant's name on timeline layout 2 (Hudi 1.x),
        else its completed file's modification time (Hudi 0.x's state transition time), from one listing."""
        if self._completion is None:
            if self.timeline.layout.is_v2:
                self._completion = self.timeline.completion_times()
            else:
                self._completion = self._listed_completion_times()
        return self._completion

    def _listed_completion_times(self) -> dict[str, str]:
        tz = zone(self.config.local_timezone)
        out: dict[str, str] = {}
        for info in self.storage.list_dir(self.timeline.layout.timeline_dir):
            inst = None if info.is_dir else parse_instant_file(info.name)
            if inst is not None and inst.is_completed and info.mtime_ns:
                out[inst.timestamp] = ms_to_instant(info.mtime_ns // 1_000_000, tz)
        return out

    @property
    def last_completion(self) -> str | None:
        """The latest completion time among the commits (updateLastCommitTimeSynced's second property)."""
        times = self.completion_times()
        done = [times[i.timestamp] for i in self.commits if i.timestamp in times]
        return max(done) if done else None

    def window(self, point: str, point_completion: str | None) -> list[Instant]:
        """TimelineUtils.getCommitsTimelineAfter: the completed commits after the sync point, plus the hollow
        ones (started before it, completed after the synced completion time)."""
        after = [i for i in self.commits if i.timestamp > point]
        if point_completion:
            times = self.completion_times()
            hollow = [i for i in self.commits if i.timestamp < point and times.get(i.timestamp, "") > point_completion]
            after = sorted([*hollow, *after], key=lambda i: i.timestamp)
        return after

    def cleans_after(self, point: str) -> list[Instant]:
        return [i for i in self.timeline.actions(Action.CLEAN).completed() if i.timestamp > point]

    @cached_property
    def live_partitions(self) -> list[str]:
        """The full listing: partitions (directories with a partition metafile) that hold at least one live
        file slice. Hudi lists directories; its cleaner deletes a partition left without file groups, which
        pyhudi's cleaner does not, so a deleted or emptied partition is recognised by its file groups."""
        from pyhudi.view.builder import build_view

        view = build_view(self.storage, self.config, self.timeline)
        return [p for p in view.partition_paths if p and view.latest_file_slices(p)]

    def reloaded_commits(self) -> frozenset[str]:
        return frozenset(i.timestamp for i in ActiveTimeline.load(self.storage).commits().completed())
