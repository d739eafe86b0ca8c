"""Hudi 1.x tables (versions 8 and 9, timeline layout 2) in `hoodie.properties`: parsed, checked, refused by name.

Every sample table's properties (tests/fixtures/samples-1x, written by Hudi 1.0.2 / 1.1.1 / 1.2.0-rc1) must
load and pass the read check; each 1.x key that changes how files are read is refused naming property=value
unless pyhudi implements it. Writes of versions 8 and 9 pass the write check unless the table's metadata
table holds an index pyhudi cannot rebuild, or the merge settings are more than the write path carries;
`hoodie.write.table.version` follows Hudi 1.x's upgrade / mismatch rules. The merge-mode inference cases
cite the Hudi source they follow.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from pyhudi.config.registry import Options
from pyhudi.errors import CorruptFileError, InvalidConfigError, UnsupportedTableError
from pyhudi.keygen.spec import KeySpec
from pyhudi.model.properties import format_properties, parse_properties
from pyhudi.model.table_config import TableConfig, load_table_config
from pyhudi.model.table_features import (
    KNOWN_TABLE_PROPERTIES,
    check_properties_readable,
    check_writable,
    resolve_merge,
    write_version,
)
from pyhudi.reader.log_merge import MergeMode, table_merge_rules
from pyhudi.storage import Storage
from pyhudi.writer.config import build_write_config
from pyhudi.writer.operation import WriteOperation
from tests.helpers import SAMPLES_1X

EVENT, COMMIT = "EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING"
OVERWRITE_P = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
DEFAULT_P = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
EVENT_ID, COMMIT_ID = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5", "ce9acb64-bde0-424c-9b91-f6ebba25356d"
CUSTOM_ID, PAYLOAD_ID = "1897ef5f-18bc-4557-939c-9d6a8afd1519", "00000000-0000-0000-0000-000000000000"
LANCE = "cow_v9_lance_nonpartitioned"

# name -> (version, ordering fields, key generator, bare partition fields, initial version)
EXPECTED = {
    "cow_v8_complexkeygen_hivestyle": (8, ("longField",), "ComplexKeyGenerator", ("byteField", "shortField"), 8),
    "cow_v8_nonpartitioned": (8, ("longField",), "NonpartitionedKeyGenerator", (), 8),
    "cow_v9_lance_nonpartitioned": (9, ("updated_at",), "NonpartitionedKeyGenerator", (), 9),
    "cow_v9_timebasedkeygen_nonhivestyle": (9, ("txn_ts",), "TimestampBasedKeyGenerator", ("ts_str",), 9),
    "cow_v9_txns_simple_meta": (9, ("txn_ts",), "SimpleKeyGenerator", ("region",), 9),
    "mor_avro_v9_nonpartitioned_rollback": (9, ("txn_ts",), "NonpartitionedKeyGenerator", (), 9),
    "mor_avro_v9_txns_simple_meta": (9, ("txn_ts",), "SimpleKeyGenerator", ("region",), 9),
    "qs_mor_avro_v8_trips_8i3u1d": (8, ("ts",), "SimpleKeyGenerator", ("city",), 8),
}


def sample_props(name: str) -> dict[str, str]:
    """hoodie.properties of a 1.x sample, read straight from its zip (the data table's, not the MDT's)."""
    path = SAMPLES_1X / "tables" / f"{name}.zip"
    if not path.exists():
        pytest.fail(f"Hudi 1.x sample {path} not found", pytrace=False)
    with zipfile.ZipFile(path) as z:
        (member,) = [m for m in z.namelist() if m.endswith(".hoodie/hoodie.properties") and "/metadata/" not in m]
        return parse_properties(z.read(member).decode("latin-1"))


def v9(**extra: str) -> dict[str, str]:
    """A version-9 MOR table's properties (mor_avro_v9_txns_simple_meta's keys) plus `extra`."""
    props = sample_props("mor_avro_v9_txns_simple_meta")
    props.update({k.replace("__", "."): v for k, v in extra.items()})
    return props


def refused(props: dict[str, str], *words: str) -> str:
    with pytest.raises(UnsupportedTableError) as err:
        TableConfig.from_properties(props, where="/t")
        check_properties_readable(props, "/t")
    for word in words:
        assert word in str(err.value), (word, str(err.value))
    return str(err.value)


# ============================================================================ the samples


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_sample_is_read(name: str) -> None:
    props = sample_props(name)
    version, ordering, keygen, partitions, initial = EXPECTED[name]
    cfg = TableConfig.from_properties(props, where=name)
    check_properties_readable(props, name)  # the lance package is installed here: LANCE is readable
    assert (cfg.version, cfg.layout_version, cfg.initial_version) == (version, 2, initial)
    assert cfg.ordering_fields == ordering and cfg.precombine_field == ordering[0]
    assert cfg.keygen_class == "org.apache.hudi.keygen." + keygen
    assert cfg.partition_fields == partitions and cfg.is_partitioned == bool(partitions)
    assert (cfg.timeline_dir, cfg.history_dir) == (".hoodie/timeline", ".hoodie/timeline/history")
    assert cfg.base_file_format == ("LANCE" if name == LANCE else "PARQUET")
    assert {k for k in props if k.startswith("hoodie.table.")} <= KNOWN_TABLE_PROPERTIES
    rules = table_merge_rules(cfg)  # every sample merges by event time
    assert (rules.mode, rules.ordering_fields, rules.delete_marker) == (MergeMode.EVENT_TIME_ORDERING, ordering, None)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_to_properties_keeps_every_1x_key(name: str) -> None:
    """A rewrite of a 1.x table's hoodie.properties writes back what it read (1.x names and values)."""
    props = sample_props(name)
    assert TableConfig.from_properties(props, where=name).to_properties() == props


