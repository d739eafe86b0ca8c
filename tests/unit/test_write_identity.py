"""Table-config validation of a write against hoodie.properties (Hudi's validateTableConfig)."""

from __future__ import annotations

import zlib

import pytest

from pyhudi.config.registry import Options
from pyhudi.errors import InvalidConfigError
from pyhudi.model.table_config import TableConfig
from pyhudi.writer.config import resolve_table_config

BASE = {"hoodie.table.name": "trips", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "p"}


def _existing(**props: str) -> TableConfig:
    stored = {"hoodie.table.name": "trips", "hoodie.table.type": "COPY_ON_WRITE", "hoodie.table.version": "6",
              "hoodie.table.recordkey.fields": "id", "hoodie.table.partition.fields": "p",
              "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
              "hoodie.database.name": "", "hoodie.datasource.write.drop.partition.columns": "false"}
    stored.update(props)
    return TableConfig.from_properties(stored)


def _resolve(existing: TableConfig | None, **options: str) -> TableConfig:
    base = {k: v for k, v in BASE.items() if not (k == "hoodie.table.name" and
                                                  "hoodie.datasource.write.table.name" in options)}
    return resolve_table_config(Options.parse({**base, **options}), existing)


@pytest.mark.parametrize(("option", "value", "stored"), [
    ("hoodie.table.name", "rides", "trips"),
    ("hoodie.datasource.write.table.name", "rides", "trips"),
    ("hoodie.database.name", "sales", ""),
    ("hoodie.datasource.write.drop.partition.columns", "true", "false"),
])
def test_conflicting_option_names_both_values(option, value, stored):
    with pytest.raises(InvalidConfigError) as info:
        _resolve(_existing(), **{option: value})
    message = str(info.value)
    key = "hoodie.table.name" if option.endswith("table.name") else option
    assert f"{key}={value!r}" in message and f"={stored!r}" in message


def test_matching_or_absent_options_pass():
    existing = _existing(**{"hoodie.database.name": "sales"})
    assert _resolve(existing, **{"hoodie.table.name": "TRIPS", "hoodie.database.name": "Sales",
                                 "hoodie.datasource.write.drop.partition.columns": "false"}) is existing
    options = {k: v for k, v in BASE.items() if k != "hoodie.table.name"}
    assert resolve_table_config(Options.parse(options), existing) is existing


def test_stored_key_absent_is_not_checked():
    existing = TableConfig.from_properties({"hoodie.table.name": "trips", "hoodie.table.type": "COPY_ON_WRITE",
                                            "hoodie.table.version": "6", "hoodie.table.recordkey.fields": "id",
                                            "hoodie.table.partition.fields": "p"})
    assert _resolve(existing, **{"hoodie.database.name": "sales",
                                 "hoodie.datasource.write.drop.partition.columns": "false"}) is existing


def test_table_with_dropped_partition_columns_is_refused():
    existing = _existing(**{"hoodie.datasource.write.drop.partition.columns": "true"})
    with pytest.raises(InvalidConfigError, match="drop.partition.columns=true"):
        _resolve(existing)
    with pytest.raises(InvalidConfigError, match="drop.partition.columns=true"):
        _resolve(existing, **{"hoodie.datasource.write.drop.partition.columns": "true"})


def test_new_table_stores_what_hudis_datasource_writer_stores():
    """No database given: hoodie.database.name= (empty), checksum over ".<table>"; drop.partition.columns
    is stored as false, and true is refused (pyhudi does not drop partition columns)."""
    props = _resolve(None).to_properties()
    assert props["hoodie.table.name"] == "trips"
    assert props["hoodie.database.name"] == ""
    assert props["hoodie.table.checksum"] == str(zlib.crc32(b".trips"))
    assert props["hoodie.datasource.write.drop.partition.columns"] == "false"
    named = _resolve(None, **{"hoodie.database.name": "sales"}).to_properties()
    assert named["hoodie.database.name"] == "sales"
    assert named["hoodie.table.checksum"] == str(zlib.crc32(b"sales.trips"))
    with pytest.raises(InvalidConfigError, match="drop.partition.columns=true"):
        _resolve(None, **{"hoodie.datasource.write.drop.partition.columns": "true"})
