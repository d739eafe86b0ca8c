"""`hoodie.properties`: the table's identity, parsed into a typed value.

Table versions 4-6 with timeline layout 1 are read (versions 4 and 5 are upgraded
to 6 by the first write: model/upgrade.py), and so are versions 8 and 9 (Hudi 1.0 /
1.1+) with timeline layout 2; pyhudi writes 6, 8 and 9 (table_features.WRITTEN_VERSIONS),
creating a table at 8 or 9 with the keys Hudi 1.0.2 / 1.1 record (`new_table_config`).
Version-6 tables written by Hudi 1.x (layout 1 plus 1.x keys) are version-6 tables.
Anything else (7, 10 and later, a layout that does not go with the version) is refused
up front with a message rather than misread later.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field, replace

from pyhudi.errors import CorruptFileError, TableNotFoundError, UnsupportedTableError
from pyhudi.model.metadata_table import remember_listing, remember_properties
from pyhudi.model.properties import format_properties, parse_properties
from pyhudi.model.table_features import (
    KEYGEN_TYPES,
    check_readable,
    keygen_class_of,
    on_disk_features,
    ordering_fields_of,
)
from pyhudi.storage import Storage

META_DIR = ".hoodie"
PROPERTIES_FILE = ".hoodie/hoodie.properties"
COW = "COPY_ON_WRITE"
MOR = "MERGE_ON_READ"
SIMPLE_KEYGEN = "org.apache.hudi.keygen.SimpleKeyGenerator"
COMPLEX_KEYGEN = "org.apache.hudi.keygen.ComplexKeyGenerator"
NONPARTITIONED_KEYGEN = "org.apache.hudi.keygen.NonpartitionedKeyGenerator"
TIMESTAMP_KEYGENS = frozenset({"org.apache.hudi.keygen.TimestampBasedKeyGenerator",
                               "org.apache.hudi.keygen.TimestampBasedAvroKeyGenerator"})
CUSTOM_KEYGENS = frozenset({"org.apache.hudi.keygen.CustomKeyGenerator",
                            "org.apache.hudi.keygen.CustomAvroKeyGenerator"})
# Key-generator settings that are options, not table identity (hoodie.keygen.timebased.*, old names too).
KEYGEN_OPTION_PREFIXES = ("hoodie.keygen.timebased.", "hoodie.deltastreamer.keygen.timebased.")
PAYLOAD_KEY = "hoodie.compaction.payload.class"
# Where a CustomKeyGenerator's typed partition spec is kept in keygen_options (keygen/spec.py reads it).
PARTITION_SPEC_KEY = "hoodie.datasource.write.partitionpath.field"
OVERWRITE_PAYLOAD = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
DEFAULT_PAYLOAD = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
# Hudi's record merger strategy id written beside the payload class on MOR tables.
DEFAULT_MERGER_STRATEGY = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
EMPTY_DIRS = (".hoodie/.temp", ".hoodie/archived", ".hoodie/.aux/.bootstrap/.partitions",
              ".hoodie/.aux/.bootstrap/.fileids", ".hoodie/.schema")
# What Hudi 1.x's HoodieTableMetaClient.createTableLayoutOnStorage creates (layout 2 has no archive folder:
# its archive is the history under the timeline folder, created with it).
EMPTY_DIRS_V2 = (".hoodie/.temp", ".hoodie/.aux/.bootstrap/.partitions", ".hoodie/.aux/.bootstrap/.fileids",
                 ".hoodie/.schema")
# HoodieTableVersion names, which early 1.0 upgrades wrote as hoodie.table.initial.version (`SIX`).
VERSION_NAMES = {"FOUR": 4, "FIVE": 5, "SIX": 6, "SEVEN": 7, "EIGHT": 8, "NINE": 9}


def table_checksum(database: str, table: str) -> int:
    """CRC32 of `<database>.<table>`, as Hudi's HoodieTableConfig computes it."""
    return zlib.crc32(f"{database}.{table}".encode()) & 0xFFFFFFFF


BUCKET_NUM_KEY = "hoodie.bucket.index.num.buckets"