# The sample's metadata-table indexes pyhudi cannot rebuild (a write refuses them unless allowed).
UNREBUILDABLE = {
    "cow_v9_lance_nonpartitioned": "record_index", "cow_v9_timebasedkeygen_nonhivestyle": "record_index",
    "cow_v9_txns_simple_meta": "record_index, secondary_index_merchant_idx, secondary_index_txn_date_idx",
    "mor_avro_v9_nonpartitioned_rollback": "record_index",
    "mor_avro_v9_txns_simple_meta": "record_index, secondary_index_merchant_idx, secondary_index_txn_date_idx",
    "qs_mor_avro_v8_trips_8i3u1d": "record_index, secondary_index_rider_idx",
}
DROP = "hoodie.write.drop.unrebuildable.metadata.indexes"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_samples_load_from_disk_and_are_written_at_their_version(tmp_path: Path, name: str) -> None:
    """Writes of existing 1.x tables are written at the table's version; a metadata table holding an index
    pyhudi cannot rebuild refuses them unless the write allows deleting it; LANCE tables are never written."""
    (tmp_path / ".hoodie").mkdir()
    (tmp_path / ".hoodie" / "hoodie.properties").write_text(format_properties(sample_props(name)))
    cfg = load_table_config(Storage(str(tmp_path)))
    assert write_version(cfg, Options.parse({})) == cfg.version
    for op in (WriteOperation.INSERT, WriteOperation.UPSERT):
        if name in UNREBUILDABLE:
            with pytest.raises(UnsupportedTableError, match=f"holds {UNREBUILDABLE[name]} .*{DROP}=true"):
                build_write_config(Options.parse({}), cfg, op)
        if name == LANCE:
            with pytest.raises(UnsupportedTableError, match="LANCE base files"):
                build_write_config(Options.parse({DROP: "true"}), cfg, op)
            continue
        wc = build_write_config(Options.parse({DROP: "true"}), cfg, op)
        assert wc.payload_class == DEFAULT_P and wc.precombine_field == cfg.ordering_fields[0]


def test_lance_without_the_package_is_refused_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    props = sample_props(LANCE)
    monkeypatch.setitem(sys.modules, "lance", None)  # `import lance` raises ImportError
    refused(props, "hoodie.table.base.file.format=LANCE", "pip install 'pyhudi[lance]'")


def test_lance_is_never_written() -> None:
    cfg = TableConfig(name="t", raw={"hoodie.table.base.file.format": "LANCE"})
    with pytest.raises(UnsupportedTableError, match="LANCE base files.*hoodie.table.base.file.format=LANCE.*writes "
                                                    "parquet"):
        check_writable(cfg, Options.parse({}), False)
    with pytest.raises(UnsupportedTableError, match="write options.*hoodie.table.base.file.format=LANCE"):
        check_writable(TableConfig(name="t"), Options({}, {"hoodie.table.base.file.format": "LANCE"}), False)


# ============================================================================ versions and layouts


