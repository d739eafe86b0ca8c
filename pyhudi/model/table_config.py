"""`hoodie.properties`: the table's identity, parsed into a typed value.

Table versions 4-6 with timeline layout 1 are read (versions 4 and 5 are upgraded
to 6, the format every piece of pyhudi writes, by the first write: model/upgrade.py);
anything else is refused up front with a message rather than misread later.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field, replace

from pyhudi.errors import CorruptFileError, TableNotFoundError, UnsupportedTableError
from pyhudi.model.metadata_table import remember_properties
from pyhudi.model.properties import format_properties, parse_properties
from pyhudi.model.table_features import check_readable, on_disk_features
from pyhudi.storage import Storage

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
OVERWRITE_PAYLOAD = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
DEFAULT_PAYLOAD = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
# Hudi's record merger strategy id written beside the payload class on MOR tables.
DEFAULT_MERGER_STRATEGY = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
EMPTY_DIRS = (".hoodie/.temp", ".hoodie/archived", ".hoodie/.aux/.bootstrap/.partitions",
              ".hoodie/.aux/.bootstrap/.fileids", ".hoodie/.schema")


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
    # CustomKeyGenerator the typed partition spec (`f1:SIMPLE,f2:TIMESTAMP`) under the partitionpath key.
    keygen_options: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

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

    def to_properties(self) -> dict[str, str]:
        props: dict[str, str] = {}
        if self.precombine_field:
            props["hoodie.table.precombine.field"] = self.precombine_field
        props["hoodie.datasource.write.drop.partition.columns"] = str(self.drop_partition_columns).lower()
        if self.partition_fields:
            props["hoodie.table.partition.fields"] = ",".join(self.partition_fields)
        props["hoodie.table.type"] = self.table_type
        props["hoodie.archivelog.folder"] = self.archive_folder
        props["hoodie.timeline.layout.version"] = str(self.layout_version)
        props["hoodie.table.version"] = str(self.version)
        props["hoodie.table.recordkey.fields"] = ",".join(self.record_key_fields)
        props["hoodie.datasource.write.partitionpath.urlencode"] = str(self.urlencode_partitions).lower()
        props["hoodie.database.name"] = self.database
        props["hoodie.table.name"] = self.name
        props["hoodie.table.keygenerator.class"] = self.keygen_class
        props["hoodie.datasource.write.hive_style_partitioning"] = str(self.hive_style_partitioning).lower()
        if self.create_schema:
            props["hoodie.table.create.schema"] = self.create_schema
        if not self.populate_meta_fields:
            props["hoodie.populate.meta.fields"] = "false"
        if self.is_mor or self.payload_class:
            props["hoodie.compaction.payload.class"] = self.payload_class or OVERWRITE_PAYLOAD
            props["hoodie.compaction.record.merger.strategy"] = DEFAULT_MERGER_STRATEGY
        if self.timeline_timezone:
            props["hoodie.table.timeline.timezone"] = self.timeline_timezone
        if self.bucket_num is not None:
            props[BUCKET_NUM_KEY] = str(self.bucket_num)
        props.update(self._persisted_keygen_options())
        props["hoodie.table.checksum"] = str(table_checksum(self.database, self.name))
        return props

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

        try:
            version = int(props.get("hoodie.table.version", "0"))
            layout = int(props.get("hoodie.timeline.layout.version", "1" if version in READABLE_VERSIONS else "0"))
        except ValueError as exc:
            raise CorruptFileError(f"{where}: hoodie.table.version is not a number") from exc
        _check_version(version, layout, where)
        if "hoodie.table.name" not in props or "hoodie.table.type" not in props:
            raise CorruptFileError(f"{where}: hoodie.properties lacks hoodie.table.name or hoodie.table.type")
        table_type = props["hoodie.table.type"].strip().upper()
        table_type = {"COW": COW, "MOR": MOR}.get(table_type, table_type)
        partition_fields = tuple(p.split(":")[0] for p in fields("hoodie.table.partition.fields"))
        keygen = props.get("hoodie.table.keygenerator.class") or _keygen_of_type(props) or _infer_keygen(
            fields("hoodie.table.recordkey.fields"), partition_fields)
        return cls(
            name=props["hoodie.table.name"],
            table_type=table_type,
            record_key_fields=fields("hoodie.table.recordkey.fields"),
            partition_fields=partition_fields,
            precombine_field=props.get("hoodie.table.precombine.field") or None,
            keygen_class=keygen,
            hive_style_partitioning=flag("hoodie.datasource.write.hive_style_partitioning", False),
            urlencode_partitions=flag("hoodie.datasource.write.partitionpath.urlencode", False),
            drop_partition_columns=flag("hoodie.datasource.write.drop.partition.columns", False),
            populate_meta_fields=flag("hoodie.populate.meta.fields", True),
            database=props.get("hoodie.database.name", "default"),
            create_schema=props.get("hoodie.table.create.schema"),
            payload_class=props.get("hoodie.compaction.payload.class"),
            timeline_timezone=props.get("hoodie.table.timeline.timezone"),
            archive_folder=props.get("hoodie.archivelog.folder", "archived"),
            bucket_num=_bucket_num(props, where),
            version=version,
            layout_version=layout,
            base_file_format=props.get("hoodie.table.base.file.format", "PARQUET").upper(),
            raw=dict(props),
            keygen_options={k: v for k, v in props.items() if k.startswith(KEYGEN_OPTION_PREFIXES)},
        )

    def evolve(self, **changes: object) -> TableConfig:
        return replace(self, **changes)  # type: ignore[arg-type]


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


def _check_version(version: int, layout: int, where: str) -> None:
    """Refuse what pyhudi cannot read, saying what to do about it."""
    if version in READABLE_VERSIONS and layout == 1:
        return
    if version > 6:
        fix = ("it was written by Hudi 1.x (table versions 7-9); downgrade it to version 6 with Hudi 1.x's "
               "`hudi-cli table downgrade`, or write it with hoodie.write.table.version=6 from the start")
    elif version < 4:
        fix = "upgrade it to version 6 by one write with Hudi 0.14/0.15 first"
    else:
        fix = "upgrade it with Hudi 0.14/0.15 first"
    raise UnsupportedTableError(
        f"{where} is a Hudi table of version {version} (timeline layout {layout}: hoodie.table.version={version}, "
        f"hoodie.timeline.layout.version={layout}); pyhudi reads table versions 4-6 with timeline layout 1 and "
        f"writes version 6 (Hudi 0.14/0.15): {fix}"
    )


def _keygen_of_type(props: dict[str, str]) -> str | None:
    """Hudi 1.x may name the key generator by type only (hoodie.table.keygenerator.type); table_features
    refuses a type it does not map."""
    from pyhudi.model.table_features import KEYGEN_TYPES

    return KEYGEN_TYPES.get(props.get("hoodie.table.keygenerator.type", "").strip().upper())


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
    return config.evolve(features=on_disk_features(storage))


def save_table_config(storage: Storage, config: TableConfig) -> None:
    """Create the table's folders, then publish `hoodie.properties` atomically (its presence is the table)."""
    for rel in EMPTY_DIRS:
        storage.makedirs(rel)
    props = config.to_properties()
    text = format_properties(props, comments=["Updated at " + _iso_now()])
    storage.write_atomic(PROPERTIES_FILE, text.encode("utf-8"))
    remember_properties(storage, props)


def _iso_now() -> str:
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")
