"""Option registry: parsing of every kind, errors naming the key, aliases, unknown keys, defaults."""

from __future__ import annotations

import warnings

import pytest

from pyhudi.config import keys as K
from pyhudi.config.registry import (
    REGISTRY,
    ConfigProperty,
    Group,
    Options,
    Registry,
    enum_parser,
)
from pyhudi.errors import InvalidConfigError
from pyhudi.writer.config import SizingConfig


def parse(options, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # known keys must never warn
        return Options.parse(options, **kw)


# ----------------------------------------------------------------------------- bools
@pytest.mark.parametrize("raw, expected", [
    ("true", True), ("false", False), ("TRUE", True), (" False ", False), ("True", True),
    (True, True), (False, False),
])
def test_bool_parsing(raw, expected):
    o = parse({"hoodie.copyonwrite.insert.auto.split": raw})
    assert o.get(K.INSERT_AUTO_SPLIT) is expected


@pytest.mark.parametrize("raw", ["yes", "1", "0", "", "t", 1, 0, 1.0, ["true"]])
def test_bool_malformed_names_key_and_values(raw):
    with pytest.raises(InvalidConfigError) as err:
        parse({"hoodie.copyonwrite.insert.auto.split": raw})
    msg = str(err.value)
    assert "hoodie.copyonwrite.insert.auto.split" in msg
    assert "true" in msg and "false" in msg


# ----------------------------------------------------------------------------- ints
@pytest.mark.parametrize("raw, expected", [
    ("134217728", 134217728), (" 42 ", 42), (42, 42), (42.0, 42), ("-1", -1),
])
def test_int_parsing(raw, expected):
    o = parse({"hoodie.parquet.small.file.limit": raw})
    value = o.get(K.PARQUET_SMALL_FILE_LIMIT)
    assert value == expected and type(value) is int


@pytest.mark.parametrize("raw", ["12.5", 12.5, "abc", "", True, False, object(), "1e6", [1]])
def test_int_malformed(raw):
    with pytest.raises(InvalidConfigError) as err:
        parse({"hoodie.parquet.max.file.size": raw})
    assert "hoodie.parquet.max.file.size" in str(err.value)


# ----------------------------------------------------------------------------- floats
@pytest.mark.parametrize("raw, expected", [("0.35", 0.35), (" 1.5 ", 1.5), (2, 2.0), (0.1, 0.1), ("1e-3", 0.001)])
def test_float_parsing(raw, expected):
    o = parse({"hoodie.logfile.to.parquet.compression.ratio": raw})
    value = o.get(K.LOGFILE_TO_PARQUET_RATIO)
    assert value == expected and type(value) is float


@pytest.mark.parametrize("raw", ["abc", "", True, [0.1]])
def test_float_malformed(raw):
    with pytest.raises(InvalidConfigError) as err:
        parse({"hoodie.logfile.to.parquet.compression.ratio": raw})
    assert "hoodie.logfile.to.parquet.compression.ratio" in str(err.value)


# ----------------------------------------------------------------------------- enums
@pytest.mark.parametrize("raw, expected", [
    ("COPY_ON_WRITE", "COPY_ON_WRITE"), ("merge_on_read", "MERGE_ON_READ"), ("cow", "COPY_ON_WRITE"),
    ("MOR", "MERGE_ON_READ"), (" Merge_On_Read ", "MERGE_ON_READ"),
])
def test_enum_parsing_canonicalises(raw, expected):
    assert parse({"hoodie.datasource.write.table.type": raw}).get(K.TABLE_TYPE) == expected


def test_enum_lowercase_choices_keep_declared_spelling():
    assert parse({"hoodie.datasource.write.operation": "BULK_INSERT"}).get(K.OPERATION) == "bulk_insert"
    assert parse({"hoodie.layout.optimize.strategy": "ZORDER"}).get(K.LAYOUT_OPTIMIZE_STRATEGY) == "z-order"


@pytest.mark.parametrize("raw", [
    "org.apache.hudi.keygen.SimpleKeyGenerator", "SimpleKeyGenerator", "simple", "SIMPLE",
])
def test_enum_class_names_match_on_simple_name(raw):
    o = parse({"hoodie.datasource.write.keygenerator.class": raw})
    assert o.get(K.KEYGENERATOR_CLASS) == "org.apache.hudi.keygen.SimpleKeyGenerator"


def test_enum_malformed_lists_valid_values():
    with pytest.raises(InvalidConfigError) as err:
        parse({"hoodie.datasource.write.table.type": "COPY_ON_READ"})
    msg = str(err.value)
    assert "hoodie.datasource.write.table.type" in msg
    assert "COPY_ON_WRITE" in msg and "MERGE_ON_READ" in msg
    with pytest.raises(InvalidConfigError) as err:
        parse({"hoodie.cleaner.policy": "KEEP_EVERYTHING"})
    for choice in ("KEEP_LATEST_COMMITS", "KEEP_LATEST_FILE_VERSIONS", "KEEP_LATEST_BY_HOURS"):
        assert choice in str(err.value)


def test_enum_non_string_rejected():
    with pytest.raises(InvalidConfigError, match="hoodie.index.type"):
        parse({"hoodie.index.type": 3})


def test_enum_parser_standalone():
    p = enum_parser(("Alpha", "beta"), {"A": "Alpha"})
    assert p("k", "ALPHA") == "Alpha"
    assert p("k", "a") == "Alpha"
    assert p("k", "com.example.Beta") == "beta"
    with pytest.raises(InvalidConfigError, match="valid values: Alpha, beta"):
        p("k", "gamma")


# ----------------------------------------------------------------------------- lists
@pytest.mark.parametrize("raw, expected", [
    ("id", ("id",)), ("id,name", ("id", "name")), (" id , name ,, ", ("id", "name")), ("", ()),
    (["id", " name "], ("id", "name")), (("a",), ("a",)),
])
def test_list_parsing(raw, expected):
    assert parse({"hoodie.datasource.write.recordkey.field": raw}).get(K.RECORDKEY_FIELDS) == expected


@pytest.mark.parametrize("raw", [[1, 2], 5, {"a": 1}])
def test_list_malformed(raw):
    with pytest.raises(InvalidConfigError, match="hoodie.datasource.write.recordkey.field"):
        parse({"hoodie.datasource.write.recordkey.field": raw})


# ----------------------------------------------------------------------------- strings
def test_str_accepts_numbers_rejects_bool():
    assert parse({"hoodie.table.name": 123}).get(K.TABLE_NAME) == "123"
    with pytest.raises(InvalidConfigError, match="hoodie.table.name"):
        parse({"hoodie.table.name": True})


# ----------------------------------------------------------------------------- validators
@pytest.mark.parametrize("key, raw", [
    ("hoodie.parquet.max.file.size", "0"), ("hoodie.parquet.max.file.size", -5),
    ("hoodie.copyonwrite.insert.split.size", 0), ("hoodie.copyonwrite.record.size.estimate", "0"),
    ("hoodie.record.size.estimation.threshold", "-0.5"), ("hoodie.logfile.to.parquet.compression.ratio", -1),
])
def test_validators_reject_out_of_range(key, raw):
    with pytest.raises(InvalidConfigError, match=key.replace(".", r"\.")):
        parse({key: raw})


def test_small_file_limit_zero_or_negative_allowed():
    """<= 0 turns small-file handling off in Hudi; it must not be rejected."""
    assert parse({"hoodie.parquet.small.file.limit": "0"}).get(K.PARQUET_SMALL_FILE_LIMIT) == 0
    assert parse({"hoodie.parquet.small.file.limit": -1}).get(K.PARQUET_SMALL_FILE_LIMIT) == -1


# ----------------------------------------------------------------------------- unknown keys
def test_unknown_hoodie_key_warns_and_is_kept_as_extra():
    with pytest.warns(UserWarning, match="hoodie.no.such.option"):
        o = Options.parse({"hoodie.no.such.option": "x"})
    assert o.extras == {"hoodie.no.such.option": "x"}
    assert o.explicit() == {}


def test_unknown_non_hoodie_key_is_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        o = Options.parse({"spark.sql.shuffle.partitions": "4", "_my.checkpoint": "abc"})
    assert o.extras == {"spark.sql.shuffle.partitions": "4", "_my.checkpoint": "abc"}


def test_unknown_key_warning_can_be_disabled():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        o = Options.parse({"hoodie.no.such.option": "x"}, warn_unknown=False)
    assert "hoodie.no.such.option" in o.extras


# ----------------------------------------------------------------------------- aliases / duplicates
def test_alias_resolves_to_primary_key():
    o = parse({"hoodie.table.type": "MERGE_ON_READ"})
    assert o.get(K.TABLE_TYPE) == "MERGE_ON_READ"
    assert o.is_set(K.TABLE_TYPE)
    assert o.explicit() == {"hoodie.datasource.write.table.type": "MERGE_ON_READ"}
    assert REGISTRY.lookup("hoodie.table.recordkey.fields") is K.RECORDKEY_FIELDS
    assert REGISTRY.lookup("hoodie.datasource.write.table.name") is K.TABLE_NAME


def test_duplicate_conflicting_values_through_alias_rejected():
    with pytest.raises(InvalidConfigError) as err:
        parse({"hoodie.datasource.write.table.type": "COPY_ON_WRITE", "hoodie.table.type": "MERGE_ON_READ"})
    assert "hoodie.datasource.write.table.type" in str(err.value)


def test_duplicate_equal_values_after_parsing_accepted():
    o = parse({"hoodie.datasource.write.table.type": "cow", "hoodie.table.type": "COPY_ON_WRITE",
               "hoodie.datasource.write.recordkey.field": "id,name", "hoodie.table.recordkey.fields": ["id", "name"]})
    assert o.get(K.TABLE_TYPE) == "COPY_ON_WRITE"
    assert o.get(K.RECORDKEY_FIELDS) == ("id", "name")


def test_none_value_means_unset():
    o = parse({"hoodie.parquet.max.file.size": None})
    assert not o.is_set(K.PARQUET_MAX_FILE_SIZE)
    assert o.get(K.PARQUET_MAX_FILE_SIZE) == 125829120


def test_empty_and_none_options():
    assert Options.parse(None).explicit() == {}
    assert Options.parse({}).get(K.INSERT_SPLIT_SIZE) == 500000


def test_with_values_parses_strings_and_keeps_extras():
    with pytest.warns(UserWarning):
        o = Options.parse({"hoodie.unknown.thing": "1"})
    o2 = o.with_values({K.PARQUET_MAX_FILE_SIZE: "1024", K.INSERT_AUTO_SPLIT: False})
    assert o2.get(K.PARQUET_MAX_FILE_SIZE) == 1024
    assert o2.get(K.INSERT_AUTO_SPLIT) is False
    assert o2.extras == {"hoodie.unknown.thing": "1"}
    assert not o.is_set(K.PARQUET_MAX_FILE_SIZE)  # the original is untouched
    with pytest.raises(InvalidConfigError):
        o.with_values({K.PARQUET_MAX_FILE_SIZE: "big"})


# ----------------------------------------------------------------------------- registry
def test_registry_rejects_duplicate_declaration():
    reg = Registry()
    prop = ConfigProperty("hoodie.x", "int", 1, "doc", Group.WRITE, aliases=("hoodie.y",))
    reg.register(prop)
    with pytest.raises(ValueError, match="hoodie.x"):
        reg.register(ConfigProperty("hoodie.x", "int", 2, "doc", Group.WRITE))
    assert reg.lookup("hoodie.y") is prop
    assert reg.properties() == [prop]


def test_failed_registration_leaves_registry_unchanged():
    """A declaration whose alias clashes must be rejected whole, not half-registered."""
    reg = Registry()
    prop = ConfigProperty("hoodie.x", "int", 1, "doc", Group.WRITE, aliases=("hoodie.y",))
    reg.register(prop)
    with pytest.raises(ValueError, match="hoodie.y"):
        reg.register(ConfigProperty("hoodie.z", "int", 2, "doc", Group.WRITE, aliases=("hoodie.y",)))
    assert reg.lookup("hoodie.z") is None
    assert reg.properties() == [prop]


def test_registry_properties_unique_and_sorted():
    props = REGISTRY.properties()
    keys = [p.key for p in props]
    assert len(keys) == len(set(keys))
    assert props == sorted(props, key=lambda p: (p.group.value, p.key))
    for p in props:
        for alias in p.aliases:
            assert REGISTRY.lookup(alias) is p


def test_every_default_survives_its_own_parser():
    """A declared default must be a value the key itself would accept (kind, choices, validator)."""
    bad = []
    for prop in REGISTRY.properties():
        if prop.default is None:
            continue
        try:
            ok = prop.parse(prop.default) == prop.default
        except InvalidConfigError as exc:
            ok = False
            bad.append((prop.key, str(exc)))
        if not ok or (prop.kind == "enum" and prop.default not in prop.choices):
            bad.append((prop.key, prop.default))
    assert bad == []


def test_every_key_is_documented_and_namespaced():
    for prop in REGISTRY.properties():
        assert prop.doc.strip(), prop.key
        assert prop.key.startswith(("hoodie.", "as.of.instant")), prop.key
        assert prop.kind in ("bool", "int", "float", "str", "list", "enum"), prop.key


# ----------------------------------------------------------------------------- Hudi defaults (reference §20)
@pytest.mark.parametrize("prop, default", [
    (K.PARQUET_MAX_FILE_SIZE, 125829120),
    (K.PARQUET_SMALL_FILE_LIMIT, 104857600),
    (K.INSERT_SPLIT_SIZE, 500000),
    (K.INSERT_AUTO_SPLIT, True),
    (K.RECORD_SIZE_ESTIMATE, 1024),
    (K.RECORD_SIZE_ESTIMATION_THRESHOLD, 1.0),
    (K.PARQUET_COMPRESSION_RATIO, 0.1),
    (K.SMALL_FILE_GROUP_CANDIDATES_LIMIT, 1),
    (K.LOGFILE_TO_PARQUET_RATIO, 0.35),
    (K.LOGFILE_DATA_BLOCK_MAX_SIZE, 256 * 1024 * 1024),
    (K.LOGFILE_MAX_SIZE, 1024 * 1024 * 1024),
    (K.COMPACT_MAX_DELTA_COMMITS, 5),
    (K.COMPACT_MAX_DELTA_SECONDS, 3600),
    (K.COMPACTION_LOGFILE_SIZE_THRESHOLD, 0),
    (K.COMPACTION_TARGET_IO, 500 * 1024),  # MB
    (K.CLUSTERING_SMALL_FILE_LIMIT, 314572800),
    (K.CLUSTERING_MAX_BYTES_PER_GROUP, 2 * 1024 ** 3),
    (K.CLUSTERING_TARGET_FILE_MAX_BYTES, 1024 ** 3),
    (K.CLUSTERING_MAX_NUM_GROUPS, 30),
    (K.CLUSTERING_MAX_PARALLELISM, 15),
    (K.CLEANER_POLICY, "KEEP_LATEST_COMMITS"),
    (K.CLEANER_COMMITS_RETAINED, 10),
    (K.CLEANER_HOURS_RETAINED, 24),
    (K.CLEANER_FILEVERSIONS_RETAINED, 3),
    (K.KEEP_MAX_COMMITS, 30),
    (K.KEEP_MIN_COMMITS, 20),
    (K.ARCHIVAL_BATCH, 10),
    (K.BULKINSERT_SORT_MODE, "NONE"),
    (K.HEARTBEAT_INTERVAL_MS, 60000),
    (K.HEARTBEAT_TOLERABLE_MISSES, 2),
])
def test_sizing_and_service_defaults_match_hudi(prop, default):
    assert prop.default == default
    assert Options.parse({}).get(prop) == default


def test_sizing_config_from_empty_options_is_the_default_sizing():
    assert SizingConfig.from_options(Options.parse({})) == SizingConfig()


def test_sizing_config_from_string_options():
    s = SizingConfig.from_options(parse({
        "hoodie.parquet.max.file.size": "1000", "hoodie.parquet.small.file.limit": "800",
        "hoodie.copyonwrite.insert.auto.split": "false", "hoodie.copyonwrite.insert.split.size": "7",
        "hoodie.copyonwrite.record.size.estimate": "100", "hoodie.record.size.estimation.threshold": "0.5",
    }))
    assert (s.max_file_size, s.small_file_limit, s.auto_split, s.insert_split_size, s.record_size_estimate,
            s.estimation_threshold) == (1000, 800, False, 7, 100, 0.5)