@pytest.mark.parametrize(("version", "layout", "words"), [
    ("7", "1", ["version 7", "hoodie.table.version=7", "Hudi 0.16", "upgrade it to version 8 or 9"]),
    ("10", "2", ["version 10", "hoodie.table.version=10", "newer than pyhudi knows"]),
    ("11", "2", ["version 11", "hoodie.table.version=11"]),
    ("8", "1", ["version 8", "hoodie.timeline.layout.version=1", "layout 2"]),
    ("9", None, ["version 9", "hoodie.timeline.layout.version=0"]),
    ("6", "2", ["version 6", "hoodie.timeline.layout.version=2", "layout 1"]),
])
def test_versions_refused_by_name(version: str, layout: str | None, words: list[str]) -> None:
    props = v9(hoodie__table__version=version)
    if layout is None:
        del props["hoodie.timeline.layout.version"]
    else:
        props["hoodie.timeline.layout.version"] = layout
    refused(props, *words, "reads table versions 4-6 with timeline layout 1 and 8-9 with timeline layout 2")


def test_version_6_written_by_hudi_1x_is_a_version_6_table() -> None:
    """Hudi 1.x writing with hoodie.write.table.version=6 keeps layout 1 and adds 1.x keys (those without a
    sinceVersion above 6 survive HoodieTableConfig.dropInvalidConfigs): it is read and written as version 6."""
    props = {"hoodie.table.name": "t", "hoodie.table.type": "MERGE_ON_READ", "hoodie.table.version": "6",
             "hoodie.timeline.layout.version": "1", "hoodie.table.recordkey.fields": "id",
             "hoodie.table.keygenerator.type": "NON_PARTITION", "hoodie.timeline.path": "timeline",
             "hoodie.timeline.history.path": "history", "hoodie.table.format": "native",
             "hoodie.table.precombine.field": "ts", "hoodie.compaction.payload.class": OVERWRITE_P,
             "hoodie.record.merge.strategy.id": COMMIT_ID, "hoodie.archivelog.folder": "archived"}
    check_properties_readable(props, "/t")
    cfg = TableConfig.from_properties(props, where="/t")
    assert (cfg.timeline_dir, cfg.history_dir) == (".hoodie", ".hoodie/archived")
    assert cfg.keygen_class == "org.apache.hudi.keygen.NonpartitionedKeyGenerator"
    assert table_merge_rules(cfg).mode is MergeMode.COMMIT_TIME_ORDERING  # 1.x's commit time, as written
    build_write_config(Options.parse({}), cfg, WriteOperation.UPSERT)
    assert {k: cfg.to_properties()[k] for k in props} == props  # the 1.x keys are kept


def test_timeline_folders_follow_the_properties() -> None:
    cfg = TableConfig.from_properties(v9(hoodie__timeline__path="tl", hoodie__timeline__history__path="arch"))
    assert (cfg.timeline_dir, cfg.history_dir) == (".hoodie/tl", ".hoodie/tl/arch")
    defaults = v9()
    del defaults["hoodie.timeline.path"], defaults["hoodie.timeline.history.path"]
    assert (TableConfig.from_properties(defaults).timeline_dir,
            TableConfig.from_properties(defaults).history_dir) == (".hoodie/timeline", ".hoodie/timeline/history")


@pytest.mark.parametrize("value", ["../outside", "/abs", "a/../b", "a\\b", ""])
def test_timeline_folder_outside_hoodie_is_refused(value: str) -> None:
    refused(v9(hoodie__timeline__path=value), f"hoodie.timeline.path={value}")


def test_unknown_timeline_property_is_refused() -> None:
    refused(v9(hoodie__timeline__storage="lsm"), "unknown table property", "hoodie.timeline.storage=lsm")


def test_malformed_initial_version_is_corrupt() -> None:
    with pytest.raises(CorruptFileError, match="hoodie.table.initial.version"):
        TableConfig.from_properties(v9(hoodie__table__initial__version="nine!"))


def test_initial_version_by_name_as_early_1x_upgrades_wrote_it() -> None:
    """SevenToEightUpgradeHandler of 1.0 development builds stored HoodieTableVersion.SIX.name()."""
    assert TableConfig.from_properties(v9(hoodie__table__initial__version="SIX")).initial_version == 6


# ============================================================================ 1.x keys that change reads


