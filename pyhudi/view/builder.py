"""Build a FileSystemView with pending compactions and clusterings read from their plans.

Kept apart from the view itself so the view stays a pure function of
(listing, timeline, pending plans) and tests can construct it directly.
"""

from __future__ import annotations

import logging

from pyhudi.errors import HudiError, InstantNotFoundError
from pyhudi.model import avro_models as am
from pyhudi.model.table_config import TableConfig
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action, Instant
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.file_system_view import FileSystemView, PendingCompaction
from pyhudi.view.partitions import PartitionFilter

log = logging.getLogger(__name__)


AUX_DIR = ".hoodie/.aux"


def compaction_plan_bytes(timeline: ActiveTimeline, inst: Instant) -> bytes:
    """The plan in `<ts>.compaction.requested` of the timeline folder, where Hudi reads it; tables of version
    4/5 (Hudi 0.11-0.13) also kept a copy in `.hoodie/.aux`, which those versions read first, so an empty
    timeline copy falls back to it (layout 1 only: a layout-2 table never had one)."""
    try:
        data = timeline.requested_details(inst)
    except InstantNotFoundError:
        data = b""
    if data or inst.action is not Action.COMPACTION or timeline.layout.is_v2:
        return data
    try:
        return timeline.storage.read_bytes(f"{AUX_DIR}/{inst.timestamp}.{Action.COMPACTION.value}.requested")
    except FileNotFoundError:
        return data


def pending_compactions(timeline: ActiveTimeline) -> list[PendingCompaction]:
    out: list[PendingCompaction] = []
    for inst in timeline.actions(Action.COMPACTION, Action.LOG_COMPACTION).pending():
        try:
            plan = am.read_instant_avro(compaction_plan_bytes(timeline, inst))
        except HudiError as exc:
            log.warning("cannot read compaction plan %s: %s", inst, exc)
            continue
        for op in plan.get("operations") or []:
            out.append(PendingCompaction(inst.timestamp, str(op.get("partitionPath") or ""), str(op["fileId"])))
    return out


def pending_clustering(timeline: ActiveTimeline) -> dict[tuple[str, str], str]:
    """(partition, fileId) -> instant of every file group in a pending clustering plan: a pending
    `clustering` (layout 2) or a replacecommit whose requested file holds a plan (layout 1, or pending since
    before an upgrade)."""
    out: dict[tuple[str, str], str] = {}
    for inst in timeline.actions(Action.REPLACE_COMMIT, Action.CLUSTERING).pending():
        try:
            meta = am.read_instant_avro(timeline.requested_details(inst))
        except HudiError:
            continue
        plan = meta.get("clusteringPlan")
        if not plan:
            continue
        for group in plan.get("inputGroups") or []:
            for sl in group.get("slices") or []:
                out[(str(sl.get("partitionPath") or ""), str(sl["fileId"]))] = inst.timestamp
    return out


def pending_clustering_files(timeline: ActiveTimeline) -> set[str]:
    """File names (base and log) that pending clustering plans will read."""
    out: set[str] = set()
    for inst in timeline.actions(Action.REPLACE_COMMIT, Action.CLUSTERING).pending():
        try:
            meta = am.read_instant_avro(timeline.requested_details(inst))
        except HudiError:
            continue
        for group in (meta.get("clusteringPlan") or {}).get("inputGroups") or []:
            for sl in group.get("slices") or []:
                for path in [sl.get("dataFilePath") or "", *(sl.get("deltaFilePaths") or [])]:
                    if path:
                        out.add(str(path).rsplit("/", 1)[-1])
    return out


def build_view(storage: Storage, config: TableConfig, timeline: ActiveTimeline,
               partition_filter: PartitionFilter | None = None) -> FileSystemView:
    return FileSystemView(storage, config, timeline, pending_compactions=pending_compactions(timeline),
                          pending_clustering=pending_clustering(timeline), partition_filter=partition_filter)