@dataclass(frozen=True)
class TableConfig:
    name: str
    table_type: str = COW
    record_key_fields: tuple[str, ...] = ()
    partition_fields: tuple[str, ...] = ()
    # The first ordering field (Hudi 0.x's single precombine field); `ordering_fields` holds them all.
    precombine_field: str | None = None
    keygen_class: str = SIMPLE_KEYGEN
    hive_style_partitioning: bool = False
    urlencode_partitions: bool = False
    drop_partition_columns: bool = False
    populate_meta_fields: bool = True
    database: str = "default"
    create_schema: str | None = None
    payload_class: str | None = None
    timeline_timezone: str | None = "UTC"
    archive_folder: str = "archived"
    # BUCKET index: the bucket count the table was created with (hoodie.bucket.index.num.buckets, stored
    # in hoodie.properties as Spark SQL's TBLPROPERTIES store it); None when the table does not record it.
    bucket_num: int | None = None
    version: int = 6
    layout_version: int = 1
    base_file_format: str = "PARQUET"
    raw: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    # Features only the table's folders show (model/table_features.on_disk_features), set when loaded.
    features: frozenset[str] = field(default=frozenset(), compare=False, repr=False)
    # Timestamp/custom key generator settings of this write (keygen/timestamp_keygen.py), and for a
    # CustomKeyGenerator the typed partition spec (`f1:SIMPLE,f2:TIMESTAMP`) under the partitionpath key
    # (from hoodie.table.partition.fields when the table stores the types there, as 1.x does).
    keygen_options: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    # The fields an event-time merge compares, in order (hoodie.table.ordering.fields, else
    # hoodie.table.precombine.field); () without any. precombine_field is always the first of them.
    ordering_fields: tuple[str, ...] = ()
    # Timeline layout 2: the timeline and its LSM history under .hoodie (hoodie.timeline.path /
    # hoodie.timeline.history.path); layout 1 keeps instants in .hoodie and the archive in archive_folder.
    timeline_path: str = "timeline"
    history_path: str = "history"
    # hoodie.table.initial.version (1.x): the version the table was created with; None when not recorded.
    initial_version: int | None = None

    def __post_init__(self) -> None:
        """precombine_field and ordering_fields are one setting: either may be given, the other follows."""
        if not self.ordering_fields and self.precombine_field:
            object.__setattr__(self, "ordering_fields", (self.precombine_field,))
        elif self.ordering_fields and self.precombine_field is None:
            object.__setattr__(self, "precombine_field", self.ordering_fields[0])
        elif self.ordering_fields and self.precombine_field != self.ordering_fields[0]:
            raise ValueError(f"precombine_field={self.precombine_field!r} is not the first of ordering_fields="
                             f"{self.ordering_fields!r}")

    @property
    def is_mor(self) -> bool:
        return self.table_type == MOR

    @property
    def is_partitioned(self) -> bool:
        return bool(self.partition_fields) and self.keygen_class != NONPARTITIONED_KEYGEN

    @property
    def local_timezone(self) -> bool:
        """Hudi's default when the key is absent is LOCAL; pyhudi always writes UTC explicitly."""
        return (self.timeline_timezone or "LOCAL").upper() == "LOCAL"

    @property
    def timeline_dir(self) -> str:
        """Where instant files are: `.hoodie` (layout 1), `.hoodie/<hoodie.timeline.path>` (layout 2)."""
        return META_DIR if self.layout_version < 2 else f"{META_DIR}/{self.timeline_path}"

    @property
    def history_dir(self) -> str:
        """Where archived instants are: `.hoodie/<hoodie.archivelog.folder>` (layout 1, Java's
        TimelinePathProviderV1), `.hoodie/<timeline path>/<hoodie.timeline.history.path>` (layout 2)."""
        if self.layout_version < 2:
            return f"{META_DIR}/{self.archive_folder}"
        return f"{self.timeline_dir}/{self.history_path}"

    def to_properties(self) -> dict[str, str]:
        """hoodie.properties of this config: the loaded keys pyhudi does not model kept as they are (a
        1.x table's keep their 1.x names and values), the modeled ones written from the fields."""
        props = dict(self.raw)
        props.update(self._modeled_properties())
        return props

    def _modeled_properties(self) -> dict[str, str]:
        props: dict[str, str] = {}
        props.update(self._ordering_properties())
        props["hoodie.datasource.write.drop.partition.columns"] = str(self.drop_partition_columns).lower()
        if self.partition_fields:
            props["hoodie.table.partition.fields"] = self._partition_property()
        props["hoodie.table.type"] = self.table_type
        props["hoodie.archivelog.folder"] = self.archive_folder
        props["hoodie.timeline.layout.version"] = str(self.layout_version)
        props["hoodie.table.version"] = str(self.version)
        props["hoodie.table.recordkey.fields"] = ",".join(self.record_key_fields)
        props["hoodie.datasource.write.partitionpath.urlencode"] = str(self.urlencode_partitions).lower()
        if self.database or self.version < 8 or "hoodie.database.name" in self.raw:
            props["hoodie.database.name"] = self.database  # 1.1's TableBuilder leaves an empty name out
        props["hoodie.table.name"] = self.name
        props.update(self._keygen_properties())
        props["hoodie.datasource.write.hive_style_partitioning"] = str(self.hive_style_partitioning).lower()
        if self.create_schema:
            props["hoodie.table.create.schema"] = self.create_schema
        if not self.populate_meta_fields:
            props["hoodie.populate.meta.fields"] = "false"
        props.update(self._payload_properties())
        if self.timeline_timezone:
            props["hoodie.table.timeline.timezone"] = self.timeline_timezone
        if self.bucket_num is not None:
            props[BUCKET_NUM_KEY] = str(self.bucket_num)
        if self.layout_version >= 2:
            props["hoodie.timeline.path"] = self.timeline_path
            props["hoodie.timeline.history.path"] = self.history_path
        if self.initial_version is not None:
            props["hoodie.table.initial.version"] = str(self.initial_version)
        props.update(self._persisted_keygen_options())
        props["hoodie.table.checksum"] = str(table_checksum(self.database, self.name))
        return props

    def _ordering_properties(self) -> dict[str, str]:
        """1.1 (version 9) names the ordering fields hoodie.table.ordering.fields; older versions, and a
        table that recorded them under the older key, hoodie.table.precombine.field. A key the table
        recorded is written back even empty; a new one only with fields (TableBuilder.build)."""
        if "hoodie.table.ordering.fields" in self.raw:
            return {"hoodie.table.ordering.fields": ",".join(self.ordering_fields)}
        if not self.ordering_fields:
            return {}
        if self.version >= 9 and "hoodie.table.precombine.field" not in self.raw:
            return {"hoodie.table.ordering.fields": ",".join(self.ordering_fields)}
        return {"hoodie.table.precombine.field": ",".join(self.ordering_fields)}

    def _partition_property(self) -> str:
        """The partition fields; with the types a custom key generator's spec gives them when the table
        stored them there (1.x), so a rewrite keeps `field:TYPE`."""
        stored = self.raw.get("hoodie.table.partition.fields", "")
        if ":" in stored and _bare(stored) == self.partition_fields:
            return stored
        return ",".join(self.partition_fields)

    def _keygen_properties(self) -> dict[str, str]:
        """The key generator as the table names it: a loaded table keeps its class / type keys when they
        still name `keygen_class`; a 1.x table without a class key gets its type."""
        kept = {k: v for k, v in self.raw.items() if k in ("hoodie.table.keygenerator.class",
                                                             "hoodie.table.keygenerator.type")}
        if kept and keygen_class_of(kept) == self.keygen_class:
            return kept
        if self.version >= 8 and "hoodie.table.keygenerator.class" not in self.raw:
            kind = next((k for k, v in KEYGEN_TYPES.items() if v == self.keygen_class), None)
            if kind is not None:
                return {"hoodie.table.keygenerator.type": kind}
        return {"hoodie.table.keygenerator.class": self.keygen_class}

    def _payload_properties(self) -> dict[str, str]:
        """Hudi 0.14 records a MOR table's payload class and its merger strategy; 1.x tables record their
        merge settings themselves (kept from `raw`), so nothing is added to them."""
        if self.version >= 8:
            return {PAYLOAD_KEY: self.payload_class} if self.payload_class else {}
        if self.is_mor or self.payload_class:
            return {PAYLOAD_KEY: self.payload_class or OVERWRITE_PAYLOAD,
                    "hoodie.compaction.record.merger.strategy": DEFAULT_MERGER_STRATEGY}
        return {}

    def _persisted_keygen_options(self) -> dict[str, str]:
        """Hudi's writer stores a TimestampBased(Avro)KeyGenerator table's timebased options in
        hoodie.properties (HoodieTableConfig.PERSISTED_CONFIG_LIST, current key names) and later writes
        default to them; CustomKeyGenerator tables store none."""
        if self.keygen_class not in TIMESTAMP_KEYGENS:
            return {}
        new, old = KEYGEN_OPTION_PREFIXES
        out: dict[str, str] = {}
        for key, value in sorted(self.keygen_options.items(), key=lambda kv: kv[0].startswith(new)):
            if key.startswith(KEYGEN_OPTION_PREFIXES):
                out[new + key.split(".timebased.", 1)[1]] = value  # the current name wins over the old one
        return out

    @classmethod
    def from_properties(cls, props: dict[str, str], where: str = "") -> TableConfig:
        def flag(key: str, default: bool) -> bool:
            return props.get(key, str(default)).strip().lower() == "true"

        def fields(key: str) -> tuple[str, ...]:
            return tuple(f.strip() for f in props.get(key, "").split(",") if f.strip())

        version, layout = _version_and_layout(props, where)
        _check_version(version, layout, where)
        if "hoodie.table.name" not in props or "hoodie.table.type" not in props:
            raise CorruptFileError(f"{where}: hoodie.properties lacks hoodie.table.name or hoodie.table.type")
        table_type = props["hoodie.table.type"].strip().upper()
        table_type = {"COW": COW, "MOR": MOR}.get(table_type, table_type)
        partition_fields = _bare(props.get("hoodie.table.partition.fields", ""))
        keygen = keygen_class_of(props) or _infer_keygen(fields("hoodie.table.recordkey.fields"), partition_fields)
        return cls(
            name=props["hoodie.table.name"],
            table_type=table_type,
            record_key_fields=fields("hoodie.table.recordkey.fields"),
            partition_fields=partition_fields,
            ordering_fields=ordering_fields_of(props),
            keygen_class=keygen,
            hive_style_partitioning=flag("hoodie.datasource.write.hive_style_partitioning", False),
            urlencode_partitions=flag("hoodie.datasource.write.partitionpath.urlencode", False),
            drop_partition_columns=flag("hoodie.datasource.write.drop.partition.columns", False),
            populate_meta_fields=flag("hoodie.populate.meta.fields", True),
            # Java's checksum takes an absent name as empty; 0.x-era pyhudi read it as `default`
            database=props.get("hoodie.database.name", "default" if version < 8 else ""),
            create_schema=props.get("hoodie.table.create.schema"),
            payload_class=props.get(PAYLOAD_KEY),
            timeline_timezone=props.get("hoodie.table.timeline.timezone"),
            archive_folder=props.get("hoodie.archivelog.folder", "archived"),
            bucket_num=_bucket_num(props, where),
            version=version,
            layout_version=layout,
            base_file_format=props.get("hoodie.table.base.file.format", "PARQUET").upper(),
            raw=dict(props),
            keygen_options=_keygen_options(props, keygen),
            timeline_path=_folder(props, "hoodie.timeline.path", "timeline"),
            history_path=_folder(props, "hoodie.timeline.history.path", "history"),
            initial_version=_int(props, "hoodie.table.initial.version", where),
        )

    def evolve(self, **changes: object) -> TableConfig:
        """A copy with `changes`; changing precombine_field or ordering_fields alone changes the other too."""
        if "precombine_field" in changes and "ordering_fields" not in changes:
            first = changes["precombine_field"]
            changes["ordering_fields"] = (first,) if first else ()
        elif "ordering_fields" in changes and "precombine_field" not in changes:
            ordering = changes["ordering_fields"]
            changes["precombine_field"] = ordering[0] if isinstance(ordering, tuple) and ordering else None
        return replace(self, **changes)  # type: ignore[arg-type]