@pytest.mark.parametrize(("extra", "words"), [
    ({"hoodie.table.format": "xtable"}, ["table format xtable", "hoodie.table.format=xtable"]),
    ({"hoodie.table.multiple.base.file.formats.enable": "true"},
     ["several formats", "hoodie.table.multiple.base.file.formats.enable=true"]),
    ({"hoodie.table.partial.update.mode": "IGNORE_DEFAULTS"},
     ["partial updates", "schema default", "hoodie.table.partial.update.mode=IGNORE_DEFAULTS"]),
    ({"hoodie.table.partial.update.mode": "FILL_UNAVAILABLE"}, ["hoodie.table.partial.update.mode=FILL_UNAVAILABLE"]),
    ({"hoodie.table.partial.update.mode": "KEEP_VALUES"}, ["missing from a partial log record",
                                                            "hoodie.table.partial.update.mode=KEEP_VALUES"]),
    ({"hoodie.table.legacy.payload.class": "org.apache.hudi.common.model.PartialUpdateAvroPayload"},
     ["PartialUpdateAvroPayload", "hoodie.table.legacy.payload.class=org.apache.hudi.common.model.PartialUpdate"]),
    ({"hoodie.table.legacy.payload.class": "org.apache.hudi.common.model.debezium.PostgresDebeziumAvroPayload"},
     ["hoodie.table.legacy.payload.class=org.apache.hudi.common.model.debezium.PostgresDebeziumAvroPayload"]),
    ({"hoodie.table.legacy.payload.class": "org.apache.hudi.common.model.AWSDmsAvroPayload"},
     ["hoodie.table.legacy.payload.class=org.apache.hudi.common.model.AWSDmsAvroPayload"]),  # no Op/D marker
    ({"hoodie.record.merge.property.hoodie.write.partial.update.custom.marker": "__debezium_unavailable_value"},
     ["merge property", "hoodie.record.merge.property.hoodie.write.partial.update.custom.marker="]),
    ({"hoodie.record.merge.property.hoodie.payload.delete.field": "Op"},
     ["delete marker without", "delete.field=Op without hoodie.record.merge.property.hoodie.payload.delete.marker"]),
    ({"hoodie.record.merge.strategy.id": CUSTOM_ID, "hoodie.record.merge.mode": "CUSTOM"},
     ["CUSTOM merge mode", f"hoodie.record.merge.strategy.id={CUSTOM_ID}"]),
    ({"hoodie.record.merge.mode": "CUSTOM", "hoodie.compaction.payload.class": "com.example.MyPayload"},
     ["CUSTOM merge mode", "hoodie.compaction.payload.class=com.example.MyPayload"]),
    ({"hoodie.record.merge.mode": "LATEST"}, ["merge mode LATEST", "hoodie.record.merge.mode=LATEST"]),
    ({"hoodie.table.merge.properties": "a=b"}, ["unknown table property", "hoodie.table.merge.properties=a=b"]),
    ({"hoodie.table.storage.layout": "native"}, ["unknown table property", "hoodie.table.storage.layout=native"]),
])
def test_mor_read_refuses_1x_feature(extra: dict[str, str], words: list[str]) -> None:
    refused({**v9(), **extra}, *words)


@pytest.mark.parametrize("extra", [
    {"hoodie.table.partial.update.mode": "NONE"},  # 1.1 development builds' no-op default
    {"hoodie.table.legacy.payload.class": DEFAULT_P},
    {"hoodie.table.legacy.payload.class": OVERWRITE_P, "hoodie.record.merge.mode": COMMIT},
    {"hoodie.table.legacy.payload.class": "org.apache.hudi.common.model.EventTimeAvroPayload"},
    {"hoodie.table.legacy.payload.class": "org.apache.hudi.common.model.AWSDmsAvroPayload",
     "hoodie.record.merge.mode": COMMIT, "hoodie.record.merge.property.hoodie.payload.delete.field": "Op",
     "hoodie.record.merge.property.hoodie.payload.delete.marker": "D"},
    {"hoodie.record.merge.strategy.id": EVENT_ID},
    {"hoodie.table.format": "NATIVE", "hoodie.table.multiple.base.file.formats.enable": "false"},
])
def test_mor_read_accepts_implemented_1x_settings(extra: dict[str, str]) -> None:
    props = {**v9(), **extra}
    check_properties_readable(props, "/t")
    TableConfig.from_properties(props, where="/t")


