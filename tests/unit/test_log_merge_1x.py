"""`log_merge` with Hudi 1.x's merge settings: event time over several ordering fields, and the delete marker.

Several ordering fields compare as Java's ``ArrayComparable.compareTo`` does: field by field, the first
difference deciding (hudi-common ``org.apache.hudi.common.util.collection.ArrayComparable``); a null field
takes the default ordering value (``RecordContext.getOrderingValue``: ``OrderingValues.getDefault()`` for a
null field), which pyhudi ranks as a single field's null. A delete block's ordering value for such a table
is an ``ArrayWrapper`` (``HoodieAvroUtils.wrapValueIntoAvro``). The delete marker is 1.1's
``DeleteContext``: a record whose marker field's value, as text, equals the marker is a delete.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from pyhudi.errors import InvalidConfigError, UnsupportedTableError
from pyhudi.model.table_config import TableConfig
from pyhudi.reader import log_deletes, log_merge
from pyhudi.reader.log_merge import (
    MergeMode,
    MergeRules,
    MergeSpec,
    merge_file_slice,
    table_merge_mode,
    table_merge_rules,
)
from pyhudi.storage import Storage
from tests.unit.test_log_merge import FID, TARGET, Slice, T, data, delete

EVENT = MergeMode.EVENT_TIME_ORDERING
TWO = ("ts", "val")


@pytest.fixture
def mk(tmp_path: Path) -> Callable[[], Slice]:
    counter = iter(range(1000))
    return lambda: Slice(tmp_path / f"t{next(counter)}")


def merged(s: Slice, **kw: Any) -> dict[str, tuple[Any, Any]]:
    spec = MergeSpec(frozenset(s.committed), None, kw.pop("event_time_field", TWO[0]), kw.pop("target", TARGET),
                     mode=kw.pop("mode", EVENT), ordering_fields=kw.pop("ordering_fields", TWO), **kw)
    table, _ = merge_file_slice(Storage(str(s.root)), FID, s.base_path, list(s.logs), spec)
    return {r["id"]: (r["ts"], r["val"]) for r in table.to_pylist()}


def history(mk: Callable[[], Slice], base: list[tuple[str, Any, Any]] | None, *blocks: bytes) -> Slice:
    s = mk()
    if base:
        s.base(*base)
    s.log(*blocks)
    s.commit(*[T(n) for n in range(2, 2 + len(blocks))])
    return s


# ============================================================================ several ordering fields


def test_second_field_breaks_ties_of_the_first(mk: Callable[[], Slice]) -> None:
    s = history(mk, [("a", 1, "x"), ("b", 2, "a"), ("c", 5, "m")],
                data(T(2), ("a", 1, "y"), ("b", 1, "z"), ("c", 5, "m"), ("d", 3, "b")),
                data(T(3), ("d", 3, "a")))
    assert merged(s) == {
        "a": (1, "y"),  # (1, y) > (1, x): the second field decides
        "b": (2, "a"),  # (1, z) < (2, a): the first field decides, whatever the second
        "c": (5, "m"),  # equal: ties go to the log record (the base row is replaced by an equal one)
        "d": (3, "b"),  # among log records, (3, b) > (3, a)
    }
    assert merged(s, ordering_fields=("ts",)) == {"a": (1, "y"), "b": (2, "a"), "c": (5, "m"), "d": (3, "a")}


def test_null_fields_rank_as_a_single_fields_nulls(mk: Callable[[], Slice]) -> None:
    """A null number is the default 0; a null string ranks lowest."""
    s = history(mk, [("a", 0, "b"), ("b", 1, None), ("c", -1, "z")],
                data(T(2), ("a", None, "c"), ("b", 1, "a"), ("c", None, "a")))
    assert merged(s) == {"a": (None, "c"), "b": (1, "a"), "c": (None, "a")}


@pytest.mark.parametrize("seed", range(5))
def test_random_histories_match_the_lexicographic_rule(mk: Callable[[], Slice], seed: int) -> None:
    """Data records only: per key the greatest (ts, val), ties to the later record - an independent reading."""
    rnd = random.Random(seed)
    keys = [f"k{i}" for i in range(30)]
    base = [(k, rnd.randint(0, 3), rnd.choice("abc")) for k in keys if rnd.random() < 0.7]
    blocks = [[(k, rnd.randint(0, 3), rnd.choice("abc")) for k in rnd.sample(keys, 10)] for _ in range(4)]
    s = history(mk, base, *[data(T(2 + i), *b) for i, b in enumerate(blocks)])
    want: dict[str, tuple[int, str]] = {}
    for rows in [base, *blocks]:
        for k, ts, val in rows:
            if k not in want or (ts, val) >= want[k]:
                want[k] = (ts, val)
    assert merged(s) == want


def _array_deletes(monkeypatch: pytest.MonkeyPatch, records: list[tuple[str, str | None, Any]]) -> None:
    """Delete blocks decode to `records` ((key, wrapper, raw)): pyhudi's block writer has no ArrayWrapper."""
    monkeypatch.setattr(log_deletes, "_decode_deletes", lambda block: records)


