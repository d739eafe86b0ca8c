"""The table's schema as of an instant, from the timeline: what writers evolve from, services rewrite
with, and readers read with."""

from __future__ import annotations

from typing import Any

from pyhudi.io import schema as S
from pyhudi.model.table_config import TableConfig
from pyhudi.timeline.instant import WRITE_ACTIONS, Action
from pyhudi.timeline.timeline import ActiveTimeline


def table_schema(timeline: ActiveTimeline, config: TableConfig, as_of: str | None = None) -> dict[str, Any] | None:
    """The table's Avro schema (no meta fields) as of `as_of` (default: now): the newest completed write's at
    or before it, else the create schema."""
    writes = timeline.completed().actions(*WRITE_ACTIONS, Action.COMMIT)
    for inst in reversed(writes.instants):
        if as_of is not None and inst.timestamp > as_of:
            continue
        meta = timeline.commit_metadata(inst)
        if meta.schema:
            return S.without_meta_fields(S.from_json(meta.schema))
    if config.create_schema:
        return S.without_meta_fields(S.from_json(config.create_schema))
    return None