def _bare(partition_fields: str) -> tuple[str, ...]:
    """Partition field names without the `:TYPE` a custom key generator's fields carry in 1.x tables
    (HoodieTableConfig.getPartitionFieldWithoutKeyGenPartitionType)."""
    return tuple(p.split(":")[0].strip() for p in partition_fields.split(",") if p.strip())


def _keygen_options(props: dict[str, str], keygen: str) -> dict[str, str]:
    """The timebased settings the table stores, and a custom key generator's typed partition spec when
    hoodie.table.partition.fields carries the types (1.x: `field:SIMPLE,field:TIMESTAMP`)."""
    options = {k: v for k, v in props.items() if k.startswith(KEYGEN_OPTION_PREFIXES)}
    stored = props.get("hoodie.table.partition.fields", "")
    if keygen in CUSTOM_KEYGENS and ":" in stored:
        options[PARTITION_SPEC_KEY] = ",".join(p.strip() for p in stored.split(",") if p.strip())
    return options


def _folder(props: dict[str, str], key: str, default: str) -> str:
    return (props.get(key) or default).strip().strip("/") or default


def _int(props: dict[str, str], key: str, where: str) -> int | None:
    text = props.get(key, "").strip()
    if not text:
        return None
    if text.upper() in VERSION_NAMES:
        return VERSION_NAMES[text.upper()]
    try:
        return int(text)
    except ValueError as exc:
        raise CorruptFileError(f"{where}: {key}={text!r} is not a number") from exc


