"""Tables created at versions 8 and 9, and the write-side merge rules of 1.x tables.

`hoodie.properties` of a new table is compared key by key with the Hudi 1.x samples of the same kind
(tests/fixtures/samples-1x: Hudi 1.0.2 wrote the v8 ones, 1.1.1 the v9 ones), given the write options their
SQL scripts used. The differences allowed are the keys the samples have because of how they were made:
`hoodie.table.create.schema` (Spark SQL's CREATE TABLE records it; the datasource writer does not), the
metadata-table keys (the samples enable it; pyhudi does not), and pyhudi's explicit
`hoodie.table.timeline.timezone=UTC`, as for version 6.
"""

from __future__ import annotations

from typing import Any

import pytest

from pyhudi.config.registry import Options
from pyhudi.errors import InvalidConfigError, UnsupportedTableError
from pyhudi.model.table_config import TableConfig, table_dirs
from pyhudi.model.table_features import check_writable, creation_merge_properties
from pyhudi.writer.config import build_write_config, resolve_table_config
from pyhudi.writer.operation import WriteOperation
from tests.unit.test_table_config_1x import sample_props

EVENT, COMMIT = "EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING"
P = "org.apache.hudi.common.model."
EVENT_ID, COMMIT_ID = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5", "ce9acb64-bde0-424c-9b91-f6ebba25356d"
SQL_ONLY = {"hoodie.table.create.schema"}
MDT_KEYS = {"hoodie.table.metadata.partitions", "hoodie.table.metadata.partitions.inflight",
            "hoodie.table.index.defs.path"}

