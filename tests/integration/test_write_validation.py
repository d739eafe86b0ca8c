"""Write validation: BLOOM key ranges in Hudi's order, null precombine values, table-config conflicts."""

from __future__ import annotations

import functools
import glob
import os
import shutil
import tempfile

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pyhudi
from pyhudi.engine.spark.keygen import spark_sort_key
from pyhudi.errors import InvalidConfigError, InvalidRecordError
from pyhudi.index.bloom_filter import MAX_KEY_FOOTER, MIN_KEY_FOOTER
from tests.unit.test_key_order import EMOJI, FULL_WIDTH_A, java_compare, java_sorted

pytestmark = pytest.mark.spark

EMOJI_KEYS = st.lists(
    st.text(st.sampled_from(["a", "\ue000", "\uff21", "\uffff", "\U00010000", "\U0001F600", "\U0010FFFF"]),
            min_size=1, max_size=3),
    min_size=2, max_size=12, unique=True)


def _bloom_opts(name: str) -> dict[str, str]:
    return {"hoodie.table.name": name, "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "p", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.index.type": "BLOOM",
            # inserts go to new file groups: a small file's merge would meet a mis-tagged key by chance
            "hoodie.parquet.small.file.limit": "0",
            # the one-task path tags by reading keys (SIMPLE semantics); ranges prune on the distributed one
            "hoodie.pyhudi.write.single.task.max.bytes": "0"}


def _frame(spark, key_sets, ts):
    """One partition per key set: each gets its own base file, whose range is pruned on its own."""
    rows = [(k, f"p{i}", ts) for i, keys in enumerate(key_sets) for k in keys]
    return spark.createDataFrame(rows, "id string, p string, ts long")


def _as_hudi_wrote_it(path: str) -> None:
    """Give every base file the footer range Hudi's writer computes (String.compareTo over its keys), as
    in a table Hudi wrote; a file whose range already is Java's is left alone."""
    for f in glob.glob(os.path.join(path, "p*", "*.parquet")):
        table = pq.read_table(f)
        ordered = java_sorted(table.column("_hoodie_record_key").to_pylist())
        meta = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
        if (meta[MIN_KEY_FOOTER], meta[MAX_KEY_FOOTER]) == (ordered[0], ordered[-1]):
            continue
        meta[MIN_KEY_FOOTER], meta[MAX_KEY_FOOTER] = ordered[0], ordered[-1]
        pq.write_table(table.replace_schema_metadata(meta), f)


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key_sets=st.lists(EMOJI_KEYS, min_size=1, max_size=4))
def test_bloom_upsert_of_astral_and_high_bmp_keys_has_no_duplicates(spark, key_sets):
    """Keys outside the BMP next to U+E000..U+FFFF ones: Java orders them differently from UTF-8 bytes.
    Upserting every key again must update each key in place, against footers in Hudi's order (a table
    Hudi wrote; with the fix pyhudi's own footers already are, and the rewrite leaves them alone)."""
    key_sets = [[EMOJI, FULL_WIDTH_A], *key_sets]
    root = tempfile.mkdtemp(prefix="pyhudi-bloom-")
    try:
        path = os.path.join(root, "t")
        pyhudi.write(_frame(spark, key_sets, 1), path, _bloom_opts("t"))
        _as_hudi_wrote_it(path)
        pyhudi.write(_frame(spark, key_sets, 2), path, _bloom_opts("t"))
        rows = pyhudi.read(spark, path).select("id", "p", "ts").collect()
        expected = sorted((k, f"p{i}", 2) for i, keys in enumerate(key_sets) for k in keys)
        assert sorted((r["id"], r["p"], r["ts"]) for r in rows) == expected
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_spark_sort_key_orders_as_java(spark):
    keys = ["a", "", EMOJI, FULL_WIDTH_A, "\ue000", "\uffff", "\U00010000", "\U0010FFFF", "a\U0001F600",
            "a\uff21", "\u00e9", "\ud7ff"]
    df = spark.createDataFrame([(k,) for k in keys], "k string")
    got = [r["k"] for r in df.orderBy(spark_sort_key(df["k"])).collect()]
    assert got == sorted(keys, key=functools.cmp_to_key(java_compare))


