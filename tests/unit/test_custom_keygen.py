"""CustomKeyGenerator (`field:SIMPLE,field:TIMESTAMP`) options, checked against Hudi's
TestCustomKeyGenerator (hudi-spark-datasource/hudi-spark/src/test/java/org/apache/hudi/keygen)."""

from __future__ import annotations

import pytest

from pyhudi.config.registry import Options
from pyhudi.engine.spark.keygen import KeyGenerator
from pyhudi.errors import InvalidConfigError
from pyhudi.keygen.timestamp_keygen import PartitionFormatter
from pyhudi.model.table_config import TableConfig
from pyhudi.writer.config import resolve_table_config

CUSTOM = "org.apache.hudi.keygen.CustomKeyGenerator"
OLD = "hoodie.deltastreamer.keygen.timebased."
# TestCustomKeyGenerator#populateNecessaryPropsForTimestampBasedKeyGen (the old option names)
TS_PROPS = {OLD + "timestamp.type": "DATE_STRING", OLD + "input.dateformat": "yyyy-MM-dd",
            OLD + "output.dateformat": "yyyyMMdd"}


def _resolve(partition: str, existing: TableConfig | None = None, **extra: str) -> TableConfig:
    options = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "_row_key, pii_col",
               "hoodie.datasource.write.partitionpath.field": partition,
               "hoodie.datasource.write.keygenerator.class": CUSTOM,
               "hoodie.datasource.write.hive_style_partitioning": "true", **TS_PROPS, **extra}
    return resolve_table_config(Options.parse(options), existing)


def test_complex_record_key_and_partition_path_types():
    # TestCustomKeyGenerator#testComplexRecordKeysWithComplexPartitionPath: "timestamp:simple,ts_ms:timestamp"
    table = _resolve("timestamp:simple,ts_ms:timestamp")
    assert table.partition_fields == ("timestamp", "ts_ms")  # stored without types, as Hudi 0.14 does
    assert table.to_properties()["hoodie.table.partition.fields"] == "timestamp,ts_ms"
    keygen = KeyGenerator.for_table(table)
    assert keygen.partition_types == ("SIMPLE", "TIMESTAMP")
    assert keygen.is_complex and keygen.record_key_fields == ("_row_key", "pii_col")
    assert keygen.timestamp is not None
    # TestCustomKeyGenerator#testTimestampBasedKeyGenerator: ts_ms "2020-03-21" -> "ts_ms=20200321"
    piece = PartitionFormatter(keygen.timestamp, "ts_ms", hive_style=True).text("2020-03-21", "string")
    assert piece == "ts_ms=20200321"


def test_single_record_key_is_simple():
    table = resolve_table_config(Options.parse({
        "hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "_row_key",
        "hoodie.datasource.write.partitionpath.field": "timestamp:simple",
        "hoodie.datasource.write.keygenerator.type": "CUSTOM"}), None)
    keygen = KeyGenerator.for_table(table)
    assert table.keygen_class == CUSTOM and not keygen.is_complex and keygen.partition_types == ("SIMPLE",)
    assert keygen.timestamp is None  # no TIMESTAMP field: the timebased options are not needed


def test_empty_partition_spec_is_non_partitioned():
    # TestCustomKeyGenerator#testNonPartitionedKeyGenerator
    table = _resolve("")
    assert not table.is_partitioned and KeyGenerator.for_table(table).partition_types == ()


@pytest.mark.parametrize(("spec", "match"), [
    ("timestamp", "field:SIMPLE or field:TIMESTAMP"),  # testPartitionFieldsInImproperFormat
    ("timestamp:dummy", "field:SIMPLE or field:TIMESTAMP"),  # testInvalidPartitionKeyType
])
def test_improper_partition_specs_are_refused(spec, match):
    with pytest.raises(InvalidConfigError, match=match):
        _resolve(spec)


def test_timestamp_field_without_timebased_options_is_refused():
    with pytest.raises(InvalidConfigError, match="timestamp.type"):
        resolve_table_config(Options.parse({
            "hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "ts:timestamp",
            "hoodie.datasource.write.keygenerator.class": CUSTOM}), None)


def _stored() -> TableConfig:
    return TableConfig.from_properties({
        "hoodie.table.name": "t", "hoodie.table.type": "COPY_ON_WRITE", "hoodie.table.version": "6",
        "hoodie.table.recordkey.fields": "_row_key,pii_col", "hoodie.table.partition.fields": "timestamp,ts_ms",
        "hoodie.table.keygenerator.class": CUSTOM, "hoodie.datasource.write.hive_style_partitioning": "true"})


def test_existing_table_accepts_typed_spec_matching_stored_names():
    table = _resolve("timestamp:simple,ts_ms:timestamp", _stored())
    assert KeyGenerator.for_table(table).partition_types == ("SIMPLE", "TIMESTAMP")


def test_existing_table_refuses_other_partition_fields():
    with pytest.raises(InvalidConfigError, match="hoodie.table.partition.fields"):
        _resolve("other:simple,ts_ms:timestamp", _stored())


def test_existing_table_without_types_is_refused():
    options = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "_row_key,pii_col",
               **TS_PROPS}
    with pytest.raises(InvalidConfigError, match="type per field"):
        resolve_table_config(Options.parse(options), _stored())


def test_avro_variant_class_is_accepted():
    table = _resolve("timestamp:simple", **{
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.CustomAvroKeyGenerator"})
    assert KeyGenerator.for_table(table).partition_types == ("SIMPLE",)
