"""Partition listing (samples and synthetic trees), values, depth and pruning filters."""

from __future__ import annotations

import pytest
from pyspark.sql.types import BooleanType, DoubleType, IntegerType, StringType, StructField, StructType

from pyhudi.errors import InvalidConfigError
from pyhudi.model.table_config import NONPARTITIONED_KEYGEN, TableConfig, load_table_config
from pyhudi.storage import Storage
from pyhudi.view.partitions import (
    DEFAULT_PARTITION,
    PartitionFilter,
    list_partitions,
    partition_depth,
    partition_value,
)
from tests.unit._samples import SampleTables

EXPECTED = {
    "cow__v6_complexkeygen_hivestyle": ["byteField=10/shortField=300", "byteField=20/shortField=100",
                                        "byteField=30/shortField=100"],
    "mor_parquet__v6_complexkeygen_hivestyle": ["byteField=10/shortField=300", "byteField=20/shortField=100",
                                                "byteField=30/shortField=100"],
    "cow__v6_nonpartitioned": [""],
    "mor_parquet__v6_nonpartitioned": [""],
    "cow__v6_empty": [""],
    "mor_parquet__v6_empty": [""],
    "cow__v6_simplekeygen_nonhivestyle": ["10", "20", "30"],
    "mor_parquet__v6_simplekeygen_nonhivestyle_overwritetable": ["10", "20", "30"],
    "cow__v6_simplekeygen_hivestyle_no_metafields": ["byteField=10", "byteField=20", "byteField=30"],
    "mor_parquet__v6_simplekeygen_hivestyle_no_metafields": ["byteField=10", "byteField=20", "byteField=30"],
    "trips_mor_avro__v6_trips_8i1u": ["city=chennai", "city=san_francisco", "city=sao_paulo"],
}


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    return SampleTables(tmp_path_factory.mktemp("part_samples"))


def _open(samples, name):
    storage = Storage(str(samples.root(name)))
    return storage, load_table_config(storage)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample_partitions(samples, name):
    storage, cfg = _open(samples, name)
    assert list_partitions(storage, cfg) == EXPECTED[name]


def test_pruning_hive_style_two_levels(samples):
    storage, cfg = _open(samples, "cow__v6_complexkeygen_hivestyle")
    f = PartitionFilter.from_tuples([("byteField", "=", 10)])
    assert list_partitions(storage, cfg, f) == ["byteField=10/shortField=300"]
    f = PartitionFilter.from_tuples([("shortField", "<", 200)])
    assert list_partitions(storage, cfg, f) == ["byteField=20/shortField=100", "byteField=30/shortField=100"]
    f = PartitionFilter.from_tuples([("byteField", "in", ["20", 30]), ("shortField", "==", "100")])
    assert list_partitions(storage, cfg, f) == ["byteField=20/shortField=100", "byteField=30/shortField=100"]
    f = PartitionFilter.from_tuples([("byteField", "not in", [10, 20])])
    assert list_partitions(storage, cfg, f) == ["byteField=30/shortField=100"]
    f = PartitionFilter.from_tuples([("byteField", ">=", 40)])
    assert list_partitions(storage, cfg, f) == []
    # conditions on non-partition columns do not prune
    f = PartitionFilter.from_tuples([("name", "=", "Alice")])
    assert len(list_partitions(storage, cfg, f)) == 3


def test_pruning_plain_values(samples):
    storage, cfg = _open(samples, "cow__v6_simplekeygen_nonhivestyle")
    f = PartitionFilter.from_tuples([("byteField", "!=", "20")])
    assert list_partitions(storage, cfg, f) == ["10", "30"]
    f = PartitionFilter.from_tuples([("byteField", ">", 9)])  # numeric, not lexicographic
    assert list_partitions(storage, cfg, f) == ["10", "20", "30"]


def test_pruning_string_values(samples):
    storage, cfg = _open(samples, "trips_mor_avro__v6_trips_8i1u")
    f = PartitionFilter.from_tuples([("city", "in", ("chennai", "sao_paulo"))])
    assert list_partitions(storage, cfg, f) == ["city=chennai", "city=sao_paulo"]
    f = PartitionFilter.from_tuples([("city", "<", "d")])
    assert list_partitions(storage, cfg, f) == ["city=chennai"]


def _partition_dir(path):
    """A partition as Hudi writes it: a directory holding .hoodie_partition_metadata."""
    path.mkdir(parents=True, exist_ok=True)
    (path / ".hoodie_partition_metadata").write_text("commitTime=1\n")


