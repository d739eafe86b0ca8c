"""One sync tool's run against one catalog: HiveSyncTool.syncHoodieTable for each catalog table of the
Hudi table, in Hudi's order (database, table definition, partitions, then last_commit_time_sync).

Two syncers may run at once (two writers, each syncing after its commit) and a catalog has no transaction
around a sync, so a run checks afterwards that it still holds: the sync point it wrote is still there and
the table has no commit it did not see. Otherwise it runs again: with a full comparison of the catalog's
partitions with the table's when another syncer moved the point (its own operations may have interleaved
with the other's), incrementally when only new commits arrived. The catalog then converges on the table
whichever syncer finishes last."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pyhudi.errors import MetaSyncError
from pyhudi.sync.catalog import CatalogClient, PartitionDef, TableDef
from pyhudi.sync.config import SyncConfig
from pyhudi.sync.partitions import (
    EventType,
    Layout,
    PartitionEvent,
    cleaned_partitions,
    dropped_partitions,
    full_events,
    incremental_events,
    written_partitions,
)
from pyhudi.sync.snapshot import Snapshot
from pyhudi.sync.table_def import (
    LAST_COMMIT_COMPLETION_TIME_SYNC,
    LAST_COMMIT_TIME_SYNC,
    DefinitionChange,
    SyncTarget,
    new_table,
    sync_targets,
    updated_table,
    with_sync_point,
)

log = logging.getLogger(__name__)
MAX_RUNS = 4
Progress = Callable[[str], None]


@dataclass
class TableReport:
    """What one sync did (or, explained, would do) to one catalog table."""

    database: str
    name: str
    created_database: bool = False
    created: bool = False
    definition: DefinitionChange = field(default_factory=DefinitionChange)
    full_listing: bool = False
    added: list[PartitionDef] = field(default_factory=list)
    updated: list[PartitionDef] = field(default_factory=list)
    dropped: list[PartitionDef] = field(default_factory=list)
    sync_point: str | None = None  # the last_commit_time_sync written (None: left as it was)
    previous_point: str | None = None  # the one the catalog had
    behind: bool = False  # the catalog's point was ahead of this run's snapshot: another syncer saw more

    @property
    def partitions_changed(self) -> bool:
        return bool(self.added or self.updated or self.dropped)

    @property
    def changed(self) -> bool:
        return (self.created or self.definition.schema_changed or self.definition.properties_changed
                or self.partitions_changed)

    def lines(self) -> list[str]:
        """Human-readable changes, for `pyhudi sync --explain` and the sync's summary."""
        who = f"{self.database}.{self.name}"
        out = [f"create database {self.database}"] if self.created_database else []
        if self.created:
            out.append(f"create table {who}")
        diff = self.definition.schema
        for label, cols in (("add", diff.added), ("change the type of", diff.updated), ("drop", diff.deleted)):
            out.extend(f"{who}: {label} column {c}" for c in cols)
        out.extend(f"{who}: comment of column {c}" for c in self.definition.comments)
        if self.definition.serde:
            out.append(f"{who}: reset the SerDe and input/output formats")
        if self.definition.properties:
            out.append(f"{who}: set table properties {', '.join(self.definition.properties)}")
        how = "full listing" if self.full_listing else "commits since the sync point"
        for label, parts in (("add", self.added), ("update", self.updated), ("drop", self.dropped)):
            out.extend(f"{who}: {label} partition {'/'.join(p.values)} ({p.location}) [{how}]" for p in parts)
        if self.sync_point and self.sync_point != self.previous_point:
            out.append(f"{who}: {LAST_COMMIT_TIME_SYNC}={self.sync_point}")
        return out


@dataclass
class SyncReport:
    """One sync tool's result: its tables, and how many runs it took to converge."""

    tool: str
    backend: str
    tables: list[TableReport]
    explain: bool = False
    runs: int = 1

    def lines(self) -> list[str]:
        return [line for t in self.tables for line in t.lines()]