def test_array_wrapper_deletes_compare_lexicographically(mk: Callable[[], Slice],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    s = history(mk, [("a", 5, "n"), ("b", 4, "z"), ("c", 9, "z"), ("d", 9, "z"), ("e", 1, "a")],
                delete(T(2), ("a", None), ("b", None), ("c", None), ("d", None), ("e", None)))
    _array_deletes(monkeypatch, [
        ("a", "ArrayWrapper", [("LongWrapper", 5), ("StringWrapper", "m")]),  # lower than (5, n): ignored
        ("b", "ArrayWrapper", [("LongWrapper", 5), ("StringWrapper", "m")]),  # higher than (4, z): applies
        ("c", "IntWrapper", 0),  # the default ordering value: a commit-time delete, always applies
        ("d", "LongWrapper", 3),  # one value against several fields: cannot be compared, applies
        ("e", "ArrayWrapper", [(None, None), ("StringWrapper", "b")]),  # (null->0, b) > (1, a)? no: 0 < 1
    ])
    assert merged(s) == {"a": (5, "n"), "e": (1, "a")}


# ============================================================================ the delete marker


def test_delete_marker_deletes_the_chosen_record(mk: Callable[[], Slice]) -> None:
    s = history(mk, [("a", 1, "x"), ("b", 1, "x"), ("c", 5, "x")],
                data(T(2), ("a", 2, "D"), ("b", 2, "d"), ("c", 3, "D")))
    marker = {"delete_marker": ("val", "D")}
    assert merged(s, ordering_fields=("ts",), **marker) == {"b": (2, "d"), "c": (5, "x")}  # c: the base row won
    assert merged(s, mode=MergeMode.COMMIT_TIME_ORDERING, event_time_field=None, ordering_fields=(),
                  **marker) == {"b": (2, "d")}


def test_delete_marker_column_must_be_read(mk: Callable[[], Slice]) -> None:
    s = history(mk, [("a", 1, "x")], data(T(2), ("a", 2, "D")))
    spec = MergeSpec(frozenset(s.committed), None, "ts", TARGET, mode=EVENT, delete_marker=("Op", "D"))
    assert spec.merge_columns == ("ts", "Op", "_hoodie_is_deleted")
    with pytest.raises(InvalidConfigError, match="delete marker's column 'Op'.*merge_columns"):
        merge_file_slice(Storage(str(s.root)), FID, s.base_path, list(s.logs), spec)


# ============================================================================ from the table to the spec


def _v9(**props: str) -> TableConfig:
    raw = {"hoodie.table.name": "t", "hoodie.table.type": "MERGE_ON_READ", "hoodie.table.version": "9",
           "hoodie.timeline.layout.version": "2", "hoodie.record.merge.mode": "EVENT_TIME_ORDERING", **props}
    return TableConfig.from_properties(raw, where="/t")


def test_rules_carry_what_table_merge_mode_cannot() -> None:
    multi = _v9(**{"hoodie.table.ordering.fields": "_event_bin_file,_event_pos"})
    rules = table_merge_rules(multi)
    assert rules == MergeRules(EVENT, ("_event_bin_file", "_event_pos"))
    assert rules.spec_options() == {"mode": EVENT, "event_time_field": "_event_bin_file",
                                    "ordering_fields": ("_event_bin_file", "_event_pos"), "delete_marker": None}
    with pytest.raises(UnsupportedTableError, match="hoodie.table.ordering.fields=_event_bin_file,_event_pos"):
        table_merge_mode(multi)
    marked = _v9(**{"hoodie.table.ordering.fields": "ts",
                    "hoodie.record.merge.property.hoodie.payload.delete.field": "Op",
                    "hoodie.record.merge.property.hoodie.payload.delete.marker": "D"})
    with pytest.raises(UnsupportedTableError, match="delete.field=Op"):
        table_merge_mode(marked)
    assert table_merge_mode(_v9(**{"hoodie.table.ordering.fields": "ts"})) == (EVENT, "ts")
    commit = _v9(**{"hoodie.table.ordering.fields": "a,b", "hoodie.record.merge.mode": "COMMIT_TIME_ORDERING"})
    assert table_merge_mode(commit) == (MergeMode.COMMIT_TIME_ORDERING, None)  # nothing compared


def test_spec_checks_its_ordering_fields() -> None:
    with pytest.raises(InvalidConfigError, match="first of ordering_fields"):
        MergeSpec(frozenset(), None, "val", TARGET, mode=EVENT, ordering_fields=TWO)
    with pytest.raises(InvalidConfigError, match="compares one ordering field"):
        MergeSpec(frozenset(), None, "ts", TARGET, mode=MergeMode.DEFAULT_PAYLOAD, ordering_fields=TWO)
    spec = MergeSpec(frozenset(), None, None, TARGET, ordering_fields=TWO)
    assert (spec.merge_mode, spec.compared_fields, spec.ordering_field) == (EVENT, TWO, "ts")
    assert MergeSpec(frozenset(), None, None, TARGET).merge_columns == ("_hoodie_is_deleted",)
    assert pa.types.is_struct(log_merge._ordering_type(spec))