# sample -> the write options its SQL script amounts to (CREATE TABLE ... TBLPROPERTIES, PARTITIONED BY)
SAMPLE_OPTIONS: dict[str, dict[str, str]] = {
    "cow_v8_nonpartitioned": {"hoodie.table.name": "v8_nonpartitioned", "hoodie.datasource.write.recordkey.field": "id",
                              "hoodie.datasource.write.precombine.field": "longField",
                              "hoodie.datasource.write.hive_style_partitioning": "true"},
    "cow_v8_complexkeygen_hivestyle": {
        "hoodie.table.name": "v8_complexkeygen_hivestyle", "hoodie.datasource.write.recordkey.field": "id,name",
        "hoodie.datasource.write.precombine.field": "longField",
        "hoodie.datasource.write.partitionpath.field": "byteField,shortField",
        "hoodie.datasource.write.hive_style_partitioning": "true"},
    "qs_mor_avro_v8_trips_8i3u1d": {
        "hoodie.table.name": "v8_trips_8i3u1d", "hoodie.datasource.write.recordkey.field": "uuid",
        "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.datasource.write.hive_style_partitioning": "true"},
    "cow_v9_txns_simple_meta": {
        "hoodie.table.name": "v9_txns_cow_simple_meta", "hoodie.datasource.write.recordkey.field": "txn_id",
        "hoodie.datasource.write.precombine.field": "txn_ts", "hoodie.datasource.write.partitionpath.field": "region",
        "hoodie.datasource.write.hive_style_partitioning": "true"},
    "mor_avro_v9_txns_simple_meta": {
        "hoodie.table.name": "v9_txns_mor_simple_meta", "hoodie.datasource.write.recordkey.field": "txn_id",
        "hoodie.table.ordering.fields": "txn_ts", "hoodie.datasource.write.partitionpath.field": "region",
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.datasource.write.hive_style_partitioning": "true"},
    "mor_avro_v9_nonpartitioned_rollback": {
        "hoodie.table.name": "v9_nonpartitioned_rollback_mor", "hoodie.datasource.write.recordkey.field": "txn_id",
        "hoodie.datasource.write.precombine.field": "txn_ts", "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.datasource.write.hive_style_partitioning": "true"},
    "cow_v9_timebasedkeygen_nonhivestyle": {
        "hoodie.table.name": "v9_timebasedkeygen_nonhivestyle_cow", "hoodie.datasource.write.recordkey.field": "txn_id",
        "hoodie.datasource.write.precombine.field": "txn_ts", "hoodie.datasource.write.partitionpath.field": "ts_str",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
        "hoodie.keygen.timebased.timestamp.type": "DATE_STRING",
        "hoodie.keygen.timebased.input.dateformat": "yyyy-MM-dd'T'HH:mm:ss.SSSZ",
        "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd/HH"},
}


def created(options: dict[str, Any]) -> TableConfig:
    return resolve_table_config(Options.parse(options), None)


@pytest.mark.parametrize("name", sorted(SAMPLE_OPTIONS))
def test_new_table_properties_match_the_samples_key_by_key(name: str) -> None:
    sample = sample_props(name)
    version = sample["hoodie.table.version"]
    opts = {**SAMPLE_OPTIONS[name], "hoodie.write.table.version": version, "hoodie.database.name": "default"}
    ours = created(opts).to_properties()
    assert ours.pop("hoodie.table.timeline.timezone") == "UTC"
    theirs = {k: v for k, v in sample.items() if k not in SQL_ONLY | MDT_KEYS}
    assert ours == theirs


@pytest.mark.parametrize("version", [8, 9])
def test_new_table_config_reads_back_as_written(version: int) -> None:
    cfg = created({"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
                   "hoodie.datasource.write.precombine.field": "ts", "hoodie.write.table.version": version})
    assert (cfg.version, cfg.layout_version, cfg.initial_version) == (version, 2, version)
    assert cfg.raw == cfg.to_properties() and TableConfig.from_properties(cfg.raw).to_properties() == cfg.raw
    assert "hoodie.database.name" not in cfg.raw, "1.1's TableBuilder leaves an empty database name out"
    assert table_dirs(cfg) == (".hoodie/.temp", ".hoodie/.aux/.bootstrap/.partitions",
                               ".hoodie/.aux/.bootstrap/.fileids", ".hoodie/.schema", ".hoodie/timeline",
                               ".hoodie/timeline/history")
    assert table_dirs(TableConfig(name="t"))[1] == ".hoodie/archived"  # version 6 as before


# (version, merge mode option, payload option, ordering fields) -> recorded properties, payload class
@pytest.mark.parametrize(("version", "mode", "payload", "ordering", "props", "payload_class"), [
    # inferMergingConfigsForPreV9Table: ordering fields -> EVENT_TIME_ORDERING, none -> COMMIT_TIME_ORDERING
    (8, None, None, ("ts",), {"hoodie.record.merge.mode": EVENT, "hoodie.record.merge.strategy.id": EVENT_ID},
     P + "DefaultHoodieRecordPayload"),
    (8, None, None, (), {"hoodie.record.merge.mode": COMMIT, "hoodie.record.merge.strategy.id": COMMIT_ID},
     P + "OverwriteWithLatestAvroPayload"),
    (8, COMMIT, None, ("ts",), {"hoodie.record.merge.mode": COMMIT, "hoodie.record.merge.strategy.id": COMMIT_ID},
     P + "OverwriteWithLatestAvroPayload"),
    (8, None, P + "OverwriteWithLatestAvroPayload", ("ts",),
     {"hoodie.record.merge.mode": COMMIT, "hoodie.record.merge.strategy.id": COMMIT_ID},
     P + "OverwriteWithLatestAvroPayload"),
    (9, None, None, ("ts",), {"hoodie.record.merge.mode": EVENT, "hoodie.table.format": "native"}, None),
    (9, None, None, (), {"hoodie.record.merge.mode": COMMIT, "hoodie.table.format": "native"}, None),
    (9, EVENT, None, (), {"hoodie.record.merge.mode": EVENT, "hoodie.table.format": "native"}, None),
    # inferMergingConfigsForV9TableCreation, CASE 3: a deprecated payload becomes the legacy payload class
    (9, None, P + "DefaultHoodieRecordPayload", ("ts",),
     {"hoodie.record.merge.mode": EVENT, "hoodie.table.format": "native",
      "hoodie.table.legacy.payload.class": P + "DefaultHoodieRecordPayload",
      "hoodie.record.merge.strategy.id": EVENT_ID}, None),
])
def test_creation_merge_properties(version: int, mode: str | None, payload: str | None, ordering: tuple[str, ...],
                                   props: dict[str, str], payload_class: str | None) -> None:
    assert creation_merge_properties(version, mode, payload, ordering) == (props, payload_class)


def test_creation_refuses_what_hudi_and_pyhudi_refuse() -> None:
    with pytest.raises(InvalidConfigError, match="Configured record merge mode .COMMIT_TIME_ORDERING. is inconsistent"):
        creation_merge_properties(8, COMMIT, P + "DefaultHoodieRecordPayload", ("ts",))
    with pytest.raises(UnsupportedTableError, match="CUSTOM merge mode.*hoodie.write.record.merge.mode=CUSTOM"):
        created({"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
                 "hoodie.write.table.version": "9", "hoodie.record.merge.mode": "CUSTOM"})


def test_custom_keygen_records_typed_partition_fields() -> None:
    """Version 8+ keeps each field's key-generator type in hoodie.table.partition.fields."""
    cfg = created({"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
                   "hoodie.datasource.write.partitionpath.field": "region:SIMPLE",
                   "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.CustomKeyGenerator",
                   "hoodie.write.table.version": "9"})
    props = cfg.to_properties()
    assert props["hoodie.table.partition.fields"] == "region:SIMPLE"
    assert props["hoodie.table.keygenerator.type"] == "CUSTOM" and "hoodie.table.keygenerator.class" not in props
    assert cfg.partition_fields == ("region",)


def test_version_6_creation_is_unchanged() -> None:
    props = created({"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
                     "hoodie.datasource.write.precombine.field": "ts"}).to_properties()
    assert props["hoodie.table.version"] == "6" and props["hoodie.database.name"] == ""
    assert not any(k.startswith(("hoodie.record.merge", "hoodie.timeline.path")) for k in props)


# ============================================================================ writes to existing 1.x tables


def v8(**extra: str) -> TableConfig:
    props = {**sample_props("cow_v8_nonpartitioned"), **{k.replace("__", "."): v for k, v in extra.items()}}
    return TableConfig.from_properties(props)


def test_commit_time_tables_write_without_ordering() -> None:
    """1.x dedupes a batch with the table's merge mode (BaseWriteHelper.deduplicateRecords -> deltaMerge): under
    COMMIT_TIME_ORDERING the later record wins whatever ordering fields the table records."""
    commit = v8(hoodie__record__merge__mode=COMMIT, hoodie__record__merge__strategy__id=COMMIT_ID,
                hoodie__compaction__payload__class=P + "OverwriteWithLatestAvroPayload")
    wc = build_write_config(Options.parse({}), commit, WriteOperation.UPSERT)
    assert wc.payload_class == P + "OverwriteWithLatestAvroPayload" and wc.precombine_field is None
    event = build_write_config(Options.parse({}), v8(), WriteOperation.UPSERT)
    assert event.payload_class == P + "DefaultHoodieRecordPayload" and event.event_time_field == "longField"
    v9 = TableConfig.from_properties(sample_props("cow_v9_txns_simple_meta") | {"hoodie.table.metadata.partitions": ""})
    assert build_write_config(Options.parse({}), v9, WriteOperation.UPSERT).event_time_field == "txn_ts"


def test_write_path_refuses_merges_it_cannot_carry() -> None:
    with pytest.raises(UnsupportedTableError, match="several fields.*hoodie.table.precombine.field=a,b"):
        check_writable(v8(hoodie__table__precombine__field="a,b"), Options.parse({}), False)
    marker = v8(**{"hoodie__record__merge__property__hoodie__payload__delete__field": "Op",
                   "hoodie__record__merge__property__hoodie__payload__delete__marker": "D"})
    with pytest.raises(UnsupportedTableError, match="delete marker.*delete.field=Op"):
        check_writable(marker, Options.parse({}), False)


@pytest.mark.parametrize(("options", "words"), [
    ({"hoodie.datasource.write.payload.class": P + "OverwriteWithLatestAvroPayload"},
     "payload.class=org.apache.hudi.common.model.OverwriteWithLatestAvroPayload conflicts"),
    ({"hoodie.record.merge.mode": COMMIT}, "merge.mode=COMMIT_TIME_ORDERING conflicts with the table's merge mode"),
    ({"hoodie.datasource.write.precombine.field": "other"}, "precombine.field=other conflicts"),
    ({"hoodie.table.ordering.fields": "longField,id"}, "ordering.fields=longField,id conflicts"),
])
def test_write_options_must_match_the_1x_table(options: dict[str, str], words: str) -> None:
    opts = Options.parse({"hoodie.table.name": "v8_nonpartitioned", **options})
    with pytest.raises(InvalidConfigError, match=words.replace(".", r"\.").replace("(", r"\(")):
        build_write_config(opts, resolve_table_config(opts, v8()), WriteOperation.UPSERT)


def test_matching_write_options_are_accepted() -> None:
    opts = Options.parse({"hoodie.datasource.write.precombine.field": "longField", "hoodie.record.merge.mode": EVENT,
                          "hoodie.datasource.write.payload.class": P + "DefaultHoodieRecordPayload"})
    build_write_config(opts, resolve_table_config(opts, v8()), WriteOperation.UPSERT)