def test_delete_marker_reaches_the_merge() -> None:
    props = v9(hoodie__record__merge__mode=COMMIT)
    props["hoodie.record.merge.property.hoodie.payload.delete.field"] = "Op"
    props["hoodie.record.merge.property.hoodie.payload.delete.marker"] = "D"
    rules = table_merge_rules(TableConfig.from_properties(props))
    assert (rules.mode, rules.delete_marker) == (MergeMode.COMMIT_TIME_ORDERING, ("Op", "D"))
    assert rules.spec_options() == {"mode": MergeMode.COMMIT_TIME_ORDERING, "event_time_field": None,
                                    "ordering_fields": (), "delete_marker": ("Op", "D")}


def test_cow_reads_ignore_merge_settings_but_writes_refuse() -> None:
    """A COW table's files are merged already: partial updates change no read, only writes."""
    props = {**sample_props("cow_v9_txns_simple_meta"), "hoodie.table.partial.update.mode": "IGNORE_DEFAULTS",
             "hoodie.table.metadata.partitions": "files"}
    check_properties_readable(props, "/t")
    with pytest.raises(UnsupportedTableError, match="partial updates.*hoodie.table.partial.update.mode=IGNORE_DEFAULTS"):
        check_writable(TableConfig.from_properties(props), Options.parse({}), False)


# ============================================================================ key generators


@pytest.mark.parametrize(("kind", "keygen"), [
    ("SIMPLE_AVRO", "SimpleKeyGenerator"), ("COMPLEX_AVRO", "ComplexKeyGenerator"),
    ("NON_PARTITION_AVRO", "NonpartitionedKeyGenerator"), ("TIMESTAMP_AVRO", "TimestampBasedAvroKeyGenerator"),
    ("CUSTOM_AVRO", "CustomAvroKeyGenerator"), ("simple", "SimpleKeyGenerator"),
])
def test_keygen_types_of_1x(kind: str, keygen: str) -> None:
    """KeyGeneratorType (1.x): the Avro twins render the same keys as the Spark classes."""
    props = v9(hoodie__table__keygenerator__type=kind)
    check_properties_readable(props, "/t")
    assert TableConfig.from_properties(props).keygen_class == "org.apache.hudi.keygen." + keygen


@pytest.mark.parametrize("kind", ["GLOBAL_DELETE", "GLOBAL_DELETE_AVRO", "AUTO_RECORD", "AUTO_RECORD_AVRO",
                                  "HOODIE_TABLE_METADATA", "SPARK_SQL", "SPARK_SQL_UUID", "SPARK_SQL_MERGE_INTO",
                                  "STREAMER_TEST", "USER_PROVIDED", "NO_SUCH_TYPE"])
def test_keygen_types_pyhudi_lacks_are_refused(kind: str) -> None:
    refused(v9(hoodie__table__keygenerator__type=kind), f"hoodie.table.keygenerator.type={kind}")


def test_keygen_class_wins_over_type_as_in_java() -> None:
    """KeyGeneratorType.getKeyGeneratorClassName reads the class first; an Avro twin matches its type."""
    props = v9(hoodie__table__keygenerator__type="SIMPLE",
               hoodie__table__keygenerator__class="org.apache.hudi.keygen.SimpleAvroKeyGenerator")
    check_properties_readable(props, "/t")
    assert TableConfig.from_properties(props).keygen_class == "org.apache.hudi.keygen.SimpleKeyGenerator"
    user = v9(hoodie__table__keygenerator__type="USER_PROVIDED",
              hoodie__table__keygenerator__class="com.example.Keys")
    refused(user, "hoodie.table.keygenerator.class=com.example.Keys")


def test_custom_keygen_keeps_the_partition_types() -> None:
    """1.x stores a custom key generator's `field:TYPE` in hoodie.table.partition.fields: the names are the
    partition fields, the typed list is the key generator's partition spec (keygen/spec.py)."""
    props = v9(hoodie__table__keygenerator__type="CUSTOM", hoodie__table__partition__fields="region:SIMPLE,ts:TIMESTAMP",
               **{"hoodie__keygen__timebased__timestamp__type": "EPOCHMILLISECONDS",
                  "hoodie__keygen__timebased__output__dateformat": "yyyy/MM/dd"})
    check_properties_readable(props, "/t")
    cfg = TableConfig.from_properties(props)
    assert cfg.partition_fields == ("region", "ts")
    assert cfg.keygen_options["hoodie.datasource.write.partitionpath.field"] == "region:SIMPLE,ts:TIMESTAMP"
    assert KeySpec.for_table(cfg).partition_types == ("SIMPLE", "TIMESTAMP")
    assert cfg.to_properties()["hoodie.table.partition.fields"] == "region:SIMPLE,ts:TIMESTAMP"


