"""Where a table keeps its timeline: timeline layout 1 (table versions 4-6) or 2 (versions 8 and 9).

Layout 1 keeps instant files in `.hoodie/` and the archive in `.hoodie/archived/`. Layout 2 (Hudi 1.x)
keeps them in `.hoodie/<hoodie.timeline.path>/` (default `timeline`), names a completed instant
`<requested>_<completion>.<action>`, and keeps the archive as an LSM history in
`<timeline>/<hoodie.timeline.history.path>/` (default `history`).

The layout is a property of the table (`hoodie.timeline.layout.version`), so it is taken from the
`hoodie.properties` the current operation loaded (`model/metadata_table.loaded_properties`). A caller
that loads a timeline without having loaded the table config gets it checked against the `.hoodie`
listing: unless instant files and no `timeline` folder are there, the properties are read before anything
is trusted, so a version-8 table is never read as an empty (or stale) version-6 timeline.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyhudi.model.metadata_table import PROPERTIES_FILE, loaded_properties
from pyhudi.model.properties import parse_properties
from pyhudi.storage import FileInfo, Storage
from pyhudi.timeline.instant import parse_instant_file

META_DIR = ".hoodie"


@dataclass(frozen=True)
class TimelineLayout:
    version: int
    timeline_dir: str
    history_dir: str
    local_timezone: bool

    @property
    def is_v2(self) -> bool:
        return self.version >= 2

    @classmethod
    def of(cls, props: dict[str, str] | None) -> TimelineLayout:
        props = props or {}
        local = (props.get("hoodie.table.timeline.timezone") or "LOCAL").strip().upper() == "LOCAL"
        try:
            version = int(props.get("hoodie.timeline.layout.version", "1").strip() or "1")
        except ValueError:
            version = 1  # table_config refuses a table with a malformed layout before any read
        if version < 2:
            return cls(1, META_DIR, f"{META_DIR}/{props.get('hoodie.archivelog.folder') or 'archived'}", local)
        timeline = (props.get("hoodie.timeline.path") or "timeline").strip().strip("/")
        history = (props.get("hoodie.timeline.history.path") or "history").strip().strip("/")
        return cls(version, f"{META_DIR}/{timeline}", f"{META_DIR}/{timeline}/{history}", local)


LAYOUT_1 = TimelineLayout.of(None)


def layout_of(storage: Storage, meta_listing: list[FileInfo] | None = None) -> TimelineLayout:
    """The table's timeline layout, from the properties this operation loaded; without them, layout 1 when
    `meta_listing` (the `.hoodie` listing) holds instant files and no `timeline` folder, else from
    `hoodie.properties`."""
    props = loaded_properties(storage)
    if props is not None:
        return TimelineLayout.of(props)
    if meta_listing is not None and not any(i.is_dir and i.name == "timeline" for i in meta_listing) \
            and any(parse_instant_file(i.name) for i in meta_listing if not i.is_dir):
        # Instants in .hoodie itself and no layout-2 folder: layout 1. With both, an upgrade to 1.x flipped
        # the properties and its cleanup of the old instants was cut short: the properties decide.
        return LAYOUT_1
    try:
        return TimelineLayout.of(parse_properties(storage.read_bytes(PROPERTIES_FILE).decode("utf-8")))
    except FileNotFoundError:
        return LAYOUT_1
