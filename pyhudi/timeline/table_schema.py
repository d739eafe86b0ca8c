"""The table's schema as of an instant, from the timeline: what writers evolve from, services rewrite
with, and readers read with."""

from __future__ import annotations

from typing import Any

from pyhudi.io import schema as S
from pyhudi.model.table_config import TableConfig
from pyhudi.timeline.instant import WRITE_ACTIONS, Action, Instant
from pyhudi.timeline.timeline import ActiveTimeline


def table_schema(timeline: ActiveTimeline, config: TableConfig, as_of: str | None = None) -> dict[str, Any] | None:
    """The table's Avro schema (no meta fields) as of `as_of` (default: now): the newest completed write's at
    or before it, else the create schema."""
    writes = timeline.completed().actions(*WRITE_ACTIONS, Action.COMMIT)
    for inst in reversed(writes.instants):
        if as_of is not None and inst.timestamp > as_of:
            continue
        schema = _schema_of(timeline, inst)
        if schema:
            return S.without_meta_fields(S.from_json(schema))
    if config.create_schema:
        return S.without_meta_fields(S.from_json(config.create_schema))
    return None


def _schema_of(timeline: ActiveTimeline, inst: Instant) -> str | None:
    """A commit's writer schema, decoded from its extraMetadata alone where the commit is JSON (layout 1;
    `top_level`): the write stats before it grow with the partitions the commit wrote, and every write asks
    for the schema (300 stats: ~3 ms to build them all). Otherwise, or when that value is not a text, from
    the parsed commit. Layout 2's Avro commits are not searched: their strings are not escaped."""
    if not timeline.layout.is_v2:
        extra = timeline.top_level(inst, "extraMetadata", dict)
        if extra is not None and isinstance(extra.get("schema"), str):
            return extra["schema"] or None
    return timeline.commit_metadata(inst).schema