# ------------------------------------------------------------------ null precombine values (finding 7)
def _opts(name: str, **extra: str) -> dict[str, str]:
    base = {"hoodie.table.name": name, "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "p", "hoodie.datasource.write.precombine.field": "ts"}
    base.update({k.replace("__", "."): v for k, v in extra.items()})
    return base


DISTRIBUTED = {"hoodie__pyhudi__write__single__task__max__bytes": "0"}


def _rows(spark, path):
    return sorted((r["id"], r["v"], r["ts"]) for r in pyhudi.read(spark, path).select("id", "v", "ts").collect())


def _instants(path):
    return sorted(f for f in os.listdir(os.path.join(path, ".hoodie")) if f[:1].isdigit())


def _table(spark, tmp_path, **extra):
    path = str(tmp_path / "t")
    df = spark.createDataFrame([(1, "a", 5, "p1"), (2, "b", 5, "p1")], "id int, v string, ts long, p string")
    pyhudi.write(df, path, _opts("t", **extra))
    return path


def _assert_refused(spark, path, df, opts):
    before, instants = _rows(spark, path), _instants(path)
    with pytest.raises(InvalidRecordError) as info:
        pyhudi.write(df, path, opts)
    message = str(info.value)
    assert "'ts'" in message and "null precombine" in message and "Nothing was written" in message
    assert _rows(spark, path) == before
    assert _instants(path) == instants  # no instant left behind: refused before it, or withdrawn


@pytest.mark.parametrize("path_kind", ["distributed", "one_task"])
def test_upsert_with_null_precombine_is_refused(spark, tmp_path, path_kind):
    extra = DISTRIBUTED if path_kind == "distributed" else {}
    path = _table(spark, tmp_path, **extra)
    df = spark.createDataFrame([(1, "new", None, "p1"), (3, "c", 7, "p1")], "id int, v string, ts long, p string")
    _assert_refused(spark, path, df, _opts("t", **extra))


def test_upsert_with_null_precombine_from_parquet_files_is_refused(spark, tmp_path):
    """The direct path: executors read the parquet input themselves (writer/direct_input.py)."""
    path = _table(spark, tmp_path)
    src = str(tmp_path / "src")
    spark.createDataFrame([(1, "new", None, "p1")], "id int, v string, ts long, p string").write.parquet(src)
    _assert_refused(spark, path, spark.read.parquet(src), _opts("t"))


def test_null_precombine_where_hudi_needs_no_ordering_value(spark, tmp_path):
    """Hudi reads the ordering value only when it combines: an insert without combine.before.insert and a
    delete take a null; an insert that combines refuses it."""
    path = _table(spark, tmp_path)
    df = spark.createDataFrame([(3, "c", None, "p1")], "id int, v string, ts long, p string")
    _assert_refused(spark, path, df, _opts("t", hoodie__datasource__write__operation="insert",
                                           hoodie__combine__before__insert="true"))
    pyhudi.write(df, path, _opts("t", hoodie__datasource__write__operation="insert"))
    gone = spark.createDataFrame([(2, "b", None, "p1")], "id int, v string, ts long, p string")
    pyhudi.write(gone, path, _opts("t", hoodie__datasource__write__operation="delete"))
    assert _rows(spark, path) == [(1, "a", 5), (3, "c", None)]


def test_streaming_upsert_with_null_precombine_is_refused(spark, tmp_path):
    """A micro-batch goes through the same write; the refusal reaches the caller and writes nothing."""
    path = _table(spark, tmp_path)
    land = tmp_path / "land"
    land.mkdir()
    (land / "a.json").write_text('{"id": 1, "v": "new", "ts": null, "p": "p1"}\n')
    stream = spark.readStream.schema("id int, v string, ts long, p string").json(str(land))
    before, instants = _rows(spark, path), _instants(path)
    query = pyhudi.write_stream(stream, path, _opts("t"), str(tmp_path / "ckpt"), trigger={"availableNow": True})
    with pytest.raises(Exception) as info:
        query.awaitTermination(120)
    assert "null precombine" in str(info.value)
    assert _rows(spark, path) == before and _instants(path) == instants


# ------------------------------------------------------------------ table identity (finding 8)
def test_write_with_another_table_name_is_refused(spark, tmp_path):
    path = _table(spark, tmp_path, hoodie__database__name="db1")
    props = (tmp_path / "t" / ".hoodie" / "hoodie.properties").read_text()
    assert "hoodie.database.name=db1" in props and "hoodie.table.name=t" in props
    df = spark.createDataFrame([(9, "z", 1, "p1")], "id int, v string, ts long, p string")
    before, instants = _rows(spark, path), _instants(path)
    for key, value, stored in (("hoodie.table.name", "other", "t"), ("hoodie.database.name", "db2", "db1"),
                               ("hoodie.datasource.write.drop.partition.columns", "true", "false")):
        with pytest.raises(InvalidConfigError) as info:
            pyhudi.write(df, path, {**_opts("t"), "hoodie.database.name": "db1", key: value})
        assert f"{key}={value!r}" in str(info.value) and f"={stored!r}" in str(info.value)
    assert _rows(spark, path) == before and _instants(path) == instants
    # Hudi compares through Spark's (case-insensitive) resolver, and an absent option is not checked.
    pyhudi.write(df, path, {**_opts("T"), "hoodie.database.name": "DB1"})
    pyhudi.write(df, path, {k: v for k, v in _opts("t").items() if k != "hoodie.table.name"})
    assert len(_rows(spark, path)) == 3
