"""Issue 16, item 7: every table feature pyhudi does not implement is refused by name, on read and write.

Each case is a hoodie.properties (a Hudi 0.14 table's, plus the feature) loaded through
`load_table_config` (the read path of every entry point) and, for write-only features, passed to
`build_write_config` (the write path of every write and table service).
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from pyhudi.config.registry import Options
from pyhudi.errors import UnsupportedTableError
from pyhudi.io.log_blocks import (
    CONTENT_VERSION,
    avro_block_to_arrow,
    delete_records,
    encode_avro_data_block,
    encode_delete_block,
)
from pyhudi.io.log_format import read_valid_blocks
from pyhudi.model.properties import format_properties
from pyhudi.model.table_config import TableConfig, load_table_config
from pyhudi.model.table_features import CONSISTENT_HASHING_DIR, KNOWN_TABLE_PROPERTIES
from pyhudi.storage import Storage
from pyhudi.writer.config import build_write_config
from pyhudi.writer.operation import WriteOperation
from tests.unit._samples import extract_sample, sample_names

BASE = {
    "hoodie.table.name": "t", "hoodie.table.type": "COPY_ON_WRITE", "hoodie.table.version": "6",
    "hoodie.timeline.layout.version": "1", "hoodie.table.recordkey.fields": "id",
    "hoodie.table.partition.fields": "p", "hoodie.table.precombine.field": "ts",
    "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
    "hoodie.archivelog.folder": "archived", "hoodie.database.name": "default",
    "hoodie.datasource.write.drop.partition.columns": "false",
    "hoodie.datasource.write.hive_style_partitioning": "false",
    "hoodie.datasource.write.partitionpath.urlencode": "false", "hoodie.table.checksum": "1",
}
MOR = {"hoodie.table.type": "MERGE_ON_READ"}

# (case id, extra properties, words the error must hold: the feature and the property)
READ_REFUSED = [
    ("bootstrap", {"hoodie.bootstrap.base.path": "/src/data"}, ["bootstrapped", "hoodie.bootstrap.base.path"]),
    ("orc", {"hoodie.table.base.file.format": "ORC"}, ["ORC base files", "hoodie.table.base.file.format"]),
    ("hfile", {"hoodie.table.base.file.format": "HFILE"}, ["HFILE base files", "hoodie.table.base.file.format"]),
    ("log_format", {"hoodie.table.log.file.format": "PARQUET"}, ["log files", "hoodie.table.log.file.format"]),
    ("metafile_base_format", {"hoodie.partition.metafile.use.base.format": "true"},
     ["partition metadata files", "hoodie.partition.metafile.use.base.format"]),
    ("drop_partition_columns", {"hoodie.datasource.write.drop.partition.columns": "true"},
     ["partition columns", "hoodie.datasource.write.drop.partition.columns"]),
    ("payload_mor", {**MOR, "hoodie.compaction.payload.class": "org.apache.hudi.common.model.PartialUpdateAvroPayload"},
     ["payload class", "hoodie.compaction.payload.class"]),
    ("merger_strategy_mor", {**MOR, "hoodie.compaction.record.merger.strategy": "ce9acb64-bde0-424c-9b91-f6ebba25356d"},
     ["merger strategy", "hoodie.compaction.record.merger.strategy"]),
    ("merge_mode_custom_mor", {**MOR, "hoodie.record.merge.mode": "CUSTOM"}, ["merge mode", "hoodie.record.merge.mode"]),
    ("keygen", {"hoodie.table.keygenerator.class": "com.example.MyKeyGenerator"},
     ["key generator", "hoodie.table.keygenerator.class"]),
    ("unknown_table_property", {"hoodie.table.storage.layout": "native"},
     ["unknown table property", "hoodie.table.storage.layout"]),
    ("timeline_layout_0", {"hoodie.timeline.layout.version": "0"}, ["timeline layout 0", "hoodie.timeline.layout.version=0"]),
]

# Readable (the table's files are read right), but a pyhudi write would break the table.
WRITE_REFUSED = [
    ("cdc", {"hoodie.table.cdc.enabled": "true"}, {}, ["change data capture", "hoodie.table.cdc.enabled=true"]),
    ("cdc_option", {}, {"hoodie.table.cdc.enabled": "true"}, ["change data capture", "option hoodie.table.cdc.enabled"]),
    ("record_index", {}, {"hoodie.index.type": "RECORD_INDEX"}, ["record-level index", "hoodie.index.type=RECORD_INDEX"]),
    ("hbase_index", {}, {"hoodie.index.type": "HBASE"}, ["HBase index", "hoodie.index.type=HBASE"]),
    ("bootstrap_option", {}, {"hoodie.bootstrap.base.path": "/src"}, ["bootstrapped", "hoodie.bootstrap.base.path"]),
    ("consistent_hashing", {}, {"hoodie.index.type": "BUCKET", "hoodie.index.bucket.engine": "CONSISTENT_HASHING"},
     ["consistent-hashing", "hoodie.index.bucket.engine=CONSISTENT_HASHING"]),
    ("secondary_index", {"hoodie.table.secondary.indexes.metadata": '{"indexes":[]}'}, {},
     ["secondary index", "hoodie.table.secondary.indexes.metadata"]),
    ("payload_cow", {"hoodie.compaction.payload.class": "org.apache.hudi.common.model.EventTimeAvroPayload"}, {},
     ["payload class", "hoodie.compaction.payload.class"]),
    ("merge_mode_mismatch", {"hoodie.compaction.payload.class": "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload",
                             "hoodie.record.merge.mode": "EVENT_TIME_ORDERING"}, {},
     ["merge mode", "hoodie.record.merge.mode"]),
]


def _table(tmp_path: Path, props: dict[str, str]) -> Storage:
    (tmp_path / ".hoodie").mkdir(parents=True, exist_ok=True)
    (tmp_path / ".hoodie" / "hoodie.properties").write_text(format_properties(props))
    return Storage(str(tmp_path))


def _assert_names(exc: pytest.ExceptionInfo[UnsupportedTableError], words: list[str]) -> None:
    for word in words:
        assert word in str(exc.value), (word, str(exc.value))


@pytest.mark.parametrize("case, extra, words", READ_REFUSED, ids=[c[0] for c in READ_REFUSED])
def test_read_refuses_feature(tmp_path: Path, case: str, extra: dict[str, str], words: list[str]) -> None:
    storage = _table(tmp_path, {**BASE, **extra})
    with pytest.raises(UnsupportedTableError) as exc:
        load_table_config(storage)  # every read, write, service and CLI command loads the table here
    _assert_names(exc, words)
    assert str(tmp_path) in str(exc.value)


@pytest.mark.parametrize("case, extra, words", READ_REFUSED[:-1], ids=[c[0] for c in READ_REFUSED[:-1]])
def test_write_refuses_read_feature(case: str, extra: dict[str, str], words: list[str]) -> None:
    """The same properties reaching a write some other way (a config built from properties) are refused too."""
    table = TableConfig.from_properties({**BASE, **extra})
    with pytest.raises(UnsupportedTableError) as exc:
        build_write_config(Options.parse({}), table, WriteOperation.INSERT)
    _assert_names(exc, words)


@pytest.mark.parametrize("case, extra, options, words", WRITE_REFUSED, ids=[c[0] for c in WRITE_REFUSED])
def test_write_refuses_feature_read_keeps_working(tmp_path: Path, case: str, extra: dict[str, str],
                                                  options: dict[str, str], words: list[str]) -> None:
    storage = _table(tmp_path, {**BASE, **extra})
    table = load_table_config(storage)  # readable: its files read right
    for op in (WriteOperation.INSERT, WriteOperation.UPSERT):
        with pytest.raises(UnsupportedTableError) as exc:
            build_write_config(Options.parse(options, warn_unknown=False), table, op)
        _assert_names(exc, words)


def test_consistent_hashing_table_folder_refuses_writes(tmp_path: Path) -> None:
    storage = _table(tmp_path, BASE)
    (tmp_path / CONSISTENT_HASHING_DIR / "p").mkdir(parents=True)
    table = load_table_config(storage)
    with pytest.raises(UnsupportedTableError, match="consistent-hashing bucket index"):
        build_write_config(Options.parse({"hoodie.index.type": "BUCKET"}), table, WriteOperation.UPSERT)
    with pytest.raises(UnsupportedTableError, match="consistent-hashing bucket index"):
        build_write_config(Options.parse({}), table, WriteOperation.INSERT)  # table services too


@pytest.mark.parametrize("index", ["SIMPLE", "BLOOM", "BUCKET", "INMEMORY", "GLOBAL_SIMPLE"])
def test_virtual_keys_refuse_updates_with_any_index(index: str) -> None:
    """pyhudi writes virtual-key tables as Hudi does (null meta columns but the file name; insert and
    bulk_insert), but an update or delete must find stored records by _hoodie_record_key, which such files
    lack: refused whatever the index (BUCKET and INMEMORY were let through before)."""
    table = TableConfig.from_properties({**BASE, "hoodie.populate.meta.fields": "false"})
    opts = Options.parse({"hoodie.index.type": index})
    build_write_config(opts, table, WriteOperation.INSERT)
    build_write_config(opts, table, WriteOperation.BULK_INSERT)
    for op in (WriteOperation.UPSERT, WriteOperation.DELETE):
        with pytest.raises(UnsupportedTableError, match="virtual keys.*hoodie.populate.meta.fields=false"):
            build_write_config(opts, table, op)
    # an insert that must not duplicate stored keys matches them by _hoodie_record_key too (null here)
    no_dups = Options.parse({"hoodie.index.type": index, "hoodie.merge.allow.duplicate.on.inserts": "false"})
    with pytest.raises(UnsupportedTableError, match="hoodie.populate.meta.fields=false"):
        build_write_config(no_dups, table, WriteOperation.INSERT)
    build_write_config(no_dups, table, WriteOperation.BULK_INSERT)


@pytest.mark.parametrize("name", sample_names())
def test_every_sample_table_passes(tmp_path: Path, name: str) -> None:
    root = extract_sample(name, tmp_path)
    table = load_table_config(Storage(str(root)))
    assert not table.features
    assert {k for k in table.raw if k.startswith("hoodie.table.")} <= KNOWN_TABLE_PROPERTIES
    build_write_config(Options.parse({"hoodie.datasource.write.operation": "insert"}), table)


def test_harmless_properties_are_allowed(tmp_path: Path) -> None:
    """Properties Hudi 0.14 writes that change nothing pyhudi reads (metadata table partitions, timezone,
    CDC on read, explicit PARQUET / HOODIE_LOG formats, the default merger strategy) keep tables readable."""
    storage = _table(tmp_path, {
        **BASE, **MOR, "hoodie.table.metadata.partitions": "files,record_index",
        "hoodie.table.metadata.partitions.inflight": "", "hoodie.table.timeline.timezone": "UTC",
        "hoodie.table.base.file.format": "PARQUET", "hoodie.table.log.file.format": "HOODIE_LOG",
        "hoodie.table.cdc.enabled": "true", "hoodie.table.cdc.supplemental.logging.mode": "data_before_after",
        "hoodie.compaction.payload.class": "org.apache.hudi.common.model.DefaultHoodieRecordPayload",
        "hoodie.compaction.record.merger.strategy": "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5",
        "hoodie.populate.meta.fields": "false", "hoodie.bootstrap.index.enable": "true",
    })
    assert load_table_config(storage).is_mor


def test_cow_payload_class_is_read_but_not_written(tmp_path: Path) -> None:
    """A COW table's files are merged already: its payload class changes no read, only writes."""
    storage = _table(tmp_path, {**BASE, "hoodie.compaction.payload.class": "com.example.Payload"})
    table = load_table_config(storage)
    with pytest.raises(UnsupportedTableError, match="hoodie.compaction.payload.class"):
        build_write_config(Options.parse({}), table, WriteOperation.INSERT)