def _bucket_num(props: dict[str, str], where: str) -> int | None:
    text = props.get(BUCKET_NUM_KEY, "").strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError as exc:
        raise CorruptFileError(f"{where}: {BUCKET_NUM_KEY}={text!r} is not a number") from exc


READABLE_VERSIONS = (4, 5, 6)
"""Versions 4 (Hudi 0.11) and 5 (0.12/0.13) are read as they are and upgraded to 6 by the first write
(pyhudi/model/upgrade.py), as Hudi 0.14/0.15 do."""
LAYOUT_2_VERSIONS = (8, 9)
"""Versions 8 (Hudi 1.0.x) and 9 (1.1.x, 1.2.x) keep their timeline in layout 2 (HoodieTableVersion)."""


def _version_and_layout(props: dict[str, str], where: str) -> tuple[int, int]:
    """hoodie.table.version (0 when absent) and hoodie.timeline.layout.version: absent means 1 for versions
    4-6 (tables of Hudi 0.11-0.13 may lack it) and 0 otherwise - Hudi 1.x always records it, and its
    meta client refuses a table without one."""
    try:
        version = int(props.get("hoodie.table.version", "0"))
        layout = int(props.get("hoodie.timeline.layout.version", "1" if version in READABLE_VERSIONS else "0"))
    except ValueError as exc:
        raise CorruptFileError(f"{where}: hoodie.table.version or hoodie.timeline.layout.version is not a "
                               f"number") from exc
    return version, layout


