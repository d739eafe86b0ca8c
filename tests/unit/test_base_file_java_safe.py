"""Base files safe for Java readers (io/base_file.java_safe_columns), checked on the footer pyarrow
writes: no min/max for a float/double column holding NaN, no dictionary for one holding a zero,
nested leaves included, everything else (and Hudi's footer) as before. The Spark side of the same
property is tests/integration/test_cross_reader.py."""

from __future__ import annotations

import math
import pickle
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pyhudi.io.base_file import ParquetSettings, encode_within
from pyhudi.io.column_encoding import RESAMPLE_FILES, EncodingMemo, _leaf_paths, java_safe_columns

AVRO = '{"type":"record","name":"r","fields":[]}'
ROWS = 3000  # above sampled_choice's sample, so its per-column choice is used too


def _footer(table: pa.Table) -> pq.FileMetaData:
    data, rows, _, _ = encode_within(lambda n: table.slice(0, n), table.num_rows, sys.maxsize, AVRO, ParquetSettings())
    assert rows == table.num_rows
    return pq.ParquetFile(pa.BufferReader(data)).metadata


def _chunks(meta: pq.FileMetaData) -> dict[str, pq.ColumnChunkMetaData]:
    group = meta.row_group(0)
    return {group.column(j).path_in_schema: group.column(j) for j in range(meta.num_columns)}


def _table() -> pa.Table:
    n = ROWS
    repeat = [1.0, 2.0, 3.0]
    return pa.table({
        "_hoodie_record_key": pa.array([f"k{i:05d}" for i in range(n)]),
        "nan": pa.array([math.nan if i == 7 else repeat[i % 3] for i in range(n)]),
        "neg_zero": pa.array([-0.0 if i == 5 else repeat[i % 3] for i in range(n)], pa.float32()),
        "zero": pa.array([0.0 if i == 9 else repeat[i % 3] for i in range(n)]),
        "plain": pa.array([repeat[i % 3] for i in range(n)]),
        "inf": pa.array([math.inf if i % 2 else -math.inf for i in range(n)]),
        "num": pa.array([i % 5 for i in range(n)], pa.int64()),
        "st": pa.StructArray.from_arrays(
            [pa.array([math.nan if i == 3 else repeat[i % 3] for i in range(n)]),
             pa.array([repeat[i % 3] for i in range(n)])], names=["x", "y"]),
        "lst": pa.array([[-0.0] if i == 1 else [repeat[i % 3]] for i in range(n)]),
    })


def test_float_columns_with_nan_or_zero_lose_only_what_misleads_java_readers() -> None:
    chunks = _chunks(_footer(_table()))
    # NaN: no statistics (their min/max would leave NaN out); the dictionary stays (Double.equals(NaN, NaN)).
    for path in ("nan", "st.x"):
        assert not chunks[path].is_stats_set, path
        assert chunks[path].has_dictionary_page, path
    # A zero of either sign: no dictionary (-0.0 and 0.0 differ under Double.equals); min/max stay.
    for path in ("neg_zero", "zero", "lst.list.element"):
        assert not chunks[path].has_dictionary_page, path
        assert chunks[path].statistics.has_min_max, path
    # Nothing else changes.
    for path in ("plain", "inf", "num", "st.y"):
        assert chunks[path].statistics.has_min_max and chunks[path].has_dictionary_page, path
    assert chunks["inf"].statistics.min == -math.inf and chunks["inf"].statistics.max == math.inf


def test_hudi_footer_is_kept() -> None:
    meta = _footer(_table()).metadata
    assert meta[b"hoodie_min_record_key"] == b"k00000" and meta[b"hoodie_max_record_key"] == b"k02999"
    assert b"org.apache.hudi.bloomfilter" in meta and meta[b"parquet.avro.schema"] == AVRO.encode()


def test_a_table_without_nan_or_zero_keeps_the_writer_defaults() -> None:
    table = _table().select(["_hoodie_record_key", "plain", "inf", "num"])
    assert java_safe_columns(table, True) == (True, True)
    assert java_safe_columns(table, ["plain"]) == (True, ["plain"])


@pytest.mark.parametrize("dtype", [
    pa.struct([("a", pa.float64()), ("b", pa.struct([("c", pa.string())]))]),
    pa.list_(pa.float32()), pa.large_list(pa.struct([("x", pa.float64())])),
    pa.list_(pa.float64(), 2), pa.map_(pa.string(), pa.float64()),
    pa.dictionary(pa.int32(), pa.string()), pa.float64(),
])
def test_leaf_paths_are_the_paths_pyarrow_writes(dtype: pa.DataType) -> None:
    """The keys of pyarrow's per-column options must be the file's column paths, else an option is
    silently ignored."""
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"c": pa.array([], dtype)}), sink)
    meta = pq.ParquetFile(pa.BufferReader(sink.getvalue())).metadata
    assert list(_leaf_paths("c", dtype)) == [meta.schema.column(j).path for j in range(meta.num_columns)]


