"""`hoodie.properties` as a typed TableConfig: all samples, checksum, version gate, save/load."""

from __future__ import annotations

import zlib

import pytest

from pyhudi.errors import CorruptFileError, TableNotFoundError, UnsupportedTableError
from pyhudi.model.properties import parse_properties
from pyhudi.model.table_config import (
    COMPLEX_KEYGEN,
    COW,
    DEFAULT_MERGER_STRATEGY,
    EMPTY_DIRS,
    MOR,
    NONPARTITIONED_KEYGEN,
    OVERWRITE_PAYLOAD,
    PROPERTIES_FILE,
    SIMPLE_KEYGEN,
    TableConfig,
    infer_keygen,
    load_table_config,
    save_table_config,
    table_checksum,
)
from pyhudi.storage import Storage
from tests.unit._samples import SampleTables, manifest, sample_names


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    return SampleTables(tmp_path_factory.mktemp("tc_samples"))


def test_checksum_is_crc32_of_db_dot_table():
    assert table_checksum("default", "v6_trips_8i1u") == 3843273058
    assert table_checksum("default", "v6_empty") == 1980710965
    assert table_checksum("db", "tbl") == zlib.crc32(b"db.tbl")
    # unsigned even when the signed 32-bit value would be negative
    assert all(table_checksum("default", f"t{i}") >= 0 for i in range(200))
    assert table_checksum("dé", "tä") == zlib.crc32("dé.tä".encode())


@pytest.mark.parametrize("name", sample_names())
def test_load_every_sample(samples, name):
    facts = manifest()[name]
    cfg = load_table_config(Storage(str(samples.root(name))))
    assert cfg.name == facts["table_name"]
    assert cfg.database == facts["database_name"]
    assert cfg.table_type == facts["table_type"]
    assert cfg.is_mor == (facts["table_type"] == MOR)
    assert cfg.version == 6 and cfg.layout_version == 1
    assert cfg.record_key_fields == tuple(facts["record_key_fields"])
    assert cfg.partition_fields == tuple(facts["partition_fields"])
    assert cfg.is_partitioned == bool(facts["partition_fields"])
    assert cfg.precombine_field == facts["ordering_field"]
    assert cfg.keygen_class == facts["keygen"]
    assert cfg.urlencode_partitions is facts["partitionpath_urlencode"]
    assert cfg.populate_meta_fields is facts["populate_meta_fields"]
    assert cfg.payload_class == facts["payload_class"]
    assert cfg.base_file_format == "PARQUET"
    assert cfg.drop_partition_columns is False
    assert cfg.archive_folder == "archived"
    if facts["partition_fields"]:
        assert cfg.hive_style_partitioning is facts["hive_style"]
    # checksum: stored value == CRC32("db.table") == manifest
    assert int(cfg.raw["hoodie.table.checksum"]) == facts["checksum"] == table_checksum(cfg.database, cfg.name)
    # timezone key is absent in every sample, so Hudi's default (LOCAL) applies
    assert cfg.timeline_timezone is None
    assert cfg.local_timezone is True
    # the create schema is unescaped JSON
    assert cfg.create_schema is not None and cfg.create_schema.startswith('{"type":"record"')


@pytest.mark.parametrize("name", sample_names())
def test_to_properties_reproduces_every_sample(samples, name):
    cfg = load_table_config(Storage(str(samples.root(name))))
    text = (samples.hoodie(name) / "hoodie.properties").read_text(encoding="latin-1")
    assert cfg.to_properties() == parse_properties(text)


def _write_props(tmp_path, props: dict[str, str]) -> Storage:
    (tmp_path / ".hoodie").mkdir(parents=True, exist_ok=True)
    (tmp_path / ".hoodie" / "hoodie.properties").write_text(
        "".join(f"{k}={v}\n" for k, v in props.items()), encoding="latin-1")
    return Storage(str(tmp_path))


BASE_PROPS = {"hoodie.table.name": "t", "hoodie.table.type": "COPY_ON_WRITE", "hoodie.table.version": "6",
              "hoodie.timeline.layout.version": "1", "hoodie.table.recordkey.fields": "id"}


@pytest.mark.parametrize("version, layout", [("3", "1"), ("7", "1"), ("5", "2"), ("8", "1"), ("6", "2"), ("0", None)])
def test_other_versions_rejected(tmp_path, version, layout):
    props = dict(BASE_PROPS, **{"hoodie.table.version": version})
    if layout is None:
        del props["hoodie.timeline.layout.version"]
    else:
        props["hoodie.timeline.layout.version"] = layout
    with pytest.raises(UnsupportedTableError) as err:
        load_table_config(_write_props(tmp_path, props))
    assert f"version {version}" in str(err.value)


def test_missing_version_rejected(tmp_path):
    props = dict(BASE_PROPS)
    del props["hoodie.table.version"]
    with pytest.raises(UnsupportedTableError):
        load_table_config(_write_props(tmp_path, props))