def _check_version(version: int, layout: int, where: str) -> None:
    """Refuse what pyhudi cannot read, saying what to do about it."""
    if (version in READABLE_VERSIONS and layout == 1) or (version in LAYOUT_2_VERSIONS and layout == 2):
        return
    if version in LAYOUT_2_VERSIONS or version in READABLE_VERSIONS:
        wanted = 2 if version in LAYOUT_2_VERSIONS else 1
        fix = (f"table version {version} keeps its timeline in layout {wanted}; the properties do not match the "
               "table's timeline: repair hoodie.properties with the Hudi release that wrote it")
        if version in LAYOUT_2_VERSIONS:
            fix = "it was written by Hudi 1.x, whose " + fix
    elif version == 7:
        fix = ("it was written by Hudi 0.16 (a bridge release before Hudi 1.x): upgrade it to version 8 or 9 "
               "with one write by Hudi 1.x, or downgrade it to version 6 with Hudi 1.x's `hudi-cli`")
    elif version >= 10:
        fix = ("it was written by a Hudi release newer than pyhudi knows (Hudi 1.x after 1.2, e.g. native "
               "parquet log files); read it with Apache Hudi, or downgrade it to version 9 with that release's "
               "`hudi-cli`")
    elif version < 4:
        fix = "upgrade it to version 6 by one write with Hudi 0.14/0.15 first"
    else:
        fix = "upgrade it with Hudi 0.14/0.15 first"
    raise UnsupportedTableError(
        f"{where} is a Hudi table of version {version} (timeline layout {layout}: hoodie.table.version={version}, "
        f"hoodie.timeline.layout.version={layout}); pyhudi reads table versions 4-6 with timeline layout 1 and "
        f"8-9 with timeline layout 2, and writes version 6 (Hudi 0.14/0.15): {fix}"
    )


