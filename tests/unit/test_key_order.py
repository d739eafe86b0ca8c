"""Record keys in Hudi's order (Java's String.compareTo) for footer min/max and BLOOM range pruning.

The oracle here is written from the Java definition, not from pyhudi's code: `String.compareTo`
compares the strings' UTF-16 code units one by one as unsigned 16-bit numbers, and the shorter string
is smaller when it is a prefix of the longer.
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyhudi.index import key_order
from pyhudi.index.bloom_filter import MAX_KEY_FOOTER, MIN_KEY_FOOTER
from pyhudi.index.key_order import (
    java_min_max,
    java_min_max_by_group,
    java_min_max_by_range,
    java_sort_key,
    utf16_sort_keys,
)
from pyhudi.io.base_file import ParquetSettings, footer_metadata

EMOJI = "\U0001F600"  # UTF-16: D83D DE00
FULL_WIDTH_A = "\uFF21"  # UTF-16: FF21, after D83D in Java, before U+1F600 by code point


def _code_units(s: str) -> list[int]:
    units = []
    for ch in s:
        cp = ord(ch)
        if cp >= 0x10000:
            cp -= 0x10000
            units += [0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF)]
        else:
            units.append(cp)
    return units


def java_compare(a: str, b: str) -> int:
    ua, ub = _code_units(a), _code_units(b)
    for x, y in zip(ua, ub):
        if x != y:
            return x - y
    return len(ua) - len(ub)


def java_sorted(keys: list[str]) -> list[str]:
    return sorted(keys, key=functools.cmp_to_key(java_compare))


# Characters where the orders differ (astral vs U+E000..U+FFFF) plus ASCII and other BMP ones.
_chars = st.one_of(
    st.sampled_from(["a", "z", "0", "~", "\u00e9", "\ud7ff", "\ue000", "\uf8ff", "\uff21", "\uffff",
                     "\U00010000", "\U0001F600", "\U0010FFFF"]),
    st.characters(min_codepoint=0xE000, max_codepoint=0xFFFF, blacklist_categories=("Cs",)),
    st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF),
    st.characters(blacklist_categories=("Cs",)),
)
KEYS = st.lists(st.text(_chars, min_size=0, max_size=6), min_size=1, max_size=40)


def test_known_pair_orders_as_java_does():
    assert java_compare(EMOJI, FULL_WIDTH_A) < 0 < java_compare(FULL_WIDTH_A, EMOJI)
    assert EMOJI > FULL_WIDTH_A  # code point (and UTF-8 byte) order disagrees: that is the bug
    assert java_min_max(pa.array([FULL_WIDTH_A, None, EMOJI])) == (EMOJI, FULL_WIDTH_A)
    assert java_min_max(pa.array([None], pa.string())) is None
    assert java_sort_key(EMOJI) < java_sort_key(FULL_WIDTH_A)


def test_footer_min_max_are_javas():
    """The footer entries Hudi's BLOOM index prunes with hold Java's min and max."""
    keys = ["k1", FULL_WIDTH_A, EMOJI, "\ue000x", "\U00010000"]
    table = pa.table({"_hoodie_record_key": keys})
    meta = footer_metadata(table, "{}", ParquetSettings())
    ordered = java_sorted(keys)
    assert (meta[MIN_KEY_FOOTER], meta[MAX_KEY_FOOTER]) == (ordered[0], ordered[-1]) == ("k1", FULL_WIDTH_A)


def test_footer_min_max_ascii():
    table = pa.table({"_hoodie_record_key": pa.array(["b", "a", "c"])})
    meta = footer_metadata(table, "{}", ParquetSettings())
    assert (meta[MIN_KEY_FOOTER], meta[MAX_KEY_FOOTER]) == ("a", "c")


@settings(max_examples=300, deadline=None)
@given(KEYS, st.booleans())
def test_java_min_max_matches_string_compare_to(keys, chunked):
    arr = pa.chunked_array([keys[: len(keys) // 2], keys[len(keys) // 2:]], pa.string()) if chunked \
        else pa.array(keys, pa.string())
    ordered = java_sorted(keys)
    assert java_min_max(arr) == (ordered[0], ordered[-1])
    assert java_min_max(arr.cast(pa.large_string())) == (ordered[0], ordered[-1])


@settings(max_examples=300, deadline=None)
@given(KEYS)
def test_sort_keys_order_as_java(keys):
    """Both sort keys (UTF-16BE bytes, and the rewritten UTF-8 the vectorised path uses) are Java's order."""
    assert sorted(keys, key=java_sort_key) == java_sorted(keys)
    rewritten = utf16_sort_keys(pa.array(keys, pa.string())).to_pylist()
    by_rewritten = [k for _, k in sorted(zip(rewritten, keys), key=lambda t: t[0])]
    assert [_code_units(k) for k in by_rewritten] == [_code_units(k) for k in java_sorted(keys)]


@settings(max_examples=300, deadline=None)
@given(KEYS, st.integers(min_value=1, max_value=5), st.randoms(use_true_random=False))
def test_min_max_by_group_matches_string_compare_to(keys, n, rnd):
    """The batched merge's per-file bounds (one aggregation over many files' keys, nulls among them):
    each group's are Java's, and a group with no key (or only nulls) has none."""
    groups = sorted(rnd.randrange(n) for _ in keys)
    values = [None if rnd.random() < 0.1 else k for k in keys]
    got = java_min_max_by_group(pa.array(values, pa.string()), np.array(groups), n)
    for g in range(n):
        mine = [v for v, gg in zip(values, groups) if gg == g and v is not None]
        assert got[g] == ((java_sorted(mine)[0], java_sorted(mine)[-1]) if mine else None)


ASCII_KEYS = st.lists(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=127), max_size=6), max_size=60)


@pytest.mark.parametrize("native", [True, False])
@settings(max_examples=300, deadline=None)
@given(keys=st.one_of(KEYS, ASCII_KEYS), cuts=st.lists(st.integers(min_value=0, max_value=60), max_size=6),
       skip=st.integers(min_value=0, max_value=3), chunked=st.booleans(), nulls=st.booleans())
def test_min_max_by_range_matches_string_compare_to(native, keys, cuts, skip, chunked, nulls):
    """The batched merge's per-file bounds over its files' row ranges: each range's are Java's, an empty
    range (or one of nulls only) has none; with the compiled kernel (ASCII keys without nulls: every byte
    order is Java's) and without it (other characters, nulls, or no kernel), on a sliced, chunked column."""
    if native and key_order._NATIVE is None:
        pytest.skip("the compiled kernel is not built here")
    if not native:
        key_order._NATIVE, saved = None, key_order._NATIVE
    try:
        values = ["x"] * skip + [None if nulls and i % 5 == 2 else k for i, k in enumerate(keys)]
        arr = pa.array(values, pa.string()).slice(skip)  # a slice: the buffers start before the keys
        if chunked and len(keys) > 1:
            arr = pa.chunked_array([arr.slice(0, len(keys) // 2), arr.slice(len(keys) // 2)])
        bounds = np.array([0, *sorted(min(c, len(keys)) for c in cuts), len(keys)], dtype=np.int64)
        got = java_min_max_by_range(arr, bounds)
        assert len(got) == len(bounds) - 1
        for g in range(len(bounds) - 1):
            mine = [v for v in values[skip + bounds[g]: skip + bounds[g + 1]] if v is not None]
            assert got[g] == ((java_sorted(mine)[0], java_sorted(mine)[-1]) if mine else None)
    finally:
        if not native:
            key_order._NATIVE = saved