def test_layout_defaults_to_1_for_version_6(tmp_path):
    props = dict(BASE_PROPS)
    del props["hoodie.timeline.layout.version"]
    assert load_table_config(_write_props(tmp_path, props)).layout_version == 1


def test_non_numeric_version_is_corrupt(tmp_path):
    with pytest.raises(CorruptFileError):
        load_table_config(_write_props(tmp_path, dict(BASE_PROPS, **{"hoodie.table.version": "six"})))


@pytest.mark.parametrize("missing", ["hoodie.table.name", "hoodie.table.type"])
def test_missing_identity_is_corrupt(tmp_path, missing):
    props = dict(BASE_PROPS)
    del props[missing]
    with pytest.raises(CorruptFileError):
        load_table_config(_write_props(tmp_path, props))


def test_missing_properties_file_is_table_not_found(tmp_path):
    with pytest.raises(TableNotFoundError) as err:
        load_table_config(Storage(str(tmp_path)))
    assert str(tmp_path) in str(err.value)
    (tmp_path / ".hoodie").mkdir()
    with pytest.raises(TableNotFoundError):
        load_table_config(Storage(str(tmp_path)))
    with pytest.raises(TableNotFoundError):
        load_table_config(Storage(str(tmp_path / "does" / "not" / "exist")))


def test_short_table_type_and_keygen_inference(tmp_path):
    props = dict(BASE_PROPS, **{"hoodie.table.type": "mor", "hoodie.table.partition.fields": "a,b"})
    cfg = load_table_config(_write_props(tmp_path, props))
    assert cfg.table_type == MOR
    assert cfg.keygen_class == COMPLEX_KEYGEN


def test_partition_fields_with_custom_keygen_types_are_stripped(tmp_path):
    props = dict(BASE_PROPS, **{"hoodie.table.partition.fields": "city:SIMPLE,ts:TIMESTAMP"})
    assert load_table_config(_write_props(tmp_path, props)).partition_fields == ("city", "ts")


@pytest.mark.parametrize("keys, parts, expected", [
    (("id",), (), NONPARTITIONED_KEYGEN),
    (("id", "name"), (), NONPARTITIONED_KEYGEN),
    (("id",), ("p",), SIMPLE_KEYGEN),
    ((), ("p",), SIMPLE_KEYGEN),
    (("id", "name"), ("p",), COMPLEX_KEYGEN),
    (("id",), ("p", "q"), COMPLEX_KEYGEN),
])
def test_infer_keygen(keys, parts, expected):
    assert infer_keygen(keys, parts) == expected


def test_nonpartitioned_keygen_overrides_partition_fields():
    cfg = TableConfig(name="t", partition_fields=("p",), keygen_class=NONPARTITIONED_KEYGEN)
    assert not cfg.is_partitioned


def test_save_then_load_round_trip(tmp_path):
    schema = '{"type":"record","name":"t_record","namespace":"hoodie.t","fields":[{"name":"id","type":"int"}]}'
    cfg = TableConfig(name="t", table_type=MOR, record_key_fields=("id",), partition_fields=("p",),
                      precombine_field="ts", hive_style_partitioning=True, populate_meta_fields=False,
                      database="db", create_schema=schema, timeline_timezone="UTC")
    storage = Storage(str(tmp_path))
    save_table_config(storage, cfg)
    for rel in EMPTY_DIRS:
        assert storage.is_dir(rel), rel
    loaded = load_table_config(storage)
    assert loaded == cfg.evolve(payload_class=OVERWRITE_PAYLOAD)
    raw = loaded.raw
    assert raw["hoodie.table.checksum"] == str(zlib.crc32(b"db.t"))
    assert raw["hoodie.compaction.record.merger.strategy"] == DEFAULT_MERGER_STRATEGY
    assert raw["hoodie.populate.meta.fields"] == "false"
    assert raw["hoodie.table.timeline.timezone"] == "UTC"
    assert loaded.local_timezone is False
    text = (tmp_path / PROPERTIES_FILE).read_text(encoding="latin-1")
    assert 'hoodie.table.create.schema={"type"\\:"record"' in text
    lines = text.splitlines()
    assert lines[0].startswith("#Updated at ") and lines[1].startswith("#")
    # no temp files left next to the properties file
    assert sorted(p.name for p in (tmp_path / ".hoodie").iterdir() if p.is_file()) == ["hoodie.properties"]


def test_cow_properties_have_no_payload_keys():
    props = TableConfig(name="t", table_type=COW, record_key_fields=("id",)).to_properties()
    assert "hoodie.compaction.payload.class" not in props
    assert "hoodie.compaction.record.merger.strategy" not in props
    assert "hoodie.populate.meta.fields" not in props  # default true is not written
    assert props["hoodie.table.version"] == "6"
    assert props["hoodie.timeline.layout.version"] == "1"