# ============================================================================ ordering fields


def test_ordering_fields_key_wins_over_precombine() -> None:
    """apache/hudi #20345: hoodie.table.ordering.fields (1.1) first, a comma list; the precombine key else."""
    cfg = TableConfig.from_properties(v9(hoodie__table__ordering__fields="a, b", hoodie__table__precombine__field="c"))
    assert (cfg.ordering_fields, cfg.precombine_field) == (("a", "b"), "a")
    props = v9(hoodie__table__precombine__field="c")
    del props["hoodie.table.ordering.fields"]
    assert TableConfig.from_properties(props).ordering_fields == ("c",)
    empty = TableConfig.from_properties(v9(hoodie__table__ordering__fields="", hoodie__table__precombine__field="c"))
    assert (empty.ordering_fields, empty.precombine_field) == ((), None)


def test_precombine_and_ordering_fields_stay_one_setting() -> None:
    assert TableConfig(name="t", precombine_field="ts").ordering_fields == ("ts",)
    assert TableConfig(name="t", ordering_fields=("a", "b")).precombine_field == "a"
    cfg = TableConfig(name="t", ordering_fields=("a", "b"))
    assert cfg.evolve(precombine_field="z").ordering_fields == ("z",)
    assert cfg.evolve(ordering_fields=("q",)).precombine_field == "q"
    assert cfg.evolve(precombine_field=None).ordering_fields == ()
    with pytest.raises(ValueError, match="precombine_field"):
        TableConfig(name="t", precombine_field="x", ordering_fields=("a",))
    assert TableConfig(name="t", precombine_field="ts").to_properties()["hoodie.table.precombine.field"] == "ts"


# ============================================================================ merge-mode inference


def _v8(**props: str) -> dict[str, str]:
    return {"hoodie.table.version": "8", **{k.replace("__", "."): v for k, v in props.items()}}