def test_a_tables_files_share_the_sampled_dictionary_choice_but_not_the_java_safety() -> None:
    """`ParquetSettings.encoding_memo`: the first file large enough to sample picks the dictionary columns
    for the table's later files of its schema, in later operations too (a file too small to sample
    decides nothing), until RESAMPLE_FILES files later it samples again; each file's own floats still
    decide its Java-safe encoding."""
    EncodingMemo.forget()
    settings = ParquetSettings(encoding_memo=EncodingMemo("t1"))
    n = ROWS
    first = pa.table({"_hoodie_record_key": pa.array([f"k{i:05d}" for i in range(n)]),
                      "city": pa.array(["x", "y", "z"] * (n // 3)),
                      "f": pa.array([float(i % 3 + 1) for i in range(n)])})
    small = first.slice(0, 100)
    assert settings.encoding_memo.choice(small, "snappy").dictionary is True  # too small to sample: pyarrow's default
    assert settings.encoding_memo.choice(first, "snappy").dictionary == ["city", "f"]
    # A later file of the same schema whose `city` happens to be unique keeps the table's choice...
    later = first.set_column(1, "city", pa.array([f"c{i}" for i in range(n)]))
    later = later.set_column(2, "f", pa.array([0.0 if i == 4 else float(i % 3 + 1) for i in range(n)]))
    assert settings.encoding_memo.choice(later, "snappy").dictionary == ["city", "f"]
    assert settings.encoding_memo.choice(small, "snappy").dictionary == ["city", "f"]
    # ...but its zero still takes `f` out of the dictionary, as for any file.
    data, _, _, _ = encode_within(lambda k: later.slice(0, k), n, sys.maxsize, AVRO, settings)
    chunks = _chunks(pq.ParquetFile(pa.BufferReader(data)).metadata)
    assert chunks["city"].has_dictionary_page and not chunks["f"].has_dictionary_page
    assert not chunks["_hoodie_record_key"].has_dictionary_page
    # The next operation on the table (new settings, a pickled copy on an executor) keeps the choice...
    again = pickle.loads(pickle.dumps(ParquetSettings(encoding_memo=EncodingMemo("t1"))))
    assert again.encoding_memo.choice(later, "snappy").dictionary == ["city", "f"]
    # ...another schema or another table samples, and so does the table's RESAMPLE_FILES-th file.
    other = later.rename_columns(["_hoodie_record_key", "town", "f"])
    assert settings.encoding_memo.choice(other, "snappy").dictionary == ["f"]
    assert ParquetSettings(encoding_memo=EncodingMemo("t2")).encoding_memo.choice(later, "snappy").dictionary == ["f"]
    t3 = EncodingMemo("t3")
    assert t3.choice(first, "snappy").dictionary == ["city", "f"]  # file 1 samples
    for _ in range(RESAMPLE_FILES - 2):
        assert t3.choice(later, "snappy").dictionary == ["city", "f"]
    assert t3.choice(later, "snappy").dictionary == ["f"]  # file RESAMPLE_FILES samples again
    assert t3.choice(first, "snappy").dictionary == ["f"]  # and its choice is kept in turn
    assert ParquetSettings() == settings  # the memo is not part of the settings' value
    EncodingMemo.forget()


def test_nan_and_zero_are_found_in_slices_and_behind_nulls_but_null_slots_do_not_count() -> None:
    """The scan reads a null-free column's buffer in place and leaves nulls to the compute kernels: a
    null slot's bits (here a NaN and a zero written under the validity mask) must not count, a slice must
    be scanned from its offset, and -0.0 is a zero."""
    values = pa.array([1.0, math.nan, 0.0, 2.0, -0.0, 3.0])
    masked = pa.Array.from_buffers(pa.float64(), 4, [pa.py_buffer(bytes([0b1001])), values.buffers()[1]])
    assert masked.to_pylist() == [1.0, None, None, 2.0]
    table = pa.table({"masked": masked, "plain": [2.0] * 4,
                      "neg": pa.array([-0.0, 1.0, 2.0, 3.0], pa.float32()),
                      "tail": values.slice(2, 4), "nan_only": values.slice(0, 2).to_pylist() * 2})
    statistics, dictionary = java_safe_columns(table, True)
    assert statistics == ["masked", "plain", "neg", "tail"]  # only nan_only holds a NaN
    assert dictionary == ["masked", "plain", "nan_only"]  # neg and tail hold zeros
    assert java_safe_columns(pa.table({"s": values.slice(3, 1)}), True) == (True, True)
    assert java_safe_columns(pa.table({"s": values.slice(1, 1)}), True) == ([], True)


def test_float_columns_kept_per_schema_follow_each_new_schema() -> None:
    """`java_safe_columns` keeps the float columns of the last schemas it saw; a table of another schema
    must be scanned by its own: random tables of float and double columns in changing numbers and
    places (slices, several chunks, nulls, a struct's leaves, a NaN or a zero at a leaf's first or last
    row), each against a scan of every column."""
    import random

    from pyhudi.io.column_encoding import _float_leaves, _nan_and_zero

    rng = random.Random(7)
    seen_nan = seen_zero = seen_clean = False
    for _ in range(300):
        n, k = rng.randint(1, 9), rng.randint(1, 3)

        def column(n: int = n, k: int = k) -> pa.ChunkedArray:
            dtype = rng.choice([pa.float32(), pa.float64()])
            parts = []
            for _ in range(k):
                values: list[float | None] = [rng.choice([1.5, 2.5, -3.0]) for _ in range(n + 2)]
                for _ in range(rng.randint(0, 2)):
                    values[rng.choice([0, n + 1, rng.randrange(n + 2)])] = rng.choice(
                        [math.nan, 0.0, -0.0, None])
                parts.append(pa.array(values, dtype).slice(1, n))  # a NaN or zero may sit just outside
            return pa.chunked_array(parts, dtype)

        cols: dict[str, pa.ChunkedArray] = {}
        for i in range(rng.randint(1, 6)):
            cols[f"c{i}"] = column()
            if rng.random() < 0.3:
                cols[f"t{i}"] = pa.chunked_array([pa.array([str(j) for j in range(n)])] * k)  # not a float
        inner = column()
        cols["s"] = pa.chunked_array([pa.StructArray.from_arrays([c], ["x"]) for c in inner.chunks])
        table = pa.table(cols)
        no_stats, no_dict = set(), set()
        for name, col in zip(table.column_names, table.columns):
            for chunk in col.chunks:
                for path, values in _float_leaves(chunk, name):
                    nan, zero = _nan_and_zero(values)
                    no_stats |= {path} if nan else set()
                    no_dict |= {path} if zero else set()
        leaves = [p for f in table.schema for p in _leaf_paths(f.name, f.type)]
        want_stats = [p for p in leaves if p not in no_stats] if no_stats else True
        want_dict = [p for p in leaves if p not in no_dict] if no_dict else True
        assert java_safe_columns(table, True) == (want_stats, want_dict), table.to_pydict()
        seen_nan |= bool(no_stats)
        seen_zero |= bool(no_dict)
        seen_clean |= not no_stats and not no_dict
    assert seen_nan and seen_zero and seen_clean  # the draws reach every answer


def test_hazards_by_range_equal_a_scan_of_each_range() -> None:
    """A batched merge scans its output once and tells each file what a scan of the file would find:
    random tables of float and double columns (several chunks, nulls whose slots hold a NaN or a zero,
    -0.0, a NaN or zero at a range's first or last row), cut into ranges that include empty ones (first,
    last, several in a row), each range's answer against `java_safe_columns` scanning the slice."""
    import random

    import numpy as np

    from pyhudi.io.column_encoding import hazards_by_range

    rng = random.Random(11)
    answers = set()
    for _ in range(300):
        n = rng.randint(0, 40)

        def column(n: int = n) -> pa.ChunkedArray:
            dtype = rng.choice([pa.float32(), pa.float64()])
            values: list[float | None] = [rng.choice([1.5, 2.5, -3.0]) for _ in range(n)]
            for _ in range(rng.randint(0, 3)):
                if n:
                    values[rng.randrange(n)] = rng.choice([math.nan, 0.0, -0.0, None])
            cut = rng.randint(0, n)
            return pa.chunked_array([pa.array(values[:cut], dtype), pa.array(values[cut:], dtype)], dtype)

        cols = {f"c{i}": column() for i in range(rng.randint(1, 4))}
        cols["text"] = pa.chunked_array([pa.array([str(j) for j in range(n)])])
        table = pa.table(cols)
        cuts = sorted(rng.randint(0, n) for _ in range(rng.randint(0, 5)))
        bounds = np.array([0, *cuts, n], dtype=np.int64)
        found = hazards_by_range(table, bounds)
        assert found is not None and len(found) == len(bounds) - 1
        for i, hazards in enumerate(found):
            piece = table.slice(int(bounds[i]), int(bounds[i + 1] - bounds[i]))
            assert java_safe_columns(piece, True, hazards) == java_safe_columns(piece, True), (
                table.to_pydict(), bounds, i)
            answers.add((bool(hazards[0]), bool(hazards[1])))
    assert answers == {(False, False), (True, False), (False, True), (True, True)}


def test_hazards_by_range_leave_nested_and_dictionary_floats_to_the_per_file_scan() -> None:
    import numpy as np

    from pyhudi.io.column_encoding import hazards_by_range

    bounds = np.array([0, 1, 2], dtype=np.int64)
    nested = pa.table({"s": pa.StructArray.from_arrays([pa.array([0.0, 1.0])], ["x"])})
    dictionary = pa.table({"d": pa.array([0.0, 1.0]).dictionary_encode()})
    listed = pa.table({"l": pa.array([[0.0], [1.0]])})
    assert hazards_by_range(nested, bounds) is None
    assert hazards_by_range(dictionary, bounds) is None
    assert hazards_by_range(listed, bounds) is None
    assert hazards_by_range(pa.table({"t": ["a", "b"]}), bounds) == [(frozenset(), frozenset())] * 2