def _avro_block(version: int) -> bytes:
    import pyarrow as pa

    schema = '{"type":"record","name":"r","fields":[{"name":"id","type":"string"}]}'
    data = encode_avro_data_block(pa.table({"id": ["a"]}), schema, "20240101000000000")
    # the content's first int32 is its version; find it after the header by its unique value
    blob = bytearray(data)
    at = blob.index(struct.pack(">ii", CONTENT_VERSION, 1))
    blob[at:at + 4] = struct.pack(">i", version)
    return bytes(blob)


def test_newer_avro_content_version_is_refused_naming_the_file() -> None:
    (ok,) = read_valid_blocks(_avro_block(CONTENT_VERSION))
    assert avro_block_to_arrow(ok).num_rows == 1
    (block,) = read_valid_blocks(_avro_block(CONTENT_VERSION + 1))
    from dataclasses import replace

    with pytest.raises(UnsupportedTableError, match=r"p/\.f_1\.log\.1_0-1-1: the Avro data block at offset 0 "
                                                    r"has content version 4"):
        avro_block_to_arrow(replace(block, source="p/.f_1.log.1_0-1-1"))


def test_newer_delete_block_version_is_refused_naming_the_file() -> None:
    from dataclasses import replace

    data = bytearray(encode_delete_block([("k", "p", None)], "20240101000000000"))
    at = data.index(struct.pack(">i", CONTENT_VERSION))
    (block,) = read_valid_blocks(bytes(data))
    content = bytearray(block.content)
    content[0:4] = struct.pack(">i", CONTENT_VERSION + 1)
    newer = replace(block, content=bytes(content), source="p/.f_1.log.1_0-1-1")
    assert at > 0
    with pytest.raises(UnsupportedTableError, match=r"p/\.f_1\.log\.1_0-1-1.*content version 4"):
        delete_records(newer)


def test_keygenerator_type_names_the_key_generator(tmp_path: Path) -> None:
    """Hudi 1.x's hoodie.table.keygenerator.type: mapped when it is the only name, checked against the class
    when both are set, refused when pyhudi does not know it."""
    props = {k: v for k, v in BASE.items() if k != "hoodie.table.keygenerator.class"}
    cfg = load_table_config(_table(tmp_path / "a", {**props, "hoodie.table.keygenerator.type": "complex"}))
    assert cfg.keygen_class == "org.apache.hudi.keygen.ComplexKeyGenerator"
    with pytest.raises(UnsupportedTableError, match="hoodie.table.keygenerator.type=USER_PROVIDED"):
        load_table_config(_table(tmp_path / "b", {**props, "hoodie.table.keygenerator.type": "USER_PROVIDED"}))
    with pytest.raises(UnsupportedTableError, match="hoodie.table.keygenerator.type=SIMPLE"):
        load_table_config(_table(tmp_path / "c", {**props, "hoodie.table.keygenerator.type": "SIMPLE",
                                                  "hoodie.table.keygenerator.class":
                                                      "org.apache.hudi.keygen.ComplexKeyGenerator"}))