def test_listing_skips_hidden_and_meta_dirs(tmp_path):
    for d in ["a=1", "a=2"]:
        _partition_dir(tmp_path / d)
    _partition_dir(tmp_path / ".hoodie" / "archived")  # never a partition, metafile or not
    for d in ["_temporary", ".spark-staging"]:  # no partition metafile: not partitions
        (tmp_path / d).mkdir(parents=True)
    (tmp_path / "a=3").write_text("a file, not a partition")
    (tmp_path / ".DS_Store").write_text("x")
    cfg = TableConfig(name="t", partition_fields=("a",), hive_style_partitioning=True)
    assert list_partitions(Storage(str(tmp_path)), cfg) == ["a=1", "a=2"]


def test_default_partition_is_listed(tmp_path):
    _partition_dir(tmp_path / "1")
    _partition_dir(tmp_path / DEFAULT_PARTITION)
    cfg = TableConfig(name="t", partition_fields=("a",))
    assert list_partitions(Storage(str(tmp_path)), cfg) == sorted(["1", DEFAULT_PARTITION])
    f = PartitionFilter.from_tuples([("a", "=", 1)])
    assert list_partitions(Storage(str(tmp_path)), cfg, f) == ["1"]
    # the column's type is unknown here: a string literal may equal '' (kept in the default partition)
    f = PartitionFilter.from_tuples([("a", "=", "")])
    assert list_partitions(Storage(str(tmp_path)), cfg, f) == sorted(["1", DEFAULT_PARTITION])


def test_nonpartitioned_keygen_means_single_root_partition(tmp_path):
    (tmp_path / "x").mkdir()
    cfg = TableConfig(name="t", partition_fields=("a",), keygen_class=NONPARTITIONED_KEYGEN)
    assert list_partitions(Storage(str(tmp_path)), cfg) == [""]


def test_partition_value():
    hive = TableConfig(name="t", partition_fields=("a",), hive_style_partitioning=True)
    plain = TableConfig(name="t", partition_fields=("a",))
    enc = TableConfig(name="t", partition_fields=("a",), hive_style_partitioning=True, urlencode_partitions=True)
    assert partition_value(hive, "a", "a=10") == "10"
    assert partition_value(hive, "a", "a=x=y") == "x=y"
    assert partition_value(plain, "a", "10") == "10"
    assert partition_value(plain, "a", "a=10") == "a=10"
    assert partition_value(enc, "a", "a=2024%2F01%2F01") == "2024/01/01"
    assert partition_value(plain, "a", DEFAULT_PARTITION) is None
    assert partition_value(hive, "a", f"a={DEFAULT_PARTITION}") is None


@pytest.mark.parametrize("path, depth", [("", 0), ("city=chennai", 1), ("byteField=10/shortField=300", 2),
                                         ("a/b/c", 3)])
def test_partition_depth(path, depth):
    assert partition_depth(path) == depth


_STR, _INT, _DBL, _BOOL = StringType(), IntegerType(), DoubleType(), BooleanType()


@pytest.mark.parametrize("dtype, op, value, text, expected", [
    (_INT, "=", 10, "10", True), (_DBL, "=", 10, "10.0", True), (_INT, "!=", 10, "11", True),
    (_INT, "<", 9, "10", False), (_INT, "<=", 10, "10", True), (_STR, ">", "b", "c", True),
    (_STR, ">=", "c", "b", False), (_INT, "in", [1, 2], "2", True), (_INT, "not in", [1, 2], "3", True),
    (_INT, "in", 5, "5", True), (_BOOL, "=", True, "true", True), (_STR, "=", None, "x", False),
    # Spark: `col != NULL` is null, never true (the untyped comparison kept this partition)
    (_STR, "!=", None, "x", False), (_STR, "=", "x", None, False),
    # finding 12: a string column compares as text, an integer column as numbers
    (_STR, "<", "9", "10", True), (_STR, "<", "9", "100", True), (_STR, ">", "10", "9", True),
    (_INT, "<", 9, "10", False), (_INT, "=", "10", "10", True), (_INT, "=", "010", "10", True),
])
def test_condition_semantics(dtype, op, value, text, expected):
    f = PartitionFilter.from_tuples([("c", op, value)])
    assert f is not None
    bound = f.bind(StructType([StructField("c", dtype)]), ["c"])
    assert bound.accepts("c", text) is expected


@pytest.mark.parametrize("bad", [[("a", "=")], [("a", "like", "x%")], [("a", "=", 1, 2)]])
def test_invalid_filters_rejected(bad):
    with pytest.raises(InvalidConfigError):
        PartitionFilter.from_tuples(bad)


def test_empty_filters_mean_no_filter():
    assert PartitionFilter.from_tuples(None) is None
    assert PartitionFilter.from_tuples([]) is None
    f = PartitionFilter.from_tuples([("a", " IN ", [1])])
    assert f is not None and f.conditions[0].op == "in"