P, S, M = "hoodie__compaction__payload__class", "hoodie__record__merge__strategy__id", "hoodie__record__merge__mode"
# (case, properties, ordering fields, expected mode or the words of the refusal)
INFERENCE: list[tuple[str, dict[str, str], tuple[str, ...], Any]] = [
    # HoodieTableConfig.inferMergingConfigsForPreV9Table (1.1.x; inferCorrectMergingBehavior in 1.0.2): neither
    # payload class nor strategy id -> the recorded mode, else EVENT_TIME with an ordering field, else COMMIT_TIME.
    ("nothing, ordering", _v8(), ("ts",), EVENT),
    ("nothing, no ordering", _v8(), (), COMMIT),
    ("recorded only", _v8(**{M: "COMMIT_TIME_ORDERING"}), ("ts",), COMMIT),
    # inferRecordMergeModeFromPayloadClass: Default / EventTimeAvro -> EVENT_TIME, OverwriteWithLatest -> COMMIT_TIME
    ("default payload", _v8(**{P: DEFAULT_P}), (), EVENT),
    ("event time payload", _v8(**{P: "org.apache.hudi.common.model.EventTimeAvroPayload"}), ("ts",), EVENT),
    ("overwrite payload", _v8(**{P: OVERWRITE_P}), ("ts",), COMMIT),
    # inferRecordMergeModeFromMergeStrategyId: eeb8d96f -> EVENT_TIME, ce9acb64 -> COMMIT_TIME, others CUSTOM
    ("event time id", _v8(**{S: EVENT_ID}), (), EVENT),
    ("commit time id", _v8(**{S: COMMIT_ID}), ("ts",), COMMIT),
    ("old strategy key", _v8(**{"hoodie__compaction__record__merger__strategy": COMMIT_ID}), ("ts",), COMMIT),
    # version >= 8: the strategy's mode first, after checking a built-in strategy agrees with the payload
    ("default payload, event id (1.0.2 writer)", _v8(**{P: DEFAULT_P, S: EVENT_ID, M: EVENT}), ("ts",), EVENT),
    ("payload/strategy conflict", _v8(**{P: OVERWRITE_P, S: EVENT_ID}), ("ts",),
     ["conflict", f"hoodie.compaction.payload.class={OVERWRITE_P}", f"hoodie.record.merge.strategy.id={EVENT_ID}"]),
    ("custom id wins over payload", _v8(**{P: DEFAULT_P, S: CUSTOM_ID}), ("ts",),
     ["CUSTOM merge mode", "hoodie.compaction.payload.class="]),
    ("payload-based id, custom payload", _v8(**{P: "com.example.P", S: PAYLOAD_ID}), ("ts",),
     ["CUSTOM merge mode", "hoodie.compaction.payload.class=com.example.P"]),
    ("custom payload", _v8(**{P: "com.example.P"}), ("ts",), ["hoodie.compaction.payload.class=com.example.P"]),
    ("unknown id", _v8(**{S: "abc"}), ("ts",), ["CUSTOM merge mode", "hoodie.record.merge.strategy.id=abc"]),
    # a recorded mode must equal the inferred one (checkArgument "inconsistent with payload class")
    ("recorded contradicts payload", _v8(**{P: OVERWRITE_P, M: EVENT}), ("ts",),
     ["contradicts", "hoodie.record.merge.mode=EVENT_TIME_ORDERING"]),
    # version 9: the recorded mode as it is (FileGroupReaderSchemaHandler infers below version 9 only)
    ("v9 recorded", {"hoodie.table.version": "9", "hoodie.record.merge.mode": COMMIT,
                     "hoodie.compaction.payload.class": DEFAULT_P}, ("ts",), COMMIT),
    ("v9 absent -> inferred", {"hoodie.table.version": "9"}, ("ts",), EVENT),
    ("v9 custom", {"hoodie.table.version": "9", "hoodie.record.merge.mode": "CUSTOM",
                   "hoodie.compaction.payload.class": "com.example.P",
                   "hoodie.record.merge.strategy.id": PAYLOAD_ID}, ("ts",),
     ["CUSTOM merge mode", "hoodie.compaction.payload.class=com.example.P"]),
    # versions 4-6: Hudi 0.14/0.15's payload semantics; 1.x keys recorded by a 1.x writer at version 6
    ("v6 nothing", {"hoodie.table.version": "6"}, ("ts",), "OverwriteWithLatestAvroPayload"),
    ("v6 default payload", {"hoodie.table.version": "6", "hoodie.compaction.payload.class": DEFAULT_P,
                            "hoodie.compaction.record.merger.strategy": EVENT_ID}, ("ts",),
     "DefaultHoodieRecordPayload"),
    ("v6 1.x commit time", {"hoodie.table.version": "6", "hoodie.record.merge.strategy.id": COMMIT_ID}, ("ts",),
     COMMIT),
    ("v6 1.x payload-based", {"hoodie.table.version": "6", "hoodie.record.merge.strategy.id": PAYLOAD_ID,
                              "hoodie.compaction.payload.class": DEFAULT_P}, ("ts",), "DefaultHoodieRecordPayload"),
    ("v6 commit id under 0.x's key", {"hoodie.table.version": "6",
                                      "hoodie.compaction.record.merger.strategy": COMMIT_ID}, ("ts",),
     ["merger strategy", f"hoodie.compaction.record.merger.strategy={COMMIT_ID}"]),
    ("v6 commit id, default payload", {"hoodie.table.version": "6", "hoodie.record.merge.strategy.id": COMMIT_ID,
                                       "hoodie.compaction.payload.class": DEFAULT_P}, ("ts",),
     ["merge mode", f"hoodie.record.merge.strategy.id={COMMIT_ID}"]),
    ("v6 recorded mode", {"hoodie.table.version": "6", "hoodie.record.merge.mode": "event_time_ordering"}, ("ts",),
     EVENT),
]


@pytest.mark.parametrize(("case", "props", "ordering", "expected"), INFERENCE, ids=[c[0] for c in INFERENCE])
def test_merge_mode_inference(case: str, props: dict[str, str], ordering: tuple[str, ...], expected: Any) -> None:
    if isinstance(expected, str):
        assert resolve_merge(props, "/t", ordering=ordering).mode == expected
        return
    with pytest.raises(UnsupportedTableError) as err:
        resolve_merge(props, "/t", ordering=ordering)
    for word in expected:
        assert word in str(err.value), (word, str(err.value))