def _infer_keygen(record_keys: tuple[str, ...], partitions: tuple[str, ...]) -> str:
    """Hudi's inference when no key generator is named."""
    if not partitions:
        return NONPARTITIONED_KEYGEN
    if len(record_keys) <= 1 and len(partitions) == 1:
        return SIMPLE_KEYGEN
    return COMPLEX_KEYGEN


def infer_keygen(record_keys: tuple[str, ...], partitions: tuple[str, ...]) -> str:
    return _infer_keygen(record_keys, partitions)


def load_table_config(storage: Storage) -> TableConfig:
    try:
        text = storage.read_bytes(PROPERTIES_FILE).decode("utf-8")
    except FileNotFoundError as exc:
        raise TableNotFoundError(
            f"{storage.base_uri} is not a Hudi table: {PROPERTIES_FILE} does not exist. Check the path, or "
            "write to it first with pyhudi.write(df, path, options)"
        ) from exc
    props = parse_properties(text)
    config = TableConfig.from_properties(props, where=storage.base_uri)
    remember_properties(storage, props)  # each completion's metadata-table check starts from these
    # Every read, write, service and CLI command loads the table here: refuse features pyhudi would
    # misread (model/table_features.py); writes check more in writer/config.build_write_config.
    check_readable(config, storage)
    return config.evolve(features=_features(storage, props))


def _features(storage: Storage, props: dict[str, str]) -> frozenset[str]:
    """`on_disk_features`, on layout 1 from one listing of `.hoodie` (the timeline folder): its
    sub-folders show whether `.bucket_index` exists at all, and the write that loads its timeline next
    reuses the listing (timeline.ActiveTimeline.load's `reuse_listing`), so the check costs no request of
    its own; only a table with a `.bucket_index` folder has it listed too."""
    from pyhudi.timeline.layout import META_DIR, TimelineLayout

    if TimelineLayout.of(props).timeline_dir != META_DIR:
        return on_disk_features(storage)
    listing = storage.list_dir(META_DIR)
    remember_listing(storage, listing)
    if not any(i.is_dir and i.name == ".bucket_index" for i in listing):
        return frozenset()
    return on_disk_features(storage)


def save_table_config(storage: Storage, config: TableConfig) -> None:
    """Create the table's folders, then publish `hoodie.properties` atomically (its presence is the table)."""
    for rel in table_dirs(config):
        storage.makedirs(rel)
    props = config.to_properties()
    text = format_properties(props, comments=["Updated at " + _iso_now()])
    storage.write_atomic(PROPERTIES_FILE, text.encode("utf-8"))
    remember_properties(storage, props)


def _iso_now() -> str:
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


def table_dirs(config: TableConfig) -> tuple[str, ...]:
    """The folders a new table of `config`'s layout starts with, as the Hudi release of its version makes
    them (layout 2: the timeline folder and its history too)."""
    if config.layout_version < 2:
        return EMPTY_DIRS
    return (*EMPTY_DIRS_V2, config.timeline_dir, config.history_dir)


def new_table_config(draft: TableConfig, merge_props: dict[str, str], where: str = "") -> TableConfig:
    """A table config to create at version 8 or 9 (`draft.version`): `draft`'s identity with the merge
    settings Hudi records (`merge_props`, from table_features.creation_merge_properties), written as
    `hoodie.properties` would be and parsed back, so every check sees the table as it will be on disk."""
    first = draft.evolve(layout_version=2, initial_version=draft.version, raw=dict(merge_props))
    loaded = TableConfig.from_properties(first.to_properties(), where=where or draft.name)
    merged = dict(loaded.keygen_options)
    merged.update(draft.keygen_options)
    return loaded.evolve(keygen_options=merged)