@dataclass
class _Run:
    client: CatalogClient
    cfg: SyncConfig
    snap: Snapshot
    explain: bool
    progress: Progress

    @property
    def layout(self) -> Layout:
        return Layout(self.cfg.base_path, self.cfg.extractor, self.cfg.decode_partition)


def run_tool(tool: str, backend: str, client: CatalogClient, cfg: SyncConfig, load: Callable[[], Snapshot],
             explain: bool = False, progress: Progress | None = None) -> SyncReport:
    """Sync until the catalog holds the table as this run last saw it (see the module doc)."""
    say = progress or (lambda _msg: None)
    force_full, errors = False, 0
    for attempt in range(1, MAX_RUNS + 1):
        run = _Run(client, cfg, load(), explain, say)
        try:
            tables = [_sync_table(run, target, force_full) for target in sync_targets(cfg)]
        except MetaSyncError as exc:  # a lost race (a partition another syncer dropped) or a real failure
            errors += 1
            if errors > 1 or attempt == MAX_RUNS:
                raise
            log.warning("meta sync of %s failed (%s); re-reading the catalog and syncing again", cfg.table, exc)
            force_full = True
            continue
        report = SyncReport(tool, backend, tables, explain, attempt)
        if explain:
            return report
        verdict = _settled(run, tables)
        if verdict is None:
            return report
        say(f"{cfg.database}.{cfg.table}: {verdict}; syncing again")
        force_full = verdict.startswith("another")
    log.warning("meta sync of %s did not settle after %d runs (writers keep committing); the next sync "
                "catches up", cfg.table, MAX_RUNS)
    return report


def _settled(run: _Run, tables: list[TableReport]) -> str | None:
    """None when every table still holds the sync point this run left and no commit completed since it
    loaded the timeline; otherwise why it must run again."""
    for t in tables:
        current = run.client.get_table(t.database, t.name)
        found = current.parameters.get(LAST_COMMIT_TIME_SYNC) if current else None
        if t.behind or (t.sync_point is not None and found != t.sync_point):
            return f"another sync moved {LAST_COMMIT_TIME_SYNC} of {t.name} to {found}"
    if run.snap.reloaded_commits() != run.snap.commit_times:
        return "commits completed during the sync"
    return None


def _sync_table(run: _Run, target: SyncTarget, force_full: bool) -> TableReport:
    cfg = run.cfg
    report = TableReport(cfg.database, target.name)
    existing = run.client.get_table(cfg.database, target.name)
    table = _define(run, target, existing, report)
    point = existing.parameters.get(LAST_COMMIT_TIME_SYNC) if existing else None
    report.previous_point = point
    if cfg.partition_fields:
        catalog = run.client.list_partitions(table) if existing is not None else []
        events = _events(run, point, existing, catalog, force_full, report)
        _apply(run, table, events, report)
    _write_point(run, table, report)
    return report


def _define(run: _Run, target: SyncTarget, existing: TableDef | None, report: TableReport) -> TableDef:
    """Create the table (and its database), or update its definition: HiveSyncTool's syncFirstTime /
    syncSchema + syncProperties. A table another syncer created meanwhile is updated instead."""
    cfg, fields = run.cfg, run.snap.fields
    if existing is None:
        _database(run, report)
        report.created = True
        table = new_table(cfg, target, fields)
        if run.explain:
            return table
        run.progress(f"creating table {cfg.database}.{target.name}")
        try:
            run.client.create_table(table)
            return table
        except MetaSyncError:
            existing = run.client.get_table(cfg.database, target.name)
            if existing is None:
                raise
            report.created = False
    table, report.definition = updated_table(cfg, target, fields, existing)
    changed = report.definition.schema_changed or report.definition.properties_changed
    if changed and not run.explain:
        run.progress(f"updating table {cfg.database}.{target.name}")
        run.client.update_table(table)
    return table