# ============================================================================ writes


def test_write_version_gate_is_one_place(monkeypatch: pytest.MonkeyPatch) -> None:
    """WRITTEN_VERSIONS (timeline layout -> versions) is the one gate of the versions pyhudi writes."""
    import pyhudi.model.table_features as F

    cfg = TableConfig.from_properties({**sample_props("cow_v9_txns_simple_meta"),
                                       "hoodie.table.metadata.partitions": "files,column_stats"})
    check_writable(cfg, Options.parse({}), False)  # nothing refuses this table
    monkeypatch.setattr(F, "WRITTEN_VERSIONS", {1: (4, 5, 6), 2: (8,)})
    with pytest.raises(UnsupportedTableError, match="table version 9 is read by pyhudi but not written yet "):
        check_writable(cfg, Options.parse({}), False)


@pytest.mark.parametrize("options", [
    Options({}, {"hoodie.write.concurrency.mode": "NON_BLOCKING_CONCURRENCY_CONTROL"}),
    Options({"hoodie.write.concurrency.mode": "NON_BLOCKING_CONCURRENCY_CONTROL"}, {}),
    Options({}, {"hoodie.write.concurrency.mode": "nbcc"}),
])
def test_non_blocking_concurrency_control_is_refused(options: Options) -> None:
    with pytest.raises(UnsupportedTableError, match="non-blocking concurrency control.*hoodie.write.concurrency.mode="):
        check_writable(TableConfig(name="t"), options, False)


@pytest.mark.parametrize("version", ["5", "7", "10"])
def test_write_table_versions_hudi_does_not_write_are_invalid(version: str) -> None:
    """Hudi 1.x's valid values of hoodie.write.table.version are 6, 8 and 9."""
    with pytest.raises(InvalidConfigError, match=f"hoodie.write.table.version={version} .*use 6 .*8 .*9"):
        Options.parse({"hoodie.write.table.version": version})


def _at(version: int) -> TableConfig:
    if version >= 8:
        props = {**sample_props("cow_v8_nonpartitioned"), "hoodie.table.version": str(version)}
        return TableConfig.from_properties(props)
    return TableConfig(name="t", version=version)


# (table version, hoodie.write.table.version, auto upgrade) -> the version written, or the refusal's words
@pytest.mark.parametrize(("have", "asked", "auto", "expected"), [
    (6, None, True, 6), (8, None, True, 8), (9, None, True, 9),  # without the option: the table's own version
    (6, "6", True, 6), (8, "8", True, 8), (9, "9", True, 9),
    (6, "8", True, 8), (6, "9", True, 9), (8, "9", True, 9),  # later: upgraded (model/upgrade_1x.py)
    (6, "8", False, 6), (8, "9", False, 8),  # auto upgrade off: written at the table's version, as Hudi does
    (8, "6", True, "Table version (8) and Writer version (6) do not match"),  # earlier: refused
    (9, "6", True, "Table version (9) and Writer version (6) do not match"),
    (9, "8", True, "Table version (9) and Writer version (8) do not match"),
    (5, "8", True, "Please upgrade table from version 5 to 6 before upgrading to version 8"),
    (4, "6", True, 6), (5, None, True, 6),
])
def test_write_version_follows_hudi_1x(have: int, asked: str | None, auto: bool, expected: Any) -> None:
    opts: dict[str, str] = {} if asked is None else {"hoodie.write.table.version": asked}
    opts["hoodie.write.auto.upgrade"] = str(auto).lower()
    cfg = _at(have)
    if isinstance(expected, int):
        assert write_version(cfg, Options.parse(opts)) == expected
        return
    with pytest.raises(UnsupportedTableError, match=r"hoodie.table.version=\d, hoodie.write.table.version=\d") as err:
        check_writable(cfg, Options.parse(opts), False)
    assert expected in str(err.value)


def test_payload_merge_over_several_fields_is_refused() -> None:
    """Version 6 without 1.x merge settings merges by Hudi 0.14's payloads, which compare one field."""
    props = {"hoodie.table.version": "6", "hoodie.table.precombine.field": "a,b"}
    with pytest.raises(UnsupportedTableError, match="hoodie.table.precombine.field=a,b"):
        resolve_merge(props, "/t")
    assert resolve_merge({**props, "hoodie.record.merge.mode": EVENT}, "/t").ordering_fields == ("a", "b")
