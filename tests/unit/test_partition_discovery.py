"""Partition discovery as Hudi does it (issue 16): directories holding .hoodie_partition_metadata, at
any depth, and pruning of partition paths whose values contain '/'."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from pyhudi.model.table_config import TableConfig
from pyhudi.storage import Storage
from pyhudi.view.file_system_view import FileSystemView
from pyhudi.view.partition_values import DEFAULT_PARTITION
from pyhudi.view.partitions import (
    PartitionFilter,
    field_texts,
    list_partition_files,
    list_partitions,
    partition_field_values,
)

META = ".hoodie_partition_metadata"
TIMESTAMP_KEYGEN = "org.apache.hudi.keygen.TimestampBasedKeyGenerator"


def _tree(root: Path, partitions: list[str], stray: tuple[str, ...] = ()) -> None:
    """Partitions with a metafile and one data file each; stray directories with a file, no metafile."""
    for p in partitions:
        d = root / p
        d.mkdir(parents=True, exist_ok=True)
        (d / META).write_text("commitTime=1\n")
        (d / f"data-{p.replace('/', '_')}.parquet").write_text("x")
    for s in stray:
        (root / s).mkdir(parents=True, exist_ok=True)
        (root / s / "stray.parquet").write_text("x")


def _cfg(fields: tuple[str, ...] = ("p",), **kw: Any) -> TableConfig:
    return TableConfig(name="t", partition_fields=fields, **kw)


def _bound(conds: list[tuple[str, str, Any]], fields: tuple[str, ...] = ("p",)) -> PartitionFilter:
    f = PartitionFilter.from_tuples(conds)
    assert f is not None
    types = {"p": StringType(), "q": IntegerType(), "n": IntegerType(), "s": StringType()}
    return f.bind(StructType([StructField(n, types[n]) for n in fields]), list(fields))


class CountingStorage(Storage):
    """Counts directory listings, to check each directory is listed once and pruned ones never."""

    def __init__(self, base: str) -> None:
        super().__init__(base)
        self.listed: list[str] = []

    def list_dir(self, rel: str):  # type: ignore[no-untyped-def]
        self.listed.append(rel)
        return super().list_dir(rel)


def test_nested_partitions_a_and_a_b_are_both_found(tmp_path):
    _tree(tmp_path, ["a", "a/b", "a/b/c", "x"])
    found = list_partition_files(Storage(str(tmp_path)), _cfg())
    assert sorted(found) == ["a", "a/b", "a/b/c", "x"]
    # A partition's files are the files directly in its directory, never its subdirectories'.
    assert sorted(f.name for f in found["a"] or []) == [META, "data-a.parquet"]
    assert sorted(f.name for f in found["a/b"] or []) == [META, "data-a_b.parquet"]


def test_three_level_date_partitions_of_one_field(tmp_path):
    # TimestampBasedKeyGenerator with output yyyy/MM/dd: one field, three levels, no metafile above the leaf.
    _tree(tmp_path, ["2024/01/02", "2024/01/03", "2023/12/31"])
    assert list_partitions(Storage(str(tmp_path)), _cfg(keygen_class=TIMESTAMP_KEYGEN)) == [
        "2023/12/31", "2024/01/02", "2024/01/03"]


def test_hive_style_nested_and_default_partition(tmp_path):
    _tree(tmp_path, ["p=a", "p=a/b", f"p={DEFAULT_PARTITION}"])
    cfg = _cfg(hive_style_partitioning=True)
    assert list_partitions(Storage(str(tmp_path)), cfg) == sorted(["p=a", "p=a/b", f"p={DEFAULT_PARTITION}"])
    assert partition_field_values(cfg, "p=a/b") == {"p": "a/b"}
    assert partition_field_values(cfg, f"p={DEFAULT_PARTITION}") == {"p": None}


def test_stray_directories_and_meta_folder_are_ignored(tmp_path):
    _tree(tmp_path, ["a", "x/y"], stray=("x", "a/tmp", "_temporary", ".spark-staging"))
    _tree(tmp_path / ".hoodie", ["archived", ".aux"])  # metafiles under .hoodie never make partitions
    _tree(tmp_path / "a", [".hoodie"])  # nor a directory named .hoodie at any depth
    assert list_partitions(Storage(str(tmp_path)), _cfg()) == ["a", "x/y"]


def test_each_directory_listed_once_per_view(tmp_path):
    _tree(tmp_path, ["a", "a/b", "c/d/e"], stray=("c",))
    storage = CountingStorage(str(tmp_path))
    view = FileSystemView(storage, _cfg(), None)  # type: ignore[arg-type]  # listing needs no timeline
    assert view.partition_paths == ["a", "a/b", "c/d/e"]
    for p in view.partition_paths:
        view._list(p)
    assert view.partition_paths == ["a", "a/b", "c/d/e"]
    assert sorted(storage.listed) == sorted(["", "a", "a/b", "c", "c/d", "c/d/e"])


def test_many_directories_are_listed_on_threads_with_the_same_result(tmp_path):
    parts = [f"{y}/{m:02d}/{d:02d}" for y in (2023, 2024) for m in (1, 2, 3) for d in (1, 2, 3)]
    _tree(tmp_path, parts)
    storage = CountingStorage(str(tmp_path))
    assert list_partitions(storage, _cfg()) == sorted(parts)
    assert len(storage.listed) == len(set(storage.listed)) == 1 + 2 + 6 + 18


def test_field_texts_split_rules():
    hive2 = _cfg(("p", "q"), hive_style_partitioning=True)
    assert field_texts(hive2, "p=a/b/q=1") == ["a/b", "1"]
    assert field_texts(hive2, "p=a/q=1/c") == ["a", "1/c"]
    assert field_texts(hive2, "p=a/q=b/q=1") is None  # the boundary occurs twice: ambiguous
    assert field_texts(hive2, "x=a/q=1") is None
    plain2 = _cfg(("p", "q"))
    assert field_texts(plain2, "a/1") == ["a", "1"]
    assert field_texts(plain2, "a/b/1") is None  # depth 3 for 2 fields: ambiguous
    assert field_texts(_cfg(), "a/b/c") == ["a/b/c"]  # one field: the value itself at any depth
    enc = _cfg(("p", "q"), hive_style_partitioning=True, urlencode_partitions=True)
    assert partition_field_values(enc, "p=a%2Fb/q=1") == {"p": "a/b", "q": "1"}


def test_pruning_values_with_slashes(tmp_path):
    _tree(tmp_path, ["a", "a/b", "c/d/e", "x", DEFAULT_PARTITION])
    storage, cfg = Storage(str(tmp_path)), _cfg()
    assert list_partitions(storage, cfg, _bound([("p", "=", "a/b")])) == ["a/b"]
    assert list_partitions(storage, cfg, _bound([("p", "=", "a")])) == ["a"]
    assert list_partitions(storage, cfg, _bound([("p", "in", ["c/d/e", "x"])])) == ["c/d/e", "x"]
    assert list_partitions(storage, cfg, _bound([("p", ">=", "b")])) == ["c/d/e", "x"]
    # the default partition may hold '' or null: kept for '=' on ''
    assert list_partitions(storage, cfg, _bound([("p", "=", "")])) == [DEFAULT_PARTITION]


def test_pruning_hive_multi_field_with_slashes(tmp_path):
    _tree(tmp_path, ["p=a/q=1", "p=a/b/q=1", "p=a/b/q=2"])
    cfg, fields = _cfg(("p", "q"), hive_style_partitioning=True), ("p", "q")
    storage = Storage(str(tmp_path))
    assert list_partitions(storage, cfg, _bound([("p", "=", "a/b")], fields)) == ["p=a/b/q=1", "p=a/b/q=2"]
    assert list_partitions(storage, cfg, _bound([("p", "=", "a"), ("q", "=", 1)], fields)) == ["p=a/q=1"]
    assert list_partitions(storage, cfg, _bound([("q", "=", 2)], fields)) == ["p=a/b/q=2"]


def test_ambiguous_paths_are_kept_not_dropped(tmp_path):
    # Not hive-style, two fields, a '/' in the first value: depth 3 cannot be split, so it is kept.
    _tree(tmp_path, ["a/1", "a/b/1", "z/2"])
    cfg, fields = _cfg(("p", "q")), ("p", "q")
    assert list_partitions(Storage(str(tmp_path)), cfg, _bound([("p", "=", "a/b")], fields)) == ["a/b/1"]
    assert list_partitions(Storage(str(tmp_path)), cfg, _bound([("q", "=", 2)], fields)) == ["a/b/1", "z/2"]


def test_timestamp_keygen_paths_are_never_pruned(tmp_path):
    # The path holds the formatted date, not the column's text: a filter on the column must not prune.
    _tree(tmp_path, ["2024/01/02", "2024/01/03"])
    cfg = _cfg(keygen_class=TIMESTAMP_KEYGEN)
    assert list_partitions(Storage(str(tmp_path)), cfg, _bound([("p", "=", "2024/01/02")])) == [
        "2024/01/02", "2024/01/03"]


def test_urlencoded_tables_prune_while_walking(tmp_path):
    parts = ["p=a%2Fb/q=1", "p=a%2Fb/q=2", "p=c/q=1", "p=c/q=2"]
    _tree(tmp_path, parts)
    cfg = _cfg(("p", "q"), hive_style_partitioning=True, urlencode_partitions=True)
    storage = CountingStorage(str(tmp_path))
    assert list_partitions(storage, cfg, _bound([("p", "=", "a/b"), ("q", "=", 2)], ("p", "q"))) == ["p=a%2Fb/q=2"]
    assert sorted(storage.listed) == ["", "p=a%2Fb", "p=a%2Fb/q=2"]  # p=c and q=1 never listed


def test_integer_levels_prune_while_walking_without_encoding(tmp_path):
    # An integer's text holds no '/', so level 1 is field n exactly; the string field after it may nest.
    _tree(tmp_path, ["1/a", "1/a/b", "2/a", "2/x/y"])
    storage = CountingStorage(str(tmp_path))
    cfg, fields = _cfg(("n", "s")), ("n", "s")
    assert list_partitions(storage, cfg, _bound([("n", "=", 1)], fields)) == ["1/a", "1/a/b"]
    assert not any(d == "2" or d.startswith("2/") for d in storage.listed)
    assert list_partitions(Storage(str(tmp_path)), cfg, _bound([("n", "=", 2), ("s", "=", "a")], fields)) == [
        "2/a", "2/x/y"]  # 2/x/y is three levels for two fields: ambiguous, kept


def test_string_levels_without_encoding_prune_by_prefix_while_walking(tmp_path):
    # Directory p=a holds the value 'a/b': skipping it because 'a' != 'a/b' would lose that partition.
    _tree(tmp_path, ["p=a", "p=a/b", "p=a/b/c", "p=c"])
    storage = CountingStorage(str(tmp_path))
    cfg = _cfg(hive_style_partitioning=True)
    assert list_partitions(storage, cfg, _bound([("p", "=", "a/b")])) == ["p=a/b"]
    assert sorted(storage.listed) == ["", "p=a", "p=a/b"]
    assert list_partitions(storage, cfg, _bound([("p", "=", "c")])) == ["p=c"]
    assert list_partitions(storage, cfg, _bound([("p", ">", "a")])) == ["p=a/b", "p=a/b/c", "p=c"]


def test_one_field_date_paths_prune_by_prefix_while_walking(tmp_path):
    _tree(tmp_path, ["2024/01/02", "2024/01/03", "2024/02/01", "2023/12/31", "a"], stray=("2024/03",))
    storage = CountingStorage(str(tmp_path))
    flt = _bound([("p", "in", ["2024/01/02", "2023/12/31", None])])
    assert list_partitions(storage, _cfg(), flt) == ["2023/12/31", "2024/01/02"]
    assert sorted(storage.listed) == ["", "2023", "2023/12", "2023/12/31", "2024", "2024/01", "2024/01/02"]
    # the default partition holds '' (and nulls): kept for = '' while every other subtree is skipped
    _tree(tmp_path, [DEFAULT_PARTITION])
    assert list_partitions(Storage(str(tmp_path)), _cfg(), _bound([("p", "=", "")])) == [DEFAULT_PARTITION]


def test_multi_field_first_level_prunes_by_prefix(tmp_path):
    _tree(tmp_path, ["p=a/q=1", "p=a/b/q=2", "p=c/q=1"])
    storage = CountingStorage(str(tmp_path))
    cfg, fields = _cfg(("p", "q"), hive_style_partitioning=True), ("p", "q")
    assert list_partitions(storage, cfg, _bound([("p", "=", "a/b")], fields)) == ["p=a/b/q=2"]
    assert "p=c" not in storage.listed and "p=a" in storage.listed