def _database(run: _Run, report: TableReport) -> None:
    database = run.cfg.database
    if run.client.database_exists(database):
        return
    if not run.cfg.options.auto_create_database:
        raise MetaSyncError(f"hive database does not exist {database} (and "
                            "hoodie.datasource.hive_sync.auto_create_database=false)")
    report.created_database = True
    if not run.explain:
        try:
            run.client.create_database(database)
        except MetaSyncError as exc:  # harmless as in Hudi: another syncer created it, or create_table fails
            log.warning("meta sync: unable to create database %s: %s", database, exc)


def _events(run: _Run, point: str | None, existing: TableDef | None, catalog: list[PartitionDef],
            force_full: bool, report: TableReport) -> list[PartitionEvent]:
    """A full comparison when there is no sync point, when it is no longer a completed commit of the
    active timeline (archived, rolled back or restored away), when it is ahead of this snapshot, or after a
    lost race; else the partitions of the commits after it."""
    snap = run.snap
    full = force_full or point is None or point not in snap.commit_times or (snap.last or "") < point
    report.full_listing = full
    if full or point is None:
        run.progress(f"listing the partitions of {snap.storage.base_uri}")
        return full_events(run.layout, catalog, snap.live_partitions)
    completion = existing.parameters.get(LAST_COMMIT_COMPLETION_TIME_SYNC) if existing else None
    window = snap.window(point, completion)
    cleans = snap.cleans_after(point)
    # Hudi only looks at written partitions; a partition a later clean deleted (isPartitionDeleted) is a
    # candidate too, so that it is dropped even when no write of the window touched it.
    touched = [*written_partitions(snap.timeline, window), *cleaned_partitions(snap.timeline, cleans)]
    if not touched:
        return []
    dropped = dropped_partitions(snap.timeline, window, cleans)
    return incremental_events(run.layout, catalog, touched, dropped)


def _apply(run: _Run, table: TableDef, events: list[PartitionEvent], report: TableReport) -> None:
    """HiveSyncTool.syncPartitions: add, then update, then drop, hoodie.datasource.hive_sync.batch_num at a
    time."""
    by_type = {t: [e.partition for e in events if e.type is t] for t in EventType}
    report.added, report.updated, report.dropped = by_type[EventType.ADD], by_type[EventType.UPDATE], \
        by_type[EventType.DROP]
    if run.explain:
        return
    calls: list[tuple[str, Callable[[Sequence[PartitionDef]], None]]] = [
        ("adding", lambda b: run.client.add_partitions(table, b)),
        ("updating", lambda b: run.client.update_partitions(table, b)),
        ("dropping", lambda b: run.client.drop_partitions(table, [p.values for p in b])),
    ]
    for (verb, call), parts in zip(calls, (report.added, report.updated, report.dropped)):
        _batched(run, table.name, verb, parts, call)


def _batched(run: _Run, name: str, verb: str, parts: list[PartitionDef],
             call: Callable[[Sequence[PartitionDef]], None]) -> None:
    size = run.cfg.options.batch_num
    for start in range(0, len(parts), size):
        batch = parts[start:start + size]
        run.progress(f"{name}: {verb} partitions {start + 1}-{start + len(batch)} of {len(parts)}")
        call(batch)


def _write_point(run: _Run, table: TableDef, report: TableReport) -> None:
    """updateLastCommitTimeSynced, unless conditional sync found nothing changed. Never moves the point back
    over a commit that exists: such a point was written by a syncer that saw more (the run then goes again)."""
    snap = run.snap
    if snap.last is None or (run.cfg.options.conditional_sync and not report.changed):
        return
    if run.explain:
        report.sync_point = snap.last
        return
    current = run.client.get_table(table.database, table.name)
    if current is None:
        raise MetaSyncError(f"table {table.database}.{table.name} disappeared during the sync")
    found = current.parameters.get(LAST_COMMIT_TIME_SYNC)
    if found is not None and found > snap.last and found in snap.reloaded_commits():
        report.behind = True  # another syncer saw a later commit: this run's changes may be stale; it runs again
        return  # (a point naming a commit no longer on the timeline -- rolled back, restored -- is replaced)
    run.client.update_table(with_sync_point(run.cfg, current, snap.last, snap.last_completion))
    report.sync_point = snap.last
